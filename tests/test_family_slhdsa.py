"""The slh-dsa family (FIPS 205 SLH-DSA on wolfSSL 5.9.4): the oracle it is gated against checked
against NIST's ACVP vectors, the family's answers_sha256 recomputed by that oracle, the wolfSSL
builds (portable C and intelasm, the cpuid dispatch pinned) passing the gate byte for byte, hedged
signing against the oracle, the round-3 `sphincs` family kept apart, and bad family data refused in
one line."""

import importlib.util
import json
import subprocess
from pathlib import Path

import pytest

from pqsimd import catalog, machine, verify
from pqsimd.build import build_variant
from pqsimd.errors import PqsimdError
from pqsimd.verify import kinds

GATED = ["slh-dsa-shake-128f", "slh-dsa-sha2-128f"]
FAST = [f"slh-dsa-{h}-{l}f" for h in ("shake", "sha2") for l in ("128", "192", "256")]
ROOT = Path(__file__).resolve().parents[1]


def _tool():
    spec = importlib.util.spec_from_file_location("slh_dsa_gate_digests", ROOT / "tools" / "slh_dsa_gate_digests.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def family():
    return catalog.families()["slh-dsa"]


@pytest.fixture(scope="module")
def oracle():
    pytest.importorskip("slhdsa")  # PyPI slh-dsa, a test dependency
    return _tool()


@pytest.fixture(scope="module")
def acvp(tree):
    root = next(c.root for c in tree.crates if c.name == "slh-dsa") / "tests" / "acvp"
    return {m: json.loads((root / f"SLH-DSA-{m}-FIPS205" / "internalProjection.json").read_text())
            for m in ("keyGen", "sigGen", "sigVer")}


@pytest.fixture(scope="module")
def wolf_builds(tree, family, driver):
    variants = catalog.builtin_variants()
    out = {"ref": build_variant(tree, family, variants["ref"], "gcc", driver, schemes=GATED)}
    if {"avx2", "bmi2"} <= machine.cpu_flags():
        out["avx2"] = build_variant(tree, family, variants["avx2"], "gcc", driver, schemes=GATED)
    return out


# --- the oracle against NIST ---------------------------------------------------------------------

def test_oracle_reproduces_nist_acvp_keygen_and_signing(oracle, acvp):
    """PyPI slh-dsa's slh_keygen_internal and slh_sign_internal give NIST's ACVP FIPS 205 answers (the
    revision the vectors name), deterministic and hedged, so its digests in the family TOML are FIPS 205's."""
    assert acvp["keyGen"]["revision"] == acvp["sigGen"]["revision"] == "FIPS205"
    checked = 0
    for g in acvp["keyGen"]["testGroups"]:
        par = oracle.parameter(g["parameterSet"].lower())
        t = g["tests"][0]
        pk, sk = oracle.keygen(par, *(bytes.fromhex(t[k]) for k in ("skSeed", "skPrf", "pkSeed")))
        assert pk.hex().upper() == t["pk"] and sk.hex().upper() == t["sk"], g["parameterSet"]
        checked += 1
    import slhdsa.lowlevel.slhdsa as ll

    for g in acvp["sigGen"]["testGroups"]:
        if not g["parameterSet"].endswith("f"):
            continue  # the s sets sign for seconds in Python; keygen covered them above
        par = oracle.parameter(g["parameterSet"].lower())
        t = g["tests"][0]
        sk, n = bytes.fromhex(t["sk"]), par.n
        key = (sk[:n], sk[n:2 * n], sk[2 * n:3 * n], sk[3 * n:])
        msg = bytes.fromhex(t["message"])
        if g["deterministic"]:
            sig = ll.sign(msg, key, par, False)
        else:
            import slhdsa.lowlevel.slhdsa as mod
            saved, mod.token_bytes = mod.token_bytes, lambda k: bytes.fromhex(t["additionalRandomness"])
            try:
                sig = ll.sign(msg, key, par, True)
            finally:
                mod.token_bytes = saved
        assert sig.hex().upper() == t["signature"], (g["parameterSet"], g["deterministic"])
        checked += 1
    assert checked >= 8


@pytest.mark.parametrize("scheme", FAST)
def test_answers_sha256_is_the_oracles(oracle, family, scheme):
    """The committed digest the gate compares with is the oracle's answer to the gate's own vectors."""
    assert family.gate_for(scheme)["answers_sha256"] == oracle.digest(scheme)


# --- the wolfSSL builds --------------------------------------------------------------------------

def test_family_is_fips205_not_sphincs(family):
    spx = catalog.families()["sphincs"]
    assert family.kind == spx.kind == "sign"
    assert all(s.label.startswith("SLH-DSA-") for s in family.schemes.values())
    assert not any(s.label.startswith("SLH-DSA") for s in spx.schemes.values())
    assert not set(family.schemes) & set(spx.schemes)
    assert len(family.schemes) == 12
    assert {i.table["layout"] for i in family.implementations.values()} == {"wolfssl"}


def test_gate_passes_byte_for_byte_with_the_oracle(tree, driver, family, wolf_builds):
    results = verify.gate(tree, driver, list(wolf_builds.values()), GATED)
    for bid, r in results.items():
        assert r.passed, (bid, [c.to_dict() for c in r.checks if not c.passed])
        vec = [c for c in r.checks if c.check == "vectors"]
        assert len(vec) == len(GATED) and all("byte for byte the answers of PyPI slh-dsa" in c.detail for c in vec)
        assert {"keccak_x4", "keccak_1"} <= set(r.ops["slh-dsa-shake-128f"])
        assert not {"keccak_x4", "keccak_1"} & set(r.ops["slh-dsa-sha2-128f"])  # n/a: no Keccak in SHA-2 sets


def test_gate_refuses_answers_that_are_not_the_oracles(tree, driver, family, wolf_builds, monkeypatch):
    """One changed digest (as a wrong oracle or a wrong build would give) fails every build, named."""
    orig = catalog.Family.gate_for
    monkeypatch.setattr(catalog.Family, "gate_for", lambda self, s: {**orig(self, s), "answers_sha256": "0" * 64}
                        if self.name == "slh-dsa" else orig(self, s))
    results = verify.gate(tree, driver, [wolf_builds["ref"]], ["slh-dsa-shake-128f"])
    detail = " ".join(c.detail for c in results[wolf_builds["ref"].id].checks if not c.passed)
    assert "differ from the oracle's" in detail and "answers_sha256 0000000000000000" in detail


def test_dispatch_rc_is_named():
    d = {"rc": kinds.DISPATCH_RC, "used": 48, "dry": 0, "pk": b"", "sk": b"", "sig": b"", "verify_rc": 0,
         "sig_tampered_rc": [], "msg_tampered_rc": []}
    assert "cpuid dispatch is not the path it is pinned to" in kinds.sign_check(0, d, kinds.Vector(""), {})


def test_avx2_build_holds_the_x4_keccak_and_ref_none(wolf_builds):
    """The pinned build links wolfSSL's 4-way AVX2 Keccak and its BMI2 single Keccak; the portable build neither."""
    if "avx2" not in wolf_builds:
        pytest.skip("this CPU lacks AVX2/BMI2")

    def symbols(b):
        out = subprocess.run(["nm", "-a", str(b.library)], capture_output=True, text=True, check=True).stdout
        return {line.split()[-1] for line in out.splitlines() if line.strip()}

    avx2, ref = symbols(wolf_builds["avx2"]), symbols(wolf_builds["ref"])
    assert {"sha3_blocksx4_avx2", "sha3_block_bmi2", "cpuid_select_flags"} <= avx2
    assert not {"sha3_blocksx4_avx2", "sha3_block_bmi2", "cpuid_select_flags"} & ref
    pin = (wolf_builds["avx2"].directory / "pqsimd_wolfssl_pin.h")
    if pin.exists():
        assert "CPUID_AVX1 | CPUID_AVX2 | CPUID_BMI1 | CPUID_BMI2" in pin.read_text()


def test_hedged_signature_matches_the_oracle(oracle, tree, driver, wolf_builds):
    """The gate signs deterministically; wolfSSL's hedged signing (opt_rand given) is checked here: the
    op table's fixed key and opt_rand, signed by the oracle, verify under every build."""
    par = oracle.parameter("slh-dsa-shake-128f")
    n = par.n
    seeds = bytes((17 * i + 1) & 0xFF for i in range(3 * n))
    pk, sk = oracle.keygen(par, seeds[:n], seeds[n:2 * n], seeds[2 * n:3 * n])
    msg = bytes(range(32))
    hedged = oracle.sign_pure(par, sk, msg, opt_rand=bytes((5 * i + 3) & 0xFF for i in range(n)))
    det = oracle.sign_pure(par, sk, msg)
    assert hedged != det
    for b in wolf_builds.values():
        rcs = verify.run_cross_verify(driver.path, b.library, "slh-dsa-shake-128f",
                                      [(pk, msg, hedged), (pk, msg, det), (pk, msg + b"x", hedged)])
        assert rcs[:2] == [0, 0] and rcs[2] != 0, (b.id, rcs)


# --- bad family data: one line ---------------------------------------------------------------------

@pytest.mark.parametrize("edit, needle", [
    (('cpuid = ["CPUID_AVX1",', 'cpuid = ["AVX1",'), "is not a wolfSSL CPUID_* name"),
    (('gate = { answers_sha256 = "', 'gate = { answers_sha256 = "zz'), "must be 64 lowercase hex digits"),
    (('"USE_INTEL_SPEEDUP", ', '"USE-INTEL_SPEEDUP", '), "is not `NAME` or `NAME VALUE`"),
])
def test_bad_family_data_is_one_line(tmp_path, monkeypatch, edit, needle):
    text = (ROOT / "src" / "pqsimd" / "data" / "families" / "slh-dsa.toml").read_text()
    assert edit[0] in text
    d = tmp_path / "families"
    d.mkdir()
    (d / "slh-dsa-bad.toml").write_text(text.replace(edit[0], edit[1], 1).replace('family = "slh-dsa"',
                                                                                 'family = "slh-dsa-bad"'))
    monkeypatch.setenv("PQSIMD_FAMILY_PATH", str(d))
    with pytest.raises(PqsimdError) as e:
        catalog.families()
    assert needle in str(e.value) and "\n" not in str(e.value)
