"""The regime check (stats/regime.py) on a real study's job medians and on unimodal data of the same
size, its exact job-state p-value, and every comparison recomputed without a set of jobs.

tests/fixtures/emr_job_medians.csv holds every job's median per (parameter set, op, variant) of the
Emerald Rapids study in /work/shared/studies/emr-ml-kem-standard (bench/regime_fixture.py wrote it):
there the job speedups of INVNTT ML-KEM-1024 ref->avx2 split 7 (36.2-37.3x) against 3 (50.8-53.9x),
and those of NTT ML-KEM-512 27.6-28.8x against 35.5-38.4x, and the dip test alone flagged none of
the 315 comparisons. The full false-alarm and power tables are bench/bench_regimes.py's."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pqsimd.analyze.compare import compare_all
from pqsimd.analyze.groups import Group, without_jobs
from pqsimd.stats.regime import Row, check, state_p, together
from pqsimd.analysis_settings import Settings
from pqsimd.model import Chain

FIXTURE = Path(__file__).parent / "fixtures" / "emr_job_medians.csv"
CHAIN = Chain.from_dict({"extra_baseline": "ref", "steps": [
    {"stage": "compiler", "from": "refo0", "to": "refnv"}, {"stage": "autovec", "from": "refnv", "to": "ref"},
    {"stage": "hand_simd", "from": "ref", "to": "avx2"}]})
VARIANTS = ["refo0", "refnv", "ref", "avx2"]
SETTINGS = Settings(threshold=0.02, alpha=0.05)  # the study's own


def emr_medians() -> pd.DataFrame:
    return pd.read_csv(FIXTURE, comment="#")


def groups_of(medians: pd.DataFrame) -> dict:
    """One group per row of job medians (one spin per job: the job's median, as analyze reads it)."""
    jobs = [c for c in medians.columns if c.isdigit()]
    out = {}
    for r in medians.to_dict("records"):
        out[("ticks", r["scheme"], r["op"], r["variant"], "gcc")] = Group(
            metric="ticks", scheme=r["scheme"], op=r["op"], variant=r["variant"], compiler="gcc",
            values=np.array([r[j] for j in jobs], dtype=float), job=np.arange(len(jobs)),
            spin=np.zeros(len(jobs), dtype=np.int64), job_ids=[f"paired.{r['scheme']}.{j}" for j in jobs], n_reps=1)
    return out


def comparisons(medians: pd.DataFrame, **kw) -> pd.DataFrame:
    ops = list(dict.fromkeys(medians["op"]))
    df, _w, _fam, _d = compare_all(groups_of(medians), CHAIN, VARIANTS, ["gcc"], ops, SETTINGS, **kw)
    return df


def row(df: pd.DataFrame, scheme: str, op: str, base: str = "ref", var: str = "avx2") -> pd.Series:
    return df[(df["scheme"] == scheme) & (df["op"] == op) & (df["baseline"] == base) & (df["variant"] == var)].iloc[0]


def test_emr_study_flags_the_two_splits_with_their_minority_jobs():
    """The real study's 315 comparisons: INVNTT ML-KEM-1024 and NTT ML-KEM-512 ref->avx2 are flagged by
    the job-state test, with the 3 jobs of the higher cluster as the minority, and each is recomputed
    from its 7 majority jobs at the family's level."""
    df = comparisons(emr_medians())
    assert len(df) == 315 and (df["method"] == "sign").all()
    inv = row(df, "ml-kem-1024", "invntt")
    assert inv["regimes"] and inv["regime_p"] < 0.05
    assert set(inv["regime_jobs"].split()) == {f"paired.ml-kem-1024.{j}" for j in (2, 4, 8)}
    assert "regimes: 7 jobs at 36.2" in inv["note"] and "3 at 53.89x (50.82-53.92)" in inv["note"]
    ntt = row(df, "ml-kem-512", "ntt")
    assert ntt["regimes"] and ntt["regime_p"] < 0.05
    assert set(ntt["regime_jobs"].split()) == {f"paired.ml-kem-512.{j}" for j in (2, 3, 9)}
    # without the minority: the median of the 7 others' ratios, their [min, max] (98.4% at J = 7)
    m = emr_medians().set_index(["scheme", "op", "variant"])
    ratios = m.loc[("ml-kem-1024", "invntt", "ref")] / m.loc[("ml-kem-1024", "invntt", "avx2")]
    seven = ratios.drop(["2", "4", "8"]).to_numpy()
    assert inv["without_minority_jobs"] == 7
    assert inv["without_minority_speedup"] == pytest.approx(np.median(seven), rel=1e-9)
    assert inv["without_minority_ci_low"] <= seven.min() and inv["without_minority_ci_high"] >= seven.max()
    assert inv["without_minority_ci_level"] == pytest.approx(1 - 2 / 2 ** 7)
    assert inv["without_minority_verdict"] == "faster" and inv["verdict"] == "faster"
    assert inv["without_minority_ci_high"] < 38 < 50 < inv["ci_high"]  # the minority's ratios leave the interval
    # the rows that are not flagged are not recomputed
    calm = df[~df["regimes"].astype(bool)]
    assert (calm["without_minority_verdict"] == "").all() and calm["without_minority_speedup"].isna().all()


def test_emr_splits_need_the_same_jobs_across_ops():
    """The same values with each op's job labels permuted (every comparison keeps its own job ratios;
    the jobs are no longer the same state across ops): the job-state test flags nothing."""
    med = emr_medians()
    rng = np.random.default_rng(7)
    jobs = [c for c in med.columns if c.isdigit()]
    parts = []
    for _key, part in med.groupby(["scheme", "op"], sort=False):
        perm = list(rng.permutation(jobs))
        parts.append(part.assign(**{j: part[p].to_numpy() for j, p in zip(jobs, perm)}))
    df = comparisons(pd.concat(parts))
    assert not df["note"].str.contains("job-state test").any()
    assert np.isfinite(df["regime_p"]).sum() > 50  # as many candidates: the values are the same


@pytest.mark.parametrize("noise", ["normal", "t3", "lognormal", "one outlier"])
def test_unimodal_data_of_the_same_size_is_not_flagged(noise):
    """3 parameter sets x 21 ops x 4 variants x 10 jobs, every job's log median its op's level plus
    noise of about 1% (the Emerald Rapids study's spread within a state; heavy-tailed, skewed, or one job
    10% off per (op, variant)): no comparison is flagged."""
    rng = np.random.default_rng(["normal", "t3", "lognormal", "one outlier"].index(noise))
    ref = emr_medians()
    jobs = [c for c in ref.columns if c.isdigit()]
    level = np.log(ref[jobs].median(axis=1).to_numpy())[:, None]
    shape = (len(ref), len(jobs))
    e = {"normal": lambda: rng.normal(0, 1, shape), "t3": lambda: rng.standard_t(3, shape),
         "lognormal": lambda: rng.lognormal(0, 1, shape) - math.exp(0.5),
         "one outlier": lambda: rng.normal(0, 1, shape)}[noise]()
    x = level + 0.01 * e
    if noise == "one outlier":
        x[np.arange(len(ref)), rng.integers(0, len(jobs), len(ref))] += math.log(1.1)
    df = comparisons(ref.assign(**{j: np.exp(x[:, i]) for i, j in enumerate(jobs)}))
    assert len(df) == 315
    assert not df["regimes"].any(), df.loc[df["regimes"].astype(bool), "note"].tolist()


def test_state_p_is_the_exact_share_of_assignments():
    """One other comparison put jobs 0-2 together against the rest: a comparison that does the same
    reaches 1 / C(10, 3), one that puts 0, 1 and 5 together a share counted by brute force; random
    draws beyond EXACT_LIMIT agree with the enumeration."""
    lower = np.zeros((1, 10), dtype=bool)
    lower[0, :3] = True
    w = together(lower)
    rng = np.random.default_rng(0)
    assert state_p(lower[0], w, rng) == pytest.approx(1 / 120)
    other = np.zeros(10, dtype=bool)
    other[[0, 1, 5]] = True
    import itertools
    def stat(u):
        u = u.astype(float)
        return u @ w @ u + (1 - u) @ w @ (1 - u)
    subsets = [np.isin(np.arange(10), c) for c in itertools.combinations(range(10), 3)]
    brute = np.mean([stat(s) >= stat(other) - 1e-9 for s in subsets])
    assert state_p(other, w, rng) == pytest.approx(brute)
    big = np.zeros((1, 30), dtype=bool)
    big[0, :6] = True
    p = state_p(big[0], together(big), rng)
    assert p == pytest.approx(1 / 5001)  # no random assignment of 6 of 30 matches it: the draws' floor
    assert state_p(lower[0], np.zeros((10, 10)), rng) == 1.0  # nothing from the other ops: no evidence


def test_check_needs_the_split_in_other_ops_and_apart_by_the_threshold():
    """Two ops whose comparisons split the same 3 of 10 jobs 30% off: flagged, with those jobs; the same
    split 1% off (inside the threshold) is no candidate; a split no other op shares is not flagged by
    the job-state test."""
    rng = np.random.default_rng(3)
    ids = tuple(f"j{i}" for i in range(10))

    def logs(shift, jobs=(0, 1, 2)):
        x = rng.normal(0, 0.003, 10)
        x[list(jobs)] += shift
        return x
    rows = [Row("s", f"op{o}", ids, logs(math.log(1.3))) for o in range(8)]
    res = check(rows, math.log1p(0.02), 0.05, lambda i: np.random.default_rng(i))
    assert all(g.flagged and g.by.startswith("job state") for g in res)
    assert all(set(g.minority) == {"j0", "j1", "j2"} and g.also == 7 for g in res)
    small = check([Row("s", f"op{o}", ids, logs(0.01)) for o in range(8)], math.log1p(0.02), 0.05,
                  lambda i: np.random.default_rng(i))
    assert not any(g.candidate or g.flagged for g in small)
    alone = [Row("s", f"op{o}", ids, logs(math.log(1.3), jobs=tuple(rng.choice(10, 3, replace=False))))
             for o in range(8)]
    res = check(alone, math.log1p(0.02), 0.05, lambda i: np.random.default_rng(i))
    assert not any("job state" in g.by for g in res)


def test_without_jobs_keeps_every_other_jobs_spins():
    g = Group(metric="ticks", scheme="s", op="o", variant="v", compiler="gcc",
              values=np.array([1.0, 2, 3, 4, 5, 6]), job=np.array([0, 0, 1, 1, 2, 2]), spin=np.array([0, 1] * 3),
              job_ids=["a", "b", "c"], n_reps=1, resolution=0.5)
    h = without_jobs(g, {"b"})
    assert h.job_ids == ["a", "c"] and list(h.values) == [1, 2, 5, 6] and list(h.job) == [0, 0, 1, 1]
    assert h.resolution == 0.5 and list(h.job_medians) == [1.5, 5.5]
    assert without_jobs(g, {"x"}) is g and without_jobs(g, {"a", "b", "c"}) is None
