"""The clock's step from the readings samples are made of (issue 32).

A Zen TSC read fenced moves in steps of 26 ticks, while ~10% of unfenced increments see one update
as 1 + 25: the step must come from fenced readings, and analyze must check it against the lattice of
each job's own samples. Oracles: recorded real hosts (tests/fixtures/hosts, replayed through the
driver's own estimator and through analyze's), synthetic clocks whose lattice is known by
construction, and, on whatever host runs the test, the agreement of the calibration with the job's
own samples."""

from __future__ import annotations

import gzip
import json
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pqsimd.analyze import analyze_study
from pqsimd.stats.lattice import lattice_step

from synthetic import make_synthetic_study

HOSTS = Path(__file__).parent / "fixtures" / "hosts"
FILES = ("fenced_deltas", "busy_loop_samples", "raw_increments")


def host_readings(host: str) -> dict[str, np.ndarray]:
    return {f: np.array(gzip.open(HOSTS / host / f"{f}.txt.gz", "rt").read().split(), dtype=np.int64) for f in FILES}


def replay(driver, tmp_path, readings: dict[str, np.ndarray], repeat_share: float = 0.0, quantum: int = 0) -> dict:
    """The driver's step estimator (`driver step`) on recorded or synthetic readings."""
    paths = []
    for name in FILES:
        p = tmp_path / f"{name}.txt"
        p.write_text("\n".join(str(int(x)) for x in readings[name]) + "\n")
        paths.append(str(p))
    r = subprocess.run([str(driver.path), "step", *paths, str(repeat_share), str(quantum)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def synthetic_host(step: int, rng: np.random.Generator, split_updates: float = 0.0) -> dict[str, np.ndarray]:
    """A clock moving in `step` ticks: fenced deltas around 40-60 ticks, loop samples of many lengths,
    unfenced increments of one step, a share of them seen as 1 + (step - 1) as on the Zen hosts."""
    lattice = lambda x: step * np.maximum(np.round(x / step), 1).astype(np.int64)  # noqa: E731
    inc = np.full(20001, step, np.int64)
    if split_updates and step > 1:
        k = rng.random(inc.size) < split_updates
        inc[k] = np.where(rng.random(int(k.sum())) < 0.5, 1, step - 1)
    return {"fenced_deltas": lattice(rng.normal(50, 4, 20001)),
            "busy_loop_samples": lattice(rng.uniform(40, 3000, 20001)),
            "raw_increments": inc}


@pytest.mark.parametrize("host", ["zen5-kvm", "zen4-kvm"])
def test_recorded_zen_hosts_step_by_26_from_their_fenced_readings(driver, tmp_path, host):
    """Replayed through the driver: 26, from the fenced readings, although the unfenced increments
    alone say 1 (what the driver of 7a85cb7 reported on the Zen 5 host, calibrate.jsonl)."""
    r = host_readings(host)
    out = replay(driver, tmp_path, r)
    assert out["step"] == 26 and out["step_from"] == "fenced"
    assert out["step_unfenced"] == 1 and out["spread_on_lattice"] == 1.0
    assert (r["raw_increments"] % 26 != 0).mean() > 0.05  # the trap: unfenced reads see 1 + 25
    old = [json.loads(line) for line in (HOSTS / host / "calibrate.jsonl").read_text().splitlines()]
    if host == "zen5-kvm":
        assert {c["step"] for c in old} == {1}  # what it said before


@pytest.mark.parametrize("host", ["zen5-kvm", "zen4-kvm"])
def test_the_samples_of_a_recorded_zen_host_lie_on_a_lattice_of_26(host):
    """analyze's check on the same host's fenced samples: 26; on its unfenced increments alone
    nothing can be said (three values), never a false 1."""
    r = host_readings(host)
    assert lattice_step(r["busy_loop_samples"]) == 26
    assert lattice_step(np.concatenate([r["busy_loop_samples"], r["fenced_deltas"]])) == 26
    assert lattice_step(r["raw_increments"]) is None


@pytest.mark.parametrize("step", [1, 2, 26])
def test_synthetic_clocks_give_their_own_step_to_both_estimators(driver, tmp_path, step):
    rng = np.random.default_rng(step)
    r = synthetic_host(step, rng, split_updates=0.2)
    out = replay(driver, tmp_path, r)
    assert out["step"] == step and out["step_from"] == "fenced"
    assert lattice_step(r["busy_loop_samples"]) == step
    # a few readings off the lattice (a read straddling an update) do not turn it into 1
    noisy = r["busy_loop_samples"].copy()
    noisy[:100] += 1
    assert lattice_step(noisy) == step


def test_a_clock_slower_than_its_reads_whose_updates_share_no_divisor_steps_by_its_update(driver, tmp_path):
    """A scaled counter moving by 25 or 26: no lattice above 1 in the fenced readings, but reads
    repeat, so what a sample resolves is its typical update."""
    rng = np.random.default_rng(5)
    inc = rng.choice([25, 26], 20001, p=[0.3, 0.7])
    walk = np.cumsum(rng.choice([25, 26], 200000, p=[0.3, 0.7]))
    starts = rng.integers(0, walk.size - 200, 20001)
    fenced = walk[starts + 2] - walk[starts]
    loops = walk[starts + rng.integers(2, 150, starts.size)] - walk[starts]
    out = replay(driver, tmp_path, {"fenced_deltas": fenced, "busy_loop_samples": loops, "raw_increments": inc},
                 repeat_share=0.8)
    assert out["step"] == 26 and out["step_from"] == "unfenced"


def test_too_few_distinct_readings_say_nothing():
    assert lattice_step(np.array([52, 52, 78, 52])) is None  # could be a finer clock's coincidence
    assert lattice_step(np.zeros(10, np.int64)) is None
    assert lattice_step(np.arange(1, 200)) == 1  # a step of 2 would have shown: none


def test_analyze_takes_the_samples_lattice_where_the_calibration_disagrees(tmp_path):
    """Jobs calibrated at step 1 (as on the Zen 5 host before) whose samples all lie on 26: analyze
    uses 26 for their resolution, names them in one line, and says so in the summary's clock."""
    d = make_synthetic_study(tmp_path / "s", variants=("ref", "avx2"), ops=("ntt",), jobs=4, spins=30, reps=3,
                             medians={"ref": 4000.0, "avx2": 400.0}, granularity=26, design="paired")
    for f in (d / "raw").glob("*.parquet"):  # the calibration of the old driver
        import pyarrow.parquet as pq
        t = pq.read_table(f)
        meta = json.loads(t.schema.metadata[b"pqsimd.job"])
        meta["calibration"]["granularity"] = 1
        meta["calibration"]["step"] = 1
        pq.write_table(t.replace_schema_metadata({b"pqsimd.job": json.dumps(meta).encode()}), f)
    res = analyze_study(d)
    summary = json.loads((res / "summary.json").read_text())
    jobs = pd.read_parquet(res / "jobs.parquet")
    assert set(jobs["step"]) == {26.0} and set(jobs["step_calibrated"]) == {1.0} and set(jobs["step_data"]) == {26.0}
    lines = [w for w in summary["warnings"] if w.startswith("clock step:")]
    assert len(lines) == 1 and "4 job(s)" in lines[0] and "calibrated 1 but samples on a lattice of 26" in lines[0]
    assert summary["clock"]["clocks"] == {"tsc step 26 ticks": 4}
    assert summary["clock"]["steps"]["calibration_disagrees"] == 4
    g = pd.read_parquet(res / "groups.parquet").set_index("variant")
    assert g.loc["avx2", "resolution"] == pytest.approx(26.0)  # one call per sample: the whole step


def test_analyze_keeps_the_calibration_where_the_samples_agree(tmp_path):
    d = make_synthetic_study(tmp_path / "s", variants=("ref", "avx2"), ops=("ntt",), jobs=3, spins=30, reps=3,
                             granularity=2, design="paired")
    res = analyze_study(d)
    summary = json.loads((res / "summary.json").read_text())
    assert not [w for w in summary["warnings"] if w.startswith("clock step:")]
    assert summary["clock"]["steps"]["calibration_disagrees"] == 0
    assert summary["clock"]["clocks"] == {"tsc step 2 ticks": 3}


def test_a_reading_from_a_clock_that_went_backwards_ends_at_once(driver, tmp_path):
    """A difference near 2^64 (a clock that went backwards, wrapped) is no step's multiple: the
    search skips it instead of trying its divisors for hours (i * i overflowed: it never ended)."""
    rng = np.random.default_rng(7)
    r = synthetic_host(26, rng)
    wrapped = np.array([26 * ((2**64 - 1) // 26)] * 30000, dtype=np.uint64)  # the most frequent, on the lattice
    r["fenced_deltas"] = np.concatenate([wrapped, r["fenced_deltas"].astype(np.uint64)])
    out = replay(driver, tmp_path, r)  # within replay's 60 s limit
    assert out["step"] == 26


@pytest.mark.parametrize("word", ["-5", "12abc", "1e3"])
def test_a_reading_that_is_not_a_non_negative_integer_is_one_line(driver, tmp_path, word):
    paths = []
    for name in FILES:
        p = tmp_path / f"{name}.txt"
        p.write_text(f"26\n52\n{word}\n")
        paths.append(str(p))
    r = subprocess.run([str(driver.path), "step", *paths], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "not a list of non-negative integers" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
