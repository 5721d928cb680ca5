"""The report's layout-sensitivity part: groups ranked by how much their time moved between laid-out
copies (results/groups layout_sd, written by analyze/layout.py), as a table and a figure. Reads
results only."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from . import fmt, style  # noqa: E402


def layout_parts(study, outdir: Path) -> tuple[list, list]:
    from .figures import FigureResult, _save
    from .tables import Cell, Table, write_table

    from .cliffs import cliff_parts

    cliff_figs, cliff_tabs = cliff_parts(study, outdir)  # every copy, the flagged cliffs, their re-timings
    outdir = Path(outdir) / "layout"
    top = study.layout_table(top=20)
    if top is None or top.empty:
        return cliff_figs, cliff_tabs
    rows = []
    for r in top.itertuples(index=False):
        fam = study.family_of(r.scheme)
        rows.append([Cell(fam.scheme_label(r.scheme) if fam else r.scheme), Cell(fam.label(r.op) if fam else r.op),
                     Cell(f"{r.variant} ({r.compiler})"), Cell(fmt.num(r.median)), Cell(str(int(r.n_layouts))),
                     Cell(f"{100 * r.layout_sd:.1f}%"), Cell(fmt.pct(r.layout_share) if r.layout_share == r.layout_share
                                                             else "n/a")])
    caption = ("Each timing job linked its own copies of every build (code and data in a seeded order with seeded "
               "padding; run/layouts.py) and alternated spins between them. Layout SD: the spread of one op's time "
               "across copies measured at the same moments, net of the copies' sampling error (log scale, as a "
               "relative SD); share: its part of the variance the intervals cover. " + study.layout_note() + ".")
    t = Table(name="table_layout_sensitivity", title="Layout sensitivity: the ops whose time depends most on where "
              "the code sits", caption=caption,
              header=["parameter set", "op", "build", "median", "copies", "layout SD", "share"], rows=rows, data=top,
              align="lllcccc")
    tabs = [(t, write_table(t, outdir))]
    fig, ax = plt.subplots(figsize=(7.5, 0.28 * len(top) + 1.2))
    labels = [f"{r.scheme} {r.op} {r.variant}" for r in top.itertuples(index=False)]
    colours = style.variant_colours(study.chain.variants, study.variants)
    ax.barh(range(len(top)), 100 * top["layout_sd"].to_numpy(),
            color=[colours.get(str(v), "#555555") for v in top["variant"]])
    ax.set_yticks(range(len(top)), labels, fontsize=style.SMALL_PT)
    ax.invert_yaxis()
    ax.set_xlabel("layout SD (% of the op's time)")
    ax.set_title("Layout sensitivity (randomized code and data layout per job)", fontsize=9)
    fig.tight_layout()
    fr = FigureResult(name="layout/fig_layout_sensitivity", title="Layout sensitivity",
                      caption="The ops whose time moved most between laid-out copies of the same build.")
    fr.files = _save(fig, outdir, "fig_layout_sensitivity")
    plt.close(fig)
    return [fr, *cliff_figs], tabs + cliff_tabs
