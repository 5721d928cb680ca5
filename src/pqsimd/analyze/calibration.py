"""A/A calibration: a variant compared with itself, its jobs split into two disjoint halves.

Even job_index jobs form `<variant>[even]`, odd ones `<variant>[odd]`; every (metric, scheme, op)
with >= 2 jobs in each half is compared with exactly the machinery of the real comparisons (both
bootstraps, MWU, δ, the job-level test with the study's variance priors, TOST, Holm/BH over this A/A
family alone, verdict). There is no true difference, so any `faster`/`slower` verdict is a false
positive (`same` is a correct one), and the share of intervals that exclude 1 shows how often each
interval would claim a difference that is not there. With fewer than 4 jobs per group a half holds
< 2 jobs, the job-level test has no between-job variance, and the check cannot run: its summary says so.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .compare import Chain, compare_all, resample_groups
from .groups import build_groups
from .pooled import Priors
from .settings import Settings

KEYS = ["metric", "scheme", "op", "compiler"]


def aa_check(spins: pd.DataFrame, variants: Sequence[str], settings: Settings,
             ops_order: Sequence[str], priors: dict[str, Priors] | None = None,
             skip_ops: frozenset[str] | set[str] = frozenset()) -> tuple[pd.DataFrame, dict]:
    """The A/A table and its summary. priors: the study's variance priors (compare.study_priors), so the
    halves are tested exactly as the study's comparisons are."""
    frames, done, skipped = [], [], []
    for v in variants:
        sub = spins[spins["variant"] == v]
        if sub.empty:
            continue
        sub = sub.assign(variant=np.where(sub["job_index"].to_numpy() % 2 == 0, f"{v}[even]", f"{v}[odd]"))
        halves = sub.groupby([*KEYS, "variant"], observed=True)["job"].nunique()
        ok = halves[halves >= 2].reset_index().groupby(KEYS).size()
        keep = ok[ok == 2].reset_index()[KEYS]
        n_keys = int(sub[KEYS].drop_duplicates().shape[0])
        if keep.empty:
            jobs = int(sub.groupby(KEYS, observed=True)["job"].nunique().max())
            per_half = halves.groupby(level="variant", observed=True).max()
            even, odd = int(per_half.get(f"{v}[even]", 0)), int(per_half.get(f"{v}[odd]", 0))
            skipped.append(f"{v}: {jobs} job(s) per group, so the even/odd job_index halves hold {even} and {odd} "
                           f"job(s); the job-level test needs >= 2 jobs in each half (>= 4 jobs per group)")
            continue
        if len(keep) < n_keys:
            skipped.append(f"{v}: {n_keys - len(keep)} of {n_keys} (metric, scheme, op, compiler) left out "
                           f"(< 2 jobs in a half)")
        sub = sub.merge(keep, on=KEYS)
        groups = build_groups(sub)
        resample_groups(groups, settings)
        compilers = list(dict.fromkeys(str(c) for c in sub["compiler"]))
        pairs = [("aa", (f"{v}[even]", c), (f"{v}[odd]", c)) for c in compilers]
        df, _ = compare_all(groups, Chain((), "", {}), [], compilers, ops_order, settings, pairs=pairs, priors=priors,
                            skip_ops=skip_ops)
        df["stage"] = "aa"
        frames.append(df)
        done.append(v)
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    summary: dict = {
        "definition": "each listed variant against itself: even vs odd job_index jobs, same statistics as the "
                      "comparisons (the job-level test with the study's variance priors), Holm/BH over this A/A "
                      "family only; any faster/slower verdict is a false positive, same is correct "
                      "(set [analysis] aa_variants = [] to skip)",
        "variants": done,
        "comparisons": int(len(table)),
        "ran": bool(len(table)),
    }
    if skipped:
        summary["skipped"] = skipped
    if len(table):
        live = table[table["verdict"] != "n/a"]
        summary.update(
            verdicts={k: int(n) for k, n in table["verdict"].value_counts().items()},
            false_verdicts=int(live["verdict"].isin(["faster", "slower"]).sum()),
            withheld=int((live["verdict"] == "withheld").sum()),
            naive_ci_excludes_1=round(float(((live["ci_low"] > 1) | (live["ci_high"] < 1)).mean()), 4) if len(live) else None,
            hci_excludes_1=round(float(((live["hci_low"] > 1) | (live["hci_high"] < 1)).mean()), 4) if len(live) else None,
            test_ci_excludes_1=round(float(((live["test_ci_low"] > 1) | (live["test_ci_high"] < 1)).mean()), 4)
            if len(live) else None,
            job_p_below_alpha=round(float((live["job_p"] < settings.alpha).mean()), 4) if len(live) else None,
        )
    elif skipped:
        summary["note"] = "A/A check not run: " + "; ".join(skipped)
    else:
        summary["note"] = "A/A check not run: no listed variant has data (aa_variants)"
    return table, summary
