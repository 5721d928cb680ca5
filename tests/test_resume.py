"""A resumed study stays what it was: no budget stays no budget, a build that passes its gate later
is timed (its paired jobs run again, the old files kept), and the sizing is fixed once (restored
when sizing.json is deleted, refused when edited, and analyze never pools jobs of other sizes).
All on the SHAKE-256 fixture family, which builds and times in seconds."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pqsimd import store
from pqsimd.studydir import StudyDir

from conftest import one_line_error

FIXTURES = Path(__file__).parent / "fixtures" / "families"
ENV = {**os.environ, "PQSIMD_FAMILY_PATH": str(FIXTURES)}
SMALL = ["--schemes", "shake-256", "--preset", "quick", "--spins", "3", "--reps", "2"]


def text(r) -> str:
    return " ".join(r.stderr.split())


one_line = one_line_error


@pytest.mark.parametrize("where", ["command line", "study.toml"])
def test_no_budget_stays_no_budget_on_resume_and_in_a_slurm_task(tmp_path, cli, where):
    d = tmp_path / "s"
    args = [*SMALL, "--variants", "ref", "--jobs", "1"]
    if where == "command line":
        args += ["--budget", "0"]
    else:
        d.mkdir()
        (d / "study.toml").write_text("[study]\nbudget = 0\n")
    r = cli("run", d, *args, env=ENV)
    assert r.returncode == 0, r.stderr
    assert not (d / "sizing.json").exists()
    r = cli("run", d, env=ENV)  # the preset's budget (20 ms) must not come back
    assert r.returncode == 0, r.stderr
    assert "0 to run, 1 already finished" in text(r)
    r = cli("job", d, "paired.shake-256.0", env=ENV)  # what a SLURM task runs
    assert r.returncode == 0, r.stderr


def test_no_cap_stays_no_cap_when_the_study_grows(tmp_path, cli):
    """--max-call 0 (no cap) is written into study.toml: a later `run DIR --metric ...` does not bring back
    the preset's cap and refuse the study as changed."""
    d = tmp_path / "s"
    r = cli("run", d, *SMALL, "--variants", "ref", "--jobs", "1", "--max-call", "0", "--metric", "size", env=ENV)
    assert r.returncode == 0, r.stderr
    assert "max_call_s = 0" in (d / "study.toml").read_text()
    r = cli("run", d, "--metric", "size", env=ENV)
    assert r.returncode == 0, r.stderr


def flaky_compiler(tmp_path: Path) -> tuple[Path, Path]:
    """A compiler that fails on the variant marked -DPQSIMD_FLAKY while `marker` exists."""
    marker = tmp_path / "broken"
    marker.write_text("")
    cc = tmp_path / "flakycc"
    cc.write_text(f'#!/bin/sh\ncase " $* " in *" -DPQSIMD_FLAKY "*) [ -e "{marker}" ] && exit 1;; esac\nexec gcc "$@"\n')
    cc.chmod(0o755)
    return cc, marker


def test_a_build_that_passes_later_is_timed_and_the_old_jobs_are_kept(tmp_path, cli):
    cc, marker = flaky_compiler(tmp_path)
    d = tmp_path / "s"
    d.mkdir()
    (d / "study.toml").write_text('[study]\nvariants = ["ref", "flaky"]\n'
                                  '[variants.flaky]\nsources = "clean"\nflags = ["-O2", "-DPQSIMD_FLAKY"]\n')
    r = cli("run", d, *SMALL, "--jobs", "2", "--cc", f"fcc={cc}", env=ENV)
    assert r.returncode == 1 and "build failed" in text(r), r.stderr
    sd = StudyDir(d)
    first = {p.name: store.sha256_file(p) for p in sd.raw_files()}
    assert len(first) == 2 and all(store.read_job_record(p)["variants"] == ["ref"] for p in sd.raw_files())
    marker.unlink()  # the compiler is fixed
    r = cli("run", d, env=ENV)
    assert r.returncode == 0, r.stderr
    assert "2 to run, 0 already finished; 2 of them again" in text(r)
    for p in sd.raw_files():
        assert store.read_job_record(p)["variants"] == ["ref", "flaky"]
    kept = sorted(sd.superseded_dir.glob("*.parquet"))
    assert sorted(store.sha256_file(p) for p in kept) == sorted(first.values())  # nothing measured is lost
    r = cli("run", d, env=ENV)
    assert r.returncode == 0 and "0 to run, 2 already finished" in text(r), r.stderr
    r = cli("analyze", d, env=ENV)
    assert r.returncode == 0, r.stderr
    r = cli("show", d, env={**ENV, "COLUMNS": "300"})
    assert r.returncode == 0 and "no raw data" not in r.stdout, r.stdout


@pytest.fixture
def budgeted(tmp_path, cli):
    d = tmp_path / "b"
    r = cli("run", d, *SMALL, "--variants", "ref,avx2", "--jobs", "2", "--budget", "0.005", env=ENV)
    assert r.returncode == 0, r.stderr
    return d


def test_a_deleted_sizing_is_restored_not_probed_again(budgeted, cli):
    sd = StudyDir(budgeted)
    before = sd.sizing_json.read_text()
    sd.sizing_json.unlink()
    r = cli("run", budgeted, "--jobs", "3", env=ENV)
    assert r.returncode == 0, r.stderr
    assert "restored from" in text(r) and "probing" not in text(r)
    assert json.loads(sd.sizing_json.read_text()) == json.loads(before)
    assert json.loads(before)["schemes"]["shake-256"]["probe_time_limit"]["seconds"] >= 60  # recorded
    recs = [store.read_job_record(p) for p in sd.raw_files()]
    assert len(recs) == 3 and all(r["sizing"] == recs[0]["sizing"] for r in recs)
    assert cli("analyze", budgeted, env=ENV).returncode == 0


def test_an_edited_sizing_is_refused_and_never_pooled(budgeted, cli):
    sd = StudyDir(budgeted)
    sizing = json.loads(sd.sizing_json.read_text())
    op = sizing["schemes"]["shake-256"]["ops"]["shake_32"]
    op["spins"] += 7
    sd.sizing_json.write_text(json.dumps(sizing))
    one_line(cli("run", budgeted, "--jobs", "3", env=ENV), "sizing.json was edited", "shake_32", "restores it")
    r = cli("job", budgeted, "paired.shake-256.0", env=ENV)  # a SLURM task times with the plan's copy
    assert r.returncode == 0, r.stderr
    fixed = json.loads(sd.plan_json.read_text())["sizing"]["schemes"]["shake-256"]["ops"]
    assert store.read_job_record(sd.raw_path("paired.shake-256.0"))["sizing"] == fixed
    del sizing["schemes"]["shake-256"]["ops"]["shake_1k"]  # a broken shape is one line too
    sd.sizing_json.write_text(json.dumps(sizing))
    one_line(cli("run", budgeted, env=ENV), "op shake_1k of shake-256 is missing")
    # an adversary who edits the plan's copy too gets the job timed, and analyze refuses to pool it
    sizing["schemes"]["shake-256"]["ops"]["shake_1k"] = json.loads(sd.plan_json.read_text())["sizing"][
        "schemes"]["shake-256"]["ops"]["shake_1k"]
    plan = json.loads(sd.plan_json.read_text())
    plan["sizing"] = sizing
    sd.plan_json.write_text(json.dumps(plan))
    sd.sizing_json.write_text(json.dumps(sizing))
    r = cli("run", budgeted, "--jobs", "3", env=ENV)
    assert r.returncode == 0, r.stderr
    one_line(cli("analyze", budgeted, env=ENV), "timed shake_32 of", "different sizing", f"spins {op['spins'] - 7} vs "
             f"{op['spins']}")


def test_a_plan_without_its_settings_is_refused_not_unchecked(tmp_path, cli):
    d = tmp_path / "s"
    r = cli("run", d, *SMALL, "--variants", "ref", "--jobs", "1", "--no-run", env=ENV)
    assert r.returncode == 0, r.stderr
    plan = json.loads((d / "plan.json").read_text())
    del plan["settings"]
    (d / "plan.json").write_text(json.dumps(plan))
    one_line(cli("run", d, "--spins", "9", env=ENV), "plan.json has no `settings`", "restore")
