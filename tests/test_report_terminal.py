"""`pqsimd show` and `pqsimd compare`: the rows a reader expects, n/a for missing data, one-line errors."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from rich.console import Console

from pqsimd.errors import PqsimdError
from pqsimd.analyze.crossstudy import compare_studies as compare_table
from pqsimd.report.terminal import print_comparison, show_study
from report_fake import make_fake_study
from synthetic import make_synthetic_study

OPS = ["ntt", "invntt", "gen_a"]


def _console():
    return Console(record=True, width=220, color_system=None)


@pytest.fixture(scope="module")
def fake(tmp_path_factory):
    return make_fake_study(tmp_path_factory.mktemp("show") / "s", schemes=["ml-kem-512", "ml-kem-768"], ops=OPS,
                           jobs=3, spins=10, reps=3, drop=(("ml-kem-768", "ntt", "ref", "avx2"),))


def test_show_prints_every_op_and_variant_with_speedup_ci_delta_p_verdict(fake):
    con = _console()
    show_study(fake, console=con)
    out = con.export_text()
    for needle in ("ML-KEM (FIPS 203)", "ML-KEM-512", "ML-KEM-768", "INVNTT", "NTT", "gen_a", "refo0", "refnv", "ref",
                   "avx2", "median ± CI", "speedup [CI 95.71%]", "verdict", "faster", "+1.000",
                   "design: separate"):
        assert needle in out, needle
    inv = [line for line in out.splitlines() if "avx2" in line and "×" in line]
    assert any("5" in line and "[" in line for line in inv)
    # the dropped comparison is explicit n/a, never nan
    assert "n/a" in out and "nan" not in out.lower().replace("nano", "")
    # footnoted warnings (the analysis' own) and how to read the numbers
    assert "¹" in out and "TSC ticks" in out and "every interval is printed at a confidence of at least" in out
    assert "p (Holm)" not in out  # one interval per number: no p-value column beside it


def test_show_stage_filter_and_bad_choices(fake):
    con = _console()
    show_study(fake, stage="hand_simd", console=con)
    out = con.export_text()
    assert "hand SIMD (ref→avx2)" in out and "refnv " not in out
    with pytest.raises(PqsimdError, match="--metric one of: ticks"):
        show_study(fake, metric="cycles", console=_console())
    with pytest.raises(PqsimdError, match="--stage"):
        show_study(fake, stage="nonsense", console=_console())


def test_show_without_results_is_a_one_line_error(tmp_path):
    (tmp_path / "bare").mkdir()
    with pytest.raises(PqsimdError, match="pqsimd analyze"):
        show_study(tmp_path / "bare")
    r = subprocess.run([sys.executable, "-m", "pqsimd.cli", "show", str(tmp_path / "missing")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    from pqsimd.analyze import analyze_study

    base = tmp_path_factory.mktemp("compare")
    common = dict(schemes=("ml-kem-512",), variants=("ref", "avx2"), jobs=4, spins=20, reps=3, job_sigma=0.005)
    a = make_synthetic_study(base / "a", ops=("ntt", "invntt", "gen_a"), medians={"ref": 7000, "avx2": 200},
                             seed=1, **common)
    # B: avx2 10% slower, ref the same; gen_a missing from B
    b = make_synthetic_study(base / "b", ops=("ntt", "invntt"), medians={"ref": 7000, "avx2": 220}, seed=2,
                             **common)
    for d in (a, b):
        analyze_study(d, n_boot=300, seed=1)
    return a, b


def test_compare_ratio_ci_and_verdict(pair):
    a, b = pair
    df, meta = compare_table(a, b)
    assert set(df["compiler"]) == {"gcc"}
    row = df.set_index(["op", "variant"])
    avx = row.loc[("ntt", "avx2")]
    assert avx["ratio"] == pytest.approx(1.10, rel=0.03)
    assert avx["ci_low"] < avx["ratio"] < avx["ci_high"] and avx["ci_low"] > 1.02
    assert avx["verdict"] == "slower"
    ref = row.loc[("ntt", "ref")]
    assert ref["ci_low"] < 1.0 < ref["ci_high"] and ref["verdict"] == "same"  # the same medians: inside ±2%
    gen = row.loc[("gen_a", "ref")]
    assert gen["note"] == "only in A" and gen["verdict"] == "n/a" and math.isnan(gen["ratio"])


def test_compare_prints_rows_and_na(pair):
    a, b = pair
    con = _console()
    print_comparison(a, b, compare_table(a, b), console=con)
    out = con.export_text()
    from pqsimd.results import Levels

    lv = Levels.of(compare_table(a, b)[0].dropna(subset=["ratio"])["ci_level"])
    assert f"A = {a}" in out and f"B = {b}" in out and not lv.per_row and f"B/A [CI {lv.text()}]" in out
    ntt = [line for line in out.splitlines() if "avx2" in line and "slower" in line]
    assert ntt and "1.1" in ntt[0]
    gen = next(line for line in out.splitlines() if line.startswith("gen_a"))
    assert "n/a" in gen and "only in A" in gen
    assert "nan" not in out.lower()


def test_compare_needs_both_studies(pair, tmp_path):
    with pytest.raises(PqsimdError, match="no study directory"):
        print_comparison(pair[0], tmp_path / "nope", compare_table(pair[0], tmp_path / "nope"), console=_console())


@pytest.mark.parametrize("jobs, small", [(2, True), (6, False)])
def test_show_and_report_say_when_the_study_is_too_small_to_conclude(tmp_path, jobs, small):
    """A 1.5% difference with 2 jobs is inconclusive: show and the HTML methods name how many
    comparisons, the speedups the study could have detected (its MDE) and that it needs more jobs.
    Six jobs and a 10x speedup conclude everything, and nothing is said."""
    from pqsimd.analyze import analyze_study
    from pqsimd.results import load_study

    med = {"ref": 600.0, "avx2": 591.0} if small else {"ref": 600.0, "avx2": 60.0}
    d = make_synthetic_study(tmp_path / "s", schemes=("ml-kem-512",), variants=("ref", "avx2"), ops=("ntt", "invntt"),
                             jobs=jobs, spins=20, reps=3, medians=med, job_sigma=0.02, design="paired",
                             analysis={"n_boot": 200, "seed": 1})
    analyze_study(d)
    con = _console()
    show_study(d, console=con)
    out = " ".join(con.export_text().split())
    note = load_study(d).power_note()
    if small:  # two paired jobs reach no 95% distribution-free interval: withheld, saying how many jobs would
        assert note and note.startswith("2 of 2 comparisons withheld") and "6 or more jobs" in note
        assert f"power: {' '.join(note.split())}" in out
    else:
        assert note is None and "power:" not in out


def test_power_note_says_withheld_when_nothing_was_tested(tmp_path):
    """Separate design, 2 jobs: every comparison is withheld, which is not 'nothing inconclusive'."""
    from pqsimd.analyze import analyze_study
    from pqsimd.report.html import methods
    from pqsimd.results import load_study

    d = make_synthetic_study(tmp_path / "w", schemes=("ml-kem-512",), variants=("ref", "avx2"), ops=("ntt", "invntt"),
                             jobs=2, spins=20, reps=3, medians={"ref": 600.0, "avx2": 60.0}, job_sigma=0.02,
                             analysis={"n_boot": 100, "seed": 1})
    analyze_study(d)
    study = load_study(d)
    assert (study.comparisons["verdict"] == "withheld").all()
    note = study.power_note()
    assert note.startswith("2 of 2 comparisons withheld")
    assert dict(methods(study))["power"] == note


def _sign_level(J: int, gamma: float) -> float:
    """The coverage of the order-statistic interval analyze prints for J jobs at miss probability
    gamma, from scipy's binomial alone: the widest [x(k), x(J+1-k)] missing with probability <= gamma,
    else [min, max] with its own level."""
    from scipy.stats import binom

    ks = [k for k in range(1, (J + 1) // 2 + 1) if 2 * binom.cdf(k - 1, J, 0.5) <= gamma * (1 + 1e-12)]
    return 1 - 2 * binom.cdf((max(ks) if ks else 1) - 1, J, 0.5)


@pytest.mark.parametrize("J", [2, 5, 10])
def test_every_printed_level_is_the_level_its_interval_achieves(tmp_path, J):
    """J = 2: [min, max] of two jobs is a 50% interval; J = 5: 93.75%; J = 10: the order statistics
    reach 97.85%, above the family's level. show's headers, the attribution's caption, the
    decomposition, Table 1 and the portfolio tables print exactly those levels (not the family's
    target, which none of them has), and the decomposition's total the Bonferroni bound of its three
    stages (0% at J = 2)."""
    import json

    from pqsimd.analyze import analyze_study
    from pqsimd.report import portfolio, tables
    from pqsimd.report.attribution import table as attribution_table
    from pqsimd.results import level_text, load_study

    med = {"refo0": 4000.0, "refnv": 2000.0, "ref": 1800.0, "avx2": 300.0,
           "impl-c": 1000.0, "impl-ntt": 250.0, "impl-keccak": 500.0, "impl-full": 125.0}
    d = make_synthetic_study(tmp_path / "s", variants=tuple(med), ops=("ntt", "kem_decaps"), jobs=J, spins=10, reps=3,
                             medians=lambda sc, v, op: med[v], job_sigma=0.01, design="paired", seed=J,
                             analysis={"n_boot": 200, "seed": 1})
    (d / "manifest.json").write_text(json.dumps({"ablations": [{
        "implementation": "impl", "groups": ["ntt", "keccak"],
        "cells": {"impl-c": [], "impl-ntt": ["ntt"], "impl-keccak": ["keccak"], "impl-full": ["ntt", "keccak"]}}]}))
    analyze_study(d)
    study = load_study(d)
    gamma = study.summary["family"]["gamma"]
    sign, median = _sign_level(J, gamma), _sign_level(J, 0.05)
    total = max(0.0, 1 - 3 * (1 - sign))  # three stages refo0 -> refnv -> ref -> avx2
    c = study.comparisons
    assert np.allclose(c.loc[c["method"] == "sign", "ci_level"], sign)
    assert np.allclose(study.groups["median_ci_level"], median)
    if J == 10:
        assert sign > study.summary["family"]["level"]  # 97.85%: not the family's target
    con = _console()
    show_study(d, console=con)
    out = con.export_text()
    assert f"speedup [CI {level_text(sign)}]" in out and f"median ± CI {level_text(median)}" in out
    assert "≥" not in out.split("speedup [CI")[1].split("\n")[0]
    att = study.attribution
    # the shares: a job bootstrap at 95% from 5 jobs on; with 2 the box over 3 cells, 1 - 3 x 50% = 0%
    share, how = (0.95, "bootstrap") if J >= 5 else (0.0, "box")
    assert np.allclose(att["total_ci_level"], sign) and set(att["shapley_ci_method"]) == {how}
    assert np.allclose(att["share_ci_level"], share)
    shares = level_text(share) if share > 0 else "no confidence (too few jobs)"  # never a "0%" interval
    assert f"the total's {level_text(sign)}; the shares' {shares} ({how})" in " ".join(out.split())
    fam = study.families[0]
    assert f"with its interval at {shares} (" in attribution_table(study, fam, att, "ticks").caption
    dec = tables.table_decomposition(study, fam, "ticks")
    total_text = level_text(total) if total > 0 else "no confidence (too few jobs)"
    assert f"at {total_text} (1 - the stages' summed miss probabilities)" in dec.caption
    assert np.allclose(dec.data["total_ci_level"], total) and np.allclose(dec.data["share_hand_simd_ci_level"], total)
    assert f"at {level_text(sign)} (the level each interval achieves" in tables.table1_hand_simd(study, fam, "ticks").caption
    port = portfolio.table(study, portfolio.rows(study))
    assert f"(at {level_text(sign)})" in port.caption
    assert np.allclose(port.data.loc[port.data["speedup"] > 0, "ci_level"], sign)


def test_levels_that_differ_are_printed_after_each_interval():
    from pqsimd.results import Levels

    lv = Levels.of([0.5, 0.9785, float("nan"), None, 0.5])
    assert lv.per_row and lv.text() == "50% to 97.85% (each interval's own level after it)"
    assert lv.after(0.5) == " (50%)" and lv.after(float("nan")) == ""
    one = Levels.of([0.9785, 0.9785])
    assert not one.per_row and one.text() == "97.85%" and one.after(0.9785) == ""
    assert Levels.of([]).text() == "n/a"


def test_multiplicity_by_is_used_named_and_compared_with_bh(tmp_path):
    """`pqsimd analyze --multiplicity by`: Benjamini-Yekutieli's level (statsmodels' fdr_by count),
    named in summary.json, the methods and show; the count of verdicts BH would change is the count of
    rows whose decision p lies between the two levels; [analysis] adjust = "by" does the same, and a
    bad value is one line."""
    import json

    import pandas as pd
    from statsmodels.stats.multitest import multipletests

    from conftest import one_line_error, run_cli

    med = {("ref", "ntt"): 600.0, ("avx2", "ntt"): 590.0, ("ref", "invntt"): 600.0, ("avx2", "invntt"): 60.0,
           ("ref", "gen_a"): 600.0, ("avx2", "gen_a"): 583.0}
    d = make_synthetic_study(tmp_path / "s", schemes=("ml-kem-512", "ml-kem-768"), variants=("ref", "avx2"),
                             ops=("ntt", "invntt", "gen_a"), jobs=8, spins=20, reps=3, medians=med, job_sigma=0.01,
                             design="paired", analysis={"n_boot": 100, "seed": 1})
    r = run_cli("analyze", d, "--multiplicity", "by")
    assert r.returncode == 0, r.stderr
    s = json.loads((d / "results" / "summary.json").read_text())
    c = pd.read_csv(d / "results" / "comparisons.csv")
    p = c.loc[c["method"].isin(["sign", "t"]), "p_decision"].to_numpy(dtype=float)
    fam = s["family"]
    assert fam["adjust"] == "by" and fam["selected"] == int(multipletests(p, 0.05, "fdr_by")[0].sum())
    other = fam["other"]
    lo, hi = sorted((fam["gamma"], other["gamma"]))
    assert other["adjust"] == "fcr" and other["verdicts_changed"] == int(((p > lo) & (p <= hi)).sum())
    assert "Benjamini-Yekutieli" in s["methods"]["family"] and "Benjamini-Hochberg (fcr) would print at" in s["methods"]["family"]
    r = run_cli("show", d)
    assert r.returncode == 0 and "Benjamini-Yekutieli (any dependence)" in " ".join(r.stdout.split())
    (d / "study.toml").write_text((d / "study.toml").read_text().replace("[analysis]", '[analysis]\nadjust = "by"'))
    r = run_cli("analyze", d)
    assert r.returncode == 0 and json.loads((d / "results" / "summary.json").read_text())["family"]["adjust"] == "by"
    r = run_cli("analyze", d, "--multiplicity", "holm")
    assert r.returncode == 2 and "Traceback" not in r.stderr and "holm" in r.stderr
    (d / "study.toml").write_text((d / "study.toml").read_text().replace('adjust = "by"', 'adjust = "BY"'))
    one_line_error(run_cli("analyze", d), "adjust", '"by"')


@pytest.mark.parametrize("io_encoding", ["latin-1", None])
def test_every_command_works_under_a_non_utf8_locale(tmp_path, io_encoding):
    """Item 12 of issue 29: under a latin-1 (or plain ASCII) locale, analyze, show and report run to
    the end: files stay UTF-8, and a character the terminal lacks prints as `?`, never a traceback."""
    import os

    from conftest import PQSIMD

    def run_cli(*args, env):  # the output in the terminal's encoding (latin-1; UTF-8 mode otherwise)
        return subprocess.run([str(PQSIMD), *map(str, args)], capture_output=True, env=env, timeout=600,
                              encoding=io_encoding or "utf-8")

    d = make_synthetic_study(tmp_path / "s", schemes=("ml-kem-512",), variants=("ref", "avx2"), ops=("ntt",), jobs=6,
                             spins=10, reps=3, medians={"ref": 600.0, "avx2": 60.0}, design="paired",
                             analysis={"n_boot": 200, "seed": 1})
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG", "PYTHONUTF8", "PYTHONIOENCODING"))}
    env |= {"LC_ALL": "C", "PYTHONUTF8": "0", **({"PYTHONIOENCODING": io_encoding} if io_encoding else {})}
    for command in ("analyze", "show", "report"):
        r = run_cli(command, d, env=env)
        assert r.returncode == 0 and "Traceback" not in r.stderr, (command, r.stderr[-2000:])
    assert "ML-KEM-512" in r.stdout or "ML-KEM-512" in run_cli("show", d, env=env).stdout
    assert "→" in (d / "report" / "index.html").read_text(encoding="utf-8")


def test_bracketed_text_prints_literally(tmp_path):
    """Low item of issue 29: rich markup swallowed "[min, max]" in show's footnote and "[study]" in
    hints; every message and note now prints as written."""
    from pqsimd.analyze import analyze_study
    from pqsimd.errors import tagged

    d = make_synthetic_study(tmp_path / "s", schemes=("ml-kem-512",), variants=("ref", "avx2"), ops=("ntt",), jobs=2,
                             spins=10, reps=3, medians={"ref": 600.0, "avx2": 591.0}, design="paired",
                             analysis={"n_boot": 200, "seed": 1})
    analyze_study(d)
    con = _console()
    show_study(d, console=con)
    out = " ".join(con.export_text().split())
    assert "most common reason (1x): J = 2: the widest distribution-free interval, [min, max] of the job" in out
    con = _console()
    con.print(tagged("failed", "red", "sizing did not finish within 3 s; set [study] job_timeout"))
    assert "set [study] job_timeout" in con.export_text()
