"""The HQC family (clean only): the gate, whose implicit-rejection key is computed in Python
(no PyPI package implements this HQC version: pqcrypto's backbone-hqc is FIPS 207, with other
hashing and 32-byte keys), and a sabotaged rejection path that PQClean's own KAT cannot see but
the gate refuses."""

import pytest
from conftest import fixture_family, tree_subset

from pqsimd import catalog, verify
from pqsimd.build import build_variant
from pqsimd.catalog import Variant
from pqsimd.verify.kinds import rejection_key


@pytest.fixture(scope="module")
def family():
    return catalog.families()["hqc"]


def test_family_data(family, tree):
    assert list(family.schemes) == ["hqc-128", "hqc-192", "hqc-256"]
    assert list(family.implementations) == ["clean"]  # no hand-SIMD code: the avx2 variant is skipped
    for s in family.schemes.values():
        assert "nistkat-rng: hqc" in (tree.root / s.dir / "META.yml").read_text()
        api = (tree.root / s.dir / "clean" / "api.h").read_text()
        sizes = {k: int(api.split(f"_{k} ")[1].split()[0]) for k in ("CRYPTO_CIPHERTEXTBYTES", "CRYPTO_SECRETKEYBYTES")}
        rej = family.gate_for(s.id)["implicit_rejection"]
        # u || v is the ciphertext without its 16-byte salt; sigma follows the 40-byte seed
        assert rej["ciphertext_bytes"] == sizes["CRYPTO_CIPHERTEXTBYTES"] - 16
        assert rej["z_from_secret_key"][0] == 40 and rej["z_from_secret_key"][1] - 40 in (16, 24, 32)


def test_rejection_key_formula():
    rej = {"hash": "shake_256", "z_from_secret_key": [2, 4], "ciphertext_bytes": 3, "prefix": "aa", "suffix": "04",
           "length": 8}
    import hashlib

    assert rejection_key(rej, b"\x00\x01\x02\x03\x04", b"xyzw") == hashlib.shake_256(b"\xaa\x02\x03xyz\x04").digest(8)
    tail = {"hash": "sha3_256", "z_from_secret_key_tail": 2, "length": 4}
    assert rejection_key(tail, b"abcd", b"ct") == hashlib.sha3_256(b"cdct").digest()[:4]


def test_gate_on_the_compiler_stages(tree, driver, family):
    variants = catalog.builtin_variants()
    builds = [build_variant(tree, family, variants[v], "gcc", driver) for v in ("refnv", "ref")]
    results = verify.gate(tree, driver, builds, ["hqc-128"])
    for b in builds:
        assert results[b.id].passed, results[b.id].to_dict()
        assert [c.check for c in results[b.id].checks] == ["nistkat", "ops", "vectors"]


FIXTURE = """
family = "hqc-fixture"
kind = "kem"
op_table = "hqc.c"
[kat]
program = "test/crypto_kem/hqckat.c"
rng = "test/common/hqckatrng.c"
common = ["fips202.c"]
[gate]
vectors = 1
[gate.implicit_rejection]
hash = "shake_256"
suffix = "04"
length = 64
z_from_secret_key = [40, 56]
ciphertext_bytes = 4417
[schemes.hqc-128-fixture]
dir = "crypto_kem/hqc-128"
namespace = "PQCLEAN_HQC128"
[implementations.clean]
common = ["fips202.c"]
[ops]
order = ["keypair", "encaps", "decaps", "pke_encrypt", "pke_decrypt", "vect_mul", "code_encode", "code_decode",
         "rm_encode", "rm_decode", "rs_encode", "rs_decode", "fixed_weight", "empty"]
self_check = "empty"
"""


def test_a_sabotaged_rejection_path_is_refused(tree, driver, tmp_path, monkeypatch):
    """Rejected ciphertexts hash sigma with one bit flipped: valid decapsulation and PQClean's KAT
    are unchanged, so only the Python rejection key can tell."""
    bad = tree_subset(tree, tmp_path, ("test/common", "test/crypto_kem", "crypto_kem/hqc-128"))
    kem = bad.root / "crypto_kem/hqc-128/clean/kem.c"
    text = kem.read_text()
    old = "mc[i] = (m[i] & result) ^ (sigma[i] & ~result);"
    assert text.count(old) == 1
    kem.write_text(text.replace(old, "mc[i] = (m[i] & result) ^ ((sigma[i] ^ 1) & ~result);"))
    fam = fixture_family(tmp_path, monkeypatch, "hqc-fixture", FIXTURE)
    b = build_variant(bad, fam, Variant(id="sabotaged", sources="clean", flags=("-O1",)), "gcc", driver)
    res = verify.gate(bad, driver, [b], ["hqc-128-fixture"])[b.id]
    by = {c.check: c for c in res.checks}
    assert by["nistkat"].passed  # the KAT does not exercise rejection
    assert not res.passed and by["vectors"].detail == (
        "vector 0: ciphertext byte 0 changed: decapsulation does not give the implicit-rejection key")
