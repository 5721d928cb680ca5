"""stats/interval.py against scipy and brute force: the order-statistic interval's rank and level and
the jobs a level needs by the binomial, the clustered sign test by enumerating every sign flip, its
interval by scanning theta, the weighted median by replicating each job's values, and the clock's
resolution by the corners of both lattice errors."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from pqsimd.stats.interval import (clustered_interval, clustered_p, jobs_needed, order_level, order_rank,
                                   resolution_halfwidth, weighted_median)


def flip_p_brute(clusters, theta: float) -> float:
    """Two-sided p of sum_j S_j over all 2^J sign flips of the job scores (equal-sized jobs)."""
    scores = np.array([np.sign(np.asarray(c) - theta).sum() for c in clusters])
    observed = abs(scores.sum())
    flips = np.array(list(itertools.product((-1, 1), repeat=len(scores))))
    sums = np.abs(flips @ np.abs(scores))
    return float(np.mean(sums >= observed - 1e-9))


def _jobs(seed: int, j: int, copies: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.normal(0, 0.02) + rng.normal(0, 0.01, copies) for _ in range(j)]


@pytest.mark.parametrize("seed,j,copies", [(0, 6, 2), (1, 7, 3), (2, 8, 2), (3, 5, 4)])
def test_clustered_p_is_the_exact_sign_flip_test(seed, j, copies):
    clusters = _jobs(seed, j, copies)
    values = np.sort(np.concatenate(clusters))
    # every value (a tie: that copy scores 0), every gap, and beyond both ends
    thetas = np.concatenate([values, 0.5 * (values[1:] + values[:-1]), [values[0] - 1, values[-1] + 1]])
    got = clustered_p(clusters, thetas)
    want = np.array([flip_p_brute(clusters, t) for t in thetas])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("seed,gamma", [(4, 0.05), (5, 0.1), (6, 0.2)])
def test_clustered_interval_is_the_set_the_brute_force_test_keeps(seed, gamma):
    clusters = _jobs(seed, 8, 2)
    lo, hi = clustered_interval(clusters, gamma)
    values = np.sort(np.concatenate(clusters))
    grid = np.linspace(values[0] - 0.01, values[-1] + 0.01, 801)
    kept = grid[[flip_p_brute(clusters, t) > gamma for t in grid]]
    assert kept.size  # 8 jobs reach 1 - 2^-7 > 1 - gamma
    step = grid[1] - grid[0]
    assert lo <= kept.min() < lo + step and hi - step < kept.max() <= hi


def test_weighted_median_is_the_median_of_each_job_replicated_to_equal_weight():
    rng = np.random.default_rng(7)
    for _ in range(50):
        clusters = [rng.normal(0, 1, rng.integers(1, 5)) for _ in range(rng.integers(2, 7))]
        reps = math.lcm(*(len(c) for c in clusters))
        replicated = np.concatenate([np.repeat(c, reps // len(c)) for c in clusters])
        assert weighted_median(clusters) == pytest.approx(float(np.median(replicated)), abs=1e-12)


def test_resolution_halfwidth_is_the_worst_corner_of_both_lattice_errors():
    for rb, rv in [(0.0, 0.0), (0.01, 0.0), (0.003, 0.02), (0.2, 0.1), (0.5, 0.49)]:
        corners = [abs(math.log((1 + eb) / (1 + ev))) for eb in (-rb, rb) for ev in (-rv, rv)]
        assert resolution_halfwidth(rb, rv) == pytest.approx(max(corners), abs=1e-15)
    assert resolution_halfwidth(1.0, 0.0) == math.inf and resolution_halfwidth(0.0, 1.5) == math.inf


def test_jobs_needed_is_the_fewest_jobs_whose_range_reaches_the_level():
    for gamma in (0.5, 0.2, 0.05, 0.01, 0.001, 0.0005):
        j = jobs_needed(gamma)
        brute = next(n for n in range(2, 64) if 2 * stats.binom.pmf(0, n, 0.5) <= gamma)
        assert j == brute, gamma
        assert order_level(j, 1) >= 1 - gamma - 1e-12


def test_order_rank_and_level_match_the_binomial():
    """k is the largest with 2 P(Bin(J, 1/2) <= k-1) <= gamma (scipy's binomial as the oracle)."""
    for j in range(1, 40):
        for gamma in (0.2, 0.05, 0.01, 0.002):
            k = order_rank(j, gamma)
            ok = [kk for kk in range(1, (j + 1) // 2 + 1) if 2 * stats.binom.cdf(kk - 1, j, 0.5) <= gamma]
            assert k == (max(ok) if ok else 0), (j, gamma)
            if k:
                assert order_level(j, k) == pytest.approx(1 - 2 * stats.binom.cdf(k - 1, j, 0.5))
                assert order_level(j, k) >= 1 - gamma - 1e-12
    assert order_level(5, 1) == 1 - 2 / 32 and order_level(10, 2) == pytest.approx(1 - 22 / 1024)
    assert [jobs_needed(g) for g in (0.05, 0.0625, 0.01)] == [6, 5, 8]
