"""The SLURM executor: the study's pending jobs as one SLURM job array.

What it does, and what it relies on:

* ``execute`` writes a readable sbatch script ``DIR/slurm/submit-<n>.sbatch`` plus the task list
  ``DIR/slurm/tasks-<n>.txt`` (line ``i+1`` = the job of array task ``i``, in plan order), submits
  it with ``sbatch --parsable``, and follows it by polling ``squeue -h -j ID`` (cheap change
  detector) and ``scontrol -o show job ID`` (per-task state, exit code, node). No ``sbatch
  --wait``, no ``sacct``.
* Each task runs ``<python> -m pqsimd.cli job DIR JOB_ID`` with the absolute path of the Python
  that runs pqsimd, so nothing has to be activated on the node. DIR must be on a filesystem shared
  by the submitting host and the nodes, at the same absolute path.
* The raw files are the truth: a job is finished when ``DIR/raw/<job>.parquet`` is there and
  valid (``pqsimd.run.plan.pending_jobs``). SLURM's states only explain *why* a job is not.
* Submissions are recorded in ``DIR/slurm/submissions.json``. A new ``execute`` never submits a
  job that is finished or still queued/running in an earlier submission; it follows those instead.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable

from .. import store
from ..errors import PqsimdError

SLURM_SUBDIR = "slurm"
SUBMISSIONS = "submissions.json"
# squeue is polled every POLL_SECONDS while things change, backing off to POLL_MAX_SECONDS while
# nothing does (a long study must not hammer slurmctld); both can be set in the environment.
POLL_SECONDS = float(os.environ.get("PQSIMD_SLURM_POLL", "0.2"))
POLL_MAX_SECONDS = float(os.environ.get("PQSIMD_SLURM_POLL_MAX", "5"))
# scontrol is asked at least this often even when squeue shows no change
SCONTROL_REFRESH_SECONDS = 5.0
# give up following the array after this long without an answer from squeue
UNREACHABLE_SECONDS = 300.0

# Job states after which a task will not run again on its own (see squeue(1) "JOB STATE CODES").
TERMINAL_STATES = frozenset(
    {
        "COMPLETED",
        "FAILED",
        "CANCELLED",
        "TIMEOUT",
        "NODE_FAIL",
        "PREEMPTED",
        "OUT_OF_MEMORY",
        "BOOT_FAIL",
        "DEADLINE",
        "REVOKED",
        "SPECIAL_EXIT",
    }
)
ACTIVE_STATES = frozenset(
    {
        "PENDING",
        "RUNNING",
        "CONFIGURING",
        "COMPLETING",
        "SUSPENDED",
        "REQUEUED",
        "REQUEUE_FED",
        "REQUEUE_HOLD",
        "RESIZING",
        "SIGNALING",
        "STAGE_OUT",
        "STOPPED",
        "RESV_DEL_HOLD",
    }
)

_MISSING_TOOL = (
    "{tool} not found: install the SLURM client tools (sbatch, squeue, scontrol, scancel) "
    "on this host, or use --executor local"
)


# --------------------------------------------------------------------------------------------
# parsing squeue / scontrol output
# --------------------------------------------------------------------------------------------


@dataclass
class TaskState:
    """What SLURM says about one array task."""

    task: int
    state: str  # PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT, ..., or UNKNOWN
    array_id: str = ""
    job_id: str = ""  # the task's own SLURM job id (JobId=)
    exit_code: int | None = None
    signal: int | None = None
    node: str | None = None
    reason: str | None = None
    restarts: int = 0

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_STATES

    @property
    def active(self) -> bool:
        return self.state in ACTIVE_STATES

    def describe(self) -> str:
        text = self.state
        if self.state != "COMPLETED" and self.exit_code is not None:
            if self.signal:
                text += f" (exit {self.exit_code}, signal {self.signal})"
            elif self.exit_code:
                text += f" (exit {self.exit_code})"
        if self.reason and self.reason not in ("None", "NonZeroExitCode") and not self.terminal:
            text += f" [{self.reason}]"
        return text


_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9_:/]*=")


def parse_scontrol_records(text: str) -> list[dict[str, str]]:
    """``scontrol -o show job`` output -> one dict per line (key=value pairs).

    Values may contain spaces (``Reason=(ReqNodeNotAvail, ...)``, ``Comment=``): a token that
    does not start a new ``Key=`` is appended to the previous value.
    """
    records = []
    for line in text.splitlines():
        line = line.strip()
        if not line or "=" not in line:
            continue
        record: dict[str, str] = {}
        last = None
        for token in line.split(" "):
            if _KEY.match(token):
                key, _, value = token.partition("=")
                if key in record:  # a repeated key (rare): keep the first, like scontrol's order
                    last = None
                    continue
                record[key] = value
                last = key
            elif last is not None:
                record[last] += " " + token
        records.append(record)
    return records


def expand_task_ids(spec: str) -> list[int]:
    """An array task expression -> task ids: ``3``, ``0-4``, ``[1,3,5-7]``, ``0-9:2``, ``2-7%2``."""
    spec = spec.strip()
    if "_" in spec:  # "123_[0-4]" as squeue prints it
        spec = spec.split("_", 1)[1]
    spec = spec.strip("[]")
    spec = spec.split("%", 1)[0]  # throttle
    ids: list[int] = []
    for part in spec.split(","):
        part = part.strip()
        if not part:
            continue
        step = 1
        if ":" in part:
            part, step_text = part.split(":", 1)
            step = int(step_text)
        if "-" in part:
            lo, hi = part.split("-", 1)
            ids.extend(range(int(lo), int(hi) + 1, step))
        else:
            ids.append(int(part))
    return ids


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def task_states(records: Iterable[dict[str, str]]) -> dict[int, TaskState]:
    """Per-task states from ``scontrol -o show job ARRAY_ID`` records.

    A pending array is one record whose ``ArrayTaskId`` is a range; every started task has its
    own record with its own ``JobId``.
    """
    states: dict[int, TaskState] = {}
    for rec in records:
        spec = rec.get("ArrayTaskId")
        if not spec or spec in ("N/A", "(null)"):
            continue
        state = rec.get("JobState", "UNKNOWN").split(" ")[0] or "UNKNOWN"
        exit_code = signal = None
        if "ExitCode" in rec and ":" in rec["ExitCode"]:
            e, s = rec["ExitCode"].split(":", 1)
            exit_code, signal = _int(e), _int(s)
        node = rec.get("NodeList")
        if node in (None, "", "(null)"):
            node = rec.get("BatchHost") if rec.get("BatchHost") not in (None, "", "(null)") else None
        for task in expand_task_ids(spec):
            states[task] = TaskState(
                task=task,
                state=state,
                array_id=rec.get("ArrayJobId", ""),
                job_id=rec.get("JobId", ""),
                exit_code=exit_code,
                signal=signal,
                node=node,
                reason=rec.get("Reason"),
                restarts=_int(rec.get("Restarts")) or 0,
            )
    return states


def parse_squeue(text: str) -> dict[str, list[tuple[list[int], str]]]:
    """``squeue -h -o '%i %T'`` output -> {array_id: [(task ids, state), ...]}."""
    out: dict[str, list[tuple[list[int], str]]] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 2 or "_" not in parts[0]:
            continue
        array_id = parts[0].split("_", 1)[0]
        try:
            ids = expand_task_ids(parts[0])
        except ValueError:
            continue
        out.setdefault(array_id, []).append((ids, parts[1]))
    return out


# --------------------------------------------------------------------------------------------
# the sbatch script
# --------------------------------------------------------------------------------------------


def task_command() -> list[str]:
    """How a task runs one job: this very Python, so no environment has to be activated."""
    return [sys.executable, "-m", "pqsimd.cli", "job"]


def _job_supports_build_on_node() -> bool:
    try:
        from ..cli import job as job_command

        return any(p.name == "build_on_node" for p in job_command.params)
    except Exception:  # pragma: no cover - the CLI is always importable in practice
        return False


def node_dependent_variants(directory: Path) -> set[str]:
    """Variants whose build depends on the node (``node_dependent = true``): built there."""
    try:
        from .. import study as study_mod

        st = study_mod.load(Path(directory))
        return {v for v in st.variants if st.variant(v).node_dependent}
    except Exception:  # no study.toml yet (unit tests): the built-in table
        from .. import catalog

        return {v for v, d in catalog.builtin_variants().items() if d.node_dependent}


def _sanitize_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "study"


def render_script(
    directory: Path,
    number: int,
    tasks_file: Path,
    n_tasks: int,
    options: dict,
    command: list[str],
) -> str:
    """The text of ``DIR/slurm/submit-<n>.sbatch``. Everything is an absolute path."""
    directory = Path(directory).resolve()
    log_dir = directory / "logs" / "slurm"
    lines = [
        "#!/bin/bash",
        f"# pqsimd study {directory}: submission {number}, {n_tasks} task(s).",
        f"# Array task i runs the job on line i+1 of {tasks_file.name} (plan order); each task",
        "# pins itself to one CPU of its allocation and writes DIR/raw/<job>.parquet atomically.",
        "# DIR must be visible at the same path on every node (shared filesystem).",
        "# Resubmit by hand, e.g. only tasks 3 and 5:  sbatch --array=3,5 " + shlex.quote(str(tasks_file.with_name(f"submit-{number}.sbatch"))),
        "# (a rerun task replaces its job's raw file; `pqsimd run DIR --executor slurm` resubmits",
        "# only the jobs without a valid raw file).",
        f"#SBATCH --job-name={job_name(directory)}",
        f"#SBATCH --array=0-{n_tasks - 1}",
        "#SBATCH --ntasks=1",
        "#SBATCH --cpus-per-task=1",
        f"#SBATCH --output={log_dir}/%A_%a.out",
        "#SBATCH --open-mode=append",
    ]
    if options.get("partition"):
        lines.append(f"#SBATCH --partition={options['partition']}")
    if options.get("nodelist"):
        lines.append(f"#SBATCH --nodelist={options['nodelist']}")
    if options.get("exclusive"):
        lines.append("#SBATCH --exclusive")
    if options.get("time_limit"):
        lines.append(f"#SBATCH --time={options['time_limit']}")
    if options.get("account"):
        lines.append(f"#SBATCH --account={options['account']}")
    for arg in options.get("sbatch_args") or ():
        lines.append(f"#SBATCH {arg}")
    cmd = " ".join(shlex.quote(c) for c in command)
    lines += [
        "",
        "set -u",
        f"DIR={shlex.quote(str(directory))}",
        f"TASKS={shlex.quote(str(tasks_file.resolve()))}",
        'LINE=$(sed -n "$((SLURM_ARRAY_TASK_ID + 1))p" "$TASKS")',
        'read -r JOB ARGS <<< "$LINE"',
        'if [ -z "${JOB:-}" ]; then',
        '  echo "error: no job for array task $SLURM_ARRAY_TASK_ID in $TASKS" >&2',
        "  exit 3",
        "fi",
        'echo "pqsimd: array task ${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID} -> job $JOB on $(hostname)" >&2',
        f'exec {cmd} "$DIR" "$JOB" ${{ARGS:-}}',
        "",
    ]
    return "\n".join(lines)


def write_submission_files(
    directory: Path, number: int, jobs: list[dict], options: dict, command: list[str] | None = None
) -> tuple[Path, Path]:
    """Write ``submit-<n>.sbatch`` and ``tasks-<n>.txt``; return their paths."""
    directory = Path(directory).resolve()
    sdir = directory / SLURM_SUBDIR
    sdir.mkdir(parents=True, exist_ok=True)
    (directory / "logs" / "slurm").mkdir(parents=True, exist_ok=True)
    node_built = node_dependent_variants(directory)
    build_flag = _job_supports_build_on_node()
    task_lines = []
    for job in jobs:
        line = job["id"]
        if build_flag and job.get("variant") in node_built:
            line += " --build-on-node"
        task_lines.append(line)
    tasks_file = sdir / f"tasks-{number}.txt"
    store.atomic_write_text(tasks_file, "\n".join(task_lines) + "\n")
    script = sdir / f"submit-{number}.sbatch"
    store.atomic_write_text(script, render_script(directory, number, tasks_file, len(jobs), options, command or task_command()))
    script.chmod(0o755)
    return script, tasks_file


# --------------------------------------------------------------------------------------------
# talking to SLURM
# --------------------------------------------------------------------------------------------


def _require(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise PqsimdError(_MISSING_TOOL.format(tool=tool))
    return path


def check_tools() -> None:
    """Raise the one-line PqsimdError if the SLURM client tools are missing (call it before building)."""
    for tool in ("sbatch", "squeue", "scontrol"):
        _require(tool)


def _run(args: list[str], timeout: float = 60.0) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout)


def submit(script: Path) -> str:
    """``sbatch --parsable SCRIPT`` -> the array job id."""
    sbatch = _require("sbatch")
    try:
        proc = _run([sbatch, "--parsable", str(script)])
    except subprocess.TimeoutExpired:
        raise PqsimdError(f"sbatch did not answer within 60 s; submit by hand: sbatch {script}") from None
    if proc.returncode != 0:
        msg = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
        raise PqsimdError(f"sbatch refused {script}: {msg[-1] if msg else f'exit {proc.returncode}'}")
    job_id = proc.stdout.strip().split(";", 1)[0].strip()
    if not job_id.isdigit():
        raise PqsimdError(f"sbatch answered {proc.stdout.strip()!r}, not a job id")
    return job_id


def job_name(directory: Path) -> str:
    return f"pqsimd-{_sanitize_name(Path(directory).resolve().name)}"


def _array_names(array_ids: list[str]) -> dict[str, str]:
    """{array id: job name} of queued/running arrays (empty if squeue cannot tell)."""
    if not array_ids:
        return {}
    try:
        proc = _run([_require("squeue"), "-h", "-j", ",".join(map(str, array_ids)), "-o", "%F %j"], timeout=30)
    except subprocess.TimeoutExpired:
        return {}
    names = {}
    for line in proc.stdout.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2:
            names[parts[0]] = parts[1].strip()
    return names


def max_array_size() -> int:
    """The cluster's MaxArraySize: array task ids must stay below it (SLURM's default 1001)."""
    try:
        proc = _run([_require("scontrol"), "show", "config"], timeout=30)
    except subprocess.TimeoutExpired:
        return 1001
    match = re.search(r"^MaxArraySize\s*=\s*(\d+)", proc.stdout, re.MULTILINE)
    size = int(match.group(1)) if match else 1001
    return max(1, size)


def query_squeue(array_ids: list[str]) -> dict[str, list[tuple[list[int], str]]] | None:
    """Queued/running tasks of these arrays; None if squeue could not answer."""
    if not array_ids:
        return {}
    squeue = _require("squeue")
    try:
        proc = _run([squeue, "-h", "-j", ",".join(array_ids), "-o", "%i %T"], timeout=30)
    except subprocess.TimeoutExpired:
        return None
    if proc.returncode != 0:
        if "Invalid job id" in proc.stderr:
            return {}  # all of them long gone (purged after MinJobAge)
        return None
    return parse_squeue(proc.stdout)


def query_scontrol(array_id: str) -> dict[int, TaskState] | None:
    """Per-task states of one array; {} once slurmctld forgot it (MinJobAge), None on error."""
    scontrol = _require("scontrol")
    try:
        proc = _run([scontrol, "-o", "show", "job", array_id], timeout=30)
    except subprocess.TimeoutExpired:
        return None
    if proc.returncode != 0:
        if "Invalid job id" in proc.stderr:
            return {}
        return None
    return task_states(r for r in parse_scontrol_records(proc.stdout) if r.get("ArrayJobId") == array_id)


# --------------------------------------------------------------------------------------------
# the submissions record
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# finished = valid raw file
# --------------------------------------------------------------------------------------------


def unfinished_ids(directory: Path, job_ids: Iterable[str]) -> set[str]:
    """The given jobs without a valid raw file made by the study's current binary.

    The same rule as the engine's: ``store.finished_job`` with the sha256 of DIR/bin/<variant>,
    except for node-dependent variants, whose binary is the one built on the job's node.
    """
    from .plan import load_plan

    job_ids = set(job_ids)
    variant_of = {j["id"]: j["variant"] for j in load_plan(Path(directory)) if j["id"] in job_ids}
    node_built = node_dependent_variants(directory) if job_ids else set()
    shas: dict[str, str | None] = {}
    out = set()
    for job in job_ids:
        variant = variant_of.get(job)
        if variant is not None and variant not in shas:
            binary = store.bin_path(Path(directory), variant)
            ok = binary.exists() and variant not in node_built
            shas[variant] = store.sha256_file(binary) if ok else None
        if not store.finished_job(Path(directory), job, shas.get(variant) if variant else None):
            out.add(job)
    return out


# --------------------------------------------------------------------------------------------
# execute
# --------------------------------------------------------------------------------------------


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
            "Try again, or `pqsimd slurm cancel DIR` first"
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


def execute(directory: Path, jobs: list[dict], options: dict) -> bool:
    """Run ``jobs`` (the pending jobs, plan order) as a SLURM job array; True if all finished."""
    from rich.console import Console

    directory = Path(directory).resolve()
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
                f"slurm: array {arrays} keeps running on the cluster; `pqsimd slurm status {directory}` "
                f"shows it, `pqsimd slurm cancel {directory}` stops it, `pqsimd run {directory} "
                "--executor slurm` follows it again",
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
    console.print(f"slurm: `pqsimd run {directory} --executor slurm` resubmits only these", markup=False, soft_wrap=True)
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


# --------------------------------------------------------------------------------------------
# pqsimd slurm status / cancel
# --------------------------------------------------------------------------------------------


def _study_dir(directory: Path) -> Path:
    directory = Path(directory).resolve()
    if not any((directory / name).exists() for name in ("study.toml", "plan.json", "slurm")):
        raise PqsimdError(f"{directory} holds no study (no study.toml, plan.json or slurm/); give the directory of a `pqsimd run`")
    return directory


def status(directory: Path) -> None:
    """Print the raw-file tally, the study's SLURM submissions and their unfinished tasks."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    directory = _study_dir(directory)
    console = Console(highlight=False)
    unfinished: set[str] | None = None
    try:
        from .plan import load_plan

        plan_ids = [j["id"] for j in load_plan(directory)]
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
        console.print(f"`pqsimd run {directory} --executor slurm` resubmits them", markup=False, soft_wrap=True)


def cancel(directory: Path) -> None:
    """scancel the study's arrays that still have queued or running tasks."""
    directory = _study_dir(directory)
    submissions = load_submissions(directory)
    if not submissions:
        print("no SLURM submissions recorded for this study; nothing to cancel")
        return
    scancel = _require("scancel")
    live = _live_tasks(directory, submissions)
    if not live:
        print("no queued or running tasks; nothing to cancel")
        return
    for t in live:
        proc = _run([scancel, t.array_id], timeout=60)
        if proc.returncode != 0:
            raise PqsimdError(f"scancel {t.array_id} failed: {proc.stderr.strip() or proc.returncode}")
        print(f"cancelled array {t.array_id} ({len(t.tasks)} task(s) queued or running)")
    print(f"finished raw files are kept; `pqsimd run {directory} --executor slurm` resubmits the rest")
