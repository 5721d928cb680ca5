"""The level at which a study's intervals are printed, so that verdicts read off them are controlled
over the whole multiple-testing family.

`fcr` (default; Benjamini & Yekutieli 2005): the comparisons whose decision p-value passes the
Benjamini-Hochberg step-up at alpha are selected (R of m); every interval is printed at level
1 - R alpha / m. A verdict is given exactly when the printed interval clears the threshold band,
which is exactly the BH-selected set, and the expected share of verdicts whose interval misses the
truth (the false coverage-statement rate, which bounds the share of false verdicts) is at most alpha.
When most comparisons are clear (R ~ m) the level is close to 1 - alpha; when few are, it tightens.
`bonferroni`: level 1 - alpha / m (simultaneous: the chance of any interval missing <= alpha).
`none`: level 1 - alpha, no control over the family (each interval alone covers with 1 - alpha).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ADJUSTMENTS = ("fcr", "bonferroni", "none")


@dataclass(frozen=True)
class FamilyLevel:
    gamma: float  # the miss probability each interval is printed at (level 1 - gamma)
    m: int  # comparisons in the family
    selected: int  # R: BH-selected (fcr), else the count with decision p <= gamma
    adjust: str
    alpha: float

    @property
    def level(self) -> float:
        return 1.0 - self.gamma

    def to_dict(self) -> dict:
        return {"adjust": self.adjust, "alpha": self.alpha, "m": self.m, "selected": self.selected,
                "gamma": self.gamma, "level": self.level}


def bh_count(p: np.ndarray, q: float) -> int:
    """R of the Benjamini-Hochberg step-up at level q: max{r : p_(r) <= r q / m} (0 if none)."""
    p = np.sort(np.asarray(p, dtype=np.float64)[np.isfinite(p)])
    m = p.size
    if m == 0:
        return 0
    ok = np.flatnonzero(p <= q * np.arange(1, m + 1) / m)
    return int(ok[-1] + 1) if ok.size else 0


def family_level(decision_p: np.ndarray, alpha: float, adjust: str = "fcr") -> FamilyLevel:
    """The family's printed level from its members' decision p-values (NaN: not in the family)."""
    if adjust not in ADJUSTMENTS:
        raise ValueError(f"adjust must be one of {ADJUSTMENTS}")
    p = np.asarray(decision_p, dtype=np.float64)
    p = p[np.isfinite(p)]
    m = int(p.size)
    if adjust == "none" or m == 0:
        gamma = alpha
    elif adjust == "bonferroni":
        gamma = alpha / m
    else:
        gamma = max(bh_count(p, alpha), 1) * alpha / m
    selected = bh_count(p, alpha) if adjust == "fcr" else int((p <= gamma).sum())
    return FamilyLevel(float(gamma), m, selected, adjust, float(alpha))
