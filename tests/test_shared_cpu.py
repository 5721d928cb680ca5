"""Jobs that shared their CPU with another program and were kept (`pqsimd run --shared-cpu keep`):
their job records (`cpu_share`, run/job.py) are read by analyze, every job is marked in jobs.csv,
groups and comparisons say how many such jobs they use, and each comparison that uses one is
recomputed without them (the same function as a regime's minority: compare.recompute_without)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from synthetic import make_synthetic_study

from pqsimd.analyze import analyze_study
from pqsimd.analyze.load import cpu_share_columns

FAST = {"n_boot": 200, "seed": 2}
SHARED = (3, 6)  # the jobs that shared their CPU


def share(shared: bool, fraction: float = 0.45, waited: float = 1.2) -> dict:
    return {"cpu_share": {"cpu_seconds": 2.0, "waited_seconds": waited, "waited_fraction": fraction,
                          "discarded_before": 0, "shared": shared},
            "cpu_claim": {"waited_seconds": 0.0, "holder": None}}


def record(job, scheme, j):
    return share(j in SHARED) if j in SHARED else share(False, 0.002, 0.004)


def slow_when_shared(rng, j, n, variant, op, shared=SHARED):
    """In the shared jobs the variant ran 50% slower (the other program took its CPU): their ratios
    are about 1.0 where the others' are 1.5."""
    return np.full(n, math.log(1.5) if j in shared and variant == "avx2" else 0.0)


def results(d):
    analyze_study(d)
    r = d / "results"
    return (pd.read_parquet(r / "comparisons.parquet"), pd.read_parquet(r / "groups.parquet"),
            pd.read_parquet(r / "jobs.parquet"), json.loads((r / "summary.json").read_text()))


def test_paired_study_marks_shared_jobs_and_gives_the_verdicts_without_them(tmp_path):
    d = make_synthetic_study(tmp_path / "p", variants=("ref", "avx2"), ops=("ntt", "invntt"), jobs=10, spins=30,
                             reps=3, design="paired", medians={"ref": 1500.0, "avx2": 1000.0}, state=slow_when_shared,
                             job_record=record, analysis=FAST, seed=3)
    c, g, jobs, s = results(d)
    ids = {f"paired.ml-kem-512.{j}" for j in SHARED}
    # jobs.csv: every timing job, with its share of the time waited
    assert set(jobs.loc[jobs["shared_cpu"], "job"]) == ids and (~jobs["shared_cpu"]).sum() == 8
    assert jobs.loc[jobs["shared_cpu"], "cpu_waited_fraction"].tolist() == [0.45, 0.45]
    assert jobs.loc[~jobs["shared_cpu"], "cpu_waited_fraction"].eq(0.002).all()
    assert (g["shared_cpu_jobs"] == 2).all() and (c["shared_cpu_jobs"] == 2).all()
    # with every job the interval spans the shared jobs' ~1.0 and the others' 1.5: no verdict; without
    # the two shared jobs, 8 jobs at 1.5: faster (6 would not reach the family's level: withheld)
    assert (c["verdict"] == "~").all() and (c["ci_low"] < 1.1).all()
    assert (c["without_shared_verdict"] == "faster").all() and (c["without_shared_jobs"] == 8).all()
    assert (c["without_shared_speedup"] - 1.5).abs().max() < 0.03 and (c["without_shared_ci_low"] > 1.4).all()
    assert c["without_shared_ci_level"].tolist() == pytest.approx([1 - 2 / 2 ** 8] * 2)
    rec = s["shared_cpu"]
    assert rec["jobs"] == 2 and rec["timing_jobs"] == 10 and rec["groups"] == 4 and rec["comparisons"] == 2
    assert rec["waited_fraction"] == {j: 0.45 for j in sorted(ids)}
    assert rec["without_shared"]["verdicts_changed"] == 2 and rec["without_shared"]["changes"] == {"~ -> faster": 2}
    line = next(w for w in s["warnings"] if w.startswith("shared CPU:"))
    assert "2 of 10 timing jobs" in line and "paired.ml-kem-512.3 (45%)" in line and "2 of 2 verdict(s) change" in line
    # and how far the estimates move: every verdict changes while each estimate stays within ±2% (the
    # shared jobs are 2 of 10: the median job ratio hardly moves), which the verdicts alone do not say
    moves = rec["without_shared"]["estimates"]
    ratio = (c["without_shared_speedup"] / c["speedup"]).to_numpy()
    assert moves["n"] == 2 and moves["within_threshold"] == 2 and moves["threshold"] == 0.02
    assert (moves["median"], moves["min"], moves["max"]) == pytest.approx((np.median(ratio), ratio.min(), ratio.max()))
    assert abs(moves["median"] - 1) < 0.02
    assert "the estimates move little: without / with median" in line and "2 of 2 within ±2%" in line


def test_quiet_study_has_no_shared_jobs_and_no_recomputed_rows(tmp_path):
    d = make_synthetic_study(tmp_path / "q", variants=("ref", "avx2"), ops=("ntt",), jobs=6, spins=20, reps=3,
                             design="paired", medians={"ref": 1500.0, "avx2": 1000.0},
                             job_record=lambda job, scheme, j: share(False, 0.01, 0.01), analysis=FAST, seed=1)
    c, g, jobs, s = results(d)
    assert not jobs["shared_cpu"].any() and (g["shared_cpu_jobs"] == 0).all() and (c["shared_cpu_jobs"] == 0).all()
    assert (c["without_shared_verdict"] == "").all() and c["without_shared_speedup"].isna().all()
    assert s["shared_cpu"] == {"jobs": 0, "timing_jobs": 6, "waited_fraction": {}}
    assert not any(w.startswith("shared CPU") for w in s["warnings"])


def test_separate_design_recomputes_the_job_level_test_without_them(tmp_path):
    """Separate design, 6 jobs a side: avx2's jobs 1 and 4 shared their CPU and ran 50% slower; without
    them the job-level test runs on 6 against 4 jobs (the pooled test below 5 a side, as for any row)."""
    def shared(job, scheme, j):
        return share(j in (1, 4) and job.startswith("avx2"))
    d = make_synthetic_study(tmp_path / "s", variants=("ref", "avx2"), ops=("ntt", "invntt", "basemul"), jobs=6,
                             spins=20, reps=3, design="separate", medians={"ref": 1500.0, "avx2": 1000.0},
                             state=lambda *a: slow_when_shared(*a, shared=(1, 4)), analysis=FAST, seed=4,
                             job_sigma=0.005, job_record=shared)
    c, g, jobs, s = results(d)
    assert (c["design"] == "separate").all() and (c["shared_cpu_jobs"] == 2).all()
    assert set(jobs.loc[jobs["shared_cpu"], "job"]) == {"avx2.ml-kem-512.1", "avx2.ml-kem-512.4"}
    assert s["shared_cpu"]["jobs"] == 2 and s["shared_cpu"]["timing_jobs"] == 12
    assert (g.loc[g["variant"] == "avx2", "shared_cpu_jobs"] == 2).all()
    assert (g.loc[g["variant"] == "ref", "shared_cpu_jobs"] == 0).all()
    assert (c["without_shared_jobs"] == 10).all()
    assert (c["without_shared_speedup"] - 1.5).abs().max() < 0.05
    assert (c["without_shared_speedup"] > c["speedup"]).all()


def test_cpu_share_of_a_record_before_the_shared_field():
    """A record without `shared` is judged by run/cpuclaim.py's rule: waited > 25% of its time and
    >= SHARED_MIN_SECONDS; a record with it says itself; none: not shared, fraction unknown."""
    old = {"cpu_seconds": 1.0, "waited_seconds": 0.5, "waited_fraction": 0.333}
    assert cpu_share_columns({"cpu_share": old}) == {"shared_cpu": True, "cpu_waited_fraction": 0.333}
    assert cpu_share_columns({"cpu_share": {**old, "waited_seconds": 0.005}})["shared_cpu"] is False
    assert cpu_share_columns({"cpu_share": {**old, "waited_fraction": 0.2}})["shared_cpu"] is False
    assert cpu_share_columns({"cpu_share": {**old, "shared": False}})["shared_cpu"] is False
    none = cpu_share_columns({"cpu_share": None})
    assert none["shared_cpu"] is False and math.isnan(none["cpu_waited_fraction"])
    assert cpu_share_columns({})["shared_cpu"] is False
