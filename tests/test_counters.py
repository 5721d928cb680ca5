"""Hardware counters: the real unavailable path here, parsing and ratios from recorded values."""

import math
import errno
import json
import subprocess

import numpy as np
import pytest

from pqsimd import counters
from pqsimd.run import job as job_mod

EVENTS = ["cycles", "instructions", "branch-misses", "l1d-misses"]


JOB = {"id": "ref.gcc.ml-kem-512.0", "scheme": "ml-kem-512", "index": 0}
BUILDS = [("ref.gcc.ml-kem", "ref", "gcc")]


def _run(driver, library, ops, spins, reps, warmup, batch, counters_list=None):
    spec = [f"design separate", "scheme ml-kem-512", f"variant {library}", "cpu -1"]
    if counters_list:
        spec.append(f"counters {counters_list}")
    spec += [f"op {op} {spins} {reps} {warmup} {batch}" for op in ops]
    return subprocess.run([str(driver.path), "run", "-"], input="\n".join(spec) + "\n", capture_output=True, text=True,
                          timeout=120)


def test_counters_requested_the_run_goes_on_and_says_why(builds, driver, tmp_path):
    """For real: with counters the driver either counts (one column per event) or records errno
    and reason in its calibration JSON, and times every sample either way."""
    r = _run(driver, builds["ref"].library, ["ntt", "empty"], 3, 2, 1, 4, ",".join(EVENTS))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    cal = json.loads(lines[0])
    c = cal["counters"]
    assert c["requested"] == EVENTS
    samples = lines[1:]
    assert len(samples) == 2 * (3 + 1) * 2
    st = counters.status(cal, paranoid=counters.read_paranoid())
    ok, err = counters.probe()
    assert ok == c["available"]  # the harness and doctor's probe agree on this machine
    if c["available"]:
        assert c["events"] == EVENTS and len(c["overhead"]) == 4
        assert all(len(s.split("\t")) == 8 + 4 for s in samples)
        assert st["available"] and st["events"] == EVENTS
    else:
        assert c["errno"] == err != 0 and c["error"] == errno.errorcode[err] and c["failed_event"] == "cycles"
        assert all(len(s.split("\t")) == 8 for s in samples)  # timing rows (with their null) unchanged
        assert not st["available"] and st["errno"] == err and "perf_event_open" in st["reason"]
        # the engine's own parser takes the output as is: the study proceeds
        tsv = tmp_path / "out.tsv"
        tsv.write_text(r.stdout)
        t, n = job_mod.parse_samples(tsv, JOB, BUILDS, cal)
        assert t.num_rows == n == len(samples)


def test_core_per_tsc_is_calibrated(driver):
    r = subprocess.run([str(driver.path), "calibrate"], capture_output=True, text=True, timeout=60)
    cal = json.loads(r.stdout)
    assert 0 < cal["core_per_tsc"] <= cal["core_per_tsc_best"] and math.isfinite(cal["core_per_tsc_best"])
    assert "counters" not in cal  # not requested, not reported


def test_unknown_event_is_a_usage_error(builds, driver):
    r = _run(driver, builds["ref"].library, ["ntt"], 1, 1, 0, "auto", "cycles,bogus")
    assert r.returncode == 2 and "unknown event" in r.stderr


def test_explanations_name_the_cause():
    assert "virtual PMU" in counters.explain(errno.ENOENT, 2, "kvm")
    t = counters.explain(errno.EACCES, 3)
    assert "perf_event_paranoid=3" in t and "PAPI" in t
    assert "perf_event_paranoid=4" in counters.explain(errno.EPERM, 4)
    assert counters.status({"overhead": 1.0}) == {"requested": [], "available": False, "reason": "not requested"}


def test_paranoid_reader(tmp_path):
    p = tmp_path / "perf_event_paranoid"
    p.write_text("2\n")
    assert counters.read_paranoid(p) == 2
    assert counters.read_paranoid(tmp_path / "missing") is None


# Recorded from a machine with a PMU (values per sample of batch 4, two reps, one NA), in the driver's columns.
RECORDED = [
    "ntt\t0\t0\t0\t0\t4\t23000\t52\t66000\t82900\t40\t12",
    "ntt\t0\t0\t1\t0\t4\t23100\t52\tNA\tNA\tNA\tNA",
    "empty\t0\t0\t0\t0\t64\t300\t296\t400\t990\t1\t0",
]


def test_counter_rows_and_ratios_from_recorded_values(tmp_path):
    """Each event becomes its own metric in the job's raw table; a multiplexed sample is dropped."""
    cal = {"overhead": 30.0, "call_overhead": 2.0, "counters": {"requested": EVENTS, "available": True,
           "events": EVENTS, "overhead": [200, 350, 0, 0]}}
    tsv = tmp_path / "job.tsv"
    tsv.write_text(json.dumps(cal) + "\n" + "\n".join(RECORDED) + "\n")
    table, n = job_mod.parse_samples(tsv, JOB, BUILDS, cal)
    df = table.to_pandas()
    assert n == 3 and (df.metric == "ticks").sum() == 3
    ticks = df[df.metric == "ticks"]
    assert ticks.per_call.tolist() == [(23000 - 52) / 4, (23100 - 52) / 4, (300 - 296) / 64]  # minus the null
    assert df.groupby("metric").size().to_dict() == {"ticks": 3, "cycles": 2, "retired_instructions": 2,
                                                     "branch_misses": 2, "l1d_misses": 2}
    cyc = df[df.metric == "cycles"]
    assert cyc.per_call.tolist() == [(66000 - 200) / 4, (400 - 200) / 64]  # not zero-filled
    assert cyc.ticks.isna().all() and (cyc.compiler == "gcc").all()
    bad = tmp_path / "bad.tsv"
    bad.write_text(json.dumps(cal) + "\nntt\t0\t0\t0\t0\t4\t23000\t1\n")
    from pqsimd.errors import PqsimdError

    with pytest.raises(PqsimdError, match="unreadable driver output"):
        job_mod.parse_samples(bad, JOB, BUILDS, cal)

    per_call = {"cycles": 16450.0, "instructions": 20637.5, "branches": 1000.0, "branch-misses": 10.0,
                "l1d-loads": 5000.0, "l1d-misses": 3.0}
    d = counters.derived(per_call)
    assert d["ipc"] == pytest.approx(20637.5 / 16450)
    assert d["branch_miss_rate"] == pytest.approx(0.01)
    assert d["l1d_miss_rate"] == pytest.approx(3 / 5000)
    assert d["branch_mpki"] == pytest.approx(1000 * 10 / 20637.5)
    assert "cache_miss_rate" not in d  # inputs not recorded
    arr = counters.derived({"instructions": np.array([10.0, 5.0]), "cycles": np.array([5.0, 0.0])})
    assert arr["ipc"][0] == 2.0 and np.isnan(arr["ipc"][1])
    assert counters.ticks_to_cycles(1000, 1.39) == pytest.approx(1390)


def test_events_are_validated():
    assert counters.check_events(["cycles", "instructions"]) == ["cycles", "instructions"]
    with pytest.raises(ValueError):
        counters.check_events(["cycles", "bogus"])


def test_doctor_lists_counter_and_energy_checks():
    from pqsimd import doctor

    names = [f.name for f in doctor.findings()]
    assert {"perf_event_paranoid", "hardware counters", "RAPL energy"} <= set(names)
    rows = {r[0]: r for r in counters.doctor_checks()}
    ok, err = counters.probe()
    hw = rows["hardware counters"]
    assert (hw[1] is True) == ok
    if not ok:
        assert errno.errorcode[err] in hw[2] and hw[3]  # says what and what to do


def test_counting_path_for_real_with_software_events(builds, driver, tmp_path):
    """Software events need no PMU: the open group, per-sample columns, calibration and the
    engine-side split all run for real here (a context switch or page fault per sample is rare)."""
    ev = ["page-faults", "context-switches"]
    r = _run(driver, builds["ref"].library, ["ntt", "empty"], 3, 2, 0, 4, ",".join(ev))
    if r.returncode == 0 and not json.loads(r.stdout.splitlines()[0])["counters"]["available"]:
        pytest.skip("this kernel refuses even software perf events")
    assert r.returncode == 0, r.stderr
    cal = json.loads(r.stdout.splitlines()[0])
    c = cal["counters"]
    assert c["available"] and c["events"] == ev and c["scope"] == "user" and len(c["overhead"]) == 2
    lines = r.stdout.splitlines()[1:]
    assert len(lines) == 2 * 3 * 2 and all(len(l.split("\t")) == 10 for l in lines)
    tsv = tmp_path / "out.tsv"
    tsv.write_text(r.stdout)
    table, n = job_mod.parse_samples(tsv, JOB, BUILDS, cal)
    df = table.to_pandas()
    assert n == 12 and set(df.metric) == {"ticks", "page_faults", "context_switches"}
    pf = df[df.metric == "page_faults"]
    assert len(pf) <= 12 and (pf.raw >= 0).all() and pf.raw.median() == 0  # steady state: no faults
    assert counters.status(cal)["available"]
