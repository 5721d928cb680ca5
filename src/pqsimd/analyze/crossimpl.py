"""Whose speedup is it? The cross-implementation view (issue 37).

`crossimpl`: per (scheme, op, compiler), each implementation of the chain's `implementations`
(variants.toml: PQClean, the pq-code-package libraries, wolfSSL, each a C variant and a hand-SIMD variant)
side by side: its own C -> hand-SIMD speedup, and its C and its SIMD against the first implementation's
(the reference: PQClean's clean and hand-SIMD builds). Every number is a comparison analyze already made (the chain's
steps, `extra` and `also` stages), read here with its own interval, level and verdict: nothing is
estimated twice. The builds of one parameter set share the paired jobs, so these ratios are paired.

`counterparts`: a family whose TOML names a counterpart ([views.counterpart]: another family that is
a different version of the same algorithm, e.g. FIPS 205 SLH-DSA and round-3 SPHINCS+) beside it, op
by op for the sets and ops it maps: each family's hand-SIMD speedup (its chain's hand stage) with its
interval, the ratio of the two speedups, and the ratio of the two SIMD builds' times. These builds are
timed in different jobs (one parameter set per paired job), so the ratios are not paired: each is a
derived number whose interval is the range over the box of the two intervals it uses, at the level
1 - (their summed misses), as the decomposition's are.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import metrics as metrics_mod

CROSSIMPL_COLUMNS = [
    "scheme", "op", "compiler", "implementation", "c_variant", "simd_variant",
    "hand_simd", "hand_simd_ci_low", "hand_simd_ci_high", "hand_simd_ci_level", "hand_simd_verdict",
    "c_vs_reference", "c_vs_reference_ci_low", "c_vs_reference_ci_high", "c_vs_reference_ci_level",
    "simd_vs_reference", "simd_vs_reference_ci_low", "simd_vs_reference_ci_high", "simd_vs_reference_ci_level",
    "simd_vs_reference_verdict", "note",
]
COUNTERPART_COLUMNS = [
    "scheme", "op", "compiler", "counterpart_family", "counterpart_scheme", "counterpart_op", "relation",
    "hand_simd", "hand_simd_ci_low", "hand_simd_ci_high", "hand_simd_ci_level",
    "counterpart_hand_simd", "counterpart_hand_simd_ci_low", "counterpart_hand_simd_ci_high",
    "counterpart_hand_simd_ci_level",
    "speedup_ratio", "speedup_ratio_ci_low", "speedup_ratio_ci_high", "speedup_ratio_ci_level",
    "simd_time_ratio", "simd_time_ratio_ci_low", "simd_time_ratio_ci_high", "simd_time_ratio_ci_level", "note",
]


def implementations(chain: dict) -> list[dict]:
    """The chain's implementations ({name, c, simd}), the reference first; [] for a chain without them."""
    out = []
    for d in chain.get("implementations", []) or []:
        if isinstance(d, dict) and all(isinstance(d.get(k), str) and d.get(k) for k in ("name", "c", "simd")):
            out.append({"name": d["name"], "c": d["c"], "simd": d["simd"]})
    return out


def _index(comparisons: pd.DataFrame) -> dict[tuple, pd.Series]:
    out: dict[tuple, pd.Series] = {}
    if comparisons is None or not len(comparisons):
        return out
    c = comparisons[comparisons["metric"] == metrics_mod.TIME] if "metric" in comparisons else comparisons
    for _, r in c.iterrows():
        if r.get("baseline_compiler", r["compiler"]) != r["compiler"]:
            continue  # cross-compiler rows compare compilers, not implementations
        out.setdefault((r["scheme"], r["op"], r["compiler"], r["baseline"], r["variant"]), r)
    return out


def _num(r: pd.Series | None, key: str) -> float:
    if r is None:
        return float("nan")
    v = r.get(key)
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def crossimpl_table(comparisons: pd.DataFrame, chain: dict) -> pd.DataFrame:
    impls = implementations(chain)
    idx = _index(comparisons)
    if len(impls) < 2 or not idx:
        return pd.DataFrame(columns=CROSSIMPL_COLUMNS)
    ref = impls[0]
    keys = sorted({(s, o, c) for (s, o, c, _, _) in idx}, key=lambda k: (k[0], k[2]))
    order = {k: i for i, k in enumerate(dict.fromkeys((s, o, c) for (s, o, c, _, _) in idx))}
    rows = []
    for scheme, op, compiler in sorted(keys, key=lambda k: order[k]):
        found = []
        for im in impls:
            hand = idx.get((scheme, op, compiler, im["c"], im["simd"]))
            cref = None if im is ref else idx.get((scheme, op, compiler, ref["c"], im["c"]))
            sref = None if im is ref else idx.get((scheme, op, compiler, ref["simd"], im["simd"]))
            if im is not ref and all(np.isnan(_num(x, "speedup")) for x in (hand, cref, sref)):
                continue  # the implementation has no such op (the main table says why) or is not in the study
            notes = [str(x) for x in (hand.get("reason") if hand is not None else "n/a: the implementation's C or SIMD "
                                       "build is not in the study, or has no such op",) if isinstance(x, str) and x]
            found.append({
                "scheme": scheme, "op": op, "compiler": compiler, "implementation": im["name"],
                "c_variant": im["c"], "simd_variant": im["simd"],
                "hand_simd": _num(hand, "speedup"), "hand_simd_ci_low": _num(hand, "ci_low"),
                "hand_simd_ci_high": _num(hand, "ci_high"), "hand_simd_ci_level": _num(hand, "ci_level"),
                "hand_simd_verdict": str(hand.get("verdict")) if hand is not None else "n/a",
                "c_vs_reference": 1.0 if im is ref else _num(cref, "speedup"),
                "c_vs_reference_ci_low": 1.0 if im is ref else _num(cref, "ci_low"),
                "c_vs_reference_ci_high": 1.0 if im is ref else _num(cref, "ci_high"),
                "c_vs_reference_ci_level": float("nan") if im is ref else _num(cref, "ci_level"),
                "simd_vs_reference": 1.0 if im is ref else _num(sref, "speedup"),
                "simd_vs_reference_ci_low": 1.0 if im is ref else _num(sref, "ci_low"),
                "simd_vs_reference_ci_high": 1.0 if im is ref else _num(sref, "ci_high"),
                "simd_vs_reference_ci_level": float("nan") if im is ref else _num(sref, "ci_level"),
                "simd_vs_reference_verdict": "reference" if im is ref else (str(sref.get("verdict")) if sref is not None
                                                                           else "n/a"),
                "note": "; ".join(notes),
            })
        if len(found) >= 2:  # a view across implementations needs two of them
            rows += found
    return pd.DataFrame(rows, columns=CROSSIMPL_COLUMNS)


def _box_ratio(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> tuple[float, float, float, float]:
    """a / b with the range over the box of the two intervals, at 1 - (miss_a + miss_b)."""
    (ea, la, ha, va), (eb, lb, hb, vb) = a, b
    if not all(np.isfinite([ea, la, ha, eb, lb, hb])) or min(lb, hb, eb) <= 0:
        return (float("nan"),) * 4
    level = 1 - ((1 - va) + (1 - vb)) if np.isfinite(va) and np.isfinite(vb) else float("nan")
    return ea / eb, la / hb, ha / lb, max(level, 0.0) if np.isfinite(level) else level


def counterparts_table(comparisons: pd.DataFrame, groups: pd.DataFrame, families: dict, chain: dict) -> pd.DataFrame:
    steps = chain.get("steps") or []
    if not steps or comparisons is None or not len(comparisons):
        return pd.DataFrame(columns=COUNTERPART_COLUMNS)
    hand = steps[-1]
    c = comparisons[(comparisons.get("metric", metrics_mod.TIME) == metrics_mod.TIME) & (comparisons["stage"] == hand["stage"])]
    hand_rows = {(r["scheme"], r["op"], r["compiler"]): r for _, r in c.iterrows()}
    g = groups[groups["metric"] == metrics_mod.TIME] if groups is not None and len(groups) else pd.DataFrame()
    medians = {(r["scheme"], r["op"], r["variant"], r["compiler"]): r for _, r in g.iterrows()}
    rows = []
    for fam, f in families.items():
        cp = (f.get("views") or {}).get("counterpart")
        if not isinstance(cp, dict):
            continue
        other = cp.get("family", "")
        for scheme, other_scheme in (cp.get("schemes") or {}).items():
            for op, other_op in (cp.get("ops") or {}).items():
                for (s, o, comp), mine in hand_rows.items():
                    if (s, o) != (scheme, op):
                        continue
                    theirs = hand_rows.get((other_scheme, other_op, comp))
                    if theirs is None:
                        continue
                    a = tuple(_num(mine, k) for k in ("speedup", "ci_low", "ci_high", "ci_level"))
                    b = tuple(_num(theirs, k) for k in ("speedup", "ci_low", "ci_high", "ci_level"))
                    sr = _box_ratio(a, b)  # type: ignore[arg-type]
                    gm = medians.get((scheme, op, hand["to"], comp))
                    gt = medians.get((other_scheme, other_op, hand["to"], comp))
                    tr = (float("nan"),) * 4
                    if gm is not None and gt is not None:  # their time / ours: > 1 when ours is faster
                        tr = _box_ratio(tuple(_num(gt, k) for k in ("median", "median_ci_low", "median_ci_high",
                                                                       "median_ci_level")),  # type: ignore[arg-type]
                                        tuple(_num(gm, k) for k in ("median", "median_ci_low", "median_ci_high",
                                                                       "median_ci_level")))  # type: ignore[arg-type]
                    rows.append({
                        "scheme": scheme, "op": op, "compiler": comp, "counterpart_family": other,
                        "counterpart_scheme": other_scheme, "counterpart_op": other_op,
                        "relation": str(cp.get("relation", "")),
                        "hand_simd": a[0], "hand_simd_ci_low": a[1], "hand_simd_ci_high": a[2], "hand_simd_ci_level": a[3],
                        "counterpart_hand_simd": b[0], "counterpart_hand_simd_ci_low": b[1],
                        "counterpart_hand_simd_ci_high": b[2], "counterpart_hand_simd_ci_level": b[3],
                        "speedup_ratio": sr[0], "speedup_ratio_ci_low": sr[1], "speedup_ratio_ci_high": sr[2],
                        "speedup_ratio_ci_level": sr[3],
                        "simd_time_ratio": tr[0], "simd_time_ratio_ci_low": tr[1], "simd_time_ratio_ci_high": tr[2],
                        "simd_time_ratio_ci_level": tr[3],
                        "note": "different jobs (one parameter set per paired job): box intervals of the two, not paired",
                    })
    return pd.DataFrame(rows, columns=COUNTERPART_COLUMNS)
