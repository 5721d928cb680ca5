"""The records summary.json holds beside the tables (warm-up, self-check, layout, regimes, shared CPU,
clock), and the columns results/jobs takes from each job's raw record."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import PqsimdError
from ..model import UNRECORDED_LAYOUT, Design, LayoutMode
from ..results import moves_text
from ..studydir import StudyDir
from . import jobs as jobs_mod
from .compare import without_record
from .context import read_json_file
from .. import metrics as metrics_mod


def warmup_record(directory: Path, design: str) -> dict:
    """The warm-up the study ran with, from its plan: warm-up spins per op (dropped before analysis)
    and, in the paired design, how long each build is run untimed before its turn in every spin."""
    plan = read_json_file(StudyDir(directory).plan_json)
    st = plan.get("settings") or {}
    sized = read_json_file(StudyDir(directory).sizing_json) if st.get("budget") else {}
    spins = [o.get("warmup") for s in (sized.get("schemes") or {}).values() if isinstance(s, dict)
             for o in (s.get("ops") or {}).values() if isinstance(o, dict) and "warmup" in o]
    nowarm = sorted({op for s in (sized.get("schemes") or {}).values() if isinstance(s, dict)
                     for op, o in (s.get("ops") or {}).items() if isinstance(o, dict) and o.get("nowarm")})
    return {"design": design, "warmup_spins": st.get("warmup"), "nowarm_ops": nowarm,
            "warmup_spins_sized": [min(spins), max(spins)] if spins else None,
            "warmup_ns": st.get("warmup_ns", 0) if design == Design.PAIRED else 0}


def budget_record(directory: Path) -> dict:
    """Which ops the study's time budget sized below the spins x reps it asked for (sizing.json against the
    plan's settings): their intervals rest on fewer samples than the capped ops' (issue 45)."""
    st = read_json_file(StudyDir(directory).plan_json).get("settings") or {}
    if not st.get("budget") or not isinstance(st.get("spins"), int) or not isinstance(st.get("reps"), int):
        return {"budget_s": st.get("budget") or None, "cut": 0}
    sized = read_json_file(StudyDir(directory).sizing_json)
    asked = st["spins"] * st["reps"]
    shares: dict[str, float] = {}
    for s in (sized.get("schemes") or {}).values():
        for op, o in ((s.get("ops") or {}).items() if isinstance(s, dict) else ()):
            if isinstance(o, dict) and isinstance(o.get("spins"), int) and isinstance(o.get("reps"), int):
                share = o["spins"] * o["reps"] / asked
                if share < 1:
                    shares[op] = min(share, shares.get(op, 1.0))
    return {"budget_s": st["budget"], "spins": st["spins"], "reps": st["reps"], "cut": len(shares),
            "ops": sorted(shares), "least_share": min(shares.values()) if shares else None}


SELF_CHECK_TOLERANCE_TICKS = 1.0  # the engine's acceptance for the empty op: 0 +- 1 tick per call


def stepped_record(directory: Path) -> list[dict]:
    """The builds whose instructions were counted by single-stepping them natively (run/stepcount.py: a build
    valgrind cannot run, AVX-512), from the instructions job records: scheme, variant, compiler and valgrind's
    reason. Captions and explain name the counter per build from it."""
    out = []
    for rec in StudyDir(directory).job_records().values():
        if isinstance(rec, dict) and rec.get("metric") == metrics_mod.COUNT and rec.get("backend") == "ptrace-step":
            out.append({"scheme": rec.get("scheme"), "variant": rec.get("variant"), "compiler": rec.get("compiler"),
                        "because": str(rec.get("stepped_because") or "")})
    return sorted(out, key=lambda r: (str(r["scheme"]), str(r["variant"]), str(r["compiler"])))


def self_check_record(groups: pd.DataFrame, self_checks: set[str]) -> dict:
    """What the families' self-check ops (empty functions) read per call in ticks: the call cost the
    harness's loop calibration did not remove. Every timed op carries about that much, so an op of
    T ticks is biased by about reading / T."""
    g = groups[(groups["metric"] == metrics_mod.TIME) & groups["op"].isin(self_checks)] if len(groups) else groups
    if not len(g):
        return {"groups": 0}
    med = g["median"].to_numpy(dtype=float)
    worst = float(med[np.argmax(np.abs(med))])
    return {"ops": sorted(set(g["op"])), "groups": int(len(g)), "min": float(med.min()), "max": float(med.max()),
            "tolerance": SELF_CHECK_TOLERANCE_TICKS, "outside": int((np.abs(med) > SELF_CHECK_TOLERANCE_TICKS).sum()),
            "worst": worst}


def layout_record(directory: Path, laid: pd.DataFrame) -> dict:
    """How the study laid out its code, and how much layout moved its groups."""
    try:
        plan = StudyDir(directory).read_plan() or {}
    except PqsimdError:  # a study without a job plan (results mailed in): its layout is not known
        plan = {}
    st = plan.get("settings") or {}
    mode = st.get("layout", UNRECORDED_LAYOUT)
    rec = {"mode": mode, "copies_per_job": int(plan.get("copies_per_job") or 1),
           "groups_with_layouts": int(len(laid))}
    sd_ = laid["layout_sd"].dropna() if len(laid) else pd.Series(dtype=float)
    if len(sd_):
        rec.update(median_layout_sd=float(sd_.median()), max_layout_sd=float(sd_.max()),
                   groups_above_1pct=int((sd_ > 0.01).sum()))
    if mode != LayoutMode.RANDOM:
        rec["note"] = ("layout fixed: every job loaded the builds as linked, so verdicts are conditional on that one "
                       "layout (a difference of where the code sits is not covered by the intervals)")
    return rec


JOB_RECORD_COLUMNS = ("step", "step_calibrated", "step_data")  # from each job's raw file (load.py)


def with_job_records(jobs_table: pd.DataFrame, jobs: pd.DataFrame) -> pd.DataFrame:
    """results/jobs (with a row for every timing job: with_cpu_share) with what each job's raw file
    recorded of its clock: the step its resolution uses, its calibration's and its samples' lattice."""
    have = [c for c in JOB_RECORD_COLUMNS if c in jobs.columns]
    if not len(jobs_table) or not have:
        return jobs_table
    return jobs_table.merge(jobs.drop_duplicates("job")[["job", *have]], on="job", how="left")


def regimes_record(main: pd.DataFrame) -> dict:
    """The regime check's counts: comparisons the dip test tested, the job-state test's candidates,
    flagged (by which test), and the verdicts with and without the minority's jobs."""
    if not len(main):
        return {"tested": 0, "candidates": 0, "flagged": 0}
    note = main["note"].fillna("").astype(str)
    flagged = main["regimes"].astype(bool)
    return {"tested": int(np.isfinite(main["regime_dip_p"].to_numpy(dtype=float)).sum()),
            "candidates": int(np.isfinite(main["regime_p"].to_numpy(dtype=float)).sum()),
            "flagged": int(flagged.sum()),
            "by_job_state": int((flagged & note.str.contains("the job-state test", regex=False)).sum()),
            "by_dip": int((flagged & note.str.contains("the dip test", regex=False)).sum()),
            "without_minority": without_record(main, "minority")}


def shared_cpu_jobs(jobs: pd.DataFrame) -> frozenset[str]:
    """The timing jobs whose driver shared its CPU with another program (kept by --shared-cpu keep)."""
    if not len(jobs) or "shared_cpu" not in jobs.columns:
        return frozenset()
    return frozenset(str(j) for j in jobs.loc[jobs["shared_cpu"].astype(bool), "job"])


def with_cpu_share(jobs_table: pd.DataFrame, jobs: pd.DataFrame) -> pd.DataFrame:
    """results/jobs with every timing job's shared_cpu and cpu_waited_fraction: the judged rows get
    theirs, and a timing job no row judged (too few jobs or comparisons) gets a row of its own."""
    cols = ["shared_cpu", "cpu_waited_fraction"]
    timing = jobs[jobs["metric_kind"] == metrics_mod.TIME] if len(jobs) and "metric_kind" in jobs.columns else jobs
    if not len(timing) or not set(cols) <= set(timing.columns):
        return jobs_table.assign(shared_cpu=False, cpu_waited_fraction=np.nan)
    share = timing.drop_duplicates("job").set_index("job")[cols]
    out = jobs_table.assign(shared_cpu=jobs_table["job"].map(share["shared_cpu"]).fillna(False).astype(bool),
                            cpu_waited_fraction=jobs_table["job"].map(share["cpu_waited_fraction"]))
    rest = timing[~timing["job"].isin(set(jobs_table["job"]))].drop_duplicates("job")
    if len(rest):
        extra = pd.DataFrame({"metric": "ticks", "scheme": rest["scheme"].to_numpy(), "unit": "",
                              "job": rest["job"].to_numpy(), "units": 0, "disturbed": False,
                              "note": "not judged (fewer than 3 jobs, or 3 comparisons or ops, to judge it by)",
                              "shared_cpu": rest["shared_cpu"].astype(bool).to_numpy(),
                              "cpu_waited_fraction": rest["cpu_waited_fraction"].to_numpy()})
        out = pd.concat([out, extra.reindex(columns=out.columns)], ignore_index=True) if len(out) else \
            extra.reindex(columns=[*jobs_mod.COLUMNS, *cols])
    return out.astype({"shared_cpu": bool, "disturbed": bool})


def shared_cpu_record(jobs: pd.DataFrame, groups_df: pd.DataFrame, main: pd.DataFrame,
                      threshold: float | None = None) -> dict:
    """summary.json shared_cpu: the timing jobs that shared their CPU and how long they waited, the
    groups and comparisons that use them, and the verdicts with and without them."""
    timing = jobs[jobs["metric_kind"] == metrics_mod.TIME] if len(jobs) and "metric_kind" in jobs.columns else jobs
    shared = timing[timing["shared_cpu"].astype(bool)] if "shared_cpu" in timing.columns else timing.iloc[:0]
    rec = {"jobs": int(shared["job"].nunique()), "timing_jobs": int(timing["job"].nunique()) if len(timing) else 0,
           "waited_fraction": {str(j): float(f) for j, f in zip(shared["job"], shared["cpu_waited_fraction"])}}
    if rec["jobs"]:
        uses = main["shared_cpu_jobs"].to_numpy(dtype=float) > 0 if len(main) else np.zeros(0, bool)
        rec.update(groups=int((groups_df["shared_cpu_jobs"] > 0).sum()), comparisons=int(uses.sum()),
                   without_shared=without_record(main, "shared", threshold=threshold))
    return rec


def shared_cpu_warning(rec: dict) -> str:
    """One line: which jobs shared their CPU, what uses them, how many verdicts change without them."""
    w = rec["without_shared"]
    jobs = ", ".join(f"{j} ({f:.0%})" for j, f in list(rec["waited_fraction"].items())[:4])
    more = f" and {rec['jobs'] - 4} more" if rec["jobs"] > 4 else ""
    return (f"shared CPU: {rec['jobs']} of {rec['timing_jobs']} timing jobs waited more than a quarter of their time "
            f"for their CPU (another program used it) and were kept: {jobs}{more} (share of the time waited); "
            f"{rec['groups']} group(s) and {rec['comparisons']} comparison(s) use them; without them "
            f"{w['verdicts_changed']} of {w['recomputed']} verdict(s) change{moves_text(w.get('estimates') if w.get('recomputed') else None, '; ')} "
            "(comparisons.csv without_shared_*, jobs.csv shared_cpu)")



def clock_record(jobs: pd.DataFrame, groups_df: pd.DataFrame, comparisons: pd.DataFrame) -> dict:
    """The clock the jobs read (name, step, --timer-quantum) and what its step did to the results:
    groups whose lattice step (step / calls per sample) is more than 0.1% of their median, the worst,
    and the comparisons whose interval the resolution sets (resolution_limited). The step is each
    job's as analyze used it (load._steps: its samples' lattice, else its calibration's), and the
    jobs whose calibration said otherwise are counted."""
    clocks: dict[str, int] = {}
    ticks_jobs = jobs[(jobs["metric_kind"] == metrics_mod.TIME) & np.isfinite(jobs["step"].to_numpy(dtype=float))] \
        if len(jobs) and {"metric_kind", "step"} <= set(jobs.columns) else jobs.iloc[0:0]
    for _, j in ticks_jobs.iterrows():
        key = f"{j['timer']} step {j['step']:g} ticks" + (
            f" (--timer-quantum {j['timer_quantum']})" if (j["timer_quantum"] or 0) > 1 else "")
        clocks[key] = clocks.get(key, 0) + 1
    steps = {}
    if len(ticks_jobs):
        cal_s, data_s = ticks_jobs["step_calibrated"].to_numpy(dtype=float), ticks_jobs["step_data"].to_numpy(dtype=float)
        steps = {"from_samples": int(np.isfinite(data_s).sum()), "jobs": int(len(ticks_jobs)),
                 "calibration_disagrees": int((np.isfinite(cal_s) & np.isfinite(data_s) & (cal_s != data_s)
                                               & (ticks_jobs["step"].to_numpy(dtype=float) == data_s)).sum()),
                 "calibrated": sorted({int(x) for x in cal_s[np.isfinite(cal_s)]}),
                 "samples": sorted({int(x) for x in data_s[np.isfinite(data_s)]})}
    rel = groups_df["resolution_rel"].to_numpy(dtype=float) if "resolution_rel" in groups_df else np.zeros(0)
    ticks = (groups_df["metric"] == metrics_mod.TIME).to_numpy() if len(groups_df) else np.zeros(0, bool)
    rel = np.where(ticks & np.isfinite(rel), rel, 0.0)
    worst = int(np.argmax(rel)) if rel.size else -1
    limited = comparisons["resolution_limited"].astype(bool) if len(comparisons) and \
        "resolution_limited" in comparisons else pd.Series(dtype=bool)
    return {
        "clocks": clocks,  # "name, step N[, --timer-quantum Q]" -> jobs
        "steps": steps,  # where each job's step came from: its samples' lattice, or its calibration
        "groups_over_0.1%": int((rel > 1e-3).sum()),
        "groups_over_1%": int((rel > 1e-2).sum()),
        "groups": int(ticks.sum()),
        "worst": {**{k: str(groups_df.iloc[worst][k]) for k in ("scheme", "op", "variant", "compiler")},
                  "resolution_rel": float(rel[worst])} if worst >= 0 and rel[worst] > 0 else None,
        "comparisons_resolution_limited": int(limited.sum()),
        "nonpositive_spins": int(groups_df["nonpositive_spins"].sum()) if "nonpositive_spins" in groups_df else 0,
    }
