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
holds no layout, cliffs included; what is left is the two processes' states. The ratio is exp(mean
d_r) with a moderated t interval: each row's variance of d (df n - 1) shrunk towards a prior fitted
over all rows (moderation.py, limma's model with its outlier screen), so a row with 1 to 3 pairs borrows
the study's spread of such differences; Bonferroni over the rows, widened by the clock's resolution.
It measures co-residency whole: co-mapping (the other builds' copies mapped into the process) and
co-execution (their code run between this build's turns), with the layout held fixed.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from .interval import Evidence, resolution_halfwidth

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


def matched_differences(pg, ag) -> np.ndarray:
    """log paired job value - log alone job value of the same job index (the same copies)."""
    p = {_index(j): v for j, v in zip(pg.job_ids, np.log(pg.job_medians))}
    return np.array([p[_index(j)] - v for j, v in zip(ag.job_ids, np.log(ag.job_medians)) if _index(j) in p])


def matched_intervals(diffs: list[np.ndarray], gamma: float, res: list[float]) -> tuple[list[tuple], dict]:
    """Per row (its matched differences d): (ratio, low, high, df) from the moderated t interval of mean d,
    the prior fitted over the rows' variances; and the prior's record."""
    from scipy import stats

    from .moderation import fit_prior, posterior_var

    n = np.array([d.size for d in diffs], dtype=float)
    s2 = np.array([d.var(ddof=1) if d.size >= 2 else np.nan for d in diffs])
    df = np.maximum(n - 1, 0)
    prior = fit_prior(s2, df)
    post, pdf = posterior_var(s2, df, prior)
    out = []
    for d, v, f, r in zip(diffs, post, pdf, res):
        if d.size == 0 or not np.isfinite(v) or f <= 0:
            out.append((math.exp(d.mean()) if d.size else math.nan, math.nan, math.nan, float(f)))
            continue
        m = float(d.mean())
        if not math.isfinite(r):
            out.append((math.exp(m), math.nan, math.nan, float(f)))
            continue
        h = float(stats.t.ppf(1 - gamma / 2, f)) * math.sqrt(v / d.size) + r
        out.append((math.exp(m), math.exp(m - h), math.exp(m + h), float(f)))
    return out, {"prior_sd": math.sqrt(prior.s2) if np.isfinite(prior.s2) else None,
                 "prior_df": prior.df if np.isfinite(prior.df) else "inf", "rows_fitted": prior.n,
                 "rows_outlying": prior.n_outliers}


def coresidency(groups: dict, alone: dict, alpha: float, threshold: float,
                matched: bool = False) -> tuple[pd.DataFrame, dict]:
    """groups: the study's (paired) groups; alone: the groups of its alone jobs (analyze/groups.build_groups);
    matched: alone job r loaded paired job r's copies (`alone_layouts = "paired"`)."""
    pairs = [(k, groups[k], g) for k, g in alone.items()
             if k[0] == "ticks" and k in groups and g.positive and groups[k].positive]
    if not pairs:
        return pd.DataFrame(columns=COLUMNS), {"measured": bool(alone), "rows": 0}
    if matched:
        return _matched(pairs, alpha, threshold)
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
    gamma = alpha / m
    diffs = [matched_differences(pg, ag) for _, pg, ag in pairs]
    res = [resolution_halfwidth(pg.resolution_rel, ag.resolution_rel) for _, pg, ag in pairs]
    ivs, prior = matched_intervals(diffs, gamma, res)
    rows = []
    for ((metric, scheme, op, variant, compiler), pg, ag), d, (ratio, lo, hi, df), r in zip(pairs, diffs, ivs, res):
        flagged = bool(np.isfinite(lo) and (lo > 1 + threshold or hi < 1 / (1 + threshold)))
        note = "matched: alone job r timed paired job r's copies; moderated t over the rows"
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
           "design": "matched", "prior": prior,
           "worst": (f"{worst.scheme} {worst.op} {worst.variant} ({worst.compiler}) {worst.ratio:.3f}× "
                     f"[{worst.ci_low:.3f}, {worst.ci_high:.3f}]") if worst is not None else None,
           "method": "alone job r timed the copies of paired job r (same bytes and stack offsets); ratio = "
                     "exp(mean of log paired - log alone job values over the matched jobs); moderated t interval "
                     "(each row's variance shrunk towards a prior fitted over the rows), Bonferroni over the rows, "
                     "each end moved out by the clock's resolution; flagged when the interval lies beyond the "
                     "threshold. Measures co-mapping and co-execution together, the layout held fixed"}
    return df_, rec
