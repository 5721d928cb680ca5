"""Local executor: the study's pending timing jobs, one after another, in plan order, with progress.
(Each job claims its CPU machine-wide while it times: run/cpuclaim.py.)"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.text import Text
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from ..errors import Interrupted, PqsimdError, command, tagged
from ..studydir import StudyDir
from .job import run_job


def execute(directory: Path | StudyDir, jobs: list[dict], study=None, console: Console | None = None,
            weights: dict[str, float] | None = None) -> list[tuple[str, str]]:
    """Run jobs; returns [(job id, error)] for the ones that failed (the rest goes on).
    weights: each job's expected seconds (from the time budgets), so the overall ETA is the budgets'."""
    sd = directory if isinstance(directory, StudyDir) else StudyDir(directory)
    console = console or Console(stderr=True)
    failures: list[tuple[str, str]] = []
    if not jobs:
        return failures
    columns = (TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(), TimeElapsedColumn(),
               TextColumn("eta"), TimeRemainingColumn())
    try:
        with Progress(*columns, console=console, transient=False) as progress:
            w = {j["id"]: max((weights or {}).get(j["id"], 1.0), 1e-3) for j in jobs}
            overall = progress.add_task("all jobs", total=sum(w.values()))
            for job in jobs:
                task = progress.add_task(f"  {job['id']}", total=None)

                def update(done: int, total: int, task=task) -> None:
                    progress.update(task, completed=done, total=total)

                try:
                    run_job(sd, job["id"], progress=update, study=study,
                            notify=lambda line: console.print(Text(line, style="red"), soft_wrap=True))
                except PqsimdError as e:
                    failures.append((job["id"], str(e)))
                    console.print(tagged("failed", "red", str(e)), soft_wrap=True)
                    # a failed job stays pending: the bar counts finished jobs only, so it never reads 100%
                    progress.update(overall, description=f"all jobs ({len(failures)} pending)")
                else:
                    progress.advance(overall, w[job["id"]])
                progress.remove_task(task)
    except KeyboardInterrupt:
        raise Interrupted(f"interrupted: finished jobs are kept in {sd.raw_dir}; {command('run', sd.path)} "
                          f"continues the study") from None
    return failures
