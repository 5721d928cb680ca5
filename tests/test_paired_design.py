"""The paired design on a simulated noisy machine: a slow two-state machine (states lasting longer
than a spin, slowing both variants alike) moves the separate design's speedup from run to run and
leaves the paired one alone; and the paired estimator against brute force on small data."""

from __future__ import annotations

import math
import statistics as st

import numpy as np
import pandas as pd
import pytest
from synthetic import make_synthetic_study

from pqsimd.analyze import analyze_study
from pqsimd.analyze.compare import job_log_ratios, spin_log_ratios
from pqsimd.analyze.groups import build_groups


def two_state(shared: bool, slow=np.log(2.0), mean_len=40, scalar_extra=None):
    """Machine states as per-spin log factors: segments of geometric length (mean `mean_len` spins)
    in a fast or a slow state. shared: the variants of a job see the same states (one process,
    the same moments); otherwise each variant's job runs at its own time. scalar_extra: an extra
    slow-down of the scalar variant in the slow state (a state that is not the same for both)."""
    cache: dict = {}

    def state(rng, j, n, variant, op):
        key = (j, op) if shared else (j, op, variant)
        if key not in cache:
            s = np.empty(n)
            i, cur = 0, rng.random() < 0.5
            while i < n:
                k = int(rng.geometric(1 / mean_len))
                s[i:i + k] = slow if cur else 0.0
                i, cur = i + k, not cur
            cache[key] = s
        s = cache[key]
        if scalar_extra and variant == "ref":
            return s * (1 + scalar_extra)
        return s

    return state


def speedups(tmp_path, design: str, runs: int, **kw) -> list[float]:
    out = []
    for i in range(runs):
        d = make_synthetic_study(tmp_path / f"{design}{i}", schemes=("ml-kem-512",), variants=("ref", "avx2"),
                                 ops=("ntt",), jobs=4, spins=100, reps=5, medians={"ref": 6000.0, "avx2": 150.0},
                                 seed=100 + i, design=design, state=two_state(design == "paired", **kw),
                                 spin_sigma=0.005, rep_sigma=0.01, outlier_rate=0.0, analysis={"n_boot": 200})
        analyze_study(d)
        c = pd.read_csv(d / "results" / "comparisons.csv")
        out.append(float(c.loc[c["stage"] == "hand_simd", "speedup"].iloc[0]))
    return out


def cv(x: list[float]) -> float:
    return st.pstdev(x) / st.mean(x)


def test_a_two_state_machine_moves_the_separate_speedup_not_the_paired_one(tmp_path):
    sep = speedups(tmp_path, "separate", 8)
    pai = speedups(tmp_path, "paired", 8)
    assert cv(pai) <= 0.01, pai
    assert cv(sep) >= 0.10, sep
    assert st.median(pai) == pytest.approx(40.0, rel=0.02)  # the truth, 6000/150


def _widening(results_dir, scheme, op, base, var) -> float:
    """The log half-width analyze adds for the clock's lattice (issue 27): from the groups' own
    resolution and median, by interval.resolution_halfwidth (tested against brute force elsewhere)."""
    from pqsimd.stats.interval import resolution_halfwidth

    g = pd.read_parquet(results_dir / "groups.parquet").set_index(["scheme", "op", "variant"])
    rel = [float(g.loc[(scheme, op, v), "resolution"] / g.loc[(scheme, op, v), "median"]) for v in (base, var)]
    return resolution_halfwidth(*rel)


def test_paired_rows_are_labelled_and_use_the_median_job_ratio(tmp_path):
    d = make_synthetic_study(tmp_path / "p", schemes=("ml-kem-512",), variants=("ref", "avx2"), ops=("ntt",), jobs=3,
                             spins=20, reps=3, medians={"ref": 6000.0, "avx2": 150.0}, design="paired",
                             job_sigma=0.05, analysis={"n_boot": 200})
    analyze_study(d)
    c = pd.read_parquet(d / "results" / "comparisons.parquet").iloc[0]
    assert c["design"] == "paired" and c["method"] == "sign"
    s = pd.read_parquet(d / "results" / "spins.parquet")
    jm = s.groupby(["job", "variant"], observed=True)["value"].median().unstack()
    assert c["speedup"] == pytest.approx(float(np.median(jm["ref"] / jm["avx2"])), rel=1e-12)
    # J = 3 reaches no 95% interval: [min, max] of the job ratios at 75% (widened by the clock's
    # lattice step), verdict withheld
    r = jm["ref"] / jm["avx2"]
    h = _widening(d / "results", "ml-kem-512", "ntt", "ref", "avx2")
    assert (c["ci_low"], c["ci_high"]) == pytest.approx((r.min() * np.exp(-h), r.max() * np.exp(h)), rel=1e-12)
    assert c["ci_level"] == 0.75 and c["verdict"] == "withheld"


def test_job_and_spin_ratios_equal_brute_force_on_small_data(tmp_path):
    """The paired estimator's inputs against a plain re-implementation: the jobs' log ratios of job
    medians, and the per-spin log ratios matched by (job, spin) that drift is tested on."""
    d = make_synthetic_study(tmp_path / "b", schemes=("ml-kem-512",), variants=("ref", "avx2"), ops=("ntt",), jobs=3,
                             spins=7, reps=3, medians={"ref": 600.0, "avx2": 50.0}, design="paired", job_sigma=0.05)
    from pqsimd.analyze.load import load_spins

    groups = build_groups(load_spins(d).spins)
    base, var = groups[("ticks", "ml-kem-512", "ntt", "ref", "gcc")], groups[("ticks", "ml-kem-512", "ntt", "avx2", "gcc")]
    brute, _per_job = {}, {}
    for bv, bj, bsn in zip(base.values, np.array(base.job_ids)[base.job], base.spin):
        for vv, vj, vsn in zip(var.values, np.array(var.job_ids)[var.job], var.spin):
            if bj == vj and bsn == vsn:
                brute[(bj, int(bsn))] = math.log(bv / vv)
    logs, job = spin_log_ratios(base, var)
    assert len(logs) == 21 and sorted(logs) == pytest.approx(sorted(brute.values()))
    for j in range(3):  # job order and spin order kept
        jid = base.job_ids[j]
        assert list(logs[job == j]) == pytest.approx([brute[(jid, k)] for k in sorted(k for i, k in brute if i == jid)])
    ids, jl = job_log_ratios(base, var)
    for jid, x in zip(ids, jl):
        b = np.median(base.values[np.array(base.job_ids)[base.job] == jid])
        v = np.median(var.values[np.array(var.job_ids)[var.job] == jid])
        assert x == pytest.approx(math.log(b / v), rel=1e-12)


def test_predecessor_of_each_spin_row_matches_brute_force(tmp_path):
    """The build that ran just before: the previous position in the spin, or the last build of the
    previous spin for the first position; unknown ("") in the first measured spin."""
    d = make_synthetic_study(tmp_path / "o", variants=("refnv", "ref", "avx2"), ops=("ntt", "basemul"), jobs=2,
                             spins=6, reps=2, design="paired", shuffle=True, seed=3)
    from pqsimd.analyze.load import load_spins

    spins = load_spins(d).spins
    groups = build_groups(spins)
    seen = 0
    for g in groups.values():
        for job, spin, prev in zip(np.array(g.job_ids)[g.job], g.spin, g.prev):
            mine = spins[(spins["job"] == job) & (spins["op"] == g.op)]
            me = int(mine.loc[(mine["spin"] == spin) & (mine["variant"] == g.variant), "pos"].iloc[0])
            if me > 0:
                before = mine[(mine["spin"] == spin) & (mine["pos"] == me - 1)]
            else:
                before = mine[(mine["spin"] == spin - 1) & (mine["pos"] == mine["pos"].max())]
            assert prev == (f"{before['variant'].iloc[0]}/gcc" if len(before) else "")
            seen += 1
    assert seen == 3 * 2 * 2 * 6
    unknown = sum(int((g.prev == "").sum()) for g in groups.values())
    assert unknown == 2 * 2  # the first build of spin 0, per job and op


def test_carry_over_is_found_where_it_was_put_and_nowhere_else(tmp_path):
    """ref runs 25% slower right after avx2 (state the warm-up did not wash out): analyze flags ref's
    groups with the right predecessor and says so; the same study without it flags nothing."""
    kw = dict(variants=("refnv", "ref", "avx2"), ops=("ntt", "basemul"), jobs=4, spins=60, reps=3,
              medians={"refnv": 9000.0, "ref": 6000.0, "avx2": 150.0}, design="paired", shuffle=True,
              spin_sigma=0.02, rep_sigma=0.02, analysis={"n_boot": 200})
    d = make_synthetic_study(tmp_path / "carry", carryover={("avx2", "ref"): 0.25}, seed=5, **kw)
    analyze_study(d)
    g = pd.read_csv(d / "results" / "groups.csv", keep_default_na=False)
    flagged = g[g["carryover"].astype(str) == "True"]
    assert sorted(flagged["variant"]) == ["ref", "ref"]
    assert set(flagged["carryover_after"]) == {"avx2/gcc"}
    assert flagged["carryover_shift"].astype(float).between(0.18, 0.32).all(), flagged["carryover_shift"]
    import json

    summary = json.loads((d / "results" / "summary.json").read_text())
    assert summary["carryover"] == {"tested": 6, "flagged": 2, "position0_tested": 6, "position0_flagged": 0}
    assert any("carry-over in 2 group(s)" in w for w in summary["warnings"])
    # what a user reads: show's header and the HTML methods state the design, warm-up and carry-over
    from rich.console import Console

    from pqsimd.report.html import methods
    from pqsimd.results import load_study
    from pqsimd.report.terminal import show_study

    con = Console(record=True, width=400, color_system=None)
    show_study(d, console=con)
    head = con.export_text().splitlines()[0]
    assert head.startswith("design: paired (all variants in one process") and "; warm-up: " in head  # (test_run: real)
    assert "carry-over: found in 2 of 6 groups; worst ml-kem-512" in head and "after avx2/gcc" in head
    rows = dict(methods(load_study(d)))
    assert rows["carry-over between builds"].startswith("found in 2 of 6 groups")
    assert rows["design"].startswith("paired") and rows["warm-up"]
    two = make_synthetic_study(tmp_path / "two", carryover={("avx2", "ref"): 0.25}, seed=6,
                               **{**kw, "variants": ("ref", "avx2")})
    analyze_study(two)
    g = pd.read_csv(two / "results" / "groups.csv", keep_default_na=False)
    flagged = g[g["carryover"].astype(str) == "True"]
    # two builds: avx2 precedes ref in about half its spins, and the shift is still measured right
    assert sorted(flagged["variant"]) == ["ref", "ref"] and set(flagged["carryover_after"]) == {"avx2/gcc"}
    assert flagged["carryover_shift"].astype(float).between(0.18, 0.32).all(), flagged["carryover_shift"]
    clean = make_synthetic_study(tmp_path / "clean", seed=5, **kw)
    analyze_study(clean)
    g = pd.read_csv(clean / "results" / "groups.csv", keep_default_na=False)
    assert not (g["carryover"].astype(str) == "True").any()
    assert json.loads((clean / "results" / "summary.json").read_text())["carryover"]["flagged"] == 0


def test_a_first_position_effect_is_not_read_as_carry_over(tmp_path):
    """Every build runs 10% slower when it is first in its spin (after the driver wrote the previous
    spin's results) and nothing carries over: the carry-over test, stratified by position, flags
    nothing; position0 flags every group with its shift. Unstratified (the old rule, pos unknown),
    position 0's predecessor (the previous spin's last build, sometimes the group itself) reads as
    carry-over."""
    import json

    from pqsimd.analyze.groups import build_groups, carryover
    from pqsimd.analyze.load import load_spins

    d = make_synthetic_study(tmp_path / "p0", variants=("refnv", "ref", "avx2"), ops=("ntt", "basemul"), jobs=4,
                             spins=60, reps=3, medians={"refnv": 9000.0, "ref": 6000.0, "avx2": 150.0},
                             design="paired", shuffle=True, spin_sigma=0.02, rep_sigma=0.02, first_position=0.10,
                             seed=5, analysis={"n_boot": 100})
    analyze_study(d)
    g = pd.read_parquet(d / "results" / "groups.parquet")
    assert not g["carryover"].any() and g["position0"].all()
    assert g["position0_shift"].between(0.07, 0.13).all(), g["position0_shift"]
    s = json.loads((d / "results" / "summary.json").read_text())["carryover"]
    assert s == {"tested": 6, "flagged": 0, "position0_tested": 6, "position0_flagged": 6}
    old = [carryover(grp) for grp in build_groups(load_spins(d).spins).values()
           if setattr(grp, "pos", None) is None]
    assert sum(p < 0.05 / 6 and abs(shift) > 0.02 for p, shift, _ in old) >= 3  # the confound this removes


def test_the_separate_design_is_not_tested_for_carry_over(tmp_path):
    d = make_synthetic_study(tmp_path / "s", variants=("ref", "avx2"), jobs=3, spins=20, reps=2,
                             analysis={"n_boot": 100})
    analyze_study(d)
    g = pd.read_parquet(d / "results" / "groups.parquet")
    assert g["carryover_p"].isna().all() and not g["carryover"].any()


@pytest.mark.parametrize("jobs", [2, 6])
def test_paired_interval_is_the_order_statistics_of_the_job_ratios(tmp_path, jobs):
    """The printed interval is [x(k), x(J+1-k)] of the jobs' ratios rebuilt from the spin medians: at
    J = 6, k = 1 (96.9% >= the family's level) and a 10x speedup is faster; at J = 2 no interval
    reaches 95%: [min, max] at 50%, withheld, and the reason names the jobs needed."""
    import json

    d = make_synthetic_study(tmp_path / f"j{jobs}", schemes=("ml-kem-512",), variants=("ref", "avx2"), ops=("ntt",),
                             jobs=jobs, spins=30, reps=3, medians={"ref": 600.0, "avx2": 60.0}, design="paired",
                             job_sigma=0.02, analysis={"n_boot": 200, "seed": 1})
    res = analyze_study(d)
    row = pd.read_parquet(res / "comparisons.parquet").iloc[0]
    s = pd.read_parquet(res / "spins.parquet")
    jm = s[s["op"] == "ntt"].groupby(["job", "variant"], observed=True)["value"].median().unstack()
    r = np.sort((jm["ref"] / jm["avx2"]).to_numpy())
    h = _widening(res, "ml-kem-512", "ntt", "ref", "avx2")  # the clock's lattice step (issue 27)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((r[0] * np.exp(-h), r[-1] * np.exp(h)), rel=1e-12)
    assert row["ci_level"] == pytest.approx(1 - 2 * 0.5 ** jobs)
    summary = json.loads((res / "summary.json").read_text())
    if jobs == 2:
        assert row["verdict"] == "withheld" and "6 or more jobs" in row["reason"]
    else:
        assert row["verdict"] == "faster" and summary["family"]["level"] <= row["ci_level"]


def test_the_self_check_op_is_not_tested_for_carry_over(tmp_path):
    """The empty op reads ~0-2 ticks: a 'shift' there is a fraction of a tick, not carry-over. Even
    when the op that follows avx2 is 25% slower for every op, only the measured op is flagged."""
    d = make_synthetic_study(tmp_path / "e", variants=("ref", "avx2"), ops=("ntt", "empty"), jobs=4, spins=60, reps=3,
                             medians={"ref": 6000.0, "avx2": 150.0, ("ref", "empty"): 40.0, ("avx2", "empty"): 40.0},
                             design="paired", shuffle=True, spin_sigma=0.02, rep_sigma=0.02, seed=6,
                             carryover={("avx2", "ref"): 0.25}, analysis={"n_boot": 100})
    analyze_study(d)
    g = pd.read_csv(d / "results" / "groups.csv", keep_default_na=False).set_index(["op", "variant"])
    assert str(g.loc[("ntt", "ref"), "carryover"]) == "True"
    assert str(g.loc[("empty", "ref"), "carryover"]) == "False" and g.loc[("empty", "ref"), "carryover_p"] == "n/a"
