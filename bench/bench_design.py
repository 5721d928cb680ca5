"""Paired vs separate design: the run-to-run spread of the ref -> avx2 speedup on this machine.

Runs R repetitions of a quick ML-KEM-512 study (ref vs avx2, seven ops) in each design,
interleaved (paired, separate, paired, ...), analyses each, and prints per op the R speedups of
each design, max/min and the coefficient of variation (population SD / mean) over the R.

    .venv/bin/python bench/bench_design.py [--reps 8] [--out DIR] [--jobs 2 --spins 50 --reps-per-spin 10]

The numbers go to BENCHMARKS.md with the machine they came from (`pqsimd doctor`, /proc/cpuinfo).
"""

from __future__ import annotations

import argparse
import json
import statistics as st
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

OPS = ["ntt", "invntt", "basemul", "poly_getnoise_eta1", "indcpa_dec", "kem_decaps", "gen_a"]
PQSIMD = Path(sys.executable).with_name("pqsimd")


def one(directory: Path, design: str, args) -> dict[str, float]:
    cmd = [str(PQSIMD), "run", str(directory), "--preset", "quick", "--schemes", "ml-kem-512", "--variants", "ref,avx2",
           "--ops", ",".join(OPS), "--design", design, "--jobs", str(args.jobs), "--spins", str(args.spins),
           "--reps", str(args.reps_per_spin), "--seed", str(args.seed)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{r.stderr[-2000:]}")
    r = subprocess.run([str(PQSIMD), "analyze", str(directory), "--bootstrap", "200"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"analyze {directory} failed:\n{r.stderr[-2000:]}")
    c = pd.read_csv(directory / "results" / "comparisons.csv")
    c = c[(c["stage"] == "hand_simd")]
    return dict(zip(c["op"], c["speedup"]))


def cv_ratio(paired: list[float], separate: list[float], seed: int) -> tuple[float, float, float]:
    """CV(paired) / CV(separate) and its 95% percentile bootstrap CI (scipy.stats.bootstrap,
    the two designs' repetitions resampled independently): how sure the comparison is with R reps."""
    import numpy as np
    from scipy import stats

    def cv(x, axis=-1):
        return np.std(x, axis=axis) / np.mean(x, axis=axis)

    def stat(p, s, axis=-1):
        return cv(p, axis) / cv(s, axis)

    p, s = np.asarray(paired), np.asarray(separate)
    res = stats.bootstrap((p, s), stat, n_resamples=5000, method="percentile", vectorized=True,
                          random_state=np.random.default_rng(seed))
    return float(stat(p, s)), float(res.confidence_interval.low), float(res.confidence_interval.high)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=8, help="repetitions of each design")
    ap.add_argument("--out", type=Path, default=Path("/tmp/pqsimd-bench-design"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--spins", type=int, default=50)
    ap.add_argument("--reps-per-spin", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    est: dict[str, dict[str, list[float]]] = {d: {op: [] for op in OPS} for d in ("paired", "separate")}
    t0 = time.monotonic()
    for i in range(args.reps):
        for design in ("paired", "separate") if i % 2 == 0 else ("separate", "paired"):
            d = args.out / f"{design}-{i}"
            if d.exists():
                subprocess.run(["rm", "-rf", str(d)], check=True)
            for op, s in one(d, design, args).items():
                est[design][op].append(s)
    print(f"{args.reps} repetitions per design, quick studies of {args.jobs} x {args.spins} x {args.reps_per_spin}, "
          f"{time.monotonic() - t0:.0f} s")
    print("| op | design | speedups ref→avx2 | max/min | CV | CV paired / separate [95% CI] |")
    print("|---|---|---|---|---|---|")
    rows = []
    for op in OPS:
        ratio = cv_ratio(est["paired"][op], est["separate"][op], args.seed)
        for design in ("separate", "paired"):
            e = est[design][op]
            cv = st.pstdev(e) / st.mean(e)
            rows.append({"op": op, "design": design, "estimates": e, "cv": cv, "cv_ratio": ratio})
            last = f"{ratio[0]:.2f} [{ratio[1]:.2f}, {ratio[2]:.2f}]" if design == "paired" else ""
            print(f"| {op} | {design} | {' '.join(f'{x:.2f}' for x in e)} | {max(e) / min(e):.3f} | {100 * cv:.1f}% "
                  f"| {last} |")
    (args.out / "bench_design.json").write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
