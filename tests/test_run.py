"""Run stage: the raw schema in both designs, batching, the plan, resume after a killed run, the
study lock, settings fixed once, and node-dependent builds."""

import json
import os
import shutil
import signal
import subprocess
import time

import pyarrow.parquet as pq
import pytest

from pqsimd import store
from pqsimd.run import plan
from pqsimd.studydir import StudyDir

from conftest import PQSIMD

TINY = ["--preset", "quick", "--schemes", "ml-kem-512", "--ops", "ntt,gen_a,empty", "--spins", "4", "--reps", "3"]


@pytest.fixture(scope="module")
def paired_study(tmp_path_factory):
    d = tmp_path_factory.mktemp("study") / "p"
    r = subprocess.run([str(PQSIMD), "run", d, *TINY, "--variants", "ref,avx2", "--jobs", "2"], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return d


@pytest.fixture(scope="module")
def separate_study(tmp_path_factory):
    d = tmp_path_factory.mktemp("study") / "s"
    r = subprocess.run([str(PQSIMD), "run", d, *TINY, "--variants", "ref,avx2", "--jobs", "1", "--design", "separate"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return d


def test_separate_raw_schema_and_values(separate_study):
    sd = StudyDir(separate_study)
    path = sd.raw_path("avx2.gcc.ml-kem-512.0")
    t = pq.read_table(path)
    assert t.schema.remove_metadata() == store.RAW_SCHEMA
    df = t.to_pandas()
    # 3 ops x (2 warmup + 4 spins) x 3 reps, warmup spins negative and flagged
    assert len(df) == 3 * 6 * 3
    assert sorted(df.spin.unique()) == [-2, -1, 0, 1, 2, 3]
    assert (df.warmup == (df.spin < 0)).all()
    assert set(df.op) == {"ntt", "gen_a", "empty"} and set(df.compiler) == {"gcc"} and (df.pos == 0).all()
    assert (df.metric == "ticks").all() and (df.ticks == df.raw).all()
    rec = json.loads(t.schema.metadata[store.JOB_METADATA_KEY])
    cal = rec["calibration"]
    assert cal["overhead"] > 0 and cal["step"] > 0 and cal["tsc_hz"] > 1e8 and cal["design"] == "separate"
    assert cal["granularity"] == cal["step"] and cal["timer_quantum"] == 0  # the old name, the same number
    assert rec["binaries"] == {"avx2.gcc.ml-kem": store.sha256_file(sd.variant_path("avx2.gcc.ml-kem"))}
    assert rec["driver_sha256"] == store.sha256_file(sd.driver_path)
    assert rec["settings"] == sd.read_plan()["settings"]
    # per_call = (raw - the same moment's null sample of as many empty calls) / batch
    expect = (df.raw - df.null_raw) / df.batch
    assert (abs(df.per_call - expect) < 1e-9).all()
    # the null is a sample of `batch` empty calls: at least the read overhead's minimum, about a call per call
    assert (df.null_raw >= cal["overhead_min"]).all()
    # and the empty op, an empty function, reads about nothing after it (the self-check)
    assert abs(df[(df.op == "empty") & ~df.warmup].per_call.median()) < 1.0
    # auto-batching: the short avx2 NTT is batched, the long gen_a is not; k is constant per op
    assert df[df.op == "ntt"].batch.nunique() == 1 and df[df.op == "ntt"].batch.iloc[0] > 1
    assert (df[df.op == "empty"].batch > 10).all()
    # the batch target follows the measured step: the probe aims at 2,000 clock steps per sample, so
    # that a job reading the op up to twice as fast still spans 1,000
    assert cal["batch_target"] == max(1000, 2000 * cal["step"])


def test_paired_jobs_hold_every_variant_in_a_seeded_order(paired_study):
    sd = StudyDir(paired_study)
    jobs = sd.plan_jobs()
    assert [j["id"] for j in jobs] == ["paired.ml-kem-512.0", "paired.ml-kem-512.1"]
    t = pq.read_table(sd.raw_path("paired.ml-kem-512.0"))
    df = t.to_pandas()
    rec = json.loads(t.schema.metadata[store.JOB_METADATA_KEY])
    assert rec["variants"] == ["ref", "avx2"] and rec["calibration"]["design"] == "paired"
    assert rec["calibration"]["warmup_ns"] == 50000 and rec["calibration"]["warmup_ticks"] > 0
    assert set(rec["binaries"]) == {"ref.gcc.ml-kem", "avx2.gcc.ml-kem"}
    assert len(df) == 2 * 3 * 6 * 3  # both variants
    # every (op, spin) has both variants, at positions 0 and 1, in an order that changes between spins
    first = df[df.rep == 0].pivot_table(index=["op", "spin"], columns="variant", values="pos")
    assert ((first["ref"] + first["avx2"]) == 1).all()
    assert first["ref"].nunique() == 2
    # the order is the driver's splitmix64 shuffle of the job's seed, continued across ops (Python mirrors it)
    from pqsimd.run.spec import spin_orders

    assert rec["seed"] == rec["calibration"]["seed"]
    spins = df[(df.rep == 0)][["op", "spin", "variant", "pos"]]
    ops_in_order = list(dict.fromkeys(df["op"]))
    expected = spin_orders(rec["seed"], 2, 6 * len(ops_in_order))
    got = []
    for op in ops_in_order:
        for s in range(-2, 4):
            d = spins[(spins.op == op) & (spins.spin == s)].sort_values("pos")
            got.append([rec["variants"].index(v) for v in d["variant"]])
    assert got == expected


def test_manifest_gate_and_plan_records(paired_study):
    sd = StudyDir(paired_study)
    m = sd.read_manifest()
    assert m["schema_version"] == store.MANIFEST_SCHEMA_VERSION
    assert m["source"]["crate"] == "pqcrypto-mlkem" and m["source"]["version"] == "0.1.1" and len(m["source"]["checksum"]) == 64
    b = m["builds"]["avx2.gcc.ml-kem"]
    assert b["passed"] and b["binary_sha256"] == store.sha256_file(sd.variant_path("avx2.gcc.ml-kem"))
    assert any("-mavx2" in c and c.rstrip().endswith("-mpopcnt") for c in b["compile_commands"])  # variant flags last
    assert m["driver"]["sha256"] == store.sha256_file(sd.driver_path) and m["driver"]["compiler"]["version"]
    assert m["chain"]["steps"][-1]["stage"] == "hand_simd" and "ml-kem" in m["families"]
    assert m["machine"]["cpu_model"] and "avx2" in m["machine"]["isa"]
    assert set(m["jobs"]) == {"paired.ml-kem-512.0", "paired.ml-kem-512.1"}
    assert m["job_order"] == [j["id"] for j in sd.plan_jobs()]
    p = sd.read_plan()
    assert p["settings"]["spins"] == 4 and p["settings"]["design"] == "paired" and p["compilers"] == ["gcc"]
    assert json.loads(sd.gate_path("ref.gcc.ml-kem").read_text())["passed_schemes"] == ["ml-kem-512"]


def test_batch_1_reproduces_the_paper(tmp_path, cli):
    r = cli("run", tmp_path / "s", *TINY, "--variants", "avx2", "--jobs", "1", "--batch", "1", "--design", "separate")
    assert r.returncode == 0, r.stderr
    df = pq.read_table(StudyDir(tmp_path / "s").raw_path("avx2.gcc.ml-kem-512.0")).to_pandas()
    assert (df.batch == 1).all()


def test_plan_interleaves_rounds_and_is_seeded():
    from pqsimd.study import Study

    def st(seed, design="separate"):
        return Study(schemes=["ml-kem-512", "ml-kem-768"], variants=["refo0", "ref", "avx2"], jobs=3, spins=1, reps=1,
                     warmup=0, seed=seed, design=design)

    p1, p2, p3 = plan.make_plan(st(7), ["gcc"]), plan.make_plan(st(7), ["gcc"]), plan.make_plan(st(8), ["gcc"])
    assert p1 == p2 and p1["jobs"] != p3["jobs"]
    jobs = p1["jobs"]
    assert len(jobs) == 18 and len({j["id"] for j in jobs}) == 18
    for r in range(3):  # round r = job r of every group, before any job of round r+1
        block = jobs[6 * r: 6 * (r + 1)]
        assert {j["index"] for j in block} == {r}
        assert len({(j["variant"], j["scheme"]) for j in block}) == 6
    paired = plan.make_plan(st(7, "paired"), ["gcc", "clang"])["jobs"]
    assert len(paired) == 6 and all(j["id"].startswith("paired.") for j in paired)


def test_resume_after_sigkill_loses_at_most_the_job_in_flight(tmp_path):
    d = tmp_path / "s"
    args = [str(PQSIMD), "run", d, "--preset", "quick", "--schemes", "ml-kem-512", "--variants", "refo0,ref",
            "--ops", "gen_a,indcpa_enc", "--jobs", "3", "--spins", "30", "--reps", "5", "--design", "separate", "--budget", "0"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and len(list((d / "raw").glob("*.parquet"))) < 2:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # the run and its driver, mid-job
    proc.wait()
    sd = StudyDir(d)
    finished = sorted((d / "raw").glob("*.parquet"))
    assert 2 <= len(finished) < 6, "kill landed too late to test anything"
    before = {p.name: store.sha256_file(p) for p in finished}
    for p in finished:  # every file that counts reads back whole
        assert sd.finished(p.stem)
    r = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert f"{6 - len(finished)} to run, {len(finished)} already finished" in " ".join(r.stderr.split())
    after = sorted((d / "raw").glob("*.parquet"))
    assert len(after) == 6
    assert all(store.sha256_file(d / "raw" / n) == h for n, h in before.items())  # finished jobs untouched
    assert not [p for p in (d / "raw").iterdir() if p.name.startswith(".")]  # no temp files left that count


def test_second_run_is_refused_while_the_first_holds_the_lock(tmp_path):
    d = tmp_path / "s"
    args = [str(PQSIMD), "run", d, "--preset", "quick", "--schemes", "ml-kem-512", "--variants", "refo0",
            "--ops", "gen_a", "--jobs", "4", "--spins", "3000", "--reps", "20", "--design", "separate", "--budget", "0"]
    first = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not list((d / "raw").glob(".*.tsv")):  # timing has begun
            time.sleep(0.05)
        assert first.poll() is None, "the first run ended before the test could overlap it"
        second = subprocess.run(args, capture_output=True, text=True, timeout=120)
        assert second.returncode == 2 and "Traceback" not in second.stderr
        line = second.stderr.strip()
        assert "\n" not in line and "in use by another pqsimd" in line and f"pid {first.pid}" in line
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    # the lock dies with its holder: a new run continues the study
    r = subprocess.run(args + ["--no-run"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr


def test_settings_are_fixed_by_the_plan(tmp_path, cli):
    d = tmp_path / "s"
    r = cli("run", d, *TINY, "--variants", "ref", "--jobs", "1", "--design", "separate")
    assert r.returncode == 0, r.stderr
    # the command line, a preset and a hand edit of study.toml are refused alike
    r = cli("run", d, "--spins", "5")
    assert r.returncode == 2 and "spins=4" in r.stderr and "spins=5" in r.stderr and "new directory" in r.stderr
    toml = (d / "study.toml").read_text()
    (d / "study.toml").write_text(toml.replace("spins = 4", "spins = 9"))
    r = cli("run", d)
    assert r.returncode == 2 and "spins=9" in r.stderr and "edited study.toml" in r.stderr
    r = cli("analyze", d)  # analyze reads the data's recorded settings, not the edit
    assert r.returncode == 0, r.stderr
    (d / "study.toml").write_text(toml)
    r = cli("run", d, "--jobs", "2")  # more jobs extend the seeded plan
    assert r.returncode == 0, r.stderr and len(StudyDir(d).plan_jobs()) == 2


def test_corrupt_raw_file_is_rerun(separate_study, tmp_path):
    d = tmp_path / "copy"
    shutil.copytree(separate_study, d)
    sd = StudyDir(d)
    path = sd.raw_path("ref.gcc.ml-kem-512.0")
    path.write_bytes(path.read_bytes()[:100])  # truncated
    assert not sd.finished("ref.gcc.ml-kem-512.0") and sd.finished("avx2.gcc.ml-kem-512.0")
    r = subprocess.run([str(PQSIMD), "run", d], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert sd.finished("ref.gcc.ml-kem-512.0")


def test_cpu_without_avx2_skips_avx2_variants_with_a_warning(tmp_path, monkeypatch, capsys):
    from pqsimd import machine, pipeline

    monkeypatch.setattr(machine, "cpu_flags", lambda: {"sse2", "constant_tsc"})
    ok = pipeline.run_study(tmp_path / "s", {"preset": "quick", "schemes": ["ml-kem-512"], "variants": ["ref", "avx2"],
                                             "ops": ["empty"], "jobs": 1, "spins": 2, "reps": 2})
    err = " ".join(capsys.readouterr().err.split())
    assert ok
    assert "skip avx2 (gcc, ml-kem): this CPU lacks avx2, bmi2, popcnt" in err
    sd = StudyDir(tmp_path / "s")
    assert sd.read_gate("avx2.gcc.ml-kem")["skipped"]
    rec = store.read_job_record(sd.raw_path("paired.ml-kem-512.0"))
    assert rec["variants"] == ["ref"]


def test_job_builds_node_dependent_variant_on_the_node(tmp_path, cli):
    d = tmp_path / "s"
    r = cli("run", d, *TINY, "--variants", "ref-native", "--jobs", "1", "--no-run", "--design", "separate")
    assert r.returncode == 0, r.stderr
    sd = StudyDir(d)
    sd.variant_path("ref-native.gcc.ml-kem").unlink()  # as on a node that never saw the submitting host's build
    r = cli("job", d, "ref-native.gcc.ml-kem-512.0", "--build-on-node")
    assert r.returncode == 0, r.stderr
    rec = store.read_job_record(sd.raw_path("ref-native.gcc.ml-kem-512.0"))
    assert rec["built_on_node"] == ["ref-native.gcc.ml-kem"] and len(rec["binaries"]["ref-native.gcc.ml-kem"]) == 64


def test_study_cpu_outside_allowed_set_falls_back():
    """A --cpu this process may not use (a SLURM allocation without it) is not forced: the job chooses
    among the allowed CPUs, as without --cpu; one it may use is kept whatever the CPUs are doing."""
    from pqsimd.run.job import choose_cpu
    from pqsimd.study import Study

    allowed = os.sched_getaffinity(0)
    s = Study(schemes=[], variants=[], jobs=1, spins=1, reps=1, warmup=0, cpu=10_000)
    c = choose_cpu(s)
    assert c.cpu in allowed and not c.fixed and set(c.busy) == allowed
    mine = min(allowed)
    c = choose_cpu(Study(schemes=[], variants=[], jobs=1, spins=1, reps=1, warmup=0, cpu=mine))
    assert c.cpu == mine and c.fixed


def test_show_states_the_paired_design_and_its_warm_up(paired_study):
    """A real paired study, analysed: show's first line says what the engine did (design, warm-up
    spins, the per-build untimed warm-up in microseconds) and what the carry-over check found."""
    r = subprocess.run([str(PQSIMD), "analyze", paired_study], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([str(PQSIMD), "show", paired_study], capture_output=True, text=True, timeout=600,
                       env={**os.environ, "COLUMNS": "400"})
    assert r.returncode == 0, r.stderr
    head = " ".join(r.stdout.split("\n\n")[0].split())
    assert "design: paired (all variants in one process, a fresh random order every spin)" in head
    assert "warm-up: 2 untimed warm-up spin(s) per op; each build run untimed for 50 µs before its reps" in head
    assert "carry-over: " in head and "not recorded" not in head
