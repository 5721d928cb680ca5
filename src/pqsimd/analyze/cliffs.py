"""Cliffs: laid-out copies of a build much slower than the rest of their group (issue 33).

With randomized layouts (run/layouts.py) every timing job times its own copies of each build; a group
(scheme, op, variant, compiler) then holds J × L copies, each with its median per call over its
spins. Most copies spread a little (the layout's ordinary effect, the job's state, the medians'
sampling error); a **cliff** is a copy far beyond that spread, e.g. 2 of 20 copies of one hand-written
op at 1.6× on a Zen 5 host (BENCHMARKS.md). What a job value and a comparison's interval make of such a copy is
stats/interval.py's business, not this module's: here each copy is shown, and cliffs are flagged,
re-timed and placed.

**The copy table** (`results/copies`): per copy its job, index, seed, stack offset, the op's offset,
spins, median per call, `norm` = median / the group's median of copy medians, `within_job` = its log
median minus the mean of its job's other copies (the job's own state cancels), the robust z of its
deviation, and `cliff`.

**The cliff rule** (`flag`): a copy is a cliff copy when all of
  1. it is slower than the group's typical copy by more than SIZE (and the clock's resolution):
     log norm > log(1 + SIZE) + res;
  2. it is slower than its own job's other copies by more than SIZE (so a slow job, a machine state
     that all of the job's copies share, is not a cliff): within_job > log(1 + SIZE) + res (skipped
     when the job has one copy, said in the group's note);
  3. it is an outlier of the group's copies: log norm > Z × s, s = 1.4826 × the MAD of the group's log
     copy medians (floored at FLOOR_SD: copies stuck on one clock step have MAD 0);
and the group has at least MIN_COPIES copies. Slow only: a copy faster than the rest is shown in the
table, never flagged. A group is flagged when it has a cliff copy. SIZE, Z and MIN_COPIES are the
rule's (stats/cliffs.py, with the re-timing's interval and verdicts); its false-flag rate on A/A
copies (every copy the same bytes and stack offset) and its power on the Zen 5 copies are measured in
bench/bench_cliffs.py (BENCHMARKS.md, "Cliffs").

**Re-timing** (`retime_table`, the `pqsimd cliffs DIR --retime` data in DIR/cliffs/): per flagged group
the worst copy W and a typical copy T relinked from their records and timed interleaved in fresh
driver processes, K of them per test; per process the ratio W/T of the copies' medians; the interval
is the t interval of the K log ratios (df K - 1) at LEVEL, widened by the clock's resolution;
`confirmed` when it lies above 1 + threshold, `refuted` when inside ±threshold, else `~`. Two tests:
`alone` (W and T only: the copy's own bytes and stack offset) and `context` (every copy of W's job, as
the job loaded them, with T added when it is not in that job). The cliff `belongs to` the copy when
alone confirms it, to its context when only the context confirms it, and is `not reproduced` when
neither does (the job's process: its random mappings and stack address, or the machine at the time).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..stats.cliffs import (FLOOR_SD, LEVEL, MIN_COPIES, SIZE, Z, belongs, process_log_ratios, retime_interval,
                            retime_verdict)

COPY_COLUMNS = ["metric", "scheme", "op", "variant", "compiler", "job", "job_index", "copy", "seed", "stack",
                "op_offset", "sha256", "n_spins", "median", "norm", "within_job", "robust_z", "cliff"]
GROUP_COLUMNS = ["metric", "scheme", "op", "variant", "compiler", "n_copies", "n_jobs", "norm_min", "norm_q10",
                 "norm_median", "norm_q90", "norm_max", "robust_sd", "worst_job", "worst_copy", "worst_seed",
                 "worst_norm", "worst_within_job", "worst_z", "cliff", "n_cliffs", "cliff_copies", "note"]


def copy_medians(group, job_layouts: dict[str, dict] | None = None, build: str | None = None) -> pd.DataFrame:
    """One row per laid-out copy of a group (analyze.groups.Group): its median per call over its spins
    (the median of its spin medians) and, from its job's layout record (job id -> the raw record's
    `layout`), its seed, stack offset, the op's offset and sha256."""
    rows = []
    if group.layout is None or not group.values.size:
        return pd.DataFrame(columns=COPY_COLUMNS)
    lay = np.asarray(group.layout)
    for j in np.unique(group.job):
        jid = group.job_ids[int(j)]
        rec = ((job_layouts or {}).get(jid) or {}).get("builds", {}).get(build or "", {}) if build else {}
        copies = {int(c.get("index", i)): c for i, c in enumerate(rec.get("copies", []))} if rec else {}
        in_job = group.job == j
        for c in np.unique(lay[in_job]):
            if c < 0:
                continue
            v = group.values[in_job & (lay == c)]
            meta = copies.get(int(c), {})
            off = ((meta.get("offsets") or {}).get(group.scheme) or {}).get(group.op)
            rows.append({"metric": group.metric, "scheme": group.scheme, "op": group.op, "variant": group.variant,
                         "compiler": group.compiler, "job": jid, "job_index": int(j), "copy": int(c),
                         "seed": meta.get("seed"), "stack": meta.get("stack"),
                         "op_offset": off, "sha256": meta.get("sha256"), "n_spins": int(v.size),
                         "median": float(np.median(v))})
    return pd.DataFrame(rows, columns=[c for c in COPY_COLUMNS if c not in ("norm", "within_job", "robust_z",
                                                                             "cliff")])


def flag(copies: pd.DataFrame, resolution_rel: float = 0.0, size: float = SIZE, z: float = Z,
         min_copies: int = MIN_COPIES) -> tuple[pd.DataFrame, dict]:
    """The rule on one group's copies (columns job, copy, median; as copy_medians). Returns the copies
    with norm, within_job, robust_z and cliff, and the group's row (GROUP_COLUMNS without the keys)."""
    out = copies.copy()
    nan = math.nan
    n = len(out)
    row = {"n_copies": n, "n_jobs": int(out["job"].nunique()) if n else 0, "cliff": False, "n_cliffs": 0,
           "cliff_copies": "", "note": ""}
    med = out["median"].to_numpy(dtype=float)
    if n == 0 or not np.all(med > 0):
        out["norm"], out["within_job"], out["robust_z"], out["cliff"] = nan, nan, nan, False
        row["note"] = "no copies" if n == 0 else "copy medians <= 0 (below the clock's resolution): not judged"
        return out, row
    lm = np.log(med)
    centre = float(np.median(lm))
    dev = lm - centre
    sd = max(1.4826 * float(np.median(np.abs(dev - np.median(dev)))), FLOOR_SD)
    within = np.full(n, nan)
    jobs = out["job"].to_numpy()
    for jid in np.unique(jobs):
        idx = np.flatnonzero(jobs == jid)
        if idx.size < 2:
            continue
        for i in idx:
            others = lm[idx[idx != i]]
            within[i] = lm[i] - others.mean()
    res = math.log1p(max(resolution_rel, 0.0)) if resolution_rel < 1 else math.inf
    band = math.log1p(size) + res
    cliff = (dev > band) & (dev > z * sd) & (np.isnan(within) | (within > band))
    if n < min_copies:
        cliff[:] = False
        row["note"] = f"{n} copies: fewer than {min_copies}, not judged"
    elif np.isnan(within).all():
        row["note"] = "one copy per job: the rule cannot compare a copy with its job's others"
    out["norm"] = np.exp(dev)
    out["within_job"] = within
    out["robust_z"] = dev / sd
    out["cliff"] = cliff
    norm = np.exp(dev)
    w = int(np.argmax(dev))
    row.update({"norm_min": float(norm.min()), "norm_q10": float(np.quantile(norm, 0.1)),
                "norm_median": float(np.median(norm)), "norm_q90": float(np.quantile(norm, 0.9)),
                "norm_max": float(norm.max()), "robust_sd": sd,
                "worst_job": out["job"].iloc[w], "worst_copy": int(out["copy"].iloc[w]),
                "worst_seed": out["seed"].iloc[w] if "seed" in out else None, "worst_norm": float(norm[w]),
                "worst_within_job": float(within[w]), "worst_z": float(dev[w] / sd),
                "cliff": bool(cliff.any()), "n_cliffs": int(cliff.sum()),
                "cliff_copies": "; ".join(_describe(r) for r in out[cliff].sort_values("norm", ascending=False)
                                          .itertuples())})
    return out, row


def _describe(r) -> str:
    seed = f" seed {int(r.seed)}" if getattr(r, "seed", None) is not None and pd.notna(r.seed) else ""
    stack = f" stack {int(r.stack)}" if getattr(r, "stack", None) is not None and pd.notna(r.stack) else ""
    return f"job {r.job} copy {int(r.copy)}{seed}{stack}: {r.norm:.2f}×"


def cliff_tables(groups: dict, job_layouts: dict[str, dict], build_of) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """(copies, cliffs, summary record) of a study's laid-out groups of timed metrics. `build_of(variant,
    compiler, scheme)` names a group's build (its key in the layout records)."""
    from .groups import EXACT_METRICS

    exact = set(EXACT_METRICS)
    all_copies, rows = [], []
    for key, g in groups.items():
        if g.metric in exact or not g.laid_out:
            continue
        cm = copy_medians(g, job_layouts, build_of(g.variant, g.compiler, g.scheme))
        flagged, row = flag(cm, g.resolution_rel)
        all_copies.append(flagged)
        rows.append(dict(zip(("metric", "scheme", "op", "variant", "compiler"), key)) | row)
    copies = pd.concat(all_copies, ignore_index=True) if all_copies else pd.DataFrame(columns=COPY_COLUMNS)
    cliffs = pd.DataFrame(rows, columns=GROUP_COLUMNS)
    return copies[[c for c in COPY_COLUMNS if c in copies.columns]], cliffs, summary(copies, cliffs)


def findings(copies: pd.DataFrame) -> list[dict]:
    """One finding per cliff copy (a copy is one layout of one build in one job, and moves every op it
    is slow in at once): the copy, and the groups it is a cliff of, worst first."""
    cl = copies[copies["cliff"].astype(bool)] if len(copies) else copies
    out = []
    for (scheme, variant, compiler, job, copy), g in cl.groupby(["scheme", "variant", "compiler", "job", "copy"],
                                                               sort=False):
        g = g.sort_values("norm", ascending=False)
        seed = g["seed"].iloc[0]
        out.append({"scheme": scheme, "variant": variant, "compiler": compiler, "job": job, "copy": int(copy),
                    "seed": int(seed) if pd.notna(seed) else None,
                    "stack": int(g["stack"].iloc[0]) if pd.notna(g["stack"].iloc[0]) else None,
                    "ops": {r.op: round(float(r.norm), 3) for r in g.itertuples()}})
    return sorted(out, key=lambda f: -max(f["ops"].values()))


def summary(copies: pd.DataFrame, cliffs: pd.DataFrame) -> dict:
    if not len(cliffs):
        return {"groups": 0}
    f = findings(copies)
    return {"groups": int(len(cliffs)), "judged": int((cliffs["note"] == "").sum() + cliffs["note"].str.startswith(
                "one copy").sum()),
            "flagged": int(cliffs["cliff"].sum()), "copies": int(len(copies)),
            "cliff_copies": int(copies["cliff"].sum()) if len(copies) else 0, "findings": f,
            "rule": rule_text()}


def rule_text(size: float = SIZE, z: float = Z, min_copies: int = MIN_COPIES) -> str:
    return (f"a copy is a cliff when it is > {size:.0%} slower than the group's median copy and than its own job's "
            f"other copies (each beyond the clock's resolution), and > {z:g} robust SDs (1.4826 × MAD of the group's "
            f"log copy medians, at least {FLOOR_SD:.1%}) above the median; groups of ≥ {min_copies} copies")


# --- re-timing -------------------------------------------------------------------------------------------

RETIME_COLUMNS = ["metric", "scheme", "op", "variant", "compiler", "test", "worst", "typical", "processes",
                  "ratio", "ci_low", "ci_high", "ci_level", "study_ratio", "verdict", "per_process", "note"]


# --- the re-timings' results (DIR/cliffs/<group>/, run/retime.py) ------------------------------------------

PLACEMENT_COLUMNS = ["metric", "scheme", "op", "variant", "compiler", "object", "kind", "size", "addr_worst",
                     "addr_typical", "mod64_worst", "mod64_typical", "mod4096_worst", "mod4096_typical",
                     "lines_worst", "lines_typical", "differs"]
SIM_COLUMNS = ["metric", "scheme", "op", "variant", "compiler", "event", "worst", "typical", "ratio", "differs",
               "source"]
SEARCH_COLUMNS = ["metric", "scheme", "op", "variant", "compiler", "step", "label", "differs_from_worst", "stack",
                  "objects_moved", "ratio", "ci_low", "ci_high", "ci_level", "state", "source"]


def retime_results(folder, threshold: float, level: float = LEVEL) -> dict[str, pd.DataFrame]:
    """Every re-timed group under DIR/cliffs/ → the tables results/cliff_retime (one row per test,
    and the cliff's place), cliff_placement (where W and T differ), cliff_sim (simulated events),
    cliff_search (the search's probes) and cliff_moved (what the search's last on/off layouts moved)."""
    import json
    from pathlib import Path

    folder = Path(folder)
    tables: dict[str, list] = {"cliff_retime": [], "cliff_placement": [], "cliff_sim": [], "cliff_search": [],
                               "cliff_moved": []}
    if not folder.is_dir():
        return {k: pd.DataFrame() for k in tables}
    for d in sorted(p for p in folder.iterdir() if p.is_dir() and (p / "target.json").exists()):
        try:
            t = json.loads((d / "target.json").read_text())
            spins = pd.read_parquet(d / "spins.parquet")
        except (OSError, ValueError):
            continue
        key = t["group"]
        verdicts = {}
        for test, ref_role, study_ratio in (("alone", "typical", t.get("study_ratio")),
                                            ("context", "partner", t.get("study_within_job"))):
            s = spins[spins["test"] == test]
            if not len(s):
                continue
            s = s[s["role"].isin(["worst", ref_role])]
            lr = process_log_ratios(s["process"], s["role"] == "worst", s["value"])
            ratio, lo, hi = retime_interval(lr, level=level)
            v = retime_verdict(lo, hi, threshold)
            verdicts[test] = v
            tables["cliff_retime"].append(key | {
                "test": test, "worst": f"job {t['worst']['job']} copy {t['worst']['copy']} seed {t['worst']['seed']}",
                "typical": (f"job {t['typical']['job']} copy {t['typical']['copy']} seed {t['typical']['seed']}"
                            if test == "alone" else "its job's other copies"),
                "processes": int(np.isfinite(lr).sum()), "ratio": ratio, "ci_low": lo, "ci_high": hi,
                "ci_level": level, "study_ratio": study_ratio, "verdict": v,
                "per_process": " ".join(f"{math.exp(x):.3f}" for x in lr if np.isfinite(x)),
                "note": "measured: fresh driver processes, the copies made again from their records (bytes as recorded)"})
        for row in tables["cliff_retime"]:
            if all(row[k] == key[k] for k in key):
                row["belongs"] = belongs(verdicts.get("alone", "~"), verdicts.get("context"))
        if (d / "placement.parquet").exists():
            pl = pd.read_parquet(d / "placement.parquet")
            w = pl[pl["role"] == "worst"].set_index(["object", "kind"])
            ty = pl[pl["role"] == "typical"].set_index(["object", "kind"])
            for (obj, kind) in list(dict.fromkeys([*w.index, *ty.index])):
                a = w.loc[(obj, kind)] if (obj, kind) in w.index else None
                b = ty.loc[(obj, kind)] if (obj, kind) in ty.index else None
                if isinstance(a, pd.DataFrame):
                    a = a.iloc[0]
                if isinstance(b, pd.DataFrame):
                    b = b.iloc[0]
                diff = "only in " + ("worst" if b is None else "typical") if a is None or b is None else \
                    ",".join(k for k in ("mod64", "mod4096", "page", "lines") if a[k] != b[k]) or "same"
                get = lambda r, k: (int(r[k]) if r is not None else None)  # noqa: E731
                tables["cliff_placement"].append(key | {
                    "object": obj, "kind": kind, "size": get(a if a is not None else b, "size"),  # not a metric: a placement column
                    "addr_worst": get(a, "addr"), "addr_typical": get(b, "addr"), "mod64_worst": get(a, "mod64"),
                    "mod64_typical": get(b, "mod64"), "mod4096_worst": get(a, "mod4096"),
                    "mod4096_typical": get(b, "mod4096"), "lines_worst": get(a, "lines"),
                    "lines_typical": get(b, "lines"), "differs": diff})
        if (d / "sim.parquet").exists():
            sim = pd.read_parquet(d / "sim.parquet")
            if len(sim):
                p = sim.pivot_table(index="event", columns="role", values="per_call", aggfunc="first")
                for ev, r in p.iterrows():
                    wv, tv = float(r.get("worst", math.nan)), float(r.get("typical", math.nan))
                    tables["cliff_sim"].append(key | {
                        "event": ev, "worst": wv, "typical": tv, "ratio": wv / tv if tv else math.nan,
                        "differs": bool(abs(wv - tv) > max(0.01 * max(abs(wv), abs(tv)), 0.5)),
                        "source": "simulated: callgrind " + str((t.get("sim") or {}).get("geometry", ""))[:80]})
        if (d / "search.parquet").exists():
            for r in pd.read_parquet(d / "search.parquet").to_dict("records"):
                tables["cliff_search"].append(key | {k: r.get(k) for k in SEARCH_COLUMNS if k in r} |
                                              {"ci_level": level, "source": "measured"})
        if (d / "moved.parquet").exists():
            for r in pd.read_parquet(d / "moved.parquet").to_dict("records"):
                tables["cliff_moved"].append(key | r)
    return {k: pd.DataFrame(v) for k, v in tables.items()}
