"""`pqsimd run --isa aarch64` end to end under emulation on a small scope: cross builds gated under
qemu-user (KAT, vectors, agreement), instructions counted by our QEMU plugin and checked against QEMU's
own execution log (a second, independent method), the mix classified by aarch64 data and llvm-mca
labelled with the model it really uses, results with an `isa` column, a cross-ISA report beside an
x86-64 study; a timed study under emulation refused in one line, and a sabotaged NEON build refused
by the gate under emulation."""

from __future__ import annotations

import json
import shutil
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest

from pqsimd import catalog, isa
from pqsimd.isa import qemu
from pqsimd.run import instructions as ins

from conftest import require_tool, one_line_error, run_cli

A64 = isa.get("aarch64")
SCHEME = "ml-kem-512"
OPS = "ntt,basemul,poly_tomsg,poly_getnoise_eta1"  # the last: absent from the NEON implementation
CHAIN = catalog.chain(A64.name)
HAND = CHAIN.steps[-1]  # ref -> the NEON variant

if not (shutil.which(A64.qemu) and shutil.which(f"{A64.gnu_triple}-gcc")):  # make test installs them
    require_tool(f"{A64.qemu} or the cross gcc is not installed (tools/test-deps.sh)")


@pytest.fixture(scope="module")
def studies(tmp_path_factory):
    """The done-when command on ML-KEM-512 (three ops), and an x86-64 study of the same ops beside it."""
    root = tmp_path_factory.mktemp("isa")
    a64, x86 = root / "a64", root / "x86"
    r = run_cli("run", a64, "--isa", A64.name, "--schemes", SCHEME, "--variants", ",".join(CHAIN.variants),
                "--ops", OPS, "--metric", "instructions,mix", "--mca-cpu", "neoverse-n1,neoverse-v1", "--preset", "quick")
    assert r.returncode == 0, r.stderr[-3000:]
    x86_hand = catalog.chain().steps[-1]
    r = run_cli("run", x86, "--schemes", SCHEME, "--variants", f"{x86_hand.base},{x86_hand.variant}", "--ops", OPS,
                "--metric", "instructions,mix", "--mca-cpu", "znver4", "--preset", "quick")
    assert r.returncode == 0, r.stderr[-3000:]
    for d in (a64, x86):
        r = run_cli("analyze", d)
        assert r.returncode == 0, r.stderr[-3000:]
    return a64, x86


def test_gate_ran_under_emulation_and_passed(studies):
    a64, _ = studies
    manifest = json.loads((a64 / "manifest.json").read_text())
    assert manifest["isa"]["name"] == A64.name and not manifest["isa"]["native"]
    assert manifest["isa"]["launcher"][0].endswith(A64.qemu)
    assert manifest["chain"] == CHAIN.to_dict()
    for v in CHAIN.variants:
        gate = json.loads((a64 / "gate" / f"{v}.gcc.ml-kem.json").read_text())
        assert gate["passed_schemes"] == [SCHEME]
        assert {c["check"] for c in gate["checks"] if c["passed"]} >= {"nistkat", "vectors", "ops"}
        assert A64.gnu_triple in manifest["builds"][f"{v}.gcc.ml-kem"]["compile_commands"][0]
    assert (a64 / "bin" / "driver").read_bytes()[18] == 0xB7  # ELF e_machine EM_AARCH64


def test_counts_are_exact_repeatable_and_agree_with_the_exec_log(studies):
    a64, _ = studies
    df = pd.read_parquet(a64 / "raw" / f"{HAND.variant}.gcc.{SCHEME}.instructions.parquet")
    for op, rows in df.groupby("op"):
        assert rows["per_call"].nunique() == 1, op  # both independent pairs of runs: identical
    absent = catalog.families()["ml-kem"].implementation(catalog.builtin_variants()[HAND.variant].sources).absent
    assert set(absent) & set(OPS.split(",")) and not set(absent) & set(df["op"])  # not counted: the build lacks it
    ref = pd.read_parquet(a64 / "raw" / f"{HAND.base}.gcc.{SCHEME}.instructions.parquet")
    assert set(ref["op"]) == set(OPS.split(","))
    driver, lib = a64 / "bin" / "driver", a64 / "bin" / f"{HAND.variant}.gcc.ml-kem.so"

    def exec_log(op, n):
        (w,) = qemu.exec_log_count(A64, [str(driver), "count", str(lib), SCHEME, op, str(n)])
        return w

    empty = Fraction(exec_log("empty", ins.N2) - exec_log("empty", ins.N1), ins.N2 - ins.N1)
    for op in ("ntt", "poly_tomsg"):
        second = Fraction(exec_log(op, ins.N2) - exec_log(op, ins.N1), ins.N2 - ins.N1) - empty
        assert float(second) == df[df["op"] == op]["per_call"].iloc[0], op  # exactly, not just within 1%


def test_mix_and_cost_model_for_aarch64(studies):
    a64, _ = studies
    ops = pd.read_csv(a64 / "results" / "mix_ops.csv")
    ins_g = pd.read_csv(a64 / "results" / "groups.csv")
    ntt = ops[(ops["op"] == "ntt")].set_index("variant")
    assert ntt.loc[HAND.variant, "max_width"] == 128 and ntt.loc[HAND.variant, "vector_share"] > 0.8
    assert ntt.loc[HAND.base, "vector_share"] < 0.05
    g = ins_g[(ins_g["metric"] == "instructions") & (ins_g["op"] == "ntt")].set_index("variant")
    assert ntt.loc[HAND.variant, "instructions"] == g.loc[HAND.variant, "median"]  # the mix sums to the count
    mix = pd.read_csv(a64 / "results" / "mix.csv")
    neon_ntt = mix[(mix["level"] == "mnemonic") & (mix["op"] == "ntt") & (mix["variant"] == HAND.variant)]
    classes = dict(zip(neon_ntt["mnemonic"], neon_ntt["class"]))
    assert classes.get("sqrdmulh") == "vec_mul" and classes.get("trn1") == "shuffle_lane"
    assert not (mix[mix["level"] == "class"]["class"] == "unknown").any() or \
        mix[(mix["level"] == "class") & (mix["class"] == "unknown")]["count"].sum() == 0
    mca = pd.read_csv(a64 / "results" / "mca.csv")
    assert set(mca["cpu"]) == {"neoverse-n1", "neoverse-v1"}
    from pqsimd.isa import mca as models

    for r in mca.itertuples(index=False):
        assert r.model == models.model(r.tool, A64.name, r.cpu)["model"] and r.predicted_cycles > 0
    assert set(pd.read_csv(a64 / "results" / "groups.csv")["isa"]) == {A64.name}


def test_cross_isa_report_beside_an_x86_study(studies):
    a64, x86 = studies
    r = run_cli("report", a64, "--beside", x86)
    assert r.returncode == 0, r.stderr[-2000:]
    t = pd.read_parquet(a64 / "results" / "crossisa.parquet")
    assert set(t["isa"]) == {A64.name, isa.host().name}
    for row in t.itertuples(index=False):  # each ratio is its own study's exact count ratio
        g = pd.read_parquet((a64 if row.isa == A64.name else x86) / "results" / "groups.parquet")
        g = g[(g["metric"] == "instructions") & (g["op"] == row.op)].set_index("variant")["median"]
        assert row.ratio == pytest.approx(g[row.baseline] / g[row.variant], rel=1e-12)
    bits = dict(zip(t[t["op"] == "ntt"]["isa"], t[t["op"] == "ntt"]["lane_bits"]))
    assert bits == {A64.name: 128, isa.host().name: 256}
    html = (a64 / "report" / "index.html").read_text()
    assert 'id="crossisa"' in html and "lanes alone" in html
    assert (a64 / "report" / "crossisa" / "table_crossisa.csv").exists()
    shown = run_cli("show", a64, "--beside", x86)
    assert shown.returncode == 0 and "Across ISAs" in shown.stdout and "128" in shown.stdout
    same = run_cli("report", a64, "--beside", a64)
    one_line_error(same, "another ISA")
    # issue 29, item 8: a report without --beside has no cross-ISA section left from an earlier one
    r = run_cli("report", a64)
    assert r.returncode == 0, r.stderr[-2000:]
    assert 'id="crossisa"' not in (a64 / "report" / "index.html").read_text()
    assert not (a64 / "results" / "crossisa.parquet").exists()


def test_cross_isa_compares_one_compiler_with_itself(studies, tmp_path):
    """Issue 29, item 8: aarch64 gcc is never put beside x86-64 clang-16 (no compiler in common: one line)."""
    a64, x86 = studies
    other = tmp_path / "x86-clang"
    shutil.copytree(x86, other)
    for name in ("groups", "mix_ops", "mix", "mca"):
        p = other / "results" / f"{name}.parquet"
        if p.exists():
            t = pd.read_parquet(p)
            if "compiler" in t:
                t["compiler"] = "clang-16"
                t.to_parquet(p)
            (other / "results" / f"{name}.csv").unlink(missing_ok=True)
    one_line_error(run_cli("report", a64, "--beside", other), "no compiler in common", "same --cc")


def test_a_timed_study_under_emulation_is_refused_in_one_line(tmp_path):
    d = tmp_path / "ticks"
    r = run_cli("run", d, "--isa", A64.name, "--schemes", SCHEME, "--metric", "ticks")
    one_line_error(r, "--metric instructions,mix", A64.qemu)
    assert not d.exists()
    one_line_error(run_cli("run", tmp_path / "x", "--isa", "sparc64"), "unknown ISA")


def test_a_variant_the_isa_lacks_is_skipped_in_one_line(tmp_path):
    x86_hand = catalog.chain().steps[-1].variant
    r = run_cli("run", tmp_path / "s", "--isa", A64.name, "--schemes", SCHEME, "--variants", f"ref,{x86_hand}",
                "--ops", "ntt", "--metric", "instructions", "--no-run")
    assert r.returncode == 0, r.stderr[-2000:]
    skips = [line for line in r.stderr.splitlines() if line.startswith("skip") and x86_hand in line]
    assert len(skips) == 1 and f"not built for {A64.name}" in skips[0]


def test_a_sabotaged_neon_build_fails_the_gate_under_emulation(tree, tmp_path):
    """The NEON NTT's output scaled by one constant: it compiles and runs, and the gate under qemu
    refuses it (KAT hash and vectors), naming the check."""
    from conftest import sabotaged_tree

    from pqsimd import build, verify

    rel = f"crypto_kem/{SCHEME}/aarch64/neon_poly.c"
    text = (Path(tree.root) / rel).read_text()
    old = "void neon_poly_ntt(int16_t r[KYBER_N]) {\n    ntt(r);"
    assert old in text, "sabotage target moved: update the test"
    bad = sabotaged_tree(tree, tmp_path, {rel: (old, old + "\n    r[0] ^= 1;")})
    fam = catalog.families()["ml-kem"]
    driver = build.build_driver(A64)
    gcc = build.find_compiler("gcc", A64)
    variants = catalog.builtin_variants()
    builds = [build.build_variant(bad, fam, variants[v], gcc, driver, schemes=[SCHEME]) for v in (HAND.base, HAND.variant)]
    res = verify.gate(bad, driver, builds, [SCHEME])
    good, sab = res[builds[0].id], res[builds[1].id]
    assert good.passed and not sab.passed
    failed = {c.check for c in sab.checks if not c.passed}
    assert "nistkat" in failed


def test_doctor_on_aarch64_names_the_timer_and_how_to_enable_the_cycle_counter(tmp_path, monkeypatch):
    """No Arm host here: the aarch64 host's sysctl is a file of ours (the path is data/isas.toml's)."""
    import dataclasses

    from pqsimd import doctor

    sysctl = tmp_path / "perf_user_access"
    monkeypatch.setattr(isa, "host", lambda: dataclasses.replace(A64, doctor={**A64.doctor, "sysctl": str(sysctl)}))
    (f,) = doctor._timer()
    assert f.ok is None and "cntvct" in f.detail and "no perf_user_access" in f.remedy  # no such file
    sysctl.write_text("0\n")
    (f,) = doctor._timer()
    assert f.ok is None and "cntvct" in f.detail and "kernel.perf_user_access=1" in f.remedy
    sysctl.write_text("1\n")
    (f,) = doctor._timer()
    assert f.ok is True and "pmccntr" in f.detail and not f.remedy
    assert A64.doctor["sysctl"] == "/proc/sys/kernel/perf_user_access"
