"""Identity by content (issue 29, item 1): a number belongs to the bytes that passed the gate.

A cached shared object replaced by another build's bytes is rebuilt, never timed under the wrong
name; the gate's cached verdict is keyed by the bytes checked; a study's library or driver that is
not the one it gated is refused in one line before any driver loads it; a compiler edited in place
(a wrapper script that now adds flags) is a new compiler; jobs of two drivers are never pooled.
All on the SHAKE-256 fixture family, in a private build cache."""

import json
import os
import shutil
from pathlib import Path

import pytest

from pqsimd import catalog, store
from pqsimd.build import build_driver, build_variant, find_compiler
from pqsimd.errors import PqsimdError

FIXTURES = Path(__file__).parent / "fixtures" / "families"


@pytest.fixture
def shake(tmp_path, monkeypatch):
    monkeypatch.setenv("PQSIMD_FAMILY_PATH", str(FIXTURES))
    monkeypatch.setenv("PQSIMD_CACHE", str(tmp_path / "cache"))
    return catalog.families()["shake"]


def test_a_cached_library_replaced_by_another_builds_bytes_is_rebuilt(tree, shake):
    variants = catalog.builtin_variants()
    driver = build_driver()
    refo0 = build_variant(tree, shake, variants["refo0"], "gcc", driver)
    avx2 = build_variant(tree, shake, variants["avx2"], "gcc", driver)
    assert refo0.sha256 == store.sha256_file(refo0.library) != avx2.sha256
    shutil.copyfile(avx2.library, refo0.library)  # the cache's refo0 now holds avx2's code
    again = build_variant(tree, shake, variants["refo0"], "gcc", driver)
    assert not again.cached  # made again, not taken on trust
    assert store.sha256_file(again.library) == again.sha256 == refo0.sha256


def test_the_gates_cached_verdict_is_keyed_by_the_bytes_it_checked(tree, shake):
    from pqsimd import verify

    variants = catalog.builtin_variants()
    driver = build_driver()
    ref = build_variant(tree, shake, variants["ref"], "gcc", driver)
    avx2 = build_variant(tree, shake, variants["avx2"], "gcc", driver)
    assert verify.gate(tree, driver, [ref], ["shake-256"])[ref.id].passed  # verdict now cached beside the build
    shutil.copyfile(avx2.library, ref.library)  # swapped after the build was fetched
    g = verify.gate(tree, driver, [ref], ["shake-256"])[ref.id]
    assert not g.passed
    assert any("is not the binary that was built" in c.detail and str(ref.library) in c.detail for c in g.checks)


def test_a_compiler_edited_in_place_is_a_new_compiler(tree, shake, tmp_path):
    gcc = shutil.which("gcc")
    wrapper = tmp_path / "mycc"
    wrapper.write_text(f'#!/bin/sh\nexec {gcc} "$@"\n')
    wrapper.chmod(0o755)
    before = find_compiler(f"mycc={wrapper}")
    ref = catalog.builtin_variants()["ref"]
    first = build_variant(tree, shake, ref, before)
    wrapper.write_text(f'#!/bin/sh\nexec {gcc} "$@" -O1 -fno-inline\n')  # same path, same --version banner
    after = find_compiler(f"mycc={wrapper}")
    assert after.version == before.version and after.path == before.path and after.digest != before.digest
    second = build_variant(tree, shake, ref, after)
    assert not second.cached and second.key != first.key


def _study(tmp_path, cli, *extra):
    env = {**os.environ, "PQSIMD_FAMILY_PATH": str(FIXTURES), "PQSIMD_CACHE": str(tmp_path / "cache")}
    d = tmp_path / "s"
    r = cli("run", d, "--schemes", "shake-256", "--variants", "ref,avx2", "--preset", "quick", "--spins", "2",
            "--reps", "2", *extra, env=env)
    assert r.returncode == 0, r.stderr
    return d, env


def test_a_study_library_or_driver_that_is_not_the_gated_one_is_refused_before_loading(tmp_path, cli, monkeypatch):
    from pqsimd.run.job import run_job
    from pqsimd.studydir import StudyDir

    d, env = _study(tmp_path, cli, "--jobs", "1", "--no-run")
    monkeypatch.setenv("PQSIMD_FAMILY_PATH", env["PQSIMD_FAMILY_PATH"])
    sd = StudyDir(d)
    job = sd.read_plan()["jobs"][0]["id"]
    gate = json.loads((d / "gate" / "ref.gcc.shake.json").read_text())
    assert gate["binary_sha256"] == store.sha256_file(sd.variant_path("ref.gcc.shake"))
    shutil.copyfile(sd.variant_path("avx2.gcc.shake"), sd.variant_path("ref.gcc.shake"))
    with pytest.raises(PqsimdError, match="is not the binary this study gated") as e:
        run_job(sd, job)
    assert str(sd.variant_path("ref.gcc.shake")) in str(e.value) and "\n" not in str(e.value)
    assert not sd.raw_files()
    shutil.copyfile(sd.variant_path("avx2.gcc.shake"), sd.driver_path)  # not a driver at all
    sd.variant_path("ref.gcc.shake").unlink()
    r = cli("run", d, env=env)  # reinstalls the library; the driver in bin/ is not the study's
    assert r.returncode == 0, r.stderr  # no job ran yet: the driver is reinstalled too
    assert store.sha256_file(sd.driver_path) == sd.read_manifest()["driver"]["sha256"]
    assert sd.raw_files()


def test_a_different_driver_is_never_installed_over_jobs_nor_pooled_by_analyze(tmp_path, cli):
    from pqsimd import pipeline
    from pqsimd.studydir import StudyDir

    d, env = _study(tmp_path, cli, "--jobs", "2")
    sd = StudyDir(d)
    other = tmp_path / "other-driver"
    other.write_bytes(sd.driver_path.read_bytes() + b"\0")  # a driver of other bytes (other flags or harness)
    with pytest.raises(PqsimdError, match="differs from the one that timed the jobs"):
        pipeline._install(sd, other, sd.driver_path, None, store.sha256_file(other))
    path = sd.raw_files()[-1]
    record = store.read_job_record(path)
    import pyarrow.parquet as pq

    store.write_raw(path, pq.read_table(path), {**record, "driver_sha256": "0" * 64})
    r = cli("analyze", d, env=env)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    line = next(l for l in r.stderr.splitlines() if l.startswith("error:"))
    assert "different drivers" in line and path.name in line


def test_analyze_pools_one_binary_per_build_but_node_builds_may_differ():
    """Two binaries of one build are never pooled; a node-dependent build made on each SLURM node
    (the job record's built_on_node) differs by design and is exempt."""
    from pqsimd.analyze.load import check_identity

    node = {"binaries": {"n.gcc.f": "1", "r.gcc.f": "a"}, "built_on_node": ["n.gcc.f"], "driver_sha256": "d"}
    check_identity({"j0": node, "j1": {**node, "binaries": {"n.gcc.f": "2", "r.gcc.f": "a"}}}, Path("raw"))
    with pytest.raises(PqsimdError, match="j0 and j1 timed different binaries of build r.gcc.f"):
        check_identity({"j0": node, "j1": {**node, "binaries": {"n.gcc.f": "1", "r.gcc.f": "b"}}}, Path("raw"))
    with pytest.raises(PqsimdError, match="j0 and j1 were timed by different drivers"):
        check_identity({"j0": node, "j1": {**node, "driver_sha256": "e"}}, Path("raw"))
