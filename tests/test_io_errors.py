"""A full disk or a read-only study directory is one line naming the file and the fix, never a
traceback: a job that cannot write fails alone (the run goes on and resumes later), and analyze
and report say what they could not write. Real file systems: a small tmpfs, remounted read-only
(needs root, as `make test` runs; skipped where mounting is not allowed)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from pqsimd.studydir import StudyDir

FIXTURES = Path(__file__).parent / "fixtures" / "families"
ENV = {**os.environ, "PQSIMD_FAMILY_PATH": str(FIXTURES)}
SMALL = ["--schemes", "shake-256", "--variants", "ref", "--preset", "quick", "--budget", "0"]


@pytest.fixture
def small_fs(tmp_path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()

    def mount(size: str, *extra: str) -> Path:
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join([f"size={size}", *extra]), "tmpfs", str(mnt)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here ({r.stderr.strip()})")
        return mnt

    def remount(*opts: str) -> None:
        subprocess.run(["mount", "-o", ",".join(["remount", *opts]), str(mnt)], check=True)

    try:
        yield mount, remount
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


def one_line(r, *needles):
    assert r.returncode in (1, 2) and "Traceback" not in r.stderr, r.stderr
    errors = [l for l in r.stderr.splitlines() if l.startswith("error:") or "failed" in l]
    assert errors, r.stderr
    text = " ".join(r.stderr.split())
    for n in needles:
        assert n in text, r.stderr
    return errors


def test_a_full_disk_fails_the_job_not_the_run_and_the_study_resumes(small_fs, cli):
    mount, remount = small_fs
    d = mount("400k") / "s"
    # the samples of one job (5,000 spins x 20 reps x 3 ops) do not fit; the study's files do
    r = cli("run", d, *SMALL, "--jobs", "2", "--spins", "5000", "--reps", "20", env=ENV, timeout=900)
    one_line(r, "job paired.shake-256.0: No space left on device", "free some space")
    assert "job paired.shake-256.1: No space left on device" in " ".join(r.stderr.split())  # the run went on
    assert not StudyDir(d).raw_files() and not list((d / "raw").glob(".*"))  # nothing half-written counts
    remount("size=64m")
    r = cli("run", d, env=ENV, timeout=900)
    assert r.returncode == 0 and "2 to run, 0 already finished" in " ".join(r.stderr.split()), r.stderr
    assert len(StudyDir(d).raw_files()) == 2


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    from conftest import run_cli

    d = tmp_path_factory.mktemp("m") / "s"
    r = run_cli("run", d, *SMALL, "--variants", "ref,avx2", "--jobs", "2", "--spins", "3", "--reps", "2", env=ENV)
    assert r.returncode == 0, r.stderr
    return d


def test_a_full_disk_during_analyze_and_report_is_one_line(small_fs, measured, cli):
    mount, remount = small_fs
    size = sum(p.stat().st_size for p in measured.rglob("*") if p.is_file())
    d = mount(f"{size // 1024 + 120}k") / "s"
    shutil.copytree(measured, d)
    r = cli("analyze", d, env=ENV)
    if r.returncode == 0:  # the results fitted: the report's figures do not
        r = cli("report", d, env=ENV)
    one_line(r, "No space left on device", str(d), "free some space")


@pytest.mark.parametrize("command", ["analyze", "report"])
def test_a_read_only_study_directory_is_one_line(small_fs, measured, cli, command):
    mount, remount = small_fs
    d = mount("64m") / "s"
    shutil.copytree(measured, d)
    if command == "report":
        assert cli("analyze", d, env=ENV).returncode == 0
    remount("ro")
    one_line(cli(command, d, env=ENV), "Read-only file system", "work on a writable copy")


def test_a_failed_analyze_leaves_the_previous_results_or_none(measured, tmp_path, monkeypatch):
    """Item 7 of issue 29: analyze writes a new results/ and swaps it in whole; a failure part-way
    (here: no space for the spins table, after the comparisons were written) leaves the previous
    results byte for byte, or no results/ at all, never a mix that show reads as complete."""
    import errno

    from pqsimd import analyze
    from pqsimd.analyze import steps

    d = tmp_path / "s"
    shutil.copytree(measured, d)
    shutil.rmtree(d / "results", ignore_errors=True)

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as m:
        m.setattr(steps, "write_spins", full)
        with pytest.raises(OSError):
            analyze.analyze_study(d)
    assert not (d / "results").exists() and not list(d.glob(".results*"))  # none
    results = analyze.analyze_study(d)
    before = {p.name: p.read_bytes() for p in results.iterdir()}
    (d / "raw" / sorted(p.name for p in (d / "raw").glob("*.parquet"))[0]).unlink()  # the next analysis differs
    with monkeypatch.context() as m:
        m.setattr(steps, "write_spins", full)
        with pytest.raises(OSError):
            analyze.analyze_study(d)
    assert {p.name: p.read_bytes() for p in results.iterdir()} == before  # the previous results, whole
    assert not list(d.glob(".results*"))


def test_results_say_they_are_stale_when_jobs_ran_since(measured, tmp_path, cli):
    """When raw/ holds job runs results/ was not computed from, show and report analyse again first (each
    says so in one line), and what they print is what was measured: nothing reads as stale after it."""
    d = tmp_path / "s"
    shutil.copytree(measured, d)
    assert cli("analyze", d, env=ENV).returncode == 0
    r = cli("show", d, env=ENV)
    assert r.returncode == 0 and "stale" not in r.stdout
    r = cli("run", d, "--jobs", "3", env=ENV)  # one more job
    assert r.returncode == 0, r.stderr
    r = cli("show", d, env=ENV)  # show analyses again first, as report does
    assert r.returncode == 0 and "changed since results/ was analysed (new, run again or gone): analysing again first" in r.stderr, r.stderr
    assert "stale" not in r.stdout
    r = cli("run", d, "--jobs", "4", env=ENV)  # one more job
    assert r.returncode == 0, r.stderr
    r = cli("report", d, env=ENV)  # the report analyses again first: it shows what was measured
    assert r.returncode == 0 and "changed since results/ was analysed (new, run again or gone): analysing again first" in r.stderr, r.stderr
    assert "stale" not in (d / "report" / "index.html").read_text()
    assert "stale" not in cli("show", d, env=ENV).stdout


def test_a_build_that_fails_its_gate_now_loses_its_old_numbers(measured, tmp_path):
    """Item 9 of issue 29: avx2 was timed, then fails its gate in a later run (the manifest holds the
    latest gate): analyze leaves its numbers out, says why, and its comparisons are n/a."""
    import json

    import pandas as pd

    from pqsimd.analyze import analyze_study

    d = tmp_path / "s"
    shutil.copytree(measured, d)
    m = json.loads((d / "manifest.json").read_text())
    b = m["builds"]["avx2.gcc.shake"]
    b.update(passed=False, passed_schemes=[],
             checks=[{"check": "vectors", "scheme": "shake-256", "passed": False, "detail": "vector 0: digest differs"}])
    (d / "manifest.json").write_text(json.dumps(m))
    results = analyze_study(d)
    groups = pd.read_parquet(results / "groups.parquet")
    assert set(groups.variant) == {"ref"}
    comp = pd.read_parquet(results / "comparisons.parquet")
    assert comp[comp.variant == "avx2"].speedup.isna().all()
    warnings = json.loads((results / "summary.json").read_text())["warnings"]
    assert any("build avx2 (gcc) of shake-256 does not pass its gate now (vectors shake-256: vector 0: digest differs)"
               in w for w in warnings), warnings


def test_rows_edited_after_analyze_make_the_results_stale(measured, tmp_path, cli):
    """Staleness is judged by each raw file's content (sha256), not only its job's finish time: rows
    edited after analyze, the job record untouched, are noticed (show analyses again, saying why)."""
    import pyarrow.parquet as pq

    d = tmp_path / "s"
    shutil.copytree(measured, d)
    assert cli("analyze", d, env=ENV).returncode == 0
    raw = sorted((d / "raw").glob("*.parquet"))[0]
    t = pq.read_table(raw)
    per_call = t.column("per_call").to_numpy() * 0.5
    pq.write_table(t.set_column(t.schema.get_field_index("per_call"), "per_call", [per_call])
                   .replace_schema_metadata(t.schema.metadata), raw)
    r = cli("show", d, env=ENV)
    assert r.returncode == 0 and "changed since results/ was analysed" in r.stderr, r.stderr


def test_a_study_mailed_without_raw_is_not_told_to_analyze_again(measured, tmp_path, cli):
    """results/ with the manifest, plan and study.toml, no raw/ (how a study is sent to a campaign):
    nothing says its results are stale, which would send its reader to an analyze that cannot run."""
    d = tmp_path / "s"
    shutil.copytree(measured, d)
    assert cli("analyze", d, env=ENV).returncode == 0
    shutil.rmtree(d / "raw")
    r = cli("show", d, env=ENV)
    assert r.returncode == 0, r.stderr
    assert "stale" not in r.stdout
    (d / "raw").mkdir()  # unpacked with an empty raw/
    assert "stale" not in cli("show", d, env=ENV).stdout


def test_a_full_disk_while_relinking_names_the_copy_and_leaves_none_behind(small_fs, tmp_path, cli):
    """The job copies' folder fills while lld relinks (lld maps its output: a full disk kills it with
    SIGBUS): one line naming the copy being written, not the build it comes from, no half-made copy,
    and the same command continues once there is room."""
    mount, remount = small_fs
    d = tmp_path / "s"
    layouts = ["--jobs", "2", "--layout", "random", "--layouts", "2", "--shared-cpu", "keep"]
    r = cli("run", d, *SMALL, "--variants", "ref,avx2", *layouts, "--no-run", env=ENV)
    assert r.returncode == 0, r.stderr
    (d / "bin" / "layouts").symlink_to(mount("40k"))
    r = cli("run", d, env=ENV)
    one_line(r, "layouts: No space left on device: ", str(d / "bin" / "layouts"), "free some space")
    assert str(d / "bin" / "ref.gcc.shake.so") not in r.stderr  # not the build the copy is made from
    assert not [p for p in (d / "bin" / "layouts").rglob("*") if p.is_file()]  # nothing half-made, under any name
    remount("size=64m")
    r = cli("run", d, env=ENV)
    assert r.returncode == 0, r.stderr
    assert len(StudyDir(d).raw_files()) == 2
