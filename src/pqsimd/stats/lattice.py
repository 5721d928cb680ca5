"""The lattice a job's own readings lie on: the clock's step as the samples show it.

Every sample is the difference of two fenced clock readings, so on a clock that moves in steps of
g every sample is a multiple of g (a Zen TSC read fenced: 26 ticks; Emerald Rapids: 2). The driver
measures the step before it times anything (driver/timer.c); analyze checks it against what the
job recorded, with the same rule (timer.h, PQSIMD_LATTICE_*): the largest divisor of one of the
most frequent readings that divides all but 1 in OFF_PER of them, taken only when the k distinct
readings on it could not all be multiples of g by chance (g^(k-1) >= CHANCE). Where the two
disagree, the data's lattice is the step the job's resolution is computed with.
"""

from __future__ import annotations

import math

import numpy as np

OFF_PER = 100  # timer.h PQSIMD_LATTICE_OFF_PER: at most 1 reading in 100 off the lattice
CHANCE = 1e6  # timer.h PQSIMD_LATTICE_CHANCE
TOP = 8  # timer.h PQSIMD_TOP_DELTAS: the most frequent readings whose divisors are candidates
SUBSAMPLE = 100_000  # readings a candidate is first tried on (every reading confirms the winner)


def _divisors(v: int) -> list[int]:
    small = [i for i in range(1, math.isqrt(v) + 1) if v % i == 0]
    return sorted({*small, *(v // i for i in small)}, reverse=True)


def _holds(g: int, v: np.ndarray) -> bool:
    off = np.count_nonzero(v % g)
    return off * OFF_PER <= v.size and (len(np.unique(v[v % g == 0])) - 1) * math.log(g) >= math.log(CHANCE)


def lattice_step(readings: np.ndarray) -> int | None:
    """The step of the lattice the readings lie on (1: none above 1); None when nothing can be said
    (no nonzero reading, or too few distinct ones for even a step of 2 to be told from chance)."""
    v = np.abs(np.asarray(readings, dtype=np.int64).ravel())
    v = v[v != 0]
    if not v.size:
        return None
    values, counts = np.unique(v, return_counts=True)
    top = values[np.argsort(-counts, kind="stable")[:TOP]]
    sample = v if v.size <= SUBSAMPLE else v[:: v.size // SUBSAMPLE]
    candidates = sorted({g for t in top for g in _divisors(int(t)) if g > 1}, reverse=True)
    for g in candidates:
        if _holds(g, sample) and (sample is v or _holds(g, v)):
            return g
    # no lattice: a claim only where even a step of 2 would have shown
    return 1 if (values.size - 1) * math.log(2) >= math.log(CHANCE) else None
