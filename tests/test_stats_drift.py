"""stats/drift.py against scipy and brute force: the block trend is scipy's linregress of the block
medians, a job's trends are each job's alone, and a comparison's drift p is Bonferroni over its jobs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from pqsimd.stats import drift as drift_mod


def test_block_trend_is_linregress_of_block_medians_and_tolerates_ar1():
    rng = np.random.default_rng(9)
    y = rng.normal(0, 1, 200)
    p, change = drift_mod.block_trend(y)
    med = [np.median(b) for b in np.array_split(y, 8)]
    fit = stats.linregress(np.arange(8), med)
    assert p == pytest.approx(fit.pvalue) and change == pytest.approx(fit.slope * 7)
    assert np.isnan(drift_mod.block_trend(y[:15])[0])
    # AR(1) spins with phi = 0.4 and no drift: the block test stays near its level (a spin-level test
    # that assumes independence does not)
    def ar1(n, phi):
        e = rng.normal(0, 1, n)
        out = np.empty(n)
        out[0] = e[0]
        for i in range(1, n):
            out[i] = phi * out[i - 1] + e[i]
        return out
    ps = np.array([drift_mod.block_trend(ar1(200, 0.4))[0] for _ in range(1500)])
    assert (ps < 0.05).mean() < 0.08
    drifting = np.array([drift_mod.block_trend(ar1(200, 0.4) * 0.01 + np.linspace(0, 0.05, 200))[0] for _ in range(200)])
    assert (drifting < 0.05).mean() > 0.9


def test_job_trends_are_each_jobs_block_trend_in_spin_order():
    rng = np.random.default_rng(31)
    job = np.repeat(np.arange(4), 40)
    values = rng.normal(0, 1, job.size) + np.where(job == 2, np.tile(np.linspace(0, 3, 40), 4), 0.0)
    p, change = drift_mod.job_trends(values, job)
    for j in range(4):
        pj, cj = drift_mod.block_trend(values[job == j])
        assert p[j] == pytest.approx(pj) and change[j] == pytest.approx(cj)
    assert p[2] < 1e-3 and change[2] > 1.5  # the job that drifts by 3 over its spins


def test_drift_p_is_bonferroni_over_the_tested_jobs_and_names_the_material_ones():
    p_jobs = np.array([0.2, np.nan, 0.004, 0.5, 0.03])
    change = np.array([0.001, 0.5, -0.05, 0.0, 0.01])
    p, jobs = drift_mod.drift_p(p_jobs, change, band=math.log1p(0.02))
    assert p == pytest.approx(min(1.0, 0.004 * 4))  # the untested job is not in the family
    assert jobs == [2]  # |change| beyond the band among the tested jobs
    assert drift_mod.drift_p(np.array([0.9, 0.8]), np.zeros(2), 0.02)[0] == 1.0
    p_none, jobs_none = drift_mod.drift_p(np.array([np.nan]), np.array([1.0]), 0.02)
    assert math.isnan(p_none) and jobs_none == []
