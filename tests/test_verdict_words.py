"""Every sentence's speed word comes from the comparison's verdict (model.speed_words, issue 45):
`same`, `~` and `withheld` are said as such; a point estimate below 1 is not `slower` unless the
interval says so, and a withheld row is never `faster`. Oracle: the verdict put in each row."""

from __future__ import annotations

import pandas as pd
import pytest

from pqsimd.analyze import footprint
from pqsimd.model import speed_words

from test_explanations import comparison, explain, tables


def _x(v):
    return f"{v:.3g}×"


@pytest.mark.parametrize("verdict, said, unsaid", [
    ("faster", "1.5× faster", ("slower", "same", "withheld")),
    ("slower", "1.12× slower (0.893×)", ("faster",)),
    ("same", "the same speed (0.997×", ("faster", "slower")),
    ("~", "no verdict (0.98×", ("faster", "slower")),
    ("withheld", "26.9× with its verdict withheld", ("faster", "slower")),
    ("n/a", "0.98×", ("faster", "slower", "same")),
])
def test_the_word_is_the_verdicts(verdict, said, unsaid):
    value = {"faster": 1.5, "slower": 0.893, "same": 0.997, "~": 0.98, "withheld": 26.9, "n/a": 0.98}[verdict]
    text = speed_words(value, verdict, _x)
    assert said in text and not any(w in text for w in unsaid), text


def _row(scheme, op, speedup, verdict, lo, hi):
    r = comparison(scheme, op, speedup)
    r.update(verdict=verdict, ci_low=lo, ci_high=hi)
    return r


def test_explanations_say_same_and_withheld_as_such():
    comps = [_row("k-512", "invntt", 26.9, "withheld", 20.0, 35.0),  # the family's largest: a headline
             _row("k-512", "challenge", 0.997, "same", 0.991, 1.004),  # its smallest, below 1: a headline
             _row("k-768", "invntt", 20.0, "faster", 19.5, 20.5), _row("k-1024", "invntt", 20.5, "faster", 20.0, 21.0)]
    t = explain(comps, tables([]))
    top = t[(t["scheme"] == "k-512") & (t["op"] == "invntt")].iloc[0]["sentence"]
    assert "26.9× [20.0, 35.0] with its verdict withheld" in top and "faster" not in top, top
    low = t[(t["scheme"] == "k-512") & (t["op"] == "challenge")].iloc[0]["sentence"]
    assert "the same speed (0.997× [0.991, 1.004]" in low and "slower" not in low, low


def test_footprint_sentences_say_the_time_verdict():
    groups = pd.DataFrame([{"metric": "stack", "scheme": "s1", "op": op, "variant": v, "compiler": "gcc", "median": n}
                           for op, v, n in [("a", "ref", 100), ("a", "avx2", 119), ("b", "ref", 100), ("b", "avx2", 100),
                                            ("c", "ref", 100), ("c", "avx2", 100)]])
    comps = pd.DataFrame([{"metric": "ticks", "scheme": "s1", "op": op, "baseline": "ref", "variant": "avx2",
                           "compiler": "gcc", "speedup": sp, "ci_low": lo, "ci_high": hi, "ci_level": 0.95,
                           "verdict": v} for op, sp, lo, hi, v in [("a", 0.99, 0.98, 1.0, "same"),
                                                                   ("b", 26.9, 20, 35, "withheld"),
                                                                   ("c", 0.97, 0.96, 0.975, "slower")]])
    fams = {"fam": {"schemes": {"s1": {}}}}
    chain = {"steps": [{"stage": "hand_simd", "from": "ref", "to": "avx2"}], "implementations": []}
    df = footprint.footprint_table(comps, groups, fams, chain, set()).set_index("op")
    assert df.loc["a", "sentence"] == "avx2 vs ref, s1 a: the same speed (0.99×, within the threshold) for +19% stack"
    assert "faster" not in df.loc["b", "sentence"] and "verdict withheld" in df.loc["b", "sentence"]
    assert df.loc["c", "sentence"].startswith("avx2 makes s1 c 1.03× slower (0.97×) than ref")  # never "1.0× slower"
    # the parameter set's label and the op's sentence label, so nine sets' sentences are told apart
    fams = {"fam": {"schemes": {"s1": {"label": "ML-KEM-768"}}, "labels": {"a": "noise", "b": "noise η2"}, "ops": ["a", "b", "c"]}}
    df = footprint.footprint_table(comps, groups, fams, chain, set()).set_index("op")
    assert df.loc["a", "sentence"].startswith("avx2 vs ref, ML-KEM-768 noise (a): the same speed"), df.loc["a", "sentence"]


def rewrite_headlines(d, comparisons, study) -> None:
    """results/headlines as analyze would write them over `comparisons` (the one headline rule)."""
    from pqsimd.headlines import headline_table
    from pqsimd.analyze.write import write_table

    write_table(headline_table(comparisons, study.summary["families"], study.chain, study.primary_metric,
                               study.primary_compiler), d / "results", "headlines")


def test_the_why_list_headline_of_a_same_row_below_one_is_not_slower(tmp_path):
    from report_fake import make_fake_study

    from pqsimd.report.html import headlines
    from pqsimd.results import load_study

    d = make_fake_study(tmp_path / "s", schemes=["ml-kem-512"], ops=["invntt", "ntt", "poly_getnoise_eta1"], jobs=3,
                        spins=10, reps=3)
    path = d / "results" / "comparisons.parquet"
    c = pd.read_parquet(path)
    h = load_study(d).chain.hand
    hand = (c["baseline"] == h.base) & (c["variant"] == h.variant) & (c["metric"] == "ticks")
    c.loc[hand & (c["op"] == "poly_getnoise_eta1"), ["speedup", "ci_low", "ci_high", "verdict"]] = \
        [0.997, 0.991, 1.004, "same"]
    c.loc[hand & (c["op"] == "invntt"), "verdict"] = "withheld"
    c.to_parquet(path)
    study = load_study(d)
    rewrite_headlines(d, c, study)  # analysis decides what headlines: decided again over the edited comparisons
    study = load_study(d)
    lines = headlines(study, study.families[0])
    text = " ".join(lines)
    assert "is slower than" not in text and "0.997× [0.991, 1.004]" in text and "the same speed" in text, lines
    assert "with its verdict withheld" in next(l for l in lines if l.startswith("The largest")), lines


def test_an_explanation_quotes_the_instruction_records_and_says_a_count_varies_per_call():
    from test_explanations import mix_rows

    comps = [comparison("k-512", "invntt", 5.0)]
    rows = (mix_rows("k-512", "invntt", "ref", {"scalar_alu": 942731}, {})  # one draw of a separate mix run
            + mix_rows("k-512", "invntt", "avx2", {"vector_alu": 191910}, {256: 191910}))
    groups = pd.DataFrame([{"metric": "instructions", "scheme": "k-512", "op": "invntt", "variant": v, "compiler": "gcc",
                            "median": n, "deterministic": det}
                           for v, n, det in (("ref", 939962.0, False), ("avx2", 192277.0, False))])
    s = explain(comps, tables(rows), groups).iloc[0]["sentence"]
    assert "939,962 → 192,277 per call, counted; ref and avx2's count varies per call: the median" in s, s
    assert "942,731" not in s and "191,910" not in s
    groups["deterministic"] = True  # every call the same: exact, said as before
    s = explain(comps, tables(rows), groups).iloc[0]["sentence"]
    assert "(939,962 → 192,277 per call, counted)" in s and "varies" not in s, s


@pytest.mark.parametrize("value", [0.0, -1.0, float("nan"), None])
def test_no_word_and_no_error_without_a_usable_ratio(value):
    assert speed_words(value, "slower", lambda v: f"{v}×") == f"{value}×"
