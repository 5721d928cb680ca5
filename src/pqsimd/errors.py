"""One exception type for bad input: the CLI prints its message on one line, no traceback."""

import difflib
import errno
import os
import shlex
import sys
from collections.abc import Iterable


class PqsimdError(Exception):
    """A problem the user can fix; the message names the problem and the fix."""


def invoked() -> str:
    """pqsimd as the user typed it: `.venv/bin/pqsimd` (what the README and `make study` run) where it
    was started by a relative path, which a bare `pqsimd` would not find; else `pqsimd`."""
    typed = sys.argv[0] if sys.argv else ""
    if os.path.basename(typed) == "pqsimd" and os.sep in typed and not os.path.isabs(typed):
        return typed
    return "pqsimd"


def command(*args: object) -> str:
    """A pqsimd command line for a hint, quoted so it is safe to paste (spaces, $(...), quotes), in the
    form the user started pqsimd with (`invoked`)."""
    return "`" + shlex.join([invoked(), *(str(a) for a in args)]) + "`"


def did_you_mean(given: object, valid: Iterable[object]) -> str:
    """"; did you mean 'X'?" when `given` is close to one of `valid` (difflib, ignoring case), else "":
    appended to a refusal that lists the valid names, so a typo's fix is read, not searched for."""
    names = list(dict.fromkeys(str(v) for v in valid))
    folded: dict[str, str] = {}
    for n in names:
        folded.setdefault(n.casefold(), n)
    near = difflib.get_close_matches(str(given).casefold(), list(folded), n=1, cutoff=0.6)
    return f"; did you mean '{folded[near[0]]}'?" if near else ""


class Interrupted(PqsimdError):
    """Ctrl-C during a run: what was finished is kept; the message says how to continue."""


_FIXES = {
    errno.ENOSPC: "free some space",
    errno.EDQUOT: "free some space (disk quota)",
    errno.EROFS: "the file system is read-only: work on a writable copy of the study",
    errno.EACCES: "fix the permissions, or work on a copy of the study",
    errno.EPERM: "fix the permissions, or work on a copy of the study",
    errno.EFBIG: "raise the file size limit (ulimit -f)",
}


def os_problem(e: OSError) -> str:
    """One line for a failed read or write (full disk, read-only directory, ...): what, where, the fix."""
    where = f": {e.filename}" if e.filename else ""
    fix = _FIXES.get(e.errno or 0, "check the path")
    return f"{e.strerror or e}{where}; {fix}, then run the same command again"


def tagged(label: str, style: str, text: str):
    """A console line: `label` in `style`, then `text` printed literally, so a path, a message or a
    hint with [brackets] ("[study] job_timeout", "[min, max]") is never taken for rich markup."""
    from rich.text import Text

    return Text.assemble((label, style), "" if text.startswith(":") else " ", text)


class CountError(Exception):
    """A count that could not be taken (callgrind or the QEMU plugin): the op and why; `unsupported`:
    the instruction the tool cannot run, where that is the reason."""

    def __init__(self, message: str, unsupported: str | None = None):
        super().__init__(message)
        self.unsupported = unsupported
