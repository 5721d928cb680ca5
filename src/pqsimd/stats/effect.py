"""Cliff's δ from the Mann-Whitney U statistic, and its job-level bootstrap interval.

δ = P(variant < baseline) − P(variant > baseline). With U_var = #(variant > baseline) + ½·#ties
(scipy's U for the first sample), δ = 1 − 2·U_var / (n·m); no n×m double loop.
"""

from __future__ import annotations

import numpy as np

from .bootstrap import Sample


def delta_from_u(u_variant: float, n_variant: int, n_base: int) -> float:
    """Cliff's δ (variant faster = positive) from the U statistic of the variant sample."""
    return 1.0 - 2.0 * float(u_variant) / (float(n_variant) * float(n_base))


def u_statistic(variant: np.ndarray, base: np.ndarray) -> float:
    """U of the variant sample, #(variant > base) + ½·ties, from sorted ranks in O((n+m) log(n+m))."""
    b = np.sort(np.asarray(base, dtype=np.float64))
    v = np.asarray(variant, dtype=np.float64)
    less = np.searchsorted(b, v, side="left")  # base values below each variant value
    leq = np.searchsorted(b, v, side="right")
    return float(less.sum() + 0.5 * (leq - less).sum())


def pair_balance(base: Sample, var: Sample, base_job: np.ndarray, var_job: np.ndarray,
                 base_values: np.ndarray, var_values: np.ndarray) -> np.ndarray:
    """(J_base, J_var) matrix D[j, l] = #(var_l < base_j) − #(var_l > base_j) over spin pairs of job j and job l.

    For every baseline value, the number of job-l variant values below / above it is read off the
    variant's per-job cumulative counts at its searchsorted position; rows are then summed per
    baseline job. O((n+m)·log m + n·J_var)."""
    x = np.asarray(base_values, dtype=np.float64)
    il = np.searchsorted(var.v, x, side="left")
    ir = np.searchsorted(var.v, x, side="right")
    below = var.cum[:, il]  # (J_var, n): job-l variant values < x
    above = var.sizes[:, None] - var.cum[:, ir]  # job-l variant values > x
    diff = (below - above).astype(np.float64)
    order = np.argsort(base_job, kind="stable")
    bj = np.asarray(base_job)[order]
    starts = np.flatnonzero(np.r_[True, bj[1:] != bj[:-1]])
    out = np.zeros((base.n_jobs, var.n_jobs))
    out[bj[starts]] = np.add.reduceat(diff[:, order], starts, axis=1).T
    return out


def delta_job_bootstrap(balance: np.ndarray, base_sizes: np.ndarray, var_sizes: np.ndarray,
                        counts_base: np.ndarray, counts_var: np.ndarray) -> np.ndarray:
    """δ of each job-resample: Σ c_j d_l D[j,l] / ((Σ c_j S_j)(Σ d_l S_l))."""
    num = ((counts_base @ balance) * counts_var).sum(axis=1)
    den = (counts_base @ base_sizes).astype(np.float64) * (counts_var @ var_sizes).astype(np.float64)
    return num / den
