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
    assert r["sentence"] == "INVNTT K-512 ref → avx2: 54.9× faster [53.8, 56.0] (measured).", r["sentence"]
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


# --- issue 47: every why in words --------------------------------------------------------------------------

FIXTURE = __import__("pathlib").Path(__file__).parent / "fixtures" / "gen_a_sets"


def _real_gen_a():
    """gen_a of ML-KEM-512/768/1024, ref and avx2 (PQClean 0.1.1, gcc), as a real quick study on a 2-vCPU Xeon
    counted and timed them (/tmp study, 2026-11-28): the mix, the mix records' most-run functions, the kernel
    shares, the instruction counts and the hand stage's comparisons."""
    from pqsimd import catalog

    read = lambda name: pd.read_csv(FIXTURE / f"{name}.csv")  # noqa: E731
    tabs = {"mix": read("mix"), "mix_ops": pd.DataFrame(), "sim": pd.DataFrame(), "mca": pd.DataFrame(),
            "mca_mnemonics": pd.DataFrame(), "functions": read("functions"), "kernel_share": read("kernel_share")}
    fams = {"ml-kem": catalog.families()["ml-kem"].to_results()}
    return read("comparisons"), read("groups"), tabs, fams, catalog.chain("x86_64")


def test_the_single_lane_shake_of_gen_a_at_ml_kem_768_is_said_from_the_counts():
    comps, groups, tabs, fams, chain = _real_gen_a()
    t = explanation_table(comps, groups, tabs, fams, chain, "gcc", "DIR")
    s = t.set_index("scheme").loc["ml-kem-768", "sentence"]
    # the counts: 9 matrix polynomials = two 4-way batches + one polynomial through the scalar Keccak
    assert "avx2 is 59% 256-bit vector at ML-KEM-768 but 85% 256-bit vector at ML-KEM-1024 (counted)" in s, s
    assert ("avx2 executes the instructions rorx (2,088 per call) and not (1,800 per call) at ML-KEM-768 and none at "
            "ML-KEM-512 or ML-KEM-1024") in s, s
    assert "KeccakF1600_StatePermute (17,814 instructions per call)" in s, s
    assert "mix is the same in both" not in s, s
    assert "by kernel, instructions per call Keccak/SHA-2 183,969 → 52,036 (3.54× fewer, 83% of the change)" in s, s


def test_counts_that_differ_are_said_even_where_the_times_overlap():
    """A busy study's gen_a intervals overlap across sets (no outlier), but the exact counts still show other
    code at ML-KEM-768: its sentence says so and is never merged into another set's "Alike at"."""
    comps, groups, tabs, fams, chain = _real_gen_a()
    comps = comps.copy()
    gen_a = comps["op"] == "gen_a"
    comps.loc[gen_a, "ci_low"], comps.loc[gen_a, "ci_high"] = 1.05, 6.0  # every set's interval overlaps the others'
    t = explanation_table(comps, groups, tabs, fams, chain, "gcc", "DIR")
    g = t[t["op"] == "gen_a"].set_index("scheme")
    assert "ml-kem-768" in g.index, t[["scheme", "op", "kind"]]
    s = g.loc["ml-kem-768", "sentence"]
    assert "avx2 is 59% 256-bit vector at ML-KEM-768" in s and "rorx (2,088 per call)" in s, s
    assert not any("Alike at ML-KEM-768" in x for x in g["sentence"]), list(g["sentence"])


def test_a_mnemonic_only_one_set_runs_is_named_and_one_that_vanishes_too():
    comps = [comparison(s, "invntt", sp, half=0.01) for s, sp in zip(SETS, (20.0, 10.0, 20.5))]
    rows = []
    for s in SETS:
        extra = {"rorx": 300.0} if s == "k-768" else {"vpshufb": 200.0}
        rows += mix_rows(s, "invntt", "ref", {"scalar_alu": 10000}, {})
        classes = {"vector_alu": 500, "bmi": sum(extra.values())}
        rows += mix_rows(s, "invntt", "avx2", classes, {256: 500})
        rows += [{"scheme": s, "op": "invntt", "variant": "avx2", "compiler": "gcc", "level": "mnemonic", "class": "bmi",
                  "class_label": "bmi", "mnemonic": mn, "width": 0, "count": n, "total": 0} for mn, n in extra.items()]
    t = explain(comps, tables(rows))
    s = t.set_index("scheme").loc["k-768", "sentence"]
    assert "avx2 executes the instructions rorx (300 per call) at K-768 and none at K-512 or K-1024 (counted)" in s, s
    assert "avx2 executes no vpshufb at K-768, where K-512 and K-1024 execute vpshufb 200 and 200 per call" in s, s


def test_a_share_under_half_a_percent_is_scalar_code_never_a_cut_word():
    comps = [comparison("k-512", "invntt", 2.0)]
    rows = (mix_rows("k-512", "invntt", "ref", {"scalar_alu": 10000}, {})
            + mix_rows("k-512", "invntt", "avx2", {"scalar_alu": 4970, "vector_alu": 30}, {256: 20, 128: 10}))
    s = explain(comps, tables(rows)).iloc[0]["sentence"]
    assert "avx2 runs scalar code (counted)" in s and "lar" not in s.replace("scalar", ""), s


def test_a_randomized_op_never_headlines_over_its_fixed_randomness_twin():
    fams = {"sig": {"schemes": {"d-44": {"label": "D-44"}}, "self_check": "nop", "ops": ["sign", "sign_derand", "ntt"],
                    "labels": {"sign": "sign", "sign_derand": "sign (fixed rnd)", "ntt": "NTT"},
                    "sentence_labels": {"sign": "sign (hedged)"}, "fixed_randomness": {"sign": "sign_derand"},
                    "views": {"headlines": [{"label": "end-to-end", "ops": ["sign"]}]}}}
    comps = [comparison("d-44", "sign", 6.99, half=0.17), comparison("d-44", "sign_derand", 4.32),
             comparison("d-44", "ntt", 3.0)]
    t = explanation_table(pd.DataFrame(comps), None, tables([]), fams, CHAIN, "gcc", "DIR", threshold=0.02)
    heads = t[t["kind"] == "headline"]
    assert "sign" not in set(heads["op"]) and "sign_derand" in set(heads["op"]), t[["op", "kind"]]
    s = heads.set_index("op").loc["sign_derand", "sentence"]
    assert s.startswith("sign (fixed rnd) D-44 ref → avx2: 4.32× faster"), s
    assert "With fresh randomness (sign (hedged)) it is 6.99× faster" in s and "not the headline" in s, s
    # the end-to-end group names sign: its fixed twin stands in; with no twin timed the randomized op stays
    kinds = select(pd.DataFrame(comps[:1] + comps[2:]), pd.DataFrame(comps).iloc[:0], fams)
    assert "headline" in kinds[("d-44", "sign", "hand")]


def test_hand_simd_headlines_come_before_auto_vectorization_slowdowns_and_repeats_merge():
    comps = [comparison(s, "decompress", 0.8, stage="autovec", base="refnv", variant="ref") for s in SETS]
    comps += [comparison(s, "invntt", sp) for s, sp in zip(SETS, (50.0, 49.0, 51.0))]
    t = explain(comps, tables([]))
    assert list(t["stage"]) == ["hand", "autovec"], t[["scheme", "op", "stage", "kind"]]
    slow = t.iloc[1]
    assert slow["merged_schemes"] == "k-768, k-1024"
    assert slow["sentence"].startswith("decompress K-512 refnv → ref: 1.25× slower"), slow["sentence"]
    assert "Alike at K-768 (1.25× slower (0.8× [0.784, 0.816]) (measured)) and K-1024 (" in slow["sentence"], slow["sentence"]
    head = t.iloc[0]  # the three sets' INVNTT sentences are one shape too: one row, each set's number kept
    assert head["merged_schemes"] and "51× faster" in head["sentence"] and "49× faster" in head["sentence"], head["sentence"]


def test_every_shipped_family_names_each_op_unambiguously_in_a_sentence():
    from pqsimd import catalog
    from pqsimd.analyze.explanations import sentence_labels

    for name, fam in catalog.families().items():
        words = sentence_labels(fam.to_results())
        said = [words[o] for o in fam.ops]
        assert len(set(said)) == len(said), (name, said)
        for a in said:
            for b in said:
                assert a == b or not (b.startswith(a) and not b[len(a)].isalnum()), (name, a, b)
    kem = sentence_labels(catalog.families()["ml-kem"].to_results())
    assert kem["poly_getnoise_eta1"] == "noise η1" and kem["kem_keypair"] == "keypair (fresh coins)"
    # a family without sentence labels: an ambiguous label carries its op id
    assert sentence_labels({"ops": ["a", "b"], "labels": {"a": "noise", "b": "noise η2"}}) == {"a": "noise (a)", "b": "noise η2"}


def test_a_study_recorded_before_the_sentence_rules_takes_todays():
    """A manifest's family TOML without [ops.sentence_labels] / [ops.fixed_randomness] (an older study): the
    shipped family's, kept to the study's ops, so its sentences and headlines follow the same rules."""
    from pqsimd.analyze.context import _current_rules

    fam = {"ops": ["poly_getnoise_eta1", "kem_keypair", "kem_decaps"], "labels": {"poly_getnoise_eta1": "noise"}}
    _current_rules("ml-kem", fam)
    assert fam["sentence_labels"]["poly_getnoise_eta1"] == "noise η1"
    assert fam["fixed_randomness"] == {}  # the twin is not among the study's ops: nothing to stand in
    fam = {"ops": ["kem_keypair", "kem_keypair_derand"], "labels": {}}
    _current_rules("ml-kem", fam)
    assert fam["fixed_randomness"] == {"kem_keypair": "kem_keypair_derand"}
