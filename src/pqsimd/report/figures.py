"""The paper's Figures 1-6 (and their per-metric twins) from DIR/results and DIR/raw.

Every figure is saved as PDF + PNG + SVG. A figure without data is skipped with a reason, which
the report prints; nothing here raises on missing data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import FuncFormatter, NullFormatter  # noqa: E402

from . import files, fmt, style  # noqa: E402
from .load import Study  # noqa: E402
from .spins import spin_medians  # noqa: E402

FORMATS = ("pdf", "png", "svg")
DPI = 150

FIG1_SCHEME = "ml-kem-512"
FIG1_OPS = ("invntt", "gen_a", "poly_getnoise_eta1")
FIG5_OPS = ("ntt", "invntt", "basemul", "poly_frommsg")
FIG6_OPS = ("kem_keypair", "kem_encaps", "kem_decaps")
EXCLUDED_OPS = ("empty",)  # the harness's overhead probe, not an ML-KEM operation

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
    metric: str = "ticks"

    @property
    def png(self) -> Path | None:
        return self.files.get("png")


class Skip(Exception):
    """No data for this figure; the message says what was missing."""


# -- helpers --------------------------------------------------------------------------------

def _suffix(study: Study, metric: str) -> str:
    return "" if metric == study.primary_metric else f"_{metric}"


def _metric_note(metric: str) -> str:
    return style.METRIC_TITLES.get(metric, metric)


def _ci_cols(df: pd.DataFrame) -> tuple[str, str, str]:
    """Hierarchical CI columns when present (and not all missing), else the naive bootstrap's."""
    if {"hci_low", "hci_high"} <= set(df.columns) and df[["hci_low", "hci_high"]].notna().any().all():
        return "hci_low", "hci_high", "hierarchical 95% bootstrap CI (jobs, then spins)"
    return "ci_low", "ci_high", "95% bootstrap CI"


def _yerr(s: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    lower = np.where(np.isfinite(lo), np.clip(s - lo, 0, None), 0.0)
    upper = np.where(np.isfinite(hi), np.clip(hi - s, 0, None), 0.0)
    return np.vstack([lower, upper])


def _unreliable_note(df: pd.DataFrame, lo_col: str) -> str:
    if lo_col.startswith("hci") and "hci_reliable" in df.columns and len(df):
        rel = df["hci_reliable"].astype("boolean").fillna(False)
        if not rel.all():
            return " Hierarchical CIs marked unreliable (< 5 jobs in a group) are drawn but should not be trusted."
    return ""


def _ops_of(df: pd.DataFrame) -> list[str]:
    return [o for o in style.sort_ops(df["op"].unique()) if o not in EXCLUDED_OPS]


def _log_ylim(ax, values: np.ndarray) -> None:
    v = values[np.isfinite(values) & (values > 0)]
    if v.size:
        ax.set_ylim(min(v.min(), 1.0) / 1.6, max(v.max(), 1.0) * 2.5)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}×"))


def _plain_log_x(ax) -> None:
    """Log x without crowded minor labels: plain numbers at the major ticks only."""
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:,.0f}" if x >= 1 else f"{x:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())


def _save(fig, outdir: Path, name: str) -> dict[str, Path]:
    out = {}
    for ext in FORMATS:
        out[ext] = files.save_figure(fig, outdir / f"{name}.{ext}", ext, dpi=DPI)
    plt.close(fig)
    return out


# -- figure 1 ------------------------------------------------------------------------------

def fig1_distributions(study: Study, metric: str, notes: list[str]):
    sm = spin_medians(study.directory, metric=metric, schemes=[FIG1_SCHEME], ops=list(FIG1_OPS),
                      variants=["ref", "avx2"], skipped=notes)
    if sm.empty:
        raise Skip(f"no raw {metric} spin medians for ref/avx2 of {style.scheme_label(FIG1_SCHEME)} "
                   f"({', '.join(FIG1_OPS)}) in {study.directory / 'raw'}")
    ops = [o for o in FIG1_OPS if o in set(sm["op"])]
    fig, axes = plt.subplots(1, len(ops), figsize=(3.6 * len(ops), 2.8), squeeze=False)
    for ax, op in zip(axes[0], ops):
        d = sm[sm["op"] == op]
        vals = d["value"].to_numpy(float)
        vals = vals[vals > 0]
        if vals.size == 0:
            ax.set_visible(False)
            continue
        lo, hi = vals.min(), vals.max()
        if lo == hi:
            lo, hi = lo / 1.1, hi * 1.1
        bins = np.geomspace(lo, hi, 60)
        counts = []
        for variant in ("ref", "avx2"):
            v = d.loc[d["variant"] == variant, "value"].to_numpy(float)
            v = v[v > 0]
            if not v.size:
                continue
            c = style.variant_colour(variant)
            ax.hist(v, bins=bins, color=c, alpha=0.55, label=style.variant_label(variant),
                    edgecolor=c, linewidth=0.6)
            counts.append(str(v.size))
            ax.axvline(np.median(v), color=c, linestyle="--", linewidth=1.3)
        ax.set_xscale("log")
        if hi / lo < 30:  # less than ~1.5 decades: a few evenly spaced labels read better than decades
            ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(nbins=4))
        _plain_log_x(ax)
        ax.set_title(f"{style.op_label(op)}  (n = {' / '.join(counts)})")
        ax.set_xlabel(f"spin median ({style.METRIC_UNITS.get(metric, metric)} per call)")
    axes[0][0].set_ylabel("spin medians")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.tight_layout(rect=(0, 0, 1, 0.88))
    fig.legend(handles, labels, loc="upper center", ncol=len(labels), frameon=False)
    caption = (f"Distributions of spin medians ({_metric_note(metric)}) for three representative "
               f"{style.scheme_label(FIG1_SCHEME)} operations, ref vs avx2. Log x-axis; dashed lines mark "
               f"the medians. Warmup spins excluded.")
    return fig, caption


# -- figure 2 ------------------------------------------------------------------------------

def fig2_decomposition(study: Study, metric: str, notes: list[str]):
    # every refo0->X row, whatever its stage label (refo0->refnv is the `compiler` stage)
    df = study.comparison(metric, baseline="refo0")
    stages = [v for v in ("refnv", "ref", "avx2") if v in set(df["variant"])] if not df.empty else []
    if not stages:
        raise Skip(f"no cumulative ({metric}) comparisons against refo0")
    if "stage" in df.columns:  # prefer the row labelled cumulative when both exist
        df = df.assign(_c=df["stage"] != "cumulative").sort_values("_c", kind="stable")
    df = df.drop_duplicates(["scheme", "op", "variant"])
    lo_col, hi_col, ci_name = _ci_cols(df)
    schemes = style.sort_schemes(df["scheme"].unique())
    n_ops = max(len(_ops_of(df[df["scheme"] == s])) for s in schemes)
    fig, axes = plt.subplots(len(schemes), 1, figsize=(max(6.5, 0.55 * n_ops + 2), 2.9 * len(schemes)),
                             squeeze=False)
    width = 0.8 / len(stages)
    for ax, scheme in zip(axes[:, 0], schemes):
        d = df[df["scheme"] == scheme]
        ops = _ops_of(d)
        key = "avx2" if "avx2" in stages else stages[-1]
        sort_val = d[d["variant"] == key].set_index("op")["speedup"]
        ops.sort(key=lambda o: -(sort_val.get(o, np.nan) if np.isfinite(sort_val.get(o, np.nan)) else -1))
        x = np.arange(len(ops))
        allv = []
        for i, variant in enumerate(stages):
            dv = d[d["variant"] == variant].set_index("op").reindex(ops)
            s = dv["speedup"].to_numpy(float)
            allv.append(s)
            yerr = None
            if variant == "avx2":
                yerr = _yerr(s, dv[lo_col].to_numpy(float), dv[hi_col].to_numpy(float))
                allv.append(dv[hi_col].to_numpy(float))
            ax.bar(x + (i - (len(stages) - 1) / 2) * width, np.nan_to_num(s, nan=0.0), width,
                   color=style.variant_colour(variant), label=style.variant_label(variant),
                   yerr=yerr, error_kw=dict(ecolor="black", elinewidth=0.8, capsize=1.5),
                   edgecolor="white", linewidth=0.3)
        ax.set_yscale("log")
        _log_ylim(ax, np.concatenate(allv))
        ax.axhline(1.0, color="black", linewidth=0.6)
        ax.set_xticks(x, [style.op_label(o) for o in ops], rotation=40, ha="right")
        ax.set_xlim(-0.6, len(ops) - 0.4)
        ax.set_ylabel("speedup vs refo0 (×)")
        ax.set_title(style.scheme_label(scheme), loc="left")
        ax.grid(axis="y", which="major", linewidth=0.3, alpha=0.5)
    axes[0, 0].legend(ncol=len(stages), frameon=False, loc="upper right")
    fig.tight_layout()
    caption = (f"Cumulative speedup ({_metric_note(metric)}) at each stage, normalised to refo0 (1×): "
               f"{', '.join(style.variant_label(v) for v in stages)}. Log y-axis; {ci_name} on the avx2 bars. "
               f"Sorted by avx2 speedup." + _unreliable_note(df[df["variant"] == "avx2"], lo_col))
    return fig, caption


# -- figures 3, 5, 6: ref -> avx2 per op, one bar per parameter set --------------------------

def _hand_simd_bars(study: Study, metric: str, ops: list[str] | None, log: bool, sort: bool,
                    values: bool, width_per_op: float):
    df = study.comparison(metric, baseline="ref", variant="avx2")
    if df.empty:
        raise Skip(f"no ref→avx2 ({metric}) comparisons")
    df = df.drop_duplicates(["scheme", "op"])
    if ops is not None:
        missing = [o for o in ops if o not in set(df["op"])]
        ops = [o for o in ops if o in set(df["op"])]
        if not ops:
            raise Skip(f"no ref→avx2 ({metric}) comparisons for {', '.join(missing)}")
    else:
        ops = _ops_of(df)
    schemes = style.sort_schemes(df["scheme"].unique())
    lo_col, hi_col, ci_name = _ci_cols(df)
    if sort:
        first = df[df["scheme"] == schemes[0]].set_index("op")["speedup"]
        ops = sorted(ops, key=lambda o: -(first.get(o) if np.isfinite(first.get(o, np.nan)) else -1))
    fig, ax = plt.subplots(figsize=(max(4.5, width_per_op * len(ops) + 1.5), 3.4))
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
               linewidth=0.3, label=style.scheme_label(scheme), yerr=_yerr(s, lo, hi),
               error_kw=dict(ecolor="black", elinewidth=0.8, capsize=2))
        if values:
            for xi, si, hi_i in zip(xs, s, hi):
                if np.isfinite(si):
                    top = hi_i if np.isfinite(hi_i) else si
                    ax.annotate(fmt.times(si), (xi, top), xytext=(0, 2), textcoords="offset points",
                                ha="center", va="bottom", fontsize=7)
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
    ax.set_xticks(x, [style.op_label(o) for o in ops], rotation=40 if len(ops) > 6 else 0,
                  ha="right" if len(ops) > 6 else "center")
    ax.set_ylabel("speedup ref→avx2 (×)")
    ax.legend(frameon=False, ncol=len(schemes), loc="upper right")
    fig.tight_layout()
    note = _unreliable_note(df[df["op"].isin(ops)], lo_col)
    return fig, ci_name, note, schemes


def fig3_hand_simd(study: Study, metric: str, notes: list[str]):
    fig, ci_name, note, schemes = _hand_simd_bars(study, metric, None, log=True, sort=True, values=False,
                                                  width_per_op=0.55)
    caption = (f"Hand-written SIMD speedup (ref→avx2, {_metric_note(metric)}) per operation, all parameter "
               f"sets. Log y-axis; {ci_name} error bars. Sorted by "
               f"{style.scheme_label(schemes[0])} speedup." + note)
    return fig, caption


def fig5_cross_param(study: Study, metric: str, notes: list[str]):
    fig, ci_name, note, _ = _hand_simd_bars(study, metric, list(FIG5_OPS), log=False, sort=False,
                                            values=True, width_per_op=1.5)
    caption = (f"Per-polynomial operation speedup (ref→avx2, {_metric_note(metric)}) across parameter sets; "
               f"{ci_name}. The polynomial dimension is 256 for all sets, so differences come from the "
               f"calling context." + note)
    return fig, caption


def fig6_kem_end_to_end(study: Study, metric: str, notes: list[str]):
    fig, ci_name, note, _ = _hand_simd_bars(study, metric, list(FIG6_OPS), log=False, sort=False,
                                            values=True, width_per_op=1.5)
    caption = (f"End-to-end KEM speedup (ref→avx2, {_metric_note(metric)}) for key generation, "
               f"encapsulation and decapsulation; {ci_name}." + note)
    return fig, caption


# -- figure 4 ------------------------------------------------------------------------------

def fig4_cliffs_delta(study: Study, metric: str, notes: list[str]):
    df = study.comparison(metric, baseline="ref", variant="avx2")
    if df.empty or "cliffs_delta" not in df.columns or df["cliffs_delta"].isna().all():
        raise Skip(f"no Cliff's δ for ref→avx2 ({metric})")
    df = df.drop_duplicates(["scheme", "op"])
    schemes = style.sort_schemes(df["scheme"].unique())
    ops = _ops_of(df)
    mat = df.pivot(index="op", columns="scheme", values="cliffs_delta").reindex(index=ops, columns=schemes)
    m = mat.to_numpy(float)
    fig, ax = plt.subplots(figsize=(1.3 * len(schemes) + 2.4, 0.27 * len(ops) + 1.0))
    im = ax.imshow(np.ma.masked_invalid(m), cmap="PuOr_r", vmin=-1, vmax=1, aspect="auto")
    ax.set_xticks(range(len(schemes)), [style.scheme_label(s) for s in schemes])
    ax.set_yticks(range(len(ops)), [style.op_label(o) for o in ops])
    ax.tick_params(length=0)
    for sp in ax.spines.values():
        sp.set_visible(False)
    for i in range(len(ops)):
        for j in range(len(schemes)):
            v = m[i, j]
            ax.text(j, i, fmt.delta(v), ha="center", va="center", fontsize=7.5,
                    color="white" if np.isfinite(v) and abs(v) > 0.6 else "black")
    cb = fig.colorbar(im, ax=ax, fraction=0.05, pad=0.03)
    cb.set_label("Cliff's δ")
    fig.tight_layout()
    caption = (f"Cliff's δ (ref vs avx2, {_metric_note(metric)}) for every operation and parameter set. "
               f"δ = +1: avx2 is faster in every pair of spin medians; n/a: no comparison.")
    return fig, caption


FIGURES = [
    ("fig1_distributions", "Figure 1: spin-median distributions", fig1_distributions, True),
    ("fig2_decomposition", "Figure 2: cumulative speedup by stage", fig2_decomposition, True),
    ("fig3_hand_simd", "Figure 3: hand-written SIMD speedup", fig3_hand_simd, True),
    ("fig4_cliffs_delta", "Figure 4: Cliff's δ heatmap", fig4_cliffs_delta, False),
    ("fig5_cross_param", "Figure 5: cross-parameter consistency", fig5_cross_param, False),
    ("fig6_kem_end_to_end", "Figure 6: KEM end-to-end", fig6_kem_end_to_end, False),
]
# Figures repeated for every further metric (e.g. instructions): the decomposition ones.
PER_METRIC = ("fig2_decomposition", "fig3_hand_simd")


def make_figures(study: Study, outdir: Path, notes: list[str] | None = None) -> list[FigureResult]:
    """Draw every figure into `outdir`; skipped ones carry their reason."""
    notes = notes if notes is not None else []
    results = []
    metrics = study.metrics or [study.primary_metric]
    with plt.rc_context(RC):
        for metric in metrics:
            for name, title, func, _ in FIGURES:
                if metric != study.primary_metric and name not in PER_METRIC:
                    continue
                full = name + _suffix(study, metric)
                t = title if metric == study.primary_metric else f"{title} ({style.METRIC_TITLES.get(metric, metric)})"
                res = FigureResult(name=full, title=t, metric=metric)
                try:
                    fig, res.caption = func(study, metric, notes)
                    res.files = _save(fig, outdir, full)
                except Skip as e:
                    res.skipped = str(e)
                    plt.close("all")
                results.append(res)
    return results
