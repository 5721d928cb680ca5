"""Variance components of a group and the minimum detectable effect (MDE) of the job-level test.

Why: with spin medians strongly clustered by job (ICC near 1), thousands of spins add almost nothing
once the job median is known: n_eff = J S / deff tends to J / ICC as S grows (about J when the ICC
is near 1), and only more jobs shrink the
job-level standard error. The MDE says what a design can see at all (with Holm over a family).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy import optimize, stats



def icc1(y: np.ndarray, job: np.ndarray) -> float:
    """One-way random-effects ICC(1) of y with groups `job` (unbalanced: n0 correction)."""
    n = y.size
    sizes = np.bincount(job)
    k = sizes.size
    if k < 2 or n <= k:
        return float("nan")
    means = np.bincount(job, weights=y) / sizes
    grand = y.mean()
    msb = float(np.sum(sizes * (means - grand) ** 2) / (k - 1))
    msw = float(np.sum((y - means[job]) ** 2) / (n - k))
    n0 = (n - np.sum(sizes**2) / n) / (k - 1)
    den = msb + (n0 - 1) * msw
    return float((msb - msw) / den) if den > 0 else float("nan")


@dataclass(frozen=True)
class VarianceComponents:
    n_jobs: int
    n: int  # spin medians
    spins_per_job: float  # mean
    job_cv: float  # sd/mean of the job medians (ddof 1)
    between_var: float  # variance of log job medians (ddof 1): the job-level test's per-job variance
    within_sd: float  # pooled within-job SD of log spin medians (sqrt MSW)
    sigma2_between: float  # ANOVA variance component of log spin medians between jobs (>= 0)
    icc: float  # ICC(1) of log spin medians (n0-corrected for unequal jobs; may be < 0)
    deff: float  # 1 + (S - 1) * max(icc, 0)
    n_eff: float  # n / deff


def variance_components(values: np.ndarray, job: np.ndarray | None = None) -> VarianceComponents:
    """Variance components of one group's spin medians ((J, S), or flat with job labels).

    job CV = sd/mean of the job medians; between_var = var(log job medians); within SD = sqrt(MSW) of log
    spin medians; ICC(1) n0-corrected (icc1; = MixedLM REML for balanced data);
    deff = 1 + (S - 1) max(ICC, 0) with S the mean spins per job; n_eff = J S / deff."""
    v = np.asarray(values, dtype=np.float64)
    if job is None:
        if v.ndim != 2:
            raise ValueError("values must be (J, S) when no job labels are given")
        job = np.repeat(np.arange(v.shape[0]), v.shape[1])
        v = v.ravel()
    job = np.unique(np.asarray(job), return_inverse=True)[1]
    if v.size == 0 or np.any(v <= 0) or not np.all(np.isfinite(v)):
        raise ValueError("spin medians must be finite and > 0")
    y = np.log(v)
    sizes = np.bincount(job)
    k, n = sizes.size, y.size
    jm = np.array([np.median(v[job == j]) for j in range(k)])
    nan = float("nan")
    job_cv = float(np.std(jm, ddof=1) / np.mean(jm)) if k >= 2 else nan
    between_var = float(np.var(np.log(jm), ddof=1)) if k >= 2 else nan
    means = np.bincount(job, weights=y) / sizes
    msw = float(np.sum((y - means[job]) ** 2) / (n - k)) if n > k else nan
    if k >= 2 and n > k:
        msb = float(np.sum(sizes * (means - y.mean()) ** 2) / (k - 1))
        n0 = (n - np.sum(sizes**2) / n) / (k - 1)
        s2b = max((msb - msw) / n0, 0.0)
        icc = icc1(y, job)
    else:
        s2b, icc = nan, nan
    sbar = n / k
    deff = 1.0 + (sbar - 1.0) * max(icc, 0.0) if np.isfinite(icc) else nan
    return VarianceComponents(k, n, sbar, job_cv, between_var, math.sqrt(msw) if np.isfinite(msw) else nan,
                              s2b, icc, deff, n / deff if np.isfinite(deff) else nan)


def _se_df(sigma2_base: float, j_base: int, sigma2_var: float | None, j_var: int | None,
           df: float | None) -> tuple[float, float, int, int]:
    s2v = sigma2_base if sigma2_var is None else sigma2_var
    jv = j_base if j_var is None else j_var
    if j_base < 2 or jv < 2:
        raise ValueError("the job-level test needs >= 2 jobs per group")
    if sigma2_base < 0 or s2v < 0 or sigma2_base + s2v <= 0:
        raise ValueError("between-job variances must be >= 0, and not both 0")
    a, b = sigma2_base / j_base, s2v / jv
    se = math.sqrt(a + b)
    if df is None:
        df = (a + b) ** 2 / (a**2 / (j_base - 1) + b**2 / (jv - 1))
    return se, float(df), j_base, jv


def _power_fn(se: float, df: float, alpha: float, m: int, thr_l: float | None,
              welch: tuple[float, int, float, int] | None = None, k: int = 4000) -> Callable[[float], float]:
    """delta -> P(reject) when d ~ N(delta, se^2) independent of the estimated se.

    'reject' = |d| > c*s, c = t_{1 - alpha/(2m), df} (two-sided); with thr_l (a verdict): d > c*s and
    d - t_{1-alpha/2, df}*s > thr_l. The estimated se s: se*sqrt(chi2_df/df) for a test with fixed df
    (k quantiles), or for Welch (``welch`` = (a_b, J_b, a_v, J_v), a = sigma2/J) the two groups'
    variances each from its chi2 (a k' x k' grid) with the df re-estimated from them, as the test does.
    Everything but the normal tail does not depend on delta and is computed once (the MDE's root search
    calls this often)."""
    if welch is None:  # one df: the critical values are scalars
        if math.isinf(df):
            s, dfs = np.array([se]), float("inf")
        else:
            s = se * np.sqrt(stats.chi2.ppf((np.arange(k) + 0.5) / k, df) / df)
            dfs = float(df)
    else:
        ab, jb, av, jv = welch
        kk = 240
        u = (np.arange(kk) + 0.5) / kk
        vb = ab * stats.chi2.ppf(u, jb - 1) / (jb - 1)
        vv = av * stats.chi2.ppf(u, jv - 1) / (jv - 1)
        VB, VV = np.meshgrid(vb, vv, indexing="ij")
        s2 = (VB + VV).ravel()
        dfs = s2**2 / ((VB**2).ravel() / (jb - 1) + (VV**2).ravel() / (jv - 1))
        s = np.sqrt(s2)
    c = stats.t.ppf(1.0 - alpha / (2.0 * m), dfs)
    if thr_l is None:
        up, down = c * s, -c * s

        def power(delta: float) -> float:
            return float((stats.norm.sf((up - delta) / se) + stats.norm.cdf((down - delta) / se)).mean())
    else:
        bound = np.maximum(c * s, stats.t.ppf(1.0 - alpha / 2.0, dfs) * s + thr_l)

        def power(delta: float) -> float:
            return float(stats.norm.sf((bound - delta) / se).mean())
    return power


def _solve(power_at: Callable[[float], float], se: float, power: float) -> float:
    f = lambda x: power_at(x) - power  # noqa: E731
    hi = se
    while f(hi) < 0:
        hi *= 2.0
        if hi > 50.0:  # beyond a speedup of e^50: nothing this design can detect
            return float("inf")
    return float(math.exp(optimize.brentq(f, 0.0, hi, xtol=1e-10)))


def mde(sigma2_base: float, j_base: int, sigma2_var: float | None = None, j_var: int | None = None, *,
        alpha: float = 0.05, power: float = 0.8, m: int = 1, df: float | None = None,
        threshold: float = 0.0) -> float:
    """Minimum detectable speedup (a ratio > 1, e.g. 1.07) of the job-level test at ``power``.

    sigma2_*: between-job variance of log job medians (VarianceComponents.between_var, or the pooled
    a + c of pooled_test); m: family size (level alpha/m, Holm's worst case; 1: no adjustment);
    df: None for the per-group Welch test, else the fixed df of the test (the pooled test's df);
    threshold > 0: detectable as a 'faster' verdict (also CI low > 1 + threshold). inf if even
    a speedup of e^50 would not reach the power (e.g. J = 2 per group with Holm over a large family)."""
    if not 0 < power < 1:
        raise ValueError("power must be in (0, 1)")
    se, dfv, jb, jv = _se_df(sigma2_base, j_base, sigma2_var, j_var, df)
    s2v = sigma2_base if sigma2_var is None else sigma2_var
    welch = (sigma2_base / jb, jb, s2v / jv, jv) if df is None else None
    thr_l = math.log1p(threshold) if threshold > 0 else None
    return _solve(_power_fn(se, dfv, alpha, m, thr_l, welch), se, power)


def mde_se(se: float, df: float, *, alpha: float = 0.05, power: float = 0.8, m: int = 1,
           threshold: float = 0.0) -> float:
    """mde() of a test with a given standard error of the log speedup and fixed df (the pooled test's
    se and df, or the paired test's sd/sqrt(J) and J - 1): the noncentral t, as mde(df=...)."""
    if not 0 < power < 1:
        raise ValueError("power must be in (0, 1)")
    if not (se > 0 and math.isfinite(se)) or not df > 0:
        raise ValueError("se must be finite and > 0, df > 0")
    thr_l = math.log1p(threshold) if threshold > 0 else None
    return _solve(_power_fn(se, float(df), alpha, m, thr_l, None), se, power)


def mde_sign(n_jobs: int, gamma: float, sigma: float, threshold: float, power: float = 0.8) -> float:
    """Minimum detectable speedup of a paired comparison read off the order-statistic interval: the
    smallest true speedup that gets a `faster` verdict (interval at miss probability gamma above
    1 + threshold) with `power`, when the jobs' log ratios are normal with sd ``sigma`` around it.

    The interval [x(k), x(J+1-k)] lies above the band iff at least J+1-k jobs do; with p = P(one job
    above the band), that count is Bin(J, p), and P(Bin(J, p) >= n) = I_p(n, J-n+1), so the power is
    reached at p* = Beta(n, J-n+1).ppf(power) and the speedup at log(1 + threshold) + sigma
    Phi^-1(p*). inf when J cannot reach the level at all."""
    from .interval import order_rank

    k = order_rank(int(n_jobs), gamma)
    if k == 0:
        return float("inf")
    n = int(n_jobs) + 1 - k
    p_star = float(stats.beta.ppf(power, n, int(n_jobs) - n + 1))
    z = float(stats.norm.ppf(p_star)) if p_star < 1 else float("inf")
    return float(math.exp(math.log1p(threshold) + max(float(sigma), 0.0) * z))
