"""The typical layout (issue 33): one estimand for a laid-out paired comparison, its clustered sign
interval, copies per job from the layout variance, cliff copies counted once, identical code up to
commuted operands, and every consumer reading the same job values. Coverage figures are measured in
bench/bench_layout_coverage.py, not asserted here."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from pqsimd.stats.interval import (Evidence, clustered_interval, clustered_p, read_verdict, verdict_of,
                                     weighted_median)


def _group(values_by_job_copy, variant="v", op="op"):
    """A laid-out Group from {job: [copy medians]} (each copy 5 spins at its median)."""
    from pqsimd.analyze.groups import Group

    vals, job, lay, spin = [], [], [], []
    for j, copies in enumerate(values_by_job_copy):
        for c, m in enumerate(copies):
            for s in range(5):
                vals.append(m * (1 + 0.001 * (s - 2)))
                job.append(j), lay.append(c), spin.append(len(copies) * s + c)
    return Group("ticks", "s", op, variant, "cc", np.array(vals), np.array(job), np.array(spin),
                 [f"j{j}" for j in range(len(values_by_job_copy))], 1, layout=np.array(lay, np.int16))


def test_weighted_median_weighs_each_job_alike_and_splits_a_tie():
    assert weighted_median([np.array([1.0, 2.0]), np.array([3.0, 4.0])]) == pytest.approx(2.5)
    # job 0's four copies weigh as much as job 1's one copy
    assert weighted_median([np.array([0.0, 0.0, 0.0, 0.0]), np.array([10.0]), np.array([1.0])]) == 1.0
    assert weighted_median([np.array([5.0])]) == 5.0


def test_one_copy_per_job_is_the_order_statistic_interval_of_before():
    ev = Evidence.csign([np.array([x]) for x in (0.1, 0.2, 0.3, 0.05, 0.15, 0.25, 0.12, 0.18, 0.22, 0.08)])
    assert ev.kind == "sign" and ev.interval(0.05).level == pytest.approx(0.978515625)


def test_the_typical_layout_is_not_moved_by_a_rare_cliff_while_the_mean_is():
    # 10 jobs x 2 copies; one copy in ten is 1.6x slower: the typical ratio stays the fast one
    rng = np.random.default_rng(1)
    pairs = [rng.normal(0, 0.002, 2) for _ in range(10)]
    pairs[3][0] += math.log(1.6)
    pairs[7][1] += math.log(1.6)
    ev = Evidence.csign(pairs)
    assert ev.kind == "csign" and abs(ev.point) < 0.003
    gm = float(np.mean(np.concatenate(pairs)))
    assert gm > 0.04  # the mean over layouts is what the cliff decides
    iv = ev.interval(0.05)
    assert iv.lo <= ev.point <= iv.hi and iv.hi < gm  # the interval is about the typical layout, not the mean
    assert iv.level == pytest.approx(0.95) and iv.method == "csign"


def test_the_clustered_p_is_floored_by_the_jobs_and_small_studies_are_withheld():
    pairs = [np.array([0.5, 0.6]), np.array([0.55, 0.65]), np.array([0.52, 0.58])]
    assert clustered_p(pairs, np.array([0.0]))[0] == pytest.approx(0.25)  # 2^(1-3): three jobs agreeing
    iv, verdict = read_verdict(Evidence.csign(pairs), 0.05, math.log1p(0.02))
    assert not iv.reachable and verdict == "withheld"


@pytest.mark.parametrize("seed", range(8))
def test_the_verdict_read_off_the_interval_is_the_one_its_decision_p_gives(seed):
    rng = np.random.default_rng(seed)
    shift = rng.choice([0.0, 0.015, 0.03, 0.08])
    pairs = [shift + rng.normal(0, 0.01) + rng.normal(0, 0.01, 2) for _ in range(12)]
    ev = Evidence.csign(pairs)
    band = math.log1p(0.02)
    p, v = ev.decision_p(band)
    for gamma in (0.001, 0.01, 0.05, 0.2):
        iv = ev.interval(gamma)
        got = verdict_of(iv.lo, iv.hi, band)
        if p < gamma * 0.999:
            assert got == v, (gamma, p, v, iv)
        elif p > gamma * 1.001:
            assert got == "~", (gamma, p, v, iv)


def test_the_interval_is_the_set_the_clustered_test_does_not_reject():
    rng = np.random.default_rng(4)
    pairs = [rng.normal(0, 0.02) + rng.normal(0, 0.01, 3) for _ in range(10)]
    lo, hi = clustered_interval(pairs, 0.05)
    inside = np.linspace(lo, hi, 9)[1:-1]
    assert (clustered_p(pairs, inside) > 0.05).all()
    assert clustered_p(pairs, np.array([lo - 0.05, hi + 0.05])).max() <= 0.05


def test_group_job_value_is_the_median_of_its_copies_and_the_group_its_typical_copy():
    g = _group([[100, 110, 300], [105, 95, 101], [99, 98, 97]])
    assert g.job_medians[0] == pytest.approx(110, rel=1e-3)  # the median copy, not the geometric mean
    two = _group([[100, 121], [100, 100], [100, 100]])
    assert two.job_medians[0] == pytest.approx(110, rel=1e-3)  # two copies: their geometric mean
    assert g.median == pytest.approx(100, rel=2e-3)


def test_a_laid_out_paired_pair_is_csign_and_its_job_ratios_are_the_median_pairs():
    from pqsimd.analyze.compare import copy_log_ratios, pair_evidence
    from pqsimd.analysis_settings import Settings

    rng = np.random.default_rng(2)
    base = _group([[200 * math.exp(rng.normal(0, 0.01)) for _ in range(2)] for _ in range(8)], "b")
    var = _group([[100 * math.exp(rng.normal(0, 0.01)) for _ in range(2)] for _ in range(8)], "v")
    cl = copy_log_ratios(base, var)
    assert len(cl) == 8 and all(c.size == 2 for c in cl)
    ev, design, ids, logs, _how, _res = pair_evidence(base, var, Settings())
    assert design == "paired" and ev.kind == "csign"
    assert np.allclose(logs, [np.median(c) for c in cl])
    assert math.exp(ev.point) == pytest.approx(2.0, rel=0.02)


def test_copies_needed_follows_the_layout_variance():
    from pqsimd.stats.layout import copies_needed

    rng = np.random.default_rng(3)
    J, L = 40, 2
    job = rng.normal(0, 0.02, (J, 1))
    quiet = job + rng.normal(0, 0.001, (J, L))
    _lay, _rest, n_quiet = copies_needed(quiet, np.full((J, L), 1e-6))
    noisy = job + rng.normal(0, 0.06, (J, L))
    lay, rest, n_noisy = copies_needed(noisy, np.full((J, L), 1e-6))
    assert n_quiet == 1 and n_noisy >= 4 and lay == pytest.approx(0.06 ** 2, rel=0.6)
    # a rare cliff copy (one in twenty, 2x) does not set the layout's scale: the bulk does
    cliff = quiet.copy()
    cliff[::10, 0] += math.log(2.0)
    assert copies_needed(cliff, np.full((J, L), 1e-6))[2] <= 2
    assert copies_needed(quiet[:2], np.zeros((2, L)))[2] == 0  # too few jobs to tell


def test_units_count_comparisons_sharing_a_cliff_copy_once():
    from pqsimd.stats.multiplicity import family_level, unit_p

    p = np.array([0.001, 0.002, 0.003, 0.5, 0.01])
    assert unit_p(p, ["a", "a", "a", 1, 2]).tolist() == pytest.approx([0.003 * 1, 0.5, 0.01][:0] + [0.003, 0.5, 0.01])
    plain = family_level(p, 0.05, "fcr")
    grouped = family_level(p, 0.05, "fcr", ["a", "a", "a", 1, 2])
    assert plain.m == 5 and grouped.m == 3 and grouped.members == 5
    assert grouped.to_dict()["units"] == 3 and grouped.to_dict()["comparisons"] == 5
    # Bonferroni keeps every comparison (simultaneous coverage needs them all)
    assert family_level(p, 0.05, "bonferroni", ["a", "a", "a", 1, 2]).m == 5


def test_cliff_findings_join_the_comparisons_of_one_slow_copy():
    from pqsimd.analyze.compare import cliff_findings

    rows = pd.DataFrame([
        dict(metric="ticks", scheme="s", op=o, baseline=b, baseline_compiler="gcc", variant=v, compiler="gcc")
        for o in ("gen_a", "noise") for b, v in (("ref", "avx2"), ("refnv", "ref"))] + [
        dict(metric="ticks", scheme="s", op="ntt", baseline="ref", baseline_compiler="gcc", variant="avx2",
             compiler="gcc")])
    copies = pd.DataFrame([
        dict(metric="ticks", scheme="s", op=o, variant="avx2", compiler="gcc", job="s.3", copy=0, norm=n, cliff=True)
        for o, n in (("gen_a", 1.62), ("noise", 1.8))] + [
        dict(metric="ticks", scheme="s", op="ntt", variant="avx2", compiler="gcc", job="s.3", copy=1, norm=1.0,
             cliff=False)])
    f = cliff_findings(rows, copies)
    assert f[0] == f[2] != "" and "job s.3 copy 0" in f[0] and "1.80" in f[0]
    assert f[1] == f[3] == f[4] == ""


def test_the_decomposition_names_a_cliff_shared_by_two_stages():
    from pqsimd.analyze.decompose import decompose
    from pqsimd.results import Chain

    chain = Chain.from_dict({"steps": [{"stage": "autovec", "from": "refnv", "to": "ref"},
                                       {"stage": "hand_simd", "from": "ref", "to": "avx2"}]})
    base = dict(metric="ticks", scheme="s", op="gen_a", baseline_compiler="gcc", compiler="gcc", ci_level=0.95,
                n_var=10, verdict="faster", reason="")
    c = pd.DataFrame([base | dict(baseline="refnv", variant="ref", speedup=0.8, ci_low=0.7, ci_high=0.9,
                                  cliff_finding="s ref (gcc) job s.3 copy 0, 1.30×"),
                      base | dict(baseline="ref", variant="avx2", speedup=3.0, ci_low=2.8, ci_high=3.2,
                                  cliff_finding="s ref (gcc) job s.3 copy 0, 1.30×")])
    d = decompose(c, chain)
    assert d["cliff_finding"].iloc[0].startswith("s ref") and "moves stages autovec, hand_simd" in d["note"].iloc[0]


def test_commuted_operands_of_an_equality_compare_hash_alike():
    from pqsimd.binary import Library
    from pqsimd.verify.codehash import commuted, op_hashes

    def funcs(cmp, jump="jne"):
        text = "".join(f"  {0x10 + i:x}:\t90 \t{t}\n" for i, t in enumerate(["mov %edi,%eax", cmp, f"{jump} 20 <op+0x10>",
                                                                             "ret"]))
        return Library(isa="x86_64", nm_text="", objdump_text=f"0000000000000010 <op>:\n{text}")
    a, b = funcs("cmp %eax,%ecx"), funcs("cmp %ecx,%eax")
    assert op_hashes(a, {"x": 0x10}) != op_hashes(b, {"x": 0x10})
    assert op_hashes(a, {"x": 0x10}, commute=True) == op_hashes(b, {"x": 0x10}, commute=True)
    # an ordering test reads more than ZF: the operands' order matters
    la, lb = funcs("cmp %eax,%ecx", "jl"), funcs("cmp %ecx,%eax", "jl")
    assert op_hashes(la, {"x": 0x10}, commute=True) != op_hashes(lb, {"x": 0x10}, commute=True)
    # three-operand VEX: commuting sources; a non-commuting op keeps its order
    assert commuted(["vpaddw %ymm2,%ymm1,%ymm0"]) == commuted(["vpaddw %ymm1,%ymm2,%ymm0"])
    assert commuted(["vpsubw %ymm2,%ymm1,%ymm0"]) != commuted(["vpsubw %ymm1,%ymm2,%ymm0"])
    assert commuted(["test %rax,%rbx"]) == commuted(["test %rbx,%rax"])


def test_identical_code_how_and_the_checks_size():
    from pqsimd.analyze.layout import identical_code_check, identical_code_how

    rows = pd.DataFrame([dict(metric="ticks", scheme="s", op=o, baseline="refnv", baseline_compiler="gcc",
                              variant="ref", compiler="gcc", verdict="~", speedup=1.0) for o in ("a", "b", "c", "d")])
    code = {("refnv", "gcc", "s", "a"): "h1", ("ref", "gcc", "s", "a"): "h1",
            ("refnv", "gcc", "s", "b"): "h2", ("ref", "gcc", "s", "b"): "h3"}
    commuted = {("refnv", "gcc", "s", "b"): "k", ("ref", "gcc", "s", "b"): "k"}
    counts = {("refnv", "gcc", "s", "c"): 100.0, ("ref", "gcc", "s", "c"): 100.0,
              ("refnv", "gcc", "s", "d"): 100.0, ("ref", "gcc", "s", "d"): 101.0}
    how = identical_code_how(rows, code, commuted, counts)
    assert how.tolist() == ["same instructions", "commuted operands", "equal instruction counts", ""]
    rows["identical_code"], rows["identical_code_how"] = how != "", how
    chk = identical_code_check(rows, 0.05)
    assert chk["n"] == 3 and chk["by"]["commuted operands"] == 1
    assert chk["rows_to_test_level"] == 59 and not chk["can_test_level"]
    assert chk["miss_rate_bound"] == pytest.approx(1 - 0.05 ** (1 / 3), abs=1e-4)


def test_campaign_rebuilds_a_csign_row_from_the_copies():
    from pqsimd.analyze.campaign import copy_logs, evidence, job_medians

    rng = np.random.default_rng(6)
    rows = []
    for v, m in (("ref", 200.0), ("avx2", 100.0)):
        for j in range(6):
            for c in range(3):
                x = m * math.exp(rng.normal(0, 0.02))
                rows += [dict(metric="ticks", scheme="s", op="ntt", variant=v, compiler="gcc", job=f"p.{j}",
                              layout=c, value=x * (1 + 0.001 * k)) for k in range(3)]
    spins = pd.DataFrame(rows)
    jm, cl = job_medians(spins), copy_logs(spins)
    key = ("ticks", "s", "ntt", "ref", "avx2")
    ev = evidence(jm, key, "gcc", "paired", cl)
    pairs = [np.log(spins[(spins.variant == "ref") & (spins.job == f"p.{j}")].groupby("layout")["value"].median())
             .to_numpy() - np.log(spins[(spins.variant == "avx2") & (spins.job == f"p.{j}")]
                                  .groupby("layout")["value"].median()).to_numpy() for j in range(6)]
    assert ev.copies is not None and ev.estimate == pytest.approx(Evidence.csign(pairs).point)
    # the job value is the median of the copies, as analyze takes it
    g = spins[(spins.variant == "ref") & (spins.job == "p.0")]
    assert jm[("ticks", "s", "ntt", "ref", "gcc")]["p.0"] == pytest.approx(
        math.exp(np.median(np.log(g.groupby("layout")["value"].median()))))


def test_attribution_resamples_copy_pairs_of_a_laid_out_ablation():
    from pqsimd.analyze.attribution import job_log_ratios
    from pqsimd.stats.shapley import Cell, shapley_bootstrap

    rng = np.random.default_rng(8)
    ids = [f"j{i}" for i in range(6)]
    cells = {"a": Cell({"x"}), "b": Cell({"y"}), "ab": Cell({"x", "y"})}
    d = pd.DataFrame({"variant": list(cells), "_job_ids": [ids] * 3,
                      "_job_logs": [rng.normal(m, 0.01, 6) for m in (0.1, 0.2, 0.3)],
                      "_copy_logs": [[rng.normal(m, 0.01, 2) for _ in ids] for m in (0.1, 0.2, 0.3)]})
    jobs = job_log_ratios(d, cells)
    assert all(x.shape == (6, 2) for x in jobs.values())
    boot = shapley_bootstrap(jobs, ["x", "y"], 0.95, 200, np.random.default_rng(0))
    lo, hi = boot.shapley["x"]  # phi_x = (v(x) + v(xy) - v(y)) / 2 = 0.1
    assert lo < 0.1 < hi and hi - lo < 0.05


def test_a_campaign_names_the_layout_design_of_each_member():
    from types import SimpleNamespace

    from pqsimd.analyze.campaign import Member, layout_design

    def member(summary_layout, st, plan_settings):
        study = SimpleNamespace(summary={"layout": summary_layout} if summary_layout else {},
                                study={"study": st}, directory=".")
        return Member("m", study, {"settings": plan_settings}, True)

    assert layout_design(member({"mode": "random", "copies_per_job": 2}, {}, {})) == "random, 2 copies per job"
    assert layout_design(member(None, {"layout": "random", "layouts": 8}, {})) == "random, 8 copies per job"
    assert layout_design(member(None, {}, {})) == "fixed"  # a study from before layouts: the builds as linked
    assert layout_design(member({"mode": "fixed"}, {"layout": "random"}, {})) == "fixed"


@pytest.mark.parametrize("design, layout, expected", [
    ("paired", {"mode": "random", "copies_per_job": 2}, "laid_out"),
    ("paired", {"mode": "random", "copies_per_job": 1}, "one_copy"),
    ("paired", {"mode": "fixed", "copies_per_job": 1}, "fixed"),
    ("paired", None, "fixed"),
    ("separate", {"mode": "random", "copies_per_job": 2}, "separate"),
])
def test_the_methods_state_the_estimand_this_study_has(design, layout, expected):
    """The report's estimand row is the study's own: a fixed layout or one copy per job is not
    described as the typical layout of a clustered sign interval (it was, whatever the study)."""
    from pqsimd.analyze.methods import ESTIMAND, estimand_of, methods
    from pqsimd.analysis_settings import Settings

    key = estimand_of(design, layout)
    assert key == expected
    text = methods(Settings(), None, design, key)["estimand"]
    assert text.startswith(ESTIMAND[key])
    assert ("csign" in text.split(". Not estimated")[0]) == (key == "laid_out")


def test_an_analysed_fixed_layout_study_says_its_estimand(tmp_path):
    import json

    from pqsimd.analyze import analyze_study
    from synthetic import make_synthetic_study

    d = make_synthetic_study(tmp_path / "s", schemes=("ml-kem-512",), variants=("ref", "avx2"), ops=("ntt",),
                             jobs=4, spins=10, reps=3, medians={"ref": 1000, "avx2": 40}, seed=5, design="paired")
    analyze_study(d)
    summary = json.loads((d / "results" / "summary.json").read_text())
    assert summary["estimand"]["applies"] == "fixed"
    assert summary["methods"]["estimand"].startswith("the median over jobs of the job ratio")


def test_the_typical_layouts_interval_is_never_narrower_than_the_clock():
    """csign evidence is widened by the clock's resolution like every timed interval (at_resolution
    dropped it: on a 26-tick host 44 of 315 laid-out intervals were narrower than the clock)."""
    from pqsimd.stats.interval import Evidence

    rng = np.random.default_rng(3)
    ev = Evidence.csign([rng.normal(0.5, 1e-4, 2) for _ in range(10)])
    res = 0.01
    plain, wide = ev.interval(0.05), ev.at_resolution(res).interval(0.05)
    assert wide.lo == pytest.approx(plain.lo - res) and wide.hi == pytest.approx(plain.hi + res)
    assert wide.hi - wide.point >= res and wide.point - wide.lo >= res
