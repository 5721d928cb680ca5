"""The layout's numbers (analyze/layout.py says what they mean): how many laid-out copies per job keep
the layout's share of a job's variance small (method of moments on trimmed variances), and the miss
rate a check without a miss still allows. Numbers in, numbers out."""

from __future__ import annotations

import math

import numpy as np


TRIM = 0.1  # copies_needed's variances are trimmed by this share on each side


MAX_REPORTED = 1000  # copies_needed is written up to this (more: the layout alone sets the width)


WIDTH_SLACK = 1.1  # enough copies: the interval within 10% of the width infinitely many copies per job would give


def copies_needed(pairs, se2, slack: float = WIDTH_SLACK) -> tuple[float, float, int]:
    """(layout variance, the rest of a job's variance, L): from the J jobs' copy pairs' log ratios
    (pairs, J x L) and their sampling variances (se2: each pair's two copy medians' median_se², summed),
    by the method of moments on 10%-trimmed variances (the median-based interval's width follows the
    bulk, not a rare cliff's variance; cliffs are findings of their own): within jobs, the pairs' spread about their job's mean = layout +
    sampling error of one copy; between jobs, the job means' = job + (layout + sampling error) / L. A job spends its spins on its
    copies, so the sampling error of a job's mean stays that of all its spins whatever L, and only the
    layout's share of a job's variance, layout / L, falls with more copies: enough copies keep it below
    (slack² - 1) x the rest (the job effect and the job's sampling error), the interval within `slack`
    of the width of infinitely many copies. (nan, nan, 0) when it cannot be told (< 3 jobs, one copy)."""
    y = np.asarray(pairs, dtype=np.float64)
    e = np.asarray(se2, dtype=np.float64)
    if y.ndim != 2 or y.shape[0] < 3 or y.shape[1] < 2:
        return math.nan, math.nan, 0
    n = y.shape[1]
    noise = float(np.median(e))  # sampling variance of one copy pair's log ratio

    def trimmed_var(x: np.ndarray) -> float:  # 10% trimmed each side: a rare cliff copy does not set the scale
        from scipy.stats import mstats, norm
        if x.size <= 2:
            return float(np.var(x, ddof=1))
        z = float(norm.ppf(1 - TRIM))  # scaled to be the variance itself for normal data
        consistency = 1.0 - 2.0 * z * float(norm.pdf(z)) / (1.0 - 2.0 * TRIM)
        return float(mstats.trimmed_var(x, limits=(TRIM, TRIM), relative=True, ddof=1)) / consistency
    within = trimmed_var((y - y.mean(axis=1, keepdims=True)).ravel()) * n / (n - 1.0)
    layout = max(0.0, within - noise)
    rest = max(trimmed_var(y.mean(axis=1)) - layout / n, noise / n, 1e-12)
    need = layout / ((slack**2 - 1.0) * rest)
    return layout, rest, max(1, min(MAX_REPORTED, int(math.ceil(need - 1e-9))))


def zero_miss_bound(n: int, confidence: float = 0.95) -> float:
    """The largest miss rate that n intervals without a miss still leave possible (one-sided, at
    `confidence`): 1 - (1 - confidence)^(1/n); 1 with no rows."""
    return 1.0 - (1.0 - confidence) ** (1.0 / n) if n else 1.0
