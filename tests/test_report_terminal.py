"""`pqsimd show` and `pqsimd compare`: the rows a reader expects, n/a for missing data, one-line errors."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest
from rich.console import Console

from pqsimd.errors import PqsimdError
from pqsimd.analyze.crossstudy import compare_studies as compare_table
from pqsimd.report.terminal import compare_studies, show_study
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
                   "avx2", "median ± CI", "speedup [CI ≥", "verdict", "faster", "+1.000",
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
    compare_studies(a, b, console=con)
    out = con.export_text()
    assert f"A = {a}" in out and f"B = {b}" in out and "B/A [CI ≥" in out
    ntt = [line for line in out.splitlines() if "avx2" in line and "slower" in line]
    assert ntt and "1.1" in ntt[0]
    gen = next(line for line in out.splitlines() if line.startswith("gen_a"))
    assert "n/a" in gen and "only in A" in gen
    assert "nan" not in out.lower()


def test_compare_needs_both_studies(pair, tmp_path):
    with pytest.raises(PqsimdError, match="no study directory"):
        compare_studies(pair[0], tmp_path / "nope", console=_console())


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
