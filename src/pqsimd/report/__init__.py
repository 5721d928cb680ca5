"""`pqsimd report DIR`: figures, tables, macros.tex and one self-contained index.html in DIR/report/, from
DIR/results/ alone (analysed first by the command line's layer, studysets.report_study: the report imports
nothing from analyze/)."""

from __future__ import annotations

from pathlib import Path

from ..errors import PqsimdError, command
from ..studydir import StudyDir
from ..results import counts_only_results

REFERENCES = (None, "paper")


def has_results(directory: Path) -> bool:
    results = StudyDir(directory).results_dir
    # comparisons, the verdicts of a study that only tested constant time, or counts alone (mix, sim, hazards)
    return (any((results / f"{name}.{x}").exists() for name in ("comparisons", "constant_time") for x in ("parquet", "csv"))
            or counts_only_results(results))


def check_reference(reference: str | None) -> None:
    if reference not in REFERENCES:
        raise PqsimdError(f"unknown reference {reference!r}; use --reference paper or leave it out")


def _require_results(directory: Path) -> None:
    if has_results(directory):
        return
    if not StudyDir(directory).has_data():
        raise PqsimdError(f"{directory} has neither results/ nor raw/*.parquet; run {command('run', directory)} first")
    raise PqsimdError(f"{directory} is not analysed yet; run {command('analyze', directory)} first")


def write_report(directory, reference: str | None = None) -> Path:
    """Write DIR/report/ from DIR/results/ (which studysets.report_study analyses first when missing, with
    the cross-ISA tables of a --beside study); return its path."""
    from . import figures, html, macros, tables
    from .files import write_text
    from ..results import check_study_dir, load_study

    check_reference(reference)
    directory = check_study_dir(Path(directory))
    _require_results(directory)
    from ..results import has_comparisons
    from . import ct as ct_view

    if not has_comparisons(directory) and ct_view.has_ct(directory):
        return ct_view.write_alone(directory)  # a study that only tested constant time
    study = load_study(directory)
    if study.comparisons.empty and study.counts_only:  # counts alone: the views of what was counted
        from .parts import make_all

        outdir = StudyDir(directory).report_dir
        outdir.mkdir(parents=True, exist_ok=True)
        notes = ["counts only (no timing in this study): the views of what it counted; results/*.csv hold every count"]
        html.write_html(study, outdir, [], [], notes, reference=reference, made=make_all(study, outdir, notes, reference))
        return outdir
    if study.comparisons.empty:
        raise PqsimdError(f"{directory / 'results'} holds no comparisons (a study needs at least two variants); "
                          f"add variants with {command('run', directory, '--variants', 'a,b')}")
    outdir = StudyDir(directory).report_dir
    outdir.mkdir(parents=True, exist_ok=True)
    notes: list[str] = []
    figs = figures.make_figures(study, outdir, notes)
    tabs = [t for t, _ in tables.make_tables(study, outdir, reference=reference)]
    write_text(outdir / "macros.tex", macros.build_macros(study).render())
    # the registered views (report/parts.py): each makes its figures and tables; a failure costs only that part
    from .parts import make_all

    made = make_all(study, outdir, notes, reference)
    html.write_html(study, outdir, figs, tabs, notes, reference=reference, made=made)
    return outdir
