"""Hardware counters (perf_event_open), honestly: available, or why not.

The driver opens one group of user-space-only events when a job spec has a `counters` line
(harness/driver/perf.c). Its calibration JSON (first stdout line) always carries a `counters`
object: either `{"available": true, "events": [...], "overhead": [...]}`, and then every TSV
sample line has one extra column per event ("NA" if the group was multiplexed), or
`{"available": false, "errno": 2, "error": "ENOENT", ...}`, and timing went on without them.
run/job.py turns the columns into one raw metric per event, per_call = (raw - overhead) / batch.

This module holds
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

DEFAULT_EVENTS = ("cycles", "instructions", "branches", "branch-misses", "cache-references", "cache-misses", "l1d-loads", "l1d-misses")
EVENTS = DEFAULT_EVENTS + ("ref-cycles", "page-faults", "context-switches")  # the last two: software events
PARANOID_PATH = Path("/proc/sys/kernel/perf_event_paranoid")


def metric_name(event: str) -> str:
    """The raw-schema metric of a perf event."""
    return "retired_instructions" if event == "instructions" else event.replace("-", "_")  # not a metric: a perf event


def check_events(events: Iterable[str]) -> list[str]:
    """The events of a counters request, each one the driver knows (perf.c)."""
    events = list(events)
    bad = [e for e in events if e not in EVENTS]
    if bad:
        raise ValueError(f"unknown counter event {bad[0]!r}; valid: {', '.join(EVENTS)}")
    return events


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
        rows.append(("valgrind and AVX-512", None, "this CPU has AVX-512: -march=native builds use it",
                     "valgrind cannot decode AVX-512 (EVEX) instructions: --metric instructions and mix count such "
                     "builds by single-stepping them natively (ptrace; slower), --metric sim skips them with the "
                     "reason; ticks still work"))
    rows.append(energy.doctor_check())
    return rows
