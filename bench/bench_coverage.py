"""Coverage of pqsimd's published intervals, by simulation: the plasmode resampling of real studies'
job ratios, and synthetic skewed, contaminated, heavy-tailed and heteroscedastic job effects.

    .venv/bin/python bench/bench_coverage.py [STUDY ...] [--reps 4000] [--seed 1] [--only quantized]

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

The quantized part (issue 27) simulates what the driver reads: per job, spin and rep a sample of k
calls whose true length is continuous (per-call time x job effect x sample noise), read by a clock
that steps in whole steps with a random phase, minus the same moment's null sample (the median of 3
quantized samples of k empty calls), per call. The step is 1%, 3% or 10% of the per-call time (the
lattice step, step / k); the truth is the population median of the job ratios of the same process
read by an exact clock. It reports the coverage of the order-statistic interval as printed before
(stuck on the lattice: zero width when every job median lands on one lattice point) and as
published now (widened by the lattice step, interval.resolution_halfwidth).

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
from pqsimd.stats.interval import order_level, order_rank, resolution_halfwidth  # noqa: E402
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


LATTICES = (0.0, 0.01, 0.03, 0.10)  # clock step / calls per sample, relative to the per-call time
NOISES = {"quiet (job sd 0.1%, sample sd 0.1%)": (0.001, 0.001),
          "typical (job sd 1%, sample sd 0.5%)": (0.01, 0.005),
          "skewed jobs (lognormal, sd ~1%, sample sd 0.5%)": (-0.01, 0.005)}


def read_samples(per_call: np.ndarray, lattice, noise: float, null_per_call: float,
                 rng: np.random.Generator) -> np.ndarray:
    """Per-call values as the driver reads them: a sample of k calls lasts k * per_call * exp(noise),
    read as a whole number of clock steps with a random phase, minus the median of 3 such readings
    of k empty calls, over k (per call the clock's step is the lattice step, step / k; k cancels).
    lattice 0: an exact clock."""
    true = per_call * np.exp(rng.normal(0.0, noise, per_call.shape))
    lattice = np.broadcast_to(np.asarray(lattice, dtype=float), true.shape)
    if not np.any(lattice > 0):
        return true - null_per_call
    steps = np.floor(rng.random(true.shape) + true / lattice)
    null = np.median(np.floor(rng.random((*true.shape, 3)) + (null_per_call / lattice)[..., None]), axis=-1)
    return (steps - null) * lattice


def job_log_ratios(reps: int, j: int, job_sd: float, noise: float, lattice: float, ratio: np.ndarray,
                   rng: np.random.Generator, spins: int = 10, r: int = 5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(job log ratios (reps, j), group medians of base and variant (reps,)) of simulated paired jobs:
    base 1 per call, variant 1/ratio, each job slowed by a factor both builds share plus a smaller
    build-specific one; the median over r reps per spin, then over spins per job. Each build's
    lattice step is `lattice` times its own per-call time (the driver sizes both in clock steps)."""
    def job_effect(shape):
        if job_sd < 0:  # skewed: lognormal job slowdowns, shifted to median 0
            return (rng.lognormal(0.0, 1.0, shape) - 1.0) * -job_sd
        return rng.normal(0.0, job_sd, shape)

    shared = job_effect((reps, j, 1, 1))
    medians = []
    for per_call in (np.ones((reps, 1, 1, 1)), 1.0 / ratio[:, None, None, None]):
        t = per_call * np.exp(shared + 0.3 * job_effect((reps, j, 1, 1))) * np.ones((1, 1, spins, r))
        # the op's time is no whole number of steps: the lattice is `lattice` of it to within +-20%
        v = read_samples(t, lattice * per_call * rng.uniform(0.8, 1.2, (reps, 1, 1, 1)), noise, 0.02, rng)
        medians.append(np.median(np.median(v, axis=3), axis=2))  # spin medians, then job medians
    base, var = medians
    with np.errstate(invalid="ignore", divide="ignore"):
        logs = np.where((base > 0) & (var > 0), np.log(base) - np.log(var), np.nan)
    return logs, np.median(base, axis=1), np.median(var, axis=1)


def quantized(reps: int, rng: np.random.Generator) -> pd.DataFrame:
    """Coverage of the sign interval against the unquantized truth, before (order statistics of
    lattice-bound job ratios) and as published (widened by the lattice step)."""
    rows = []
    for kind, (job_sd, noise) in NOISES.items():
        for j in (5, 10):
            ratio = rng.uniform(1.05, 3.0, reps)  # a different true speedup per simulated comparison
            # the truth: each comparison's population median job ratio read by an exact clock (many jobs)
            exact, _, _ = job_log_ratios(reps, 301, job_sd, noise, 0.0, ratio, rng, spins=4, r=3)
            truth = np.nanmedian(exact, axis=1)
            k = order_rank(j, GAMMA) or 1
            for lattice in LATTICES:
                logs, mb, mv = job_log_ratios(reps, j, job_sd, noise, lattice, ratio, rng)
                s = np.sort(logs, axis=1)
                lo, hi = s[:, k - 1], s[:, j - k]
                res = np.array([resolution_halfwidth(lattice / b, lattice / ratio_i / v) if lattice > 0 else 0.0
                                for b, v, ratio_i in zip(mb, mv, ratio)])  # as analyze: lattice / group median
                half = (lo - res / 2 <= truth) & (truth <= hi + res / 2)
                before = (lo <= truth) & (truth <= hi)
                now = (lo - res <= truth) & (truth <= hi + res)
                rows.append({"job effects": kind, "lattice step": f"{lattice:.0%}", "J": j,
                             "level": order_level(j, k),
                             "zero-width before": float(np.nanmean(hi - lo == 0)),
                             "coverage before": float(np.nanmean(before)),
                             "coverage published": float(np.nanmean(now)),
                             "coverage if widened by half": float(np.nanmean(half)),
                             "median width published": f"{np.nanmedian(np.expm1(hi + res - lo + res)):.2%}"})
    return pd.DataFrame(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("studies", nargs="*", type=Path)
    ap.add_argument("--reps", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", choices=["quantized"], default=None, help="one part of the study")
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    pd.set_option("display.width", 200)
    if a.only == "quantized":
        print("\n## quantized clock: coverage against the unquantized truth (issue 27)\n")
        print(md(quantized(a.reps, rng)))
        return
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
    print("\n## quantized clock: coverage against the unquantized truth (issue 27)\n")
    print(md(quantized(a.reps, rng)))


if __name__ == "__main__":
    main()
