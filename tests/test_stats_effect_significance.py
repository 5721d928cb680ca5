"""stats/effect.py, significance.py, bootstrap.py and power.icc1 against brute force and scipy, on small data."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from pqsimd.stats import bootstrap as bs
from pqsimd.stats.effect import delta_from_u, delta_job_bootstrap, pair_balance, u_statistic
from pqsimd.stats.power import icc1
from pqsimd.stats.significance import bh, holm, mwu_less, mwu_less_many


def delta_double_loop(variant, base):
    gt = sum(1 for v in variant for b in base if v < b)
    lt = sum(1 for v in variant for b in base if v > b)
    return (gt - lt) / (len(variant) * len(base))


@pytest.mark.parametrize("seed", range(6))
def test_delta_from_u_equals_double_loop(seed):
    rng = np.random.default_rng(seed)
    n, m = rng.integers(1, 40, size=2)
    base = np.round(rng.lognormal(3, 0.3, n))  # rounding makes ties
    var = np.round(rng.lognormal(2.9, 0.3, m))
    u_scipy, _ = mwu_less(var, base)
    assert u_statistic(var, base) == pytest.approx(u_scipy)
    assert delta_from_u(u_scipy, m, n) == pytest.approx(delta_double_loop(var, base), abs=1e-12)


def test_delta_extremes_and_sign():
    base = np.array([10.0, 11, 12])
    fast = np.array([1.0, 2])
    assert delta_from_u(u_statistic(fast, base), 2, 3) == 1.0  # every variant value below every baseline
    assert delta_from_u(u_statistic(base, fast), 3, 2) == -1.0
    assert delta_from_u(u_statistic(base, base), 3, 3) == 0.0


def test_mwu_p_equals_scipy_and_batched_equals_single():
    rng = np.random.default_rng(1)
    pairs = [(rng.lognormal(0, 1, 30), rng.lognormal(0.3, 1, 25)) for _ in range(4)]
    pairs += [(np.round(rng.lognormal(0, 0.2, 50) * 10), np.round(rng.lognormal(0.1, 0.2, 50) * 10)) for _ in range(3)]
    pairs += [(rng.normal(size=4), rng.normal(size=5))]  # small: exact
    u, p = mwu_less_many(pairs)
    for i, (v, b) in enumerate(pairs):
        ref = stats.mannwhitneyu(v, b, alternative="less")
        assert u[i] == pytest.approx(ref.statistic)
        assert p[i] == pytest.approx(ref.pvalue, rel=1e-10)


def test_holm_hand_computed():
    p = np.array([0.01, 0.04, 0.03, 0.005])
    # sorted: 0.005*4=0.02, 0.01*3=0.03, 0.03*2=0.06, 0.04*1=0.04 -> running max 0.02, 0.03, 0.06, 0.06
    assert holm(p) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm(np.array([0.5, 0.9])) == pytest.approx([1.0, 1.0])
    out = holm(np.array([0.01, np.nan, 0.02]))  # NaN is not in the family (m = 2)
    assert np.isnan(out[1]) and out[[0, 2]] == pytest.approx([0.02, 0.02])


def test_bh_hand_computed():
    p = np.array([0.01, 0.04, 0.03, 0.005])
    # sorted 0.005,0.01,0.03,0.04 -> *4/1, *4/2, *4/3, *4/4 = 0.02, 0.02, 0.04, 0.04 -> step-up min
    assert bh(p) == pytest.approx([0.02, 0.04, 0.04, 0.02])
    out = bh(np.array([np.nan, 0.01]))
    assert np.isnan(out[0]) and out[1] == pytest.approx(0.01)


def test_icc1_matches_anova_formula_balanced():
    rng = np.random.default_rng(3)
    k, n = 6, 8
    y = (rng.normal(0, 1, (k, 1)) + rng.normal(0, 1, (k, n))).ravel()
    job = np.repeat(np.arange(k), n)
    means = y.reshape(k, n).mean(1)
    msb = n * ((means - y.mean()) ** 2).sum() / (k - 1)
    msw = ((y.reshape(k, n) - means[:, None]) ** 2).sum() / (k * (n - 1))
    assert icc1(y, job) == pytest.approx((msb - msw) / (msb + (n - 1) * msw))


# --- bootstrap machinery ---------------------------------------------------------------------

def brute_index(sample, counts, pos):
    """g with Λ(g) <= pos < Λ(g+1), from the explicit cumulative weights of every value."""
    out = []
    for b in range(len(pos)):
        lam = np.concatenate([[0], np.cumsum(counts[b][sample.lab])])
        out.append(np.searchsorted(lam, pos[b], side="right") - 1)
    return np.array(out)


def expanded_medians(sample, counts, u_lo, u_hi):
    """The same replicates built the slow way: materialise each resampled pool (values repeated by
    their job's count), sort it, and read off the drawn order statistics at floor(N*·u)."""
    out = []
    for b in range(counts.shape[0]):
        pool = np.sort(np.repeat(sample.v, counts[b][sample.lab]))
        n = pool.size
        out.append(0.5 * (pool[int(u_lo[b] * n)] + pool[int(u_hi[b] * n)]))
    return np.array(out)


def two_stage_brute_force(byjob, B, rng):
    """The textbook two-stage bootstrap: J jobs with replacement, then S_j spins within each chosen job."""
    J = len(byjob)
    out = np.empty(B)
    for b in range(B):
        chosen = rng.integers(0, J, J)
        out[b] = np.median(np.concatenate([rng.choice(byjob[j], byjob[j].size) for j in chosen]))
    return out


def test_delta_job_bootstrap_equals_expanded_pools():
    rng = np.random.default_rng(12)
    Jb, Jv, S = 3, 4, 6
    base = np.round(rng.lognormal(1, 0.4, Jb * S) * 5)
    var = np.round(rng.lognormal(0.9, 0.4, Jv * S) * 5)
    jb, jv = np.repeat(np.arange(Jb), S), np.repeat(np.arange(Jv), S)
    sb, sv = bs.Sample.from_jobs(base, jb), bs.Sample.from_jobs(var, jv)
    bal = pair_balance(sb, sv, jb, jv, base, var)
    # no resampling (all counts 1): the plain δ
    ones_b, ones_v = np.ones((1, Jb), int), np.ones((1, Jv), int)
    assert delta_job_bootstrap(bal, sb.sizes, sv.sizes, ones_b, ones_v)[0] == pytest.approx(delta_double_loop(var, base))
    cb, cv = bs.job_counts(Jb, 30, rng), bs.job_counts(Jv, 30, rng)
    fast = delta_job_bootstrap(bal, sb.sizes, sv.sizes, cb, cv)
    for b in range(30):
        pb = np.repeat(base, cb[b][jb])
        pv = np.repeat(var, cv[b][jv])
        assert fast[b] == pytest.approx(delta_double_loop(pv, pb), abs=1e-12)


def test_rng_streams_depend_only_on_seed_and_key():
    a = bs.rng_for(1, "naive", "ticks", "x").random(3)
    assert a == pytest.approx(bs.rng_for(1, "naive", "ticks", "x").random(3))
    assert not np.allclose(a, bs.rng_for(2, "naive", "ticks", "x").random(3))
    assert not np.allclose(a, bs.rng_for(1, "naive", "ticks", "y").random(3))


