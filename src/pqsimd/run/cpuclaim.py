"""One timing job per CPU at a time, machine-wide, and a job that shared its CPU anyway is not kept.

Two pqsimd jobs timed on one CPU at once both read slow, and nothing in their samples says so.
Every timing job therefore claims its CPU for as long as its driver runs: a machine-wide lock per
CPU (a fixed path, so two shells with different TMPDIRs still see each other), waited for with one
line naming the holder. What the lock cannot stop (another program busy on the same CPU, a pqsimd
without this lock) is read afterwards from the kernel's scheduler statistics: the time the driver
spent runnable but waiting for its CPU (/proc/PID/schedstat, "run delay"). A job whose driver waited
for more than `SHARED_FRACTION` of its time shared its CPU; the caller discards it and runs it again.
"""

from __future__ import annotations

import fcntl
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

# A CPU-bound driver sharing its CPU with one other busy process waits about half its time; a quiet
# machine's kernel threads cost it well under 1% (machine C: at most 0.13% over a standard study),
# and a short job beside a pip install on the other CPU 13-17%. 25% keeps a second busy process out
# without discarding jobs for another process's blips.
SHARED_FRACTION = 0.25
SHARED_MIN_SECONDS = 0.05  # below this the job was too short for a wait to mean anything
ATTEMPTS = 3  # a job that shared its CPU this many times in a row stays pending, with one line


def lock_dir() -> Path:
    return Path("/tmp") if Path("/tmp").is_dir() else Path(os.environ.get("TMPDIR", "."))


def lock_path(cpu: int) -> Path:
    return lock_dir() / f"pqsimd-cpu{cpu}.lock"


@contextmanager
def away_from(cpu: int) -> Iterator[None]:
    """Keep the calling thread (pqsimd, reading the driver's output) off the CPU being timed while the
    driver runs, where another CPU is allowed; the driver pins itself to `cpu` regardless."""
    before = os.sched_getaffinity(0)
    others = before - {cpu}
    if others and others != before:
        os.sched_setaffinity(0, others)
    try:
        yield
    finally:
        if others and others != before:
            os.sched_setaffinity(0, before)


@dataclass
class Claim:
    """A CPU held: how long the job waited for it, and for whom (None: it was free)."""
    waited_seconds: float = 0.0
    holder: str | None = None


@contextmanager
def claim(cpu: int, who: str, notify: Callable[[str], None] | None = None) -> Iterator[Claim]:
    """Hold CPU `cpu` for a timing job (`who`: the study and job, written for whoever waits); yields
    what the wait was, for the job record."""
    path = lock_path(cpu)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        writable = True
    except PermissionError:  # another user's lock file: it can still be locked (flock needs no write access)
        fd, writable = os.open(path, os.O_RDONLY), False
    held = Claim()
    try:
        try:
            os.fchmod(fd, 0o666)  # another user's study must be able to wait for it too
        except OSError:
            pass
        t0 = time.monotonic()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            held.holder = os.pread(fd, 4096, 0).decode(errors="replace").strip() or "another process"
            if notify:
                notify(f"waiting for CPU {cpu}: another pqsimd job is timing there ({held.holder}); "
                       f"--cpu N times this study on another CPU")
            fcntl.flock(fd, fcntl.LOCK_EX)
        held.waited_seconds = time.monotonic() - t0
        if writable:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()}, {who}\n".encode(), 0)
        yield held
    finally:
        os.close(fd)  # releases the lock


@dataclass(frozen=True)
class Share:
    """What the scheduler says of a finished driver: seconds on its CPU and seconds waiting for it."""
    cpu_seconds: float
    waited_seconds: float

    @property
    def waited_fraction(self) -> float:
        total = self.cpu_seconds + self.waited_seconds
        return self.waited_seconds / total if total > 0 else 0.0

    @property
    def shared(self) -> bool:
        return self.waited_seconds >= SHARED_MIN_SECONDS and self.waited_fraction > SHARED_FRACTION

    def record(self) -> dict:
        return {"cpu_seconds": round(self.cpu_seconds, 6), "waited_seconds": round(self.waited_seconds, 6),
                "waited_fraction": round(self.waited_fraction, 6)}


def share_of(pid: int) -> Share | None:
    """Read before the child is reaped (a zombie keeps its statistics); None where the kernel has none."""
    try:
        fields = Path(f"/proc/{pid}/schedstat").read_text().split()
        return Share(int(fields[0]) / 1e9, int(fields[1]) / 1e9)
    except (OSError, ValueError, IndexError):
        return None
