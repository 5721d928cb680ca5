"""Hypothesis tests and multiple-testing adjustment (scipy wherever scipy has it)."""

from __future__ import annotations

import numpy as np
from scipy import stats


def mwu_less(variant: np.ndarray, base: np.ndarray) -> tuple[float, float]:
    """One-sided Mann-Whitney U, H1: variant stochastically smaller; tie-corrected normal approximation
    (exact for small untied samples). Returns (U of the variant sample, p)."""
    res = stats.mannwhitneyu(variant, base, alternative="less", use_continuity=True, method="auto")
    return float(res.statistic), float(res.pvalue)


def mwu_less_many(pairs: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """mwu_less for many (variant, base) pairs: one vectorised scipy call per distinct pair of sizes."""
    u = np.full(len(pairs), np.nan)
    p = np.full(len(pairs), np.nan)
    by_shape: dict[tuple[int, int], list[int]] = {}
    for i, (v, b) in enumerate(pairs):
        by_shape.setdefault((v.size, b.size), []).append(i)
    for (nv, nb), idx in by_shape.items():
        if nv * nb <= 64 or len(idx) == 1:  # small samples: scipy picks exact/asymptotic per pair
            for i in idx:
                u[i], p[i] = mwu_less(*pairs[i])
            continue
        x = np.stack([pairs[i][0] for i in idx])
        y = np.stack([pairs[i][1] for i in idx])
        res = stats.mannwhitneyu(x, y, alternative="less", use_continuity=True, method="auto", axis=1)
        u[idx], p[idx] = res.statistic, res.pvalue
    return u, p


def welch(base: np.ndarray, var: np.ndarray) -> tuple[float, float, float]:
    """Welch's t statistic and df for var vs base; (nan, nan, nan) if undefined."""
    nb, nv = base.size, var.size
    if nb < 2 or nv < 2:
        return (float("nan"),) * 3
    sb, sv = base.var(ddof=1) / nb, var.var(ddof=1) / nv
    se2 = sb + sv
    if se2 == 0:
        return (float("nan"),) * 3
    t = (var.mean() - base.mean()) / np.sqrt(se2)
    df = se2**2 / (sb**2 / (nb - 1) + sv**2 / (nv - 1))
    return float(t), float(df), float(se2)


def job_test(base_job_medians: np.ndarray, var_job_medians: np.ndarray) -> tuple[float, str]:
    """Two-sided Welch t-test on log job medians: the job is the unit of independence.

    Returns (p, note); p is NaN with a note when the test is undefined. Same p as
    scipy.stats.ttest_ind(equal_var=False) (checked in tests), without its per-call overhead."""
    b = np.log(np.asarray(base_job_medians, dtype=np.float64))
    v = np.log(np.asarray(var_job_medians, dtype=np.float64))
    if b.size < 2 or v.size < 2:
        return float("nan"), "job test n/a: a group has fewer than 2 jobs"
    t, df, _ = welch(b, v)
    if not np.isfinite(t):
        # no spread in either group: equal job medians are no evidence, different ones are exact
        if b.var() == 0 and v.var() == 0:
            if b[0] == v[0]:
                return 1.0, "job medians identical in both groups"
            return 0.0, "job medians constant within each group and different between them: the difference is exact"
        return float("nan"), "job test n/a: job medians have no spread"
    return float(2.0 * stats.t.sf(abs(t), df)), ""


def paired_job_test(ratios: np.ndarray, job: np.ndarray) -> tuple[float, str]:
    """The paired design's job-level test: two-sided one-sample t-test (scipy.stats.ttest_1samp) of
    the jobs' log median per-spin ratios against 0, the job being the unit of independence."""
    job = np.asarray(job)
    n_jobs = int(job.max()) + 1 if job.size else 0
    logs = np.array([np.log(np.median(ratios[job == j])) for j in range(n_jobs)])
    if logs.size < 2:
        return float("nan"), "job test n/a: fewer than 2 paired jobs"
    if np.ptp(logs) == 0:
        if logs[0] == 0:
            return 1.0, "every job's median ratio is exactly 1"
        return 0.0, "every job has the same median ratio: the difference is exact"
    return float(stats.ttest_1samp(logs, 0.0).pvalue), ""


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
