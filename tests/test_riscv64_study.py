"""`pqsimd run --isa riscv64 --vlen ...` end to end under emulation, on the RVV fixture family (hand-written
RVV kernels with a scalar twin, tests/fixtures/families/rvv.toml): builds by clang-19 gated under
qemu-riscv64 at every vector length (the kernels checked against a Python model of their arithmetic),
instructions counted by our plugin (the vector build's counts follow the length, the scalar builds'
do not; one count checked against QEMU's exec log), the mix in RVV classes at the study's register
width, simulated caches under a riscv64 geometry, the vector-length view; a vector build on a CPU
without V fails its gate in one line; a wrong kernel fails it too; the count markers appear in no
build but the driver's measure loop; --sources and --vlen refuse bad input in one line. With an
mlkem-native checkout (PQSIMD_MLKEM_NATIVE=PATH, e.g. a clone of v2.0.0) the issue's done-when
command runs too: the NTT's RVV gain over the same C with V is ~1 at VLEN 128 and 512 (the backend
falls back to C there) and above 1 at 256."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest

from pqsimd import isa
from pqsimd.isa import qemu
from pqsimd.run import instructions as ins

from conftest import require_tool, one_line_error, run_cli

RV = isa.get("riscv64")
FIXTURES = Path(__file__).parent / "fixtures"
FAMILIES = FIXTURES / "families"
ENV = {**os.environ, "PQSIMD_FAMILY_PATH": str(FAMILIES)}
SCHEME = "rvv-kernels"
VLENS = (128, 256, 512)

if not (shutil.which(RV.qemu) and shutil.which(f"{RV.gnu_triple}-gcc") and shutil.which("clang-19")):
    require_tool(f"{RV.qemu}, the riscv64 cross gcc or clang-19 is not installed (tools/test-deps.sh)")


def model() -> tuple[int, int]:
    """The fixture's kernels in Python (the oracle of rvv_ops.c's EXPECT_*): vadd's and the
    butterfly's checksums, as the op table computes them."""
    q, qinv = 3329, -3327

    def s16(v):
        v &= 0xFFFF
        return v - 0x10000 if v >= 0x8000 else v

    z = [(i * 7 + 1) + (1000 - 3 * i) for i in range(1000)]
    sv = sum((i + 1) * (v & 0xFFFFFFFF) for i, v in enumerate(z)) & 0xFFFFFFFF
    a = [(i * 37 + 5) % q for i in range(256)]
    k, length = 1, 128
    while length >= 8:
        for start in range(0, 256, 2 * length):
            zeta = (k * 1000 + 17) % q - q // 2
            k += 1
            for j in range(start, start + length):
                p = zeta * a[j + length]
                t = s16((p - s16(p * qinv) * q) >> 16)
                a[j + length], a[j] = s16(a[j] - t), s16(a[j] + t)
        length //= 2
    return sv, sum((i + 1) * (v & 0xFFFF) for i, v in enumerate(a)) & 0xFFFFFFFF


def test_the_fixture_carries_the_models_results():
    text = (FAMILIES / "rvv_ops.c").read_text()
    got = tuple(int(re.search(rf"#define EXPECT_{n} (0x[0-9a-f]+)u", text).group(1), 16) for n in ("VADD", "BUTTERFLY"))
    assert got == model()


@pytest.fixture(scope="module")
def vset(tmp_path_factory):
    d = tmp_path_factory.mktemp("rv") / "set"
    r = run_cli("run", d, "--isa", RV.name, "--schemes", SCHEME, "--variants", "refo0,ref,rvv", "--vlen",
                ",".join(map(str, VLENS)), "--metric", "instructions,mix,sim", "--sim-cpu", "spacemit-k1",
                "--preset", "quick", env=ENV, timeout=1800)
    assert r.returncode == 0, r.stderr[-3000:]
    return d


def test_every_length_is_a_gated_study_with_its_emulated_cpu(vset):
    assert sorted(int(p.name) for p in (vset / "vlen").iterdir()) == list(VLENS)
    for v in VLENS:
        sub = vset / "vlen" / str(v)
        manifest = json.loads((sub / "manifest.json").read_text())
        assert manifest["isa"]["name"] == RV.name and manifest["isa"]["vlen"] == v
        assert f"vlen={v}" in " ".join(manifest["isa"]["launcher"])
        assert manifest["compilers"].keys() == {"clang-19"}  # the ISA's default: RVV intrinsics need it
        for variant in ("refo0", "ref", "rvv"):
            gate = json.loads((sub / "gate" / f"{variant}.clang-19.rvv.json").read_text())
            assert gate["passed_schemes"] == [SCHEME], gate  # digest = hashlib's: the kernels match the model
        for raw in (sub / "raw").glob("*.instructions.parquet"):
            from pqsimd import store

            rec = store.read_job_record(raw)
            assert rec["vlen"] == v and f"vlen={v}" in rec["emulator"]["cpu"]


def test_a_set_continues_with_its_own_lengths(vset):
    again = run_cli("run", vset, env=ENV, timeout=1800)  # no --isa, no --vlen: DIR/vlens.toml says
    assert again.returncode == 0, again.stderr[-2000:]
    assert again.stderr.count("0 jobs to run") >= 2 * len(VLENS)  # instructions and mix of every length: done
    one_line_error(run_cli("run", vset, "--vlen", "256", env=ENV), "holds the vector lengths 128,256,512")


def _counts(sub: Path) -> pd.DataFrame:
    g = pd.read_parquet(sub / "results" / "groups.parquet")
    return g[g["metric"] == "instructions"].set_index(["op", "variant"])["median"]


def test_vector_counts_follow_the_length_and_scalar_counts_do_not(vset):
    c = {v: _counts(vset / "vlen" / str(v)) for v in VLENS}
    for variant in ("refo0", "ref"):
        for op in ("vadd", "butterfly"):
            assert len({c[v][(op, variant)] for v in VLENS}) == 1, (variant, op)
    vadd = [c[v][("vadd", "rvv")] for v in VLENS]
    assert vadd[0] > vadd[1] > vadd[2]  # fewer strips of 1000 elements as the registers widen
    # each strip is the same instructions: the count is affine in the number of strips ceil(1000 / (VLEN / 32))
    strips = [-(-1000 // (v // 32)) for v in VLENS]
    per_strip = Fraction(int(vadd[0] - vadd[1]), strips[0] - strips[1])
    assert per_strip.denominator == 1 and vadd[2] == vadd[1] - per_strip * (strips[1] - strips[2])
    counts = pd.read_parquet(vset / "results" / "vlen_counts.parquet")
    const = counts.groupby("variant")["constant"].all()
    assert bool(const["ref"]) and bool(const["refo0"]) and not bool(const["rvv"])


def test_a_count_agrees_with_qemus_exec_log(vset):
    sub = vset / "vlen" / "256"
    driver, lib = sub / "bin" / "driver", sub / "bin" / "rvv.clang-19.rvv.so"

    def window(op, n):
        (w,) = qemu.exec_log_count(RV.at(256), [str(driver), "count", str(lib), SCHEME, op, str(n)])
        return w

    empty = Fraction(window("empty", ins.N2) - window("empty", ins.N1), ins.N2 - ins.N1)
    second = Fraction(window("vadd", ins.N2) - window("vadd", ins.N1), ins.N2 - ins.N1) - empty
    assert float(second) == _counts(sub)[("vadd", "rvv")]


def test_the_vector_length_view_is_each_lengths_own_ratio(vset):
    t = pd.read_parquet(vset / "results" / "vlen.parquet")
    info = json.loads((vset / "results" / "vlen.json").read_text())
    assert info["vlens"] == list(VLENS) and info["reference"] == RV.vector["default"]
    extra = t[(t["stage"] == "extra") & (t["variant"] == "rvv")]
    assert set(extra["baseline"]) == {"ref"}
    for r in extra.itertuples(index=False):
        c = _counts(vset / "vlen" / str(r.vlen))
        assert r.ratio == pytest.approx(c[(r.op, "ref")] / c[(r.op, "rvv")], rel=1e-12)
    vadd = extra[extra["op"] == "vadd"].set_index("vlen")["ratio"]
    assert vadd[128] < vadd[256] < vadd[512]
    for name in ("index.html", "fig_vlen_scaling.png", "table_vlen.md"):
        assert (vset / "report" / name).exists(), name
    assert "../vlen/128/report/index.html" in (vset / "report" / "index.html").read_text()
    shown = run_cli("show", vset, env={**ENV, "COLUMNS": "200"})
    assert shown.returncode == 0 and "Across vector lengths" in shown.stdout and "ratio at 512" in shown.stdout


def test_the_mix_has_rvv_classes_at_the_studys_register_width(vset):
    for v in VLENS:
        ops = pd.read_csv(vset / "vlen" / str(v) / "results" / "mix_ops.csv").set_index(["op", "variant"])
        assert ops.loc[("vadd", "rvv"), "max_width"] == v and ops.loc[("vadd", "rvv"), "vector_share"] > 0.3
        assert ops.loc[("vadd", "ref"), "vector_share"] == 0
        mix = pd.read_csv(vset / "vlen" / str(v) / "results" / "mix.csv")
        m = mix[(mix["level"] == "mnemonic") & (mix["variant"] == "rvv") & (mix["op"] == "butterfly")]
        classes = dict(zip(m["mnemonic"], m["class"]))
        assert classes["vsetvli"] == "vec_config" and classes["vmulh.vx"] == "vec_mul"
        assert classes["vle16.v"] == "load" and classes["vse16.v"] == "store"
        cls = mix[(mix["level"] == "class") & (mix["variant"] == "rvv")]
        assert cls[cls["class"].isin(["other", "unknown"])]["count"].sum() == 0


def test_caches_are_simulated_under_a_riscv64_geometry(vset):
    s = pd.read_csv(vset / "vlen" / "256" / "results" / "sim.csv").set_index(["op", "variant"])
    assert set(s["geometry"]) == {"spacemit-k1"} and s["ir_matches_instructions"].all()
    # the scalar loop reads 2000 and writes 1000 elements, and so does the vector one (QEMU reports
    # every element a vector load or store moves); one loop branch per element, or per strip of 8
    assert (s.loc[("vadd", "ref"), "Dr"], s.loc[("vadd", "ref"), "Dw"]) == (2000, 1000)
    assert (s.loc[("vadd", "rvv"), "Dr"], s.loc[("vadd", "rvv"), "Dw"]) == (2000, 1000)
    assert s.loc[("vadd", "ref"), "Bc"] == 1000 and s.loc[("vadd", "rvv"), "Bc"] == 1000 // 8


def test_the_markers_are_in_no_build_but_the_drivers_loop(vset):
    """slti zero, zero, 0x79/0x7a: emitted by no compiler otherwise (every build of the set, gcc's and
    clang's PQClean ML-KEM builds below), and exactly twice each in the driver: in pqsimd_measure's loop and
    around the constant-time test's one call (ct.c's ct_call)."""
    words = qemu.marker_words(RV)
    objdump = f"{RV.gnu_triple}-objdump"

    def hits(path: Path) -> list[str]:
        out = subprocess.run([objdump, "-d", str(path)], capture_output=True, text=True, check=True).stdout
        return [line for line in out.splitlines() if re.search(rf"\s({words[0]:08x}|{words[1]:08x})\s", line)]

    sub = vset / "vlen" / "256"
    for lib in (sub / "bin").glob("*.so"):
        assert hits(lib) == [], lib
    assert len(hits(sub / "bin" / "driver")) == 4


def test_ml_kem_on_riscv64_answers_as_on_x86_64_and_carries_no_marker(tree):
    """PQClean's ML-KEM-512 cross-built for riscv64 (gcc and clang-19, with and without V) gives the
    x86-64 build's very answers to the gate's vectors (keys, ciphertexts, secrets, implicit
    rejections) under qemu-riscv64, at two vector lengths; and no compiler put a marker in it."""
    from pqsimd import build, catalog, verify

    scheme = "ml-kem-512"
    fam = catalog.families()["ml-kem"]
    variants = catalog.builtin_variants()
    vectors = verify.vectors_for(scheme)
    x86_driver = build.build_driver()
    x86 = build.build_variant(tree, fam, variants["ref"], build.find_compiler("gcc"), x86_driver, schemes=[scheme])
    expected = verify.run_vectors(x86_driver.path, x86.library, scheme, vectors)
    assert len(expected) == len(vectors) > 0 and all(expected)
    driver = build.build_driver(RV)
    words = qemu.marker_words(RV)
    for cc, vid in (("gcc", "refo0"), ("gcc", "ref"), ("clang-19", "ref"), ("clang-19", "ref-rvv")):
        b = build.build_variant(tree, fam, variants[vid], build.find_compiler(cc, RV), driver, schemes=[scheme])
        for vlen in (128, 512):
            got = verify.run_vectors(driver.path, b.library, scheme, vectors, RV.at(vlen).launcher())
            assert got == expected, (cc, vid, vlen)
        out = subprocess.run([f"{RV.gnu_triple}-objdump", "-d", str(b.library)], capture_output=True, text=True,
                             check=True).stdout
        assert f"{words[0]:08x}" not in out and f"{words[1]:08x}" not in out, (cc, vid)


def test_a_vector_build_without_the_vector_extension_fails_its_gate_in_one_line(tmp_path):
    r = run_cli("run", tmp_path / "novec", "--isa", RV.name, "--schemes", SCHEME, "--variants", "ref,rvv",
                "--vlen", "0", "--metric", "instructions", "--preset", "quick", env=ENV, timeout=900)
    assert r.returncode == 1, r.stderr[-2000:]
    failed = [line for line in r.stderr.splitlines() if line.startswith("gate FAILED")]
    assert len(failed) == 1 and "rvv (clang-19, rvv)" in failed[0] and "SIGILL" in failed[0]
    assert "no V extension" in failed[0] and "Traceback" not in r.stderr
    gate = json.loads((tmp_path / "novec" / "gate" / "ref.clang-19.rvv.json").read_text())
    assert gate["passed_schemes"] == [SCHEME]  # scalar code runs on the CPU without V


def test_a_wrong_vector_kernel_fails_the_gate(tmp_path):
    d = tmp_path / "bad"
    d.mkdir()
    (d / "study.toml").write_text('[variants.rvv-bad]\nsources = "rvv"\nflags = ["-O3", "-march=rv64gcv", '
                                  '"-DPQSIMD_FIXTURE_SABOTAGE"]\nisa = ["riscv64"]\n')
    r = run_cli("run", d, "--isa", RV.name, "--schemes", SCHEME, "--variants", "ref,rvv-bad", "--metric",
                "instructions", "--preset", "quick", env=ENV, timeout=900)
    assert r.returncode == 1, r.stderr[-2000:]
    gate = json.loads((d / "gate" / "rvv-bad.clang-19.rvv.json").read_text())
    assert gate["passed_schemes"] == [] and any(c["check"] == "vectors" and not c["passed"] for c in gate["checks"])


def test_bad_sources_and_lengths_are_refused_in_one_line(tmp_path):
    not_it = tmp_path / "other"
    (not_it / "mlkem" / "src").mkdir(parents=True)
    (not_it / "mlkem" / "src" / "kem.c").write_text("")
    base = ["run", tmp_path / "s", "--isa", RV.name, "--schemes", "ml-kem-512", "--no-run"]
    one_line_error(run_cli(*base, "--sources", f"mlkem-native={not_it}"), "no mlkem/src/native/riscv64/meta.h",
                   "git clone --branch v2.0.0")
    one_line_error(run_cli(*base, "--sources", f"mlkem-native={tmp_path / 'nowhere'}"), "no such directory")
    one_line_error(run_cli(*base, "--sources", f"pqclean={not_it}"), "no implementation builds from a checkout",
                   "mlkem-native")
    one_line_error(run_cli(*base, "--sources", "mlkem-native"), "NAME=PATH")
    one_line_error(run_cli(*base, "--vlen", "96"), "power of two from 128 to 1024")
    one_line_error(run_cli("run", tmp_path / "x", "--schemes", "ml-kem-512", "--vlen", "256", "--no-run"),
                   "has no vector length")
    one_line_error(run_cli(*base, "--vlen", "128,x"), "vector lengths in bits")
    assert not (tmp_path / "s").exists()


def test_a_checkout_variant_without_its_checkout_is_skipped_in_one_line(tmp_path):
    r = run_cli("run", tmp_path / "s", "--isa", RV.name, "--schemes", "ml-kem-512", "--variants",
                "ref,mlkem-native-v2-rvv", "--ops", "ntt", "--no-run", timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    skips = [line for line in r.stderr.splitlines() if line.startswith("skip") and "mlkem-native-v2-rvv" in line]
    assert len(skips) == 1 and "--sources mlkem-native=PATH" in skips[0]


CHECKOUT = os.environ.get("PQSIMD_MLKEM_NATIVE")


@pytest.mark.skipif(not CHECKOUT, reason="no mlkem-native checkout (PQSIMD_MLKEM_NATIVE=PATH to a clone of v2.0.0)")
def test_done_when_with_an_mlkem_native_checkout(tmp_path):
    """The issue's command on ML-KEM-768's NTT and INVNTT: the RVV backend's gain over the same C given V
    is measured ~1 where its README says it falls back to C (VLEN 128, 512) and above 1 at 256."""
    d = tmp_path / "mlkem"
    r = run_cli("run", d, "--isa", RV.name, "--vlen", "128,256,512", "--sources", f"mlkem-native={CHECKOUT}",
                "--schemes", "ml-kem-768", "--ops", "ntt,invntt,basemul", "--metric", "instructions",
                "--preset", "quick", timeout=3600)
    assert r.returncode == 0, r.stderr[-3000:]
    t = pd.read_parquet(d / "results" / "vlen.parquet")
    manifest = json.loads((d / "vlen" / "256" / "manifest.json").read_text())
    assert manifest["source"]["checkouts"]["mlkem-native"]["sha256"]
    step = t[(t["stage"] == "compiler_vs_hand_rvv")]
    for op in ("ntt", "invntt"):
        ratio = step[step["op"] == op].set_index("vlen")["ratio"]
        assert abs(ratio[128] - 1) < 0.01 and abs(ratio[512] - 1) < 0.01 and ratio[256] > 1.1, (op, ratio.to_dict())
