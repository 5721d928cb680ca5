"""Equivalence (TOST) and the verdict rule over one multiple-testing family of job-level tests.

A comparison that is neither faster nor slower is only `same` when the data show it lies within
+-threshold (two one-sided tests at the comparison's own se and df); otherwise it stays `~`
(inconclusive). Tests the design cannot support (pooled.pooled_test's refusal rules) are `withheld`.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
from scipy import stats

from .pooled import JobTests, job_test
from .significance import holm


def tost(log_speedup: np.ndarray, se: np.ndarray, df: np.ndarray, threshold: float) -> np.ndarray:
    """Two one-sided tests of |log speedup| < log(1 + threshold) (t-distribution, df): p_equiv =
    max(p_lower, p_upper). se == 0: 0 if strictly inside, else 1. NaN inputs give NaN."""
    d = np.asarray(log_speedup, dtype=np.float64)
    se = np.asarray(se, dtype=np.float64)
    df = np.asarray(df, dtype=np.float64)
    delta = math.log1p(threshold)
    with np.errstate(invalid="ignore", divide="ignore"):
        p1 = stats.t.sf((d + delta) / se, df)  # H0: d <= -delta
        p2 = stats.t.cdf((d - delta) / se, df)  # H0: d >= +delta
        p = np.maximum(p1, p2)
    p = np.where(se == 0, np.where(np.abs(d) < delta, 0.0, 1.0), p)
    return np.where(np.isfinite(d) & np.isfinite(se), p, np.nan)


def tost_ind(base_job_medians: np.ndarray, var_job_medians: np.ndarray, threshold: float) -> float:
    """TOST on log job medians with Welch's se and df (= statsmodels ttost_ind(log base, log var,
    -log(1+thr), log(1+thr), usevar='unequal'))."""
    r = job_test(base_job_medians, var_job_medians)
    return float(tost(r.log_speedup, r.se, r.df, threshold)[0])


def exact_verdict(lo: float, hi: float, threshold: float) -> tuple[str, str]:
    """The verdict of an exact ratio (or of its interval when a timer resolution widens it)."""
    up, down = 1.0 + threshold, 1.0 / (1.0 + threshold)
    if lo > up:
        return "faster", f"exact ratio > {up:g}"
    if hi < down:
        return "slower", f"exact ratio < {down:.4g}"
    if lo > down and hi < up:
        return "same", f"exact ratio within ±{threshold:.0%}"
    return "~", "exact ratio (with timer resolution) reaches the threshold"


def verdicts(tests: JobTests, *, alpha: float = 0.05, threshold: float = 0.02,
             p_adjusted: np.ndarray | None = None, equivalence: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Verdicts over one multiple-testing family (all entries of ``tests``; concatenate first).

    Returns (verdict, reason, p_equiv_adjusted). p_adjusted: Holm over the family's finite p unless
    given. faster iff p_adj < alpha and CI low > 1 + threshold; slower iff p_adj < alpha and CI high <
    1/(1 + threshold); else same iff the Holm-adjusted TOST p < alpha (``equivalence``); else '~'.
    'exact' rows: from the exact ratio (or its resolution interval); 'refuse' rows: verdict 'withheld'."""
    up, down = 1.0 + threshold, 1.0 / (1.0 + threshold)
    padj = holm(tests.p) if p_adjusted is None else np.asarray(p_adjusted, float)
    peq = tost(tests.log_speedup, tests.se, tests.df, threshold)
    live = (tests.method != "exact") & (tests.method != "refuse")
    peq_adj = np.full(len(tests), np.nan)
    peq_adj[live] = holm(peq[live])
    v = np.full(len(tests), "~", dtype=object)
    why = np.full(len(tests), "", dtype=object)
    for i in range(len(tests)):
        m = tests.method[i]
        lo, hi = tests.ci_low[i], tests.ci_high[i]
        if m == "refuse":
            v[i], why[i] = "withheld", tests.reason[i]
        elif m == "exact":
            v[i], why[i] = exact_verdict(lo, hi, threshold)
        elif padj[i] < alpha and lo > up:
            v[i], why[i] = "faster", f"p_adj = {padj[i]:.3g} < {alpha:g} and CI > {up:g}"
        elif padj[i] < alpha and hi < down:
            v[i], why[i] = "slower", f"p_adj = {padj[i]:.3g} < {alpha:g} and CI < {down:.4g}"
        elif equivalence and peq_adj[i] < alpha:
            v[i], why[i] = "same", f"TOST p_adj = {peq_adj[i]:.3g} < {alpha:g}: within ±{threshold:.0%}"
        else:
            v[i], why[i] = "~", f"p_adj = {padj[i]:.3g}; CI [{lo:.4g}, {hi:.4g}] vs ±{threshold:.0%}"
    return v, why, peq_adj


def withheld_warning(tests: JobTests | np.ndarray, reason: np.ndarray | None = None) -> str:
    """One warning line for a family ('' when nothing was withheld): a JobTests, or its method and
    reason arrays (e.g. the comparisons' `test` and `reason` columns)."""
    method = np.asarray(tests.method if reason is None else tests, dtype=object)
    reason = np.asarray(tests.reason if reason is None else reason, dtype=object)
    wh = method == "refuse"
    if not wh.any():
        return ""
    top, k = Counter(reason[wh]).most_common(1)[0]
    return (f"{int(wh.sum())} of {len(method)} comparisons withheld (no verdict); most common reason "
            f"({k}x): {top}. Run more jobs per group (>= 5) to get verdicts.")
