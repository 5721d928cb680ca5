"""The hash share (issue 44): callgrind's call arcs into Keccak/SHA entry points (data/hash.toml) summed once
per outermost hash call, checked on a hand-written callgrind file and on real builds (the Keccak family is all
hashing, its self-check none; ML-KEM's NTT none, its gen_a mostly), and what explain prints of it. The kernel
shares (issue 47): the same arcs split by kernel, innermost kernel first, on a hand-written file and on a real
ML-KEM-512 build against callgrind_annotate's inclusive costs."""

from __future__ import annotations

import pandas as pd
import pytest

from pqsimd import catalog
from pqsimd.report.explain import hash_share_text
from pqsimd.run import hashshare

# main -> op (not hash) -> shake128_absorb (hash, inclusive 700) -> KeccakF1600_StatePermute (nested: inside the 700)
#      -> op -> poly_ntt (not hash, 50); op -> sha256_inc_blocks (hash, 30), named by its compressed id the 2nd time
CALLGRIND = """\
events: Ir
fn=(1) op
0 100
cfn=(2) shake128_absorb
calls=1 0
0 700
cfn=(3) poly_ntt
calls=1 0
0 50
cfn=(4) sha256_inc_blocks
calls=1 0
0 20
cfn=(4)
calls=1 0
0 10
fn=(2)
0 200
cfn=(5) KeccakF1600_StatePermute
calls=2 0
0 500
fn=(5)
0 500
totals: 880
"""


def test_outermost_hash_calls_are_summed_once():
    assert hashshare.is_hash("PQCLEAN_MLKEM768_AVX2_shake128x4_absorb_once") and hashshare.is_hash("wc_Sha3_256_Update")
    assert not hashshare.is_hash("PQCLEAN_MLKEM768_CLEAN_poly_ntt") and not hashshare.is_hash("rej_uniform")
    assert hashshare.hash_cost(CALLGRIND) == 700 + 20 + 10


def test_explain_prints_each_variants_share_and_bound():
    t = pd.DataFrame([{"scheme": "s", "op": "o", "variant": "a", "compiler": "gcc", "instructions": 100.0,
                       "hashed": 75.0, "share": 0.75, "amdahl_bound": 4.0}])
    text = hash_share_text(t, "s", "o", "gcc", ["a", "b"])
    assert "a 75%" in text and "at most 4" in text and "b n/a" in text
    assert hash_share_text(t, "s", "other", "gcc", ["a"]) == ""


def test_real_builds(tree, driver):
    from pqsimd.build import build_variant
    from pqsimd.run import callgrind

    if callgrind.valgrind_version() is None:
        pytest.skip("valgrind is not installed")
    v = catalog.builtin_variants()
    b = build_variant(tree, catalog.families()["keccak"], v["plain"], "gcc", driver)
    got = callgrind.count_instructions_batch(driver.path, b.library, "keccak-p1600",
                                             [("permute_x4", 2, None), ("permute_x4", 4, None), ("empty", 2, None), ("empty", 4, None)])
    (i1, _, h1, _), (i2, _, h2, _), (e1, _, f1, _), (e2, _, f2, _) = got
    assert 0.99 < (h2 - h1) / (i2 - i1) < 1 and h1 < i1  # all hashing but the loop and the calls
    assert f1 == f2 == 0 and e1 > 0
    m = build_variant(tree, catalog.families()["ml-kem"], v["ref"], "gcc", driver, schemes=["ml-kem-512"])
    got = callgrind.count_instructions_batch(driver.path, m.library, "ml-kem-512",
                                             [("ntt", 2, None), ("ntt", 4, None), ("gen_a", 2, None), ("gen_a", 4, None)])
    assert got[0][2] == got[1][2] == 0
    share = (got[3][2] - got[2][2]) / (got[3][0] - got[2][0])
    assert 0.3 < share < 1


def test_single_stepping_gives_callgrinds_hash_share(tree, driver):
    """The stepper's --hash form (the count of AVX-512 builds valgrind cannot run) gives callgrind's hash cost
    to the instruction on a real ML-KEM-512 avx2 build: gen_a (SHAKE x4 and its rep stosq), the NTT (no hash)."""
    from pqsimd import machine
    from pqsimd.build import build_variant
    from pqsimd.run import callgrind, stepcount

    if callgrind.valgrind_version() is None:
        pytest.skip("valgrind is not installed")
    if stepcount.available() or "avx2" not in machine.cpu_flags():
        pytest.skip(stepcount.available() or "this CPU has no AVX2")
    m = build_variant(tree, catalog.families()["ml-kem"], catalog.builtin_variants()["avx2"], "gcc", driver,
                      schemes=["ml-kem-512"])
    req = [("gen_a", 1, None), ("gen_a", 3, None), ("ntt", 1, None), ("ntt", 3, None)]
    by_callgrind = [(g[0], g[2]) for g in callgrind.count_instructions_batch(driver.path, m.library, "ml-kem-512", req)]
    by_stepping = [(g[0], g[2]) for g in stepcount.Stepper().count_batch(driver.path, m.library, "ml-kem-512", req)]
    assert by_stepping == by_callgrind
    assert by_stepping[1][1] - by_stepping[0][1] > 10_000 and by_stepping[2][1] == by_stepping[3][1] == 0



def callgrind_text(functions: dict[str, tuple[int, list[tuple[str, int]]]], total: int) -> str:
    """A callgrind out file: per function its self Ir and its calls (callee, inclusive Ir), names compressed."""
    ids: dict[str, int] = {}

    def name(f: str) -> str:
        if f in ids:
            return f"({ids[f]})"
        ids[f] = len(ids) + 1
        return f"({ids[f]}) {f}"

    lines = ["events: Ir"]
    for fn, (own, calls) in functions.items():
        lines += [f"fn={name(fn)}", f"0 {own}"]
        for callee, inclusive in calls:
            lines += [f"cfn={name(callee)}", "calls=1 0", f"0 {inclusive}"]
    return "\n".join([*lines, f"totals: {total}", ""])


# main -> op (no kernel) -> gen_matrix (sampling, inclusive 900) -> shake128_squeezeblocks (hash, 700 of the 900)
#      -> op -> poly_ntt (NTT, 300) -> poly_reduce (no kernel: inside the NTT's 300) -> memcpy (no kernel, 40)
KERNELS = callgrind_text({
    "op": (100, [("PQCLEAN_MLKEM768_CLEAN_gen_matrix", 900), ("PQCLEAN_MLKEM768_CLEAN_poly_ntt", 300), ("memcpy", 40)]),
    "PQCLEAN_MLKEM768_CLEAN_gen_matrix": (200, [("PQCLEAN_MLKEM768_CLEAN_shake128_squeezeblocks", 700)]),
    "PQCLEAN_MLKEM768_CLEAN_shake128_squeezeblocks": (700, []),
    "PQCLEAN_MLKEM768_CLEAN_poly_ntt": (250, [("PQCLEAN_MLKEM768_CLEAN_poly_reduce", 50)]),
    "PQCLEAN_MLKEM768_CLEAN_poly_reduce": (50, []), "memcpy": (40, [])}, 1340)


def test_each_instruction_counts_for_the_innermost_kernel_it_runs_in():
    got = hashshare.kernel_costs(KERNELS)
    assert got["hash"] == 700 == hashshare.hash_cost(KERNELS)  # the hash kernel is the hash share
    assert got["sampling"] == 900 - 700  # the sampler less the SHAKE it calls
    assert got["ntt"] == 300  # poly_reduce, no kernel of its own, is inside the NTT's inclusive cost
    assert sum(got.values()) == 1200 <= 1340  # the op's own 100 and memcpy's 40 are other
    assert set(got) == set(hashshare.labels()) and hashshare.labels()["hash"] == "Keccak/SHA-2"


def _inclusive(path, function: str) -> int:
    """callgrind_annotate's inclusive Ir of one function (its own reading of the file, not ours)."""
    import re
    import subprocess

    out = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(path)], capture_output=True,
                         text=True, check=True).stdout
    for line in out.splitlines():  # "41,346 (99.94%)  path/poly.c:PQCLEAN_MLKEM512_CLEAN_poly_ntt [object]"
        m = re.match(r"^\s*([\d,]+) \([^)]*\)\s+\S*:(\S+)(?: \[.*\])?$", line)
        if m and m.group(2).endswith(function):
            return int(m.group(1).replace(",", ""))
    raise AssertionError(f"{function} not in callgrind_annotate's output:\n{out}")


def test_kernel_shares_of_a_real_build_match_callgrinds_inclusive_costs(tree, driver, tmp_path):
    """ML-KEM-512 ref: decapsulation's kernels sum to at most its instructions, the hash kernel is the hash share,
    and the NTT kernel of the ntt op is callgrind_annotate's inclusive cost of poly_ntt."""
    import shutil

    from pqsimd.build import build_variant
    from pqsimd.run import callgrind

    if callgrind.valgrind_version() is None or shutil.which("callgrind_annotate") is None:
        pytest.skip("valgrind's callgrind_annotate is not installed")
    v = catalog.builtin_variants()
    m = build_variant(tree, catalog.families()["ml-kem"], v["ref"], "gcc", driver, schemes=["ml-kem-512"])
    texts = callgrind.run_callgrind_batch(driver.path, m.library, "ml-kem-512", [("kem_decaps", 2), ("ntt", 2)],
                                          read=lambda t: t)
    decaps, ntt = texts
    total = callgrind.parse_callgrind_totals(decaps)
    k = hashshare.kernel_costs(decaps)
    assert all(x >= 0 for x in k.values()) and sum(k.values()) <= total
    assert k["hash"] == hashshare.hash_cost(decaps) > 0 and k["ntt"] > 0 and k["sampling"] > 0 and k["packing"] > 0
    assert 0.2 < k["ntt"] / total < 0.8 and 0.1 < k["hash"] / total < 0.6  # both matter in ref's decapsulation
    f = tmp_path / "ntt.out"
    f.write_text(ntt)
    kn = hashshare.kernel_costs(ntt)
    assert kn["ntt"] == _inclusive(f, "_poly_ntt") and kn["ntt"] > 0.95 * callgrind.parse_callgrind_totals(ntt)
    assert sum(v for x, v in kn.items() if x != "ntt") == 0


# op -> gen_matrix (sampling, 1000) -> helper (no kernel, 800) -> rej_uniform (sampling, 800) -> shake (hash, 600)
REENTRY = callgrind_text({
    "op": (10, [("gen_matrix", 1000)]), "gen_matrix": (200, [("helper", 800)]), "helper": (0, [("rej_uniform", 800)]),
    "rej_uniform": (200, [("shake128_squeezeblocks", 600)]), "shake128_squeezeblocks": (600, [])}, 1010)


def test_a_kernel_entered_again_through_a_helper_is_counted_once():
    got = hashshare.kernel_costs(REENTRY)
    assert got["sampling"] == 400 and got["hash"] == 600  # not 1000 + 800 - 600: the helper runs inside sampling
    assert sum(got.values()) == 1000 <= 1010
