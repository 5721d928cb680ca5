"""stats/lattice.py against brute force: the step found is the largest g that the rule, applied to
every g in turn (at most 1 reading in OFF_PER off the lattice, and enough distinct readings on it
that g^(k-1) >= CHANCE), accepts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pqsimd.stats.lattice import CHANCE, OFF_PER, lattice_step


def step_brute(readings: np.ndarray, largest: int) -> int | None:
    v = np.abs(readings[readings != 0])
    for g in range(largest, 1, -1):
        on = v[v % g == 0]
        if (v.size - on.size) * OFF_PER <= v.size and (np.unique(on).size - 1) * math.log(g) >= math.log(CHANCE):
            return g
    return 1 if (np.unique(v).size - 1) * math.log(2) >= math.log(CHANCE) else None


@pytest.mark.parametrize("step,off", [(2, 0), (3, 10), (7, 40), (26, 0), (26, 45), (1, 0)])
def test_the_step_is_the_largest_the_rule_accepts(step, off):
    rng = np.random.default_rng(step * 100 + off)
    readings = step * rng.integers(1000, 5000, 5000)
    readings[:off] += 1  # a few readings off the lattice (at most 1 in 100 when off <= 50)
    want = step_brute(readings, 10 * max(step, 2))
    assert want == step
    assert lattice_step(readings) == want


def test_too_few_distinct_readings_say_nothing():
    readings = np.array([52, 52, 78, 52, 104])  # 26 fits, but three values could be multiples by chance
    assert step_brute(readings, 200) is None and lattice_step(readings) is None
