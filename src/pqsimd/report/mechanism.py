"""The instruction mix in the report (`--metric mix`; tables of analyze/mix.py in DIR/results/):
per family a figure (stacked bars per op and variant by class, share of the op's instructions,
the instructions per call above each bar), a table of the class counts with the vector width and
ticks per instruction, the llvm-mca estimates beside the measured time, and the findings the
HTML's mechanism section lists: the largest class shifts of the chain's hand step, ops whose
ticks per instruction are far above the family's norm, executed instructions a CPU model makes
slow, and where the cost model and the measurement disagree. Reads DIR/results/ only; never
raises on missing data (a family without mix data gets no parts).
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from . import fmt, style
from .. import metrics as metrics_mod

TPI_FAR = 2.0  # ticks per instruction at least this multiple of the family's norm: a finding
TOP_SHIFTS = 3
# Table columns: (header, classes summed); every class not listed goes to "other".
TABLE_GROUPS = (
    ("scalar ALU", ("scalar_alu",)), ("scalar mul/div", ("scalar_mul", "scalar_div")), ("BMI", ("bmi",)),
    ("loads", ("load",)), ("stores", ("store", "string")), ("branches, calls", ("branch", "call_ret")),
    ("vector ALU", ("vec_alu", "vec_move")), ("vector mul", ("vec_mul",)),
    ("shuffles in-lane", ("shuffle_lane",)), ("lane-crossing", ("shuffle_cross",)),
    ("bcast/ins/ext", ("vec_insert_extract",)),
)
# The figure shows eight groups of classes (the table and `explain` keep every class): more shades than
# these cannot be told apart in a stacked bar. Okabe-Ito colours; a class of no group is "other".
FIGURE_GROUPS = (
    ("scalar (ALU, mul, BMI, FP)", ("scalar_alu", "scalar_mul", "scalar_div", "bmi", "fp"), "#0072B2"),
    ("loads", ("load",), "#7f7f7f"), ("stores", ("store", "string"), "#c8c8c8"),
    ("branches, calls", ("branch", "call_ret"), "#F0E442"),
    ("vector ALU, moves", ("vec_alu", "vec_move", "vec_config"), "#E69F00"), ("vector multiply", ("vec_mul",), "#D55E00"),
    ("shuffles, permutes, inserts", ("shuffle_lane", "shuffle_cross", "vec_insert_extract", "mask"), "#CC79A7"),
    ("other", ("nop", "other", "unknown"), "#000000"),
)
FIGURE_GROUP_OF = {c: g for g, classes, _ in FIGURE_GROUPS for c in classes}


def _read(directory: Path, name: str) -> pd.DataFrame:
    from .phase2 import read_result

    return read_result(directory, name)


def _q(v) -> str:
    if fmt.is_missing(v):
        return fmt.NA
    v = float(v)
    return f"{int(round(v)):,}" if abs(v - round(v)) < 1e-9 else fmt.quantity(v)


def _short(v: float) -> str:
    v = float(v)
    if v >= 1e6:
        return f"{v / 1e6:.3g}M"
    if v >= 1e4:
        return f"{v / 1e3:.3g}k"
    return _q(v)


def _class_order(mix: pd.DataFrame) -> list[str]:
    cls = mix[mix["level"] == "class"]
    return list(dict.fromkeys(cls["class"].astype(str)))


def _ops_in_order(fam, ops) -> list[str]:
    return fam.shown_ops(ops) if fam is not None else sorted(set(ops))


def _variants_in_order(study, present) -> list[str]:
    order = study.variants + [v for v in study.chain.variants if v not in study.variants]
    rank = {v: i for i, v in enumerate(order)}
    return sorted(set(present), key=lambda v: (rank.get(v, len(rank)), v))


MIX_BAR_IN = 0.2  # one (op, variant) bar: room for its variant's name and its count, rotated, at style.SMALL_PT
MIX_LABELS_IN = 1.4  # a row's y label and ticks beside its bars


def _mix_rows(fam, cls: pd.DataFrame, schemes: list[str], variants_of) -> list[tuple[str, list[tuple[str, str]]]]:
    """Per scheme, its (op, variant) bars in rows; an op's bars stay in one row."""
    # more ops wrap into further rows: the figure is never too wide to be shown at its scale
    per_row = int((style.MAX_FIGURE_IN - MIX_LABELS_IN) / MIX_BAR_IN)
    rows = []
    for scheme in schemes:
        d = cls[cls["scheme"] == scheme]
        row: list[tuple[str, str]] = []
        for op in _ops_in_order(fam, d["op"]):
            bars = [(op, v) for v in variants_of(d[d["op"] == op]["variant"])]
            gap = 1 if row else 0
            if row and len(row) + gap + len(bars) > per_row:
                rows.append((scheme, row))
                row, gap = [], 0
            row += [("", "")] * gap + bars  # ("", ""): the space between two ops
        if row:
            rows.append((scheme, row))
    return rows


def mix_figure(study, fam, mix: pd.DataFrame, outdir: Path, name: str) -> dict[str, Path]:
    """Per scheme of the family: stacked 100% bars by class for each (op, variant), the op's
    instructions per call above each bar; ops wrap into further rows rather than shrink the text."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextPath

    from . import files
    from .figures import DPI, FORMATS, RC

    comp = study.primary_compiler if study.primary_compiler in set(mix["compiler"]) else mix["compiler"].iloc[0]
    cls = mix[(mix["level"] == "class") & (mix["compiler"] == comp)].copy()
    schemes = [s for s in fam.schemes if s in set(cls["scheme"])]
    if not schemes:
        return {}
    cls["class"] = [FIGURE_GROUP_OF.get(str(c), "other") for c in cls["class"]]
    cls = cls.groupby(["scheme", "op", "variant", "class"], as_index=False)["count"].sum()
    used = [g for g, _, _ in FIGURE_GROUPS if cls[cls["class"] == g]["count"].abs().sum() > 0]
    colours = {g: colour for g, _, colour in FIGURE_GROUPS}
    totals = cls.groupby(["scheme", "op", "variant"])["count"].sum()
    rows = _mix_rows(fam, cls, schemes, lambda vs: _variants_in_order(study, vs))
    n_bars = max(len(bars) for _, bars in rows)
    # the tallest variant name under a bar and count above it, in inches: the rows' label room
    font = FontProperties(size=style.SMALL_PT)
    name_in = max(TextPath((0, 0), str(v), prop=font).get_extents().width for _, bars in rows for _, v in bars if v) / 72
    count_in = max(TextPath((0, 0), _short(t), prop=font).get_extents().width for t in totals) / 72
    width_in = style.fit_width(n_bars, MIX_BAR_IN, MIX_LABELS_IN, 6.5)
    row_in = 1.3 + name_in + count_in + 0.75  # plot, names and op labels below, counts and title above
    ncol = max(1, min(len(used), int(width_in / 2.0)))
    with plt.rc_context(RC):
        fig, axes = plt.subplots(len(rows), 1, figsize=(width_in, row_in * len(rows) + 0.3 * math.ceil(len(used) / ncol)),
                                 squeeze=False, layout="constrained")
        for n, (ax, (scheme, bars)) in enumerate(zip(axes[:, 0], rows)):
            d = cls[cls["scheme"] == scheme]
            pos = {bar: x for x, bar in enumerate(bars) if bar[0]}
            bottoms = dict.fromkeys(pos, 0.0)
            for c in used:
                shares = []
                for (op, v) in pos:
                    tot = totals.get((scheme, op, v), 0.0)
                    val = float(d[(d["op"] == op) & (d["variant"] == v) & (d["class"] == c)]["count"].sum())
                    shares.append(val / tot if tot > 0 else 0.0)
                ax.bar(list(pos.values()), shares, 0.85, bottom=[bottoms[b] for b in pos],
                       color=colours[c], label=c, edgecolor="white", linewidth=0.3)
                for b, sh in zip(pos, shares):
                    bottoms[b] += sh
            for (op, v), x in pos.items():
                ax.annotate(_short(totals.get((scheme, op, v), 0.0)), (x, 1.0), xytext=(0, 2), textcoords="offset points",
                            ha="center", va="bottom", fontsize=style.SMALL_PT, rotation=90)
            ax.set_xticks(list(pos.values()), [v for _, v in pos], rotation=90, fontsize=style.SMALL_PT)
            ax.tick_params(axis="x", length=0)
            groups: dict[str, list[int]] = {}
            for (op, _), x in pos.items():
                groups.setdefault(op, []).append(x)
            below = ax.secondary_xaxis("bottom")  # the op's name under its variants' names
            below.set_xticks([sum(xs) / len(xs) for xs in groups.values()], [fam.label(op) for op in groups])
            below.tick_params(length=0, pad=name_in * 72 + 6)
            below.spines["bottom"].set_visible(False)
            ax.set_xlim(-0.6, n_bars - 0.4)
            ax.set_ylim(0, 1.0)
            ax.set_yticks([0, 0.25, 0.5, 0.75, 1.0], ["0", "25%", "50%", "75%", "100%"])
            ax.set_ylabel("share of instructions")
            first = n == 0 or rows[n - 1][0] != scheme
            ax.set_title(f"{fam.scheme_label(scheme)} ({comp}): instruction mix per call" if first
                         else f"{fam.scheme_label(scheme)}, continued", loc="left", pad=count_in * 72 + 6)
        handles, lab = axes[0, 0].get_legend_handles_labels()
        fig.legend(handles, lab, loc="outside upper center", ncol=ncol, frameon=False)  # read before the bars
        out = {}
        for ext in FORMATS:
            out[ext] = files.save_figure(fig, outdir / f"{name}.{ext}", ext, dpi=DPI)
        plt.close(fig)
    return out


def mix_table_data(study, fam, mix: pd.DataFrame, ops_tab: pd.DataFrame) -> pd.DataFrame:
    """One row per (scheme, op, variant, compiler): every class count per call (wide), the total,
    the vector width and ticks per instruction."""
    cls = mix[(mix["level"] == "class") & mix["scheme"].isin(fam.schemes)]
    if cls.empty:
        return pd.DataFrame()
    wide = cls.pivot_table(index=["scheme", "op", "variant", "compiler"], columns="class", values="count",
                           aggfunc="sum", fill_value=0.0)
    wide = wide[[c for c in _class_order(mix) if c in wide.columns]].reset_index()
    wide.insert(4, "instructions", wide[[c for c in _class_order(mix) if c in wide.columns]].sum(axis=1))
    if not ops_tab.empty:
        keep = ["scheme", "op", "variant", "compiler", "vector_share", "max_width", "ticks", "ticks_per_instruction",
                "family_norm_tpi", "tpi_vs_norm"]
        wide = wide.merge(ops_tab[[c for c in keep if c in ops_tab.columns]], on=["scheme", "op", "variant", "compiler"],
                          how="left")
    rank_o = {o: i for i, o in enumerate(fam.ops)}
    rank_v = {v: i for i, v in enumerate(_variants_in_order(study, wide["variant"]))}
    rank_s = {s: i for i, s in enumerate(fam.schemes)}
    wide = wide[wide["op"] != fam.self_check] if fam.self_check else wide
    return wide.sort_values(["scheme", "op", "variant"], key=lambda col: col.map(
        {"scheme": rank_s, "op": rank_o, "variant": rank_v}[col.name]).fillna(1e9)).reset_index(drop=True)


def mix_table(study, fam, data: pd.DataFrame):
    from .tables import Cell, Table

    groups = [(h, [c for c in cs if c in data.columns]) for h, cs in TABLE_GROUPS]
    listed = {c for _, cs in TABLE_GROUPS for c in cs}
    classes = [c for c in data.columns if c not in ("scheme", "op", "variant", "compiler", "instructions", "vector_share",
                                                     "max_width", "ticks", "ticks_per_instruction", "family_norm_tpi",
                                                     "tpi_vs_norm")]
    rest = [c for c in classes if c not in listed]
    header = ["Operation", "variant", "instr./call"] + [h for h, _ in groups] + ["other", "vector", "ticks/instr."]
    rows: list = []
    for scheme in [s for s in fam.schemes if s in set(data["scheme"])]:
        rows.append(fam.scheme_label(scheme))
        for r in data[data["scheme"] == scheme].to_dict("records"):
            width = r.get("max_width")
            vec = (f"{fmt.pct(r['vector_share'])} ≤{int(width)}b" if not fmt.is_missing(r.get("vector_share"))
                   and not fmt.is_missing(width) and width else "scalar")
            tpi = r.get("ticks_per_instruction")
            far = (not fmt.is_missing(r.get("tpi_vs_norm")) and r["tpi_vs_norm"] >= TPI_FAR)
            rows.append([Cell(fam.label(r["op"])), Cell(r["variant"]), Cell(_q(r["instructions"]))]
                        + [Cell(_q(sum(r.get(c, 0.0) for c in cs))) for _, cs in groups]
                        + [Cell(_q(sum(r.get(c, 0.0) for c in rest))), Cell(vec),
                           Cell(fmt.num(tpi) + (" ▲" if far else ""), bold=far)])
    return Table(name=f"table_mix_{fam.name}", title=f"{fam.title} · instruction mix per call",
                 caption=(f"Executed instructions per call by class ({study.counted_by}, exact; the self-check op's loop "
                          "subtracted, so each row sums to the instructions metric), the share that is vector code "
                          "and its widest register, and ticks per instruction (▲: at least "
                          f"{fmt.times(TPI_FAR)} the family's median for that variant)."),
                 header=header, rows=rows, data=data, align="ll" + "r" * (len(header) - 2),
                 notes=["Every class and the mnemonics are in results/mix.csv; stages in results/mix_ratios.csv."],
                 family="")  # files in report/mechanism/, like the other mechanism tables


def mca_table(study, fam, mca: pd.DataFrame):
    from .tables import Cell, Table

    d = mca[mca["scheme"].isin(fam.schemes)]
    if fam.self_check:
        d = d[d["op"] != fam.self_check]
    if d.empty:
        return None
    cpus = list(dict.fromkeys(d["cpu"].astype(str)))
    host = next((h for h in d["host_cpu"].dropna().astype(str)), None)
    tool = next((t for t in d["tool"].dropna().astype(str)), "llvm-mca")
    header = ["Operation", "variant", "measured"] + [f"{c}{' (host)' if c == host else ''}" for c in cpus]
    rows: list = []
    wide = []
    for scheme in [s for s in fam.schemes if s in set(d["scheme"])]:
        rows.append(fam.scheme_label(scheme))
        ds = d[d["scheme"] == scheme]
        for op in fam.sort_ops(ds["op"]):
            for v in _variants_in_order(study, ds[ds["op"] == op]["variant"]):
                sub = ds[(ds["op"] == op) & (ds["variant"] == v)]
                meas = sub["measured_cycles"].iloc[0]
                cells = [Cell(fam.label(op)), Cell(v), Cell(_q(meas))]
                rec = {"scheme": scheme, "op": op, "variant": v, "measured_cycles": meas}
                for c in cpus:
                    r = sub[sub["cpu"] == c]
                    if r.empty:
                        cells.append(Cell(fmt.NA))
                        continue
                    off = str(r["agreement"].iloc[0]) in ("model lower", "model higher")
                    cells.append(Cell(_q(r["predicted_cycles_all"].iloc[0]) + (" !" if off else ""), bold=off))
                    rec[c] = r["predicted_cycles_all"].iloc[0]
                    rec[f"{c}_agreement"] = r["agreement"].iloc[0]
                rows.append(cells)
                wide.append(rec)
    factor = d["disagree_factor"].dropna().iloc[0] if "disagree_factor" in d.columns and d["disagree_factor"].notna().any() else None
    return Table(name=f"table_mca_{fam.name}", title=f"{fam.title} · cost model (llvm-mca) beside the measurement",
                 caption=(f"{tool}: cycles per call of each op's hot basic blocks (covering ≥ 95% of its executed "
                          f"instructions, weighted by their executions per call), extrapolated to all of them; "
                          f"measured: median {study.unit(metrics_mod.TIME)} × core cycles per tick. ! = prediction and measurement "
                          f"differ by more than {fmt.times(factor) if factor else 'the factor'} (either way)"
                          + (f"; the measuring host is {host} in llvm-mca's naming." if host else ".")),
                 header=header, rows=rows, data=pd.DataFrame(wide), align="ll" + "r" * (len(header) - 2), family="")


def findings(study, fam, mix: pd.DataFrame, ratios: pd.DataFrame, ops_tab: pd.DataFrame, mca: pd.DataFrame,
             mcm: pd.DataFrame) -> list[str]:
    out: list[str] = []
    comp = study.primary_compiler
    h = study.hand_of(fam)
    labels = dict(zip(mix["class"], mix["class_label"]))
    # largest class shifts of the hand step
    if h is not None and not ratios.empty:
        r = ratios[(ratios["stage"] == h.stage) & ratios["scheme"].isin(fam.schemes)]
        if comp in set(r["compiler"]):
            r = r[r["compiler"] == comp]
        if fam.self_check:
            r = r[r["op"] != fam.self_check]
        tot = r[(r["class"] == "total") & (r["base_count"] > 0) & (r["var_count"] > 0)]
        # the largest reductions by factor, and the op that gains least (or loses) instructions
        picks = tot.sort_values("ratio", ascending=False).head(TOP_SHIFTS)
        least = tot.sort_values("ratio").head(1)
        if len(least) and len(tot) > TOP_SHIFTS and least.index[0] not in picks.index:
            picks = pd.concat([picks, least])
        for t in picks.itertuples(index=False):
            cl = r[(r["scheme"] == t.scheme) & (r["op"] == t.op) & (r["class"] != "total")]
            saved = cl[cl["difference"] > 0].sort_values("difference", ascending=False).head(2)
            added = cl[cl["difference"] < 0].sort_values("difference").head(2)
            ratio = (f"{fmt.times(t.ratio)} fewer instructions" if t.ratio >= 1 else f"{fmt.times(1 / t.ratio)} more instructions")
            s = (f"{fam.label(t.op)} ({fam.scheme_label(t.scheme)}, {h.base}→{h.variant}): {ratio} "
                 f"({_q(t.base_count)} → {_q(t.var_count)} per call)")
            if len(saved):
                s += "; saved: " + ", ".join(f"{labels.get(x['class'], x['class'])} −{_q(x['difference'])}"
                                             + (f" ({fmt.pct(x['share_of_difference'])} of the difference)"
                                                if 0 < x["share_of_difference"] <= 1 else "")
                                             for x in saved.to_dict("records"))
            if len(added):
                s += f"; {h.variant} adds: " + ", ".join(f"{labels.get(x['class'], x['class'])} +{_q(-x['difference'])}"
                                                      for x in added.to_dict("records"))
            out.append(s + ".")
    # ticks per instruction far above the family's norm
    if not ops_tab.empty and "tpi_vs_norm" in ops_tab.columns:
        o = ops_tab[ops_tab["scheme"].isin(fam.schemes) & (ops_tab["tpi_vs_norm"] >= TPI_FAR)]
        if comp in set(o["compiler"]):
            o = o[o["compiler"] == comp]
        for r in o.sort_values("tpi_vs_norm", ascending=False).head(4).itertuples(index=False):
            out.append(f"{fam.label(r.op)} ({fam.scheme_label(r.scheme)}, {r.variant}) runs at {fmt.num(r.ticks_per_instruction)} "
                       f"ticks per instruction, {fmt.times(r.tpi_vs_norm)} the family's median for {r.variant} "
                       f"({fmt.num(r.family_norm_tpi)}).")
    # instructions a CPU model makes slow, grouped by (variant, CPUs, latency)
    if not mcm.empty:
        m = mcm[mcm["scheme"].isin(fam.schemes) & mcm["slow"].astype(bool) & (mcm["count"] > 0)]
        if fam.self_check:
            m = m[m["op"] != fam.self_check]
        modelled = sorted(mcm[mcm["scheme"].isin(fam.schemes)]["cpu"].astype(str).unique())
        groups: dict[tuple, list] = {}
        for (mn, variant), sub in m.groupby(["mnemonic", "variant"]):
            lat = float(sub["max_latency"].max())
            cpus = tuple(sorted(sub["cpu"].astype(str).unique()))
            ops = sub.groupby(["scheme", "op"])["count"].max().sort_values(ascending=False)
            groups.setdefault((variant, cpus, lat), []).append((mn, ops))
        # CPU-dependent first (slow on some modelled CPUs, not on others), then by executions x latency
        ranked = sorted(groups.items(), key=lambda kv: (len(kv[0][1]) == len(modelled),
                                                        -sum(o.iloc[0] for _, o in kv[1]) * kv[0][2]))
        for (variant, cpus, lat), items in ranked[:3]:
            parts, first = [], None
            for mn, ops in sorted(items, key=lambda t: -t[1].iloc[0]):
                (sc, op), n = ops.index[0], ops.iloc[0]
                first = first or (sc, op)
                parts.append(f"{mn} ({_q(n)}/call in {fam.label(op)}, {fam.scheme_label(sc)}"
                             + (f"; in {len(ops) - 1} more op(s)" if len(ops) > 1 else "") + ")")
            fast = [c for c in modelled if c not in cpus]
            where = (f"on {', '.join(cpus)} but not on {', '.join(fast)}: their cost depends on the CPU"
                     if fast else f"on every CPU modelled ({', '.join(cpus)})")
            out.append(f"{variant} executes {', '.join(parts)}, which llvm-mca models with latency up to {_q(lat)} "
                       f"{where} (`pqsimd explain DIR --scheme {first[0]} --op {first[1]}` details it).")
    # cost model vs measurement
    if not mca.empty:
        d = mca[mca["scheme"].isin(fam.schemes) & mca["agreement"].isin(["agrees", "model lower", "model higher"])]
        if len(d):
            host = next((x for x in d["host_cpu"].dropna().astype(str)), None)
            hd = d[d["cpu"] == host] if host in set(d["cpu"]) else d
            bad = hd[hd["agreement"] != "agrees"]
            who = f"the model of this host ({host})" if host in set(d["cpu"]) else "llvm-mca"
            if len(bad):
                worst = bad.iloc[(bad["predicted_vs_measured"].apply(lambda q: max(q, 1 / q))).argmax()]
                out.append(f"{who} disagrees with the measured time for {len(bad)} of {len(hd)} (op, variant) pairs, "
                           f"most for {fam.label(worst['op'])} ({worst['variant']}): predicted "
                           f"{fmt.times(worst['predicted_vs_measured'])} the measured cycles.")
            else:
                out.append(f"{who} agrees with the measured time (within ×{fmt.num(hd['disagree_factor'].iloc[0])}) "
                           f"for all {len(hd)} (op, variant) pairs.")
    return out


def mechanism_parts(study, outdir: Path) -> tuple[list, list, dict[str, list[str]]]:
    """The mix figure and tables of every family with mix data, and its findings:
    ([FigureResult], [Table], {family: [sentence]}). Files go to outdir/mechanism/."""
    from .figures import FigureResult
    from .tables import write_table

    mix = _read(study.directory, "mix")
    if mix.empty:
        return [], [], {}
    ratios = _read(study.directory, "mix_ratios")
    ops_tab = _read(study.directory, "mix_ops")
    mca = _read(study.directory, "mca")
    mcm = _read(study.directory, "mca_mnemonics")
    for df in (mix, ratios, ops_tab, mca, mcm):
        for c in ("scheme", "op", "variant", "compiler", "class", "cpu"):
            if c in df.columns:
                df[c] = df[c].astype(str)
    outdir = Path(outdir) / "mechanism"
    outdir.mkdir(parents=True, exist_ok=True)
    figs, tabs, found = [], [], {}
    for fam in study.families:
        fmix = mix[mix["scheme"].isin(fam.schemes)]
        if fmix.empty:
            continue
        fr = FigureResult(name=f"mechanism/fig_mix_{fam.name}", title=f"{fam.title} · instruction mix by class group",
                          caption=f"Share of each op's executed instructions in eight groups of classes ({study.counted_by}, "
                                  "exact, per call), per variant; the number above a bar is the op's instructions per call. "
                                  "The table beside it and `pqsimd explain DIR --scheme SET --op OP` give every class.",
                          metric=metrics_mod.MIX, family=fam.name)
        try:
            fr.files = mix_figure(study, fam, fmix, outdir, f"fig_mix_{fam.name}")
        except Exception as e:  # a figure must never cost the report
            fr.skipped = f"{e.__class__.__name__}: {e}"
        if not fr.files and not fr.skipped:
            fr.skipped = "no instruction mix for this family's schemes"
        figs.append(fr)
        data = mix_table_data(study, fam, fmix, ops_tab)
        if not data.empty:
            t = mix_table(study, fam, data)
            write_table(t, outdir)
            tabs.append(t)
        if not mca.empty:
            t = mca_table(study, fam, mca)
            if t is not None:
                write_table(t, outdir)
                tabs.append(t)
        found[fam.name] = findings(study, fam, fmix, ratios, ops_tab, mca, mcm)
    return figs, tabs, found
