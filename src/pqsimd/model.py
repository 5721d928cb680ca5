"""The words a study is made of, each defined once: its design, the kinds of job it plans, how its
builds are laid out, what the report's family level adjusts for, what a shared CPU costs a job.

Each is a `StrEnum`: its members are the very strings study.toml, plan.json, raw records and results
hold (so files of older pqsimd versions read unchanged), and the command line's choices are built
from them. Nothing else in the code spells these values.
"""

from __future__ import annotations

from enum import StrEnum


class Design(StrEnum):
    """How a study's jobs hold its builds."""
    PAIRED = "paired"  # every build of a parameter set in one process per job, a fresh order each spin
    SEPARATE = "separate"  # one process per build and job (the paper's)


class JobKind(StrEnum):
    """What one timing job is (its id's first part for paired and alone jobs: ids.py)."""
    PAIRED = "paired"
    SEPARATE = "separate"
    ALONE = "alone"  # one build of a paired study alone in its process (co-residency)


class LayoutMode(StrEnum):
    """Where a job's builds are in memory."""
    RANDOM = "random"  # every job relinks its own copies in a seeded order (layout.py)
    FIXED = "fixed"  # the builds as linked


class AloneLayouts(StrEnum):
    """Which copies an alone job loads."""
    PAIRED = "paired"  # alone job r loads paired job r's copies (co-residency with the layout held)
    OWN = "own"  # its own seeds


class AloneSets(StrEnum):
    FIRST = "first"  # each family's first parameter set
    ALL = "all"


class Multiplicity(StrEnum):
    """The family level every interval is printed at (analyze/multiplicity.py)."""
    FCR = "fcr"  # Benjamini-Hochberg false coverage-statement rate
    BY = "by"  # Benjamini-Yekutieli, valid under any dependence
    BONFERRONI = "bonferroni"
    NONE = "none"


class SharedCpu(StrEnum):
    """What happens to a timing job whose CPU another program used (run/cpuclaim.py)."""
    DISCARD = "discard"  # run again, on an idle CPU when there is one
    KEEP = "keep"  # kept, marked; the verdicts are shown with and without such jobs


DEFAULT_DESIGN = Design.PAIRED
RECORDED_DESIGN = Design.SEPARATE  # what a record without a design was (schema 1: one process per build)
DEFAULT_LAYOUT = LayoutMode.RANDOM
UNRECORDED_LAYOUT = LayoutMode.FIXED  # studies planned before layouts were randomized
DEFAULT_ALONE_LAYOUTS = AloneLayouts.PAIRED
UNRECORDED_ALONE_LAYOUTS = AloneLayouts.OWN
DEFAULT_MULTIPLICITY = Multiplicity.FCR
DEFAULT_SHARED_CPU = SharedCpu.DISCARD


def choices(kind: type[StrEnum]) -> list[str]:
    """The values of an enum, in order: a command-line option's choices."""
    return [m.value for m in kind]
