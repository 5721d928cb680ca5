"""The total speedup (the chain's first → last variant) as the product of the chain's stages, with
each stage's share of log(total), per compiler.

The factors are ratios of group medians and telescope exactly: m(first)/m(last) = Π m(base)/m(var)
over the steps; share_x = log(x) / log(total). Share intervals come from the groups' hierarchical
bootstrap replicates (one resample per group, the same replicate index in every factor), at the
study's confidence level. Shares are undefined (n/a, with a note) when the total's interval reaches
into ±threshold of 1: log(total) is then ~0 in a non-negligible share of replicates and the shares
have no bounded distribution.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from .compare import Chain
from .groups import Group, GroupKey


def decomposition_shares(replicates: Sequence[np.ndarray], *, point: Sequence[float] | None = None,
                         names: Sequence[str] | None = None, alpha: float = 0.05, threshold: float = 0.0) -> dict:
    """Factors f_k = m(v_k)/m(v_{k+1}) of a chain v_0 → ... → v_K (total = their product) and their shares
    of log(total), with percentile (1 - alpha) CIs from B bootstrap replicates of each variant's median
    (``replicates``: K+1 arrays of the same length B, replicate b of each drawn independently or jointly).

    Per replicate b: log f_k,b from the replicate medians, share_k,b = log f_k,b / log total_b (the shares
    sum to 1 in every replicate); CIs are percentiles, point values come from ``point`` (default: the
    median of each replicate array). Shares are NaN with a ``note`` when the total is near 1: its
    percentile CI reaches into [1/(1+thr), 1+thr] (thr = 0: contains 1), or the total is exactly 1."""
    reps = [np.asarray(x, dtype=np.float64).ravel() for x in replicates]
    if len(reps) < 2 or len({r.size for r in reps}) != 1 or reps[0].size < 2:
        raise ValueError("need >= 2 replicate arrays of the same length >= 2")
    if any(np.any(r <= 0) or not np.all(np.isfinite(r)) for r in reps):
        raise ValueError("replicate medians must be finite and > 0")
    k = len(reps) - 1
    names = [f"f{i}" for i in range(k)] if names is None else list(names)
    if len(names) != k:
        raise ValueError("one name per factor")
    pt = np.array([np.median(r) for r in reps] if point is None else point, dtype=np.float64)
    if pt.shape != (k + 1,) or np.any(pt <= 0):
        raise ValueError("point must be one positive median per replicate array")
    lr = np.log(np.stack(reps))  # (K+1, B)
    lf = lr[:-1] - lr[1:]  # (K, B) log factors
    lt = lf.sum(axis=0)
    lp = np.log(pt)
    lfp = lp[:-1] - lp[1:]
    ltp = float(lfp.sum())
    a = alpha / 2.0
    tlo, thi = np.quantile(lt, [a, 1.0 - a])
    out = {"total": math.exp(ltp), "total_ci_low": math.exp(tlo), "total_ci_high": math.exp(thi), "note": ""}
    for i, nm in enumerate(names):
        flo, fhi = np.quantile(lf[i], [a, 1.0 - a])
        out[nm], out[f"{nm}_ci_low"], out[f"{nm}_ci_high"] = math.exp(lfp[i]), math.exp(flo), math.exp(fhi)
    band = math.log1p(threshold)
    if not (tlo > band or thi < -band) or ltp == 0.0:
        out["note"] = (f"shares n/a: the total speedup's {1 - alpha:.0%} CI [{math.exp(tlo):.4g}, "
                       f"{math.exp(thi):.4g}] reaches " + (f"±{threshold:.0%} of 1" if threshold > 0 else "1")
                       + ": log(total) ~ 0, shares unbounded")
        for nm in names:
            out[f"share_{nm}"] = out[f"share_{nm}_ci_low"] = out[f"share_{nm}_ci_high"] = float("nan")
        return out
    with np.errstate(divide="ignore", invalid="ignore"):
        sh = lf / lt  # (K, B); columns sum to 1 per replicate
    sh[:, lt == 0] = np.nan  # a replicate whose total is exactly 1 has no shares (the CI lies outside it)
    for i, nm in enumerate(names):
        lo, hi = np.nanquantile(sh[i], [a, 1.0 - a])
        out[f"share_{nm}"], out[f"share_{nm}_ci_low"], out[f"share_{nm}_ci_high"] = lfp[i] / ltp, float(lo), float(hi)
    return out


def columns(chain: Chain) -> list[str]:
    cols = ["metric", "scheme", "op", "compiler", "total", "total_hci_low", "total_hci_high"]
    for stage, _, _ in chain.steps:
        cols += [f"factor_{stage}", f"share_{stage}", f"factor_{stage}_hci_low", f"factor_{stage}_hci_high",
                 f"share_{stage}_ci_low", f"share_{stage}_ci_high"]
    return cols + ["note"]


def decompose(groups: dict[GroupKey, Group], comparisons: pd.DataFrame, chain: Chain, level: float = 0.95,
              threshold: float = 0.0) -> pd.DataFrame:
    cols = columns(chain)
    if not chain.steps:
        return pd.DataFrame(columns=cols)
    keys = list(dict.fromkeys((m, s, o, c) for (m, s, o, _v, c) in groups))  # the groups' (reading) order
    hci = {}
    if len(comparisons):
        for r in comparisons.itertuples(index=False):
            if r.baseline_compiler == r.compiler:
                hci[(r.metric, r.scheme, r.op, r.compiler, r.baseline, r.variant)] = (r.hci_low, r.hci_high)
    stages = [stage for stage, _, _ in chain.steps]
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
        for stage, b, v in chain.steps:
            row[f"factor_{stage}"] = g[b].median / g[v].median
            row[f"factor_{stage}_hci_low"], row[f"factor_{stage}_hci_high"] = hci.get((metric, scheme, op, comp, b, v), (math.nan, math.nan))
        boots = [g[v].boot_hier for v in chain.variants]
        if all(b is not None for b in boots):
            sh = decomposition_shares(boots, point=[g[v].median for v in chain.variants], names=stages,
                                      alpha=1.0 - level, threshold=threshold)
            for stage in stages:
                for suffix in ("", "_ci_low", "_ci_high"):
                    row[f"share_{stage}{suffix}"] = sh[f"share_{stage}{suffix}"]
            row["note"] = sh["note"]
        elif total != 1.0:  # no replicates (not resampled): point shares only
            for stage in stages:
                row[f"share_{stage}"] = math.log(row[f"factor_{stage}"]) / math.log(total)
            row["note"] = "share CIs n/a: no bootstrap replicates"
        else:
            row["note"] = "shares n/a: total speedup is exactly 1"
        rows.append(row)
    return pd.DataFrame(rows, columns=cols)
