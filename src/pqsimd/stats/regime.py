"""Paired design: do the jobs fall into two regimes (machine states that change the ratio)?

One job runs every build, so a machine state that slows all builds equally cancels in the job's
ratio; a state that slows scalar and vector code differently does not, and the jobs' ratios then
form two clusters that one speedup describes badly. On the virtual hosts users have, such a state
lasts a whole job (process) and the same few jobs are in it in many comparisons of a parameter set:
in a real Emerald Rapids study 3 of 10 jobs sat at 50.8-53.9x where the other 7 sat at 36.2-37.3x.

Every paired comparison of >= MIN_JOBS jobs is split once: its sorted job log ratios are cut at the
widest gap that leaves >= 2 jobs on each side. The split is a *candidate* when the two clusters are
apart by more than the threshold (and twice the clock's resolution of the ratio) and farther apart
than either is wide (gap >= MIN_CONTRAST x the larger cluster's range). Two tests, each with its
p-values adjusted by Benjamini-Hochberg over the comparisons it tests, flag a comparison:

- **job state** (pooled over a parameter set; the one with power at J = 10): are the jobs that the
  split puts together the jobs that the other ops' comparisons put together? W counts, for each pair
  of jobs, the other ops' comparisons (the same jobs, split by more than the threshold) that put both
  on the same side; the statistic is the sum of W over the pairs this split puts on the same side.
  Without a job-level state, which jobs land in which cluster of this comparison is unrelated to the
  other ops' data, so every assignment of the J jobs to clusters of these sizes is equally likely: the
  p-value is exact, by enumerating them (or EXACT_LIMIT draws). Comparisons of the same op share its
  groups' noise and are left out of W. The smallest p a split of m jobs can reach is 1 / C(J, m) (1/120
  for 3 of 10): the BH family is the candidates only (the split is a function of the values, not of
  the jobs' names, so it selects without biasing the p-values: independent filtering).
- **dip** (one comparison alone, for states no other op shares): Hartigan's dip test of unimodality
  (the `diptest` package) of the comparison's job log ratios, smoothed first by uniform noise of the
  threshold's width (the dip test assumes a continuous distribution and fires on ties, and modes closer
  than the threshold are not regimes); BH over every comparison tested; the split must be apart by
  more than the threshold. Its null is every unimodal distribution, so it needs many jobs (J = 10:
  a clean 7/3 split gives p ~ 0.05 before adjustment).

False alarms and power of both, by simulation and on real studies, are in bench/bench_regimes.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, replace
from itertools import combinations

import numpy as np

from .significance import bh

MIN_JOBS = 6  # fewer jobs: two clusters of >= 2 plus a test with any power are not possible
MIN_CLUSTER = 2
MIN_CONTRAST = 1.0  # the clusters are farther apart than either is wide
EXACT_LIMIT = 5000  # assignments enumerated up to this many, else as many random ones


@dataclass(frozen=True)
class Split:
    """The widest-gap split of one comparison's job log ratios into a lower and an upper cluster."""

    order: np.ndarray  # job positions sorted by log ratio
    values: np.ndarray  # the sorted log ratios
    k: int  # jobs in the lower cluster

    @property
    def gap(self) -> float:
        return float(self.values[self.k] - self.values[self.k - 1])

    @property
    def low(self) -> float:
        return float(np.median(self.values[:self.k]))

    @property
    def high(self) -> float:
        return float(np.median(self.values[self.k:]))

    @property
    def n_low(self) -> int:
        return self.k

    @property
    def n_high(self) -> int:
        return int(self.values.size - self.k)

    @property
    def contrast(self) -> float:
        """The gap over the wider cluster's range (inf when both clusters are tied values)."""
        width = max(float(np.ptp(self.values[:self.k])), float(np.ptp(self.values[self.k:])))
        return self.gap / width if width > 0 else math.inf

    def lower(self) -> np.ndarray:
        """A boolean per job position: in the lower cluster."""
        out = np.zeros(self.values.size, dtype=bool)
        out[self.order[:self.k]] = True
        return out


def split_of(job_log_ratios: np.ndarray, min_cluster: int = MIN_CLUSTER) -> Split | None:
    """The split of the values (in job order) at the widest gap leaving >= min_cluster on each side;
    None for fewer than MIN_JOBS values, non-finite ones, or no spread."""
    x = np.asarray(job_log_ratios, dtype=np.float64)
    if x.size < MIN_JOBS or not np.all(np.isfinite(x)) or np.ptp(x) == 0:
        return None
    order = np.argsort(x, kind="stable")
    xs = x[order]
    ks = np.arange(min_cluster, x.size - min_cluster + 1)
    k = int(ks[np.argmax(xs[ks] - xs[ks - 1])])
    return Split(order, xs, k)


def best_split(x: np.ndarray, min_cluster: int = MIN_CLUSTER) -> tuple[int, float, float]:
    """The split of sorted x into a lower and an upper cluster (each >= min_cluster) with the widest
    gap between them: (size of the lower cluster, its median, the upper's median)."""
    x = np.sort(np.asarray(x, dtype=np.float64))
    ks = np.arange(min_cluster, x.size - min_cluster + 1)
    k = int(ks[np.argmax(x[ks] - x[ks - 1])])
    return k, float(np.median(x[:k])), float(np.median(x[k:]))


def smooth(x: np.ndarray, band: float, rng: np.random.Generator) -> np.ndarray:
    """x plus uniform noise of width ``band`` (log(1 + threshold)), or a tiny width if band is 0."""
    w = band if band > 0 else max(float(np.abs(x).max()), 1.0) * 1e-9
    return x + rng.uniform(-w / 2.0, w / 2.0, size=x.size)


def dip_p(job_log_ratios: np.ndarray, band: float, rng: np.random.Generator) -> float:
    """The dip test's p of the smoothed values (NaN below MIN_JOBS or without spread)."""
    import diptest

    x = np.asarray(job_log_ratios, dtype=np.float64)
    if x.size < MIN_JOBS or not np.all(np.isfinite(x)) or np.ptp(x) == 0:
        return math.nan
    return float(diptest.diptest(smooth(np.sort(x), band, rng))[1])


@dataclass(frozen=True)
class DipResult:
    p: float  # dip test p (NaN: not tested)
    low: float  # median log ratio of the lower cluster of the best split
    high: float
    n_low: int
    n_high: int

    @property
    def gap(self) -> float:
        return self.high - self.low


def regime_test(job_log_ratios: np.ndarray, band: float, rng: np.random.Generator) -> DipResult:
    """The dip test of one comparison's job log ratios and its best split (needs >= MIN_JOBS jobs)."""
    x = np.sort(np.asarray(job_log_ratios, dtype=np.float64))
    p = dip_p(x, band, rng)
    if not math.isfinite(p):
        return DipResult(math.nan, math.nan, math.nan, 0, 0)
    k, lo, hi = best_split(x)
    return DipResult(p, lo, hi, k, int(x.size - k))


def together(lower_sets: np.ndarray) -> np.ndarray:
    """W[i, j]: in how many of the splits (rows: True = lower cluster, one column per job) jobs i and
    j are on the same side; 0 on the diagonal."""
    s = np.asarray(lower_sets, dtype=np.float64)
    w = s.T @ s + (1.0 - s).T @ (1.0 - s)
    np.fill_diagonal(w, 0.0)
    return w


def _statistic(lower: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Sum of W over the pairs each assignment (rows) puts on the same side."""
    u = np.atleast_2d(lower).astype(np.float64)
    v = 1.0 - u
    return ((u @ w) * u).sum(axis=1) + ((v @ w) * v).sum(axis=1)


def state_p(lower: np.ndarray, w: np.ndarray, rng: np.random.Generator) -> float:
    """The share of assignments of the jobs to clusters of this split's sizes whose statistic is at
    least this split's: exact up to EXACT_LIMIT assignments, else from as many random ones."""
    lower = np.asarray(lower, dtype=bool)
    j, k = lower.size, int(lower.sum())
    if not np.any(w):
        return 1.0
    obs = float(_statistic(lower, w)[0])
    tol = 1e-9 * max(abs(obs), 1.0)
    if math.comb(j, k) <= EXACT_LIMIT:
        sets = np.zeros((math.comb(j, k), j), dtype=bool)
        for i, c in enumerate(combinations(range(j), k)):
            sets[i, list(c)] = True
        return float(np.mean(_statistic(sets, w) >= obs - tol))
    draws = np.argsort(rng.random((EXACT_LIMIT, j)), axis=1)[:, :k]
    sets = np.zeros((EXACT_LIMIT, j), dtype=bool)
    np.put_along_axis(sets, draws, True, axis=1)
    return float((1 + np.sum(_statistic(sets, w) >= obs - tol)) / (EXACT_LIMIT + 1))


@dataclass(frozen=True)
class Row:
    """One paired comparison as the regime check sees it."""

    pool: Hashable  # comparisons of one parameter set measured in the same jobs (metric, scheme, jobs)
    op: str  # comparisons of one op share its groups' noise: none of them is evidence for another
    job_ids: tuple[str, ...]
    logs: np.ndarray  # job log ratios, in job_ids order
    res: float = 0.0  # the clock's resolution of the log ratio (compare.py: Evidence.res)


@dataclass(frozen=True)
class Regime:
    """One comparison's regime check."""

    split: Split | None
    candidate: bool = False  # clusters apart by more than the threshold and farther than wide
    p_state: float = math.nan  # job-state test, raw (NaN: not a candidate)
    p_dip: float = math.nan
    p_state_adj: float = math.nan  # BH-adjusted over the candidates
    p_dip_adj: float = math.nan  # BH-adjusted over the comparisons tested
    flagged: bool = False
    by: str = ""  # "job state", "dip" or "job state, dip"
    minority: tuple[str, ...] = ()  # the jobs of the smaller cluster (flagged rows)
    also: int = 0  # other flagged comparisons of the parameter set whose minority is the same jobs

    @property
    def tested(self) -> bool:
        return math.isfinite(self.p_dip)


def _apart(sp: Split | None, band: float, res: float) -> bool:
    return sp is not None and sp.gap > max(band, 2.0 * res)


def check(rows: Sequence[Row], band: float, alpha: float,
          rng_of: Callable[[int], np.random.Generator]) -> list[Regime]:
    """The regime check of every row (see the module's doc); rng_of(i): row i's generator (the dip
    test's smoothing and, for large J, the job-state test's draws)."""
    splits = [split_of(r.logs) for r in rows]
    apart = [_apart(sp, band, r.res) for sp, r in zip(splits, rows)]
    cand = [a and sp.contrast >= MIN_CONTRAST for a, sp in zip(apart, splits)]
    p_state = np.full(len(rows), np.nan)
    minority: dict[int, tuple[str, ...]] = {}
    pools: dict[Hashable, list[int]] = {}
    for i, r in enumerate(rows):
        if splits[i] is not None:
            pools.setdefault(r.pool, []).append(i)
    for idx in pools.values():
        jobs = rows[idx[0]].job_ids
        where = {j: n for n, j in enumerate(jobs)}
        lower = np.zeros((len(idx), len(jobs)), dtype=bool)
        for n, i in enumerate(idx):  # each row's lower cluster in the pool's job order
            lo = splits[i].lower()
            lower[n, [where[j] for j in rows[i].job_ids]] = lo
        ops = np.array([rows[i].op for i in idx], dtype=object)
        shown = np.array([apart[i] for i in idx], dtype=bool)
        # per comparison, its smaller cluster (of an even split: neither); how often each job is in the
        # other ops' says which half of an even split is the minority
        smaller = np.where((2 * lower.sum(axis=1) < len(jobs))[:, None], lower,
                           np.where((2 * lower.sum(axis=1) > len(jobs))[:, None], ~lower, False)) & shown[:, None]
        cache: dict[str, np.ndarray] = {}
        for n, i in enumerate(idx):
            op = rows[i].op
            others = (ops != op) & shown
            if op not in cache:
                cache[op] = together(lower[others])
            if cand[i]:
                p_state[i] = state_p(lower[n], cache[op], rng_of(i))
            if apart[i]:
                lo, k = lower[n], int(lower[n].sum())
                if 2 * k == len(jobs):  # the half more often in the other ops' smaller clusters, else the upper
                    times = smaller[others].sum(axis=0)
                    lo = lo if times[lo].sum() > times[~lo].sum() else ~lo
                side = lo if 2 * k <= len(jobs) else ~lo
                minority[i] = tuple(jobs[m] for m in np.flatnonzero(side))
    p_dip = np.array([dip_p(r.logs, band, rng_of(i)) if splits[i] is not None else math.nan
                      for i, r in enumerate(rows)])
    state_adj, dip_adj = np.full(len(rows), np.nan), np.full(len(rows), np.nan)
    ok = np.isfinite(p_state)
    if ok.any():
        state_adj[ok] = bh(p_state[ok])
    ok = np.isfinite(p_dip)
    if ok.any():
        dip_adj[ok] = bh(p_dip[ok])
    out = []
    for i in range(len(rows)):
        by = [name for name, hit in (("job state", cand[i] and state_adj[i] < alpha),
                                     ("dip", apart[i] and dip_adj[i] < alpha)) if hit]
        out.append(Regime(splits[i], cand[i], float(p_state[i]), float(p_dip[i]), float(state_adj[i]),
                          float(dip_adj[i]), bool(by), ", ".join(by), minority.get(i, ()) if by else ()))
    same: dict[tuple, int] = {}
    for r, g in zip(rows, out):
        if g.flagged:
            same[(r.pool, frozenset(g.minority))] = same.get((r.pool, frozenset(g.minority)), 0) + 1
    return [replace(g, also=same[(r.pool, frozenset(g.minority))] - 1) if g.flagged else g
            for r, g in zip(rows, out)]
