"""Carry-over tests (analyze/groups.carryover and position0 say what they test): Kruskal-Wallis of
job-centred log spin medians across the build that ran just before (stratified by position in the spin)
and across first/later positions. Numbers in, numbers out."""

from __future__ import annotations

import numpy as np
from scipy import stats


def _stratified_levels(labels: np.ndarray, strata: np.ndarray, known: np.ndarray,
                       min_per_level: int) -> tuple[list[str], np.ndarray]:
    """The predecessor levels to compare and the spins that take part: spins of positions >= 1 where
    two or more levels (of >= min_per_level spins) occur; when they have fewer than two levels (two
    builds: position 1 always follows the other), position 0 alone (the previous spin's last build:
    the group itself or the other)."""
    _keep, sel = _levels(labels, known, min_per_level)
    mixed = [p for p in np.unique(strata[sel]) if p >= 1 and len(set(labels[sel & (strata == p)])) >= 2]
    keep, out = _levels(labels, sel & np.isin(strata, mixed), min_per_level)
    return (keep, out) if len(keep) >= 2 else _levels(labels, sel & (strata == 0), min_per_level)


def _centred(lv: np.ndarray, lab: np.ndarray, job: np.ndarray, keep: list[str]) -> np.ndarray:
    """Log values minus their job's mean of its levels' medians (a level with most spins cannot drag it)."""
    centred = np.empty_like(lv)
    for j in np.unique(job):
        m = job == j
        centred[m] = lv[m] - np.mean([np.median(lv[m & (lab == x)]) for x in keep if (m & (lab == x)).any()])
    return centred


def _level_test(lv: np.ndarray, lab: np.ndarray, job: np.ndarray, keep_lv: list[str]) -> tuple[float, float, str]:
    """Kruskal-Wallis of job-centred log values across levels: (p, the most different level's shift, it)."""
    centred = _centred(lv, lab, job, keep_lv)
    samples = [centred[lab == x] for x in keep_lv]
    if len({float(v) for x in samples for v in x}) == 1:
        return 1.0, 0.0, ""
    p = float(stats.kruskal(*samples).pvalue)
    contrast = np.array([np.median(centred[lab == x]) - np.median(centred[lab != x]) for x in keep_lv])
    k = max(range(len(keep_lv)), key=lambda i: (round(abs(float(contrast[i])), 12), contrast[i] > 0))
    return p, float(np.expm1(contrast[k])), str(keep_lv[k])


def _levels(labels: np.ndarray, known: np.ndarray, min_per_level: int) -> tuple[list[str], np.ndarray]:
    values, counts = np.unique(labels[known], return_counts=True)
    keep = [str(v) for v, c in zip(values, counts) if c >= min_per_level]
    return keep, known & np.isin(labels, keep)


def levels_test(log_values: np.ndarray, labels: np.ndarray, strata: np.ndarray | None, job: np.ndarray,
                min_per_level: int = 3) -> tuple[float, float, str]:
    """Carry-over: (p, shift, level) of the log values across the predecessor labels ("" unknown),
    stratified by position (strata; None: one stratum), each (job, position) cell centred on its own;
    the predecessors pooled by variant ("variant/compiler" -> variant) when fewer than two levels of
    `min_per_level` spins are left; (nan, nan, "") when still fewer."""
    nan = float("nan")
    labels = np.asarray(labels).astype(str)
    strata = strata if strata is not None else np.zeros(labels.size, np.int64)
    keep_lv, sel = _stratified_levels(labels, strata, labels != "", min_per_level)
    if len(keep_lv) < 2:  # many builds per job (a compiler matrix): pool the predecessors by variant
        labels = np.array([x.split("/", 1)[0] for x in labels], dtype=object).astype(str)
        keep_lv, sel = _stratified_levels(labels, strata, labels != "", min_per_level)
    if len(keep_lv) < 2:
        return nan, nan, ""
    cell = job[sel].astype(np.int64) * (int(strata.max()) + 1) + strata[sel]
    return _level_test(log_values[sel], labels[sel], cell, keep_lv)


def position0_test(log_values: np.ndarray, pos: np.ndarray, job: np.ndarray,
                   min_per_level: int = 3) -> tuple[float, float]:
    """First position against the later ones: (p, relative change at position 0); nan with fewer than
    `min_per_level` spins on a side."""
    nan = float("nan")
    first = np.where(pos == 0, "first", "later").astype(str)
    keep, sel = _levels(first, np.ones(first.size, bool), min_per_level)
    if len(keep) < 2:
        return nan, nan
    lab = first[sel]
    centred = _centred(log_values[sel], lab, job[sel], keep)
    a, b = centred[lab == "first"], centred[lab == "later"]
    if len({*a.tolist(), *b.tolist()}) == 1:
        return 1.0, 0.0
    return float(stats.kruskal(a, b).pvalue), float(np.expm1(np.median(a) - np.median(b)))
