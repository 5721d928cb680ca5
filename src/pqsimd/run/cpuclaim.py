"""Which CPU a timing job runs on, one timing job per CPU machine-wide, and whether it shared it.

Two pqsimd jobs timed on one CPU at once both read slow, and nothing in their samples says so.
Every timing job therefore claims its CPU for as long as its driver runs: a machine-wide lock per
CPU (a fixed path, so two shells with different TMPDIRs still see each other), waited for with one
line naming the holder. Before that, the job chooses its CPU among the allowed ones by what they are
doing now (`choose`: the kernel's per-CPU counters over a short window, and the locks), so a
program busy on one CPU sends the job to another. What neither can stop (a program that moves onto
the CPU, a pqsimd without this lock) is read afterwards from the kernel's scheduler statistics: the
time the driver spent runnable but waiting for its CPU (/proc/PID/schedstat, "run delay"). A job
whose driver waited for more than `SHARED_FRACTION` of its time shared its CPU: by default the
caller discards it and runs it again; with `--shared-cpu keep` it is kept, marked, and analyze shows
the verdicts with and without such jobs.
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
SHARED_MIN_SECONDS = 0.01  # below this (2-3 scheduler ticks) a wait is a blip; a quick study's short jobs
# beside a busy program waited 0.02-0.04 s (38-40%) and must not slip under it
ATTEMPTS = 3  # a job that shared its CPU this many times in a row stays pending, with one line
BUSY_ABOVE = 0.25  # a CPU busier than this over the window runs another program (pqsimd's own use is ~1%)
WINDOW_S = 0.1  # how long the per-CPU counters are watched before a job chooses (10 ticks of USER_HZ)
IDLE_WAIT_S = 30.0  # discard policy: how long a job waits for an idle CPU before it runs on a busy one
# (PQSIMD_IDLE_WAIT seconds instead, e.g. 0 where nothing will free a CPU)


def lock_dir() -> Path:
    return Path("/tmp") if Path("/tmp").is_dir() else Path(os.environ.get("TMPDIR", "."))


def lock_path(cpu: int) -> Path:
    return lock_dir() / f"pqsimd-cpu{cpu}.lock"


def _cpu_times() -> dict[int, tuple[int, int]]:
    """Per CPU (busy, total) jiffies from /proc/stat; steal counts as busy (in a VM the host's other
    guests take the CPU); {} where the kernel has none."""
    out = {}
    try:
        lines = Path("/proc/stat").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        f = line.split()
        if not f or not f[0].startswith("cpu") or f[0] == "cpu":
            continue
        try:
            v = [int(x) for x in f[1:9]]
            cpu = int(f[0][3:])
        except ValueError:
            continue
        total = sum(v)
        out[cpu] = (total - v[3] - v[4], total)  # idle, iowait
    return out


def busy_fractions(cpus: set[int] | list[int], window: float = WINDOW_S) -> dict[int, float]:
    """How busy each CPU was over `window` seconds (0..1; NaN where unknown)."""
    a = _cpu_times()
    time.sleep(window)
    b = _cpu_times()
    out = {}
    for c in cpus:
        if c in a and c in b and b[c][1] > a[c][1]:
            out[c] = (b[c][0] - a[c][0]) / (b[c][1] - a[c][1])
        else:
            out[c] = float("nan")
    return out


def lock_holder(cpu: int) -> str | None:
    """Who holds CPU `cpu`'s pqsimd lock right now (None: nobody)."""
    try:
        fd = os.open(lock_path(cpu), os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return None
    except BlockingIOError:
        return os.pread(fd, 4096, 0).decode(errors="replace").strip() or "another process"
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Choice:
    """The CPU a job runs on, and what every allowed CPU was doing when it chose."""
    cpu: int
    busy: dict[int, float]  # CPU -> busy share over the window
    held: dict[int, str]  # CPU -> the pqsimd job holding it
    fixed: bool  # --cpu N: the user's, not chosen

    @property
    def idle(self) -> bool:
        """Free of pqsimd, and either idle itself or on a machine with a CPU's worth of room: one
        program that is not pinned shows as 50% on each of two CPUs, and the scheduler moves it off
        the CPU the driver pins itself to (the driver's run delay checks that it did)."""
        if self.cpu in self.held:
            return False
        b = self.busy.get(self.cpu, float("nan"))
        room = sum(1.0 - x for c, x in self.busy.items() if c not in self.held and x == x)
        return not b > BUSY_ABOVE or room >= 1.0 - BUSY_ABOVE

    def describe(self) -> str:
        def one(c: int) -> str:
            b = self.busy.get(c, float("nan"))
            who = " held by another pqsimd job" if c in self.held else ""
            return f"CPU {c} {b:.0%} busy{who}" if b == b else f"CPU {c}{who or ' (load unknown)'}"
        return ", ".join(one(c) for c in sorted(self.busy))


def choose(allowed: set[int], fixed: int | None = None, window: float = WINDOW_S) -> Choice:
    """The CPU for the next timing job: `fixed` (--cpu) if given, else the allowed CPU that is idle
    now (free of another pqsimd job, least busy; ties: the highest, away from CPU 0's interrupts)."""
    cpus = sorted(allowed)
    busy = busy_fractions(cpus, window)
    held = {c: h for c in cpus if (h := lock_holder(c)) is not None}
    if fixed is not None:
        return Choice(fixed, busy, held, True)

    def rank(c: int) -> tuple:
        b = busy.get(c, float("nan"))
        return (c in held, b > BUSY_ABOVE, b if b == b else 0.0, -c)
    return Choice(min(cpus, key=rank), busy, held, False)


def room_for(allowed: set[int], window: float = WINDOW_S) -> list[int]:
    """CPUs for timing side by side now: as many of the least busy ones free of pqsimd as the machine
    has idle CPUs' worth of room (at least the idlest one)."""
    c = choose(allowed, None, window)
    free = [x for x in sorted(allowed) if x not in c.held]
    room = sum(1.0 - b for x, b in c.busy.items() if x in free and b == b)
    n = max(1, int(room + BUSY_ABOVE))
    return sorted(sorted(free, key=lambda x: (c.busy.get(x, 0.0), -x))[:n]) or [c.cpu]


def idle_wait_seconds() -> float:
    try:
        return max(float(os.environ.get("PQSIMD_IDLE_WAIT", IDLE_WAIT_S)), 0.0)
    except ValueError:
        return IDLE_WAIT_S


def wait_for_idle(allowed: set[int], fixed: int | None, seconds: float | None = None,
                  notify: Callable[[str], None] | None = None, what: str = "the job") -> Choice:
    """choose(), waiting up to `seconds` (idle_wait_seconds()) for an idle CPU (one line if it waits);
    the last choice if none became idle (the job then runs, and the scheduler's statistics decide
    whether it is kept)."""
    seconds = idle_wait_seconds() if seconds is None else seconds
    c = choose(allowed, fixed)
    deadline = time.monotonic() + seconds
    told = False
    while not c.idle and time.monotonic() < deadline:
        if notify and not told:
            notify(f"waiting up to {seconds:g} s for an idle CPU for {what}: {c.describe()}")
            told = True
        time.sleep(1.0)
        c = choose(allowed, fixed)
    return c


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
                "waited_fraction": round(self.waited_fraction, 6), "shared": self.shared}


def share_at_exit(proc) -> Share | None:
    """A driver's scheduler statistics once it has exited, before it is reaped (a zombie keeps them);
    None where it was reaped already or the kernel has none."""
    try:
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
    except (ChildProcessError, OSError):  # reaped already (the watchdog stopped it)
        return None
    return share_of(proc.pid)


def share_of(pid: int) -> Share | None:
    """Read before the child is reaped (a zombie keeps its statistics); None where the kernel has none."""
    try:
        fields = Path(f"/proc/{pid}/schedstat").read_text().split()
        return Share(int(fields[0]) / 1e9, int(fields[1]) / 1e9)
    except (OSError, ValueError, IndexError):
        return None
