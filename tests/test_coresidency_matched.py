"""Co-residency with matched alone jobs (issue 33): alone job r loads paired job r's copies, and the
paired/alone ratio's interval is a moderated t over the matched differences (analyze/coresidency.py,
run/layouts.seed_job, run/plan.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest


def test_an_alone_job_draws_the_seeds_of_the_paired_job_it_matches():
    from types import SimpleNamespace

    from pqsimd import layout
    from pqsimd.run.layouts import seed_job

    st = SimpleNamespace(alone_layouts="paired", jobs=10)
    alone = {"id": "alone.ref.gcc.ml-kem-768.3", "design": "alone", "scheme": "ml-kem-768", "index": 3}
    paired = {"id": "paired.ml-kem-768.3", "design": "paired", "scheme": "ml-kem-768", "index": 3}
    assert seed_job(st, alone) == paired["id"] == seed_job(st, paired)
    assert layout.seed_of(1, seed_job(st, alone), "ref.gcc.ml-kem", 0) == layout.seed_of(1, paired["id"],
                                                                                           "ref.gcc.ml-kem", 0)
    assert seed_job(SimpleNamespace(alone_layouts="own", jobs=10), alone) == alone["id"]


def test_alone_sets_all_plans_alone_jobs_on_every_set():
    from types import SimpleNamespace

    from pqsimd.run.plan import _alone_rounds

    st = SimpleNamespace(alone=2, design="paired", jobs=10, variants=["ref", "avx2"],
                         schemes=["ml-kem-512", "ml-kem-768", "ml-kem-1024"], alone_sets="all")
    jobs = [j for r in _alone_rounds(st, ["gcc"]).values() for j in r]
    assert len(jobs) == 2 * 2 * 3 and {j["scheme"] for j in jobs} == set(st.schemes)
    st.alone_sets = "first"
    jobs = [j for r in _alone_rounds(st, ["gcc"]).values() for j in r]
    assert {j["scheme"] for j in jobs} == {"ml-kem-512"}


def test_the_matched_interval_covers_a_known_ratio_even_with_slow_processes():
    from pqsimd.stats.coresidency import matched_intervals

    rng = np.random.default_rng(3)
    n_rows, truth, cover, total = 60, math.log(1.03), 0, 0
    for _ in range(5):
        # 5 matched pairs per row; one process in ten (either design) ran 20-40% slow
        diffs = []
        for _ in range(n_rows):
            d = truth + rng.normal(0, 0.003, 5)
            slow = rng.random(5) < 0.1
            d[slow] += rng.choice([-1, 1], slow.sum()) * rng.uniform(0.2, 0.35, slow.sum())
            diffs.append(d)
        ivs, rec = matched_intervals(diffs, 0.05 / n_rows, [0.0] * n_rows, seed=1)
        cover += sum(lo <= 1.03 <= hi for _, lo, hi, _ in ivs)
        total += n_rows
        assert rec["residuals"] == 5 * n_rows and rec["residual_max"] > 0.15
    assert cover / total > 0.97
    # one pair per row: the pooled residuals give it an interval
    diffs = [truth + rng.normal(0, 0.003, 5) for _ in range(30)] + [np.array([truth])]
    ivs, _ = matched_intervals(diffs, 0.05 / 31, [0.0] * 31)
    r, lo, hi, n = ivs[-1]
    assert lo < 1.03 < hi and n == 1 and hi / lo < 1.1
    # the clock's resolution widens it; a row below one lattice step gets no interval
    w, _ = matched_intervals(diffs, 0.05, [0.0] * 30 + [0.05])
    fam, rec = matched_intervals(diffs, None, [0.0] * 31)  # the family's level: most rows decided, so near 95%
    assert 0.05 / 31 <= rec["gamma"] <= 0.05 and rec["selected"] >= 25
    assert (w[-1][2] - w[-1][1]) > (ivs[-1][2] - ivs[-1][1])
    nores, _ = matched_intervals(diffs, 0.05, [0.0] * 30 + [math.inf])
    assert math.isnan(nores[-1][1])


def test_unknown_alone_settings_are_one_line(tmp_path, cli):

    r = cli("run", tmp_path / "s", "--alone-layouts", "mine", "--no-run")
    assert r.returncode == 2 and "Traceback" not in r.stderr
