"""`pqsimd slurm status` and `pqsimd slurm cancel`."""

from __future__ import annotations

import shutil
from pathlib import Path

from ...errors import PqsimdError, command
from ...studydir import StudyDir
from .cluster import query_scontrol, scancel
from .submit import _live_tasks, failure_line, load_submissions, unfinished_ids

def _study_dir(directory: Path) -> Path:
    directory = Path(directory).resolve()
    if not StudyDir(directory).is_study():
        raise PqsimdError(f"{directory} holds no study (no study.toml, plan.json or slurm/); give the directory `pqsimd run DIR` made")
    return directory


def status(directory: Path) -> None:
    """Print the raw-file tally, the study's SLURM submissions and their unfinished tasks."""
    from ...console import stdout_console
    from rich.markup import escape
    from rich.table import Table

    directory = _study_dir(directory)
    console = stdout_console(highlight=False)
    unfinished: set[str] | None = None
    try:
        plan_ids = [j["id"] for j in StudyDir(directory).plan_jobs()]
        unfinished = unfinished_ids(directory, plan_ids)
        console.print(f"{directory}: {len(plan_ids) - len(unfinished)}/{len(plan_ids)} job(s) finished (valid raw files)", markup=False, soft_wrap=True)
    except PqsimdError as e:
        console.print(str(e), markup=False)
    submissions = load_submissions(directory)
    if not submissions:
        console.print("no SLURM submissions recorded (DIR/slurm/submissions.json)")
        return
    have_tools = shutil.which("scontrol") is not None
    if not have_tools:
        console.print("scontrol not found: showing the recorded submissions only")
    table = Table("#", "array", "submitted", "tasks", "SLURM states")
    problems: dict[str, str] = {}  # job -> latest line about it
    for sub in submissions:
        array_id = str(sub.get("array_id"))
        jobs = sub.get("tasks", [])
        states = query_scontrol(array_id) if have_tools else None
        if states is None:
            summary = "?"
        elif not states:
            summary = "no longer known to slurmctld (MinJobAge)"
        else:
            counts: dict[str, int] = {}
            for st in states.values():
                counts[st.state] = counts.get(st.state, 0) + 1
            summary = ", ".join(f"{n} {s.lower()}" for s, n in sorted(counts.items()))
            waiting = sorted({st.reason for st in states.values() if st.state == "PENDING" and st.reason
                              and st.reason not in ("None", "Resources", "Priority")})
            if waiting:
                summary += f" (waiting: {'; '.join(waiting)})"
            for k, st in sorted(states.items()):
                if k >= len(jobs):
                    continue
                job = jobs[k]
                if unfinished is not None and job not in unfinished:
                    problems.pop(job, None)
                elif st.terminal:
                    problems[job] = failure_line(directory, array_id, k, job, st)
                else:
                    problems.pop(job, None)
        table.add_row(str(sub.get("number", "")), array_id, str(sub.get("submitted", "")), str(len(jobs)), escape(summary))
    console.print(table)
    if problems:
        console.print(f"{len(problems)} unfinished job(s) whose last task ended:")
        for line in problems.values():
            console.print("  " + line, markup=False, soft_wrap=True)
        console.print(f"{command('run', directory, '--executor', 'slurm')} resubmits them", markup=False, soft_wrap=True)


def cancel(directory: Path) -> None:
    """scancel the study's arrays that still have queued or running tasks."""
    directory = _study_dir(directory)
    submissions = load_submissions(directory)
    if not submissions:
        print("no SLURM submissions recorded for this study; nothing to cancel")
        return
    live = _live_tasks(directory, submissions)
    if not live:
        print("no queued or running tasks; nothing to cancel")
        return
    for t in live:
        scancel(t.array_id)
        print(f"cancelled array {t.array_id} ({len(t.tasks)} task(s) queued or running)")
    print(f"finished raw files are kept; {command('run', directory, '--executor', 'slurm')} resubmits the rest")
