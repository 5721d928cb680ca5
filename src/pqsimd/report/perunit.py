"""The per-unit view, a registered part (report/parts.py): for a family whose ops do 1, 4, 8 units of work per
call (Keccak's permutations), each build's time and instructions per unit and, op to op, the per-unit speedup
with its interval (results/per_unit, written by analyze/perunit.py). For Keccak the rows of the AVX-512 build
are the *width* effect (the 4-way AVX-512VL code at 256 bits → the 8-way at 512 bits); the *ISA-feature*
effect (AVX2 → AVX-512 at the same op and width) is the chain's own stage row, in the speedup tables.
A table per family in the report (perunit/table_per_unit_<family>), a section in `pqsimd show`."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .. import metrics as metrics_mod
from ..results import Results, read_table
from . import fmt

HEADER = ["variant", "ops", "{unit} per {per}", "speedup per {per}", "interval", "verdict", "instructions per {per}",
          "ratio"]


def caption(unit: str, per: str) -> str:
    return (f"Each build's median time and exact instructions per {per} (an op's per-call figure over the {per}s it "
            f"does per call), and from one op to the next the speedup per {per}: the typical job's ratio of the two "
            f"ops' {unit} per {per}, timed in the same jobs, with its interval at the stated level (a view of ops, "
            f"outside the chain's family of comparisons). Within one build this is the effect of doing more "
            f"{per}s per call: for a build whose wider op uses wider registers, the width effect. The ISA-feature "
            f"effect is the chain's comparison of two builds at the same op, in the speedup tables.")


def load(study: Results) -> pd.DataFrame:
    return read_table(study.directory, "per_unit", strict=False)


def _steps(df: pd.DataFrame, metric: str, scheme: str, variant: str, compiler: str) -> pd.DataFrame:
    return df[(df["metric"] == metric) & (df["scheme"] == scheme) & (df["variant"] == variant)
              & (df["compiler"] == compiler)]


def rows(study: Results, df: pd.DataFrame, fam, compiler: str | None) -> tuple[list[list[str]], str]:
    """One row per (parameter set, variant, op → next op), in the study's variant order; and the unit's name."""
    comp = compiler or study.primary_compiler
    d = df[df["scheme"].isin(fam.schemes) & ((df["compiler"] == comp) if comp else True)]
    if d.empty:
        return [], ""
    order = {v: i for i, v in enumerate(study.variants)}
    unit = str(d["unit"].iloc[0])
    out = []
    for scheme in fam.schemes:
        variants = sorted(set(d[d["scheme"] == scheme]["variant"]), key=lambda v: order.get(v, len(order)))
        for v in variants:
            c = comp or str(d[(d["scheme"] == scheme) & (d["variant"] == v)]["compiler"].iloc[0])
            t = _steps(d, metrics_mod.TIME, scheme, v, c)
            n = _steps(d, metrics_mod.COUNT, scheme, v, c)
            pairs = list(dict.fromkeys([*zip(t["op_from"], t["op_to"]), *zip(n["op_from"], n["op_to"])]))
            for i, (a, b) in enumerate(pairs):
                tr = t[(t["op_from"] == a) & (t["op_to"] == b)]
                nr = n[(n["op_from"] == a) & (n["op_to"] == b)]
                r = tr.iloc[0] if len(tr) else None
                q = nr.iloc[0] if len(nr) else None
                out.append([
                    v if i == 0 else "", f"{fam.label(a)} → {fam.label(b)}",
                    f"{fmt.quantity(r.per_unit_from)} → {fmt.quantity(r.per_unit_to)}" if r is not None else fmt.NA,
                    fmt.times(r.speedup) if r is not None else fmt.NA,
                    (f"{fmt.ci(r.ci_low, r.ci_high)} at {fmt.level(r.ci_level)}" if r is not None
                     and not fmt.is_missing(r.ci_low) else fmt.NA),
                    str(r.verdict) if r is not None else fmt.NA,
                    f"{fmt.quantity(q.per_unit_from)} → {fmt.quantity(q.per_unit_to)}" if q is not None else fmt.NA,
                    fmt.times(q.speedup) if q is not None else fmt.NA,
                ])
    return out, unit


def _header(study: Results, unit: str) -> list[str]:
    ticks = study.unit(metrics_mod.TIME)
    return [h.format(unit=ticks, per=unit) for h in HEADER]


def per_unit_parts(study: Results, outdir: Path) -> tuple[list, list]:
    """([], [Table]) of the per-unit view, one per family with rows; empty without results/per_unit."""
    from .tables import family_part_tables

    df = load(study)
    units = {}  # family -> its unit's name, from its rows

    def body(fam, compiler=None):
        out, units[fam.name] = rows(study, df, fam, compiler)
        return out

    ticks = study.unit(metrics_mod.TIME)
    return family_part_tables(study, df, outdir, "perunit", "table_per_unit",
                              lambda fam: f"{fam.title}: per {units[fam.name]}, op to op",
                              lambda fam: caption(ticks, units[fam.name]), lambda fam: _header(study, units[fam.name]),
                              body, "ll" + "r" * (len(HEADER) - 2))


def show(study: Results, con, metric: str | None = None, compiler: str | None = None) -> None:
    """`pqsimd show`: the per-unit view per family (nothing without results/per_unit)."""
    from .terminal import show_family_parts

    df = load(study)
    units = {}

    def body(fam):
        out, units[fam.name] = rows(study, df, fam, compiler)
        return out

    ticks = study.unit(metrics_mod.TIME)
    show_family_parts(study, con, df, lambda fam: f"{fam.title} · per {units[fam.name]}, op to op",
                      lambda fam: caption(ticks, units[fam.name]), lambda fam: _header(study, units[fam.name]), body, 2)
