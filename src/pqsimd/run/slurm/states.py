"""What SLURM says about array tasks: parsing `squeue` and `scontrol -o show job` output."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

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
