"""Figures people can read: every figure the report writes, checked as index.html shows it
(style.legibility_problems: text at least 8 pt as shown, no two texts overlapping, no squeezed plot),
and captions that say what the figure shows."""

from __future__ import annotations

import base64
import html as html_mod
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from pqsimd.report import files, style  # noqa: E402
from pqsimd.studysets import report_study as write_report  # noqa: E402
from pqsimd.report.figures import _across_sets  # noqa: E402
from report_fake import REF_TICKS, make_fake_study, write_fake_mix  # noqa: E402

SLOW_JOB = 1  # the fake study's job whose copies run 40% slower in Fig. 1's ops
OPS = list(REF_TICKS) + ["empty"]


def _lay_out(directory: Path) -> None:
    """Give the fake study's spins two laid-out copies per job, SLOW_JOB's 40% slower (as a job whose
    copies landed badly, or ran in a slow machine state)."""
    p = directory / "results" / "spins.parquet"
    s = pd.read_parquet(p)
    s["layout"] = s["spin"].astype(int) % 2
    slow = s["job_index"] == SLOW_JOB
    s.loc[slow, "value"] = s.loc[slow, "value"] * 1.4
    s.to_parquet(p)


@pytest.fixture(scope="module")
def shown(tmp_path_factory):
    """The fake study's report (every family figure, both metrics, two compilers, the mix), and each
    figure it saved as a PNG: {png path: (figure, caption, CSS px the HTML shows it at)}."""
    d = make_fake_study(tmp_path_factory.mktemp("figs") / "study", ops=OPS, jobs=3, spins=10, reps=2,
                        metrics=("ticks", "instructions"), compilers=("gcc", "clang"))
    write_fake_mix(d, ops=list(REF_TICKS))
    _lay_out(d)
    saved = {}
    original = files.save_figure

    def recording(fig, path, fmt, **kwargs):
        out = original(fig, path, fmt, **kwargs)
        if fmt == "png":
            saved[Path(out)] = fig
        return out

    mp = pytest.MonkeyPatch()
    mp.setattr(files, "save_figure", recording)
    try:
        out = write_report(d)
    finally:
        mp.undo()
    html = (out / "index.html").read_text()
    widths = {base64.b64decode(m.group(1)): int(m.group(2)) for m in
              re.finditer(r'<img src="data:image/png;base64,([^"]+)" alt="[^"]*" style="width: (\d+)px">', html)}
    captions = {k: html_mod.unescape(v) for k, v in re.findall(r'<figure id="([^"]+)">(?:(?!</figure>).)*?<figcaption>(.*?) <span', html, re.S)}
    return {p: (fig, captions.get(f"{p.parent.name}-{p.stem}", ""), widths.get(p.read_bytes())) for p, fig in saved.items()}


def test_every_figure_the_report_writes_reads_where_the_report_shows_it(shown):
    names = {p.stem for p in shown}
    # the figures this check is for: the families', each metric's twin, the compilers', the mix, instructions vs time
    assert {"fig1_distributions", "fig5_cross_param", "fig2_decomposition_instructions", "fig_compilers",
            "fig_mix_ml-kem", "fig_instructions_vs_time"} <= names
    problems = {}
    for path, (fig, _, width) in shown.items():
        assert width is not None, f"{path.name} is written but index.html does not show it"
        assert width <= style.PAGE_PX
        found = style.legibility_problems(fig, width)
        if found:
            problems[path.name] = found[:3]
    assert not problems, problems


def test_the_mix_figure_keeps_its_scale_however_many_ops(shown):
    fig, _, width = next(v for p, v in shown.items() if p.stem == "fig_mix_ml-kem")
    assert fig.get_figwidth() <= style.MAX_FIGURE_IN
    assert width < style.PAGE_PX  # shown at its own scale, not squeezed into the page
    assert len([ax for ax in fig.axes if ax.has_data()]) > 3  # 20 ops × 4 variants × 3 sets wrap into rows


def test_the_check_flags_the_old_mix_layout_and_a_legend_over_a_title():
    # the mix figure as it was: one 30 in row of bars, 6 pt names, shown squeezed to the page
    fig, ax = plt.subplots(figsize=(30, 3.5))
    ax.bar(range(240), [1] * 240)
    for x in range(240):
        ax.annotate("avx2", (x, 0), xytext=(0, -3), textcoords="offset points", rotation=90, fontsize=6, va="top")
    ax.set_title("ML-KEM-512 (gcc): instruction mix per call")
    found = style.legibility_problems(fig)
    assert any("under 8 pt" in f and "1200 px wide" in f for f in found), found
    # the instructions-vs-time figure as it was: a legend anchored above the axes, over its title
    fig, ax = plt.subplots(figsize=(7.5, 2.4))
    ax.bar([0, 1], [2, 3], label="instruction reduction")
    ax.set_title("ML-KEM-512: hand SIMD")
    ax.legend(frameon=False, loc="lower left", bbox_to_anchor=(0, 0.98), ncol=2)
    found = style.legibility_problems(fig)
    assert any("overlaps" in f and "hand SIMD" in f for f in found), found
    # a plot squeezed by its labels
    fig, ax = plt.subplots(figsize=(6, 0.9))
    ax.plot([1, 2])
    assert any("px tall" in f for f in style.legibility_problems(fig))
    plt.close("all")


def test_a_readable_figure_passes_and_rotated_neighbours_are_not_an_overlap():
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.bar(range(8), range(8))
    ax.set_xticks(range(8), [f"operation {i}" for i in range(8)], rotation=40, ha="right")
    ax.set_title("eight ops")
    assert style.legibility_problems(fig) == []
    ax.set_xticks(range(8), [f"operation {i}" for i in range(8)], rotation=0)  # flat, they collide
    assert any("overlaps" in f for f in style.legibility_problems(fig))
    plt.close("all")


def test_shown_width_is_the_figures_scale_up_to_the_page():
    assert style.shown_width(900) == 600
    assert style.shown_width(4500) == style.PAGE_PX


def test_fig1_marks_each_copy_and_names_the_copies_far_from_their_build(shown):
    fig, caption, _ = next(v for p, v in shown.items() if p.stem == "fig1_distributions")
    labels = fig.legends[0].texts
    assert [t.get_text() for t in labels][-2:] == ["copy 1 of its job", "copy 2 of its job"]
    assert "one point per laid-out copy" in caption
    assert f"job {SLOW_JOB} (2 copies)" in caption


def test_fig5_caption_is_computed_from_the_speedups_it_plots(shown):
    _, caption, _ = next(v for p, v in shown.items() if p.stem == "fig5_cross_param")
    assert "come from the calling context" not in caption  # what the ML-KEM note used to claim
    assert "They are apart for" in caption and "reference build's code differs" in caption


def test_across_sets_tells_overlapping_sets_from_sets_apart():
    from pqsimd.results import FamilyView

    sets = ["ml-kem-512", "ml-kem-768", "ml-kem-1024"]
    fam = FamilyView("ml-kem", "ML-KEM", "kem", sets, ["ntt", "poly_decompress"],
                     {"ntt": "NTT", "poly_decompress": "decompress"}, {s: s.upper() for s in sets}, {}, None)
    # decompress as this host measured it: gcc vectorizes the 4-bit code of 512/768, not the 5-bit one of 1024
    rows = [("ml-kem-512", "poly_decompress", 2.5, 2.4, 2.6), ("ml-kem-768", "poly_decompress", 2.5, 2.4, 2.6),
            ("ml-kem-1024", "poly_decompress", 19.6, 19.0, 20.1),
            ("ml-kem-512", "ntt", 35.0, 34.0, 36.0), ("ml-kem-1024", "ntt", 35.5, 34.5, 36.5)]
    df = pd.DataFrame(rows, columns=["scheme", "op", "speedup", "ci_low", "ci_high"])
    text = _across_sets(fam, df, ["ntt", "poly_decompress"], sets)
    assert "overlap for NTT." in text
    assert "apart for decompress (2.50× at ML-KEM-512" in text and "19.6× at ML-KEM-1024)" in text
    assert "apart" not in _across_sets(fam, df[df["op"] == "ntt"], ["ntt"], sets)
