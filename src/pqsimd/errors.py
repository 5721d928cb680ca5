"""One exception type for bad input: the CLI prints its message on one line, no traceback."""


class PqsimdError(Exception):
    """A problem the user can fix; the message names the problem and the fix."""
