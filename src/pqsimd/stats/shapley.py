"""The Shapley attribution of a total over subsets of switched groups (analyze/attribution.py reads it):
the Shapley formula expanded into per-cell weights, the range of a weighted sum or ratio over a box of
cell intervals and that range's guaranteed level, and the job-level bootstrap of the values and shares.
Numbers in, numbers out."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

Cell = frozenset  # the groups switched to native code


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


def box_level(weights: Mapping[Cell, float], level: Mapping[Cell, float]) -> float:
    """The guaranteed level of a range over the box of the v(S) intervals a number uses: it covers
    whenever each of them does, so at least 1 - the sum of their miss probabilities."""
    miss = sum(1.0 - level[s] for s, w in weights.items() if w != 0 and s)
    return max(0.0, 1.0 - miss)


@dataclass(frozen=True)
class ShapleyBootstrap:
    """Percentile intervals of the Shapley values and shares over job resamples (log scale)."""

    shapley: Mapping[str, tuple[float, float]]
    share: Mapping[str, tuple[float, float]]
    level: float


def shapley_bootstrap(job_logs: Mapping[Cell, np.ndarray], groups: Sequence[str], level: float, n_boot: int,
                      rng: np.random.Generator, res: Mapping[Cell, float] | None = None) -> ShapleyBootstrap:
    """The job-level bootstrap of the Shapley values: job_logs holds, per cell, the J jobs' log ratios
    (all-C job median / the cell's), the same jobs in the same order for every cell (the paired
    design). Each resample draws J jobs with replacement, v*(S) = the median of their log ratios,
    phi*_i = sum w v*, share*_i = phi*_i / v*(all); the interval is the (1 -+ level)/2 quantiles.
    res: per cell the clock's resolution of its log ratios (log scale, 0 if absent): the Shapley
    interval moves out by sum |w_S| res_S, and a share's ends are the quantiles of each resample's
    extremes of phi*_i / v*(all) over the box of those resolutions (n/a where v*(all) may be 0)."""
    cells = list(job_logs)
    x = np.stack([np.asarray(job_logs[c], dtype=np.float64) for c in cells], axis=1)  # J x C (x L copy pairs)
    j = x.shape[0]
    xb = x[rng.integers(0, j, size=(n_boot, j))]  # B x J x C (x L)
    if xb.ndim == 4:  # laid out: v*(S) is the typical layout of the resampled jobs' copy pairs (csign)
        xb = np.moveaxis(xb, 2, 1).reshape(n_boot, len(cells), -1)  # B x C x (J L)
        v = np.median(xb, axis=2)
    else:
        v = np.median(xb, axis=1)  # B x C
    w = shapley_weights(list(groups))
    wm = np.array([[w[g].get(c, 0.0) for c in cells] for g in groups])  # G x C
    phi = v @ wm.T
    full = Cell(groups)
    total = v[:, cells.index(full)]
    r = np.array([(res or {}).get(c, 0.0) for c in cells], dtype=np.float64)
    r_phi = np.abs(wm) @ r  # G: how far the clock can move each phi*
    r_tot = float((res or {}).get(full, 0.0))
    q = [(1.0 - level) / 2.0, (1.0 + level) / 2.0]
    with np.errstate(divide="ignore", invalid="ignore"):
        # phi / total over the box [phi -+ r_phi] x [total -+ r_tot]: monotone in each when total keeps its
        # sign, so the extremes are at the corners; a total that may reach 0 gives no share
        corners = np.stack([(phi + a * r_phi) / (total + b * r_tot)[:, None] for a in (-1, 1) for b in (-1, 1)])
        corners[:, (total - r_tot) * (total + r_tot) <= 0, :] = np.nan
    lo_p, hi_p = np.quantile(phi, q[0], axis=0) - r_phi, np.quantile(phi, q[1], axis=0) + r_phi
    if np.all(np.isfinite(corners)):
        lo_s, hi_s = np.quantile(corners.min(axis=0), q[0], axis=0), np.quantile(corners.max(axis=0), q[1], axis=0)
    else:
        lo_s, hi_s = (np.full(len(groups), np.nan),) * 2
    return ShapleyBootstrap({g: (float(lo_p[i]), float(hi_p[i])) for i, g in enumerate(groups)},
                            {g: (float(lo_s[i]), float(hi_s[i])) for i, g in enumerate(groups)}, float(level))
