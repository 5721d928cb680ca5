"""The correctness gate: PQClean's KATs, the kyber-py oracle, a reference decided by agreement
(never by order), tampering at several positions, and sabotaged variants refused."""

import hashlib

import pytest
from conftest import sabotaged_tree
from kyber_py.ml_kem import ML_KEM_512, ML_KEM_768, ML_KEM_1024

from pqsimd import verify
from pqsimd.build import build_variant
from pqsimd.catalog import Variant
from pqsimd.verify.kinds import Vector, position

ORACLE = {"ml-kem-512": ML_KEM_512, "ml-kem-768": ML_KEM_768, "ml-kem-1024": ML_KEM_1024}
SCHEMES = list(ORACLE)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_driver_matches_kyber_py_for_50_seeds(builds, driver, scheme):
    """ek/dk/ct/ss through the driver equal pure-Python FIPS 203 (kyber-py) for 50 seeds; every
    tampered position decapsulates to kyber-py's implicit-rejection key."""
    oracle = ORACLE[scheme]
    fr = (0.0, 0.5, 1.0, 0.3)
    vectors = []
    for i in range(50):
        d, z, m = (hashlib.sha256(b"%s%d" % (t, i)).digest() for t in (b"d", b"z", b"m"))
        pool = d + z + m
        vectors.append(Vector(f"{pool.hex()} {','.join(map(repr, fr))}", pool=pool, fractions=fr))
    for vid in ("ref", "avx2"):
        rows = verify.run_vectors(driver.path, builds[vid].library, scheme, vectors)
        for v, row in zip(vectors, rows):
            d, z, m = v.pool[:32], v.pool[32:64], v.pool[64:]
            ek, dk = oracle._keygen_internal(d, z)
            key, c = oracle._encaps_internal(ek, m)
            assert (row["pk"], row["sk"], row["ct"], row["ss"]) == (ek, dk, c, key), f"{vid} {scheme}"
            assert row["ss_dec"] == oracle.decaps(dk, c) and row["used"] == 96 and row["rc"] == 0
            for f, got in zip(fr, row["ss_tampered"]):
                t = bytearray(c)
                t[position(f, len(c))] ^= 1
                assert got == oracle.decaps(dk, bytes(t))


def test_kat_hashes_match_meta_yml(tree, builds):
    for vid, b in builds.items():
        for scheme in SCHEMES:
            check = verify.check_kat(tree, b, scheme)
            assert check.passed, f"{vid} {scheme}: {check.detail}"
            assert check.detail == verify.expected_kat_sha256(tree, scheme)


def test_gate_passes_good_variants(tree, driver, builds):
    results = verify.gate(tree, driver, list(builds.values()), ["ml-kem-512"])
    assert all(r.passed for r in results.values())
    assert {c.check for r in results.values() for c in r.checks} == {"nistkat", "vectors", "ops"}
    assert all(r.to_dict()["passed_schemes"] == ["ml-kem-512"] for r in results.values())


@pytest.fixture(scope="module")
def wrong_prime(tree, driver, mlkem, tmp_path_factory):
    """A clean build whose ML-KEM-512 computes modulo the wrong prime (3331, not 3329): fails the KAT."""
    d = tmp_path_factory.mktemp("sabotage")
    header = d / "sabotage.h"
    header.write_text(
        "#if __has_include(\"params.h\") && __has_include(\"cbd.h\")\n"
        "#include \"params.h\"\n"
        "#if KYBER_K == 2\n#undef KYBER_Q\n#define KYBER_Q 3331\n#endif\n#endif\n"
    )
    v = Variant(id="broken", sources="clean", flags=("-O2", "-include", str(header)))
    return build_variant(tree, mlkem, v, "gcc", driver)


@pytest.fixture(scope="module")
def first_byte_only(tree, driver, mlkem, tmp_path_factory):
    """ML-KEM-512 whose ciphertext comparison looks at byte 0 only: it passes the KAT (which never
    tampers) and a first-byte tamper, and fails on the middle and last byte."""
    t = sabotaged_tree(tree, tmp_path_factory.mktemp("firstbyte"), {
        "crypto_kem/ml-kem-512/clean/verify.c": ("for (i = 0; i < len; i++)", "for (i = 0; i < 1 && i < len; i++)")})
    return build_variant(t, mlkem, Variant(id="firstbyte", sources="clean", flags=("-O2",)), "gcc", driver), t


def test_kat_passing_variant_listed_first_does_not_become_the_reference(tree, driver, builds, first_byte_only):
    bad, bad_tree = first_byte_only
    assert verify.check_kat(bad_tree, bad, "ml-kem-512").passed  # the KAT alone cannot see it
    results = verify.gate(tree, driver, [bad, builds["ref"], builds["avx2"]], ["ml-kem-512"])
    assert results[builds["ref"].id].passed and results[builds["avx2"].id].passed
    vec = next(c for c in results[bad.id].checks if c.check == "vectors")
    assert not vec.passed and "yet decapsulation returns the same key" in vec.detail
    # the first tamper (byte 0) is caught by the broken comparison too: the failure is a later byte
    assert "byte 0 " not in vec.detail and "\n" not in vec.detail


def test_wrong_prime_is_refused_with_first_differing_byte(tree, driver, builds, wrong_prime):
    results = verify.gate(tree, driver, [builds["ref"], wrong_prime], ["ml-kem-512", "ml-kem-768"])
    assert results[builds["ref"].id].passed
    broken = results[wrong_prime.id]
    assert not broken.passed
    by_check = {(c.check, c.scheme): c for c in broken.checks}
    assert not by_check[("nistkat", "ml-kem-512")].passed
    # the sabotage only touches k = 2: the other parameter set still passes
    assert by_check[("nistkat", "ml-kem-768")].passed and by_check[("vectors", "ml-kem-768")].passed
    assert broken.to_dict()["passed_schemes"] == ["ml-kem-768"]


def test_two_disagreeing_builds_without_a_majority_both_fail(tree, driver, builds, monkeypatch):
    """No order, no majority: nothing says which is right, so neither is timed."""
    real = verify.run_vectors

    def skewed(drv, library, scheme, vectors, *launcher):  # the launcher: the ISA's emulator, none natively
        rows = real(drv, library, scheme, vectors, *launcher)
        if library == builds["avx2"].library:
            for r in rows:
                r["pk"] = bytes([r["pk"][0] ^ 1]) + r["pk"][1:]
        return rows

    monkeypatch.setattr(verify, "run_vectors", skewed)
    monkeypatch.setattr(verify, "GATE_CACHE_VERSION", "skewed-test")  # cached answers would hide the skew
    results = verify.gate(tree, driver, [builds["ref"], builds["avx2"]], ["ml-kem-512"])
    for b in ("ref", "avx2"):
        vec = next(c for c in results[builds[b].id].checks if c.check == "vectors")
        assert not vec.passed and "none is in the majority" in vec.detail


def test_cli_refuses_broken_variant_but_times_the_rest(tmp_path, wrong_prime, cli):
    study = tmp_path / "s"
    study.mkdir()
    header = [f for f in wrong_prime.flags if f.endswith(".h")][0]
    (study / "study.toml").write_text(
        f'[variants.broken]\nsources = "clean"\nflags = ["-O2", "-include", "{header}"]\n'
    )
    r = cli("run", study, "--preset", "quick", "--schemes", "ml-kem-512", "--variants", "ref,broken", "--ops",
            "ntt,empty", "--jobs", "1", "--spins", "3", "--reps", "2", "--design", "separate")
    assert r.returncode == 1, r.stderr
    lines = [l for l in r.stderr.splitlines() if "gate FAILED" in l]
    assert len(lines) == 1 and "broken" in lines[0] and "nistkat ml-kem-512" in lines[0]
    assert "Traceback" not in r.stderr
    assert (study / "raw" / "ref.gcc.ml-kem-512.0.parquet").exists()
    assert not list((study / "raw").glob("broken.*"))


def test_gate_outcomes_are_cached_per_build(tree, driver, builds, monkeypatch):
    """A build's gate depends only on its binaries and the inputs: the second gate of the same
    builds runs neither the KAT nor the vectors, and gives the same result."""
    first = verify.gate(tree, driver, [builds["ref"], builds["avx2"]], ["ml-kem-512"])
    calls = []
    monkeypatch.setattr(verify, "run_vectors", lambda *a: calls.append(a) or [])
    monkeypatch.setattr(verify, "check_kat", lambda *a: calls.append(a))
    again = verify.gate(tree, driver, [builds["ref"], builds["avx2"]], ["ml-kem-512"])
    assert not calls
    assert {k: v.to_dict() for k, v in again.items()} == {k: v.to_dict() for k, v in first.items()}
