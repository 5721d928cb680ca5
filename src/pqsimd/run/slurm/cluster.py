"""Talking to SLURM: the client tools (sbatch, squeue, scontrol, scancel), nothing else."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from ...errors import PqsimdError
from .states import TaskState, parse_scontrol_records, parse_squeue, task_states

_MISSING_TOOL = (
    "{tool} not found: install the SLURM client tools (sbatch, squeue, scontrol, scancel) "
    "on this host, or use --executor local"
)



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




def scancel(array_id: str) -> None:
    proc = _run([_require("scancel"), array_id], timeout=60)
    if proc.returncode != 0:
        raise PqsimdError(f"scancel {array_id} failed: {proc.stderr.strip() or proc.returncode}")
