"""What SIMD costs besides time, in `show`, the report (HTML, LaTeX and Markdown tables) and macros.tex
(analyze/footprint.py writes results/footprint; this module only reads it)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from ..results import Results, _read_table
from ..studydir import StudyDir
from . import fmt
from .crossimpl import _label

CAPTION = ("What SIMD costs besides time: per op, the C → SIMD step's time speedup (its interval; n/a when the "
           "study did not time it) beside the SIMD build's peak stack and code size against the C build's (exact: "
           "--metric stack, bytes written below the op's return address on a painted stack; --metric size, the "
           "op's call tree and the read-only data it addresses).")
PORTFOLIO_CAPTION = ("The same for the end-to-end ops of every family (their TOML's [views.portfolio] end_to_end): "
                     "what each family's SIMD code buys and what it costs in memory.")


def load(study: Results) -> pd.DataFrame:
    return _read_table(StudyDir(study.directory).results_dir, "footprint")


def _bytes(v) -> str:
    return fmt.NA if fmt.is_missing(v) else f"{int(v):,}"


def _ratio(v) -> str:
    return fmt.NA if fmt.is_missing(v) or not math.isfinite(v) else f"{(v - 1) * 100:+.0f}%"


def _time(r) -> str:
    v = r.get("time_speedup")
    if fmt.is_missing(v) or not v > 0:
        return fmt.NA
    return f"{fmt.times(v)} {fmt.ci(r.get('time_ci_low'), r.get('time_ci_high'))}"


def rows(study: Results, df: pd.DataFrame, end_to_end: bool = False) -> tuple[list[str], list[list[str]]]:
    if df is None or df.empty:
        return [], []
    d = df[df["end_to_end"].astype(bool)] if end_to_end else df
    if d.empty:
        return [], []
    header = ["set", "op", "C → SIMD", "time", "stack C", "stack SIMD", "Δ stack", "code C", "code SIMD", "Δ code"]
    out, prev = [], None
    for r in d.to_dict("records"):
        scheme_label, op_label = _label(study, r["scheme"], r["op"])
        key = (r["scheme"], r["op"])
        out.append([scheme_label if key != prev else "", op_label if key != prev else "",
                    f"{r['base']} → {r['variant']}", _time(r), _bytes(r["stack_base"]), _bytes(r["stack_variant"]),
                    _ratio(r["stack_ratio"]), _bytes(r["size_base"]), _bytes(r["size_variant"]), _ratio(r["size_ratio"])])
        prev = key
    return header, out


def parts(study: Results, outdir: Path) -> list:
    """The report's tables (written under outdir/footprint/); [] when results/ has no footprint."""
    from .tables import Cell, Table, write_table

    df = load(study)
    out = Path(outdir) / "footprint"
    tables = []
    for name, title, caption, e2e in (("table_footprint", "What SIMD costs besides time", CAPTION, False),
                                      ("table_footprint_portfolio", "Stack and code across the portfolio",
                                       PORTFOLIO_CAPTION, True)):
        header, body = rows(study, df, e2e)
        if not body:
            continue
        out.mkdir(parents=True, exist_ok=True)
        data = df[df["end_to_end"].astype(bool)] if e2e else df
        t = Table(name=name, title=title, caption=caption, header=header, rows=[[Cell(c) for c in r] for r in body],
                  data=data, align="lll" + "r" * (len(header) - 3))
        write_table(t, out)
        tables.append(t)
    return tables


def macros(study: Results, ms) -> None:
    """\\<Prefix>StackRatio<Op><Set> and ...CodeRatio...: the SIMD build's stack and code against C, % change."""
    from .texnames import camel, macro_name

    df = load(study)
    if df is None or df.empty:
        return
    for fam in study.families:
        d = df[df["scheme"].isin(fam.schemes) & (df["compiler"] == study.primary_compiler)]
        for r in d.to_dict("records"):
            key = camel(str(r["op"])) + camel(str(r["scheme"]), join_alpha=True) + camel(str(r["variant"]))
            for what, col in (("Stack", "stack_ratio"), ("Code", "size_ratio")):
                v = r[col]
                if not fmt.is_missing(v) and math.isfinite(v):
                    ms.add(macro_name(fam.macro_prefix, what, "Change", key), f"{(v - 1) * 100:+.0f}",
                           f"{r['scheme']} {r['op']}: {what.lower()} of {r['variant']} vs {r['base']}, % change")


def show(study: Results, con, metric: str | None = None, compiler: str | None = None) -> None:
    """`pqsimd show`: the footprint tables and one sentence per end-to-end op (nothing without them)."""
    from rich.table import Table as RichTable
    from rich.text import Text

    df = load(study)
    if df is None or df.empty:
        return
    for title, caption, e2e in (("What SIMD costs besides time", CAPTION, False),
                                ("Stack and code across the portfolio", PORTFOLIO_CAPTION, True)):
        header, body = rows(study, df, e2e)
        if not body:
            continue
        t = RichTable(title=title, caption=Text(caption), caption_justify="left", title_justify="left", header_style="bold",
                      box=None, pad_edge=False)
        for col in header:
            t.add_column(col, no_wrap=True)
        for r in body:
            t.add_row(*r)
        con.print(t)
        con.print(Text(""))
    for s in df[df["end_to_end"].astype(bool)]["sentence"]:
        con.print(Text(f"  {s}"), soft_wrap=True)
    con.print(Text(""))
