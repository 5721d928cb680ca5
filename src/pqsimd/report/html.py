"""index.html: one self-contained file (figures inlined as base64 PNG, CSS inline, no network)."""

from __future__ import annotations

from collections import Counter

import base64
import datetime as _dt
import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .. import __version__
from . import files, fmt, style
from .figures import FigureResult
from ..results import FamilyView, Levels, Results, interval
from .tables import Table, _env
from .. import metrics as metrics_mod

VERDICT_WORDS = (("faster", "faster"), ("slower", "slower"), ("same", "the same within ±threshold"), ("~", "no verdict"),
                 ("withheld", "withheld"))


@dataclass
class Warning_:
    kind: str
    text: str


# -- headline findings ----------------------------------------------------------------------

def _hand(study: Results, fam: FamilyView, metric: str, compiler: str | None = None):
    h = study.hand_of(fam)
    if h is None:
        return pd.DataFrame()
    df = study.comparison(metric, baseline=h.base, variant=h.variant, compiler=compiler or "primary")
    df = df[df["scheme"].isin(fam.schemes)] if not df.empty else df
    return df.drop_duplicates(["scheme", "op"]) if not df.empty else df


def _range(df, ops) -> str | None:
    v = df.loc[df["op"].isin(list(ops)), "speedup"].dropna() if not df.empty else []
    if len(v) == 0:
        return None
    lo, hi = v.min(), v.max()
    return fmt.times(lo) if fmt.num(lo) == fmt.num(hi) else f"{fmt.num(lo)}–{fmt.times(hi)}"


def ordering_check(study: Results, fam: FamilyView, metric: str) -> list[str]:
    """Does our Table 1 keep the published ordering of its tiers ([views] ordering)?"""
    tiers = fam.views.get("ordering") or []
    df = _hand(study, fam, metric)
    out = []
    if df.empty or len(tiers) < 2:
        return out
    for scheme in fam.schemes:
        d = df[df["scheme"] == scheme].set_index("op")["speedup"]
        vals = [d.reindex(list(t.get("ops", []))).dropna() for t in tiers]
        if any(len(v) == 0 for v in vals):
            continue
        ok = all(vals[i].min() > vals[i + 1].max() for i in range(len(vals) - 1))
        parts = " ≫ ".join(f"{t.get('label')} {_range(df[df.scheme == scheme], t.get('ops', []))}" for t in tiers)
        out.append(f"{fam.scheme_label(scheme)}: {'matches' if ok else 'does not match'} the paper's ordering ({parts})")
    return out


def _speed(row, level: bool = False) -> str:
    """A comparison's speed in a headline: its verdict's words (model.speed_words) with its interval (and
    the interval's level)."""
    from ..model import speed_words

    sp, lo, hi, lvl = interval(row)
    ci = f" {fmt.ci(lo, hi)}" if not (fmt.is_missing(lo) or fmt.is_missing(hi)) else ""
    if ci and level and not fmt.is_missing(lvl):
        ci += f" ({fmt.level(lvl)} interval)"
    return speed_words(sp, row.get("verdict"), fmt.times, ci)


def _picks(study: Results, fam: FamilyView, metric: str) -> dict[tuple[str, str], list[tuple[str, tuple]]]:
    """The family's headline picks (results/headlines, the one rule analyze applied): (kind, group) ->
    [(kind, (scheme, op))]."""
    t = study.headlines
    if t.empty:
        return {}
    t = t[(t["family"] == fam.name) & (t["metric"] == metric)]
    out: dict[tuple[str, str], list] = {}
    for r in t.itertuples(index=False):
        group = r.group if isinstance(r.group, str) else ""  # a blank cell reads back as NaN
        out.setdefault((r.kind, group), []).append((r.kind, (r.scheme, r.op)))
    return out


def headlines(study: Results, fam: FamilyView) -> list[str]:
    metric = study.primary_metric
    h = study.hand_of(fam)
    if metric not in study.speed_metrics:  # a study of stack and size alone: no speedup to headline
        return []
    df = _hand(study, fam, metric)
    out = []
    picks = _picks(study, fam, metric)
    if h is not None and not df.empty and picks:
        rows = df.set_index(["scheme", "op"], drop=False)
        for kind, best in picks.get(("largest", ""), ()):
            best = rows.loc[best]
            out.append(f"The largest {h.label} speedup ({h.base}→{h.variant}) is {fam.label(best['op'])} at "
                       f"{fam.scheme_label(best['scheme'])}: {_speed(best, level=True)}.")
        for kind, worst in picks.get(("smallest", ""), ()):  # a speedup below 1
            worst = rows.loc[worst]
            where = f"{fam.label(worst['op'])} at {fam.scheme_label(worst['scheme'])}"
            out.append(f"{h.variant} is slower than {h.base} on {where}: {_speed(worst)}." if worst["verdict"] == "slower"
                       else f"The smallest {h.label} speedup ({h.base}→{h.variant}) is {where}: {_speed(worst)}.")
        parts = []
        for grp in fam.views.get("headlines") or []:
            ends = [rows.loc[k, "speedup"] for _kind, k in picks.get(("range_low", str(grp.get("label", ""))), ())] + \
                   [rows.loc[k, "speedup"] for _kind, k in picks.get(("range_high", str(grp.get("label", ""))), ())]
            if len(ends) == 2:
                lo, hi = ends
                parts.append(f"{grp.get('label')} {fmt.times(lo) if fmt.num(lo) == fmt.num(hi) else f'{fmt.num(lo)}–{fmt.times(hi)}'}")
        if parts:
            out.append(f"{h.base}→{h.variant} across parameter sets: " + "; ".join(parts) + ".")
    ch = study.chain
    for step in ch.steps[:-1]:
        av = study.comparison(metric, baseline=step.base, variant=step.variant)
        av = av[av["scheme"].isin(fam.schemes)] if not av.empty else av
        if av.empty:
            continue
        av = av.drop_duplicates(["scheme", "op"])
        counts = av["verdict"].value_counts().to_dict() if "verdict" in av.columns else {}
        out.append(f"{step.label} ({step.base}→{step.variant}, {study.primary_compiler}) over {len(av)} (scheme, op) pairs: "
                   + ", ".join(f"{counts.get(k, 0)} {w}" for k, w in VERDICT_WORDS if counts.get(k) or k in ("faster", "~"))
                   + ".")
    dec = study.decomposition
    if h is not None and not dec.empty and f"share_{h.stage}" in dec.columns:
        first = (fam.views.get("headlines") or [{}])[0]
        ops = first.get("ops") or fam.views.get("cross_parameter") or []
        d = dec[(dec["metric"] == metric) & dec["scheme"].isin(fam.schemes) & dec["op"].isin(ops)]
        if "compiler" in d.columns:
            d = d[d["compiler"] == study.primary_compiler]
        d = d[f"share_{h.stage}"].dropna()
        if len(d):
            out.append(f"Of the total {ch.first}→{ch.last} speedup of {first.get('label', 'these ops')}, "
                       f"{h.label} accounts for {fmt.pct(d.min())}–{fmt.pct(d.max())} of the log speedup.")
    out += ordering_check(study, fam, metric)
    allc = study.comparisons
    allc = allc[allc["scheme"].isin(fam.schemes) & (allc["metric"] == metric)] if not allc.empty else allc
    if len(allc):
        c = allc["verdict"].value_counts().to_dict()
        out.append(f"All {len(allc)} {metric} comparisons of the family: "
                   + ", ".join(f"{c.get(k, 0)} {w}" for k, w in VERDICT_WORDS) + ".")
    regimes = study.comparisons.get("regimes")
    if regimes is not None and regimes.fillna(False).astype(bool).any():
        r = study.comparisons[regimes.fillna(False).astype(bool) & study.comparisons["scheme"].isin(fam.schemes)]
        if len(r):
            out.append(f"{len(r)} paired comparison(s) show regimes (jobs in distinct states that change the ratio); "
                       + _changed(study, fam, "minority", "the minority's jobs"))
    shared = study.without_rows("shared")
    if len(shared) and shared["scheme"].isin(fam.schemes).any():
        n = int(shared["scheme"].isin(fam.schemes).sum())
        out.append(f"{n} comparison(s) use jobs that shared their CPU with another program; "
                   + _changed(study, fam, "shared", "those jobs"))
    limited = study.comparisons.get("resolution_limited")
    if limited is not None and limited.fillna(False).astype(bool).any():
        r = study.comparisons[limited.fillna(False).astype(bool) & study.comparisons["scheme"].isin(fam.schemes)]
        if len(r):
            out.append(f"{len(r)} comparison(s) are resolution-limited (the clock's step, not the jobs' spread, sets "
                       "their interval, widened by the per-call lattice step): "
                       + "; ".join(f"{fam.label(x.op)} {fam.scheme_label(x.scheme)} {x.baseline}→{x.variant} "
                                   f"(±{fmt.small_pct(x.resolution)})" for x in r.head(3).itertuples()) + ".")
    out += compiler_sentences(study, fam, metric)
    return out


def why_lines(study: Results, fam: FamilyView) -> dict:
    """The family's explanations (results/explanations): kind and sentence per row, the evidence
    legend, and the one line that says what was not measured."""
    from ..model import EVIDENCE_WORDS

    e = study.explanations
    e = e[e["family"] == fam.name] if not e.empty and "family" in e.columns else e
    used = {t for ev in (e["evidence"] if len(e) else []) for t in str(ev).split("; ")}  # "tag: definition" each
    legend = [f"{tag}: {text}" for tag, text in EVIDENCE_WORDS.values() if f"{tag}: {text}" in used]
    return {"rows": [{"kind": r.kind, "sentence": r.sentence} for r in e.itertuples(index=False)],
            "legend": legend,
            "missing": study.explanation_missing(fam.name)}


def _changed(study: Results, fam: FamilyView, what: str, who: str) -> str:
    """'without <who> N verdict(s) change: <the first three, with and without>' (Machine states lists all)."""
    rows = study.without_rows(what)
    rows = rows[rows["scheme"].isin(fam.schemes) & (rows[f"without_{what}_verdict"] != rows["verdict"])]
    if not len(rows):
        return f"without {who} no verdict changes (each one is under Machine states and shared CPUs)."
    return (f"without {who} {len(rows)} verdict(s) change: "
            + "; ".join(study.without_line(x, what) for _, x in rows.head(3).iterrows())
            + (" and more" if len(rows) > 3 else "") + " (all under Machine states and shared CPUs).")


def compiler_sentences(study: Results, fam: FamilyView, metric: str) -> list[str]:
    """Per headline op and compiler_view stage: the largest factor any compiler reaches."""
    from .tables import compiler_rows

    data = compiler_rows(study, fam, metric)
    if data.empty:
        return []
    ops = list(fam.views.get("cross_parameter") or [])
    out = []
    for stage in study.chain.compiler_view:
        col = f"{stage}_speedup"
        if col not in data.columns:
            continue
        step = study.chain.step(stage)
        for op in ops:
            d = data[(data["op"] == op) & data[col].notna()]
            if d.empty:
                continue
            best = d.loc[d[col].idxmax()]
            n = d["compiler"].nunique()
            out.append(f"{fam.label(op)}, {step.label} ({step.base}→{step.variant}): at most "
                       f"{fmt.times(best[col])} ({best['compiler']}, {fam.scheme_label(best['scheme'])}) across {n} "
                       f"compilers; smallest {fmt.times(d[col].min())}." + _instruction_clause(study, fam, op, stage, metric))
    return out


def _instruction_clause(study: Results, fam: FamilyView, op: str, stage: str, metric: str) -> str:
    """For a time metric, what the exact instruction counts of the same stage say (results/ilp)."""
    from .phase2 import read_result

    if metric != metrics_mod.TIME:
        return ""
    ilp = read_result(study.directory, "ilp")
    if ilp.empty:
        return ""
    d = ilp[(ilp["op"] == op) & (ilp["stage"] == stage) & ilp["scheme"].isin(fam.schemes)]
    if d.empty:
        return ""
    lo, hi = float(d["instruction_ratio"].min()), float(d["instruction_ratio"].max())
    span = fmt.times(lo) if fmt.times(lo) == fmt.times(hi) else f"{fmt.times(lo)}–{fmt.times(hi)}"
    text = f" Instruction counts: {span} under {d['compiler'].nunique()} compiler(s)"
    readings = d["reading"].astype(str)
    layout = readings.str.startswith("same instructions, different time")
    if readings.str.startswith("same instructions").all():
        text += (f": {study.chain.step(stage).label} leaves the instruction count unchanged under every compiler"
                 + (f"; the time ratios beyond ±2% ({int(layout.sum())} of {len(d)} cells) come from elsewhere "
                    "(code layout, alignment, scheduling or noise)" if layout.any() else ""))
    return text + "."



# -- methods, provenance, warnings ----------------------------------------------------------

def methods(study: Results) -> list[tuple[str, str]]:
    """The design as the data recorded it (summary.json), never as study.toml says now."""
    g = study.get
    sm = study.summary.get("study") or {}
    fam = study.summary.get("family") if isinstance(study.summary.get("family"), dict) else {}
    thr = g("threshold")

    def span(d):
        if not isinstance(d, dict):
            return None
        return str(d.get("min")) if d.get("min") == d.get("max") else f"{d.get('min')}–{d.get('max')}"

    design, warm, carry = study.design_notes()
    rows = [
        ("design", design),
        ("warm-up", warm),
        ("carry-over between builds", carry),
        ("power", study.power_note() or "no comparison is inconclusive (~)"),
        ("clock and resolution", study.clock_note() or "not recorded (re-run pqsimd analyze)"),
        ("jobs per group, J", span(sm.get("jobs_per_group"))),
        ("spin medians per group (J × S)", span(sm.get("spins_per_group"))),
        ("repetitions per spin, R", sm.get("reps_per_spin")),
        ("families", ", ".join(f.title for f in study.families)),
        ("parameter sets", ", ".join(f.scheme_label(s) for f in study.families for s in f.schemes)),
        ("op labels (label = op id: --ops and explain --op take either)", _op_labels(study)),
        ("variants", ", ".join(study.variants)),
        ("compilers", ", ".join(study.compilers)),
        ("metrics", ", ".join(study.metrics)),
        ("significance level α", g("alpha")),
        ("practical threshold", fmt.pct(thr) if thr is not None else None),
        ("multiple-testing family", f"{fam.get('m', 'n/a')} comparisons ({fam.get('selected', 'n/a')} selected, "
                                    f"{_adjust_name(fam.get('adjust'))}); target level {fmt.level(fam.get('level'))}, "
                                    f"achieved by the intervals: {_achieved(study)}: {fam.get('definition', 'n/a')}"
                                    + _other_adjust(fam)
         if fam else g("family")),
        ("A/A check", study.aa_note()),
        ("code layout", study.layout_note()),
        ("cliffs (laid-out copies far slower than the rest)", study.cliffs_note()),
        ("co-residency (paired/alone)", study.coresidency_note()),
        ("time budget", study.budget_note() or "every op got the spins x reps asked for (or no budget)"),
        ("disturbed jobs", study.jobs_note()),
        ("regimes (jobs in two states)", study.regime_note() or "not checked (results of an older pqsimd)"),
        ("jobs that shared their CPU", study.shared_cpu_note() or "none: every timing job had its CPU to itself"),
        ("resamples (Cliff's δ interval), seed", f"{g('n_boot')}, {g('seed')}"),
    ]
    return [(k, "n/a" if v is None or v == "" else str(v)) for k, v in rows]


def states(study: Results) -> list[dict]:
    """The comparisons whose jobs fall into two states and those that use jobs that shared their CPU,
    each with its verdict with all jobs and without the minority's (the shared) jobs."""
    out = []
    for what, title, note in (("minority", "Regimes: jobs in two machine states", study.regime_note()),
                              ("shared", "Jobs that shared their CPU", study.shared_cpu_note())):
        rows = study.without_rows(what)
        if len(rows):
            lines = [(bool(r[f"without_{what}_verdict"] != r["verdict"]), study.without_line(r, what))
                     for _, r in rows.iterrows()]
            changed = sum(c for c, _ in lines)
            out.append({"title": title, "note": note or "", "lines": lines,
                        "summary": f"{len(lines)} comparison{'s' if len(lines) != 1 else ''}, "
                                   f"{changed} verdict{'s' if changed != 1 else ''} change without them"})
    return out


def _op_labels(study: Results) -> str:
    """Each label the tables show for an op of the study whose id reads otherwise (more than its case), per family."""
    timed = set(study.groups["op"].astype(str)) if "op" in study.groups.columns else set()
    parts = []
    for f in study.families:
        pairs = [f"{f.label(op)} = {op}" for op in f.sort_ops(timed & set(f.ops)) if f.label(op).casefold() != op.casefold()]
        if pairs:
            parts.append(f"{f.title}: {', '.join(pairs)}")
    return "; ".join(parts) or "every label is its op's id"


def _adjust_name(adjust) -> str:
    return {"fcr": "Benjamini-Hochberg FCR", "by": "Benjamini-Yekutieli FCR (any dependence)",
            "bonferroni": "Bonferroni", "none": "no adjustment"}.get(adjust, str(adjust))


def _other_adjust(fam: dict) -> str:
    other = fam.get("other") or {}
    if not other:
        return ""
    return (f"; {_adjust_name(other.get('adjust'))} would print at {fmt.level(other.get('level'))} and change "
            f"{other.get('verdicts_changed')} verdict(s)")


def _achieved(study: Results) -> str:
    """The levels the comparisons' intervals achieve (analyze's ci_level), as the tables print them."""
    c = study.comparisons
    return Levels.of(c.loc[c["speedup"].notna(), "ci_level"]).text("each row's ci_level") \
        if len(c) and "ci_level" in c.columns else "n/a"


def _flatten(d, prefix="") -> list[tuple[str, str]]:
    out = []
    if isinstance(d, dict):
        for k, v in d.items():
            out += _flatten(v, f"{prefix}{k}." if isinstance(v, dict) else f"{prefix}{k}")
            if not isinstance(v, dict):
                continue
    elif isinstance(d, list):
        out.append((prefix.rstrip("."), ", ".join(str(x) for x in d)))
    else:
        out.append((prefix.rstrip("."), "n/a" if d is None else str(d)))
    return out


def _short(v, n: int = 16) -> str:
    s = str(v)
    return s if len(s) <= n + 3 else s[:n] + "…"


def _jobs_summary(jobs: dict) -> list[tuple[str, str]]:
    recs = [j for j in jobs.values() if isinstance(j, dict)]
    if not recs:
        return []

    def distinct(key):
        return sorted({str(r.get(key)) for r in recs if r.get(key) is not None})

    started = [str(r["started"]) for r in recs if r.get("started")]
    finished = [str(r["finished"]) for r in recs if r.get("finished")]
    out = [("jobs recorded", str(len(recs))), ("hosts", ", ".join(distinct("hostname")) or "n/a"),
           ("CPU models", "; ".join(distinct("cpu_model")) or "n/a"), ("CPUs pinned", ", ".join(distinct("cpu")) or "n/a")]
    if started and finished:
        out.append(("time span", f"{min(started)} → {max(finished)}"))
    return out


def provenance(study: Results) -> list[tuple[str, list[tuple[str, str]]]]:
    """The manifest, condensed for a reader: machine, source, tool, variants, jobs (the file keeps it all)."""
    m = study.manifest
    sections = []
    for key, title in (("machine", "Machine"), ("source", "Source"), ("tool", "Tool")):
        if isinstance(m.get(key), dict):
            sections.append((title, _flatten(m[key])))
    if isinstance(m.get("builds"), dict):
        rows = []
        comps = m.get("compilers") if isinstance(m.get("compilers"), dict) else {}
        for bid, v in m["builds"].items():
            if not isinstance(v, dict):
                rows.append((bid, str(v)))
                continue
            comp = comps.get(v.get("compiler"), {}) if isinstance(comps.get(v.get("compiler")), dict) else {}
            flags = v.get("flags_used") or []
            status = ("skipped: " + str(v["skipped"])) if v.get("skipped") else (
                "gate passed" if v.get("passed") else "gate FAILED")
            bits = [(" ".join(map(str, flags)) if isinstance(flags, list) else str(flags)) or "",
                    str(comp.get("version") or v.get("compiler") or ""), status,
                    f"sha256 {_short(v['binary_sha256'])}" if v.get("binary_sha256") else ""]
            rows.append((f"{v.get('variant', bid)} · {v.get('compiler', '')} · {v.get('family', '')}",
                         " · ".join(b for b in bits if b)))
        sections.append(("Builds (variant · compiler · family)", rows))
    if isinstance(m.get("driver"), dict):
        d = m["driver"]
        comp = d.get("compiler") if isinstance(d.get("compiler"), dict) else {}
        sections.append(("Driver (timing code, one fixed toolchain)",
                         [("compiler", str(comp.get("version", "n/a"))), ("flags", " ".join(d.get("flags", []))),
                          ("sha256", _short(d.get("sha256", "n/a")))]))
    if isinstance(m.get("jobs"), dict):
        js = _jobs_summary(m["jobs"])
        if js:
            sections.append(("Jobs", js))
    if isinstance(m.get("metrics"), dict):
        sections.append(("Metrics", _flatten(m["metrics"])))
    rest = [(k, str(v)) for k, v in m.items()
            if k not in ("machine", "source", "tool", "variants", "jobs", "metrics", "job_order")
            and k not in ("builds", "driver", "compilers", "families", "chain")
            and not isinstance(v, (dict, list))]
    if rest:
        sections.append(("Study", rest))
    return sections


def _virtualized(manifest: dict) -> str | None:
    """The hypervisor, if the study ran in a VM (a container alone is not one)."""
    mach = manifest.get("machine") if isinstance(manifest.get("machine"), dict) else {}
    virt = mach.get("virtualization")
    if isinstance(virt, str):
        vms = [p.strip() for p in virt.split(",") if p.strip() and not p.strip().startswith("in a")]
        if vms:
            return ", ".join(vms)
    for k in ("virtualized", "hypervisor", "is_vm"):
        v = mach.get(k, manifest.get(k))
        if v:
            return str(v) if isinstance(v, str) else "hypervisor"
    flags = mach.get("flags") or mach.get("cpu_flags") or ""
    return "hypervisor" if "hypervisor" in (flags if isinstance(flags, str) else " ".join(map(str, flags))) else None


def _groups_list(df, limit=8) -> str:
    items = [f"{r['scheme']} {r['op']} {r['variant']}" + (f" ({r['compiler']})" if "compiler" in r else "")
             for _, r in df.head(limit).iterrows()]
    more = len(df) - limit
    return ", ".join(items) + (f" and {more} more" if more > 0 else "")


def warnings(study: Results, figures: list[FigureResult], notes: list[str]) -> list[Warning_]:
    out = []
    for w in study.summary.get("warnings") or []:
        text = w.get("message") or w.get("text") or str(w) if isinstance(w, dict) else str(w)
        # what a tick is gets a more specific warning below
        if not text.startswith(("times are ", "ticks are TSC ticks")):
            out.append(Warning_("analysis", text))
    if metrics_mod.TIME in study.metrics:
        out.append(Warning_(f"{study.unit(metrics_mod.TIME)}: what a tick is", f"Times are {study.tick_note}: under turbo or "
                            "power capping (e.g. during AVX2 code) the core runs at a different frequency, so a tick "
                            "that is not a core cycle measures wall-clock time, not cycle counts."))
    vm = _virtualized(study.manifest)
    if vm:
        out.append(Warning_("virtualized host", f"The study ran on a virtual machine ({vm}): "
                            "the TSC may be virtualized and neighbours share the hardware; expect more noise and "
                            "treat absolute numbers with care."))
    for line in study.not_measured_notes():
        out.append(Warning_("not measured", line))
    for f in figures:
        if f.skipped:
            out.append(Warning_("figure skipped", f"{f.title}: {f.skipped}"))
    for n in notes:
        out.append(Warning_("raw data", n))
    return out


# -- rendering ------------------------------------------------------------------------------

def png_width(path: Path) -> int | None:
    head = Path(path).read_bytes()[:24]
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    return int.from_bytes(head[16:20], "big")


def _data_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(Path(path).read_bytes()).decode("ascii")


def write_html(study: Results, outdir: Path, figures: list[FigureResult], tables: list[Table],
               notes: list[str], reference: str | None = None, made: dict | None = None) -> Path:
    """index.html: the families' sections, then what the registered parts made (`made`, report/parts.py):
    the EXTRA parts' figures and tables (and the mechanism's findings) in PARTS order, and each part with a
    section of its own in that section."""
    from .parts import EXTRA, Made, get

    made = made or {}
    extra = [m for name, m in made.items() if get(name).html == EXTRA]
    extra_figures = [f for m in extra for f in m.figures]
    extra_tables = [t for m in extra for t in m.tables]
    findings: dict[str, list[str]] = {}
    for m in extra:
        for fam, lines in m.findings.items():
            findings.setdefault(fam, []).extend(lines)
    own = {get(name).html: m for name, m in made.items() if get(name).html != EXTRA}
    att, port, cimpl, cross = (own.get(k) or Made() for k in ("attribution", "portfolio", "cross_impl", "cross_isa"))
    attribution = (att.figures, att.tables, att.findings)
    portfolio, cross_impl, cross_isa = (port.figures, port.tables), (cimpl.figures, cimpl.tables), \
        (cross.figures, cross.tables, cross.lines)

    def fig(f: FigureResult) -> dict:
        return {"name": f.name.replace("/", "-"), "title": f.title, "caption": f.caption, "skipped": f.skipped,
                "file": f.name, "src": _data_uri(f.png) if f.png else None,
                # figures keep their scale, unless wider than the page (style.legibility_problems checks that size)
                "width": (style.shown_width(png_width(f.png)) if f.png and png_width(f.png) else None)}

    for t in [*tables, *(extra_tables or []), *(attribution[1] if attribution else []),
              *(portfolio[1] if portfolio else []), *(cross_impl[1] if cross_impl else [])]:
        if t.written is not None:  # "Also as": the files' path in the report
            t.files_as = os.path.relpath(t.written, outdir)
    sections = []
    for fam in study.chain_families:
        ts = [t for t in tables if t.family == fam.name]
        sections.append({
            "id": fam.name, "title": fam.title, "headlines": headlines(study, fam),
            "why": why_lines(study, fam),
            "table1": [t for t in ts if t.name == "table1_hand_simd" and not t.name_suffix][:1],
            "tables": [t for t in ts if not (t.name == "table1_hand_simd" and not t.name_suffix)],
            "figures": [fig(f) for f in figures if f.family == fam.name],
        })
    mach = study.manifest.get("machine") if isinstance(study.manifest.get("machine"), dict) else {}
    colours = style.variant_colours(study.chain.variants, study.variants)
    from . import ct as ct_view

    html = _env().get_template("index.html.j2").render(
        ct_section=ct_view.html_section(study.directory),
        title=f"pqsimd report: {study.directory.resolve().name}",
        directory=str(study.directory.resolve()),
        generated=_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        version=__version__,
        machine=_machine_name(mach),
        design=study.design if not study.counts_only else "counts only (nothing timed)",
        sections=sections,
        extra_tables=extra_tables or [],
        extra_figures=[fig(f) for f in (extra_figures or [])],
        findings=[{"id": fam.name, "title": fam.title, "lines": (findings or {}).get(fam.name) or []}
                  for fam in study.families if (findings or {}).get(fam.name)],
        attribution={"figures": [fig(f) for f in attribution[0]], "tables": attribution[1],
                     "findings": [{"id": fam.name, "title": fam.title, "lines": attribution[2].get(fam.name) or []}
                                  for fam in study.families if attribution[2].get(fam.name)]} if attribution else None,
        portfolio={"figures": [fig(f) for f in portfolio[0]], "tables": portfolio[1]} if portfolio else None,
        cross_impl={"tables": cross_impl[1]} if cross_impl else None,
        cross_isa={"figures": [fig(f) for f in cross_isa[0]], "tables": cross_isa[1], "lines": cross_isa[2]}
        if cross_isa else None,
        methods=methods(study),
        states=states(study),
        stat_methods=[(k, str(v)) for k, v in (study.summary.get("methods") or {}).items()]
        if isinstance(study.summary.get("methods"), dict) else [],
        provenance=provenance(study),
        warnings=(warned := warnings(study, figures + (extra_figures or []) + (attribution[0] if attribution else []),
                                     notes)),
        warning_kinds=", ".join(f"{k} {n}" if n > 1 else k
                                for k, n in Counter(w.kind for w in warned).items()),
        reference=reference,
        colours={v: colours.get(v) for v in study.variants},
    )
    return files.write_text(outdir / "index.html", html)


def _machine_name(mach: dict) -> str:
    """The CPU as the manifest names it, with its microarchitecture where known (as doctor names it)."""
    from ..microarch import cpu_label

    return cpu_label(mach)
