"""The numbers of the cliff rule and the statistics of a cliff's re-timing (issue 33).

The rule (analyze/cliffs.py `flag`) calls a laid-out copy a cliff when it is slower than its group's
typical copy and than its own job's other copies by more than SIZE, and more than Z robust SDs (never
below FLOOR_SD) beyond the group's median, in groups of at least MIN_COPIES copies. A re-timing (run/retime.py)
times the worst copy W against a typical copy T in K fresh processes; per process the log ratio of
their medians, and over the K processes the t interval at LEVEL (`retime_interval`), read as a
verdict against the study's threshold (`retime_verdict`), a search probe's state (`search_state`) and
where the cliff lives (`belongs`).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

SIZE = 0.10  # a cliff is at least 10% slower than the group's typical copy and than its job's others
Z = 5.0  # and at least 5 robust SDs of the group's copies beyond their median
MIN_COPIES = 8
FLOOR_SD = 0.005  # log scale: the robust SD is never taken below 0.5%
LEVEL = 0.95  # the re-timing's interval


def process_log_ratios(process, is_worst, value) -> np.ndarray:
    """Per re-timing process (in sorted order): log of (median of W's spin medians / median of T's).
    The three arrays run over spins: the process each ran in, whether it timed W (else T), its median
    per call. NaN for a process that lacks one of the two or has a median <= 0."""
    process, is_worst, value = np.asarray(process), np.asarray(is_worst, dtype=bool), np.asarray(value, dtype=float)
    out = []
    for p in np.unique(process):
        here = process == p
        w, t = value[here & is_worst], value[here & ~is_worst]
        mw, mt = float(np.median(w)) if w.size else math.nan, float(np.median(t)) if t.size else math.nan
        out.append(math.log(mw / mt) if mw > 0 and mt > 0 else math.nan)
    return np.array(out)


def retime_interval(log_ratios: np.ndarray, res: float = 0.0, level: float = LEVEL) -> tuple[float, float, float]:
    """(ratio, low, high) of K processes' log ratios W/T: the t interval (df K - 1) of their mean,
    each end moved out by `res` (log scale); nan with fewer than 2 processes."""
    x = np.asarray(log_ratios, dtype=float)
    x = x[np.isfinite(x)]
    if x.size < 2:
        return (math.exp(x.mean()) if x.size else math.nan), math.nan, math.nan
    m, se = float(x.mean()), float(x.std(ddof=1) / math.sqrt(x.size))
    h = float(stats.t.ppf(0.5 + level / 2, x.size - 1)) * se + res
    return math.exp(m), math.exp(m - h), math.exp(m + h)


def retime_verdict(lo: float, hi: float, threshold: float) -> str:
    """confirmed: W is slower than T beyond the threshold; refuted: within ±threshold; ~ otherwise."""
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return "~"
    band = math.log1p(threshold)
    if math.log(lo) > band:
        return "confirmed"
    if -band < math.log(lo) and math.log(hi) < band:
        return "refuted"
    return "~"


def search_state(lo: float, hi: float, threshold: float, cliff: float) -> str:
    """A search probe (a hybrid layout timed against T): 'on' when it is slower than T beyond the
    threshold, 'off' when even its interval's upper end stays below half the cliff (on the log scale:
    sqrt(cliff), the alone test's W/T), '?' otherwise."""
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return "?"
    if lo > 1 + threshold:
        return "on"
    if hi < max(math.sqrt(cliff), 1 + threshold) if np.isfinite(cliff) else hi < 1 + threshold:
        return "off"
    return "?"


def belongs(alone: str, context: str | None) -> str:
    """Where a re-timed cliff lives, from the two tests' verdicts."""
    if alone == "confirmed":
        return "copy"
    if context == "confirmed":
        return "context"
    if alone == "refuted" and context in (None, "refuted"):
        return "not reproduced"
    return "undecided"
