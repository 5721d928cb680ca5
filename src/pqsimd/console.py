"""The console the commands print their tables on (show, list, doctor, compare, campaign, cliffs).

At a terminal: the terminal's width. Piped (`| less`, `> file`): rich would assume 80 columns and cut
cells to fit ("mach…", "2.46× [2.4…"), so the width is COLUMNS when set, else wide enough for every
line: a table is as wide as its content and nothing is cut; `less -S` scrolls it.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from rich.console import Console

PIPED_WIDTH = 100_000  # no line of a table is this wide: each is as wide as its content
# Tables of prose (doctor's details and remedies, list's descriptions) wrap their cells instead: as wide as
# their content they were 900 and 300 columns piped; at this width every cell wraps, none is cut.
PROSE_WIDTH = 120


def stdout_console(piped_width: int = PIPED_WIDTH, **options: Any) -> Console:
    if sys.stdout.isatty() or os.environ.get("COLUMNS", "").strip().isdigit():
        return Console(**options)
    return Console(width=piped_width, **options)


def log_console(**options: Any) -> Console:
    """The run's log on stderr: at a terminal its width; piped (`make study > log`, `2>&1 | tee`), one
    line per message, so no path is broken at 80 columns."""
    if sys.stderr.isatty() or os.environ.get("COLUMNS", "").strip().isdigit():
        return Console(stderr=True, **options)
    return Console(stderr=True, width=PIPED_WIDTH, **options)
