"""Ids, and every id made of others, in one place.

An id (family, scheme, op, implementation, variant, compiler) is 1-64 letters, digits, '-', '_'
or '+': never a '.', a path separator, or empty. Composite ids join their parts with SEP ('.'),
which no part can contain, so a composite id names exactly one thing (variant `a` of compiler
`b.c` and variant `a.b` of compiler `c` cannot both exist) and parses back into its parts.

    build               <variant>.<compiler>.<family>        DIR/bin/<build>.so, DIR/gate/<build>.json
    timing job          paired.<scheme>.<index>  |  <variant>.<compiler>.<scheme>.<index>
                        | alone.<variant>.<compiler>.<scheme>.<index> (a paired study's build alone in a process)
    per-build metric    <variant>.<compiler>.<scheme>.<metric>
    exclusion           <variant>.<compiler>.<family>.<scheme>  DIR/excluded/<exclusion>.json
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .model import JobKind
from .errors import PqsimdError

SEP = "."
MAX_LEN = 64
PART = r"[A-Za-z0-9][A-Za-z0-9_+-]*"
SAFE_ID = re.compile(rf"^{PART}$")
# A composite id (a job id read back from plan.json): parts joined by SEP, nothing else.
COMPOSITE_ID = re.compile(rf"^{PART}(\.{PART})*$")
PAIRED = JobKind.PAIRED  # the first part of a paired job's id
ALONE = JobKind.ALONE  # the first part (and the design) of a job that times one build of a paired study alone


def check_id(kind: str, value: Any, where: str, hint: str = "") -> str:
    if not isinstance(value, str) or not SAFE_ID.match(value) or len(value) > MAX_LEN:
        raise PqsimdError(
            f"{where}: {kind} id {value!r} is not allowed; use 1-{MAX_LEN} letters, digits, '-', '_' or '+' "
            f"(ids become file names, joined by '{SEP}'){hint}"
        )
    return value


def check_composite(kind: str, value: Any, where: str) -> str:
    """A composite id read from a file (plan.json): parts joined by SEP, so never a path."""
    if not isinstance(value, str) or not COMPOSITE_ID.match(value) or len(value) > 4 * MAX_LEN:
        raise PqsimdError(f"{where}: {kind} id {value!r} is not a pqsimd id (parts of letters, digits, '-', '_', '+' "
                          f"joined by '{SEP}'); restore the file or use a new directory")
    return value


AA_SUFFIX = "+aa"  # the duplicate build of an A/A check: the same variant under a second id


def aa_variant_id(variant: str) -> str:
    """The id of a variant's A/A duplicate (built from the same definition, timed beside it)."""
    return f"{variant}{AA_SUFFIX}"


def _join(*parts: str) -> str:
    for p in parts:
        if SEP in p or not p:  # unreachable for checked ids; refuse rather than collide
            raise PqsimdError(f"id part {p!r} contains '{SEP}' or is empty: it would make ids collide; rename it")
    return SEP.join(parts)


@dataclass(frozen=True)
class BuildId:
    """One build: a variant of a family by a compiler (one shared object holding every parameter set)."""

    variant: str
    compiler: str
    family: str

    def __str__(self) -> str:
        return _join(self.variant, self.compiler, self.family)

    @classmethod
    def parse(cls, text: str) -> "BuildId":
        parts = text.split(SEP)
        if len(parts) != 3:
            raise PqsimdError(f"{text!r} is not a build id (<variant>{SEP}<compiler>{SEP}<family>)")
        return cls(*parts)


def build_id(variant: str, compiler: str, family: str) -> str:
    return str(BuildId(variant, compiler, family))


def same_code_build(build: str) -> str:
    """The build whose code this one is: an A/A duplicate's original, else itself (any other text too)."""
    parts = build.split(SEP)
    if len(parts) == 3 and parts[0].endswith(AA_SUFFIX):
        return build_id(parts[0][: -len(AA_SUFFIX)], parts[1], parts[2])
    return build


def timing_job_id(design: str, scheme: str, index: int, variant: str | None = None, compiler: str | None = None) -> str:
    if design == PAIRED:
        return _join(PAIRED, scheme, str(index))
    if design == ALONE:
        return _join(ALONE, str(variant), str(compiler), scheme, str(index))
    return _join(str(variant), str(compiler), scheme, str(index))


def exclusion_id(build: str, scheme: str) -> str:
    b = BuildId.parse(build)
    return _join(b.variant, b.compiler, b.family, scheme)


def metric_job_id(variant: str, compiler: str, scheme: str, metric: str) -> str:
    return _join(variant, compiler, scheme, metric)


SIM_JOB_SEPARATOR = "+"  # the sim metric's job ids: <variant>.<compiler>.<scheme>.sim+<geometry>


def geometry_job_metric(metric: str, geometry: str) -> str:
    """The last part of a per-build job id of a metric run once per cache geometry (run/sim.py)."""
    return f"{metric}{SIM_JOB_SEPARATOR}{geometry}"


def geometry_of_job(job_id: str, metric: str) -> str | None:
    """The geometry of such a job id (or a raw file's name without .parquet); None: another metric's."""
    last = job_id.rsplit(".", 1)[-1]
    return last.split(SIM_JOB_SEPARATOR, 1)[1] if last.startswith(metric + SIM_JOB_SEPARATOR) else None
