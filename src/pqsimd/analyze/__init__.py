"""`pqsimd analyze DIR`: spin medians → groups, comparisons, decomposition, summary in DIR/results/.

The front door (`analyze_study`); the analysis itself is steps.py's ordered sequence of steps, fed
by the study's records (context.py) and writing summary.json's records (records.py); the statistics
are stats/'s."""

from __future__ import annotations

from pathlib import Path

from ..analysis_settings import Settings
from ..errors import PqsimdError
from ..studydir import StudyDir
from . import steps
from .write import staged_results

__all__ = ["analyze_study", "Settings"]


def analyze_study(directory: Path, n_boot: int | None = None, seed: int | None = None,
                  adjust: str | None = None) -> Path:
    """Analyse DIR/raw into DIR/results/ (groups, comparisons, decomposition, jobs, aa, ... + summary.json);
    return DIR/results. Bad input is a one-line PqsimdError. The tables are written into a new folder
    that replaces results/ whole when all of them are written: a failure (a full disk, an error)
    leaves the previous results, or none, never a mix that reads as complete."""
    directory = Path(directory)
    if not directory.is_dir():
        raise PqsimdError(f"no study directory at {directory}; create one with `pqsimd run {directory}`")
    StudyDir(directory).refuse_analysed_elsewhere("analysed again")
    final = StudyDir(directory).results_dir
    with staged_results(final) as results:
        _analyze(directory, results, n_boot, seed, adjust)
    return final


def _analyze(directory: Path, results: Path, n_boot: int | None, seed: int | None, adjust: str | None = None) -> None:
    analysis = steps.start(directory, results, n_boot, seed, adjust)
    if analysis.mix_only:
        steps.write_mix_only(analysis)
        return
    for step in steps.STEPS:
        step(analysis)
        analysis.lap(step.__name__)
