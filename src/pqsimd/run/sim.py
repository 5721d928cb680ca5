"""Simulated events per call (`--metric sim`): cache misses and branch mispredictions of each op of
each build, from the counting backend's cache and branch model (callgrind `--cache-sim=yes
--branch-sim=yes`), under one or several cache geometries (`--sim-cpu`, data/caches.toml; default
the host's). No PMU is needed: the numbers are the simulator's, exact and deterministic for a binary.

The same runs as the instructions metric (run/instructions.py: `driver count LIB SCHEME OP N`, the
toggle on pqsimd_measure, N1 and N2 calls after one warm call) and the same arithmetic per event:

    per_call(event) = (E(N2) - E(N1)) / (N2 - N1) [- the same for the family's self-check op]

(the bracket for counts of work only, SUBTRACTED below), so cold misses of setup and the warm call cancel and the numbers are the warm steady state of the op
called in a loop, like the timed measurement. Events (callgrind's names): Ir (instructions, equal to
the instructions metric's), Dr/Dw (data reads/writes), I1mr, D1mr/D1mw (first-level misses),
ILmr, DLmr/DLmw (last-level misses), Bc/Bcm (conditional branches, mispredicted), Bi/Bim (indirect).

One raw file per (build, scheme, geometry): DIR/raw/<variant>.<compiler>.<scheme>.sim+<geometry>.parquet,
metric `sim.<event>`, its job record carrying the geometry as specified and as simulated. On
aarch64 the QEMU plugin's own models (harness/qemu/count.c: LRU, write-allocate, I1/D1 backed by
one LL; 16384 two-bit counters and a 512-entry target table, like valgrind's) give the same events
under the geometry as specified. A backend without a model has its events absent, recorded as
`not_simulated` (never 0).
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from datetime import datetime, timezone
from fractions import Fraction
from pathlib import Path
from typing import Any

from rich.console import Console

from .. import caches, machine, store
from ..ids import geometry_job_metric
from ..studydir import StudyDir
from . import instructions as ins
from .backends import N1, N2, Callgrind, emulation, for_study
from .metrics import pending, per_build_jobs
from .. import metrics as metrics_mod

METRIC = metrics_mod.SIM
PREFIX = "sim."  # raw rows: sim.<event>
REPEATS = 1  # the simulation is deterministic; its Ir is checked against the instructions metric's
EVENTS = ("Ir", "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw", "Bc", "Bcm", "Bi", "Bim")
# Counts of work (the loop's own instructions, accesses and branches add to the op's): the self-check's
# are subtracted. Misses and mispredictions are not additive (they depend on the cache and predictor
# state the op leaves: the empty loop's own branch mispredicts about once per call, where in a real
# op's loop it is predicted), so they are the op's run as measured, loop included (at most ~1 per call).
SUBTRACTED = ("Ir", "Dr", "Dw", "Bc", "Bi")
MODEL_EVENTS = {"cache": ("Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw"), "branch": ("Bc", "Bcm", "Bi", "Bim")}


@dataclass(frozen=True)
class EventPair:
    """One repeat: every event of N1 and of N2 calls."""

    e1: dict[str, int]
    e2: dict[str, int]
    n1: int = N1
    n2: int = N2

    @property
    def batch(self) -> int:
        return self.n2 - self.n1

    def events(self) -> tuple[str, ...]:
        """The events both runs have (a backend without a branch model has no branch events)."""
        return tuple(e for e in EVENTS if e in self.e1 and e in self.e2)

    def raw(self, event: str) -> int:
        return self.e2[event] - self.e1[event]

    def exact(self, event: str) -> Fraction:
        return Fraction(self.raw(event), self.batch)


def measure(backend, geometry: caches.Geometry, driver: Path, library: Path, scheme: str, op: str) -> EventPair:
    return measure_many(backend, geometry, driver, library, scheme, [op])[op]


def measure_many(backend, geometry: caches.Geometry, driver: Path, library: Path, scheme: str,
                 ops: list[str]) -> dict[str, EventPair]:
    """Every op's EventPair, each run in a process of its own: unlike instruction counts, simulated
    misses depend on what ran before in the process (the simulated caches and predictors carry
    over), so every run starts as every other does: a fresh process, the op's setup, a warm call."""
    def alone(op: str, calls: int) -> dict[str, int]:
        return backend.events_batch(driver, library, scheme, [(op, calls)], geometry)[0]

    return {op: EventPair(alone(op, N1), alone(op, N2)) for op in ops}


def per_call(pairs: dict[str, list[EventPair]], op: str, self_check: str | None) -> dict[str, Fraction]:
    """Events per call of op alone (first repeat): its difference per call minus the self-check's;
    only the events the backend simulates."""
    p = pairs[op][0]
    base = pairs[self_check][0] if self_check and self_check in pairs else None
    return {e: p.exact(e) - (base.exact(e) if base and e in SUBTRACTED else 0) for e in p.events()}


def not_simulated(backend) -> list[str]:
    """The events of the models a backend lacks (e.g. the QEMU plugin's branches)."""
    have = set(getattr(backend, "simulates", ()) or ())
    return [e for model, events in MODEL_EVENTS.items() if model not in have for e in events]


def build_table(build, scheme: str, jid: str, pairs: dict[str, list[EventPair]], ops: list[str], self_check: str | None):
    rows: dict[str, list[Any]] = {k: [] for k in ("op", "metric", "spin", "batch", "raw", "per_call")}
    base = pairs.get(self_check) if self_check else None
    for op in ops:
        for r, p in enumerate(pairs[op]):
            b = base[min(r, len(base) - 1)] if base else None
            for e in p.events():
                rows["op"].append(op)
                rows["metric"].append(PREFIX + e)
                rows["spin"].append(r)
                rows["batch"].append(p.batch)
                rows["raw"].append(p.raw(e))
                rows["per_call"].append(float(p.exact(e) - (b.exact(e) if b and e in SUBTRACTED else 0)))
    return store.raw_table(rows, {"scheme": scheme, "variant": build.variant, "compiler": build.compiler.id,
                                  "job": jid, "job_index": 0, "rep": 0, "pos": 0, "warmup": False})


def geometries(study) -> list[caches.Geometry]:
    return [caches.get(n) for n in (getattr(study, "sim_cpus", None) or [caches.HOST])]


def run(sd: StudyDir, study, ctx) -> bool:
    """The sim metric's runner (run/metrics.py): every geometry of the study, one job per (build,
    scheme, geometry), with the study's ISA's counting backend."""
    backend = for_study(study)
    ok = True
    for g in geometries(study):
        jobs = per_build_jobs(sd, study, ctx, geometry_job_metric(METRIC, g.name))
        ok = execute(sd, study, g, jobs, pending(sd, jobs), ctx.console, backend) and ok
    return ok


def _set_manifest(sd: StudyDir, geometry: str, info: dict) -> None:
    sd.update_manifest(lambda m: m.setdefault("metrics", {}).setdefault(METRIC, {}).__setitem__(geometry, info))


def execute(sd: StudyDir, study, geometry: caches.Geometry, jobs: list, todo: list, console: Console | None = None,
            backend=None) -> bool:
    console = console or Console(stderr=True, highlight=False)
    backend = backend or Callgrind()
    version = backend.version()
    info: dict[str, Any] = {
        "status": "ok", "tool": version, "backend": backend.name, "geometry": geometry.record(),
        "method": f"{backend.name} {' '.join(backend.sim_options(geometry)) if hasattr(backend, 'sim_options') else ''}: "
                  "events inside the counted region, (E(N2) - E(N1)) / (N2 - N1), minus the self-check op's for "
                  f"{', '.join(SUBTRACTED)}",
        "model_limits": caches.model_limits(), "not_simulated": not_simulated(backend),
        "n1": N1, "n2": N2, "repeats": REPEATS, "skipped": {}, "failed": {},
    }
    if not getattr(backend, "simulates", ()):
        reason = f"not simulated: the {backend.name} backend has no cache or branch model"
        console.print(f"[yellow]sim unavailable[/yellow]: {reason}")
        _set_manifest(sd, geometry.name, {**info, "status": "unavailable", "reason": reason})
        return True  # an honest gap, not a failure
    if version is None:
        console.print(f"[red]sim unavailable[/red]: {backend.missing}")
        _set_manifest(sd, geometry.name, {**info, "status": "unavailable", "reason": backend.missing})
        return False
    console.print(f"sim {geometry.text()} ({version}): {len(todo)} jobs to run, {len(jobs) - len(todo)} already finished")
    ok = ins.run_per_op(sd, study, todo, console, info, metric=f"{METRIC} ({geometry.name})",
                        label=f"{backend.name} sim runs", repeats=REPEATS,
                        measure=lambda d, lib, s, ops: measure_many(backend, geometry, d, lib, s, ops),
                        write=lambda j, res, started: _write_job(sd, study, j, res, started, version, backend, geometry))
    if info["failed"]:
        info["status"] = "partial"
    _set_manifest(sd, geometry.name, info)
    return ok


def _write_job(sd: StudyDir, study, job, res: dict[str, list[EventPair]], started: str, version: str, backend,
               geometry: caches.Geometry) -> Path:
    b, scheme = job.info["build"], job.info["scheme"]
    cal = ins.calibration_op(scheme)
    self_check = cal[0] if cal else None
    ops = ins.counted_ops(sd, study, job)
    table = build_table(b, scheme, job.id, res, ops, self_check)
    lib = sd.variant_path(b.id)
    record = {
        "id": job.id, "variant": b.variant, "compiler": b.compiler.id, "build": b.id, "scheme": scheme, "index": 0,
        "metric": METRIC, "geometry": geometry.record(), "model_limits": caches.model_limits(),
        "not_simulated": not_simulated(backend),
        "cpu": None, "hostname": socket.gethostname(), "cpu_model": machine.cpu_model(), **emulation(backend),
        "calibration": {"overhead": 0, "unit": "events", "self_check": self_check},
        "binaries": {b.id: store.sha256_file(lib)}, "tool": version, "backend": backend.name,
        "command": backend.command(sd.driver_path, lib, scheme, backend.sim_options(geometry)),
        "n1": N1, "n2": N2, "repeats": REPEATS,
        "counts": {op: [[p.e1, p.e2] for p in pairs] for op, pairs in res.items()},
        "per_call_exact": {op: {e: ins._frac_text(v) for e, v in per_call(res, op, self_check).items()} for op in ops},
        **ins.not_counted(sd, study, job),
        "started": started, "finished": datetime.now(timezone.utc).isoformat(),
    }
    return sd.write_raw(job.id, table, record)
