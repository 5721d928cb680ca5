"""The decision rule, once: a comparison's decision p is the smallest miss probability gamma at which its
(1 - gamma) interval gives a verdict (above +band, below -band, or inside the band), each end moved out by
the clock's resolution `res`; a family's intervals at level 1 - gamma give a verdict exactly for the rows
whose decision p is <= gamma. interval.Evidence.decision_p takes the tails from its interval's own
distribution (sign counts, clustered sign, t); `empirical` from a sample of the estimate's distribution
(a campaign's bootstrap of a ratio, co-residency's Monte Carlo errors of a median moved to the row's median).
Numbers in, numbers out."""

from __future__ import annotations

import numpy as np


def band_ends(band: float, res: float = 0.0) -> tuple[float, float]:
    """(up, down): an interval's end clears the band outward only beyond band + res, and lies inside it
    only within band - res (down <= 0: no interval is inside)."""
    return band + res, band - res


def empirical(sample: np.ndarray, band: float, res: float = 0.0) -> float:
    """The decision p of the percentile intervals [q(gamma/2) - res, q(1 - gamma/2) + res] of `sample`."""
    up, down = band_ends(band, res)
    lo_share, hi_share = float(np.mean(sample <= up)), float(np.mean(sample >= -up))
    inside = max(float(np.mean(sample <= -down)), float(np.mean(sample >= down))) if down > 0 else 1.0
    return min(1.0, 2 * lo_share, 2 * hi_share, 2 * inside)


def percentile_interval(sample: np.ndarray, gamma: float, res: float = 0.0) -> tuple[float, float]:
    """The percentile interval at level 1 - gamma, each end moved out by res (the clocks' resolution)."""
    lo, hi = np.quantile(sample, [gamma / 2, 1 - gamma / 2], method="inverted_cdf")
    return float(lo) - res, float(hi) + res
