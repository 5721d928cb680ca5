"""Engine benchmark: how long a study takes here, and the harness's own checks on its data.

    python bench/bench_engine.py DIR

Reads a finished study (e.g. one made by `pqsimd run DIR --preset standard`) and prints
- wall time of the jobs (first start to last finish) and the sum of job durations,
- the `empty` op's per-call median per variant (the self-check: 0 ± 2 ticks),
- per parameter set, the avx2/ref ratio of per-call medians for its family's per-polynomial
  kernels (the family's `cross_parameter` view; for ML-KEM the engine's acceptance: each below 1/20),
- TSC read overhead, granularity and frequency seen by the jobs.
Timings are measured, never asserted: numbers go to BENCHMARKS.md.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from pqsimd import catalog


def main(directory: Path) -> None:
    manifest = json.loads((directory / "manifest.json").read_text())
    jobs = manifest["jobs"]
    starts = [datetime.fromisoformat(j["started"]) for j in jobs.values()]
    ends = [datetime.fromisoformat(j["finished"]) for j in jobs.values()]
    busy = sum((e - s).total_seconds() for s, e in zip(starts, ends))
    print(f"jobs: {len(jobs)}; wall {(max(ends) - min(starts)).total_seconds():.0f} s; sum of job durations {busy:.0f} s")
    cal = pd.DataFrame([j["calibration"] for j in jobs.values()])
    print(f"TSC: overhead median {cal.overhead.median():.0f} ticks (range {cal.overhead.min():.0f}-{cal.overhead.max():.0f}), "
          f"granularity {cal.granularity.min()}-{cal.granularity.max()}, {cal.tsc_hz.median() / 1e9:.3f} GHz, "
          f"loop cost {cal.call_overhead.median():.2f} ticks/call")

    df = pd.concat(pq.read_table(p, columns=["scheme", "variant", "op", "job", "spin", "per_call", "warmup"]).to_pandas()
                   for p in sorted((directory / "raw").glob("*.parquet")))
    df = df[~df.warmup]
    spin = df.groupby(["scheme", "variant", "op", "job", "spin"]).per_call.median().reset_index()
    med = spin.groupby(["scheme", "variant", "op"]).per_call.median()
    checks = {f.self_check for f in catalog.families().values() if f.self_check}
    for check in sorted(checks & set(spin.op)):
        empty = med.xs(check, level="op")
        print(f"{check} op, per-call median (ticks):", ", ".join(f"{s}/{v} {x:.2f}" for (s, v), x in empty.items()))
    for scheme in sorted(set(spin.scheme)):
        row = []
        for op in catalog.family_of(scheme).views.get("cross_parameter", []):
            try:
                ratio = med[(scheme, "avx2", op)] / med[(scheme, "ref", op)]
                row.append(f"{op} {ratio:.4f} (1/{1 / ratio:.1f})")
            except KeyError:
                pass
        print(f"{scheme}: avx2/ref per-call medians: " + ", ".join(row))


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "study"))
