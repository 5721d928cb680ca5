"""The report's mechanism part: instruction counts beside time ("cycles per instruction saved",
computed by analyze into results/ilp.*), hardware counters and energy.

Each function takes results and the manifest and never raises on missing data: a section without
data says plainly why.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .. import counters as counters_mod
from .. import metrics as metrics_mod
from . import files, fmt, style
from ..results import counting_tool, read_table

EXCLUDED_OPS: tuple[str, ...] = ()
COUNTER_METRICS = {counters_mod.metric_name(e): e for e in counters_mod.EVENTS}


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


def counters_section(groups: pd.DataFrame, manifest: dict, ticks: str) -> Section:
    """`ticks`: the study's tick unit (results.Results.unit)."""
    title = "Hardware counters"
    present = set(groups["metric"].unique()) if groups is not None and not groups.empty and "metric" in groups.columns else set()
    have = {m for m in present if m in COUNTER_METRICS}
    if have:
        rows = []
        g = groups[groups["metric"].isin(have)]
        for (scheme, op, variant, comp), sub in g.groupby(["scheme", "op", "variant", "compiler"], sort=False):
            per_call = {COUNTER_METRICS[r.metric]: float(r.median) for r in sub.itertuples(index=False)}
            rows.append({"scheme": scheme, "op": op, "variant": variant, "compiler": comp,
                         **counters_mod.derived(per_call)})
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
                           f"{st['reason']}. Time is therefore reported in {ticks}, not core cycles.",
                           status=f"unavailable ({st.get('error')})")
    recorded = manifest.get("counters")
    if isinstance(recorded, dict) and not recorded.get("available", False):
        return Section(title, False, f"No counter data: {recorded.get('reason', 'hardware counters unavailable')}. "
                       f"Time is therefore reported in {ticks}, not core cycles.",
                       status=f"unavailable ({recorded.get('error', '?')})")
    return Section(title, False, "No counter data: this study did not request hardware counters "
                   f"(`--metric counters`). Time is reported in {ticks}; exact instruction counts "
                   f"come from {counting_tool(manifest)} (`--metric instructions`).", status="not requested")


ENERGY_COLUMNS = ["scheme", "op", "variant", "compiler", "metric", "median", "median_ci_low", "median_ci_high", "unit"]


def energy_groups(groups: pd.DataFrame) -> pd.DataFrame:
    """The groups of the energy metrics (energy_package, energy_dram, ...), the columns a table shows."""
    if groups is None or groups.empty or "metric" not in groups:
        return pd.DataFrame()
    rows = groups[groups["metric"].astype(str).str.startswith("energy_")]
    return rows[[c for c in ENERGY_COLUMNS if c in rows.columns]].reset_index(drop=True)


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


ILP_OP_IN = 0.4  # one op's pair of bars: room for its ratio above and its name under it at style.SMALL_PT
ILP_ROW_OPS = 25  # ops per plot row: more wrap into another row, so the figure is shown at its scale


def ilp_figure(study, ilp: pd.DataFrame, outdir: Path, name: str = "fig_instructions_vs_time") -> dict[str, Path]:
    """Per scheme: instruction reduction vs time speedup for the chain's hand stage, log scale, bars per op."""
    h = study.chain.hand
    d = ilp[(ilp["stage"] == h.stage) & (ilp["compiler"] == study.primary_compiler)] if (h and not ilp.empty) else ilp.iloc[0:0]
    if d.empty:
        return {}
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .figures import RC

    rows = [(scheme, sub.iloc[i:i + ILP_ROW_OPS]) for scheme in study.schemes
            for sub in [d[d["scheme"] == scheme]] for i in range(0, len(sub), ILP_ROW_OPS)]
    n_ops = max(len(s) for _, s in rows)
    top = 2.5 * float(np.nanmax(np.maximum(d["instruction_ratio"], d["time_speedup"])))
    with plt.rc_context(RC):
        fig, axes = plt.subplots(len(rows), 1, figsize=(max(5.5, ILP_OP_IN * n_ops + 1.5), 3.0 * len(rows) + 0.4),
                                 squeeze=False, layout="constrained")
        for ax, (scheme, s) in zip(axes[:, 0], rows):
            fam = study.family_of(scheme)
            x = np.arange(len(s))
            ax.bar(x - 0.2, s["instruction_ratio"], 0.4, label="instruction reduction", color=style.OKABE_ITO["sky_blue"])
            ax.bar(x + 0.2, s["time_speedup"], 0.4, label="time speedup (TSC)", color=style.OKABE_ITO["vermillion"])
            ax.set_yscale("log")
            ax.set_ylim(0.8, top)
            for xi, g, high in zip(x, s["throughput_gain"], np.maximum(s["instruction_ratio"], s["time_speedup"])):
                ax.annotate(f"{g:.2f}", (xi, high), xytext=(0, 2), textcoords="offset points", ha="center",
                            fontsize=style.SMALL_PT)
            ax.set_xticks(x, [fam.label(o) if fam else str(o) for o in s["op"]], rotation=45, ha="right")
            ax.set_xlim(-0.6, n_ops - 0.4)
            ax.set_title(f"{fam.scheme_label(scheme) if fam else scheme}: {study.chain.stage_label(h.stage)}", loc="left")
            ax.set_ylabel("factor (×)")
            ax.axhline(1, color="black", lw=0.5)
        handles, labels = axes[0, 0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside upper center", ncol=2, frameon=False)
        return files.save_formats(fig, outdir, name)


def read_result(directory: Path, name: str) -> pd.DataFrame:
    """An optional table: a damaged one reads as empty (the section says there is no data)."""
    return read_table(directory, name, strict=False)


# -- parts of `pqsimd report` (the report's own Table / FigureResult models) -----------------

def report_parts(study, outdir: Path) -> tuple[list, list]:
    """Figures and tables of the mechanism part: the "cycles per instruction saved" table and figure
    (when the study has both ticks and instructions), and the hardware-counter and energy tables,
    which always appear and, without data, say why. Returns ([FigureResult], [(Table, files)])."""
    from .figures import FigureResult
    from .tables import Cell, Table, write_table

    outdir = Path(outdir) / "mechanism"
    figs, tabs = [], []
    groups, manifest = study.groups, study.manifest or {}
    cpt = study.summary.get("core_per_tsc")
    ilp = read_result(study.directory, "ilp")
    h = study.chain.hand
    if not ilp.empty and h is not None:
        rows, unit = [], "core cycles (est.)" if cpt else study.unit(metrics_mod.TIME)
        for scheme in study.schemes:
            d = ilp[(ilp["scheme"] == scheme) & (ilp["stage"] == h.stage) & (ilp["compiler"] == study.primary_compiler)]
            if d.empty:
                continue
            fam = study.family_of(scheme)
            rows.append(fam.scheme_label(scheme) if fam else scheme)
            for r in d.itertuples(index=False):
                ipc_b = r.ipc_base_cycles if cpt else r.ipc_base
                ipc_v = r.ipc_var_cycles if cpt else r.ipc_var
                saved = r.cycles_per_instruction_saved if cpt else r.ticks_per_instruction_saved
                rows.append([Cell(fam.label(r.op) if fam else r.op), Cell(fmt.times(r.instruction_ratio)),
                             Cell(fmt.times(r.time_speedup)), Cell(fmt.num(r.throughput_gain)),
                             Cell(f"{fmt.num(ipc_b)} → {fmt.num(ipc_v)}"), Cell(fmt.num(saved)), Cell(r.reading)])
        caption = (f"{h.label} ({h.base}→{h.variant}): instruction-count reduction beside the time speedup. Their "
                   f"quotient is IPC_{h.variant} / IPC_{h.base}: above 1 the variant also does more per cycle "
                   f"(ILP/throughput), near 1 the gain is fewer instructions, below 1 it runs at a lower IPC. "
                   f"IPC and 'per instruction saved' = (t_base − t_var) / (i_base − i_var) in {unit}"
                   + (f"; 1 TSC tick ≈ {cpt:.2f} core cycles (dependent-add calibration)." if cpt else "."))
        t = Table(name="table_cycles_per_instruction_saved", title="Cycles per instruction saved", caption=caption,
                  header=["Operation", "instructions ÷", "time ÷", "time/instr.", f"IPC {h.base} → {h.variant}",
                          "per instr. saved", "reading"],
                  rows=rows, data=ilp, align="lcccccl",
                  notes=["All stages and compilers are in the CSV."])
        tabs.append((t, write_table(t, outdir)))
        fr = FigureResult(name="mechanism/fig_instructions_vs_time",
                          title=f"Instruction reduction vs time speedup ({h.base}→{h.variant})",
                          caption=f"Bars: {h.base}/{h.variant} ratio of instructions per call ({study.counted_by}, exact) and "
                                  f"of median time (TSC), log scale; the number above a pair is time speedup / instruction "
                                  f"reduction (above 1: more work per tick, ILP/throughput).",
                          metric=metrics_mod.COUNT)
        fr.files = {k: v for k, v in ilp_figure(study, ilp, outdir).items()}
        if not fr.files:
            fr.skipped = "no rows for the hand stage under the primary compiler"
        figs.append(fr)
    cc = read_result(study.directory, "call_counts")
    if not cc.empty:
        rows = []
        for r in cc.itertuples(index=False):
            fam = study.family_of(r.scheme)
            rows.append([Cell(fam.scheme_label(r.scheme) if fam else r.scheme), Cell(fam.label(r.op) if fam else r.op),
                         Cell(f"{r.variant} ({r.compiler})"), Cell(str(r.function)), Cell(fmt.num(r.per_call)),
                         Cell(str(r.per_call_exact))])
        t = Table(name="table_call_counts", title="Counted calls per call (e.g. signing's rejection-loop iterations)",
                  caption=f"Calls of the family's counted function per call of the op, inside the region {study.counted_by} "
                          "counts (the instructions metric's N2 − N1 calls), one value per repeat. For ML-DSA signing, "
                          "calls of poly_challenge = iterations of the rejection loop.",
                  header=["parameter set", "op", "variant", "function", "per call", "exact, per repeat"], rows=rows,
                  data=cc, align="llllcl")
        tabs.append((t, write_table(t, outdir)))
    for sec, name in ((counters_section(groups, manifest, study.unit(metrics_mod.TIME)), "table_counters"), (energy_section(manifest, energy_groups(groups)), "table_energy")):
        if sec.available and sec.table is not None and not sec.table.empty:
            df = sec.table
            rows = [[Cell(str(v)) if isinstance(v, str) else Cell(fmt.num(v)) for v in r] for r in df.itertuples(index=False)]
            t = Table(name=name, title=sec.title, caption=sec.text, header=list(df.columns), rows=rows, data=df,
                      align="l" * 4 + "c" * (len(df.columns) - 4))
        else:
            t = Table(name=name, title=sec.title, caption=sec.text, header=["data", "status"],
                      rows=[[Cell("none"), Cell(sec.status or "unavailable")]],
                      data=pd.DataFrame([{"status": sec.status or "unavailable", "reason": sec.text}]), align="ll")
        tabs.append((t, write_table(t, outdir)))
    return figs, tabs
