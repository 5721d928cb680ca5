"""Local executor: the study's pending timing jobs, one after another, in plan order, with progress.

Two studies timing on the same CPU at once would slow each other: a machine-wide lock per CPU
(in the system's temporary directory) makes the second one warn."""

from __future__ import annotations

import fcntl
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from rich.console import Console
from rich.text import Text
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from ..errors import Interrupted, PqsimdError, command, tagged
from ..studydir import StudyDir
from .job import pick_cpu, run_job


def cpu_lock_path(cpu: int) -> Path:
    return Path(tempfile.gettempdir()) / f"pqsimd-cpu{cpu}.lock"


@contextmanager
def cpu_guard(cpu: int, study_path: Path, console: Console) -> Iterator[None]:
    """Hold the machine-wide lock of `cpu`; if another study holds it, say so (and go on)."""
    path = cpu_lock_path(cpu)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()} {study_path}\n".encode(), 0)
        except BlockingIOError:
            holder = os.pread(fd, 4096, 0).decode(errors="replace").strip() or "another process"
            console.print(tagged("warning", "yellow", f": CPU {cpu} is being timed by another pqsimd study "
                          f"(pid and directory: {holder}); both will read slow. Use --cpu N for another CPU."),
                          soft_wrap=True)
        yield
    finally:
        os.close(fd)


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
    cpu = pick_cpu(study) if study is not None else max(os.sched_getaffinity(0))
    try:
        with cpu_guard(cpu, sd.path, console), Progress(*columns, console=console, transient=False) as progress:
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
                progress.remove_task(task)
                progress.advance(overall, w[job["id"]])
    except KeyboardInterrupt:
        raise Interrupted(f"interrupted: finished jobs are kept in {sd.raw_dir}; {command('run', sd.path)} "
                          f"continues the study") from None
    return failures
