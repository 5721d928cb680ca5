"""Where inside an implementation the speedup comes from: each kernel group's Shapley share of the
speedup C -> full native, measured from an ablation (builds with subsets of the groups switched to
their native code), with intervals over the same comparisons' printed intervals.

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

Every number is a linear (or, for shares, linear-fractional) function of the v(S), so its interval is
its range over the box of the v(S) intervals: exact extremes at the box's corners, computed per
coordinate; it holds its estimate by construction and covers whenever every v(S) interval does. A
group whose code changes its neighbours' data layout moves with them: the ablation measures the
groups as the implementation lets them be switched, not kernels in isolation.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

Cell = frozenset  # the groups switched to native code

COLUMNS = ["metric", "scheme", "op", "compiler", "implementation", "design", "group", "shapley", "shapley_ci_low",
           "shapley_ci_high", "share", "share_ci_low", "share_ci_high", "leave_one_out", "leave_one_out_ci_low",
           "leave_one_out_ci_high", "add_one_in", "add_one_in_ci_low", "add_one_in_ci_high", "total", "total_ci_low",
           "total_ci_high", "interaction", "interaction_ci_low", "interaction_ci_high", "note"]


def shapley_weights(groups: Sequence[str]) -> dict[str, dict[Cell, float]]:
    """phi_i as sum over cells S of w[i][S] v(S) (v(empty) = 0): the Shapley formula expanded."""
    k = len(groups)
    out: dict[str, dict[Cell, float]] = {g: {} for g in groups}
    for g in groups:
        rest = [x for x in groups if x != g]
        for r in range(k):
            c = math.factorial(r) * math.factorial(k - r - 1) / math.factorial(k)
            for s in itertools.combinations(rest, r):
                with_g, without = Cell(s) | {g}, Cell(s)
                out[g][with_g] = out[g].get(with_g, 0.0) + c
                if without:
                    out[g][without] = out[g].get(without, 0.0) - c
    return out


def linear_range(weights: Mapping[Cell, float], lo: Mapping[Cell, float], hi: Mapping[Cell, float]) -> tuple[float, float]:
    """min and max of sum w_S v_S over the box v_S in [lo_S, hi_S]."""
    a = sum(w * (lo[s] if w > 0 else hi[s]) for s, w in weights.items())
    b = sum(w * (hi[s] if w > 0 else lo[s]) for s, w in weights.items())
    return a, b


def ratio_range(weights: Mapping[Cell, float], total: Cell, lo: Mapping[Cell, float],
                hi: Mapping[Cell, float]) -> tuple[float, float]:
    """min and max of (sum w_S v_S) / v_total over the box, when v_total keeps one sign on it: for a
    fixed v_total the numerator's rest is linear (extremes at its own range), and the ratio
    A / v_total + w_total is monotone in v_total, so the extremes are among four corners."""
    rest = {s: w for s, w in weights.items() if s != total}
    a_lo, a_hi = linear_range(rest, lo, hi) if rest else (0.0, 0.0)
    wt = weights.get(total, 0.0)
    vals = [(a + wt * t) / t for a in (a_lo, a_hi) for t in (lo[total], hi[total])]
    return min(vals), max(vals)


@dataclass(frozen=True)
class Ablation:
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


def attribute(rows: Mapping[Cell, tuple[float, float, float]], groups: Sequence[str], threshold: float) -> list[dict]:
    """The attribution of one (metric, scheme, op, compiler) from v(S) = (estimate, low, high), log
    scale, for the cells measured (the all-C cell is v = 0 and not listed). One row per group."""
    full = Cell(groups)
    have = set(rows) | {Cell()}
    pt = {s: r[0] for s, r in rows.items()}
    lo = {s: r[1] for s, r in rows.items()}
    hi = {s: r[2] for s, r in rows.items()}
    for d in (pt, lo, hi):
        d[Cell()] = 0.0
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
    inter = (sum(pt[s] * c for s, c in inter_w.items()), *linear_range(inter_w, lo, hi)) \
        if all(s in have for s in singles) else (math.nan, math.nan, math.nan)
    for g in groups:
        row = {"group": g, "total": total, "total_ci_low": lo[full], "total_ci_high": hi[full],
               "interaction": inter[0], "interaction_ci_low": inter[1], "interaction_ci_high": inter[2],
               "note": "; ".join(notes)}
        if factorial:
            phi = sum(c * pt[s] for s, c in w[g].items())
            row["shapley"] = phi
            row["shapley_ci_low"], row["shapley_ci_high"] = linear_range(w[g], lo, hi)
            if not near_one:
                row["share"] = phi / total
                row["share_ci_low"], row["share_ci_high"] = ratio_range(w[g], full, lo, hi)
        without = full - {g}
        if without in have:
            loo_w = {full: 1.0, **({without: -1.0} if without else {})}
            row["leave_one_out"] = sum(pt[s] * c for s, c in loo_w.items())
            row["leave_one_out_ci_low"], row["leave_one_out_ci_high"] = linear_range(loo_w, lo, hi)
        if Cell({g}) in have:
            row["add_one_in"], row["add_one_in_ci_low"], row["add_one_in_ci_high"] = (pt[Cell({g})], lo[Cell({g})],
                                                                                        hi[Cell({g})])
        out.append(row)
    return out


RATIO_COLUMNS = ("shapley", "leave_one_out", "add_one_in", "total", "interaction")


def attribution_table(comparisons: pd.DataFrame, ablations: Sequence[Ablation], threshold: float) -> pd.DataFrame:
    """results/attribution: per ablation, (metric, scheme, op, compiler) and group. The v(S) are the
    comparisons all-C cell -> cell S (same compiler); log-scale numbers are written as factors
    (exp), shares as fractions."""
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
            v = {}
            for r in d.itertuples(index=False):
                if r.speedup > 0 and r.ci_low > 0 and r.ci_high > 0:
                    v[ab.cells[r.variant]] = (math.log(r.speedup), math.log(r.ci_low), math.log(r.ci_high))
            design = str(d["design"].iloc[0])
            for row in attribute(v, ab.groups, threshold):
                out = {k: math.nan for k in COLUMNS}
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
    for col in ("shapley", "share", "leave_one_out", "add_one_in", "total", "interaction"):
        p, a, b = (table[f"{col}{s}"].to_numpy(dtype=float) for s in ("", "_ci_low", "_ci_high"))
        ok = ~(np.isfinite(p) & np.isfinite(a) & np.isfinite(b)) | ((a - 1e-9 <= p) & (p <= b + 1e-9))
        if not ok.all():
            raise AssertionError(f"attribution: {int((~ok).sum())} {col} estimate(s) outside their interval")
    sums = table.groupby(["metric", "scheme", "op", "compiler", "implementation"], sort=False)["share"].sum(min_count=1)
    bad = sums[np.isfinite(sums) & (np.abs(sums - 1.0) > 1e-9)]
    if len(bad):
        raise AssertionError(f"attribution: shares of {len(bad)} op(s) do not sum to 1")
