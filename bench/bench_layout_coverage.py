"""Coverage of a laid-out paired comparison's interval over jobs x layouts (issue 33), by a two-level
plasmode on real laid-out studies: before (the job value, the geometric mean of its copies, and the
order-statistic interval of the J job ratios) and after (the typical layout: the clustered sign
interval over the J x L copy pairs, stats/interval.py `csign`).

    .venv/bin/python bench/bench_layout_coverage.py [--zen5 COPIES.csv] [--study DIR ...]
        [--jobs 10,20,40] [--copies 2] [--reps 200] [--gamma 0.05] [--seed 1]

Populations. Per comparison (baseline b -> variant v of one set, op and compiler; ticks; the
self-check op left out) the real copies' log medians m[b, j, l] (job j, copy l) give two levels:
  - a process state per build and job, s[b, j] = the median over the set's *other* ops of
    (the job's value - the median job value of that op): what a job does to every op of a build;
  - the layout population of each build, lambda[b] = m[b, j, l] - s[b, j] over every (j, l): each copy
    with its job's state taken out (its layout, its op-specific job noise and its spins' error).
A simulated job draws one real job (its states s[b, j], s[v, j]: both builds' process together) and L
copies of each build from its layout population (with replacement). The truths:
  - typical layout (the estimand after): the median of s[b, j] - s[v, j] + lambda_b - lambda_v over
    a uniform job and two independent uniform copies (enumerated exactly);
  - GM over layouts (the issue's audit): mean lambda_b - mean lambda_v + the median over jobs of
    s[b, j] - s[v, j].
Printed levels: before, order_level(J, k) of the order-statistic interval at gamma; after, 1 - gamma.
Coverage is the share of simulated studies whose printed interval holds the truth; "worst 5%" is the
5th percentile over comparisons, "below" the share of comparisons whose coverage is below the printed
level by more than two Monte Carlo SEs. Layout-heavy: comparisons where either build's layout SD (MAD
of lambda, log scale) is above 5%. Nothing here is timed; the studies were (see BENCHMARKS.md).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from pqsimd.stats.interval import Evidence, order_level, order_rank  # noqa: E402
from mdtable import md  # noqa: E402

CHAIN = (("refo0", "refnv"), ("refnv", "ref"), ("ref", "avx2"), ("refo0", "ref"), ("refo0", "avx2"))


def copies_from_csv(path: Path) -> pd.DataFrame:
    """copies.csv of the Zen 5 study: scheme, job, variant, compiler, op, copy, copy_median_per_call."""
    c = pd.read_csv(path)
    return c.rename(columns={"copy_median_per_call": "value"})[["scheme", "op", "variant", "compiler", "job",
                                                               "copy", "value"]]


def copies_from_study(study: Path) -> pd.DataFrame:
    """Every laid-out copy's median per call from an analysed study's spins (ticks)."""
    sp = pd.read_parquet(study / "results" / "spins.parquet")
    sp = sp[(sp["metric"].astype(str) == "ticks") & (sp["layout"] >= 0)]
    for c in ("scheme", "op", "variant", "compiler", "job"):
        sp[c] = sp[c].astype(str)
    g = sp.groupby(["scheme", "op", "variant", "compiler", "job", "layout"], observed=True)["value"].median()
    return g.reset_index().rename(columns={"layout": "copy"})


def self_checks(study: Path | None) -> set[str]:
    if study is None:
        return {"empty"}
    summ = json.loads((study / "results" / "summary.json").read_text())
    return {f.get("self_check") for f in (summ.get("families") or {}).values()} | {"empty"}


def populations(copies: pd.DataFrame, skip: set[str], pairs=CHAIN):
    """Per comparison: (key, s_b, s_v, lambda_b, lambda_v)."""
    c = copies[~copies["op"].isin(skip) & (copies["value"] > 0)].copy()
    c["lm"] = np.log(c["value"])
    mats = {}
    for key, g in c.groupby(["scheme", "op", "variant", "compiler"], sort=False):
        w = g.pivot_table(index="job", columns="copy", values="lm")
        if w.isna().any().any() or w.shape[0] < 3:
            continue
        mats[key] = w.sort_index()
    states = {}
    for (scheme, op, variant, comp), w in mats.items():
        others = [x for k, x in mats.items() if k[0] == scheme and k[2] == variant and k[3] == comp and k[1] != op
                  and list(x.index) == list(w.index)]
        if others:
            dev = np.array([x.mean(axis=1).to_numpy() - np.median(x.mean(axis=1).to_numpy()) for x in others])
            states[(scheme, op, variant, comp)] = np.median(dev, axis=0)
        else:
            states[(scheme, op, variant, comp)] = np.zeros(w.shape[0])
    variants = {k[2] for k in mats}
    pair_list = [p for p in pairs if p[0] in variants and p[1] in variants] or \
        [(a, b) for a in sorted(variants) for b in sorted(variants) if a < b]
    for (scheme, op, variant, comp), wb in mats.items():
        for b, v in pair_list:
            if variant != b or (scheme, op, v, comp) not in mats:
                continue
            wv = mats[(scheme, op, v, comp)]
            if list(wb.index) != list(wv.index):
                continue
            sb, sv = states[(scheme, op, b, comp)], states[(scheme, op, v, comp)]
            lb = (wb.to_numpy() - sb[:, None]).ravel()
            lv = (wv.to_numpy() - sv[:, None]).ravel()
            yield (scheme, op, b, v, comp), sb, sv, lb, lv


def midmed(x: np.ndarray) -> float:
    s = np.sort(np.asarray(x).ravel())
    return 0.5 * (s[(s.size - 1) // 2] + s[s.size // 2])


def typical_truth(sb, sv, lb, lv) -> float:
    """The median of s_b - s_v + lambda_b - lambda_v over a uniform job and two uniform copies."""
    d = np.subtract.outer(lb, lv).ravel()
    allv = (sb - sv)[:, None] + d[None, :]
    return midmed(allv)


def mad_sd(x: np.ndarray) -> float:
    return 1.4826 * float(np.median(np.abs(x - np.median(x))))


def run(name: str, pops, sizes, copies_per_job, reps, gamma, rng) -> pd.DataFrame:
    pops = list(pops)
    rows = []
    for L in copies_per_job:
        for J in sizes:
            k = order_rank(J, gamma)
            before_level = order_level(J, k)
            per = []
            for key, sb, sv, lb, lv in pops:
                t_typ = typical_truth(sb, sv, lb, lv)
                t_gm = lb.mean() - lv.mean() + midmed(sb - sv)
                js = rng.integers(0, sb.size, (reps, J))
                B = lb[rng.integers(0, lb.size, (reps, J, L))] + sb[js][..., None]
                V = lv[rng.integers(0, lv.size, (reps, J, L))] + sv[js][..., None]
                x = np.sort(B.mean(axis=2) - V.mean(axis=2), axis=1)
                lo_b, hi_b = x[:, k - 1], x[:, J - k]
                after = np.empty(reps, bool)
                after_gm = np.empty(reps, bool)
                width_a = np.empty(reps)
                for r in range(reps):
                    iv = Evidence.csign(list(B[r] - V[r])).interval(gamma)
                    after[r] = iv.lo <= t_typ <= iv.hi
                    after_gm[r] = iv.lo <= t_gm <= iv.hi
                    width_a[r] = iv.hi - iv.lo
                per.append({"key": key, "heavy": max(mad_sd(lb), mad_sd(lv)) > 0.05,
                            "before_gm": np.mean((lo_b <= t_gm) & (t_gm <= hi_b)),
                            "before_typ": np.mean((lo_b <= t_typ) & (t_typ <= hi_b)),
                            "after_typ": after.mean(), "after_gm": after_gm.mean(),
                            "w_before": float(np.median(hi_b - lo_b)), "w_after": float(np.median(width_a))})
            p = pd.DataFrame(per)
            se = lambda lv: 2 * math.sqrt(lv * (1 - lv) / reps)  # noqa: E731
            for subset, d in (("all", p), ("layout-heavy", p[p["heavy"]])):
                if not len(d):
                    continue
                rows.append({
                    "data": name, "L": L, "J": J, "comparisons": f"{subset} ({len(d)})",
                    "before: level": f"{before_level:.2%}",
                    "before: cover GM": f"{d['before_gm'].mean():.1%}",
                    "before: worst 5% / min": f"{d['before_gm'].quantile(0.05):.0%} / {d['before_gm'].min():.0%}",
                    "before: cover typical": f"{d['before_typ'].mean():.1%}",
                    "after: level": f"{1 - gamma:.2%}",
                    "after: cover typical": f"{d['after_typ'].mean():.1%}",
                    "after: worst 5% / min": f"{d['after_typ'].quantile(0.05):.0%} / {d['after_typ'].min():.0%}",
                    "after: below level": f"{np.mean(d['after_typ'] < 1 - gamma - se(1 - gamma)):.1%}",
                    "after: cover GM": f"{d['after_gm'].mean():.1%}",
                    "median width before / after": f"{np.expm1(d['w_before'].median()):.2%} / "
                                                   f"{np.expm1(d['w_after'].median()):.2%}",
                })
            print(f"  {name} L={L} J={J} done", file=sys.stderr, flush=True)
    return pd.DataFrame(rows)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--zen5", type=Path)
    ap.add_argument("--study", type=Path, action="append", default=[])
    ap.add_argument("--jobs", default="10,20,40")
    ap.add_argument("--copies", default="2")
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--gamma", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    sizes = [int(x) for x in a.jobs.split(",")]
    copies_per_job = [int(x) for x in a.copies.split(",")]
    tables = []
    if a.zen5:
        tables.append(run(f"Zen 5 copies ({a.zen5.parent.name})", populations(copies_from_csv(a.zen5), {"empty"}),
                          sizes, copies_per_job, a.reps, a.gamma, rng))
    for s in a.study:
        tables.append(run(s.name, populations(copies_from_study(s), self_checks(s)), sizes, copies_per_job,
                          a.reps, a.gamma, rng))
    print(md(pd.concat(tables, ignore_index=True)))


if __name__ == "__main__":
    main()
