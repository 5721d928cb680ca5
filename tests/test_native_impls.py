"""mlkem-native and mldsa-native (the pq-code-package layout): byte for byte against kyber-py and
dilithium-py, PQClean's KAT through the adapters, agreement with PQClean's builds, the ops each
implementation has (and not), FIPS 203 input checks that are not a disagreement, kernel groups that
really switch code, and switch sets the gate or the build must refuse."""

import ctypes
import hashlib
import os
import subprocess
import tomllib

import pytest
import tomli_w
from dilithium_py.ml_dsa import ML_DSA_44
from kyber_py.ml_kem import ML_KEM_512
from test_family_mldsa import _gate_lines, _oracle_inputs

from pqsimd import catalog, machine, verify
from pqsimd.build import build_variant
from pqsimd.run import callgrind
from pqsimd.catalog import Variant
from pqsimd.errors import PqsimdError
from pqsimd.verify.kinds import Vector, position

KEM, SIGN = "ml-kem-512", "ml-dsa-44"
AVX2 = ("-O3", "-mavx2", "-mbmi2", "-mpopcnt")

if not {"avx2", "bmi2", "popcnt"} <= machine.cpu_flags():
    pytest.skip("this CPU lacks AVX2/BMI2/POPCNT: the native backends cannot run", allow_module_level=True)


@pytest.fixture(scope="module")
def native(tree, driver):
    """The portable C and the full native build of both implementations (every parameter set, as a
    study builds them: from the build cache when warm)."""
    variants, fams = catalog.builtin_variants(), catalog.families()
    out = {}
    for fam, ids in (("ml-kem", ("mlkem-native-c", "mlkem-native")), ("ml-dsa", ("mldsa-native-c", "mldsa-native"))):
        for vid in ids:
            out[vid] = build_variant(tree, fams[fam], variants[vid], "gcc", driver)
    return out


@pytest.fixture(scope="module")
def mldsa_ref(tree, driver):
    return build_variant(tree, catalog.families()["ml-dsa"], catalog.builtin_variants()["ref"], "gcc", driver)


# --- independent oracles ------------------------------------------------------------------------

def test_mlkem_native_matches_kyber_py(native, driver):
    """ek/dk/ct/ss of the portable C and of the x86_64 backend equal kyber-py for 20 seeds, every
    tampered position decapsulating to kyber-py's implicit-rejection key."""
    fr = (0.0, 0.5, 1.0, 0.3)
    vectors = []
    for i in range(20):
        d, z, m = (hashlib.sha256(b"native-%s%d" % (t, i)).digest() for t in (b"d", b"z", b"m"))
        vectors.append(Vector(f"{(d + z + m).hex()} {','.join(map(repr, fr))}", pool=d + z + m, fractions=fr))
    for vid in ("mlkem-native-c", "mlkem-native"):
        rows = verify.run_vectors(driver.path, native[vid].library, KEM, vectors)
        for v, row in zip(vectors, rows):
            ek, dk = ML_KEM_512._keygen_internal(v.pool[:32], v.pool[32:64])
            key, c = ML_KEM_512._encaps_internal(ek, v.pool[64:])
            assert (row["pk"], row["sk"], row["ct"], row["ss"]) == (ek, dk, c, key), vid
            assert row["ss_dec"] == key and row["used"] == 96 and row["rc"] == 0, vid
            for f, got in zip(fr, row["ss_tampered"]):
                t = bytearray(c)
                t[position(f, len(c))] ^= 1
                assert got == ML_KEM_512.decaps(dk, bytes(t)), vid


def test_mldsa_native_matches_dilithium_py(native, driver):
    """pk, sk and the hedged signature of both builds equal dilithium-py (FIPS 204) for 20 seeds."""
    inputs = _oracle_inputs(SIGN)
    for vid in ("mldsa-native-c", "mldsa-native"):
        rows = _gate_lines(driver, native[vid].library, SIGN, inputs)
        for (xi, rnd, msg), got in zip(inputs, rows):
            pk, sk = ML_DSA_44._keygen_internal(xi)
            assert (got["rc"], got["used"], got["dry"], got["verify_rc"]) == (0, 64, 0, 0), vid
            assert (got["pk"], got["sk"]) == (pk, sk), vid
            assert got["sig"] == ML_DSA_44._sign_internal(sk, bytes([0, 0]) + msg, rnd), vid
            assert got["sig_tampered_rc"] not in ("0", "-"), vid


# --- the gate: PQClean's KAT through the adapters, agreement with PQClean -----------------------

def test_gate_passes_and_agrees_with_pqclean(tree, driver, builds, native, mldsa_ref):
    for scheme, bs in ((KEM, [builds["ref"], builds["avx2"], native["mlkem-native-c"], native["mlkem-native"]]),
                       (SIGN, [mldsa_ref, native["mldsa-native-c"], native["mldsa-native"]])):
        results = verify.gate(tree, driver, bs, [scheme])
        for b in bs:
            res = results[b.id]
            assert res.passed, res.to_dict()
            kat = next(c for c in res.checks if c.check == "nistkat")
            assert kat.detail == verify.expected_kat_sha256(tree, scheme), b.id  # PQClean's META.yml


def test_each_build_has_the_family_ops_but_those_its_toml_calls_absent(driver, native):
    """Never a faked op: the op table registers every op of the family except the absent ones."""
    fams = catalog.families()
    for vid, b in native.items():
        fam = fams[b.family]
        impl = fam.implementation(catalog.builtin_variants()[vid].sources)
        out = subprocess.run([str(driver.path), "list", str(b.library)], capture_output=True, text=True, check=True)
        rows = {r.split("\t")[1]: r.split("\t") for r in out.stdout.splitlines()}
        assert set(rows) == set(fam.schemes), vid
        for scheme, r in rows.items():
            assert r[2] == impl.name
            want = tuple(o for o in fam.ops if impl.absent_reason(o, scheme) is None)
            assert tuple(r[4:]) == want, f"{vid} {scheme}"
    assert fams["ml-kem"].implementation("mlkem-native").absent_reason("poly_getnoise_eta2", "ml-kem-768")
    assert fams["ml-kem"].implementation("mlkem-native").absent_reason("poly_getnoise_eta2", KEM) is None


class _Scheme(ctypes.Structure):
    pass


_Scheme._fields_ = [("name", ctypes.c_char_p), ("impl", ctypes.c_char_p), ("ops", ctypes.c_void_p),
                    ("n_ops", ctypes.c_int), ("kind", ctypes.c_int), ("sizes", ctypes.c_size_t * 6),
                    ("keypair", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p)),
                    ("encaps", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p)),
                    ("decaps", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p)),
                    ("api_rest", ctypes.c_void_p * 3), ("next", ctypes.POINTER(_Scheme))]


class _Variant(ctypes.Structure):
    _fields_ = [("abi", ctypes.c_int), ("schemes", ctypes.CFUNCTYPE(ctypes.POINTER(_Scheme)))]


def _kem_api(library, scheme):
    """The scheme's KEM API from a variant's registry (harness/pqsimd.h), loaded in this process."""
    lib = ctypes.CDLL(str(library), mode=os.RTLD_LOCAL | getattr(os, "RTLD_DEEPBIND", 0))
    lib.pqsimd_variant_entry.restype = ctypes.POINTER(_Variant)
    s = lib.pqsimd_variant_entry().contents.schemes()
    while s and s.contents.name.decode() != scheme:
        s = s.contents.next
    return lib, s.contents


def test_fips203_input_checks_are_mlkem_natives_own_not_a_disagreement(builds, native):
    """mlkem-native's encaps checks the public key (coefficients < q) and its decaps the secret key
    (the hash of the public key inside it), as FIPS 203 section 7 requires and kyber-py does; PQClean
    checks neither. The gate never sends such inputs, so both pass it (test above)."""
    ek, dk = ML_KEM_512._keygen_internal(bytes(32), bytes(range(32)))
    bad_ek = bytes([0xFF, ek[1] | 0x0F]) + ek[2:]  # first coefficient 0xFFF >= q
    bad_dk = bytearray(dk)
    bad_dk[-64] ^= 1  # H(ek), stored before z
    _, c = ML_KEM_512._encaps_internal(ek, bytes(32))
    with pytest.raises(ValueError):
        ML_KEM_512._encaps_internal(bad_ek, bytes(32))
    with pytest.raises(ValueError):
        ML_KEM_512.decaps(bytes(bad_dk), c)
    rcs = {}
    for vid, lib in (("ref", builds["ref"].library), ("mlkem-native", native["mlkem-native"].library),
                     ("mlkem-native-c", native["mlkem-native-c"].library)):
        _keep, api = _kem_api(lib, KEM)
        ct, ss = ctypes.create_string_buffer(len(c)), ctypes.create_string_buffer(32)
        rcs[vid] = (api.encaps(ct, ss, bad_ek), api.decaps(ss, c, bytes(bad_dk)), api.decaps(ss, c, dk))
    assert rcs["ref"] == (0, 0, 0)  # PQClean: no input checks
    assert rcs["mlkem-native"] == rcs["mlkem-native-c"] == (-1, -1, 0)


# --- kernel groups switch real code; bad switch sets are refused ---------------------------------

def _symbols(library):
    return subprocess.run(["nm", str(library)], capture_output=True, text=True, check=True).stdout


def test_the_portable_build_has_no_native_code_and_the_native_build_has_it(native):
    for c, n in (("mlkem-native-c", "mlkem-native"), ("mldsa-native-c", "mldsa-native")):
        assert "ntt_avx2" not in _symbols(native[c].library)
        assert "ntt_avx2" in _symbols(native[n].library)
    assert "KeccakP1600times4" in _symbols(native["mlkem-native"].library)  # the 4-way Keccak group


def _sabotage_family(family, implementation="mlkem-native"):
    """The family with the custom NTT order as a group of its own and no tie: a switch set upstream's
    own checks allow (native/api.h), which builds and round-trips, but is not FIPS 203 / 204."""
    doc = tomllib.loads(family.text)
    impl = doc["implementations"][implementation]
    del impl["native"]["tied"]
    impl["groups"]["ntt"]["switches"].remove("NTT_CUSTOM_ORDER")
    impl["groups"]["order"] = {"label": "the custom coefficient order alone", "switches": ["NTT_CUSTOM_ORDER"]}
    return catalog.family_from_toml(tomli_w.dumps(doc), "sabotage.toml", None)


def test_a_sabotaged_switch_set_fails_the_gate(tree, driver, builds, native, mlkem):
    """The backend's NTT without its coefficient order (A is not permuted): decapsulation still
    returns the key, so only PQClean's KAT and the agreement with the other builds catch it."""
    groups = tuple(g for g in mlkem.implementation("mlkem-native").groups)
    bad = build_variant(tree, _sabotage_family(mlkem),
                        Variant(id="order-off", sources="mlkem-native", flags=AVX2, native=groups), "gcc", driver,
                        schemes=[KEM])
    results = verify.gate(tree, driver, [builds["ref"], native["mlkem-native"], bad], [KEM])
    assert results[builds["ref"].id].passed and results[native["mlkem-native"].id].passed
    by = {c.check: c for c in results[bad.id].checks}
    assert by["ops"].passed  # it runs
    assert not by["nistkat"].passed and "META.yml" in by["nistkat"].detail
    assert not by["vectors"].passed and by["vectors"].detail.startswith("differs from the agreeing builds")


def test_a_sabotaged_mldsa_switch_set_fails_the_gate(tree, driver, native, mldsa_ref):
    """mldsa-native's NTT and INVNTT without their coefficient order (ExpandA's matrix is not
    permuted): PQClean's KAT and the agreement with PQClean's build catch it."""
    fam = catalog.families()["ml-dsa"]
    groups = tuple(fam.implementation("mldsa-native").groups)
    bad = build_variant(tree, _sabotage_family(fam, "mldsa-native"),
                        Variant(id="order-off", sources="mldsa-native", flags=AVX2, native=groups), "gcc", driver,
                        schemes=[SIGN])
    results = verify.gate(tree, driver, [mldsa_ref, native["mldsa-native"], bad], [SIGN])
    assert results[mldsa_ref.id].passed and results[native["mldsa-native"].id].passed
    by = {c.check: c for c in results[bad.id].checks}
    assert by["ops"].passed and not results[bad.id].passed
    assert not by["nistkat"].passed and "META.yml" in by["nistkat"].detail
    assert not by["vectors"].passed


def test_native_code_without_the_backend_flags_does_not_build(tree, driver, mlkem):
    """Native groups compiled at plain -O3 (legacy SSE next to the backend's VEX code) are an
    #error of the generated guard, named in one line, never a silent slowdown or C fallback."""
    v = Variant(id="native-sse", sources="mlkem-native", flags=("-O3",), native=("reduce",))
    with pytest.raises(PqsimdError) as e:
        build_variant(tree, mlkem, v, "gcc", driver, schemes=[KEM])
    assert "needs __AVX2__ in every unit" in str(e.value) and "\n" not in str(e.value)


def test_a_group_split_across_switches_that_are_only_legal_together_is_refused(mlkem):
    doc = tomllib.loads(mlkem.text)
    impl = doc["implementations"]["mlkem-native"]
    impl["groups"]["ntt"]["switches"].remove("INTT")
    impl["groups"]["intt"] = {"label": "INVNTT alone", "switches": ["INTT"]}
    with pytest.raises(PqsimdError) as e:
        catalog.family_from_toml(tomli_w.dumps(doc), "split.toml", None)
    assert "only legal together are split across groups" in str(e.value) and "INTT (intt)" in str(e.value)


def test_an_unknown_group_is_one_line_at_the_build(tree, driver, mlkem, cli, tmp_path):
    d = tmp_path / "s"
    d.mkdir()
    (d / "study.toml").write_text('[variants.odd]\nsources = "mlkem-native"\nnative = ["nope"]\n'
                                  'flags = ["-O3", "-mavx2", "-mbmi2", "-mpopcnt"]\n')
    r = cli("run", d, "--schemes", KEM, "--variants", "odd,ref", "--no-run")
    assert "skip odd (gcc, ml-kem): implementation mlkem-native has no kernel group 'nope'" in r.stderr, r.stderr


# --- the mechanism view works for the new variants ------------------------------------------------

@pytest.fixture(scope="module")
def mechanism_study(native, tmp_path_factory):
    from conftest import require_tool, run_cli

    if callgrind.valgrind_path() is None:
        require_tool("valgrind is not installed (make test installs it as root: tools/test-deps.sh)")
    d = tmp_path_factory.mktemp("native-mix") / "s"
    r = run_cli("run", d, "--preset", "quick", "--schemes", f"{KEM},{SIGN}", "--variants",
                "mlkem-native-c,mlkem-native,mldsa-native", "--ops", "ntt,keypair_derand,sign_derand,empty",
                "--metric", "instructions,mix")
    assert r.returncode == 0, r.stderr
    return d


def _record(d, build_metric):
    import json

    import pyarrow.parquet as pq

    from pqsimd import store

    t = pq.read_table(d / "raw" / f"{build_metric}.parquet")
    return t.to_pandas(), json.loads(t.schema.metadata[store.JOB_METADATA_KEY])


def test_instructions_and_mix_of_the_native_builds(mechanism_study):
    from fractions import Fraction

    from pqsimd.run import mix

    counts = {}
    for vid in ("mlkem-native-c", "mlkem-native"):
        df, rec = _record(mechanism_study, f"{vid}.gcc.{KEM}.mix")
        _, irec = _record(mechanism_study, f"{vid}.gcc.{KEM}.instructions")
        counts[vid] = Fraction(irec["per_call_exact"]["ntt"][0])
        cls = {m[len(mix.CLASS_PREFIX):]: Fraction(int(r), int(b)) for m, r, b, op in
               zip(df.metric, df.raw, df.batch, df.op) if op == "ntt" and m.startswith(mix.CLASS_PREFIX)}
        assert sum(cls.values()) == counts[vid]  # the mix splits the exact count
        if vid == "mlkem-native":
            assert cls["vec_mul"] > 100 and cls["scalar_mul"] == 0
    assert counts["mlkem-native"] * 10 < counts["mlkem-native-c"]  # ~600 vs ~11,000 instructions


def test_the_fixed_seed_ml_dsa_ops_count_exactly(mechanism_study):
    """keypair_derand and sign_derand draw xi and rnd from a fixed pool every call: the same
    rejection-loop iterations in every call, so the count is one integer across repeats."""
    _, rec = _record(mechanism_study, f"mldsa-native.gcc.{SIGN}.instructions")
    for op in ("keypair_derand", "sign_derand"):
        reps = rec["per_call_exact"][op]
        assert len(reps) >= 2 and len(set(reps)) == 1 and "/" not in str(reps[0]), (op, reps)
