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
