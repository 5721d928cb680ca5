"""Where inside an implementation the speedup comes from: each kernel group's Shapley share of the
speedup C -> full native, measured from an ablation (builds with subsets of the groups switched to
their native code).

An ablation of k groups has cells S (the groups switched on); v(S) = log speedup of cell S over the
all-C cell, which is the comparison all-C -> S (its estimate and interval exactly as in comparisons).
From the full factorial (all 2^k cells, k <= 5):
  Shapley  phi_i = sum over S not holding i of |S|! (k-|S|-1)! / k! (v(S + i) - v(S)): the group's
           average marginal gain over every order of switching groups on; the phi_i sum exactly to
           v(all) (the total), so `share_i` = phi_i / v(all) sums to 1.
  leave-one-out  v(all) - v(all - i): what the full build loses without group i;
  add-one-in     v({i}): what group i gives alone;
  interaction    v(all) - sum_i v({i}): what the groups give together beyond their sum.
Without the full factorial (more groups) only leave-one-out, add-one-in and the interaction.

Intervals, each with its level (`<number>_ci_level`):
- total and add-one-in: the comparison's own interval and ci_level.
- leave-one-out and interaction: the range over the box of the few v(S) intervals they use (exact
  extremes at the box's corners); it covers whenever each of those does, so its level is at least
  1 - the sum of their miss probabilities (Bonferroni).
- Shapley values and shares, paired design: a percentile bootstrap over jobs (every cell is timed in
  the same jobs; a resample draws J jobs with replacement, takes each cell's median job log ratio (with
  randomized layouts, the median of the resampled jobs' copy pairs: each cell's typical layout, as its
  comparison's `csign` estimate),
  and recomputes every phi_i and share), at level 1 - alpha, widened to hold the estimate when it
  falls outside. The box over all 2^k - 1 cells would guarantee only 1 - (2^k - 1) x miss (about
  33% for 5 groups at J = 10) and is several times wider; the bootstrap's coverage at its stated
  level is measured in bench/bench_attribution.py (BENCHMARKS.md). No interval is narrower than the
  clock resolves: each v*(S) is a median of job log ratios each known to its comparison's resolution
  res_S (interval.resolution_halfwidth, the row's `resolution`), so phi*_i is known to
  sum |w_S| res_S and the Shapley interval moves out by that; a share's ends are the quantiles of each
  resample's lowest and highest phi*_i / v*(all) over those resolutions. Separate design, fewer than 5 jobs
  (a bootstrap of 2-4 jobs' medians cannot reach past their [min, max]) or exact counts: the box,
  with its Bonferroni level (exact counts: level 1, zero width; J = 2: 0%).
A group whose code changes its neighbours' data layout moves with them: the ablation measures the
groups as the implementation lets them be switched, not kernels in isolation.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..model import Design
from ..stats.shapley import (Cell, ShapleyBootstrap, box_level, linear_range, ratio_range, shapley_bootstrap,
                             shapley_weights)

NUMBERS = ("shapley", "share", "leave_one_out", "add_one_in", "total", "interaction")
COLUMNS = ["metric", "scheme", "op", "compiler", "implementation", "design", "group",
           *(f"{n}{suf}" for n in NUMBERS for suf in ("", "_ci_low", "_ci_high", "_ci_level")), "shapley_ci_method",
           "note"]


def _holding(point: float, lo: float, hi: float) -> tuple[float, float]:
    """An interval widened to hold its estimate (a percentile interval of a median need not)."""
    return min(lo, point), max(hi, point)


@dataclass(frozen=True)
class AblationDesign:
    """The design of one implementation's ablation (from the study): its groups and which variant
    holds which cell."""

    implementation: str
    groups: tuple[str, ...]
    cells: Mapping[str, Cell]  # variant id -> groups on

    @property
    def base(self) -> str | None:
        return next((v for v, c in self.cells.items() if not c), None)

    @property
    def full(self) -> str | None:
        return next((v for v, c in self.cells.items() if c == Cell(self.groups)), None)

    @property
    def factorial(self) -> bool:
        return {c for c in self.cells.values()} >= {Cell(s) for r in range(len(self.groups) + 1)
                                                       for s in itertools.combinations(self.groups, r)}


def attribute(rows: Mapping[Cell, tuple[float, ...]], groups: Sequence[str], threshold: float,
              boot: ShapleyBootstrap | None = None) -> list[dict]:
    """The attribution of one (metric, scheme, op, compiler) from v(S) = (estimate, low, high[, level]),
    log scale, for the cells measured (the all-C cell is v = 0 and not listed; a level not given is
    1, the interval of an exact count). boot: the Shapley values' bootstrap (paired design); without
    it their intervals are the box's. One row per group."""
    full = Cell(groups)
    have = set(rows) | {Cell()}
    pt = {s: r[0] for s, r in rows.items()}
    lo = {s: r[1] for s, r in rows.items()}
    hi = {s: r[2] for s, r in rows.items()}
    lvl = {s: (r[3] if len(r) > 3 else 1.0) for s, r in rows.items()}
    for d in (pt, lo, hi):
        d[Cell()] = 0.0
    lvl[Cell()] = 1.0
    factorial = have >= {Cell(s) for r in range(len(groups) + 1) for s in itertools.combinations(groups, r)}
    out = []
    band = math.log1p(threshold)
    notes = []
    if full not in rows:
        return [{"group": g, "note": "n/a: the full build was not measured"} for g in groups]
    total = pt[full]
    near_one = not (lo[full] > band or hi[full] < -band)
    if near_one:
        notes.append(f"shares n/a: the total's interval [{math.exp(lo[full]):.4g}, {math.exp(hi[full]):.4g}] reaches "
                     f"±{threshold:.0%} of 1")
    if not factorial:
        notes.append("no Shapley shares: not every subset of the groups was measured (leave-one-out and add-one-in)")
    w = shapley_weights(list(groups)) if factorial else {}
    singles = [Cell({g}) for g in groups]
    inter_w = {full: 1.0, **{s: -1.0 for s in singles}}
    inter = (sum(pt[s] * c for s, c in inter_w.items()), *linear_range(inter_w, lo, hi), box_level(inter_w, lvl)) \
        if all(s in have for s in singles) else (math.nan, math.nan, math.nan, math.nan)
    all_cells = {s: 1.0 for s in have if s}
    for g in groups:
        row = {"group": g, "total": total, "total_ci_low": lo[full], "total_ci_high": hi[full],
               "total_ci_level": lvl[full], "interaction": inter[0], "interaction_ci_low": inter[1],
               "interaction_ci_high": inter[2], "interaction_ci_level": inter[3], "note": "; ".join(notes)}
        if factorial:
            phi = sum(c * pt[s] for s, c in w[g].items())
            row["shapley"] = phi
            if boot is not None:
                row["shapley_ci_low"], row["shapley_ci_high"] = _holding(phi, *boot.shapley[g])
                row["shapley_ci_level"], row["shapley_ci_method"] = boot.level, "bootstrap"
            else:
                row["shapley_ci_low"], row["shapley_ci_high"] = linear_range(w[g], lo, hi)
                row["shapley_ci_level"], row["shapley_ci_method"] = box_level(all_cells, lvl), "box"
            if not near_one:
                row["share"] = phi / total
                row["share_ci_low"], row["share_ci_high"] = (_holding(phi / total, *boot.share[g]) if boot is not None
                                                             else ratio_range(w[g], full, lo, hi))
                row["share_ci_level"] = row["shapley_ci_level"]
        without = full - {g}
        if without in have:
            loo_w = {full: 1.0, **({without: -1.0} if without else {})}
            row["leave_one_out"] = sum(pt[s] * c for s, c in loo_w.items())
            row["leave_one_out_ci_low"], row["leave_one_out_ci_high"] = linear_range(loo_w, lo, hi)
            row["leave_one_out_ci_level"] = box_level(loo_w, lvl)
        if Cell({g}) in have:
            one = Cell({g})
            row["add_one_in"], row["add_one_in_ci_low"], row["add_one_in_ci_high"] = pt[one], lo[one], hi[one]
            row["add_one_in_ci_level"] = lvl[one]
        out.append(row)
    return out


RATIO_COLUMNS = ("shapley", "leave_one_out", "add_one_in", "total", "interaction")


MIN_BOOTSTRAP_JOBS = 5  # fewer jobs: a resample of medians cannot leave [min, max] (bench/bench_attribution.py)


def job_log_ratios(d: pd.DataFrame, cells: Mapping[str, Cell]) -> dict[Cell, np.ndarray] | None:
    """Per cell, the jobs' log ratios of its comparison (the hidden columns compare.py keeps), in one
    job order; None unless every cell has them for the same MIN_BOOTSTRAP_JOBS or more jobs (the
    paired design)."""
    if "_job_ids" not in d.columns:
        return None
    out, order = {}, None
    copies = d["_copy_logs"] if "_copy_logs" in d.columns else [None] * len(d)
    sizes = {np.asarray(c[0]).size for c in copies if isinstance(c, list) and c} | \
        {np.asarray(x).size for c in copies if isinstance(c, list) for x in c}
    # laid out (every cell a csign row with L pairs per job): per cell a J x L array of copy pairs, so a
    # resample's v*(S) is the cell's own estimand, the typical layout
    laid = all(isinstance(c, list) for c in copies) and len(sizes) == 1
    for variant, ids, logs, cl in zip(d["variant"], d["_job_ids"], d["_job_logs"], copies):
        if not isinstance(ids, list) or logs is None or len(ids) < MIN_BOOTSTRAP_JOBS:
            return None
        by = dict(zip(ids, [np.asarray(x, dtype=np.float64) for x in cl] if laid else np.asarray(logs, dtype=np.float64)))
        order = order or sorted(ids)
        if set(ids) != set(order):
            return None
        out[cells[variant]] = np.array([by[j] for j in order])
    return out


def attribution_table(comparisons: pd.DataFrame, ablations: Sequence[AblationDesign], threshold: float,
                      level: float = 0.95, n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """results/attribution: per ablation, (metric, scheme, op, compiler) and group. The v(S) are the
    comparisons all-C cell -> cell S (same compiler); log-scale numbers are written as factors
    (exp), shares as fractions. level, n_boot, seed: the Shapley bootstrap's (paired design)."""
    from ..stats.bootstrap import rng_for

    rows = []
    if not len(comparisons):
        return pd.DataFrame(columns=COLUMNS)
    for ab in ablations:
        base = ab.base
        if base is None:
            continue
        c = comparisons[(comparisons["baseline"] == base) & comparisons["variant"].isin(list(ab.cells))
                        & (comparisons["baseline_compiler"] == comparisons["compiler"])]
        for (metric, scheme, op, comp), d in c.groupby(["metric", "scheme", "op", "compiler"], sort=False):
            v, res = {}, {}
            for r in d.itertuples(index=False):
                if r.speedup > 0 and r.ci_low > 0 and r.ci_high > 0:
                    lv = float(getattr(r, "ci_level", 1.0))
                    v[ab.cells[r.variant]] = (math.log(r.speedup), math.log(r.ci_low), math.log(r.ci_high),
                                              lv if math.isfinite(lv) else 0.0)
                    rr = float(getattr(r, "resolution", 0.0))  # the row's clock resolution (interval.py)
                    res[ab.cells[r.variant]] = math.log1p(rr) if math.isfinite(rr) and rr > 0 else 0.0
            design = str(d["design"].iloc[0])
            jobs = job_log_ratios(d[d["variant"].isin([x for x, c in ab.cells.items() if c in v])], ab.cells) \
                if design == Design.PAIRED and ab.factorial and len(v) == 2 ** len(ab.groups) - 1 else None
            boot = shapley_bootstrap(jobs, ab.groups, level, n_boot, rng_for(seed, "attribution", metric, scheme, op,
                                                                             comp), res) if jobs else None
            for row in attribute(v, ab.groups, threshold, boot):
                out = {k: math.nan for k in COLUMNS} | {"shapley_ci_method": ""}
                out.update(metric=metric, scheme=scheme, op=op, compiler=comp, implementation=ab.implementation,
                           design=design, **row)
                for col in RATIO_COLUMNS:
                    for suf in ("", "_ci_low", "_ci_high"):
                        x = out[col + suf]
                        out[col + suf] = math.exp(x) if isinstance(x, float) and math.isfinite(x) else math.nan
                rows.append(out)
    return pd.DataFrame(rows, columns=COLUMNS)


def check(table: pd.DataFrame) -> None:
    """Shares sum to 1 and every number lies in its interval (the construction guarantees both)."""
    if not len(table):
        return
    for col in NUMBERS:
        p, a, b = (table[f"{col}{s}"].to_numpy(dtype=float) for s in ("", "_ci_low", "_ci_high"))
        ok = ~(np.isfinite(p) & np.isfinite(a) & np.isfinite(b)) | ((a - 1e-9 <= p) & (p <= b + 1e-9))
        if not ok.all():
            raise AssertionError(f"attribution: {int((~ok).sum())} {col} estimate(s) outside their interval")
    sums = table.groupby(["metric", "scheme", "op", "compiler", "implementation"], sort=False)["share"].sum(min_count=1)
    bad = sums[np.isfinite(sums) & (np.abs(sums - 1.0) > 1e-9)]
    if len(bad):
        raise AssertionError(f"attribution: shares of {len(bad)} op(s) do not sum to 1")
