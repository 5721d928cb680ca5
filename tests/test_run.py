"""Run stage: raw schema, batching, plan interleaving, resume after a killed run."""

import json
import os
import signal
import subprocess
import time

import pyarrow.parquet as pq
import pytest

from pqsimd import store
from pqsimd.run import plan

from conftest import PQSIMD

TINY = ["--preset", "quick", "--schemes", "ml-kem-512", "--ops", "ntt,gen_a,empty", "--spins", "4", "--reps", "3"]


@pytest.fixture(scope="module")
def tiny_study(tmp_path_factory):
    d = tmp_path_factory.mktemp("study") / "s"
    r = subprocess.run([str(PQSIMD), "run", d, *TINY, "--variants", "ref,avx2", "--jobs", "1"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return d


def test_raw_schema_and_values(tiny_study):
    path = store.raw_path(tiny_study, "avx2.ml-kem-512.0")
    t = pq.read_table(path)
    assert t.schema.remove_metadata() == store.RAW_SCHEMA
    df = t.to_pandas()
    # 3 ops x (2 warmup + 4 spins) x 3 reps, warmup spins negative and flagged
    assert len(df) == 3 * 6 * 3
    assert sorted(df.spin.unique()) == [-2, -1, 0, 1, 2, 3]
    assert (df.warmup == (df.spin < 0)).all()
    assert set(df.op) == {"ntt", "gen_a", "empty"}
    assert (df.metric == "ticks").all() and (df.ticks == df.raw).all()
    rec = json.loads(t.schema.metadata[store.JOB_METADATA_KEY])
    cal = rec["calibration"]
    assert cal["overhead"] > 0 and cal["granularity"] > 0 and cal["tsc_hz"] > 1e8
    assert rec["binary_sha256"] == store.sha256_file(store.bin_path(tiny_study, "avx2"))
    # per_call = (raw - read overhead) / batch - the batch loop's own cost per call
    expect = (df.raw - cal["overhead"]) / df.batch - cal["call_overhead"]
    assert (abs(df.per_call - expect) < 1e-9).all()
    # auto-batching: the short avx2 NTT is batched, the long gen_a is not; k is constant per op
    assert df[df.op == "ntt"].batch.nunique() == 1 and df[df.op == "ntt"].batch.iloc[0] > 1
    assert (df[df.op == "empty"].batch > 10).all()


def test_manifest_and_gate_records(tiny_study):
    m = json.loads((tiny_study / "manifest.json").read_text())
    assert m["schema_version"] == store.MANIFEST_SCHEMA_VERSION
    assert m["source"]["crate"] == "pqcrypto-mlkem" and m["source"]["version"] == "0.1.1" and len(m["source"]["checksum"]) == 64
    v = m["variants"]["avx2"]
    assert v["gate"]["passed"] and v["binary_sha256"] == store.sha256_file(store.bin_path(tiny_study, "avx2"))
    assert any("-mavx2" in c and c.rstrip().endswith("-mpopcnt") for c in v["compile_commands"])  # variant flags last
    assert m["machine"]["cpu_model"] and "avx2" in m["machine"]["isa"]
    assert set(m["jobs"]) == {"ref.ml-kem-512.0", "avx2.ml-kem-512.0"}
    assert m["job_order"] == [j["id"] for j in plan.load_plan(tiny_study)]


def test_batch_1_reproduces_the_paper(tmp_path, cli):
    r = cli("run", tmp_path / "s", *TINY, "--variants", "avx2", "--jobs", "1", "--batch", "1")
    assert r.returncode == 0, r.stderr
    df = pq.read_table(store.raw_path(tmp_path / "s", "avx2.ml-kem-512.0")).to_pandas()
    assert (df.batch == 1).all()


def test_plan_interleaves_rounds_and_is_seeded():
    p1 = plan.make_plan(["refo0", "ref", "avx2"], ["ml-kem-512", "ml-kem-768"], 3, seed=7)
    p2 = plan.make_plan(["refo0", "ref", "avx2"], ["ml-kem-512", "ml-kem-768"], 3, seed=7)
    p3 = plan.make_plan(["refo0", "ref", "avx2"], ["ml-kem-512", "ml-kem-768"], 3, seed=8)
    assert p1 == p2 and p1["jobs"] != p3["jobs"]
    jobs = p1["jobs"]
    assert len(jobs) == 18 and len({j["id"] for j in jobs}) == 18
    for r in range(3):  # round r = job r of every pair, before any job of round r+1
        block = jobs[6 * r: 6 * (r + 1)]
        assert {j["index"] for j in block} == {r}
        assert len({(j["variant"], j["scheme"]) for j in block}) == 6


def test_resume_after_sigkill_loses_at_most_the_job_in_flight(tmp_path):
    d = tmp_path / "s"
    args = [str(PQSIMD), "run", d, "--preset", "quick", "--schemes", "ml-kem-512", "--variants", "refo0,ref",
            "--ops", "gen_a,indcpa_enc", "--jobs", "3", "--spins", "30", "--reps", "5"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and len(list((d / "raw").glob("*.parquet"))) < 2:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # the run and its harness, mid-job
    proc.wait()
    finished = sorted((d / "raw").glob("*.parquet"))
    assert 2 <= len(finished) < 6, "kill landed too late to test anything"
    before = {p.name: store.sha256_file(p) for p in finished}
    for p in finished:  # every file that counts reads back whole
        assert store.finished_job(d, p.stem)
    r = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert f"{6 - len(finished)} to run, {len(finished)} already finished" in r.stderr
    after = sorted((d / "raw").glob("*.parquet"))
    assert len(after) == 6
    assert all(store.sha256_file(d / "raw" / n) == h for n, h in before.items())  # finished jobs untouched
    assert not [p for p in (d / "raw").iterdir() if p.name.startswith(".")]  # no temp files left that count


def test_corrupt_raw_file_is_rerun(tiny_study, tmp_path):
    import shutil

    d = tmp_path / "copy"
    shutil.copytree(tiny_study, d)
    path = store.raw_path(d, "ref.ml-kem-512.0")
    path.write_bytes(path.read_bytes()[:100])  # truncated
    assert [j["id"] for j in plan.pending_jobs(d)] == ["ref.ml-kem-512.0"]
    r = subprocess.run([str(PQSIMD), "run", d], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert plan.pending_jobs(d) == []


def test_cpu_without_avx2_skips_avx2_variants_with_a_warning(tmp_path, monkeypatch, capsys):
    from pqsimd import machine, pipeline

    monkeypatch.setattr(machine, "cpu_flags", lambda: {"sse2", "constant_tsc"})
    ok = pipeline.run_study(tmp_path / "s", {"preset": "quick", "schemes": ["ml-kem-512"], "variants": ["ref", "avx2"],
                                             "ops": ["empty"], "jobs": 1, "spins": 2, "reps": 2})
    err = capsys.readouterr().err
    assert ok
    assert "skip avx2: this CPU lacks avx2, bmi2, popcnt" in " ".join(err.split())
    assert json.loads((tmp_path / "s" / "gate" / "avx2.json").read_text())["skipped"]
    assert [p.name for p in (tmp_path / "s" / "raw").glob("*.parquet")] == ["ref.ml-kem-512.0.parquet"]


def test_job_builds_node_dependent_variant_on_the_node(tmp_path, cli):
    d = tmp_path / "s"
    r = cli("run", d, *TINY, "--variants", "ref-native", "--jobs", "1", "--no-run")
    assert r.returncode == 0, r.stderr
    (d / "bin" / "ref-native").unlink()  # as on a node that never saw the submitting host's build
    r = cli("job", d, "ref-native.ml-kem-512.0", "--build-on-node")
    assert r.returncode == 0, r.stderr
    rec = store.read_job_record(store.raw_path(d, "ref-native.ml-kem-512.0"))
    assert rec["built_on_node"] is True and len(rec["binary_sha256"]) == 64


def test_study_cpu_outside_allowed_set_falls_back(tmp_path):
    from pqsimd.run.job import pick_cpu
    from pqsimd.study import Study

    s = Study(schemes=[], variants=[], ops=[], jobs=1, spins=1, reps=1, warmup=0, cpu=10_000)
    assert pick_cpu(s) == max(os.sched_getaffinity(0))
