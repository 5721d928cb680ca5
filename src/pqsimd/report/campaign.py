"""The report of a campaign (`pqsimd campaign`, `pqsimd show OUT`): it reads OUT/results/ only
(written by analyze/campaign.py) and computes nothing.

- per family and chain step, a table ops × machines (× compilers): each study's speedup with its
  own interval, and each machine's ratio of speedups to the reference with its interval and verdict
  (LaTeX, Markdown, CSV through tables.py; HTML in index.html);
- a forest figure per family: each op's speedup on each machine with its interval, per step;
- the machines named by microarchitecture, with virtualization, TSC step and compiler;
- the ops ranked by machine sensitivity, and the instruction-mix evidence where the studies have it.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..errors import PqsimdError, command
from ..model import Chain
from ..results import read_json
from . import files, fmt, style
from .tables import Cell, Table, write_table

RATIO_MARKS = {"larger": "▲", "smaller": "▼", "same": "≈", "~": "~", "n/a": ""}
RATIO_TEX = {"larger": r"\ensuremath{\uparrow}", "smaller": r"\ensuremath{\downarrow}", "same": r"\ensuremath{\approx}",
             "~": r"\ensuremath{\sim}", "n/a": ""}
ARM_COLOURS = [style.OKABE_ITO[k] for k in ("blue", "vermillion", "bluish_green", "reddish_purple", "orange",
                                           "sky_blue", "black", "yellow")]


@dataclass
class Campaign:
    directory: Path
    summary: dict
    machines: pd.DataFrame
    speedups: pd.DataFrame
    ratios: pd.DataFrame
    ranking: pd.DataFrame
    mechanism: pd.DataFrame
    decomposition: pd.DataFrame

    @property
    def arms(self) -> list[str]:
        return list(self.summary.get("arms", []))

    @property
    def reference(self) -> str:
        return str(self.summary.get("reference", ""))

    @property
    def chain(self) -> Chain:
        return Chain.from_dict(self.summary.get("chain"))

    def families(self) -> list[tuple[str, dict, list[str]]]:
        """(name, the family's summary record, its schemes with results), in the studies' order."""
        present = list(dict.fromkeys(self.speedups["scheme"].astype(str))) if len(self.speedups) else []
        out = []
        for name, f in (self.summary.get("families") or {}).items():
            schemes = [s for s in f.get("schemes", {}) if s in present]
            if schemes:
                out.append((name, f, schemes))
        known = {s for _, _, ss in out for s in ss}
        rest = [s for s in present if s not in known]
        if rest:
            out.append(("other", {"title": "Other schemes"}, rest))
        return out

    def steps(self) -> list[tuple[str, str, str, str]]:
        """(metric, stage, baseline, variant) of every comparison, in the studies' order."""
        if self.speedups.empty:
            return []
        cols = ["metric", "stage", "baseline", "variant"]
        return [tuple(r) for r in self.speedups[cols].astype(str).drop_duplicates().itertuples(index=False)]

    @property
    def axis(self) -> str:
        """What the columns differ in: machines, or only compilers (a campaign on one machine)."""
        if len(self.machines) and self.machines["microarchitecture"].nunique() == 1 \
                and self.machines["compiler"].nunique() == len(self.machines):
            return "compiler"
        return "machine"

    def step_label(self, stage: str, baseline: str, variant: str) -> str:
        s = self.chain.step(stage)
        return f"{s.label} ({baseline}→{variant})" if s is not None else f"{stage} ({baseline}→{variant})"

    def arm_label(self, arm: str) -> str:
        m = self.machines[self.machines["arm"] == arm]
        return f"{arm} ({m['microarchitecture'].iloc[0]})" if len(m) else arm


def _read(results: Path, name: str) -> pd.DataFrame:
    p = results / f"{name}.parquet"
    if not p.exists():
        return pd.DataFrame()
    try:
        return pd.read_parquet(p)
    except Exception as e:
        raise PqsimdError(f"cannot read {p} ({e.__class__.__name__}); run {command('campaign', results.parent)} again") from None


def load_campaign(directory: Path) -> Campaign:
    from ..model import CAMPAIGN_SCHEMA_VERSION
    from ..studydir import CAMPAIGN_SUMMARY as SUMMARY_FILE

    results = Path(directory) / "results"
    summary = read_json(results / SUMMARY_FILE)
    if not summary:
        raise PqsimdError(f"no campaign results in {results}; run {command('campaign', directory, 'DIR1', 'DIR2')}")
    version = summary.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or version > CAMPAIGN_SCHEMA_VERSION:
        raise PqsimdError(f"{results / SUMMARY_FILE}: schema_version {version!r} is not one this pqsimd reads (up to "
                          f"{CAMPAIGN_SCHEMA_VERSION}); run {command('campaign', directory)} again, or update pqsimd")
    if version < CAMPAIGN_SCHEMA_VERSION:  # its ratios may come from a member whose evidence disagreed with itself
        raise PqsimdError(f"{results} was written by an older pqsimd, which took ratios from inconsistent members; "
                          f"run {command('campaign', directory)} again")
    return Campaign(Path(directory), summary, *(_read(results, n) for n in
                                                 ("machines", "speedups", "ratios", "ranking", "mechanism",
                                                  "decomposition")))


# -- cells -------------------------------------------------------------------------------------------

def _speedup_text(r) -> str:
    return f"{fmt.times(r['speedup'])} {fmt.ci(r['ci_low'], r['ci_high'])}"


def _ratio_text(r) -> str:
    if fmt.is_missing(r["ratio"]):
        return fmt.NA
    mark = RATIO_MARKS.get(str(r["verdict"]), "")
    return f"{fmt.num(r['ratio'])} {fmt.ci(r['ci_low'], r['ci_high'])}{(' ' + mark) if mark else ''}"


def _ratio_cell(r) -> Cell:
    text = _ratio_text(r)
    if text == fmt.NA:
        return Cell(text)
    body = text.rsplit(" ", 1)[0] if RATIO_MARKS.get(str(r["verdict"])) else text
    from .tables import tex

    return Cell(text, latex=tex(body) + (" " + RATIO_TEX[str(r["verdict"])] if RATIO_MARKS.get(str(r["verdict"])) else ""),
                bold=bool(r.get("machine_effect")))


# -- tables ------------------------------------------------------------------------------------------

def step_table(c: Campaign, fam: tuple[str, dict, list[str]], step: tuple[str, str, str, str]) -> Table:
    name, f, schemes = fam
    metric, stage, base, var = step
    labels = f.get("labels", {})
    others = [a for a in c.arms if a != c.reference]
    header = ["op"] + [f"speedup {a}" for a in c.arms] + [f"{a} / {c.reference}" for a in others]
    sp = c.speedups[(c.speedups["metric"] == metric) & (c.speedups["stage"] == stage) &
                    (c.speedups["baseline"] == base) & (c.speedups["variant"] == var)]
    ra = c.ratios[(c.ratios["metric"] == metric) & (c.ratios["stage"] == stage) & (c.ratios["baseline"] == base) &
                  (c.ratios["variant"] == var)] if len(c.ratios) else c.ratios
    rows, data = [], []
    order = list(f.get("ops", []))
    for scheme in schemes:
        s = sp[sp["scheme"] == scheme]
        if s.empty:
            continue
        rows.append(f.get("schemes", {}).get(scheme, {}).get("label", scheme))
        ops = sorted(set(s["op"]), key=lambda o: (order.index(o) if o in order else len(order), o))
        for op in ops:
            if op == f.get("self_check"):
                continue
            row = [Cell(labels.get(op, op))]
            rec = {"scheme": scheme, "op": op}
            for a in c.arms:
                r = s[(s["op"] == op) & (s["arm"] == a)]
                row.append(Cell(_speedup_text(r.iloc[0]) if len(r) else fmt.NA))
                if len(r):
                    rec |= {f"speedup {a}": r.iloc[0]["speedup"], f"ci_low {a}": r.iloc[0]["ci_low"],
                            f"ci_high {a}": r.iloc[0]["ci_high"]}
            for a in others:
                r = ra[(ra["scheme"] == scheme) & (ra["op"] == op) & (ra["arm"] == a)] if len(ra) else ra
                row.append(_ratio_cell(r.iloc[0]) if len(r) else Cell(fmt.NA))
                if len(r):
                    rec |= {f"ratio {a}": r.iloc[0]["ratio"], f"ratio_ci_low {a}": r.iloc[0]["ci_low"],
                            f"ratio_ci_high {a}": r.iloc[0]["ci_high"], f"verdict {a}": r.iloc[0]["verdict"]}
            rows.append(row)
            data.append(rec)
    fam_level = c.summary.get("family", {})
    notes = [f"speedup: each study's own estimate and interval (comparisons.csv of that study); ratio: speedup on the "
             f"machine / on {c.reference}, bootstrap interval over each machine's jobs at "
             f"{fmt.level(fam_level.get('level'))} (FCR over the campaign's {fam_level.get('m')} ratios).",
             f"Verdicts against ±{fmt.pct(c.summary.get('threshold'))}: ▲ larger, ▼ smaller (the machine changes the "
             "speedup; bold), ≈ same, ~ undecided."]
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in f"campaign_{stage}_{base}_{var}")
    return Table(name=safe, title=f"{f.get('title', name)}: {c.step_label(stage, base, var)} on each {c.axis}",
                 caption=f"{c.step_label(stage, base, var)}, {style.metric_title(metric)}", header=header, rows=rows,
                 notes=notes, data=pd.DataFrame(data), align="l" + "r" * (len(header) - 1), family=name)


def decomposition_table(c: Campaign, fam: tuple[str, dict, list[str]]) -> Table | None:
    """Each machine's decomposition (its study's own: the chain's stage factors and their product)."""
    name, f, schemes = fam
    d = c.decomposition
    stages = [s.stage for s in c.chain.steps if f"factor_{s.stage}" in d.columns]
    if d.empty or not stages:
        return None
    labels, order = f.get("labels", {}), list(f.get("ops", []))
    rows: list = []
    for scheme in schemes:
        ds = d[(d["scheme"].astype(str) == scheme) & (d["metric"].astype(str) == c.steps()[0][0])]
        if ds.empty:
            continue
        rows.append(f.get("schemes", {}).get(scheme, {}).get("label", scheme))
        ops = sorted(set(ds["op"]) - {f.get("self_check")}, key=lambda o: (order.index(o) if o in order else len(order), o))
        for op in ops:
            row = [Cell(labels.get(op, op))]
            for arm in c.arms:
                r = ds[(ds["op"] == op) & (ds["arm"] == arm)]
                if r.empty:
                    row.append(Cell(fmt.NA))
                    continue
                r = r.iloc[0]
                row.append(Cell(" · ".join(fmt.num(r[f"factor_{s}"]) for s in stages) + f" = {fmt.times(r['total'])}"))
            rows.append(row)
    chain = " · ".join(c.chain.labels.get(s, s) for s in stages)
    return Table(name="campaign_decomposition", title=f"{f.get('title', name)}: the decomposition on each {c.axis}",
                 caption=f"stage factors ({chain}) and their product, each study's own", header=["op"] + c.arms,
                 rows=rows, notes=[f"factors: {chain} (each study's decomposition.csv, with its intervals there)"],
                 data=d[d["scheme"].astype(str).isin(schemes)], align="l" + "r" * len(c.arms), family=name)


def machines_table(c: Campaign) -> Table:
    cols = [("arm", "machine"), ("microarchitecture", "microarchitecture"), ("cpu_model", "CPU"),
            ("cpu_family", "family"), ("cpu_model_number", "model"), ("stepping", "stepping"),
            ("virtualization", "virtualization"), ("tsc_step", "TSC step (ticks)"), ("tsc_ghz", "TSC GHz"),
            ("compiler_version", "compiler"), ("jobs_per_group", "J"), ("disturbed_jobs", "disturbed jobs")]
    rows = [[Cell(fmt.num(r[k]) if k == "tsc_ghz" else str(r[k])) for k, _ in cols] for _, r in c.machines.iterrows()]
    return Table(name="campaign_machines", title="Machines", caption="the machines of the campaign",
                 header=[h for _, h in cols], rows=rows, data=c.machines, align="l" * len(cols))


# -- figure ------------------------------------------------------------------------------------------

def forest_figure(c: Campaign, fam: tuple[str, dict, list[str]], outdir: Path) -> Path | None:
    """Each op's speedup on each machine with its interval, one panel per chain step; a filled
    marker where the machine's ratio to the reference is a machine effect."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker  # noqa: F401  (matplotlib.ticker below)

    name, f, schemes = fam
    steps = [s for s in c.steps() if s[0] == c.steps()[0][0]]
    sp = c.speedups[c.speedups["scheme"].isin(schemes)]
    if sp.empty or not steps:
        return None
    order = list(f.get("ops", []))
    ops = sorted({o for o in sp["op"] if o != f.get("self_check")},
                 key=lambda o: (order.index(o) if o in order else len(order), o))
    ylabels = [(s, o) for s in schemes for o in ops]
    effect = set()
    if len(c.ratios):
        e = c.ratios[c.ratios["machine_effect"].astype(bool)]
        effect = set(zip(e["arm"], e["scheme"], e["op"], e["stage"], e["baseline"], e["variant"]))
    fig, axes = plt.subplots(1, len(steps), figsize=(3.2 * len(steps) + 1.5, 0.16 * len(ylabels) + 1.6),
                             sharey=True, squeeze=False)
    n = len(c.arms)
    for ax, (metric, stage, base, var) in zip(axes[0], steps):
        d = sp[(sp["metric"] == metric) & (sp["stage"] == stage) & (sp["baseline"] == base) & (sp["variant"] == var)]
        for i, arm in enumerate(c.arms):
            col = ARM_COLOURS[i % len(ARM_COLOURS)]
            da = d[d["arm"] == arm].set_index(["scheme", "op"])
            for y, key in enumerate(ylabels):
                if key not in da.index:
                    continue
                r = da.loc[key]
                yy = y + (i - (n - 1) / 2) * 0.8 / max(n, 1)
                lo, hi = float(r["ci_low"]), float(r["ci_high"])
                if math.isfinite(lo) and math.isfinite(hi):
                    ax.plot([lo, hi], [yy, yy], color=col, lw=1.2)
                filled = arm == c.reference or (arm, key[0], key[1], stage, base, var) in effect
                ax.plot([float(r["speedup"])], [yy], marker="o", ms=3.5, color=col,
                        markerfacecolor=col if filled else "white", label=c.arm_label(arm) if y == 0 else None)
        ax.axvline(1.0, color="grey", lw=0.8, ls=":")
        for k in range(1, len(schemes)):  # a rule between parameter sets
            ax.axhline(k * len(ops) - 0.5, color="grey", lw=0.5)
        ax.set_xscale("log")
        lo_x, hi_x = ax.get_xlim()
        decades = math.log10(max(hi_x, 1e-9) / max(lo_x, 1e-9))  # a narrow panel gets finer ticks
        subs = ((1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0) if decades < 0.6 else
                (1.0, 2.0, 3.0, 5.0) if decades < 1.5 else (1.0, 2.0, 5.0))
        ax.xaxis.set_major_locator(matplotlib.ticker.LogLocator(base=10, subs=subs))
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}×"))
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_title(c.step_label(stage, base, var), fontsize=8)
        ax.tick_params(labelsize=style.SMALL_PT)
        ax.grid(axis="x", alpha=0.3)
    labels = f.get("labels", {})
    sl = f.get("schemes", {})
    axes[0][0].set_yticks(range(len(ylabels)))
    axes[0][0].set_yticklabels([f"{sl.get(s, {}).get('label', s)} {labels.get(o, o)}" for s, o in ylabels], fontsize=style.SMALL_PT)
    axes[0][0].invert_yaxis()
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, names, loc="upper center", ncol=min(n, 4), fontsize=8, frameon=False)
    fig.text(0.5, 0.003, f"speedup (log scale) with each study's interval; hollow: no {c.axis} effect against "
             f"{c.reference} (ratio within ±{fmt.pct(c.summary.get('threshold'))} or undecided)", ha="center", fontsize=style.SMALL_PT)
    fig.tight_layout(rect=(0, 0.02, 1, 1 - 0.6 / (0.16 * len(ylabels) + 1.6)))
    path = outdir / name / "campaign_forest.png"
    files.save_figure(fig, path, "png", dpi=110)
    plt.close(fig)
    return path


# -- HTML and the whole report --------------------------------------------------------------------------

def _html_table(t: Table) -> str:
    e = html.escape
    head = "".join(f"<th>{e(h)}</th>" for h in t.header)
    body = []
    for row in t.rows:
        if isinstance(row, str):
            body.append(f'<tr><td colspan="{t.n_cols}"><i>{e(row)}</i></td></tr>')
        else:
            body.append("<tr>" + "".join(f"<td>{'<b>' if c.bold else ''}{e(c.text)}{'</b>' if c.bold else ''}</td>"
                                         for c in row) + "</tr>")
    notes = "".join(f"<p class=note>{e(n)}</p>" for n in t.notes)
    return f"<h3>{e(t.title)}</h3><table><tr>{head}</tr>{''.join(body)}</table>{notes}"


def sensitive_ops(c: Campaign, top: int = 5) -> pd.DataFrame:
    r = c.ranking
    if r.empty:
        return r
    return r[r["machine_effects"] > 0].groupby(["metric", "stage", "baseline", "variant"], sort=False).head(top)


def write_campaign_report(directory: Path) -> Path:
    c = load_campaign(directory)
    out = Path(directory) / "report"
    e = html.escape
    parts = [f"<h1>Campaign: {e(', '.join(c.arms))}</h1>"]
    mt = machines_table(c)
    write_table(mt, out)
    parts.append(_html_table(mt))
    for note in c.summary.get("same_microarchitecture", []) + c.summary.get("differences", []):
        parts.append(f"<p class=note>{e(note)}</p>")
    counts, fam_level = c.summary.get("counts", {}), c.summary.get("family", {})
    parts.append(f"<p>{counts.get('machine_effects', 0)} of {counts.get('ratios', 0)} ratios of speedups show a {c.axis} "
                 f"effect beyond ±{fmt.pct(c.summary.get('threshold'))} (intervals at {fmt.level(fam_level.get('level'))}, "
                 f"FCR over {fam_level.get('m')}).</p>")
    for fam in c.families():
        parts.append(f"<h2>{e(fam[1].get('title', fam[0]))}</h2>")
        fig = forest_figure(c, fam, out)
        if fig is not None:
            parts.append(f'<img src="{e(str(fig.relative_to(out)))}" style="max-width:100%">')
        for step in c.steps():
            t = step_table(c, fam, step)
            if t.body_rows:
                write_table(t, out / fam[0])
                parts.append(_html_table(t))
        dt = decomposition_table(c, fam)
        if dt is not None and dt.body_rows:
            write_table(dt, out / fam[0])
            parts.append(_html_table(dt))
    parts.append(f"<h2>{c.axis.capitalize()}-sensitive ops</h2>")
    so = sensitive_ops(c)
    if so.empty:
        parts.append(f"<p>No op's speedup changes with the {c.axis} beyond the threshold.</p>")
    else:
        parts.append("<table><tr><th>step</th><th>op</th><th>largest ratio (median over schemes)</th>"
                     f"<th>{c.axis} effects</th></tr>" + "".join(
                         f"<tr><td>{e(c.step_label(r['stage'], r['baseline'], r['variant']))}</td><td>{e(r['op'])}</td>"
                         f"<td>{fmt.times(r['sensitivity'])}</td><td>{r['machine_effects']} of {r['ratios']}</td></tr>"
                         for _, r in so.iterrows()) + "</table>")
    parts.append(mechanism_html(c))
    parts.append("<h2>Methods</h2>" + "".join(f"<p>{e(m)}</p>" for m in c.summary.get("methods", [])))
    style_css = ("body{font-family:sans-serif;max-width:1200px;margin:auto}table{border-collapse:collapse;font-size:12px}"
                 "td,th{padding:2px 6px;border-bottom:1px solid #ddd;text-align:right}td:first-child{text-align:left}"
                 ".note{color:#555;font-size:12px}")
    files.write_text(out / "index.html", f"<!doctype html><meta charset=utf-8><title>pqsimd campaign</title>"
                                         f"<style>{style_css}</style>" + "\n".join(parts))
    return out


def mechanism_html(c: Campaign) -> str:
    e = html.escape
    if c.mechanism.empty:
        return ("<p class=note>Instruction-mix evidence: none of the studies has an instruction mix "
                "(run them with <code>--metric mix</code>).</p>")
    rows = "".join(f"<tr><td>{e(r['scheme'])}</td><td>{e(r['op'])}</td><td>{e(r['baseline'])}→{e(r['variant'])}</td>"
                   f"<td>{e(r['arm'])}</td><td>{e(str(r['class_label']))}</td><td>{fmt.num(r['base_count'])}</td>"
                   f"<td>{fmt.num(r['var_count'])}</td><td>{fmt.pct(r['share_of_difference'])}</td></tr>"
                   for _, r in c.mechanism.iterrows())
    return ("<h3>Instruction mix of the machine-sensitive comparisons</h3><table><tr><th>scheme</th><th>op</th>"
            "<th>step</th><th>study</th><th>class</th><th>baseline per call</th><th>variant per call</th>"
            f"<th>share of the difference</th></tr>{rows}</table>")


# -- terminal ----------------------------------------------------------------------------------------

def from_tables(tables: dict, directory: Path | None = None) -> Campaign:
    """A campaign analyze/campaign.py built but did not write (`pqsimd compare A B --speedups`)."""
    return Campaign(Path(directory or "."), tables["summary"], *(tables[n] for n in
                                                                 ("machines", "speedups", "ratios", "ranking", "mechanism",
                                                                  "decomposition")))


def show_campaign(directory: Path | Campaign, stage: str | None = None, console=None) -> None:
    from ..console import stdout_console
    from rich.table import Table as RichTable

    c = directory if isinstance(directory, Campaign) else load_campaign(directory)
    con = console or stdout_console()
    mt = machines_table(c)
    t = RichTable(title="machines", title_justify="left", box=None, header_style="bold")
    for h in mt.header:
        t.add_column(h)
    for row in mt.rows:
        t.add_row(*[cell.text for cell in row])
    con.print(t)
    for note in c.summary.get("same_microarchitecture", []) + c.summary.get("differences", []):
        con.print(f"  {note}", style="dim")
    steps = [s for s in c.steps() if stage is None or s[1] == stage]
    if stage is not None and not steps:
        raise PqsimdError(f"no step {stage!r} in the campaign; steps: {', '.join(sorted({s[1] for s in c.steps()}))}")
    for fam in c.families():
        for step in steps:
            st = step_table(c, fam, step)
            if not st.body_rows:
                continue
            rt = RichTable(title=st.title, title_justify="left", box=None, header_style="bold", pad_edge=False)
            for i, h in enumerate(st.header):
                rt.add_column(h, justify="left" if i == 0 else "right", no_wrap=True)
            for row in st.rows:
                if isinstance(row, str):
                    rt.add_row(f"[italic]{row}[/italic]")
                else:
                    rt.add_row(*[f"[bold]{cell.text}[/bold]" if cell.bold else cell.text for cell in row])
            con.print(rt)
            con.print()
    fam_level = c.summary.get("family", {})
    counts = c.summary.get("counts", {})
    con.print(f"{counts.get('machine_effects', 0)} of {counts.get('ratios', 0)} ratios show a {c.axis} effect "
              f"(▲ larger / ▼ smaller beyond ±{fmt.pct(c.summary.get('threshold'))}; ≈ same; ~ undecided); "
              f"intervals at {fmt.level(fam_level.get('level'))}, FCR over {fam_level.get('m')} ratios.", style="dim")
