"""Coverage of pqsimd's published intervals, by simulation: the plasmode resampling of real studies'
job ratios, and synthetic skewed, contaminated, heavy-tailed and heteroscedastic job effects.

    .venv/bin/python bench/bench_coverage.py [STUDY ...] [--reps 4000] [--seed 1]

Each STUDY is an analysed paired study (results/spins.parquet). For every comparison of it (ticks, a
baseline and a variant measured in the same jobs, not the self-check op), the J jobs' log ratios
(log job median of the baseline - of the variant) form a population; J' jobs (3, 5, 10) are drawn
from it with replacement, and the printed interval is checked against the population's value:
  sign (published, paired design): the order-statistic interval at 95%, or [min, max] with its own
       level when J' cannot reach 95%; truth: the population median (the middle of the middle pair).
  t    (what pqsimd printed before: a t interval of the mean log job ratio): truth, the population mean.
The synthetic part does the same on generated job ratios, and the separate design's Welch interval
on two independent groups of skewed job medians (truth: the difference of the population means of
the log job medians). The decomposition part checks the product of stage intervals (the total's
interval) against the product of the stages' population medians, for chains whose stages share
their jobs' disturbances.

Prints Markdown tables; nothing is asserted (tests/test_statistics.py asserts the guarantees).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from pqsimd.analyze.interval import order_level, order_rank  # noqa: E402
from mdtable import md  # noqa: E402

SIZES = (3, 5, 10)
GAMMA = 0.05


def job_ratio_sets(study: Path) -> list[np.ndarray]:
    """Per comparison of a paired study: its jobs' log ratios (every pair of builds of a scheme and op
    measured in the same jobs, ticks only, self-check ops left out)."""
    sp = pd.read_parquet(study / "results" / "spins.parquet")
    sp = sp[sp["metric"].astype(str) == "ticks"]
    import json

    summ = json.loads((study / "results" / "summary.json").read_text())
    checks = {f.get("self_check") for f in (summ.get("families") or {}).values()}
    sp = sp[~sp["op"].astype(str).isin(checks)]
    jm = sp.groupby(["scheme", "op", "variant", "compiler", "job"], observed=True)["value"].median().reset_index()
    jm = jm[jm["value"] > 0]
    piv = np.log(jm.pivot_table(index=["scheme", "op", "compiler", "job"], columns="variant", values="value",
                                observed=True))
    comps = pd.read_csv(study / "results" / "comparisons.csv")
    comps = comps[(comps["design"] == "paired") & (comps["metric"] == "ticks")]
    out = []
    for r in comps.itertuples(index=False):
        try:
            g = piv.loc[(r.scheme, r.op, r.compiler)]
        except KeyError:
            continue
        if r.baseline in g and r.variant in g:
            x = (g[r.baseline] - g[r.variant]).dropna().to_numpy()
            if x.size >= 3:
                out.append(x)
    return out


def sign_cover(samples: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    """Coverage of the published sign interval (rows: simulated comparisons) and its level."""
    n = samples.shape[1]
    k = order_rank(n, GAMMA) or 1
    s = np.sort(samples, axis=1)
    return float(((s[:, k - 1] <= truth) & (truth <= s[:, n - k])).mean()), order_level(n, k)


def t_cover(samples: np.ndarray, truth: np.ndarray) -> float:
    n = samples.shape[1]
    m, sd = samples.mean(axis=1), samples.std(axis=1, ddof=1)
    h = stats.t.ppf(1 - GAMMA / 2, n - 1) * sd / math.sqrt(n)
    return float(((m - h <= truth) & (truth <= m + h)).mean())


def population_median(x: np.ndarray) -> float:
    s = np.sort(x)
    return 0.5 * (s[(s.size - 1) // 2] + s[s.size // 2])


def plasmode(sets: list[np.ndarray], reps: int, rng: np.random.Generator) -> pd.DataFrame:
    rows = []
    for n in SIZES:
        per = max(1, reps // len(sets))
        cov_s, cov_t, lvl = [], [], None
        for x in sets:
            draw = x[rng.integers(0, x.size, (per, n))]
            c, lvl = sign_cover(draw, np.full(per, population_median(x)))
            cov_s.append(c)
            cov_t.append(t_cover(draw, np.full(per, x.mean())))
        rows.append({"J": n, "comparisons": len(sets), "sign level": lvl, "sign coverage": np.mean(cov_s),
                     "worst 5% of comparisons (sign)": np.quantile(cov_s, 0.05), "t coverage (before)": np.mean(cov_t)})
    return pd.DataFrame(rows)


def synthetic_draw(kind: str, rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    if kind == "normal":
        return rng.normal(0, 0.01, shape)
    if kind == "lognormal (skew ~6)":
        return rng.lognormal(0, 1, shape) * 0.01
    if kind == "t3":
        return rng.standard_t(3, shape) * 0.01
    if kind == "contaminated (20% disturbed +5..30%)":
        return rng.normal(0, 0.002, shape) + (rng.random(shape) < 0.2) * rng.uniform(0.05, 0.3, shape)
    if kind == "contaminated one-sided (10%)":
        return rng.normal(0, 0.002, shape) + (rng.random(shape) < 0.1) * rng.uniform(0.05, 0.3, shape)
    if kind == "heteroscedastic (job sd x logU(1/10, 10))":
        return rng.normal(0, 1, shape) * 0.003 * np.exp(rng.uniform(-math.log(10), math.log(10), shape))
    if kind == "quantized (70% tied)":
        return np.where(rng.random(shape) < 0.7, 0.0, rng.normal(0, 0.01, shape))
    raise ValueError(kind)


KINDS = ("normal", "lognormal (skew ~6)", "t3", "contaminated (20% disturbed +5..30%)", "contaminated one-sided (10%)",
         "heteroscedastic (job sd x logU(1/10, 10))", "quantized (70% tied)")


def synthetic(reps: int, rng: np.random.Generator) -> pd.DataFrame:
    rows = []
    for kind in KINDS:
        big = synthetic_draw(kind, rng, (400000, 1)).ravel()
        truth_med, truth_mean = float(np.median(big)), float(big.mean())
        for n in SIZES:
            draw = synthetic_draw(kind, rng, (reps, n))
            c, lvl = sign_cover(draw, np.full(reps, truth_med))
            rows.append({"job effects": kind, "J": n, "sign level": lvl, "sign coverage": c,
                         "t coverage (before)": t_cover(draw, np.full(reps, truth_mean))})
    return pd.DataFrame(rows)


def separate_welch(reps: int, rng: np.random.Generator) -> pd.DataFrame:
    """The separate design's per-op Welch interval (J >= 5 a side) on skewed job medians."""
    rows = []
    for kind in KINDS[:6]:
        big = synthetic_draw(kind, rng, (400000, 1)).ravel()
        mu = float(big.mean())
        for n in (5, 10):
            a = synthetic_draw(kind, rng, (reps, n)) + 0.3
            b = synthetic_draw(kind, rng, (reps, n))
            d = a.mean(1) - b.mean(1)
            va, vb = a.var(1, ddof=1) / n, b.var(1, ddof=1) / n
            se = np.sqrt(va + vb)
            df = (va + vb) ** 2 / (va**2 / (n - 1) + vb**2 / (n - 1))
            h = stats.t.ppf(1 - GAMMA / 2, df) * se
            truth = 0.3 + mu - mu
            rows.append({"job effects": kind, "J per side": n, "Welch coverage": float(((d - h <= truth) & (truth <= d + h)).mean())})
    return pd.DataFrame(rows)


def decomposition(reps: int, rng: np.random.Generator, sets: list[np.ndarray] | None) -> pd.DataFrame:
    """The total's interval (product of the three stage intervals) against the product of the stages'
    population medians; stages share each job's disturbance (a job that is off is off in every stage)."""
    rows = []
    for kind in KINDS:
        for n in (5, 10):
            z = synthetic_draw(kind, rng, (reps, n, 3))
            shared = synthetic_draw(kind, rng, (reps, n, 1))
            x = 0.5 * z + 0.5 * shared  # half of each stage's job effect is the job's own state
            big = 0.5 * synthetic_draw(kind, rng, (200000, 3)) + 0.5 * synthetic_draw(kind, rng, (200000, 1))
            truth = float(np.median(big, axis=0).sum())
            k = order_rank(n, GAMMA) or 1
            s = np.sort(x, axis=1)
            lo, hi = s[:, k - 1, :].sum(1), s[:, n - k, :].sum(1)
            rows.append({"job effects": kind, "J": n, "stage level": order_level(n, k),
                         "guaranteed (Bonferroni)": max(0.0, 1 - 3 * (1 - order_level(n, k))),
                         "total coverage": float(((lo <= truth) & (truth <= hi)).mean())})
    return pd.DataFrame(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("studies", nargs="*", type=Path)
    ap.add_argument("--reps", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    pd.set_option("display.width", 200)
    for s in a.studies:
        sets = job_ratio_sets(s)
        print(f"\n## plasmode: {s} ({len(sets)} paired comparisons)\n")
        print(md(plasmode(sets, a.reps * 50, rng)))
    print("\n## synthetic job ratios (paired design)\n")
    print(md(synthetic(a.reps, rng)))
    print("\n## separate design: Welch per op\n")
    print(md(separate_welch(a.reps, rng)))
    print("\n## decomposition: the total's interval (product of the stage intervals)\n")
    print(md(decomposition(a.reps, rng, None)))


if __name__ == "__main__":
    main()
