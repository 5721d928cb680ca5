"""Hypothesis tests and multiple-testing adjustment (scipy wherever scipy has it)."""

from __future__ import annotations

import numpy as np
from scipy import stats


def mwu_less(variant: np.ndarray, base: np.ndarray) -> tuple[float, float]:
    """One-sided Mann-Whitney U, H1: variant stochastically smaller; tie-corrected normal approximation
    (exact for small untied samples). Returns (U of the variant sample, p)."""
    res = stats.mannwhitneyu(variant, base, alternative="less", use_continuity=True, method="auto")
    return float(res.statistic), float(res.pvalue)


def job_test(base_job_medians: np.ndarray, var_job_medians: np.ndarray) -> tuple[float, str]:
    """Two-sided Welch t-test on log job medians: the job is the unit of independence.

    Returns (p, note); p is NaN with a note when the test is undefined."""
    b = np.log(np.asarray(base_job_medians, dtype=np.float64))
    v = np.log(np.asarray(var_job_medians, dtype=np.float64))
    if b.size < 2 or v.size < 2:
        return float("nan"), "job test n/a: a group has fewer than 2 jobs"
    if np.ptp(b) == 0 and np.ptp(v) == 0:
        return float("nan"), "job test n/a: job medians have no spread"
    res = stats.ttest_ind(v, b, equal_var=False, alternative="two-sided")
    return float(res.pvalue), ""


def holm(p: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values (FWER). NaNs stay NaN and are not counted in the family."""
    p = np.asarray(p, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = np.isfinite(p)
    m = int(ok.sum())
    if m == 0:
        return out
    q = p[ok]
    order = np.argsort(q, kind="stable")
    scaled = (m - np.arange(m)) * q[order]
    adj = np.minimum(np.maximum.accumulate(scaled), 1.0)
    res = np.empty(m)
    res[order] = adj
    out[ok] = res
    return out


def bh(p: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (FDR), scipy.stats.false_discovery_control."""
    p = np.asarray(p, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = np.isfinite(p)
    if ok.any():
        out[ok] = stats.false_discovery_control(p[ok], method="bh")
    return out
