"""`--metric mix`: the dynamic instruction mix per op and variant (callgrind per instruction +
objdump), exact to the instructions metric; the llvm-mca cost model beside the measured time;
`pqsimd explain`; the report's mechanism parts. valgrind and llvm-mca are required (make test
installs them): a missing one is a failure, not a skip."""

import json
import os
import re
import shutil
import subprocess
from collections import Counter
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from pqsimd import machine, store
from pqsimd.run import callgrind, classify, costmodel, disasm, mix
from pqsimd.studydir import StudyDir

from conftest import require_tool, run_cli

if callgrind.valgrind_path() is None:
    require_tool("valgrind is not installed (make test installs it as root: tools/test-deps.sh)")
if costmodel.mca_path() is None:
    require_tool("llvm-mca is not installed (make test installs llvm-16: apt-get install llvm-16)")

FIXTURES = Path(__file__).parent / "fixtures" / "families"
CPUS = ["znver1", "znver2", "znver3", "znver4", "skylake"]
SCHEME = "ml-kem-512"
STUDY = ["--preset", "quick", "--schemes", SCHEME, "--ops", "ntt,gen_a,empty", "--variants", "ref,avx2",
         "--jobs", "2", "--spins", "5", "--reps", "3", "--metric", "ticks,instructions,mix", "--mca-cpu", ",".join(CPUS)]


def _wired(directory: Path) -> None:
    """analyze writes the mix tables (analyze/mix.py wired into analyze/__init__.py and load.py)."""
    assert (directory / "results" / "mix.parquet").exists(), (
        "pqsimd analyze did not write results/mix.parquet: analyze/__init__.py must call "
        "analyze.mix.write_mix_results and analyze/load.py must skip *.mix.parquet (see analyze/mix.py)")


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    d = tmp_path_factory.mktemp("mix") / "s"
    r = run_cli("run", d, *STUDY)
    assert r.returncode == 0, r.stderr
    r = run_cli("analyze", d, "--bootstrap", "200")
    assert r.returncode == 0, r.stderr
    return d


def _raw(directory: Path, variant: str, metric: str = "mix"):
    t = pq.read_table(StudyDir(directory).raw_path(f"{variant}.gcc.{SCHEME}.{metric}"))
    return t, t.to_pandas(), json.loads(t.schema.metadata[store.JOB_METADATA_KEY])


def _classes(df: pd.DataFrame, op: str) -> dict[str, Fraction]:
    d = df[(df.op == op) & df.metric.str.startswith(mix.CLASS_PREFIX)]
    return {m[len(mix.CLASS_PREFIX):]: Fraction(int(r), int(b)) for m, r, b in zip(d.metric, d.raw, d.batch)}


def _mnemonics(df: pd.DataFrame, op: str) -> dict[tuple[str, int, str], Fraction]:
    d = df[(df.op == op) & df.metric.str.startswith(mix.MNEMONIC_PREFIX)]
    return {mix.parse_mnemonic_metric(m): Fraction(int(r), int(b)) for m, r, b in zip(d.metric, d.raw, d.batch)}


# --- raw data: exact, and summing to the instructions metric ------------------------------------

def test_raw_files_are_raw_schema_rows(study):
    names = sorted(p.name for p in StudyDir(study).raw_files() if p.name.endswith(".mix.parquet"))
    assert names == [f"avx2.gcc.{SCHEME}.mix.parquet", f"ref.gcc.{SCHEME}.mix.parquet"]
    classes = set(classify.config().classes)
    for v in ("ref", "avx2"):
        t, df, rec = _raw(study, v)
        assert t.schema.remove_metadata() == store.RAW_SCHEMA
        assert (df.batch == mix.N2 - mix.N1).all() and (df.spin == 0).all() and not df.warmup.any()
        assert df.ticks.isna().all()
        for op in ("ntt", "gen_a", "empty"):
            assert set(_classes(df, op)) == classes  # one row per (op, variant, class), zeros included
            assert {f"mca.{c}" for c in CPUS} <= set(df[df.op == op].metric)
        assert set(df.metric.map(lambda m: m.split(".")[0])) == {"mix", "mca"}
        assert rec["metric"] == "mix" and rec["tool"].startswith("valgrind") and rec["objects"]
        assert rec["mca"]["tool"].startswith("llvm-mca") and rec["mca"]["requested"] == CPUS
        assert rec["mca"]["command"][0] == costmodel.mca_path() and "-mcpu=" in " ".join(rec["mca"]["command"])


def test_classes_and_mnemonics_sum_exactly_to_the_instructions_metric(study):
    for v in ("ref", "avx2"):
        _, df, rec = _raw(study, v)
        _, idf, irec = _raw(study, v, "instructions")
        for op in ("ntt", "gen_a", "empty"):
            cls, mns = _classes(df, op), _mnemonics(df, op)
            exact = Fraction(irec["per_call_exact"][op][0])
            assert sum(cls.values()) == exact == Fraction(rec["per_call_exact"][op]), (v, op)
            assert sum(mns.values()) == exact
            for c, n in cls.items():  # each class row is the sum of its mnemonic rows
                assert sum(x for (_m, _w, k), x in mns.items() if k == c) == n, (v, op, c)
            assert float(sum(cls.values())) == idf[idf.op == op].per_call.iloc[0]
        assert all(n == 0 for n in _classes(df, "empty").values()) and not _mnemonics(df, "empty")


def test_ntt_vector_multiplies_and_shuffles_replace_scalar_multiply_and_alu(study):
    ref, avx2 = _classes(_raw(study, "ref")[1], "ntt"), _classes(_raw(study, "avx2")[1], "ntt")
    assert ref["scalar_mul"] > 1000 and ref["scalar_alu"] > 5000
    assert ref["vec_mul"] == ref["shuffle_lane"] == ref["shuffle_cross"] == 0
    assert avx2["scalar_mul"] == 0 and avx2["scalar_alu"] < ref["scalar_alu"] / 100
    assert avx2["vec_mul"] > 100 and avx2["shuffle_lane"] + avx2["shuffle_cross"] > 0
    mns = _mnemonics(_raw(study, "avx2")[1], "ntt")
    assert {m for (m, w, c) in mns if c == "vec_mul"} >= {"vpmullw", "vpmulhw"}
    assert {w for (m, w, c) in mns if c.startswith(("vec_", "shuffle_"))} == {256}  # ymm, nothing wider
    # the 20,673 -> 588: NTT's instructions per call, ref -> avx2 (gcc builds may move by a few)
    assert abs(sum(ref.values()) - 20673) < 200 and abs(sum(avx2.values()) - 588) < 20


def test_gen_a_avx2_executes_pdep_and_pext(study):
    avx2, ref = _mnemonics(_raw(study, "avx2")[1], "gen_a"), _mnemonics(_raw(study, "ref")[1], "gen_a")
    for m in ("pdep", "pext"):
        n = avx2[(m, 0, "bmi")]
        assert n > 0 and n.denominator == 1  # exact executions per call
        assert not any(k[0] == m for k in ref)


def test_llvm_mca_estimates_per_cpu_model(study):
    _, df, rec = _raw(study, "avx2")
    est = {m[4:]: v for m, v in df[(df.op == "gen_a") & df.metric.str.startswith("mca.")][["metric", "per_call"]].values}
    assert set(est) == set(CPUS) and all(v > 0 for v in est.values())
    gen = rec["mca"]["cpus"]
    for cpu in CPUS:
        assert gen[cpu]["gen_a"]["coverage"] >= 0.95 and gen[cpu]["gen_a"]["blocks"] > 0
    pdep = {cpu: gen[cpu]["gen_a"]["mnemonics"]["pdep"]["max_latency"] for cpu in CPUS}
    slow = classify.config().mca["slow_latency"]
    # llvm-mca models pdep with latency 100 on Zen 1/2, a few cycles elsewhere
    assert pdep["znver1"] >= slow and pdep["znver2"] >= slow and pdep["znver3"] < slow and pdep["znver4"] < slow
    assert est["znver1"] > est["znver3"]
    assert all(v == 0 for v in df[(df.op == "empty") & df.metric.str.startswith("mca.")].per_call)


# --- analysis ----------------------------------------------------------------------------------

def test_analysis_tables(study):
    _wired(study)
    res = study / "results"
    m = pd.read_parquet(res / "mix.parquet")
    assert set(m["level"]) == {"class", "mnemonic"}
    r = pd.read_parquet(res / "mix_ratios.parquet")
    ntt = r[(r.op == "ntt") & (r.stage == "hand_simd")].set_index("class")
    assert ntt.loc["total", "base_count"] > 20000 and ntt.loc["total", "var_count"] < 700
    assert ntt.loc["scalar_alu", "share_of_difference"] + ntt.loc["scalar_mul", "share_of_difference"] > 0.5
    assert ntt.loc["vec_mul", "difference"] < 0  # added by the hand-written code
    assert ntt.drop("total")["share_of_difference"].sum() == pytest.approx(1.0)
    o = pd.read_parquet(res / "mix_ops.parquet").set_index(["op", "variant"])
    assert o.loc[("ntt", "avx2"), "max_width"] == 256 and o.loc[("ntt", "ref"), "vector"] == 0
    assert o.loc[("ntt", "ref"), "ticks_per_instruction"] > 0
    mca = pd.read_parquet(res / "mca.parquet")
    assert set(mca["cpu"]) == set(CPUS)
    timed = mca[mca.op != "empty"]
    assert timed["measured_cycles"].gt(0).all() and timed["agreement"].isin(["agrees", "model lower", "model higher"]).all()
    s = json.loads((res / "summary.json").read_text())
    assert not any(m.startswith(("mix.", "mca.")) for m in s["study"]["metrics"])  # not in the groups


def test_explain_ntt(study):
    _wired(study)
    r = run_cli("explain", study, "--scheme", SCHEME, "--op", "ntt")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    cls = _classes(_raw(study, "ref")[1], "ntt"), _classes(_raw(study, "avx2")[1], "ntt")
    assert f"ref {int(sum(cls[0].values())):,}" in out and f"avx2 {int(sum(cls[1].values())):,}" in out
    line = next(l for l in out.splitlines() if "by class" in l)
    assert "scalar multiply" in line and "vector multiply" in line and "scalar ALU" in line
    assert "ticks/instruction" in out and "znver1" in out and "likely reason" in out
    assert len(out.splitlines()) <= 13  # a few lines


def test_explain_gen_a_names_pdep_and_pext_from_the_cost_model(study):
    _wired(study)
    r = run_cli("explain", study, "--scheme", SCHEME, "--op", "gen_a", "--variants", "ref,avx2")
    assert r.returncode == 0, r.stderr
    n = {m: int(_mnemonics(_raw(study, "avx2")[1], "gen_a")[(m, 0, "bmi")]) for m in ("pdep", "pext")}
    out = r.stdout
    assert f"pdep {n['pdep']:,}" in out and f"pext {n['pext']:,}" in out
    # the cost model says where they are slow: znver1/znver2 (llvm-mca latency 100)
    line = next(l for l in out.splitlines() if "pdep (" in l)
    assert "znver1, znver2" in line and "latency 100" in line


def test_explain_names_pdep_as_the_likely_reason_on_a_zen1_host(study, tmp_path):
    """Where this host's CPU model makes them slow (here: the results as if llvm-mca had named the
    host znver1), pdep/pext are the likely reason for the per-instruction slowdown."""
    _wired(study)
    d = tmp_path / "z1"
    shutil.copytree(study / "results", d / "results")
    mca = pd.read_parquet(d / "results" / "mca.parquet")
    mca["host_cpu"] = "znver1"
    mca.to_parquet(d / "results" / "mca.parquet")
    o = pd.read_parquet(d / "results" / "mix_ops.parquet")
    # make avx2's gen_a slower than ref's per call, as on a CPU where pdep is microcoded
    sel = (o.op == "gen_a") & (o.variant == "avx2")
    ref_t = float(o[(o.op == "gen_a") & (o.variant == "ref")]["ticks"].iloc[0])
    o.loc[sel, "ticks"] = 1.5 * ref_t
    o.loc[sel, "ticks_per_instruction"] = o.loc[sel, "ticks"] / o.loc[sel, "instructions"]
    o.to_parquet(d / "results" / "mix_ops.parquet")
    c = pd.read_parquet(d / "results" / "comparisons.parquet")  # and the comparison `show` prints, alike
    sel = (c.metric == "ticks") & (c.op == "gen_a") & (c.baseline == "ref") & (c.variant == "avx2")
    c.loc[sel, ["speedup", "ci_low", "ci_high", "verdict"]] = [1 / 1.5, 1 / 1.55, 1 / 1.45, "slower"]
    c.to_parquet(d / "results" / "comparisons.parquet")
    r = run_cli("explain", d, "--scheme", SCHEME, "--op", "gen_a")
    assert r.returncode == 0, r.stderr
    line = next(l for l in r.stdout.splitlines() if "likely reason" in l)
    assert "slower than ref" in line and "pdep" in line and "pext" in line and "this host's model (znver1)" in line
    assert "avx2 is 1.50× slower than ref" in line, line


def test_explain_prints_the_speedup_show_prints(study, tmp_path):
    """One number per comparison: explain's speedup is the comparison's (the typical layout's estimate,
    interval and verdict, as show and the report print it), not the ratio of the per-build medians."""
    _wired(study)
    d = tmp_path / "one"
    shutil.copytree(study / "results", d / "results")
    c = pd.read_parquet(d / "results" / "comparisons.parquet")
    sel = (c.metric == "ticks") & (c.op == "ntt") & (c.baseline == "ref") & (c.variant == "avx2")
    c.loc[sel, ["speedup", "ci_low", "ci_high", "verdict"]] = [12.345, 12.1, 12.6, "faster"]
    c.to_parquet(d / "results" / "comparisons.parquet")
    r = run_cli("explain", d, "--scheme", SCHEME, "--op", "ntt")
    assert r.returncode == 0, r.stderr
    line = next(l for l in r.stdout.splitlines() if l.strip().startswith("speedup"))
    assert "avx2 12.3× faster [12.1, 12.6]" in line, line
    assert "each build's median" in r.stdout  # the per-build figures say what they are


def test_explain_refuses_unknown_names_in_one_line(study):
    _wired(study)
    r = run_cli("explain", study, "--scheme", SCHEME, "--op", "nope")
    assert r.returncode == 2 and "Traceback" not in r.stderr and "ntt" in r.stderr
    r = run_cli("explain", study, "--scheme", SCHEME, "--op", "ntt", "--variants", "ref,refo0")
    assert r.returncode == 2 and "refo0" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_explain_gives_no_likely_reason_inside_the_threshold_and_refuses_one_variant_twice(study, tmp_path):
    _wired(study)
    d = tmp_path / "same"
    shutil.copytree(study / "results", d / "results")
    o = pd.read_parquet(d / "results" / "mix_ops.parquet")
    sel = (o.op == "gen_a") & (o.variant == "avx2")
    ref_t = float(o[(o.op == "gen_a") & (o.variant == "ref")]["ticks"].iloc[0])
    o.loc[sel, "ticks"] = 1.01 * ref_t  # 1% slower: inside the study's ±2%
    o.loc[sel, "ticks_per_instruction"] = o.loc[sel, "ticks"] / o.loc[sel, "instructions"]
    o.to_parquet(d / "results" / "mix_ops.parquet")
    c = pd.read_parquet(d / "results" / "comparisons.parquet")  # and the comparison `show` prints, alike
    sel = (c.metric == "ticks") & (c.op == "gen_a") & (c.baseline == "ref") & (c.variant == "avx2")
    c.loc[sel, ["speedup", "ci_low", "ci_high", "verdict"]] = [1 / 1.01, 0.985, 0.995, "same"]
    c.to_parquet(d / "results" / "comparisons.parquet")
    r = run_cli("explain", d, "--scheme", SCHEME, "--op", "gen_a")
    assert r.returncode == 0, r.stderr
    line = next(l for l in r.stdout.splitlines() if "likely reason" in l)
    assert "none needed" in line and "within ±2%" in line and "slower" not in line, line
    r = run_cli("explain", study, "--scheme", SCHEME, "--op", "ntt", "--variants", "ref,ref")
    assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert "names ref twice" in r.stderr


def test_report_has_the_mix_figure_table_and_findings(study):
    _wired(study)
    r = run_cli("report", study)
    assert r.returncode == 0, r.stderr
    rep = study / "report" / "mechanism"
    for f in ("fig_mix_ml-kem.png", "fig_mix_ml-kem.pdf", "fig_mix_ml-kem.svg", "table_mix_ml-kem.md",
              "table_mix_ml-kem.csv", "table_mca_ml-kem.md"):
        assert (rep / f).exists(), f
    html = (study / "report" / "index.html").read_text()
    assert 'data-findings="ml-kem"' in html and 'data-table="table_mix_ml-kem"' in html
    findings = re.search(r'data-findings="ml-kem">(.*?)</ul>', html, re.S).group(1)
    assert "fewer instructions" in findings and "pdep" in findings and "znver1" in findings


def test_rerun_is_resumable_and_a_new_cpu_model_is_estimated(study, tmp_path):
    d = tmp_path / "copy"
    shutil.copytree(study, d, ignore=shutil.ignore_patterns(".lock"))
    r = run_cli("run", d, *STUDY)
    assert r.returncode == 0, r.stderr
    assert f"for {', '.join(CPUS)}): 0 jobs to run, 2 already finished" in " ".join(r.stderr.split())
    more = [*STUDY[:-1], ",".join(CPUS + ["haswell"])]
    r = run_cli("run", d, *more)
    assert r.returncode == 0, r.stderr
    _, df, rec = _raw(d, "avx2")
    assert "mca.haswell" in set(df.metric) and rec["mca"]["requested"] == CPUS + ["haswell"]


# --- the hand-written asm fixture: the mix is what the disassembly says -------------------------

def _objdump_function(lib: Path, name: str) -> list[tuple[str, int]]:
    out = subprocess.run(["objdump", "-d", "-M", "intel", "--no-show-raw-insn", str(lib)], capture_output=True,
                         text=True, check=True).stdout
    body = out.split(f"<{name}>:\n", 1)[1].split("\n\n", 1)[0]
    insns = []
    for line in body.splitlines():
        text = line.split("\t", 1)[1].strip()
        mnemonic = text.split()[0]
        if mnemonic in ("data16", "cs") or mnemonic.startswith("nop"):
            break  # the alignment padding after the ret
        insns.append((mnemonic, 256 if "ymm" in text else 0))
    return insns


@pytest.fixture(scope="module")
def asm_study(tmp_path_factory):
    if not {"avx2", "bmi2", "popcnt"} <= machine.cpu_flags():
        pytest.skip("the asm fixture op needs AVX2, BMI2 and POPCNT")
    d = tmp_path_factory.mktemp("asm") / "s"
    env = {**os.environ, "PQSIMD_FAMILY_PATH": str(FIXTURES)}
    r = run_cli("run", d, "--preset", "quick", "--schemes", "asm-kernel", "--variants", "ref", "--metric",
                "instructions,mix", "--mca-cpu", "znver1,znver3", env=env)
    assert r.returncode == 0, r.stderr
    return d


def test_mix_of_a_hand_written_asm_op_equals_its_disassembly(asm_study):
    t = pq.read_table(StudyDir(asm_study).raw_path("ref.gcc.asm-kernel.mix"))
    df = t.to_pandas()
    lib = StudyDir(asm_study).variant_path("ref.gcc.asm")
    kernel = _objdump_function(lib, "pqsimd_fixture_asm_kernel")
    assert kernel == [("vpmullw", 256)] * 3 + [("vpshufb", 256)] * 2 + [("pdep", 0), ("popcnt", 0), ("ret", 0)]
    # per call: the kernel's instructions once each, minus the self-check op's (its ret)
    predicted = Counter(kernel)
    predicted.subtract(Counter(_objdump_function(lib, "op_empty")))
    predicted = {k: v for k, v in predicted.items() if v}
    got = {(m, w): n for (m, w, _c), n in _mnemonics(df, "asm_kernel").items()}
    assert got == predicted == {("vpmullw", 256): 3, ("vpshufb", 256): 2, ("pdep", 0): 1, ("popcnt", 0): 1}
    cls = {c: n for c, n in _classes(df, "asm_kernel").items() if n}
    assert cls == {"vec_mul": 3, "shuffle_lane": 2, "bmi": 2}
    assert not _mnemonics(df, "empty") and not any(_classes(df, "empty").values())
    idf = pq.read_table(StudyDir(asm_study).raw_path("ref.gcc.asm-kernel.instructions")).to_pandas()
    assert idf[idf.op == "asm_kernel"].per_call.unique().tolist() == [7.0] == [float(sum(cls.values()))]


def test_the_asm_ops_dependent_pdep_chain_costs_its_model_latency(asm_study):
    df = pq.read_table(StudyDir(asm_study).raw_path("ref.gcc.asm-kernel.mix")).to_pandas()
    est = dict(df[(df.op == "asm_kernel") & df.metric.str.startswith("mca.")][["metric", "per_call"]].values)
    assert 100 <= est["mca.znver1"] < 110  # pdep rdx <- rdx: llvm-mca's Zen 1 latency of 100 per call
    assert est["mca.znver3"] < 10


def test_without_llvm_mca_the_estimate_is_unavailable_and_the_mix_goes_on(tmp_path):
    if not {"avx2", "bmi2", "popcnt"} <= machine.cpu_flags():
        pytest.skip("the asm fixture op needs AVX2, BMI2 and POPCNT")
    env = {**os.environ, "PQSIMD_FAMILY_PATH": str(FIXTURES), "PQSIMD_LLVM_MCA": str(tmp_path / "no-llvm-mca")}
    d = tmp_path / "s"
    r = run_cli("run", d, "--preset", "quick", "--schemes", "asm-kernel", "--variants", "ref", "--metric", "mix", env=env)
    assert r.returncode == 0, r.stderr
    assert "no cost-model estimate" in r.stderr and "llvm-mca not found" in r.stderr
    t = pq.read_table(StudyDir(d).raw_path("ref.gcc.asm-kernel.mix"))
    df = t.to_pandas()
    assert not df.metric.str.startswith("mca.").any() and df[df.op == "asm_kernel"].per_call.sum() > 0
    rec = json.loads(t.schema.metadata[store.JOB_METADATA_KEY])
    assert rec["mca"]["status"] == "unavailable" and "llvm-mca not found" in rec["mca"]["reason"]
    info = json.loads((d / "manifest.json").read_text())["metrics"]["mix"]
    assert info["status"] == "ok" and info["mca"]["status"] == "unavailable" and "apt-get install llvm" in info["mca"]["reason"]


# --- AVX-512: valgrind cannot run it ------------------------------------------------------------

@pytest.mark.skipif("avx512f" not in machine.cpu_flags(), reason="needs an AVX-512 CPU to build an AVX-512 variant")
def test_avx512_variant_is_profiled_by_single_stepping(tmp_path):
    """Valgrind cannot run the AVX-512 build: its mix comes from single-stepping it (run/stepcount.py --profile),
    the record says so with valgrind's reason; where ptrace is not allowed it is skipped with the reason."""
    from pqsimd import store
    from pqsimd.run import stepcount

    d = tmp_path / "native"
    r = run_cli("run", d, "--preset", "quick", "--schemes", SCHEME, "--ops", "ntt,empty", "--metric", "mix",
                "--variants", "ref-native,ref", "--mca-cpu", "znver3")
    assert r.returncode == 0, r.stderr
    info = json.loads((d / "manifest.json").read_text())["metrics"]["mix"]
    if stepcount.available() is not None:
        line = next(l for l in r.stderr.splitlines() if "ref-native.gcc.ml-kem: skipped for metric mix" in l)
        assert "valgrind cannot decode" in line
        assert "AVX-512" in info["skipped"]["ref-native.gcc.ml-kem"]
        return
    assert [p.name for p in StudyDir(d).raw_files()] == [f"ref-native.gcc.{SCHEME}.mix.parquet", f"ref.gcc.{SCHEME}.mix.parquet"]
    rec = store.read_job_record(d / "raw" / f"ref-native.gcc.{SCHEME}.mix.parquet")
    assert rec["backend"] == "ptrace-step" and "AVX-512" in rec["stepped_because"] and not info["skipped"]


# --- units ---------------------------------------------------------------------------------------

def test_profile_parser_skips_inclusive_call_costs_and_checks_the_total():
    text = ("positions: instr\nevents: Ir\nsummary: 14\n\nob=/lib/a.so\nfl=???\nfn=f\n0x10 3\n0x14 2\n"
            "cob=/lib/b.so\ncfn=g\ncalls=1 0x100\n0x18 1000\n0x1d 1\nob=/lib/b.so\nfn=g\n0x100 5\n0x104 3\n")
    assert callgrind.parse_profile(text) == {("/lib/a.so", 0x10): 3, ("/lib/a.so", 0x14): 2, ("/lib/a.so", 0x1d): 1,
                                       ("/lib/b.so", 0x100): 5, ("/lib/b.so", 0x104): 3}
    with pytest.raises(ValueError):
        callgrind.parse_profile(text.replace("summary: 14", "summary: 15"))


@pytest.mark.parametrize("text, mnemonic, cls, width, crossing", [
    ("mov    rax,QWORD PTR [rdi+0x8]", "mov", "load", 0, False),
    ("mov    DWORD PTR [rsp-0x4],eax", "mov", "store", 0, False),
    ("mov    rax,rbx", "mov", "scalar_alu", 0, False),
    ("movzx  eax,BYTE PTR [rsi]", "movzx", "load", 0, False),
    ("vmovdqa ymm0,YMMWORD PTR [rip+0x2000]        # 4000 <q>", "vmovdqa", "load", 256, False),
    ("vmovdqu YMMWORD PTR [rdi],ymm1", "vmovdqu", "store", 256, False),
    ("vmovdqa ymm5,ymm1", "vmovdqa", "vec_move", 256, False),
    ("vmovq  xmm3,rdi", "vmovq", "vec_insert_extract", 128, False),
    ("vpmulhw ymm1,ymm2,ymm3", "vpmulhw", "vec_mul", 256, False),
    ("vpshufb ymm6,ymm6,ymm4", "vpshufb", "shuffle_lane", 256, False),
    ("vpermq ymm0,ymm1,0xd8", "vpermq", "shuffle_cross", 256, True),
    ("vpbroadcastq xmm1,xmm2", "vpbroadcastq", "vec_insert_extract", 128, False),
    ("vpbroadcastq ymm1,xmm2", "vpbroadcastq", "vec_insert_extract", 256, True),
    ("vinserti128 ymm0,ymm0,xmm1,0x1", "vinserti128", "vec_insert_extract", 256, True),
    ("pdep   r8,r8,r10", "pdep", "bmi", 0, False),
    ("popcnt edx,edx", "popcnt", "bmi", 0, False),
    ("imul   eax,ecx", "imul", "scalar_mul", 0, False),
    ("jne    8888 <f+0x68>", "jne", "branch", 0, False),
    ("bnd jmp rax", "jmp", "branch", 0, False),
    ("ret", "ret", "call_ret", 0, False),
    ("rep stos QWORD PTR es:[rdi],rax", "rep_stos", "string", 0, False),
    ("push   rbp", "push", "store", 0, False),
    ("cs nop WORD PTR [rax+rax*1+0x0]", "nop", "nop", 0, False),
    ("vpaddw ymm0,ymm1,ymm2", "vpaddw", "vec_alu", 256, False),
    ("paddw  xmm0,xmm1", "paddw", "vec_alu", 128, False),
])
def test_classification(text, mnemonic, cls, width, crossing):
    m, ops, _clean = disasm.parse_insn(text)
    assert m == mnemonic
    k = classify.classify(m, ops)
    assert (k.cls, k.width, k.lane_crossing) == (cls, width, crossing)


def test_hot_blocks_cover_the_share_asked_for():
    def loc(addr, count, m="add"):
        insn = disasm.Insn(m, "", m, "f")
        return disasm.Located("o", addr, count, insn, classify.classify(m, ""))

    class D:
        def get(self, _):
            return type("X", (), {"index": staticmethod(lambda a: a)})()

    located = [loc(0, 100), loc(1, 100), loc(2, 100, "jne"), loc(3, 1), loc(4, 1, "ret"), loc(5, 5)]
    blocks = costmodel.basic_blocks(located, D())
    assert [len(b.located) for b in blocks] == [3, 2, 1]  # split at the branch, the count, the ret
    hot, cov = costmodel.hot_blocks(blocks, 0.95)
    assert [b.count for b in hot] == [100] and cov == pytest.approx(300 / 307)
    hot, cov = costmodel.hot_blocks(blocks, 0.99)
    assert len(hot) == 2 and cov == pytest.approx(305 / 307)


def test_a_block_simulated_before_is_not_simulated_again_and_reads_the_same(monkeypatch):
    """llvm-mca simulates each region alone: the per-block memo gives what one llvm-mca run over all
    the blocks gives (the oracle: _run_mca), runs llvm-mca only for blocks it has not seen, and
    counts an unparsable line (a nop in its place) in the block that holds it."""
    def block(*texts):
        located = []
        for t in texts:
            m, _, ops = t.partition(" ")
            located.append(disasm.Located("o", len(located), 10, disasm.Insn(m, ops, t, "f"), classify.classify(m, ops)))
        return costmodel.BasicBlock(located)

    path = costmodel.mca_path()
    a = block("imul rax, rbx", "add rax, rcx", "imul rax, rax")
    b = block("vpaddw ymm0, ymm1, ymm2", "vpmullw ymm3, ymm0, ymm0")
    bad = block("add rax, 1", "notaninstruction rax")
    oracle, replaced, _ = costmodel._run_mca(path, "znver4", [a, b, bad])
    monkeypatch.setattr(costmodel, "_REGIONS", {})
    calls = []
    real = costmodel._run_mca
    monkeypatch.setattr(costmodel, "_run_mca", lambda *x, **k: calls.append(len(x[2])) or real(*x, **k))
    got, n, _ = costmodel.run_mca(path, "znver4", [b, a])
    assert got == [oracle[1], oracle[0]] and n == 0 and calls == [2]
    got, n, _ = costmodel.run_mca(path, "znver4", [a, bad, b, a])  # only `bad` is new
    assert got == [oracle[0], oracle[2], oracle[1], oracle[0]] and calls == [2, 1]
    assert replaced == [0, 0, 1] and n == 1
    got, _, _ = costmodel.run_mca(path, "znver1", [a])  # another CPU model is another simulation
    assert calls == [2, 1, 1] and got[0]["cycles"] is not None


def test_an_unknown_mca_cpu_is_refused_in_one_line(tmp_path):
    r = run_cli("run", tmp_path / "s", "--metric", "mix", "--mca-cpu", "znver99", "--no-run")
    assert r.returncode == 2 and "znver99" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("scheme, ops", [("ml-dsa-44", ("ntt", "pointwise", "empty")),
                                         ("sphincs-shake-128f-simple", ("thash_1", "thash_x", "empty"))])
def test_mix_works_for_the_signature_families(tmp_path, scheme, ops):
    """ML-DSA and SPHINCS+ go through the same mix metric: every op's classes sum exactly to its
    instructions, the empty op is all zeros, and avx2 executes 256-bit vector code where ref has none."""
    d = tmp_path / "m"
    r = run_cli("run", d, "--preset", "quick", "--schemes", scheme, "--ops", ",".join(ops), "--variants", "ref,avx2",
                "--metric", "instructions,mix")
    assert r.returncode == 0, r.stderr
    for v in ("ref", "avx2"):
        t = pq.read_table(StudyDir(d).raw_path(f"{v}.gcc.{scheme}.mix"))
        df, rec = t.to_pandas(), json.loads(t.schema.metadata[store.JOB_METADATA_KEY])
        irec = json.loads(pq.read_table(StudyDir(d).raw_path(f"{v}.gcc.{scheme}.instructions")).schema.metadata[
            store.JOB_METADATA_KEY])
        for op in ops:
            cls = _classes(df, op)
            assert sum(cls.values()) == Fraction(irec["per_call_exact"][op][0]) == Fraction(rec["per_call_exact"][op]), (v, op)
        assert all(n == 0 for n in _classes(df, "empty").values())
        vec = {w for (_m, w, c) in _mnemonics(df, ops[1]) if c.startswith(("vec_", "shuffle_"))}
        assert (256 in vec) if v == "avx2" else (256 not in vec), (v, vec)
