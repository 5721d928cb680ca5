"""A/A checks: comparisons whose true speedup is 1, analysed exactly as the study's comparisons and
printed at the study's family level, so their verdicts show how often the published rule claims a
difference that is not there.

Paired design: a duplicate build (`[study] aa = ["ref"]`, or --aa ref: the same variant built twice
under two ids, both in every paired job) against the original (stage aa in compare.py). Separate
design: a variant against itself, its jobs split into even and odd job_index halves (each half a set
of independent processes, as the separate design's groups are). Any faster/slower verdict is false;
same is correct; ~ and withheld are no claim.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..model import Chain, Design
from .compare import AA_STAGE, compare_all, draw_jobs, public
from .groups import attach_resolution, build_groups
from ..stats.multiplicity import FamilyLevel
from ..stats.pooled import Priors
from ..analysis_settings import Settings

KEYS = ["metric", "scheme", "op", "compiler"]


def summarize(table: pd.DataFrame, definition: str) -> dict:
    out: dict = {"definition": definition, "comparisons": int(len(table)), "ran": bool(len(table))}
    live = table[table["verdict"] != "n/a"] if len(table) else table
    if len(live):
        lo, hi = live["ci_low"].to_numpy(float), live["ci_high"].to_numpy(float)
        out.update(verdicts={k: int(n) for k, n in live["verdict"].value_counts().items()},
                   false_verdicts=int(live["verdict"].isin(["faster", "slower"]).sum()),
                   withheld=int((live["verdict"] == "withheld").sum()),
                   ci_excludes_1=round(float(((lo > 1) | (hi < 1)).mean()), 4))
    return out


def halves(spins: pd.DataFrame, variants: Sequence[str], settings: Settings, ops_order: Sequence[str],
           level: FamilyLevel, priors: dict[str, Priors] | None, skip_ops,
           jobs: pd.DataFrame | None = None) -> tuple[pd.DataFrame, list[str]]:
    """Separate design: each variant against itself, even vs odd job_index jobs."""
    frames, skipped = [], []
    for v in variants:
        sub = spins[spins["variant"] == v]
        if sub.empty:
            continue
        sub = sub.assign(variant=np.where(sub["job_index"].to_numpy() % 2 == 0, f"{v}[even]", f"{v}[odd]"))
        counts = sub.groupby([*KEYS, "variant"], observed=True)["job"].nunique()
        ok = counts[counts >= 2].reset_index().groupby(KEYS).size()
        keep = ok[ok == 2].reset_index()[KEYS]
        if keep.empty:
            jobs = int(sub.groupby(KEYS, observed=True)["job"].nunique().max())
            skipped.append(f"{v}: {jobs} job(s) per group, so a half holds < 2 jobs (>= 4 jobs per group needed)")
            continue
        sub = sub.merge(keep, on=KEYS)
        groups = build_groups(sub)
        if jobs is not None:
            attach_resolution(groups, sub, jobs)  # the halves are as coarse as the clock, like any group
        draw_jobs(groups, settings)
        compilers = list(dict.fromkeys(str(c) for c in sub["compiler"]))
        pairs = [(AA_STAGE, (f"{v}[even]", c), (f"{v}[odd]", c)) for c in compilers]
        df, _w, _f, _d = compare_all(groups, Chain((), ""), [], compilers, ops_order, settings, pairs=pairs,
                                     priors=priors, skip_ops=skip_ops, level=level)
        frames.append(public(df))
    return (pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()), skipped


def aa_record(comparisons: pd.DataFrame, aa_pairs: dict[str, str], spins: pd.DataFrame, settings: Settings,
              ops_order: Sequence[str], priors: dict[str, Priors] | None, skip_ops, design: str,
              level: FamilyLevel, jobs: pd.DataFrame | None = None) -> tuple[pd.DataFrame, dict]:
    """The A/A table and its summary (see the module docstring)."""
    if aa_pairs:
        table = public(comparisons[comparisons["stage"] == AA_STAGE]).reset_index(drop=True)
        summary = summarize(table, "each build against its duplicate (the same variant built twice, distinct "
                                   "ids, timed in the same paired jobs), analysed as the comparisons and printed "
                                   "at the family's level; a faster/slower verdict is false")
        summary["kind"] = "duplicate build"
        summary["pairs"] = aa_pairs
        return table, summary
    if design == Design.PAIRED:
        return pd.DataFrame(), {"ran": False, "kind": "duplicate build",
                                "note": "A/A check not run: a paired study checks its verdicts against a duplicate "
                                        "build; add one with --aa VARIANT (or [study] aa = [\"VARIANT\"])"}
    table, skipped = halves(spins, settings.aa_variants or (), settings, ops_order, level, priors, skip_ops, jobs)
    summary = summarize(table, "each listed variant against itself: even vs odd job_index jobs (independent "
                               "processes, as the separate design's groups), analysed as the comparisons and "
                               "printed at the family's level; a faster/slower verdict is false")
    summary.update(kind="job halves", variants=list(settings.aa_variants or ()))
    if skipped:
        summary["skipped" if len(table) else "note"] = skipped if len(table) else "A/A check not run: " + "; ".join(skipped)
    return table, summary
