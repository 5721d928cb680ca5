"""The correctness gate: PQClean KATs, the kyber-py oracle, and a sabotaged variant refused."""

import hashlib

import pytest
from kyber_py.ml_kem import ML_KEM_512, ML_KEM_768, ML_KEM_1024

from pqsimd import verify
from pqsimd.build import build_variant
from pqsimd.catalog import Variant

ORACLE = {"ml-kem-512": ML_KEM_512, "ml-kem-768": ML_KEM_768, "ml-kem-1024": ML_KEM_1024}
SCHEMES = list(ORACLE)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_harness_matches_kyber_py_for_50_seeds(builds, scheme):
    """ek/dk/ct/ss from the C builds equal pure-Python FIPS 203 (kyber-py) for 50 seeds."""
    oracle = ORACLE[scheme]
    inputs = [(hashlib.sha256(b"d%d" % i).digest(), hashlib.sha256(b"z%d" % i).digest(), hashlib.sha256(b"m%d" % i).digest()) for i in range(50)]
    for vid in ("ref", "avx2"):
        rows = verify.run_vectors(builds[vid].harness, scheme, inputs)
        for (d, z, m), (pk, sk, ct, ss, ss_dec, ss_rej) in zip(inputs, rows):
            ek, dk = oracle._keygen_internal(d, z)
            key, c = oracle._encaps_internal(ek, m)
            assert (pk, sk, ct, ss) == (ek, dk, c, key), f"{vid} {scheme} differs from kyber-py"
            assert ss_dec == oracle.decaps(dk, c)
            tampered = bytes([c[0] ^ 1]) + c[1:]
            assert ss_rej == oracle.decaps(dk, tampered)  # implicit rejection, computed by kyber-py


def test_kat_hashes_match_meta_yml(tree, builds):
    for vid, b in builds.items():
        for scheme in SCHEMES:
            check = verify.check_kat(tree, b, scheme)
            assert check.passed, f"{vid} {scheme}: {check.detail}"
            assert check.detail == verify.expected_kat_sha256(tree, scheme)


def test_gate_passes_and_cross_checks_good_variants(tree, builds):
    results = verify.gate(tree, builds, ["ml-kem-512"])
    assert all(r.passed for r in results.values())
    assert {c.check for r in results.values() for c in r.checks} == {"nistkat", "vectors"}


@pytest.fixture(scope="module")
def sabotaged(tree, tmp_path_factory):
    """A clean build whose ML-KEM-512 computes modulo the wrong prime (3331, not 3329)."""
    d = tmp_path_factory.mktemp("sabotage")
    header = d / "sabotage.h"
    header.write_text(
        "#if __has_include(\"params.h\") && __has_include(\"cbd.h\")\n"
        "#include \"params.h\"\n"
        "#if KYBER_K == 2\n#undef KYBER_Q\n#define KYBER_Q 3331\n#endif\n#endif\n"
    )
    v = Variant(id="broken", sources="clean", flags=("-O2", "-include", str(header)))
    return build_variant(tree, v, "gcc")


def test_sabotaged_variant_is_refused_with_first_differing_byte(tree, builds, sabotaged):
    results = verify.gate(tree, {"ref": builds["ref"], "broken": sabotaged}, ["ml-kem-512", "ml-kem-768"])
    assert results["ref"].passed
    broken = results["broken"]
    assert not broken.passed
    by_check = {(c.check, c.scheme): c for c in broken.checks}
    assert not by_check[("nistkat", "ml-kem-512")].passed
    assert "differs from ref" in by_check[("vectors", "ml-kem-512")].detail
    assert "byte" in by_check[("vectors", "ml-kem-512")].detail
    # The sabotage only touches k = 2: the other parameter set still passes.
    assert by_check[("nistkat", "ml-kem-768")].passed and by_check[("vectors", "ml-kem-768")].passed


def test_cli_refuses_broken_variant_but_times_the_rest(tmp_path, sabotaged, cli):
    study = tmp_path / "s"
    study.mkdir()
    header = [f for f in sabotaged.flags if f.endswith(".h")][0]
    (study / "study.toml").write_text(
        f'[variants.broken]\nsources = "clean"\nflags = ["-O2", "-include", "{header}"]\n'
    )
    r = cli("run", study, "--preset", "quick", "--schemes", "ml-kem-512", "--variants", "ref,broken", "--ops", "ntt,empty", "--jobs", "1", "--spins", "3", "--reps", "2")
    assert r.returncode == 1, r.stderr
    lines = [l for l in r.stderr.splitlines() if "gate FAILED" in l]
    assert len(lines) == 1 and "broken" in lines[0] and "nistkat ml-kem-512" in lines[0]
    assert "Traceback" not in r.stderr
    assert (study / "raw" / "ref.ml-kem-512.0.parquet").exists()
    assert not list((study / "raw").glob("broken.*"))
