"""A bottleneck per op and variant (results/bottleneck): the dominant limiter among the front end
(instruction cache), data memory, branches and the core, from the counts a study has.

Per (geometry, scheme, op, variant, compiler) every limiter's cycles per call are estimated with the
costs of data/bottleneck.toml:

    front end  I1 misses × l1_miss_cycles + LL instruction misses × ll_miss_cycles
    memory     D1 misses × l1_miss_cycles + LL data misses × ll_miss_cycles
    branches   mispredictions × mispredict_cycles
    core       llvm-mca's cycles per call when --metric mix ran (its CPU model sees dependencies),
               else instructions / issue_width

The largest is the limiter. The core is split into throughput- and latency-bound when something
sees dependencies: llvm-mca (its cycles beyond latency_factor × instructions / issue_width), else
ticks (the measured cycles minus the stall estimates, the same test); with neither it stays `core`.
Confidence: high when the limiter's estimate is ≥ 2× the runner-up's, medium ≥ 1.25×, else low.
A limiter the backend does not simulate (aarch64: branches) is left out of the ranking and caps the
confidence at medium. The estimates rank limiters under a simple additive model on the simulator's events (no prefetchers,
no overlap of misses); they do not predict time.
"""

from __future__ import annotations

import math
import tomllib
from functools import lru_cache
from importlib import resources
from typing import Any

import pandas as pd

from .. import metrics as metrics_mod

LIMITERS = ("frontend", "memory", "branches", "core")
COLUMNS = ["geometry", "scheme", "op", "variant", "compiler", "limiter", "confidence", "dominance", "share",
           "est_frontend", "est_memory", "est_branches", "est_core", "core_source", "instructions", "I1_misses",
           "D1_misses", "LL_misses", "mispredicts", "mca_cycles", "measured_cycles", "evidence", "inputs",
           "geometry_text"]


@lru_cache(maxsize=1)
def model() -> dict:
    return tomllib.loads(resources.files("pqsimd.data").joinpath("bottleneck.toml").read_text())


def _finite(x: Any) -> bool:
    return x is not None and isinstance(x, (int, float)) and math.isfinite(x)


def classify(instructions: float, i1: float, il: float, d1: float, dl: float, mispredicts: float,
             mca_cycles: float | None = None, measured_cycles: float | None = None) -> dict[str, Any]:
    """The limiter of one op and variant from its counts per call (see the module docstring)."""
    m, c = model()["model"], model()["confidence"]
    issue = instructions / m["issue_width"]
    est = {
        "frontend": i1 * m["l1_miss_cycles"] + il * m["ll_miss_cycles"],
        "memory": d1 * m["l1_miss_cycles"] + dl * m["ll_miss_cycles"],
        "branches": mispredicts * m["mispredict_cycles"],
        "core": mca_cycles if _finite(mca_cycles) else issue,
    }
    source = "llvm-mca" if _finite(mca_cycles) else f"instructions / {m['issue_width']}"
    unknown = [k for k, v in est.items() if not _finite(v)]  # a backend without that model (aarch64: branches)
    est = {k: (v if _finite(v) else 0.0) for k, v in est.items()}
    ranked = sorted(est.items(), key=lambda kv: -kv[1])
    (top, top_v), (_, second_v) = ranked[0], ranked[1]
    limiter = top
    if top == "core":
        if _finite(mca_cycles):
            limiter = "core-latency" if mca_cycles > m["latency_factor"] * issue else "core-throughput"
        elif _finite(measured_cycles):
            residual = measured_cycles - est["frontend"] - est["memory"] - est["branches"]
            limiter = "core-latency" if residual > m["latency_factor"] * issue else "core-throughput"
            source += "; split by ticks"
    dominance = top_v / second_v if second_v > 0 else math.inf
    total = sum(est.values())
    confidence = "high" if dominance >= c["high"] else "medium" if dominance >= c["medium"] else "low"
    if unknown and confidence == "high":
        confidence = "medium"  # an unsimulated limiter could still be the larger one
    return {"limiter": limiter, "confidence": confidence, "dominance": dominance,
            "share": top_v / total if total > 0 else math.nan, "core_source": source,
            **{f"est_{k}": (math.nan if k in unknown else v) for k, v in est.items()}}


def evidence(r: dict[str, Any]) -> str:
    m = model()["model"]
    parts = [f"{r['instructions']:,.0f} instructions",
             f"I1 misses {r['I1_misses']:,.2f}", f"D1 misses {r['D1_misses']:,.2f}", f"LL misses {r['LL_misses']:,.2f}",
             f"mispredicted branches {r['mispredicts']:,.2f}" if _finite(r["mispredicts"]) else "branches not simulated"]
    if _finite(r.get("mca_cycles")):
        parts.append(f"llvm-mca {r['mca_cycles']:,.0f} cycles")
    if _finite(r.get("measured_cycles")):
        parts.append(f"measured {r['measured_cycles']:,.0f} cycles")
    est = ", ".join(f"{k} {r['est_' + k]:,.0f}" for k in LIMITERS)
    return f"per call: {'; '.join(parts)} → estimated cycles {est} (costs: L1 miss {m['l1_miss_cycles']}, " \
           f"LL miss {m['ll_miss_cycles']}, mispredict {m['mispredict_cycles']}, width {m['issue_width']})"


def _mca_cycles(mca: pd.DataFrame | None) -> dict[tuple, tuple[float, str]]:
    """llvm-mca's cycles per call of every op (all blocks: predicted / coverage), first CPU model."""
    out: dict[tuple, tuple[float, str]] = {}
    if mca is None or mca.empty:
        return out
    for r in mca.itertuples(index=False):
        key = (r.scheme, r.op, r.variant, r.compiler)
        v = getattr(r, "predicted_cycles_all", math.nan)
        if key not in out and _finite(v):
            out[key] = (float(v), str(r.cpu))
    return out


def _measured(groups: pd.DataFrame | None, core_per_tsc: float | None) -> dict[tuple, float]:
    if groups is None or groups.empty or "metric" not in groups.columns:
        return {}
    g = groups[groups["metric"] == metrics_mod.TIME]
    scale = core_per_tsc if _finite(core_per_tsc) else 1.0
    return {(r.scheme, r.op, r.variant, r.compiler): float(r.median) * scale for r in g.itertuples(index=False)}


def bottleneck_table(sim: pd.DataFrame, groups: pd.DataFrame | None = None, mca: pd.DataFrame | None = None,
                     core_per_tsc: float | None = None, self_checks: set[str] = frozenset()) -> pd.DataFrame:
    if sim is None or sim.empty:
        return pd.DataFrame(columns=COLUMNS)
    mca_of, measured_of = _mca_cycles(mca), _measured(groups, core_per_tsc)
    rows = []
    for s in sim.to_dict("records"):
        if s["op"] in self_checks:
            continue
        key = (s["scheme"], s["op"], s["variant"], s["compiler"])
        mca_c, mca_cpu = mca_of.get(key, (None, None))
        meas = measured_of.get(key)
        got = classify(s["Ir"], s["I1mr"], s["ILmr"], s["D1_misses"], s["LL_data_misses"], s["mispredicts"],
                       mca_c, meas)
        row = {k: s[k] for k in ("geometry", "scheme", "op", "variant", "compiler", "I1_misses", "D1_misses",
                                 "LL_misses", "mispredicts", "geometry_text")}
        row.update(got, instructions=s["Ir"], mca_cycles=mca_c if mca_c is not None else math.nan,
                   measured_cycles=meas if meas is not None else math.nan)
        if mca_cpu:
            row["core_source"] = f"llvm-mca -mcpu={mca_cpu}"
        row["inputs"] = ", ".join(["instructions", f"simulated events ({s['geometry']})",
                                   *(["llvm-mca"] if mca_c is not None else []), *(["ticks"] if meas is not None else [])])
        row["evidence"] = evidence(row)
        rows.append(row)
    return pd.DataFrame(rows, columns=COLUMNS)
