"""The hand-written statistics of `pqsimd analyze` against brute force and scipy, on small data."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from pqsimd.analyze import bootstrap as bs
from pqsimd.analyze.effect import delta_from_u, delta_job_bootstrap, pair_balance, u_statistic
from pqsimd.analyze.groups import icc1
from pqsimd.analyze.significance import bh, holm, job_test, mwu_less, mwu_less_many


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


def test_welch_job_test_equals_scipy():
    rng = np.random.default_rng(2)
    for _ in range(5):
        b, v = rng.lognormal(5, 0.1, rng.integers(2, 9)), rng.lognormal(4.9, 0.2, rng.integers(2, 9))
        p, note = job_test(b, v)
        ref = stats.ttest_ind(np.log(v), np.log(b), equal_var=False)
        assert note == ""
        assert p == pytest.approx(ref.pvalue, rel=1e-9)
    p, note = job_test(np.array([5.0]), np.array([4.0, 4.1]))
    assert np.isnan(p) and "fewer than 2 jobs" in note
    # no spread in either group: different constants are an exact difference, equal ones none
    p, note = job_test(np.array([72.0, 72.0]), np.array([36.0, 36.0]))
    assert p == 0.0 and "exact" in note
    p, note = job_test(np.array([5.0, 5.0]), np.array([5.0, 5.0]))
    assert p == 1.0


def test_paired_job_test_equals_scipy_one_sample():
    from pqsimd.analyze.significance import paired_job_test

    rng = np.random.default_rng(7)
    for _ in range(5):
        n_jobs, spins = int(rng.integers(2, 8)), int(rng.integers(3, 30))
        job = np.repeat(np.arange(n_jobs), spins)
        ratios = np.exp(rng.normal(0.05, 0.1, n_jobs)[job] + rng.normal(0, 0.02, job.size))
        p, note = paired_job_test(ratios, job)
        logs = [np.log(np.median(ratios[job == j])) for j in range(n_jobs)]
        assert note == "" and p == pytest.approx(stats.ttest_1samp(logs, 0.0).pvalue, rel=1e-9)
    p, note = paired_job_test(np.full(10, 2.0), np.repeat([0, 1], 5))
    assert p == 0.0 and "exact" in note
    p, note = paired_job_test(np.full(5, 2.0), np.zeros(5, int))
    assert np.isnan(p) and "fewer than 2" in note


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


@pytest.mark.parametrize("J,S,shift", [(1, 9, 0), (3, 7, 0), (4, 3, 0), (6, 40, 3), (2, 101, 0)])
def test_weighted_index_equals_brute_force(J, S, shift):
    rng = np.random.default_rng(J * 100 + S)
    vals = np.round(rng.lognormal(1, 0.5, J * S) * 4) + np.repeat(np.arange(J) * shift, S)
    s = bs.Sample.from_jobs(vals, rng.permutation(np.repeat(np.arange(J), S)))
    counts = bs.job_counts(J, 500, rng)
    total = counts @ s.sizes
    lo, hi = np.sort(rng.random((2, 500)), axis=0) * total
    lo[:5], hi[-5:] = 0, np.nextafter(total[-5:], 0)
    g, lam = bs.weighted_order_index(s, counts, lo)
    assert (g == brute_index(s, counts, lo)).all()
    assert (bs.advance_index(s, counts, g, lam, hi) == brute_index(s, counts, hi)).all()


def expanded_medians(sample, counts, u_lo, u_hi):
    """The same replicates built the slow way: materialise each resampled pool (values repeated by
    their job's count), sort it, and read off the drawn order statistics at floor(N*·u)."""
    out = []
    for b in range(counts.shape[0]):
        pool = np.sort(np.repeat(sample.v, counts[b][sample.lab]))
        n = pool.size
        out.append(0.5 * (pool[int(u_lo[b] * n)] + pool[int(u_hi[b] * n)]))
    return np.array(out)


def test_hierarchical_replicates_equal_brute_force_given_same_draws():
    rng = np.random.default_rng(5)
    J, S, B = 5, 11, 400
    vals = rng.lognormal(0, 0.3, J * S) * np.repeat(np.exp(rng.normal(0, 0.3, J)), S)
    s = bs.Sample.from_jobs(vals, np.repeat(np.arange(J), S))
    counts = bs.job_counts(J, B, rng)
    fast = bs.hierarchical_medians(s, B, np.random.default_rng(9), counts)
    # replay the same uniforms
    total = counts @ s.sizes
    u_lo, u_hi = bs._middle_uniforms(np.random.default_rng(9), total)
    assert fast == pytest.approx(expanded_medians(s, counts, u_lo, u_hi), abs=0, rel=0)


def test_naive_bootstrap_median_has_the_exact_distribution():
    """For odd n, P(resample median <= x_(i)) = P(Binomial(n, i/n) >= (n+1)/2) exactly."""
    rng = np.random.default_rng(7)
    n, B = 15, 200_000
    x = np.sort(rng.normal(size=n))
    reps = bs.naive_medians(bs.Sample.from_jobs(x, np.zeros(n, int)), B, rng)
    emp = np.array([(reps <= x[i]).mean() for i in range(n)])
    exact = stats.binom.sf((n + 1) // 2 - 1, n, np.arange(1, n + 1) / n)
    se = np.sqrt(exact * (1 - exact) / B)
    assert np.all(np.abs(emp - exact) <= 5 * se + 1e-12)


def test_naive_bootstrap_even_n_matches_brute_force_resampling():
    rng = np.random.default_rng(8)
    n, B = 20, 40_000
    x = rng.lognormal(size=n)
    fast = bs.naive_medians(bs.Sample.from_jobs(x, np.zeros(n, int)), B, rng)
    slow = np.median(x[rng.integers(0, n, (B, n))], axis=1)
    assert stats.ks_2samp(fast, slow).pvalue > 1e-3
    assert np.quantile(fast, [0.025, 0.5, 0.975]) == pytest.approx(np.quantile(slow, [0.025, 0.5, 0.975]), rel=0.03)


def two_stage_brute_force(byjob, B, rng):
    """The textbook two-stage bootstrap: J jobs with replacement, then S_j spins within each chosen job."""
    J = len(byjob)
    out = np.empty(B)
    for b in range(B):
        chosen = rng.integers(0, J, J)
        out[b] = np.median(np.concatenate([rng.choice(byjob[j], byjob[j].size) for j in chosen]))
    return out


def test_hierarchical_matches_textbook_two_stage_in_distribution():
    rng = np.random.default_rng(11)
    J, S, B = 6, 15, 20_000
    byjob = [rng.lognormal(np.log(100) + rng.normal(0, 0.05), 0.05, S) for _ in range(J)]
    s = bs.Sample.from_jobs(np.concatenate(byjob), np.repeat(np.arange(J), S))
    fast = bs.hierarchical_medians(s, B, rng)
    slow = two_stage_brute_force(byjob, B, rng)
    # same spread and tails within Monte Carlo error (the SE of a 2.5% quantile is ~1.5% of the sd here)
    assert fast.std() == pytest.approx(slow.std(), rel=0.05)
    assert np.quantile(fast, [0.025, 0.5, 0.975]) == pytest.approx(np.quantile(slow, [0.025, 0.5, 0.975]), rel=0.005)
    # and it is much wider than the naive bootstrap when jobs differ
    naive = bs.naive_medians(s, B, rng)
    assert fast.std() > 1.5 * naive.std()


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


def test_spearman_vs_order_equals_scipy():
    from pqsimd.analyze.groups import spearman_vs_order

    rng = np.random.default_rng(13)
    y = np.round(rng.normal(size=(5, 30)) + np.linspace(0, 1, 30) * np.arange(5)[:, None], 1)  # ties too
    rho, p = spearman_vs_order(y)
    for j in range(5):
        ref = stats.spearmanr(np.arange(30), y[j])
        assert rho[j] == pytest.approx(ref.statistic, abs=1e-12)
        assert p[j] == pytest.approx(ref.pvalue, rel=1e-8)
