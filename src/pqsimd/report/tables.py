"""The report's tables, each as LaTeX (booktabs), Markdown and CSV, from one table model.

`Table` holds display cells (unicode text + LaTeX) and a numeric frame for the CSV; the
Jinja2 templates in templates/ render the text formats. Missing data is `n/a`, never NaN.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import jinja2
import numpy as np
import pandas as pd

from . import files, fmt, style
from .load import Study

TABLE1_OPS = ["invntt", "basemul", "poly_frommsg", "ntt", "indcpa_dec", "indcpa_enc", "indcpa_keypair",
              "gen_a", "poly_getnoise_eta1"]
TABLE1_LABELS = {"invntt": "INVNTT", "basemul": "basemul", "poly_frommsg": "frommsg", "ntt": "NTT",
                 "indcpa_dec": "iDec", "indcpa_enc": "iEnc", "indcpa_keypair": "iKeypair", "gen_a": "gen_a",
                 "poly_getnoise_eta1": "noise"}
STAGES = [("compiler", "refo0", "refnv"), ("autovec", "refnv", "ref"), ("hand_simd", "ref", "avx2"),
          ("total", "refo0", "avx2")]
STAGE_HEADERS = {"compiler": "compiler", "autovec": "auto-vec", "hand_simd": "hand SIMD", "total": "total"}
UNRELIABLE = "†"

_TEX = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\ensuremath{\sim}", "^": r"\^{}",
    "×": r"\ensuremath{\times}", "→": r"\ensuremath{\to}", "δ": r"\ensuremath{\delta}",
    "η": r"\ensuremath{\eta}", "α": r"\ensuremath{\alpha}", "†": r"\ensuremath{^\dagger}",
    "≈": r"\ensuremath{\approx}", "▼": r"\ensuremath{\downarrow}", "±": r"\ensuremath{\pm}",
    "≥": r"\ensuremath{\geq}", "≤": r"\ensuremath{\leq}", "<": r"\ensuremath{<}", ">": r"\ensuremath{>}",
}


def tex(text: str) -> str:
    return "".join(_TEX.get(ch, ch) for ch in str(text))


@dataclass
class Cell:
    text: str
    latex: str | None = None
    bold: bool = False

    @property
    def tex(self) -> str:
        body = self.latex if self.latex is not None else tex(self.text)
        return rf"\textbf{{{body}}}" if self.bold else body


@dataclass
class Table:
    name: str
    title: str
    caption: str
    header: list[str]
    groups: list[tuple[str, int]] = field(default_factory=list)  # spanning header row: (label, n cols)
    rows: list[list[Cell] | str] = field(default_factory=list)  # a str row is a section heading
    notes: list[str] = field(default_factory=list)
    data: pd.DataFrame = field(default_factory=pd.DataFrame)  # numeric, for the CSV
    align: str = ""
    name_suffix: str = ""  # "_instructions" for a further metric's twin

    @property
    def n_cols(self) -> int:
        return len(self.header)

    @property
    def body_rows(self) -> list[list[Cell]]:
        return [r for r in self.rows if not isinstance(r, str)]

    def flat_header(self) -> list[str]:
        """One header row (for Markdown/HTML), the spanning group labels folded in."""
        if not self.groups:
            return list(self.header)
        out, col = [self.header[0]], 1
        for label, span in self.groups:
            out += [f"{label} {h}" for h in self.header[col:col + span]]
            col += span
        return out + self.header[col:]

    def group_rules(self) -> list[tuple[int, int]]:
        out, col = [], 1
        for _, span in self.groups:
            out.append((col, col + span - 1))
            col += span
        return out


# -- cells ----------------------------------------------------------------------------------

def _ci_pair(row: dict) -> tuple[float, float, bool]:
    lo, hi = row.get("hci_low"), row.get("hci_high")
    reliable = row.get("hci_reliable")
    if fmt.is_missing(lo) or fmt.is_missing(hi):
        lo, hi, reliable = row.get("ci_low"), row.get("ci_high"), True
    reliable = True if reliable is None or (isinstance(reliable, float) and math.isnan(reliable)) else bool(reliable)
    return lo, hi, reliable


def speedup_cell(row: dict | None, with_ci: bool = True, verdict: bool = False) -> Cell:
    if row is None or fmt.is_missing(row.get("speedup")):
        return Cell(fmt.NA)
    s = row["speedup"]
    lo, hi, reliable = _ci_pair(row)
    mark = "" if reliable else UNRELIABLE
    text = fmt.times(s)
    latex = rf"${fmt.num(s)}\times$"
    if with_ci:
        ci = fmt.ci(lo, hi)
        text += f" {ci}{mark}"
        latex += rf" {{\scriptsize {tex(ci)}{tex(mark)}}}"
    if verdict:
        v = str(row.get("verdict", ""))
        sym = {"~": "~", "slower": "▼"}.get(v, "")
        if sym:
            text += f" {sym}"
            latex += " " + tex(sym)
    return Cell(text, latex)


def _label(op: str, labels: dict | None = None) -> str:
    return (labels or {}).get(op) or style.op_label(op)


def _notes_common(study: Study, rows: list[dict]) -> list[str]:
    notes = []
    if any(not _ci_pair(r)[2] for r in rows if r):
        notes.append(f"{UNRELIABLE} hierarchical CI unreliable: a group has fewer than 5 jobs.")
    return notes


def _ci_name(rows: list[dict]) -> str:
    if any(r and not fmt.is_missing(r.get("hci_low")) for r in rows):
        return "95% hierarchical bootstrap CI (jobs, then spins within jobs)"
    return "95% bootstrap CI"


# -- table 1 --------------------------------------------------------------------------------

def load_paper_table1() -> pd.DataFrame:
    with resources.files("pqsimd.data").joinpath("paper_table1.csv").open("r") as fh:
        return pd.read_csv(fh, comment="#")


def table1_hand_simd(study: Study, metric: str, reference: str | None = None) -> Table:
    schemes = study.schemes
    paper = load_paper_table1().set_index("op") if reference == "paper" else None
    header, groups, rows, data, seen = ["Operation"], [], [], [], []
    per = 3 if paper is not None else 1
    for s in schemes:
        if paper is not None:
            header += ["ours", "paper", "ratio"]
            groups.append((style.scheme_label(s), 3))
        else:
            header.append(style.scheme_label(s))
    for op in TABLE1_OPS:
        cells = [Cell(TABLE1_LABELS[op])]
        rec = {"op": op, "label": TABLE1_LABELS[op]}
        for s in schemes:
            row = study.lookup(metric, s, op, "ref", "avx2")
            seen.append(row)
            cells.append(speedup_cell(row))
            lo, hi, _ = _ci_pair(row) if row else (np.nan, np.nan, True)
            sp = row.get("speedup") if row else np.nan
            rec.update({f"{s}_speedup": sp, f"{s}_ci_low": lo, f"{s}_ci_high": hi,
                        f"{s}_cliffs_delta": row.get("cliffs_delta") if row else np.nan,
                        f"{s}_verdict": row.get("verdict") if row else np.nan})
            if paper is not None:
                pv = paper[s].get(op, np.nan) if s in paper.columns else np.nan
                ratio = float(sp) / float(pv) if not (fmt.is_missing(sp) or fmt.is_missing(pv)) else np.nan
                # the paper's numbers as published: one decimal
                pv_text = fmt.NA if fmt.is_missing(pv) else f"{float(pv):.1f}"
                cells.append(Cell(pv_text if pv_text == fmt.NA else pv_text + "×",
                                  None if pv_text == fmt.NA else rf"${pv_text}\times$"))
                cells.append(Cell(fmt.num(ratio)))
                rec.update({f"{s}_paper": pv, f"{s}_ratio": ratio})
        rows.append(cells)
        data.append(rec)
    got = [r for r in seen if r]
    deltas = [r.get("cliffs_delta") for r in got if not fmt.is_missing(r.get("cliffs_delta"))]
    ps = [r.get("p_holm") for r in got if not fmt.is_missing(r.get("p_holm"))]
    mwu = [r.get("mwu_p") for r in got if not fmt.is_missing(r.get("mwu_p"))]
    notes = _notes_common(study, got)
    stat = []
    if deltas:
        lo, hi = min(deltas), max(deltas)
        stat.append(f"Cliff's δ {fmt.delta(lo)}" + (f" to {fmt.delta(hi)}" if hi != lo else " in every cell"))
    if mwu:
        stat.append(f"one-sided MWU p ≤ {fmt.pval(max(mwu))} (spin medians)")
    if ps:
        alpha = float(study.summary.get("alpha", 0.05))
        below = sum(p < alpha for p in ps)
        stat.append(f"job-level Holm-adjusted p < {alpha:g} in {below} of {len(ps)} cells (largest {fmt.pval(max(ps))})")
    caption = (f"Hand-written SIMD speedup (ref → avx2, {style.METRIC_TITLES.get(metric, metric)}), "
               f"median ratio with {_ci_name(got)}." + (" " + "; ".join(stat) + "." if stat else ""))
    if paper is not None:
        caption += " paper: the published Table 1 (Xeon Platinum 8268, GCC 13.3.0); ratio = ours / paper."
    return Table(name="table1_hand_simd", title="Table 1: hand-written SIMD speedup (ref → avx2)",
                 caption=caption, header=header, groups=groups if paper is not None else [], rows=rows,
                 notes=notes, data=pd.DataFrame(data), align="l" + "c" * (per * len(schemes)))


# -- full table -----------------------------------------------------------------------------

def _extras(study: Study, metric: str) -> list[str]:
    df = study.comparison(metric, baseline="ref")
    if df.empty:
        return []
    return style.sort_variants(v for v in df["variant"].unique() if v != "avx2")


def table_full(study: Study, metric: str) -> Table:
    extras = _extras(study, metric)
    cols = STAGES + [(f"extra:{v}", "ref", v) for v in extras]
    header = ["Operation", "ref median"] + [STAGE_HEADERS.get(c[0], f"ref→{c[2]}") for c in cols]
    rows, data, seen = [], [], []
    ops_all = study.comparisons.loc[study.comparisons["metric"] == metric, "op"].unique() \
        if not study.comparisons.empty else []
    for scheme in study.schemes:
        rows.append(style.scheme_label(scheme))
        for op in style.sort_ops(ops_all):
            g = study.group(metric, scheme, op, "ref")
            med = g.get("median") if g else np.nan
            cells = [Cell(style.op_label(op)), Cell(fmt.quantity(med))]
            rec = {"scheme": scheme, "op": op, "ref_median": med}
            for stage, base, var in cols:
                row = study.lookup(metric, scheme, op, base, var)
                seen.append(row)
                cells.append(speedup_cell(row, verdict=True))
                key = stage.replace("extra:", "ref_")
                lo, hi, _ = _ci_pair(row) if row else (np.nan, np.nan, True)
                rec.update({f"{key}_speedup": row.get("speedup") if row else np.nan, f"{key}_ci_low": lo,
                            f"{key}_ci_high": hi, f"{key}_verdict": row.get("verdict") if row else np.nan})
            rows.append(cells)
            data.append(rec)
    got = [r for r in seen if r]
    notes = _notes_common(study, got) + [
        "~ : no verdict (adjusted p ≥ α or the CI reaches into the ±threshold band); ▼ : slower.",
    ]
    caption = (f"Every operation and stage ({style.METRIC_TITLES.get(metric, metric)}): compiler = refo0→refnv, "
               f"auto-vec = refnv→ref, hand SIMD = ref→avx2, total = refo0→avx2"
               + (", " + ", ".join(f"ref→{v}" for v in extras) if extras else "")
               + f"; median ratio with {_ci_name(got)}. ref median in {style.METRIC_UNITS.get(metric, metric)} "
               f"per call.")
    return Table(name="table_full", title="All operations, all stages", caption=caption, header=header,
                 rows=rows, notes=notes, data=pd.DataFrame(data), align="lr" + "c" * len(cols))


# -- decomposition --------------------------------------------------------------------------

def table_decomposition(study: Study, metric: str) -> Table:
    df = study.decomposition
    df = df[df["metric"] == metric] if not df.empty else df
    header = ["Operation", "total", "compiler", "auto-vec", "hand SIMD"]
    rows, data = [], []
    for scheme in study.schemes:
        d = df[df["scheme"] == scheme] if not df.empty else df
        if d.empty:
            continue
        rows.append(style.scheme_label(scheme))
        for op in style.sort_ops(d["op"].unique()):
            r = d[d["op"] == op].iloc[0].to_dict()
            cells = [Cell(style.op_label(op)), Cell(fmt.times(r.get("total")),
                                                   rf"${fmt.num(r.get('total'))}\times$"
                                                   if not fmt.is_missing(r.get("total")) else None)]
            for f in ("compiler", "autovec", "hand_simd"):
                v, share = r.get(f), r.get(f"share_{f}")
                text = fmt.times(v) if fmt.is_missing(share) else f"{fmt.times(v)} ({fmt.pct(share)})"
                cells.append(Cell(text))
            rows.append(cells)
            data.append({k: r.get(k, np.nan) for k in ("scheme", "op", "total", "compiler", "autovec",
                                                        "hand_simd", "share_compiler", "share_autovec",
                                                        "share_hand_simd")})
    caption = (f"Decomposition of the cumulative speedup refo0→avx2 ({style.METRIC_TITLES.get(metric, metric)}) "
               f"into compiler × auto-vec × hand SIMD factors; in parentheses each factor's share of "
               f"log(total). A negative share is a factor below 1× (a slowdown).")
    return Table(name="table_decomposition", title="Speedup decomposition", caption=caption, header=header,
                 rows=rows, data=pd.DataFrame(data), align="lcccc")


# -- rendering ------------------------------------------------------------------------------

def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("pqsimd.report", "templates"),
        autoescape=jinja2.select_autoescape(["html", "html.j2"]),
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, undefined=jinja2.StrictUndefined,
    )
    env.filters["tex"] = tex
    env.filters["md"] = lambda s: str(s).replace("|", r"\|")
    return env


def render(table: Table, kind: str) -> str:
    return _env().get_template(f"table.{kind}.j2").render(t=table, tex=tex)


def write_table(table: Table, outdir: Path, suffix: str = "") -> dict[str, Path]:
    out = {}
    for kind, ext in (("tex", "tex"), ("md", "md")):
        out[ext] = files.write_text(outdir / f"{table.name}{suffix}.{ext}", render(table, kind))
    out["csv"] = files.write_text(outdir / f"{table.name}{suffix}.csv",
                                  table.data.to_csv(index=False, na_rep=fmt.NA, float_format="%.6g"))
    return out


def make_tables(study: Study, outdir: Path, reference: str | None = None) -> list[tuple[Table, dict]]:
    """All tables for every metric (the primary metric's without a suffix)."""
    out = []
    for metric in study.metrics or [study.primary_metric]:
        suffix = "" if metric == study.primary_metric else f"_{metric}"
        # the paper's Table 1 is a time (cycle) result: put it beside our time numbers only
        ref = reference if metric == "ticks" else None
        for t in (table1_hand_simd(study, metric, ref), table_full(study, metric),
                  table_decomposition(study, metric)):
            if suffix:
                t.title += f" ({style.METRIC_TITLES.get(metric, metric)})"
            t.name_suffix = suffix
            out.append((t, write_table(t, outdir, suffix)))
    return out
