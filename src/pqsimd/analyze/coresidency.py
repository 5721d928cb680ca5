"""Co-residency: what sharing a process with the study's other builds does to a build's time.

A paired study (`[study] alone` = N) also times every build alone in its process, N jobs per build
and parameter set, with the same protocol (warm-up, batches, its own laid-out copies), interleaved
with the paired jobs. Per (scheme, op, variant, compiler) the ratio paired/alone of the geometric
means of the job values (> 1: slower beside the other builds; hand-written AVX2 returning with
dirty upper YMM halves is one known mechanism, which the driver's vzeroupper between builds cuts)
and its interval: a two-sample t interval on log job values with the variance pooled across the
paired and the alone jobs (with one alone job, the paired jobs' variance alone: the alone job is
assumed to vary like a paired one), Bonferroni over the rows measured, each end moved out by the
clock's resolution of the log ratio (interval.resolution_halfwidth of the two groups' lattice steps,
as every comparison's: job values stuck on a coarse clock's lattice would otherwise give a zero-width
interval); an op whose call lasts less than one lattice step gets no interval. A row is flagged when
its interval lies entirely beyond the study's threshold. Coverage: bench/bench_coresidency.py.

**Matched alone jobs** (`[study] alone_layouts = "paired"`, the default of new studies): alone job r
of a build loads the very copies paired job r of its parameter set loads (run/layouts.seed_job: the
same bytes and stack offsets), so per r the difference d_r = log paired value_r - log alone value_r
holds no layout, cliffs included; what is left is the two processes' states, and those are heavy-tailed
(on a shared Zen 4 host a whole job ran 17-31% slow in about one job in fifteen, in either design). A
pair's state moves every op of the build in it alike: a median polish of d over (pair, op) per build and
set takes it out (`job_states`; the build's uniform co-residency, the median over pairs, stays). The
ratio is exp(median d_r); its interval is that of a median of n draws from the residuals pooled over all
rows (each row's d minus its median): the shape of the process states, borrowed across the rows, so a
row of 2 to 5 pairs gets an interval that heavy tails widen instead of breaking; printed at the family
level as the comparisons are (each row's decision p: the smallest miss probability at which its interval
lies beyond the threshold or inside it; Benjamini-Hochberg selects R of m; 1 - max(R, 1) alpha / m),
widened by the clock's resolution.
It measures co-residency whole: co-mapping (the other builds' copies mapped into the process) and
co-execution (their code run between this build's turns), with the layout held fixed.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from ..stats.interval import Evidence, resolution_halfwidth
from .. import metrics as metrics_mod

COLUMNS = ["metric", "scheme", "op", "variant", "compiler", "n_paired", "n_alone", "ratio", "ci_low", "ci_high",
           "ci_level", "df", "resolution", "flagged", "note"]


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


def _index(job_id: str) -> int:
    return int(str(job_id).rsplit(".", 1)[1])


def matched_differences(pg, ag, by_index: bool = False):
    """log paired job value - log alone job value of the same job index (the same copies); by_index:
    {index: difference}."""
    p = {_index(j): v for j, v in zip(pg.job_ids, np.log(pg.job_medians))}
    d = {_index(j): p[_index(j)] - v for j, v in zip(ag.job_ids, np.log(ag.job_medians)) if _index(j) in p}
    return d if by_index else np.array(list(d.values()))


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
    """The smallest gamma at which the row's (1 - gamma) interval [m - q(1 - gamma/2), m - q(gamma/2)]
    (q: quantiles of its median's error) lies beyond the band or inside it (the comparisons' decision p,
    interval.py); the resolution moves the ends out."""
    f = lambda x: np.searchsorted(errors, x, side="right") / errors.size  # noqa: E731
    up = 2 * (1 - f(m - band - res))
    down = 2 * f(m + band + res)
    within = 2 * max(1 - f(m + band - res), f(m - band + res)) if band > res else 1.0
    return float(min(1.0, up, down, within))


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


def coresidency(groups: dict, alone: dict, alpha: float, threshold: float,
                matched: bool = False) -> tuple[pd.DataFrame, dict]:
    """groups: the study's (paired) groups; alone: the groups of its alone jobs (analyze/groups.build_groups);
    matched: alone job r loaded paired job r's copies (`alone_layouts = "paired"`)."""
    pairs = [(k, groups[k], g) for k, g in alone.items()
             if k[0] == metrics_mod.TIME and k in groups and g.positive and groups[k].positive]
    if not pairs:
        return pd.DataFrame(columns=COLUMNS), {"measured": bool(alone), "rows": 0}
    if matched:
        out = _matched(pairs, alpha, threshold)
        if out is not None:
            return out
    m = len(pairs)
    gamma = alpha / m
    rows = []
    for (metric, scheme, op, variant, compiler), pg, ag in pairs:
        lp, la = np.log(pg.job_medians), np.log(ag.job_medians)
        res = resolution_halfwidth(pg.resolution_rel, ag.resolution_rel)
        ratio, lo, hi, df = ratio_interval(lp, la, gamma, res)
        flagged = bool(np.isfinite(lo) and (lo > 1 + threshold or hi < 1 / (1 + threshold)))
        note = "" if np.isfinite(ratio) else "fewer than 2 paired jobs: no interval"
        if math.isinf(res):
            note = "a call lasts less than one lattice step of the clock: below its resolution, no interval"
        elif la.size == 1 and np.isfinite(ratio):
            note = "one alone job: its variance taken from the paired jobs"
        rows.append({"metric": metric, "scheme": scheme, "op": op, "variant": variant, "compiler": compiler,
                     "n_paired": int(lp.size), "n_alone": int(la.size), "ratio": ratio, "ci_low": lo, "ci_high": hi,
                     "ci_level": 1 - gamma, "df": df, "resolution": math.expm1(res) if math.isfinite(res) else math.nan,
                     "flagged": flagged, "note": note})
    df_ = pd.DataFrame(rows, columns=COLUMNS)
    finite = df_[np.isfinite(df_["ratio"])]
    # the worst flagged row when any is flagged (a warning names it), else the largest ratio measured
    pool = finite[finite["flagged"]] if finite["flagged"].any() else finite
    worst = pool.iloc[int(np.argmax(np.abs(np.log(pool["ratio"]))))] if len(pool) else None
    rec = {"measured": True, "rows": int(len(df_)), "flagged": int(df_["flagged"].sum()), "level": 1 - gamma,
           "median_ratio": float(finite["ratio"].median()) if len(finite) else None,
           "worst": (f"{worst.scheme} {worst.op} {worst.variant} ({worst.compiler}) {worst.ratio:.3f}× "
                     f"[{worst.ci_low:.3f}, {worst.ci_high:.3f}]") if worst is not None else None,
           "method": "paired/alone ratio of geometric means of job values; pooled-variance t interval on logs, "
                     "Bonferroni over the rows, each end moved out by the clock's resolution of the ratio; "
                     "flagged when the interval lies beyond the threshold"}
    return df_, rec


def _matched(pairs: list, alpha: float, threshold: float) -> tuple[pd.DataFrame, dict]:
    m = len(pairs)
    raw = [matched_differences(pg, ag, by_index=True) for _, pg, ag in pairs]
    by_build: dict[tuple, dict[str, dict[int, float]]] = {}
    for (k, _, _), d in zip(pairs, raw):
        by_build.setdefault((k[3], k[4], k[1]), {})[k[2]] = d
    polished = job_states(by_build)
    diffs = [np.array(list(polished[(k[3], k[4], k[1])][k[2]].values())) for k, _, _ in pairs]
    if sum(d.size - 1 for d in diffs if d.size >= 2) < 10:
        return None  # too few matched pairs to learn the processes' spread from: the unmatched interval
    res = [resolution_halfwidth(pg.resolution_rel, ag.resolution_rel) for _, pg, ag in pairs]
    ivs, prior = matched_intervals(diffs, None, res, alpha=alpha, threshold=threshold)
    gamma = prior["gamma"]
    prior = {k: v for k, v in prior.items() if k != "decision_p"}
    rows = []
    for ((metric, scheme, op, variant, compiler), pg, ag), d, (ratio, lo, hi, df), r in zip(pairs, diffs, ivs, res):
        flagged = bool(np.isfinite(lo) and (lo > 1 + threshold or hi < 1 / (1 + threshold)))
        note = "matched: alone job r timed paired job r's copies; median, pooled-residual interval"
        if math.isinf(r):
            note = "a call lasts less than one lattice step of the clock: below its resolution, no interval"
        elif not d.size:
            note = "no alone job matches a paired job of this set"
        rows.append({"metric": metric, "scheme": scheme, "op": op, "variant": variant, "compiler": compiler,
                     "n_paired": int(pg.job_medians.size), "n_alone": int(d.size), "ratio": ratio, "ci_low": lo,
                     "ci_high": hi, "ci_level": 1 - gamma, "df": df,
                     "resolution": math.expm1(r) if math.isfinite(r) else math.nan, "flagged": flagged, "note": note})
    df_ = pd.DataFrame(rows, columns=COLUMNS)
    finite = df_[np.isfinite(df_["ratio"])]
    pool = finite[finite["flagged"]] if finite["flagged"].any() else finite
    worst = pool.iloc[int(np.argmax(np.abs(np.log(pool["ratio"]))))] if len(pool) else None
    width = np.sqrt(df_["ci_high"] / df_["ci_low"]) - 1
    rec = {"measured": True, "rows": int(len(df_)), "flagged": int(df_["flagged"].sum()), "level": 1 - gamma,
           "median_ratio": float(finite["ratio"].median()) if len(finite) else None,
           "median_halfwidth": float(np.nanmedian(width)) if np.isfinite(width).any() else None,
           "design": "matched", "residuals": prior,
           "worst": (f"{worst.scheme} {worst.op} {worst.variant} ({worst.compiler}) {worst.ratio:.3f}× "
                     f"[{worst.ci_low:.3f}, {worst.ci_high:.3f}]") if worst is not None else None,
           "method": "alone job r timed the copies of paired job r (same bytes and stack offsets); ratio = "
                     "exp(median of log paired - log alone job values over the matched jobs); interval of the median "
                     "of n draws from the residuals pooled over the rows (Monte Carlo), at the family level as the "
                     "comparisons' (Benjamini-Hochberg over the rows' decision p: 1 - max(R, 1) alpha / m), "
                     "each end moved out by the clock's resolution; flagged when the interval lies beyond the "
                     "threshold. Measures co-mapping and co-execution together, the layout held fixed"}
    return df_, rec
