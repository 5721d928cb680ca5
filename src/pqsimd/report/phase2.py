"""Phase 2 of the report: instruction counts beside cycles, hardware counters, energy.

Functions the report (and `pqsimd show`) can call; each takes the results tables / manifest and
never raises on missing data: a section without data says plainly why.

- `instruction_table`: instructions per call per variant and the refo0→avx2 decomposition of the
  instruction count (compiler × autovec × hand_simd), from groups of metric `instructions`.
- `ilp_table`: "cycles per instruction saved". Per stage (e.g. ref→avx2): the time speedup
  S_t = t_base / t_var, the instruction reduction S_i = i_base / i_var, and their quotient
  S_t / S_i = IPC_var / IPC_base. Where S_t > S_i the variant also runs more instructions per
  cycle: the gain beyond the instruction count came from ILP/throughput, not from executing fewer
  instructions (the paper's §5.1 claim, measured). Ticks are TSC ticks; with `core_per_tsc`
  (harness calibration, dependent-add chain) they are converted to estimated core cycles.
- `counters_section`, `energy_section`: the data when it exists, else the recorded reason.
- `write_phase2(directory)`: tables (CSV + Markdown), a figure, and the sections' Markdown/HTML
  into DIR/report/phase2/; returns what it wrote, for index.html to link.
"""

from __future__ import annotations

import html
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import counters as counters_mod
from . import files, fmt, style

VARIANTS = ("refo0", "refnv", "ref", "avx2")
FACTORS = (("compiler", "refo0", "refnv"), ("autovec", "refnv", "ref"), ("hand_simd", "ref", "avx2"))
STAGES = FACTORS + (("total", "refo0", "avx2"),)
EXCLUDED_OPS = ("empty",)
TIME_METRIC = "ticks"
INS_METRIC = "instructions"
COUNTER_METRICS = {counters_mod.metric_name(e): e for e in counters_mod.EVENTS}
# throughput gain S_t / S_i beyond this band reads as "ILP/throughput" (above) or "lower IPC" (below)
BAND = 0.10


def _medians(groups: pd.DataFrame, metric: str) -> dict[tuple[str, str, str], float]:
    if groups is None or groups.empty or "metric" not in groups.columns:
        return {}
    g = groups[groups["metric"] == metric]
    return {(r.scheme, r.op, r.variant): float(r.median) for r in g.itertuples(index=False)}


def _ops(keys, order: list[str] | None = None) -> list[str]:
    seen = list(dict.fromkeys(k[1] for k in keys if k[1] not in EXCLUDED_OPS))
    if order:
        rank = {o: i for i, o in enumerate(order)}
        seen.sort(key=lambda o: rank.get(o, len(rank)))
        return seen
    return style.sort_ops(seen)


def instruction_table(groups: pd.DataFrame, ops_order: list[str] | None = None) -> pd.DataFrame:
    """Per (scheme, op): instructions per call of each variant, the stage factors, their shares."""
    med = _medians(groups, INS_METRIC)
    rows = []
    for scheme in style.sort_schemes({k[0] for k in med}):
        for op in _ops([k for k in med if k[0] == scheme], ops_order):
            row: dict[str, Any] = {"scheme": scheme, "op": op}
            for v in VARIANTS:
                row[v] = med.get((scheme, op, v), math.nan)
            for name, b, v in STAGES:
                ok = row[b] > 0 and row[v] > 0
                row[name] = row[b] / row[v] if ok else math.nan
            t = row["total"]
            for name, _, _ in FACTORS:
                row[f"share_{name}"] = (math.log(row[name]) / math.log(t)
                                        if not (fmt.is_missing(row[name]) or fmt.is_missing(t) or t == 1) else math.nan)
            rows.append(row)
    return pd.DataFrame(rows, columns=["scheme", "op", *VARIANTS, *(s[0] for s in STAGES),
                                       *(f"share_{f[0]}" for f in FACTORS)])


def core_per_tsc(manifest: dict) -> float | None:
    """Median core/TSC ratio over the study's timing jobs (harness calibration), if recorded."""
    vals = [j.get("calibration", {}).get("core_per_tsc") for j in (manifest.get("jobs") or {}).values()
            if isinstance(j, dict) and isinstance(j.get("calibration"), dict)]
    vals = [float(v) for v in vals if v is not None and not fmt.is_missing(v) and float(v) > 0]
    return float(np.median(vals)) if vals else None


def ilp_table(groups: pd.DataFrame, core_per_tsc: float | None = None, ops_order: list[str] | None = None,
              stages=STAGES) -> pd.DataFrame:
    """Per (scheme, op, stage): time speedup vs instruction reduction ("cycles per instruction saved")."""
    t = _medians(groups, TIME_METRIC)
    i = _medians(groups, INS_METRIC)
    common = {k for k in t if k in i}
    rows = []
    for scheme in style.sort_schemes({k[0] for k in common}):
        for op in _ops([k for k in common if k[0] == scheme], ops_order):
            for stage, b, v in stages:
                kb, kv = (scheme, op, b), (scheme, op, v)
                if not ({kb, kv} <= common):
                    continue
                tb, tv, ib, iv = t[kb], t[kv], i[kb], i[kv]
                if min(tb, tv, ib, iv) <= 0:
                    continue
                s_t, s_i = tb / tv, ib / iv
                gain = s_t / s_i
                saved = ib - iv
                row = {
                    "scheme": scheme, "op": op, "stage": stage, "baseline": b, "variant": v,
                    "ticks_base": tb, "ticks_var": tv, "ins_base": ib, "ins_var": iv,
                    "time_speedup": s_t, "instruction_ratio": s_i, "throughput_gain": gain,
                    "ipc_base": ib / tb, "ipc_var": iv / tv,  # instructions per TSC tick
                    "ticks_per_instruction_saved": (tb - tv) / saved if saved else math.nan,
                    "reading": ("ILP/throughput" if gain > 1 + BAND else "lower IPC" if gain < 1 / (1 + BAND)
                                else "fewer instructions"),
                }
                if core_per_tsc:
                    row["ipc_base_cycles"] = row["ipc_base"] / core_per_tsc
                    row["ipc_var_cycles"] = row["ipc_var"] / core_per_tsc
                    row["cycles_per_instruction_saved"] = row["ticks_per_instruction_saved"] * core_per_tsc
                rows.append(row)
    return pd.DataFrame(rows)


# -- counters and energy ---------------------------------------------------------------------

@dataclass
class Section:
    title: str
    available: bool
    text: str  # plain sentences (Markdown-safe)
    table: pd.DataFrame | None = None
    notes: list[str] = field(default_factory=list)
    status: str = ""  # available | unavailable | not requested | not measured
    where: str = ""  # the measuring host, when known

    def markdown(self) -> str:
        out = [f"## {self.title}", "", self.text, ""]
        if self.table is not None and not self.table.empty:
            out += [_md_table(self.table), ""]
        out += [f"- {n}" for n in self.notes]
        return "\n".join(out).rstrip() + "\n"

    def html(self) -> str:
        out = [f"<section><h2>{html.escape(self.title)}</h2>", f"<p>{html.escape(self.text)}</p>"]
        if self.table is not None and not self.table.empty:
            out.append(self.table.to_html(index=False, na_rep=fmt.NA, escape=True, border=0))
        if self.notes:
            out.append("<ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in self.notes) + "</ul>")
        out.append("</section>")
        return "\n".join(out)


def _job_counter_status(manifest: dict) -> dict | None:
    """The counters object of the first job calibration that has one (requested), if any."""
    for j in (manifest.get("jobs") or {}).values():
        cal = (j or {}).get("calibration") or {}
        if isinstance(cal, dict) and cal.get("counters"):
            return cal
    return None


def counters_section(groups: pd.DataFrame, manifest: dict, ops_order: list[str] | None = None) -> Section:
    title = "Hardware counters"
    present = set(groups["metric"].unique()) if groups is not None and not groups.empty and "metric" in groups.columns else set()
    have = {m for m in present if m in COUNTER_METRICS}
    if have:
        rows = []
        g = groups[groups["metric"].isin(have)]
        for (scheme, op, variant), sub in g.groupby(["scheme", "op", "variant"], sort=False):
            if op in EXCLUDED_OPS:
                continue
            per_call = {COUNTER_METRICS[r.metric]: float(r.median) for r in sub.itertuples(index=False)}
            rows.append({"scheme": scheme, "op": op, "variant": variant, **counters_mod.derived(per_call)})
        tab = pd.DataFrame(rows)
        return Section(title, True, "User-space hardware counters (perf_event_open, one group per sample); "
                       "ratios from per-call group medians; IPC in core cycles.", tab)
    cal = _job_counter_status(manifest)
    machine = manifest.get("machine") or {}
    if cal is not None:
        paranoid = (manifest.get("counters") or {}).get("perf_event_paranoid", machine.get("perf_event_paranoid"))
        st = counters_mod.status(cal, paranoid=paranoid, virtualized=machine.get("virtualization"))
        if not st["available"]:
            return Section(title, False, f"No counter data: the counters were requested but unavailable on "
                           f"{machine.get('hostname') or 'the measuring host'} ({st.get('error')}, errno {st.get('errno')}). "
                           f"{st['reason']}. Time is therefore reported in TSC ticks, not core cycles.",
                           status=f"unavailable ({st.get('error')})")
    recorded = manifest.get("counters")
    if isinstance(recorded, dict) and not recorded.get("available", False):
        return Section(title, False, f"No counter data: {recorded.get('reason', 'hardware counters unavailable')}. "
                       "Time is therefore reported in TSC ticks, not core cycles.",
                       status=f"unavailable ({recorded.get('error', '?')})")
    return Section(title, False, "No counter data: this study did not request hardware counters "
                   "(`harness run --counters`). Time is reported in TSC ticks; exact instruction counts "
                   "come from callgrind (`--metric instructions`).", status="not requested")


def energy_section(manifest: dict, energy_groups: pd.DataFrame | None = None) -> Section:
    title = "Energy (RAPL)"
    if energy_groups is not None and not energy_groups.empty:
        return Section(title, True, "Package (and DRAM, where exposed) energy per call from RAPL powercap "
                       "counters bracketing long batches; EDP = J per call × s per call.", energy_groups)
    st = manifest.get("energy")
    if isinstance(st, dict) and not st.get("available", False):
        return Section(title, False, f"No energy data: RAPL is unavailable on {(manifest.get('machine') or {}).get('hostname') or 'the measuring host'}: "
                       f"{st.get('reason') or 'no powercap interface'}.", status="unavailable")
    return Section(title, False, "No energy data: this study did not measure energy; where "
                   "/sys/class/powercap/intel-rapl:* is readable (bare metal, root or a relaxed energy_uj mode), "
                   "`pqsimd doctor` says so.", status="not measured")


# -- output -----------------------------------------------------------------------------------

def _md_table(df: pd.DataFrame) -> str:
    def cell(v):
        if isinstance(v, str):
            return v
        return fmt.num(v) if not fmt.is_missing(v) else fmt.NA
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in r) + " |" for r in df.itertuples(index=False)]
    return "\n".join(lines)


def ilp_figure(ilp: pd.DataFrame, outdir: Path, stage: str = "hand_simd", name: str = "fig_instructions_vs_time") -> dict[str, Path]:
    """Per scheme: instruction reduction vs time speedup for one stage, log scale, bars per op."""
    d = ilp[ilp["stage"] == stage] if not ilp.empty else ilp
    if d.empty:
        return {}
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    schemes = style.sort_schemes(set(d["scheme"]))
    fig, axes = plt.subplots(len(schemes), 1, figsize=(7.5, 2.4 * len(schemes)), squeeze=False, sharey=True)
    for ax, scheme in zip(axes[:, 0], schemes):
        s = d[d["scheme"] == scheme]
        x = np.arange(len(s))
        ax.bar(x - 0.2, s["instruction_ratio"], 0.4, label="instruction reduction", color=style.OKABE_ITO["sky_blue"])
        ax.bar(x + 0.2, s["time_speedup"], 0.4, label="time speedup (TSC)", color=style.OKABE_ITO["vermillion"])
        ax.set_yscale("log")
        ax.set_ylim(0.8, 2.5 * float(np.nanmax(np.maximum(s["instruction_ratio"], s["time_speedup"]))))
        for xi, g, top in zip(x, s["throughput_gain"], np.maximum(s["instruction_ratio"], s["time_speedup"])):
            ax.annotate(f"{g:.2f}", (xi, top), xytext=(0, 2), textcoords="offset points", ha="center", fontsize=7)
        ax.set_xticks(x, [style.op_label(o) if hasattr(style, "op_label") else str(o) for o in s["op"]], rotation=45, ha="right")
        ax.set_title(f"{style.scheme_label(scheme)}: {style.STAGE_LABELS.get(stage, stage)}")
        ax.axhline(1, color="black", lw=0.5)
    axes[0, 0].legend(frameon=False, loc="lower left", bbox_to_anchor=(0, 1.12), ncol=2)
    fig.text(0.01, 0.0, "number above a pair: time speedup / instruction reduction (> 1: more work per tick, ILP/throughput)",
             fontsize=7)
    fig.tight_layout()
    out = {}
    for ext in ("png", "svg", "pdf"):
        out[ext] = files.save_figure(fig, outdir / f"{name}.{ext}", ext, dpi=150)
    plt.close(fig)
    return out


def _read_results(directory: Path) -> tuple[pd.DataFrame, dict]:
    res = directory / "results"
    groups = pd.DataFrame()
    for name in ("groups.parquet", "groups.csv"):
        p = res / name
        if p.exists():
            groups = pd.read_parquet(p) if p.suffix == ".parquet" else pd.read_csv(p)
            break
    try:
        manifest = json.loads((directory / "manifest.json").read_text())
    except (OSError, ValueError):
        manifest = {}
    return groups, manifest


def write_phase2(directory: Path, outdir: Path | None = None, ops_order: list[str] | None = None) -> dict[str, Any]:
    """Everything above into DIR/report/phase2/: tables (CSV, Markdown), figure, sections.
    Returns {"files": {...}, "sections": [Section, ...], "notes": [...]}."""
    directory = Path(directory)
    outdir = Path(outdir) if outdir else directory / "report" / "phase2"
    groups, manifest = _read_results(directory)
    written: dict[str, Path] = {}
    notes: list[str] = []
    ins = instruction_table(groups, ops_order)
    if not ins.empty:
        written["instructions_csv"] = files.write_text(outdir / "instructions.csv", ins.to_csv(index=False))
        written["instructions_md"] = files.write_text(outdir / "instructions.md", _md_table(ins) + "\n")
    else:
        notes.append("instruction-count table skipped: the study has no `instructions` metric (run with --metric instructions)")
    cpt = core_per_tsc(manifest)
    ilp = ilp_table(groups, cpt, ops_order)
    if not ilp.empty:
        written["ilp_csv"] = files.write_text(outdir / "cycles_per_instruction_saved.csv", ilp.to_csv(index=False))
        cols = ["scheme", "op", "stage", "instruction_ratio", "time_speedup", "throughput_gain", "reading"]
        written["ilp_md"] = files.write_text(outdir / "cycles_per_instruction_saved.md", _md_table(ilp[cols]) + "\n")
        for ext, p in ilp_figure(ilp, outdir).items():
            written[f"ilp_{ext}"] = p
    else:
        notes.append("cycles-per-instruction-saved view skipped: needs both `ticks` and `instructions` in one study "
                     "(--metric ticks,instructions)")
    sections = [counters_section(groups, manifest, ops_order), energy_section(manifest)]
    if cpt is None:
        notes.append("time is in TSC ticks; no core/TSC ratio was recorded")
    else:
        notes.append(f"time is in TSC ticks; 1 tick ≈ {cpt:.2f} core cycles (dependent-add calibration, median over jobs)")
    md = "\n".join(s.markdown() for s in sections) + "\n" + "\n".join(f"- {n}" for n in notes) + "\n"
    written["sections_md"] = files.write_text(outdir / "phase2.md", md)
    written["sections_html"] = files.write_text(outdir / "phase2.html", "\n".join(s.html() for s in sections))
    return {"files": written, "sections": sections, "notes": notes, "instructions": ins, "ilp": ilp}


# -- parts of `pqsimd report` (the report's own Table / FigureResult models) -----------------

def report_parts(study, outdir: Path) -> tuple[list, list]:
    """Figures and tables for write_report: the "cycles per instruction saved" table and figure
    (when the study has both ticks and instructions), and the hardware-counter and energy tables,
    which always appear and, without data, say why. Returns ([FigureResult], [(Table, files)])."""
    from .figures import FigureResult
    from .tables import Cell, Table, write_table

    outdir = Path(outdir)
    figs, tabs = [], []
    groups, manifest = study.groups, study.manifest or {}
    cpt = core_per_tsc(manifest)
    ilp = ilp_table(groups, cpt)
    if not ilp.empty:
        rows, unit = [], "core cycles (est.)" if cpt else "TSC ticks"
        for scheme in style.sort_schemes(set(ilp["scheme"])):
            rows.append(style.scheme_label(scheme))
            d = ilp[(ilp["scheme"] == scheme) & (ilp["stage"] == "hand_simd")]
            for r in d.itertuples(index=False):
                ipc_b = r.ipc_base_cycles if cpt else r.ipc_base
                ipc_v = r.ipc_var_cycles if cpt else r.ipc_var
                saved = r.cycles_per_instruction_saved if cpt else r.ticks_per_instruction_saved
                rows.append([Cell(style.op_label(r.op)), Cell(fmt.times(r.instruction_ratio)), Cell(fmt.times(r.time_speedup)),
                             Cell(fmt.num(r.throughput_gain)), Cell(f"{fmt.num(ipc_b)} → {fmt.num(ipc_v)}"),
                             Cell(fmt.num(saved)), Cell(r.reading)])
        caption = (f"Hand SIMD (ref→avx2): instruction-count reduction beside the time speedup. Their quotient "
                   f"is IPC_avx2 / IPC_ref: above 1 the variant also does more per cycle (ILP/throughput), "
                   f"near 1 the gain is fewer instructions, below 1 the avx2 code runs at a lower IPC. "
                   f"IPC and 'per instruction saved' = (t_ref − t_avx2) / (i_ref − i_avx2) in {unit}"
                   + (f"; 1 TSC tick ≈ {cpt:.2f} core cycles (dependent-add calibration)." if cpt else "."))
        t = Table(name="table_cycles_per_instruction_saved", title="Cycles per instruction saved", caption=caption,
                  header=["Operation", "instructions ÷", "time ÷", "time/instr.", "IPC ref → avx2",
                          "per instr. saved", "reading"],
                  rows=rows, data=ilp, align="lcccccl",
                  notes=["All stages (compiler, auto-vec, total) are in the CSV."])
        tabs.append((t, write_table(t, outdir)))
        fr = FigureResult(name="fig_instructions_vs_time", title="Instruction reduction vs time speedup (ref→avx2)",
                          caption="Bars: ref/avx2 ratio of instructions per call (callgrind, exact) and of median "
                                  "time (TSC); the number above a pair is their quotient.", metric="instructions")
        fr.files = {k: v for k, v in ilp_figure(ilp, outdir).items()}
        figs.append(fr)
    for sec, name in ((counters_section(groups, manifest), "table_counters"), (energy_section(manifest), "table_energy")):
        if sec.available and sec.table is not None and not sec.table.empty:
            df = sec.table
            rows = [[Cell(str(v)) if isinstance(v, str) else Cell(fmt.num(v)) for v in r] for r in df.itertuples(index=False)]
            t = Table(name=name, title=sec.title, caption=sec.text, header=list(df.columns), rows=rows, data=df,
                      align="l" * 3 + "c" * (len(df.columns) - 3))
        else:
            t = Table(name=name, title=sec.title, caption=sec.text, header=["data", "status"],
                      rows=[[Cell("none"), Cell(sec.status or "unavailable")]],
                      data=pd.DataFrame([{"status": sec.status or "unavailable", "reason": sec.text}]), align="ll")
        tabs.append((t, write_table(t, outdir)))
    return figs, tabs
