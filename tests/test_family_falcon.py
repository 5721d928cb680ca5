"""The Falcon family: PQClean's KATs and the gate on clean and avx2, signatures checked by an
independent verifier (PyPI falcon-digital-signature: Thomas Prest's pure-Python Falcon), and the
verify-only gate of builds whose floating-point rounding may differ: a variant that promises
byte-identical output and breaks it is refused (with the fix named), one that does not promise it
passes on its own checks, and one whose signatures do not verify is refused."""

import pytest
from conftest import fixture_family, ref_and_avx2, tree_subset

from pqsimd import catalog, machine, verify
from pqsimd.build import build_variant
from pqsimd.catalog import Variant
from pqsimd.verify.kinds import position

SCHEMES = ["falcon-512", "falcon-1024", "falcon-padded-512", "falcon-padded-1024"]
CHECKED = ["falcon-512", "falcon-padded-512"]  # the 1024 sets share the code; their KATs run in the e2e study


@pytest.fixture(scope="module")
def family():
    return catalog.families()["falcon"]


@pytest.fixture(scope="module")
def falcon_builds(tree, family, driver):
    return ref_and_avx2(tree, family, driver)


def test_family_data(family, tree):
    assert family.kind == "sign" and list(family.schemes) == SCHEMES
    for s in family.schemes.values():
        api = (tree.root / s.dir / "avx2" / "api.h").read_text()
        assert f"#define {s.namespace}_AVX2_CRYPTO_ALGNAME" in api, s.id
    # the avx2 code computes in hardware doubles, the clean code emulates binary64 in integers
    assert family.implementation("avx2").native_fp and not family.implementation("clean").native_fp
    assert "typedef uint64_t fpr;" in (tree.root / "crypto_sign/falcon-512/clean/fpr.h").read_text()
    assert "hardware FP plus SIMD" in family.views["cross_parameter_note"]  # the caveat reaches the report
    p = family.views["portfolio"]
    assert set(p["end_to_end"]) == {"keypair", "sign", "verify"} and p["kernels"]["fft"] == "fft"


def _public_key(pk: bytes, logn: int) -> list[int]:
    """PQClean's public key: header 0x00 + logn, then h's 2^logn coefficients in 14 bits each, MSB first."""
    n = 1 << logn
    assert pk[0] == logn and len(pk) == 1 + 14 * n // 8
    bits = int.from_bytes(pk[1:], "big")
    return [(bits >> (14 * (n - 1 - i))) & 0x3FFF for i in range(n)]


def test_gate_and_an_independent_verifier(tree, driver, falcon_builds):
    from falcon import falcon as oracle

    results = verify.gate(tree, driver, list(falcon_builds.values()), CHECKED)
    for b in falcon_builds.values():
        assert results[b.id].passed, results[b.id].to_dict()
    for scheme in CHECKED:
        vectors = verify.vectors_for(scheme)
        for b in falcon_builds.values():
            for d, v in zip(verify.run_vectors(driver.path, b.library, scheme, vectors), vectors):
                logn = d["sig"][0] - 0x30
                key = oracle.PublicKey(1 << logn, _public_key(d["pk"], logn))
                assert key.verify(v.message, d["sig"]), (b.id, scheme)
                bad = bytearray(d["sig"])
                bad[position(0.5, len(bad))] ^= 1  # the verifier is not one that accepts anything
                assert not key.verify(v.message, bytes(bad))
                if v.message:
                    assert not key.verify(bytes([v.message[0] ^ 1]) + v.message[1:], d["sig"])


# --- the verify-only gate ---------------------------------------------------------------------------

FIXTURE = """
family = "falcon-fixture"
kind = "sign"
op_table = "falcon.c"
[kat]
program = "test/crypto_sign/nistkat.c"
rng = "test/common/nistkatrng.c"
common = ["aes.c", "fips202.c"]
[gate]
vectors = 2
pool_bytes = 1024
[schemes.falcon-512-fixture]
dir = "crypto_sign/falcon-512"
namespace = "PQCLEAN_FALCON512"
[implementations.clean]
common = ["fips202.c"]
[implementations.avx2]
common = ["fips202.c"]
requires_cpu = ["avx2"]
native_fp = true
[ops]
order = ["keypair", "expand_privkey", "sign_dyn", "sign_tree", "sign", "verify", "fft", "ifft",
         "poly_mul_fft", "ntt", "sampler", "hash_to_point", "empty"]
self_check = "empty"
"""


def _tree(good, dest):
    """falcon-512 alone, its avx2 signing changeable by a define: PQSIMD_TEST_NONCE flips a nonce bit
    (other signatures, still valid: what different rounding could do), PQSIMD_TEST_BREAK a bit of s2
    (signatures that do not verify), PQSIMD_TEST_FOREIGN the hash of sign and verify alike (signatures
    only this build accepts)."""
    bad = tree_subset(good, dest, ("test/common", "test/crypto_sign", "crypto_sign/falcon-512"))
    src = bad.root / "crypto_sign/falcon-512/avx2/pqclean.c"
    text = src.read_text()
    for old, new in (("randombytes(nonce, NONCELEN);\n",
                      "randombytes(nonce, NONCELEN);\n#ifdef PQSIMD_TEST_NONCE\n    nonce[0] ^= 1;\n#endif\n"),
                     ("sign_dyn(r.sig, &sc, f, g, F, G, r.hm, 9, tmp.b);\n",
                      "sign_dyn(r.sig, &sc, f, g, F, G, r.hm, 9, tmp.b);\n#ifdef PQSIMD_TEST_BREAK\n    r.sig[3] ^= 1;\n#endif\n")):
        assert text.count(old) == 1
        text = text.replace(old, new)
    # PQSIMD_TEST_FOREIGN: sign and verify both hash one more byte: signatures this build verifies, no other
    old = "inner_shake256_inject(&sc, m, mlen);\n"
    assert text.count(old) == 2
    text = text.replace(old, old + '#ifdef PQSIMD_TEST_FOREIGN\n    inner_shake256_inject(&sc, (const uint8_t *)"x", 1);\n'
                                   '#endif\n')
    src.write_text(text)
    return bad


def test_verify_only_gate(tree, driver, tmp_path, monkeypatch):
    if not {"avx2", "bmi2", "popcnt"} <= machine.cpu_flags():
        pytest.skip("this CPU cannot run the avx2 builds")
    fam = fixture_family(tmp_path, monkeypatch, "falcon-fixture", FIXTURE)
    bad_tree = _tree(tree, tmp_path)

    def build(vid, sources, flags, fp_exact=True):
        return build_variant(bad_tree, fam, Variant(id=vid, sources=sources, flags=tuple(flags), fp_exact=fp_exact),
                             "gcc", driver)

    clean1, clean2 = build("c1", "clean", ["-O1"]), build("c2", "clean", ["-O2"])
    exact = build("exact", "avx2", ["-O2", "-mavx2", "-DPQSIMD_TEST_NONCE"])
    loose = build("loose", "avx2", ["-O2", "-mavx2", "-DPQSIMD_TEST_NONCE"], fp_exact=False)
    broken = build("broken", "avx2", ["-O2", "-mavx2", "-DPQSIMD_TEST_BREAK"], fp_exact=False)
    foreign = build("foreign", "avx2", ["-O2", "-mavx2", "-DPQSIMD_TEST_FOREIGN"], fp_exact=False)
    assert [verify.verify_only(b) for b in (clean1, exact, loose, broken)] == [False, False, True, True]
    res = verify.gate(bad_tree, driver, [clean1, clean2, exact, loose, broken, foreign], ["falcon-512-fixture"])
    assert res[clean1.id].passed and res[clean2.id].passed
    by = {b.variant: {c.check: c for c in res[b.id].checks} for b in (exact, loose, broken, foreign)}
    # promised byte-identical output and broke it: the KAT and the agreement fail, the fix is named,
    # and the message never suggests switching the check off
    assert not by["exact"]["nistkat"].passed and not by["exact"]["vectors"].passed
    assert by["exact"]["vectors"].detail.startswith("differs from the agreeing builds (c1@gcc")
    assert "-ffp-contract=off" in by["exact"]["vectors"].detail
    assert "fp_exact" not in by["exact"]["vectors"].detail and "verify-only" not in by["exact"]["vectors"].detail
    # did not promise it: the KAT program ran and verified its signatures (its hash differs, allowed),
    # and the clean reference verifies its signatures and it verifies the reference's
    assert res[loose.id].passed, res[loose.id].to_dict()
    assert "as this build's floating-point rounding allows" in by["loose"]["nistkat"].detail
    assert "verify-only" in by["loose"]["vectors"].detail and "cross-verify both ways with c1@gcc" in by["loose"]["vectors"].detail
    # verify-only is not "anything goes": signatures that do not verify are refused
    assert not res[broken.id].passed
    assert by["broken"]["vectors"].detail == "vector 0: verify rejects a valid signature"
    # self-consistent signatures (its own verify accepts them, its KAT program runs) that the reference
    # does not accept: refused by the cross-verification
    assert by["foreign"]["nistkat"].passed and not res[foreign.id].passed
    assert by["foreign"]["vectors"].detail == "vector 0: c1@gcc does not verify this build's signature"
    # with no build that reproduces the KAT to cross-verify against, a verify-only build is not timed
    alone = verify.gate(bad_tree, driver, [loose], ["falcon-512-fixture"])[loose.id]
    assert not alone.passed and "cannot be cross-verified" in alone.to_dict()["checks"][-1]["detail"]
