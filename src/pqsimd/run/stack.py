"""What an op costs besides time: its peak stack (`--metric stack`) and the code it reaches
(`--metric size`), one job per (build, scheme) each, exact and deterministic, so each runs once.

stack  `driver stack LIB SCHEME OP...` (harness/driver/stack.c): per op its setup, a warm call (lazy
       binding and first-call effects stay out), then one call on a private mmap'ed stack painted 0xA5
       and one painted 0x5A, each scanned from the bottom for the deepest byte written; the larger of
       the two (a byte written with the paint's own value is missed by that paint only). The family's
       self-check op (an empty function) is measured the same way and subtracted: per_call = bytes the
       op writes below its return address (the trampoline's frame and, on x86-64, the return address
       itself cancel), so the self-check reads exactly 0 and a function that writes an N-byte local
       array (N a multiple of 16) reads N (tests/fixtures/families/stackfix). Natively on x86-64, under
       the ISA's qemu-user elsewhere (the emulated stack is the guest's: exact as natively). A lower
       bound: bytes reserved and never written are not seen. Beside it, where the build's compiler can
       give it (gcc), the static bound (stackbound.py): the build's units compiled again with
       -fstack-usage -fcallgraph-info=su into DIR/stack-usage/<build>/ (the timed build untouched, its
       code compared), the worst call path's frames from the op's function, and what the bound cannot
       see named (functions without a frame size, indirect calls, recursion, dynamic frames).
size   codesize.py: the bytes of the op's call tree (functions by nm -S, assembly routines by their
       instructions) plus the read-only data objects it addresses, each once; per_call = code + rodata.
       Static (nm, objdump of the gated library; the op's entry from driver `where`): a laid-out copy
       has the same sizes as its build.

Raw files DIR/raw/<variant>.<compiler>.<scheme>.{stack,size}.parquet: one row per op, spin 0, batch 1,
raw = the stack's peak bytes (size: code + rodata), per_call as above. The job records hold both paints,
the self-check's bytes, the static bound per op (`static`: bytes, the worst path, what it cannot see,
minus_painted; or why there is none), the size's parts (code, rodata, functions, objects, unsized constants, indirect
calls) and the seconds the job took.
"""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .. import codesize, isa as isa_mod, machine, stackbound, store
from ..errors import PqsimdError, tagged
from ..layout import op_offsets
from ..studydir import StudyDir
from .instructions import _workers, calibration_op, job_ops
from .metrics import pending, per_build_jobs

STACK, SIZE = "stack", "size"
PATTERNS = (0xA5, 0x5A)
TIMEOUT = 600  # seconds for one build's ops under the emulator


def _isa(study):
    return isa_mod.of_study(study) if getattr(study, "isa", "") else isa_mod.host()


def measure_stack(driver: Path, library: Path, scheme: str, ops: list[str], launcher: list[str] | tuple = ()
                  ) -> dict[str, tuple[int, int]]:
    """op -> (bytes painted 0xA5, bytes painted 0x5A) of one call each (driver `stack`)."""
    cmd = [*launcher, str(driver), "stack", str(library), scheme, *ops]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        raise PqsimdError(f"driver stack {library.name} {scheme}: no answer within {TIMEOUT} s") from None
    if proc.returncode:
        why = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        raise PqsimdError(f"driver stack {library.name} {scheme}: {why}")
    out = {}
    for line in proc.stdout.splitlines():
        op, a, b = line.split("\t")
        out[op] = (int(a), int(b))
    return out


def _table(build, scheme: str, jid: str, metric: str, per_op: dict[str, tuple[int, int]]):
    rows: dict[str, list[Any]] = {"op": [], "spin": [], "batch": [], "raw": [], "per_call": []}
    for op, (raw, per_call) in per_op.items():
        rows["op"].append(op)
        rows["spin"].append(0)
        rows["batch"].append(1)
        rows["raw"].append(raw)
        rows["per_call"].append(float(per_call))
    return store.raw_table(rows, {"scheme": scheme, "variant": build.variant, "compiler": build.compiler.id,
                                  "metric": metric, "job": jid, "job_index": 0, "rep": 0, "pos": 0, "warmup": False})


def _record(sd: StudyDir, job, metric: str, started: str, seconds: float, isa, **extra) -> dict:
    b = job.info["build"]
    return {"id": job.id, "variant": b.variant, "compiler": b.compiler.id, "build": b.id, "scheme": job.info["scheme"],
            "index": 0, "metric": metric, "cpu": None, "hostname": socket.gethostname(), "cpu_model": machine.cpu_model(),
            "isa": isa.name, **({} if isa.native else {"emulator": {"qemu": isa.qemu, "cpu": isa.qemu_cpu}}),
            "binaries": {b.id: store.sha256_file(sd.variant_path(b.id))}, "seconds": round(seconds, 3),
            "started": started, "finished": datetime.now(timezone.utc).isoformat(), **extra}


_side_locks: dict[str, threading.Lock] = {}
_side_guard = threading.Lock()


def _side_graph(sd: StudyDir, build, isa) -> stackbound.Graph:
    """The build's call graph with gcc's frame sizes, its units compiled once per study into
    DIR/stack-usage/<build>/ (a second parameter set of the build reads them); Unavailable says why not."""
    with _side_guard:
        lock = _side_locks.setdefault(build.id, threading.Lock())
    with lock:
        side = sd.stack_usage_dir(build.id)
        done = side / "done.json"
        sha = store.sha256_file(sd.variant_path(build.id))
        rec = json.loads(done.read_text()) if done.is_file() else {}
        if rec.get("sha256") != sha:
            try:
                stackbound.check_compiler(build.compiler.family, build.flags)
                cis = stackbound.side_compile(build.commands, build.directory, side, isa.objdump(), jobs=_workers())
                rec = {"sha256": sha, "ci": [str(c.relative_to(side)) for c in cis]}
            except stackbound.Unavailable as e:
                rec = {"sha256": sha, "unavailable": str(e)}
            side.mkdir(parents=True, exist_ok=True)
            store.atomic_write_text(done, json.dumps(rec, indent=1))
        if "unavailable" in rec:
            raise stackbound.Unavailable(rec["unavailable"])
        return stackbound.Graph([side / c for c in rec["ci"]])


def static_bounds(sd: StudyDir, build, scheme: str, ops: list[str], painted: dict[str, int], isa) -> dict:
    """op -> the static bound's record beside the painted bytes (or {available: false, why})."""
    try:
        graph = _side_graph(sd, build, isa)
    except stackbound.Unavailable as e:
        return {op: stackbound.unavailable_note(e) for op in ops}
    lib = sd.gated_library(build.id)
    offsets = op_offsets(sd.gated_driver(), lib, scheme, isa.launcher())
    img = codesize.Image(lib, isa.objdump())
    abi = isa.stack or {}
    defined = {f.name for f in img.funcs.values() if "@" not in f.name}
    out = {}
    for op in ops:
        try:
            if op not in offsets or offsets[op] not in img.funcs:
                raise stackbound.Unavailable(f"driver where gives no function for {op}")
            name = img.funcs[offsets[op]].name
            entry = stackbound.pick_entry(graph, name, img.callees(offsets[op]))
            b = graph.worst(entry, abi.get("red_zone", 0), abi.get("return_address", 0), defined)
            out[op] = {"available": True, **b.to_dict(painted.get(op))}
        except stackbound.Unavailable as e:
            out[op] = stackbound.unavailable_note(e)
    return out


def stack_job(sd: StudyDir, study, job, isa) -> Path:
    b, scheme = job.info["build"], job.info["scheme"]
    started, t0 = datetime.now(timezone.utc).isoformat(), time.monotonic()
    cal = calibration_op(scheme)
    ops = job_ops(sd, study, job)
    lib = sd.gated_library(b.id)
    got = measure_stack(sd.gated_driver(), lib, scheme, list(dict.fromkeys([*cal, *ops])), isa.launcher())
    peak = {op: max(v) for op, v in got.items()}
    empty = peak[cal[0]] if cal else 0
    table = _table(b, scheme, job.id, STACK, {op: (peak[op], peak[op] - empty) for op in ops})
    static = static_bounds(sd, b, scheme, ops, {op: peak[op] - empty for op in ops}, isa)
    rec = _record(sd, job, STACK, started, time.monotonic() - t0, isa,
                  method="painted private stack (makecontext), 0xA5 and 0x5A, after a warm call; bytes written below "
                         "the op's return address: peak - the self-check op's peak",
                  calibration={"op": cal[0] if cal else None, "bytes": empty, "unit": "bytes"},
                  paints={op: list(v) for op, v in got.items()}, static=static,
                  static_method="gcc -fstack-usage -fcallgraph-info=su on the build's units (DIR/stack-usage/<build>/): "
                                "the worst path's frames - the op's return address + the ABI's red zone",
                  command=[str(sd.driver_path), "stack", str(lib), scheme])
    return sd.write_raw(job.id, table, rec)


def size_job(sd: StudyDir, study, job, isa) -> Path:
    b, scheme = job.info["build"], job.info["scheme"]
    started, t0 = datetime.now(timezone.utc).isoformat(), time.monotonic()
    ops = job_ops(sd, study, job)
    lib = sd.gated_library(b.id)
    offsets = op_offsets(sd.gated_driver(), lib, scheme, isa.launcher())
    sizes = codesize.op_sizes(lib, {op: offsets[op] for op in ops if op in offsets}, isa.objdump())
    missing = [op for op in ops if op not in sizes]
    if missing:
        raise PqsimdError(f"driver where {lib.name} {scheme}: no entry for {', '.join(missing)}")
    table = _table(b, scheme, job.id, SIZE, {op: (s.total, s.total) for op, s in sizes.items()})
    rec = _record(sd, job, SIZE, started, time.monotonic() - t0, isa,
                  method="call tree over nm -S / objdump: functions + read-only data objects they address, each once",
                  parts={op: {"code": s.code, "rodata": s.rodata, "functions": s.functions, "objects": s.objects,
                              "unsized_constants": s.unsized, "indirect_calls": s.indirect,
                              "external": s.external} for op, s in sizes.items()})
    return sd.write_raw(job.id, table, rec)


def run(sd: StudyDir, study, ctx) -> bool:
    """The stack and size metrics' runner (run/metrics.py): every pending job on all allowed CPUs."""
    isa = _isa(study)
    work = [(m, j) for m, fn in ((STACK, stack_job), (SIZE, size_job)) if m in study.metrics
            for j in pending(sd, per_build_jobs(sd, study, ctx, m))]
    total = {m: len(per_build_jobs(sd, study, ctx, m)) for m in (STACK, SIZE) if m in study.metrics}
    for m, n in total.items():
        todo = sum(1 for w, _ in work if w == m)
        ctx.console.print(f"{m}: {todo} jobs to run, {n - todo} already finished")
    info = {m: {"status": "ok", "isa": isa.name, "failed": {}, "seconds": 0.0} for m in total}
    ok = True
    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=_workers()) as pool:
        futures = {pool.submit(stack_job if m == STACK else size_job, sd, study, j, isa): (m, j) for m, j in work}
        for fut in as_completed(futures):
            m, j = futures[fut]
            try:
                path = fut.result()
            except (PqsimdError, OSError, ValueError, KeyError) as e:
                ok = False
                info[m]["failed"][j.id] = str(e)
                info[m]["status"] = "partial"
                ctx.console.print(tagged("failed", "red", f"{j.id}: {e}"), soft_wrap=True)
                continue
            ctx.console.print(f"{m} {j.info['build'].variant} ({j.info['build'].compiler.id}) {j.info['scheme']}: {path.name}")
    for m in info:
        info[m]["seconds"] = round(time.monotonic() - t0, 2)
    sd.update_manifest(lambda man: man.setdefault("metrics", {}).update(info))
    return ok
