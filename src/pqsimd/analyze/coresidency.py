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
from .. import metrics as metrics_mod

from ..stats.coresidency import job_states, matched_intervals, ratio_interval
from ..stats.interval import resolution_halfwidth

COLUMNS = ["metric", "scheme", "op", "variant", "compiler", "n_paired", "n_alone", "ratio", "ci_low", "ci_high",
           "ci_level", "df", "resolution", "flagged", "note"]


def _index(job_id: str) -> int:
    return int(str(job_id).rsplit(".", 1)[1])


def matched_differences(pg, ag, by_index: bool = False):
    """log paired job value - log alone job value of the same job index (the same copies); by_index:
    {index: difference}."""
    p = {_index(j): v for j, v in zip(pg.job_ids, np.log(pg.job_medians))}
    d = {_index(j): p[_index(j)] - v for j, v in zip(ag.job_ids, np.log(ag.job_medians)) if _index(j) in p}
    return d if by_index else np.array(list(d.values()))


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
