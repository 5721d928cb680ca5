"""The ablation's attribution (analyze/attribution.py) against brute force: Shapley values as the
average marginal gain over every order of switching the groups on, interval ranges over every
corner of the box, and the table's bookkeeping (shares sum to 1, every number inside its interval)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from pqsimd.analyze.attribution import AblationDesign, attribute, attribution_table, check
from pqsimd.stats.shapley import Cell, linear_range, ratio_range, shapley_bootstrap, shapley_weights

GROUPS = ("ntt", "keccak", "rej")


def cells(groups=GROUPS):
    return [Cell(s) for r in range(1, len(groups) + 1) for s in itertools.combinations(groups, r)]


def brute_shapley(v: dict, groups) -> dict:
    out = {g: 0.0 for g in groups}
    perms = list(itertools.permutations(groups))
    for order in perms:
        on = Cell()
        for g in order:
            out[g] += (v.get(on | {g}, 0.0) - v.get(on, 0.0)) / len(perms)
            on = on | {g}
    return out


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_shapley_weights_equal_the_average_over_orders(k):
    groups = tuple(f"g{i}" for i in range(k))
    rng = np.random.default_rng(k)
    v = {c: float(rng.normal()) for c in cells(groups)}
    w = shapley_weights(list(groups))
    brute = brute_shapley(v, groups)
    for g in groups:
        assert sum(c * v[s] for s, c in w[g].items()) == pytest.approx(brute[g])
    assert sum(brute.values()) == pytest.approx(v[Cell(groups)])  # efficiency


def test_ranges_are_the_extremes_over_every_corner():
    rng = np.random.default_rng(3)
    cs = cells()
    full = Cell(GROUPS)
    w = shapley_weights(list(GROUPS))
    for _ in range(20):
        pt = {c: float(rng.uniform(0.5, 2.0)) for c in cs}
        lo = {c: pt[c] - rng.uniform(0, 0.3) for c in cs}
        hi = {c: pt[c] + rng.uniform(0, 0.3) for c in cs}
        for g in GROUPS:
            corners = []
            for pick in itertools.product((0, 1), repeat=len(cs)):
                v = {c: (lo, hi)[b][c] for c, b in zip(cs, pick)}
                corners.append((sum(x * v[s] for s, x in w[g].items()), sum(x * v[s] for s, x in w[g].items()) / v[full]))
            lin, rat = [c[0] for c in corners], [c[1] for c in corners]
            assert linear_range(w[g], lo, hi) == pytest.approx((min(lin), max(lin)))
            assert ratio_range(w[g], full, lo, hi) == pytest.approx((min(rat), max(rat)))


def test_attribute_sums_and_holds_its_estimates():
    rng = np.random.default_rng(5)
    v = {}
    for c in cells():
        x = 0.5 * ("ntt" in c) + 0.3 * ("keccak" in c) + 0.1 * ("rej" in c) + 0.05 * ("ntt" in c and "keccak" in c)
        v[c] = (x, x - rng.uniform(0, 0.02), x + rng.uniform(0, 0.02))
    rows = attribute(v, GROUPS, 0.02)
    assert sum(r["share"] for r in rows) == pytest.approx(1.0)
    assert sum(r["shapley"] for r in rows) == pytest.approx(v[Cell(GROUPS)][0])
    by = {r["group"]: r for r in rows}
    assert by["ntt"]["shapley"] == pytest.approx(0.5 + 0.025) and by["rej"]["shapley"] == pytest.approx(0.1)
    assert by["ntt"]["leave_one_out"] == pytest.approx(0.55) and by["keccak"]["add_one_in"] == pytest.approx(0.3)
    assert rows[0]["interaction"] == pytest.approx(0.05)
    for r in rows:
        for col in ("shapley", "share", "leave_one_out", "add_one_in", "interaction"):
            assert r[f"{col}_ci_low"] <= r[col] <= r[f"{col}_ci_high"]


def test_every_interval_carries_the_level_it_guarantees():
    """Each number's level from the levels of the cells it uses: add-one-in and total their cell's, a
    box range 1 - the sum of its cells' misses (the box Shapley interval: every cell's, 1 - 7 x 2.15%)."""
    v = {c: (0.1 * len(c), 0.1 * len(c) - 0.01, 0.1 * len(c) + 0.01, 0.9785 if len(c) < 3 else 0.99) for c in cells()}
    rows = {r["group"]: r for r in attribute(v, GROUPS, 0.02)}
    r = rows["ntt"]
    assert r["total_ci_level"] == 0.99 and r["add_one_in_ci_level"] == 0.9785
    assert r["leave_one_out_ci_level"] == pytest.approx(1 - 0.01 - 0.0215)
    assert r["interaction_ci_level"] == pytest.approx(1 - 0.01 - 3 * 0.0215)
    assert r["shapley_ci_method"] == "box" and r["shapley_ci_level"] == pytest.approx(1 - 0.01 - 6 * 0.0215)
    assert r["share_ci_level"] == r["shapley_ci_level"]
    # J = 2 everywhere: [min, max] of two jobs is a 50% interval; the box guarantees nothing
    two = {c: (x[0], x[1], x[2], 0.5) for c, x in v.items()}
    r2 = attribute(two, GROUPS, 0.02)[0]
    assert r2["add_one_in_ci_level"] == 0.5 and r2["shapley_ci_level"] == 0.0 and r2["interaction_ci_level"] == 0.0


def test_the_shapley_bootstrap_is_a_plain_loop_over_job_resamples():
    rng = np.random.default_rng(8)
    J = 7
    logs = {c: 0.2 * len(c) + rng.normal(0, 0.05, J) for c in cells()}
    boot = shapley_bootstrap(logs, GROUPS, 0.9, 300, np.random.default_rng(1))
    draws = np.random.default_rng(1).integers(0, J, size=(300, J))
    w = shapley_weights(list(GROUPS))
    phi = {g: [] for g in GROUPS}
    share = {g: [] for g in GROUPS}
    for idx in draws:
        v = {c: float(np.median(x[idx])) for c, x in logs.items()}
        for g in GROUPS:
            p = sum(c * v[s] for s, c in w[g].items())
            phi[g].append(p)
            share[g].append(p / v[Cell(GROUPS)])
    for g in GROUPS:
        assert boot.shapley[g] == pytest.approx(tuple(np.quantile(phi[g], [0.05, 0.95])))
        assert boot.share[g] == pytest.approx(tuple(np.quantile(share[g], [0.05, 0.95])))
    assert boot.level == 0.9


def test_without_the_factorial_only_loo_and_aoi():
    v = {c: (1.0, 0.9, 1.1) for c in cells() if len(c) in (1, 2, 3)}
    del v[Cell({"ntt", "keccak"})]  # one pair missing: not a factorial
    rows = attribute(v, GROUPS, 0.02)
    assert all(math.isnan(r.get("shapley", math.nan)) for r in rows)
    assert "no Shapley shares" in rows[0]["note"]
    assert not math.isnan(rows[0]["add_one_in"])


def test_table_from_comparisons_and_exact_counts():
    """Instruction counts are exact: zero-width intervals, shares exact and summing to 1."""
    ab = AblationDesign("impl", GROUPS, {f"c{i}": c for i, c in enumerate([Cell(), *cells()])})
    rows = []
    for var, c in ab.cells.items():
        if not c:
            continue
        s = math.exp(0.6 * ("ntt" in c) + 0.4 * ("keccak" in c) + 0.05 * ("rej" in c))
        rows.append(dict(metric="instructions", scheme="s", op="decaps", compiler="gcc", baseline_compiler="gcc",
                         baseline="c0", variant=var, speedup=s, ci_low=s, ci_high=s, design="exact"))
    t = attribution_table(pd.DataFrame(rows), [ab], 0.02)
    check(t)
    assert len(t) == 3 and t["share"].sum() == pytest.approx(1.0)
    assert np.allclose(t["share_ci_low"], t["share"], rtol=1e-12) and t.set_index("group").loc["ntt", "share"] == pytest.approx(0.6 / 1.05)
    assert t["total"].iloc[0] == pytest.approx(math.exp(1.05))


def test_an_ablation_study_end_to_end(tmp_path):
    """A paired synthetic study of an ablation (2 groups: 4 cells) with known kernel speedups: analyze
    writes results/attribution with Shapley shares that sum to 1 and recover the truth, and every
    ablation comparison is in comparisons.csv as stage `ablation`."""
    import json

    from synthetic import make_synthetic_study

    from pqsimd.analyze import analyze_study

    # time = 1000 (C) / 4 with the NTT group native / 2 with Keccak native: log-additive, no interaction
    med = {"impl-c": 1000.0, "impl-ntt": 250.0, "impl-keccak": 500.0, "impl-full": 125.0}
    d = make_synthetic_study(tmp_path / "ab", variants=tuple(med), ops=("kem_decaps", "ntt"), jobs=8, spins=40,
                             reps=3, medians=med, design="paired", analysis={"n_boot": 100, "seed": 1})
    (d / "manifest.json").write_text(json.dumps({"ablations": [{
        "implementation": "impl", "groups": ["ntt", "keccak"],
        "cells": {"impl-c": [], "impl-ntt": ["ntt"], "impl-keccak": ["keccak"], "impl-full": ["ntt", "keccak"]}}]}))
    res = analyze_study(d)
    c = pd.read_parquet(res / "comparisons.parquet")
    ab = c[c["stage"] == "ablation"]
    assert len(ab) == 2 * 3 and set(ab["baseline"]) == {"impl-c"}
    t = pd.read_parquet(res / "attribution.parquet")
    assert len(t) == 4 and set(t["group"]) == {"ntt", "keccak"}
    for op, g in t.groupby("op"):
        g = g.set_index("group")
        assert g["share"].sum() == pytest.approx(1.0)
        assert g.loc["ntt", "share"] == pytest.approx(2 / 3, abs=0.02)  # log 4 of log 8
        assert g.loc["ntt", "shapley"] == pytest.approx(4.0, rel=0.02) and g["total"].iloc[0] == pytest.approx(8.0, rel=0.02)
        assert g["interaction"].iloc[0] == pytest.approx(1.0, abs=0.02)
        for col in ("shapley", "share", "leave_one_out", "add_one_in"):
            assert ((g[f"{col}_ci_low"] <= g[col]) & (g[col] <= g[f"{col}_ci_high"])).all()
        # the Shapley values' interval is the job bootstrap's at 1 - alpha, narrower than the box over
        # the cells' intervals (which would guarantee only 1 - 3 x their miss)
        assert set(g["shapley_ci_method"]) == {"bootstrap"} and set(g["shapley_ci_level"]) == {0.95}
        cc = c[(c["stage"] == "ablation") & (c["op"] == op)].set_index("variant")
        cell = {"impl-ntt": Cell({"ntt"}), "impl-keccak": Cell({"keccak"}), "impl-full": Cell({"ntt", "keccak"})}
        v = {cell[x]: (math.log(r.speedup), math.log(r.ci_low), math.log(r.ci_high), r.ci_level)
             for x, r in cc.iterrows()}
        box = {r["group"]: r for r in attribute(v, ("ntt", "keccak"), 0.02)}
        for grp, r in g.iterrows():
            assert math.log(r["shapley_ci_high"] / r["shapley_ci_low"]) < \
                box[grp]["shapley_ci_high"] - box[grp]["shapley_ci_low"]
            assert box[grp]["shapley_ci_level"] == pytest.approx(1 - 3 * (1 - cc["ci_level"].iloc[0]))


def test_the_report_and_show_present_the_attribution(tmp_path):
    """The report's attribution part: a figure and table per family, macros of every share, an HTML
    section, and `pqsimd show` prints the shares; partial cells stay out of the variant views."""
    import json

    from rich.console import Console
    from synthetic import make_synthetic_study

    from pqsimd.analyze import analyze_study
    from pqsimd.studysets import report_study as write_report
    from pqsimd.report.terminal import show_study

    med = {"impl-c": 1000.0, "impl-ntt": 250.0, "impl-keccak": 500.0, "impl-full": 125.0}
    d = make_synthetic_study(tmp_path / "r", variants=tuple(med), ops=("kem_keypair", "kem_decaps"), jobs=6,
                             spins=20, reps=3, medians=med, design="paired", analysis={"n_boot": 100, "seed": 1})
    (d / "manifest.json").write_text(json.dumps({"ablations": [{
        "implementation": "impl", "groups": ["ntt", "keccak"],
        "cells": {"impl-c": [], "impl-ntt": ["ntt"], "impl-keccak": ["keccak"], "impl-full": ["ntt", "keccak"]}}]}))
    analyze_study(d)
    out = write_report(d)
    assert (out / "attribution" / "fig_attribution_ml-kem.png").stat().st_size > 10000
    md = (out / "attribution" / "table_attribution_ml-kem.md").read_text()
    assert "ntt share" in md and "keccak share" in md and "67%" in md
    html = (out / "index.html").read_text()
    assert 'id="attribution"' in html and "Shapley share" in html and 'data-attribution="ml-kem"' in html
    import re
    named = re.findall(r'Also as <code>([^<]+)\.tex</code>', html)
    assert "attribution/table_attribution_ml-kem" in named
    assert all((out / f"{n}.tex").exists() for n in named), named  # the HTML names files that exist
    # a study of the ablation's cells alone has no chain: no empty Table 1, stage figures or their warnings
    assert "figure skipped" not in html and "hand SIMD speedup (ref" not in html
    assert not (out / "ml-kem").exists() and 'href="#ml-kem"' not in html
    macros = (out / "macros.tex").read_text()
    assert r"\pqsimdKemShareNttKemDecapsMlkemFiveTwelve}{" in macros
    con = Console(record=True, width=220, color_system=None)
    show_study(d, console=con)
    text = con.export_text()
    assert "where impl's speedup over its C comes from" in text and "impl-ntt " not in text


def test_the_bootstrap_with_a_resolution_is_the_box_of_each_resample():
    """With per-cell resolutions the Shapley ends move out by sum |w_S| res_S, and a share's ends are
    the quantiles of each resample's lowest and highest phi / total over the corners (brute force)."""
    rng = np.random.default_rng(9)
    J = 7
    logs = {c: 0.2 * len(c) + rng.normal(0, 0.05, J) for c in cells()}
    res = {c: 0.01 * (1 + i % 3) for i, c in enumerate(cells())}
    boot = shapley_bootstrap(logs, GROUPS, 0.9, 300, np.random.default_rng(1), res)
    draws = np.random.default_rng(1).integers(0, J, size=(300, J))
    w = shapley_weights(list(GROUPS))
    full = Cell(GROUPS)
    for g in GROUPS:
        r_phi = sum(abs(c) * res[s] for s, c in w[g].items())
        phi, s_lo, s_hi = [], [], []
        for idx in draws:
            v = {c: float(np.median(x[idx])) for c, x in logs.items()}
            p = sum(c * v[s] for s, c in w[g].items())
            phi.append(p)
            corners = [(p + a) / (v[full] + b) for a in (-r_phi, r_phi) for b in (-res[full], res[full])]
            s_lo.append(min(corners)), s_hi.append(max(corners))
        lo, hi = np.quantile(phi, [0.05, 0.95])
        assert boot.shapley[g] == pytest.approx((lo - r_phi, hi + r_phi))
        assert boot.share[g] == pytest.approx((np.quantile(s_lo, 0.05), np.quantile(s_hi, 0.95)))


def test_an_ablation_on_a_coarse_lattice_has_no_point_interval(tmp_path):
    """Issue 32: cells of 40, 10.3, 20.2 and 5.1 ticks per call read whole (batch 1, no noise to speak
    of): every job gives the same ratio for every cell, so the job bootstrap of the Shapley values and
    shares was a point. Widened by the cells' resolutions, every number of the attribution has an
    interval wider than a point that holds it, and the Shapley values cover the unquantized truth."""
    import json

    from synthetic import make_synthetic_study

    from pqsimd.analyze import analyze_study

    med = {"impl-c": 40.0, "impl-ntt": 10.3, "impl-keccak": 20.2, "impl-full": 5.1}
    d = make_synthetic_study(tmp_path / "ab", variants=tuple(med), ops=("ntt",), jobs=8, spins=20, reps=3,
                             medians=med, design="paired", spin_sigma=1e-5, rep_sigma=1e-5, outlier_rate=0.0,
                             overhead=20.0, analysis={"n_boot": 100, "seed": 1})
    (d / "manifest.json").write_text(json.dumps({"ablations": [{
        "implementation": "impl", "groups": ["ntt", "keccak"],
        "cells": {"impl-c": [], "impl-ntt": ["ntt"], "impl-keccak": ["keccak"], "impl-full": ["ntt", "keccak"]}}]}))
    t = pd.read_parquet(analyze_study(d) / "attribution.parquet").set_index("group")
    assert set(t["shapley_ci_method"]) == {"bootstrap"}
    for col in ("shapley", "share", "leave_one_out", "add_one_in", "total", "interaction"):
        lo, p, hi = t[f"{col}_ci_low"], t[col], t[f"{col}_ci_high"]
        assert p.notna().all() and (hi > lo).all() and ((lo <= p) & (p <= hi)).all(), (col, t[[f"{col}_ci_low", col]])
    v = {"ntt": math.log(40 / 10.3), "keccak": math.log(40 / 20.2), "full": math.log(40 / 5.1)}
    truth = {"ntt": 0.5 * (v["ntt"] + v["full"] - v["keccak"]), "keccak": 0.5 * (v["keccak"] + v["full"] - v["ntt"])}
    for g, phi in truth.items():
        assert t.loc[g, "shapley_ci_low"] < math.exp(phi) < t.loc[g, "shapley_ci_high"]
