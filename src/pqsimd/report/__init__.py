"""`pqsimd report DIR`: figures, tables, macros.tex and one self-contained index.html in DIR/report/."""

from __future__ import annotations

from pathlib import Path

from ..errors import PqsimdError, command
from ..studydir import StudyDir

REFERENCES = (None, "paper")


def _ensure_results(directory: Path) -> None:
    results = StudyDir(directory).results_dir
    if any((results / f"comparisons.{x}").exists() for x in ("parquet", "csv")):
        return
    if not StudyDir(directory).has_data():
        raise PqsimdError(f"{directory} has neither results/ nor raw/*.parquet; run {command('run', directory)} first")
    from ..analyze import analyze_study

    analyze_study(directory)


def _phase2(study, outdir: Path, notes: list[str]) -> tuple[list, list]:
    """Instructions beside time, counters, energy (report/phase2.py) as report figures and tables."""
    try:
        from .phase2 import report_parts

        figs, tabs = report_parts(study, outdir)
        return figs, [t for t, _ in tabs]
    except Exception as e:  # an optional part must never cost the whole report
        notes.append(f"phase-2 parts (instructions vs time, counters, energy) skipped: {e.__class__.__name__}: {e}")
        return [], []


def _mechanism(study, outdir: Path, notes: list[str]) -> tuple[list, list, dict]:
    """The instruction mix (report/mechanism.py): figures, tables, findings per family."""
    try:
        from .mechanism import mechanism_parts

        return mechanism_parts(study, outdir)
    except Exception as e:  # an optional part must never cost the whole report
        notes.append(f"instruction-mix parts skipped: {e.__class__.__name__}: {e}")
        return [], [], {}


def _attribution(study, outdir: Path, notes: list[str]) -> tuple[list, list, dict]:
    """Where inside an implementation the speedup comes from (report/attribution.py), if ablated."""
    try:
        from .attribution import attribution_parts

        return attribution_parts(study, outdir)
    except Exception as e:  # an optional part must never cost the whole report
        notes.append(f"attribution parts skipped: {e.__class__.__name__}: {e}")
        return [], [], {}


def _portfolio(study, outdir: Path, notes: list[str]) -> tuple[list, list]:
    """Where SIMD helps across the study's families (report/portfolio.py)."""
    try:
        from .portfolio import portfolio_parts

        return portfolio_parts(study, outdir)
    except Exception as e:  # an optional part must never cost the whole report
        notes.append(f"portfolio view skipped: {e.__class__.__name__}: {e}")
        return [], []


def _cross_isa(study, outdir: Path, notes: list[str]) -> tuple[list, list, list[str]]:
    """Hand SIMD on this study's ISA beside another's (report/crossisa.py), if --beside gave one."""
    try:
        from .crossisa import crossisa_parts

        return crossisa_parts(study, outdir)
    except Exception as e:  # an optional part must never cost the whole report
        notes.append(f"cross-ISA view skipped: {e.__class__.__name__}: {e}")
        return [], [], []


def write_report(directory, reference: str | None = None, beside: Path | None = None) -> Path:
    """Write DIR/report/ (running the analysis first if DIR/results/ is missing); return its path.
    `beside`: a study of another ISA, whose cross-ISA tables analyze writes first."""
    from . import figures, html, macros, tables
    from .files import write_text
    from ..results import check_study_dir, load_study

    if reference not in REFERENCES:
        raise PqsimdError(f"unknown reference {reference!r}; use --reference paper or leave it out")
    directory = check_study_dir(Path(directory))
    _ensure_results(directory)
    if beside is not None:
        from ..analyze.crossisa import write_cross_isa

        _ensure_results(check_study_dir(Path(beside)))
        write_cross_isa(directory, Path(beside))
    study = load_study(directory)
    if study.comparisons.empty:
        raise PqsimdError(f"{directory / 'results'} holds no comparisons (a study needs at least two variants); "
                          f"add variants with {command('run', directory, '--variants', 'a,b')}")
    outdir = StudyDir(directory).report_dir
    outdir.mkdir(parents=True, exist_ok=True)
    notes: list[str] = []
    figs = figures.make_figures(study, outdir, notes)
    tabs = [t for t, _ in tables.make_tables(study, outdir, reference=reference)]
    write_text(outdir / "macros.tex", macros.build_macros(study).render())
    p2_figs, p2_tabs = _phase2(study, outdir, notes)  # instructions vs time, counters, energy
    mix_figs, mix_tabs, findings = _mechanism(study, outdir, notes)  # instruction mix, cost model
    attr = _attribution(study, outdir, notes)  # kernel groups' shares of an ablated implementation
    port = _portfolio(study, outdir, notes)  # the hand-SIMD factor across families, by kind of mathematics
    cross = _cross_isa(study, outdir, notes)  # hand SIMD on each ISA, when results/ has the cross-ISA tables
    html.write_html(study, outdir, figs, tabs, notes, reference=reference, extra_figures=p2_figs + mix_figs,
                    extra_tables=p2_tabs + mix_tabs, findings=findings, attribution=attr, portfolio=port,
                    cross_isa=cross)
    return outdir
