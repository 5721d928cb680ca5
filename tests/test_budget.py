"""A time budget per (job, op): spins and reps chosen per op from a probe, written once to
sizing.json, kept by a resumed study, and part of the settings no run may change."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pyarrow.parquet as pq
import pytest

from pqsimd import store
from pqsimd.run.sizing import MIN_CLOCK_STEPS, choose, fit_budget
from pqsimd.studydir import StudyDir

from conftest import PQSIMD


def test_choose_fits_the_budget_between_floors_and_caps():
    # not binding: the caps
    assert choose(100.0, 0.0, 1e9, 200, 20, 10, 5, 1000) == (200, 20)
    # binding: S * R * cost within the budget, both shrunk
    s, r = choose(1e5, 0.0, 1e8, 200, 20, 3, 1, 1000)
    assert s * r * 1e5 <= 1e8 and 1 <= r < 20 and 3 <= s < 200
    # an op far over the budget: the floors, whatever it costs
    assert choose(1e10, 0.0, 1e8, 200, 20, 3, 1, 1000) == (3, 1)
    # the fixed cost of a spin (paired warm-ups) counts
    s, r = choose(1e3, 1e6, 1e8, 200, 20, 3, 1, 1000)
    assert s * (r * 1e3 + 1e6) <= 1e8
    # max_spins caps S even when the budget would allow more
    assert choose(1.0, 0.0, 1e12, 5000, 20, 3, 1, 1000)[0] == 1000


class _Study:
    design, spins, reps, min_spins, min_reps, max_spins = "paired", 200, 20, 3, 1, 1000


def test_the_batch_shrinks_only_where_the_budget_cannot_afford_the_step_aim():
    """Samples sized to 1,000 clock steps of 26 ticks (26,000 ticks): the floors (3 spins x 1 rep of
    two builds, 156,000 ticks) fit a budget of 1e6 ticks, nothing shrinks; in a budget of 52,000
    ticks they do not, so both batches shrink by the overrun (3x) and the op is budget-limited."""
    batch, sample = {"a": 100, "b": 40}, {"a": 26000.0, "b": 26000.0}
    spins, reps, rep_cost, fixed, limited = fit_budget(_Study(), dict(batch), dict(sample), 1e6, 0.0)
    assert not limited and spins * (reps * rep_cost + fixed) <= 1e6
    spins, reps, rep_cost, fixed, limited = fit_budget(_Study(), batch, sample, 52000.0, 0.0)
    assert limited and (spins, reps) == (3, 1)
    assert batch == {"a": 33, "b": 13}  # int(k / 3)
    assert sample == {"a": pytest.approx(26000 * 33 / 100), "b": pytest.approx(26000 * 13 / 40)}
    assert spins * (reps * rep_cost + fixed) <= 52000.0
    assert MIN_CLOCK_STEPS == 1000


ARGS = ["--preset", "quick", "--schemes", "ml-kem-512", "--variants", "refo0,avx2", "--ops", "ntt,kem_decaps,empty",
        "--jobs", "4", "--spins", "200", "--reps", "20", "--budget", "0.05", "--design", "separate"]


def test_budgeted_study_chooses_per_op_and_resumes_after_sigkill_with_the_same_choices(tmp_path):
    d = tmp_path / "b"
    args = [str(PQSIMD), "run", d, *ARGS]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and len(list((d / "raw").glob("*.parquet"))) < 2:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    sd = StudyDir(d)
    sizing = sd.sizing_json.read_text()
    choice = json.loads(sizing)["schemes"]["ml-kem-512"]["ops"]
    # each op between the floors and the caps, within the budget unless at the floors; the slow one
    # (refo0 decapsulation) is cut to the budget, and harder than the fast one (how much the fast one
    # keeps depends on the host: its samples span 2,000 clock steps, 26 ticks each on a Zen TSC)
    fast, slow = choice["ntt"], choice["kem_decaps"]
    for o in (fast, slow):
        assert 1 <= o["spins"] <= 200 and 1 <= o["reps"] <= 20
        assert o["expected_s"] <= 0.05 * 1.5 or (o["spins"], o["reps"]) == (1, 1)  # quick floors
    assert slow["spins"] * slow["reps"] < 200 * 20
    assert slow["spins"] * slow["reps"] <= fast["spins"] * fast["reps"]
    finished = {p.name: store.sha256_file(p) for p in sd.raw_files()}
    assert 2 <= len(finished) < 8
    r = subprocess.run(args, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    assert sd.sizing_json.read_text() == sizing  # chosen once, read back
    assert all(store.sha256_file(sd.raw_path(n[:-8])) == h for n, h in finished.items())
    for p in sd.raw_files():  # every job, before and after the kill, timed with the same choices
        t = pq.read_table(p)
        rec = json.loads(t.schema.metadata[store.JOB_METADATA_KEY])
        assert rec["sizing"]["kem_decaps"]["spins"] == slow["spins"]
        df = t.to_pandas()
        k = df[(df.op == "kem_decaps") & ~df.warmup]
        assert k.spin.nunique() == slow["spins"] and k.rep.nunique() == slow["reps"]


def test_a_hand_edited_budget_is_refused(tmp_path, cli):
    d = tmp_path / "e"
    r = cli("run", d, *ARGS[:-6], "--jobs", "1", "--budget", "0.02", "--design", "separate")
    assert r.returncode == 0, r.stderr
    toml = (d / "study.toml").read_text()
    (d / "study.toml").write_text(toml.replace("budget = 0.02", "budget = 0.5"))
    r = cli("run", d)
    assert r.returncode == 2 and "budget=0.02" in r.stderr and "budget=0.5" in r.stderr
    r = cli("run", d, "--budget", "1")
    assert r.returncode == 2 and "budget" in r.stderr
