"""The Classic McEliece family: PQClean's KATs and the gate (implicit rejection computed in Python)
on clean and avx2, and an independent implementation as oracle: PyPI pqcrypto 1.0.0 wraps
backbone-mceliece, a pure-Rust Classic McEliece (round 4, validated against the NIST KATs), which
must decapsulate PQClean's ciphertexts under PQClean's keys to the same keys, rejected ones too."""

import importlib

import pytest
from conftest import ref_and_avx2

from pqsimd import catalog, verify
from pqsimd.verify.kinds import position

SETS = ["348864", "460896", "6688128", "6960119", "8192128"]
CHECKED = ["mceliece348864", "mceliece348864f"]  # the smallest set, systematic and semi-systematic


@pytest.fixture(scope="module")
def family():
    return catalog.families()["mceliece"]


@pytest.fixture(scope="module")
def mceliece_builds(tree, family, driver):
    return ref_and_avx2(tree, family, driver)


def test_family_data(family, tree):
    assert list(family.schemes) == [f"mceliece{n}{f}" for n in SETS for f in ("", "f")]
    for s in family.schemes.values():
        params = (tree.root / s.dir / "clean" / "params.h").read_text()
        n = int(params.split("#define SYS_N ")[1].split()[0])
        # the rejection key hashes s, the last n/8 bytes of the secret key
        assert family.gate_for(s.id)["implicit_rejection"]["z_from_secret_key_tail"] == n // 8, s.id
        assert ("MCELIECE_SEMI_SYSTEMATIC" in s.defines) == s.id.endswith("f")
    assert family.implementation("avx2").requires_cpu == ("avx2", "popcnt")


def test_gate_and_an_independent_implementation(tree, driver, mceliece_builds):
    results = verify.gate(tree, driver, list(mceliece_builds.values()), CHECKED)
    for b in mceliece_builds.values():
        assert results[b.id].passed, results[b.id].to_dict()
    for scheme in CHECKED:
        oracle = importlib.import_module(f"pqcrypto.kem.mceliece_{scheme.removeprefix('mceliece')}")
        vectors = verify.vectors_for(scheme)
        for b in mceliece_builds.values():
            for d, v in zip(verify.run_vectors(driver.path, b.library, scheme, vectors), vectors):
                assert len(d["pk"]) == oracle.PUBLIC_KEY_SIZE and len(d["sk"]) == oracle.SECRET_KEY_SIZE
                assert oracle.decaps(d["sk"], d["ct"]) == d["ss"], (b.id, scheme)
                for f, got in zip(v.fractions, d["ss_tampered"]):
                    ct = bytearray(d["ct"])
                    ct[position(f, len(ct))] ^= 1
                    assert oracle.decaps(d["sk"], bytes(ct)) == got != d["ss"]
                # PQClean's key pair is a key pair to the oracle too: its pk encapsulates to what its sk opens
                ct, ss = oracle.encaps(d["pk"])
                assert oracle.decaps(d["sk"], ct) == ss
