"""Cliffs in the report and the terminal (`pqsimd cliffs DIR`): every laid-out copy of each op as a
strip plot, the flagged groups, and the re-timings with their explanation. Reads results only
(results/copies, cliffs, cliff_retime, cliff_placement, cliff_sim, cliff_search, cliff_moved and
summary.json's `cliffs`, written by analyze/cliffs.py)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table as RichTable  # noqa: E402

from ..console import stdout_console  # noqa: E402
from ..results import read_table  # noqa: E402
from . import style  # noqa: E402


def _tables(directory: Path) -> dict[str, pd.DataFrame]:
    return {n: read_table(directory, n, strict=False) for n in
            ("copies", "cliffs", "cliff_retime", "cliff_placement", "cliff_sim", "cliff_search", "cliff_moved")}


def _summary(directory: Path) -> dict:
    try:
        return json.loads((Path(directory) / "results" / "summary.json").read_text()).get("cliffs") or {}
    except (OSError, ValueError):
        return {}


def _key(df: pd.DataFrame, r) -> pd.DataFrame:
    if not len(df):
        return df
    m = (df["scheme"] == r.scheme) & (df["op"] == r.op) & (df["variant"] == r.variant) & (df["compiler"] == r.compiler)
    return df[m]


def _found(directory: Path, r) -> dict | None:
    t = Path(directory) / "cliffs" / ".".join((r.scheme, r.op, r.variant, r.compiler)) / "target.json"
    try:
        return (json.loads(t.read_text()).get("search") or {}).get("found")
    except (OSError, ValueError):
        return None


def show_cliffs(directory, select: dict[str, str] | None = None, console: Console | None = None) -> None:
    """The flagged groups, one finding per cliff copy, and every re-timing with its explanation."""
    from ..errors import PqsimdError
    from ..studydir import why_no_cliffs

    con = console or stdout_console(highlight=False)
    t = _tables(Path(directory))
    cl = t["cliffs"]
    if not len(cl):
        raise PqsimdError(f"{directory}: no results/cliffs: {why_no_cliffs(directory)}")
    for k, v in (select or {}).items():
        cl = cl[cl[k].astype(str) == v]
    rec = _summary(Path(directory))
    flagged = cl[cl["cliff"].astype(bool)]
    con.print(f"cliffs: {len(flagged)} of {len(cl)} laid-out groups flagged ({rec.get('rule', '')})", soft_wrap=True)
    if len(flagged):
        tab = RichTable(title="flagged groups (norm: copy median / the group's median copy)")
        for h in ("set", "op", "build", "copies", "q10-q90", "worst", "in job", "z", "cliffs"):
            tab.add_column(h, no_wrap=h in ("set", "op", "q10-q90"))
        for r in flagged.sort_values("worst_norm", ascending=False).itertuples():
            tab.add_row(r.scheme, r.op, r.variant if r.compiler == "gcc" else f"{r.variant} ({r.compiler})",
                        str(int(r.n_copies)), f"{r.norm_q10:.2f}-{r.norm_q90:.2f}", f"{r.worst_norm:.2f}×",
                        f"{math.exp(r.worst_within_job):.2f}×" if pd.notna(r.worst_within_job) else "n/a",
                        f"{r.worst_z:.0f}", str(int(r.n_cliffs)))
        con.print(tab)
    if len(flagged):
        con.print("cliff copies, one finding each (a copy is slow in every op listed):")
    for f in (rec.get("findings") or [])[:10]:
        ops = ", ".join(f"{o} {v:.2f}×" for o, v in list(f["ops"].items())[:6])
        con.print(f"  {f['scheme']} {f['variant']} ({f['compiler']}) job {f['job']} copy {f['copy']} "
                  f"(seed {f['seed']}, stack {f['stack']}): {ops}", soft_wrap=True)
    rt = t["cliff_retime"]
    if len(rt):
        for (s, o, v, c), rows in rt.groupby(["scheme", "op", "variant", "compiler"], sort=False):
            if select and any(str(dict(scheme=s, op=o, variant=v, compiler=c)[k]) != x for k, x in select.items()):
                continue
            r = rows.iloc[0]
            con.print(f"[bold]{s} {o} {v} ({c})[/bold]: worst {r['worst']} vs typical {r['typical']}")
            key = type("K", (), dict(scheme=s, op=o, variant=v, compiler=c))
            text = explanation(rows, _key(t["cliff_placement"], key), _key(t["cliff_sim"], key),
                               _found(Path(directory), key), _key(t["cliff_moved"], key))
            for part in text:
                con.print(f"  {part}", soft_wrap=True)
    elif len(flagged):
        con.print(f"not re-timed yet: `pqsimd cliffs {directory} --retime` re-times the worst {min(3, len(flagged))}")


def strip_figure(copies: pd.DataFrame, scheme: str, title: str):
    """One row per op, one panel per build: every copy's norm (median / the group's median copy) as a
    point, cliff copies in red."""
    d = copies[(copies["scheme"] == scheme) & copies["norm"].notna()]
    builds = list(dict.fromkeys(f"{v} ({c})" for v, c in zip(d["variant"], d["compiler"])))
    ops = list(dict.fromkeys(d["op"]))
    fig, axes = plt.subplots(1, len(builds), figsize=(2.4 * len(builds) + 1.5, 0.22 * len(ops) + 1.3), sharey=True,
                             squeeze=False)
    for ax, b in zip(axes[0], builds):
        sub = d[(d["variant"] + " (" + d["compiler"] + ")") == b]
        for i, op in enumerate(ops):
            x = sub[sub["op"] == op]
            if not len(x):
                continue
            y = i + (x["job_index"].to_numpy() % 5 - 2) * 0.06
            cliff = x["cliff"].astype(bool).to_numpy()
            ax.scatter(x["norm"].to_numpy()[~cliff], y[~cliff], s=6, color="#4c72b0", alpha=0.7, linewidths=0)
            ax.scatter(x["norm"].to_numpy()[cliff], y[cliff], s=14, color="#c44e52", marker="D", linewidths=0)
        ax.axvline(1.0, color="#999999", lw=0.6)
        ax.set_xscale("log")
        from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

        lo, hi = ax.get_xlim()
        ticks = []
        for t in (1.0, 1.05, 0.95, 1.1, 0.9, 1.2, 0.8, 1.5, 0.5, 2.0, 3.0):  # 1 first, then outwards
            # a tick at least a sixth of the axis from every other: their labels never meet
            if lo <= t <= hi and all(abs(math.log(t / u)) >= math.log(hi / lo) / 6 for u in ticks):
                ticks.append(t)
        ticks.sort()
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_title(b, fontsize=8)
        ax.tick_params(labelsize=style.SMALL_PT)
        ax.set_xlabel("copy / median copy", fontsize=style.SMALL_PT)
    axes[0][0].set_yticks(range(len(ops)), ops, fontsize=style.SMALL_PT)
    axes[0][0].invert_yaxis()
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def cliff_parts(study, outdir: Path) -> tuple[list, list]:
    """The report's cliff figures (a strip plot per parameter set) and tables (flagged groups,
    re-timings)."""
    from . import fmt
    from .figures import FigureResult, _save
    from .tables import Cell, Table, write_table

    t = _tables(Path(study.directory))
    copies, cl = t["copies"], t["cliffs"]
    if not len(copies) or not len(cl):
        return [], []
    outdir = Path(outdir) / "layout"
    rule = _summary(Path(study.directory)).get("rule", "")
    figs = []
    for scheme in dict.fromkeys(copies["scheme"]):
        fig = strip_figure(copies, scheme, f"{scheme}: every laid-out copy of each op (red: flagged cliffs)")
        name = f"fig_copies_{scheme}"
        fr = FigureResult(name=f"layout/{name}", title=f"Copies across layouts: {scheme}",
                          caption="Each point is one laid-out copy of a build in one job: its median per call over "
                                  "its spins divided by the group's median copy (log scale). Red diamonds: copies the "
                                  f"cliff rule flags ({rule}).")
        fr.files = _save(fig, outdir, name)
        plt.close(fig)
        figs.append(fr)
    tabs = []
    flagged = cl[cl["cliff"].astype(bool)].sort_values("worst_norm", ascending=False)
    rows = [[Cell(r.scheme), Cell(r.op), Cell(f"{r.variant} ({r.compiler})"), Cell(str(int(r.n_copies))),
             Cell(f"{r.norm_q10:.3f}–{r.norm_q90:.3f}"), Cell(f"{r.worst_norm:.3f}×"), Cell(str(r.cliff_copies))]
            for r in flagged.itertuples()]
    tab = Table(name="table_cliffs", title=f"Cliffs: {len(flagged)} of {len(cl)} laid-out groups have a copy far "
                "slower than the rest", caption=f"Rule: {rule}. norm: a copy's median / the group's median copy. "
                "One copy (job, copy, seed) slow in several ops is one finding: results/copies.csv.",
                header=["parameter set", "op", "build", "copies", "norm q10–q90", "worst", "cliff copies"],
                rows=rows, data=flagged, align="lllcccl")
    tabs.append((tab, write_table(tab, outdir)))
    rt = t["cliff_retime"]
    if len(rt):
        rows = [[Cell(r.scheme), Cell(r.op), Cell(f"{r.variant} ({r.compiler})"), Cell(r.test),
                 Cell(f"{r.ratio:.3f}× [{r.ci_low:.3f}, {r.ci_high:.3f}]"), Cell(fmt.level(r.ci_level)),
                 Cell(f"{r.study_ratio:.3f}×" if pd.notna(r.study_ratio) else "n/a"), Cell(r.verdict), Cell(r.belongs)]
                for r in rt.itertuples()]
        tab = Table(name="table_cliff_retime", title="Cliffs re-timed (measured): the worst copy against a typical "
                    "one, made again from the job records", caption="alone: the two copies in fresh driver processes, "
                    "nothing else loaded; context: the worst copy's whole job as it loaded its copies, the worst copy "
                    "against its job's other copies. Interval: t over the processes' log ratios. belongs: copy "
                    "(alone confirms), context (only in its job), not reproduced.",
                    header=["parameter set", "op", "build", "test", "ratio [interval]", "level", "in the study",
                            "verdict", "belongs"], rows=rows, data=rt, align="llllccccl")
        tabs.append((tab, write_table(tab, outdir)))
    return figs, tabs


def explanation(retime_rows: pd.DataFrame, placement_rows: pd.DataFrame, sim_rows: pd.DataFrame,
                found: dict | None, moved: pd.DataFrame) -> list[str]:
    """The parts of one re-timed cliff's story, each labelled measured, static or simulated."""
    parts = []
    if len(retime_rows):
        for r in retime_rows.itertuples():
            parts.append(f"measured, {r.test}: {r.ratio:.3f}× [{r.ci_low:.3f}, {r.ci_high:.3f}] at {r.ci_level:.0%} over "
                         f"{r.processes} processes: {r.verdict} (the study: {r.study_ratio:.3f}×)")
        parts.append(f"the cliff belongs to: {retime_rows['belongs'].iloc[0]}")
    if len(placement_rows):
        objs = placement_rows[placement_rows["kind"] != "stack"]  # not a metric: a placement kind
        d = objs[objs["differs"] != "same"]
        m64 = d[d["differs"].str.contains("mod64", na=False)]
        st = placement_rows[placement_rows["kind"] == "stack"]  # not a metric: a placement kind
        stack = (f"; stack offsets {int(st['addr_worst'].iloc[0])} and {int(st['addr_typical'].iloc[0])} B"
                 if len(st) else "")
        parts.append(f"static: {len(d)} of {len(objs)} objects of the op's call tree sit elsewhere modulo 4096 or 64 "
                     f"({len(m64)} modulo 64){stack} (results/cliff_placement.csv)")
    if len(sim_rows):
        diff = sim_rows[sim_rows["differs"].astype(bool)]
        parts.append("simulated (callgrind): " + (", ".join(f"{r.event} {r.worst:,.1f} vs {r.typical:,.1f} per call"
                                                             for r in diff.itertuples()) if len(diff) else
                                                   "no event differs (I1/D1/LL misses, branch mispredictions within 1%): "
                                                   "the cause is outside the model (µop cache, loop buffer, 4K aliasing, "
                                                   "branch-target buffers, prefetchers are not simulated)"))
    if found:
        if found.get("stack"):
            parts.append(f"measured search: the stack offset {found['stack']['on']} B (on) → {found['stack']['off']} B "
                         f"(off) turns the cliff off (under address-space randomization the stack's address modulo "
                         f"4096 also changes with every process)")
        if found.get("block"):
            b = found["block"]
            text = (f"measured search: moving the {b['kind']} sections after pad {b['pad']} turns the cliff off "
                    f"(on at shifts {', '.join(map(str, found.get('on', [])))} B, off at "
                    f"{', '.join(map(str, found.get('off', [])))} B); the op's objects in that block: "
                    f"{', '.join(b['objects'][:6])}")
            parts.append(text)
            if found.get("candidates"):
                parts.append("named: moved in every probe that turned the cliff off: "
                             + ", ".join(found["candidates"][:8]))
            if len(moved):
                for obj, g in moved.groupby("object", sort=False):
                    on = g[g["state"] == "on"]
                    off = g[g["state"] == "off"]
                    parts.append(f"placement {obj}: cliff on at mod 64 {sorted(set(on['mod64']))}, mod 4096 "
                                 f"{sorted(set(on['mod4096']))}; off at mod 64 {sorted(set(off['mod64']))}, mod 4096 "
                                 f"{sorted(set(off['mod4096']))}")
        if found.get("note"):
            parts.append(f"search: {found['note']}")
    return parts
