#!/usr/bin/env python3
"""Benchmark of `pqsimd analyze` on a standard-size synthetic study, against a straightforward
pandas + scipy implementation of the same published numbers.

    .venv/bin/python bench/bench_analysis.py [--dir DIR] [--variants N] [--design paired|separate] [--repeat R] [--json OUT]

* builds (once, reused) a synthetic study: 3 schemes x 4 variants x 22 ops, J=10, S=200, R=20
  (10.6 M raw samples, 264 groups, 315 comparisons; --variants 5 adds ref-avx2);
* times analyze_study, wall and CPU, R times (median reported, with the load average: the machine is
  shared, and other users' work shows up in the wall time);
* recomputes every comparison's published numbers the plain way, from the raw spin medians: pandas
  groupby for the job medians, each paired comparison's job ratios, their median, and the
  order-statistic interval with k from scipy.stats.binom at the family level analyze reported (the
  separate design: scipy.stats.ttest_ind's Welch interval at that level); times it and checks that
  every estimate and endpoint agrees with analyze's to 1e-9 (relative).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "src"))

from synthetic import make_synthetic_study  # noqa: E402

from pqsimd.analyze import analyze_study  # noqa: E402

OPS = ["gen_a", "poly_getnoise_eta1", "poly_getnoise_eta2", "ntt", "invntt", "basemul", "poly_tomsg",
       "poly_frommsg", "poly_compress", "poly_decompress", "polyvec_compress", "polyvec_decompress",
       "indcpa_keypair", "indcpa_enc", "indcpa_dec", "kem_keypair_derand", "kem_keypair",
       "kem_encaps_derand", "kem_encaps", "kem_decaps", "noise_x4", "empty"]
SCHEMES = ["ml-kem-512", "ml-kem-768", "ml-kem-1024"]
B = 2000  # job resamples of Cliff's delta interval (the only resampling left)


def medians(scheme: str, variant: str, op: str) -> float:
    k = {"ml-kem-512": 2, "ml-kem-768": 3, "ml-kem-1024": 4}[scheme]
    base = 400.0 * (1 + OPS.index(op)) * (k if op.startswith(("indcpa", "kem", "gen_a")) else 1)
    factor = {"refo0": 1.0, "refnv": 0.3, "ref": 0.25, "avx2": 0.02, "ref-avx2": 0.2}[variant]
    return base * factor


def build(directory: Path, variants: list[str], design: str) -> None:
    marker = directory / ".bench-complete"
    if marker.exists() and marker.read_text() == ",".join(variants):
        return
    t = time.perf_counter()
    make_synthetic_study(directory, schemes=SCHEMES, variants=variants, ops=OPS, jobs=10, spins=200, reps=20,
                         medians=medians, job_sigma=0.01, seed=1, warmup=5, analysis={"n_boot": B, "seed": 7},
                         design=design)
    marker.write_text(",".join(variants))
    print(f"built synthetic study in {time.perf_counter() - t:.1f} s: {directory}")


def plain(directory: Path, comp: pd.DataFrame, gamma: float) -> tuple[pd.DataFrame, float]:
    """Every comparison's speedup and interval recomputed with pandas and scipy (the oracle)."""
    t = time.perf_counter()
    sp = pd.read_parquet(directory / "results" / "spins.parquet")
    jm = sp.groupby(["metric", "scheme", "op", "variant", "compiler", "job"], observed=True)["value"].median()
    rows = []
    for r in comp.itertuples(index=False):
        b = jm.loc[(r.metric, r.scheme, r.op, r.baseline, r.baseline_compiler)]
        v = jm.loc[(r.metric, r.scheme, r.op, r.variant, r.compiler)]
        if r.design == "paired":
            x = np.sort(np.log(b / v.reindex(b.index)).to_numpy())
            n = x.size
            ks = [k for k in range(1, (n + 1) // 2 + 1) if 2 * stats.binom.cdf(k - 1, n, 0.5) <= gamma * (1 + 1e-12)]
            k = max(ks) if ks else 1
            lo, hi = x[k - 1], x[n - k]
            mid = 0.5 * (x[(n - 1) // 2] + x[n // 2])
        else:
            res = stats.ttest_ind(np.log(b.to_numpy()), np.log(v.to_numpy()), equal_var=False)
            ci = res.confidence_interval(1 - gamma)
            mid, lo, hi = float(np.log(b).mean() - np.log(v).mean()), ci.low, ci.high
        rows.append({"speedup": math.exp(mid), "ci_low": math.exp(lo), "ci_high": math.exp(hi)})
    return pd.DataFrame(rows), time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "pqsimd-bench-analysis")
    ap.add_argument("--variants", type=int, default=4, choices=(4, 5))
    ap.add_argument("--design", default="paired", choices=("paired", "separate"))
    ap.add_argument("--repeat", type=int, default=3, help="timed runs of analyze_study (median reported)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    variants = ["refo0", "refnv", "ref", "avx2"] + (["ref-avx2"] if args.variants == 5 else [])
    directory = args.dir.with_name(f"{args.dir.name}-{args.design}" + ("-5v" if args.variants == 5 else ""))
    build(directory, variants, args.design)

    walls, cpus, loads = [], [], []
    for _ in range(args.repeat):
        loads.append(os.getloadavg()[0])
        w0, c0 = time.perf_counter(), time.process_time()
        results = analyze_study(directory, seed=7)
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    wall, cpu = float(np.median(walls)), float(np.median(cpus))
    summary = json.loads((results / "summary.json").read_text())
    comp = pd.read_parquet(results / "comparisons.parquet")
    n_cmp = len(comp)
    print(f"analyze_study: {n_cmp} comparisons, {summary['counts']['groups']} groups, {args.repeat} runs: "
          f"wall median {wall:.2f} s (min {min(walls):.2f}, max {max(walls):.2f}), cpu median {cpu:.2f} s; "
          f"1-min load average before the runs {', '.join(f'{x:.1f}' for x in loads)} on {os.cpu_count()} CPUs; "
          f"last run's stages {summary['timing_s']}")

    live = comp[comp["method"].isin(["sign", "t"])].reset_index(drop=True)
    ref, t_plain = plain(directory, live, summary["family"]["gamma"])
    agree = {c: bool(np.allclose(live[c].to_numpy(), ref[c].to_numpy(), rtol=1e-9, atol=0)) for c in ref.columns}
    print(f"plain pandas + scipy recomputation of the {len(live)} comparisons with an interval: {t_plain:.2f} s "
          f"(after analyze's load); agreement to 1e-9: {agree}")
    out = {"comparisons": n_cmp, "groups": summary["counts"]["groups"], "design": args.design,
           "wall_s": round(wall, 2), "wall_runs_s": [round(w, 2) for w in walls], "cpu_s": round(cpu, 2),
           "load_before_runs": loads, "stages_s": summary["timing_s"], "plain_s": round(t_plain, 2),
           "agree": agree}
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    print(json.dumps(out))
    return 0 if all(agree.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
