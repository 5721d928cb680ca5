"""Paired design: do the jobs fall into more than one regime (machine states that change the ratio)?

In the paired design one job runs every variant, so a machine state that slows both variants equally
cancels in the per-spin ratio. A state that slows scalar and vector code differently does not: the
jobs' ratios then form two clusters, and a single speedup (with a CI around it) describes neither.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from .pooled import _ratio_jobs, median_se


def paired_speedup(ratios) -> float:
    """Median over all spins (of all jobs) of the per-spin ratios base/var. ``ratios``: (J, S) or a
    list of per-job arrays."""
    return float(np.median(np.concatenate(_ratio_jobs(ratios))))


@dataclass(frozen=True)
class RegimeResult:
    flag: bool  # jobs form >1 cluster of ratios differing by more than the threshold
    heterogeneous: bool  # job ratios differ beyond within-job noise (Q) and materially
    q: float
    q_p: float
    tau2: float  # DerSimonian-Laird between-job variance of log ratios
    r2: float  # share of the spread explained by the best two-cluster split (Engelman-Hartigan)
    gap_p: float  # P(r2 this large | one normal cluster), parametric bootstrap
    low_ratio: float  # median ratio of the low cluster (exp of its mean log ratio)
    high_ratio: float
    labels: np.ndarray  # 0/1 cluster of each job
    reason: str


def _best_split(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Best two-cluster split of rows of x (..., J): (r2, k) with k the size of the low cluster."""
    xs = np.sort(x, axis=-1)
    J = x.shape[-1]
    c = np.cumsum(xs, axis=-1)
    tot = c[..., -1:]
    k = np.arange(1, J)
    m_lo = c[..., :-1] / k
    m_hi = (tot - c[..., :-1]) / (J - k)
    bss = k * (J - k) / J * (m_hi - m_lo) ** 2
    tss = ((xs - xs.mean(axis=-1, keepdims=True)) ** 2).sum(axis=-1)
    best = np.argmax(bss, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        r2 = np.take_along_axis(bss, best[..., None], -1)[..., 0] / tss
    return np.where(tss > 0, r2, 0.0), best + 1


def regime_test(ratios, *, threshold: float = 0.02, alpha: float = 0.05, n_sim: int = 4000,
                rng: np.random.Generator | None = None, min_jobs: int = 4) -> RegimeResult:
    """Do the jobs of a paired study fall into >1 regime (machine states that change the ratio)?

    Per job: ell_j = log median ratio, v_j = its within-job sampling variance (median_se^2).
    1. heterogeneity: Cochran's Q = sum w_j (ell_j - ell_w)^2, w = 1/v, against chi2(J-1);
    2. clusters: best split of the sorted ell_j into two groups, r2 = between-SS/total-SS (the 1-D
       Engelman-Hartigan statistic); gap_p = P(r2* >= r2) for ell*_j ~ N(0, tau2 + v_j) (one cluster
       with the observed spread, tau2 by DerSimonian-Laird), from n_sim parametric draws;
    3. material: the clusters' mean log ratios differ by more than log(1 + threshold).
    flag = Q significant and material and gap_p < alpha (needs >= min_jobs jobs; fewer: flag False,
    ``heterogeneous`` still says whether the jobs disagree). A machine state that slows both variants
    equally leaves every ratio alone and is not flagged; continuous job-to-job spread is not a regime."""
    rng = np.random.default_rng(0) if rng is None else rng
    rows = _ratio_jobs(ratios)
    J = len(rows)
    ell = np.array([math.log(np.median(r)) for r in rows])
    v = np.array([median_se(np.log(r)) ** 2 if r.size > 1 else np.nan for r in rows])
    if J < 2 or not np.all(np.isfinite(v)):
        return RegimeResult(False, False, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan,
                            np.zeros(J, int), "n/a: needs >= 2 jobs with >= 2 spins")
    floor = max(float(np.max(v)) * 1e-6, 1e-18)
    w = 1.0 / np.maximum(v, floor)
    mw = float(np.sum(w * ell) / np.sum(w))
    q = float(np.sum(w * (ell - mw) ** 2))
    q_p = float(stats.chi2.sf(q, J - 1))
    tau2 = max(0.0, (q - (J - 1)) / (w.sum() - (w**2).sum() / w.sum()))
    r2, k = _best_split(ell)
    order = np.argsort(ell, kind="stable")
    labels = np.zeros(J, dtype=int)
    labels[order[int(k):]] = 1
    lo_m, hi_m = float(ell[labels == 0].mean()), float(ell[labels == 1].mean())
    material = hi_m - lo_m > math.log1p(threshold)
    het = bool(q_p < alpha and material)
    if J < min_jobs:
        return RegimeResult(False, het, q, q_p, tau2, float(r2), np.nan, math.exp(lo_m), math.exp(hi_m), labels,
                            f"n/a: fewer than {min_jobs} jobs cannot tell regimes from spread"
                            + ("; the jobs' ratios do differ" if het else ""))
    sims = rng.standard_normal((n_sim, J)) * np.sqrt(tau2 + v)[None, :]
    r2s, _ = _best_split(sims)
    gap_p = float((1 + np.sum(r2s >= r2 - 1e-12)) / (n_sim + 1))
    flag = bool(het and gap_p < alpha)
    if flag:
        why = (f"{int((labels == 0).sum())} job(s) at ratio ~{math.exp(lo_m):.4g} vs {int((labels == 1).sum())} "
               f"at ~{math.exp(hi_m):.4g} (Q p = {q_p:.2g}, gap p = {gap_p:.2g}): machine states change the ratio")
    elif not het:
        why = "job ratios agree within noise or within the threshold"
    else:
        why = f"job ratios differ (Q p = {q_p:.2g}) but form no separate clusters (gap p = {gap_p:.2g})"
    return RegimeResult(flag, het, q, q_p, tau2, float(r2), gap_p, math.exp(lo_m), math.exp(hi_m), labels, why)
