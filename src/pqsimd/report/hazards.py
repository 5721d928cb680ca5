"""The hazards view, a registered part (report/parts.py): per family, the (parameter set, op, build) whose
simulated hazards (results/hazards, written by analyze/hazards.py from `--metric hazards`) would cost a
noticeable share of its time on the study's CPU — store-forwarding failures, 4K aliasing, line splits,
legacy SSE after VEX.256 code — with the function they happen in. A table per family in the report
(hazards/table_hazards_<family>), a section in `pqsimd show`; `pqsimd explain` weighs them against a
slowdown."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from .. import metrics as metrics_mod
from ..results import Results, read_table
from . import fmt

EVENTS = {"SFfail": "store-fwd fails", "Alias4K": "4K aliases", "SplitLd": "split loads", "SplitSt": "split stores",
          "SSEdirty": "SSE, dirty upper", "Transitions": "AVX→SSE transitions"}
SHOWN_SHARE = 0.10  # a row when the hazards would cost at least this share of the build's median time
HEADER = ["set", "op", "variant", "hazards per call", "≈ cost per call", "share of time", "mostly in"]


def load(study: Results) -> pd.DataFrame:
    return read_table(study.directory, "hazards", strict=False)


def caption(unit: str, cost_note: str) -> str:
    return (f"Hazards a PMU would count, simulated from each op's exact trace under qemu-user (pqsimd's plugin: a "
            f"store buffer of the last stores within a window of instructions; see docs/methods.md), per call, and "
            f"what they would cost on the study's CPU ({cost_note}) against the build's median time in {unit}. "
            f"Rows where that is at least {SHOWN_SHARE:.0%} of the time. A model, not a measurement: "
            f"`pqsimd explain DIR --scheme SET --op OP` says whether they account for a slowdown.")


def _time(study: Results, scheme: str, op: str, variant: str, compiler: str) -> float:
    g = study.group(metrics_mod.TIME, scheme, op, variant, compiler)
    return float(g["median"]) if g and not fmt.is_missing(g.get("median")) else math.nan


def rows(study: Results, df: pd.DataFrame, fam, compiler: str | None) -> list[list[str]]:
    comp = compiler or study.primary_compiler
    d = df[df["scheme"].isin(fam.schemes) & (df["op"].astype(str) != "")]
    if comp:
        d = d[d["compiler"] == comp]
    out = []
    for r in d.to_dict("records"):
        cost = r.get("hazard_cycles")
        if fmt.is_missing(cost) or cost <= 0:
            continue
        t = _time(study, r["scheme"], r["op"], r["variant"], r["compiler"])
        share = cost / t if t > 0 else math.nan
        if not (share >= SHOWN_SHARE) and not math.isnan(share):
            continue
        events = " · ".join(f"{EVENTS[e]} {_count(r[e])}" for e in EVENTS
                            if not fmt.is_missing(r.get(e)) and r[e] > 0 and not fmt.is_missing(r.get(f"{e}_cycles"))
                            and r[f"{e}_cycles"] >= 0.1 * cost)
        costly = max((e for e in EVENTS if not fmt.is_missing(r.get(f"{e}_cycles"))), key=lambda e: r[f"{e}_cycles"])
        where = r.get(f"{'SSEdirty' if costly == 'Transitions' else costly}_where")  # a transition's site: its SSE
        where = where if isinstance(where, str) else ""
        out.append([fam.scheme_label(r["scheme"]), fam.label(r["op"]), r["variant"], events,
                    f"{fmt.quantity(cost)} {r.get('cost_unit') or ''}".strip(),
                    fmt.pct(share) if not math.isnan(share) else fmt.NA, where])
    out.sort(key=lambda x: (x[0], x[1], x[2]))
    return out


def _count(v: float) -> str:
    """Events per call: a whole number as one (90), else three significant digits (80.2)."""
    return f"{int(round(v)):,}" if abs(v - round(v)) < 1e-9 else fmt.quantity(v)


def _cost_note(df: pd.DataFrame) -> str:
    units = set(df["cost_unit"].dropna().astype(str)) if "cost_unit" in df.columns else set()
    return ("TSC ticks per event measured on the host that traced them" if units == {"ticks"}
            else "rough core cycles per event from data/hazards.toml" if units == {"cycles"} else "per event")


def hazards_parts(study: Results, outdir: Path) -> tuple[list, list]:
    """([], [Table]) of the hazards view, one per family with rows; empty without results/hazards."""
    from .tables import family_part_tables

    df = load(study)
    return family_part_tables(study, df, outdir, "hazards", "table_hazards",
                              lambda fam: f"{fam.title}: simulated hazards that cost time",
                              caption(study.unit(metrics_mod.TIME), _cost_note(df)) if not df.empty else "", HEADER,
                              lambda fam: rows(study, df, fam, None), "lllllrl")


def show(study: Results, con, metric: str | None = None, compiler: str | None = None) -> None:
    """`pqsimd show`: the hazards view per family (nothing without results/hazards)."""
    from .terminal import show_family_parts

    df = load(study)
    show_family_parts(study, con, df, lambda fam: f"{fam.title} · simulated hazards that cost time",
                      caption(study.unit(metrics_mod.TIME), _cost_note(df)) if not df.empty else "", HEADER,
                      lambda fam: rows(study, df, fam, compiler), 3)
    traced = df[df["op"].astype(str) != ""] if not df.empty else df
    if len(traced) and not any(rows(study, df, fam, compiler) for fam in study.families):
        con.print(f"Simulated hazards: {len(traced)} (set, op, build) traced; none has a hazard that would cost "
                  f"time ({_cost_note(df)}); every count per call is in results/hazards.csv", soft_wrap=True)
        con.print()
