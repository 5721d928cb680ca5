"""The processes a run starts that run the code under test (the driver, KAT programs, valgrind):
each in its own process group, stopped with its group when its time limit passes or pqsimd
stops (Ctrl-C, SIGTERM, an error), before the study lock is released, so no driver is left
pinned to the study's CPU timing beside a resumed run.

Stopping sends SIGTERM first (the driver then names the build and op it was in: driver/guard.h),
then SIGKILL after a grace period."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

GRACE_S = 2.0
_live: set[subprocess.Popen] = set()
_lock = threading.RLock()  # the signal handler may run while the main thread holds it


@contextmanager
def spawned(cmd: list[str], **kw) -> Iterator[subprocess.Popen]:
    """Popen in a new process group; on leaving (normally or by an exception) the group is stopped."""
    proc = subprocess.Popen(cmd, start_new_session=True, **kw)
    with _lock:
        _live.add(proc)
    try:
        yield proc
    finally:
        stop(proc)
        with _lock:
            _live.discard(proc)


def stop(proc: subprocess.Popen, grace: float = GRACE_S) -> None:
    if proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def stop_all(grace: float = 0.5) -> None:
    """Every live child of this process (a signal handler calls this before the exception unwinds)."""
    with _lock:
        procs = list(_live)
    for p in procs:
        stop(p, grace)


class TimedOut(Exception):
    def __init__(self, seconds: float, stderr: str):
        super().__init__(f"did not finish within {seconds:g} s")
        self.seconds = seconds
        self.stderr = stderr


def run(cmd: list[str], input: str | bytes | None = None, timeout: float | None = None, text: bool = True,
        before_reap: Callable[[subprocess.Popen], Any] | None = None,
        on_start: Callable[[int], Any] | None = None, **kw) -> subprocess.CompletedProcess:
    """subprocess.run in a new process group; TimedOut (with what it wrote to stderr) when the
    time limit passes, the group stopped first. `before_reap(proc)` is called once the process has
    exited and before it is reaped (its /proc entry, e.g. the scheduler's statistics, still there);
    its result is the CompletedProcess's `before_reap`. `on_start(pid)` is called right after the
    process starts (e.g. cpuclaim.timing_priority); its result is the CompletedProcess's `on_start`."""
    with spawned(cmd, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL, stdout=subprocess.PIPE,
                 stderr=subprocess.PIPE, text=text, **kw) as proc:
        started = on_start(proc.pid) if on_start is not None else None
        try:
            if before_reap is None:
                out, err = proc.communicate(input, timeout=timeout)
                seen = None
            else:
                got: dict[str, Any] = {}
                _communicate_unreaped(proc, input, timeout, got)
                out, err = got.get("out"), got.get("err")
                seen = before_reap(proc)
                proc.wait()
        except subprocess.TimeoutExpired:
            stop(proc)
            if before_reap is None:
                out, err = proc.communicate()
            else:  # the readers end once the stopped group closes its pipes
                for t in got.get("readers", []):
                    t.join(GRACE_S)
                err = got.get("err", "")
            raise TimedOut(timeout or 0, err if isinstance(err, str) else (err or b"").decode(errors="replace")) from None
    done = subprocess.CompletedProcess(cmd, proc.returncode, out, err)
    done.before_reap = seen
    done.on_start = started
    return done


def _communicate_unreaped(proc: subprocess.Popen, input, timeout: float | None, got: dict[str, Any]) -> None:
    """communicate() that leaves the exited process a zombie: its output read to the end by two
    threads into got["out"], got["err"], then a wait without reaping (TimeoutExpired past `timeout`;
    the readers are in got["readers"])."""
    readers = [threading.Thread(target=lambda k=k, f=f: got.__setitem__(k, f.read()), daemon=True)
               for k, f in (("out", proc.stdout), ("err", proc.stderr))]
    got["readers"] = readers
    for t in readers:
        t.start()
    if input is not None and proc.stdin is not None:
        try:
            proc.stdin.write(input)
        except BrokenPipeError:
            pass
        proc.stdin.close()
    deadline = None if timeout is None else time.monotonic() + timeout
    for t in readers:
        t.join(None if deadline is None else max(deadline - time.monotonic(), 0.0))
        if t.is_alive():
            raise subprocess.TimeoutExpired(proc.args, timeout or 0)
    while True:
        try:
            if os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is not None:
                break
        except ChildProcessError:
            break
        if deadline is not None and time.monotonic() > deadline:
            raise subprocess.TimeoutExpired(proc.args, timeout or 0)
        time.sleep(0.001)


@dataclass
class Death:
    """The driver's last words (driver/guard.c): how it died, and where."""

    how: str  # "crashed" | "stopped"
    signal: str
    variant: int | None
    op: str


_DEATH = re.compile(r"^driver: (crashed|stopped): (\S+)(?: in variant (\d+) \(.*\))? op (.*)$")


def death(stderr: str) -> Death | None:
    for line in reversed(stderr.splitlines()):
        m = _DEATH.match(line.strip())
        if m:
            return Death(m.group(1), m.group(2), int(m.group(3)) if m.group(3) else None, m.group(4))
    return None


def install_stop_handlers() -> None:
    """SIGTERM (scancel, kill, a SLURM time limit) and SIGINT stop the children first, then raise
    KeyboardInterrupt: every `finally` (temporary files, the study lock) runs as on Ctrl-C."""
    def handler(signum, frame):
        stop_all()
        raise KeyboardInterrupt

    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            signal.signal(sig, handler)
        except ValueError:  # not the main thread (an embedding program): leave its handlers alone
            return


def launcher_of(study) -> list[str]:
    """What runs the study's driver here: nothing when its ISA is this host's, else the emulator
    (pqsimd.isa). Every process that runs code under test starts with it."""
    from .. import isa

    return isa.of_study(study).launcher() if getattr(study, "isa", "") else []
