"""wolfSSL 5.9.4 as the third implementation of ML-KEM and ML-DSA (implementations wolfssl-c and wolfssl):
each build passes PQClean's NIST KAT program (through harness/kat/wolfssl_*.c) and agrees byte for byte
with PQClean's clean and avx2 (and mldsa-native) on the gate's vectors; its op table holds the family's
ops less those the TOML declares absent; the intelasm build runs wolfSSL's AVX2 kernels and the portable
build none of them."""

import subprocess

import pytest

from pqsimd import catalog, machine, verify
from pqsimd.build import build_variant

CASES = {"ml-kem": ["ml-kem-512", "ml-kem-768", "ml-kem-1024"], "ml-dsa": ["ml-dsa-44", "ml-dsa-65", "ml-dsa-87"]}
AVX2_SYMBOLS = {"ml-kem": {"mlkem_keygen_avx2", "mlkem_encapsulate_avx2", "mlkem_decapsulate_avx2"},
                "ml-dsa": {"wc_mldsa_ntt_avx2", "wc_mldsa_invntt_avx2", "wc_mldsa_mul_avx2"}}


def _builds(tree, driver, family):
    variants = catalog.builtin_variants()
    names = ["ref", "wolfssl-c"]
    if {"avx2", "bmi2", "popcnt"} <= machine.cpu_flags():
        names += ["avx2", "wolfssl"]
    return {v: build_variant(tree, family, variants[v], "gcc", driver) for v in names}


@pytest.mark.parametrize("fam_name", sorted(CASES))
def test_wolfssl_passes_pqclean_kat_and_agrees(tree, driver, fam_name):
    family = catalog.families()[fam_name]
    builds = _builds(tree, driver, family)
    results = verify.gate(tree, driver, list(builds.values()), CASES[fam_name])
    for v, b in builds.items():
        r = results[b.id]
        assert r.passed, (v, [c.to_dict() for c in r.checks if not c.passed])
        kats = [c for c in r.checks if c.check == "nistkat"]
        assert len(kats) == len(CASES[fam_name]) and all(c.passed for c in kats), v  # PQClean's META.yml hash
        if v.startswith("wolfssl"):
            impl = family.implementation(v)
            for scheme in CASES[fam_name]:
                want = [op for op in family.ops if not impl.absent_reason(op, scheme)]
                assert list(r.ops[scheme]) == want, (v, scheme)


@pytest.mark.parametrize("fam_name", sorted(CASES))
def test_intelasm_build_links_the_avx2_kernels(tree, driver, fam_name):
    if not {"avx2", "bmi2", "popcnt"} <= machine.cpu_flags():
        pytest.skip("this CPU lacks AVX2/BMI2")
    builds = _builds(tree, driver, catalog.families()[fam_name])

    def symbols(b):
        out = subprocess.run(["nm", "-a", str(b.library)], capture_output=True, text=True, check=True).stdout
        return {line.split()[-1] for line in out.splitlines() if line.strip()}

    assert AVX2_SYMBOLS[fam_name] <= symbols(builds["wolfssl"])
    assert not AVX2_SYMBOLS[fam_name] & symbols(builds["wolfssl-c"])
    assert "cpuid_select_flags" in symbols(builds["wolfssl"])  # the pin


def test_absent_ops_say_why():
    for fam_name in CASES:
        fam = catalog.families()[fam_name]
        for impl in ("wolfssl-c", "wolfssl"):
            absent = fam.implementation(impl).absent
            assert absent and all(isinstance(why, str) and "wolfSSL" in why for why in absent.values()), (fam_name, impl)
    kem = catalog.families()["ml-kem"]
    assert kem.implementation("wolfssl").absent_reason("ntt", "ml-kem-768")  # fused in its AVX2 kernels
    assert not kem.implementation("wolfssl-c").absent_reason("ntt", "ml-kem-768")


# --- Falcon: the FP split, gated by cross-verification ------------------------------------------------

FALCON = ["falcon-512", "falcon-1024"]
SPLIT = ["wolfssl-c", "wolfssl-fpr-double", "wolfssl"]


def _falcon_builds(tree, driver):
    fam = catalog.families()["falcon"]
    variants = catalog.builtin_variants()
    names = ["ref", "wolfssl-c", "wolfssl-fpr-double"]
    if {"avx2", "fma"} <= machine.cpu_flags():
        names.append("wolfssl")
    return fam, {v: build_variant(tree, fam, variants[v], "gcc", driver, schemes=FALCON) for v in names}


def test_falcon_split_cross_verifies_with_pqclean(tree, driver):
    """Each wolfSSL backend's signatures verify under PQClean's clean Falcon and it verifies PQClean's (its
    sampler PRNG is not the reference's, so the bytes are its own: verify-only, named so)."""
    fam, builds = _falcon_builds(tree, driver)
    results = verify.gate(tree, driver, list(builds.values()), FALCON)
    for v, b in builds.items():
        r = results[b.id]
        assert r.passed, (v, [c.to_dict() for c in r.checks if not c.passed])
        if v in SPLIT:
            vec = [c for c in r.checks if c.check == "vectors"]
            assert all("cross-verify both ways with ref@gcc" in c.detail and "draws or expands its randomness" in c.detail
                       for c in vec), vec
            assert "sign_dyn" not in r.ops["falcon-512"] and fam.implementation(v).absent_reason("sign_dyn", "falcon-512")


def _nist_kat_entries(text: str) -> list[dict]:
    out, cur = [], {}
    for line in text.splitlines():
        if " = " not in line:
            continue
        k, v = line.split(" = ", 1)
        if k == "count" and cur:
            out.append(cur)
            cur = {}
        cur[k] = v
    return out + ([cur] if cur else [])


def test_falcon_split_verifies_the_nist_kat_signatures(tree, driver):
    """PQClean's NIST KAT output (its sha256 is META.yml's) re-encoded as detached signatures: every wolfSSL
    backend accepts the first 12 and rejects each with its message changed."""
    fam, builds = _falcon_builds(tree, driver)
    scheme = "falcon-512"
    proc = subprocess.run([str(builds["ref"].kat[scheme])], capture_output=True, check=True)
    import hashlib

    assert hashlib.sha256(proc.stdout).hexdigest() == verify.expected_kat_sha256(tree, scheme)
    signed = []
    for e in _nist_kat_entries(proc.stdout.decode())[:12]:
        pk, msg, sm = (bytes.fromhex(e[k]) for k in ("pk", "msg", "sm"))
        siglen = (sm[0] << 8) | sm[1]
        nonce, body = sm[2:42], sm[42 + len(msg):42 + len(msg) + siglen]
        assert body[0] == 0x20 + 9  # the attached encoding's header
        signed.append((pk, msg, bytes([0x30 + 9]) + nonce + body[1:]))
    for v in SPLIT:
        if v not in builds:
            continue
        good = verify.run_cross_verify(driver.path, builds[v].library, scheme, signed)
        bad = verify.run_cross_verify(driver.path, builds[v].library, scheme,
                                      [(pk, msg + b"\x01", sig) for pk, msg, sig in signed])
        assert good == [0] * len(signed) and all(rc != 0 for rc in bad), (v, good, bad)
