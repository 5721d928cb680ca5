"""Drift: does a job's time (separate design) or ratio (paired design: what the verdicts use) trend
over its spins?

Spins are autocorrelated (a machine state lasts longer than one spin: median lag-1 autocorrelation
0.38 in a standard study on machine B), so a test on single spins, which assumes independence,
flags ordinary serial correlation as drift. Here the spins of a job are cut into BLOCKS blocks of
consecutive spins, and the trend is the least-squares slope of the block medians against block
number (a t test with BLOCKS - 2 df): block medians of 25 spins are nearly independent under the
correlations seen, and the median keeps one odd spin from making a trend. A job drifts when its
slope is significant and the fitted change from the first to the last block exceeds the threshold.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

BLOCKS = 8
MIN_PER_BLOCK = 2


def block_trend(y: np.ndarray, blocks: int = BLOCKS) -> tuple[float, float]:
    """(p, change): the two-sided p of the slope of y's block medians (y in spin order) and the fitted
    change over the job (last block minus first, y's scale); (nan, nan) with too few spins."""
    y = np.asarray(y, dtype=np.float64)
    if y.size < blocks * MIN_PER_BLOCK or not np.all(np.isfinite(y)):
        return math.nan, math.nan
    edges = np.linspace(0, y.size, blocks + 1).astype(np.int64)
    med = np.array([np.median(y[a:b]) for a, b in zip(edges[:-1], edges[1:])])
    if np.ptp(med) == 0:
        return 1.0, 0.0
    fit = stats.linregress(np.arange(blocks, dtype=np.float64), med)
    p = float(fit.pvalue) if np.isfinite(fit.pvalue) else 1.0
    return p, float(fit.slope * (blocks - 1))


def job_trends(values: np.ndarray, job: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """block_trend of each job's values (job codes 0..J-1, values in spin order within a job)."""
    n_jobs = int(job.max()) + 1 if job.size else 0
    out = [block_trend(values[job == j]) for j in range(n_jobs)]
    return np.array([o[0] for o in out]), np.array([o[1] for o in out])


def drift_p(p_jobs: np.ndarray, change: np.ndarray, band: float) -> tuple[float, list[int]]:
    """A comparison's drift p (the smallest job p, Bonferroni over its jobs) and the jobs that drift
    materially (|change| > band) at that comparison's level; (nan, []) if no job could be tested."""
    ok = np.isfinite(p_jobs)
    if not ok.any():
        return math.nan, []
    n = int(ok.sum())
    p = float(min(1.0, np.nanmin(p_jobs) * n))
    return p, [int(j) for j in np.flatnonzero(ok & (np.abs(np.nan_to_num(change)) > band))]
