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
    """(J_base, J_var) matrix D[j, l] = #(var_l < base_j) − #(var_l > base_j) over spin pairs of job j and job l."""
    jb, jv = base.n_jobs, var.n_jobs
    out = np.empty((jb, jv), dtype=np.float64)
    for l in range(jv):
        vl = np.sort(var_values[var_job == l])
        below = np.searchsorted(vl, base_values, side="left")  # var values < each base value
        above = vl.size - np.searchsorted(vl, base_values, side="right")  # var values > each base value
        out[:, l] = np.bincount(base_job, weights=(below - above).astype(np.float64), minlength=jb)
    return out


def delta_job_bootstrap(balance: np.ndarray, base_sizes: np.ndarray, var_sizes: np.ndarray,
                        counts_base: np.ndarray, counts_var: np.ndarray) -> np.ndarray:
    """δ of each job-resample: Σ c_j d_l D[j,l] / ((Σ c_j S_j)(Σ d_l S_l))."""
    num = np.einsum("bj,jl,bl->b", counts_base, balance, counts_var, optimize=True)
    den = (counts_base @ base_sizes).astype(np.float64) * (counts_var @ var_sizes).astype(np.float64)
    return num / den
