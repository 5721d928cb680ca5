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

import errno
import fcntl
import math
import os
import stat
import time
import unicodedata
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from ..errors import PqsimdError, os_problem

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


LOCK_DIRS = ("/tmp", "/run/lock")  # the first that exists: one fixed place per host, whatever TMPDIR says
HOLDER_BYTES = 1024  # read of a lock's holder text (anyone may write it): bounded
HOLDER_CHARS = 400  # and shown at most this long


def lock_dir() -> Path:
    """The directory of the machine-wide CPU locks: a real directory that only its owner (root or
    this user) can rename files in, or one whose sticky bit lets each user remove only their own
    files (/tmp). Every user's pqsimd uses it, so no TMPDIR or working directory ever is (another
    user could own that, and two shells would not see each other)."""
    for d in LOCK_DIRS:
        try:
            st = os.stat(d)
            link = os.lstat(d)
        except FileNotFoundError:
            continue
        except OSError as e:
            raise PqsimdError(f"cannot use {d} for pqsimd's CPU locks ({os_problem(e)})") from None
        owners = (0, os.getuid())
        if not stat.S_ISDIR(st.st_mode):
            raise PqsimdError(f"{d} is not a directory; pqsimd keeps its machine-wide CPU locks there: make it one")
        if link.st_uid not in owners or st.st_uid not in owners:
            raise PqsimdError(f"{d} is owned by uid {st.st_uid if st.st_uid not in owners else link.st_uid}, "
                              f"neither root nor you: pqsimd keeps its machine-wide CPU locks there and will not "
                              f"trust it (fix its owner)")
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
            raise PqsimdError(f"{d} is writable by other users without the sticky bit, so anyone could replace "
                              f"pqsimd's CPU locks there; fix it: chmod +t {d}")
        return Path(d)
    raise PqsimdError(f"no directory for pqsimd's machine-wide CPU locks: none of {', '.join(LOCK_DIRS)} exists")


def lock_path(cpu: int) -> Path:
    return lock_dir() / f"pqsimd-cpu{cpu}.lock"


def _refuse_lock(path: Path, what: str) -> PqsimdError:
    return PqsimdError(f"CPU lock {path} {what}, which pqsimd never makes; it is not used (someone may be trying "
                       f"to make pqsimd write elsewhere): remove it (rm {path}) and run again")


def _open_lock(path: Path, write: bool) -> tuple[int, bool]:
    """(fd, writable) of a CPU lock, never through a link: an existing lock that is a symbolic link,
    not a regular file, or a file with another name elsewhere (a hard link) is refused in one line,
    so a pqsimd running as root cannot be made to create, truncate or write another file. A lock
    this process creates is made writable by everyone (another user's study must write its holder
    in it); one it did not create keeps its owner's permissions (read-only: it is still locked,
    flock needs no write access, but its holder text is not written)."""
    flags = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC  # NONBLOCK: opening a FIFO never waits
    for _ in range(3):  # the lock may be removed between the two opens (a user cleaning /tmp)
        created = False
        try:
            if write:
                try:
                    fd, created, writable = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | flags, 0o666), True, True
                except FileExistsError:  # also a dangling link: O_EXCL never creates through one
                    try:
                        fd, writable = os.open(path, os.O_RDWR | flags), True
                    except PermissionError:
                        fd, writable = os.open(path, os.O_RDONLY | flags), False
            else:
                fd, writable = os.open(path, os.O_RDONLY | flags), False
        except FileNotFoundError:
            if not write:
                raise
            continue
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise _refuse_lock(path, "is a symbolic link") from None
            if e.errno == errno.EISDIR:
                raise _refuse_lock(path, "is not a regular file (a directory)") from None
            raise PqsimdError(f"cannot open CPU lock {path} ({os_problem(e)})") from None
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            os.close(fd)
            raise _refuse_lock(path, "is not a regular file" if not stat.S_ISREG(st.st_mode)
                               else f"is a hard link ({st.st_nlink} names)")
        if created:
            os.fchmod(fd, 0o666)  # past the umask: ours, so every user's study can write its holder
        return fd, writable
    raise PqsimdError(f"CPU lock {path} keeps disappearing while pqsimd opens it; run again")


def holder_text(raw: bytes) -> str:
    """A lock's holder as it may be shown on a terminal: anyone can write the file, so its first line
    only, control and format characters (escape sequences, carriage returns, bidirectional
    overrides) replaced by '?', and at most HOLDER_CHARS characters."""
    line = raw[:HOLDER_BYTES].decode(errors="replace").split("\n", 1)[0]
    text = "".join("?" if unicodedata.category(ch)[0] == "C" else ch for ch in line).strip()
    text = " ".join(text.split())
    if len(text) > HOLDER_CHARS:
        text = text[:HOLDER_CHARS - 1] + "\u2026"
    return text or "another process"


def holder_of(study_path: Path | str, what: str) -> str:
    """The holder text of a lock: the study by its absolute path (another user's shell has another
    working directory) and what times there."""
    return f"study {Path(study_path).absolute()}, {what}"


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


LOAD_WINDOW_S = 0.5  # how long doctor and the start of a run watch the CPUs to say how busy they are


def loadavg() -> tuple[float, float, float] | None:
    """The kernel's 1, 5 and 15 minute load averages (/proc/loadavg); None where it has none."""
    try:
        return tuple(float(x) for x in Path("/proc/loadavg").read_text().split()[:3])  # type: ignore[return-value]
    except (OSError, ValueError):
        return None


def running_programs(exclude: set[int] | None = None) -> dict[int, list[str]]:
    """Per CPU, the programs running or runnable on it now (state R in /proc/PID/stat, field 39: the
    CPU it last ran on), by command name with a count; pqsimd's own process left out."""
    exclude = {os.getpid(), *(exclude or set())}
    out: dict[int, dict[str, int]] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) in exclude:
            continue
        try:
            text = (d / "stat").read_text()
            name, rest = text[text.index("(") + 1:text.rindex(")")], text[text.rindex(")") + 2:].split()
            if rest[0] != "R":
                continue
            cpu = int(rest[39 - 3])
        except (OSError, ValueError, IndexError):
            continue
        out.setdefault(cpu, {}).setdefault(name, 0)
        out[cpu][name] += 1
    return {c: [f"{n}" + (f" ×{k}" if k > 1 else "") for n, k in sorted(v.items(), key=lambda x: -x[1])]
            for c, v in out.items()}


@dataclass(frozen=True)
class Load:
    """What the CPUs are doing now: the load averages, each allowed CPU's busy share over a window and
    the programs running on it."""
    average: tuple[float, float, float] | None
    busy: dict[int, float]
    programs: dict[int, list[str]]

    @property
    def busy_cpus(self) -> int:
        return sum(1 for b in self.busy.values() if b == b and b > BUSY_ABOVE)

    @property
    def quiet(self) -> bool:
        return self.busy_cpus == 0

    def describe(self) -> str:
        avg = (f"load average {self.average[0]:.2f}, {self.average[1]:.2f}, {self.average[2]:.2f} (1, 5, 15 min) "
               f"on {len(self.busy)} CPU(s)" if self.average else f"{len(self.busy)} CPU(s)")

        def one(c: int) -> str:
            b = self.busy.get(c, float("nan"))
            who = self.programs.get(c) or []
            shown = f" ({', '.join(who[:3])}{', ...' if len(who) > 3 else ''})" if who else ""
            return f"CPU {c} {b:.0%} busy{shown}" if b == b else f"CPU {c} (unknown)"
        return f"{avg}; now {', '.join(one(c) for c in sorted(self.busy))}"


def current_load(cpus: set[int] | None = None, window: float = LOAD_WINDOW_S) -> Load:
    """The load now, over `window` seconds, of the allowed CPUs (default: this process's)."""
    cpus = set(cpus if cpus is not None else os.sched_getaffinity(0))
    busy = busy_fractions(cpus, window)
    programs = {c: v for c, v in running_programs().items() if c in cpus}
    return Load(loadavg(), busy, programs)


def lock_holder(cpu: int) -> str | None:
    """Who holds CPU `cpu`'s pqsimd lock right now (None: nobody)."""
    try:
        fd, _ = _open_lock(lock_path(cpu), write=False)
    except (OSError, PqsimdError):  # none, or one claim() refuses: nobody holds the CPU through it
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return None
    except BlockingIOError:
        return holder_text(os.pread(fd, HOLDER_BYTES, 0))
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
    """PQSIMD_IDLE_WAIT: seconds a job waits for an idle CPU (default IDLE_WAIT_S); one line for a
    value that is not a finite number of seconds ≥ 0."""
    raw = os.environ.get("PQSIMD_IDLE_WAIT")
    if raw is None or not raw.strip():
        return IDLE_WAIT_S
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise PqsimdError(f"PQSIMD_IDLE_WAIT={raw!r} is not a number of seconds >= 0 (e.g. 0 to time at once, "
                          f"{IDLE_WAIT_S:g} the default); set it to one or unset it")
    return value


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
    """Hold CPU `cpu` for a timing job (`who`: the study and job, written for whoever waits:
    holder_of()); yields what the wait was, for the job record. PqsimdError (one line) for a lock that
    is not a plain file of its own (_open_lock)."""
    path = lock_path(cpu)
    fd, writable = _open_lock(path, write=True)
    held = Claim()
    try:
        t0 = time.monotonic()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            held.holder = holder_text(os.pread(fd, HOLDER_BYTES, 0))
            if notify:
                notify(f"waiting for CPU {cpu}: another pqsimd job is timing there ({held.holder}); "
                       f"--cpu N times this study on another CPU")
            fcntl.flock(fd, fcntl.LOCK_EX)
        held.waited_seconds = time.monotonic() - t0
        if writable:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()}, {holder_text(who.encode())}\n".encode(), 0)
        yield held
    finally:
        os.close(fd)  # releases the lock


TIMING_NICE = 0  # a timing driver runs at this niceness or better: `nice pqsimd run` keeps builds and gates polite,
# but a driver at nice 19 gets its CPU only when no other program wants it, and its jobs are discarded on any load
LOW_POLICIES = {getattr(os, n): n for n in ("SCHED_IDLE", "SCHED_BATCH") if hasattr(os, n)}


def timing_priority(pid: int) -> str | None:
    """Give a timing driver (or probe) just started the normal priority it may have lost to pqsimd's
    own: a niceness above TIMING_NICE (`nice pqsimd run`) is lowered to it, SCHED_IDLE or SCHED_BATCH
    (`chrt`) becomes SCHED_OTHER; a better one (a negative niceness, a real-time policy) is kept.
    Called by the parent right after the fork, long before the driver's first timed sample (it
    still loads its libraries and calibrates); the kernel's account at exit (Share.nice) is what the
    job record keeps. Returns why it could not (an unprivileged user cannot lower a niceness), else None."""
    problems = []
    try:
        policy = os.sched_getscheduler(pid)
        if policy in LOW_POLICIES:
            try:
                os.sched_setscheduler(pid, os.SCHED_OTHER, os.sched_param(0))
            except PermissionError:
                problems.append(f"policy {LOW_POLICIES[policy]}")
        nice = os.getpriority(os.PRIO_PROCESS, pid)
        if nice > TIMING_NICE:
            try:
                os.setpriority(os.PRIO_PROCESS, pid, TIMING_NICE)
            except PermissionError:
                problems.append(f"nice {nice}")
    except ProcessLookupError:  # it has exited already (its failure is reported as such)
        return None
    return f"the timing driver keeps pqsimd's {' and '.join(problems)}" if problems else None


def priority_note() -> str | None:
    """One line before timing when this pqsimd runs below the normal priority and may not give its
    timing drivers the normal one (an unprivileged `nice pqsimd run`), else None."""
    nice = os.getpriority(os.PRIO_PROCESS, 0)
    policy = os.sched_getscheduler(0)
    if nice <= TIMING_NICE and policy not in LOW_POLICIES:
        return None
    import resource

    floor = 20 - resource.getrlimit(resource.RLIMIT_NICE)[0]  # the lowest niceness this user may set
    if os.geteuid() == 0 or (floor <= TIMING_NICE and policy not in LOW_POLICIES):
        return None  # timing_priority() gives the drivers the normal priority
    what = f"nice {nice}" if nice > TIMING_NICE else f"scheduling policy {LOW_POLICIES[policy]}"
    return (f"pqsimd runs at {what} and may not give its timing drivers the normal priority, so every other "
            f"program comes first on their CPU and jobs are discarded as shared on any load; start pqsimd without "
            f"nice/chrt (a timing job claims one CPU at a time; builds are the long part), or raise RLIMIT_NICE")


@dataclass(frozen=True)
class Share:
    """What the scheduler says of a finished driver: seconds on its CPU and seconds waiting for it,
    and the niceness and policy it ran at."""
    cpu_seconds: float
    waited_seconds: float
    nice: int | None = None
    policy: str | None = None

    @property
    def waited_fraction(self) -> float:
        total = self.cpu_seconds + self.waited_seconds
        return self.waited_seconds / total if total > 0 else 0.0

    @property
    def shared(self) -> bool:
        return self.waited_seconds >= SHARED_MIN_SECONDS and self.waited_fraction > SHARED_FRACTION

    def record(self) -> dict:
        return {"cpu_seconds": round(self.cpu_seconds, 6), "waited_seconds": round(self.waited_seconds, 6),
                "waited_fraction": round(self.waited_fraction, 6), "shared": self.shared, "nice": self.nice,
                "sched_policy": self.policy}

    def waited(self) -> str:
        """How long the driver waited for its CPU, and why it may have: a driver below the normal
        priority waits for every other program (pqsimd's own niceness, not another program's load)."""
        low = [f"nice {self.nice}" if self.nice is not None and self.nice > TIMING_NICE else "",
               f"policy {self.policy}" if self.policy in LOW_POLICIES.values() else ""]
        low = " and ".join(x for x in low if x)
        return (f"the driver waited {self.waited_fraction:.0%} of its time for it"
                + (f", running at {low} inherited from pqsimd, so every other program came first: start pqsimd "
                   f"without nice/chrt" if low else ""))


def share_at_exit(proc) -> Share | None:
    """A driver's scheduler statistics once it has exited, before it is reaped (a zombie keeps them);
    None where it was reaped already or the kernel has none."""
    try:
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
    except (ChildProcessError, OSError):  # reaped already (the watchdog stopped it)
        return None
    return share_of(proc.pid)


POLICY_NAMES = {0: "SCHED_OTHER", 1: "SCHED_FIFO", 2: "SCHED_RR", 3: "SCHED_BATCH", 5: "SCHED_IDLE", 6: "SCHED_DEADLINE"}


def share_of(pid: int) -> Share | None:
    """Read before the child is reaped (a zombie keeps its statistics); None where the kernel has none."""
    try:
        fields = Path(f"/proc/{pid}/schedstat").read_text().split()
        cpu, waited = int(fields[0]) / 1e9, int(fields[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None
    try:  # /proc/PID/stat after the command name: field 19 is the niceness, 41 the policy
        stat_ = Path(f"/proc/{pid}/stat").read_text()
        rest = stat_[stat_.rindex(")") + 2:].split()
        nice, policy = int(rest[19 - 3]), POLICY_NAMES.get(int(rest[41 - 3]), rest[41 - 3])
    except (OSError, ValueError, IndexError):
        nice, policy = None, None
    return Share(cpu, waited, nice, policy)
