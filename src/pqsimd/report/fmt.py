"""Number formatting shared by tables, macros, HTML and the terminal. Missing -> `n/a`, never NaN."""

from __future__ import annotations

import math

from ..model import interval_text

NA = "n/a"


def is_missing(v) -> bool:
    if v is None:
        return True
    try:
        return not math.isfinite(float(v))
    except (TypeError, ValueError):
        return True


def num(v, sig: int = 3) -> str:
    """Three significant digits without exponent: 56.3, 4.71, 1.42, 0.981, 123."""
    if is_missing(v):
        return NA
    v = float(v)
    if v == 0:
        return "0"
    mag = math.floor(math.log10(abs(v)))
    decimals = max(sig - 1 - mag, 0)
    return f"{v:.{decimals}f}"


def times(v, symbol: str = "×") -> str:
    s = num(v)
    return s if s == NA else f"{s}{symbol}"


def ci(lo, hi) -> str:
    if is_missing(lo) or is_missing(hi):
        return NA
    return interval_text(lo, hi)  # one format for every interval (model.py: analyze's sentences use it too)


def delta(v) -> str:
    if is_missing(v):
        return NA
    return f"{float(v):+.3f}"


def pval(p) -> str:
    if is_missing(p):
        return NA
    p = float(p)
    if p == 0:
        return "<1e-300"
    if p < 1e-3:
        return f"{p:.0e}".replace("e-0", "e-")
    return f"{p:.3f}"


def level(v) -> str:
    """A confidence level: 95%, 95.1%, 97.85% (as many decimals as it needs, up to two)."""
    if is_missing(v):
        return NA
    from ..results import level_text

    return level_text(v)


def pct(v) -> str:
    if is_missing(v):
        return NA
    s = f"{100 * float(v):.0f}%"
    return "0%" if s == "-0%" else s


def small_pct(v) -> str:
    """A relative spread: one decimal (2.5%), or two significant digits below 0.1% (0.042%), so a
    nonzero spread never prints as 0.0%."""
    x = 100 * abs(float(v))
    return f"{x:.1f}%" if x >= 0.1 or x == 0 else f"{x:.2g}%"


def quantity(v) -> str:
    """A median count (ticks, instructions): thousands separators, 3 significant digits below 100."""
    if is_missing(v):
        return NA
    v = float(v)
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return num(v)


def change(speedup, unit: str) -> str:
    """A comparison of a metric whose ratio reads as a change (metrics.Ratio.CHANGE; analyze's speedup =
    base / variant) as what it is: the variant's quantity against the base's, '2.49× the bytes (+149%)',
    '0.6× the bytes (−40%)'; never faster/slower."""
    if is_missing(speedup) or not float(speedup) > 0:
        return NA
    r = 1 / float(speedup)
    if r == 1:
        return f"1× the {unit} (same)"
    return f"{times(r)} the {unit} ({(r - 1) * 100:+.0f}%)".replace("-", "−")


def ratio(metric: str | None, speedup) -> str:
    """A comparison's ratio as the metric reads it (metrics.Metric.ratio): a speedup '1.42×', or a change."""
    from .. import metrics

    m = metrics.of(metric)
    return times(speedup) if m.reads_as_speedup else change(speedup, m.unit)


def verdict(metric: str | None, v) -> str:
    """A comparison's verdict in the metric's words (fewer bytes, not faster)."""
    from .. import metrics

    return metrics.of(metric).verdict_text(v)
