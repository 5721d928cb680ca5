"""Hardware counters (perf_event_open), honestly: available, or why not.

The harness opens one group of user-space-only events when `harness run --counters LIST` is
given (harness/perf.c). Its calibration JSON (first stdout line) always carries a `counters`
object: either `{"available": true, "events": [...], "overhead": [...]}`, and then every TSV
sample line has one extra column per event ("NA" if the group was multiplexed), or
`{"available": false, "errno": 2, "error": "ENOENT", ...}`, and timing went on without them.

This module turns that into
- long-format raw rows, one metric per event (`counter_tables`), per_call = (raw - overhead)/batch;
- the derived ratios (IPC, miss rates, MPKI) from recorded values (`derived`);
- the status and a plain explanation for the manifest and the report (`status`, `explain`);
- `pqsimd doctor` checks (`doctor_checks`): perf_event_paranoid, a real perf_event_open probe,
  what it means for rdpmc/PAPI, and the RAPL energy counters (energy.py).

Metric names: perf's `instructions` is stored as `retired_instructions`, so it never mixes with
`instructions` (exact callgrind counts); the other events keep perf's names with '_' for '-'.
TSC ticks are not core cycles: `core_per_tsc` (harness calibration, from a chain of dependent
adds) estimates the ratio where `cycles` is unavailable.
"""

from __future__ import annotations

import ctypes
import errno as errno_mod
import os
import platform
import struct
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np
import pyarrow as pa

DEFAULT_EVENTS = ("cycles", "instructions", "branches", "branch-misses", "cache-references", "cache-misses", "l1d-loads", "l1d-misses")
EVENTS = DEFAULT_EVENTS + ("ref-cycles", "page-faults", "context-switches")  # the last two: software events
PARANOID_PATH = Path("/proc/sys/kernel/perf_event_paranoid")


def metric_name(event: str) -> str:
    """The raw-schema metric of a perf event."""
    return "retired_instructions" if event == "instructions" else event.replace("-", "_")


def harness_args(events: Iterable[str] = DEFAULT_EVENTS) -> list[str]:
    """The extra `harness run` arguments that ask for counters."""
    events = list(events)
    bad = [e for e in events if e not in EVENTS]
    if bad:
        raise ValueError(f"unknown counter event {bad[0]!r}; valid: {', '.join(EVENTS)}")
    return ["--counters", ",".join(events)]


# --- status and explanation ------------------------------------------------------------------

def read_paranoid(path: Path = PARANOID_PATH) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def explain(err: int | None, paranoid: int | None, virtualized: str | None = None) -> str:
    """Why perf_event_open refused, in words a user can act on."""
    name = errno_mod.errorcode.get(err or 0, str(err))
    if err in (errno_mod.ENOENT, errno_mod.ENODEV, errno_mod.EOPNOTSUPP):
        where = f" (virtualized: {virtualized})" if virtualized else ""
        return (f"perf_event_open: {name}: the kernel has no PMU for these events{where}; "
                "in a VM the hypervisor must expose a virtual PMU (e.g. KVM -cpu host,pmu=on, "
                "Firecracker/cloud VMs usually don't); rdpmc and PAPI need the same PMU, so they fail too")
    if err in (errno_mod.EACCES, errno_mod.EPERM):
        p = "unknown" if paranoid is None else str(paranoid)
        return (f"perf_event_open: {name}: not permitted with kernel.perf_event_paranoid={p} "
                "(user-space counting of your own process needs <= 2; Debian/Ubuntu's 3 or 4 forbid all); "
                "`sudo sysctl kernel.perf_event_paranoid=2`, or CAP_PERFMON; PAPI and rdpmc are bound by the same setting")
    if err == errno_mod.ENOSYS:
        return "perf_event_open: ENOSYS: this kernel or platform has no perf events"
    if err == errno_mod.EINVAL:
        return "perf_event_open: EINVAL: the PMU rejected an event (not supported by this CPU model?)"
    return f"perf_event_open failed: {name}"


def status(calibration: Mapping[str, Any], paranoid: int | None = None, virtualized: str | None = None) -> dict[str, Any]:
    """The counters status of one job from its calibration JSON (for the job record/manifest)."""
    c = calibration.get("counters")
    if c is None:
        return {"requested": [], "available": False, "reason": "not requested"}
    if c.get("available"):
        return {"requested": c.get("requested", []), "available": True, "events": c["events"], "scope": c.get("scope", "user")}
    return {
        "requested": c.get("requested", []), "available": False, "errno": c.get("errno"), "error": c.get("error"),
        "failed_event": c.get("failed_event"), "reason": explain(c.get("errno"), paranoid, virtualized),
    }


# --- samples → raw rows -----------------------------------------------------------------------

def parse_counter_columns(lines: Iterable[str], events: list[str]) -> dict[str, np.ndarray]:
    """TSV sample lines with counter columns → arrays op/spin/rep/batch/raw and one per event
    (float, NaN where the harness wrote NA)."""
    ops, spin, rep, batch, raw = [], [], [], [], []
    vals: list[list[float]] = [[] for _ in events]
    for line in lines:
        f = line.rstrip("\n").split("\t")
        if len(f) != 5 + len(events):
            raise ValueError(f"expected {5 + len(events)} columns, got {len(f)}: {line!r}")
        ops.append(f[0]); spin.append(int(f[1])); rep.append(int(f[2])); batch.append(int(f[3])); raw.append(int(f[4]))  # noqa: E702
        for i, v in enumerate(f[5:]):
            vals[i].append(np.nan if v == "NA" else float(v))
    out: dict[str, np.ndarray] = {
        "op": np.array(ops, dtype=object), "spin": np.array(spin, np.int32), "rep": np.array(rep, np.int32),
        "batch": np.array(batch, np.int32), "raw": np.array(raw, np.int64),
    }
    for e, v in zip(events, vals):
        out[e] = np.array(v, np.float64)
    return out


def counter_tables(cols: Mapping[str, np.ndarray], events: list[str], overhead: list[float], job: Mapping[str, Any]) -> list[pa.Table]:
    """One long-format raw table per event: metric = metric_name(event), raw = the counter over the
    sample, per_call = (raw - overhead) / batch; samples the PMU did not fully cover are dropped."""
    tables = []
    for e, ov in zip(events, overhead):
        v = cols[e]
        keep = ~np.isnan(v)
        n = int(keep.sum())
        spin = cols["spin"][keep]
        batch = cols["batch"][keep]
        raw = v[keep].astype(np.int64)
        const = lambda x, typ: pa.array([x] * n, typ)  # noqa: E731
        tables.append(pa.table({
            "scheme": const(job["scheme"], pa.string()), "variant": const(job["variant"], pa.string()),
            "op": pa.array(list(cols["op"][keep]), pa.string()), "metric": const(metric_name(e), pa.string()),
            "job": const(job["id"], pa.string()), "job_index": const(job.get("index", 0), pa.int32()),
            "spin": pa.array(spin, pa.int32()), "rep": pa.array(cols["rep"][keep], pa.int32()),
            "batch": pa.array(batch, pa.int32()), "raw": pa.array(raw, pa.int64()),
            "ticks": pa.nulls(n, pa.int64()), "per_call": pa.array((raw - ov) / batch, pa.float64()),
            "warmup": pa.array(spin < 0),
        }))
    return tables


def job_table(tsv: Path, job: Mapping[str, Any], calibration: Mapping[str, Any], parse_samples) -> tuple[pa.Table, int]:
    """A harness run's output → (raw table, number of timed samples), with counters or without.

    Without an open counter group the TSV is the engine's 5-column format and `parse_samples`
    (run/job.py) reads it as is. With one, each line carries one more column per event: the
    first five columns go to `parse_samples`, the rest become one long-format table per event
    (metric_name(event)), concatenated after the ticks rows."""
    c = calibration.get("counters") or {}
    if not c.get("available"):
        t = parse_samples(tsv, job, calibration)
        return t, t.num_rows
    events = list(c["events"])
    text = Path(tsv).read_text().splitlines()
    lines = [l for l in text[1:] if l]
    cols = parse_counter_columns(lines, events)
    five = Path(tsv).with_name(Path(tsv).name + ".ticks")
    try:
        five.write_text("\n".join([text[0], *("\t".join(l.split("\t")[:5]) for l in lines)]) + "\n")
        ticks = parse_samples(five, job, calibration)
    finally:
        five.unlink(missing_ok=True)
    extra = counter_tables(cols, events, [float(x) for x in c.get("overhead", [0] * len(events))], job)
    return pa.concat_tables([ticks, *(t.cast(ticks.schema) for t in extra)]), ticks.num_rows


# --- derived ratios ----------------------------------------------------------------------------

RATIOS = {
    # name: (numerator event, denominator event, scale)
    "ipc": ("instructions", "cycles", 1.0),
    "branch_miss_rate": ("branch-misses", "branches", 1.0),
    "cache_miss_rate": ("cache-misses", "cache-references", 1.0),
    "l1d_miss_rate": ("l1d-misses", "l1d-loads", 1.0),
    "branch_mpki": ("branch-misses", "instructions", 1000.0),
    "l1d_mpki": ("l1d-misses", "instructions", 1000.0),
    "cache_mpki": ("cache-misses", "instructions", 1000.0),
}


def derived(per_call: Mapping[str, float | np.ndarray]) -> dict[str, float | np.ndarray]:
    """IPC, miss rates and misses per 1000 instructions from per-call counter values (event name →
    value or array, overhead already removed). Ratios whose inputs are missing are left out; a
    zero denominator gives NaN."""
    out: dict[str, float | np.ndarray] = {}
    for name, (num, den, scale) in RATIOS.items():
        if num in per_call and den in per_call:
            n = np.asarray(per_call[num], np.float64)
            d = np.asarray(per_call[den], np.float64)
            with np.errstate(divide="ignore", invalid="ignore"):
                r = np.where(d > 0, scale * n / np.where(d > 0, d, 1.0), np.nan)
            out[name] = float(r) if r.ndim == 0 else r
    return out


def ticks_to_cycles(ticks: float | np.ndarray, core_per_tsc: float) -> float | np.ndarray:
    """TSC ticks → estimated core cycles (an estimate: the ratio moves with frequency)."""
    return np.asarray(ticks, np.float64) * core_per_tsc if not np.isscalar(ticks) else float(ticks) * core_per_tsc


# --- a real probe (for doctor), without building the harness ---------------------------------

_SYSCALL = {"x86_64": 298, "aarch64": 241, "riscv64": 241, "ppc64le": 319}


def probe(event_config: int = 0) -> tuple[bool, int]:
    """Try perf_event_open for user-space cycles (PERF_TYPE_HARDWARE, config 0) on this process.
    Returns (ok, errno)."""
    nr = _SYSCALL.get(platform.machine())
    if nr is None:
        return False, errno_mod.ENOSYS
    # struct perf_event_attr (PERF_ATTR_SIZE_VER5 = 112 bytes is accepted by every kernel >= 4.1):
    # type u32, size u32, config u64, sample_period u64, sample_type u64, read_format u64, flags u64
    size = 112
    flags = (1 << 0) | (1 << 5) | (1 << 6)  # disabled, exclude_kernel, exclude_hv
    attr = struct.pack("<IIQQQQQ", 0, size, event_config, 0, 0, 0, flags).ljust(size, b"\0")
    buf = ctypes.create_string_buffer(attr, size)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    fd = libc.syscall(ctypes.c_long(nr), buf, ctypes.c_int(0), ctypes.c_int(-1), ctypes.c_int(-1), ctypes.c_ulong(0))
    if fd < 0:
        return False, ctypes.get_errno()
    os.close(fd)
    return True, 0


def manifest_entry() -> dict[str, Any]:
    """Counter availability of the machine writing the manifest (a real probe), with the reason."""
    from . import machine

    ok, err = probe()
    paranoid = read_paranoid()
    if ok:
        return {"available": True, "perf_event_paranoid": paranoid, "scope": "user"}
    return {"available": False, "perf_event_paranoid": paranoid, "errno": err, "error": errno_mod.errorcode.get(err, str(err)),
            "reason": explain(err, paranoid, machine.virtualization())}


def doctor_checks() -> list[tuple[str, bool | None, str, str]]:
    """(name, ok, detail, remedy) rows for `pqsimd doctor`: counters, and RAPL energy."""
    from . import energy, machine

    rows: list[tuple[str, bool | None, str, str]] = []
    paranoid = read_paranoid()
    p_detail = {None: "not readable", -1: "-1: no restrictions", 0: "0: user + kernel, no raw tracepoints",
                1: "1: user + kernel of own processes", 2: "2: user-space only (enough for pqsimd)"}.get(paranoid, f"{paranoid}: counters forbidden to unprivileged users")
    p_ok = None if paranoid is None else paranoid <= 2
    rows.append(("perf_event_paranoid", p_ok, p_detail,
                 "" if p_ok in (None, True) else "sudo sysctl kernel.perf_event_paranoid=2 (or grant CAP_PERFMON); PAPI and rdpmc need it too"))
    ok, err = probe()
    virt = machine.virtualization()
    if ok:
        rows.append(("hardware counters", True, "perf_event_open(cycles, user) works", ""))
    else:
        rows.append(("hardware counters", None, f"unavailable: {errno_mod.errorcode.get(err, err)}",
                     explain(err, paranoid, virt) + "; timing still works (TSC ticks, `core_per_tsc` estimates the ratio), "
                     "and --metric instructions gives exact instruction counts"))
    if "avx512f" in machine.cpu_flags():
        rows.append(("valgrind and AVX-512", None, "this CPU has AVX-512: -march=native builds (ref-native) use it",
                     "valgrind cannot decode AVX-512 (EVEX) instructions, so --metric instructions skips such "
                     "variants with the reason; ticks still work"))
    rows.append(energy.doctor_check())
    return rows
