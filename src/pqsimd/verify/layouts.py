"""The gate of a job's laid-out copies (layout.py): every copy a job times is checked before it is.

A copy is the gated build's own objects linked again in another order, so it must hold the same
functions (names and sizes, `nm -S`: the structural check, cheap) and give the build's answers to the
kind's first gate vector, byte for byte (the behavioural check, through the driver on the very copy
that is timed). The behavioural check costs one protocol run (keypair, encapsulation, decapsulation
or signing) per copy: where that run of the build itself takes longer than BEHAVIOUR_LIMIT_S (-O0
key generation of the large McEliece sets), copies get the structural check alone, and say so.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

from .. import binary
from ..errors import PqsimdError
from . import run_vectors, vectors_for

BEHAVIOUR_LIMIT_S = 2.0
VECTORS = 1


def functions(library: Path) -> Counter | None:
    """(name, size) of every function symbol the library defines (binary.Library.functions); None when
    nm cannot read it."""
    try:
        return binary.library(library).functions()
    except PqsimdError:
        return None


class Reference:
    """The build's own answers and functions, computed once per (build, scheme)."""

    def __init__(self, driver: Path, library: Path, scheme: str, launcher: list[str] | tuple = ()):
        self.driver, self.library, self.scheme, self.launcher = driver, library, scheme, list(launcher)
        self.vectors = vectors_for(scheme)[:VECTORS]
        t0 = time.monotonic()
        self.answers = run_vectors(driver, library, scheme, self.vectors, self.launcher)
        self.seconds = time.monotonic() - t0
        self.functions = functions(library)

    @property
    def behavioural(self) -> bool:
        return self.seconds <= BEHAVIOUR_LIMIT_S


def check(ref: Reference, copy: Path) -> tuple[bool, str]:
    """(passed, what was checked or what differs) for one copy against its build."""
    done = []
    if ref.functions is not None:
        got = functions(copy)
        if got is None:
            return False, "nm cannot read the copy"
        if got != ref.functions:
            diff = sorted((got - ref.functions) + (ref.functions - got))
            return False, f"its functions differ from the build's (e.g. {diff[0][0]}, size {diff[0][1]})"
        done.append("functions")
    if ref.behavioural:
        try:
            answers = run_vectors(ref.driver, copy, ref.scheme, ref.vectors, ref.launcher)
        except (RuntimeError, OSError) as e:
            return False, f"the driver's gate failed on it ({e})"
        if answers != ref.answers:
            from . import first_difference

            fields = tuple(sorted({k for a in ref.answers for k in a}))
            return False, f"its answers differ from the build's: {first_difference(ref.answers, answers, fields)}"
        done.append(f"answers to {len(ref.vectors)} vector")
    else:
        done.append(f"no answers (one vector takes {ref.seconds:.1f} s > {BEHAVIOUR_LIMIT_S:g} s)")
    return True, ", ".join(done)
