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
