"""The refo0→avx2 speedup as the product compiler × autovec × hand_simd, with each factor's share.

The factors are ratios of group medians and telescope exactly: m(refo0)/m(avx2) =
m(refo0)/m(refnv) · m(refnv)/m(ref) · m(ref)/m(avx2); share_x = log(x) / log(total).
"""

from __future__ import annotations

import math

import pandas as pd

from .groups import Group

FACTORS = (("compiler", "refo0", "refnv"), ("autovec", "refnv", "ref"), ("hand_simd", "ref", "avx2"))
COLUMNS = [
    "metric", "scheme", "op", "total", "total_hci_low", "total_hci_high",
    "compiler", "autovec", "hand_simd", "share_compiler", "share_autovec", "share_hand_simd",
    "compiler_hci_low", "compiler_hci_high", "autovec_hci_low", "autovec_hci_high",
    "hand_simd_hci_low", "hand_simd_hci_high", "note",
]


def decompose(groups: dict[tuple[str, str, str, str], Group], comparisons: pd.DataFrame) -> pd.DataFrame:
    keys = list(dict.fromkeys((m, s, o) for (m, s, o, _v) in groups))  # in the groups' (reading) order
    hci = {}
    if len(comparisons):
        for r in comparisons.itertuples(index=False):
            hci[(r.metric, r.scheme, r.op, r.baseline, r.variant)] = (r.hci_low, r.hci_high)
    rows = []
    for metric, scheme, op in keys:
        med = {v: groups[(metric, scheme, op, v)].median for v in ("refo0", "refnv", "ref", "avx2")
               if (metric, scheme, op, v) in groups}
        row = {c: math.nan for c in COLUMNS}
        row.update(metric=metric, scheme=scheme, op=op, note="")
        missing = [v for v in ("refo0", "refnv", "ref", "avx2") if v not in med]
        if missing:
            row["note"] = f"n/a: no data for {', '.join(missing)}"
            rows.append(row)
            continue
        nonpos = [v for v in ("refo0", "refnv", "ref", "avx2") if not groups[(metric, scheme, op, v)].positive]
        if nonpos:
            row["note"] = f"n/a: spin medians <= 0 for {', '.join(nonpos)} (below timer resolution)"
            rows.append(row)
            continue
        total = med["refo0"] / med["avx2"]
        row["total"] = total
        row["total_hci_low"], row["total_hci_high"] = hci.get((metric, scheme, op, "refo0", "avx2"), (math.nan, math.nan))
        for name, b, v in FACTORS:
            f = med[b] / med[v]
            row[name] = f
            row[f"{name}_hci_low"], row[f"{name}_hci_high"] = hci.get((metric, scheme, op, b, v), (math.nan, math.nan))
            row[f"share_{name}"] = math.log(f) / math.log(total) if total != 1.0 else math.nan
        if total == 1.0:
            row["note"] = "shares n/a: total speedup is exactly 1"
        rows.append(row)
    return pd.DataFrame(rows, columns=COLUMNS)
