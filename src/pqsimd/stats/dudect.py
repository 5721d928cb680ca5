"""dudect's fixed-vs-random timing test (Reparaz, Balasch, Verbauwhede, "Dude, is my code constant
time?", DATE 2017): Welch's t between the times of calls with one fixed secret and calls with fresh
random ones, on all measurements and on each crop below a percentile of them (the long tail of a noisy
machine hides a difference the body shows). The statistic reported is the crop with the largest |t|;
dudect calls |t| > 4.5 evidence of a difference. Evidence only: the largest of several crops is not a
test at a known level, and a shared machine moves times for reasons of its own."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

THRESHOLD = 4.5  # dudect's t_threshold_moderate
CROPS = (1.0, 0.99, 0.95, 0.9, 0.75, 0.5)  # keep the measurements below this percentile of all of them
MIN_PER_CLASS = 10


@dataclass(frozen=True)
class Dudect:
    t: float  # Welch's t of the crop with the largest |t| (positive: the random class is slower)
    crop: float  # the percentile kept
    n_fixed: int
    n_random: int

    @property
    def exceeds(self) -> bool:
        return abs(self.t) > THRESHOLD


def welch_t(fixed: np.ndarray, random: np.ndarray) -> float:
    """Welch's t (scipy), random - fixed; 0 where both classes have no spread (identical times)."""
    if fixed.std() == 0 and random.std() == 0:
        return 0.0 if fixed.mean() == random.mean() else float(np.sign(random.mean() - fixed.mean()) * np.inf)
    return float(stats.ttest_ind(random, fixed, equal_var=False).statistic)


def dudect(classes: np.ndarray, ticks: np.ndarray) -> Dudect | None:
    """The test over measurements of class 0 (fixed secret) and 1 (random); None with too few of either."""
    classes, ticks = np.asarray(classes), np.asarray(ticks, dtype=float)
    best: Dudect | None = None
    for crop in CROPS:
        keep = ticks <= np.quantile(ticks, crop) if crop < 1 else np.ones(ticks.size, bool)
        f, r = ticks[keep & (classes == 0)], ticks[keep & (classes == 1)]
        if f.size < MIN_PER_CLASS or r.size < MIN_PER_CLASS:
            continue
        t = welch_t(f, r)
        if best is None or abs(t) > abs(best.t):
            best = Dudect(t, crop, int(f.size), int(r.size))
    return best
