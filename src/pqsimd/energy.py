"""Energy via RAPL's powercap interface: /sys/class/powercap/intel-rapl:*/energy_uj.

Zones: `intel-rapl:N` are packages (name `package-N`), `intel-rapl:N:M` their subzones (`core`,
`uncore`, `dram`); `intel-rapl-mmio:N` mirrors a package on some Intel parts; AMD Zen exposes the
package zone through the same `intel-rapl` control type (no DRAM domain). Each zone counts
micro-joules up to `max_energy_range_uj`, then wraps to 0. The counter updates about every
millisecond in units of ~15-61 µJ, so one reading brackets a batch of calls that lasts long
enough (`min_seconds`, default 1 s) and the result is divided by the calls in it.

The sysfs root is a parameter, so tests drive the reader with a fake tree. Where there is no
powercap (most VMs, this one) or energy_uj is root-only (kernels >= 5.10, CVE-2020-8694),
`status()` says so, with the reason, and nothing pretends to measure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

DEFAULT_ROOT = Path("/sys/class/powercap")
_ZONE = re.compile(r"^intel-rapl(?:-mmio)?:\d+(?::\d+)?$")


class EnergyUnavailable(Exception):
    """RAPL cannot be read here; str(e) is the reason."""


@dataclass(frozen=True)
class Domain:
    zone: str  # directory name, e.g. intel-rapl:0:1
    name: str  # contents of `name`, e.g. package-0, dram
    kind: str  # package | dram | core | uncore | psys | other
    path: Path
    max_range_uj: int

    @property
    def key(self) -> str:
        """Stable id for results: package-0, dram-0 (the dram of package 0), ..."""
        if self.kind == "package" or self.kind == "psys":
            return self.name
        parts = self.zone.split(":")
        return f"{self.kind}-{parts[1]}" if len(parts) >= 2 else self.name


def _kind(name: str) -> str:
    n = name.lower()
    for k in ("package", "dram", "core", "uncore", "psys"):
        if n.startswith(k):
            return k
    return "other"


def discover(root: Path = DEFAULT_ROOT) -> list[Domain]:
    """The readable-looking RAPL zones under root (mmio mirrors of a package are dropped)."""
    root = Path(root)
    if not root.is_dir():
        raise EnergyUnavailable(f"{root} does not exist: no powercap interface (no RAPL driver, or a VM that hides it)")
    domains: list[Domain] = []
    # MSR-based zones first, so an mmio mirror of the same package is the one dropped
    for d in sorted(root.iterdir(), key=lambda p: (p.name.startswith("intel-rapl-mmio"), p.name)):
        if not _ZONE.match(d.name) or not (d / "energy_uj").exists():
            continue
        name = (d / "name").read_text().strip() if (d / "name").exists() else d.name
        try:
            max_range = int((d / "max_energy_range_uj").read_text())
        except (OSError, ValueError):
            max_range = 0
        dom = Domain(d.name, name, _kind(name), d, max_range)
        if d.name.startswith("intel-rapl-mmio") and any(x.key == dom.key for x in domains):
            continue
        domains.append(dom)
    if not domains:
        raise EnergyUnavailable(f"{root} has no intel-rapl zones with energy_uj (no RAPL on this CPU or driver not loaded: modprobe intel_rapl_common)")
    return domains


def read_uj(domain: Domain) -> int:
    try:
        return int((domain.path / "energy_uj").read_text())
    except PermissionError:
        raise EnergyUnavailable(
            f"{domain.path / 'energy_uj'} is readable by root only (kernels >= 5.10, CVE-2020-8694); "
            "run as root or `sudo chmod o+r /sys/class/powercap/intel-rapl:*/energy_uj`"
        ) from None
    except (OSError, ValueError) as e:
        raise EnergyUnavailable(f"cannot read {domain.path / 'energy_uj'}: {e}") from None


def delta_uj(before: int, after: int, max_range_uj: int) -> int:
    """Energy between two readings, across at most one wraparound (the counter runs 0..max_range)."""
    if after >= before:
        return after - before
    if max_range_uj <= 0:
        raise EnergyUnavailable("energy counter went backwards and max_energy_range_uj is unknown")
    return after + max_range_uj - before


class Reader:
    """Snapshots of every RAPL domain under a sysfs root."""

    def __init__(self, root: Path = DEFAULT_ROOT):
        self.root = Path(root)
        self.domains = discover(self.root)

    def snapshot(self) -> dict[str, int]:
        return {d.key: read_uj(d) for d in self.domains}

    def joules(self, before: Mapping[str, int], after: Mapping[str, int]) -> dict[str, float]:
        """Joules per domain between two snapshots (wraparound handled)."""
        return {d.key: delta_uj(before[d.key], after[d.key], d.max_range_uj) / 1e6 for d in self.domains}

    @property
    def has_dram(self) -> bool:
        return any(d.kind == "dram" for d in self.domains)


def status(root: Path = DEFAULT_ROOT) -> dict[str, Any]:
    """Availability for the manifest/report: {"available": bool, "domains": [...], "reason": str}."""
    try:
        r = Reader(root)
        r.snapshot()
    except EnergyUnavailable as e:
        return {"available": False, "root": str(root), "domains": [], "reason": str(e)}
    missing = [] if r.has_dram else ["dram (not exposed here: AMD and many client CPUs have none)"]
    return {"available": True, "root": str(root), "domains": [{"key": d.key, "zone": d.zone, "name": d.name,
            "max_energy_range_uj": d.max_range_uj} for d in r.domains], "missing": missing, "reason": ""}


@dataclass
class EnergySample:
    joules: dict[str, float]  # per domain key
    seconds: float
    calls: int

    def per_call(self, key: str) -> float:
        return self.joules[key] / self.calls

    def power(self, key: str) -> float:
        return average_power(self.joules[key], self.seconds)


def measure(reader: Reader, run: Callable[[], tuple[int, float]]) -> EnergySample:
    """Energy of `run()` (which does the calls and returns (calls, seconds) it spent)."""
    before = reader.snapshot()
    calls, seconds = run()
    after = reader.snapshot()
    return EnergySample(reader.joules(before, after), seconds, calls)


def joules_per_call(joules: float, calls: int) -> float:
    if calls <= 0:
        raise ValueError("calls must be positive")
    return joules / calls


def average_power(joules: float, seconds: float) -> float:
    """Watts over the interval."""
    if seconds <= 0:
        raise ValueError("seconds must be positive")
    return joules / seconds


def edp(joules_per_op: float, seconds_per_op: float) -> float:
    """Energy-delay product of one op (J·s): lower is better; rewards speed twice."""
    return joules_per_op * seconds_per_op


def doctor_check(root: Path = DEFAULT_ROOT) -> tuple[str, bool | None, str, str]:
    s = status(root)
    if s["available"]:
        doms = ", ".join(d["key"] for d in s["domains"])
        return ("RAPL energy", True, f"readable: {doms}" + (f"; missing {s['missing'][0]}" if s["missing"] else ""), "")
    return ("RAPL energy", None, "unavailable", s["reason"] + "; energy sections of the report will say so")


# --- measuring ops: the difference method around whole harness runs ---------------------------
#
# A harness process spends energy on start-up and calibration before it times anything, and the
# RAPL counter can only be read from outside it. So each op runs twice with the same batch k:
# R1 and R2 samples of k calls. E(R2) - E(R1) is the energy of (R2 - R1) * k calls, start-up and
# calibration cancel (up to their noise, which a sample of >= min_seconds dwarfs). The package
# domain covers the whole socket (other cores, uncore): on a busy machine it is not one op's
# energy, and the job record says which domains were read.

ENERGY_METRICS = {"package": "energy_package", "dram": "energy_dram", "core": "energy_core", "psys": "energy_psys"}


def _driver_run(driver: Path, library: Path, scheme: str, op: str, spins: int, reps: int, warmup: int,
                batch: str = "auto", cpu: int | None = None, launcher: list[str] | tuple = ()) -> tuple[dict, list[tuple[int, int]]]:
    """One driver process timing one op (separate design); (calibration, [(batch, raw ticks)])."""
    import json

    from .run import child  # late, upward: the RAPL probe runs the driver as every child is run
    from .run.spec import escape

    spec = "\n".join(["design separate", f"scheme {scheme}", f"variant {escape(library)}",
                      f"cpu {-1 if cpu is None else cpu}", f"op {op} {spins} {reps} {warmup} {batch}"]) + "\n"
    p = child.run([*launcher, str(driver), "run", "-"], input=spec)
    if p.returncode != 0:
        raise RuntimeError(f"driver run {op}: {(p.stderr.strip().splitlines() or ['failed'])[-1]}")
    lines = p.stdout.splitlines()
    cal = json.loads(lines[0])
    samples = [(int(f[5]), int(f[6])) for f in (l.split("\t") for l in lines[1:] if l) if int(f[2]) >= 0]
    return cal, samples


def measure_op(driver: Path, library: Path, scheme: str, op: str, reader: Reader, min_seconds: float = 1.0,
               reps: tuple[int, int] = (1, 3), cpu: int | None = None) -> dict[str, Any]:
    """Energy per call of one op: {"k", "calls", "seconds_per_call", "joules": {domain: J}, ...}."""
    import math
    import statistics

    cal, est = _driver_run(driver, library, scheme, op, 3, 3, 1, cpu=cpu)
    per_call_ticks = statistics.median(max(raw - cal["overhead"], 1.0) / k for k, raw in est)
    k = max(1, math.ceil(min_seconds * cal["tsc_hz"] / per_call_ticks))
    k = min(k, 2**24)
    energy, ticks = {}, {}
    for r in reps:
        before = reader.snapshot()
        _, samples = _driver_run(driver, library, scheme, op, 1, r, 0, str(k), cpu=cpu)
        after = reader.snapshot()
        energy[r] = reader.joules(before, after)
        ticks[r] = [raw for _, raw in samples]
    r1, r2 = reps
    calls = (r2 - r1) * k
    seconds = statistics.median(ticks[r2]) / cal["tsc_hz"] / k  # per call, from the timed samples
    joules = {d: max(energy[r2][d] - energy[r1][d], 0.0) for d in energy[r2]}
    return {
        "k": k, "calls": calls, "seconds_per_call": seconds,
        "joules": joules, "joules_per_call": {d: joules_per_call(j, calls) for d, j in joules.items()},
        "watts": {d: average_power(j, calls * seconds) for d, j in joules.items()},
        "edp": {d: edp(j / calls, seconds) for d, j in joules.items()},
    }
