"""The measurement interface's run side: each metric of the registry (pqsimd/metrics.py) has a
runner, and this module runs the ones a study asks for.

What each metric measures and how its jobs are cut is said once, in the registry's docstring and
its `Metric` entries (pqsimd/metrics.py).

A metric's `runner` is the module of run/ whose `run(sd, study, ctx)` measures it (metrics that
share a runner run together, once). Counting metrics have a backend chosen by the study's ISA
(data/isas.toml `counting`): callgrind natively on x86_64, our QEMU plugin for aarch64
(run/backends.py): a second way to get the same numbers, not another metric. Every runner writes
its rows through store.raw_table and StudyDir.write_raw and decides what is still to do with the one
rule, StudyDir.finished (the raw file reads back as that job, with the current binaries).
"""

from __future__ import annotations

import importlib
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..ids import metric_job_id
from ..metrics import REGISTRY

if TYPE_CHECKING:
    from rich.console import Console

    from ..build import Build
    from ..studydir import StudyDir


@dataclass
class Job:
    id: str
    binaries: dict[str, str | None]  # build id -> sha256 the job must have been measured with
    info: dict[str, Any]


@dataclass
class RunContext:
    """What a runner gets besides the study: the plan, the builds that passed, their installed binaries."""

    plan: dict
    passing: list[Build]
    binaries: dict[str, str]
    executor: str
    slurm_options: dict
    console: Console


def pending(sd: StudyDir, jobs: list[Job]) -> list[Job]:
    return [j for j in jobs if not sd.finished(j.id, j.binaries)]


def per_build_jobs(sd: StudyDir, study, ctx: RunContext, metric: str) -> list[Job]:
    """Jobs of a per-(build, scheme) metric: <variant>.<compiler>.<scheme>.<metric>."""
    out = []
    for b in ctx.passing:
        for scheme in study.schemes:
            if scheme in b.schemes and scheme in (sd.read_gate(b.id) or {}).get("passed_schemes", []):
                out.append(Job(metric_job_id(b.variant, b.compiler.id, scheme, metric), {b.id: ctx.binaries[b.id]},
                               {"build": b, "scheme": scheme}))
    return out


def execute_all(sd: StudyDir, study, plan: dict, passing: list[Build], binaries: dict[str, str], executor: str,
                slurm_options: dict, console: Console, seconds: dict[str, float] | None = None) -> bool:
    """Every runner the study's metrics need, each once, per-build metrics first (timing last);
    each runner's wall time is added to `seconds` under its name."""
    ctx = RunContext(plan, passing, binaries, executor, slurm_options, console)
    chosen = [REGISTRY[m] for m in REGISTRY if m in study.metrics]
    runners = list(dict.fromkeys(m.runner for m in sorted(chosen, key=lambda m: not m.per_build)))
    ok = True
    for runner in runners:
        t0 = time.monotonic()
        ok = importlib.import_module(f"{__package__}.{runner}").run(sd, study, ctx) and ok
        if seconds is not None:
            seconds[runner] = seconds.get(runner, 0.0) + time.monotonic() - t0
    return ok
