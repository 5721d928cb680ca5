"""Co-residency with power (issue 33): interval widths and power of the paired/alone ratio, before
(alone jobs with layouts of their own, a pooled-variance t interval) and after (alone job r times paired
job r's copies, the median of the matched differences with a pooled-residual interval; analyze/coresidency.py), on a real
study with N matched alone jobs per build on every parameter set (`pqsimd run DIR --alone N
--alone-sets all`).

    .venv/bin/python bench/bench_coresidency_design.py studies/co5 [--before studies/std]

For n = 2, 3, 5 alone jobs per row (one pair per row has no residual to learn the spread from) (the first n of the study's N, and the paired jobs they match):
* width: the median half-width of the rows' intervals: before at the Bonferroni level over the rows (as
  analyze printed it), after at the family level as the comparisons' (FCR: 1 - max(R, 1) alpha / m), and
  both at 95% per row;
* power: every alone job value multiplied by 1/1.05 (a true paired/alone ratio of 1.05 added to the
  real data), the share of rows flagged (interval beyond the ±2% threshold);
* false flags: the share flagged with nothing added (true co-residency effects are possible: a flag
  here is a finding or a false flag, and the matched ratios' spread says which);
each with the before method on the same jobs (their values unmatched: ratio_interval, pooled variance).
--before: the same numbers for a study of the old standard design (one alone job per build, first set).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from pqsimd.stats.coresidency import job_states, matched_intervals, ratio_interval  # noqa: E402

ALPHA, THRESHOLD, EFFECT = 0.05, 0.02, 1.05


def job_values(study: Path) -> pd.DataFrame:
    """Per (scheme, op, variant, job): the job value (geometric mean of its copies' medians), with its
    design (paired | alone) and index."""
    from pqsimd.analyze.load import load_spins

    s = load_spins(study).spins  # the alone jobs' spins too (results/spins.parquet holds the paired ones only)
    s = s[(s["metric"] == "ticks") & (s["value"] > 0) & (s["op"] != "empty")]
    cm = s.groupby(["scheme", "op", "variant", "job", "layout"], observed=True)["value"].median().reset_index()
    cm["lv"] = np.log(cm["value"])
    jv = cm.groupby(["scheme", "op", "variant", "job"], observed=True)["lv"].mean().reset_index()
    jv["design"] = np.where(jv["job"].astype(str).str.startswith("alone."), "alone", "paired")
    jv["index"] = jv["job"].astype(str).str.rsplit(".", n=1).str[1].astype(int)
    return jv


def rows_of(jv: pd.DataFrame, n: int) -> list[tuple[tuple, np.ndarray, np.ndarray, np.ndarray]]:
    """Per row with alone jobs: (key, all paired log values, alone log values of indices < n, matched d)."""
    out = []
    for key, g in jv.groupby(["scheme", "op", "variant"], observed=True):
        a = g[(g["design"] == "alone") & (g["index"] < n)].set_index("index")["lv"]
        if not len(a):
            continue
        p = g[g["design"] == "paired"].set_index("index")["lv"]
        d = np.array([p[i] - a[i] for i in sorted(a.index) if i in p.index])
        out.append((key, p.to_numpy(), a.to_numpy(), d))
    return out


def evaluate(rows, shift: float, per_row: bool = False) -> dict:
    """Widths and flags of both methods with every alone value moved by -shift (log); per_row: at 95%
    each (no Bonferroni over the rows)."""
    m = len(rows)
    gamma = ALPHA if per_row else ALPHA / m
    before, after = [], []
    by_build: dict = {}
    for (scheme, op, variant), _, _, d in rows:
        by_build.setdefault((variant, scheme), {})[op] = dict(enumerate(d + shift))
    pol = job_states(by_build)
    ivs, rec = matched_intervals([np.array(list(pol[(k[2], k[0])][k[1]].values())) for k, _, _, _ in rows],
                                 ALPHA if per_row else None, [0.0] * m, alpha=ALPHA, threshold=THRESHOLD)
    for (_, p, a, d), iv in zip(rows, ivs):
        r, lo, hi, _ = ratio_interval(p, a - shift, gamma)
        before.append((lo, hi))
        after.append(iv[1:3])

    def summ(ivs):
        lo = np.array([x[0] for x in ivs], float)
        hi = np.array([x[1] for x in ivs], float)
        ok = np.isfinite(lo) & np.isfinite(hi)
        hw = np.sqrt(hi[ok] / lo[ok]) - 1
        flag = (lo[ok] > 1 + THRESHOLD) | (hi[ok] < 1 / (1 + THRESHOLD))
        return {"rows": int(ok.sum()), "median_halfwidth": float(np.median(hw)) if hw.size else math.nan,
                "share_within_2pct": float(np.mean(hw <= 0.02)) if hw.size else math.nan,
                "flagged": float(flag.mean()) if flag.size else math.nan}

    return {"before": summ(before), "after": summ(after), "level": 1 - gamma, "after_level": 1 - rec["gamma"]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("study", type=Path)
    ap.add_argument("--before", type=Path)
    a = ap.parse_args()
    jv = job_values(a.study)
    n_max = int(jv.loc[jv["design"] == "alone", "index"].max()) + 1
    print(f"{a.study}: {n_max} matched alone jobs per build and set; threshold ±{THRESHOLD:.0%}, "
          f"power for a true {EFFECT:.2f}× paired/alone\n")
    print("| alone jobs per row | rows | level | method | median half-width | rows within ±2% | "
          "power (5%) | flagged with nothing added |")
    print("|---|---|---|---|---|---|---|---|")
    for n, per_row in [(n, p) for n in sorted({2, 3, n_max} & set(range(2, n_max + 1))) for p in (False, True)]:
        rows = rows_of(jv, n)
        null, eff = evaluate(rows, 0.0, per_row), evaluate(rows, math.log(EFFECT), per_row)
        for meth in ("before", "after"):
            z, e = null[meth], eff[meth]
            lev = null["level"] if meth == "before" else null["after_level"]
            print(f"| {n} | {z['rows']} | {100 * lev:.2f}% | {meth} | ±{100 * z['median_halfwidth']:.1f}% | "
                  f"{z['share_within_2pct']:.0%} | {e['flagged']:.0%} | {z['flagged']:.1%} |")
    if a.before:
        jb = job_values(a.before)
        rows = rows_of(jb, 1)
        null, eff = evaluate(rows, 0.0), evaluate(rows, math.log(EFFECT))
        z, e = null["before"], eff["before"]
        z95 = evaluate(rows, 0.0, True)["before"]
        print(f"\n{a.before} (the old standard design: one alone job per build, own layouts, first set): {z['rows']} "
              f"rows at {100 * null['level']:.2f}%: median half-width ±{100 * z['median_halfwidth']:.1f}%, "
              f"{z['share_within_2pct']:.0%} within ±2%, power {e['flagged']:.0%} for 5%, "
              f"{z['flagged']:.1%} flagged with nothing added; at 95% per row ±{100 * z95['median_halfwidth']:.1f}%")
    # the matched differences' spread: what one alone job's value adds to the paired one
    rows = rows_of(jv, n_max)
    sd = [np.std(d, ddof=1) for _, _, _, d in rows if d.size >= 2]
    print(f"\nSD of the matched log differences per row: median {100 * np.median(sd):.2f}%, 90th percentile "
          f"{100 * np.quantile(sd, 0.9):.2f}%; SD of the unmatched paired job values per row: median "
          f"{100 * np.median([np.std(p, ddof=1) for _, p, _, _ in rows]):.2f}%")


if __name__ == "__main__":
    main()
