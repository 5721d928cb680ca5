"""The driver and the runs around it survive what a build or a user can throw at them: a build that
crashes or hangs is named (build and op), excluded with one line and the rest timed; jobs and
probes have time limits; stopping pqsimd stops its driver before the lock is released; ops only
some builds have; 70 builds in one paired job; study paths with spaces, quotes and non-ASCII.
All on a copy of the SHAKE-256 fixture family whose op table misbehaves under a define."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pqsimd import store
from pqsimd.studydir import StudyDir

from conftest import PQSIMD, drivers_of

FIXTURES = Path(__file__).parent / "fixtures" / "families"
SMALL = ["--schemes", "shake-256", "--preset", "quick", "--jobs", "2", "--spins", "3", "--reps", "2"]

# Defines a variant's flags can set to make the op table misbehave (the gate calls each op once).
SABOTAGE = {
    "static void op_shake_32(void) { shake256(out, 32, in, sizeof in); }": """
#if defined(PQSIMD_CRASH_AFTER) || defined(PQSIMD_HANG_AFTER)
static unsigned long calls;
#endif
static void op_shake_32(void) {
#ifdef PQSIMD_CRASH_AFTER
    if (++calls > PQSIMD_CRASH_AFTER) { *(volatile int *)0 = 1; }
#endif
#ifdef PQSIMD_HANG_AFTER
    if (++calls > PQSIMD_HANG_AFTER) { for (;;) { __asm__ volatile("" ::: "memory"); } }
#endif
    shake256(out, 32, in, sizeof in);
}""",
    '    {"shake_1k", setup, op_shake_1k},\n': '#ifndef PQSIMD_NO_1K\n    {"shake_1k", setup, op_shake_1k},\n#endif\n',
    "    .n_ops = 3,": "#ifdef PQSIMD_BAD_NOPS\n    .n_ops = 40,\n#else\n    .n_ops = (int)(sizeof ops / sizeof ops[0]),\n#endif",
}


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    d = tmp_path_factory.mktemp("families")
    shutil.copy(FIXTURES / "shake.toml", d)
    text = (FIXTURES / "shake_ops.c").read_text()
    for old, new in SABOTAGE.items():
        assert old in text, old
        text = text.replace(old, new)
    (d / "shake_ops.c").write_text(text)
    return {**os.environ, "PQSIMD_FAMILY_PATH": str(d)}


def study_dir(tmp_path: Path, variant: str, flags: list[str]) -> Path:
    d = tmp_path / "s"
    d.mkdir()
    (d / "study.toml").write_text(f'[study]\nvariants = ["ref", "{variant}"]\n'
                                  f'[variants.{variant}]\nsources = "clean"\nflags = {json.dumps(flags)}\n')
    return d


def flat(r) -> str:
    return " ".join(r.stderr.split())


def records(d: Path) -> list[dict]:
    return [store.read_job_record(p) for p in StudyDir(d).raw_files()]


@pytest.mark.parametrize("budget", ["0", "0.005"])
def test_a_build_that_crashes_while_timed_is_named_excluded_and_the_rest_timed(tmp_path, cli, env, budget):
    """It passes the gate (one call of each op is fine) and crashes after 30 calls: in the
    auto-batch search of the first job, or in the sizing probe when the study has a budget."""
    d = study_dir(tmp_path, "crashy", ["-O2", "-DPQSIMD_CRASH_AFTER=30"])
    r = cli("run", d, *SMALL, "--budget", budget, env=env, timeout=600)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    line = next(l for l in r.stderr.splitlines() if "excluded crashy" in l)
    assert "crashy.gcc.shake from shake-256: it crashed (SIGSEGV) in op shake_32" in flat(r), r.stderr
    assert line
    recs = records(d)
    assert len(recs) == 2 and all(rec["variants"] == ["ref"] for rec in recs)  # the rest is timed
    assert cli("analyze", d, env=env).returncode == 0
    r = cli("run", d, env=env)  # the exclusion stands, named, and nothing is run twice
    assert r.returncode == 1 and "0 to run, 2 already finished" in flat(r), r.stderr
    assert "excluded crashy.gcc.shake from shake-256" in flat(r) and "to try it again" in flat(r)


def test_a_build_that_crashes_at_once_fails_its_gate_naming_the_op(tmp_path, cli, env):
    d = study_dir(tmp_path, "crashy", ["-O2", "-DPQSIMD_CRASH_AFTER=0"])
    r = cli("run", d, *SMALL, "--budget", "0.005", env=env)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert "gate FAILED crashy (gcc, shake): ops shake-256: op shake_32 crashed (SIGSEGV)" in flat(r)
    assert all(rec["variants"] == ["ref"] for rec in records(d)) and len(records(d)) == 2
    # analyze says why the variant has no data, not that it has none "yet"
    assert cli("analyze", d, env=env).returncode == 0
    warnings = json.loads((d / "results" / "summary.json").read_text())["warnings"]
    assert any("variant crashy is not timed: gcc build failed its gate" in w for w in warnings), warnings
    assert not any("no raw data yet" in w for w in warnings), warnings


@pytest.mark.parametrize("budget", ["0", "0.005"])  # with a budget, the sizing probe meets the hang
def test_a_build_that_hangs_is_stopped_at_the_time_limit_and_excluded(tmp_path, cli, env, budget):
    d = study_dir(tmp_path, "hangs", ["-O2", "-DPQSIMD_HANG_AFTER=30"])
    t0 = time.monotonic()
    r = cli("run", d, *SMALL, "--budget", budget, "--job-timeout", "3", env=env, timeout=300)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert "excluded hangs.gcc.shake from shake-256: it did not finish op shake_32 within the time limit of 3 s" \
           in flat(r), r.stderr
    assert time.monotonic() - t0 < 120
    recs = records(d)
    assert len(recs) == 2 and all(rec["variants"] == ["ref"] for rec in recs)
    assert all(rec["time_limit"] == {"seconds": 3.0, "from": "[study] job_timeout"} for rec in recs)
    assert not drivers_of(d)
    if budget == "0":  # the next run tries it again, saying so (the limit may have been too tight), not in silence
        r = cli("run", d, "--job-timeout", "4", env=env, timeout=300)
        assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
        assert "retry hangs.gcc.shake for shake-256: in an earlier run it did not finish op shake_32 within the time " \
               "limit of 3 s" in flat(r), r.stderr
        assert "within the time limit of 4 s" in flat(r), r.stderr  # tried, hung again, excluded again
        assert all(rec["time_limit"]["seconds"] == 4.0 for rec in records(d))


@pytest.mark.parametrize("spelling", ["inf", "none", "0"])
def test_no_job_timeout_is_spelt_inf_none_or_0(tmp_path, cli, env, spelling):
    d = tmp_path / "s"
    r = cli("run", d, *SMALL, "--variants", "ref", "--budget", "0", "--job-timeout", spelling, env=env)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert all(rec["time_limit"] == {"seconds": None, "from": "[study] job_timeout = 0: none"} for rec in records(d))
    r = cli("run", tmp_path / "t", *SMALL, "--budget", "inf", env=env)
    assert r.returncode == 2 and "'inf' is not a duration" in r.stderr and "Traceback" not in r.stderr


def test_time_limits_are_derived_from_the_op_times_and_recorded(tmp_path, cli, env):
    from pqsimd.run import limits
    from pqsimd.study import Study

    st = Study(schemes=["shake-256"], variants=["ref"], jobs=1, spins=10, reps=4, warmup=2, warmup_ns=50_000)
    timed = {"shake_32": [True, False], "empty": [True, True]}
    secs = [{"shake_32": 0.5, "empty": 0.0}, {"empty": 0.0}]
    got = limits.job_limit(st, "shake-256", ["a", "b"], timed, secs, None)
    # shake_32 on a: 12 spins x (4 x 0.5 s + 50 us) + 50 x 0.5 s; empty on a and b: the 1 us floor
    est = limits.START_S + 12 * (4 * 0.5 + 5e-5) + 50 * 0.5 + 2 * (12 * (4 * 1e-6 + 5e-5) + 50 * 1e-6)
    assert got["seconds"] == pytest.approx(limits.FLOOR_S + limits.FACTOR * est, abs=0.1)
    assert limits.job_limit(st, "shake-256", ["a", "b"], timed, [None, secs[1]], None)["seconds"] is None
    st.job_timeout = 0
    assert limits.job_limit(st, "shake-256", ["a", "b"], timed, secs, None)["seconds"] is None
    # a real study records the limit it ran under in every job
    d = tmp_path / "s"
    r = cli("run", d, *SMALL, "--variants", "ref", "--budget", "0", env=env)
    assert r.returncode == 0, r.stderr
    lim = records(d)[0]["time_limit"]
    assert lim["seconds"] >= limits.FLOOR_S and "estimate" in lim["from"]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_stopping_pqsimd_stops_its_driver_before_the_lock_is_released(tmp_path, env, sig):
    d = tmp_path / "s"
    args = [str(PQSIMD), "run", d, "--schemes", "shake-256", "--variants", "ref", "--preset", "quick", "--jobs", "1",
            "--spins", "100000", "--reps", "50", "--budget", "0"]
    # SIGINT as a terminal gives it, even where this suite runs in the background (which ignores it); no wait for an
    # idle CPU (the suite's other worker keeps one busy, and this test is about stopping, not claiming a CPU)
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**env, "PQSIMD_IDLE_WAIT": "0"},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not drivers_of(d) and proc.poll() is None:
            time.sleep(0.05)
        drivers = drivers_of(d)
        assert drivers, f"the driver never started: {proc.poll()=} {proc.stderr.read() if proc.poll() is not None else ''}"
        proc.send_signal(sig)  # to pqsimd alone, as `kill` or a SLURM scancel does: not its process group
        err = proc.communicate(timeout=60)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert not drivers_of(d)
    assert (d / ".lock").read_text() == ""  # released, and nothing times beside a resumed run
    assert not list((d / "raw").glob("*.parquet"))


def test_ops_that_only_some_builds_have_are_timed_where_they_exist(tmp_path, cli, env):
    d = study_dir(tmp_path, "no1k", ["-O2", "-DPQSIMD_NO_1K"])
    r = cli("run", d, *SMALL, "--budget", "0.005", env=env)
    assert r.returncode == 0, r.stderr
    for p in StudyDir(d).raw_files():
        df = pq.read_table(p).to_pandas()
        assert set(df[df.variant == "no1k"].op) == {"shake_32", "empty"}
        assert set(df[df.variant == "ref"].op) == {"shake_32", "shake_1k", "empty"}
        assert store.read_job_record(p)["timed"]["shake_1k"] == ["ref.gcc.shake"]
    r = cli("analyze", d, env=env)
    assert r.returncode == 0, r.stderr


def test_an_op_count_beyond_the_op_array_fails_the_gate(tmp_path, cli, env):
    d = study_dir(tmp_path, "badn", ["-O2", "-DPQSIMD_BAD_NOPS"])
    r = cli("run", d, *SMALL, "--budget", "0", env=env)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    line = next(l for l in " ".join(r.stderr.split()).split("gate FAILED")[1:] if l.startswith(" badn"))
    assert "ops shake-256:" in line and ("is n_ops larger than the op array?" in line or "crashed" in line), line


def test_seventy_builds_in_one_paired_job(tmp_path, tree, driver, env, monkeypatch):
    """No fixed word limit in the spec: 70 builds (copies of one, under paths with spaces), one
    op marked nowarm and one build not timing an op, all sampled as Python expects."""
    from pqsimd import catalog
    from pqsimd.build import build_variant
    from pqsimd.run import spec as spec_mod
    from pqsimd.run.job import parse_samples
    from pqsimd.study import Study

    monkeypatch.setenv("PQSIMD_FAMILY_PATH", env["PQSIMD_FAMILY_PATH"])
    fam = catalog.families()["shake"]
    b = build_variant(tree, fam, catalog.builtin_variants()["ref"], "gcc", driver)
    libs = []
    for i in range(70):
        lib = tmp_path / f"build {i} 'ü'" / "v.so"
        lib.parent.mkdir()
        shutil.copy(b.library, lib)
        libs.append(lib)
    st = Study(schemes=["shake-256"], variants=["ref"], jobs=1, spins=2, reps=2, warmup=1, design="paired",
               warmup_ns=1000)
    ids = [f"b{i}" for i in range(70)]
    sizing = {"schemes": {"shake-256": {"ops": {op: {"spins": 2, "reps": 2, "warmup": 1, "nowarm": op == "shake_1k",
                                                      "batch": {i: 3 for i in ids}} for op in fam.ops}}}}
    timed = spec_mod.timed_ops(st, "shake-256", [dict.fromkeys(fam.ops, 1e-6)] * 69 + [{"empty": 1e-6}])
    job = {"id": "paired.shake-256.0", "scheme": "shake-256", "index": 0}
    text = spec_mod.job_spec(st, job, ids, libs, -1, 7, sizing, None, timed)
    assert any(line.endswith(" nowarm") and len(line.split()) == 76 for line in text.splitlines())
    spec = tmp_path / "job.spec"
    spec.write_text(text)
    out = tmp_path / "out.tsv"
    with open(out, "w") as f:
        p = subprocess.run([str(driver.path), "run", str(spec)], stdout=f, stderr=subprocess.PIPE, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    cal = json.loads(out.read_text().splitlines()[0])
    builds = [(i, "ref", "gcc") for i in ids]
    table, n = parse_samples(out, job, builds, cal)
    assert n == spec_mod.expected_samples(st, job, ids, sizing, timed) == 3 * 2 * (69 * 3 + 1)
    df = table.to_pandas()
    assert (df[df.op == "shake_1k"].batch == 3).all() and len(df[df.op == "shake_1k"]) == 3 * 2 * 69
    assert df.pos.max() == 69  # one shuffled order over all 70 builds per spin


def test_a_study_path_with_spaces_quotes_and_unicode_runs_end_to_end(tmp_path, cli, env):
    d = tmp_path / "my studies" / "a 'b' \"c\" ü"
    r = cli("run", d, *SMALL, "--variants", "ref,avx2", "--budget", "0.005", env=env)
    assert r.returncode == 0, r.stderr
    assert len(StudyDir(d).raw_files()) == 2
    for cmd in ("analyze", "report", "show"):
        r = cli(cmd, d, env=env)
        assert r.returncode == 0 and "Traceback" not in r.stderr, (cmd, r.stderr)
