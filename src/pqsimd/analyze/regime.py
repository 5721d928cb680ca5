"""Paired design: do the jobs fall into two regimes (machine states that change the ratio)?

One job runs every build, so a machine state that slows all builds equally cancels in the job's
ratio; a state that slows scalar and vector code differently does not, and the jobs' ratios then
form two clusters that one speedup describes badly. The test is Hartigan's dip test of unimodality
(the `diptest` package): its null is every unimodal distribution, so skewed or heavy-tailed
single-state data are not flagged (measured in bench/bench_diagnostics.py). The values are first
smoothed at the scale that matters, uniform noise of the threshold's width: the dip test assumes a
continuous distribution and fires on unimodal data with ties (quantized ticks make job ratios
identical), and modes closer than the threshold are not regimes anyway.
A flag also needs both clusters of the best split to hold >= 2 jobs and to differ by more than the
threshold, and p-values are adjusted (Benjamini-Hochberg) over the comparisons tested.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

MIN_JOBS = 6  # fewer jobs: two clusters of >= 2 plus a test with any power are not possible
MIN_CLUSTER = 2


@dataclass(frozen=True)
class Regime:
    p: float  # dip test p (NaN: not tested)
    low: float  # median log ratio of the lower cluster of the best split
    high: float
    n_low: int
    n_high: int

    @property
    def gap(self) -> float:
        return self.high - self.low


def smooth(x: np.ndarray, band: float, rng: np.random.Generator) -> np.ndarray:
    """x plus uniform noise of width ``band`` (log(1 + threshold)), or a tiny width if band is 0."""
    w = band if band > 0 else max(float(np.abs(x).max()), 1.0) * 1e-9
    return x + rng.uniform(-w / 2.0, w / 2.0, size=x.size)


def best_split(x: np.ndarray, min_cluster: int = MIN_CLUSTER) -> tuple[int, float, float]:
    """The split of sorted x into a lower and an upper cluster (each >= min_cluster) with the widest
    gap between them: (size of the lower cluster, its median, the upper's median)."""
    x = np.sort(x)
    n = x.size
    ks = np.arange(min_cluster, n - min_cluster + 1)
    k = int(ks[np.argmax(x[ks] - x[ks - 1])])
    return k, float(np.median(x[:k])), float(np.median(x[k:]))


def regime_test(job_log_ratios: np.ndarray, band: float, rng: np.random.Generator) -> Regime:
    """The dip test of the jobs' log ratios and the best two-cluster split (needs >= MIN_JOBS jobs)."""
    import diptest

    x = np.sort(np.asarray(job_log_ratios, dtype=np.float64))
    if x.size < MIN_JOBS or not np.all(np.isfinite(x)) or np.ptp(x) == 0:
        return Regime(math.nan, math.nan, math.nan, 0, 0)
    _dip, p = diptest.diptest(smooth(x, band, rng))
    k, lo, hi = best_split(x)
    return Regime(float(p), lo, hi, k, int(x.size - k))
