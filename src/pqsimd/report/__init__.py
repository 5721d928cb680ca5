"""`pqsimd report DIR`: figures, tables, macros.tex and one self-contained index.html in DIR/report/."""

from __future__ import annotations

import importlib
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


def _optional(what: str, module: str, make: str, empty: tuple, study, outdir: Path, notes: list[str]) -> tuple:
    """One optional part of the report (`make` of report/<module>.py): a failure costs only that part,
    named in the report's warnings, never the whole report."""
    try:
        return getattr(importlib.import_module(f".{module}", __package__), make)(study, outdir)
    except Exception as e:
        notes.append(f"{what} skipped: {e.__class__.__name__}: {e}")
        return empty


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
    from ..analyze.crossisa import remove_cross_isa, write_cross_isa

    if beside is not None:
        _ensure_results(check_study_dir(Path(beside)))
        write_cross_isa(directory, Path(beside))
    else:  # the view of an earlier --beside is not this report's
        remove_cross_isa(directory)
    from ..results import has_comparisons
    from . import ct as ct_view

    if not has_comparisons(directory) and ct_view.has_ct(directory):
        return ct_view.write_alone(directory)  # a study that only tested constant time
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
    # instructions vs time, counters, energy
    p2_figs, p2_tabs = _optional("phase-2 parts (instructions vs time, counters, energy)", "phase2", "report_parts",
                                 ([], []), study, outdir, notes)
    # simulated cache and branch events, the bottlenecks; the paper's claims with --reference paper
    why_figs, why_tabs = _optional("simulated counter breakdown and bottlenecks", "why", "why_parts", ([], []),
                                   study, outdir, notes)
    if reference == "paper":
        why_tabs += _optional("claims section", "why", "claims_parts", [], study, outdir, notes)
    p2_figs, p2_tabs = p2_figs + why_figs, [t for t, _ in p2_tabs + why_tabs]
    mix_figs, mix_tabs, findings = _optional("instruction-mix parts", "mechanism", "mechanism_parts", ([], [], {}),
                                             study, outdir, notes)  # instruction mix, cost model
    # kernel groups' shares of an ablated implementation
    attr = _optional("attribution parts", "attribution", "attribution_parts", ([], [], {}), study, outdir, notes)
    # the hand-SIMD factor across families, by kind of mathematics
    port = _optional("portfolio view", "portfolio", "portfolio_parts", ([], []), study, outdir, notes)
    # whose speedup is it: implementations side by side, and a family's counterpart
    cimpl = _optional("cross-implementation view", "crossimpl", "crossimpl_parts", ([], []), study, outdir, notes)
    # hand SIMD on each ISA, when results/ has the cross-ISA tables
    cross = _optional("cross-ISA view", "crossisa", "crossisa_parts", ([], [], []), study, outdir, notes)
    # ops ranked by how much the code's layout moved them
    lay_figs, lay_tabs = _optional("layout sensitivity", "layout", "layout_parts", ([], []), study, outdir, notes)
    lay_tabs = [t for t, _ in lay_tabs]
    # what SIMD costs besides time: stack and code size beside the speedup
    lay_tabs += _optional("stack and code size", "footprint", "parts", [], study, outdir, notes)
    html.write_html(study, outdir, figs, tabs, notes, reference=reference,
                    extra_figures=p2_figs + mix_figs + lay_figs, extra_tables=p2_tabs + mix_tabs + lay_tabs, findings=findings, attribution=attr, portfolio=port,
                    cross_isa=cross, cross_impl=cimpl)
    return outdir
