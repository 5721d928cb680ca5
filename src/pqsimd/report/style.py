"""One visual vocabulary for every figure, table and terminal view.

Colours are Okabe-Ito (colour-blind safe). Each variant has one colour, used everywhere;
parameter sets are told apart by shade *and* hatch, so they survive grey-scale printing.
"""

from __future__ import annotations

import tomllib
from functools import lru_cache
from importlib import resources

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

VARIANT_COLOURS = {
    "refo0": OKABE_ITO["grey"],
    "refnv": OKABE_ITO["sky_blue"],
    "ref": OKABE_ITO["blue"],
    "avx2": OKABE_ITO["vermillion"],
    "ref-avx2": OKABE_ITO["bluish_green"],
    "ref-native": OKABE_ITO["reddish_purple"],
}
# Further (user-defined) variants take these in order of first appearance.
_EXTRA_COLOURS = [OKABE_ITO["orange"], OKABE_ITO["yellow"], OKABE_ITO["black"]]

VARIANT_LABELS = {
    "refo0": "refo0 (-O0)",
    "refnv": "refnv (-O3, no auto-vec)",
    "ref": "ref (-O3)",
    "avx2": "avx2 (hand SIMD)",
}

STAGE_LABELS = {
    "compiler": "compiler (refo0→refnv)",
    "autovec": "auto-vec (refnv→ref)",
    "hand_simd": "hand SIMD (ref→avx2)",
    "cumulative": "cumulative (refo0→X)",
    "extra": "extra (ref→X)",
}

# Parameter sets: a light→dark ramp and a hatch each (distinguishable without colour).
SCHEME_SHADES = ["#F4A582", "#D55E00", "#7F3800"]
SCHEME_HATCHES = ["", "//", "xx"]

METRIC_UNITS = {"ticks": "TSC ticks", "instructions": "instructions"}
METRIC_TITLES = {"ticks": "time (TSC ticks)", "instructions": "instruction count"}


def variant_colour(variant: str, known: list[str] | None = None) -> str:
    if variant in VARIANT_COLOURS:
        return VARIANT_COLOURS[variant]
    extras = [v for v in (known or []) if v not in VARIANT_COLOURS]
    idx = extras.index(variant) if variant in extras else abs(hash(variant))
    return _EXTRA_COLOURS[idx % len(_EXTRA_COLOURS)]


def variant_label(variant: str) -> str:
    return VARIANT_LABELS.get(variant, variant)


def scheme_label(scheme: str) -> str:
    """`ml-kem-512` -> `ML-KEM-512`."""
    return scheme.upper()


def scheme_style(scheme: str, schemes: list[str]) -> tuple[str, str]:
    """(colour, hatch) of a parameter set, by its position among the study's sets."""
    i = schemes.index(scheme) if scheme in schemes else 0
    n = max(len(schemes), 1)
    shades = SCHEME_SHADES if n <= 3 else SCHEME_SHADES + [OKABE_ITO["orange"], OKABE_ITO["black"]]
    return shades[i % len(shades)], SCHEME_HATCHES[i % len(SCHEME_HATCHES)]


@lru_cache(maxsize=1)
def _family() -> dict:
    with resources.files("pqsimd.data").joinpath("ml-kem.toml").open("rb") as fh:
        return tomllib.load(fh)


def op_labels() -> dict[str, str]:
    return dict(_family().get("ops", {}).get("labels", {}))


def op_order() -> list[str]:
    return list(_family().get("ops", {}).get("order", []))


def op_label(op: str) -> str:
    return op_labels().get(op, op)


def scheme_order() -> list[str]:
    return list(_family().get("schemes", {}).keys())


def sort_schemes(schemes) -> list[str]:
    order = scheme_order()
    return sorted(set(schemes), key=lambda s: (order.index(s) if s in order else len(order), s))


def sort_ops(ops) -> list[str]:
    order = op_order()
    return sorted(set(ops), key=lambda o: (order.index(o) if o in order else len(order), o))


def sort_variants(variants) -> list[str]:
    order = list(VARIANT_COLOURS)
    return sorted(set(variants), key=lambda v: (order.index(v) if v in order else len(order), v))
