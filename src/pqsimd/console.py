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


def stdout_console(**options: Any) -> Console:
    if sys.stdout.isatty() or os.environ.get("COLUMNS", "").strip().isdigit():
        return Console(**options)
    return Console(width=PIPED_WIDTH, **options)
