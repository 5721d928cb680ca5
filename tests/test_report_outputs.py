"""`pqsimd report`: every file per family, LaTeX tables, macros named per family, --reference paper,
n/a for missing data, the HTML with a section per family, and a compiler view."""

from __future__ import annotations

import re
import shutil

import pandas as pd
import pytest

from conftest import require_tool

from pqsimd import catalog
from pqsimd.errors import PqsimdError
from pqsimd.report import fmt
from pqsimd.studysets import report_study as write_report
from pqsimd.report.figures import FIGURES
from pqsimd.report.macros import NAME_RE, camel, number_words
from report_fake import make_fake_study

KEM = catalog.families()["ml-kem"]
TABLE1_OPS = list(KEM.views["table1"])
OPS = TABLE1_OPS + ["kem_keypair", "kem_encaps", "kem_decaps", "poly_tomsg", "empty"]
PAPER_ORDER = ["INVNTT", "basemul", "frommsg", "NTT", "iDec", "iEnc", "iKeypair", r"gen\_a", "noise"]
TABLES = ("table1_hand_simd", "table_full", "table_decomposition")
DROPPED = ("ml-kem-768", "invntt", "ref", "avx2")


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    d = make_fake_study(tmp_path_factory.mktemp("report") / "study", ops=OPS, jobs=3, spins=12, reps=3,
                        metrics=("ticks", "instructions"), drop=(DROPPED,))
    out = write_report(d, reference="paper")
    assert out == d / "report"
    return d


def test_every_file_is_written(study):
    rep = study / "report" / "ml-kem"
    for name, *_ in FIGURES:
        if name == "fig_compilers":  # one compiler in this study
            assert not (rep / f"{name}.png").exists()
            continue
        for ext in ("pdf", "png", "svg"):
            assert (rep / f"{name}.{ext}").stat().st_size > 1000, f"{name}.{ext}"
    for name in ("fig2_decomposition_instructions", "fig3_hand_simd_instructions"):  # the metric's twins
        assert (rep / f"{name}.png").exists()
    for name in TABLES:
        for ext in ("tex", "md", "csv"):
            assert (rep / f"{name}.{ext}").exists()
            assert (rep / f"{name}_instructions.{ext}").exists()
    assert (study / "report" / "macros.tex").exists() and (study / "report" / "index.html").exists()
    assert not list((study / "report").rglob(".*.tmp")), "atomic writes leave no temporaries"


def test_latex_tables_are_booktabs_and_table1_keeps_the_papers_order(study):
    rep = study / "report" / "ml-kem"
    for name in TABLES:
        tex = (rep / f"{name}.tex").read_text()
        for rule in (r"\toprule", r"\midrule", r"\bottomrule", r"\begin{tabular}", r"\end{tabular}"):
            assert rule in tex, (name, rule)
        assert tex.index(r"\toprule") < tex.index(r"\midrule") < tex.index(r"\bottomrule")
    body = (rep / "table1_hand_simd.tex").read_text().split(r"\midrule")[1]
    labels = [line.split("&")[0].strip() for line in body.splitlines() if "&" in line]
    assert labels == PAPER_ORDER
    assert re.search(r"\$\d+(\.\d+)?\\times\$ \{\\scriptsize \[\d", body)  # "56.3×" with a CI
    md = (rep / "table1_hand_simd.md").read_text()
    assert "| INVNTT |" in md and "×" in md
    dec = (rep / "table_decomposition.md").read_text()
    assert "%, " in dec or "% [" in dec  # shares with their intervals


def test_reference_paper_adds_the_paper_column_and_ratio(study):
    rep = study / "report" / "ml-kem"
    csv = pd.read_csv(rep / "table1_hand_simd.csv", na_values=["n/a"]).set_index("op")
    assert csv.loc["invntt", "ml-kem-512_paper"] == 56.3
    assert csv.loc["poly_getnoise_eta1", "ml-kem-1024_paper"] == 1.2
    r = csv.loc["ntt"]
    assert r["ml-kem-512_ratio"] == pytest.approx(r["ml-kem-512_speedup"] / 35.5, rel=1e-4)
    tex = (rep / "table1_hand_simd.tex").read_text()
    assert "paper" in tex and "ratio" in tex and r"\cmidrule" in tex and r"$56.3\times$" in tex
    html = (study / "report" / "index.html").read_text()
    assert "ML-KEM-512 paper" not in html  # HTML keeps the two header rows
    assert ">paper<" in html and ">ratio<" in html


def test_without_reference_there_is_no_paper_column(tmp_path):
    d = make_fake_study(tmp_path / "s", schemes=["ml-kem-512"], ops=["ntt", "invntt"], jobs=2, spins=6, reps=2)
    write_report(d)
    tex = (d / "report" / "ml-kem" / "table1_hand_simd.tex").read_text()
    assert "paper" not in tex.split(r"\toprule")[1]
    # ops absent from the study are n/a rows in Table 1, not gaps
    csv = pd.read_csv(d / "report" / "ml-kem" / "table1_hand_simd.csv", keep_default_na=False)
    assert (csv.set_index("op").loc["gen_a", "ml-kem-512_speedup"]) == "n/a"
    html = (d / "report" / "index.html").read_text()
    assert "Skipped:" in html  # e.g. the end-to-end figure: none of its ops were timed


def test_missing_comparison_is_na_never_nan(study):
    rep = study / "report" / "ml-kem"
    md = (rep / "table1_hand_simd.md").read_text()
    invntt = next(line for line in md.splitlines() if line.startswith("| INVNTT"))
    cells = [c.strip() for c in invntt.strip("|").split("|")]
    # ML-KEM-768 (ours, paper, ratio) = columns 4..6: ours and ratio n/a, the paper's value still shown
    assert cells[4] == "n/a" and cells[5] == "52.2×" and cells[6] == "n/a"
    assert "n/a" in (rep / "table1_hand_simd.tex").read_text()
    csv = pd.read_csv(rep / "table1_hand_simd.csv", keep_default_na=False).set_index("op")
    assert csv.loc["invntt", "ml-kem-768_speedup"] == "n/a"
    for f in list(rep.glob("table*.*")) + [study / "report" / "macros.tex", study / "report" / "index.html"]:
        text = f.read_text()
        assert not re.search(r"\bnan\b", text, re.IGNORECASE), f"NaN leaked into {f.name}"
        assert not re.search(r"\binf\b", text), f"inf leaked into {f.name}"


def test_macros_are_valid_unique_names_per_family(study):
    text = (study / "report" / "macros.tex").read_text()
    names = re.findall(r"\\newcommand\{(\\[^}]*)\}", text)
    assert len(names) > 100 and len(names) == len(set(names))
    assert all(NAME_RE.match(n) for n in names), [n for n in names if not NAME_RE.match(n)][:5]
    p = KEM.views["macro_prefix"]
    assert rf"\newcommand{{\pqsimd{p}SpeedupInvnttMlkemFiveTwelve}}{{" in text
    assert rf"\pqsimd{p}SpeedupPolyGetnoiseEtaOneMlkemTenTwentyFourLow" in text
    assert rf"\pqsimd{p}InstructionsSpeedupNttMlkemSevenSixtyEight" in text
    assert rf"\pqsimd{p}SpeedupArithMin" in text and rf"\pqsimd{p}SpeedupEndToEndMax" in text
    assert r"\pqsimdThreshold}{2\%}" in text
    # a dropped comparison has no macro rather than a NaN one
    assert rf"\pqsimd{p}SpeedupInvnttMlkemSevenSixtyEight}}" not in text


def test_macro_name_spelling():
    assert [number_words(x) for x in ("512", "768", "1024", "1", "44")] == [
        "FiveTwelve", "SevenSixtyEight", "TenTwentyFour", "One", "FortyFour"]
    assert camel("poly_getnoise_eta1") == "PolyGetnoiseEtaOne" and camel("ml-kem-512", True) == "MlkemFiveTwelve"
    assert camel("noise_x4") == "NoiseXFour"


def test_html_is_self_contained_with_every_figure_and_table(study):
    html = (study / "report" / "index.html").read_text()
    assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", html, re.IGNORECASE)
    assert not re.search(r"@import|url\(\s*['\"]?https?:", html)
    pngs = re.findall(r'<img src="data:image/png;base64,[A-Za-z0-9+/=]{1000,}"', html)
    drawn = list((study / "report").rglob("fig*.png"))
    assert len(pngs) >= len(drawn) >= 8
    for name in TABLES:
        assert f'data-table="{name}"' in html and f'data-table="{name}_instructions"' in html
    for section in ("Headline findings", "Methods", "Environment and provenance", "Warnings", KEM.title):
        assert section in html
    # methods come from the data; warnings from results and manifest
    assert "Fake CPU @ 2.90GHz" in html and "repetitions per spin, R</td><td>3" in html
    for w in ("TSC ticks: what a tick is", "TSC ticks at the invariant TSC frequency, not core cycles", "virtualized host"):
        assert w in html, w
    assert "the paper&#39;s ordering" in html or "the paper's ordering" in html
    assert 'id="ml-kem"' in html  # a section per family


def test_the_html_methods_are_summary_jsons_methods_verbatim(study):
    """What a reader sees is what analyze recorded (analyze/methods.py fills in this study's family
    level); every methods sentence of summary.json stands in the HTML word for word, and the
    numbers in it are the family's."""
    import html as htmllib
    import json

    page = htmllib.unescape((study / "report" / "index.html").read_text())
    summary = json.loads((study / "results" / "summary.json").read_text())
    methods = summary["methods"]
    assert {"speedup", "ci", "family", "verdict", "decomposition", "regimes", "drift", "disturbed_jobs"} <= set(methods)
    for key, text in methods.items():
        assert text in page, key
    fam = summary["family"]
    assert f"R = {fam['selected']} of m = {fam['m']}" in methods["family"]
    assert f"({100 * fam['level']:.2f}%)" in methods["family"]


def test_compiler_view_with_two_compilers(tmp_path):
    d = make_fake_study(tmp_path / "cc", schemes=["ml-kem-512"], variants=["refo0", "refnv", "ref", "avx2"],
                        ops=["ntt", "invntt", "basemul", "poly_frommsg"], jobs=2, spins=8, reps=2,
                        compilers=("gcc-12", "clang-16"))
    write_report(d)
    rep = d / "report" / "ml-kem"
    assert (rep / "fig_compilers.png").exists() and (rep / "table_compilers.csv").exists()
    t = pd.read_csv(rep / "table_compilers.csv")
    assert set(t["compiler"]) == {"gcc-12", "clang-16"} and "autovec_speedup" in t.columns
    html = (d / "report" / "index.html").read_text()
    assert "across 2 compilers" in html  # the sentence per headline op
    c = pd.read_csv(d / "results" / "comparisons.csv")
    cross = c[c["stage"] == "cross_compiler"]
    assert len(cross) and set(cross["baseline_compiler"]) == {"gcc-12"} and set(cross["compiler"]) == {"clang-16"}
    macros = (d / "report" / "macros.tex").read_text()
    assert "ClangSixteen" in macros  # the second compiler's numbers carry its name


def test_report_runs_the_analysis_when_results_are_missing(tmp_path):
    from synthetic import make_synthetic_study

    d = make_synthetic_study(tmp_path / "s", schemes=("ml-kem-512",), variants=("refo0", "refnv", "ref", "avx2"),
                             ops=("ntt", "invntt", "gen_a"), jobs=2, spins=10, reps=3,
                             medians={"refo0": 5000, "refnv": 1000, "ref": 1000, "avx2": 30}, seed=2)
    assert not (d / "results").exists()
    write_report(d)
    assert (d / "results" / "comparisons.csv").exists()
    csv = pd.read_csv(d / "report" / "ml-kem" / "table1_hand_simd.csv", keep_default_na=False).set_index("op")
    assert float(csv.loc["ntt", "ml-kem-512_speedup"]) == pytest.approx(1000 / 30, rel=0.05)
    assert csv.loc["basemul", "ml-kem-512_speedup"] == "n/a"
    assert (d / "report" / "ml-kem" / "fig1_distributions.png").exists()


def test_bad_input_is_one_line_errors(tmp_path):
    with pytest.raises(PqsimdError, match="no study directory"):
        write_report(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(PqsimdError, match="pqsimd run"):
        write_report(tmp_path / "empty")
    d = make_fake_study(tmp_path / "s", schemes=["ml-kem-512"], ops=["ntt"], jobs=2, spins=4, reps=2)
    with pytest.raises(PqsimdError, match="--reference paper"):
        write_report(d, reference="wrong")
    (d / "results" / "comparisons.parquet").write_bytes(b"PAR1 truncated")
    with pytest.raises(PqsimdError, match="pqsimd analyze"):
        write_report(d)
    shutil.rmtree(d / "results")
    shutil.rmtree(d / "raw")
    with pytest.raises(PqsimdError) as e:
        write_report(d)
    assert "\n" not in str(e.value)


def test_formatting_never_prints_nan():
    assert fmt.times(float("nan")) == "n/a" and fmt.ci(None, 2.0) == "n/a" and fmt.delta(float("inf")) == "n/a"
    assert fmt.times(56.31) == "56.3×" and fmt.times(4.7) == "4.70×" and fmt.num(123.4) == "123"
    assert fmt.ci(55.81, 57.66) == "[55.8, 57.7]" and fmt.pct(-0.001) == "0%" and fmt.pval(0.0) == "<1e-300"


def test_tables_and_macros_compile_with_pdflatex(study, tmp_path):
    """The LaTeX is really `\\input`-ready: a document with booktabs inputs every table and uses macros."""
    import subprocess

    if not shutil.which("pdflatex"):
        require_tool("pdflatex not installed (make test installs texlive-latex-base texlive-latex-recommended as root)")
    p = KEM.views["macro_prefix"]
    for f in (study / "report" / "ml-kem").glob("*.tex"):
        shutil.copy(f, tmp_path / f.name)
    shutil.copy(study / "report" / "macros.tex", tmp_path / "macros.tex")
    inputs = "\n".join(f"\\input{{{f.stem}}}\n" for f in sorted(tmp_path.glob("table*.tex")))
    (tmp_path / "doc.tex").write_text(
        "\\documentclass{article}\n\\usepackage[utf8]{inputenc}\n\\usepackage{booktabs}\n"
        "\\usepackage[margin=1cm,landscape]{geometry}\n\\input{macros}\n\\begin{document}\n\\tiny\n"
        f"$\\pqsimd{p}SpeedupInvnttMlkemFiveTwelve\\times$ [\\pqsimd{p}SpeedupInvnttMlkemFiveTwelveLow, "
        f"\\pqsimd{p}SpeedupInvnttMlkemFiveTwelveHigh], $\\delta = \\pqsimd{p}DeltaInvnttMlkemFiveTwelve$, "
        "\\pqsimdThreshold\n\n" + inputs + "\\end{document}\n")
    r = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout[-2000:]
    assert "Missing character" not in (tmp_path / "doc.log").read_text()


def test_provenance_condenses_the_engine_manifest_and_spots_a_vm():
    from pqsimd.report.html import _virtualized, provenance
    from pqsimd.results import Results

    manifest = {
        "schema_version": 2, "seed": 7, "executor": "local", "job_order": ["a"] * 500,
        "machine": {"hostname": "n1", "cpu_model": "Xeon", "virtualization": "kvm, in a docker container",
                    "isa": ["avx2", "bmi2"]},
        "compilers": {"gcc": {"version": "gcc 12.2.0"}},
        "builds": {"avx2.gcc.ml-kem": {"variant": "avx2", "compiler": "gcc", "family": "ml-kem",
                                       "flags_used": ["-O3", "-mavx2"], "binary_sha256": "ab" * 32, "passed": True,
                                       "compile_commands": ["gcc ..."] * 100}},
        "driver": {"compiler": {"version": "cc 12"}, "flags": ["-O2"], "sha256": "cd" * 32},
        "jobs": {f"paired.ml-kem-512.{i}": {"hostname": "n1", "cpu_model": "Xeon", "cpu": 3,
                                            "started": f"2026-01-01T00:0{i}", "finished": f"2026-01-01T00:1{i}"}
                 for i in range(3)},
    }
    empty = pd.DataFrame()
    sections = dict(provenance(Results(directory=None, groups=empty, comparisons=empty, decomposition=empty,
                                     manifest=manifest)))
    assert dict(sections["Machine"])["isa"] == "avx2, bmi2"
    v = dict(sections["Builds (variant · compiler · family)"])["avx2 · gcc · ml-kem"]
    assert "-O3 -mavx2" in v and "gcc 12.2.0" in v and "gate passed" in v and "gcc ..." not in v
    assert dict(sections["Jobs"])["jobs recorded"] == "3" and dict(sections["Study"])["seed"] == "7"
    assert "cc 12" in str(sections["Driver (timing code, one fixed toolchain)"])
    assert "job_order" not in str(sections)
    assert _virtualized(manifest) == "kvm"
    assert _virtualized({"machine": {"virtualization": "in a docker container"}}) is None
    assert _virtualized({}) is None


def test_report_names_the_design(tmp_path):
    d = make_fake_study(tmp_path / "p", schemes=["ml-kem-512"], ops=["ntt", "invntt"], jobs=3, spins=8, reps=2,
                        design="paired")
    write_report(d)
    import html as htmllib

    html = htmllib.unescape((d / "report" / "index.html").read_text())
    assert "design: paired" in html and ("medians of the jobs' ratios" in html or "the median over jobs of the job ratios" in html)
    c = pd.read_csv(d / "results" / "comparisons.csv")
    assert set(c["design"]) == {"paired"}


def test_a_failing_optional_part_costs_only_that_part(tmp_path, monkeypatch):
    """The portfolio view raising is named in the report's warnings; the rest of the report is written."""
    from pqsimd.report import portfolio

    d = make_fake_study(tmp_path / "study", ops=OPS, jobs=3, spins=6, reps=2, metrics=("ticks",))

    def broken(study, outdir):
        raise RuntimeError("sabotaged for the test")

    monkeypatch.setattr(portfolio, "portfolio_parts", broken)
    out = write_report(d)
    html = (out / "index.html").read_text()
    assert "portfolio view skipped: RuntimeError: sabotaged for the test" in html
    assert (out / "ml-kem" / "table1_hand_simd.md").exists()


def test_the_energy_section_shows_measured_energy(tmp_path):
    """Low item of issue 29: the report said "this study did not measure energy" for a study that
    did (report/phase2.py never looked at the energy groups)."""
    from synthetic import make_synthetic_study

    from pqsimd.analyze import analyze_study
    from pqsimd.studysets import report_study as write_report

    d = make_synthetic_study(tmp_path / "s", variants=("ref", "avx2"), ops=("ntt",), jobs=3, spins=10, reps=3,
                             metric=("ticks", "energy_package"), medians={"ref": 600.0, "avx2": 60.0},
                             analysis={"n_boot": 200, "seed": 1})
    analyze_study(d)
    write_report(d)
    table = (d / "report" / "mechanism" / "table_energy.md").read_text()
    assert "energy_package" in table and "did not measure energy" not in table
    assert "did not measure energy" not in (d / "report" / "index.html").read_text()


def test_captions_name_the_tool_that_counted_the_instructions():
    """Low item of issue 29: an aarch64 study's counts come from our QEMU plugin, not callgrind; the
    captions say which (results.counting_tool, from the manifest's isa.counting)."""
    from pqsimd.report.phase2 import counters_section
    from pqsimd.results import counting_tool

    a64 = {"isa": {"name": "aarch64", "counting": "qemu-plugin"}}
    x86 = {"isa": {"name": "x86_64", "counting": "callgrind"}}
    assert counting_tool(a64) == "our QEMU plugin" and counting_tool(x86) == counting_tool({}) == "callgrind"
    text = counters_section(pd.DataFrame(), a64, "timer ticks").text
    assert "our QEMU plugin" in text and "callgrind" not in text and "timer ticks" in text and "TSC" not in text
    import pqsimd.report as report_pkg
    from pathlib import Path

    for f in Path(report_pkg.__file__).parent.glob("*.py"):  # no caption hard-codes the x86 tool
        for line in f.read_text().splitlines():
            if "callgrind" in line and "caption" in line:
                assert "counted_by" in line or "counting_tool" in line, (f.name, line)


def test_the_why_list_explains_the_headlines_in_html_and_show_and_says_what_was_not_measured(study):
    """A study with ticks and instructions but no mix: each headline's sentence splits its speedup into
    instructions and time per instruction, the legend defines the tags used, one line names the mix."""
    from rich.console import Console

    from pqsimd.report.terminal import show_study

    ex = pd.read_csv(study / "results" / "explanations.csv")
    fam = ex[ex["family"] == "ml-kem"]
    assert len(fam) and (fam["kind"] == "headline").any()
    top = fam[fam["kind"] == "headline"].iloc[0]
    assert "fewer instructions" in top["sentence"] and "per call, counted)" in top["sentence"], top["sentence"]
    html = (study / "report" / "index.html").read_text()
    assert "Why: the headlines, outliers and slowdowns explained" in html
    assert top["sentence"].replace("'", "&#39;").split(" (measured)")[0] in html
    assert "counted: instructions per call counted exactly under callgrind" in html
    assert "simulated:" not in html.split("Why: the headlines")[1].split("</section>")[0]  # no simulated fact, no legend
    assert f"Not measured: the instruction mix was not measured in this study; `pqsimd run {study} --metric mix`" in html
    con = Console(record=True, width=400, color_system=None)
    show_study(study, console=con)
    out = con.export_text()
    assert "Why (ML-KEM (FIPS 203))" in out and top["sentence"] in out and "not measured: the instruction mix" in out


def test_a_study_with_a_gap_in_the_chain_keeps_the_comparison_over_it_in_the_full_table(tmp_path):
    """Without refnv the analysis compares refo0 → ref (cumulative): the full table shows it as a column (the
    adversarial pass found it in comparisons.csv but in no table); a study with the whole chain gets no such
    column."""
    from report_fake import make_fake_study

    from pqsimd.report.tables import table_full
    from pqsimd.results import load_study

    d = make_fake_study(tmp_path / "gap", schemes=["ml-kem-512"], variants=["refo0", "ref", "avx2"], ops=["ntt", "gen_a"],
                        jobs=3, spins=6, reps=2)
    study = load_study(d)
    t = table_full(study, study.families[0], "ticks")
    assert "refo0→ref" in t.header, t.header
    full = make_fake_study(tmp_path / "full", schemes=["ml-kem-512"], ops=["ntt", "gen_a"], jobs=3, spins=6, reps=2)
    s2 = load_study(full)
    assert not any(h.startswith("refo0→") for h in table_full(s2, s2.families[0], "ticks").header)
