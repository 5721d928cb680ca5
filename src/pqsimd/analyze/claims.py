"""Mechanistic claims, tested (results/claims): a family's claims file (data/, named by its
`[views] claims`, beside its reference table) lists each claim's text, source section, the ops and
variants it is about, and measurable predictions. Each prediction is checked on the study's numbers
per parameter set and cache geometry; a claim is

    supported        every prediction was evaluated and holds
    contradicted     a prediction was evaluated and fails
    not measured     a prediction needs a metric this study did not run (none failing): the verdict
                     names the metric (`needs --metric sim`), `why` the command's part and what held
    not testable     some prediction lacks its numbers for another reason (the op is not in the
                     study, one parameter set where it needs two): says which

A prediction: `quantity` (a column of results/sim, e.g. D1_misses_pki; `limiter` of
results/bottleneck; `vector_share` of results/mix_ops; `instructions_ratio`: the instruction count of
`baseline` over `variant`), a bound (`at_least`, `at_most`, `in` = [allowed values]), and optionally
`across = "schemes"` (the bound applies to the spread max - min over the study's parameter sets)
and `variants` (default the claim's). A user writes the same file for their own paper.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from .. import metrics as metrics_mod

COLUMNS = ["claim", "text", "section", "geometry", "verdict", "evidence", "why", "geometry_text", "model_limits"]
SUPPORTED, CONTRADICTED, UNTESTABLE = "supported", "contradicted", "not testable here"
NOT_MEASURED = "not measured: needs --metric {}"
# The metric that gives each quantity a prediction can name (a column of results/sim: sim).
QUANTITY_METRIC = {"limiter": "sim", "vector_share": "mix", "instructions": "instructions",
                   "instructions_ratio": "instructions"}


def metric_of(quantity: str) -> str:
    return QUANTITY_METRIC.get(quantity, metrics_mod.SIM)


def _fmt(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:,.3g}" if abs(x) < 100 else f"{x:,.0f}"
    return str(x)


def _instructions(groups: pd.DataFrame | None, sim: pd.DataFrame, mix_ops: pd.DataFrame | None = None) -> dict[tuple, float]:
    """Instructions per call by (scheme, op, variant): the instructions metric's, else the simulation's
    Ir, else the mix's total (all three count the same instructions under callgrind)."""
    out: dict[tuple, float] = {}
    for t, col in ((mix_ops, "instructions"), (sim, "Ir")):
        if t is not None and len(t) and col in t.columns:
            for r in t.to_dict("records"):
                out[(r["scheme"], r["op"], r["variant"])] = float(r[col])
    if groups is not None and len(groups) and "metric" in groups.columns:
        for r in groups[groups["metric"] == metrics_mod.COUNT].itertuples(index=False):
            out[(r.scheme, r.op, r.variant)] = float(r.median)
    return out


class Numbers:
    """The study's values of every quantity a prediction can name, for one geometry."""

    def __init__(self, geometry: str | None, sim: pd.DataFrame, bottleneck: pd.DataFrame, mix_ops: pd.DataFrame | None,
                 instructions: dict[tuple, float]):
        self.geometry = geometry
        self.sim = sim[sim["geometry"] == geometry] if len(sim) else sim
        self.bottleneck = bottleneck[bottleneck["geometry"] == geometry] if len(bottleneck) else bottleneck
        self.mix_ops = mix_ops
        self.instructions = instructions

    def schemes(self, op: str) -> list[str]:
        s = set(self.sim["scheme"][self.sim["op"] == op]) if len(self.sim) else set()
        s |= {k[0] for k in self.instructions if k[1] == op}
        return sorted(s)

    def value(self, quantity: str, scheme: str, op: str, variant: str, baseline: str | None = None) -> Any:
        if quantity == "limiter":
            t = self.bottleneck
            hit = t[(t["scheme"] == scheme) & (t["op"] == op) & (t["variant"] == variant)] if len(t) else t
            return str(hit["limiter"].iloc[0]) if len(hit) else None
        if quantity == "vector_share":
            t = self.mix_ops
            if t is None or not len(t):
                return None
            hit = t[(t["scheme"] == scheme) & (t["op"] == op) & (t["variant"] == variant)]
            return float(hit["vector_share"].iloc[0]) if len(hit) else None
        if quantity == "instructions":  # not a metric: a claim's quantity
            return self.instructions.get((scheme, op, variant))
        if quantity == "instructions_ratio":
            b, v = self.instructions.get((scheme, op, baseline)), self.instructions.get((scheme, op, variant))
            return b / v if b and v else None
        t = self.sim
        if not len(t) or quantity not in t.columns:
            return None
        hit = t[(t["scheme"] == scheme) & (t["op"] == op) & (t["variant"] == variant)]
        return float(hit[quantity].iloc[0]) if len(hit) else None


def _holds(value: Any, p: dict) -> bool:
    if "in" in p:
        return value in p["in"]
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return False
    if "at_least" in p and not value >= p["at_least"]:
        return False
    if "at_most" in p and not value <= p["at_most"]:
        return False
    return True


def _bound(p: dict) -> str:
    if "in" in p:
        return f"in {{{', '.join(p['in'])}}}"
    parts = [f"≥ {p['at_least']}" if "at_least" in p else "", f"≤ {p['at_most']}" if "at_most" in p else ""]
    return " and ".join(x for x in parts if x)


def evaluate_claim(claim: dict, numbers: Numbers, measured: set[str] | None = None) -> tuple[str, str, str]:
    """(verdict, evidence, why) of one claim on one geometry's numbers; `measured`: the metrics the
    study ran (None: unknown, every gap reads as not testable)."""
    evidence, missing, failed = [], [], []
    unmeasured: dict[str, list[str]] = {}
    for p in claim.get("predictions", []):
        q = p["quantity"]
        variants = p.get("variants", claim.get("variants", []))
        if measured is not None and metric_of(q) not in measured:
            unmeasured.setdefault(metric_of(q), []).append(p.get("what", q))
            continue
        for op in p.get("ops", claim.get("ops", [])):
            schemes = numbers.schemes(op)
            if not schemes:
                missing.append(f"{op}: not in this study")
                continue
            for v in variants:
                vals = {s: numbers.value(q, s, op, v, p.get("baseline")) for s in schemes}
                got = {s: x for s, x in vals.items() if x is not None}
                what = f"{q}" + (f" {p['baseline']}/{v}" if p.get("baseline") else f" {v}")
                if p.get("across") == "schemes":
                    if len(got) < 2:
                        missing.append(f"{op} {what}: needs ≥ 2 parameter sets")
                        continue
                    spread = max(got.values()) - min(got.values())
                    ok = _holds(spread, p)
                    evidence.append(f"{op} {what} across {', '.join(got)}: "
                                    f"{', '.join(_fmt(x) for x in got.values())} (spread {_fmt(spread)}, predicted {_bound(p)})"
                                    f"{'' if ok else ' ✗'}")
                    if not ok:
                        failed.append(f"{op} {what}")
                    continue
                if not got:
                    missing.append(f"{op} {what}: no {q} in this study")
                    continue
                if q == "limiter" and all(x == "core" for x in got.values()) and any(
                        x.startswith("core-") for x in p.get("in", [])):
                    missing.append(f"{op} {what}: the core is not split into throughput/latency without llvm-mca "
                                   "(--metric mix) or ticks")
                    continue
                for s, x in got.items():
                    ok = _holds(x, p)
                    evidence.append(f"{s} {op} {what} = {_fmt(x)} (predicted {_bound(p)}){'' if ok else ' ✗'}")
                    if not ok:
                        failed.append(f"{s} {op} {what}")
    if failed:
        return CONTRADICTED, "; ".join(evidence), "fails: " + "; ".join(failed)
    if unmeasured and not missing:
        held = f"; what was measured holds ({len(evidence)} value(s))" if evidence else ""
        return (NOT_MEASURED.format(",".join(unmeasured)), "; ".join(evidence),
                "; ".join(f"{', '.join(w)}: `pqsimd run DIR --metric {m}` measures it" for m, w in unmeasured.items())
                + held)
    if missing or not evidence:
        missing += [f"{', '.join(w)} (--metric {m})" for m, w in unmeasured.items()]
        return UNTESTABLE, "; ".join(evidence), "missing: " + ("; ".join(missing) or "no prediction")
    return SUPPORTED, "; ".join(evidence), ""


def evaluate(claims_file: dict, sim: pd.DataFrame, groups: pd.DataFrame | None, bottleneck: pd.DataFrame,
             mix_ops: pd.DataFrame | None) -> pd.DataFrame:
    sim = sim if sim is not None else pd.DataFrame(columns=["geometry"])
    geometries = list(dict.fromkeys(sim["geometry"])) if len(sim) else [None]
    texts = dict(zip(sim["geometry"], sim["geometry_text"])) if len(sim) else {}
    instructions = _instructions(groups, sim, mix_ops)
    measured = {m for m, have in (("sim", len(sim) > 0), ("mix", mix_ops is not None and len(mix_ops) > 0),
                                  ("instructions", bool(instructions))) if have}
    from .. import caches

    rows = []
    for g in geometries:
        numbers = Numbers(g, sim, bottleneck, mix_ops, instructions)
        for c in claims_file.get("claims", []):
            verdict, ev, why = evaluate_claim(c, numbers, measured)
            rows.append({"claim": c["id"], "text": c["text"], "section": c.get("section", ""),
                         "geometry": g or "none (no --metric sim)", "verdict": verdict, "evidence": ev, "why": why,
                         "geometry_text": texts.get(g, ""), "model_limits": caches.model_limits() if g else ""})
    return pd.DataFrame(rows, columns=COLUMNS)


def evaluate_families(families: dict, sim: pd.DataFrame, groups: pd.DataFrame | None, bottleneck: pd.DataFrame,
                      mix_dir=None) -> pd.DataFrame:
    """The verdicts on every claims file the study's families carry (summary's families[...]['claims'])."""
    mix_ops = None
    if mix_dir is not None and (mix_dir / "mix_ops.parquet").exists():
        mix_ops = pd.read_parquet(mix_dir / "mix_ops.parquet")
    parts = []
    for fam in families.values():
        cf = fam.get("claims")
        if isinstance(cf, dict) and cf.get("claims"):
            t = evaluate(cf, sim, groups, bottleneck, mix_ops)
            parts.append(t.assign(family=fam.get("family", ""), claims_file=cf.get("name", "")))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=COLUMNS)
