"""Where does SIMD help PQC, across the portfolio: for every family of a study, the hand-SIMD factor
(the chain's last stage) of its end-to-end ops and of its dominant kernels, side by side, grouped
by the kind of mathematics the kernel computes (data/math.toml, through each family's
[views.portfolio] in summary.json), with the vector share of the executed instructions where the
study measured the mix. A selection of comparisons analyze wrote: nothing is computed here."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from . import fmt, style  # noqa: E402
from ..results import Levels, Results, read_table  # noqa: E402

E2E = "end-to-end"
COLUMNS = ["family", "family_title", "scheme", "scheme_label", "op", "op_label", "role", "kind", "kind_label",
           "baseline", "variant", "speedup", "ci_low", "ci_high", "ci_level", "verdict", "vector_share", "note"]
KIND_COLOURS = [style.OKABE_ITO[c] for c in ("blue", "vermillion", "bluish_green", "orange", "reddish_purple",
                                              "sky_blue", "black", "grey", "yellow")] + ["#7F3800", "#053061"]


def rows(study: Results, metric: str | None = None) -> pd.DataFrame:
    """One row per (family, parameter set, portfolio op): the hand-SIMD comparison's estimate and
    interval (n/a with the reason where the family has no hand-SIMD build)."""
    metric = metric or study.primary_metric
    h = study.chain.hand
    mix = read_table(study.directory, "mix_ops", strict=False)
    out = []
    for fam in study.chain_families:
        port = fam.views.get("portfolio") or {}
        if not port:
            continue
        math_kinds = (study.summary.get("families", {}).get(fam.name) or {}).get("math") or {}
        items = [(op, E2E, E2E) for op in port.get("end_to_end", [])] + \
                [(op, "kernel", kind) for op, kind in (port.get("kernels") or {}).items()]
        for scheme in fam.schemes:
            for op, role, kind in items:
                r = study.lookup(metric, scheme, op, h.base, h.variant) if h else None
                vs = math.nan
                if len(mix) and h:
                    m = mix[(mix["scheme"].astype(str) == scheme) & (mix["op"].astype(str) == op)
                            & (mix["variant"].astype(str) == h.variant)]
                    vs = float(m["vector_share"].iloc[0]) if len(m) else math.nan
                note = "" if r else (f"no {h.variant} build of {fam.title}" if h else "no chain")
                if r and fmt.is_missing(r.get("speedup")):
                    note = str(r.get("reason") or "")
                out.append({"family": fam.name, "family_title": fam.title, "scheme": scheme,
                            "scheme_label": fam.scheme_label(scheme), "op": op, "op_label": fam.label(op), "role": role,
                            "kind": kind, "kind_label": "end-to-end" if kind == E2E else
                            (math_kinds.get(kind) or {}).get("label", kind),
                            "baseline": h.base if h else "", "variant": h.variant if h else "",
                            "speedup": r.get("speedup") if r else math.nan, "ci_low": r.get("ci_low") if r else math.nan,
                            "ci_high": r.get("ci_high") if r else math.nan,
                            "ci_level": r.get("ci_level") if r else math.nan, "verdict": r.get("verdict") if r else "n/a",
                            "vector_share": vs, "note": note})
    return pd.DataFrame(out, columns=COLUMNS)


def _order(df: pd.DataFrame) -> list[tuple[str, str, str]]:
    """(kind, family, op) in reading order: end-to-end first, then the kinds in order of appearance."""
    kinds = [E2E] + [k for k in dict.fromkeys(df["kind"]) if k != E2E]
    return [(k, f, o) for k in kinds for f, o in dict.fromkeys(zip(df.loc[df["kind"] == k, "family"],
                                                                     df.loc[df["kind"] == k, "op"]))]


def figure(study: Results, df: pd.DataFrame, outdir: Path, name: str) -> dict:
    from .figures import RC, _save

    order = _order(df)
    kinds = list(dict.fromkeys(k for k, _, _ in order))
    colour = {k: KIND_COLOURS[i % len(KIND_COLOURS)] for i, k in enumerate(kinds)}
    titles = dict(zip(df["family"], df["family_title"]))
    with plt.rc_context(RC):
        most = max(int(((df["family"] == f) & (df["op"] == o) & (df["kind"] == k)).sum()) for k, f, o in order)
        fig, ax = plt.subplots(figsize=(7.5, max(2.5, (0.28 if most <= 6 else 0.4) * len(order) + 1.0)))
        y = np.arange(len(order))[::-1]
        step = min(0.18, 0.8 / max(most, 1))  # a row's parameter sets stay inside its band (±0.4)
        for yi in y[1:]:
            ax.axhline(yi - 0.5 + 1, color="0.92", linewidth=0.5, zorder=0)
        for yi, (kind, fam, op) in zip(y, order):
            d = df[(df["family"] == fam) & (df["op"] == op) & (df["kind"] == kind)]
            if not (d["speedup"] > 0).any():
                ax.annotate("n/a: no hand-SIMD build", (1.0, yi), xytext=(4, 0), textcoords="offset points",
                            va="center", fontsize=style.SMALL_PT, color="grey")
            for j, r in enumerate(d.itertuples(index=False)):
                if not (isinstance(r.speedup, float) and r.speedup > 0):
                    continue
                off = (j - (len(d) - 1) / 2) * step
                lo = r.speedup - r.ci_low if r.ci_low > 0 else 0
                hi = r.ci_high - r.speedup if r.ci_high > 0 else 0
                ax.errorbar([r.speedup], [yi + off], xerr=[[max(lo, 0)], [max(hi, 0)]], fmt="o", ms=3.5,
                            color=colour[kind], elinewidth=0.8, capsize=1.5)
        labels = [f"{titles.get(f, f).split(' (')[0]}: {df.loc[(df['family'] == f) & (df['op'] == o), 'op_label'].iloc[0]}"
                  for _k, f, o in order]
        ax.set_yticks(y, labels)
        ax.set_xscale("log")
        ax.axvline(1.0, color="black", linewidth=0.6)
        ax.xaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:g}×"))
        for k in kinds:
            ax.plot([], [], "o", color=colour[k],
                    label=df.loc[df["kind"] == k, "kind_label"].iloc[0] if (df["kind"] == k).any() else k)
        ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=style.SMALL_PT)
        ax.set_xlabel(f"hand-SIMD speedup ({study.chain.hand.base} → {study.chain.hand.variant}), one dot per parameter set")
        return _save(fig, outdir, name)


def table(study: Results, df: pd.DataFrame):
    from .tables import Cell, Table

    body, data = [], []
    lv = Levels.of(df.loc[df["speedup"] > 0, "ci_level"])
    for kind, fam, op in _order(df):
        d = df[(df["family"] == fam) & (df["op"] == op) & (df["kind"] == kind)]
        r0 = d.iloc[0]
        cells = [Cell(r0["kind_label"]), Cell(r0["family_title"].split(" (")[0]), Cell(r0["op_label"])]
        factors = []
        for r in d.itertuples(index=False):
            factors.append(f"{r.scheme_label} {fmt.times(r.speedup)} {fmt.ci(r.ci_low, r.ci_high)}{lv.after(r.ci_level)}"
                           if isinstance(r.speedup, float) and r.speedup > 0 else f"{r.scheme_label} {fmt.NA}")
        cells.append(Cell("; ".join(factors)))
        vs = d["vector_share"].dropna()
        cells.append(Cell(fmt.pct(vs.median()) if len(vs) else fmt.NA))
        body.append(cells)
        data += d.to_dict("records")
    h = study.chain.hand
    caption = (f"Across the portfolio: the hand-SIMD factor ({h.base} → {h.variant}) of every family's end-to-end "
               f"ops and dominant kernels, grouped by the mathematics the kernel computes; per parameter set with its "
               f"interval (at {lv.text()}); vector share: the share of the "
               f"{h.variant} build's executed instructions that are vector instructions (median over sets, where "
               f"--metric mix measured it). n/a: the family has no hand-SIMD build.")
    return Table(name="table_portfolio", title="Where does SIMD help PQC: the portfolio", caption=caption,
                 header=["kind of mathematics", "family", "op", "hand-SIMD factor per set [interval]", "vector share"],
                 rows=body, data=pd.DataFrame(data), align="lllll")


def portfolio_parts(study: Results, outdir: Path) -> tuple[list, list]:
    """([FigureResult], [Table]) of the portfolio view; empty unless a family of the study has one."""
    from .figures import FigureResult
    from .tables import write_table

    if study.primary_metric not in study.speed_metrics:  # the hand-SIMD factor is a speedup, not bytes
        return [], []
    df = rows(study)
    if df.empty or study.chain.hand is None:
        return [], []
    out = Path(outdir) / "portfolio"
    out.mkdir(parents=True, exist_ok=True)
    fr = FigureResult(name="portfolio/fig_portfolio", title="Where does SIMD help PQC: hand-SIMD factor by the kind "
                      "of mathematics", caption="Each family's end-to-end ops and dominant kernels, grouped by what "
                      "they compute; one dot per parameter set with its interval; log scale.", family="")
    if df["speedup"].gt(0).any():
        fr.files = figure(study, df, out, "fig_portfolio")
    else:
        fr.skipped = "no family of the study has a hand-SIMD build"
    t = table(study, df)
    write_table(t, out)
    return [fr], [t]


def show(study: Results, con, metric: str, compiler: str | None = None) -> None:
    """`pqsimd show` across the study's families (two or more with a portfolio view): the hand-SIMD factor
    of end-to-end ops and dominant kernels, grouped by the kind of mathematics."""
    from rich.table import Table

    if sum(bool(f.views.get("portfolio")) for f in study.families) < 2:
        return
    df = rows(study, metric)
    if df.empty:
        return
    h = study.chain.hand
    lv = Levels.of(df.loc[df["speedup"] > 0, "ci_level"])
    t = Table(title=f"Across the portfolio · hand-SIMD factor ({h.base}→{h.variant}) by kind of mathematics",
              caption=f"intervals at {lv.text()}", caption_justify="left",
              title_justify="left", header_style="bold", box=None, pad_edge=False)
    for col in ("kind", "family", "op", "per parameter set [interval]"):
        t.add_column(col, no_wrap=col != "per parameter set [interval]")
    prev = None
    for kind, fam, op in _order(df):
        d = df[(df["family"] == fam) & (df["op"] == op) & (df["kind"] == kind)]
        r0 = d.iloc[0]
        cells = "; ".join(f"{r.scheme_label} {fmt.times(r.speedup)} {fmt.ci(r.ci_low, r.ci_high)}{lv.after(r.ci_level)}"
                          if isinstance(r.speedup, float) and r.speedup > 0 else f"{r.scheme_label} n/a"
                          for r in d.itertuples(index=False))
        t.add_row(r0["kind_label"] if kind != prev else "", r0["family_title"].split(" (")[0], r0["op_label"], cells)
        prev = kind
    con.print(t)
    con.print()
