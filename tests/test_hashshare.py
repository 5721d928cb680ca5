"""The hash share (issue 44): callgrind's call arcs into Keccak/SHA entry points (data/hash.toml) summed once
per outermost hash call, checked on a hand-written callgrind file and on real builds (the Keccak family is all
hashing, its self-check none; ML-KEM's NTT none, its gen_a mostly), and what explain prints of it."""

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
    (i1, _, h1), (i2, _, h2), (e1, _, f1), (e2, _, f2) = got
    assert 0.99 < (h2 - h1) / (i2 - i1) < 1 and h1 < i1  # all hashing but the loop and the calls
    assert f1 == f2 == 0 and e1 > 0
    m = build_variant(tree, catalog.families()["ml-kem"], v["ref"], "gcc", driver, schemes=["ml-kem-512"])
    got = callgrind.count_instructions_batch(driver.path, m.library, "ml-kem-512",
                                             [("ntt", 2, None), ("ntt", 4, None), ("gen_a", 2, None), ("gen_a", 4, None)])
    assert got[0][2] == got[1][2] == 0
    share = (got[3][2] - got[2][2]) / (got[3][0] - got[2][0])
    assert 0.3 < share < 1

