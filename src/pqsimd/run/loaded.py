"""The shared objects a timing driver (a job or a sizing probe) loads, held open from the check of
their bytes until the driver has exited, so what is timed is what was gated and recorded.

A job may wait minutes for its CPU after its libraries were checked; a file replaced meanwhile (a
rename over it: another build's copy, a rebuilt copy) used to be what the driver loaded, under the
old sha256. Here each file is opened once, its sha256 taken from the open file and compared with
the gated one, and the driver loads it through /proc/self/fd/N (inherited), which is that same file
whatever its name points to by then. A change written into the file itself (the same inode) is
found by hashing it again once the driver has exited: the job is then refused, nothing kept.
"""

from __future__ import annotations

import hashlib
import os
import re
import resource
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ..errors import PqsimdError, command, os_problem


def sha256_fd(fd: int) -> str:
    h, offset = hashlib.sha256(), 0
    while chunk := os.pread(fd, 1 << 20, offset):
        h.update(chunk)
        offset += len(chunk)
    return h.hexdigest()


@dataclass
class Held:
    """Open files, in the order given (a file given twice is opened once)."""

    paths: list[Path]
    fds: list[int]
    sha256: list[str]  # of the bytes held when they were checked

    def driver_paths(self) -> list[Path]:
        """What the driver opens: the held files themselves, whatever their names point to now."""
        return [Path(f"/proc/self/fd/{fd}") for fd in self.fds]

    def named(self, text: str) -> str:
        """A driver's message with each /proc/self/fd/N it names replaced by the file's own path."""
        by_fd = dict(zip(self.fds, self.paths))
        return re.sub(r"/proc/self/fd/(\d+)", lambda m: str(by_fd.get(int(m.group(1)), m.group(0))), text)

    @property
    def pass_fds(self) -> tuple[int, ...]:
        return tuple(sorted(set(self.fds)))

    def check_unchanged(self, what: str, study: Path) -> None:
        """After the driver exited: every file still holds the bytes checked (one line if not)."""
        for path, fd, sha in zip(self.paths, self.fds, self.sha256):
            if sha256_fd(fd) != sha:
                raise PqsimdError(f"{what}: {path} changed while it was timed (written over in place); nothing is "
                                  f"kept: run {command('run', study)} again (stale copies are made and gated again)")


def _room_for(n: int) -> None:
    """Raise this process's open-file limit to the hard one where `n` held files (an ablation's cells x
    --layouts copies: thousands) would not fit under the soft one; one line if the hard one is too low."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = n + 256  # the process's own files besides
    if soft != resource.RLIM_INFINITY and soft < need:
        if hard != resource.RLIM_INFINITY and hard < need:
            raise PqsimdError(f"a timing job holds {n} shared objects open, more than this shell's limit of open "
                              f"files allows ({hard}); raise it (ulimit -n {need}) or use fewer --layouts")
        resource.setrlimit(resource.RLIMIT_NOFILE, (need if hard == resource.RLIM_INFINITY else hard, hard))


@contextmanager
def hold(paths: list[Path], expected: list[str | None], what: str, study: Path) -> Iterator[Held]:
    """Open `paths` (expected: the gated sha256 of each, None where any is fine: built on the node)
    and check their bytes; PqsimdError (one line) for a file that is not the gated one."""
    fds: dict[Path, int] = {}
    sums: dict[Path, str] = {}
    _room_for(len(set(paths)))
    try:
        for path, want in zip(paths, expected):
            if path not in fds:
                try:
                    fds[path] = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
                except OSError as e:
                    raise PqsimdError(f"{what}: {os_problem(e)}") from None
                sums[path] = sha256_fd(fds[path])
            if want and sums[path] != want:
                raise PqsimdError(f"{what}: {path} is not the binary this study gated (its sha256 differs: replaced "
                                  f"since); nothing was timed with it: run {command('run', study)} again to make and "
                                  f"gate it again")
        yield Held(list(paths), [fds[p] for p in paths], [sums[p] for p in paths])
    finally:
        for fd in fds.values():
            os.close(fd)
