"""One estimand and one interval per comparison, and the three-way verdict read off that interval.

Every number is on the log scale here (log speedup = log baseline - log variant; > 0: the variant
is faster). A comparison's `Evidence` is what its estimate and interval are computed from; the
interval's level is only known once the whole multiple-testing family is (multiplicity.py), so the
evidence first gives a decision p-value, then the interval at the family's level.

- `sign` (paired design: both builds in the same jobs). Estimand: the median over jobs of the job's
  log ratio log(job median of the baseline / job median of the variant). Interval: the
  distribution-free order-statistic (sign-test) interval [x(k), x(J+1-k)] of the J job log ratios;
  its confidence 1 - 2 P(Bin(J, 1/2) <= k - 1) holds whatever the distribution of job effects
  (skewed, a few disturbed jobs, ties). J jobs reach at most 1 - 2^(1-J) (93.75% at J = 5,
  99.8% at J = 10); a level J cannot reach is `unreachable` and the verdict is withheld.
- `csign` (paired design with randomized layouts: every job timed L >= 2 laid-out copies of each
  build, copy l of both builds in the same spins). Estimand: the **typical layout**, the median of the
  log ratio of one copy pair over process states (jobs) and layouts (copies) together: it does not
  depend on how many copies a job times. Estimate: the median of the J x L copy-pair log ratios, each
  job weighing alike. Interval: the clustered sign interval (jobs are the clusters: copies of one
  job share its process state): every theta whose job scores S_j = the sum over the job's pairs of
  sign(ratio - theta) an exact sign-flip test (each S_j as likely positive as negative; exact with
  two copies per job) does not reject at gamma; its p is at least 2^(1-J) (no test over J clusters is
  surer than every job agreeing). Its level is the test's: at least 1 - gamma (printed 1 - gamma). The job value of a laid-out job (groups.Group.job_medians, every
  consumer's) is the median of its copies' medians (the geometric mean of the middle two).
- `t` (separate design: independent groups). Estimand: the ratio of geometric means of the job
  medians (difference of mean log job medians); interval: the job-level t interval of pooled.py
  (Welch, or the study-pooled test).
- `exact` (deterministic counts): the exact ratio, a zero-width interval; for timed groups that never
  moved (the separate design's constant groups, pooled.py) the ratio with the clock's `res` around it.
- `refuse`: the design cannot support an interval (pooled.py's refusal rules, or no job pairs).

No interval is more certain than the clock: a timed sample reads a whole number of clock steps, so
a per-call time is known only to the lattice step (step / calls per sample), and job medians stuck
on that lattice can make every job ratio equal (a zero-width order-statistic interval). `res` is
the log ratio's worst-case error from both builds' lattice steps (`resolution_halfwidth`); every
interval of timed data (sign, t, and exact for groups that never moved) is widened by it on each side, and the decision p-values test the band moved by it, so
the verdict read off the widened interval is the one its p-value gives. An order statistic of values
each within `res` of the unquantized ones is within `res` of the unquantized order statistic, so the
widened interval keeps its level against the clock-free truth (bench/bench_coverage.py measures it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import lru_cache

import numpy as np
from scipy import stats

VERDICTS = ("faster", "slower", "same", "~", "withheld", "n/a")
SAMPLING = ("sign", "csign", "t")  # evidence with a sampling interval: members of the multiple-testing family


def weighted_median(clusters) -> float:
    """The median of the values of all clusters, each cluster weighing alike (each value 1 / its
    cluster's size); where the cumulative weight is exactly half, the midpoint of the two values."""
    vals = np.concatenate([np.asarray(c, dtype=np.float64) for c in clusters])
    w = np.concatenate([np.full(len(c), 1.0 / len(c)) for c in clusters])
    order = np.argsort(vals, kind="stable")
    v, cw = vals[order], np.cumsum(w[order])
    half = 0.5 * cw[-1]
    i = int(np.searchsorted(cw, half - 1e-12 * cw[-1]))
    if abs(cw[i] - half) <= 1e-9 * cw[-1] and i + 1 < v.size:
        return 0.5 * (float(v[i]) + float(v[i + 1]))
    return float(v[i])


def _padded(clusters) -> np.ndarray:
    n = max(len(c) for c in clusters)
    out = np.full((len(clusters), n), np.nan)
    for j, c in enumerate(clusters):
        out[j, :len(c)] = c
    return out


@lru_cache(maxsize=65536)
def _flip_tail(counts: tuple[int, ...], observed: int) -> float:
    """P(|sum_j e_j |S_j|| >= observed) for independent fair signs e_j, where counts[m - 1] jobs have
    |S_j| = m: the exact null distribution of the clustered sign statistic (a convolution of scaled
    binomials)."""
    dist = np.array([1.0])
    for m, n in enumerate(counts, start=1):
        if not n:
            continue
        b = stats.binom.pmf(np.arange(n + 1), n, 0.5)  # k of the n jobs positive: sum = m (2k - n)
        step = np.zeros(2 * m * n + 1)
        step[::2 * m] = b
        dist = np.convolve(dist, step)
    half = (dist.size - 1) // 2
    values = np.abs(np.arange(dist.size) - half)
    return float(min(1.0, dist[values >= observed - 1e-9].sum()))


def clustered_p(clusters, thetas: np.ndarray) -> np.ndarray:
    """The clustered sign test's two-sided p at each theta. Per job S_j = the sum over its L values of
    sign(value - theta); under theta = the median of a job's values (each job alike), each S_j is as
    likely positive as negative, and the test is the exact sign-flip (randomization) test of sum_j S_j:
    its null, sum_j e_j |S_j| with fair signs e_j, given the |S_j| (exact when a job's score is
    symmetric about 0 under the null, as it is with two copies per job; jobs with S_j = 0 carry no
    information, as in the sign test). Jobs of unequal sizes: S_j is rescaled to the largest size and
    rounded."""
    x = _padded(clusters)
    j, n = x.shape
    sizes = np.sum(np.isfinite(x), axis=1)
    th = np.asarray(thetas, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        sg = np.sign(x[None, :, :] - th[:, None, None])
    S = np.nansum(sg, axis=2)  # (C, J) integers in [-n, n]
    if not np.all(sizes == n):
        S = np.rint(S * (n / sizes)[None, :])
    S = S.astype(np.int64)
    mags = np.abs(S)
    key = np.column_stack([(mags == m).sum(axis=1) for m in range(1, n + 1)] + [np.abs(S.sum(axis=1))])
    uniq, inverse = np.unique(key, axis=0, return_inverse=True)
    tails = np.array([_flip_tail(tuple(int(c) for c in row[:-1]), int(row[-1])) for row in uniq])
    return tails[np.asarray(inverse).ravel()]


def _grid(clusters) -> tuple[np.ndarray, np.ndarray]:
    """The values (sorted, distinct) and the points to test: each value and each gap's midpoint, and
    one point beyond either end (the sign pattern is constant on every open gap)."""
    v = np.unique(np.concatenate([np.asarray(c, dtype=np.float64) for c in clusters]))
    span = max(float(v[-1] - v[0]), 1e-9)
    mids = 0.5 * (v[1:] + v[:-1])
    pts = np.sort(np.concatenate([v, mids, [v[0] - span, v[-1] + span]]))
    return v, pts


def clustered_interval(clusters, gamma: float) -> tuple[float, float]:
    """{theta : clustered_p(theta) > gamma}, closed at the values its open gaps reach (log scale);
    the point estimate's gap alone when nothing is accepted."""
    v, pts = _grid(clusters)
    ok = clustered_p(clusters, pts) > gamma
    if not ok.any():
        c = weighted_median(clusters)
        return c, c
    idx = np.flatnonzero(ok)

    def close(i: int, side: int) -> float:
        x = float(pts[i])
        if x in v:  # a value: itself
            return x
        k = int(np.searchsorted(v, x))  # a gap (v[k-1], v[k]): its end on that side
        if side < 0:
            return float(v[k - 1]) if k >= 1 else -math.inf
        return float(v[k]) if k < v.size else math.inf
    return close(int(idx[0]), -1), close(int(idx[-1]), +1)


@lru_cache(maxsize=4096)
def _two_sided_tail(j: int, k: int) -> float:
    """2 P(Bin(j, 1/2) <= k - 1): the miss probability of [x(k), x(j+1-k)] (k >= 1)."""
    return min(1.0, 2.0 * float(stats.binom.cdf(k - 1, j, 0.5)))


def order_rank(j: int, gamma: float) -> int:
    """The largest k <= (j+1)//2 whose order-statistic interval [x(k), x(j+1-k)] misses the median
    with probability <= gamma; 0 when even [min, max] cannot (j too small for that level)."""
    best = 0
    for k in range(1, (j + 1) // 2 + 1):
        if _two_sided_tail(j, k) <= gamma * (1 + 1e-12):
            best = k
        else:
            break
    return best


def order_level(j: int, k: int) -> float:
    """Confidence of [x(k), x(j+1-k)]: at least this for any continuous or discrete distribution."""
    return 1.0 - _two_sided_tail(j, k) if k >= 1 else 0.0


def jobs_needed(gamma: float) -> int:
    """The fewest jobs whose [min, max] reaches confidence 1 - gamma (2^(1-J) <= gamma)."""
    return max(2, int(math.ceil(1.0 - math.log2(gamma) - 1e-12)))


def resolution_halfwidth(rel_base: float, rel_var: float) -> float:
    """The largest change of log(base / variant) when each time may be off by its relative lattice
    step (rel = lattice step / median); inf when either is a whole step or more."""
    rb, rv = max(float(rel_base), 0.0), max(float(rel_var), 0.0)
    if not (rb < 1.0 and rv < 1.0):
        return math.inf
    return max(math.log1p(rb) - math.log1p(-rv), math.log1p(rv) - math.log1p(-rb))


def verdict_of(lo: float, hi: float, band: float) -> str:
    """faster if the interval lies above +band, slower below -band, same inside (-band, +band),
    else ~ (log scale; band = log(1 + threshold))."""
    if lo > band:
        return "faster"
    if hi < -band:
        return "slower"
    if lo > -band and hi < band:
        return "same"
    return "~"


@dataclass(frozen=True)
class Interval:
    """A published number: point, interval, the interval's guaranteed level, and how it was made."""

    point: float  # log scale
    lo: float
    hi: float
    level: float  # the confidence this interval is guaranteed to have (>= the family's when reachable)
    method: str  # sign | t | exact | refuse
    reachable: bool = True  # False: no interval of this kind reaches the family's level (sign, J too small)
    res: float = 0.0  # how much each end was widened for the clock's resolution (log scale)

    @property
    def resolution_limited(self) -> bool:
        """The clock, not the jobs' spread, sets the width: the widening is more than half of it."""
        return self.res > 0 and (self.hi - self.lo) < 4 * self.res

    @property
    def ratio(self) -> tuple[float, float, float]:
        return math.exp(self.point), math.exp(self.lo), math.exp(self.hi)


@dataclass(frozen=True)
class Evidence:
    """What one comparison's estimate and interval come from (log scale)."""

    kind: str  # sign | csign | t | exact | refuse
    logs: np.ndarray = field(default_factory=lambda: np.zeros(0))  # sign, csign: the J job log ratios, sorted
    copies: tuple = ()  # csign: per job, its copy pairs' log ratios (in job order)
    d: float = math.nan  # t: estimate
    se: float = math.nan
    df: float = math.nan
    reason: str = ""  # refuse: why
    ratio: float = math.nan  # exact: the ratio itself (exp of its log loses the last digit)
    res: float = 0.0  # the clock's resolution of the log ratio (resolution_halfwidth); timed evidence only

    def at_resolution(self, res: float) -> "Evidence":
        """The same evidence, its interval widened and its band tests moved by `res` (log scale)."""
        if self.kind not in ("sign", "csign", "t", "exact") or not res > 0:
            return self  # (a deterministic count is never given a res: compare.py returns before)
        return replace(self, res=float(res))

    @classmethod
    def sign(cls, job_log_ratios) -> "Evidence":
        x = np.sort(np.asarray(job_log_ratios, dtype=np.float64))
        if x.size == 0 or not np.all(np.isfinite(x)):
            return cls("refuse", reason="no finite job ratios")
        return cls("sign", logs=x)

    @classmethod
    def csign(cls, copy_log_ratios) -> "Evidence":
        """Paired jobs of laid-out copies: per job the log ratios of its copy pairs."""
        cl = tuple(np.asarray(c, dtype=np.float64) for c in copy_log_ratios)
        if not cl or any(c.size == 0 or not np.all(np.isfinite(c)) for c in cl):
            return cls("refuse", reason="no finite copy ratios")
        if all(c.size == 1 for c in cl):
            return cls.sign([c[0] for c in cl])
        jobs = np.sort(np.array([np.median(c) for c in cl]))
        return cls("csign", logs=jobs, copies=cl, d=weighted_median(cl))

    @classmethod
    def t(cls, d: float, se: float, df: float) -> "Evidence":
        return cls("t", d=float(d), se=float(se), df=float(df))

    @classmethod
    def exact(cls, log_ratio: float, ratio: float | None = None) -> "Evidence":
        return cls("exact", d=float(log_ratio), se=0.0, df=math.inf,
                   ratio=float(ratio) if ratio is not None else math.exp(log_ratio))

    @classmethod
    def refuse(cls, reason: str, d: float = math.nan) -> "Evidence":
        return cls("refuse", d=float(d), reason=reason)

    @property
    def n(self) -> int:
        return int(self.logs.size)

    @property
    def point(self) -> float:
        if self.kind == "sign":
            return float(np.median(self.logs))
        return self.d

    @property
    def in_family(self) -> bool:
        """Tested with a sampling interval (sign, csign or t): one member of the multiple-testing family."""
        return self.kind in SAMPLING

    def _csign_p(self, lo: float, hi: float) -> float:
        """The largest clustered p over theta in [lo, hi] (the grid's points there and its ends)."""
        _v, pts = _grid(self.copies)
        th = np.concatenate([pts[(pts >= lo) & (pts <= hi)], [x for x in (lo, hi) if math.isfinite(x)]])
        return float(clustered_p(self.copies, th).max()) if th.size else 0.0

    def decision_p(self, band: float) -> tuple[float, str]:
        """The smallest gamma at which this comparison's (1 - gamma) interval gives a verdict, and
        which verdict: for the sign interval from the counts of jobs beyond the band (the two-sided
        sign test of each interval hypothesis), for t from the t distribution. A family's intervals at
        level 1 - gamma give a verdict exactly for the rows with decision p <= gamma."""
        if self.kind == "exact":  # (timed groups that never moved: exact up to the clock's resolution)
            v = verdict_of(self.d - self.res, self.d + self.res, band)
            return (0.0, v) if v != "~" else (1.0, "~")
        # a job ratio clears the band only by more than the clock's resolution (res = 0: as before)
        up, down = band + self.res, band - self.res
        if self.kind == "sign":
            j, x = self.n, self.logs
            cands = {"faster": int((x > up).sum()), "slower": int((x < -up).sum()),
                     "same": min(int((x > -down).sum()), int((x < down).sum())) if down > 0 else 0}
            out = (1.0, "~")
            for v, n_ok in cands.items():
                k = j + 1 - n_ok  # the widest interval whose ends clear the band
                if 1 <= k <= (j + 1) // 2 and (v != "same" or x[k - 1] > -down and x[j - k] < down):
                    p = _two_sided_tail(j, k)
                    if p < out[0]:
                        out = (p, v)
            return out
        if self.kind == "csign":  # the interval clears a band when every theta on its wrong side is rejected
            ps = {"faster": self._csign_p(-math.inf, up), "slower": self._csign_p(-up, math.inf),
                  "same": max(self._csign_p(-math.inf, -down), self._csign_p(down, math.inf)) if down > 0 else 1.0}
            v = min(ps, key=ps.get)
            return (float(ps[v]), v) if ps[v] < 1.0 else (1.0, "~")
        if self.kind == "t" and self.se > 0 and math.isfinite(self.se):
            d, se, df = self.d, self.se, self.df
            ps = {"faster": 2 * stats.t.sf((d - up) / se, df), "slower": 2 * stats.t.sf((-up - d) / se, df),
                  "same": 2 * stats.t.sf(min((d + down) / se, (down - d) / se), df) if down > 0 else 1.0}
            v = min(ps, key=ps.get)
            return min(1.0, float(ps[v])), v
        return math.nan, "withheld"

    def interval(self, gamma: float) -> Interval:
        """The (1 - gamma) interval (log scale)."""
        if self.kind == "exact":
            return Interval(self.d, self.d - self.res, self.d + self.res, 1.0, "exact", res=self.res)
        if self.kind == "sign":
            j, x = self.n, self.logs
            k = order_rank(j, gamma)
            r = self.res
            if k == 0:  # J too small: the widest interval there is, with its own (lower) level
                return Interval(self.point, float(x[0]) - r, float(x[-1]) + r, order_level(j, 1), "sign",
                                reachable=False, res=r)
            return Interval(self.point, float(x[k - 1]) - r, float(x[j - k]) + r, order_level(j, k), "sign", res=r)
        if self.kind == "csign":
            j, r = self.n, self.res
            if order_rank(j, gamma) == 0:  # J too small: [min, max] of every copy pair, at least 1 - 2^(1-J)
                allv = np.concatenate(self.copies)
                return Interval(self.d, float(allv.min()) - r, float(allv.max()) + r, order_level(j, 1), "csign",
                                reachable=False, res=r)
            lo, hi = clustered_interval(self.copies, gamma)
            return Interval(self.d, min(lo, self.d) - r, max(hi, self.d) + r, 1.0 - gamma, "csign", res=r)
        if self.kind == "t" and math.isfinite(self.se) and math.isfinite(self.df):
            h = float(stats.t.ppf(1.0 - gamma / 2.0, self.df)) * self.se + self.res
            return Interval(self.d, self.d - h, self.d + h, 1.0 - gamma, "t", res=self.res)
        return Interval(self.point, math.nan, math.nan, math.nan, "refuse", reachable=False)


def read_verdict(ev: Evidence, gamma: float, band: float) -> tuple[Interval, str]:
    """The evidence's (1 - gamma) interval and the verdict read off it: withheld where the evidence
    refuses an interval or its J cannot reach the level."""
    iv = ev.interval(gamma)
    if ev.kind == "refuse" or not iv.reachable:
        return iv, "withheld"
    return iv, verdict_of(iv.lo, iv.hi, band)
