"""The per-unit view: for a family that says how many units of work each op does per call ([views] per_unit,
e.g. Keccak's ops permute 1, 4 or 8 states), every build's time and count per unit, and from one op to the
next the per-unit speedup with its interval — for the keccak family the *width* effect: its AVX-512 build's 4-way
→ 8-way op is 256-bit AVX-512VL → 512-bit AVX-512 at the same ISA features.

    per_unit    metric, scheme, variant, compiler, unit, op_from, op_to, units_from, units_to,
                per_unit_from, per_unit_to (each op's group median over its units per call),
                speedup (= per_unit_from / per_unit_to: > 1 where the wider op does a unit faster),
                ci_low, ci_high, ci_level, design, verdict

The estimand is a comparison's: the typical job's ratio of the two ops' per-unit times within one build (both
ops are timed in the same jobs, so the paired design's median job ratio and its order-statistic interval;
exact for deterministic counts). Intervals are at the study's per-comparison level 1 − alpha, outside the
chain's multiple-testing family (these rows are a view of ops, not stages of the chain); the verdict is read
off the printed interval with the study's threshold.
"""

from __future__ import annotations

import math

import pandas as pd

from .. import metrics as metrics_mod
from ..stats.interval import Evidence, read_verdict
from .compare import pair_evidence
from .groups import Group, GroupKey

COLUMNS = ["metric", "scheme", "variant", "compiler", "unit", "op_from", "op_to", "units_from", "units_to",
           "per_unit_from", "per_unit_to", "speedup", "ci_low", "ci_high", "ci_level", "design", "verdict"]


def per_unit_of(families: dict, scheme: str) -> dict | None:
    """The family's [views] per_unit of a parameter set (catalog dicts: families[name]['schemes'], ['views'])."""
    for fam in families.values():
        if scheme in (fam.get("schemes") or {}):
            return (fam.get("views") or {}).get("per_unit") or None
    return None


def scaled(g: Group, units: int) -> Group:
    """The group over its units per call: every spin median and the clock's lattice step divided by `units`."""
    s = Group(g.metric, g.scheme, g.op, g.variant, g.compiler, g.values / units, g.job, g.spin, list(g.job_ids),
              g.n_reps, pos=g.pos, layout=g.layout, prev=g.prev)
    s.resolution = g.resolution / units
    return s


def one_row(a: Group, b: Group, na: int, nb: int, unit: str, settings) -> dict:
    """op a (na units per call) → op b (nb) of one build: the per-unit speedup a / b and its interval."""
    sa, sb = scaled(a, na), scaled(b, nb)
    row = {"metric": a.metric, "scheme": a.scheme, "variant": a.variant, "compiler": a.compiler, "unit": unit,
           "op_from": a.op, "op_to": b.op, "units_from": na, "units_to": nb,
           "per_unit_from": sa.median, "per_unit_to": sb.median}
    gamma, band = settings.alpha, math.log1p(settings.threshold)
    if not (sa.positive and sb.positive):
        return {**row, "speedup": math.nan, "ci_low": math.nan, "ci_high": math.nan, "ci_level": math.nan,
                "design": "n/a", "verdict": "n/a"}
    if sa.deterministic and sb.deterministic:
        ev, design = Evidence.exact(math.log(sa.median / sb.median), sa.median / sb.median), "exact"
    else:
        ev, design, *_ = pair_evidence(sa, sb, settings)
        design = str(design)
    iv, verdict = read_verdict(ev, gamma, band)
    point, lo, hi = iv.ratio
    if ev.kind == "exact":
        point = ev.ratio
    return {**row, "speedup": point, "ci_low": lo, "ci_high": hi, "ci_level": iv.level, "design": design,
            "verdict": verdict}


def per_unit_table(groups: dict[GroupKey, Group], families: dict, settings) -> pd.DataFrame:
    """Every build's consecutive per-unit ops (in the family's per_unit order) compared; empty when no family
    of the study has a per_unit view."""
    rows = []
    builds = dict.fromkeys((m, s, v, c) for (m, s, _o, v, c) in groups)
    for metric, scheme, variant, compiler in builds:
        if metric not in (metrics_mod.TIME, metrics_mod.COUNT):
            continue
        pu = per_unit_of(families, scheme)
        if not pu:
            continue
        ops = [(o, int(n)) for o, n in pu["ops"].items() if (metric, scheme, o, variant, compiler) in groups]
        for (oa, na), (ob, nb) in zip(ops, ops[1:]):
            rows.append(one_row(groups[(metric, scheme, oa, variant, compiler)],
                                groups[(metric, scheme, ob, variant, compiler)], na, nb, pu["unit"], settings))
    return pd.DataFrame(rows, columns=COLUMNS)

