"""Local executor: the study's pending jobs, one after another, in plan order, with progress."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from ..errors import PqsimdError
from .job import run_job


def execute(directory: Path, jobs: list[dict], console: Console | None = None) -> list[tuple[str, str]]:
    """Run jobs; returns [(job id, error)] for the ones that failed (the rest goes on)."""
    console = console or Console(stderr=True)
    failures: list[tuple[str, str]] = []
    if not jobs:
        return failures
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=False) as progress:
        overall = progress.add_task("all jobs", total=len(jobs))
        for job in jobs:
            task = progress.add_task(f"  {job['id']}", total=None)

            def update(done: int, total: int, task=task) -> None:
                progress.update(task, completed=done, total=total)

            try:
                run_job(directory, job["id"], progress=update)
            except PqsimdError as e:
                failures.append((job["id"], str(e)))
                console.print(f"[red]failed[/red] {e}")
            progress.remove_task(task)
            progress.advance(overall)
    return failures
