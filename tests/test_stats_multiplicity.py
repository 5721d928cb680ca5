"""stats/multiplicity.py and significance.py against statsmodels and brute force: the BH and BY
selections and levels (statsmodels' multipletests), the adjusted p-values of BH and Holm, and a
family of units against the units' p-values computed by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from pqsimd.stats.interval import Evidence, verdict_of
from pqsimd.stats.multiplicity import bh_count, family_level, unit_p, verdicts_changed
from pqsimd.stats.significance import bh, holm

BAND = math.log1p(0.02)


def test_family_level_is_the_bh_count_of_statsmodels():
    rng = np.random.default_rng(5)
    for _ in range(30):
        p = np.concatenate([rng.uniform(0, 1, rng.integers(1, 50)), rng.uniform(0, 0.002, rng.integers(0, 40))])
        r = int(multipletests(p, alpha=0.05, method="fdr_bh")[0].sum())
        assert bh_count(p, 0.05) == r
        fam = family_level(np.r_[p, np.nan], 0.05)
        assert fam.m == p.size and fam.selected == r and fam.gamma == pytest.approx(max(r, 1) * 0.05 / p.size)
    assert family_level(np.array([0.01, 0.2]), 0.05, "bonferroni").gamma == 0.025
    assert family_level(np.array([0.01, 0.2]), 0.05, "none").gamma == 0.05


def test_by_is_statsmodels_benjamini_yekutieli_and_counts_the_verdicts_it_changes():
    """`by`: R is statsmodels' fdr_by rejections, the level 1 - R alpha / (m c(m)); each of fcr and by
    records the other's level and how many rows get a verdict at one level and not at the other,
    counted here from the intervals themselves (sign intervals of simulated job ratios)."""
    rng = np.random.default_rng(11)
    evs = [Evidence.sign(rng.normal(mu, 0.01, 12)) for mu in rng.choice([0.0, 0.02, 0.03, 0.05, 0.3], 60)]
    p = np.array([ev.decision_p(BAND)[0] for ev in evs])
    r_by = int(multipletests(p, alpha=0.05, method="fdr_by")[0].sum())
    c = sum(1 / i for i in range(1, p.size + 1))
    by, bh = family_level(p, 0.05, "by"), family_level(p, 0.05, "fcr")
    assert by.selected == r_by and by.gamma == pytest.approx(max(r_by, 1) * 0.05 / (p.size * c))
    assert by.gamma < bh.gamma and bh.other["adjust"] == "by" and by.other["adjust"] == "fcr"
    assert bh.other["gamma"] == pytest.approx(by.gamma) and by.other["gamma"] == pytest.approx(bh.gamma)

    def verdicts(gamma):
        return [verdict_of(iv.lo, iv.hi, BAND) if iv.reachable else "withheld"
                for iv in (ev.interval(gamma) for ev in evs)]

    changed = sum(a != b for a, b in zip(verdicts(bh.gamma), verdicts(by.gamma)))
    assert changed > 0 and bh.other["verdicts_changed"] == by.other["verdicts_changed"] == changed
    assert "other" not in family_level(p, 0.05, "bonferroni").to_dict()


def test_bh_and_holm_adjusted_p_are_statsmodels_and_skip_nan():
    rng = np.random.default_rng(21)
    for _ in range(30):
        p = np.concatenate([rng.uniform(0, 1, rng.integers(1, 30)), rng.uniform(0, 0.01, rng.integers(0, 10))])
        with_nan = np.r_[p[:1], np.nan, p[1:]]
        np.testing.assert_allclose(np.delete(bh(with_nan), 1), multipletests(p, method="fdr_bh")[1], rtol=1e-12)
        np.testing.assert_allclose(np.delete(holm(with_nan), 1), multipletests(p, method="holm")[1], rtol=1e-12)
        assert np.isnan(bh(with_nan)[1]) and np.isnan(holm(with_nan)[1])


def test_a_family_of_units_is_the_bh_family_of_the_units_bonferroni_p():
    """Members sharing a unit count once: its p is its smallest member's times its size (at most 1),
    and the family's level is BH over those unit p-values (statsmodels), printed at R' alpha / m'."""
    rng = np.random.default_rng(22)
    for _ in range(30):
        n = int(rng.integers(3, 40))
        p = np.where(rng.random(n) < 0.4, rng.uniform(0, 0.003, n), rng.uniform(0, 1, n))
        p[rng.random(n) < 0.1] = np.nan  # not in the family
        units = rng.integers(0, max(2, n // 3), n)
        by_hand: dict[int, list[float]] = {}
        for x, u in zip(p, units):
            if np.isfinite(x):
                by_hand.setdefault(int(u), []).append(float(x))
        want_p = np.array([min(1.0, min(v) * len(v)) for v in by_hand.values()])
        np.testing.assert_allclose(np.sort(unit_p(p, units)), np.sort(want_p))
        fam = family_level(p, 0.05, "fcr", units=units)
        r = int(multipletests(want_p, alpha=0.05, method="fdr_bh")[0].sum()) if want_p.size else 0
        assert fam.m == want_p.size and fam.selected == r
        assert fam.gamma == pytest.approx(max(r, 1) * 0.05 / max(want_p.size, 1))
        if want_p.size < np.isfinite(p).sum():
            assert fam.members == int(np.isfinite(p).sum())


def test_verdicts_changed_counts_the_members_between_the_two_levels():
    rng = np.random.default_rng(23)
    p = rng.uniform(0, 0.1, 200)
    for a, b in [(0.01, 0.03), (0.05, 0.002), (0.02, 0.02)]:
        assert verdicts_changed(p, a, b) == sum((x <= a) != (x <= b) for x in p)
    assert bh_count(np.array([np.nan]), 0.05) == 0
