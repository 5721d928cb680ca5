"""`--metric ct`: constant time beside speed. The oracle is the fixture's C (tests/fixtures/families/
ctfix_ops.c): each op is written to branch on a secret, index by a secret, select without a branch, loop
with a secret-offset counter that memcheck flags yet runs the same for every secret, branch inside a
function the family declares public, or branch on what randombytes drew; the lines tests look for carry a
`ct:` comment, so the expected source line is read from the file, not from the tool."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from pqsimd import store
from pqsimd.errors import PqsimdError
from pqsimd.run import ct
from pqsimd.analyze import ct as ct_analysis
from pqsimd.studydir import StudyDir

from conftest import one_line_error, run_cli

FAMILIES = Path(__file__).parent / "fixtures" / "families"
ENV = {**os.environ, "PQSIMD_FAMILY_PATH": str(FAMILIES)}
SOURCE = (FAMILIES / "ctfix_ops.c").read_text().splitlines()


def _line(tag: str) -> int:
    return next(i + 1 for i, text in enumerate(SOURCE) if f"/* ct: {tag} */" in text)


EXPECTED = {  # op -> (verdict, kinds of its non-declassified sites, line of the site)
    "secret_branch": ("leak", {"branch"}, _line("branch")),
    "secret_index": ("leak", {"address"}, _line("address")),
    "ct_select": ("clean", set(), None),
    "offset_loop": ("unconfirmed", {"branch"}, _line("offset loop")),
    "public_branch": ("clean", set(), None),
    "line_check": ("clean", set(), None),
    "random_branch": ("leak", {"branch"}, _line("random")),
    "no_secret": ("n/a", set(), None),
    "secret_div": ("leak", {"div"}, _line("div")),
    "public_div": ("clean", set(), None),
}


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    if not shutil.which("valgrind"):
        pytest.fail("valgrind is not installed (make test installs it as root: tools/test-deps.sh)", pytrace=False)
    d = tmp_path_factory.mktemp("ct") / "s"
    r = run_cli("run", d, "--preset", "quick", "--schemes", "ct-fixture", "--variants", "ref", "--metric", "ct", env=ENV)
    assert r.returncode == 0, r.stderr
    r = run_cli("analyze", d, env=ENV)
    assert r.returncode == 0, r.stderr
    return d


def _record(d: Path) -> dict:
    t = pq.read_table(StudyDir(d).raw_path("ref.gcc.ct-fixture.ct"))
    return json.loads(t.schema.metadata[store.JOB_METADATA_KEY])


def test_verdicts_sites_and_lines_match_the_fixture(study):
    ops = _record(study)["ops"]
    for op, (verdict, kinds, line) in EXPECTED.items():
        r = ops[op]
        assert r["verdict"] == verdict, (op, r)
        live = [s for s in r.get("sites", []) if s["verdict"] != "declassified"]
        assert {s["kind"] for s in live} == kinds, (op, live)
        if line:
            assert {s["line"] for s in live} == {line}, (op, live)
            assert all(s["file"].endswith("ctfix_ops.c") for s in live)
            assert all(s["function"] == f"pqsimd_fixture_{op}" for s in live)


def test_a_leak_has_two_witness_secrets_whose_traces_differ(study):
    ops = _record(study)["ops"]
    for op in ("secret_branch", "secret_index", "random_branch", "secret_div"):
        for s in ops[op]["sites"]:
            a, b = s["witnesses"]
            assert a != b and 0 <= a < ct.VARIATIONS and 0 <= b < ct.VARIATIONS
            assert s["difference"]
    # the secret-offset loop: flagged by memcheck, the same 16 iterations for every secret
    (s,) = ops["offset_loop"]["sites"]
    assert s["witnesses"] == [] and f"{ct.VARIATIONS} secrets (16 executions)" in s["difference"]


def test_declassified_sites_are_listed_with_the_reason_and_never_a_leak(study):
    r = _record(study)["ops"]["public_branch"]
    declassified = [s for s in r["sites"] if s["verdict"] == "declassified"]
    assert declassified and all("pqsimd_fixture_public_rejection" in s["declassified"] for s in declassified)
    assert all(s["line"] == _line("declassified") for s in declassified)
    assert "stand-in for a value the standard makes public" in declassified[0]["declassified"]
    # "FUNCTION @ LINE": the branch on a value made public inline, by its source line
    (s,) = _record(study)["ops"]["line_check"]["sites"]
    assert s["verdict"] == "declassified" and s["line"] == _line("public line") and "revealed > 4080" in s["source"]
    assert s["declassified"].startswith(f"at ctfix_ops.c:{_line('public line')} ") and "rejection check" in s["declassified"]


def test_a_line_pattern_declassifies_only_its_function_and_line():
    site = lambda fn, src: ct.Site(1, "branch", fn, "sign.c", 7, "ja 10", "", [fn], source=src)
    sites = [site("x_sign_signature", "if (n > OMEGA) {"), site("x_sign_signature", "if (sk[i] > 3) {"),
             site("x_keypair", "if (n > OMEGA) {"), site("x_sign_signature", "")]
    ct.declassify(sites, {"*sign_signature* @ *> OMEGA*": "the hint's weight"})
    assert [s.declassified is not None for s in sites] == [True, False, False, False]
    brackets = [site("compute_public", "if (tt[u] == 0) {"), site("compute_public", "if (ttu == 0) {")]
    ct.declassify(brackets, {"*compute_public* @ *tt[u] == 0*": "rejected"})  # brackets are C, not a glob class
    assert [s.declassified is not None for s in brackets] == [True, False]
    assert sites[0].declassified == "at sign.c:7 `if (n > OMEGA) {`: the hint's weight"


def test_results_table_show_and_report(study):
    assert StudyDir(study).results("constant_time.csv").is_file()
    df = pd.read_parquet(StudyDir(study).results("constant_time.parquet"))
    assert set(ct_analysis.COLUMNS) <= set(df.columns)
    per_op = df.drop_duplicates("op").set_index("op")["verdict"].to_dict()
    assert per_op == {op: v for op, (v, _, _) in EXPECTED.items()}
    assert df[df.op.eq("no_secret")]["why"].iloc[0].startswith("no secret input")
    r = run_cli("show", study, env=ENV)
    assert r.returncode == 0, r.stderr
    assert f"ctfix_ops.c:{_line('branch')}" in r.stdout and "leak" in r.stdout and "declassified (ctfix)" in r.stdout
    r = run_cli("report", study, env=ENV)
    assert r.returncode == 0, r.stderr
    page = (StudyDir(study).report_dir / "index.html").read_text()
    assert "Constant time" in page and f"ctfix_ops.c:{_line('address')}" in page


def test_an_unknown_secret_buffer_is_one_line_from_the_driver(study):
    sd = StudyDir(study)
    p = subprocess.run([str(sd.gated_driver()), "ct", str(sd.gated_library("ref.gcc.ctfix")), "ct-fixture",
                        "secret_branch", "0", "sk"], capture_output=True, text=True)
    assert p.returncode == 2 and "names no buffer sk" in p.stderr and len(p.stderr.splitlines()) == 1


def test_the_native_tracer_and_lackey_agree_on_every_fixture_site(study):
    """Two independent tracers (breakpoints natively, valgrind's lackey) reach the same verdict and
    difference for every site of the fixture, and the record says which one confirmed it."""
    sd = StudyDir(study)
    driver, lib = sd.gated_driver(), sd.gated_library("ref.gcc.ctfix")
    ops = _record(study)["ops"]
    for op in ("secret_branch", "secret_index", "offset_loop", "random_branch"):
        secrets = ops[op]["secrets"]
        sites = [ct.Site(**{**s, "verdict": "", "witnesses": [], "difference": "", "tracer": ""})
                 for s in ops[op]["sites"] if s["verdict"] in ("leak", "unconfirmed") and s["kind"] != "div"]
        fast = [ct.Site(**vars(x)) for x in sites]
        ct.confirm(driver, lib, "ct-fixture", op, secrets, fast)
        ct.confirm(driver, lib, "ct-fixture", op, secrets, sites, natively=False)
        assert [x.tracer for x in fast] == ["sitetrace"] * len(fast) and {x.tracer for x in sites} == {"lackey"}
        assert [(x.verdict, x.difference) for x in fast] == [(x.verdict, x.difference) for x in sites], op


def test_the_native_tracer_refuses_a_bad_site_in_one_line(study):
    sd = StudyDir(study)
    cmd = [str(sd.gated_driver()), "sitetrace", str(sd.gated_library("ref.gcc.ctfix")), "ct-fixture", "secret_index", "0"]
    for bad, needle in (("b:12", "cannot read site 'b:12'"), ("a:1:xmm0:-:1:0", "cannot read site"),
                        ("d:1", "the op's process ended before its call")):
        p = subprocess.run([*cmd, bad, "--", *(["sk"] if bad == "d:1" else ["secret"])], capture_output=True, text=True)
        assert p.returncode == 2 and needle in p.stderr, (bad, p.stderr)


@pytest.mark.parametrize("text, kind, length, spec", [
    ("movzbl (%rsi,%rcx,1),%ecx", "address", 4, "a:9:rsi:rcx:1:0"),
    ("mov 0x10(%rsp,%rax,2),%dx", "address", 5, "a:9:rsp:rax:2:16"),
    ("vmovdqu -0x20(%rdi),%ymm0", "address", 5, "a:9:rdi:-:1:-32"),
    ("movzwl (,%r8d,2),%eax", "address", 8, "a:9:-:r8d:2:0"),
    ("mov %fs:0x28,%rax", "address", 9, None),  # a segment
    ("mov 0x2f0e(%rip),%rax", "address", 7, None),  # never secret-dependent; lackey if memcheck says so
    ("vpgatherdd %ymm2,(%rax,%ymm1,4),%ymm3", "address", 6, None),  # a vector index
    ("rep stos %rax,%es:(%rdi)", "address", 3, None),
    ("jae 8b30 <f+0x40>", "branch", 2, "b:9:2"),
    ("div %edi", "div", 2, "d:9"),
])
def test_a_site_is_named_for_the_native_tracer_when_its_address_can_be_computed(text, kind, length, spec):
    assert ct.native_site(kind, 9, text, length) == spec


# --- the parts, without valgrind -----------------------------------------------------------------------------

MEMCHECK_XML = """<?xml version="1.0"?><valgrindoutput>
<error><kind>UninitCondition</kind><what>Conditional jump or move depends on uninitialised value(s)</what>
<stack><frame><ip>0x4A01234</ip><obj>/s/bin/ref.gcc.x.so</obj><fn>rej_uniform</fn><dir>/t</dir><file>indcpa.c</file><line>131</line></frame>
<frame><ip>0x4A01300</ip><obj>/s/bin/ref.gcc.x.so</obj><fn>PQCLEAN_X_gen_matrix</fn></frame>
<frame><ip>0x108000</ip><obj>/s/bin/driver</obj><fn>ct_call.isra.0</fn></frame>
<frame><ip>0x108100</ip><obj>/s/bin/driver</obj><fn>pqsimd_cmd_ct</fn></frame></stack></error>
<error><kind>UninitValue</kind><what>Use of uninitialised value of size 8</what>
<stack><frame><ip>0x4A02000</ip><obj>/s/bin/ref.gcc.x.so</obj><fn>poly_tomsg</fn><file>poly.c</file><line>7</line></frame>
<frame><ip>0x108000</ip><obj>/s/bin/driver</obj><fn>ct_call</fn></frame></stack></error>
<error><kind>UninitCondition</kind><what>outside the call</what>
<stack><frame><ip>0x108200</ip><obj>/s/bin/driver</obj><fn>main</fn></frame></stack></error>
</valgrindoutput>"""


def test_memcheck_reports_become_sites_inside_the_call_only():
    sites = ct.parse_memcheck(MEMCHECK_XML, 0x4A00000, Path("/s/bin/ref.gcc.x.so"))
    assert [(s.offset, s.kind, s.function, s.file, s.line) for s in sites] == [
        (0x1234, "branch", "rej_uniform", "indcpa.c", 131), (0x2000, "address", "poly_tomsg", "poly.c", 7)]
    assert sites[0].stack == ["rej_uniform", "PQCLEAN_X_gen_matrix"]  # the harness's frames left out


def test_declassification_by_any_frame_of_the_stack():
    sites = ct.parse_memcheck(MEMCHECK_XML, 0x4A00000, Path("/s/bin/ref.gcc.x.so"))
    ct.declassify(sites, {"*gen_matrix*": "rho is public"})
    assert sites[0].declassified == "in PQCLEAN_X_gen_matrix: rho is public"  # the caller's frame, not the site's
    assert sites[1].declassified is None


@pytest.mark.parametrize("instruction, kind", [
    ("movzbl (%rsi,%rcx,1),%ecx", "address"),
    ("psrlq %xmm1,%xmm0", "operand"),          # memcheck wants a defined shift count: no address
    ("movdqa 0x7b5fe(%rip),%xmm5", "operand"),  # a constant address
    ("call *%rax", "branch"),                   # an indirect call: its target
    ("jmp *0x8(%rax,%rdx,8)", "branch"),
    ("rep stos %rax,%es:(%rdi)", "address"),
])
def test_what_memcheck_calls_a_value_use_is_read_from_the_instruction(instruction, kind):
    assert ct.refine_kind(ct.Site(1, "address", "f", "f.c", 1, instruction, "")) == kind


def test_conditional_moves_and_sets_are_not_branches():
    s = ct.Site(1, "branch", "f", "f.c", 1, "cmovne %rax,%rbx", "")
    assert ct.refine_kind(s) == "cmov"
    s.instruction = "sete %al"
    assert ct.refine_kind(s) == "cmov"
    s.instruction = "jne 1234"
    assert ct.refine_kind(s) == "branch"


def _sites(rows):
    base = {c: None for c in ct_analysis.COLUMNS}
    return pd.DataFrame([{**base, "family": "f", "label": "frommsg", "scheme": "s", "op": "poly_frommsg",
                          "compiler": c, "variant": v, "verdict": verdict, "kind": "branch", "function": "poly_frommsg",
                          "file": "poly.c", "line": 124, "site_verdict": "leak" if verdict == "leak" else None}
                         for v, c, verdict in rows])


CHAIN = {"steps": [{"stage": "compiler", "from": "refo0", "to": "refnv", "label": "compiler"},
                   {"stage": "autovec", "from": "refnv", "to": "ref", "label": "auto-vec"}]}


def test_the_chain_step_that_removed_a_leak_is_named():
    st = ct_analysis.stage_table(_sites([("refnv", "clang-16", "leak"), ("ref", "clang-16", "clean"),
                                         ("refnv", "gcc", "clean"), ("ref", "gcc", "clean")]), CHAIN)
    assert len(st) == 1
    row = st.iloc[0]
    assert (row["base"], row["variant"], row["change"], row["compiler"]) == ("refnv", "ref", "removed", "clang-16")
    assert row["sentence"].startswith("auto-vec removed the branch in poly_frommsg (poly.c:124)")
    two = _sites([("refnv", "clang-16", "leak"), ("ref", "clang-16", "clean")])
    two = pd.concat([two, two.assign(op="kem_decaps", label="decaps")])
    st = ct_analysis.stage_table(two, CHAIN)  # one sentence for the ops the same site leaks in
    assert len(st) == 1 and st.iloc[0]["op"] == "poly_frommsg,kem_decaps" and st.iloc[0]["sentence"].endswith(
        "s frommsg, decaps")


def test_unconfirmed_and_untested_builds_say_nothing_about_a_step():
    st = ct_analysis.stage_table(_sites([("refnv", "gcc", "unconfirmed"), ("ref", "gcc", "leak"),
                                         ("refo0", "gcc", "n/a")]), CHAIN)
    assert st.empty


def test_an_unconfirmed_build_whose_flagged_sites_are_elsewhere_reads_clean_beside_a_leak():
    """HQC-128: gcc's one unconfirmed site is single_bit_mask, clang-16's confirmed leak is in base_mul: the
    cross-compiler step says clang-16 introduced it (the same site flagged on both sides still says nothing)."""
    rows = _sites([("ref", "gcc", "unconfirmed"), ("ref", "clang-16", "leak")])
    rows.loc[rows["compiler"] == "gcc", ["function", "file", "line"]] = ["single_bit_mask", "vector.c", 33]
    rows.loc[rows["compiler"] == "clang-16", ["function", "file", "line"]] = ["base_mul", "gf2x.c", 64]
    st = ct_analysis.stage_table(rows, CHAIN, ["gcc", "clang-16"])
    assert len(st) == 1 and st.iloc[0]["stage"] == "cross_compiler" and st.iloc[0]["change"] == "introduced"
    assert st.iloc[0]["sentence"].startswith("compiler gcc → clang-16 introduced the branch in base_mul (gf2x.c:64)")
    same = _sites([("ref", "gcc", "unconfirmed"), ("ref", "clang-16", "leak")])
    assert ct_analysis.stage_table(same, CHAIN, ["gcc", "clang-16"]).empty


class _Fam:
    def __init__(self, secrets):
        self._s = secrets

    def secrets(self, op):
        return self._s.get(op, [])


def test_ops_without_secrets_or_without_named_buffers_are_na_with_the_reason():
    plan = ct.op_plan(_Fam({"dec": ["sk"], "enc": ["random"]}), "s", ["dec", "enc", "ntt"], [])
    assert plan["ntt"]["verdict"] == "n/a" and "no secret input" in plan["ntt"]["why"]
    assert plan["dec"]["verdict"] == "n/a" and "names no buffers" in plan["dec"]["why"]
    assert plan["enc"] == {"secrets": ["random"]}  # the randomness needs no buffer
    plan = ct.op_plan(_Fam({"dec": ["sk", "ct"]}), "s", ["dec"], ["sk", "pk"])
    assert plan["dec"]["verdict"] == "n/a" and plan["dec"]["why"] == ("[ct.secret] names ct, which this "
                                                                       "implementation's op table does not (it names sk, pk)")


def test_a_build_valgrind_cannot_decode_is_unsupported_not_a_failure():
    from pqsimd.run.callgrind import unhandled_instruction

    # with -q valgrind prints no bytes; the driver's own SIGILL handler names the signal
    assert "AVX-512" in unhandled_instruction("\ndriver: crashed: SIGILL in variant 0 (avx512vl) op ntt\n")
    assert unhandled_instruction("driver: crashed: SIGSEGV in variant 0") is None


def test_objdump_comments_are_cut_but_aarch64_immediates_kept(tmp_path, monkeypatch):
    out = ("  10:\tldr\tx0, [x1, #8]\n  14:\tmov\tw5, #0x3 // #3\n"
           "  18:\tmov    0x2f0e(%rip),%rax        # 4f00 <table>\n")
    monkeypatch.setattr(ct.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0, out, ""))
    assert [t for _, t in ct.disassemble(tmp_path / "x.so", 16)] == [
        "ldr\tx0, [x1, #8]", "mov\tw5, #0x3", "mov    0x2f0e(%rip),%rax"]


@pytest.mark.parametrize("table, needle", [
    ('[ct.secret]\nnope = ["sk"]', "names op 'nope'"),
    ('[ct.secret]\nct_select = "secret"', "must list the op table's secret buffers"),
    ('[ct]\nsecrets = {}', "unknown key(s) in [ct]"),
    ('[ct.public]\n"*f*" = 3', "[ct] public must be a table"),
    ('[ct.public]\n"*f* @ " = "why"', "FUNCTION @ SOURCE LINE"),
])
def test_a_bad_ct_table_is_one_line_naming_it(table, needle):
    from pqsimd import catalog

    text = (FAMILIES / "ctfix.toml").read_text()
    text = text[:text.index("[ct.secret]")] + table + "\n"
    with pytest.raises(PqsimdError) as e:
        catalog.family_from_toml(text, "ctfix.toml", FAMILIES)
    assert needle in str(e.value) and "\n" not in str(e.value)


# --- clangover: the case on the real ML-KEM code -----------------------------------------------------

# PQClean ML-KEM's poly_frommsg before the fix of PQClean#556 (a mask from each message bit): clang 15+
# without vectorization turns it into a branch per bit. Written here as the patch it was.
PRE_FIX_FROMMSG = """void PQCLEAN_MLKEM512_CLEAN_poly_frommsg(poly *r, const uint8_t msg[KYBER_INDCPA_MSGBYTES]) {
    size_t i, j;
    int16_t mask;

    for (i = 0; i < KYBER_N / 8; i++) {
        for (j = 0; j < 8; j++) {
            mask = -(int16_t)((msg[i] >> j) & 1);
            r->coeffs[8 * i + j] = mask & ((KYBER_Q + 1) / 2);
        }
    }
}
"""


def _pre_fix_tree(tree, tmp: Path) -> tuple[Path, int]:
    root = tmp / "pqclean"
    for sub in ("common", "test", "crypto_kem/ml-kem-512"):
        shutil.copytree(tree.root / sub, root / sub, symlinks=True)
    poly = root / "crypto_kem" / "ml-kem-512" / "clean" / "poly.c"
    text = poly.read_text()
    start = text.index("void PQCLEAN_MLKEM512_CLEAN_poly_frommsg")
    end = text.index("\n}\n", start) + 3
    text = text[:start] + PRE_FIX_FROMMSG + text[end:]
    poly.write_text(text)
    line = text[:text.index("mask & ((KYBER_Q")].count("\n") + 1
    return root, line


def test_clangover_is_confirmed_for_clang16_refnv_only_and_autovec_removes_it(tree, tmp_path):
    """The issue's done-when, on the ops that show it: with the pre-fix poly_frommsg, clang-16 without
    vectorization (refnv) branches on every message bit; gcc does not, and vectorization (ref) removes it."""
    if not shutil.which("valgrind") or not shutil.which("clang-16"):
        pytest.fail("valgrind and clang-16 are needed (make test installs them as root: tools/test-deps.sh)",
                    pytrace=False)
    root, line = _pre_fix_tree(tree, tmp_path)
    d = tmp_path / "s"
    r = run_cli("run", d, "--source", root, "--schemes", "ml-kem-512", "--cc", "gcc,clang-16",
                "--variants", "refnv,ref", "--ops", "poly_frommsg,kem_encaps", "--metric", "ct", "--preset", "quick")
    assert r.returncode == 0, r.stderr
    r = run_cli("analyze", d)
    assert r.returncode == 0, r.stderr
    df = pd.read_parquet(StudyDir(d).results("constant_time.parquet"))
    verdicts = df.drop_duplicates(["op", "variant", "compiler"]).set_index(["op", "variant", "compiler"])["verdict"]
    for op in ("poly_frommsg", "kem_encaps"):
        assert verdicts[(op, "refnv", "clang-16")] == "leak"
        assert all(verdicts[(op, v, c)] == "clean" for v, c in (("ref", "clang-16"), ("refnv", "gcc"), ("ref", "gcc")))
    leaks = df[df.site_verdict.eq("leak")]
    assert set(leaks.file) == {"poly.c"} and set(leaks.line) == {line} and set(leaks.kind) == {"branch"}
    assert leaks.function.str.endswith("poly_frommsg").all()
    stages = pd.read_parquet(StudyDir(d).results("ct_stages.parquet"))
    chain = stages[stages["stage"].ne("cross_compiler")]
    assert len(chain) == 1
    s = chain.iloc[0]
    assert (s["stage"], s["change"], s["compiler"]) == ("autovec", "removed", "clang-16")
    assert f"poly.c:{line}" in s["sentence"]
    # and across compilers: gcc's refnv is clean, clang-16's leaks
    (x,) = stages[stages["stage"].eq("cross_compiler")].to_dict("records")
    assert (x["change"], x["compiler"], x["variant"]) == ("introduced", "clang-16", "refnv")
    assert f"poly.c:{line}" in x["sentence"]


# --- dudect's statistic, against scipy and by simulation ------------------------------------------------------

def test_dudect_is_welch_t_of_the_crop_with_the_largest_t():
    from scipy import stats

    from pqsimd.stats import dudect

    rng = np.random.default_rng(1)
    cls = rng.integers(0, 2, 4000)
    ticks = rng.normal(1000, 10, 4000) + np.where(cls == 1, 3.0, 0.0)  # random secrets 3 ticks slower
    d = dudect.dudect(cls, ticks)
    assert d.exceeds and d.t > 0
    keep = ticks <= np.quantile(ticks, d.crop) if d.crop < 1 else np.ones(ticks.size, bool)
    want = stats.ttest_ind(ticks[keep & (cls == 1)], ticks[keep & (cls == 0)], equal_var=False).statistic
    assert d.t == pytest.approx(want)
    assert d.n_fixed + d.n_random == keep.sum()


def test_dudect_false_alarms_are_rare_without_a_difference():
    """Same distribution for both classes, heavy tail: the largest |t| over the crops exceeds 4.5 in well
    under 1% of 300 simulated tests (a bound the threshold is meant to keep on quiet data)."""
    from pqsimd.stats import dudect

    rng = np.random.default_rng(7)
    alarms = 0
    for _ in range(300):
        cls = rng.integers(0, 2, 1000)
        ticks = 1000 + rng.gamma(2.0, 20.0, 1000)
        alarms += dudect.dudect(cls, ticks).exceeds
    assert alarms <= 3


def test_timing_evidence_is_recorded_and_analysed_never_asserted(study):
    """dudect's measurements ride with every tested op (classes and ticks, both classes present) and the
    analysis turns them into Welch's t; no value of t is asserted (a timing is never a test's oracle)."""
    ops = _record(study)["ops"]
    for op, (verdict, _, _) in EXPECTED.items():
        if verdict == "n/a":
            assert "timing" not in ops[op]
            continue
        t = ops[op]["timing"]
        assert len(t["classes"]) == len(t["ticks"]) > 0 and set(t["classes"]) == {"0", "1"}
    df = pd.read_parquet(StudyDir(study).results("constant_time.parquet")).drop_duplicates("op").set_index("op")
    assert np.isfinite(df.loc["secret_branch", "dudect_t"]) and df.loc["secret_branch", "dudect_threshold"] == 4.5
    assert pd.isna(df.loc["no_secret", "dudect_t"])


def test_a_speedup_of_a_leaking_variant_carries_the_mark(tmp_path):
    """results.py joins results/constant_time onto the comparisons (ct_leak); every table cell and show's
    variant column then mark the speedup of a variant that leaks for that op and compiler, and only it."""
    from pqsimd.analyze.write import write_table
    from pqsimd.report.tables import speedup_cell
    from pqsimd.results import CT_MARK, with_ct_leaks

    sites = _sites([("refnv", "clang-16", "leak"), ("ref", "clang-16", "clean"), ("refnv", "gcc", "clean")])
    write_table(sites, tmp_path, "constant_time")
    comp = pd.DataFrame([{"scheme": "s", "op": "poly_frommsg", "variant": v, "compiler": c, "baseline": "x",
                          "speedup": 2.0, "ci_low": 1.9, "ci_high": 2.1, "ci_level": 0.95, "verdict": "faster"}
                         for v, c in (("refnv", "clang-16"), ("ref", "clang-16"), ("refnv", "gcc"))])
    got = with_ct_leaks(comp, tmp_path)
    assert got["ct_leak"].tolist() == [True, False, False]
    cells = [speedup_cell(r.to_dict()).text for _, r in got.iterrows()]
    assert cells[0].endswith(CT_MARK) and not any(CT_MARK in c for c in cells[1:])
    assert with_ct_leaks(comp, tmp_path / "none")["ct_leak"].tolist() == [False] * 3  # no ct results: no mark


def test_aarch64_under_qemu_compares_execution_counts_over_the_secrets(tmp_path):
    """No valgrind for aarch64: the plugin's per-instruction counts of the call over 8 secrets. A branch on
    a secret changes them (leak, at the branch's body), a masked select does not; the scope says what is not
    checked (addresses, divisions)."""
    from pqsimd import isa

    a = isa.get("aarch64")
    if not (shutil.which(a.qemu) and shutil.which(f"{a.gnu_triple}-gcc")):
        pytest.fail(f"{a.qemu} or {a.gnu_triple}-gcc is not installed (make test installs them as root: "
                    "tools/test-deps.sh)", pytrace=False)
    d = tmp_path / "s"
    r = run_cli("run", d, "--preset", "quick", "--schemes", "ct-fixture", "--variants", "ref", "--metric", "ct",
                "--isa", "aarch64", "--ops", "secret_branch,ct_select,public_branch", env=ENV)
    assert r.returncode == 0, r.stderr
    ops = _record(d)["ops"]
    assert ops["secret_branch"]["verdict"] == "leak" and ops["ct_select"]["verdict"] == "clean"
    (site,) = ops["secret_branch"]["sites"]
    assert site["function"] == "pqsimd_fixture_secret_branch" and site["line"] in (_line("branch"), _line("branch") + 1)
    assert all(s["verdict"] == "declassified" for s in ops["public_branch"]["sites"])
    assert "qemu" in ops["ct_select"]["scope"] and "addresses" in ops["ct_select"]["scope"]


def test_a_chain_variant_the_study_left_out_is_stepped_over():
    """A study of refo0, ref and avx2 (no refnv) compares refo0 with ref for speed; its ct steps do the
    same: the leak -O0 has and -O3 removes is named, by both steps' labels (adversarial pass, issue 45)."""
    st = ct_analysis.stage_table(_sites([("refo0", "gcc", "leak"), ("ref", "gcc", "clean")]), CHAIN)
    assert len(st) == 1
    row = st.iloc[0]
    assert (row["base"], row["variant"], row["change"]) == ("refo0", "ref", "removed")
    assert row["stage_label"] == "compiler + auto-vec"
    # a variant that was built but untested (n/a) is not stepped over: it says nothing either way
    assert ct_analysis.stage_table(_sites([("refo0", "gcc", "leak"), ("refnv", "gcc", "n/a"),
                                           ("ref", "gcc", "clean")]), CHAIN).empty


def test_the_leak_warning_names_the_study_and_divisions(tmp_path, monkeypatch):
    """The warning's advice is a command that works on the study it is about (no `DIR`), and it names the
    division leaks it counts (adversarial pass, issue 45)."""
    sites = _sites([("ref", "gcc", "leak")]).assign(kind="div")
    monkeypatch.setattr(ct_analysis, "site_table", lambda records, families: sites)
    monkeypatch.setattr(ct_analysis, "ct_records", lambda directory: [])
    (tmp_path / "results").mkdir()
    warnings = ct_analysis.write_ct_results(tmp_path, tmp_path / "results", CHAIN, {})
    assert len(warnings) == 1
    assert f"`pqsimd show {tmp_path} --metric ct`" in warnings[0] and "DIR" not in warnings[0]
    assert "a division" in warnings[0]


def test_builds_are_listed_in_the_chains_order(tmp_path, monkeypatch):
    """The ct table's columns follow the chain (refo0, refnv, ref), as the speed table beside it does, not
    the raw files' alphabetical order (ref before refo0; adversarial pass, issue 45)."""
    from pqsimd.report.ct import verdict_matrix

    sites = _sites([("ref", "gcc", "clean"), ("refnv", "gcc", "leak"), ("refo0", "gcc", "leak")])
    monkeypatch.setattr(ct_analysis, "site_table", lambda records, families: sites)
    monkeypatch.setattr(ct_analysis, "ct_records", lambda directory: [])
    (tmp_path / "results").mkdir()
    ct_analysis.write_ct_results(tmp_path, tmp_path / "results", CHAIN, {})
    m = verdict_matrix(pd.read_parquet(tmp_path / "results" / "constant_time.parquet"))
    assert [c for c in m.columns if c in ("ref", "refnv", "refo0")] == ["refo0", "refnv", "ref"]


def test_another_compiler_that_removes_a_leak_is_named():
    """docs/constant-time.md's `--cc gcc,clang-16`: the step that removed gcc's branch is the compiler, named
    with the study's first compiler as the baseline (adversarial pass, issue 45)."""
    sites = _sites([("ref", "clang-16", "clean"), ("ref", "gcc", "leak")])
    st = ct_analysis.stage_table(sites, CHAIN, ["gcc", "clang-16"])
    assert len(st) == 1
    row = st.iloc[0]
    assert (row["stage"], row["change"], row["compiler"], row["variant"]) == ("cross_compiler", "removed", "clang-16", "ref")
    assert row["sentence"].startswith("compiler gcc → clang-16 removed the branch in poly_frommsg (poly.c:124) (ref)")
