"""The published numbers' statistics against independent oracles: the order-statistic interval's
coverage (simulation), the decision p-value's consistency with the verdict read off the interval, the
decomposition's box intervals (a brute-force grid), the sign rule's MDE (simulation), and the
diagnostics' false alarms and power on small simulations (the full tables are bench/bench_coverage.py
and bench_diagnostics.py). The order-statistic rank, the family level, drift and the dip test have
their own files: tests/test_stats_*.py."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st
from scipy import stats

from pqsimd.analyze import jobs as jobs_mod
from pqsimd.analyze.decompose import decompose, share_range
from pqsimd.stats.interval import Evidence, order_level, order_rank, verdict_of
from pqsimd.stats.power import mde_sign
from pqsimd.model import Chain

BAND = math.log1p(0.02)


@pytest.mark.parametrize("dist", ["lognormal", "contaminated", "t3", "quantized"])
@pytest.mark.parametrize("J", [5, 10])
def test_sign_interval_covers_the_median_of_skewed_job_ratios(dist, J):
    """Coverage of [x(k), x(J+1-k)] for the population median is at least its level on skewed,
    contaminated, heavy-tailed and tied job ratios (20,000 simulated comparisons)."""
    rng = np.random.default_rng(J)
    n = 20000
    if dist == "lognormal":
        x, truth = rng.lognormal(0, 1, (n, J)), 1.0
    elif dist == "contaminated":  # 80% at the state 0 +- 0.2%, 20% disturbed by +5..30%
        bad = rng.random((n, J)) < 0.2
        x = rng.normal(0, 0.002, (n, J)) + bad * rng.uniform(0.05, 0.3, (n, J))
        truth = float(np.median(rng.normal(0, 0.002, 400000) + (rng.random(400000) < 0.2) * rng.uniform(0.05, 0.3, 400000)))
    elif dist == "t3":
        x, truth = rng.standard_t(3, (n, J)), 0.0
    else:  # quantized: 70% of jobs exactly on one value
        x, truth = np.where(rng.random((n, J)) < 0.7, 0.0, rng.normal(0, 0.01, (n, J))), 0.0
    k = order_rank(J, 0.05) or 1
    s = np.sort(x, axis=1)
    hit = ((s[:, k - 1] <= truth) & (truth <= s[:, J - k])).mean()
    assert hit >= order_level(J, k) - 0.006, (dist, J, hit)


@settings(max_examples=200, deadline=None, database=None)
@given(st.lists(st.floats(-0.1, 0.1, allow_nan=False), min_size=2, max_size=14), st.sampled_from([0.0, 0.005, 0.02]))
def test_a_verdict_is_given_exactly_where_the_decision_p_is_below_gamma(x, thr):
    """Brute force over the attainable levels: the (1 - gamma) interval gives a verdict iff the
    comparison's decision p <= gamma, and then the same verdict p names."""
    band = math.log1p(thr)
    ev = Evidence.sign(x)
    p, which = ev.decision_p(band)
    levels = {2 * stats.binom.cdf(k - 1, len(x), 0.5) for k in range(1, (len(x) + 1) // 2 + 1)} | {0.05, 0.3}
    for gamma in sorted(g for g in levels if g < 1):  # gamma = 1: a 0% interval, no statement
        iv = ev.interval(gamma)
        v = verdict_of(iv.lo, iv.hi, band) if iv.reachable else "~"
        assert iv.lo <= iv.point <= iv.hi
        assert (v != "~") == (p <= gamma * (1 + 1e-12)), (x, thr, gamma, p, v)
        if v != "~":
            assert v == which


def test_t_decision_p_matches_the_interval_and_statsmodels_tost():
    """t evidence: the interval at gamma gives `same` iff the TOST of the band at level gamma/2
    rejects (statsmodels' ttost_ind on log job medians, the oracle), and faster/slower iff the
    one-sided test beyond the band does."""
    from statsmodels.stats.weightstats import ttost_ind, ttest_ind

    rng = np.random.default_rng(3)
    for _ in range(50):
        b, v = rng.normal(rng.uniform(-0.03, 0.03), 0.01, 6), rng.normal(0, 0.012, 7)
        d = b.mean() - v.mean()
        se = math.sqrt(b.var(ddof=1) / 6 + v.var(ddof=1) / 7)
        df = se**4 / ((b.var(ddof=1) / 6) ** 2 / 5 + (v.var(ddof=1) / 7) ** 2 / 6)
        ev = Evidence.t(d, se, df)
        p, which = ev.decision_p(BAND)
        tost = ttost_ind(b, v, -BAND, BAND, usevar="unequal")[0]
        if which == "same":
            assert p == pytest.approx(2 * tost, rel=1e-9)
        elif which == "faster":
            assert p == pytest.approx(2 * ttest_ind(b - BAND, v, alternative="larger", usevar="unequal")[1], rel=1e-9)
        iv = ev.interval(0.05)
        assert (verdict_of(iv.lo, iv.hi, BAND) != "~") == (p <= 0.05)


def test_share_range_is_the_extremes_over_the_box():
    rng = np.random.default_rng(7)
    for _ in range(200):
        pt = rng.uniform(-0.3, 2.0, 3)
        lo, hi = pt - rng.uniform(0, 0.2, 3), pt + rng.uniform(0, 0.2, 3)
        if lo.sum() <= 0.05:
            continue
        grid = [np.linspace(a, b, 9) for a, b in zip(lo, hi)]
        for k in range(3):
            brute = [a[k] / sum(a) for a in itertools.product(*grid)]
            assert share_range(lo, hi, k) == pytest.approx((min(brute), max(brute)), abs=1e-12)
            assert share_range(lo, hi, k)[0] <= pt[k] / pt.sum() <= share_range(lo, hi, k)[1]


def test_decomposition_multiplies_and_holds_its_estimates_inside_by_construction():
    chain = Chain.from_dict({"steps": [{"stage": "compiler", "from": "a", "to": "b"},
                                       {"stage": "autovec", "from": "b", "to": "c"},
                                       {"stage": "hand_simd", "from": "c", "to": "d"}]})
    rows = []
    for (b, v), (sp, lo, hi) in zip((("a", "b"), ("b", "c"), ("c", "d"), ("a", "d")),
                                    ((3.0, 2.9, 3.2), (0.97, 0.95, 0.99), (40.0, 38.0, 50.0), (115.0, 112.0, 118.0))):
        rows.append(dict(metric="ticks", scheme="s", op="o", compiler="gcc", baseline_compiler="gcc", baseline=b,
                         variant=v, speedup=sp, ci_low=lo, ci_high=hi, ci_level=0.978, verdict="faster", reason=""))
    d = decompose(pd.DataFrame(rows), chain, 0.02).iloc[0]
    assert d["total"] == pytest.approx(3.0 * 0.97 * 40.0)
    assert (d["total_ci_low"], d["total_ci_high"]) == pytest.approx((2.9 * 0.95 * 38.0, 3.2 * 0.99 * 50.0))
    assert d["total_ci_level"] == pytest.approx(1 - 3 * 0.022)
    assert sum(d[f"share_{s}"] for s in ("compiler", "autovec", "hand_simd")) == pytest.approx(1.0)
    for s in ("compiler", "autovec", "hand_simd"):
        assert d[f"share_{s}_ci_low"] <= d[f"share_{s}"] <= d[f"share_{s}_ci_high"]
    assert "differ by" in d["note"]  # 116.4 vs the cumulative 115: more than a quarter of the 2% band


@pytest.mark.parametrize("J,sigma", [(10, 0.01), (20, 0.004), (8, 0.02)])
def test_mde_sign_has_the_power_it_claims(J, sigma):
    """At mde_sign's speedup, normal job log ratios with that sd give a faster verdict (interval at
    gamma above the band) in 80% of simulated comparisons."""
    gamma = 0.05
    m = mde_sign(J, gamma, sigma, 0.02)
    rng = np.random.default_rng(J)
    x = rng.normal(math.log(m), sigma, (20000, J))
    k = order_rank(J, gamma)
    hit = (np.sort(x, axis=1)[:, k - 1] > BAND).mean()
    assert hit == pytest.approx(0.8, abs=0.015)
    assert math.isinf(mde_sign(5, 0.05, sigma, 0.02))


def test_disturbed_jobs_are_named_once_and_quiet_ones_are_not():
    rng = np.random.default_rng(13)
    ids = [f"j{i}" for i in range(10)]

    def vectors(disturbed: bool):
        for _ in range(60):  # 60 comparisons of one scheme
            x = rng.standard_t(3, 10) * 0.002
            if disturbed:
                x[7] += rng.choice([-1, 1]) * rng.uniform(0.02, 0.2)
            yield ids, x

    rows = jobs_mod.judge(jobs_mod.deviations(vectors(True)), BAND, metric="ticks", scheme="s", unit="comparisons")
    assert [r["job"] for r in rows if r["disturbed"]] == ["j7"]
    quiet = sum(r["disturbed"] for _ in range(50)
                for r in jobs_mod.judge(jobs_mod.deviations(vectors(False)), BAND, metric="ticks", scheme="s",
                                        unit="comparisons"))
    assert quiet <= 2  # of 500 quiet jobs


def test_level_text_never_rounds_a_level_short_of_one_to_100_percent():
    """A family level of 1 - 0.05/1696 printed as '100.0%' (a quick all-families study) reads as certainty."""
    from pqsimd.results import level_text

    assert level_text(1 - 0.05 / 1696) == "99.997%"
    assert level_text(0.95) == "95%" and level_text(0.9785) == "97.85%" and level_text(0.5) == "50%"
    assert level_text(1.0) == "100%"
    for gamma in (1e-3, 1e-4, 3e-5, 1e-6):
        text = level_text(1 - gamma)
        assert text != "100%" and float(text[:-1]) < 100
