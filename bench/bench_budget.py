"""The standard budget: are budget-bound ops' intervals wider than those of ops that reach the spin cap,
and would a larger budget narrow them? (issue 45)

    .venv/bin/python bench/bench_budget.py [STUDY ...]

Each STUDY is an analysed paired study (results/spins.parquet, comparisons.parquet, sizing.json,
study.toml); default: every folder of /work/shared/studies that has results/spins.parquet. Nothing is
measured: it reads what the studies kept.

1. Classes. A (scheme, op) is *budget-bound* when the median over its builds and jobs of the spins a
   job timed is below the study's spin cap (study.toml `spins`), else *capped*. Budget-bound ops also
   got fewer reps per spin (run/sizing.py shrinks R with S); the reps are listed.
2. Widths. The log width log(ci_high / ci_low) of every ticks comparison, median and IQR per class:
   as printed (at the study's own family level), and recomputed at one level, 95%, from spins.parquet
   with the analysis' own groups (analyze/groups.build_groups) and evidence (stats/interval.Evidence:
   sign, or csign where the study timed laid-out copies), so levels do not confound. The recomputed
   intervals are not widened by the clock's resolution (res, at most ~1e-3 on these studies' long ops).
3. Plasmode. The same 95% intervals from each job's first k spins only: for capped ops k = 25% and
   50% of the cap, the budget-bound ops' median spin count B, and all (100%); for budget-bound ops
   half of each job's spins and all. "width / full" is each comparison's width over its own width
   with every spin, median over the class. Spins, not reps, are cut: a budget that binds shrinks both,
   and a spin's median over fewer reps is noisier, so cutting spins alone understates what a smaller
   budget loses (and what a larger one gains) only by the reps' part.
   Beside it, with every spin: per comparison the between-job SD of the job log ratios (and a robust
   one, 1.4826 MAD) and the within-job SE of one job's log ratio, sqrt(se_base^2 + se_var^2) from each
   job median's distribution-free SE (stats/pooled.median_se, the analysis' within_var). SE / SD near 0:
   the jobs set the width, more spins cannot narrow it; near 1: the spins do. "at the cap" predicts the
   width if the op's spins grew to the cap: sqrt(SD^2 - SE^2 (1 - S/cap)) / SD ("x reps": the SE also
   shrinking with the reps, a bound). "fitted to the halving" does not trust the SE: it fits
   width^2 = tau^2 + c / S to the class's median width ratio at half and all spins (the plasmode) and
   reads it at the cap.
4. Cost. The timed time of a job and op, sum over its builds and spins of value x n_reps x batch (per
   call x calls), over the TSC rate (sizing.json): per study, and as it would be with the budget-bound
   ops at the cap (their spins x reps scaled to cap spins x cap reps), or with a doubled budget.

Prints Markdown tables; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from pqsimd.analyze.groups import Group, build_groups  # noqa: E402
from pqsimd.analyze.compare import copy_log_ratios, job_log_ratios  # noqa: E402
from pqsimd.stats.interval import Evidence  # noqa: E402
from mdtable import md  # noqa: E402

STUDIES = Path("/work/shared/studies")
GAMMA = 0.05


def machine_of(study: Path) -> str:
    """The study's machine as its manifest recorded it (CPU, family and model; the studies' README names
    the microarchitecture)."""
    m = json.loads((study / "manifest.json").read_text()).get("machine") or {}
    return f"{m.get('cpu_model', '?')}, family {m.get('cpu_family', '?')} model {m.get('cpu_model_number', '?')}"


def load(study: Path) -> dict:
    st = tomllib.loads((study / "study.toml").read_text())["study"]
    sizing = json.loads((study / "sizing.json").read_text())["schemes"]
    sp = pd.read_parquet(study / "results" / "spins.parquet")
    sp = sp[sp["metric"].astype(str) == "ticks"].copy()
    for c in ("metric", "scheme", "variant", "compiler", "op", "job"):
        sp[c] = sp[c].astype(str).astype("category")
    comps = pd.read_parquet(study / "results" / "comparisons.parquet")
    comps = comps[(comps["metric"] == "ticks") & (comps["design"] == "paired")].reset_index(drop=True)
    return {"study": study, "cap": int(st["spins"]), "cap_reps": int(st["reps"]), "budget": float(st.get("budget", math.nan)),
            "tsc_hz": {s: float(v["tsc_hz"]) for s, v in sizing.items()}, "spins": sp, "comps": comps}


def classify(sp: pd.DataFrame, cap: int) -> pd.DataFrame:
    """Per (scheme, op): median spins per job over its builds and jobs, median reps, and the class."""
    per = sp.groupby(["scheme", "op", "variant", "job"], observed=True).agg(n=("value", "size"), reps=("n_reps", "median"))
    out = per.groupby(["scheme", "op"], observed=True).agg(spins=("n", "median"), reps=("reps", "median")).reset_index()
    out["cls"] = np.where(out["spins"] < cap, "budget-bound", "capped")
    return out


def first_spins(g: Group, keep_of) -> Group:
    """The group as if each job had timed only its first keep_of(n_j) spins (values are job-major, in
    spin order within a job); keep_of None: the later half of each job's spins instead (the same count
    as the first half, from later in the job: whether the first spins differ, not only their number)."""
    start = np.r_[0, np.flatnonzero(np.diff(g.job)) + 1]
    n = np.diff(np.r_[start, g.job.size])
    rank = np.arange(g.job.size) - np.repeat(start, n)
    if keep_of is None:
        rows = rank >= np.repeat(n - np.ceil(0.5 * n).astype(int), n)
    else:
        k = np.array([max(1, min(int(m), int(keep_of(int(m))))) for m in n])
        rows = rank < np.repeat(k, n)
    if rows.all():
        return g
    cut = {f: getattr(g, f)[rows] for f in ("pos", "layout", "prev") if getattr(g, f) is not None}
    return Group(metric=g.metric, scheme=g.scheme, op=g.op, variant=g.variant, compiler=g.compiler,
                 values=g.values[rows], job=g.job[rows], spin=g.spin[rows], job_ids=list(g.job_ids),
                 n_reps=g.n_reps, **cut)


def evidence(base: Group, var: Group) -> Evidence | None:
    cl = copy_log_ratios(base, var)
    if cl is not None:
        return Evidence.csign(cl)
    jl = job_log_ratios(base, var)
    return Evidence.sign(jl[1]) if jl is not None else None


def width95(base: Group, var: Group) -> float:
    ev = evidence(base, var)
    if ev is None or ev.kind not in ("sign", "csign"):
        return math.nan
    iv = ev.interval(GAMMA)
    return float(iv.hi - iv.lo) if iv.reachable else math.nan


def spread(base: Group, var: Group) -> tuple[float, float, float]:
    """(between-job SD, robust SD, within-job SE of one job's log ratio) of a paired comparison."""
    ev = evidence(base, var)
    x = ev.logs if ev is not None else np.zeros(0)
    if x.size < 3:
        return math.nan, math.nan, math.nan
    lv = dict(zip(var.job_ids, var.summary.within_var))
    wb = base.summary.within_var + np.array([lv[j] for j in base.job_ids])
    return (float(np.std(x, ddof=1)), 1.4826 * float(np.median(np.abs(x - np.median(x)))),
            float(math.sqrt(np.median(wb))))


def q(x, p: float) -> float:
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    return float(np.quantile(x, p)) if x.size else math.nan


def iqr(x) -> str:
    return f"{q(x, 0.25):.4f} – {q(x, 0.75):.4f}"


def analyse(d: dict) -> dict:
    sp, cap, comps = d["spins"], d["cap"], d["comps"]
    cls = classify(sp, cap)
    cmap = {(r.scheme, r.op): r.cls for r in cls.itertuples()}
    bound_spins = cls.loc[cls["cls"] == "budget-bound", "spins"]
    B = int(round(bound_spins.median())) if bound_spins.size else cap
    groups = build_groups(sp)
    comps = comps.assign(cls=[cmap.get((r.scheme, r.op), "?") for r in comps.itertuples()])
    comps["printed"] = np.log(comps["ci_high"] / comps["ci_low"])
    conds = {"capped": [("25% of cap", lambda m: math.ceil(0.25 * cap)), ("50% of cap", lambda m: math.ceil(0.5 * cap)),
                        (f"B = {B} (budget-bound median)", lambda m: B), ("100%", lambda m: m)],
             "budget-bound": [("50% of own", lambda m: math.ceil(0.5 * m)), ("50% of own, the later half", None),
                              ("100%", lambda m: m)]}
    cut_cache: dict = {}

    def cut(key, label, fn) -> Group:
        if (key, label) not in cut_cache:
            cut_cache[(key, label)] = first_spins(groups[key], fn)
        return cut_cache[(key, label)]

    rows, sprd, kinds = [], [], {}
    for r in comps.itertuples():
        kb = ("ticks", r.scheme, r.op, r.baseline, r.baseline_compiler)
        kv = ("ticks", r.scheme, r.op, r.variant, r.compiler)
        if kb not in groups or kv not in groups or r.cls == "?":
            continue
        for label, fn in conds[r.cls]:
            b, v = cut(kb, label, fn), cut(kv, label, fn)
            rows.append({"cls": r.cls, "cond": label, "row": r.Index, "w": width95(b, v),
                         "spins": float(np.median(np.bincount(b.job)))})
        ev = evidence(groups[kb], groups[kv])
        kinds[r.Index] = ev.kind if ev is not None else "none"
        sd, rsd, se = spread(groups[kb], groups[kv])
        # the within-job variance scales as 1 / spins (and at best as 1 / (spins x reps)) at the cap
        f_s = float(np.median(np.bincount(groups[kb].job))) / cap
        f_sr = f_s * min(groups[kb].n_reps, groups[kv].n_reps) / d["cap_reps"]
        pred = [math.sqrt(max(sd**2 - se**2 * (1 - f), 0.0)) / sd if sd > 0 else math.nan for f in (f_s, f_sr)]
        sprd.append({"cls": r.cls, "sd": sd, "rsd": rsd, "se": se, "pred": pred[0], "pred_sr": pred[1]})
    pl = pd.DataFrame(rows)
    full = pl[pl["cond"] == "100%"].set_index("row")["w"]
    pl["rel"] = pl["w"] / pl["row"].map(full)
    comps["recomputed"] = comps.index.map(full)
    comps["kind"] = comps.index.map(pd.Series(kinds))
    return {"cls": cls, "B": B, "comps": comps, "plasmode": pl, "spread": pd.DataFrame(sprd)}


def cost(d: dict, cls: pd.DataFrame) -> dict:
    """Timed seconds (value x n_reps x batch / TSC rate) now, with the budget-bound ops at the cap, and
    with a doubled budget (each budget-bound (job, op) twice its time, at most its time at the cap)."""
    sp, cap, cap_reps = d["spins"], d["cap"], d["cap_reps"]
    hz = sp["scheme"].astype(str).map(d["tsc_hz"]).to_numpy()
    t = sp["value"].to_numpy() * sp["n_reps"].to_numpy() * sp["batch"].to_numpy() / hz
    per = (sp.assign(t=t).groupby(["scheme", "op", "job"], observed=True)
           .agg(t=("t", "sum"), spins=("spin", "nunique"), reps=("n_reps", "median")).reset_index())
    per = per.merge(cls[["scheme", "op", "cls"]], on=["scheme", "op"])
    bound = per["cls"] == "budget-bound"
    at_cap = np.where(bound, per["t"] * (cap * cap_reps) / (per["spins"] * per["reps"]), per["t"])
    doubled = np.where(bound, np.minimum(2 * per["t"], at_cap), per["t"])
    return {"now": float(per["t"].sum()), "bound_now": float(per.loc[bound, "t"].sum()),
            "at_cap": float(at_cap.sum()), "doubled": float(doubled.sum()),
            "bound_job_op": float(per.loc[bound, "t"].median()) if bound.any() else math.nan,
            "bound_job_op_cap": float(np.median(at_cap[bound])) if bound.any() else math.nan}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("studies", nargs="*", type=Path)
    a = ap.parse_args()
    studies = a.studies or sorted(p.parent.parent for p in STUDIES.glob("*/results/spins.parquet"))
    t0 = time.perf_counter()
    t_cls, t_w, t_pl, t_sd, t_cost = [], [], [], [], []
    for s in studies:
        d = load(s)
        r = analyse(d)
        cls, comps, pl, sd = r["cls"], r["comps"], r["plasmode"], r["spread"]
        name, bb = s.name, cls[cls["cls"] == "budget-bound"]
        t_cls.append({"study": name, "machine": machine_of(s), "budget (s)": d["budget"], "cap": d["cap"],
                      "budget-bound (scheme, op)": f"{len(bb)} of {len(cls)}",
                      "their spins: median [range]": f"{bb['spins'].median():.0f} [{bb['spins'].min():.0f}–{bb['spins'].max():.0f}]" if len(bb) else "–",
                      "their reps": f"{bb['reps'].median():.0f} [{bb['reps'].min():.0f}–{bb['reps'].max():.0f}]" if len(bb) else "–",
                      "ops": ", ".join(sorted(bb["op"].astype(str).unique()))})
        for c in ("budget-bound", "capped"):
            x = comps[comps["cls"] == c]
            t_w.append({"study": name, "class": c, "comparisons": len(x),
                        "printed level": ", ".join(f"{v:.2%}" for v in sorted(x["ci_level"].unique())) + f" ({'/'.join(sorted(x['method'].unique()))})",
                        "recomputed": "/".join(sorted(x["kind"].unique())),
                        "printed: median log width": q(x["printed"], 0.5), "printed IQR": iqr(x["printed"]),
                        "95%: median log width": q(x["recomputed"], 0.5), "95% IQR": iqr(x["recomputed"])})
            for cond, y in pl[pl["cls"] == c].groupby("cond", sort=False):
                t_pl.append({"study": name, "class": c, "spins kept": cond, "spins per job (median)": f"{q(y['spins'], 0.5):.0f}",
                             "median log width": q(y["w"], 0.5), "IQR": iqr(y["w"]), "width / full (median)": q(y["rel"], 0.5),
                             "width / full (IQR)": iqr(y["rel"])})
            z = sd[sd["cls"] == c]
            fit = math.nan
            if c == "budget-bound":
                r2 = q(pl.loc[(pl["cls"] == c) & (pl["cond"] == "50% of own"), "rel"], 0.5) ** 2
                a_ = min(max((r2 - 1) / (2 - r2), 0.0), 1e6) if r2 < 2 else 1e6  # c / (tau^2 S)
                s_ratio = d["cap"] / q(pl.loc[(pl["cls"] == c) & (pl["cond"] == "100%"), "spins"], 0.5)
                fit = math.sqrt((1 + a_ / s_ratio) / (1 + a_))
            t_sd.append({"study": name, "class": c, "between-job SD": q(z["sd"], 0.5), "robust SD": q(z["rsd"], 0.5),
                         "within-job SE": q(z["se"], 0.5), "SE / SD": q(z["se"] / z["sd"], 0.5),
                         "SE / robust SD": q(z["se"] / z["rsd"], 0.5),
                         "width at cap spins / now": q(z["pred"], 0.5) if c == "budget-bound" else math.nan,
                         "width at cap spins x reps / now (bound)": q(z["pred_sr"], 0.5) if c == "budget-bound" else math.nan,
                         "at the cap / now, fitted to the halving": fit})
        ratio = q(comps.loc[comps["cls"] == "budget-bound", "recomputed"], 0.5) / q(comps.loc[comps["cls"] == "capped", "recomputed"], 0.5)
        t_w.append({"study": name, "class": "budget-bound / capped", "comparisons": len(comps),
                    "printed level": "", "recomputed": "", "printed: median log width":
                    q(comps.loc[comps["cls"] == "budget-bound", "printed"], 0.5) / q(comps.loc[comps["cls"] == "capped", "printed"], 0.5),
                    "printed IQR": "", "95%: median log width": ratio, "95% IQR": ""})
        c = cost(d, cls)
        t_cost.append({"study": name, "budget (s)": d["budget"], "timed now (s)": c["now"],
                       "of it budget-bound": c["bound_now"], "budget-bound (job, op) now, median (s)": c["bound_job_op"],
                       "at the cap (s)": c["bound_job_op_cap"], "study with budget-bound at the cap (s)": c["at_cap"],
                       "extra": f"+{c['at_cap'] / c['now'] - 1:.0%}", "study at twice the budget (s)": c["doubled"],
                       "extra at 2x": f"+{c['doubled'] / c['now'] - 1:.0%}"})
    pd.set_option("display.width", 200)
    print("\n## budget-bound and capped ops\n")
    print(md(pd.DataFrame(t_cls), ".2f"))
    print("\n## log interval widths log(ci_high / ci_low) by class: printed, and recomputed at 95%\n")
    print(md(pd.DataFrame(t_w), ".4f"))
    print("\n## plasmode: 95% intervals from each job's first k spins\n")
    print(md(pd.DataFrame(t_pl), ".4f"))
    print("\n## what sets the width: between-job SD of the job log ratios vs within-job SE of one job's log ratio\n")
    print(md(pd.DataFrame(t_sd), ".4f"))
    print("\n## cost: timed seconds (value x n_reps x batch / TSC rate), all jobs of the study\n")
    print(md(pd.DataFrame(t_cost), ".1f"))
    print(f"\n({len(studies)} studies in {time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
