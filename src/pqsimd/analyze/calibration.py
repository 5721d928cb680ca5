"""A/A calibration: a variant compared with itself, its jobs split into two disjoint halves.

Even job_index jobs form `<variant>[even]`, odd ones `<variant>[odd]`; every (metric, scheme, op)
with >= 2 jobs in each half is compared with exactly the machinery of the real comparisons (both
bootstraps, MWU, δ, job test, Holm/BH over this A/A family alone, verdict). There is no true
difference, so any `faster`/`slower` verdict is a false positive, and the share of intervals that
exclude 1 shows how often each interval would claim a difference that is not there.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .compare import Chain, compare_all, resample_groups
from .groups import build_groups
from .settings import Settings


def aa_check(spins: pd.DataFrame, variants: Sequence[str], settings: Settings,
             ops_order: Sequence[str]) -> tuple[pd.DataFrame, dict]:
    frames, done = [], []
    for v in variants:
        sub = spins[spins["variant"] == v]
        if sub.empty:
            continue
        sub = sub.assign(variant=np.where(sub["job_index"].to_numpy() % 2 == 0, f"{v}[even]", f"{v}[odd]"))
        halves = sub.groupby(["metric", "scheme", "op", "compiler", "variant"], observed=True)["job"].nunique()
        ok = halves[halves >= 2].reset_index().groupby(["metric", "scheme", "op", "compiler"]).size()
        keep = ok[ok == 2].reset_index()[["metric", "scheme", "op", "compiler"]]
        if keep.empty:
            continue
        sub = sub.merge(keep, on=["metric", "scheme", "op", "compiler"])
        groups = build_groups(sub)
        resample_groups(groups, settings)
        compilers = list(dict.fromkeys(str(c) for c in sub["compiler"]))
        pairs = [("aa", (f"{v}[even]", c), (f"{v}[odd]", c)) for c in compilers]
        df, _ = compare_all(groups, Chain((), "", {}), [], compilers, ops_order, settings, pairs=pairs)
        df["stage"] = "aa"
        frames.append(df)
        done.append(v)
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    summary: dict = {
        "definition": "each listed variant against itself: even vs odd job_index jobs, same statistics as the "
                      "comparisons, Holm/BH over this A/A family only; any faster/slower verdict is a false "
                      "positive (set [analysis] aa_variants = [] to skip)",
        "variants": done,
        "comparisons": int(len(table)),
    }
    if len(table):
        live = table[table["verdict"] != "n/a"]
        summary.update(
            verdicts={k: int(n) for k, n in table["verdict"].value_counts().items()},
            false_verdicts=int(live["verdict"].isin(["faster", "slower"]).sum()),
            naive_ci_excludes_1=round(float(((live["ci_low"] > 1) | (live["ci_high"] < 1)).mean()), 4) if len(live) else None,
            hci_excludes_1=round(float(((live["hci_low"] > 1) | (live["hci_high"] < 1)).mean()), 4) if len(live) else None,
            job_p_below_alpha=round(float((live["job_p"] < settings.alpha).mean()), 4) if len(live) else None,
        )
    else:
        summary["note"] = "no A/A comparison possible: needs >= 4 jobs (2 per half) of a listed variant"
    return table, summary
