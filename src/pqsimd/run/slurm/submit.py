"""The SLURM executor: the study's pending timing jobs as one job array, followed until done.

* ``execute`` writes ``DIR/slurm/submit-<n>.sbatch`` and ``tasks-<n>.txt`` (script.py), submits
  it with ``sbatch --parsable`` and follows it by polling ``squeue -h -j ID`` (a cheap change
  detector) and ``scontrol -o show job ID`` (per-task state, exit code, node). No ``sbatch --wait``,
  no ``sacct``.
* Each task runs ``<python> -m pqsimd.cli job DIR JOB_ID`` with the absolute path of the Python
  that runs pqsimd. DIR must be on a filesystem shared by the submitting host and the nodes.
* The raw files are the truth: a job is finished by StudyDir.finished, the engine's one rule.
  SLURM's states only explain *why* a job is not.
* Submissions are recorded in ``DIR/slurm/submissions.json``. A new ``execute`` never submits a
  job that is finished or still queued/running in an earlier submission; it follows those instead.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable

from ... import store
from ...errors import PqsimdError, command
from ...studydir import StudyDir
from .cluster import _array_names, check_tools, max_array_size, query_scontrol, query_squeue, submit
from .script import SLURM_SUBDIR, job_name, write_submission_files
from .states import TaskState

SUBMISSIONS = "submissions.json"
# squeue is polled every POLL_SECONDS while things change, backing off to POLL_MAX_SECONDS while
# nothing does (a long study must not hammer slurmctld); both can be set in the environment.
POLL_SECONDS = float(os.environ.get("PQSIMD_SLURM_POLL", "0.2"))
POLL_MAX_SECONDS = float(os.environ.get("PQSIMD_SLURM_POLL_MAX", "5"))
# scontrol is asked at least this often even when squeue shows no change
SCONTROL_REFRESH_SECONDS = 5.0
# give up following the array after this long without an answer from squeue
UNREACHABLE_SECONDS = 300.0


def load_submissions(directory: Path) -> list[dict]:
    path = Path(directory) / SLURM_SUBDIR / SUBMISSIONS
    if not path.is_file():
        return []
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise PqsimdError(f"{path} is not valid JSON ({e}); fix or remove it") from None
    return data.get("submissions", []) if isinstance(data, dict) else []


def _save_submissions(directory: Path, submissions: list[dict]) -> None:
    path = Path(directory) / SLURM_SUBDIR / SUBMISSIONS
    path.parent.mkdir(parents=True, exist_ok=True)
    store.atomic_write_text(path, json.dumps({"submissions": submissions}, indent=2) + "\n")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")




def unfinished_ids(directory: Path, job_ids: Iterable[str]) -> set[str]:
    """The given jobs without a valid raw file made with the study's current binaries
    (StudyDir.finished; node-dependent builds are the ones built on the job's node)."""
    from ... import study as study_mod
    from ..job import expected_binaries

    sd = StudyDir(directory)
    job_ids = set(job_ids)
    try:
        st = study_mod.load(sd)
        jobs = {j["id"]: j for j in sd.plan_jobs() if j["id"] in job_ids}
    except PqsimdError:
        st, jobs = None, {}
    out = set()
    for job in job_ids:
        binaries = expected_binaries(sd, st, jobs[job], slurm=True) if st is not None and job in jobs else None
        if not sd.finished(job, binaries):
            out.add(job)
    return out


@dataclass
class _Tracked:
    """One array being followed: which of its tasks we care about, and what SLURM says."""

    array_id: str
    number: int
    tasks: dict[int, str]  # task id -> job id (only the tasks this execute() follows)
    states: dict[int, TaskState]
    gone: bool = False  # squeue no longer lists any task of it

    def done(self, task: int) -> bool:
        st = self.states.get(task)
        return self.gone or (st is not None and st.terminal)


def _live_tasks(directory: Path, submissions: list[dict]) -> list[_Tracked]:
    """Tasks of earlier submissions that SLURM still has queued or running."""
    ids = [s["array_id"] for s in submissions if s.get("array_id")]
    if not ids:
        return []
    queued = query_squeue(ids)
    if queued is None:
        raise PqsimdError(
            "squeue did not answer; cannot tell which earlier tasks still run. "
            f"Try again, or {command('slurm', 'cancel', directory)} first"
        )
    names = _array_names([a for a in ids if str(a) in queued])
    tracked = []
    for sub in submissions:
        entries = queued.get(str(sub.get("array_id")), [])
        if not entries:
            continue
        # job ids restart when a cluster is rebuilt: only an array with our name is ours
        if sub.get("job_name") and names.get(str(sub["array_id"]), sub["job_name"]) != sub["job_name"]:
            continue
        jobs = sub.get("tasks", [])
        tasks: dict[int, str] = {}
        states: dict[int, TaskState] = {}
        for ids_, state in entries:
            for t in ids_:
                if 0 <= t < len(jobs):
                    tasks[t] = jobs[t]
                    states[t] = TaskState(task=t, state=state, array_id=str(sub["array_id"]))
        if tasks:
            tracked.append(_Tracked(str(sub["array_id"]), int(sub.get("number", 0)), tasks, states))
    return tracked


def refuse_while_in_flight(directory: Path) -> None:
    """A local run of a study whose SLURM tasks are still queued or running (its follower was
    interrupted) would time those jobs a second time and keep both: refused in one line, naming
    what to do. Without squeue here no cluster of this study is reachable, so nothing is refused."""
    import shutil

    submissions = load_submissions(directory)
    if not submissions or shutil.which("squeue") is None:
        return
    tracked = _live_tasks(directory, submissions)
    jobs = sum(len(t.tasks) for t in tracked)
    if jobs:
        raise PqsimdError(
            f"{jobs} job(s) of {directory} are still queued or running on SLURM (array "
            f"{', '.join(t.array_id for t in tracked)}); a local run would time them twice: follow them with "
            f"{command('run', directory, '--executor', 'slurm')}, wait for them "
            f"({command('slurm', 'status', directory)}), or stop them ({command('slurm', 'cancel', directory)})")


@contextmanager
def _defer_sigint():
    """Hold a Ctrl-C until the block is over (main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt


def _log_path(directory: Path, array_id: str, task: int) -> Path:
    return Path(directory).resolve() / "logs" / "slurm" / f"{array_id}_{task}.out"


def _last_error_line(path: Path) -> str | None:
    """The last meaningful line of a task log (pqsimd's one-line error, or slurmstepd's note)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - 8192))
            tail = fh.read().decode("utf-8", "replace")
    except OSError:
        return None
    for line in reversed(tail.splitlines()):
        line = line.strip()
        if line and not line.startswith("pqsimd: array task"):
            return line[:300]
    return None


def failure_line(directory: Path, array_id: str, task: int, job_id: str, state: TaskState | None) -> str:
    """One line naming the task, the job, the node and what went wrong."""
    node = state.node if state and state.node else "no node"
    if state is None or state.state == "UNKNOWN":
        what = state.reason if state and state.reason else "state unknown (slurmctld no longer knows the task)"
    elif state.state == "COMPLETED":
        what = "exited 0 but left no valid raw file"
    else:
        what = state.describe()
    line = f"task {array_id}_{task} (job {job_id}) on {node}: {what}"
    log = _log_path(directory, array_id, task)
    last = _last_error_line(log)
    if last:
        line += f": {last}"
    if log.exists():
        line += f"  [log {log}]"
    return line


def execute(directory: Path | StudyDir, jobs: list[dict], options: dict) -> bool:
    """Run ``jobs`` (the pending jobs, plan order) as a SLURM job array; True if all finished."""
    from rich.console import Console

    directory = Path(directory.path if isinstance(directory, StudyDir) else directory).resolve()
    options = dict(options or {})
    console = Console(stderr=True, highlight=False)
    check_tools()

    submissions = load_submissions(directory)
    tracked = _live_tasks(directory, submissions)
    in_flight = {job for t in tracked for job in t.tasks.values()}
    wanted = [j for j in jobs if j["id"] not in in_flight]
    followed_ids = {j["id"] for j in jobs} | in_flight
    if in_flight:
        arrays = ", ".join(t.array_id for t in tracked)
        console.print(f"slurm: following {len(in_flight)} job(s) still queued or running in array {arrays}")

    try:
        chunk = max_array_size() if wanted else 1
        for first in range(0, len(wanted), chunk):
            part = wanted[first : first + chunk]
            number = max((int(s.get("number", 0)) for s in submissions), default=0) + 1
            script, tasks_file = write_submission_files(directory, number, part, options, options.get("command"))
            with _defer_sigint():  # a Ctrl-C here must not lose the record of a submitted array
                array_id = submit(script)
                submissions.append(
                    {
                        "number": number,
                        "array_id": array_id,
                        "job_name": job_name(directory),
                        "submitted": _now(),
                        "script": str(script),
                        "tasks_file": str(tasks_file),
                        "tasks": [j["id"] for j in part],
                        "options": {
                            k: (list(v) if isinstance(v, tuple) else v) for k, v in options.items() if k != "command"
                        },
                    }
                )
                _save_submissions(directory, submissions)
                tracked.append(
                    _Tracked(
                        array_id,
                        number,
                        {i: j["id"] for i, j in enumerate(part)},
                        {i: TaskState(task=i, state="PENDING", array_id=array_id) for i in range(len(part))},
                    )
                )
            console.print(f"slurm: submitted array {array_id} ({len(part)} task(s)): {script}", markup=False)
        if tracked:
            _follow(tracked, console)
    except KeyboardInterrupt:
        if tracked:
            arrays = ", ".join(t.array_id for t in tracked)
            console.print(
                f"slurm: array {arrays} keeps running on the cluster; {command('slurm', 'status', directory)} "
                f"shows it, {command('slurm', 'cancel', directory)} stops it, "
                f"{command('run', directory, '--executor', 'slurm')} follows it again",
                markup=False,
                soft_wrap=True,
            )
        raise

    unfinished = unfinished_ids(directory, followed_ids)
    total = len(followed_ids)
    if not unfinished:
        console.print(f"slurm: {total}/{total} job(s) finished")
        return True
    where: dict[str, tuple[_Tracked, int]] = {}
    for t in tracked:
        for task, job in t.tasks.items():
            where[job] = (t, task)
    order = {j["id"]: i for i, j in enumerate(jobs)}
    console.print(f"slurm: {len(unfinished)} of {total} job(s) did not finish:")
    for job in sorted(unfinished, key=lambda j: order.get(j, len(order))):
        if job in where:
            t, task = where[job]
            line = failure_line(directory, t.array_id, task, job, t.states.get(task))
        else:
            line = f"job {job}: not submitted"
        console.print("  " + line, soft_wrap=True, markup=False)
    console.print(f"slurm: {command('run', directory, '--executor', 'slurm')} resubmits only these", markup=False, soft_wrap=True)
    return False


def _follow(tracked: list[_Tracked], console) -> None:
    """Poll squeue (every POLL_SECONDS) and scontrol (on change) until every task is done."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    total = sum(len(t.tasks) for t in tracked)
    last_seen: dict[str, list] | None = None
    last_scontrol = 0.0
    last_answer = time.monotonic()
    interval = POLL_SECONDS
    with Progress(
        TextColumn("[bold]slurm[/bold] {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    ) as progress:
        bar = progress.add_task(_describe(tracked), total=total)
        while True:
            live = [t for t in tracked if not t.gone]
            queued = query_squeue([t.array_id for t in live]) if live else {}
            now = time.monotonic()
            if queued is None:
                if now - last_answer > UNREACHABLE_SECONDS:
                    raise PqsimdError(
                        f"squeue has not answered for {UNREACHABLE_SECONDS:.0f} s; the tasks may still run. "
                        "`pqsimd slurm status DIR` shows them; rerun `pqsimd run DIR --executor slurm` to follow them"
                    )
                time.sleep(min(2.0, POLL_SECONDS * 10))
                continue
            last_answer = now
            seen = {a: sorted((tuple(ids), s) for ids, s in entries) for a, entries in queued.items()}
            changed = seen != last_seen
            for t in live:
                if t.array_id not in queued:
                    t.gone = True
                    changed = True
            if changed or now - last_scontrol > SCONTROL_REFRESH_SECONDS:
                last_scontrol = now
                for t in tracked:
                    if t.gone and all(t.states.get(k) is not None and t.states[k].terminal for k in t.tasks):
                        continue
                    states = query_scontrol(t.array_id)
                    if states is None:
                        continue
                    for k in t.tasks:
                        if k in states:
                            t.states[k] = states[k]
                        elif t.gone and not (t.states.get(k) and t.states[k].terminal):
                            # a task scancel'ed while pending leaves no record; a purged array none at all
                            why = "left the queue without starting (scancel while pending?)" if states else None
                            t.states[k] = TaskState(task=k, state="UNKNOWN", array_id=t.array_id, reason=why)
            else:
                # squeue's view is enough to keep the running/pending picture fresh
                for t in live:
                    for ids, state in queued.get(t.array_id, []):
                        for k in ids:
                            if k in t.tasks and not (t.states.get(k) and t.states[k].terminal):
                                t.states.setdefault(k, TaskState(task=k, state=state, array_id=t.array_id)).state = state
            last_seen = seen
            done = sum(1 for t in tracked for k in t.tasks if t.done(k))
            progress.update(bar, completed=done, description=_describe(tracked))
            if all(t.gone for t in tracked):
                break
            interval = POLL_SECONDS if changed else min(max(POLL_SECONDS, POLL_MAX_SECONDS), interval * 1.5)
            time.sleep(interval)


def _describe(tracked: list[_Tracked]) -> str:
    counts: dict[str, int] = {}
    for t in tracked:
        for k in t.tasks:
            st = t.states.get(k)
            state = st.state if st else "PENDING"
            counts[state] = counts.get(state, 0) + 1
    arrays = ",".join(t.array_id for t in tracked)
    order = ["RUNNING", "PENDING", "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"]
    parts = [f"{counts.pop(s)} {s.lower()}" for s in order if s in counts]
    # why tasks wait, when it is not just the queue (e.g. ReqNodeNotAvail, PartitionConfig)
    reasons = sorted(
        {
            st.reason
            for t in tracked
            for k in t.tasks
            if (st := t.states.get(k)) and st.state == "PENDING" and st.reason
            and st.reason not in ("None", "Resources", "Priority", "BeginTime", "JobArrayTaskLimit")
        }
    )
    if reasons:
        parts.append("waiting: " + "; ".join(reasons)[:80])
    parts += [f"{n} {s.lower()}" for s, n in sorted(counts.items())]
    from rich.markup import escape

    return escape(f"{arrays}: " + ", ".join(parts))
