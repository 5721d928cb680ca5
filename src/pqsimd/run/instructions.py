"""Exact instruction counts: each op of each variant under the ISA's counting backend
(run/backends.py: callgrind natively, run/callgrind.py; the QEMU plugin for aarch64).

`driver count LIB SCHEME OP N` loads the variant, runs the op's setup and one warm call, then
`pqsimd_measure(op, N)`, a noinline C function of the driver that calls the op N times. Callgrind collects
only inside that function (`--toggle-collect=pqsimd_measure`; assembly routines have no symbol
sizes, so we toggle on the C wrapper, not on the op itself). Two runs with N1 < N2 calls
give

    raw      = Ir(N2) - Ir(N1)                 exact integer, setup and warm call cancel
    per_call = raw / (N2 - N1) - call_overhead

where `call_overhead` is the same difference for the family's self-check op (an empty function:
loop step, indirect call and its `ret`), so the self-check reads exactly 0 and every op reads its
own instructions per call. For ops whose inputs do not change between calls this is an exact
integer; ops that draw fresh randomness per call (key generation whose rejection sampling depends
on the seed) give an exact rational that can differ between runs, and the job record says which
ops were identical across repeats.

One raw file per (build, scheme): DIR/raw/<variant>.<compiler>.<scheme>.instructions.parquet, metric
"instructions", spin = repeat (an independent pair of callgrind runs), rep = 0, batch = N2 - N1,
raw = Ir difference, ticks = null. Existing files are kept (resumable). Valgrind cannot decode
AVX-512 (3.19 and earlier raise SIGILL on the first EVEX instruction), so a variant whose ops hit
an unhandled instruction is skipped for this metric with the reason, detected from valgrind's
own output, and the manifest records it under `metrics.instructions`.
"""

from __future__ import annotations

import os
import socket
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from datetime import datetime, timezone
from fractions import Fraction
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from .. import machine, store
from .. import study as study_mod
from ..errors import CountError, tagged
from ..studydir import StudyDir
from . import stepcount
from .backends import N1, N2, Callgrind, emulation, for_study
from .metrics import pending, per_build_jobs
from .. import metrics as metrics_mod

METRIC = metrics_mod.COUNT
REPEATS = 2  # independent (N1, N2) pairs per op: determinism is visible in the data
@dataclass(frozen=True)
class Pair:
    """One repeat: Ir of N1 and of N2 calls (and the calls of a counted function, if any)."""

    ir1: int
    ir2: int
    n1: int = N1
    n2: int = N2
    calls1: int | None = None
    calls2: int | None = None
    hash1: int | None = None  # Ir inside hash entry points (run/hashshare.py), when the backend sees call arcs
    hash2: int | None = None
    kernels1: dict[str, int] | None = None  # Ir per kernel (run/hashshare.py kernel_costs), likewise
    kernels2: dict[str, int] | None = None

    @property
    def kernels(self) -> dict[str, Fraction] | None:
        """Instructions per call of each kernel (the same difference as `exact`)."""
        if self.kernels1 is None or self.kernels2 is None:
            return None
        return {k: Fraction(self.kernels2.get(k, 0) - self.kernels1.get(k, 0), self.batch)
                for k in dict.fromkeys([*self.kernels1, *self.kernels2])}

    @property
    def hashed(self) -> Fraction | None:
        """Instructions per call inside hash entry points (the same difference as `exact`)."""
        if self.hash1 is None or self.hash2 is None:
            return None
        return Fraction(self.hash2 - self.hash1, self.batch)

    @property
    def counted(self) -> Fraction | None:
        """Calls of the counted function per call of the op (e.g. signing's rejection iterations),
        pooled over both runs' N1 + N2 calls. Unlike Ir there is no fixed cost to cancel (the
        function is only called by the op, inside the collected region), and a difference of two
        runs of a hedged (randomised) op can come out 0 or negative: signing draws fresh randomness
        in every process, so the two runs' iterations are independent."""
        if self.calls1 is None or self.calls2 is None:
            return None
        return Fraction(self.calls1 + self.calls2, self.n1 + self.n2)

    @property
    def raw(self) -> int:
        return self.ir2 - self.ir1

    @property
    def batch(self) -> int:
        return self.n2 - self.n1

    @property
    def exact(self) -> Fraction:
        return Fraction(self.raw, self.batch)


def call_counter(scheme: str, op: str) -> str | None:
    """The function whose calls per call of this op the family asks to count ([ops.call_counters])."""
    from .. import catalog

    fam = catalog.family_of(scheme)
    c = (fam.call_counters or {}).get(op)
    return c.get("function") if isinstance(c, dict) else c


def measure_pair(driver: Path, library: Path, scheme: str, op: str, n1: int = N1, n2: int = N2, backend=None) -> Pair:
    """Both runs of one repeat, with the study's counting backend (run/backends.py; default callgrind)."""
    return measure_pairs(driver, library, scheme, [op], n1, n2, backend)[op]


def measure_pairs(driver: Path, library: Path, scheme: str, ops: list[str], n1: int = N1, n2: int = N2,
                  backend=None) -> dict[str, Pair]:
    """One repeat of every op, as one backend batch (callgrind: one process): {op: Pair}."""
    backend = backend or Callgrind()
    requests = [(op, n, call_counter(scheme, op)) for op in ops for n in (n1, n2)]
    got = backend.count_batch(driver, library, scheme, requests)
    def hashed(g):  # a backend without call arcs (the QEMU plugin) has no hash share (the stepper has its own)
        return g[2] if len(g) > 2 else None

    def kernels(g):  # nor kernel shares (nor the stepper)
        return g[3] if len(g) > 3 else None

    return {op: Pair(got[2 * k][0], got[2 * k + 1][0], n1, n2, got[2 * k][1], got[2 * k + 1][1],
                     hashed(got[2 * k]), hashed(got[2 * k + 1]), kernels(got[2 * k]), kernels(got[2 * k + 1]))
            for k, op in enumerate(ops)}


def per_call(pair: Pair, call_overhead: Fraction) -> Fraction:
    """Instructions per call of the op alone: the difference per call minus an empty call's."""
    return pair.exact - call_overhead


def build_table(build, scheme: str, jid: str, results: dict[str, list[Pair]], call_overhead: Fraction):
    rows: dict[str, list[Any]] = {k: [] for k in ("op", "spin", "batch", "raw", "per_call")}
    for op, pairs in results.items():
        for r, p in enumerate(pairs):
            rows["op"].append(op)
            rows["spin"].append(r)
            rows["batch"].append(p.batch)
            rows["raw"].append(p.raw)
            rows["per_call"].append(float(per_call(p, call_overhead)))
    return store.raw_table(rows, {"scheme": scheme, "variant": build.variant, "compiler": build.compiler.id,
                                  "metric": METRIC, "job": jid, "job_index": 0, "rep": 0, "pos": 0, "warmup": False})


def calibration_op(scheme: str) -> list[str]:
    """The family's self-check op (an empty function), whose count per call is the loop's own."""
    from .. import catalog

    op = catalog.family_of(scheme).self_check
    return [op] if op else []


def job_ops(sd: StudyDir, study, job) -> list[str]:
    """The study's ops of a per-build job's scheme that its build has: the gate recorded each build's
    ops (an implementation may lack one, e.g. a sampler it only has in a wider form)."""
    from .job import build_ops

    have = build_ops(sd, job.info["build"].id, job.info["scheme"])
    return [op for op in study.ops_for(job.info["scheme"]) if have is None or op in have]


def over_cap(sd: StudyDir, study, job) -> dict[str, float]:
    """The job's ops one call of which takes longer than the study's cap (max_call_s), with that call's
    seconds: like timing, counting leaves them out (under callgrind a call takes about 50 times as long,
    and a run makes 13 of them)."""
    from .job import build_ops
    from .spec import capped

    have = build_ops(sd, job.info["build"].id, job.info["scheme"]) or {}
    return {op: have[op] for op in job_ops(sd, study, job) if capped(study, have.get(op))}


def not_counted(sd: StudyDir, study, job) -> dict:
    """A counting job record's word on the ops left out over the cap (none: nothing)."""
    skip = over_cap(sd, study, job)
    if not skip:
        return {}
    return {"not_counted": {op: f"one call takes {secs:.2g} s, over the study's cap of {study.max_call_s:g} s "
                                f"(max_call_s; --max-call 0 lifts it)" for op, secs in skip.items()}}


def counted_ops(sd: StudyDir, study, job) -> list[str]:
    """The ops a counting job (instructions, mix, sim) counts: the build's, within the study's cap."""
    skip = over_cap(sd, study, job)
    return [op for op in job_ops(sd, study, job) if op not in skip]


def _frac_text(f: Fraction) -> str:
    return str(f.numerator) if f.denominator == 1 else f"{f.numerator}/{f.denominator}"


def _workers() -> int:
    return max(1, len(os.sched_getaffinity(0)))


def chunks(ops: list[str], parts: int) -> list[list[str]]:
    """ops in `parts` contiguous runs of about equal length (none empty)."""
    parts = max(1, min(parts, len(ops)))
    size, extra = divmod(len(ops), parts)
    out, at = [], 0
    for k in range(parts):
        n = size + (1 if k < extra else 0)
        out.append(ops[at:at + n])
        at += n
    return out


def run_per_op(sd: StudyDir, study, todo: list, console: Console, info: dict, *, metric: str, label: str,
               repeats: int, measure, write) -> bool:
    """The counting runs of every job's ops (the family's self-check op first), `repeats` each, on all
    allowed CPUs: the one runner of the instructions, mix and sim metrics. measure(driver, library,
    scheme, ops) -> {op: result}: one backend batch (callgrind: one process for all of them); a job's
    ops are split into as many batches as keep every CPU busy. A build the backend cannot run is
    skipped (info["skipped"]), a failed run or write fails its job (info["failed"]); when a job's last
    batch ends, write(job, {op: [results]}, started) stores it and returns its path. Ctrl-C drops the
    queued batches (finished jobs are on disk; a rerun continues). False if a job failed."""
    driver = sd.gated_driver()
    skipped: dict[str, str] = {}  # build id -> reason (valgrind cannot run it)
    lock = threading.Lock()

    def task(job, ops: list[str]):
        b = job.info["build"]
        with lock:
            if b.id in skipped:
                return None
        try:
            return measure(driver, sd.gated_library(b.id), job.info["scheme"], ops)
        except CountError as e:
            if e.unsupported:
                with lock:
                    skipped.setdefault(b.id, f"{job.info['scheme']} {e}")
                return None
            raise

    ok = True
    started = {j.id: datetime.now(timezone.utc).isoformat() for j in todo}
    pool = ThreadPoolExecutor(max_workers=_workers())
    progress = Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                        TextColumn("eta"), TimeRemainingColumn(), console=console, transient=True)
    try:
        futures = {}
        ops_of = {j.id: list(dict.fromkeys([*calibration_op(j.info["scheme"]), *counted_ops(sd, study, j)])) for j in todo}
        # enough batches for two per CPU, so a slow build (-O0) does not leave a CPU idle at the end
        parts = -(-2 * _workers() // max(1, len(todo) * repeats))
        for j in todo:
            for part in chunks(ops_of[j.id], parts):
                for r in range(repeats):
                    futures[pool.submit(task, j, part)] = (j, part, r)
        results = {j.id: {op: [None] * repeats for op in ops_of[j.id]} for j in todo}
        errors: dict[str, str] = {}
        remaining = {j.id: sum(1 for jj, _, _ in futures.values() if jj.id == j.id) for j in todo}
        progress.start()
        bar = progress.add_task("runs", total=2 * sum(len(part) for _, part, _ in futures.values()))
        for fut in as_completed(futures):
            j, part, r = futures[fut]
            progress.advance(bar, 2 * len(part))
            try:
                got = fut.result()
                for op in part:
                    results[j.id][op][r] = None if got is None else got[op]
            except CountError as e:
                errors.setdefault(j.id, str(e))
            remaining[j.id] -= 1
            if remaining[j.id]:
                continue
            # The job's last run finished: write it (or report why not).
            b = j.info["build"]
            res = {op: [x for x in xs if x is not None] for op, xs in results.pop(j.id).items()}
            if b.id in skipped:
                continue
            try:
                if j.id in errors:
                    raise CountError(errors[j.id])
                path = write(j, res, started[j.id])
            except (CountError, ValueError, OSError) as e:
                ok = False
                info["failed"][j.id] = str(e)
                console.print(tagged("failed", "red", f"{j.id}: {e}"))
                continue
            console.print(f"{metric} {b.variant} ({b.compiler.id}) {j.info['scheme']}: {path.name}")
    except BaseException:
        # Ctrl-C or a crash: drop the queued runs (finished jobs are on disk; a rerun continues)
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        progress.stop()
        pool.shutdown(wait=True)

    for bid, reason in skipped.items():
        console.print(tagged("skip", "yellow", f"{bid}: skipped for metric {metric} ({reason})"), soft_wrap=True)
        info["skipped"][bid] = reason
    return ok


def run(sd: StudyDir, study, ctx) -> bool:
    """The instructions metric's runner (run/metrics.py), with the study's ISA's counting backend."""
    jobs = per_build_jobs(sd, study, ctx, METRIC)
    return execute(sd, study, jobs, pending(sd, jobs), ctx.console, backend=for_study(study))


def execute(sd: StudyDir, study: study_mod.Study, jobs: list, todo: list, console: Console | None = None,
            backend=None) -> bool:
    """Count instructions for every (build, scheme) job not yet finished; False if a job failed."""
    console = console or Console(stderr=True, highlight=False)
    backend = backend or Callgrind()
    version = backend.version()
    how = "Ir inside pqsimd_measure" if backend.name == Callgrind.name else "instructions between the markers around pqsimd_measure's loop"
    info: dict[str, Any] = {
        "status": "ok", "tool": version, "backend": backend.name,
        "method": f"{backend.name}: {how}, (I(N2) - I(N1)) / (N2 - N1) - empty",
        "n1": N1, "n2": N2, "repeats": REPEATS, "skipped": {}, "failed": {},
    }
    if version is None:
        reason = backend.missing
        console.print(tagged("instructions unavailable", "red", f": {reason}"))
        sd.update_manifest(lambda m: m.setdefault("metrics", {}).__setitem__(METRIC, {**info, "status": "unavailable", "reason": reason}))
        return False
    console.print(f"instructions ({version}): {len(todo)} jobs to run, {len(jobs) - len(todo)} already finished")
    ok = run_per_op(sd, study, todo, console, info, metric=METRIC, label=f"{backend.name} runs", repeats=REPEATS,
                    measure=lambda d, lib, s, ops: measure_pairs(d, lib, s, ops, backend=backend),
                    write=lambda j, res, started: _write_job(sd, study, j, res, counted_ops(sd, study, j), started, version,
                                                            backend))
    if info["failed"]:
        info["status"] = "partial"
    sd.update_manifest(lambda m: m.setdefault("metrics", {}).__setitem__(METRIC, info))
    return ok


def _write_job(sd: StudyDir, study, job, res: dict[str, list[Pair]], ops: list[str], started: str, version: str,
               backend) -> Path:
    b, scheme = job.info["build"], job.info["scheme"]
    cal = calibration_op(scheme)
    call_overhead = res[cal[0]][0].exact if cal else Fraction(0)
    table = build_table(b, scheme, job.id, {op: res[op] for op in ops}, call_overhead)
    deterministic = {op: len({p.exact for p in res[op]}) == 1 for op in ops}
    lib = sd.variant_path(b.id)
    record = {
        "id": job.id, "variant": b.variant, "compiler": b.compiler.id, "build": b.id, "scheme": scheme, "index": 0,
        "metric": METRIC, "cpu": None, "hostname": socket.gethostname(), "cpu_model": machine.cpu_model(),
        **emulation(backend),
        "calibration": {"overhead": 0, "call_overhead": float(call_overhead), "call_overhead_exact": _frac_text(call_overhead),
                        "unit": "instructions"},
        "binaries": {b.id: store.sha256_file(lib)}, **_counted_by(backend, sd.driver_path, lib, scheme, version),
        "n1": N1, "n2": N2, "repeats": REPEATS,
        "counts": {op: [[p.ir1, p.ir2] for p in pairs] for op, pairs in res.items()},
        "call_counts": {op: {"function": call_counter(scheme, op),
                             "per_call": [_frac_text(p.counted) for p in res[op] if p.counted is not None],
                             **({} if any(p.counted is not None for p in res[op]) else
                                {"note": f"no call of *_{call_counter(scheme, op)} in the profile (inlined or "
                                         "renamed in this build): not counted"})}
                        for op in ops if call_counter(scheme, op)},
        "per_call_exact": {op: [_frac_text(per_call(p, call_overhead)) for p in res[op]] for op in ops},
        # instructions per call inside Keccak/SHA-3/SHA-2 entry points (data/hash.toml; callgrind's call arcs)
        "hash_per_call_exact": {op: [_frac_text(p.hashed) for p in res[op]] for op in ops
                                if all(p.hashed is not None for p in res[op])},
        # instructions per call of each kernel, innermost first (data/hash.toml [[kernels]]; the same call arcs)
        "kernel_per_call_exact": {op: {k: [_frac_text(p.kernels[k]) for p in res[op]] for k in res[op][0].kernels}
                                  for op in ops if res[op] and all(p.kernels is not None for p in res[op])},
        "deterministic": deterministic,
        **not_counted(sd, study, job),
        "started": started, "finished": datetime.now(timezone.utc).isoformat(),
    }
    return sd.write_raw(job.id, table, record)


def _counted_by(backend, driver: Path, lib: Path, scheme: str, version: str) -> dict:
    """The record's tool, backend and command: the study's backend's, or the single-step counter's for a build
    the backend could not run (callgrind on AVX-512), with valgrind's reason."""
    why = getattr(backend, "stepped", {}).get(lib.name)
    if why is None:
        return {"tool": version, "backend": backend.name, "command": backend.command(driver, lib, scheme)}
    step = stepcount.Stepper()
    return {"tool": "pqsimd stepcount (ptrace single-step, native)", "backend": step.name,
            "command": step.command(driver, lib, scheme), "stepped_because": why}
