"""The ML-DSA family (FIPS 204): PQClean's KATs and the gate, the dilithium-py oracle byte for byte,
and a sabotaged ML-DSA-44 refused by the gate."""

import hashlib
import shutil
import subprocess

import pytest
from dilithium_py.ml_dsa import ML_DSA_44, ML_DSA_65, ML_DSA_87

from pqsimd import catalog, machine, sources, verify
from pqsimd.build import build_driver, build_variant
from pqsimd.catalog import Variant

ORACLE = {"ml-dsa-44": ML_DSA_44, "ml-dsa-65": ML_DSA_65, "ml-dsa-87": ML_DSA_87}
SCHEMES = list(ORACLE)
SEEDS = 20
# message lengths the oracle vectors cycle through: empty, short, one SHAKE256 block (136) and
# around it, long
MESSAGE_LENGTHS = (0, 1, 33, 64, 135, 136, 137, 1000, 3300, 5)


@pytest.fixture(scope="module")
def family():
    return catalog.families()["ml-dsa"]


@pytest.fixture(scope="module")
def driver():
    return build_driver()


def _cpu_lacks(fam, vid):
    v = catalog.builtin_variants()[vid]
    need = set(v.requires_cpu) | set(fam.implementation(v.sources).requires_cpu)
    return sorted(need - machine.cpu_flags())


@pytest.fixture(scope="module")
def mldsa_builds(tree, family, driver):
    """ref (clean, -O3) and, where the CPU has it, avx2; from the build cache when warm."""
    variants = catalog.builtin_variants()
    out = {"ref": build_variant(tree, family, variants["ref"], "gcc", driver)}
    if not _cpu_lacks(family, "avx2"):
        out["avx2"] = build_variant(tree, family, variants["avx2"], "gcc", driver)
    return out


def _need_avx2(family):
    lacks = _cpu_lacks(family, "avx2")
    if lacks:
        pytest.skip(f"this CPU lacks {', '.join(lacks)}: the avx2 variant cannot run")


# --- (a) the family as data, the op table, the gate ----------------------------------------------

def test_family_toml_is_consistent(family):
    assert family.kind == "sign" and family.title == "ML-DSA (FIPS 204)"
    assert list(family.schemes) == SCHEMES
    assert family.self_check == "empty" and family.ops[-1] == "empty"
    assert set(family.labels) == set(family.ops)
    views = family.views
    for key in ("table1", "cross_parameter", "end_to_end"):
        assert set(views[key]) <= set(family.ops), key
    assert set(views["distribution"]["ops"]) <= set(family.ops)
    assert views["distribution"]["scheme"] in family.schemes
    assert views["macro_prefix"].isalpha()
    counters = catalog._toml(family.text, "ml-dsa.toml")["ops"]["call_counters"]
    assert counters == {"sign": "poly_challenge", "sign_mix": "poly_challenge"}


def test_every_build_registers_the_toml_ops_in_order(family, driver, mldsa_builds):
    for vid, b in mldsa_builds.items():
        out = subprocess.run([str(driver.path), "list", str(b.library)], capture_output=True, text=True, check=True)
        rows = [line.split("\t") for line in out.stdout.splitlines()]
        assert [r[1] for r in rows] == SCHEMES, vid
        impl = family.implementation(catalog.builtin_variants()[vid].sources).name
        for r in rows:
            assert r[2] == impl and r[3] == "2"  # PQSIMD_KIND_SIGN
            assert tuple(r[4:]) == family.ops, f"{vid} {r[1]}: op table and ml-dsa.toml disagree"


def test_every_op_runs(family, driver, mldsa_builds):
    """Each op's setup and a few hundred calls, in every build and set (`driver count`)."""
    for vid, b in mldsa_builds.items():
        for scheme in SCHEMES:
            for op in family.ops:
                calls = "20" if op in ("keypair", "sign", "sign_mix", "verify", "keypair_derand", "sign_derand") else "200"
                r = subprocess.run([str(driver.path), "count", str(b.library), scheme, op, calls],
                                   capture_output=True, text=True, timeout=300)
                assert r.returncode == 0, f"{vid} {scheme} {op}: {r.stderr.strip()}"


def test_gate_passes_clean_and_avx2(tree, driver, family, mldsa_builds):
    if "avx2" not in mldsa_builds:
        _need_avx2(family)
    results = verify.gate(tree, driver, list(mldsa_builds.values()), SCHEMES)
    for bid, res in results.items():
        failed = [f"{c.check} {c.scheme}: {c.detail}" for c in res.checks if not c.passed]
        assert res.passed, f"{bid}: {failed}"
        assert {(c.check, c.scheme) for c in res.checks} == {(k, s) for k in ("nistkat", "vectors", "ops") for s in SCHEMES}
    for b in mldsa_builds.values():
        for scheme in SCHEMES:
            kat = next(c for c in results[b.id].checks if c.check == "nistkat" and c.scheme == scheme)
            assert kat.detail == verify.expected_kat_sha256(tree, scheme)


# --- (b) independent oracle: dilithium-py, byte for byte ----------------------------------------

def _oracle_inputs(scheme):
    out = []
    for i in range(SEEDS):
        xi = hashlib.sha256(b"mldsa-xi/%s/%d" % (scheme.encode(), i)).digest()
        rnd = bytes(32) if i % 5 == 4 else hashlib.sha256(b"mldsa-rnd/%s/%d" % (scheme.encode(), i)).digest()
        n = MESSAGE_LENGTHS[i % len(MESSAGE_LENGTHS)]
        msg = hashlib.shake_256(b"mldsa-msg/%s/%d" % (scheme.encode(), i)).digest(n) if n else b""
        out.append((xi, rnd, msg))
    return out


def _gate_lines(driver, library, scheme, inputs):
    """Our own gate lines (pool = xi then rnd, FRACS "0"), answers parsed here, not by verify/."""
    text = "".join(f"{(xi + rnd).hex()} {msg.hex() or '-'} 0\n" for xi, rnd, msg in inputs)
    proc = subprocess.run([str(driver.path), "gate", str(library), scheme], input=text, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    rows = []
    for line in proc.stdout.splitlines():
        t = line.split()
        assert len(t) == 9, line[:200]
        rows.append({"rc": int(t[0]), "used": int(t[1]), "dry": int(t[2]), "pk": bytes.fromhex(t[3]),
                     "sk": bytes.fromhex(t[4]), "sig": bytes.fromhex(t[5]), "verify_rc": int(t[6]),
                     "sig_tampered_rc": t[7], "msg_tampered_rc": t[8]})
    assert len(rows) == len(inputs)
    return rows


@pytest.mark.parametrize("scheme", SCHEMES)
def test_pqclean_matches_dilithium_py(scheme, family, driver, mldsa_builds):
    """pk, sk and sig from clean and avx2 equal pure-Python FIPS 204 (dilithium-py) for 20 seeds;
    dilithium-py accepts the PQClean signature and rejects it once tampered."""
    if "avx2" not in mldsa_builds:
        _need_avx2(family)
    D = ORACLE[scheme]
    inputs = _oracle_inputs(scheme)
    answers = {vid: _gate_lines(driver, b.library, scheme, inputs) for vid, b in mldsa_builds.items()}
    for i, (xi, rnd, msg) in enumerate(inputs):
        pk, sk = D._keygen_internal(xi)
        sig = D._sign_internal(sk, bytes([0, 0]) + msg, rnd)  # M' = 0 || len(ctx) = 0 || M
        for vid, rows in answers.items():
            got = rows[i]
            where = f"{vid} {scheme} vector {i} (|msg| = {len(msg)})"
            assert (got["rc"], got["used"], got["dry"]) == (0, 64, 0), where  # xi and rnd, exactly
            assert got["pk"] == pk, f"{where}: pk differs from dilithium-py"
            assert got["sk"] == sk, f"{where}: sk differs from dilithium-py"
            assert got["sig"] == sig, f"{where}: signature differs from dilithium-py"
            assert got["verify_rc"] == 0, where
            assert got["sig_tampered_rc"] not in ("0", "-"), where  # PQClean rejects sig[0] ^ 1
            if msg:
                assert got["msg_tampered_rc"] not in ("0", "-"), where  # PQClean rejects msg[0] ^ 1
            else:
                assert got["msg_tampered_rc"] == "-", where  # nothing to tamper with
        assert D.verify(pk, msg, sig), f"{scheme} vector {i}: dilithium-py rejects the PQClean signature"
        for p in (0, len(sig) // 2, len(sig) - 1):
            bad = bytearray(sig)
            bad[p] ^= 1
            assert not D.verify(pk, msg, bytes(bad)), f"{scheme} vector {i}: dilithium-py accepts sig byte {p} flipped"
        if msg:
            assert not D.verify(pk, bytes([msg[0] ^ 1]) + msg[1:], sig)
        if i % 5 == 4:  # rnd = 0: FIPS 204 deterministic signing
            assert sig == D.sign(sk, msg, deterministic=True)


# --- (c) a sabotaged implementation is refused -----------------------------------------------------

def _sabotaged_tree(good: sources.SourceTree, dest):
    """A copy of the ML-DSA part of the PQClean tree whose ML-DSA-44 clean samples challenges of
    weight 38, not TAU = 39: one byte. Signing and verification still agree with each other, so
    only the KAT and the cross-build agreement can catch it."""
    root = dest / "pqclean"
    shutil.copytree(good.root / "common", root / "common")
    for d in ("test/common", "test/crypto_sign"):
        shutil.copytree(good.root / d, root / d)
    for s in SCHEMES:
        (root / "crypto_sign" / s).mkdir(parents=True)
        shutil.copy(good.root / "crypto_sign" / s / "META.yml", root / "crypto_sign" / s / "META.yml")
        shutil.copytree(good.root / "crypto_sign" / s / "clean", root / "crypto_sign" / s / "clean")
    params = root / "crypto_sign" / "ml-dsa-44" / "clean" / "params.h"
    text = params.read_bytes()
    assert text.count(b"#define TAU 39\n") == 1
    params.write_bytes(text.replace(b"#define TAU 39\n", b"#define TAU 38\n"))
    return sources.SourceTree(root=root, origin="path")


def test_sabotaged_variant_is_refused(tree, driver, family, mldsa_builds, tmp_path):
    bad_tree = _sabotaged_tree(tree, tmp_path)
    broken = build_variant(bad_tree, family, Variant(id="broken", sources="clean", flags=("-O0",)), "gcc", driver)
    results = verify.gate(bad_tree, driver, [*mldsa_builds.values(), broken], ["ml-dsa-44", "ml-dsa-65"])
    for b in mldsa_builds.values():
        assert results[b.id].passed, results[b.id].to_dict()
    res = results[broken.id]
    assert not res.passed
    by = {(c.check, c.scheme): c for c in res.checks}
    kat, vec = by[("nistkat", "ml-dsa-44")], by[("vectors", "ml-dsa-44")]
    assert not kat.passed and not vec.passed
    for c in (kat, vec):
        assert c.detail and "\n" not in c.detail and len(c.detail) < 300
    assert kat.detail.startswith("sha256 ") and "META.yml" in kat.detail
    # its signatures verify under its own code: only the majority of correct builds exposes it
    assert vec.detail.startswith("differs from the agreeing builds (ref@gcc") and " sig byte " in vec.detail
    # the sabotage touches ML-DSA-44 only
    assert by[("nistkat", "ml-dsa-65")].passed and by[("vectors", "ml-dsa-65")].passed
    assert res.passed_for("ml-dsa-65") and not res.passed_for("ml-dsa-44")
