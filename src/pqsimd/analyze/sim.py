"""The simulated-events tables (`--metric sim`, run/sim.py) in DIR/results/:

    sim              one row per (geometry, scheme, op, variant, compiler): every event per call
                     (exact fractions in *_exact), the derived misses and mispredictions, per 1000
                     instructions, the geometry as simulated, and whether the simulation's Ir equals
                     the instructions metric's (the check that both ran the same work)
    sim_comparisons  per chain stage and event: the exact ratio and difference variant vs baseline,
                     like the instructions metric's exact comparisons (deterministic counts)

The numbers are the simulator's (valgrind's cache and branch model under the named geometry),
never a hardware measurement; every row says which geometry.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq

from ..ids import geometry_of_job
from ..studydir import StudyDir
from .. import metrics as metrics_mod

METRIC = metrics_mod.SIM
PREFIX = "sim."
INS_METRIC = metrics_mod.COUNT

# Derived quantities: name -> (events summed, what it is)
DERIVED = {
    "I1_misses": (("I1mr",), "first-level instruction-cache misses"),
    "D1_misses": (("D1mr", "D1mw"), "first-level data-cache misses (reads and writes)"),
    "LL_misses": (("ILmr", "DLmr", "DLmw"), "last-level misses (instruction and data)"),
    "LL_data_misses": (("DLmr", "DLmw"), "last-level data misses"),
    "branches": (("Bc", "Bi"), "conditional and indirect branches"),
    "mispredicts": (("Bcm", "Bim"), "mispredicted conditional and indirect branches"),
}
EVENTS = ("Ir", "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw", "Bc", "Bcm", "Bi", "Bim")
KEYS = ["geometry", "scheme", "op", "variant", "compiler"]
COLUMNS = [*KEYS, *EVENTS, *DERIVED, *(f"{d}_pki" for d in DERIVED if d != "branches"), "mispredict_rate",
           *(f"{e}_exact" for e in EVENTS), "instructions", "ir_matches_instructions", "geometry_text",
           "geometry_source", "tool", "note"]
COMPARISON_EVENTS = ("Ir", "I1_misses", "D1_misses", "LL_misses", "branches", "mispredicts")
COMPARISON_COLUMNS = ["geometry", "scheme", "op", "compiler", "stage", "baseline", "variant", "event", "base", "var",
                      "ratio", "difference", "method", "note"]


def is_sim_file(name: str) -> bool:
    """A raw file of the sim metric (read here; the spin loader leaves them alone)."""
    return name.endswith(".parquet") and geometry_of_job(name[: -len(".parquet")], METRIC) is not None


def sim_files(directory: Path) -> list[Path]:
    raw = StudyDir(directory).raw_dir
    return sorted(f for f in raw.glob("*.parquet") if is_sim_file(f.name)) if raw.is_dir() else []


def _fraction(text: str) -> Fraction:
    return Fraction(text)


def _rows_of(path: Path) -> list[dict[str, Any]]:
    t = pq.read_table(path)
    rec = json.loads((t.schema.metadata or {}).get(b"pqsimd.job", b"{}"))
    geo = rec.get("geometry") or {}
    rows = []
    for op, per in (rec.get("per_call_exact") or {}).items():
        exact = {e: _fraction(per[e]) for e in EVENTS if e in per}  # absent: the backend has no model of it
        row: dict[str, Any] = {"geometry": geo.get("name") or geometry_of_job(path.stem, METRIC), "scheme": rec["scheme"],
                               "op": op, "variant": rec["variant"], "compiler": rec["compiler"]}
        row.update({e: float(exact[e]) if e in exact else math.nan for e in EVENTS})
        for name, (parts, _) in DERIVED.items():
            row[name] = float(sum(exact[p] for p in parts)) if all(p in exact for p in parts) else math.nan
        ir = row["Ir"]
        for name in DERIVED:
            if name != "branches":
                row[f"{name}_pki"] = 1000 * row[name] / ir if ir > 0 else math.nan
        row["mispredict_rate"] = row["mispredicts"] / row["branches"] if row["branches"] > 0 else math.nan
        row.update({f"{e}_exact": str(exact[e]) if e in exact else "" for e in EVENTS})
        missing = rec.get("not_simulated") or [e for e in EVENTS if e not in exact]
        row.update({"geometry_text": geo.get("text", ""), "geometry_source": geo.get("source", ""),
                    "tool": rec.get("tool", ""),
                    "note": f"not simulated by {rec.get('backend')}: {', '.join(missing)}" if missing else ""})
        rows.append(row)
    return rows


def sim_table(directory: Path, groups: pd.DataFrame | None = None) -> pd.DataFrame:
    rows = [r for f in sim_files(directory) for r in _rows_of(f)]
    if not rows:
        return pd.DataFrame(columns=COLUMNS)
    df = pd.DataFrame(rows)
    ins = {}
    if groups is not None and len(groups) and "metric" in groups.columns:
        g = groups[groups["metric"] == INS_METRIC]
        ins = {(r.scheme, r.op, r.variant, r.compiler): float(r.median) for r in g.itertuples(index=False)}
    df["instructions"] = [ins.get((r.scheme, r.op, r.variant, r.compiler), math.nan) for r in df.itertuples()]
    # The same binary and op under callgrind with and without the simulation: the same Ir, else the
    # op's calls differ (fresh randomness per call, or work that changes from call to call: the
    # instructions metric counts its ops in one process, the simulation each run in its own, so they
    # count other calls) and the events are one run's.
    df["ir_matches_instructions"] = [(None if math.isnan(i) else bool(abs(i - ir) < 1e-9))
                                     for i, ir in zip(df["instructions"], df["Ir"])]
    df["note"] = ["; ".join(x for x in (n, "" if m is not False else "Ir differs from the instructions metric: the "
                  "op's calls differ (e.g. rejection sampling on fresh randomness) and the two metrics count other calls; the "
                  "events are one run's") if x)
                  for n, m in zip(df["note"], df["ir_matches_instructions"])]
    return df[COLUMNS].sort_values(KEYS, kind="stable").reset_index(drop=True)


def comparisons(sim: pd.DataFrame, steps: list[tuple[str, str, str]]) -> pd.DataFrame:
    """Per chain stage (stage, baseline, variant) and event: exact ratio and difference per call."""
    if sim.empty:
        return pd.DataFrame(columns=COMPARISON_COLUMNS)
    idx = {tuple(r[k] for k in KEYS): r for r in sim.to_dict("records")}
    rows = []
    for (geo, scheme, op, variant, comp), var in idx.items():
        for stage, base_v, var_v in steps:
            if var_v != variant:
                continue
            base = idx.get((geo, scheme, op, base_v, comp))
            if base is None:
                continue
            for e in COMPARISON_EVENTS:
                b, v = base[e], var[e]
                ratio = b / v if v > 0 and b > 0 else math.nan
                note = "" if math.isfinite(ratio) else "a count is 0: the difference is the comparison"
                rows.append({"geometry": geo, "scheme": scheme, "op": op, "compiler": comp, "stage": stage,
                             "baseline": base_v, "variant": var_v, "event": e, "base": b, "var": v, "ratio": ratio,
                             "difference": v - b, "method": "exact", "note": note})
    return pd.DataFrame(rows, columns=COMPARISON_COLUMNS)


def write_sim_results(directory: Path, results: Path, groups: pd.DataFrame | None, steps) -> pd.DataFrame:
    """results/sim and results/sim_comparisons (removed when the study has no sim data); the sim table."""
    from .write import write_table

    table = sim_table(directory, groups)
    if table.empty:
        for name in ("sim", "sim_comparisons"):
            for ext in ("csv", "parquet"):
                (results / f"{name}.{ext}").unlink(missing_ok=True)
        return table
    write_table(table, results, "sim")
    write_table(comparisons(table, steps), results, "sim_comparisons")
    return table
