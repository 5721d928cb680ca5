"""The headline rule, written once (issue 46): which comparisons a family's headlines name. analyze writes
its picks to results/headlines (analyze/steps.write_headlines) and marks them `headline` in the explanations
(analyze/explanations.select); the report words them (report/html.headlines) and reads them through
results.Results.headlines, which applies this same rule to results of a pqsimd from before the table (their
comparisons as they are). Tables in, a table out: no file, no study."""

from __future__ import annotations

import pandas as pd

from . import metrics as metrics_mod


HEADLINE_COLUMNS = ["family", "kind", "group", "n", "scheme", "op", "stage", "metric", "compiler", "speedup"]


def fixed_twins(family: dict) -> dict[str, str]:
    """Randomized op -> its twin on fixed randomness (`[ops.fixed_randomness]`): hedged signing -> sign with a
    fixed rnd, keypair with fresh coins -> keypair from a seed."""
    return {str(k): str(v) for k, v in (family.get("fixed_randomness") or {}).items()}


def headline_pool(d: pd.DataFrame, family: dict) -> pd.DataFrame:
    """The rows that may headline: a randomized op whose fixed-randomness twin has a row of its own in the same
    parameter set is left out (its rejection counts and draws vary per call; the twin is like for like)."""
    twins = fixed_twins(family)
    if not twins or d.empty:
        return d
    have = set(zip(d["scheme"], d["op"]))
    drop = [(s, o) in have and o in twins and (s, twins[o]) in have for s, o in zip(d["scheme"], d["op"])]
    return d[~pd.Series(drop, index=d.index)]


def group_ops(ops: list[str], family: dict) -> list[str]:
    """A headline group's ops with each randomized op replaced by its fixed-randomness twin (kept when the
    study has no row of the twin: headline_pool leaves the randomized op in then)."""
    twins = fixed_twins(family)
    return list(dict.fromkeys(x for o in ops for x in ([o, twins[o]] if o in twins else [o])))


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
    pool = headline_pool(d, family)  # a randomized op never headlines over its fixed-randomness twin
    d = pool if len(pool) else d
    picks = [{"kind": "largest", "group": "", "n": len(d), "row": d.loc[d["speedup"].idxmax()]}]
    if d["speedup"].min() < 1:
        picks.append({"kind": "smallest", "group": "", "n": len(d), "row": d.loc[d["speedup"].idxmin()]})
    for grp in (family.get("views") or {}).get("headlines") or []:
        g = d[d["op"].isin(group_ops(list(grp.get("ops", [])), family))]
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
    c = comparisons[(comparisons["metric"] == metric) & ~comparisons["op"].isin(self_checks)]
    if compiler is not None:
        c = c[(c["compiler"] == compiler) & (c.get("baseline_compiler", c["compiler"]) == compiler)]
    rows = []
    for name, f in families.items():
        mine = c[c["scheme"].isin(list(f.get("schemes") or {}))]
        h = chain.hand_for(set(mine["baseline"]))  # the family's hand stage (Keccak's starts at plain)
        d = mine[(mine["baseline"] == h.base) & (mine["variant"] == h.variant)].drop_duplicates(["scheme", "op"])
        for p in headline_picks(d, f):
            r = p["row"]
            rows.append({"family": name, "kind": p["kind"], "group": p["group"], "n": p["n"], "scheme": r["scheme"],
                         "op": r["op"], "stage": r["stage"], "metric": metric, "compiler": r["compiler"],
                         "speedup": float(r["speedup"])})
    return pd.DataFrame(rows, columns=HEADLINE_COLUMNS)
