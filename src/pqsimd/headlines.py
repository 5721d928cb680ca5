"""The headline rule, written once (issue 46): which comparisons a family's headlines name. analyze writes
its picks to results/headlines (analyze/steps.write_headlines) and marks them `headline` in the explanations
(analyze/explanations.select); the report words them (report/html.headlines) and reads them through
results.Results.headlines, which applies this same rule to results of a pqsimd from before the table (their
comparisons as they are). Tables in, a table out: no file, no study."""

from __future__ import annotations

import pandas as pd

from . import metrics as metrics_mod


HEADLINE_COLUMNS = ["family", "kind", "group", "n", "scheme", "op", "stage", "metric", "compiler", "speedup"]


def headline_picks(d: pd.DataFrame, family: dict) -> list[dict]:
    """The headline rule, written once: the report's headline sentences (results/headlines) and the
    explanations' `headline` kind (select) both read it. Of one family's hand-stage rows `d` (one per
    scheme and op, positive speedups, the self-check op left out): its largest speedup, its smallest when
    below 1, and the two ends of each `[[views.headlines]]` group's range across parameter sets (`n`: the
    group's rows; a range of one row is one number). Each pick: kind (largest | smallest | range_high |
    range_low), group (the range's label), n, row."""
    d = d[d["speedup"].notna() & (d["speedup"] > 0)]
    if d.empty:
        return []
    picks = [{"kind": "largest", "group": "", "n": len(d), "row": d.loc[d["speedup"].idxmax()]}]
    if d["speedup"].min() < 1:
        picks.append({"kind": "smallest", "group": "", "n": len(d), "row": d.loc[d["speedup"].idxmin()]})
    for grp in (family.get("views") or {}).get("headlines") or []:
        g = d[d["op"].isin(list(grp.get("ops", [])))]
        if len(g):
            label = str(grp.get("label", ""))
            picks.append({"kind": "range_high", "group": label, "n": len(g), "row": g.loc[g["speedup"].idxmax()]})
            picks.append({"kind": "range_low", "group": label, "n": len(g), "row": g.loc[g["speedup"].idxmin()]})
    return picks


def headline_table(comparisons: pd.DataFrame, families: dict, chain, metric: str, compiler: str | None) -> pd.DataFrame:
    """results/headlines: `headline_picks` of every family over the hand stage's comparisons of `metric` (the
    study's primary metric, metrics.primary) within `compiler` (the study's first); empty without a hand
    stage or a metric whose ratio is a speedup."""
    if comparisons is None or comparisons.empty or chain.hand is None or not metrics_mod.reads_as_speedup(metric):
        return pd.DataFrame(columns=HEADLINE_COLUMNS)
    self_checks = {f.get("self_check") for f in families.values() if f.get("self_check")}
    c = comparisons[(comparisons["metric"] == metric) & ~comparisons["op"].isin(self_checks)
                    & (comparisons["baseline"] == chain.hand.base) & (comparisons["variant"] == chain.hand.variant)]
    if compiler is not None:
        c = c[(c["compiler"] == compiler) & (c.get("baseline_compiler", c["compiler"]) == compiler)]
    hand = c.drop_duplicates(["scheme", "op"])
    rows = []
    for name, f in families.items():
        d = hand[hand["scheme"].isin(list(f.get("schemes") or {}))]
        for p in headline_picks(d, f):
            r = p["row"]
            rows.append({"family": name, "kind": p["kind"], "group": p["group"], "n": p["n"], "scheme": r["scheme"],
                         "op": r["op"], "stage": r["stage"], "metric": metric, "compiler": r["compiler"],
                         "speedup": float(r["speedup"])})
    return pd.DataFrame(rows, columns=HEADLINE_COLUMNS)
