"""Coverage and width of the Shapley attribution's intervals, by simulation.

    .venv/bin/python bench/bench_attribution.py [--reps 400] [--boot 1000] [--seed 1]

One simulated ablation: k kernel groups (2, 3 or 5: 3, 7 or 31 cells besides the all-C one), all
cells timed in the same J jobs (the paired design). A job's log ratio of cell S is
v(S) + the all-C build's job noise (shared by every cell of the job) + the cell's own job noise;
the noise is normal or t3 (heavy tails), its scale 1% per part; v(S) is log-additive in the groups
(factors 4, 2, 1.2, 1.1, 1.05) plus a 5% interaction of the first two. The truth is the Shapley value
of v (and its share of v(all)); each cell's estimate is the median of its J job log ratios, as in
comparisons.

Compared, at J = 3, 5, 6, 10, 20:
  bootstrap  what analyze prints from 5 jobs on: the job-level percentile bootstrap of the Shapley
             values at 95% (resample jobs, take every cell's median, recompute phi), widened to hold
             the estimate;
  box        what it printed before: the range of phi over the box of the cells' order-statistic
             intervals (each at 95%, or [min, max] when J cannot reach it), with the level it
             guarantees, 1 - the sum of the cells' misses (the `box level` column).
Columns: coverage of the Shapley values and of the shares (over groups and repetitions), the mean
width of the Shapley interval (log scale) and box width / bootstrap width. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from mdtable import md  # noqa: E402
from pqsimd.stats.shapley import Cell, box_level, linear_range, ratio_range, shapley_bootstrap, \
    shapley_weights  # noqa: E402
from pqsimd.stats.interval import Evidence  # noqa: E402

LEVEL = 0.95
FACTORS = (4.0, 2.0, 1.2, 1.1, 1.05)


def design(k: int) -> tuple[list[str], list[Cell], np.ndarray, dict]:
    groups = [f"g{i}" for i in range(k)]
    cells = [Cell(s) for r in range(1, k + 1) for s in itertools.combinations(groups, r)]
    truth = np.array([sum(np.log(FACTORS[i]) for i, g in enumerate(groups) if g in c)
                      + (np.log(1.05) if {"g0", "g1"} <= c else 0.0) for c in cells])
    return groups, cells, truth, shapley_weights(groups)


def noise(rng: np.random.Generator, kind: str, shape: tuple[int, ...]) -> np.ndarray:
    x = rng.standard_normal(shape) if kind == "normal" else rng.standard_t(3, shape)
    return 0.01 * x


def one(k: int, J: int, kind: str, reps: int, n_boot: int, rng: np.random.Generator) -> dict:
    groups, cells, truth, w = design(k)
    full = Cell(groups)
    tv = dict(zip(cells, truth)) | {Cell(): 0.0}
    phi_true = {g: sum(c * tv[s] for s, c in w[g].items()) for g in groups}
    share_true = {g: phi_true[g] / tv[full] for g in groups}
    hit = {"bootstrap": [0, 0], "box": [0, 0]}
    width = {"bootstrap": [], "box": []}
    box_lv = []
    for _ in range(reps):
        x = truth[None, :] + noise(rng, kind, (J, 1)) + noise(rng, kind, (J, len(cells)))
        logs = {c: x[:, i] for i, c in enumerate(cells)}
        pt = {c: float(np.median(v)) for c, v in logs.items()} | {Cell(): 0.0}
        ivs = {c: Evidence.sign(v).interval(1 - LEVEL) for c, v in logs.items()}
        lo = {c: iv.lo for c, iv in ivs.items()} | {Cell(): 0.0}
        hi = {c: iv.hi for c, iv in ivs.items()} | {Cell(): 0.0}
        lvl = {c: iv.level for c, iv in ivs.items()} | {Cell(): 1.0}
        box_lv.append(box_level({c: 1.0 for c in cells}, lvl))
        boot = shapley_bootstrap(logs, groups, LEVEL, n_boot, rng)
        for g in groups:
            phi = sum(c * pt[s] for s, c in w[g].items())
            share = phi / pt[full]
            b_lo, b_hi = min(boot.shapley[g][0], phi), max(boot.shapley[g][1], phi)
            s_lo, s_hi = min(boot.share[g][0], share), max(boot.share[g][1], share)
            x_lo, x_hi = linear_range(w[g], lo, hi)
            r_lo, r_hi = ratio_range(w[g], full, lo, hi)
            hit["bootstrap"][0] += b_lo <= phi_true[g] <= b_hi
            hit["bootstrap"][1] += s_lo <= share_true[g] <= s_hi
            hit["box"][0] += x_lo <= phi_true[g] <= x_hi
            hit["box"][1] += r_lo <= share_true[g] <= r_hi
            width["bootstrap"].append(b_hi - b_lo)
            width["box"].append(x_hi - x_lo)
    n = reps * k
    wb, wx = float(np.mean(width["bootstrap"])), float(np.mean(width["box"]))
    return {"groups": k, "J": J, "noise": kind,
            "bootstrap cover phi": hit["bootstrap"][0] / n, "bootstrap cover share": hit["bootstrap"][1] / n,
            "box cover phi": hit["box"][0] / n, "box cover share": hit["box"][1] / n,
            "box level": float(np.mean(box_lv)), "bootstrap width": wb, "box / bootstrap width": wx / wb}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=400)
    ap.add_argument("--boot", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    rows = [one(k, J, kind, a.reps, a.boot, rng) for k in (2, 3, 5) for J in (3, 5, 6, 10, 20)
            for kind in ("normal", "t3")]
    print(f"## Shapley intervals: job bootstrap at {LEVEL:.0%} vs the box (reps {a.reps}, B = {a.boot})\n")
    print(md(pd.DataFrame(rows)))


if __name__ == "__main__":
    main()
