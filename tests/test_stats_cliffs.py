"""stats/cliffs.py against scipy and pandas: the re-timing's interval is scipy's one-sample t interval
of the processes' log ratios (each end moved out by the clock's resolution), and the per-process log
ratios are what a pandas group-by of the spins gives."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from pqsimd.stats.cliffs import LEVEL, process_log_ratios, retime_interval, retime_verdict


@pytest.mark.parametrize("seed,k", [(0, 2), (1, 3), (2, 5), (3, 12)])
def test_retime_interval_is_scipys_t_interval_widened_by_the_resolution(seed, k):
    x = np.random.default_rng(seed).normal(0.3, 0.05, k)
    for res in (0.0, 0.01):
        ratio, lo, hi = retime_interval(x, res=res)
        ci = stats.ttest_1samp(x, 0.0).confidence_interval(LEVEL)
        assert ratio == pytest.approx(math.exp(x.mean()))
        assert math.log(lo) == pytest.approx(ci.low - res) and math.log(hi) == pytest.approx(ci.high + res)
    assert math.isnan(retime_interval(np.array([0.3, np.nan]))[1])  # one finite process: no interval


def test_process_log_ratios_are_the_per_process_medians_of_a_group_by():
    rng = np.random.default_rng(5)
    spins = pd.DataFrame({"process": np.repeat([3, 0, 1, 2], 25), "role": rng.choice(["worst", "typical"], 100),
                          "value": rng.lognormal(0, 0.1, 100) * 1000})
    spins.loc[(spins["process"] == 2) & (spins["role"] == "worst"), "role"] = "typical"  # a process without W
    want = []
    for _, g in spins.groupby("process", sort=True):
        w, t = g.loc[g["role"] == "worst", "value"], g.loc[g["role"] == "typical", "value"]
        want.append(math.log(w.median() / t.median()) if len(w) and len(t) else math.nan)
    got = process_log_ratios(spins["process"], spins["role"] == "worst", spins["value"])
    np.testing.assert_allclose(got, want, equal_nan=True)
    assert np.isnan(got[2]) and np.isfinite(got[[0, 1, 3]]).all()


def test_retime_verdict_reads_the_interval_against_the_threshold():
    assert retime_verdict(1.05, 1.2, 0.02) == "confirmed"
    assert retime_verdict(0.99, 1.01, 0.02) == "refuted"
    assert retime_verdict(1.0, 1.2, 0.02) == "~" and retime_verdict(math.nan, 1.2, 0.02) == "~"
