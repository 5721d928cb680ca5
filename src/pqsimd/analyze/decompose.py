"""The total speedup (the chain's first → last variant) as the product of the chain's stages, with
each stage's share of log(total), per compiler.

The factors are ratios of group medians and telescope exactly: m(first)/m(last) = Π m(base)/m(var)
over the steps; share_x = log(x) / log(total). Share intervals come from the groups' hierarchical
bootstrap replicates (one resample per group, the same replicate index in every factor), at the
study's confidence level.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .compare import Chain
from .groups import Group, GroupKey


def columns(chain: Chain) -> list[str]:
    cols = ["metric", "scheme", "op", "compiler", "total", "total_hci_low", "total_hci_high"]
    for stage, _, _ in chain.steps:
        cols += [f"factor_{stage}", f"share_{stage}", f"factor_{stage}_hci_low", f"factor_{stage}_hci_high",
                 f"share_{stage}_ci_low", f"share_{stage}_ci_high"]
    return cols + ["note"]


def decompose(groups: dict[GroupKey, Group], comparisons: pd.DataFrame, chain: Chain, level: float = 0.95) -> pd.DataFrame:
    cols = columns(chain)
    if not chain.steps:
        return pd.DataFrame(columns=cols)
    keys = list(dict.fromkeys((m, s, o, c) for (m, s, o, _v, c) in groups))  # the groups' (reading) order
    hci = {}
    if len(comparisons):
        for r in comparisons.itertuples(index=False):
            if r.baseline_compiler == r.compiler:
                hci[(r.metric, r.scheme, r.op, r.compiler, r.baseline, r.variant)] = (r.hci_low, r.hci_high)
    a = (1.0 - level) / 2.0
    rows = []
    for metric, scheme, op, comp in keys:
        g = {v: groups.get((metric, scheme, op, v, comp)) for v in chain.variants}
        row = {c: math.nan for c in cols}
        row.update(metric=metric, scheme=scheme, op=op, compiler=comp, note="")
        missing = [v for v, x in g.items() if x is None]
        if missing:
            row["note"] = f"n/a: no data for {', '.join(missing)}"
            rows.append(row)
            continue
        nonpos = [v for v, x in g.items() if not x.positive]
        if nonpos:
            row["note"] = f"n/a: spin medians <= 0 for {', '.join(nonpos)} (below timer resolution)"
            rows.append(row)
            continue
        total = g[chain.first].median / g[chain.last].median
        row["total"] = total
        row["total_hci_low"], row["total_hci_high"] = hci.get((metric, scheme, op, comp, chain.first, chain.last),
                                                              (math.nan, math.nan))
        boots = {v: x.boot_hier for v, x in g.items()}
        have_boot = all(b is not None for b in boots.values())
        if have_boot:
            log_total_b = np.log(boots[chain.first] / boots[chain.last])
        for stage, b, v in chain.steps:
            f = g[b].median / g[v].median
            row[f"factor_{stage}"] = f
            row[f"factor_{stage}_hci_low"], row[f"factor_{stage}_hci_high"] = hci.get((metric, scheme, op, comp, b, v), (math.nan, math.nan))
            row[f"share_{stage}"] = math.log(f) / math.log(total) if total != 1.0 else math.nan
            if have_boot and total != 1.0:
                with np.errstate(divide="ignore", invalid="ignore"):
                    share_b = np.log(boots[b] / boots[v]) / log_total_b
                share_b = share_b[np.isfinite(share_b)]
                # shares are undefined where a replicate's total crosses 1: report them only when it never does
                if share_b.size == log_total_b.size and np.all(np.sign(log_total_b) == np.sign(math.log(total))):
                    lo, hi = np.quantile(share_b, [a, 1.0 - a])
                    row[f"share_{stage}_ci_low"], row[f"share_{stage}_ci_high"] = float(lo), float(hi)
        if total == 1.0:
            row["note"] = "shares n/a: total speedup is exactly 1"
        elif have_boot and not np.all(np.sign(log_total_b) == np.sign(math.log(total))):
            row["note"] = "share CIs n/a: the total's bootstrap interval reaches 1"
        rows.append(row)
    return pd.DataFrame(rows, columns=cols)
