"""A study grows: `pqsimd run DIR --metric M` on a measured study adds M's jobs and leaves every
measured file as it was; only what would change measured numbers is refused, by name."""

import json

import pytest

from pqsimd.studydir import StudyDir

from conftest import one_line_error, require_tool
from pqsimd.run import callgrind

if callgrind.valgrind_path() is None:
    require_tool("valgrind is not installed (make test installs it as root: tools/test-deps.sh)")

SMALL = ["--preset", "quick", "--schemes", "ml-kem-512", "--variants", "ref,avx2", "--ops", "ntt,empty", "--jobs", "2",
         "--spins", "3", "--reps", "2"]


def _files(d):
    return {p.name: p.stat().st_mtime_ns for p in StudyDir(d).raw_files()}


@pytest.fixture
def timed(tmp_path, cli):
    d = tmp_path / "s"
    r = cli("run", d, *SMALL)
    assert r.returncode == 0, r.stderr
    return d


def test_a_metric_added_to_a_measured_study_keeps_what_was_measured(timed, cli):
    sd = StudyDir(timed)
    before, plan = _files(timed), sd.read_plan()
    r = cli("run", timed, "--metric", "instructions")
    assert r.returncode == 0, r.stderr
    after = _files(timed)
    assert {k: v for k, v in after.items() if k in before} == before  # no timed file touched
    assert sorted(set(after) - set(before)) == ["avx2.gcc.ml-kem-512.instructions.parquet",
                                                "ref.gcc.ml-kem-512.instructions.parquet"]
    assert sd.read_plan()["settings"] == plan["settings"]  # what the timing jobs measured stays fixed
    assert _study_metrics(sd) == ["ticks", "instructions"]
    # the study goes on as one: more metrics, more jobs, and an analysis that reads all of it
    r = cli("run", timed, "--metric", "mix", "--jobs", "3")
    assert r.returncode == 0, r.stderr
    assert _study_metrics(sd) == ["ticks", "instructions", "mix"]
    assert {k: v for k, v in _files(timed).items() if k in before} == before
    r = cli("analyze", timed)
    assert r.returncode == 0, r.stderr
    summary = json.loads((sd.results_dir / "summary.json").read_text())
    assert {"ticks", "instructions"} <= set(summary["units"]) and (sd.results_dir / "mix.csv").is_file()


def test_the_report_of_a_grown_study_shows_what_was_added(timed, cli):
    sd = StudyDir(timed)
    r = cli("analyze", timed, "--bootstrap", "300")
    assert r.returncode == 0, r.stderr
    assert not (sd.results_dir / "mix.csv").exists()
    r = cli("run", timed, "--metric", "mix")
    assert r.returncode == 0, r.stderr
    r = cli("report", timed)
    assert r.returncode == 0, r.stderr
    assert "2 raw files (avx2.gcc.ml-kem-512.mix.parquet, ...) changed since results/ was analysed (new, run again or gone): analysing again first" in r.stderr
    summary = json.loads((sd.results_dir / "summary.json").read_text())
    assert (sd.results_dir / "mix.csv").is_file() and summary["settings"]["n_boot"] == 300  # the last analysis's settings
    assert "instruction mix by class" in (sd.report_dir / "index.html").read_text().lower()
    r = cli("report", timed)  # results now as new as the measurements: not analysed again
    assert r.returncode == 0 and "analysing again" not in r.stderr


def _study_metrics(sd):
    import tomllib

    return tomllib.loads(sd.study_toml.read_text())["study"]["metrics"]


def test_a_metric_inside_the_timing_jobs_is_refused_once_they_are_measured(timed, cli):
    err = one_line_error(cli("run", timed, "--metric", "counters"), "--metric counters is measured inside the timing jobs",
                         "2 of them were measured without it", "new directory", "can be added to this study: instructions")
    assert "mix" in err and "sim" in err
    assert _study_metrics(StudyDir(timed)) == ["ticks"]  # nothing was written


def test_time_added_to_a_counted_study_is_planned_anew(tmp_path, cli):
    d = tmp_path / "c"
    r = cli("run", d, *SMALL, "--metric", "instructions")
    assert r.returncode == 0, r.stderr
    sd = StudyDir(d)
    assert sd.read_plan()["settings"]["metrics"] == ["instructions"]
    r = cli("run", d, "--metric", "ticks")  # nothing was timed yet: the timing jobs are planned with ticks
    assert r.returncode == 0, r.stderr
    assert sd.read_plan()["settings"]["metrics"] == ["instructions", "ticks"]
    assert any(p.name.startswith("paired.") for p in sd.raw_files())
    r = cli("analyze", d)
    assert r.returncode == 0, r.stderr


def test_dropping_a_measured_metric_is_refused(timed, cli):
    sd = StudyDir(timed)
    text = sd.study_toml.read_text()
    sd.study_toml.write_text(text.replace('metrics = [\n    "ticks",\n]', 'metrics = [\n    "instructions",\n]'))
    assert sd.study_toml.read_text() != text, "the test's edit must change the stored metrics"
    one_line_error(cli("run", timed), "planned with metrics=['ticks']", "new directory")


def test_the_presets_counts_are_left_out_where_valgrind_is_missing(tmp_path, cli):
    """The standard preset counts instructions and the mix; a machine without a working valgrind
    gets a timed study and one line per left-out metric naming the command that adds it later. A
    metric named on the command line is kept (its runner then fails, saying what is missing)."""
    import os

    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "valgrind").write_text("#!/bin/sh\nexit 1\n")  # found on PATH, but no version: not usable
    (fake / "valgrind").chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"}
    small = ["--schemes", "ml-kem-512", "--variants", "ref", "--ops", "empty", "--layout", "fixed", "--no-run"]
    r = cli("run", tmp_path / "p", "--preset", "standard", *small, env=env)
    assert r.returncode == 0, r.stderr
    lines = [l for l in r.stderr.splitlines() if "not counted" in l]
    assert len(lines) == 2 and "--metric instructions (the preset's)" in lines[0] and "--metric mix" in lines[1]
    assert f"pqsimd run {tmp_path / 'p'} --metric mix" in lines[1]
    assert _study_metrics(StudyDir(tmp_path / "p")) == ["ticks"]
    r = cli("run", tmp_path / "n", "--preset", "standard", *small, "--metric", "ticks,instructions", env=env)
    assert r.returncode == 0, r.stderr
    assert "not counted" not in r.stderr and _study_metrics(StudyDir(tmp_path / "n")) == ["ticks", "instructions"]
    r = cli("run", tmp_path / "w", "--preset", "standard", *small)  # valgrind as installed: the preset's counts stay
    assert r.returncode == 0, r.stderr
    assert "not counted" not in r.stderr and _study_metrics(StudyDir(tmp_path / "w")) == ["ticks", "instructions", "mix"]
