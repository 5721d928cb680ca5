"""What SIMD costs besides time: per op, the C → SIMD step's time speedup beside its change in peak
stack and in code size (`--metric stack`, `--metric size`: exact, run/stack.py), and the same for the
end-to-end ops of every family (the portfolio, `[views.portfolio] end_to_end`).

Pairs: the chain's hand-SIMD step (C → hand SIMD) and each of the chain's implementations (its C
build → its SIMD build, an implementation's portable C → its native backend) whose builds the study has; and, where the
study has the reference's C build but not an implementation's own C, that implementation's SIMD build
against the reference C (named as such in `base`). The time speedup is the ticks comparison's own
estimate and interval (read, never estimated again; n/a without timing); the stack and size changes are
exact ratios of the two builds' bytes: `stack_ratio` = SIMD / C (1.03: +3%), likewise `size_ratio`.

Table `footprint`: scheme, family, op, compiler, pair, base, variant, end_to_end, time_speedup, time_ci_low,
time_ci_high, time_ci_level, time_verdict, stack_base, stack_variant, stack_ratio, size_base,
size_variant, size_ratio, sentence.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from ..model import SPEED_DIRECTIONS, speed_words
from .. import metrics as metrics_mod

COLUMNS = ["scheme", "family", "op", "compiler", "pair", "base", "variant", "end_to_end", "time_speedup", "time_ci_low",
           "time_ci_high", "time_ci_level", "time_verdict", "stack_base", "stack_variant", "stack_ratio", "size_base",
           "size_variant", "size_ratio", "sentence"]


def _pairs(chain: dict, present: set[str]) -> list[tuple[str, str, str]]:
    steps = chain.get("steps") or []
    out: list[tuple[str, str, str]] = []
    ref_c = steps[-1]["from"] if steps else None
    if steps:
        out.append((steps[-1].get("stage", "hand"), steps[-1]["from"], steps[-1]["to"]))
    for impl in chain.get("implementations") or []:
        name, c, simd = (impl["name"], impl["c"], impl["simd"]) if isinstance(impl, dict) else impl
        if simd not in present:
            continue
        if c in present:
            out.append((name, c, simd))
        elif ref_c in present:
            out.append((f"{name} vs {ref_c}", ref_c, simd))
    seen: dict[tuple[str, str], tuple[str, str, str]] = {}
    for p in out:
        if p[1] in present and p[2] in present:
            seen.setdefault((p[1], p[2]), p)  # the chain's step and an implementation of the same builds: once
    return list(seen.values())


def _pct(r: float) -> str:
    return f"{(r - 1) * 100:+.0f}%"


def _factor(v: float) -> str:
    """A speed factor of a footprint sentence: 2 decimals below 10 (1.03×: never '1.0× slower'), then 1."""
    return f"{v:.2f}×" if v < 10 else f"{v:.1f}×"


def sentence(pair: str, base: str, variant: str, op: str, time: float, stack: float, size: float,
             verdict: object = "n/a") -> str:
    """'<variant> makes <op> 6.10× faster than <base> for +3% stack and +14% code' (the parts that are
    known; `op` as the table names it: the parameter set and the op's sentence label, 'ML-KEM-768 decaps')
    known); the speed's word is the time comparison's verdict (model.speed_words): '<variant> vs <base>, <op>:
    the same speed (0.99×, within the threshold) for +19% stack' where it is not faster or slower."""
    costs = [f"{_pct(x)} {w}" for x, w in ((stack, "stack"), (size, "code")) if math.isfinite(x)]
    if math.isfinite(time):
        speed = speed_words(time, verdict, _factor)
        head = (f"{variant} makes {op} {speed} than {base}" if str(verdict) in SPEED_DIRECTIONS
                else f"{variant} vs {base}, {op}: {speed}")
    else:
        head = f"{variant} vs {base}, {op} (not timed):"
    return f"{head}{' for ' if math.isfinite(time) and costs else ' '}{' and '.join(costs)}".strip()


def footprint_table(comparisons: pd.DataFrame, groups: pd.DataFrame, families: dict, chain: dict,
                    self_checks: set[str]) -> pd.DataFrame:
    if groups is None or not len(groups) or not {"stack", "size"} & set(groups["metric"]):
        return pd.DataFrame(columns=COLUMNS)
    med: dict[tuple, float] = {(r.metric, r.scheme, r.op, r.variant, r.compiler): float(r.median)
                               for r in groups[groups["metric"].isin(["stack", "size"])].itertuples(index=False)}
    present = {k[3] for k in med}
    ticks = comparisons[comparisons["metric"] == metrics_mod.TIME] if comparisons is not None and len(comparisons) else None
    times = {} if ticks is None else {(r["scheme"], r["op"], r["baseline"], r["variant"], r["compiler"]): r
                                      for r in ticks.to_dict("records")}
    from .explanations import sentence_labels

    fam_of = {s: name for name, f in families.items() for s in (f.get("schemes") or {})}
    op_words = {name: sentence_labels(f) for name, f in families.items()}
    set_words = {s: str((i or {}).get("label", s)) for f in families.values() for s, i in (f.get("schemes") or {}).items()}
    rows: list[dict[str, Any]] = []
    keys = list(dict.fromkeys((s, o, c) for (_m, s, o, _v, c) in med if o not in self_checks))
    for pair, base, var in _pairs(chain, present):
        for scheme, op, comp in keys:
            vals = {m: (med.get((m, scheme, op, base, comp), math.nan), med.get((m, scheme, op, var, comp), math.nan))
                    for m in ("stack", "size")}
            if all(math.isnan(a) or math.isnan(b) for a, b in vals.values()):
                continue
            t = times.get((scheme, op, base, var, comp)) or {}
            fam = fam_of.get(scheme, "")
            e2e = op in (((families.get(fam) or {}).get("views") or {}).get("portfolio") or {}).get("end_to_end", [])
            ratio = {m: (b / a if a > 0 and b >= 0 else math.nan) for m, (a, b) in vals.items()}
            sp = float(t.get("speedup", math.nan)) if t else math.nan
            rows.append({"scheme": scheme, "family": fam, "op": op, "compiler": comp, "pair": pair, "base": base,
                         "variant": var, "end_to_end": bool(e2e), "time_speedup": sp,
                         "time_ci_low": float(t.get("ci_low", math.nan)) if t else math.nan,
                         "time_ci_high": float(t.get("ci_high", math.nan)) if t else math.nan,
                         "time_ci_level": float(t.get("ci_level", math.nan)) if t else math.nan,
                         "time_verdict": t.get("verdict", "n/a") if t else "not timed",
                         "stack_base": vals["stack"][0], "stack_variant": vals["stack"][1], "stack_ratio": ratio["stack"],
                         "size_base": vals["size"][0], "size_variant": vals["size"][1], "size_ratio": ratio["size"],
                         "sentence": sentence(pair, base, var, f"{set_words.get(scheme, scheme)} "
                                              f"{op_words.get(fam, {}).get(op, op)}", sp, ratio["stack"], ratio["size"],
                                              t.get("verdict", "n/a") if t else "n/a")})
    return pd.DataFrame(rows, columns=COLUMNS)
