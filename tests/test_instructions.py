"""Exact instruction counts under callgrind: toggled on one op, stable, resumable, AVX-512 skipped."""

import math
import json
from fractions import Fraction

import subprocess

import pyarrow.parquet as pq
import pytest

from pqsimd import machine, store
from pqsimd.errors import CountError
from pqsimd.run import callgrind
from pqsimd.run import instructions as ins
from pqsimd.studydir import StudyDir

from conftest import require_tool, run_cli

if callgrind.valgrind_path() is None:  # make test installs it; a missing valgrind is a failure, not a skip
    require_tool("valgrind is not installed (make test installs it as root: tools/test-deps.sh)")

QUICK = ["--preset", "quick", "--schemes", "ml-kem-512", "--ops", "ntt,empty", "--metric", "instructions"]


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    d = tmp_path_factory.mktemp("ins") / "s"
    r = run_cli("run", d, *QUICK, "--variants", "ref,avx2")
    assert r.returncode == 0, r.stderr
    return d


def _df(directory, variant):
    t = pq.read_table(StudyDir(directory).raw_path(f"{variant}.gcc.ml-kem-512.instructions"))
    return t, t.to_pandas()


def test_raw_files_hold_exact_counts(study):
    assert sorted(p.name for p in StudyDir(study).raw_files()) == [
        "avx2.gcc.ml-kem-512.instructions.parquet", "ref.gcc.ml-kem-512.instructions.parquet"]
    for v in ("ref", "avx2"):
        t, df = _df(study, v)
        assert t.schema.remove_metadata() == store.RAW_SCHEMA
        assert (df.metric == "instructions").all() and df.ticks.isna().all() and not df.warmup.any()
        assert (df.batch == ins.N2 - ins.N1).all()
        assert sorted(df.spin.unique()) == list(range(ins.REPEATS))
        # empty: the loop's own instructions are what gets subtracted, so it reads exactly 0
        assert (df[df.op == "empty"].per_call == 0).all()
        ntt = df[df.op == "ntt"]
        assert (ntt.per_call > 100).all() and ntt.per_call.nunique() == 1 and ntt.raw.nunique() == 1
        rec = json.loads(t.schema.metadata[store.JOB_METADATA_KEY])
        assert rec["deterministic"] == {"ntt": True, "empty": True}
        co = Fraction(rec["calibration"]["call_overhead_exact"])
        # raw / batch - empty's per call == per_call, exactly
        assert all(Fraction(int(r.raw), int(r.batch)) - co == Fraction(r.per_call) for r in ntt.itertuples())
    ratio = _df(study, "ref")[1].query("op == 'ntt'").per_call.iloc[0] / _df(study, "avx2")[1].query("op == 'ntt'").per_call.iloc[0]
    assert 35.5 * 0.85 < ratio < 35.5 * 1.15  # the paper's Table 1 NTT cycle ratio at ML-KEM-512


def test_manifest_records_the_method(study):
    m = json.loads((study / "manifest.json").read_text())
    info = m["metrics"]["instructions"]
    assert info["status"] == "ok" and info["tool"].startswith("valgrind") and info["skipped"] == {}
    assert set(m["jobs"]) == {"ref.gcc.ml-kem-512.instructions", "avx2.gcc.ml-kem-512.instructions"}


def test_rerun_resumes_without_recounting(study):
    sd = StudyDir(study)
    before = {p.name: p.stat().st_mtime_ns for p in sd.raw_files()}
    r = run_cli("run", study, *QUICK, "--variants", "ref,avx2")
    assert r.returncode == 0, r.stderr
    assert "0 jobs to run, 2 already finished" in r.stderr
    assert {p.name: p.stat().st_mtime_ns for p in sd.raw_files()} == before


def test_toggled_count_of_one_op_is_stable_and_empty_is_the_loop(study):
    sd = StudyDir(study)
    lib = sd.variant_path("ref.gcc.ml-kem")
    a = ins.measure_pair(sd.driver_path, lib, "ml-kem-512", "invntt")
    b = ins.measure_pair(sd.driver_path, lib, "ml-kem-512", "invntt")
    assert a == b and a.raw > 0
    e = ins.measure_pair(sd.driver_path, lib, "ml-kem-512", "empty")
    # collection is on only inside pqsimd_measure: a handful of instructions per empty call,
    # nothing of process start-up or the op's setup (which would be >> 1e5)
    assert 0 < e.exact <= 8 and e.ir2 < 1000
    assert ins.per_call(e, e.exact) == 0


def test_one_process_for_many_ops_counts_what_one_process_per_op_counts(study):
    """The batch (one callgrind process, a dump after each pqsimd_measure) against the oracle of one
    process per op and run: the same Ir, exactly, for ops with and without setup."""
    sd = StudyDir(study)
    lib = sd.variant_path("ref.gcc.ml-kem")
    ops = ["empty", "ntt", "kem_decaps", "poly_tomsg", "indcpa_keypair"]
    batch = ins.measure_pairs(sd.driver_path, lib, "ml-kem-512", ops)
    for op in ops:
        alone = (callgrind.count_instructions_batch(sd.driver_path, lib, "ml-kem-512", [(op, n, None)])[0][0]
                 for n in (ins.N1, ins.N2))
        assert (batch[op].ir1, batch[op].ir2) == tuple(alone), op
    assert batch["kem_decaps"].raw > batch["ntt"].raw > batch["empty"].raw > 0


def test_a_batch_that_stops_names_the_op_it_stopped_at(study):
    sd = StudyDir(study)
    lib = sd.variant_path("ref.gcc.ml-kem")
    with pytest.raises(CountError, match=r"^no_such_op: callgrind run failed \(driver: unknown op no_such_op\)"):
        callgrind.count_instructions_batch(sd.driver_path, lib, "ml-kem-512",
                                           [("ntt", 2, None), ("no_such_op", 2, None), ("ntt", 10, None)])
    r = subprocess.run([str(sd.driver_path), "count", str(lib), "ml-kem-512", "ntt", "2", "ntt"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "usage: count LIB SCHEME OP CALLS [OP CALLS]..." in r.stderr
    r = subprocess.run([str(sd.driver_path), "count", str(lib), "ml-kem-512", "ntt", "-3"], capture_output=True, text=True)
    assert r.returncode == 2 and "CALLS must be a count of calls, got -3" in r.stderr


def test_batches_split_a_job_into_contiguous_parts():
    ops = [f"op{k}" for k in range(7)]
    for parts in (1, 2, 3, 7, 20):
        got = ins.chunks(ops, parts)
        assert [op for part in got for op in part] == ops and all(got)
        assert len(got) == min(parts, len(ops)) and max(map(len, got)) - min(map(len, got)) <= 1


def test_parsers():
    assert callgrind.parse_callgrind_totals("events: Ir\nfn=(1) f\n0 5\n\ntotals: 206803\n") == 206803
    assert callgrind.parse_callgrind_totals("summary: 42\n") == 42
    with pytest.raises(ValueError):
        callgrind.parse_callgrind_totals("events: Ir\n")
    err = ("vex amd64->IR: unhandled instruction bytes: 0x62 0xE1 0xFD 0x8 0x6F 0x1D 0x90 0x7A 0x0 0x0\n"
           "==1== Process terminating with default action of signal 4 (SIGILL)\n")
    assert "AVX-512" in callgrind.unhandled_instruction(err)
    assert callgrind.unhandled_instruction("==1== Process terminating with default action of signal 4 (SIGILL)") is not None
    assert callgrind.unhandled_instruction("==1== I   refs: 5") is None
    p = ins.Pair(ir1=100, ir2=125, n1=2, n2=10)
    assert p.raw == 25 and p.batch == 8 and ins.per_call(p, Fraction(5, 8)) == Fraction(20, 8)


@pytest.mark.skipif("avx512f" not in machine.cpu_flags(), reason="needs an AVX-512 CPU to build an AVX-512 variant")
def test_avx512_variant_is_single_stepped_with_valgrinds_reason(tmp_path):
    """Valgrind cannot decode the AVX-512 build: it is counted by single-stepping it natively (run/stepcount.py),
    and the job record says so with valgrind's reason; where ptrace is not allowed it is skipped with both reasons."""
    from pqsimd import store
    from pqsimd.run import stepcount

    d = tmp_path / "native"
    r = run_cli("run", d, *QUICK, "--variants", "ref-native,ref")
    assert r.returncode == 0, r.stderr
    info = json.loads((d / "manifest.json").read_text())["metrics"]["instructions"]
    if stepcount.available() is not None:
        line = next(l for l in r.stderr.splitlines() if "ref-native.gcc.ml-kem: skipped for metric instructions" in l)
        assert "valgrind cannot decode" in line and "single-stepped" in line
        assert "AVX-512" in info["skipped"]["ref-native.gcc.ml-kem"]
        return
    assert [p.name for p in StudyDir(d).raw_files()] == ["ref-native.gcc.ml-kem-512.instructions.parquet",
                                                         "ref.gcc.ml-kem-512.instructions.parquet"]
    rec = store.read_job_record(d / "raw" / "ref-native.gcc.ml-kem-512.instructions.parquet")
    assert rec["backend"] == "ptrace-step" and "AVX-512" in rec["stepped_because"]
    assert store.read_job_record(d / "raw" / "ref.gcc.ml-kem-512.instructions.parquet")["backend"] == "callgrind"
    assert not info["skipped"]


def test_without_valgrind_the_metric_is_unavailable_with_the_reason(tmp_path, monkeypatch):
    from types import SimpleNamespace

    (tmp_path / "manifest.json").write_text("{}")
    monkeypatch.setattr(callgrind, "valgrind_path", lambda: None)
    msgs = []
    study = SimpleNamespace(ops=["ntt"], schemes=["ml-kem-512"])
    assert ins.execute(StudyDir(tmp_path), study, [], [], console=SimpleNamespace(print=lambda m, **k: msgs.append(m))) is False
    info = json.loads((tmp_path / "manifest.json").read_text())["metrics"]["instructions"]
    assert info["status"] == "unavailable" and "apt-get install valgrind" in info["reason"]
    assert "valgrind not found" in msgs[0]


def test_ticks_and_instructions_in_one_study_feed_the_mechanism_view(tmp_path):
    import pandas as pd

    d = tmp_path / "both"
    r = run_cli("run", d, "--preset", "quick", "--schemes", "ml-kem-512", "--variants", "ref,avx2", "--ops", "ntt,empty",
                "--jobs", "1", "--spins", "5", "--reps", "3", "--metric", "ticks,instructions")
    assert r.returncode == 0, r.stderr
    names = sorted(p.name for p in StudyDir(d).raw_files())
    assert names == ["avx2.gcc.ml-kem-512.instructions.parquet", "paired.ml-kem-512.0.parquet",
                     "ref.gcc.ml-kem-512.instructions.parquet"]
    r = run_cli("analyze", d, "--bootstrap", "200")
    assert r.returncode == 0, r.stderr
    ilp = pd.read_parquet(d / "results" / "ilp.parquet")
    row = ilp.query("op == 'ntt' and stage == 'hand_simd'").iloc[0]
    assert 35.5 * 0.85 < row.instruction_ratio < 35.5 * 1.15
    assert row.time_speedup > 0 and row.throughput_gain == pytest.approx(row.time_speedup / row.instruction_ratio)
    s = json.loads((d / "results" / "summary.json").read_text())
    assert s["core_per_tsc"] is not None and math.isfinite(s["core_per_tsc"]) and s["core_per_tsc"] > 0
    assert "empty" not in set(ilp["op"])  # the family's self-check op is no mechanism
    # `pqsimd report` carries the view plus the counters/energy tables that say why they are empty
    r = run_cli("report", d)
    assert r.returncode == 0, r.stderr
    rep = d / "report" / "mechanism"
    for f in ("table_cycles_per_instruction_saved.md", "fig_instructions_vs_time.png", "table_counters.md", "table_energy.md"):
        assert (rep / f).exists(), f
    html = (d / "report" / "index.html").read_text()
    assert 'data-table="table_cycles_per_instruction_saved"' in html and "No counter data" in html and "No energy data" in html


def test_parse_calls_to_a_namespaced_function():
    text = ("fn=(1) pqsimd_measure\n0 5\ncfn=(2) PQCLEAN_MLDSA44_CLEAN_poly_challenge\ncalls=3 0\n0 900\n"
            "cfn=(3) PQCLEAN_MLDSA44_CLEAN_poly_ntt\ncalls=7 0\n0 70\ncfn=(2)\ncalls=2 0\n0 600\n")
    assert callgrind.parse_calls_to(text, "poly_challenge") == 5
    assert callgrind.parse_calls_to(text, "poly_ntt") == 7 and callgrind.parse_calls_to(text, "nothing") is None


def test_signing_rejection_iterations_are_counted(tmp_path):
    """ML-DSA names poly_challenge as the counter of sign and sign_mix (one call per iteration of
    the rejection loop): the instructions metric records its calls per call, and analyze tabulates them."""
    import pandas as pd

    d = tmp_path / "dsa"
    r = run_cli("run", d, "--preset", "quick", "--schemes", "ml-dsa-44", "--variants", "ref,avx2", "--ops",
                "sign_mix,ntt,empty", "--metric", "instructions")
    assert r.returncode == 0, r.stderr
    rec = store.read_job_record(StudyDir(d).raw_path("ref.gcc.ml-dsa-44.instructions"))
    cc = rec["call_counts"]
    assert set(cc) == {"sign_mix"} and cc["sign_mix"]["function"] == "poly_challenge"
    vals = [Fraction(x) for x in cc["sign_mix"]["per_call"]]
    assert len(vals) == ins.REPEATS and all(1 <= v <= 30 for v in vals)  # FIPS 204 expects ~4.25 for ML-DSA-44
    r = run_cli("analyze", d, "--bootstrap", "200")
    assert r.returncode == 0, r.stderr
    t = pd.read_csv(d / "results" / "call_counts.csv")
    assert set(t["variant"]) == {"ref", "avx2"} and (t["per_call"] >= 1).all()


def test_call_counts_pool_both_runs_so_a_hedged_op_never_reads_zero():
    """Signing draws fresh randomness per process: the N1 run may iterate as often as the N2 run (seen:
    26 challenge calls in 2 signatures). A difference would read 0 iterations per call; the pooled
    count reads (26 + 26) / 12, and a deterministic op gives its exact rate either way."""
    p = ins.Pair(ir1=1000, ir2=5000, n1=2, n2=10, calls1=26, calls2=26)
    assert p.counted == Fraction(52, 12)
    assert ins.Pair(ir1=0, ir2=0, n1=2, n2=10, calls1=6, calls2=30).counted == 3
    assert ins.Pair(ir1=0, ir2=0).counted is None


def test_an_op_over_the_studys_cap_is_not_counted_and_the_record_says_why(tmp_path):
    """Like timing, counting leaves out an op one call of which takes longer than max_call_s (under
    callgrind it would take ~50 times as long, 13 times a run); the job records say why. The cap sits
    4-5x from both sides: refo0's decaps (~160 us a call here) is over it, avx2's (~8 us) and ntt under."""
    d = tmp_path / "cap"
    r = run_cli("run", d, "--preset", "quick", "--schemes", "ml-kem-512", "--ops", "ntt,kem_decaps,empty",
                "--variants", "refo0,avx2", "--metric", "instructions,mix", "--max-call", "0.00004")
    assert r.returncode == 0, r.stderr
    for v, counted in (("refo0", {"ntt", "empty"}), ("avx2", {"ntt", "kem_decaps", "empty"})):
        for metric in ("instructions", "mix"):
            t = pq.read_table(StudyDir(d).raw_path(f"{v}.gcc.ml-kem-512.{metric}"))
            assert set(t.to_pandas().op) == counted, (v, metric)
            rec = json.loads(t.schema.metadata[store.JOB_METADATA_KEY])
            if v == "refo0":
                assert "over the study's cap of 4e-05 s (max_call_s" in rec["not_counted"]["kem_decaps"]
            else:
                assert "not_counted" not in rec
    r = run_cli("analyze", d, "--bootstrap", "200")
    assert r.returncode == 0, r.stderr
