"""What code layout does to a study: the layout variance component of each group, and the check on
comparisons of identical code.

Layout component. With randomized layouts (run/layouts.py) each job times N copies of every build,
spins alternating between them, at the same moments: the spread of one job's copy medians is the
layout's effect plus the copy medians' sampling error. By the method of moments on log copy
medians m_jl (job j, copy l) with sampling variances se²_jl:

    layout_var = max(0, mean_j [ var_l(m_jl) - mean_l se²_jl ])

`layout_sd` = sqrt(layout_var) (log scale, ~ a relative SD), `layout_share` = layout_var over
layout_var + the job-to-job variance of the job values: how much of what the intervals cover
comes from where the linker put the code. A point estimate, like icc (no interval is claimed).

Identical code. Comparisons whose two builds run the same instructions for the op (verify/codehash.py:
the same normalized instructions in the op's call tree) have a true speedup of 1 up to layout; their
verdicts are a calibration check of the whole method, never an answer (a verdict always comes from
the timings).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..errors import command
from .. import metrics as metrics_mod
from ..stats.layout import WIDTH_SLACK, zero_miss_bound

COPIES_CAP = 16  # the most copies per job the study is asked for: each copy is relinked, gated and held open


def copies_record(comparisons: pd.DataFrame, per_job: int | None, directory=None, jobs: int | None = None) -> dict:
    """How many copies per job the study's laid-out comparisons ask for (copies_needed), against what
    it ran and the cap: the 90th percentile over its csign rows, capped; rows that need more than it
    ran, more than the cap. The note's commands work on the study they are about (`directory`): its
    plan fixed the copies per job, so more copies are a new directory's, more jobs (`jobs` now) its own."""
    rows = comparisons[(comparisons.get("method") == "csign")] if len(comparisons) and "method" in comparisons else \
        comparisons.iloc[:0]
    need = rows["copies_needed"].to_numpy(dtype=float) if "copies_needed" in rows else np.zeros(0)
    need = need[np.isfinite(need) & (need > 0)]
    if not need.size:
        return {}
    rec = int(min(COPIES_CAP, math.ceil(float(np.quantile(need, 0.9)))))
    have = int(per_job or 0)
    out = {"per_job": have, "recommended": rec, "cap": COPIES_CAP, "rows": int(need.size),
           "median_needed": float(np.median(need)), "rows_short": int((need > have).sum()),
           "rows_beyond_cap": int((need > COPIES_CAP).sum()),
           "rule": (f"per comparison, the fewest copies per job L whose layout share of a job's variance (layout / L) "
                    f"keeps its interval within {WIDTH_SLACK - 1:.0%} of the width infinitely many copies would give "
                    f"(method of moments on the copy pairs: layout variance within jobs net of the copies' sampling "
                    f"error, the rest between jobs; a job's spins are shared by its copies, so only the layout's "
                    f"share falls with L); recommended: the 90th percentile over the comparisons, at most "
                    f"{COPIES_CAP} (each copy is relinked, gated and held open by its job)")}
    here = directory if directory is not None else "DIR"
    more_jobs = (command("run", here, "--jobs", 2 * int(jobs)) if jobs else
                 f"{command('run', here, '--jobs', 'N')} with N above its jobs per group")
    if rec > have:
        out["note"] = (f"{out['rows_short']} of {out['rows']} laid-out comparisons would need more copies per job than "
                       f"the study's {have}, which its plan fixed: {command('run', 'NEW_DIR', '--like', here, '--layouts', rec)} (a "
                       f"new directory with this study's other settings) gives them; {more_jobs} narrows them here")
    if out["rows_beyond_cap"]:
        out["note"] = (out.get("note", "") + ("; " if out.get("note") else "") +
                       f"{out['rows_beyond_cap']} need more than the cap of {COPIES_CAP}: the study cannot afford "
                       f"enough copies for them (their layout spread dwarfs the job-to-job spread); more jobs narrow "
                       f"them ({more_jobs})")
    return out


def layout_component(group) -> dict:
    nan = float("nan")
    out = {"n_layouts": 0, "layout_sd": nan, "layout_share": nan}
    if group.layout is None or group.deterministic or not group.positive:
        return out
    lay = np.asarray(group.layout)
    out["n_layouts"] = int(len({(int(j), int(c)) for j, c in zip(group.job, lay) if c >= 0}))
    if not group.laid_out:
        return out
    from ..stats.pooled import copy_medians

    excess, job_values = [], []
    for meds, se2, _ in copy_medians(group.log_values, group.job, lay):
        job_values.append(meds.mean())
        if meds.size >= 2:
            excess.append(meds.var(ddof=1) - se2.mean())
    if not excess:
        return out
    lv = max(0.0, float(np.mean(excess)))
    jv = float(np.var(job_values, ddof=1)) if len(job_values) > 1 else nan
    out["layout_sd"] = math.sqrt(lv)
    out["layout_share"] = lv / (lv + jv) if np.isfinite(jv) and lv + jv > 0 else nan
    return out


def identical_code(comparisons: pd.DataFrame, code: dict[tuple[str, str, str, str], str]) -> pd.Series:  # (older callers)
    """Per comparison row: both builds run the same instructions for the op (code: (variant, compiler,
    scheme, op) -> hash of the op's normalized call tree, from the gate records)."""
    if not len(comparisons) or not code:
        return pd.Series(False, index=comparisons.index)

    def same(r) -> bool:
        a = code.get((r["baseline"], r["baseline_compiler"], r["scheme"], r["op"]))
        b = code.get((r["variant"], r["compiler"], r["scheme"], r["op"]))
        return a is not None and a == b

    return comparisons.apply(same, axis=1).astype(bool)


HOW = ("same instructions", "commuted operands", "equal instruction counts")


def identical_code_how(comparisons: pd.DataFrame, code: dict, commuted: dict | None = None,
                       counts: dict | None = None) -> pd.Series:
    """Per comparison row, why both builds run the same code for the op, or "": `same instructions`
    (the gate's hashes of the normalized call trees agree), `commuted operands` (they agree up to
    commuted operands, verify/codehash.commuted), `equal instruction counts` (neither hash is
    recorded, and the study's exact instruction counts per call agree: the same work, not proven the
    same code). code, commuted: (variant, compiler, scheme, op) -> hash; counts: -> instructions."""
    if not len(comparisons):
        return pd.Series("", index=comparisons.index, dtype=object)
    commuted, counts = commuted or {}, counts or {}

    def how(r) -> str:
        kb = (r["baseline"], r["baseline_compiler"], r["scheme"], r["op"])
        kv = (r["variant"], r["compiler"], r["scheme"], r["op"])
        a, b = code.get(kb), code.get(kv)
        if a is not None and a == b:
            return HOW[0]
        ca, cb = commuted.get(kb), commuted.get(kv)
        if ca is not None and ca == cb:
            return HOW[1]
        if a is None and b is None and kb in counts and counts.get(kb) == counts.get(kv):
            return HOW[2]
        return ""

    return comparisons.apply(how, axis=1).astype(object)


def identical_code_check(comparisons: pd.DataFrame, gamma: float) -> dict:
    """The calibration check: of n timed comparisons of identical code, how many got a faster/slower
    verdict, against what the family's level allows (each such verdict is a miss of its interval:
    at most about gamma x n are expected), and the check's size: how many rows by which rule, the
    miss rate that n rows without a false verdict still allow, and how many rows it would take to
    test the family's level (n with (1 - 0.95)^(1/n) <= gamma... i.e. zero misses in n rows ruling
    out a miss rate above gamma at 95%)."""
    rows = comparisons[comparisons["identical_code"] & (comparisons["metric"] == metrics_mod.TIME)] \
        if "identical_code" in comparisons else comparisons.iloc[:0]
    wrong = rows[rows["verdict"].isin(["faster", "slower"])]
    how = rows["identical_code_how"].value_counts().to_dict() if "identical_code_how" in rows else {}
    n = int(len(rows))
    need = int(np.ceil(np.log(0.05) / np.log(1.0 - gamma))) if 0 < gamma < 1 else 0
    return {
        "n": n,
        "by": {str(k): int(v) for k, v in how.items()},
        "verdicts": int(len(wrong)),
        "expected_at_most": round(float(gamma) * len(rows), 2),
        "miss_rate_bound": round(zero_miss_bound(n), 4),
        "rows_to_test_level": need,
        "can_test_level": bool(n >= need and need > 0),
        "rows": [f"{r.scheme} {r.op} {r.baseline} → {r.variant} ({r.compiler}): {r.verdict} {r.speedup:.3f}×"
                 for r in wrong.itertuples()],
    }
