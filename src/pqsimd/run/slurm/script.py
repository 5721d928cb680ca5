"""The sbatch script and task list of one submission (DIR/slurm/submit-<n>.sbatch, tasks-<n>.txt).

Every value that reaches the script is quoted, and values with a newline or NUL are refused:
a newline in a partition name or the study directory must never become a command.
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

from ...model import JobKind
from ... import store
from ...errors import PqsimdError
from ...studydir import StudyDir

SLURM_SUBDIR = "slurm"
OPTION_KEYS = ("partition", "nodelist", "time_limit", "account")


def check_value(name: str, value: str) -> str:
    if "\n" in value or "\r" in value or "\0" in value:
        raise PqsimdError(f"slurm: {name} contains a newline or NUL; refused (it would break the sbatch script)")
    return value


def job_name(directory: Path) -> str:
    return f"pqsimd-{_sanitize_name(Path(directory).resolve().name)}"


def task_command() -> list[str]:
    """How a task runs one job: this very Python, so no environment has to be activated."""
    return [sys.executable, "-m", "pqsimd.cli", "job"]


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
    check_value("the study directory", str(directory))
    for key in OPTION_KEYS:
        if options.get(key):
            check_value(f"--{key.replace('_limit', '')}", str(options[key]))
    for arg in options.get("sbatch_args") or ():
        check_value("--sbatch-arg", str(arg))
    q = shlex.quote
    log_dir = directory / "logs" / "slurm"
    lines = [
        "#!/bin/bash",
        f"# pqsimd study {q(str(directory))}: submission {number}, {n_tasks} task(s).",
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
        f"#SBATCH --output={q(str(log_dir))}/%A_%a.out",
        "#SBATCH --open-mode=append",
    ]
    if options.get("partition"):
        lines.append(f"#SBATCH --partition={q(str(options['partition']))}")
    if options.get("nodelist"):
        lines.append(f"#SBATCH --nodelist={q(str(options['nodelist']))}")
    if options.get("exclusive"):
        lines.append("#SBATCH --exclusive")
    if options.get("time_limit"):
        lines.append(f"#SBATCH --time={q(str(options['time_limit']))}")
    if options.get("account"):
        lines.append(f"#SBATCH --account={q(str(options['account']))}")
    for arg in options.get("sbatch_args") or ():
        lines.append(f"#SBATCH {q(str(arg))}")
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


def node_dependent_variants(directory: Path) -> set[str]:
    """Variants whose build depends on the node (``node_dependent = true``): built there."""
    from ... import study as study_mod

    try:
        st = study_mod.load(StudyDir(directory))
    except PqsimdError:  # no study.toml yet (unit tests): the built-in table
        from ... import catalog

        return {v for v, d in catalog.builtin_variants().items() if d.node_dependent}
    return {v for v in st.variants if st.variant(v).node_dependent}


def write_submission_files(
    directory: Path, number: int, jobs: list[dict], options: dict, command: list[str] | None = None
) -> tuple[Path, Path]:
    """Write ``submit-<n>.sbatch`` and ``tasks-<n>.txt``; return their paths."""
    directory = Path(directory).resolve()
    sdir = directory / SLURM_SUBDIR
    sdir.mkdir(parents=True, exist_ok=True)
    (directory / "logs" / "slurm").mkdir(parents=True, exist_ok=True)
    node_built = node_dependent_variants(directory)
    task_lines = []
    for job in jobs:
        line = job["id"]
        # a paired job holds every variant; a separate one its own
        if (job.get("variant") in node_built) or (job.get("design") == JobKind.PAIRED and node_built):
            line += " --build-on-node"
        task_lines.append(line)
    tasks_file = sdir / f"tasks-{number}.txt"
    store.atomic_write_text(tasks_file, "\n".join(task_lines) + "\n")
    script = sdir / f"submit-{number}.sbatch"
    store.atomic_write_text(script, render_script(directory, number, tasks_file, len(jobs), options, command or task_command()))
    script.chmod(0o755)
    return script, tasks_file
