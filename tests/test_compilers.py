"""The compiler as a dimension of the study: every (variant, compiler) built, gated and timed,
results per compiler and across compilers, and a missing compiler as one line while the rest goes on."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest

from pqsimd.studydir import StudyDir

NEEDED = ("gcc-11", "clang-16")


@pytest.fixture(scope="module")
def matrix(tmp_path_factory, ):
    from conftest import require_tool, run_cli

    for cc in NEEDED:
        if shutil.which(cc) is None:
            require_tool(f"{cc} is not installed (make test installs it as root: tools/test-deps.sh)")
    d = tmp_path_factory.mktemp("cc") / "m"
    r = run_cli("run", d, "--preset", "quick", "--schemes", "ml-kem-512", "--variants", "refnv,ref,ref-avx2,avx2",
                "--ops", "ntt,invntt,poly_frommsg,empty", "--cc", "gcc," + ",".join(NEEDED), "--jobs", "2",
                "--spins", "8", "--reps", "3", "--metric", "ticks,instructions")
    assert r.returncode == 0, r.stderr
    r = run_cli("report", d)
    assert r.returncode == 0, r.stderr
    return d


def test_every_compiler_builds_gates_and_times(matrix):
    sd = StudyDir(matrix)
    m = sd.read_manifest()
    assert set(m["compilers"]) == {"gcc", *NEEDED}
    assert m["compilers"]["clang-16"]["family"] == "clang" and "16." in m["compilers"]["clang-16"]["version"]
    for v in ("refnv", "ref", "ref-avx2", "avx2"):
        for c in ("gcc", *NEEDED):
            assert sd.read_gate(f"{v}.{c}.ml-kem")["passed"], (v, c)
    # clang spells "no vectorization" its own way (data/compilers.toml)
    assert m["builds"]["refnv.clang-16.ml-kem"]["flags_used"] == ["-O3", "-fno-vectorize", "-fno-slp-vectorize"]
    assert m["builds"]["refnv.gcc-11.ml-kem"]["flags_used"] == ["-O3", "-fno-tree-vectorize"]
    # one paired process per scheme and job holds every variant of every compiler
    spins = pd.read_parquet(matrix / "results" / "spins.parquet")
    ticks = spins[spins["metric"] == "ticks"]
    assert set(ticks["compiler"]) == {"gcc", *NEEDED} and ticks["job"].nunique() == 2


def test_results_per_compiler_and_across_compilers(matrix):
    c = pd.read_csv(matrix / "results" / "comparisons.csv")
    ticks = c[c["metric"] == "ticks"]
    for comp in ("gcc", *NEEDED):
        own = ticks[(ticks["compiler"] == comp) & (ticks["baseline_compiler"] == comp)]
        assert {"autovec", "hand_simd", "compiler_vs_hand", "extra"} <= set(own["stage"]), comp
    cross = ticks[ticks["stage"] == "cross_compiler"]
    assert set(cross["baseline_compiler"]) == {"gcc"} and set(cross["compiler"]) == set(NEEDED)
    assert set(cross["variant"]) == {"refnv", "ref", "ref-avx2", "avx2"}
    dec = pd.read_csv(matrix / "results" / "decomposition.csv")
    assert set(dec["compiler"]) == {"gcc", *NEEDED}
    ins = c[(c["metric"] == "instructions") & (c["stage"] == "autovec") & (c["op"] != "empty")]
    assert set(ins["compiler"]) == {"gcc", *NEEDED} and ins["deterministic"].all()


def test_compiler_report(matrix):
    rep = matrix / "report" / "ml-kem"
    assert (rep / "fig_compilers.png").exists() and (rep / "fig_compilers_instructions.png").exists()
    t = pd.read_csv(rep / "table_compilers.csv")
    assert set(t["compiler"]) == {"gcc", *NEEDED}
    html = (matrix / "report" / "index.html").read_text()
    assert "across 3 compilers" in html and "clang-16" in html
    assert "compiler AVX2 vs hand" in html
    # the time sentence carries what the exact counts say: no compiler vectorizes the NTT (refnv and
    # ref run the same instruction count under gcc, gcc-11 and clang-16)
    assert "NTT, auto-vec (refnv→ref)" in html
    assert "Instruction counts: 1.00× under 3 compiler(s): auto-vec leaves the instruction count unchanged under every compiler" in html
    ilp = pd.read_csv(matrix / "results" / "ilp.csv")
    same = (ilp["instruction_ratio"] - 1).abs() <= 0.001
    assert (ilp.loc[same, "reading"].str.startswith("same instructions")).all()
    assert not (ilp.loc[~same, "reading"].str.startswith("same instructions")).any()


def test_readings_of_time_against_instructions():
    from pqsimd.analyze.mechanism import reading_of

    assert reading_of(1.01, 1.0) == "same instructions"
    assert reading_of(1.10, 1.0005).startswith("same instructions, different time")
    assert reading_of(0.88, 1.0).startswith("same instructions, different time")
    assert reading_of(35.0, 35.1) == "fewer instructions"
    assert reading_of(50.0, 35.0) == "ILP/throughput"
    assert reading_of(0.42, 4.8) == "lower IPC"  # gen_a on a CPU with microcoded pdep/pext
    assert reading_of(0.9, 0.92) == "more instructions"


def test_missing_compiler_is_one_line_and_the_rest_goes_on(tmp_path, cli):
    d = tmp_path / "s"
    r = cli("run", d, "--preset", "quick", "--schemes", "ml-kem-512", "--variants", "ref", "--ops", "ntt",
            "--cc", "gcc,clang-99", "--jobs", "1", "--spins", "3", "--reps", "2")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    lines = [l for l in r.stderr.splitlines() if "clang-99" in l]
    assert lines and "apt-get install clang-99" in " ".join(r.stderr.split())
    assert StudyDir(d).raw_files()  # gcc's jobs ran
