"""stats/bootstrap.py against brute force: the job resamples' counts are the draws counted one by one,
and a sample's cumulative job counts are counted value by value."""

from __future__ import annotations

import numpy as np

from pqsimd.stats import bootstrap as bs


def test_job_counts_are_the_draws_with_replacement_counted():
    n_jobs, n_boot = 7, 50
    counts = bs.job_counts(n_jobs, n_boot, np.random.default_rng(3))
    picks = np.random.default_rng(3).integers(0, n_jobs, size=(n_boot, n_jobs))
    for b in range(n_boot):
        assert [int((picks[b] == j).sum()) for j in range(n_jobs)] == counts[b].tolist()
    assert (counts.sum(axis=1) == n_jobs).all()


def test_sample_counts_each_jobs_values_among_the_smallest():
    rng = np.random.default_rng(4)
    values = rng.integers(0, 20, 60).astype(float)  # ties: the stable order keeps input order
    job = rng.choice(["b", "a", "c"], 60)
    s = bs.Sample.from_jobs(values, job)
    assert s.v.tolist() == sorted(values.tolist()) and s.n_jobs == 3 and s.n == 60
    order = np.argsort(values, kind="stable")
    codes = {name: i for i, name in enumerate(sorted(set(job)))}
    for g in range(61):
        smallest = job[order[:g]]
        assert [int((smallest == name).sum()) for name in sorted(codes)] == s.cum[:, g].tolist()
    assert s.sizes.tolist() == [int((job == name).sum()) for name in sorted(codes)]
