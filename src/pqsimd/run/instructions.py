"""Exact instruction counts: each op of each variant under valgrind's callgrind.

`harness count --scheme S --op OP --calls N` runs the op's setup and one warm call, then
`pqsimd_measure(op, N)`, a noinline C function that calls the op N times. Callgrind collects
only inside that function (`--toggle-collect=pqsimd_measure`; the avx2 `.S` routines have no
symbol sizes, so we toggle on the C wrapper, not on the op itself). Two runs with N1 < N2 calls
give

    raw      = Ir(N2) - Ir(N1)                 exact integer, setup and warm call cancel
    per_call = raw / (N2 - N1) - call_overhead

where `call_overhead` is the same difference for the harness's `empty` op (loop step, indirect
call and the empty function's `ret`: 5 instructions with the shipped harness), so `empty` reads
exactly 0 and every op reads its own instructions per call. For ops whose inputs do not change
between calls this is an exact integer; ops that draw fresh randomness per call (kem_keypair,
kem_encaps: rejection sampling in gen_a depends on the seed) give an exact rational that can
differ between runs, and the job record says which ops were identical across repeats.

One raw file per (variant, scheme): DIR/raw/<variant>.<scheme>.instructions.parquet, metric
"instructions", spin = repeat (an independent pair of callgrind runs), rep = 0, batch = N2 - N1,
raw = Ir difference, ticks = null. Existing files are kept (resumable). Valgrind cannot decode
AVX-512 (3.19 and earlier raise SIGILL on the first EVEX instruction), so a variant whose ops hit
an unhandled instruction is skipped for this metric with the reason, detected from valgrind's
own output, and the manifest records it under `metrics.instructions`.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from datetime import datetime, timezone
from fractions import Fraction
from pathlib import Path
from typing import Any

import pyarrow as pa
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from .. import machine, store
from .. import study as study_mod

METRIC = "instructions"
N1 = 2  # calls in the short run (the warm call happens before either)
N2 = 10  # calls in the long run: batch = N2 - N1
REPEATS = 2  # independent (N1, N2) pairs per op: determinism is visible in the data
CALIBRATION_OP = "empty"
TIMEOUT_S = 600

_TOTALS = re.compile(r"^(?:totals|summary):\s*(\d+)", re.M)
_UNHANDLED = re.compile(r"unhandled instruction bytes:((?:\s+0x[0-9A-Fa-f]+)+)")


def job_id(variant: str, scheme: str) -> str:
    return f"{variant}.{scheme}.{METRIC}"


def valgrind_path() -> str | None:
    return shutil.which("valgrind")


def valgrind_version() -> str | None:
    path = valgrind_path()
    if path is None:
        return None
    out = subprocess.run([path, "--version"], capture_output=True, text=True)
    return out.stdout.strip() or None


def callgrind_command(binary: Path, scheme: str, op: str, calls: int, out_file: Path) -> list[str]:
    return [
        valgrind_path() or "valgrind", "--tool=callgrind", "--toggle-collect=pqsimd_measure",
        f"--callgrind-out-file={out_file}", str(binary), "count", "--scheme", scheme, "--op", op, "--calls", str(calls),
    ]


def parse_callgrind_totals(text: str) -> int:
    """The event total (Ir) of a callgrind out file ('totals:' line, else 'summary:')."""
    m = _TOTALS.search(text)
    if m is None:
        raise ValueError("callgrind output has no totals/summary line")
    return int(m.group(1))


def unhandled_instruction(valgrind_stderr: str) -> str | None:
    """The one-line reason if valgrind stopped on an instruction it cannot decode, else None."""
    m = _UNHANDLED.search(valgrind_stderr)
    if m:
        raw = m.group(1).split()
        evex = " (EVEX prefix 0x62: AVX-512)" if raw and raw[0].lower() == "0x62" else ""
        return f"valgrind cannot decode instruction bytes {' '.join(raw[:6])}...{evex}"
    if "signal 4 (SIGILL)" in valgrind_stderr:
        return "valgrind raised SIGILL (an instruction it cannot run)"
    return None


class CountError(Exception):
    def __init__(self, message: str, unsupported: str | None = None):
        super().__init__(message)
        self.unsupported = unsupported


def count_instructions(binary: Path, scheme: str, op: str, calls: int, workdir: Path | None = None) -> int:
    """Ir inside pqsimd_measure for `calls` calls of op (one callgrind run)."""
    with tempfile.TemporaryDirectory(prefix="pqsimd-cg-", dir=workdir) as tmp:
        out_file = Path(tmp) / "callgrind.out"
        cmd = callgrind_command(binary, scheme, op, calls, out_file)
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise CountError(f"{op}: callgrind did not finish in {TIMEOUT_S} s") from None
        unsupported = unhandled_instruction(proc.stderr)
        if unsupported:
            raise CountError(f"{op}: {unsupported}", unsupported=unsupported)
        if proc.returncode != 0 or not out_file.exists():
            tail = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
            raise CountError(f"{op}: callgrind run failed ({tail})")
        try:
            return parse_callgrind_totals(out_file.read_text())
        except (OSError, ValueError) as e:
            raise CountError(f"{op}: unreadable callgrind output ({e})") from None


@dataclass(frozen=True)
class Pair:
    """One repeat: Ir of N1 and of N2 calls."""

    ir1: int
    ir2: int
    n1: int = N1
    n2: int = N2

    @property
    def raw(self) -> int:
        return self.ir2 - self.ir1

    @property
    def batch(self) -> int:
        return self.n2 - self.n1

    @property
    def exact(self) -> Fraction:
        return Fraction(self.raw, self.batch)


def measure_pair(binary: Path, scheme: str, op: str, n1: int = N1, n2: int = N2) -> Pair:
    return Pair(count_instructions(binary, scheme, op, n1), count_instructions(binary, scheme, op, n2), n1, n2)


def per_call(pair: Pair, call_overhead: Fraction) -> Fraction:
    """Instructions per call of the op alone: the difference per call minus an empty call's."""
    return pair.exact - call_overhead


def build_table(variant: str, scheme: str, jid: str, results: dict[str, list[Pair]], call_overhead: Fraction) -> pa.Table:
    rows: dict[str, list[Any]] = {k: [] for k in ("op", "spin", "batch", "raw", "per_call")}
    for op, pairs in results.items():
        for r, p in enumerate(pairs):
            rows["op"].append(op)
            rows["spin"].append(r)
            rows["batch"].append(p.batch)
            rows["raw"].append(p.raw)
            rows["per_call"].append(float(per_call(p, call_overhead)))
    n = len(rows["op"])
    const = lambda v, typ: pa.array([v] * n, typ)  # noqa: E731
    return pa.table({
        "scheme": const(scheme, pa.string()),
        "variant": const(variant, pa.string()),
        "op": pa.array(rows["op"], pa.string()),
        "metric": const(METRIC, pa.string()),
        "job": const(jid, pa.string()),
        "job_index": const(0, pa.int32()),
        "spin": pa.array(rows["spin"], pa.int32()),
        "rep": const(0, pa.int32()),
        "batch": pa.array(rows["batch"], pa.int32()),
        "raw": pa.array(rows["raw"], pa.int64()),
        "ticks": pa.nulls(n, pa.int64()),
        "per_call": pa.array(rows["per_call"], pa.float64()),
        "warmup": const(False, pa.bool_()),
    })


def _frac_text(f: Fraction) -> str:
    return str(f.numerator) if f.denominator == 1 else f"{f.numerator}/{f.denominator}"


def _workers() -> int:
    return max(1, len(os.sched_getaffinity(0)))


def _update_manifest(directory: Path, info: dict[str, Any]) -> None:
    path = directory / "manifest.json"
    if not path.exists():
        return
    manifest = store.read_json(path)
    manifest.setdefault("metrics", {})[METRIC] = info
    store.atomic_write_json(path, manifest)


def execute(directory: Path, study: study_mod.Study, variants: list[str], console: Console | None = None) -> bool:
    """Count instructions for every (variant, scheme) of the study; False if a job failed."""
    console = console or Console(stderr=True, highlight=False)
    directory = Path(directory)
    version = valgrind_version()
    info: dict[str, Any] = {
        "status": "ok", "tool": version, "method": "callgrind Ir inside pqsimd_measure, (Ir(N2) - Ir(N1)) / (N2 - N1) - empty",
        "n1": N1, "n2": N2, "repeats": REPEATS, "skipped": {}, "failed": {},
    }
    if version is None:
        reason = "valgrind not found on PATH (install it: apt-get install valgrind)"
        console.print(f"[red]instructions unavailable[/red]: {reason}")
        _update_manifest(directory, {**info, "status": "unavailable", "reason": reason})
        return False

    ops = list(dict.fromkeys(study.ops))
    measured_ops = list(dict.fromkeys([CALIBRATION_OP, *ops]))
    pending: list[tuple[str, str, Path, str]] = []
    done = 0
    for vid in variants:
        binary = store.bin_path(directory, vid)
        sha = store.sha256_file(binary)
        for scheme in study.schemes:
            jid = job_id(vid, scheme)
            if store.finished_job(directory, jid, sha):
                done += 1
            else:
                pending.append((vid, scheme, binary, sha))
    console.print(f"instructions ({version}): {len(pending)} jobs to run, {done} already finished")

    skipped: dict[str, str] = {}  # variant -> reason (valgrind cannot run it)
    lock = threading.Lock()

    def task(vid: str, scheme: str, binary: Path, op: str) -> Pair | None:
        with lock:
            if vid in skipped:
                return None
        try:
            return measure_pair(binary, scheme, op)
        except CountError as e:
            if e.unsupported:
                with lock:
                    skipped.setdefault(vid, f"{scheme} {e}")
                return None
            raise

    ok = True
    started = {(v, s): datetime.now(timezone.utc).isoformat() for v, s, _, _ in pending}
    pool = ThreadPoolExecutor(max_workers=_workers())
    progress = Progress(TextColumn("callgrind runs"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                        TextColumn("eta"), TimeRemainingColumn(), console=console, transient=True)
    try:
        futures = {}
        for vid, scheme, binary, sha in pending:
            for op in measured_ops:
                for r in range(REPEATS):
                    futures[pool.submit(task, vid, scheme, binary, op)] = (vid, scheme, op, r)
        results: dict[tuple[str, str], dict[str, list[Pair | None]]] = {
            (v, s): {op: [None] * REPEATS for op in measured_ops} for v, s, _, _ in pending
        }
        errors: dict[tuple[str, str], str] = {}
        remaining = {(v, s): len(measured_ops) * REPEATS for v, s, _, _ in pending}
        sha_of = {(v, s): sha for v, s, _, sha in pending}
        progress.start()
        bar = progress.add_task("runs", total=2 * len(futures))
        for fut in as_completed(futures):
            progress.advance(bar, 2)
            vid, scheme, op, r = futures[fut]
            key = (vid, scheme)
            try:
                results[key][op][r] = fut.result()
            except CountError as e:
                errors.setdefault(key, str(e))
            remaining[key] -= 1
            if remaining[key]:
                continue
            # The job's last run finished: write it (or report why not).
            if vid in skipped:
                continue
            if key in errors:
                ok = False
                info["failed"][job_id(vid, scheme)] = errors[key]
                console.print(f"[red]failed[/red] {job_id(vid, scheme)}: {errors[key]}")
                continue
            res = {op: [p for p in pairs if p is not None] for op, pairs in results[key].items()}
            path = _write_job(directory, study, vid, scheme, res, ops, sha_of[key], started[key], version)
            console.print(f"instructions {vid} {scheme}: {path.name}")
    except BaseException:
        # Ctrl-C or a crash: drop the queued runs (finished jobs are on disk; a rerun continues)
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        progress.stop()
        pool.shutdown(wait=True)

    for vid, reason in skipped.items():
        line = f"{vid}: skipped for metric instructions ({reason})"
        console.print(f"[yellow]skip[/yellow] {line}", soft_wrap=True)
        info["skipped"][vid] = reason
    if info["failed"]:
        info["status"] = "partial"
    _update_manifest(directory, info)
    return ok


def _write_job(directory: Path, study: study_mod.Study, vid: str, scheme: str, res: dict[str, list[Pair]],
               ops: list[str], sha: str, started: str, version: str) -> Path:
    jid = job_id(vid, scheme)
    empty = res[CALIBRATION_OP][0]
    call_overhead = empty.exact
    table = build_table(vid, scheme, jid, {op: res[op] for op in ops}, call_overhead)
    deterministic = {op: len({p.exact for p in res[op]}) == 1 for op in ops}
    record = {
        "id": jid, "variant": vid, "scheme": scheme, "index": 0, "metric": METRIC,
        "cpu": None, "hostname": socket.gethostname(), "cpu_model": machine.cpu_model(),
        "calibration": {"overhead": 0, "call_overhead": float(call_overhead), "call_overhead_exact": _frac_text(call_overhead), "unit": "instructions"},
        "binary_sha256": sha, "tool": version,
        "command": callgrind_command(store.bin_path(directory, vid), scheme, "<op>", 0, Path("<out>"))[:-1] + ["<N1|N2>"],
        "n1": N1, "n2": N2, "repeats": REPEATS,
        "counts": {op: [[p.ir1, p.ir2] for p in pairs] for op, pairs in res.items()},
        "per_call_exact": {op: [_frac_text(per_call(p, call_overhead)) for p in res[op]] for op in ops},
        "deterministic": deterministic,
        "started": started, "finished": datetime.now(timezone.utc).isoformat(),
    }
    return store.write_raw(directory, jid, table, record)
