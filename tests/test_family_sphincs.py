"""The SPHINCS+ family (round 3.1 "simple", the predecessor of FIPS 205 SLH-DSA): PQClean's KATs and
the gate, the op table's batched ops against their portable equivalents, PyPI slh-dsa (FIPS 205) as
an independent oracle once its FORS indices are read LSB-first (and that unpatched it differs),
and a sabotaged SPHINCS+ build refused by the gate."""

import hashlib
import importlib.abc
import importlib.machinery
import shutil
import subprocess
import sys
from contextlib import contextmanager
from importlib import resources
from pathlib import Path

import pytest

from pqsimd import catalog, machine, sources, verify
from pqsimd.build import build_driver, build_variant
from pqsimd.catalog import Variant

SHA2 = [f"sphincs-sha2-{s}-simple" for s in ("128f", "128s", "192f", "192s", "256f", "256s")]
SHAKE = [f"sphincs-shake-{s}-simple" for s in ("128f", "128s", "192f", "192s", "256f", "256s")]
SCHEMES = SHA2 + SHAKE
FAST = [s for s in SCHEMES if s.endswith("f-simple")]
# gate: SHA-256 and SHA-512 (256f) paths, SHAKE, 'f' and 's' sets
GATE_SCHEMES = ["sphincs-sha2-128f-simple", "sphincs-sha2-128s-simple", "sphincs-sha2-256f-simple",
                "sphincs-shake-128f-simple", "sphincs-shake-128s-simple"]
HEAVY_OPS = {"keypair", "sign", "verify", "fors_sign", "merkle_sign", "hash_message"}  # seconds in 's' sets


@pytest.fixture(scope="module")
def family():
    return catalog.families()["sphincs"]


@pytest.fixture(scope="module")
def driver():
    return build_driver()


def _cpu_lacks(fam, vid):
    v = catalog.builtin_variants()[vid]
    need = set(v.requires_cpu) | set(fam.implementation(v.sources).requires_cpu)
    return sorted(need - machine.cpu_flags())


@pytest.fixture(scope="module")
def spx_builds(tree, family, driver):
    """ref (clean, -O3) and, where the CPU has it, avx2; from the build cache when warm."""
    variants = catalog.builtin_variants()
    out = {"ref": build_variant(tree, family, variants["ref"], "gcc", driver)}
    if not _cpu_lacks(family, "avx2"):
        out["avx2"] = build_variant(tree, family, variants["avx2"], "gcc", driver)
    return out


def _need_avx2(family, builds):
    lacks = _cpu_lacks(family, "avx2")
    if "avx2" not in builds:
        pytest.skip(f"this CPU lacks {', '.join(lacks)}: the avx2 variant cannot run")


# --- (a) the family as data, the op table, the gate ----------------------------------------------

def test_family_toml_is_consistent(family, tree):
    assert family.kind == "sign"
    assert family.title == "SPHINCS+ round 3.1 simple (predecessor of FIPS 205 SLH-DSA)"
    assert "SLH-DSA" not in "".join(s.label for s in family.schemes.values())  # named honestly
    assert list(family.schemes) == SCHEMES
    for sid, s in family.schemes.items():
        assert s.dir == f"crypto_sign/{sid}" and s.label.startswith("SPHINCS+-")
        api = (tree.root / s.dir / "clean" / "api.h").read_text()
        assert f"#define {s.namespace}_CLEAN_CRYPTO_ALGNAME" in api, sid
    assert family.self_check == "empty" and family.ops[-1] == "empty"
    assert set(family.labels) == set(family.ops)
    views = family.views
    for key in ("table1", "cross_parameter", "end_to_end"):
        assert set(views[key]) <= set(family.ops), key
    assert set(views["distribution"]["ops"]) <= set(family.ops)
    assert views["distribution"]["scheme"] in family.schemes
    assert views["macro_prefix"].isalpha()
    for ops in views["ranges"].values():
        assert set(ops) <= set(family.ops)
    for h in views["headlines"]:
        assert set(h["ops"]) <= set(family.ops)
    assert family.implementation("avx2").table.get("defines") == ["SPHINCS_BATCHED"]
    assert not family.implementation("clean").table.get("defines")


def test_one_copy_of_common_code(family, spx_builds):
    """All 12 sets share one sha2.c / fips202.c / keccak4x object; nothing but the entry is exported,
    and no non-namespaced global is defined twice (the link would fail, but say so plainly)."""
    for vid, b in spx_builds.items():
        impl = family.implementation(catalog.builtin_variants()[vid].sources)
        assert len(list(b.directory.glob("common.*.o"))) == len(impl.table.get("common", [])), vid
        nm = subprocess.run(["nm", "-D", "--defined-only", str(b.library)], capture_output=True, text=True, check=True)
        assert [l.split()[-1] for l in nm.stdout.splitlines()] == ["pqsimd_variant_entry"], vid
        objs = [str(o) for o in sorted(b.directory.glob("*.o"))
                if ".nistkat." not in o.name and not o.name.startswith("kat")]  # the KAT programs' own
        out = subprocess.run(["nm", "-A", "--defined-only", "-g", *objs], capture_output=True, text=True, check=True)
        seen: dict[str, str] = {}
        for line in out.stdout.splitlines():
            where, sym = line.split(":")[0], line.split()[-1]
            assert sym not in seen, f"{vid}: {sym} defined in {seen[sym]} and {where}"
            seen[sym] = where
        assert {"sha256", "shake256"} <= set(seen), vid  # common code, once


def test_every_build_registers_the_toml_ops_in_order(family, driver, spx_builds):
    for vid, b in spx_builds.items():
        out = subprocess.run([str(driver.path), "list", str(b.library)], capture_output=True, text=True, check=True)
        rows = [line.split("\t") for line in out.stdout.splitlines()]
        assert [r[1] for r in rows] == SCHEMES, vid
        impl = family.implementation(catalog.builtin_variants()[vid].sources).name
        for r in rows:
            assert r[2] == impl and r[3] == "2"  # PQSIMD_KIND_SIGN
            assert tuple(r[4:]) == family.ops, f"{vid} {r[1]}: op table and sphincs.toml disagree"


def test_every_op_runs(family, driver, spx_builds):
    """Each op's setup and a few calls (`driver count`): every op in the 'f' sets, the hash ops in
    the 's' sets (their trees take up to seconds per call in clean)."""
    for vid, b in spx_builds.items():
        for scheme in SCHEMES:
            for op in family.ops:
                if op in HEAVY_OPS and scheme not in FAST:
                    continue
                calls = "2" if op in HEAVY_OPS else "50"
                r = subprocess.run([str(driver.path), "count", str(b.library), scheme, op, calls],
                                   capture_output=True, text=True, timeout=300)
                assert r.returncode == 0, f"{vid} {scheme} {op}: {r.stderr.strip()}"


def test_gate_passes_clean_and_avx2(tree, driver, family, spx_builds):
    """PQClean's nistkat (sha256 = META.yml), the sign vectors (keypair + sign from the pool, verify,
    tampered signature and message rejected) and clean == avx2 byte for byte."""
    _need_avx2(family, spx_builds)
    results = verify.gate(tree, driver, list(spx_builds.values()), GATE_SCHEMES)
    for bid, res in results.items():
        failed = [f"{c.check} {c.scheme}: {c.detail}" for c in res.checks if not c.passed]
        assert res.passed, f"{bid}: {failed}"
        assert {(c.check, c.scheme) for c in res.checks} == {(k, s) for k in ("nistkat", "vectors", "ops")
                                                               for s in GATE_SCHEMES}
    for b in spx_builds.values():
        for scheme in GATE_SCHEMES:
            kat = next(c for c in results[b.id].checks if c.check == "nistkat" and c.scheme == scheme)
            assert kat.detail == verify.expected_kat_sha256(tree, scheme)


# The batched ops do what their portable equivalents do: include the op table into a small program
# (its buffers are static), run the ops once from the same setup, print the buffers; clean (WIDTH
# single calls) and avx2 (one x8 / x4 call) must print the same bytes.
EQ_MAIN = r"""
#include "sphincs.c"
#include <stdio.h>
static void hx(const char *n, const uint8_t *b, size_t l) {
    printf("%s ", n);
    for (size_t i = 0; i < l; i++) printf("%02x", b[i]);
    printf("\n");
}
int main(void) {
    setup_sign();
    op_thash_1(); hx("thash_1", block, sizeof block);
    op_thash_wots(); hx("thash_wots", hout, sizeof hout);
    op_thash_x(); hx("thash_x", &blocks[0][0], sizeof blocks);
    op_wots_leaf(); hx("wots_leaf", leaves, sizeof leaves);
    op_fors_sign(); hx("fors_sign", fors_sig, SPX_FORS_BYTES); hx("fors_root", fors_root, SPX_N);
    op_merkle_sign(); hx("merkle_sign", merkle_sig, SPX_WOTS_BYTES + SPX_TREE_HEIGHT * SPX_N);
    hx("merkle_root", merkle_root, SPX_N);
    op_hash_message(); hx("hash_message", digest, SPX_FORS_MSG_BYTES);
    printf("width %d\n", WIDTH);
    return 0;
}
"""


@pytest.mark.parametrize("scheme", ["sphincs-sha2-128f-simple", "sphincs-shake-128f-simple"])
def test_batched_ops_equal_their_portable_equivalent(scheme, tree, family, spx_builds, tmp_path):
    _need_avx2(family, spx_builds)
    harness = Path(str(resources.files("pqsimd").joinpath("harness")))
    common = tree.root / "common"
    (tmp_path / "eq.c").write_text(EQ_MAIN)
    out = {}
    for impl in ("clean", "avx2"):
        d = tree.root / family.schemes[scheme].dir / impl
        ns = f"{family.schemes[scheme].namespace}_{impl.upper()}"
        srcs = [*sorted(map(str, d.glob("*.c"))), *(str(common / c) for c in family.implementation(impl).table.get("common", [])),
                str(harness / "variant" / "registry.c"), str(harness / "variant" / "rng.c")]
        exe = tmp_path / f"eq-{impl}"
        cmd = ["gcc", "-O1", "-mavx2", f"-I{d}", f"-I{common}", f"-I{harness}", f"-I{harness / 'ops'}",
               f"-DPQSIMD_NS={ns}", f'-DPQSIMD_SCHEME="{scheme}"', f'-DPQSIMD_IMPL="{impl}"',
               *(f"-D{x}" for x in family.implementation(impl).table.get("defines", [])), str(tmp_path / "eq.c"), *srcs, "-o", str(exe)]
        subprocess.run(cmd, check=True, capture_output=True, timeout=300)
        out[impl] = subprocess.run([str(exe)], check=True, capture_output=True, text=True, timeout=60).stdout
    want_width = "8" if "-sha2-" in scheme else "4"
    assert f"width {want_width}\n" in out["clean"]
    assert out["clean"] == out["avx2"]


# --- (b) independent oracle: PyPI slh-dsa (FIPS 205) with SPHINCS+'s FORS index order ----------

class _SourceOnly(importlib.abc.MetaPathFinder):
    """Loads slhdsa's .py files, never its mypyc extensions: compiled modules bind base2b early,
    so a monkeypatch would not reach them. The installed package ships both."""

    def find_spec(self, name, path, target=None):
        if name.partition(".")[0] != "slhdsa":
            return None
        for entry in (path if path is not None else sys.path):
            finder = importlib.machinery.FileFinder(entry or ".", (importlib.machinery.SourceFileLoader,
                                                                    importlib.machinery.SOURCE_SUFFIXES))
            spec = finder.find_spec(name)
            if spec is not None:
                return spec
        return None


def base2b_lsb_first(data: bytes, b: int, out_len: int) -> list[int]:
    """SPHINCS+ r3.1 message_to_indices (fors.c): bit j of index i is bit (i*b + j) of the digest,
    counting bits LSB-first within each byte. FIPS 205's base_2b reads them MSB-first."""
    out = []
    for i in range(out_len):
        v = 0
        for j in range(b):
            bit = i * b + j
            v |= ((data[bit >> 3] >> (bit & 7)) & 1) << j
        out.append(v)
    return out


@contextmanager
def _slhdsa_sphincs_r31():
    """slh-dsa from source with FORS indices LSB-first; sys.modules is restored afterwards."""
    saved = {k: m for k, m in sys.modules.items() if k.partition(".")[0] == "slhdsa"}
    for k in saved:
        del sys.modules[k]
    finder = _SourceOnly()
    sys.meta_path.insert(0, finder)
    try:
        import slhdsa.lowlevel.fors as fors_mod
        import slhdsa.lowlevel.parameters as params
        import slhdsa.lowlevel.slhdsa as ll
        from slhdsa.lowlevel.addresses import Address
        from slhdsa.lowlevel.xmss import XMSS

        assert fors_mod.__file__.endswith(".py") and ll.__file__.endswith(".py")
        fors_mod.base2b = base2b_lsb_first
        yield ll, params, XMSS, Address
    finally:
        sys.meta_path.remove(finder)
        for k in [k for k in sys.modules if k.partition(".")[0] == "slhdsa"]:
            del sys.modules[k]
        sys.modules.update(saved)


ORACLE_SCHEMES = [f"sphincs-{h}-{n}{v}-simple" for h in ("sha2", "shake") for n in (128, 192, 256) for v in "fs"]
ORACLE_MESSAGES = (33, 1000, 0)  # one seed per length; the first signs with optrand = PK.seed


def _oracle_inputs(scheme, n):
    """Three messages for the fast (f) sets; one for the small (s) sets, whose pure-Python oracle
    signature takes ~10 s."""
    out = []
    for i, mlen in enumerate(ORACLE_MESSAGES if scheme.endswith("f-simple") else ORACLE_MESSAGES[:1]):
        seed = hashlib.shake_256(b"spx-seed/%s/%d" % (scheme.encode(), i)).digest(3 * n)
        optrand = seed[2 * n:] if i == 0 else hashlib.shake_256(b"spx-optrand/%s/%d" % (scheme.encode(), i)).digest(n)
        msg = hashlib.shake_256(b"spx-msg/%s/%d" % (scheme.encode(), i)).digest(mlen) if mlen else b""
        out.append((seed, optrand, msg))
    return out


def _pqclean(driver, library, scheme, inputs):
    """PQClean's pk, sk, sig through `driver gate` (pool = seed for keypair, then optrand; FRACS "0"),
    parsed here, not by verify/."""
    text = "".join(f"{(seed + optrand).hex()} {msg.hex() or '-'} 0\n" for seed, optrand, msg in inputs)
    proc = subprocess.run([str(driver.path), "gate", str(library), scheme], input=text, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    rows = []
    for line in proc.stdout.splitlines():
        t = line.split()
        assert len(t) == 9, line[:200]
        rows.append({"rc": int(t[0]), "used": int(t[1]), "dry": int(t[2]), "pk": bytes.fromhex(t[3]),
                     "sk": bytes.fromhex(t[4]), "sig": bytes.fromhex(t[5]), "verify_rc": int(t[6])})
    assert len(rows) == len(inputs)
    return rows


@pytest.mark.parametrize("scheme", ORACLE_SCHEMES)
def test_pqclean_matches_slh_dsa_with_lsb_first_fors(scheme, family, driver, spx_builds):
    """With FORS indices read LSB-first, slh-dsa's slh_sign_internal reproduces PQClean's pk, sk and
    signature byte for byte (clean and avx2) and accepts the PQClean signature, for all 12 sets.
    Unpatched (FIPS 205 as published) the keys, R and the hypertree part still agree, but the FORS
    part differs and slh-dsa rejects the PQClean signature: SPHINCS+ r3.1 simple is not SLH-DSA.
    The exception is a = 8 (the 192f sets), where both bit orders read whole bytes: there the
    internal signatures agree (FIPS 205's message prefix, outside slh_sign_internal, still differs)."""
    pytest.importorskip("slhdsa")  # distribution slh-dsa, import name slhdsa
    _need_avx2(family, spx_builds)
    par_name = scheme.removeprefix("sphincs-").removesuffix("-simple").replace("-", "_")
    import slhdsa.lowlevel.parameters as cparams  # the installed, compiled, unpatched package
    import slhdsa.lowlevel.slhdsa as cll

    n = getattr(cparams, par_name).n
    inputs = _oracle_inputs(scheme, n)
    answers = {vid: _pqclean(driver, b.library, scheme, inputs) for vid, b in spx_builds.items()}
    with _slhdsa_sphincs_r31() as (ll, params, XMSS, Address):
        par = getattr(params, par_name)
        assert par.n == n
        # FORS reads a-bit indices from the digest: SPHINCS+ r3.1 LSB-first per byte, FIPS 205 MSB-first.
        # With a = 8 (192f) an index is one whole byte either way, so the two orders agree there.
        orders_differ = par.a % 8 != 0
        fors_end = (1 + par.k * (par.a + 1)) * n
        for i, (seed, optrand, msg) in enumerate(inputs):
            sk_seed, sk_prf, pk_seed = seed[:n], seed[n:2 * n], seed[2 * n:]
            root = XMSS(par).node(sk_seed, 0, par.h_m, pk_seed, Address(par.d - 1, 0))  # slh_keygen_internal
            key = (sk_seed, sk_prf, pk_seed, root)
            ll.token_bytes = lambda _n, r=optrand: r  # opt_rand (randomize=True draws it here)
            sig = ll.sign(msg, key, par, True)  # slh_sign_internal(M, SK, opt_rand): no 0x00||ctx prefix
            for vid, rows in answers.items():
                got = rows[i]
                where = f"{vid} {scheme} seed {i} (|msg| = {len(msg)})"
                assert (got["rc"], got["used"], got["dry"], got["verify_rc"]) == (0, 4 * n, 0, 0), where
                assert got["pk"] == pk_seed + root, f"{where}: pk differs from slh-dsa"
                assert got["sk"] == seed + root, f"{where}: sk differs from slh-dsa"
                assert got["sig"] == sig, f"{where}: signature differs from slh-dsa (LSB-first FORS)"
            assert ll.verify(msg, sig, (pk_seed, root), par)

            # the published FIPS 205 order (the installed package, untouched)
            cpar = getattr(cparams, par_name)
            pq = answers["ref"][i]["sig"]
            assert cll.validate_secretkey(key, cpar)  # same keys
            if i == 0:  # deterministic FIPS 205 signing uses opt_rand = PK.seed, as this seed does
                fips = cll.sign(msg, key, cpar, False)
                assert fips[:n] == pq[:n], "R (PRF_msg) agrees"
                assert fips[fors_end:] == pq[fors_end:], "the hypertree part agrees (FORS pk does not depend on indices)"
                assert (fips[n:fors_end] != pq[n:fors_end]) == orders_differ, "the FORS part differs iff a % 8 != 0"
            assert cll.verify(msg, pq, (pk_seed, root), cpar) != orders_differ, (
                f"{scheme} seed {i}: FIPS 205 internal verify must reject a SPHINCS+ r3.1 signature iff the orders differ")


# --- (c) a sabotaged implementation is refused -----------------------------------------------------

SABOTAGED = "sphincs-shake-128f-simple"


def _sabotaged_tree(good: sources.SourceTree, dest):
    """A copy of the SPHINCS+ part of the PQClean tree (clean only) whose shake-128f clean reads the
    FORS indices with `offset & 0x6` instead of `& 0x7`: one byte. Keys are unchanged and signing
    and verification still agree with each other, so only the KAT and the cross-build agreement
    (a signature byte) can catch it."""
    root = dest / "pqclean"
    shutil.copytree(good.root / "common", root / "common")
    for d in ("test/common", "test/crypto_sign"):
        shutil.copytree(good.root / d, root / d)
    for s in SCHEMES:
        (root / "crypto_sign" / s).mkdir(parents=True)
        shutil.copy(good.root / "crypto_sign" / s / "META.yml", root / "crypto_sign" / s / "META.yml")
        shutil.copytree(good.root / "crypto_sign" / s / "clean", root / "crypto_sign" / s / "clean")
    fors = root / "crypto_sign" / SABOTAGED / "clean" / "fors.c"
    text = fors.read_bytes()
    old = b"(m[offset >> 3] >> (offset & 0x7)) & 0x1"
    assert text.count(old) == 1
    fors.write_bytes(text.replace(old, b"(m[offset >> 3] >> (offset & 0x6)) & 0x1"))
    return sources.SourceTree(root=root, origin="path")


def test_sabotaged_variant_is_refused(tree, driver, family, spx_builds, tmp_path):
    _need_avx2(family, spx_builds)
    bad_tree = _sabotaged_tree(tree, tmp_path)
    broken = build_variant(bad_tree, family, Variant(id="broken", sources="clean", flags=("-O0",)), "gcc", driver)
    other = "sphincs-sha2-128f-simple"
    results = verify.gate(bad_tree, driver, [*spx_builds.values(), broken], [SABOTAGED, other])
    for b in spx_builds.values():
        assert results[b.id].passed, results[b.id].to_dict()
    res = results[broken.id]
    assert not res.passed
    by = {(c.check, c.scheme): c for c in res.checks}
    kat, vec = by[("nistkat", SABOTAGED)], by[("vectors", SABOTAGED)]
    assert not kat.passed and not vec.passed
    for c in (kat, vec):
        assert c.detail and "\n" not in c.detail and len(c.detail) < 300
    assert kat.detail.startswith("sha256 ") and "META.yml" in kat.detail
    # its signatures verify under its own code: only the majority of correct builds exposes it
    assert vec.detail.startswith("differs from the agreeing builds (ref@gcc") and " sig byte " in vec.detail
    # the sabotage touches one set only
    assert by[("nistkat", other)].passed and by[("vectors", other)].passed
    assert res.passed_for(other) and not res.passed_for(SABOTAGED)
