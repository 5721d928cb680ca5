"""Coverage of the co-residency interval (analyze/coresidency.py) and the layout component's bias.

    .venv/bin/python bench/bench_coresidency.py [--reps 4000] [--seed 1] [STUDY ...]

Co-residency: the paired/alone ratio's interval (pooled-variance t on log job values) at a nominal
95%, with a true ratio of 1, for J_paired = 10 and J_alone = 1 or 2: synthetic job effects (normal,
t3, lognormal, one job in ten disturbed by +20%), and a plasmode on real studies (each group's real
job values: one or two jobs held out as the "alone" jobs, the rest paired; every split). Layout
component: the estimate of analyze/layout.py against a known layout SD (0, 1%, 3%, 8%) with J = 10
jobs x 2 copies x 40 spins, within-spin noise 1%.
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
from pqsimd.stats.coresidency import ratio_interval  # noqa: E402
from pqsimd.analyze.groups import Group  # noqa: E402
from pqsimd.analyze.layout import layout_component  # noqa: E402

SHAPES = {
    "normal": lambda r, n: r.normal(0, 0.03, n),
    "t3": lambda r, n: 0.02 * r.standard_t(3, n),
    "lognormal": lambda r, n: r.lognormal(0, 0.5, n) * 0.03 - 0.03 * np.exp(0.125),
    "1 in 10 disturbed +20%": lambda r, n: r.normal(0, 0.02, n) + np.log(1.2) * (r.random(n) < 0.1),
}


def synthetic(reps: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for name, draw in SHAPES.items():
        for ja in (1, 2):
            cover = 0
            for _ in range(reps):
                x = draw(rng, 10 + ja)
                _, lo, hi, _ = ratio_interval(x[:10], x[10:], 0.05)
                cover += lo <= 1 <= hi
            out.append({"job effects": name, "J paired": 10, "J alone": ja, "coverage (95%)": f"{cover / reps:.3f}"})
    return out


def plasmode(study: Path) -> list[dict]:
    spins = pd.read_parquet(study / "results" / "spins.parquet")
    spins = spins[(spins["metric"].astype(str) == "ticks") & (spins["value"] > 0)]
    jv = spins.groupby(["scheme", "op", "variant", "job"], observed=True)["value"].median()
    out = []
    for ja in (1, 2):
        n = cover = 0
        for _, g in jv.groupby(level=[0, 1, 2], observed=True):
            x = np.log(g.to_numpy())
            if x.size < 4:
                continue
            for held in itertools.combinations(range(x.size), ja):
                mask = np.zeros(x.size, bool)
                mask[list(held)] = True
                _, lo, hi, _ = ratio_interval(x[~mask], x[mask], 0.05)
                n += 1
                cover += lo <= 1 <= hi
        out.append({"study": study.name, "J alone": ja, "splits": n, "coverage (95%)": f"{cover / max(n, 1):.3f}"})
    return out


def layout_bias(reps: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for truth in (0.0, 0.01, 0.03, 0.08):
        est = []
        for _ in range(reps):
            vals, job, lay, spin = [], [], [], []
            for j in range(10):
                je = rng.normal(0, 0.03)
                ce = rng.normal(0, truth, 2)
                for s in range(40):
                    vals.append(1000 * np.exp(je + ce[s % 2] + rng.normal(0, 0.01)))
                    job.append(j), lay.append(s % 2), spin.append(s)
            g = Group("ticks", "s", "op", "v", "cc", np.array(vals), np.array(job), np.array(spin),
                      [f"j{j}" for j in range(10)], 1, layout=np.array(lay, np.int16))
            est.append(layout_component(g)["layout_sd"])
        e = np.array(est)
        out.append({"true layout SD": f"{truth:.0%}", "median estimate": f"{100 * np.median(e):.2f}%",
                    "5-95% of estimates": f"{100 * np.quantile(e, 0.05):.2f}-{100 * np.quantile(e, 0.95):.2f}%"})
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("studies", nargs="*", type=Path)
    a = ap.parse_args()
    print("#### co-residency interval, synthetic (true ratio 1)\n")
    print(md(pd.DataFrame(synthetic(a.reps, a.seed))))
    for s in a.studies:
        print(f"\n#### co-residency interval, plasmode: {s}\n")
        print(md(pd.DataFrame(plasmode(s))))
    print("\n#### layout component (analyze/layout.py) against a known layout SD\n")
    print(md(pd.DataFrame(layout_bias(max(50, a.reps // 20), a.seed))))


if __name__ == "__main__":
    main()
