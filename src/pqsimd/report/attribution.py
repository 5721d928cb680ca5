"""Where inside an implementation the speedup comes from: the report's view of results/attribution
(analyze/attribution.py): per family, a figure of each kernel group's Shapley share of the end-to-end
ops' speedup C -> full native with its interval, per parameter set; a table (shares, the total, the
interaction), macros and sentences. It formats; it computes nothing."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from . import fmt, style  # noqa: E402
from ..results import FamilyView, Levels, Results  # noqa: E402

OUTDIR = "attribution"


def _ops(fam: FamilyView, rows: pd.DataFrame) -> list[str]:
    """The family's end-to-end ops that have an attribution (else every op that has one)."""
    have = set(rows["op"])
    e2e = [o for o in (fam.views.get("end_to_end") or []) if o in have]
    return e2e or fam.sort_ops(have)


def figure(study: Results, fam: FamilyView, rows: pd.DataFrame, metric: str, outdir: Path, name: str) -> dict:
    from .figures import RC, _save

    ops = _ops(fam, rows)
    schemes = [s for s in fam.schemes if s in set(rows["scheme"])]
    groups = list(dict.fromkeys(rows["group"]))
    with plt.rc_context(RC):
        fig, axes = plt.subplots(1, len(ops), figsize=(max(3.2, 0.5 * len(groups) * len(schemes) + 1.2) * len(ops), 3.4),
                                 squeeze=False, sharey=True)
        width = 0.8 / max(len(schemes), 1)
        for ax, op in zip(axes[0], ops):
            for i, s in enumerate(schemes):
                d = rows[(rows["op"] == op) & (rows["scheme"] == s)].set_index("group").reindex(groups)
                y = 100 * d["share"].to_numpy(dtype=float)
                lo, hi = 100 * d["share_ci_low"].to_numpy(dtype=float), 100 * d["share_ci_high"].to_numpy(dtype=float)
                x = np.arange(len(groups)) + (i - (len(schemes) - 1) / 2) * width
                err = np.vstack([np.where(np.isfinite(lo), np.clip(y - lo, 0, None), 0),
                                 np.where(np.isfinite(hi), np.clip(hi - y, 0, None), 0)])
                shade, hatch = style.scheme_style(s, schemes)
                ax.bar(x, np.nan_to_num(y), width, color=shade, hatch=hatch, edgecolor="white", linewidth=0.5,
                       label=fam.scheme_label(s),
                       yerr=err, error_kw={"elinewidth": 0.8, "capsize": 2})
            ax.axhline(0, color="black", linewidth=0.6)
            ax.set_xticks(np.arange(len(groups)), groups, rotation=30, ha="right")
            total = rows[rows["op"] == op].groupby("scheme", sort=False)["total"].first()
            ax.set_title(f"{fam.label(op)}: " + ", ".join(f"{fmt.times(total[s])}" for s in schemes if s in total),
                         fontsize=9)
        axes[0][0].set_ylabel(f"share of log speedup, % ({style.metric_title(metric)})")
        axes[0][-1].legend(frameon=False, loc="upper right")
        return _save(fig, outdir, name)


def table(study: Results, fam: FamilyView, rows: pd.DataFrame, metric: str):
    from .tables import Cell, Table

    groups = list(dict.fromkeys(rows["group"]))
    tot_lv, sh_lv = Levels.of(rows["total_ci_level"]), Levels.of(rows.loc[rows["share"].notna(), "share_ci_level"])
    header = ["Operation", "set", "total (C → native)"] + [f"{g} share" for g in groups] + ["interaction"]
    body, data = [], []
    for op in _ops(fam, rows) + [o for o in fam.sort_ops(set(rows["op"])) if o not in _ops(fam, rows)]:
        for k, s in enumerate(s for s in fam.schemes if s in set(rows["scheme"])):
            d = rows[(rows["op"] == op) & (rows["scheme"] == s)].set_index("group")
            if d.empty:
                continue
            r0 = d.iloc[0]
            cells = [Cell(fam.label(op) if k == 0 else ""), Cell(fam.scheme_label(s)),
                     Cell(f"{fmt.times(r0['total'])} {fmt.ci(r0['total_ci_low'], r0['total_ci_high'])}"
                          f"{tot_lv.after(r0['total_ci_level'])}")]
            rec = {"op": op, "scheme": s, "total": r0["total"], "total_ci_low": r0["total_ci_low"],
                   "total_ci_high": r0["total_ci_high"], "total_ci_level": r0["total_ci_level"],
                   "interaction": r0["interaction"]}
            for g in groups:
                if g in d.index and not fmt.is_missing(d.loc[g, "share"]):
                    cells.append(Cell(f"{fmt.pct(d.loc[g, 'share'])} [{fmt.pct(d.loc[g, 'share_ci_low'])}, "
                                      f"{fmt.pct(d.loc[g, 'share_ci_high'])}]{sh_lv.after(d.loc[g, 'share_ci_level'])}"))
                else:
                    cells.append(Cell(fmt.NA))
                for col in ("share", "share_ci_low", "share_ci_high", "share_ci_level", "shapley", "leave_one_out",
                            "add_one_in"):
                    rec[f"{g}_{col}"] = d.loc[g, col] if g in d.index else np.nan
            cells.append(Cell(fmt.times(r0["interaction"])))
            body.append(cells)
            data.append(rec)
    impl = ", ".join(dict.fromkeys(rows["implementation"]))
    caption = (f"{fam.title}: where the speedup of {impl} over its portable C comes from "
               f"({style.metric_title(metric)}): each kernel group's Shapley share of log(total), the average of its "
               f"marginal gain over every order of switching the groups to native code, with its interval at "
               f"{sh_lv.text()} ({_share_method(rows)}); the total's interval at {tot_lv.text()}; interaction = total / the product of the groups' "
               f"gains alone (1: they add up).")
    return Table(name="table_attribution", title=f"{fam.title}: attribution of the speedup to kernel groups",
                 caption=caption, header=header, rows=body, data=pd.DataFrame(data), family=fam.name,
                 align="ll" + "c" * (len(header) - 2))


def _share_method(rows: pd.DataFrame) -> str:
    """How the shares' intervals were made, in words (analyze/attribution.py)."""
    words = {"bootstrap": "a percentile bootstrap over jobs, its coverage measured in bench/bench_attribution.py",
             "box": "the range over the ablation comparisons' intervals, covering whenever they all do"}
    return "; ".join(words.get(m, m) for m in sorted({str(x) for x in rows["shapley_ci_method"].dropna() if str(x)})) \
        or "n/a"


def sentences(fam: FamilyView, rows: pd.DataFrame) -> list[str]:
    out = []
    for op in _ops(fam, rows)[:3]:
        d = rows[rows["op"] == op]
        if d["share"].notna().any():
            top = d.groupby("group")["share"].median().sort_values(ascending=False)
            out.append(f"{fam.label(op)} (C → native {fmt.times(d['total'].median())} median over sets): "
                       + "; ".join(f"{g} {fmt.pct(v)}" for g, v in top.items()) + " of the log speedup (Shapley).")
    return out


def attribution_parts(study: Results, outdir: Path) -> tuple[list, list, dict[str, list[str]]]:
    """([FigureResult], [Table], {family: [sentence]}) of every family with an attribution, per metric."""
    from .figures import FigureResult
    from .tables import write_table

    att = study.attribution.copy()
    if att.empty:
        return [], [], {}
    for c in ("metric", "scheme", "op", "group", "implementation", "compiler"):
        att[c] = att[c].astype(str)
    att = att[att["compiler"] == str(study.primary_compiler)] if study.primary_compiler else att
    out = Path(outdir) / OUTDIR
    out.mkdir(parents=True, exist_ok=True)
    figs, tabs, found = [], [], {}
    for fam in study.families:
        for metric in [m for m in study.speed_metrics if m in set(att["metric"])]:
            rows = att[att["scheme"].isin(fam.schemes) & (att["metric"] == metric)]
            if rows.empty:
                continue
            suffix = "" if metric == study.primary_metric else f"_{metric}"
            fr = FigureResult(name=f"{OUTDIR}/fig_attribution_{fam.name}{suffix}",
                              title=f"{fam.title} · where the speedup comes from ({style.metric_title(metric)})",
                              caption="Each kernel group's Shapley share of the end-to-end speedup of the native build "
                                      "over the portable C, per parameter set, with its interval; the panel title gives "
                                      "the total per set.", metric=metric, family=fam.name)
            if rows["share"].notna().any():
                fr.files = figure(study, fam, rows, metric, out, f"fig_attribution_{fam.name}{suffix}")
            else:
                fr.skipped = str(rows["note"].dropna().iloc[0]) if rows["note"].notna().any() else "no shares"
            figs.append(fr)
            t = table(study, fam, rows, metric)
            t.name_suffix = suffix
            write_table(t, out, f"_{fam.name}{suffix}")
            tabs.append(t)
            if metric == study.primary_metric or fam.name not in found:
                found.setdefault(fam.name, []).extend(sentences(fam, rows))
    return figs, tabs, found


def show(study: Results, con, metric: str, compiler: str | None) -> None:
    """Where inside an ablated implementation the speedup comes from: each kernel group's Shapley
    share of C -> native with its interval, per op and parameter set (results/attribution)."""
    from rich.table import Table

    att = study.attribution
    if not len(att):
        return
    att = att[(att["metric"] == metric) & ((att["compiler"] == compiler) if compiler else True)]
    for fam in study.families:
        rows = att[att["scheme"].isin(fam.schemes)]
        if rows.empty:
            continue
        groups = list(dict.fromkeys(rows["group"]))
        impl = ", ".join(dict.fromkeys(rows["implementation"]))
        tot_lv, sh_lv = Levels.of(rows["total_ci_level"]), Levels.of(rows.loc[rows["share"].notna(), "share_ci_level"])
        how = ", ".join(sorted({str(x) for x in rows["shapley_ci_method"].dropna() if str(x)})) or "n/a"
        t = Table(title=f"{fam.title} · where {impl}'s speedup over its C comes from (Shapley share of log speedup)",
                  caption=f"intervals: the total's {tot_lv.text()}; the shares' {sh_lv.text()} ({how})",
                  caption_justify="left", title_justify="left", header_style="bold", box=None, pad_edge=False)
        for col in ("op", "set", "C → native", *groups, "interaction"):
            t.add_column(col, justify="left" if col in ("op", "set") else "right", no_wrap=True)
        prev = None
        for op in fam.sort_ops(set(rows["op"])):
            for s in fam.schemes:
                d = rows[(rows["op"] == op) & (rows["scheme"] == s)].set_index("group")
                if d.empty:
                    continue
                r0 = d.iloc[0]
                shares = [f"{fmt.pct(d.loc[g, 'share'])} [{fmt.pct(d.loc[g, 'share_ci_low'])}, "
                          f"{fmt.pct(d.loc[g, 'share_ci_high'])}]{sh_lv.after(d.loc[g, 'share_ci_level'])}"
                          if g in d.index and not fmt.is_missing(d.loc[g, "share"]) else fmt.NA for g in groups]
                t.add_row(fam.label(op) if op != prev else "", fam.scheme_label(s),
                          f"{fmt.times(r0['total'])} {fmt.ci(r0['total_ci_low'], r0['total_ci_high'])}"
                          f"{tot_lv.after(r0['total_ci_level'])}", *shares, fmt.times(r0["interaction"]))
                prev = op
        con.print(t)
        con.print()
