"""The report's tables, each as LaTeX (booktabs), Markdown and CSV, from one table model.

`Table` holds display cells (unicode text + LaTeX) and a numeric frame for the CSV; the
Jinja2 templates in templates/ render the text formats. Missing data is `n/a`, never NaN.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import jinja2
import numpy as np
import pandas as pd

from ..model import Design
from .. import metrics as metrics_mod
from . import files, fmt, style
from ..results import CT_MARK, FamilyView, Levels, Results, interval

UNRELIABLE = "†"
# marks beside a speedup (faster needs none): the verdict legend of every table says what they mean
VERDICT_MARKS = {"~": "~", "slower": "▼", "same": "≈", "withheld": "⊘"}
VERDICT_LEGEND = ("Verdicts are read off the interval shown: ~ : it reaches into the ±threshold band; ▼ : slower "
                  "(it lies below the band); ≈ : the same (it lies inside the band); ⊘ : withheld, too few jobs for an "
                  "interval at the study's confidence (comparisons.csv says why).")

_TEX = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\ensuremath{\sim}", "^": r"\^{}",
    "×": r"\ensuremath{\times}", "→": r"\ensuremath{\to}", "δ": r"\ensuremath{\delta}",
    "η": r"\ensuremath{\eta}", "α": r"\ensuremath{\alpha}", "†": r"\ensuremath{^\dagger}",
    "≈": r"\ensuremath{\approx}", "▼": r"\ensuremath{\downarrow}", "±": r"\ensuremath{\pm}",
    "−": r"\ensuremath{-}", "≥": r"\ensuremath{\geq}", "⊘": r"\ensuremath{\oslash}", "≤": r"\ensuremath{\leq}", "<": r"\ensuremath{<}", ">": r"\ensuremath{>}",
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
    family: str = ""
    written: Path | None = None  # where write_table put its files (the path without extension)
    files_as: str = ""  # that path relative to the report, as the HTML names it

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
    """(ci_low, ci_high, reaches the study's level) of a comparison row."""
    _sp, lo, hi, lvl = interval(row)
    return lo, hi, str(row.get("verdict")) != "withheld"


def speedup_cell(row: dict | None, with_ci: bool = True, verdict: bool = False, levels: Levels | None = None,
                 metric: str | None = None) -> Cell:
    """A speedup with its interval (and the interval's own level when the table's levels differ); of a metric
    whose ratio reads as a change (stack, size: exact bytes), the variant's quantity against the baseline's."""
    if row is None or fmt.is_missing(row.get("speedup")):
        return Cell(fmt.NA)
    if not metrics_mod.reads_as_speedup(metric):
        text = fmt.ratio(metric, row["speedup"])
        return Cell(text, tex(text).replace("×", r"$\times$"))
    s = row["speedup"]
    lo, hi, reliable = _ci_pair(row)
    mark = "" if reliable else UNRELIABLE
    text = fmt.times(s)
    latex = rf"${fmt.num(s)}\times$"
    if with_ci:
        ci = fmt.ci(lo, hi) + (levels.after(row.get("ci_level")) if levels else "")
        text += f" {ci}{mark}"
        latex += rf" {{\scriptsize {tex(ci)}{tex(mark)}}}"
    if verdict:
        v = str(row.get("verdict", ""))
        sym = VERDICT_MARKS.get(v, "")
        if sym:
            text += f" {sym}"
            latex += " " + tex(sym)
    if row.get("ct_leak") is True or row.get("ct_leak") is np.True_:  # results/constant_time: a confirmed leak
        text += f" {CT_MARK}"
        latex += r" {\scriptsize ct!}"
    return Cell(text, latex)


def _notes_common(study: Results, rows: list[dict]) -> list[str]:
    notes = []
    if any(r and not _ci_pair(r)[2] for r in rows):
        notes.append(f"{UNRELIABLE} interval below the study's confidence (too few jobs): [min, max] of the job "
                     "ratios at its own, lower level (comparisons.csv ci_level); no verdict.")
    return notes


def row_levels(rows: list[dict]) -> Levels:
    """The achieved levels of the comparison rows a table prints (analyze's ci_level)."""
    return Levels.of(r.get("ci_level") for r in rows if r and not fmt.is_missing(r.get("speedup")))


def _ci_name(study: Results, rows: list[dict]) -> str:
    what = ("order-statistic interval of the jobs' ratios" if study.design == Design.PAIRED
            else "job-level t interval")
    return (f"{what} at {row_levels(rows).text()} (the level each interval achieves; the family's target "
            f"{fmt.level(study.summary.get('ci_level'))}, multiplicity-adjusted)")


def _design(study: Results) -> str:
    """The design and the estimand of the table's speedups (Results.estimand_short: what the number is, and is
    not), from what analyze recorded."""
    short = study.estimand_short()
    what = f" Speedup: {short}." if short else (" Speedups are medians of the jobs' ratios."
                                                if study.design == Design.PAIRED else "")
    return (" Paired design: every variant timed in each job in a per-spin random order." if study.design == Design.PAIRED
            else "") + what


# -- table 1 --------------------------------------------------------------------------------

def reference_frame(study: Results, fam: FamilyView) -> tuple[pd.DataFrame | None, str]:
    """The family's published reference table (summary.json), indexed by op, and what it is."""
    ref = (study.summary.get("families") or {}).get(fam.name, {}).get("reference")
    if not ref or not ref.get("rows"):
        return None, ""
    df = pd.DataFrame(ref["rows"]).set_index("op")
    for c in df.columns:
        num = pd.to_numeric(df[c], errors="coerce")
        if num.notna().any():
            df[c] = num
    return df, " ".join(ref.get("about", [])[:2])


def _timed(study: Results, fam: FamilyView) -> set[str]:
    """The variants the study has groups of in the family's parameter sets."""
    g = study.groups
    return set(g.loc[g["scheme"].isin(fam.schemes), "variant"]) if not g.empty and "scheme" in g else set()


def table1_hand_simd(study: Results, fam: FamilyView, metric: str, reference: str | None = None) -> Table:
    h = study.hand_of(fam)
    schemes = fam.schemes
    paper, about = reference_frame(study, fam) if reference == "paper" else (None, "")
    header, groups, rows, data, seen = ["Operation"], [], [], [], []
    per = 3 if paper is not None else 1
    for sc in schemes:
        if paper is not None:
            header += ["ours", "paper", "ratio"]
            groups.append((fam.scheme_label(sc), 3))
        else:
            header.append(fam.scheme_label(sc))
    ops = [o for o in (fam.views.get("table1") or fam.shown_ops(fam.ops))]
    lv = row_levels([study.lookup(metric, sc, op, h.base, h.variant) for op in ops for sc in schemes])
    for op in ops:
        label = fam.label(op)
        cells = [Cell(label)]
        rec = {"op": op, "label": label}
        for sc in schemes:
            row = study.lookup(metric, sc, op, h.base, h.variant)
            seen.append(row)
            cells.append(speedup_cell(row, levels=lv, metric=metric))
            lo, hi, _ = _ci_pair(row) if row else (np.nan, np.nan, True)
            sp = row.get("speedup") if row else np.nan
            rec.update({f"{sc}_speedup": sp, f"{sc}_ci_low": lo, f"{sc}_ci_high": hi,
                        f"{sc}_ci_level": row.get("ci_level") if row else np.nan,
                        f"{sc}_cliffs_delta": row.get("cliffs_delta") if row else np.nan,
                        f"{sc}_verdict": row.get("verdict") if row else np.nan})
            if paper is not None:
                pv = paper[sc].get(op, np.nan) if sc in paper.columns else np.nan
                ratio = float(sp) / float(pv) if not (fmt.is_missing(sp) or fmt.is_missing(pv)) else np.nan
                # the published numbers as published: one decimal
                pv_text = fmt.NA if fmt.is_missing(pv) else f"{float(pv):.1f}"
                cells.append(Cell(pv_text if pv_text == fmt.NA else pv_text + "×",
                                  None if pv_text == fmt.NA else rf"${pv_text}\times$"))
                cells.append(Cell(fmt.num(ratio)))
                rec.update({f"{sc}_paper": pv, f"{sc}_ratio": ratio})
        rows.append(cells)
        data.append(rec)
    got = [r for r in seen if r]
    deltas = [r.get("cliffs_delta") for r in got if not fmt.is_missing(r.get("cliffs_delta"))]
    mwu = [r.get("mwu_p") for r in got if not fmt.is_missing(r.get("mwu_p"))]
    notes = _notes_common(study, got)
    stat = []
    if deltas:
        lo, hi = min(deltas), max(deltas)
        stat.append(f"Cliff's δ {fmt.delta(lo)}" + (f" to {fmt.delta(hi)}" if hi != lo else " in every cell"))
    if mwu:
        stat.append(f"one-sided MWU p ≤ {fmt.pval(max(mwu))} (spin medians, descriptive)")
    caption = (f"{fam.title}: {h.label} speedup ({h.base} → {h.variant}, {style.metric_title(metric)}), "
               f"{'the typical layout' if study.estimand_short() and 'typical layout' in study.estimand_short() else 'median job ratio' if study.design == 'paired' else 'ratio'} with the {_ci_name(study, got)}." + (" " + "; ".join(stat) + "." if stat else "")
               + _design(study))
    if paper is not None:
        caption += f" paper: {about or 'the published table'}; ratio = ours / paper."
    what = "speedup"
    if not metrics_mod.reads_as_speedup(metric):  # exact bytes: a change, not a speedup, and no interval
        what = f"{style.metric_title(metric)} change"
        caption = (f"{fam.title}: {h.label} ({h.base} → {h.variant}), {style.metric_title(metric)}: the {h.variant} "
                   f"build's bytes against the {h.base} build's (× and %; exact, one measurement per build).")
        notes = []
    return Table(name="table1_hand_simd", title=f"{fam.title}: Table 1, {h.label} {what} ({h.base} → {h.variant})",
                 caption=caption, header=header, groups=groups if paper is not None else [], rows=rows,
                 notes=notes, data=pd.DataFrame(data), align="l" + "c" * (per * len(schemes)))


# -- full table -----------------------------------------------------------------------------

def _columns(study: Results, fam: FamilyView, metric: str) -> list[tuple[str, str, str, str]]:
    """(key, header, baseline, variant): every chain stage, the total, the further comparisons, the extras."""
    ch = study.chain
    cols = [(s.stage, s.label, s.base, s.variant) for s in ch.steps]
    if len(ch.steps) > 1:
        cols.append(("total", "total", ch.first, ch.last))
    cols += [(s.stage, s.label, s.base, s.variant) for s in ch.also]
    df = study.comparison(metric, stage="extra")
    if not df.empty:
        for v in [v for v in study.variants if v in set(df["variant"])]:
            cols.append((f"extra_{v}", f"{ch.extra_baseline}→{v}", ch.extra_baseline, v))
    have = study.comparison(metric)
    pairs = set(zip(have["baseline"], have["variant"])) if not have.empty else set()
    out = [c for c in cols if (c[2], c[3]) in pairs]
    # over a gap in the chain (a study without its middle variant): the cumulative comparison into each variant
    # no shown step ends at (refo0 → ref when refnv is left out), which would otherwise be in no column
    reached = {c[3] for c in out if c[0] != "total"}
    cum = study.comparison(metric, stage="cumulative")
    for v in [v for v in study.variants if not cum.empty and v in set(cum["variant"])]:
        if v not in reached and (ch.first, v) in pairs and (ch.first, v) not in {(c[2], c[3]) for c in out}:
            out.append((f"cumulative_{v}", f"{ch.first}→{v}", ch.first, v))
    return out


def table_full(study: Results, fam: FamilyView, metric: str) -> Table:
    cols = _columns(study, fam, metric)
    timed = _timed(study, fam)
    h = study.hand_of(fam)
    # the median column is of the family's hand stage's baseline (ref; Keccak's plain), else of the first baseline
    # its comparisons have
    base_var = next((v for v in ([h.base] if h else []) + [c[2] for c in cols] + list(study.variants) if v in timed),
                    h.base if h else study.variants[0])
    header = ["Operation", f"{base_var} median"] + [c[1] for c in cols]
    rows, data, seen = [], [], []
    comp = study.comparison(metric)
    lv = row_levels([study.lookup(metric, sc, op, b, v) for sc in fam.schemes
                     for op in (comp.loc[comp["scheme"] == sc, "op"].unique() if not comp.empty else [])
                     for _k, _h, b, v in cols])
    for scheme in fam.schemes:
        ops = fam.sort_ops(comp.loc[comp["scheme"] == scheme, "op"].unique()) if not comp.empty else []
        if not ops:
            continue
        rows.append(fam.scheme_label(scheme))
        for op in ops:
            g = study.group(metric, scheme, op, base_var)
            med = g.get("median") if g else np.nan
            cells = [Cell(fam.label(op)), Cell(fmt.quantity(med))]
            rec = {"scheme": scheme, "op": op, f"{base_var}_median": med}
            for key, _, base, var in cols:
                row = study.lookup(metric, scheme, op, base, var)
                seen.append(row)
                cells.append(speedup_cell(row, verdict=True, levels=lv, metric=metric))
                lo, hi, _ = _ci_pair(row) if row else (np.nan, np.nan, True)
                rec.update({f"{key}_speedup": row.get("speedup") if row else np.nan, f"{key}_ci_low": lo,
                            f"{key}_ci_high": hi, f"{key}_ci_level": row.get("ci_level") if row else np.nan,
                            f"{key}_verdict": row.get("verdict") if row else np.nan})
            rows.append(cells)
            data.append(rec)
    got = [r for r in seen if r]
    notes = _notes_common(study, got) + [
        VERDICT_LEGEND,
    ]
    caption = (f"{fam.title}: every operation and comparison ({style.metric_title(metric)}): "
               + ", ".join(f"{c[1]} = {c[2]}→{c[3]}" for c in cols)
               + f"; median ratio with {_ci_name(study, got)}. {base_var} median in {study.unit(metric)} "
               f"per call." + _design(study))
    if not metrics_mod.reads_as_speedup(metric):
        caption = (f"{fam.title}: every operation and comparison ({style.metric_title(metric)}): "
                   + ", ".join(f"{c[1]} = {c[2]}→{c[3]}" for c in cols)
                   + f"; each the later build's bytes against the earlier's (× and %; exact). {base_var} in bytes.")
        notes = []
    return Table(name="table_full", title=f"{fam.title}: all operations, all stages", caption=caption, header=header,
                 rows=rows, notes=notes, data=pd.DataFrame(data), align="lr" + "c" * len(cols))


# -- decomposition --------------------------------------------------------------------------

def table_decomposition(study: Results, fam: FamilyView, metric: str) -> Table:
    df = study.decomposition
    ch = study.chain
    if not df.empty:
        df = df[(df["metric"] == metric) & df["scheme"].isin(fam.schemes)]
        if "compiler" in df.columns:
            df = df[df["compiler"] == study.primary_compiler]
    header = ["Operation", "total"] + [s.label for s in ch.steps]
    rows, data = [], []
    share_cols = [f"share_{s.stage}_ci_level" for s in ch.steps if f"share_{s.stage}_ci_level" in df.columns]
    lv = Levels.of([*df.get("total_ci_level", []), *(x for c in share_cols for x in df[c])] if not df.empty else [])
    for scheme in fam.schemes:
        d = df[df["scheme"] == scheme] if not df.empty else df
        if d.empty:
            continue
        rows.append(fam.scheme_label(scheme))
        for op in fam.sort_ops(d["op"].unique()):
            r = d[d["op"] == op].iloc[0].to_dict()
            cells = [Cell(fam.label(op)), speedup_cell({"speedup": r.get("total"), "ci_low": r.get("total_ci_low"),
                                                        "ci_high": r.get("total_ci_high"),
                                                        "ci_level": r.get("total_ci_level")}, levels=lv)]
            rec = {"scheme": scheme, "op": op, "total": r.get("total", np.nan),
                   "total_ci_low": r.get("total_ci_low", np.nan), "total_ci_high": r.get("total_ci_high", np.nan),
                   "total_ci_level": r.get("total_ci_level", np.nan)}
            for s in ch.steps:
                v, share = r.get(f"factor_{s.stage}"), r.get(f"share_{s.stage}")
                lo, hi = r.get(f"share_{s.stage}_ci_low"), r.get(f"share_{s.stage}_ci_high")
                text = fmt.times(v)
                share_lv = r.get(f"share_{s.stage}_ci_level")
                if not fmt.is_missing(share):
                    text += f" ({fmt.pct(share)}" + ("" if fmt.is_missing(lo) else
                                                     f" [{fmt.pct(lo)}, {fmt.pct(hi)}]{lv.after(share_lv)}") + ")"
                cells.append(Cell(text))
                rec.update({f"factor_{s.stage}": v, f"share_{s.stage}": share, f"share_{s.stage}_ci_low": lo,
                            f"share_{s.stage}_ci_high": hi, f"share_{s.stage}_ci_level": share_lv})
            rows.append(cells)
            data.append(rec)
    caption = (f"{fam.title}: the speedup {ch.first}→{ch.last} ({style.metric_title(metric)}) as the product of the "
               f"stages {' × '.join(s.label for s in ch.steps)} (each the stage comparison); in parentheses each "
               f"factor's share of log(total) with its interval. The total's and the shares' intervals are ranges over "
               f"the stages' intervals, so they cover whenever all stages' do: at {lv.text()} (1 - the stages' summed "
               f"miss probabilities). A negative share is a factor below 1× (a slowdown).")
    return Table(name="table_decomposition", title=f"{fam.title}: speedup decomposition", caption=caption,
                 header=header, rows=rows, data=pd.DataFrame(data), align="l" + "c" * (len(ch.steps) + 1))


# -- compilers ------------------------------------------------------------------------------

def compiler_rows(study: Results, fam: FamilyView, metric: str) -> pd.DataFrame:
    """One row per (scheme, op, compiler): the compiler_view stages and the hand stage, from comparisons."""
    ch = study.chain
    stages = [s for s in (*ch.compiler_view, ch.hand.stage if ch.hand else None) if s and ch.step(s)]
    df = study.comparisons
    if df.empty or len(study.compilers) < 2:
        return pd.DataFrame()
    df = df[(df["metric"] == metric) & df["scheme"].isin(fam.schemes) & df["stage"].isin(stages)
            & (df["compiler"] == df["baseline_compiler"])]
    out = []
    for (scheme, op, comp), d in df.groupby(["scheme", "op", "compiler"], sort=False):
        rec = {"scheme": scheme, "op": op, "compiler": comp}
        for st in stages:
            r = d[d["stage"] == st]
            if len(r):
                r = r.iloc[0]
                lo, hi, _ = _ci_pair(r.to_dict())
                rec.update({f"{st}_speedup": r["speedup"], f"{st}_ci_low": lo, f"{st}_ci_high": hi,
                            f"{st}_ci_level": r.get("ci_level", np.nan), f"{st}_verdict": r["verdict"]})
        out.append(rec)
    return pd.DataFrame(out)


def table_compilers(study: Results, fam: FamilyView, metric: str) -> Table | None:
    data = compiler_rows(study, fam, metric)
    if data.empty:
        return None
    ch = study.chain
    stages = [s for s in (*ch.compiler_view, ch.hand.stage if ch.hand else None) if s and ch.step(s)]
    stages = [s for s in stages if f"{s}_speedup" in data.columns]
    comps = study.compilers
    header = ["Operation", "compiler"] + [ch.stage_label(s) for s in stages]
    as_rows = [{"speedup": r.get(f"{st}_speedup"), "ci_low": r.get(f"{st}_ci_low"), "ci_high": r.get(f"{st}_ci_high"),
                "ci_level": r.get(f"{st}_ci_level"), "verdict": r.get(f"{st}_verdict")}
               for r in data.to_dict("records") for st in stages]
    lv = row_levels(as_rows)
    rows = []
    for scheme in fam.schemes:
        d = data[data["scheme"] == scheme]
        if d.empty:
            continue
        rows.append(fam.scheme_label(scheme))
        for op in fam.sort_ops(d["op"].unique()):
            for i, comp in enumerate(c for c in comps if c in set(d.loc[d["op"] == op, "compiler"])):
                r = d[(d["op"] == op) & (d["compiler"] == comp)].iloc[0].to_dict()
                cells = [Cell(fam.label(op) if i == 0 else ""), Cell(comp)]
                for st in stages:
                    cells.append(speedup_cell({"speedup": r.get(f"{st}_speedup"), "ci_low": r.get(f"{st}_ci_low"),
                                               "ci_high": r.get(f"{st}_ci_high"), "ci_level": r.get(f"{st}_ci_level"),
                                               "verdict": r.get(f"{st}_verdict")}, verdict=True, levels=lv))
                rows.append(cells)
    versions = (study.manifest.get("compilers") or {})
    notes = [f"{c}: {versions[c].get('version')}" for c in comps if isinstance(versions.get(c), dict)]
    caption = (f"{fam.title}: the same stages under every compiler ({style.metric_title(metric)}); "
               f"median ratio with {_ci_name(study, as_rows)}.")
    return Table(name="table_compilers", title=f"{fam.title}: compiler sensitivity", caption=caption, header=header,
                 rows=rows, notes=notes, data=data, align="ll" + "c" * len(stages))


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
    table.written = outdir / f"{table.name}{suffix}"
    for kind, ext in (("tex", "tex"), ("md", "md")):
        out[ext] = files.write_text(outdir / f"{table.name}{suffix}.{ext}", render(table, kind))
    out["csv"] = files.write_text(outdir / f"{table.name}{suffix}.csv",
                                  table.data.to_csv(index=False, na_rep=fmt.NA, float_format="%.6g"))
    return out


def make_tables(study: Results, outdir: Path, reference: str | None = None) -> list[tuple[Table, dict]]:
    """All tables of every family, for every metric (the primary metric's without a suffix), into
    outdir/<family>/."""
    out = []
    for fam in study.chain_families:
        for metric in study.metrics or [study.primary_metric]:
            suffix = "" if metric == study.primary_metric else f"_{metric}"
            # a published reference is a time (cycle) result: put it beside our time numbers only
            ref = reference if metric == metrics_mod.TIME else None
            cost = not metrics_mod.reads_as_speedup(metric)  # bytes: no speedup decomposition, no compiler speedups
            tables = [table1_hand_simd(study, fam, metric, ref), table_full(study, fam, metric)]
            if not cost:
                tables.append(table_decomposition(study, fam, metric))
            tc = None if cost else table_compilers(study, fam, metric)
            if tc is not None:
                tables.append(tc)
            for t in tables:
                if suffix:
                    t.title += f" ({style.metric_title(metric)})"
                t.name_suffix = suffix
                t.family = fam.name
                out.append((t, write_table(t, outdir / fam.name, suffix)))
    return out


def family_part_tables(study: Results, df: pd.DataFrame, outdir: Path, folder: str, name: str, title, caption: str,
                       header: list[str], rows_of, align: str) -> tuple[list, list]:
    """([], [Table]) of a view part with one table per family (the hash share, the per-unit view, the hazards):
    rows_of(fam) -> its rows (none: no table), written as outdir/<folder>/<name>_<family>.*; title(fam), and
    caption and header as strings or functions of the family."""
    tables: list = []
    if df.empty:
        return [], tables
    out = Path(outdir) / folder
    for fam in study.families:
        body = rows_of(fam)
        if not body:
            continue
        out.mkdir(parents=True, exist_ok=True)
        t = Table(name=f"{name}_{fam.name}", title=title(fam), caption=caption(fam) if callable(caption) else caption,
                  header=header(fam) if callable(header) else header, rows=[[Cell(c) for c in r] for r in body],
                  data=df[df["scheme"].isin(fam.schemes)].reset_index(drop=True), align=align)
        write_table(t, out)
        tables.append(t)
    return [], tables

