"""The paper's Figures 1-6 per scheme family (and their per-metric twins), plus the compiler
figure, from DIR/results only. What each figure shows comes from the family's views and the chain
(summary.json); nothing here names a scheme, an op or a variant.

Every figure is saved as PDF + PNG + SVG under DIR/report/<family>/. A figure without data is
skipped with a reason, which the report prints; nothing here raises on missing data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import math
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import FuncFormatter, NullFormatter  # noqa: E402

from ..model import Design
from . import files, fmt, style  # noqa: E402
from ..results import FamilyView, Levels, Results  # noqa: E402
from .. import metrics as metrics_mod

FORMATS = ("pdf", "png", "svg")
DPI = 150

RC = {
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "svg.fonttype": "none",
    "pdf.fonttype": 42,
    "savefig.bbox": "tight",
}


@dataclass
class FigureResult:
    name: str
    title: str
    caption: str = ""
    files: dict[str, Path] = field(default_factory=dict)
    skipped: str | None = None  # the reason, when there was nothing to draw
    metric: str = metrics_mod.TIME
    family: str = ""

    @property
    def png(self) -> Path | None:
        return self.files.get("png")


class Skip(Exception):
    """No data for this figure; the message says what was missing."""


# -- helpers --------------------------------------------------------------------------------

def _colours(study: Results) -> dict[str, str]:
    return style.variant_colours(study.chain.variants, study.variants)


def _variant_label(study: Results, v: str) -> str:
    return v


def _ci_cols(df: pd.DataFrame) -> tuple[str, str, str]:
    """The comparisons' one interval (results.interval's columns) and what it is."""
    return "ci_low", "ci_high", "interval"


def _level(study: Results) -> str:
    """The achieved levels of the study's comparison intervals (analyze's ci_level), as a caption says them."""
    c = study.comparisons
    lv = Levels.of(c.loc[c["speedup"].notna(), "ci_level"]) if len(c) and "ci_level" in c.columns else Levels(())
    return lv.text("each interval its own: comparisons.csv ci_level")


def _yerr(s: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    lower = np.where(np.isfinite(lo), np.clip(s - lo, 0, None), 0.0)
    upper = np.where(np.isfinite(hi), np.clip(hi - s, 0, None), 0.0)
    return np.vstack([lower, upper])


def _unreliable_note(df: pd.DataFrame, lo_col: str) -> str:
    if "verdict" in df.columns and len(df) and (df["verdict"] == "withheld").any():
        return (" Withheld comparisons (too few jobs for the study's confidence) are drawn with [min, max] of "
                "their job ratios, at a lower confidence.")
    return ""


def _log_ylim(ax, values: np.ndarray) -> None:
    v = values[np.isfinite(values) & (values > 0)]
    if v.size:
        ax.set_ylim(min(v.min(), 1.0) / 1.6, max(v.max(), 1.0) * 2.5)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}×"))
    # a range under a decade has few major ticks: label the 2s and 5s between them, plainly
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda y, _: f"{y:g}×" if f"{y:.0e}"[0] in "25" else ""))


def _compact(x: float) -> str:
    """A tick label that stays short: 950, 12,000, 450k, 2M, 1.2G."""
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e5, "k")):
        if x >= scale:
            return f"{x / scale:.3g}{suffix}" if scale > 1e5 else f"{x / 1e3:.3g}k"
    return f"{x:,.0f}" if x >= 1 else f"{x:g}"


def _plain_log_x(ax) -> None:
    """Log x without crowded minor labels: short plain numbers at the major ticks only."""
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: _compact(x)))
    ax.xaxis.set_minor_formatter(NullFormatter())


def _save(fig, outdir: Path, name: str) -> dict[str, Path]:
    out = {}
    for ext in FORMATS:
        out[ext] = files.save_figure(fig, outdir / f"{name}.{ext}", ext, dpi=DPI)
    plt.close(fig)
    return out


def _design_note(study: Results) -> str:
    d = study.design
    if d == Design.PAIRED:
        return " Paired design: all variants timed in each job, per-spin random order; speedups are medians of the jobs' ratios."
    return ""


def _hand(study: Results):
    h = study.chain.hand
    if h is None:
        raise Skip("the study's chain has no steps")
    return h


# -- figure 1 ------------------------------------------------------------------------------

COPY_MARKERS = ["o", "^", "s", "D", "v", "P", "X", "*"]  # a copy's index in its job (copy 1, copy 2, ...)
OFF_CLUSTER = 0.10  # a copy whose median is this far from its build's: named in Fig. 1's caption


def _copies(d: pd.DataFrame) -> pd.DataFrame:
    """One row per copy a job timed (job, laid-out copy; a job without laid-out copies is one copy):
    variant, job_index, copy (0-based within the job), its median spin median."""
    d = d.assign(copy=(d["layout"].fillna(0).astype(int) if "layout" in d.columns else 0))
    return d.groupby(["variant", "job_index", "copy"], as_index=False)["value"].median()


def _off_copies(copies: pd.DataFrame, variant: str) -> str:
    """'job 3 (2 copies), job 8' : the copies of a build whose median is OFF_CLUSTER from the build's."""
    c = copies[copies["variant"] == variant]
    off = c[(c["value"] / c["value"].median() - 1).abs() >= OFF_CLUSTER]
    per_job = off.groupby("job_index").size()
    return ", ".join(f"job {j}" + (f" ({n} copies)" if n > 1 else "") for j, n in per_job.items())


def fig1_distributions(study: Results, fam: FamilyView, metric: str, notes: list[str]):
    view = fam.views.get("distribution") or {}
    scheme = view.get("scheme") if view.get("scheme") in fam.schemes else (fam.schemes[0] if fam.schemes else None)
    ops = list(view.get("ops") or fam.shown_ops(fam.ops)[:3])
    h = _hand(study)
    sm = study.spins()
    if not sm.empty:
        sm = sm[(sm["metric"] == metric) & (sm["scheme"] == scheme) & (sm["op"].isin(ops))
                & (sm["variant"].isin([h.base, h.variant])) & (sm["compiler"] == study.primary_compiler)]
    if sm.empty:
        raise Skip(f"no {metric} spin medians for {h.base}/{h.variant} of {fam.scheme_label(scheme or '?')} "
                   f"({', '.join(ops)}) in results/spins.parquet")
    ops = [o for o in ops if o in set(sm["op"])]
    laid_out = "layout" in sm.columns and sm["layout"].notna().any()
    colours = _colours(study)
    # per op: the spin medians' histogram above, each copy's median below (a row per build)
    fig, axes = plt.subplots(2, len(ops), figsize=(style.fit_width(len(ops), 3.6, 0, 3.6), 4.2), squeeze=False,
                             sharex="col", gridspec_kw={"height_ratios": [3, 1.2]}, layout="constrained")
    off = []
    n_copies = 1
    for ax, strip, op in zip(axes[0], axes[1], ops):
        d = sm[sm["op"] == op]
        d = d[d["value"] > 0]
        if d.empty:
            ax.set_visible(False)
            strip.set_visible(False)
            continue
        lo, hi = d["value"].min(), d["value"].max()
        if lo == hi:
            lo, hi = lo / 1.1, hi * 1.1
        bins = np.geomspace(lo, hi, 60)
        copies = _copies(d)
        n_copies = max(n_copies, int(copies["copy"].max()) + 1)
        counts = []
        for row, variant in enumerate((h.base, h.variant)):
            v = d.loc[d["variant"] == variant, "value"].to_numpy(float)
            if not v.size:
                continue
            c = style.variant_colour(variant, colours)
            ax.hist(v, bins=bins, color=c, alpha=0.55, label=variant, edgecolor=c, linewidth=0.6)
            counts.append(str(v.size))
            ax.axvline(np.median(v), color=c, linestyle="--", linewidth=1.3)
            cv = copies[copies["variant"] == variant]
            for k in sorted(set(cv["copy"])):
                x = cv.loc[cv["copy"] == k, "value"].to_numpy(float)
                strip.scatter(x, np.full(x.size, row) + (k - (n_copies - 1) / 2) * 0.2, s=16, color=c,
                              marker=COPY_MARKERS[k % len(COPY_MARKERS)], linewidths=0, alpha=0.8)
            named = _off_copies(copies, variant)
            if named:
                off.append(f"{fam.label(op)} {variant}: {named}")
        ax.set_xscale("log")
        if hi / lo < 30:  # less than ~1.5 decades: a few evenly spaced labels read better than decades
            ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(nbins=4))
        _plain_log_x(ax)
        ax.set_title(f"{fam.label(op)}  (n = {' / '.join(counts)})")
        strip.set_ylim(-0.6, 1.6)
        strip.set_yticks([0, 1], [h.base, h.variant])
        strip.invert_yaxis()
        strip.set_xlabel(f"spin median ({study.unit(metric)} per call)")
    axes[0][0].set_ylabel("spin medians")
    handles, labels = axes[0][0].get_legend_handles_labels()
    if n_copies > 1:  # the strips' markers: which copy of its job a point is
        handles += [Line2D([], [], color="grey", marker=COPY_MARKERS[k % len(COPY_MARKERS)],
                                            linestyle="", markersize=5) for k in range(n_copies)]
        labels += [f"copy {k + 1} of its job" for k in range(n_copies)]
    fig.legend(handles, labels, loc="outside upper center", ncol=max(len(labels), 1), frameon=False)
    what = ("laid-out copy a job timed (a job links its own copies, so a copy is one job's code layout and "
            "one job's machine state)" if laid_out else "each job (one copy of each build per job)")
    caption = (f"Distributions of spin medians ({style.metric_title(metric)}) for representative "
               f"{fam.scheme_label(scheme)} operations, {h.base} vs {h.variant}. Log x-axis; dashed lines mark "
               f"the medians. Warmup spins excluded. Below each histogram, one point per {what}, at its median: a "
               f"build's spin medians form a cluster per copy, and a cluster away from the median is a few copies, "
               f"not a spread of every copy. ")
    caption += (f"Copies at least {OFF_CLUSTER:.0%} from their build's median: {'; '.join(off)}." if off else
                f"No copy is {OFF_CLUSTER:.0%} or more from its build's median.")
    return fig, caption


# -- figure 2 ------------------------------------------------------------------------------

def fig2_decomposition(study: Results, fam: FamilyView, metric: str, notes: list[str]):
    first = study.chain.first
    df = study.comparison(metric, baseline=first)
    df = df[df["scheme"].isin(fam.schemes)] if not df.empty else df
    stages = [v for v in study.chain.variants[1:] if not df.empty and v in set(df["variant"])]
    if not stages:
        raise Skip(f"no cumulative ({metric}) comparisons against {first}")
    df = df.drop_duplicates(["scheme", "op", "variant"])
    lo_col, hi_col, ci_name = _ci_cols(df)
    colours = _colours(study)
    schemes = [s for s in fam.schemes if s in set(df["scheme"])]
    n_ops = max(len(fam.shown_ops(df[df["scheme"] == s]["op"])) for s in schemes)
    fig, axes = plt.subplots(len(schemes), 1, figsize=(style.fit_width(n_ops, 0.55, 2, 6.5), 2.9 * len(schemes)), squeeze=False)
    width = 0.8 / len(stages)
    last = stages[-1]
    for ax, scheme in zip(axes[:, 0], schemes):
        d = df[df["scheme"] == scheme]
        ops = fam.shown_ops(d["op"])
        sort_val = d[d["variant"] == last].set_index("op")["speedup"]
        ops.sort(key=lambda o: -(sort_val.get(o, np.nan) if np.isfinite(sort_val.get(o, np.nan)) else -1))
        x = np.arange(len(ops))
        allv = []
        for i, variant in enumerate(stages):
            dv = d[d["variant"] == variant].set_index("op").reindex(ops)
            s = dv["speedup"].to_numpy(float)
            allv.append(s)
            yerr = None
            if variant == last:
                yerr = _yerr(s, dv[lo_col].to_numpy(float), dv[hi_col].to_numpy(float))
                allv.append(dv[hi_col].to_numpy(float))
            ax.bar(x + (i - (len(stages) - 1) / 2) * width, np.nan_to_num(s, nan=0.0), width,
                   color=style.variant_colour(variant, colours), label=variant,
                   yerr=yerr, error_kw=dict(ecolor="black", elinewidth=0.8, capsize=1.5),
                   edgecolor="white", linewidth=0.3)
        ax.set_yscale("log")
        _log_ylim(ax, np.concatenate(allv))
        ax.axhline(1.0, color="black", linewidth=0.6)
        ax.set_xticks(x, [fam.label(o) for o in ops], rotation=40, ha="right")
        ax.set_xlim(-0.6, len(ops) - 0.4)
        ax.set_ylabel(f"speedup vs {first} (×)")
        ax.set_title(fam.scheme_label(scheme), loc="left")
        ax.grid(axis="y", which="major", linewidth=0.3, alpha=0.5)
    axes[0, 0].legend(ncol=len(stages), frameon=False, loc="upper right")
    fig.tight_layout()
    caption = (f"Cumulative speedup ({style.metric_title(metric)}) at each stage, normalised to {first} (1×): "
               f"{', '.join(stages)}. Log y-axis; {_level(study)} {ci_name} on the {last} bars. Sorted by {last} "
               f"speedup." + _unreliable_note(df[df["variant"] == last], lo_col) + _design_note(study))
    return fig, caption


# -- figures 3, 5, 6: the hand stage per op, one bar per parameter set ---------------------

def _hand_bars(study: Results, fam: FamilyView, metric: str, ops: list[str] | None, log: bool, sort: bool,
               values: bool, width_per_op: float):
    h = _hand(study)
    df = study.comparison(metric, baseline=h.base, variant=h.variant)
    df = df[df["scheme"].isin(fam.schemes)] if not df.empty else df
    if df.empty or not np.isfinite(df["speedup"].to_numpy(float)).any():  # e.g. a family without avx2 code
        raise Skip(f"no {h.base}→{h.variant} ({metric}) comparisons")
    df = df.drop_duplicates(["scheme", "op"])
    if ops is not None:
        missing = [o for o in ops if o not in set(df["op"])]
        ops = [o for o in ops if o in set(df["op"])]
        if not ops:
            raise Skip(f"no {h.base}→{h.variant} ({metric}) comparisons for {', '.join(missing)}")
    else:
        ops = fam.shown_ops(df["op"])
    schemes = [s for s in fam.schemes if s in set(df["scheme"])]
    lo_col, hi_col, ci_name = _ci_cols(df)
    if sort:
        first = df[df["scheme"] == schemes[0]].set_index("op")["speedup"]
        ops = sorted(ops, key=lambda o: -(first.get(o) if np.isfinite(first.get(o, np.nan)) else -1))
    many = len(schemes) > 4  # e.g. the 12 SPHINCS+ sets: wider groups, no value labels, legend above
    per_op = max(width_per_op, min(0.22 * len(schemes), 10.5 / len(ops))) if many else width_per_op  # <= ~12 in
    fig, ax = plt.subplots(figsize=(style.fit_width(len(ops), per_op, 1.5, 4.5), 3.4 + (0.25 * math.ceil(len(schemes) / 6) if many else 0)))
    width = 0.8 / len(schemes)
    x = np.arange(len(ops))
    allv = []
    for i, scheme in enumerate(schemes):
        d = df[df["scheme"] == scheme].set_index("op").reindex(ops)
        s = d["speedup"].to_numpy(float)
        lo, hi = d[lo_col].to_numpy(float), d[hi_col].to_numpy(float)
        allv += [s, hi]
        colour, hatch = style.scheme_style(scheme, schemes)
        xs = x + (i - (len(schemes) - 1) / 2) * width
        ax.bar(xs, np.nan_to_num(s, nan=0.0), width, color=colour, hatch=hatch, edgecolor="white",
               linewidth=0.3, label=fam.scheme_label(scheme), yerr=_yerr(s, lo, hi),
               error_kw=dict(ecolor="black", elinewidth=0.8, capsize=2))
        if values and not many:
            for xi, si, hi_i in zip(xs, s, hi):
                if np.isfinite(si):
                    top = hi_i if np.isfinite(hi_i) else si
                    ax.annotate(fmt.times(si), (xi, top), xytext=(0, 2), textcoords="offset points",
                                ha="center", va="bottom", fontsize=style.SMALL_PT)
    if log:
        ax.set_yscale("log")
        _log_ylim(ax, np.concatenate(allv))
        ax.grid(axis="y", which="major", linewidth=0.3, alpha=0.5)
        ax.axhline(1.0, color="black", linewidth=0.6)
    else:
        v = np.concatenate(allv)
        v = v[np.isfinite(v)]
        ax.set_ylim(0, (v.max() if v.size else 1) * 1.3)
        ax.grid(axis="y", linewidth=0.3, alpha=0.5)
    ax.set_xticks(x, [fam.label(o) for o in ops], rotation=40 if len(ops) > 6 else 0,
                  ha="right" if len(ops) > 6 else "center")
    ax.set_ylabel(f"speedup {h.base}→{h.variant} (×)")
    if many:
        ax.legend(frameon=False, ncol=min(len(schemes), 6), loc="lower center", bbox_to_anchor=(0.5, 1.01),
                  fontsize=style.SMALL_PT)
    else:
        ax.legend(frameon=False, ncol=min(len(schemes), 4), loc="upper right")
    fig.tight_layout()
    note = _unreliable_note(df[df["op"].isin(ops)], lo_col)
    return fig, ci_name, note, schemes


def fig3_hand_simd(study: Results, fam: FamilyView, metric: str, notes: list[str]):
    h = _hand(study)
    fig, ci_name, note, schemes = _hand_bars(study, fam, metric, None, log=True, sort=True, values=False,
                                             width_per_op=0.55)
    caption = (f"{h.label} speedup ({h.base}→{h.variant}, {style.metric_title(metric)}) per operation, all "
               f"parameter sets. Log y-axis; {_level(study)} {ci_name} error bars. Sorted by "
               f"{fam.scheme_label(schemes[0])} speedup." + note + _design_note(study))
    return fig, caption


def fig5_cross_param(study: Results, fam: FamilyView, metric: str, notes: list[str]):
    ops = list(fam.views.get("cross_parameter") or [])
    if not ops:
        raise Skip(f"family {fam.name} names no cross-parameter ops ([views] cross_parameter)")
    h = _hand(study)
    fig, ci_name, note, schemes = _hand_bars(study, fam, metric, ops, log=False, sort=False, values=True,
                                             width_per_op=1.5)
    df = study.comparison(metric, baseline=h.base, variant=h.variant).drop_duplicates(["scheme", "op"])
    caption = (f"Per-operation speedup ({h.base}→{h.variant}, {style.metric_title(metric)}) across parameter sets; "
               f"{_level(study)} {ci_name}. " + _across_sets(fam, df, [o for o in ops if o in set(df["op"])], schemes)
               + f" {fam.views.get('cross_parameter_note', '')}" + note)
    return fig, caption


def _across_sets(fam: FamilyView, df: pd.DataFrame, ops: list[str], schemes: list[str]) -> str:
    """What Fig. 5 shows, op by op: whether the sets' intervals overlap, the speedups where they do not,
    and the two reasons an op's speedup can differ between sets, neither of which the figure can tell."""
    lo_col, hi_col, _ = _ci_cols(df)
    same, apart = [], []
    for op in ops:
        d = df[(df["op"] == op) & df["scheme"].isin(schemes) & np.isfinite(df["speedup"].astype(float))]
        if len(d) < 2:
            continue
        slow, fast = d.loc[d["speedup"].idxmin()], d.loc[d["speedup"].idxmax()]
        if slow[hi_col] < fast[lo_col]:
            apart.append(f"{fam.label(op)} (" + ", ".join(f"{fmt.times(r.speedup)} at {fam.scheme_label(r.scheme)}"
                                                          for r in d.sort_values("speedup").itertuples()) + ")")
        else:
            same.append(fam.label(op))
    parts = []
    if same:
        parts.append(f"The sets' intervals overlap for {', '.join(same)}.")
    if apart:
        parts.append(f"They are apart for {'; '.join(apart)}: an op's speedup can differ between sets because the "
                     f"reference build's code differs between them (the compiler may vectorize one set's code and "
                     f"not another's) or because of the calling context; this figure does not tell which.")
    return " ".join(parts)


def fig6_end_to_end(study: Results, fam: FamilyView, metric: str, notes: list[str]):
    ops = list(fam.views.get("end_to_end") or [])
    if not ops:
        raise Skip(f"family {fam.name} names no end-to-end ops ([views] end_to_end)")
    h = _hand(study)
    fig, ci_name, note, _ = _hand_bars(study, fam, metric, ops, log=False, sort=False, values=True, width_per_op=1.5)
    caption = (f"{fam.views.get('end_to_end_title', 'End-to-end')} speedup ({h.base}→{h.variant}, "
               f"{style.metric_title(metric)}): {', '.join(fam.label(o) for o in ops)}; {_level(study)} {ci_name}." + note)
    return fig, caption


# -- figure 4 ------------------------------------------------------------------------------

def fig4_cliffs_delta(study: Results, fam: FamilyView, metric: str, notes: list[str]):
    h = _hand(study)
    df = study.comparison(metric, baseline=h.base, variant=h.variant)
    df = df[df["scheme"].isin(fam.schemes)] if not df.empty else df
    if df.empty or "cliffs_delta" not in df.columns or df["cliffs_delta"].isna().all():
        raise Skip(f"no Cliff's δ for {h.base}→{h.variant} ({metric})")
    df = df.drop_duplicates(["scheme", "op"])
    schemes = [s for s in fam.schemes if s in set(df["scheme"])]
    ops = fam.shown_ops(df["op"])
    mat = df.pivot(index="op", columns="scheme", values="cliffs_delta").reindex(index=ops, columns=schemes)
    m = mat.to_numpy(float)
    # δ saturates at complete separation (+1 in most cells of a hand-SIMD stage): each cell also says by how much
    ratio = df.pivot(index="op", columns="scheme", values="speedup").reindex(index=ops, columns=schemes).to_numpy(float)
    fig, ax = plt.subplots(figsize=(style.fit_width(len(schemes), 1.3, 2.4, 3.7), 0.4 * len(ops) + 1.0))
    im = ax.imshow(np.ma.masked_invalid(m), cmap="PuOr_r", vmin=-1, vmax=1, aspect="auto")
    ax.set_xticks(range(len(schemes)), [fam.scheme_label(s) for s in schemes], rotation=30 if len(schemes) > 4 else 0,
                  ha="right" if len(schemes) > 4 else "center")
    ax.set_yticks(range(len(ops)), [fam.label(o) for o in ops])
    ax.tick_params(length=0)
    for sp in ax.spines.values():
        sp.set_visible(False)
    for i in range(len(ops)):
        for j in range(len(schemes)):
            v = m[i, j]
            text = fmt.delta(v) + (f" · {fmt.times(ratio[i, j])}" if np.isfinite(ratio[i, j]) else "")
            ax.text(j, i, text, ha="center", va="center", fontsize=style.SMALL_PT,
                    color="white" if np.isfinite(v) and abs(v) > 0.6 else "black")
    cb = fig.colorbar(im, ax=ax, fraction=0.05, pad=0.03)
    cb.set_label("Cliff's δ")
    fig.tight_layout()
    finite = m[np.isfinite(m)]
    full = int((np.abs(finite) >= 0.995).sum())
    caption = (f"Cliff's δ ({h.base} vs {h.variant}, {style.metric_title(metric)}) for every operation and parameter "
               f"set, and after it the speedup. δ = +1: {h.variant} is faster in every pair of spin medians; n/a: no "
               f"comparison." + (f" δ is ±1 (complete separation) in {full} of {finite.size} cells: there it says that the "
                                 f"builds differ, and the speedup says by how much." if full else ""))
    return fig, caption


# -- the compiler figure -------------------------------------------------------------------

def fig_compilers(study: Results, fam: FamilyView, metric: str, notes: list[str]):
    """Per op, one marker per compiler: the chain's compiler_view stages (e.g. the auto-vectorization
    factor, and the hand-written code against the compiler allowed the same ISA)."""
    comps = study.compilers
    if len(comps) < 2:
        raise Skip("the study has one compiler (give several with --cc a,b,...)")
    stages = [s for s in study.chain.compiler_view if study.chain.step(s) is not None]
    if not stages:
        raise Skip("the chain names no compiler_view stages")
    scheme = (fam.views.get("distribution") or {}).get("scheme")
    scheme = scheme if scheme in fam.schemes else fam.schemes[0]
    ops = [o for o in (fam.views.get("table1") or fam.shown_ops(fam.ops)) if o != fam.self_check]
    df = study.comparisons
    df = df[(df["metric"] == metric) & (df["scheme"] == scheme) & (df["stage"].isin(stages))
            & (df["compiler"] == df["baseline_compiler"]) & df["op"].isin(ops)]
    if df.empty:
        raise Skip(f"no {', '.join(stages)} comparisons ({metric}) for {fam.scheme_label(scheme)}")
    present = [s for s in stages if s in set(df["stage"])]
    ops = [o for o in ops if o in set(df["op"])]
    fig, axes = plt.subplots(len(present), 1, figsize=(style.fit_width(len(ops), 0.6, 2, 6.0), 2.8 * len(present)), squeeze=False)
    lo_col, hi_col, ci_name = _ci_cols(df)
    cmap = plt.get_cmap("tab10")
    x = np.arange(len(ops))
    for ax, stage in zip(axes[:, 0], present):
        d = df[df["stage"] == stage]
        allv = []
        for i, c in enumerate(comps):
            dc = d[d["compiler"] == c].set_index("op").reindex(ops)
            s = dc["speedup"].to_numpy(float)
            off = (i - (len(comps) - 1) / 2) * (0.7 / max(len(comps), 1))
            ax.errorbar(x + off, s, yerr=_yerr(s, dc[lo_col].to_numpy(float), dc[hi_col].to_numpy(float)),
                        fmt=style.compiler_marker(c, comps), color=cmap(i % 10), ms=4, lw=0.8, capsize=1.5, label=c)
            allv += [s, dc[hi_col].to_numpy(float)]
        ax.set_yscale("log")
        _log_ylim(ax, np.concatenate(allv))
        ax.axhline(1.0, color="black", linewidth=0.6)
        ax.set_xticks(x, [fam.label(o) for o in ops], rotation=40, ha="right")
        ax.set_ylabel("factor (×)")
        ax.set_title(f"{fam.scheme_label(scheme)}: {study.chain.stage_label(stage)}", loc="left")
        ax.grid(axis="y", which="major", linewidth=0.3, alpha=0.5)
    axes[0, 0].legend(ncol=min(len(comps), 7), frameon=False, loc="lower left", bbox_to_anchor=(0, 1.12))
    fig.tight_layout()
    caption = (f"Compiler sensitivity ({style.metric_title(metric)}, {fam.scheme_label(scheme)}): per operation, "
               f"one marker per compiler for {', '.join(study.chain.stage_label(s) for s in present)}; "
               f"{_level(study)} {ci_name}. A factor near 1× means the stage gives nothing with that compiler.")
    return fig, caption


FIGURES = [
    ("fig1_distributions", "Figure 1: spin-median distributions", fig1_distributions, True),
    ("fig2_decomposition", "Figure 2: cumulative speedup by stage", fig2_decomposition, True),
    ("fig3_hand_simd", "Figure 3: hand-written SIMD speedup", fig3_hand_simd, True),
    ("fig4_cliffs_delta", "Figure 4: Cliff's δ heatmap", fig4_cliffs_delta, False),
    ("fig5_cross_param", "Figure 5: cross-parameter consistency", fig5_cross_param, False),
    ("fig6_end_to_end", "Figure 6: end-to-end", fig6_end_to_end, False),
    ("fig_compilers", "Compiler sensitivity", fig_compilers, True),
]
# Figures repeated for every further metric (e.g. instructions): the decomposition ones and the compilers.
PER_METRIC = ("fig2_decomposition", "fig3_hand_simd", "fig_compilers")


def family_dir(outdir: Path, fam: FamilyView) -> Path:
    return outdir / fam.name


def make_figures(study: Results, outdir: Path, notes: list[str] | None = None) -> list[FigureResult]:
    """Draw every figure of every family into outdir/<family>/; skipped ones carry their reason."""
    notes = notes if notes is not None else []
    results = []
    # speedup figures: a cost in bytes (stack, size) is in the footprint tables, not drawn as a speedup
    metrics = study.speed_metrics if study.metrics else [study.primary_metric]
    with plt.rc_context(RC):
        for fam in study.chain_families:
            for metric in metrics:
                for name, title, func, _ in FIGURES:
                    if metric != study.primary_metric and name not in PER_METRIC:
                        continue
                    if name == "fig_compilers" and len(study.compilers) < 2:
                        continue
                    full = name if metric == study.primary_metric else f"{name}_{metric}"
                    t = f"{fam.title} · {title}" + ("" if metric == study.primary_metric else f" ({style.metric_title(metric)})")
                    res = FigureResult(name=f"{fam.name}/{full}", title=t, metric=metric, family=fam.name)
                    try:
                        fig, res.caption = func(study, fam, metric, notes)
                        res.files = _save(fig, family_dir(outdir, fam), full)
                    except Skip as e:
                        res.skipped = str(e)
                        plt.close("all")
                    results.append(res)
    return results
