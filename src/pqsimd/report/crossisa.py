"""The cross-ISA view of the report and of `pqsimd show`: clean → hand-SIMD on one ISA beside the
other (x86_64 AVX2 beside aarch64 NEON), per op: instruction ratios, the SIMD build's mix (vector
share, vector multiplies, permutes) and each core's cost-model estimate, with sentences that read
them. It reads results/crossisa*.{parquet,csv} and crossisa.json, which analyze/crossisa.py wrote
(`pqsimd report DIR --beside OTHER` has them written first); nothing is computed here."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from . import fmt, style  # noqa: E402
from ..results import Results, read_json, read_table  # noqa: E402
from ..studydir import StudyDir  # noqa: E402

ISA_COLOURS = [style.OKABE_ITO[c] for c in ("blue", "vermillion", "bluish_green", "orange")]


def load(directory: Path) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    t = read_table(directory, "crossisa", strict=False)
    m = read_table(directory, "crossisa_mca", strict=False)
    return t, m, read_json(StudyDir(directory).results("crossisa.json"))


def _label(study: Results, scheme: str, op: str) -> str:
    fam = study.family_of(scheme)
    return f"{fam.scheme_label(scheme) if fam else scheme} {fam.label(op) if fam else op}"


def _pairs(t: pd.DataFrame, study: Results | None = None) -> list[tuple[str, str]]:
    """(scheme, op) in the study's order: parameter sets as listed, ops in their family's order."""
    pairs = list(dict.fromkeys(zip(t["scheme"].astype(str), t["op"].astype(str))))
    if study is None:
        return pairs
    out = []
    for scheme in dict.fromkeys(s for s, _ in pairs):
        fam = study.family_of(scheme)
        ops = [o for s, o in pairs if s == scheme]
        out += [(scheme, o) for o in (fam.sort_ops(ops) if fam else ops)]
    return out


def sentences(study: Results, t: pd.DataFrame, m: pd.DataFrame) -> list[str]:
    """One line per op: both ratios with their lanes, what the lane widths alone would predict, the mix."""
    isas = list(dict.fromkeys(t["isa"].astype(str)))
    out = []
    for scheme, op in _pairs(t, study):
        rows = {r.isa: r for r in t[(t["scheme"] == scheme) & (t["op"] == op)].itertuples(index=False)}
        if len(rows) < 2:
            continue
        parts = [f"{r.baseline} → {r.variant} on {isa} cuts instructions {fmt.times(r.ratio)}"
                 + (f" ({r.lane_bits:.0f}-bit vectors)" if r.lane_bits and not math.isnan(r.lane_bits) else "")
                 for isa, r in rows.items()]
        line = f"{_label(study, scheme, op)}: " + ", ".join(parts)
        narrow, wide = sorted((rows[i] for i in isas[:2]), key=lambda r: (r.lane_bits, r.isa))
        if not math.isnan(narrow.lane_ratio) and narrow.lane_bits < wide.lane_bits:
            line += (f"; lanes alone ({wide.lane_bits:.0f} vs {narrow.lane_bits:.0f} bits) predict "
                     f"{fmt.times(wide.ratio * narrow.lane_bits / wide.lane_bits)} on {narrow.isa}, which reaches "
                     f"{fmt.times(narrow.lane_ratio)} that" + (" (its instructions do more per vector op, or it needs "
                     "fewer scalar and permute instructions around them)" if narrow.lane_ratio > 1.1 else ""))
        mix = [f"{isa}: {fmt.pct(r.vector_share)} vector, {fmt.num(r.vec_mul)} vector multiplies and "
               f"{fmt.num(r.permutes)} permutes per call" for isa, r in rows.items() if not math.isnan(r.vector_share)]
        if mix:
            line += ". Mix of the SIMD builds: " + "; ".join(mix)
        est = m[(m["scheme"] == scheme) & (m["op"] == op)] if len(m) else m
        if len(est):
            line += ". llvm-mca clean → SIMD: " + ", ".join(
                f"{r.cpu} ({r.model or 'model not recorded'}) {fmt.times(r.ratio)}" for r in est.itertuples(index=False))
        out.append(line + ".")
    return out


def figure(study: Results, t: pd.DataFrame, outdir: Path, name: str) -> dict:
    from .figures import RC, _save

    pairs = _pairs(t, study)
    isas = list(dict.fromkeys(t["isa"].astype(str)))
    with plt.rc_context(RC):
        fig, ax = plt.subplots(figsize=(7.5, max(2.5, 0.3 * len(pairs) * len(isas) + 1.0)))
        y = np.arange(len(pairs))[::-1]  # the first op on top
        h = 0.8 / max(len(isas), 1)
        for j, isa in enumerate(isas):
            d = t[t["isa"] == isa]
            vals = [float(d[(d["scheme"] == s) & (d["op"] == o)]["ratio"].iloc[0])
                    if len(d[(d["scheme"] == s) & (d["op"] == o)]) else np.nan for s, o in pairs]
            step = f"{d['baseline'].iloc[0]} → {d['variant'].iloc[0]}" if len(d) else ""
            ax.barh(y + (len(isas) - 1 - 2 * j) * h / 2, vals, height=h, color=ISA_COLOURS[j % len(ISA_COLOURS)],
                    label=f"{isa} ({step})")
        ax.set_yticks(y, [_label(study, s, o) for s, o in pairs])
        ax.set_xscale("log")
        ax.axvline(1.0, color="black", linewidth=0.6)
        ax.xaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:g}×"))
        ax.set_xlabel("instructions per call, clean / hand-SIMD (exact counts)")
        ax.legend(frameon=False, fontsize=style.SMALL_PT, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        return _save(fig, outdir, name)


def table(study: Results, t: pd.DataFrame, m: pd.DataFrame):
    from .tables import Cell, Table

    isas = list(dict.fromkeys(t["isa"].astype(str)))
    cpus = {isa: list(dict.fromkeys(m[m["isa"] == isa]["cpu"].astype(str))) if len(m) else [] for isa in isas}
    body = []
    for scheme, op in _pairs(t, study):
        cells = [Cell(_label(study, scheme, op))]
        for isa in isas:
            d = t[(t["scheme"] == scheme) & (t["op"] == op) & (t["isa"] == isa)]
            r = d.iloc[0] if len(d) else None
            cells += [Cell(fmt.times(r["ratio"]) if r is not None else fmt.NA),
                      Cell(fmt.pct(r["vector_share"]) if r is not None else fmt.NA),
                      Cell(f"{fmt.num(r['vec_mul'])} / {fmt.num(r['permutes'])}" if r is not None else fmt.NA)]
            for cpu in cpus[isa]:
                e = m[(m["scheme"] == scheme) & (m["op"] == op) & (m["isa"] == isa) & (m["cpu"] == cpu)]
                cells.append(Cell(fmt.times(float(e["ratio"].iloc[0])) if len(e) else fmt.NA))
        body.append(cells)
    header = ["op"]
    for isa in isas:
        header += [f"{isa} ratio", f"{isa} vector share", f"{isa} vec mul / permutes per call"]
        for cpu in cpus[isa]:
            model = m[(m["isa"] == isa) & (m["cpu"] == cpu)]["model"].dropna()
            header.append(f"{cpu} ({model.iloc[0]} model)" if len(model) else cpu)
    steps = "; ".join(f"{isa}: {d['baseline'].iloc[0]} → {d['variant'].iloc[0]}"
                      for isa, d in t.groupby("isa", sort=False))
    caption = (f"Cross-ISA: clean → hand-written SIMD ({steps}). ratio: instructions per call of the clean build over "
               f"the SIMD build's (exact counts: callgrind natively, our QEMU plugin under emulation); vector share, "
               f"vector multiplies and permutes per call: the SIMD build's executed instructions (--metric mix); per "
               f"core: llvm-mca's predicted clean / SIMD cycles, with the scheduling model llvm-mca really uses.")
    return Table(name="table_crossisa", title="Across ISAs: hand-SIMD on each", caption=caption, header=header,
                 rows=body, data=t, align="l" + "r" * (len(header) - 1))


def crossisa_parts(study: Results, outdir: Path) -> tuple[list, list, list[str]]:
    """([FigureResult], [Table], sentences) of the cross-ISA view; empty without crossisa tables."""
    from .figures import FigureResult
    from .tables import write_table

    t, m, _info = load(study.directory)
    if t.empty:
        return [], [], []
    for df in (t, m):
        for c in ("scheme", "op", "isa", "cpu"):
            if c in df.columns:
                df[c] = df[c].astype(str)
    out = Path(outdir) / "crossisa"
    out.mkdir(parents=True, exist_ok=True)
    fr = FigureResult(name="crossisa/fig_crossisa", title="Across ISAs: instruction reduction of hand-written SIMD",
                      caption="Per op, the clean build's instructions per call over the hand-SIMD build's, on each "
                              "ISA (exact counts); log scale.", family="")
    fr.files = figure(study, t, out, "fig_crossisa")
    tab = table(study, t, m)
    write_table(tab, out)
    return [fr], [tab], sentences(study, t, m)
