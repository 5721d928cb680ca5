"""The cross-implementation view (analyze/crossimpl.py): it reads each implementation's comparisons with
their own intervals and never estimates twice; a family's counterpart is set beside it with box
intervals at 1 - the summed misses; the chain's implementations are data, checked in one line."""

import math

import pandas as pd
import pytest

from pqsimd import catalog
from pqsimd.analyze import crossimpl
from pqsimd.errors import PqsimdError

CHAIN = {"steps": [{"stage": "hand_simd", "from": "ref", "to": "avx2"}],
         "implementations": [{"name": "PQClean", "c": "ref", "simd": "avx2"},
                              {"name": "wolfSSL", "c": "wolfssl-c", "simd": "wolfssl"},
                              {"name": "ghost", "c": "ghost-c", "simd": "ghost"}]}


def _row(base, var, speedup, lo, hi, level=0.95, scheme="ml-kem-768", op="ntt", stage="x", compiler="gcc",
         baseline_compiler=None, verdict="faster"):
    return {"metric": "ticks", "scheme": scheme, "op": op, "baseline": base, "variant": var, "compiler": compiler,
            "baseline_compiler": baseline_compiler or compiler, "stage": stage, "speedup": speedup, "ci_low": lo,
            "ci_high": hi, "ci_level": level, "verdict": verdict, "reason": ""}


def test_implementations_side_by_side_read_the_comparisons():
    comps = pd.DataFrame([
        _row("ref", "avx2", 40.0, 39.0, 41.0, stage="hand_simd"),
        _row("wolfssl-c", "wolfssl", 12.0, 11.5, 12.5),
        _row("ref", "wolfssl-c", 3.0, 2.9, 3.1, stage="extra"),
        _row("avx2", "wolfssl", 0.9, 0.88, 0.92, verdict="slower"),
        _row("ref", "avx2", 7.0, 6.0, 8.0, compiler="clang", baseline_compiler="gcc", stage="cross_compiler"),
    ])
    t = crossimpl.crossimpl_table(comps, CHAIN)
    assert list(t["implementation"]) == ["PQClean", "wolfSSL"]  # ghost is not in the study: no row
    ref, wolf = t.iloc[0], t.iloc[1]
    assert (ref["hand_simd"], ref["hand_simd_ci_low"], ref["hand_simd_ci_high"]) == (40.0, 39.0, 41.0)
    assert ref["simd_vs_reference_verdict"] == "reference" and ref["c_vs_reference"] == 1.0
    assert (wolf["hand_simd"], wolf["c_vs_reference"], wolf["simd_vs_reference"]) == (12.0, 3.0, 0.9)
    assert wolf["simd_vs_reference_verdict"] == "slower" and wolf["simd_vs_reference_ci_level"] == 0.95
    # the hand-SIMD factor decomposes: its C's gain times its SIMD's, over the reference's chain
    assert math.isclose(wolf["c_vs_reference"] * wolf["hand_simd"] / ref["hand_simd"], wolf["simd_vs_reference"],
                        rel_tol=0.01)


def test_one_implementation_is_no_view():
    comps = pd.DataFrame([_row("ref", "avx2", 40.0, 39.0, 41.0, stage="hand_simd")])
    assert crossimpl.crossimpl_table(comps, CHAIN).empty
    assert crossimpl.crossimpl_table(comps, {"steps": CHAIN["steps"]}).empty  # a chain without implementations


def test_counterpart_ratios_are_box_intervals():
    comps = pd.DataFrame([
        _row("ref", "avx2", 2.0, 1.8, 2.2, scheme="slh-dsa-shake-128f", op="sign", stage="hand_simd"),
        _row("ref", "avx2", 4.0, 3.5, 4.5, scheme="sphincs-shake-128f-simple", op="sign", stage="hand_simd"),
    ])
    groups = pd.DataFrame([
        {"metric": "ticks", "scheme": "slh-dsa-shake-128f", "op": "sign", "variant": "avx2", "compiler": "gcc",
         "median": 100.0, "median_ci_low": 90.0, "median_ci_high": 110.0, "median_ci_level": 0.98},
        {"metric": "ticks", "scheme": "sphincs-shake-128f-simple", "op": "sign", "variant": "avx2", "compiler": "gcc",
         "median": 50.0, "median_ci_low": 45.0, "median_ci_high": 55.0, "median_ci_level": 0.98},
    ])
    fams = {"slh-dsa": {"views": {"counterpart": {"family": "sphincs", "relation": "round 3",
                                                  "schemes": {"slh-dsa-shake-128f": "sphincs-shake-128f-simple"},
                                                  "ops": {"sign": "sign"}}}}}
    t = crossimpl.counterparts_table(comps, groups, fams, {"steps": [{"stage": "hand_simd", "from": "ref", "to": "avx2"}]})
    assert len(t) == 1
    r = t.iloc[0]
    assert r["speedup_ratio"] == 0.5
    assert math.isclose(r["speedup_ratio_ci_low"], 1.8 / 4.5) and math.isclose(r["speedup_ratio_ci_high"], 2.2 / 3.5)
    assert math.isclose(r["speedup_ratio_ci_level"], 0.90)  # 1 - (0.05 + 0.05)
    assert r["simd_time_ratio"] == 0.5  # theirs 50 / ours 100: ours is slower
    assert math.isclose(r["simd_time_ratio_ci_low"], 45 / 110) and math.isclose(r["simd_time_ratio_ci_level"], 0.96)
    assert r["speedup_ratio_ci_low"] <= r["speedup_ratio"] <= r["speedup_ratio_ci_high"]


def test_the_shipped_chain_names_its_implementations_and_bad_ones_are_one_line():
    ch = catalog.chain("x86_64")
    assert ch.implementations[0] == ("PQClean", "ref", "avx2")
    assert ("wolfSSL", "wolfssl-c", "wolfssl") in ch.implementations
    assert ch.to_dict()["implementations"][0] == {"name": "PQClean", "c": "ref", "simd": "avx2"}
    with pytest.raises(PqsimdError) as e:
        catalog.Chain.from_dict({"steps": CHAIN["steps"], "implementations": [{"name": "x", "c": "ref"}]},
                                "variants.toml [chains.x]")
    assert "`implementations` must be a list of {name, c, simd}" in str(e.value) and "\n" not in str(e.value)


def test_the_view_through_analyze_report_and_show(tmp_path):
    """A paired study of PQClean and wolfSSL builds: analyze writes results/crossimpl with the ratios the
    data were made with, the report has its table and HTML section, show prints it."""
    from rich.console import Console
    from synthetic import make_synthetic_study

    from pqsimd.analyze import analyze_study
    from pqsimd.studysets import report_study as write_report
    from pqsimd.report.terminal import show_study

    d = make_synthetic_study(tmp_path / "x", schemes=("ml-kem-768",), variants=("ref", "avx2", "wolfssl-c", "wolfssl"),
                             ops=("gen_a", "kem_decaps"), jobs=6, spins=10, reps=3, design="paired",
                             medians={"ref": 10000.0, "avx2": 1000.0, "wolfssl-c": 5000.0, "wolfssl": 800.0},
                             analysis={"n_boot": 100, "seed": 1})
    analyze_study(d)
    t = pd.read_csv(d / "results" / "crossimpl.csv")
    wolf = t[(t["implementation"] == "wolfSSL") & (t["op"] == "kem_decaps")].iloc[0]
    assert wolf["hand_simd"] == pytest.approx(6.25, rel=0.05)
    assert wolf["c_vs_reference"] == pytest.approx(2.0, rel=0.05)
    assert wolf["simd_vs_reference"] == pytest.approx(1.25, rel=0.05)
    assert wolf["hand_simd_ci_low"] <= wolf["hand_simd"] <= wolf["hand_simd_ci_high"]
    out = write_report(d)
    assert (out / "crossimpl" / "table_crossimpl.csv").exists()
    assert 'id="crossimpl"' in (out / "index.html").read_text()
    con = Console(record=True, width=220, color_system=None)
    show_study(d, console=con)
    text = con.export_text()
    assert "Whose speedup is it" in text and "wolfSSL (wolfssl-c → wolfssl)" in text
