"""Time limits of timing jobs and sizing probes, so an op stuck in a loop cannot hang a study.

A limit is FLOOR_S + FACTOR × an estimate of the process's work: per op and timed build,
(spins + warm-up spins) × (reps × one sample + the paired warm-up), plus the auto-batch search,
from one call's wall time in the gate's op check (verify: `driver smoke`) or, with a time
budget, the probe's sample ticks. `[study] job_timeout` (seconds, 0 = none) overrides it. The
limit and where it came from are recorded in every job record."""

from __future__ import annotations

from typing import Any

from ..model import Design

FLOOR_S = 60.0
FACTOR = 10.0
MIN_SAMPLE_S = 1e-6  # auto-batching makes a sample at least ~1,000 ticks
SEARCH_SAMPLES = 50  # the auto-batch search: a few rounds of 9 samples
START_S = 5.0  # loading, calibration


def _override(study) -> dict[str, Any] | None:
    t = getattr(study, "job_timeout", None)
    if t is None:
        return None
    return {"seconds": float(t) if t > 0 else None, "from": "[study] job_timeout" + (" = 0: none" if t <= 0 else "")}


def _limit(estimate: float | None) -> dict[str, Any]:
    if estimate is None:
        return {"seconds": None, "from": "none: the gate recorded no op times for a build (an older pqsimd)"}
    return {"seconds": round(FLOOR_S + FACTOR * estimate, 1), "from": f"{FLOOR_S:g} s + {FACTOR:g} × the estimate "
                                                                      f"{estimate:.3g} s", "estimate": estimate}


def starved(limit: dict[str, Any], cpu_seconds: float, shared: bool) -> bool:
    """A process stopped at its limit did not hang but was starved: it waited for its CPU (`shared`,
    cpuclaim's rule) and had it for less than FACTOR × its estimate, the work the limit allows beyond
    the floor. A build stuck in a loop has its CPU for most of the limit; one that waited for it on a
    busy machine is run again, never left out of the study."""
    est = limit.get("estimate")
    return bool(shared) and isinstance(est, (int, float)) and cpu_seconds < FACTOR * est


def job_limit(study, scheme: str, builds: list[str], timed: dict[str, list[bool]], op_seconds: list[dict | None],
              sizing: dict | None) -> dict[str, Any]:
    """{seconds (None: no limit), from} for one timing job."""
    over = _override(study)
    if over is not None:
        return over
    from .spec import no_warm, op_sizes

    total = START_S
    for op, which in timed.items():
        spins, reps, warmup, _ = op_sizes(study, sizing, scheme, op, builds)
        entry = ((sizing or {}).get("schemes", {}).get(scheme, {}).get("ops", {}).get(op) or {})
        hz = (sizing or {}).get("schemes", {}).get(scheme, {}).get("tsc_hz")
        warm = study.warmup_ns * 1e-9 if study.design == Design.PAIRED and not no_warm(sizing, scheme, op) else 0.0
        for b, t, secs in zip(builds, which, op_seconds):
            if not t:
                continue
            probe = (entry.get("probe_ticks") or {}).get(b)
            if probe and hz:
                sample = probe / hz
            elif secs is not None and op in secs:
                sample = max(secs[op], MIN_SAMPLE_S)
            else:
                return _limit(None)
            total += (spins + warmup) * (reps * sample + warm) + SEARCH_SAMPLES * sample
    return _limit(total)


def probe_limit(study, scheme: str, ops: list[str], op_seconds: list[dict | None]) -> dict[str, Any]:
    over = _override(study)
    if over is not None:
        return over
    total = START_S
    for secs in op_seconds:
        if secs is None:
            return _limit(None)
        total += sum(SEARCH_SAMPLES * max(secs.get(op, 0.0), MIN_SAMPLE_S) for op in ops)
    return _limit(total)
