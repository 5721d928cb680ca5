"""Instruction counts beside time: per (scheme, op, compiler) the instructions per call of every
chain variant and the stage factors of the instruction count, and per stage "cycles per
instruction saved" (the time speedup over the instruction reduction = IPC_variant / IPC_base).

S_t = t_base / t_var, S_i = i_base / i_var, S_t / S_i = IPC_var / IPC_base: above 1 the variant
also does more per tick (ILP/throughput), near 1 the gain is fewer instructions, below 1 the
variant runs at a lower IPC. Ticks are TSC ticks; with core_per_tsc (the driver's dependent-add
calibration, median over the jobs) they are converted to estimated core cycles.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ..model import Chain
from .. import metrics as metrics_mod

TIME_METRIC = metrics_mod.TIME
INS_METRIC = metrics_mod.COUNT
BAND = 0.10  # S_t / S_i beyond ±10% reads as "ILP/throughput" (above) or "lower IPC" (below)
SAME_INSTRUCTIONS = 0.001  # instruction counts within 0.1%: the two binaries do the same work
LAYOUT = 0.02  # ... and a time ratio beyond ±2% then comes from where the code sits (or noise), not what it runs


def _medians(groups: pd.DataFrame, metric: str) -> dict[tuple[str, str, str, str], float]:
    if groups is None or groups.empty:
        return {}
    g = groups[groups["metric"] == metric]
    return {(r.scheme, r.op, r.compiler, r.variant): float(r.median) for r in g.itertuples(index=False)}


def _stages(chain: Chain) -> list[tuple[str, str, str]]:
    out = list(chain.steps)
    if len(chain.steps) > 1:
        out.append(("total", chain.steps[0][1], chain.steps[-1][2]))
    return out + list(chain.also)


def instruction_table(groups: pd.DataFrame, chain: Chain, self_checks: set[str]) -> pd.DataFrame:
    """Per (scheme, op, compiler): instructions per call of each chain variant, the stage factors, shares."""
    med = _medians(groups, INS_METRIC)
    variants = [chain.steps[0][1]] + [v for _, _, v in chain.steps] if chain.steps else []
    keys = list(dict.fromkeys((s, o, c) for (s, o, c, _v) in med if o not in self_checks))
    rows = []
    for scheme, op, comp in keys:
        row: dict[str, Any] = {"scheme": scheme, "op": op, "compiler": comp}
        for v in variants:
            row[v] = med.get((scheme, op, comp, v), math.nan)
        for name, b, v in _stages(chain):
            vb, vv = med.get((scheme, op, comp, b), math.nan), med.get((scheme, op, comp, v), math.nan)
            row[name] = vb / vv if vb > 0 and vv > 0 else math.nan
        t = row.get("total", math.nan)
        for name, _, _ in chain.steps:
            f = row[name]
            row[f"share_{name}"] = math.log(f) / math.log(t) if np.isfinite(f) and np.isfinite(t) and t != 1 else math.nan
        rows.append(row)
    return pd.DataFrame(rows)


def ilp_table(groups: pd.DataFrame, chain: Chain, core_per_tsc: float | None, self_checks: set[str]) -> pd.DataFrame:
    """Per (scheme, op, compiler, stage): time speedup vs instruction reduction."""
    t = _medians(groups, TIME_METRIC)
    i = _medians(groups, INS_METRIC)
    rows = []
    keys = list(dict.fromkeys((s, o, c) for (s, o, c, _v) in t if o not in self_checks))
    for scheme, op, comp in keys:
        for stage, b, v in _stages(chain):
            kb, kv = (scheme, op, comp, b), (scheme, op, comp, v)
            if not all(k in t and k in i for k in (kb, kv)):
                continue
            tb, tv, ib, iv = t[kb], t[kv], i[kb], i[kv]
            if min(tb, tv, ib, iv) <= 0:
                continue
            s_t, s_i = tb / tv, ib / iv
            gain = s_t / s_i
            saved = ib - iv
            reading = reading_of(s_t, s_i)
            row = {
                "scheme": scheme, "op": op, "compiler": comp, "stage": stage, "baseline": b, "variant": v,
                "ticks_base": tb, "ticks_var": tv, "ins_base": ib, "ins_var": iv,
                "time_speedup": s_t, "instruction_ratio": s_i, "throughput_gain": gain,
                "ipc_base": ib / tb, "ipc_var": iv / tv,  # instructions per TSC tick
                "ticks_per_instruction_saved": (tb - tv) / saved if saved else math.nan,
                "reading": reading,
                "ipc_base_cycles": (ib / tb) / core_per_tsc if core_per_tsc else math.nan,
                "ipc_var_cycles": (iv / tv) / core_per_tsc if core_per_tsc else math.nan,
                "cycles_per_instruction_saved": ((tb - tv) / saved * core_per_tsc) if (core_per_tsc and saved) else math.nan,
            }
            rows.append(row)
    return pd.DataFrame(rows)


def reading_of(time_speedup: float, instruction_ratio: float) -> str:
    """What a stage's time speedup is made of, given its instruction ratio."""
    if abs(math.log(instruction_ratio)) <= math.log1p(SAME_INSTRUCTIONS):
        if abs(math.log(time_speedup)) <= math.log1p(LAYOUT):
            return "same instructions"
        return "same instructions, different time: code layout, alignment or noise"
    gain = time_speedup / instruction_ratio
    return ("ILP/throughput" if gain > 1 + BAND else "lower IPC" if gain < 1 / (1 + BAND)
            else "fewer instructions" if instruction_ratio > 1 else "more instructions")


def core_per_tsc(jobs_calibrations: list[dict]) -> float | None:
    vals = [c.get("core_per_tsc") for c in jobs_calibrations if isinstance(c, dict)]
    vals = [float(v) for v in vals if v is not None and np.isfinite(float(v)) and float(v) > 0]
    return float(np.median(vals)) if vals else None


def call_counts_table(records: list[dict]) -> pd.DataFrame:
    """Counted calls per op call from the instructions jobs (the family's [ops.call_counters]: e.g.
    calls of poly_challenge per signature = ML-DSA's rejection-loop iterations), exact, per repeat."""
    from fractions import Fraction

    rows = []
    for rec in records:
        for op, c in (rec.get("call_counts") or {}).items():
            vals = [Fraction(x) for x in c.get("per_call", [])]
            if not vals:
                continue
            rows.append({"scheme": rec.get("scheme"), "op": op, "variant": rec.get("variant"),
                         "compiler": rec.get("compiler"), "function": c.get("function"),
                         "per_call": float(sum(vals) / len(vals)), "repeats": len(vals),
                         "per_call_exact": " ".join(str(v) for v in vals)})
    return pd.DataFrame(rows)
