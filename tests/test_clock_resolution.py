"""The clock's step (issue 27): measured by the driver, not its read latency; rounded to a coarse
quantum on request; every interval widened by the per-call lattice step so none is narrower than the
clock resolves (oracles: brute force over the lattice's corners, the known unquantized truth of a
synthetic study, a real short study on a deliberately coarse clock); spin medians <= 0 kept."""

from __future__ import annotations

import itertools
import json
import math
import subprocess

import numpy as np
import pandas as pd
import pytest

from pqsimd.analyze import analyze_study
from pqsimd.stats.interval import Evidence, resolution_halfwidth, verdict_of
from pqsimd.report import fmt

from conftest import PQSIMD
from synthetic import make_synthetic_study

BAND = math.log1p(0.02)


def calibrate(driver, quantum: int = 0) -> dict:
    p = subprocess.run([str(driver.path), "calibrate", str(quantum)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_the_step_is_the_lattice_of_the_fenced_reads_not_their_latency(driver):
    """Every fenced reading the driver saw (back-to-back pairs, samples of many lengths: what samples
    are) is a whole number of steps, up to the rare odd one it tolerates; the read latency is a
    multiple of the step, not it; the unfenced increments are only a cross-check (on a Zen TSC they
    see one update of 26 as 1 + 25: tests/test_clock_step.py)."""
    cal = calibrate(driver)
    step = cal["step"]
    assert step >= 1 and cal["granularity"] == step and cal["step_from"] == "fenced"
    for kind in ("fenced", "spread"):
        deltas = cal["step_deltas"][kind]
        assert deltas, kind
        total = sum(c for _, c in deltas)
        assert sum(c for v, c in deltas if v % step == 0) >= 0.95 * total, (kind, step, deltas)
    assert cal["spread_on_lattice"] >= 0.99 and cal["spread_distinct"] >= 21  # enough to tell even a step of 2
    assert cal["overhead_min"] % step == 0 or cal["repeat_share"] > 0
    assert cal["step_unfenced"] >= 1 and 0 <= cal["repeat_share"] <= 1 and cal["timer_quantum"] == 0


@pytest.mark.parametrize("quantum", [26, 1000])
def test_a_quantum_rounds_every_read_and_is_the_step(driver, quantum):
    cal = calibrate(driver, quantum)
    assert cal["step"] == quantum and cal["timer_quantum"] == quantum
    for kind in ("fenced", "spread", "raw"):
        assert all(v % quantum == 0 for v, _ in cal["step_deltas"][kind])
    assert cal["overhead_min"] % quantum == 0


def test_the_lattice_halfwidth_is_the_worst_corner():
    """resolution_halfwidth = the largest |log ratio change| over the corners of both medians moving
    by their lattice steps (brute force)."""
    for rb, rv in itertools.product((0.0, 1e-4, 0.003, 0.05, 0.3, 0.9), repeat=2):
        corners = [abs(math.log((1 + sb * rb) / (1 + sv * rv))) for sb, sv in itertools.product((-1, 1), repeat=2)]
        assert resolution_halfwidth(rb, rv) == pytest.approx(max(corners), rel=1e-12, abs=1e-15)
    assert resolution_halfwidth(1.0, 0.1) == math.inf


def test_widened_intervals_give_the_verdict_their_decision_p_gives():
    """At any gamma, the verdict read off the widened interval is the decision p-value's wherever
    p <= gamma (and never a verdict where p > gamma), for sign and t evidence alike."""
    rng = np.random.default_rng(3)
    for _ in range(400):
        j = int(rng.integers(5, 13))
        res = float(rng.choice([0.0, 0.001, 0.01, 0.02, 0.05]))
        base = Evidence.sign(rng.normal(rng.choice([0.0, 0.03, -0.03, 0.1]), 0.01, j))
        t = Evidence.t(float(rng.normal(0.0, 0.05)), float(rng.uniform(0.002, 0.03)), float(rng.uniform(3, 30)))
        for ev0 in (base, t):
            ev = ev0.at_resolution(res)
            p, v = ev.decision_p(BAND)
            for gamma in (0.2, 0.05, 0.01):
                iv = ev.interval(gamma)
                plain = ev0.interval(gamma)
                assert iv.lo == pytest.approx(plain.lo - res) and iv.hi == pytest.approx(plain.hi + res)
                if not iv.reachable:
                    continue
                got = verdict_of(iv.lo, iv.hi, BAND)
                if p <= gamma:
                    assert got == v, (p, v, got, gamma, res)
                else:
                    assert got == "~", (p, v, got, gamma, res)


@pytest.mark.parametrize("design", ["paired", "separate"])
def test_every_interval_is_at_least_its_resolution_wide_and_covers_the_unquantized_truth(tmp_path, design):
    """Ops of 20 and 8.1 ticks per call on a clock read whole (batch 1, no noise to speak of): every
    job reads 20 and 8, so every job ratio is 2.5 and the interval was the point [2.5, 2.5] (paired:
    order statistics; separate: 'exact', no spread in any job), missing the true 20 / 8.1 = 2.469.
    Widened by the lattice steps it covers it, says it is resolution-limited, and no interval is
    narrower than the resolution; the groups too."""
    d = make_synthetic_study(tmp_path / "q", variants=("ref", "avx2"), ops=("ntt",), jobs=6, spins=20, reps=5,
                             medians={"ref": 20.0, "avx2": 8.1}, spin_sigma=1e-5, rep_sigma=1e-5, outlier_rate=0.0,
                             design=design, overhead=20.0, analysis={"n_boot": 200})
    res = analyze_study(d)
    c = pd.read_parquet(res / "comparisons.parquet").iloc[0]
    assert c["median_base"] == 20.0 and c["median_var"] == 8.0  # the lattice points
    assert c["speedup"] == pytest.approx(2.5)
    assert c["ci_low"] < 20.0 / 8.1 < c["ci_high"]
    assert c["resolution"] == pytest.approx(math.expm1(resolution_halfwidth(1 / 20, 1 / 8)))
    assert c["ci_high"] / c["ci_low"] - 1 >= c["resolution"]
    assert bool(c["resolution_limited"]) and "resolution-limited" in c["note"]
    g = pd.read_parquet(res / "groups.parquet").set_index("variant")
    assert g.loc["avx2", "resolution"] == 1.0 and g.loc["avx2", "resolution_rel"] == pytest.approx(1 / 8)
    for _, row in g.iterrows():
        assert row["median_ci_high"] - row["median_ci_low"] >= 2 * row["resolution"]
    clock = json.loads((res / "summary.json").read_text())["clock"]
    assert clock["comparisons_resolution_limited"] == 1 and clock["groups_over_1%"] == 2


def test_spin_medians_at_or_below_zero_are_kept_without_upward_bias(tmp_path):
    """An op of 0.6 ticks on a 1-tick clock reads 0 or 1 per call: some spin medians are 0. The group
    was dropped (comparison n/a); now its estimate is the median over jobs of the job ratios of all
    spins (an independent recomputation from spins.parquet), and the count is reported."""
    d = make_synthetic_study(tmp_path / "z", variants=("ref", "avx2"), ops=("ntt",), jobs=6, spins=30, reps=3,
                             medians={"ref": 40.0, "avx2": 0.6}, spin_sigma=0.2, rep_sigma=0.3, outlier_rate=0.0,
                             design="paired", overhead=20.0, seed=5, analysis={"n_boot": 200})
    res = analyze_study(d)
    sp = pd.read_parquet(res / "spins.parquet")
    sp = sp[sp["metric"].astype(str) == "ticks"]
    zeros = int((sp[sp["variant"].astype(str) == "avx2"]["value"] <= 0).sum())
    assert zeros > 0
    jm = sp.groupby(["variant", "job"], observed=True)["value"].median().unstack(0)
    assert (jm["avx2"] > 0).all()
    expect = float(np.exp(np.median(np.log(jm["ref"] / jm["avx2"]))))
    c = pd.read_parquet(res / "comparisons.parquet").iloc[0]
    assert c["verdict"] != "n/a" and c["nonpositive_spins"] == zeros
    assert c["speedup"] == pytest.approx(expect, rel=1e-9)
    dropped = sp[(sp["variant"].astype(str) == "avx2") & (sp["value"] > 0)].groupby("job", observed=True)["value"].median()
    assert c["speedup"] >= float(np.exp(np.median(np.log(jm["ref"] / dropped))))  # dropping them biased it down
    g = pd.read_parquet(res / "groups.parquet").set_index("variant")
    assert g.loc["avx2", "nonpositive_spins"] == zeros and g.loc["avx2", "positive"]


def test_no_nonzero_interval_prints_as_a_point_and_no_spread_as_zero():
    assert fmt.ci(2.4685, 2.4725) != "[2.47, 2.47]"
    lo, hi = fmt.ci(2.4685, 2.4725)[1:-1].split(", ")
    assert float(lo) < float(hi)
    assert fmt.ci(2.47, 2.47) == "[2.47, 2.47]"  # a true point (an exact ratio) stays one
    assert fmt.small_pct(0.00042) == "0.042%" and fmt.small_pct(0.025) == "2.5%" and fmt.small_pct(0) == "0.0%"


QUICK = ["--preset", "quick", "--schemes", "ml-kem-512", "--ops", "ntt,poly_tomsg,poly_decompress,empty",
         "--variants", "ref,avx2", "--jobs", "3", "--spins", "6", "--reps", "3"]


def test_a_real_study_on_a_coarse_clock_has_no_interval_narrower_than_its_resolution(tmp_path):
    """--timer-quantum 100000: every read rounded to 100,000 ticks (~50 µs). A sample of 1,000 such
    steps (0.1 s) does not fit the quick budget of 20 ms per op, so the sizing shrinks the batches and
    says so; every job records the quantum as its step, the manifest and show name it, and no printed
    interval is narrower than its resolution."""
    d = tmp_path / "coarse"
    r = subprocess.run([str(PQSIMD), "run", d, *QUICK, "--timer-quantum", "100000"], capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 0, r.stderr
    assert "cannot afford samples of 2,000 clock steps (the aim, for at least 1,000 in every job)" in " ".join((r.stdout + r.stderr).split())
    sizing = json.loads((d / "sizing.json").read_text())["schemes"]["ml-kem-512"]
    assert sizing["timer_step"] == 100000 and any(o["budget_limited"] for o in sizing["ops"].values())
    manifest = json.loads((d / "manifest.json").read_text())
    assert manifest["timer_quantum"] == 100000
    for rec in manifest["jobs"].values():
        assert rec["calibration"]["step"] == 100000 and rec["calibration"]["timer_quantum"] == 100000
    r = subprocess.run([str(PQSIMD), "analyze", d], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    every = pd.read_parquet(d / "results" / "comparisons.parquet")
    # a comparison is n/a only as below the clock's resolution: the sizing's batch under this machine's load can
    # leave a short op's job median at or under 0 after the null's subtraction; the others are compared
    na = every[every["verdict"] == "n/a"]
    assert len(every) == 3 and all("below timer resolution" in str(r) for r in na["reason"]), na["reason"].tolist()
    c = every[every["verdict"] != "n/a"]
    assert len(c) >= 1
    assert (c["resolution"] > 0).all()
    assert (c["ci_high"] > c["ci_low"]).all()  # no zero-width interval
    assert (c["ci_high"] / c["ci_low"] - 1 >= c["resolution"] - 1e-12).all()
    g = pd.read_parquet(d / "results" / "groups.parquet")
    g = g[g["op"] != "empty"]
    assert (g["median_ci_high"] - g["median_ci_low"] >= 2 * g["resolution"] - 1e-9).all()
    assert (g["resolution"] > 0).all()
    r = subprocess.run([str(PQSIMD), "show", d], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = " ".join(r.stdout.split())
    assert "--timer-quantum 100000" in out and "± 0.0%" not in out


def test_doctor_names_the_step_and_the_sample_length_it_needs(driver):
    from pqsimd.doctor import _clock_step, step_consequence

    line = step_consequence({"step": 26, "tsc_hz": 2.6e9, "timer": {"name": "tsc"}, "step_from": "fenced",
                             "step_unfenced": 1, "step_deltas": {"fenced": [[52, 900], [26, 90]]}})
    assert line == ("tsc steps by 26 ticks (fenced readings: back-to-back deltas 52, 26; unfenced increments alone "
                    "say 1): a sample must span ≥ 26,000 ticks ≈ 10 µs for 0.1% resolution; batches aim at 2,000 "
                    "steps (52,000 ticks)")
    older = step_consequence({"step": 2, "tsc_hz": 2.1e9, "timer": {"name": "tsc"},
                              "step_deltas": {"fenced": [[36, 900]]}})  # a calibration of an older driver
    assert older.startswith("tsc steps by 2 ticks (back-to-back deltas 36): a sample must span ≥ 2,000 ticks")
    (finding,) = _clock_step()
    step = calibrate(driver)["step"]
    assert f"steps by {step} tick" in finding.detail and f"≥ {1000 * step:,} ticks" in finding.detail


# Every other interval on a coarse lattice (issue 32): ops of 20 and 8.1 ticks per call read whole on a
# clock of one tick (batch 1, no noise to speak of), so every job reads 20 and 8 and every interval made
# from job values alone was the point. Each one is now widened by the same resolution_halfwidth.
LATTICE = dict(ops=("ntt",), jobs=6, spins=20, reps=5, spin_sigma=1e-5, rep_sigma=1e-5, outlier_rate=0.0,
               overhead=20.0, analysis={"n_boot": 200})


def _no_point_and_holds(df: pd.DataFrame, est: str, lo: str, hi: str) -> None:
    live = df[np.isfinite(df[lo].to_numpy(float))]
    assert len(live)
    assert (live[hi] > live[lo]).all(), live[[est, lo, hi]]  # no zero-width interval
    assert ((live[lo] <= live[est]) & (live[est] <= live[hi])).all(), live[[est, lo, hi]]


def test_coresidency_intervals_are_widened_by_the_lattice_step(tmp_path):
    """Paired 8.1 ticks, alone 3% slower (8.343): both read 8, the ratio 1.0 had [1.0, 1.0]; widened by
    both groups' lattice steps it covers the unquantized 8.1 / 8.343 and is at least that wide."""
    from pqsimd.stats.coresidency import ratio_interval

    d = make_synthetic_study(tmp_path / "co", variants=("ref", "avx2"), medians={"ref": 20.0, "avx2": 8.1},
                             design="paired", alone=2, alone_shift={"avx2": 0.03}, **LATTICE)
    res = analyze_study(d)
    co = pd.read_parquet(res / "coresidency.parquet").set_index("variant")
    _no_point_and_holds(co, "ratio", "ci_low", "ci_high")
    assert co.loc["avx2", "ratio"] == 1.0 and co.loc["avx2", "ci_low"] < 8.1 / 8.343 < co.loc["avx2", "ci_high"]
    assert co.loc["avx2", "resolution"] == pytest.approx(math.expm1(resolution_halfwidth(1 / 8, 1 / 8)))
    assert co.loc["ref", "resolution"] == pytest.approx(math.expm1(resolution_halfwidth(1 / 20, 1 / 20)))
    assert (co["ci_high"] / co["ci_low"] - 1 >= co["resolution"]).all()
    # the pooled-t interval itself is unchanged; only its ends move, by exactly res (log scale)
    lp, la = np.log([8.0, 8.2, 7.9, 8.1]), np.log([8.3, 8.4])
    r0, lo0, hi0, _ = ratio_interval(lp, la, 0.05)
    r1, lo1, hi1, _ = ratio_interval(lp, la, 0.05, 0.01)
    assert r1 == r0 and math.log(lo0 / lo1) == pytest.approx(0.01) and math.log(hi1 / hi0) == pytest.approx(0.01)
    assert math.isnan(ratio_interval(lp, la, 0.05, math.inf)[1])  # shorter than a step: no interval


def test_pqsimd_compare_intervals_are_widened_by_the_lattice_step(tmp_path):
    """The same op in two studies (8.1 and 8.3 ticks, jobs 3% apart: job medians of 7, 8 or 9): the
    Welch interval of B/A was as narrow as the jobs' spread; now it is at least the lattice's width."""
    from pqsimd.analyze.crossstudy import compare_studies

    dirs = []
    for name, med in (("a", 8.1), ("b", 8.3)):
        d = make_synthetic_study(tmp_path / name, variants=("ref", "avx2"), medians={"ref": 20.0, "avx2": med},
                                 design="paired", seed=len(dirs), **{**LATTICE, "jobs": 10}, job_sigma=0.03)
        analyze_study(d)
        dirs.append(d)
    df, _ = compare_studies(*dirs)
    _no_point_and_holds(df, "ratio", "ci_low", "ci_high")
    ga = pd.read_parquet(dirs[0] / "results" / "groups.parquet").set_index("variant")
    gb = pd.read_parquet(dirs[1] / "results" / "groups.parquet").set_index("variant")
    for v, row in df.set_index("variant").iterrows():
        res = resolution_halfwidth(ga.loc[v, "resolution_rel"], gb.loc[v, "resolution_rel"])
        assert res > 0 and math.log(row["ci_high"] / row["ci_low"]) >= 2 * res - 1e-12
