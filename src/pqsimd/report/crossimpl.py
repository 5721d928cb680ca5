"""Whose speedup is it? The cross-implementation view in `show` and the report (analyze/crossimpl.py
writes results/crossimpl and results/counterparts; this module only reads them)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..results import Levels, Results, _read_table
from ..studydir import StudyDir
from . import fmt


def load(study: Results) -> tuple[pd.DataFrame, pd.DataFrame]:
    results = StudyDir(study.directory).results_dir
    return _read_table(results, "crossimpl"), _read_table(results, "counterparts")


def _label(study: Results, scheme: str, op: str) -> tuple[str, str]:
    for fam in study.families:
        if scheme in fam.schemes:
            return fam.scheme_label(scheme), fam.label(op)
    return scheme, op


def _ci(r, key: str, lv: Levels) -> str:
    v = r.get(key)
    if fmt.is_missing(v) or not v > 0:
        return fmt.NA
    return f"{fmt.times(v)} {fmt.ci(r.get(key + '_ci_low'), r.get(key + '_ci_high'))}{lv.after(r.get(key + '_ci_level'))}"


def crossimpl_rows(study: Results, df: pd.DataFrame) -> tuple[list[str], list[list[str]], Levels]:
    """The table's header and rows: per parameter set and op, one row per implementation."""
    if df.empty:
        return [], [], Levels.of(pd.Series(dtype=float))
    lv = Levels.of(pd.concat([df["hand_simd_ci_level"], df["simd_vs_reference_ci_level"]]).dropna())
    header = ["set", "op", "implementation", "C → hand SIMD [interval]", "its C vs reference C",
              "its SIMD vs reference SIMD"]
    if df["compiler"].nunique() > 1:
        header.insert(2, "compiler")
    rows, prev = [], None
    for r in df.to_dict("records"):
        scheme_label, op_label = _label(study, r["scheme"], r["op"])
        key = (r["scheme"], r["op"], r["compiler"])
        ref = r.get("simd_vs_reference_verdict") == "reference"
        cells = [scheme_label if key != prev else "", op_label if key != prev else "",
                 f"{r['implementation']} ({r['c_variant']} → {r['simd_variant']})", _ci(r, "hand_simd", lv),
                 "reference" if ref else _ci(r, "c_vs_reference", lv),
                 "reference" if ref else _ci(r, "simd_vs_reference", lv)]
        if "compiler" in header:
            cells.insert(2, r["compiler"] if key != prev else "")
        rows.append(cells)
        prev = key
    return header, rows, lv


def counterpart_rows(study: Results, df: pd.DataFrame) -> tuple[list[str], list[list[str]], Levels]:
    if df.empty:
        return [], [], Levels.of(pd.Series(dtype=float))
    lv = Levels.of(pd.concat([df["hand_simd_ci_level"], df["counterpart_hand_simd_ci_level"],
                              df["speedup_ratio_ci_level"]]).dropna())
    header = ["set · counterpart", "op", "hand SIMD", "its hand SIMD", "ratio of speedups", "its SIMD time / ours"]
    rows, prev = [], None
    for r in df.to_dict("records"):
        scheme_label, op_label = _label(study, r["scheme"], r["op"])
        other_label, other_op = _label(study, r["counterpart_scheme"], r["counterpart_op"])
        pair = (r["scheme"], r["counterpart_scheme"])
        op = op_label if other_op == op_label else f"{op_label} / {other_op}"
        rows.append([f"{scheme_label} · {other_label}" if pair != prev else "", op, _ci(r, "hand_simd", lv),
                     _ci(r, "counterpart_hand_simd", lv), _ci(r, "speedup_ratio", lv), _ci(r, "simd_time_ratio", lv)])
        prev = pair
    return header, rows, lv


CROSSIMPL_CAPTION = ("Whose speedup is it? Per parameter set and op, each implementation's own C → hand-SIMD speedup, "
                     "and its C and its SIMD build against the reference implementation's (> 1: faster than the "
                     "reference), each with its interval; the builds of a set share the paired jobs.")
COUNTERPART_CAPTION = ("The same algorithm's other version beside it: each family's hand-SIMD speedup, the ratio of the "
                       "two speedups and of the two SIMD builds' times (> 1: ours faster). They are timed in different "
                       "jobs, so a ratio's interval is the range over the box of the two intervals it uses, at 1 minus "
                       "their summed misses.")


def crossimpl_parts(study: Results, outdir: Path) -> tuple[list, list]:
    """([], [Table]) of the cross-implementation view; empty when results/ has none of it."""
    from .tables import Cell, Table, write_table

    ci, cp = load(study)
    out = Path(outdir) / "crossimpl"
    tables = []
    for name, title, caption, (header, rows, lv), data in (
            ("table_crossimpl", "Whose speedup is it: implementations side by side", CROSSIMPL_CAPTION,
             crossimpl_rows(study, ci), ci),
            ("table_counterparts", "The algorithm's other version beside it", COUNTERPART_CAPTION,
             counterpart_rows(study, cp), cp)):
        if not rows:
            continue
        out.mkdir(parents=True, exist_ok=True)
        t = Table(name=name, title=title, caption=f"{caption} Intervals at {lv.text()}.", header=header,
                  rows=[[Cell(str(c)) for c in r] for r in rows], data=data, align="l" * len(header))
        write_table(t, out)
        tables.append(t)
    return [], tables


def show(study: Results, con, metric: str | None = None, compiler: str | None = None) -> None:
    """`pqsimd show`: the two tables in the terminal (nothing when the study has neither)."""
    from rich.table import Table as RichTable
    from rich.text import Text

    ci, cp = load(study)
    for title, caption, (header, rows, lv) in (
            ("Whose speedup is it · implementations side by side", CROSSIMPL_CAPTION, crossimpl_rows(study, ci)),
            ("The algorithm's other version beside it", COUNTERPART_CAPTION, counterpart_rows(study, cp))):
        if not rows:
            continue
        t = RichTable(title=title, caption=f"{caption} Intervals at {lv.text()}.", caption_justify="left",
                      title_justify="left", header_style="bold", box=None, pad_edge=False)
        for col in header:
            t.add_column(col, no_wrap=True)
        for r in rows:
            t.add_row(*r)
        con.print(t)
        con.print(Text(""))
