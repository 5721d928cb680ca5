"""`pqsimd show DIR` and `pqsimd compare DIR_A DIR_B`: benchstat-style tables in the terminal (rich).
Both only format what analyze wrote (results/) or computed (analyze.crossstudy, called by the command
line)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..console import stdout_console
from ..errors import PqsimdError, command, did_you_mean
from .. import metrics as metrics_mod
from ..model import MEDIANS_QUOTIENT_NOTE, medians_quotient_outside
from . import fmt, style
from ..results import Levels, Results, interval, load_study

VERDICT_STYLE = {"faster": "bold green", "slower": "bold red", "~": "dim", "same": "cyan", "withheld": "magenta",
                 fmt.NA: "yellow"}
MARKS = "¹²³⁴⁵⁶⁷⁸⁹"


def _console(console: Console | None) -> Console:
    if console is not None:
        return console
    return stdout_console()


def _verdict(v) -> Text:
    s = fmt.NA if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)
    return Text(s, style=VERDICT_STYLE.get(s, ""))


def _ci_of(row: dict) -> tuple:
    _sp, lo, hi, _lvl = interval(row)
    return lo, hi


class _Footnotes:
    def __init__(self) -> None:
        self.items: list[str] = []

    def mark(self, text: str) -> str:
        if text not in self.items:
            self.items.append(text)
        i = self.items.index(text)
        return MARKS[i] if i < len(MARKS) else f"[{i + 1}]"


def _row_marks(row: dict | None, notes: _Footnotes) -> str:
    """Footnote marks of a comparison row: its diagnostics and an interval below the family's level."""
    if not row:
        return ""
    marks = []
    if str(row.get("regimes")).lower() == "true":
        marks.append(notes.mark("regimes: the jobs' ratios form two clusters; the verdict without the minority's "
                                "jobs is listed under Regimes (comparisons.csv note, without_minority_*)"))
    if not fmt.is_missing(row.get("shared_cpu_jobs")) and float(row.get("shared_cpu_jobs")) > 0:
        marks.append(notes.mark("uses jobs that shared their CPU with another program (kept under the study's --shared-cpu setting); the "
                                "verdict without them is listed under Shared CPU (comparisons.csv without_shared_*)"))
    if str(row.get("drift")).lower() == "true":
        marks.append(notes.mark("drift: the ratio trends within a job (comparisons.csv drift_jobs)"))
    if str(row.get("resolution_limited")).lower() == "true":
        marks.append(notes.mark("resolution-limited: the clock's step, not the jobs' spread, sets the interval "
                                "(widened by the lattice step, comparisons.csv resolution)"))
    return "".join(marks)


def _check_choice(value, allowed, what: str, flag: str) -> None:
    if value is not None and value not in allowed:
        raise PqsimdError(f"no {what} {value!r} in this study; {flag} one of: {', '.join(allowed) or 'none'}"
                          f"{did_you_mean(value, allowed)}")


def own_comparison(study: Results, variant: str) -> tuple[str, str] | None:
    """(stage, baseline) a variant is shown against: its chain step, else the extra baseline."""
    ch = study.chain
    step = next((s for s in (*ch.steps, *ch.also) if s.variant == variant), None)
    if step is not None:
        return step.stage, step.base
    if variant == ch.first:
        return None
    return "extra", ch.extra_baseline


def show_study(directory, metric: str | None = None, stage: str | None = None, compiler: str | None = None,
               console: Console | None = None, beside: Path | None = None) -> Results:
    """Print the study's results, grouped by family: per parameter set, op and variant, median ± CI,
    speedup [CI] against the variant's own stage, δ, p, verdict; with `beside` (a study of another
    ISA, whose cross-ISA tables the command line wrote into results/) the cross-ISA lines after them."""
    study = load_study(Path(directory))
    con = _console(console)
    if study.counts_only:  # counts alone: no comparisons, only the views of what was counted
        from . import parts

        if metric is not None and metrics_mod.of(metric).timed:
            raise PqsimdError(f"{directory} counted only (nothing timed): it has no {metric} measurements; add them "
                              f"with {command('run', directory, '--metric', metric)}, or drop --metric")

        con.print(Text("counts only (no timing in this study): the views of what it counted", style="dim"))
        for line in study.not_measured_notes():
            con.print(Text(f"n/a: {line}", style="yellow"))
        parts.show_all(study, con, metric or metrics_mod.TIME, compiler or study.primary_compiler)
        return study
    if metric is not None and metric not in study.metrics and metric in metrics_mod.names():
        raise PqsimdError(f"{directory} has no {metric} measurements (it has: {', '.join(study.metrics) or 'none'}); "
                          f"add them with {command('run', directory, '--metric', metric)}, then "
                          f"{command('show', directory, '--metric', metric)}")
    _check_choice(metric, study.metrics, "metric", "--metric")
    stages = sorted(study.comparisons["stage"].dropna().unique()) if "stage" in study.comparisons.columns else []
    _check_choice(stage, stages, "stage", "--stage")
    _check_choice(compiler, study.compilers, "compiler", "--compiler")
    metric = metric or study.primary_metric
    compilers = [compiler] if compiler else study.compilers
    notes = _Footnotes()
    unit = study.unit(metric)
    from . import ct as ct_view

    colours = style.variant_colours(study.chain.variants, study.variants)
    design, warm, carry = study.design_notes()
    con.print(Text(f"design: {design}; warm-up: {warm}; carry-over: {carry}", style="dim"))
    power = study.power_note()
    if power:
        con.print(Text(f"power: {power}", style="dim"))
    clock = study.clock_note()
    if clock:
        con.print(Text(f"clock: {clock}", style="dim"))
    if (study.summary.get("aa_check") or {}).get("ran"):
        con.print(Text(f"A/A: {study.aa_note()}", style="dim"))
    if study.summary.get("layout"):
        con.print(Text(f"layout: {study.layout_note()}", style="dim"))
    if (study.summary.get("coresidency") or {}).get("rows"):
        con.print(Text(f"co-residency: {study.coresidency_note()}", style="dim"))
    if study.budget_note():
        con.print(Text(f"budget: {study.budget_note()}", style="dim"))
    shared = study.shared_cpu_note()
    if shared:
        con.print(Text(f"shared CPU: {shared}", style="bold yellow"))
    for line in study.not_measured_notes():
        con.print(Text(f"n/a: {line}", style="yellow"))
    for fam in study.families:
        con.print(Text(fam.title, style="bold underline"))
        for comp in compilers:
            for scheme in fam.schemes:
                title = f"{fam.scheme_label(scheme)} · {style.metric_title(metric)}"
                if len(study.compilers) > 1:
                    title += f" · {comp}"
                if stage:
                    title += f" · stage {study.chain.stage_label(stage)}"
                comp_df = study.comparison(metric, compiler=comp, scheme=scheme)
                ops = fam.sort_ops(comp_df["op"].unique()) if not comp_df.empty else []
                body: list = []  # (op label, variant text, group row, comparison row) or None: a blank line
                for i, op in enumerate(ops):
                    first_row = True
                    for variant in study.variants:
                        g = study.group(metric, scheme, op, variant, comp)
                        rows = comp_df[(comp_df["op"] == op) & (comp_df["variant"] == variant)]
                        if stage:
                            rows = rows[rows["stage"] == stage]
                            if rows.empty:
                                continue
                            row = rows.iloc[0].to_dict()
                        else:
                            own = own_comparison(study, variant)
                            if own is None:
                                row = None
                            else:
                                pick = rows[rows["baseline"] == own[1]]
                                if pick.empty and not rows.empty:  # its own baseline is not in the study
                                    pick = rows
                                row = pick.iloc[0].to_dict() if not pick.empty else {}
                            if g is None and not row:
                                continue
                        leak = f" {ct_view.MARK}" if (row or {}).get("ct_leak") else ""
                        body.append((Text(fam.label(op) if first_row else ""),
                                     Text(variant + _row_marks(row, notes) + leak,
                                          style=f"bold {style.variant_colour(variant, colours)}"), g, row))
                        first_row = False
                    if i < len(ops) - 1 and not stage:
                        body.append(None)
                con.print(_show_table(title, unit, body, study, notes, metric))
                con.print()
    _without(study, con)
    from . import parts

    # the registered views' sections: attribution, portfolio, cross-implementation, footprint, constant time,
    # the explanations (report/parts.py)
    parts.show_all(study, con, metric, compiler or study.primary_compiler)
    if beside is not None:
        from .crossisa import load, sentences

        cross, mca, _info = load(study.directory)
        con.print(Text("Across ISAs (hand-written SIMD on each)", style="bold underline"))
        for line in sentences(study, cross, mca):
            con.print(line, soft_wrap=True)
        con.print()
    for w in study.summary.get("warnings") or []:
        notes.mark(str(w.get("message", w)) if isinstance(w, dict) else str(w))
    for i, n in enumerate(notes.items):
        mark = MARKS[i] if i < len(MARKS) else f"[{i + 1}]"
        con.print(Text(f"{mark} {n}", style="dim"))
    con.print(Text(study.reading_note(), style="dim"))
    return study


def _show_table(title: str, unit: str, body: list, study: Results, notes: _Footnotes, metric: str | None = None) -> Table:
    """One parameter set's table of `show`: every interval with the level analyze computed for it, in
    the header when the table's intervals share one, else after each interval. A metric whose ratio
    reads as a change (metrics.Ratio.CHANGE: stack, size, exact per op) gets the change table."""
    from .. import metrics as metrics_mod

    if not metrics_mod.reads_as_speedup(metric):
        return _change_table(title, unit, body, metric)
    rows = [b for b in body if b is not None]
    med_lv = Levels.of(g.get("median_ci_level") for _, _, g, _ in rows if g)
    sp_lv = Levels.of(r.get("ci_level") for _, _, _, r in rows if r and not fmt.is_missing(r.get("speedup")))
    t = Table(title=title, title_justify="left", header_style="bold", box=None, pad_edge=False)
    med_head = f"median ± CI {med_lv.text()}" if not med_lv.per_row else "median ± CI (level)"
    sp_head = f"speedup [CI {sp_lv.text()}]" if not sp_lv.per_row else "speedup [CI] (level)"
    for col, just in (("op", "left"), ("variant", "left"), (f"{med_head} ({unit}/call)", "right"), ("vs", "left"),
                      (sp_head, "right"), ("δ", "right"), ("verdict", "left")):
        t.add_column(col, justify=just, no_wrap=True)
    for b in body:
        if b is None:
            t.add_row()
            continue
        name, var_text, g, row = b
        med = fmt.NA
        if g:
            m = g.get("median")
            med = fmt.quantity(m)
            lo, hi = g.get("median_ci_low"), g.get("median_ci_high")
            if not (fmt.is_missing(lo) or fmt.is_missing(m)) and m:
                half = max(hi - m, m - lo)
                # near zero (the self-check op) a relative spread means nothing: give the unit
                med += f" ± {fmt.quantity(half)}" if abs(m) < 1 else f" ± {fmt.small_pct(half / abs(m))}"
                med += med_lv.after(g.get("median_ci_level"))
        if not row:
            t.add_row(name, var_text, med, "", "", "", "")
            continue
        lo, hi = _ci_of(row)
        sp = fmt.times(row.get("speedup"))
        lvl = row.get("ci_level")
        ci = fmt.ci(lo, hi) + sp_lv.after(lvl)
        if not fmt.is_missing(lvl) and float(lvl) < float(study.summary.get("ci_level") or 0):
            ci += notes.mark("interval below the family's level: too few jobs for it (the row's "
                             "ci_level; verdict withheld)")
        if medians_quotient_outside(row) is not None:
            ci += notes.mark(MEDIANS_QUOTIENT_NOTE)
        t.add_row(name, var_text, med, row.get("baseline", "") or "", sp if sp == fmt.NA else f"{sp} {ci}",
                  fmt.delta(row.get("cliffs_delta")), _verdict(row.get("verdict")))
    return t


def _change_table(title: str, unit: str, body: list, metric: str | None) -> Table:
    """The metric's exact value per build, the variant's against the baseline's (× and %) and the verdict
    in the metric's words (more/fewer bytes), never a speedup."""
    t = Table(title=title, title_justify="left", header_style="bold", box=None, pad_edge=False)
    for col, just in (("op", "left"), ("variant", "left"), (unit, "right"), ("vs", "left"), (f"{unit} vs baseline", "right"),
                      ("verdict", "left")):
        t.add_column(col, justify=just, no_wrap=True)
    for b in body:
        if b is None:
            t.add_row()
            continue
        name, var_text, g, row = b
        med = fmt.quantity(g.get("median")) if g else fmt.NA
        if not row:
            t.add_row(name, var_text, med, "", "", "")
            continue
        t.add_row(name, var_text, med, row.get("baseline", "") or "", fmt.ratio(metric, row.get("speedup")),
                  Text(fmt.verdict(metric, row.get("verdict", fmt.NA))))
    return t


WITHOUT_LINES = 12  # comparisons listed per block; the rest are in comparisons.csv


def _without(study: Results, con: Console) -> None:
    """The comparisons whose jobs fall into two states, and those that use jobs that shared their CPU:
    each verdict with all jobs and without the minority's (the shared) jobs, the changed ones first."""
    for what, title, note in (("minority", "Regimes", study.regime_note()),
                              ("shared", "Shared CPU", study.shared_cpu_note())):
        rows = study.without_rows(what)
        if not len(rows):
            continue
        con.print(Text(title, style="bold underline"))
        con.print(Text(note or "", style="dim"), soft_wrap=True)
        left = pd.to_numeric(rows[f"without_{what}_jobs"], errors="coerce").fillna(0) if f"without_{what}_jobs" in rows \
            else pd.Series(1, index=rows.index)
        if not (left > 0).any():  # every job was in the set: nothing is left to list row by row
            con.print()
            continue
        for _, r in rows.head(WITHOUT_LINES).iterrows():
            changed = r[f"without_{what}_verdict"] != r["verdict"]
            con.print(Text(("* " if changed else "  ") + study.without_line(r, what),
                           style="yellow" if changed else ""), soft_wrap=True)
        if len(rows) > WITHOUT_LINES:
            con.print(Text(f"  ... and {len(rows) - WITHOUT_LINES} more (comparisons.csv without_{what}_*); "
                           "* marks a verdict that changes", style="dim"))
        con.print()


# -- compare ---------------------------------------------------------------------------------

def _who(study: Results) -> str:
    m = study.manifest.get("machine") if isinstance(study.manifest.get("machine"), dict) else {}
    bits = [str(m[k]) for k in ("hostname", "cpu_model") if m.get(k)]
    return f"{study.directory}" + (f" ({', '.join(bits)})" if bits else "")


def print_comparison(dir_a, dir_b, computed: tuple[pd.DataFrame, dict], console: Console | None = None) -> pd.DataFrame:
    """Print the same (metric, scheme, op, variant, compiler) across two studies: `computed`, the table and
    its record from analyze.crossstudy.compare_studies (called by the command line)."""
    a, b = load_study(Path(dir_a)), load_study(Path(dir_b))
    df, meta = computed
    con = _console(console)
    con.print(f"A = {_who(a)}", markup=False)
    con.print(f"B = {_who(b)}", markup=False)
    if df.empty:
        con.print("the studies have no groups in common or otherwise: n/a")
        return df
    colours = style.variant_colours(a.chain.variants, sorted(set(df["variant"])))
    pct = fmt.level(meta["ci_level"])
    for (metric, scheme, comp), d in df.groupby(["metric", "scheme", "compiler"], sort=False):
        fam = a.family_of(scheme) or b.family_of(scheme)
        label = fam.scheme_label(scheme) if fam else scheme
        unit = a.unit(metric)
        t = Table(title=f"{label} · {style.metric_title(metric)} · {comp}", title_justify="left", header_style="bold",
                  box=None, pad_edge=False)
        lv = Levels.of(d.loc[d["ratio"].notna(), "ci_level"])
        for col, just in (("op", "left"), ("variant", "left"), (f"A median ({unit}/call)", "right"),
                          (f"B median ({unit}/call)", "right"),
                          (f"B/A [CI {lv.text()}]" if not lv.per_row else "B/A [CI] (level)", "right"),
                          ("verdict (B vs A)", "left"), ("", "left")):
            t.add_column(col, justify=just, no_wrap=True)
        prev = None
        for op, dop in d.groupby("op", sort=False):
            oplabel = fam.label(op) if fam else op
            note = dop["note"].iloc[0]
            if len(dop) > 1 and note in ("only in A", "only in B") and (dop["note"] == note).all():
                # a whole op missing from one study: one explicit n/a row, not one per variant
                t.add_row(oplabel, Text("all", style="dim"), "" if note == "only in A" else fmt.NA,
                          fmt.NA if note == "only in A" else "", fmt.NA, _verdict(fmt.NA), Text(note, style="dim"))
                continue
            for _, r in dop.iterrows():
                ratio = fmt.num(r["ratio"])
                cell = ratio if ratio == fmt.NA else f"{ratio} {fmt.ci(r['ci_low'], r['ci_high'])}{lv.after(r['ci_level'])}"
                t.add_row(oplabel if op != prev else "",
                          Text(r["variant"], style=f"bold {style.variant_colour(r['variant'], colours)}"),
                          fmt.quantity(r["median_a"]), fmt.quantity(r["median_b"]), cell,
                          _verdict(r["verdict"]), Text(r["note"], style="dim"))
                prev = op
        con.print(t)
        con.print()
    fam = meta["family"]
    con.print(Text(
        f"B/A = ratio of the geometric means of the job medians (> 1: B takes longer; medians: the median of "
        f"the job medians); CI = Welch t on log job medians (two independent studies), printed at "
        f"{pct}: FCR over the {fam['m']} rows with an interval ({fam['selected']} selected); the verdict is read "
        f"off the interval against ±{fmt.pct(meta['threshold'])}; deterministic metrics compare exactly; "
        f"withheld below 4 effective df.", style="dim"))
    return df


def show_family_parts(study: Results, con, df: pd.DataFrame, title, caption, header, rows_of, left: int) -> None:
    """A view part's section of `pqsimd show`, one table per family with rows (rows_of(fam)); nothing when
    its results table is empty. title(fam); caption and header as strings or functions of the family."""
    if df.empty:
        return
    for fam in study.families:
        body = rows_of(fam)
        if body:
            print_part_table(con, title(fam), caption(fam) if callable(caption) else caption,
                             header(fam) if callable(header) else header, body, left)


def print_part_table(con, title: str, caption: str, header: list[str], body: list[list[str]], left: int) -> None:
    """A view part's table in `pqsimd show`: its first `left` columns left-aligned, the numbers right, the caption
    under it, then a blank line (the hash share, the per-unit view)."""
    t = Table(title=title, caption=Text(caption), caption_justify="left", title_justify="left",
                  header_style="bold", box=None, pad_edge=False)
    for i, col in enumerate(header):
        t.add_column(col, justify="left" if i < left else "right", no_wrap=True)
    for r in body:
        t.add_row(*r)
    con.print(t)
    con.print(Text(""))
