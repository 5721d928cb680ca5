"""The level at which a study's intervals are printed, so that verdicts read off them are controlled
over the whole multiple-testing family.

`fcr` (default; Benjamini & Yekutieli 2005): the comparisons whose decision p-value passes the
Benjamini-Hochberg step-up at alpha are selected (R of m); every interval is printed at level
1 - R alpha / m. A verdict is given exactly when the printed interval clears the threshold band,
which is exactly the BH-selected set, and the expected share of verdicts whose interval misses the
truth (the false coverage-statement rate, which bounds the share of false verdicts) is at most alpha.
When most comparisons are clear (R ~ m) the level is close to 1 - alpha; when few are, it tightens.
Both rest on the decision p-values being positively dependent (PRDS); comparisons that share a
baseline or a job can be negatively correlated, which PRDS does not cover.
`by` (Benjamini & Yekutieli 2001, 2005): the same with alpha / c(m), c(m) = sum_{i<=m} 1/i, which
holds under any dependence: the Benjamini-Yekutieli step-up selects R, every interval is printed
at 1 - R alpha / (m c(m)).
`bonferroni`: level 1 - alpha / m (simultaneous: the chance of any interval missing <= alpha).

Units (fcr and by). Comparisons whose evidence shares one laid-out copy that is a cliff (a copy slow in
nine ops moves eighteen comparisons at once) are not independent findings: they form one **unit**. The
family is then the m' units (Benjamini & Bogomolov 2014, selective inference on families): a unit's
p-value is its members' smallest decision p times their number (Bonferroni within the unit, valid under
any dependence), the step-up selects R' of the m' units, and every interval is printed at
1 - max(R', 1) alpha / m'; the comparisons of one unit count once, however many they are.
`none`: level 1 - alpha, no control over the family (each interval alone covers with 1 - alpha).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ADJUSTMENTS = ("fcr", "by", "bonferroni", "none")


@dataclass(frozen=True)
class FamilyLevel:
    gamma: float  # the miss probability each interval is printed at (level 1 - gamma)
    m: int  # comparisons in the family
    selected: int  # R: BH-selected (fcr) or BY-selected (by), else the count with decision p <= gamma
    adjust: str
    alpha: float
    other: dict | None = None  # fcr and by: the other one's level and how many verdicts it would change
    members: int | None = None  # comparisons in the family when units group some of them (m counts units)

    @property
    def level(self) -> float:
        return 1.0 - self.gamma

    def to_dict(self) -> dict:
        return {"adjust": self.adjust, "alpha": self.alpha, "m": self.m, "selected": self.selected,
                "gamma": self.gamma, "level": self.level, **({"other": self.other} if self.other else {}),
                **({"comparisons": self.members, "units": self.m} if self.members is not None else {})}


def bh_count(p: np.ndarray, q: float) -> int:
    """R of the Benjamini-Hochberg step-up at level q: max{r : p_(r) <= r q / m} (0 if none)."""
    p = np.sort(np.asarray(p, dtype=np.float64)[np.isfinite(p)])
    m = p.size
    if m == 0:
        return 0
    ok = np.flatnonzero(p <= q * np.arange(1, m + 1) / m)
    return int(ok[-1] + 1) if ok.size else 0


def by_constant(m: int) -> float:
    """c(m) = sum_{i<=m} 1/i: Benjamini-Yekutieli's price of arbitrary dependence."""
    return float(np.sum(1.0 / np.arange(1, m + 1))) if m else 1.0


def _gamma_selected(p: np.ndarray, alpha: float, adjust: str) -> tuple[float, int]:
    m = int(p.size)
    if adjust == "none" or m == 0:
        return alpha, int((p <= alpha).sum())
    if adjust == "bonferroni":
        return alpha / m, int((p <= alpha / m).sum())
    q = alpha / by_constant(m) if adjust == "by" else alpha
    r = bh_count(p, q)
    return max(r, 1) * q / m, r


def verdicts_changed(p: np.ndarray, gamma_a: float, gamma_b: float) -> int:
    """How many members get a verdict at one level and not at the other: a row's interval gives a
    verdict exactly when its decision p <= gamma (interval.py), so the rows with p between the two."""
    lo, hi = sorted((gamma_a, gamma_b))
    return int(((p > lo) & (p <= hi)).sum())


def unit_p(decision_p: np.ndarray, units) -> np.ndarray:
    """One p-value per unit (members with the same unit key; NaN members are not in the family): the
    smallest member's p times the unit's size, at most 1 (Bonferroni within the unit)."""
    p = np.asarray(decision_p, dtype=np.float64)
    by: dict = {}
    for x, u in zip(p, units):
        if np.isfinite(x):
            by.setdefault(u, []).append(float(x))
    return np.array([min(1.0, min(v) * len(v)) for v in by.values()], dtype=np.float64)


def family_level(decision_p: np.ndarray, alpha: float, adjust: str = "fcr", units=None) -> FamilyLevel:
    """The family's printed level from its members' decision p-values (NaN: not in the family). With
    fcr or by, `other` holds the other one's level, selection and how many verdicts would change.
    units: one hashable key per member (None: each its own unit); with fcr or by the members sharing
    a key count as one unit of the family (unit_p)."""
    if adjust not in ADJUSTMENTS:
        raise ValueError(f"adjust must be one of {ADJUSTMENTS}")
    p = np.asarray(decision_p, dtype=np.float64)
    members = None
    if units is not None and adjust in ("fcr", "by"):
        n_members = int(np.isfinite(p).sum())
        grouped = unit_p(p, units)
        if grouped.size < n_members:
            members = n_members
            fam = family_level(grouped, alpha, adjust)
            return FamilyLevel(fam.gamma, fam.m, fam.selected, adjust, float(alpha), fam.other, members)
    p = p[np.isfinite(p)]
    gamma, selected = _gamma_selected(p, alpha, adjust)
    other = None
    if adjust in ("fcr", "by") and p.size:
        alt = "by" if adjust == "fcr" else "fcr"
        g_alt, r_alt = _gamma_selected(p, alpha, alt)
        other = {"adjust": alt, "gamma": float(g_alt), "level": 1.0 - float(g_alt), "selected": r_alt,
                 "verdicts_changed": verdicts_changed(p, gamma, g_alt)}
    return FamilyLevel(float(gamma), int(p.size), selected, adjust, float(alpha), other)
