"""The chain's decomposition: per (metric, scheme, op, compiler), the stage factors (the chain's
stage comparisons: estimate and interval exactly as in comparisons), their product (the total), and
each stage's share of log(total).

Every number here is a function of the stage comparisons' estimates, and its interval is the range
of that function over the box of the stage comparisons' printed intervals. So the factors multiply to
the total, the shares sum to 1, every derived number lies inside its own interval by construction,
and a derived interval covers whenever every stage interval does: its confidence is at least
1 - sum of the stages' miss probabilities (Bonferroni; total_ci_level, and share_<stage>_ci_level,
the same bound), and its coverage as printed is measured in bench/bench_coverage.py. With few jobs
that bound is low (J = 2: each stage's [min, max] is a 50% interval, the total's bound 0%), and
it is what the report prints beside the interval.

The total is the product of the stages' median speedups; the cumulative comparison first -> last is
the median of the jobs' total ratios. Both estimate the same speedup and agree when the same jobs are
typical in every stage (on machine B within 0.1% for most ops, 1.5% at most); the note says when they
differ by more than a quarter of the threshold. Shares are n/a when the total's interval reaches into
the ±threshold band (log(total) ~ 0: shares unbounded).

Stages whose comparisons share a cliff copy (compare.cliff_findings: a slow copy of the build between
two stages moves both, in opposite directions) are one finding, not two pieces of evidence: the row's
`cliff_finding` names it and its note says which stages it moves; the box interval never assumed the
stages independent (its level is a Bonferroni bound), so it stays valid, and a share it moves is read
as that copy's, not as the stages'.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..model import Chain


def share_range(lo: np.ndarray, hi: np.ndarray, k: int) -> tuple[float, float]:
    """min and max of share_k = a_k / sum(a) over the box a_i in [lo_i, hi_i] (log factors), when
    sum(a) keeps one sign over the box: the share is monotone in a_k and in the rest's sum, so its
    extremes are at the corners."""
    rest_lo, rest_hi = float(lo.sum() - lo[k]), float(hi.sum() - hi[k])
    vals = [a / (a + r) for a in (float(lo[k]), float(hi[k])) for r in (rest_lo, rest_hi)]
    return min(vals), max(vals)


def columns(chain: Chain) -> list[str]:
    cols = ["metric", "scheme", "op", "compiler", "total", "total_ci_low", "total_ci_high", "total_ci_level"]
    for stage, _, _ in chain.steps:
        cols += [f"factor_{stage}", f"factor_{stage}_ci_low", f"factor_{stage}_ci_high", f"factor_{stage}_ci_level",
                 f"share_{stage}", f"share_{stage}_ci_low", f"share_{stage}_ci_high", f"share_{stage}_ci_level"]
    return cols + ["cliff_finding", "note"]


def decompose(comparisons: pd.DataFrame, chain: Chain, threshold: float = 0.0,
              keys: list[tuple[str, str, str, str]] | None = None) -> pd.DataFrame:
    """The decomposition rows from the comparisons (stage rows of each step, same compiler) and the
    cumulative first -> last rows (for the note). keys: (metric, scheme, op, compiler) in reading
    order (default: the comparisons')."""
    cols = columns(chain)
    if not chain.steps or not len(comparisons):
        return pd.DataFrame(columns=cols)
    c = comparisons[comparisons["baseline_compiler"] == comparisons["compiler"]]
    by = {(r.metric, r.scheme, r.op, r.compiler, r.baseline, r.variant): r for r in c.itertuples(index=False)}
    if keys is None:
        keys = list(dict.fromkeys((r.metric, r.scheme, r.op, r.compiler) for r in c.itertuples(index=False)))
    band = math.log1p(threshold)
    rows = []
    for metric, scheme, op, comp in keys:
        row = {x: math.nan for x in cols}
        row.update(metric=metric, scheme=scheme, op=op, compiler=comp, note="", cliff_finding="")
        steps = [(stage, by.get((metric, scheme, op, comp, b, v))) for stage, b, v in chain.steps]
        if not any(r is not None for _, r in steps):
            continue
        # Trailing steps whose variant has no data at all (a family without that implementation,
        # e.g. HQC has no avx2): decompose the chain up to the last variant measured.
        def no_data(r) -> bool:
            return r is None or not (getattr(r, "n_var", 1) > 0)

        last = len(steps)
        while last > 1 and no_data(steps[last - 1][1]):
            last -= 1
        cut = [f"{b}→{v}" for _, b, v in chain.steps[last:]]
        steps, end = steps[:last], chain.steps[last - 1][2]
        missing = [f"{b}→{v}" for (stage, b, v), (_, r) in zip(chain.steps, steps) if r is None]
        bad = [f"{s} ({r.reason})" for s, r in steps if r is not None and not (r.speedup > 0)]
        if missing or bad:
            row["note"] = "n/a: " + ("no comparison " + ", ".join(missing) if missing else
                                      "no estimate for " + ", ".join(bad))
            rows.append(row)
            continue
        pt = np.array([math.log(r.speedup) for _, r in steps])
        lo = np.array([math.log(r.ci_low) if r.ci_low > 0 else -math.inf for _, r in steps])
        hi = np.array([math.log(r.ci_high) if r.ci_high > 0 else math.inf for _, r in steps])
        for (stage, r), p, a, b in zip(steps, pt, lo, hi):
            row[f"factor_{stage}"] = math.exp(p)
            row[f"factor_{stage}_ci_low"], row[f"factor_{stage}_ci_high"] = r.ci_low, r.ci_high
            row[f"factor_{stage}_ci_level"] = getattr(r, "ci_level", math.nan)
        total = float(pt.sum())
        row["total"] = math.exp(total)
        notes = [f"decomposed up to {end}: no data for {', '.join(cut)}"] if cut else []
        have_ci = bool(np.all(np.isfinite(lo) & np.isfinite(hi)))
        if have_ci:
            row["total_ci_low"], row["total_ci_high"] = math.exp(lo.sum()), math.exp(hi.sum())
            miss = sum(1.0 - float(r.ci_level) for _, r in steps if np.isfinite(r.ci_level))
            row["total_ci_level"] = max(0.0, 1.0 - miss)
        else:
            notes.append("total interval n/a: a stage has no interval ("
                         + ", ".join(f"{s}: {r.verdict}" for s, r in steps if not (r.ci_low > 0 and r.ci_high > 0)) + ")")
        cum = by.get((metric, scheme, op, comp, chain.first, end))
        if cum is not None and cum.speedup > 0 and abs(math.log(cum.speedup) - total) > band / 4:
            notes.append(f"the product of the stages ({math.exp(total):.4g}x) and the median of the jobs' total "
                         f"ratios ({cum.speedup:.4g}x, comparison cumulative) differ by "
                         f"{abs(math.expm1(total - math.log(cum.speedup))):.1%}: different jobs are typical in different stages")
        if total == 0.0:
            notes.append("shares n/a: total speedup is exactly 1")
        elif have_ci and not (lo.sum() > band or hi.sum() < -band):
            notes.append(f"shares n/a: the total's interval [{row['total_ci_low']:.4g}, {row['total_ci_high']:.4g}] "
                         f"reaches ±{threshold:.0%} of 1: log(total) ~ 0, shares unbounded")
        else:
            for k, (stage, _r) in enumerate(steps):
                row[f"share_{stage}"] = float(pt[k] / total)
                if have_ci:
                    row[f"share_{stage}_ci_low"], row[f"share_{stage}_ci_high"] = share_range(lo, hi, k)
                    row[f"share_{stage}_ci_level"] = row["total_ci_level"]  # the same box: covers when all stages do
        found: dict[str, list[str]] = {}
        for stage, r in steps:
            f = getattr(r, "cliff_finding", "")
            if isinstance(f, str) and f:
                found.setdefault(f, []).append(stage)
        if found:
            row["cliff_finding"] = "; ".join(found)
            for f, stages in found.items():
                notes.append(f"one cliff finding ({f}) moves {'stages ' + ', '.join(stages) if len(stages) > 1 else 'stage ' + stages[0]}"
                             + (": one copy's effect, not independent evidence of the stages" if len(stages) > 1 else ""))
        row["note"] = "; ".join(notes)
        rows.append(row)
    return pd.DataFrame(rows, columns=cols)
