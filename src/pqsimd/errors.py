"""One exception type for bad input: the CLI prints its message on one line, no traceback."""

import shlex


class PqsimdError(Exception):
    """A problem the user can fix; the message names the problem and the fix."""


def command(*args: object) -> str:
    """A pqsimd command line for a hint, quoted so it is safe to paste (spaces, $(...), quotes)."""
    return "`" + shlex.join(["pqsimd", *(str(a) for a in args)]) + "`"


class Interrupted(PqsimdError):
    """Ctrl-C during a run: what was finished is kept; the message says how to continue."""
