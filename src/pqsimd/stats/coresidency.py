"""Co-residency's numbers (analyze/coresidency.py says what they mean): the two-sample t interval of a
paired/alone ratio, the median polish of matched differences over (pair, op), and the matched rows'
intervals from residuals pooled over the rows (a median of n draws, Monte Carlo), at the family level by
the one decision rule (decision.py). Numbers in, numbers out."""

from __future__ import annotations

import math

import numpy as np

from .decision import empirical
from .interval import Evidence


def ratio_interval(lp: np.ndarray, la: np.ndarray, gamma: float, res: float = 0.0) -> tuple[float, float, float, float]:
    """(ratio, low, high, df) of exp(mean lp - mean la) at level 1 - gamma, each end moved out by
    `res` (the clock's resolution of the log ratio); nan when not estimable (the interval alone when
    res is inf: a call shorter than one lattice step)."""
    jp, ja = lp.size, la.size
    if jp < 2 or ja < 1:
        return math.nan, math.nan, math.nan, math.nan
    if ja >= 2:
        df = jp + ja - 2
        s2 = ((jp - 1) * lp.var(ddof=1) + (ja - 1) * la.var(ddof=1)) / df
    else:
        df = jp - 1
        s2 = lp.var(ddof=1)
    d = float(lp.mean() - la.mean())
    if not math.isfinite(res):
        return math.exp(d), math.nan, math.nan, float(df)
    iv = Evidence.t(d, math.sqrt(s2 * (1 / jp + 1 / ja)), df).at_resolution(res).interval(gamma)
    return math.exp(iv.point), math.exp(iv.lo), math.exp(iv.hi), float(df)


def job_states(diffs: dict[tuple, dict[int, float]], iters: int = 10) -> dict[tuple, dict[int, float]]:
    """Median polish of the matched differences of each build and set (rows: the matched job index r,
    columns: the ops): d[r, o] = a + s_r + c_o + e. s_r is the state pair r's two processes were in
    (a whole alone or paired job 25-45% slow shifts every op of it), taken out robustly as long as fewer
    than half the pairs are in such a state; a + c_o, the op's co-residency, is kept. diffs: (variant,
    compiler, scheme) -> op -> {r: d}; returns the same with s_r subtracted."""
    out = {}
    for key, ops in diffs.items():
        names = list(ops)
        rs = sorted({r for o in names for r in ops[o]})
        m = np.full((len(rs), len(names)), np.nan)
        for j, o in enumerate(names):
            for i, r in enumerate(rs):
                m[i, j] = ops[o].get(r, np.nan)
        row = np.zeros(len(rs))
        resid = m.copy()
        for _ in range(iters):
            rmed = np.nanmedian(resid, axis=1)
            rmed = np.where(np.isfinite(rmed), rmed, 0.0)
            row += rmed
            resid -= rmed[:, None]
            cmed = np.nanmedian(resid, axis=0)
            resid -= np.where(np.isfinite(cmed), cmed, 0.0)[None, :]
        state = row - np.median(row) if len(rs) >= 3 else np.zeros(len(rs))  # the build's uniform part stays
        out[key] = {o: {r: v - state[rs.index(r)] for r, v in ops[o].items()} for o in names}
    return out


POOL_DRAWS = 200_000  # Monte Carlo draws of the median of n pooled residuals (per distinct n)


def _pooled(diffs: list[np.ndarray]) -> np.ndarray:
    many = [d for d in diffs if d.size >= 2]
    # a residual around a median of n is smaller than the error it stands for: scaled by sqrt(n / (n - 1))
    return np.concatenate([(d - np.median(d)) * math.sqrt(d.size / (d.size - 1)) for d in many]) if many \
        else np.zeros(0)


def _median_errors(pooled: np.ndarray, sizes, seed: int) -> dict[int, np.ndarray]:
    """n -> the sorted medians of n draws from the pooled residuals (POOL_DRAWS of them)."""
    rng = np.random.default_rng(seed)
    return {n: np.sort(np.median(rng.choice(pooled, size=(POOL_DRAWS, n), replace=True), axis=1))
            for n in sorted(set(sizes)) if n >= 1}


def decision_p(m: float, errors: np.ndarray, band: float, res: float = 0.0) -> float:
    """The decision p of the row's (1 - gamma) intervals [m - q(1 - gamma/2), m - q(gamma/2)] (q: quantiles
    of its median's error): decision.empirical of m - the errors."""
    return empirical(m - errors, band, res)


def matched_intervals(diffs: list[np.ndarray], gamma: float | None, res: list[float], seed: int = 0,
                      alpha: float = 0.05, threshold: float = 0.02) -> tuple[list[tuple], dict]:
    """Per row (its matched differences d): (ratio, low, high, n) with ratio = exp(median d) and the
    interval from the pooled residuals: every row's d minus its own median, pooled over the rows (the
    processes' states are the same machine's whatever the op), the distribution of the median of n
    draws from them (Monte Carlo), its gamma/2 and 1 - gamma/2 quantiles subtracted from the row's
    median; each end moved out by the row's clock resolution. Heavy tails widen it as they should
    instead of breaking a t interval. gamma None: the family's level as the comparisons' (fcr: each
    row's decision p, Benjamini-Hochberg at alpha selects R of m, every interval at 1 - max(R, 1) alpha / m)."""
    from ..stats.multiplicity import family_level

    pooled = _pooled(diffs)
    out = []
    if pooled.size < 10:
        return [(math.exp(float(np.median(d))) if d.size else math.nan, math.nan, math.nan, float(d.size))
                for d in diffs], {"residuals": int(pooled.size),
                                  "gamma": gamma if gamma is not None else alpha / max(1, len(diffs)), "selected": None}
    errs = _median_errors(pooled, [d.size for d in diffs], seed)
    band = math.log1p(threshold)
    ps = np.array([decision_p(float(np.median(d)), errs[d.size], band, r) if d.size and math.isfinite(r) else np.nan
                   for d, r in zip(diffs, res)])
    fam = family_level(ps, alpha, "fcr") if gamma is None else None
    g = fam.gamma if fam is not None else gamma
    for d, r in zip(diffs, res):
        if d.size == 0:
            out.append((math.nan, math.nan, math.nan, 0.0))
            continue
        m = float(np.median(d))
        if not math.isfinite(r):
            out.append((math.exp(m), math.nan, math.nan, float(d.size)))
            continue
        e = errs[d.size]
        lo_q, hi_q = float(np.quantile(e, g / 2)), float(np.quantile(e, 1 - g / 2))
        out.append((math.exp(m), math.exp(m - hi_q - r), math.exp(m - lo_q + r), float(d.size)))
    tail = np.abs(pooled)
    return out, {"residuals": int(pooled.size), "gamma": g, "selected": fam.selected if fam else None,
                 "decision_p": ps, "residual_mad": float(1.4826 * np.median(tail)),
                 "residual_q95": float(np.quantile(tail, 0.95)), "residual_max": float(tail.max())}
