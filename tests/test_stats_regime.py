"""stats/regime.py against brute force and its library: the widest-gap split against every cut, W
against counting pairs, the job-state test's exact p against enumerating the assignments with the
statistic summed pair by pair, and the dip p against the diptest package on the same smoothed values;
then the dip test's false alarms and power on small simulations."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from pqsimd.stats import regime
from pqsimd.stats.regime import regime_test

BAND = math.log1p(0.02)


def test_split_of_is_the_widest_gap_of_every_cut_leaving_two_a_side():
    rng = np.random.default_rng(41)
    for _ in range(200):
        x = rng.normal(0, 1, int(rng.integers(6, 14)))
        sp = regime.split_of(x)
        xs = np.sort(x)
        gaps = {k: xs[k] - xs[k - 1] for k in range(2, x.size - 1)}
        best = max(gaps.values())
        assert sp.gap == pytest.approx(best) and gaps[sp.k] == best
        assert set(np.flatnonzero(sp.lower())) == set(np.flatnonzero(x < xs[sp.k]))
    assert regime.split_of(np.ones(8)) is None and regime.split_of(np.arange(5.0)) is None


def test_together_counts_the_splits_that_put_each_pair_on_one_side():
    rng = np.random.default_rng(42)
    lower = rng.random((7, 9)) < 0.4
    w = regime.together(lower)
    for i, j in itertools.product(range(9), repeat=2):
        want = 0 if i == j else sum(row[i] == row[j] for row in lower)
        assert w[i, j] == want


def state_p_brute(lower: np.ndarray, w: np.ndarray) -> float:
    def statistic(side):
        return sum(w[i, j] for i, j in itertools.combinations(range(side.size), 2) if side[i] == side[j])
    observed = statistic(lower)
    k = int(lower.sum())
    values = []
    for chosen in itertools.combinations(range(lower.size), k):
        side = np.zeros(lower.size, dtype=bool)
        side[list(chosen)] = True
        values.append(statistic(side))
    return float(np.mean(np.array(values) >= observed - 1e-9))


@pytest.mark.parametrize("seed", range(6))
def test_the_job_state_p_is_the_share_of_assignments_at_least_as_together(seed):
    rng = np.random.default_rng(seed)
    j = 9
    state = rng.random(j) < 0.3  # a few jobs in another state, shared by some of the other ops
    others = np.array([np.where(rng.random(j) < 0.8, state, rng.random(j) < 0.5) for _ in range(5)])
    w = regime.together(others)
    lower = np.where(rng.random(j) < 0.9, state, ~state)
    if not 0 < lower.sum() < j:
        lower[0] = not lower[0]
    assert regime.state_p(lower, w, rng) == pytest.approx(state_p_brute(lower, w), abs=1e-12)
    assert regime.state_p(lower, np.zeros((j, j)), rng) == 1.0


def test_the_dip_p_is_diptests_on_the_values_smoothed_by_the_band():
    import diptest

    x = np.r_[np.zeros(6), np.full(4, 0.2)] + np.random.default_rng(43).normal(0, 0.003, 10)
    got = regime.dip_p(x, BAND, np.random.default_rng(7))
    smoothed = regime.smooth(np.sort(x), BAND, np.random.default_rng(7))
    assert got == pytest.approx(float(diptest.diptest(smoothed)[1]))
    assert math.isnan(regime.dip_p(x[:5], BAND, np.random.default_rng(7)))


def test_regime_test_null_and_power():
    rng = np.random.default_rng(11)
    null = [regime_test(rng.lognormal(0, 0.05, 10) - 1, BAND, rng).p for _ in range(300)]
    assert np.mean(np.array(null) < 0.05) <= 0.05
    two = [regime_test(np.r_[rng.normal(0, 0.003, 5), rng.normal(0.3, 0.003, 5)], BAND, rng) for _ in range(100)]
    assert np.mean([r.p < 0.05 for r in two]) > 0.8
    assert all(r.n_low == 5 and r.n_high == 5 and r.gap > 0.25 for r in two)
    tied = [regime_test(np.where(rng.random(10) < 0.7, 0.0, rng.normal(0, 0.002, 10)), BAND, rng).p for _ in range(200)]
    assert np.mean(np.array(tied) < 0.05) <= 0.05  # quantized single-state ratios are not two regimes
    assert math.isnan(regime_test(np.zeros(5), BAND, rng).p)
