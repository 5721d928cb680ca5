"""results/explanations (analyze/explanations.py): which comparisons get a sentence, and what the
sentence says, on small synthetic results tables (no study is run)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from pqsimd.analyze.explanations import explanation_table, select
from pqsimd.model import Chain

SETS = ["k-512", "k-768", "k-1024"]
FAMILIES = {"kem": {"schemes": {s: {"label": s.upper()} for s in SETS}, "self_check": "nop",
                    "labels": {"invntt": "INVNTT", "decompress": "decompress", "challenge": "challenge"},
                    "views": {"headlines": [{"label": "arithmetic", "ops": ["invntt"]}]}}}
CHAIN = Chain.from_dict({"steps": [{"stage": "autovec", "from": "refnv", "to": "ref"},
                                   {"stage": "hand", "from": "ref", "to": "avx2"}]})


def comparison(scheme, op, speedup, half=0.02, stage="hand", base="ref", variant="avx2"):
    lo, hi = speedup * (1 - half), speedup * (1 + half)
    verdict = "faster" if lo > 1.02 else "slower" if hi < 1 / 1.02 else "same" if 1 / 1.02 <= lo and hi <= 1.02 else "~"
    return {"metric": "ticks", "scheme": scheme, "op": op, "stage": stage, "baseline": base, "variant": variant,
            "compiler": "gcc", "baseline_compiler": "gcc", "speedup": speedup, "ci_low": lo, "ci_high": hi,
            "ci_level": 0.95, "verdict": verdict}


def mix_rows(scheme, op, variant, classes: dict[str, float], vector: dict[int, float]):
    """Class rows, and mnemonic rows carrying the vector counts by width (the rest scalar)."""
    total = sum(classes.values())
    rows = [{"scheme": scheme, "op": op, "variant": variant, "compiler": "gcc", "level": "class", "class": c,
             "class_label": c.replace("_", " "), "mnemonic": None, "width": None, "count": n, "total": total}
            for c, n in classes.items()]
    scalar = total - sum(vector.values())
    for w, n in [(0, scalar), *vector.items()]:
        rows.append({"scheme": scheme, "op": op, "variant": variant, "compiler": "gcc", "level": "mnemonic",
                     "class": "x", "class_label": "x", "mnemonic": f"m{w}", "width": w, "count": n, "total": total})
    return rows


def ops_row(scheme, op, variant, lane_crossing=0.0):
    return {"scheme": scheme, "op": op, "variant": variant, "compiler": "gcc", "lane_crossing": lane_crossing}


def tables(mix_rows_, ops_rows=()):
    return {"mix": pd.DataFrame(mix_rows_), "mix_ops": pd.DataFrame(list(ops_rows)), "sim": pd.DataFrame(),
            "mca": pd.DataFrame(), "mca_mnemonics": pd.DataFrame()}


def explain(comps, tabs, groups=None):
    return explanation_table(pd.DataFrame(comps), groups, tabs, FAMILIES, CHAIN, "gcc", "DIR", threshold=0.02)


def test_a_headline_sentence_multiplies_instructions_by_time_per_instruction():
    comps = [comparison(s, "invntt", sp, half=0.01) for s, sp in zip(SETS, (54.9, 52.0, 50.5))]
    rows = []
    for s in SETS:
        rows += mix_rows(s, "invntt", "ref", {"scalar_alu": 30000, "scalar_multiply": 3724}, {})
        rows += mix_rows(s, "invntt", "avx2", {"vector_alu": 500, "vector_multiply": 141}, {256: 635})
    t = explain(comps, tables(rows))
    top = t[(t["scheme"] == "k-512") & (t["op"] == "invntt")].iloc[0]
    assert top["kind"] == "headline"
    s = top["sentence"]
    # 33,724 / 641 = 52.61; 54.9 / 52.61 = 1.0435
    assert "INVNTT K-512 ref → avx2: 54.9× faster [54.4, 55.4] (measured)" in s, s
    assert "52.6× fewer instructions (33,724 → 641 per call, counted) × 1.04× less time per instruction" in s, s
    assert "99% of avx2's instructions are 256-bit vector (counted)" in s, s
    assert math.isclose(top["instruction_ratio"] * top["time_per_instruction_factor"], 54.9)
    assert "measured" in top["evidence"] and "counted" in top["evidence"] and top["missing"] == ""
    # the headline range's other end is explained too; its interval overlaps no other set's, so it says why
    low = t[(t["scheme"] == "k-1024")].iloc[0]
    assert low["kind"] == "headline" and "at K-512 and K-768 it is 54.9× and 52×" in low["sentence"], low["sentence"]


def test_an_outlier_across_sets_names_the_base_sides_vector_width_that_changed():
    comps = [comparison("k-512", "decompress", 2.5), comparison("k-768", "decompress", 2.6),
             comparison("k-1024", "decompress", 19.6)]
    rows = []
    for s in ("k-512", "k-768"):  # ref vectorized by the compiler (128-bit) at the 4-bit sets
        rows += mix_rows(s, "decompress", "ref", {"vector_alu": 200, "scalar_alu": 100}, {128: 200})
        rows += mix_rows(s, "decompress", "avx2", {"vector_alu": 120}, {256: 120})
    rows += mix_rows("k-1024", "decompress", "ref", {"scalar_alu": 2300}, {})
    rows += mix_rows("k-1024", "decompress", "avx2", {"vector_alu": 120}, {256: 120})
    t = explain(comps, tables(rows))
    r = t[(t["scheme"] == "k-1024") & (t["op"] == "decompress")].iloc[0]
    assert r["kind"] == "outlier-across-sets"
    s = r["sentence"]
    assert "at K-512 and K-768 it is 2.5× and 2.6×" in s, s
    # 300 → 2,300 instructions for ref, 120 → 120 for avx2: the base side moved
    assert "from K-768 to K-1024 ref's instructions per call grow 7.67× and avx2's grow 1×" in s, s
    assert "ref is scalar at K-1024 but 67% 128-bit vector at K-768" in s, s
    assert r["other_schemes"] == "k-512, k-768"
    assert set(t[t["op"] == "decompress"]["scheme"]) == {"k-1024"}  # the two alike sets are not outliers


def test_a_speedup_below_one_is_explained_as_a_slowdown():
    comps = [comparison("k-512", "challenge", 0.62), comparison("k-512", "invntt", 50.0)]
    rows = (mix_rows("k-512", "challenge", "ref", {"scalar_alu": 1000}, {})
            + mix_rows("k-512", "challenge", "avx2", {"scalar_alu": 900, "vector_permute": 400}, {256: 400}))
    ops = [ops_row("k-512", "challenge", "ref", 0), ops_row("k-512", "challenge", "avx2", 150)]
    t = explain(comps, tables(rows, ops))
    r = t[t["op"] == "challenge"].iloc[0]
    assert r["kind"] == "slowdown" and "headline" in r["also"]
    s = r["sentence"]
    # 1,000 → 1,300 instructions: 1.3× more; 0.62 / (1/1.3) = 0.806 → 1.24× more time per instruction
    assert "1.61× slower (0.62×" in s and "1.3× more instructions (1,000 → 1,300 per call, counted)" in s, s
    assert "at 1.24× more time per instruction" in s, s
    assert "avx2 adds vector permute +400" in s and "lane-crossing instructions 0 → 150 per call" in s, s


def test_without_a_mix_the_sentence_keeps_to_time_and_one_line_says_what_adds_the_rest():
    comps = [comparison("k-512", "invntt", 54.9)]
    t = explain(comps, tables([]))
    r = t.iloc[0]
    assert r["sentence"] == "INVNTT K-512 ref → avx2: 54.9× faster [53.8, 56] (measured).", r["sentence"]
    assert r["missing"] == ("the instruction counts and mix were not measured in this study; "
                            "`pqsimd run DIR --metric instructions,mix` adds them, then `pqsimd analyze DIR`")
    groups = pd.DataFrame([{"metric": "instructions", "scheme": "k-512", "op": "invntt", "variant": v,
                            "compiler": "gcc", "median": n} for v, n in (("ref", 33724), ("avx2", 641))])
    r = explain(comps, tables([]), groups).iloc[0]
    assert "52.6× fewer instructions (33,724 → 641 per call, counted)" in r["sentence"]
    assert "`pqsimd run DIR --metric mix` adds it" in r["missing"]


@pytest.mark.parametrize("speedups, flagged", [
    ((5.0, 5.2, 4.8, 5.1, 4.9, 50.0), {"op5"}),  # one op ten times the family's typical
    ((5.0, 5.2, 4.8, 5.1, 4.9, 6.0), set()),  # z is large in a tight family, but 1.2× is no outlier
])
def test_an_outlier_in_the_family_is_a_modified_z_above_3_5_with_its_interval_clear(speedups, flagged):
    hand = pd.DataFrame([comparison("k-512", f"op{i}", s) for i, s in enumerate(speedups)])
    kinds = select(hand, hand.iloc[:0], {"kem": {**FAMILIES["kem"], "views": {}}})
    assert {k[1] for k, v in kinds.items() if "outlier-in-family" in v} == flagged


def test_sets_whose_intervals_overlap_are_not_outliers_however_far_their_estimates():
    wide = [comparison("k-512", "decompress", 2.5, half=0.6), comparison("k-768", "decompress", 2.5, half=0.6),
            comparison("k-1024", "decompress", 4.5, half=0.3)]
    kinds = select(pd.DataFrame(wide), pd.DataFrame(wide).iloc[:0], FAMILIES)
    assert not any("outlier-across-sets" in v for v in kinds.values())
    narrow = [dict(c, ci_low=c["speedup"] * 0.98, ci_high=c["speedup"] * 1.02) for c in wide]
    kinds = select(pd.DataFrame(narrow), pd.DataFrame(narrow).iloc[:0], FAMILIES)
    assert [k[0] for k, v in kinds.items() if "outlier-across-sets" in v] == ["k-1024"]


def test_a_slowdown_of_another_stage_is_explained_and_the_self_check_never():
    comps = [comparison("k-512", "invntt", 50.0), comparison("k-512", "invntt", 0.8, stage="autovec", base="refnv",
                                                             variant="ref"),
             comparison("k-512", "nop", 0.5),
             comparison("k-512", "ntt", 0.99, half=0.004, stage="autovec", base="refnv", variant="ref"),  # same: ±2%
             dict(comparison("k-512", "basemul", 0.8, stage="autovec", base="refnv", variant="ref"), verdict="withheld")]
    t = explain(comps, tables([]))
    assert set(zip(t["op"], t["stage"], t["kind"])) == {("invntt", "hand", "headline"), ("invntt", "autovec", "slowdown"),
                                                        ("basemul", "autovec", "slowdown")}  # read off its interval


def test_an_outlier_with_the_same_instruction_ratio_is_said_to_differ_in_time_per_instruction():
    comps = [comparison("k-512", "vdecompress", 29.0), comparison("k-768", "vdecompress", 28.0),
             comparison("k-1024", "vdecompress", 15.0)]
    rows = []
    for s, (ref, avx2) in zip(SETS, ((10000, 400), (10000, 400), (15000, 600))):
        rows += mix_rows(s, "vdecompress", "ref", {"scalar_alu": ref}, {})
        rows += mix_rows(s, "vdecompress", "avx2", {"vector_alu": avx2}, {256: avx2})
    r = explain(comps, tables(rows)).set_index("scheme").loc["k-1024"]
    assert r["kind"] == "outlier-across-sets"
    # 25× fewer instructions everywhere: 15 / 25 = 0.6 here, 29 / 25 = 1.16 at K-512 (the others' median's nearest)
    assert ("the difference is in time per instruction (time ratio over instruction ratio 0.6× here, 1.16× at K-512: "
            "measured over counted)"
            in r["sentence"]), r["sentence"]
    assert "ref's instructions per call grow 1.5× and avx2's grow 1.5×" in r["sentence"]
