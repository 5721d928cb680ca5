"""The portfolio (issue 21): Falcon, Classic McEliece and HQC listed beside ML-KEM, ML-DSA and
SPHINCS+; every family's portfolio data (end-to-end ops, dominant kernels tagged with a kind of
mathematics from data/math.toml) checked when it loads; and one quick study of the smallest set of
each new family through run, analyze, report and show, HQC without any hand-SIMD build."""

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from conftest import capped_ops

from pqsimd import catalog, machine
from pqsimd.errors import PqsimdError

FIXTURES = Path(__file__).parent / "fixtures" / "families"
NEW = {"falcon": "Falcon round 3", "mceliece": "Classic McEliece", "hqc": "HQC (2023-04-30"}


def test_list_shows_the_new_families(cli):
    r = cli("list")
    assert r.returncode == 0, r.stderr
    text = " ".join(r.stdout.split())
    for name, title in NEW.items():
        assert title in text and f"data/families/{name}.toml" in text
    for sid in ("falcon-padded-1024", "mceliece8192128f", "hqc-256"):
        assert sid in text


def test_every_shipped_family_has_portfolio_data():
    kinds = catalog.math_kinds()
    assert {"lattice", "hash", "gf2m", "fft", "coding"} <= set(kinds)
    seen = set()
    for fam in catalog.families().values():
        p = fam.views["portfolio"]
        assert p["end_to_end"] == fam.views["end_to_end"], fam.name
        assert set(p["kernels"]) <= set(fam.ops) - {fam.self_check}
        seen |= set(p["kernels"].values())
        assert set(fam.to_results()["math"]) == set(p["kernels"].values())
    assert {"lattice", "hash", "gf2m", "gf2-linear", "fft", "coding", "sampling"} <= seen


BASE = (FIXTURES / "shake.toml").read_text()


@pytest.mark.parametrize("portfolio, needle", [
    ('kernels = { shake_32 = "knitting" }', "kernel 'shake_32' has kind 'knitting', which data/math.toml does not define"),
    ('kernels = { nope = "hash" }', "'nope' is not a timed op of this family"),
    ('end_to_end = ["empty"]', "'empty' is not a timed op of this family"),
    ('end_to_end = ["shake_1k"]\nkernels = { shake_1k = "hash" }', "shake_1k is both end-to-end and a kernel"),
    ('kernels = ["shake_32"]', "`kernels` must map each kernel op to its kind of mathematics"),
    ('colour = "red"', "must be a table with `end_to_end`"),
    ("", "names no op"),
])
def test_bad_portfolio_data_is_one_line(tmp_path, monkeypatch, portfolio, needle):
    shutil.copy(FIXTURES / "shake_ops.c", tmp_path)
    (tmp_path / "shake.toml").write_text(BASE + "\n[views.portfolio]\n" + portfolio + "\n")
    monkeypatch.setenv("PQSIMD_FAMILY_PATH", str(tmp_path))
    with pytest.raises(PqsimdError, match=re.escape(needle)) as e:
        catalog.families()
    assert "\n" not in str(e.value) and "shake.toml" in str(e.value)


@pytest.mark.slow
def assert_timed_or_capped(d, comp, scheme: str, baseline: str, variant: str) -> int:
    """Every op of the scheme (but the self-check) has a comparison baseline -> variant, or says why
    not: the tool promises a number or n/a with the cap named (a build whose one call takes longer
    than the study's max_call_s is not timed), never the host's speed. Returns the ops timed."""
    fam = catalog.family_of(scheme)
    slow = capped_ops(d, f"{baseline}.gcc.{fam.name}", scheme) | capped_ops(d, f"{variant}.gcc.{fam.name}", scheme)
    rows = comp[(comp.scheme == scheme) & (comp.baseline == baseline) & (comp.variant == variant)].set_index("op")
    for op in fam.ops:
        if op == fam.self_check:
            continue
        if op not in slow:
            assert op in rows.index and pd.notna(rows.speedup[op]), (scheme, op, baseline, variant)
        elif op in rows.index:  # one side timed it: n/a, and the reason names the cap
            assert pd.isna(rows.speedup[op]) and "max_call_s" in rows.reason[op], rows.reason[op]
    return len(set(fam.ops) - slow - {fam.self_check})


def test_quick_study_of_the_new_families(tmp_path, cli):
    """falcon-512, mceliece348864 and hqc-128 gate, time, analyze, report and show; HQC has no avx2
    build, so its hand-SIMD stage is absent everywhere and nothing else breaks."""
    if not {"avx2", "bmi2", "popcnt"} <= machine.cpu_flags():
        pytest.skip("this CPU cannot run the avx2 builds the hand-SIMD stage needs")
    d = tmp_path / "q"
    r = cli("run", d, "--preset", "quick", "--schemes", "falcon-512,mceliece348864,hqc-128", timeout=1800)
    assert r.returncode == 0, r.stderr[-3000:]
    gate = json.loads((d / "gate" / "avx2.gcc.hqc.json").read_text())
    assert gate["skipped"] == "family hqc has no 'avx2' implementation (it has clean)"
    assert not gate["passed_schemes"]
    for step in ("analyze", "report", "show"):
        r = cli(step, d)
        assert r.returncode == 0, (step, r.stderr[-3000:])
    show = r.stdout
    res = d / "results"
    comp = pd.read_parquet(res / "comparisons.parquet")
    comp = comp[(comp.metric == "ticks") & (comp.op != "empty")]
    hand = comp[(comp.baseline == "ref") & (comp.variant == "avx2")]
    for scheme in ("falcon-512", "mceliece348864"):  # timed, or n/a with the cap named (a slow host's keypair)
        assert assert_timed_or_capped(d, comp, scheme, "ref", "avx2") > 0, scheme
    assert hand[hand.scheme == "hqc-128"].speedup.isna().all()  # no avx2 data: n/a, not invented
    for base, var in (("refo0", "refnv"), ("refnv", "ref")):
        assert assert_timed_or_capped(d, comp, "hqc-128", base, var) > 0
    dec = pd.read_parquet(res / "decomposition.parquet")
    dec = dec[(dec.metric == "ticks") & (dec.scheme == "hqc-128") & (dec.op != "empty")]
    dec = dec[dec.factor_compiler.notna() & dec.factor_autovec.notna()]  # ops no build's cap left out
    assert len(dec) and dec.factor_hand_simd.isna().all()
    assert (abs(dec.total / (dec.factor_compiler * dec.factor_autovec) - 1) < 1e-9).all()  # the chain up to ref
    assert dec.note.str.startswith("decomposed up to ref: no data for ref→avx2").all()
    groups = pd.read_parquet(res / "groups.parquet")
    assert not ((groups.scheme == "hqc-128") & (groups.variant == "avx2")).any()
    summary = json.loads((res / "summary.json").read_text())
    assert summary["families"]["mceliece"]["math"]["gf2-linear"]["label"] == "linear algebra over GF(2)"
    assert summary["families"]["hqc"]["views"]["portfolio"]["kernels"]["rm_decode"] == "coding"
    rep = d / "report"
    assert (rep / "falcon" / "fig3_hand_simd.png").exists() and (rep / "mceliece" / "fig3_hand_simd.png").exists()
    assert not (rep / "hqc" / "fig3_hand_simd.png").exists() and (rep / "hqc" / "fig2_decomposition.png").exists()
    html = (rep / "index.html").read_text()
    assert all(t in html for t in NEW.values())
    assert "Skipped: no ref→avx2 (ticks) comparisons" in html
    assert all(t in show for t in NEW.values())


def test_the_portfolio_view_in_the_report_and_show(tmp_path):
    """Two families: the report draws the portfolio figure and table (the hand-SIMD comparisons of each
    family's end-to-end ops and kernels, grouped by kind of mathematics) and show prints it."""
    from rich.console import Console
    from synthetic import make_synthetic_study

    from pqsimd.analyze import analyze_study
    from pqsimd.studysets import report_study as write_report
    from pqsimd.report.terminal import show_study

    d = make_synthetic_study(tmp_path / "p", schemes=("ml-kem-512", "ml-dsa-44"), variants=("ref", "avx2"),
                             ops=("kem_decaps", "ntt", "verify"), jobs=6, spins=10, reps=3, design="paired",
                             medians={"ref": 5000.0, "avx2": 500.0, ("avx2", "ntt"): 100.0},
                             analysis={"n_boot": 100, "seed": 1})
    analyze_study(d)
    out = write_report(d)
    assert (out / "portfolio" / "fig_portfolio.png").exists()
    csv = pd.read_csv(out / "portfolio" / "table_portfolio.csv")
    ntt = csv[(csv["op"] == "ntt")]
    assert set(ntt["kind"]) == {"lattice"} and set(ntt["family"]) == {"ml-kem", "ml-dsa"}
    assert ntt["speedup"].to_numpy() == pytest.approx(50.0, rel=0.05)
    assert set(csv.loc[csv["op"] == "kem_decaps", "role"]) == {"end-to-end"}
    html = (out / "index.html").read_text()
    assert 'id="portfolio"' in html and "lattice arithmetic" in html
    con = Console(record=True, width=200, color_system=None)
    show_study(d, console=con)
    assert "Across the portfolio" in con.export_text()
