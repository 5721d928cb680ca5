"""The report's "why" parts, read from results/ (analyze computes them): the simulated hardware
counter breakdown (results/sim: per family a table and a figure of misses and mispredictions per
call by variant, labelled as simulation, beside real counters where a PMU measured them), the
bottleneck per op and variant (results/bottleneck), and, with `--reference paper`, the verdicts on
the paper's mechanistic claims (results/claims)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from . import files, fmt, style
from .phase2 import COUNTER_METRICS, read_result
from .. import metrics as metrics_mod

PLOTTED = (("I1_misses", "I1 misses"), ("D1_misses", "D1 misses"), ("LL_misses", "LL misses"),
           ("mispredicts", "mispredicted branches"))
MEASURED = {"branch-misses": "PMU branch-misses", "cache-misses": "PMU cache-misses", "l1d-misses": "PMU L1D misses"}
SIM_LABEL = "simulated (valgrind cache and branch model)"


def _limits_note() -> str:
    from .. import caches

    return "What the simulation leaves out: " + caches.model_limits()


def _measured(study) -> dict[tuple, dict[str, float]]:
    """Real counters per call (--metric counters), where a PMU measured them."""
    g = study.groups
    if g is None or g.empty or "metric" not in g.columns:
        return {}
    names = {m: e for m, e in COUNTER_METRICS.items() if e in MEASURED}
    out: dict[tuple, dict[str, float]] = {}
    for r in g[g["metric"].isin(names)].itertuples(index=False):
        out.setdefault((r.scheme, r.op, r.variant, r.compiler), {})[MEASURED[names[r.metric]]] = float(r.median)
    return out


def sim_figure(study, d: pd.DataFrame, outdir: Path, name: str) -> dict[str, Path]:
    """One family and geometry: per simulated event a panel, ops on x, a bar per variant (symlog)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = list(dict.fromkeys(zip(d["scheme"], d["op"])))
    order = study.chain.variants
    variants = sorted(dict.fromkeys(d["variant"]), key=lambda v: (order.index(v) if v in order else len(order), v))
    fig, axes = plt.subplots(1, len(PLOTTED), figsize=(3.2 * len(PLOTTED), 3.2), squeeze=False)
    width = 0.8 / max(1, len(variants))
    colors = list(style.OKABE_ITO.values())
    for ax, (col, title) in zip(axes[0], PLOTTED):
        for i, v in enumerate(variants):
            s = d[d["variant"] == v]
            at = dict(zip(zip(s["scheme"], s["op"]), s[col].astype(float)))
            ax.bar(np.arange(len(keys)) + (i - (len(variants) - 1) / 2) * width, [at.get(k, np.nan) for k in keys],
                   width, label=v, color=colors[i % len(colors)])
        ax.set_yscale("symlog", linthresh=1)
        ax.set_xticks(np.arange(len(keys)), [f"{o} ({sc})" for sc, o in keys], rotation=60, ha="right", fontsize=style.SMALL_PT)
        ax.set_title(f"{title} per call", fontsize=9)
    axes[0, 0].legend(frameon=False, fontsize=style.SMALL_PT)
    fig.tight_layout()
    return files.save_formats(fig, outdir, name)


def why_parts(study, outdir: Path) -> tuple[list, list]:
    """Figures and tables of the simulated counter breakdown and the bottlenecks; nothing when the
    study has no --metric sim (the counters section says what a PMU gave)."""
    from .figures import FigureResult
    from .tables import Cell, Table, write_table

    outdir = Path(outdir) / "mechanism"
    figs, tabs = [], []
    sim = read_result(study.directory, "sim")
    if sim.empty:
        asked = ((study.manifest or {}).get("metrics") or {}).get("sim") or {}
        gaps = [(g, i.get("reason", "")) for g, i in asked.items() if isinstance(i, dict) and i.get("status") == "unavailable"]
        if gaps:  # --metric sim was asked for and could not run here (e.g. aarch64: no cache model)
            t = Table(name="table_sim_unavailable", title=f"Hardware counter breakdown, {SIM_LABEL}",
                      caption="--metric sim was requested but nothing was simulated.",
                      header=["geometry", "status"], rows=[[Cell(g), Cell(r)] for g, r in gaps],
                      data=pd.DataFrame(gaps, columns=["geometry", "reason"]), align="ll")
            tabs.append((t, write_table(t, outdir)))
        return figs, tabs
    measured = _measured(study)
    bott = read_result(study.directory, "bottleneck")
    limiter = {(r.geometry, r.scheme, r.op, r.variant, r.compiler): (r.limiter, r.confidence)
               for r in bott.itertuples(index=False)} if not bott.empty else {}
    families: dict[str, list[str]] = {}
    for s in dict.fromkeys(sim["scheme"]):
        fam = study.family_of(s)
        families.setdefault(fam.name if fam else s, []).append(s)
    for fam_name, schemes in families.items():
        for geo in dict.fromkeys(sim["geometry"]):
            d = sim[(sim["geometry"] == geo) & sim["scheme"].isin(schemes) & (sim["Ir"] > 0)]
            if d.empty:
                continue
            extra = sorted({k for key, m in measured.items() if key[0] in schemes for k in m})
            rows = []
            for r in d.itertuples(index=False):
                lim, conf = limiter.get((geo, r.scheme, r.op, r.variant, r.compiler), ("", ""))
                meas = measured.get((r.scheme, r.op, r.variant, r.compiler), {})
                rows.append([Cell(r.scheme), Cell(r.op), Cell(f"{r.variant} ({r.compiler})"), Cell(fmt.num(r.Ir)),
                             Cell(fmt.num(r.I1_misses)), Cell(fmt.num(r.D1_misses)), Cell(fmt.num(r.LL_misses)),
                             Cell(fmt.num(r.branches)), Cell(fmt.num(r.mispredicts)),
                             *[Cell(fmt.num(meas[k]) if k in meas else fmt.NA) for k in extra],
                             Cell(f"{lim} ({conf})" if lim else fmt.NA)])
            text = str(d["geometry_text"].iloc[0])
            name = f"table_sim_{fam_name}_{geo}"
            t = Table(name=name, title=f"Hardware counter breakdown, {SIM_LABEL}: {fam_name}, geometry {geo}",
                      caption=f"SIMULATION, not a hardware measurement. Per call (the warm steady state: (N2 − N1) "
                              f"calls; the self-check's instructions, accesses and branches subtracted, misses and mispredictions "
                              f"not: they are not additive), under {text}. "
                              + ("Columns 'PMU ...' are real counters of this study's timing jobs. " if extra else
                                 "No real counters in this study (--metric counters; no PMU on most VMs). ")
                              + _limits_note(),
                      header=["parameter set", "op", "variant", "instructions", "I1 misses", "D1 misses", "LL misses",
                              "branches", "mispredicted", *extra, "bottleneck"],
                      rows=rows, data=d, align="lll" + "c" * (6 + len(extra)) + "l")
            tabs.append((t, write_table(t, outdir)))
            fr = FigureResult(name=f"mechanism/fig_sim_{fam_name}_{geo}",
                              title=f"Simulated misses and mispredictions per call: {fam_name}, {geo}",
                              caption=f"SIMULATION ({text}); symlog scale; per op a bar per variant.",
                              metric=metrics_mod.SIM, family=fam_name)
            fr.files = sim_figure(study, d, outdir, f"fig_sim_{fam_name}_{geo}")
            figs.append(fr)
    if not bott.empty:
        rows = [[Cell(r.geometry), Cell(r.scheme), Cell(r.op), Cell(f"{r.variant} ({r.compiler})"),
                 Cell(_label(r.limiter)), Cell(r.confidence), Cell(fmt.num(r.dominance)), Cell(r.evidence)]
                for r in bott.itertuples(index=False)]
        t = Table(name="table_bottleneck", title="Bottleneck per op and variant (model on simulated events)",
                  caption="The dominant limiter among front end / I-cache, data memory, branches and core, from "
                          "instructions, the simulated events and, where the study has them, llvm-mca and ticks; "
                          "dominance = the limiter's estimated cycles over the runner-up's (analyze/bottleneck.py, "
                          "costs in data/bottleneck.toml). The estimates rank limiters; they do not predict time.",
                  header=["geometry", "parameter set", "op", "variant", "limiter", "confidence", "dominance", "evidence"],
                  rows=rows, data=bott, align="llllllcl")
        tabs.append((t, write_table(t, outdir)))
    return figs, tabs


# how a limiter (analyze/bottleneck.py's results/bottleneck `limiter`) reads
LIMITER_LABELS = {"frontend": "front end / I-cache", "memory": "data memory", "branches": "branches",
                  "core": "core", "core-throughput": "core (throughput-bound)", "core-latency": "core (latency-bound)"}


def _label(limiter: str) -> str:
    return LIMITER_LABELS.get(limiter, limiter)


def claims_parts(study, outdir: Path) -> list:
    """`--reference paper`: the verdict on each of the paper's mechanistic claims, with its numbers."""
    from .tables import Cell, Table, write_table

    cl = read_result(study.directory, "claims")
    if cl.empty:
        return []
    rows = [[Cell(r.claim), Cell(r.text), Cell(r.section), Cell(r.geometry), Cell(r.verdict, bold=True),
             Cell(r.evidence if isinstance(r.evidence, str) else ""), Cell(r.why if isinstance(r.why, str) else "")]
            for r in cl.itertuples(index=False)]
    t = Table(name="table_claims", title="The paper's mechanistic claims, tested",
              caption="Each claim's measurable predictions (data/paper_claims.toml) checked on this study's numbers, "
                      "per simulated cache geometry: supported (every prediction holds), contradicted (one fails), "
                      "not measured (a metric this study did not run: the verdict names it), not testable here (other numbers "
                      "missing). Simulated events are the simulator's, not the paper's "
                      f"machine's. {_limits_note()}",
              header=["claim", "text", "source", "geometry", "verdict", "numbers", "why"],
              rows=rows, data=cl, align="lllllll")
    return [(t, write_table(t, Path(outdir) / "mechanism"))]


def bottleneck_rows(bott: pd.DataFrame, scheme: str, op: str, variants: list[str], compiler: str) -> list[tuple[str, str]]:
    """`pqsimd explain`: per geometry and variant, the limiter, its confidence and the simulated numbers."""
    b = bott[(bott["scheme"] == scheme) & (bott["op"] == op) & (bott["compiler"] == compiler)]
    out = []
    for geo in dict.fromkeys(b["geometry"]):
        first = True
        for v in variants:
            r = b[(b["geometry"] == geo) & (b["variant"] == v)]
            if not len(r):
                continue
            r = r.iloc[0]
            out.append(("bottleneck" if first else "",
                        f"{v} ({geo}): {_label(r['limiter'])}, {r['confidence']} confidence (×{fmt.num(r['dominance'])} the "
                        f"runner-up); {r['evidence']}"))
            first = False
        texts = b[b["geometry"] == geo]["geometry_text"]
        if len(texts):
            out.append(("", f"simulated: {texts.iloc[0]}; no prefetchers, no L2, counter-table branch model"))
    return out


def explain_lines(bott: pd.DataFrame, sim: pd.DataFrame, family: dict, scheme: str, op: str,
                  variants: list[str] | None, compiler: str | None, order: list[str], directory) -> list[str]:
    """`pqsimd explain` of a study with simulated events but no instruction mix."""
    from ..errors import PqsimdError, command

    b = bott[(bott["scheme"] == scheme)]
    if b.empty:
        raise PqsimdError(f"scheme {scheme!r} has no simulated events in {directory}; it has: "
                          f"{', '.join(sorted(set(bott['scheme'])))}")
    b = b[b["op"] == op]
    if b.empty:
        raise PqsimdError(f"op {op!r} has no simulated events for {scheme}; ops with them: "
                          f"{', '.join(dict.fromkeys(bott[bott['scheme'] == scheme]['op']))}")
    compiler = compiler or str(b["compiler"].iloc[0])
    present = list(dict.fromkeys(b[b["compiler"] == compiler]["variant"]))
    if variants:
        bad = [v for v in variants if v not in present]
        if bad:
            raise PqsimdError(f"variant {bad[0]!r} has no simulated events for {scheme} {op} ({compiler}); "
                              f"it has: {', '.join(present)}")
        chosen = list(dict.fromkeys(variants))
    else:
        chosen = sorted(present, key=lambda v: (order.index(v) if v in order else len(order), v))
    label = (family.get("labels") or {}).get(op, op)
    lines = [f"{scheme} · {label} ({op}) · {compiler}: " + " → ".join(chosen)
             + "   [simulated events per call: callgrind's cache and branch model; no instruction mix in this study]"]
    for name, text in bottleneck_rows(bott, scheme, op, chosen, compiler):
        lines.append(f"  {name:<{20}} {text}")
    return lines


def show_explanations(study, con, metric: str | None = None, compiler: str | None = None) -> None:
    """`pqsimd show`: the headlines, outliers and slowdowns explained (results/explanations)."""
    from rich.text import Text

    from .html import why_lines

    for fam in study.families:
        why = why_lines(study, fam)
        if not why["rows"]:
            continue
        con.print(Text(f"Why ({fam.title}): the headlines, outliers and slowdowns explained", style="bold underline"))
        for w in why["rows"]:
            con.print(Text(f"[{w['kind']}] ", style="dim") + Text(w["sentence"]), soft_wrap=True)
        for line in why["legend"] + ([f"not measured: {why['missing']}"] if why["missing"] else []):
            con.print(Text(line, style="dim"), soft_wrap=True)
        con.print()
