"""One visual vocabulary for every figure, table and terminal view.

Colours are Okabe-Ito (colour-blind safe). Each variant has one colour, used everywhere: the
chain's variants take a fixed ramp by their position in the chain (floor grey → hand SIMD
vermillion), others the remaining colours in study order. Parameter sets are told apart by shade
*and* hatch, compilers by marker, so figures survive grey-scale printing.
"""

from __future__ import annotations

from ..metrics import REGISTRY

# Okabe & Ito (2008), "Color Universal Design".
OKABE_ITO = {
    "black": "#000000",
    "orange": "#E69F00",
    "sky_blue": "#56B4E9",
    "bluish_green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "reddish_purple": "#CC79A7",
    "grey": "#999999",
}

# by position in the chain: first (the floor) ... last (hand-written SIMD)
CHAIN_COLOURS = [OKABE_ITO["grey"], OKABE_ITO["sky_blue"], OKABE_ITO["blue"], OKABE_ITO["vermillion"]]
_EXTRA_COLOURS = [OKABE_ITO["bluish_green"], OKABE_ITO["reddish_purple"], OKABE_ITO["orange"], OKABE_ITO["yellow"],
                  OKABE_ITO["black"]]
COMPILER_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "h"]

# Parameter sets: a light→dark ramp and a hatch each (distinguishable without colour).
SCHEME_SHADES = ["#F4A582", "#D55E00", "#7F3800", OKABE_ITO["orange"], OKABE_ITO["black"], "#FDDBC7"]
SCHEME_HATCHES = ["", "//", "xx", "..", "\\\\", "++"]
# sets 7-12 (e.g. the six SHAKE sets after the six SHA-2 ones): the same hatches in blues
SCHEME_SHADES_2 = ["#92C5DE", OKABE_ITO["blue"], "#053061", OKABE_ITO["sky_blue"], "#4D4D4D", "#D1E5F0"]



def variant_colours(chain_variants: list[str], variants: list[str]) -> dict[str, str]:
    """Colour of every variant: chain variants by chain position, the rest in order."""
    out = {}
    n = len(chain_variants)
    for i, v in enumerate(chain_variants):
        # a chain longer or shorter than four still ends in vermillion and starts in grey
        idx = 0 if n <= 1 else round(i * (len(CHAIN_COLOURS) - 1) / (n - 1))
        out[v] = CHAIN_COLOURS[idx]
    extras = [v for v in variants if v not in out]
    for i, v in enumerate(extras):
        out[v] = _EXTRA_COLOURS[i % len(_EXTRA_COLOURS)]
    return out


def variant_colour(variant: str, colours: dict[str, str]) -> str:
    return colours.get(variant, OKABE_ITO["black"])


def scheme_style(scheme: str, schemes: list[str]) -> tuple[str, str]:
    """(colour, hatch) of a parameter set, by its position among the family's sets in the study."""
    i = schemes.index(scheme) if scheme in schemes else 0
    if len(schemes) <= 3:
        return SCHEME_SHADES[i % 3], SCHEME_HATCHES[i % 3]
    shades = SCHEME_SHADES if (i // len(SCHEME_SHADES)) % 2 == 0 else SCHEME_SHADES_2
    return shades[i % len(shades)], SCHEME_HATCHES[i % len(SCHEME_HATCHES)]


def compiler_marker(compiler: str, compilers: list[str]) -> str:
    i = compilers.index(compiler) if compiler in compilers else len(compilers)
    return COMPILER_MARKERS[i % len(COMPILER_MARKERS)]


def metric_title(metric: str) -> str:
    """What a table or figure of the metric is titled (pqsimd/metrics.py); a raw metric its own name."""
    return REGISTRY[metric].title if metric in REGISTRY else metric


# -- legibility: what a reader sees of a figure where the report shows it -------------------

MIN_TEXT_PT = 8.0  # the smallest text a figure may show, at the size it is shown
SMALL_PT = 8  # the smallest text a figure is drawn with (ticks, legends, labels on bars): shown at its scale, >= MIN_TEXT_PT
MIN_AXES_PX = 80  # a plot shorter than this (CSS px, as shown) has no room for its data
PAGE_PX = 1200  # index.html's content width (templates/index.html.j2: body max-width)
SHOWN_PER_PNG_PX = 2 / 3  # a 150 dpi PNG is shown at 100 CSS px per inch, a little above its print size
CSS_PX_PER_INCH = 96
MAX_FIGURE_IN = 11.0  # the widest figure shown at its scale (PAGE_PX at 100 px per inch, less its labels' overhang)


def fit_width(n: int, per_item: float, extra: float, least: float) -> float:
    """A figure's width for n items of per_item inches plus extra: at least `least`, never wider than
    MAX_FIGURE_IN (beyond it the page would shrink every text in it)."""
    return max(least, min(per_item * n + extra, MAX_FIGURE_IN))


def shown_width(png_px: float, per_png_px: float = SHOWN_PER_PNG_PX) -> int:
    """CSS px at which the report shows a PNG `png_px` wide: its scale, unless wider than the page."""
    return int(min(png_px * per_png_px, PAGE_PX))


def _drawn_texts(fig) -> list:
    """The texts a draw of `fig` really paints (visible, non-empty, inside the view: tick labels of ticks
    outside an axis's limits are not drawn), in drawing order."""
    from matplotlib.text import Text

    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if not isinstance(fig.canvas, FigureCanvasAgg):  # a closed figure keeps a canvas that cannot draw
        FigureCanvasAgg(fig)
    drawn, draw = [], Text.draw

    def recording(self, renderer):
        draw(self, renderer)
        if self.get_visible() and self.get_text().strip():
            drawn.append(self)

    Text.draw = recording  # Annotation.draw and legends call Text.draw too
    try:
        fig.canvas.draw()
    finally:
        Text.draw = draw
    return list(dict.fromkeys(drawn))


def _outline(text, renderer):
    """The corners of a text's box in display px, rotated with the text (an axis-aligned window extent
    of two neighbouring rotated labels overlaps where their glyphs do not), drawn in by 15% of the font
    size: line spacing leaves that much empty above and below the glyphs."""
    import numpy as np

    box = text.get_window_extent(renderer)
    angle = text.get_rotation() % 180
    w, h = box.width, box.height
    if angle % 90:
        text.set_rotation(0)
        flat = text.get_window_extent(renderer)
        text.set_rotation(angle)
        w, h = flat.width, flat.height
    elif angle == 90:
        w, h = h, w
    inset = 0.15 * text.get_fontsize() * renderer.dpi / 72
    w, h = max(w - 2 * inset, 0.5), max(h - 2 * inset, 0.5)
    t = np.radians(angle)
    rot = np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]])
    corners = np.array([[-w, -h], [w, -h], [w, h], [-w, h]]) / 2
    return corners @ rot.T + [(box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2]


def _polygons_overlap(a, b) -> bool:
    """Separating-axis test of two convex quadrilaterals."""
    import numpy as np

    for poly in (a, b):
        for i in range(4):
            edge = poly[(i + 1) % 4] - poly[i]
            axis = np.array([-edge[1], edge[0]])
            pa, pb = a @ axis, b @ axis
            if pa.max() <= pb.min() or pb.max() <= pa.min():
                return False
    return True


def legibility_problems(fig, shown_px: float | None = None, dpi: float = 150) -> list[str]:
    """What a reader cannot read in `fig` shown `shown_px` CSS px wide (default: as index.html shows it
    saved at `dpi` with a tight box): text under MIN_TEXT_PT as shown, texts that overlap, plots under
    MIN_AXES_PX tall. One sentence each; empty when the figure reads."""
    import matplotlib as mpl
    import numpy as np

    texts = _drawn_texts(fig)
    renderer = fig.canvas.get_renderer()
    tight = fig.get_tightbbox(renderer).padded(mpl.rcParams["savefig.pad_inches"])
    shown_px = shown_px if shown_px is not None else shown_width(tight.width * dpi)
    scale = shown_px / CSS_PX_PER_INCH / tight.width  # shown size / printed size
    out = []
    small = sorted((t.get_fontsize() * scale, t.get_text()) for t in texts if t.get_fontsize() * scale < MIN_TEXT_PT)
    if small:
        pt, what = small[0]
        out.append(f"{len(small)} text(s) under {MIN_TEXT_PT:g} pt as shown ({shown_px:.0f} px wide), the smallest "
                   f"{pt:.1f} pt: {what!r}")
    outlines = [_outline(t, renderer) for t in texts]
    if outlines:  # only the pairs whose upright boxes meet need the exact test
        lo, hi = np.array([o.min(axis=0) for o in outlines]), np.array([o.max(axis=0) for o in outlines])
        meet = np.all((lo[:, None] < hi[None, :]) & (lo[None, :] < hi[:, None]), axis=2)
        for i, j in zip(*np.nonzero(np.triu(meet, 1))):
            if _polygons_overlap(outlines[i], outlines[j]):
                out.append(f"{texts[i].get_text()!r} overlaps {texts[j].get_text()!r}")
    for ax in fig.axes:
        if ax.get_visible() and ax.has_data() and not hasattr(ax, "_colorbar"):
            tall = ax.get_window_extent(renderer).height / fig.dpi * CSS_PX_PER_INCH * scale
            if tall < MIN_AXES_PX:
                out.append(f"the plot {ax.get_title() or ax.get_ylabel()!r} is {tall:.0f} px tall as shown "
                           f"(at least {MIN_AXES_PX})")
    return out
