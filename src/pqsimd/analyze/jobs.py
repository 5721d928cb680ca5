"""Disturbed jobs, reported once per job: which jobs, how far, in which direction.

A machine state lasts a whole job (process), so it shows in many of the job's numbers at once: in
the paired design in its ratios (what the verdicts use), in the separate design in its times. For
each job, D = the upper quartile over its comparisons (paired) or ops (separate) of |its log ratio
(time) minus the median over jobs|: how far the job is off in a quarter of its numbers (a state may
move only some ops: scalar code more than vector code). A job is disturbed when D exceeds both
FACTOR x the median D of the jobs of the same scheme (it is unlike its peers: a single-state machine,
even a noisy or skewed one, moves all jobs alike) and a material floor (a quarter of the verdict
threshold). False-alarm rates under single-state nulls
and the power against a two-state machine are measured in bench/bench_diagnostics.py.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import pandas as pd

FACTOR = 4.0
QUANTILE = 0.75
MIN_UNITS = 3  # a job needs this many comparisons (ops) to be judged

COLUMNS = ["metric", "scheme", "unit", "job", "units", "typical_dev", "peer_dev", "dev_ratio", "up_share",
           "time_effect", "disturbed", "note"]


def deviations(vectors: Iterable[tuple[list[str], np.ndarray]]) -> dict[str, list[float]]:
    """Per job id, its signed deviations from the median over jobs, one per vector (a comparison's job
    log ratios, or an op's log job medians) of >= 3 jobs."""
    out: dict[str, list[float]] = {}
    for ids, x in vectors:
        x = np.asarray(x, dtype=np.float64)
        if x.size < 3 or not np.all(np.isfinite(x)):
            continue
        r = x - np.median(x)
        for j, v in zip(ids, r):
            out.setdefault(j, []).append(float(v))
    return out


def judge(devs: dict[str, list[float]], band: float, time_effect: dict[str, float] | None = None,
          factor: float = FACTOR, **keys: str) -> list[dict]:
    """One row per job from its deviations (deviations()); keys (metric, scheme, unit) are copied."""
    jobs = [j for j, v in devs.items() if len(v) >= MIN_UNITS]
    if len(jobs) < 3:
        return []
    typ = {j: float(np.quantile(np.abs(devs[j]), QUANTILE)) for j in jobs}
    peer = float(np.median(list(typ.values())))
    floor = band / 4.0
    rows = []
    for j in sorted(jobs):
        d = np.asarray(devs[j])
        big = np.abs(d) > max(floor, 2 * peer)
        up = float((d[big] > 0).mean()) if big.any() else math.nan
        flag = typ[j] > max(floor, factor * peer)
        rows.append({**keys, "job": j, "units": int(d.size), "typical_dev": math.expm1(typ[j]),
                     "peer_dev": math.expm1(peer), "dev_ratio": typ[j] / peer if peer > 0 else math.inf,
                     "up_share": up, "time_effect": math.expm1(time_effect[j]) if time_effect and j in time_effect
                     else math.nan, "disturbed": bool(flag), "note": ""})
    return rows


def table(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=COLUMNS)


def describe_job(r: dict | pd.Series, unit: str) -> str:
    """One line for a disturbed job: how far, in which direction."""
    what = "its ratios" if unit == "comparisons" else "its times"
    s = (f"{r['job']}: a quarter of {what} are {r['typical_dev']:.1%} or more off the median job's "
         f"(other jobs: {r['peer_dev']:.2%})")
    up = r.get("up_share")
    if up is not None and not (isinstance(up, float) and math.isnan(up)):
        s += f", {'higher' if up >= 0.5 else 'lower'} in {max(up, 1 - up):.0%} of the large deviations"
    te = r.get("time_effect")
    if te is not None and not (isinstance(te, float) and math.isnan(te)) and abs(te) > 0.005:
        s += f"; the job ran {abs(te):.0%} {'slower' if te > 0 else 'faster'} overall"
    return s
