"""The measurement interface: every metric a study can ask for is one `Metric`, registered once
here, and read by the study (which names exist, which need the host's own clock), by run (which
jobs, which runner) and by analyze and report (which are exact counts, their unit).

    ticks, counters   timing jobs of the plan (local or SLURM executor); counters ride along
    instructions      exact counts per call, one job per (build, scheme); backend by ISA
    mix               the executed instruction mix and the llvm-mca estimate, one job per
                      (build, scheme); backend by ISA
    energy            RAPL energy per call, one job per (build, scheme)
    sim               simulated cache misses and branch mispredictions per call (callgrind's
                      cache and branch model), one job per (build, scheme, cache geometry)

A metric's `runner` is the module of run/ whose `run(sd, study, ctx)` measures it (metrics that
share a runner run together, once). Counting metrics have a backend chosen by the study's ISA
(data/isas.toml `counting`): callgrind natively on x86_64, our QEMU plugin for aarch64
(run/backends.py): a second way to get the same numbers, not another metric. Every runner writes
its rows through store.raw_table and StudyDir.write_raw and decides what is still to do with the one
rule, StudyDir.finished (the raw file reads back as that job, with the current binaries).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import PqsimdError
from ..ids import metric_job_id

if TYPE_CHECKING:  # the registry is read by study, analyze and report: it imports nothing heavy
    from rich.console import Console

    from ..build import Build
    from ..studydir import StudyDir


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str  # per call, as tables and figures print it
    title: str  # what a table or figure of it is titled
    runner: str  # module of run/ with run(sd, study, ctx) -> bool
    timed: bool  # reads the host's clock or counters: meaningless under an emulator
    exact: bool  # a count: the same binary gives the same number (analysis compares exactly)
    per_build: bool  # one job per (build, scheme), id <variant>.<compiler>.<scheme>.<name>
    grouped: bool = True  # its raw rows carry its name and become analyze's groups (mix, counters, energy: own names)


# The ticks unit is the x86-64 driver's (timer_x86_64.h); an aarch64 host's driver names its own
# timer in each job's calibration (`timer`).
REGISTRY: dict[str, Metric] = {m.name: m for m in (
    Metric("ticks", "TSC ticks", "time (TSC ticks)", "timing", timed=True, exact=False, per_build=False),
    Metric("instructions", "instructions", "instruction count", "instructions", timed=False, exact=True, per_build=True),
    Metric("counters", "events", "hardware counters", "timing", timed=True, exact=False, per_build=False, grouped=False),
    Metric("energy", "µJ", "energy", "energy", timed=True, exact=False, per_build=True, grouped=False),
    Metric("mix", "instructions", "instruction mix", "mix", timed=False, exact=True, per_build=True, grouped=False),
    Metric("sim", "events", "simulated cache and branch events", "sim", timed=False, exact=True, per_build=True,
           grouped=False),
)}


def names() -> list[str]:
    return list(REGISTRY)


def get(name: str) -> Metric:
    return REGISTRY[name]


def exact_names() -> tuple[str, ...]:
    """Metrics that are counts and whose raw rows carry the metric's own name (analyze's groups)."""
    return tuple(m.name for m in REGISTRY.values() if m.exact and m.grouped)


def plan_jobs_needed(selected: list[str]) -> bool:
    """Whether the plan's timing jobs run (and so need their sizing): a metric not per build."""
    return any(not REGISTRY[m].per_build for m in selected if m in REGISTRY)


def check_isa(selected: list[str], isa) -> None:
    """Timed metrics need the ISA's own hardware: under an emulator they would measure the emulator."""
    if isa.native:
        return
    timed = [m for m in selected if m in REGISTRY and REGISTRY[m].timed]
    if timed:
        counting = ",".join(m.name for m in REGISTRY.values() if not m.timed)
        raise PqsimdError(f"--isa {isa.name} runs under {isa.qemu} on this host: --metric {','.join(timed)} would time "
                          f"the emulator, not the code; use --metric {counting} (exact counts and the cost model), "
                          f"or run on a {isa.name} host")


@dataclass
class Job:
    id: str
    binaries: dict[str, str | None]  # build id -> sha256 the job must have been measured with
    info: dict[str, Any]


@dataclass
class Context:
    """What a runner gets besides the study: the plan, the builds that passed, their installed binaries."""

    plan: dict
    passing: list[Build]
    binaries: dict[str, str]
    executor: str
    slurm_options: dict
    console: Console


def pending(sd: StudyDir, jobs: list[Job]) -> list[Job]:
    return [j for j in jobs if not sd.finished(j.id, j.binaries)]


def per_build_jobs(sd: StudyDir, study, ctx: Context, metric: str) -> list[Job]:
    """Jobs of a per-(build, scheme) metric: <variant>.<compiler>.<scheme>.<metric>."""
    out = []
    for b in ctx.passing:
        for scheme in study.schemes:
            if scheme in b.schemes and scheme in (sd.read_gate(b.id) or {}).get("passed_schemes", []):
                out.append(Job(metric_job_id(b.variant, b.compiler.id, scheme, metric), {b.id: ctx.binaries[b.id]},
                               {"build": b, "scheme": scheme}))
    return out


def execute_all(sd: StudyDir, study, plan: dict, passing: list[Build], binaries: dict[str, str], executor: str,
                slurm_options: dict, console: Console) -> bool:
    """Every runner the study's metrics need, each once, per-build metrics first (timing last)."""
    ctx = Context(plan, passing, binaries, executor, slurm_options, console)
    chosen = [REGISTRY[m] for m in REGISTRY if m in study.metrics]
    runners = list(dict.fromkeys(m.runner for m in sorted(chosen, key=lambda m: not m.per_build)))
    ok = True
    for runner in runners:
        ok = importlib.import_module(f"{__package__}.{runner}").run(sd, study, ctx) and ok
    return ok
