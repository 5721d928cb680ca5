#!/usr/bin/env python3
"""Benchmark of `pqsimd analyze` on a standard-size synthetic study, against the naive approach.

    .venv/bin/python bench/bench_analysis.py [--dir DIR] [--variants N] [--sample K] [--repeat R] [--json OUT]

* builds (once, reused) a synthetic study: 3 schemes × 4 variants × 22 ops, J=10, S=200, R=20
  (10.6 M raw samples, 264 groups, 330 comparisons; --variants 5 adds ref-avx2 → 462 comparisons);
* times analyze_study at B = 5000 (both bootstraps), wall and CPU, R times (median reported, with the
  load average: the machine is shared, and other users' work shows up in the wall time);
* times the naive approach on K comparisons and extrapolates to all of them:
  scipy.stats.bootstrap (two independent samples, ratio of medians, percentile, B = 5000) for the
  paper's CI, and a materialising numpy two-stage bootstrap (jobs, then S spins within each chosen
  job, B × N index matrix) for the hierarchical CI — per comparison, as a straightforward
  implementation would;
* checks that our CIs agree with the naive ones within Monte Carlo error: the MC SD of each CI
  endpoint is measured by re-running our bootstrap with 10 seeds; |ours − naive| must be within
  4·√2 MC SDs (plus one tick-resolution step, 0.1%, for the discrete integer-tick data).
"""

from __future__ import annotations

import argparse
import json
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
from pqsimd.analyze import bootstrap as bs  # noqa: E402
from pqsimd.analyze.groups import build_groups  # noqa: E402
from pqsimd.analyze.load import load_spins  # noqa: E402

OPS = ["gen_a", "poly_getnoise_eta1", "poly_getnoise_eta2", "ntt", "invntt", "basemul", "poly_tomsg",
       "poly_frommsg", "poly_compress", "poly_decompress", "polyvec_compress", "polyvec_decompress",
       "indcpa_keypair", "indcpa_enc", "indcpa_dec", "kem_keypair_derand", "kem_keypair",
       "kem_encaps_derand", "kem_encaps", "kem_decaps", "noise_x4", "empty"]
SCHEMES = ["ml-kem-512", "ml-kem-768", "ml-kem-1024"]
B = 5000


def medians(scheme: str, variant: str, op: str) -> float:
    k = {"ml-kem-512": 2, "ml-kem-768": 3, "ml-kem-1024": 4}[scheme]
    base = 400.0 * (1 + OPS.index(op)) * (k if op.startswith(("indcpa", "kem", "gen_a")) else 1)
    factor = {"refo0": 1.0, "refnv": 0.3, "ref": 0.25, "avx2": 0.02, "ref-avx2": 0.2}[variant]
    return base * factor


def build(directory: Path, variants: list[str]) -> None:
    marker = directory / ".bench-complete"
    if marker.exists() and marker.read_text() == ",".join(variants):
        return
    t = time.perf_counter()
    make_synthetic_study(directory, schemes=SCHEMES, variants=variants, ops=OPS, jobs=10, spins=200, reps=20,
                         medians=medians, job_sigma=0.01, seed=1, warmup=5, analysis={"n_boot": B, "seed": 7})
    marker.write_text(",".join(variants))
    print(f"built synthetic study in {time.perf_counter() - t:.1f} s: {directory}")


def scipy_ci(base: np.ndarray, var: np.ndarray, seed: int) -> tuple[float, float]:
    def ratio(b, v, axis=-1):
        return np.median(b, axis=axis) / np.median(v, axis=axis)

    res = stats.bootstrap((base, var), ratio, n_resamples=B, method="percentile", vectorized=True,
                          paired=False, random_state=np.random.default_rng(seed), batch=500)
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def materialised_two_stage(values: np.ndarray, job: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """B medians of explicit two-stage resamples (jobs, then S_j spins within each chosen job)."""
    jobs = [values[job == j] for j in range(job.max() + 1)]
    S = jobs[0].size
    J = len(jobs)
    mat = np.stack(jobs)  # equal S in the standard study
    out = np.empty(B)
    chunk = 500
    for s in range(0, B, chunk):
        chosen = rng.integers(0, J, (chunk, J))
        spins = rng.integers(0, S, (chunk, J, S))
        out[s:s + chunk] = np.median(mat[chosen[:, :, None], spins].reshape(chunk, J * S), axis=1)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "pqsimd-bench-analysis")
    ap.add_argument("--variants", type=int, default=4, choices=(4, 5))
    ap.add_argument("--sample", type=int, default=8, help="comparisons timed with the naive approach")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs of analyze_study (median reported)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    variants = ["refo0", "refnv", "ref", "avx2"] + (["ref-avx2"] if args.variants == 5 else [])
    directory = args.dir if args.variants == 4 else args.dir.with_name(args.dir.name + "-5v")
    build(directory, variants)

    walls, cpus, loads = [], [], []
    for _ in range(args.repeat):
        loads.append(os.getloadavg()[0])
        w0, c0 = time.perf_counter(), time.process_time()
        results = analyze_study(directory, n_boot=B, seed=7)
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    wall, cpu = float(np.median(walls)), float(np.median(cpus))
    summary = json.loads((results / "summary.json").read_text())
    comp = pd.read_parquet(results / "comparisons.parquet")
    n_cmp = len(comp)
    print(f"analyze_study: {n_cmp} comparisons, {summary['counts']['groups']} groups, B={B}, {args.repeat} runs: "
          f"wall median {wall:.2f} s (min {min(walls):.2f}, max {max(walls):.2f}), cpu median {cpu:.2f} s; "
          f"1-min load average before the runs {', '.join(f'{x:.1f}' for x in loads)} on {os.cpu_count()} CPUs; "
          f"last run's stages {summary['timing_s']}")

    # the naive approach on a sample of comparisons
    data = load_spins(directory)
    groups = build_groups(data.spins)
    rng = np.random.default_rng(0)
    sample = comp.iloc[rng.choice(n_cmp, size=min(args.sample, n_cmp), replace=False)]
    t_scipy = t_hier = 0.0
    checks = []
    for r in sample.itertuples(index=False):
        gb, gv = groups[(r.metric, r.scheme, r.op, r.baseline)], groups[(r.metric, r.scheme, r.op, r.variant)]
        t = time.perf_counter()
        naive = scipy_ci(gb.values, gv.values, seed=1)
        t_scipy += time.perf_counter() - t
        t = time.perf_counter()
        hb = materialised_two_stage(gb.values, gb.job, np.random.default_rng(2))
        hv = materialised_two_stage(gv.values, gv.job, np.random.default_rng(3))
        hier = bs.percentile_ci(hb / hv)
        t_hier += time.perf_counter() - t
        # Monte Carlo SD of our endpoints: our bootstraps with 10 other seeds
        ours_n, ours_h = [], []
        for s in range(10):
            nb = bs.naive_medians(gb.sample, B, bs.rng_for(100 + s, "b"))
            nv = bs.naive_medians(gv.sample, B, bs.rng_for(100 + s, "v"))
            ours_n.append(bs.percentile_ci(nb / nv))
            hb2 = bs.hierarchical_medians(gb.sample, B, bs.rng_for(200 + s, "b"))
            hv2 = bs.hierarchical_medians(gv.sample, B, bs.rng_for(200 + s, "v"))
            ours_h.append(bs.percentile_ci(hb2 / hv2))
        sd_n, sd_h = np.std(ours_n, axis=0, ddof=1), np.std(ours_h, axis=0, ddof=1)
        for label, ours, ref, sd in (("ci", (r.ci_low, r.ci_high), naive, sd_n),
                                     ("hci", (r.hci_low, r.hci_high), hier, sd_h)):
            for k in range(2):
                tol = 4 * np.sqrt(2) * sd[k] + 1e-3 * abs(ref[k])
                checks.append({"comparison": f"{r.scheme} {r.op} {r.baseline}->{r.variant}", "ci": label,
                               "end": ("low", "high")[k], "ours": ours[k], "naive": ref[k], "mc_sd": sd[k],
                               "ok": bool(abs(ours[k] - ref[k]) <= tol)})
    k = len(sample)
    naive_total = (t_scipy + t_hier) / k * n_cmp + summary["timing_s"]["load"] + summary["timing_s"]["groups"]
    df = pd.DataFrame(checks)
    agree = int(df["ok"].sum())
    print(f"naive approach, per comparison: scipy.stats.bootstrap {t_scipy / k:.2f} s + materialised "
          f"two-stage {t_hier / k:.2f} s; extrapolated to {n_cmp} comparisons (+ the same loading): "
          f"{naive_total:.0f} s")
    print(f"speedup of analyze_study over the naive approach: {naive_total / wall:.0f}x (wall)")
    print(f"CI agreement within Monte Carlo error: {agree}/{len(df)} endpoints")
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print(df.to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    out = {"comparisons": n_cmp, "groups": summary["counts"]["groups"], "B": B, "wall_s": round(wall, 2),
           "wall_runs_s": [round(w, 2) for w in walls], "cpu_s": round(cpu, 2), "load_before_runs": loads, "stages_s": summary["timing_s"], "naive_per_comparison_s":
           {"scipy_bootstrap": round(t_scipy / k, 3), "materialised_two_stage": round(t_hier / k, 3)},
           "naive_total_s": round(naive_total, 1), "speedup": round(naive_total / wall, 1),
           "ci_agreement": f"{agree}/{len(df)}"}
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    print(json.dumps(out))
    return 0 if agree == len(df) else 1


if __name__ == "__main__":
    sys.exit(main())
