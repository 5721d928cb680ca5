"""The job-level test that matches the design: two-way (job x op) pooling within a block, study-level
moderation across blocks, Welch-Satterthwaite df, zero-variance rules and refusal rules.

Conventions: timings are positive (spin medians, job medians); ``log_*`` arguments are natural logs.
speedup = base / var, so the log speedup is d = log(base) - log(var) (> 0: the variant is faster).
A *block* is one (metric, scheme, variant, compiler) of the separate design: its J jobs each ran every
op in one process, so a job's random effect (the machine's state during that process) is shared by all
O ops. A block is the (J, O) matrix of log job medians.

Why: with J = 2 jobs per group a per-group Welch test has 1-2 df, and with Holm over a study's family no
speedup reaches 80% power. The job-state variance is a property of the machine, so every block of a
metric estimates it; moderated over the blocks (moderation.py) it has ~(J - 1) x blocks df.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy import stats

from .moderation import Prior, fit_prior, posterior_var

MIN_DF = 4.0  # a comparison whose effective df is below this is withheld (see pooled_test)
MAX_OP_SHARE = 0.25  # J = 2: the op-specific share of the variance above which a comparison is withheld


def median_se(x: np.ndarray, z: float = 1.959963984540054) -> np.ndarray:
    """Standard error of the median of each row (last axis), distribution-free.

    Half the width of the order-statistic confidence interval for the median (ranks n/2 -+ z*sqrt(n)/2),
    divided by z: for a continuous density f this is 1/(2*sqrt(n)*f(median)), the asymptotic SE, and
    for quantized data it is 0 when more than about half the values sit on the median's value (the
    median then does not move). Fewer than 10 values: sqrt(pi/2)*sd/sqrt(n). One value: NaN."""
    x = np.sort(np.asarray(x, dtype=np.float64), axis=-1)
    n = x.shape[-1]
    if n < 2:
        return np.full(x.shape[:-1], np.nan)
    if n < 10:
        return np.sqrt(np.pi / 2) * x.std(axis=-1, ddof=1) / np.sqrt(n)
    k = z * math.sqrt(n) / 2.0
    lo = max(0, int(math.floor(n / 2.0 - k)))
    hi = min(n - 1, int(math.ceil(n / 2.0 + k)) - 1)
    return (x[..., hi] - x[..., lo]) / (2.0 * z)


@dataclass(frozen=True)
class JobSummary:
    """One group's per-job summaries: what every job-level function here consumes."""

    log_median: np.ndarray  # (J,) log of each job's median spin median
    within_var: np.ndarray  # (J,) sampling variance of each log job median (from its spins)
    n_spins: np.ndarray  # (J,)
    constant: bool  # every spin median of the group has the same value (zero spread in all jobs)


def job_summary(values: np.ndarray, job: np.ndarray | None = None, layout: np.ndarray | None = None) -> JobSummary:
    """Summaries of one group. ``values``: spin medians (> 0), either (J, S) or flat with ``job`` labels.
    With ``layout`` (the laid-out copy of each spin), a job's log median is the median over its copies
    of each copy's log median (with two copies their mean), and its sampling variance that of the mean."""
    if layout is not None and job is not None:
        return _laid_out_summary(np.asarray(values, dtype=np.float64), np.asarray(job), np.asarray(layout))
    v = np.asarray(values, dtype=np.float64)
    if job is None:
        if v.ndim != 2:
            raise ValueError("values must be (J, S) when no job labels are given")
        rows = [v[j] for j in range(v.shape[0])]
    else:
        job = np.asarray(job)
        if job.shape != v.shape:
            raise ValueError("job labels must match values")
        rows = [v[job == j] for j in np.unique(job)]
    if not rows or any(r.size == 0 for r in rows):
        raise ValueError("every job needs at least one spin")
    allv = np.concatenate(rows)
    if not np.all(np.isfinite(allv)) or allv.min() <= 0:
        raise ValueError("spin medians must be finite and > 0 (ratios and logs need positive values)")
    if len({r.size for r in rows}) == 1:
        a = np.stack(rows)
        med = np.median(a, axis=1)
        se = median_se(np.log(a))
    else:
        med = np.array([np.median(r) for r in rows])
        se = np.array([median_se(np.log(r)) for r in rows])
    se = np.where(np.isfinite(se), se, 0.0)  # one spin: no within-job information (counted as 0)
    return JobSummary(np.log(med), se**2, np.array([r.size for r in rows]), bool(np.ptp(allv) == 0))


def copy_medians(logv: np.ndarray, job: np.ndarray, layout: np.ndarray) -> list[tuple[np.ndarray, np.ndarray, int]]:
    """Per job (in job order): its laid-out copies' log medians, their sampling variances (median_se²,
    0 for a copy of one spin) and the job's spin count: what a job value and the layout component use."""
    out = []
    for j in np.unique(job):
        in_job = job == j
        per_copy = [logv[in_job & (layout == c)] for c in np.unique(layout[in_job])]
        meds = np.array([np.median(x) for x in per_copy])
        se = np.array([median_se(x[None, :])[0] if x.size > 1 else 0.0 for x in per_copy])
        out.append((meds, np.where(np.isfinite(se), se, 0.0) ** 2, int(in_job.sum())))
    return out


def _laid_out_summary(v: np.ndarray, job: np.ndarray, layout: np.ndarray) -> JobSummary:
    if not v.size or not np.all(np.isfinite(v)) or v.min() <= 0:
        raise ValueError("spin medians must be finite and > 0 (ratios and logs need positive values)")
    per_job = copy_medians(np.log(v), job, layout)
    # a job's value: the median of its copies' log medians (two copies: their mean, the geometric mean)
    return JobSummary(np.array([float(np.median(m)) for m, _, _ in per_job]),
                      np.array([float(se2.sum()) / m.size**2 for m, se2, _ in per_job]),
                      np.array([n for _, _, n in per_job]), bool(np.ptp(v) == 0))


@dataclass(frozen=True)
class Block:
    """Two-way (job x op) decomposition of one block's log job medians.

    Model: L[j, o] = mu_o + u_j + r_jo, u_j ~ (0, sigma_b^2) shared by the ops of job j, r_jo ~ (0,
    sigma_o^2) op-specific (incl. the within-job noise of the median). s2_shared = variance of the
    jobs' op-averaged log medians, E = sigma_b^2 + mean(sigma_o^2)/O, df J-1; s2_res[o] = residual
    (interaction) variance of op o, E ~= sigma_o^2, df (J-1)(O-1)/O each (pooled: (J-1)(O-1)).
    Then Var(L[j, o]) = sigma_b^2 + sigma_o^2 ~= s2_shared + (1 - 1/O) * s2_res[o]."""

    log_med: np.ndarray  # (J, O)
    within: np.ndarray  # (J, O) sampling variance of each log job median (0 where unknown)
    constant: np.ndarray  # (O,) bool: every spin of the op had the same value, in every job
    s2_shared: float
    df_shared: float
    s2_res: np.ndarray  # (O,)
    df_res: float  # per op
    within_known: bool = False  # within_var came from the spins (a 0 there means the median cannot move)
    n_live: int = 0  # non-constant ops the decomposition was computed on (its O; take() keeps it)

    @property
    def J(self) -> int:
        return self.log_med.shape[0]

    @property
    def O(self) -> int:
        return self.log_med.shape[1]

    @property
    def op_mean(self) -> np.ndarray:
        return self.log_med.mean(axis=0)

    def take(self, cols: Sequence[int] | np.ndarray) -> "Block":
        """The same block restricted to some ops (columns), keeping the variance components and their df
        as estimated on all its ops: a comparison of two blocks needs the ops both have, but the shared
        job-state variance is still the one of the whole block."""
        c = np.asarray(cols, dtype=np.int64)
        return Block(self.log_med[:, c], self.within[:, c], self.constant[c], self.s2_shared, self.df_shared,
                     self.s2_res[c], self.df_res, self.within_known, self.n_live)


def block_stats(log_medians: np.ndarray, within_var: np.ndarray | None = None,
                constant: np.ndarray | None = None) -> Block:
    """The Block of a (J, O) array of log job medians (rows: jobs, columns: ops, the same ops for every job).

    ``within_var``: (J, O) sampling variances of the log job medians (JobSummary.within_var), used as a
    floor; ``constant``: (O,) ops whose spins were all identical (JobSummary.constant). Constant ops
    are left out of the decomposition (they carry no job effect)."""
    L = np.asarray(log_medians, dtype=np.float64)
    if L.ndim == 1:
        L = L[:, None]
    if L.ndim != 2 or L.size == 0:
        raise ValueError("log_medians must be a non-empty (J, O) array")
    if not np.all(np.isfinite(L)):
        raise ValueError("log_medians must be finite (drop missing ops before building a block)")
    J, O = L.shape
    W = np.zeros_like(L) if within_var is None else np.broadcast_to(np.asarray(within_var, float), L.shape).copy()
    C = np.zeros(O, dtype=bool) if constant is None else np.broadcast_to(np.asarray(constant, bool), (O,)).copy()
    known = within_var is not None
    live = ~C
    Ol = int(live.sum())
    s2_res = np.full(O, np.nan)
    if J < 2 or Ol == 0:
        return Block(L, W, C, float("nan"), 0.0, s2_res, 0.0, known, Ol)
    X = L[:, live]
    tol = (64 * np.finfo(float).eps * max(1.0, float(np.abs(X).max()))) ** 2  # rounding, not spread
    row = X.mean(axis=1)
    s2_shared = float(np.var(row, ddof=1))
    s2_shared = 0.0 if s2_shared < tol else s2_shared
    df_res = 0.0
    if Ol >= 2:
        E = X - row[:, None] - X.mean(axis=0)[None, :] + X.mean()
        r = Ol / (Ol - 1.0) * (E**2).sum(axis=0) / (J - 1.0)
        s2_res[live] = np.where(r < tol, 0.0, r)
        df_res = (J - 1.0) * (Ol - 1.0) / Ol
    return Block(L, W, C, s2_shared, J - 1.0, s2_res, df_res, known, Ol)


@dataclass(frozen=True)
class Priors:
    shared: Prior
    res: Prior


def fit_priors(blocks: Sequence[Block], *, method: str = "ml", robust: bool = True) -> Priors:
    """Study-level priors: of the shared (job-state) variance over all blocks of one metric, and of the
    op-specific residual variance over all (block, op) cells. The blocks should come from one machine
    (the same kind of job-state noise)."""
    sh = np.array([b.s2_shared for b in blocks], dtype=float)
    dsh = np.array([b.df_shared for b in blocks], dtype=float)
    res = np.concatenate([b.s2_res for b in blocks]) if blocks else np.array([])
    dres = np.concatenate([np.full(b.O, b.df_res) for b in blocks]) if blocks else np.array([])
    return Priors(fit_prior(sh, dsh, method=method, robust=robust), fit_prior(res, dres, method=method, robust=robust))


@dataclass
class JobTests:
    """Job-level tests of one or more comparisons (arrays, one entry per op)."""

    log_speedup: np.ndarray
    se: np.ndarray
    df: np.ndarray
    t: np.ndarray
    p: np.ndarray  # two-sided; NaN for exact and refused rows
    ci_low: np.ndarray  # (1 - alpha) interval of the speedup (ratio scale)
    ci_high: np.ndarray
    method: np.ndarray  # 'pooled' | 'welch' | 'exact' | 'refuse'
    reason: np.ndarray  # why, for 'exact' and 'refuse' ('' otherwise)
    alpha: float = 0.05
    var_base: np.ndarray | None = None  # Var(one job's log median) per op, base group (a + c; for the MDE)
    var_var: np.ndarray | None = None  # the same for the variant group

    @property
    def speedup(self) -> np.ndarray:
        return np.exp(self.log_speedup)

    def __len__(self) -> int:
        return int(self.log_speedup.size)


def _group_var(b: Block, priors: Priors | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per op: (a, df_a, c, df_c, floor_used) with Var(one job's log median) = a + c: a shared
    component, c the op-specific one (each with its df); the within-job floor replaces a + c (same df)."""
    O = b.O
    ps = priors.shared if priors else Prior.none()
    pr = priors.res if priors else Prior.none()
    a, da = posterior_var(np.array([b.s2_shared]), np.array([b.df_shared]), ps)
    a = np.full(O, float(a[0]))
    da = np.full(O, float(da[0]))
    if b.df_res > 0 or (pr.df > 0 and np.isfinite(pr.s2)):
        c, dc = posterior_var(b.s2_res, np.full(O, b.df_res), pr)
        live = np.isfinite(b.s2_res)
        c = np.where(live, (1.0 - 1.0 / max(b.n_live, 1)) * c, 0.0)
        dc = np.where(live, dc, np.inf)
    else:  # one op (or J < 2): the shared component is the whole between-job variance
        c, dc = np.zeros(O), np.full(O, np.inf)
    floor = b.within.mean(axis=0)
    use_floor = np.isfinite(a + c) & (a + c < floor)
    a = np.where(use_floor, floor, a)
    # the floor is a lower bound, not a known variance: it keeps the estimate's df (a df of inf here
    # made 2-job paired tests anti-conservative whenever 1 df happened to fall below the floor)
    c = np.where(use_floor, 0.0, c)
    a = np.where(b.constant, 0.0, a)
    c = np.where(b.constant, 0.0, c)
    return a, da, c, dc, use_floor


def pooled_test(base: Block, var: Block, priors: Priors | None = None, *, alpha: float = 0.05,
                min_df: float = MIN_DF, max_op_share: float = MAX_OP_SHARE, resolution: float = 0.0) -> JobTests:
    """Job-level test of var vs base for every op (same op order in both blocks).

    d_o = mean_j base[j, o] - mean_j var[j, o]; Var(d_o) = (a_B + c_B,o)/J_B + (a_V + c_V,o)/J_V with
    a = moderated shared (job-state) variance, c = (1 - 1/O) x moderated op-specific variance (see
    Block), floored by the within-job sampling variance of the job medians; df by Welch-Satterthwaite
    over the four components (each with its posterior df). t-test two-sided, CI exp(d -+ t_{1-a/2,df} se).
    Without priors (or with O = 1) this is the Welch test on log job medians.

    Zero variance: an op whose spins are all identical in both blocks (``constant``) gets
    method 'exact': the exact ratio, zero-width CI (or +-resolution/2 on each median when a timer
    resolution is given), p NaN (not part of a multiple-testing family). So does an op whose job
    medians are identical across jobs in both groups when the spins show that the medians cannot move
    (within_var known and 0: quantized ticks with most values on the median). If only some components
    are zero the test uses the others (a constant group contributes se 0); the between-job variance
    is floored by the within-job sampling variance of the job medians. se 0 with nothing known about
    the spins: 'refuse'.

    Withheld (the refusal rule), with the reason in ``reason``:
      R1  a group has < 2 jobs (and is not constant): no between-job variance at all;
      R2  effective df < min_df (4): the variance estimate is too uncertain for a t interval to mean much
          (e.g. J = 2 and the study-level prior is uninformative, or the block is an outlier: a job in
          a 2x machine state, which keeps its own 1 df);
      R3  a group has J = 2 (op-specific residual df (J-1)(O-1)/O < 1.5 per op) and the op-specific
          part of Var(d_o) exceeds max_op_share (25%): with one df per op, job effects that are not
          shared across ops cannot be estimated per op, and pooling them across ops (whose sensitivity
          differs by orders of magnitude) under-covers (simulated: 93% coverage, 9% A/A family error).
          With J = 2 the pooled test is used only when the shared job-state variance (pooled over the
          ops of a job, moderated over the study's blocks) carries the comparison."""
    if base.O != var.O:
        raise ValueError("base and var must have the same ops")
    O = base.O
    d = base.op_mean - var.op_mean
    n_b, n_v = base.J, var.J
    ab, dab, cb, dcb, _ = _group_var(base, priors)
    av, dav, cv, dcv, _ = _group_var(var, priors)
    if priors is None:  # Welch: four independent components
        comps = np.stack([ab / n_b, cb / n_b, av / n_v, cv / n_v])
        dfs = np.stack([dab, dcb, dav, dcv])
    else:  # both groups' moderated variances lean on the same priors: not independent, so each
        # kind (shared, op-specific) is one component with the smaller df of its two parts (conservative)
        def mind(x1, d1, x2, d2):
            return np.minimum(np.where(x1 > 0, d1, np.inf), np.where(x2 > 0, d2, np.inf))
        comps = np.stack([ab / n_b + av / n_v, cb / n_b + cv / n_v])
        dfs = np.stack([mind(ab, dab, av, dav), mind(cb, dcb, cv, dcv)])
    se2 = comps.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        den = np.where(comps > 0, comps**2 / dfs, 0.0).sum(axis=0)
        df = np.where(den > 0, se2**2 / den, np.inf)
    se = np.sqrt(se2)
    with np.errstate(invalid="ignore", divide="ignore"):
        op_share = np.where(se2 > 0, (cb / n_b + cv / n_v) / se2, 0.0)
    thin = [b.df_res < 1.5 and b.n_live > 1 for b in (base, var)]
    r3 = (thin[0] | thin[1]) & (op_share > max_op_share)
    method = np.full(O, "welch" if priors is None else "pooled", dtype=object)
    reason = np.full(O, "", dtype=object)
    exact = base.constant & var.constant
    few = ((n_b < 2) & ~base.constant) | ((n_v < 2) & ~var.constant)
    bad = ~np.isfinite(se2) | few
    # job medians identical within each group and, by the spins, pinned (median se 0, e.g. quantized
    # ticks): as exact as constant groups
    # (a constant group, like the paired test's zero group, cannot move either)
    pinned = (~bad & ~exact & (se2 == 0) & (base.within_known | base.constant)
              & (var.within_known | var.constant))
    lowdf = ~bad & ~exact & ~pinned & (df < min_df)
    nospread = ~bad & ~exact & ~pinned & (se2 == 0)
    method[exact] = "exact"
    reason[exact] = "both groups constant (no spread in any job): exact ratio"
    method[pinned] = "exact"
    reason[pinned] = "job medians identical in every job of both groups and pinned by their spins (median se 0): exact ratio"
    exact = exact | pinned
    for m, why in ((few, "a group has fewer than 2 jobs: no between-job variance"),
                   (bad & ~few, "between-job variance not estimable"),
                   (nospread, "no spread in job medians and no within-job information: test undefined")):
        m = m & ~exact
        method[m] = "refuse"
        reason[m] = why
    for o in np.flatnonzero(lowdf & ~nospread):
        method[o] = "refuse"
        reason[o] = (f"effective df {df[o]:.1f} < {min_df:g}: between-job variance too uncertain "
                     f"(J = {n_b}/{n_v}; uninformative prior or an outlying block, e.g. a job in another machine state)")
    for o in np.flatnonzero(r3 & ~bad & ~exact & ~nospread & ~lowdf):
        method[o] = "refuse"
        reason[o] = (f"J = {min(n_b, n_v)}: {op_share[o]:.0%} of the variance is op-specific (job effects not "
                     f"shared across ops), which 1 df per op cannot estimate; run >= 3 jobs (5+ recommended)")
    live = (method == "welch") | (method == "pooled")
    t = np.full(O, np.nan)
    p = np.full(O, np.nan)
    lo = np.full(O, np.nan)
    hi = np.full(O, np.nan)
    if live.any():
        t[live] = d[live] / se[live]
        p[live] = 2.0 * stats.t.sf(np.abs(t[live]), df[live])
        q = stats.t.ppf(1.0 - alpha / 2.0, df[live])
        lo[live] = np.exp(d[live] - q * se[live])
        hi[live] = np.exp(d[live] + q * se[live])
    if exact.any():
        mb, mv = np.exp(base.op_mean[exact]), np.exp(var.op_mean[exact])
        h = resolution / 2.0
        lo[exact] = (mb - h) / (mv + h)
        hi[exact] = np.where(mv - h > 0, (mb + h) / np.maximum(mv - h, 1e-300), np.inf)
        se[exact] = 0.0
        df[exact] = np.inf
    wh = method == "refuse"
    df = np.where(wh, np.where(np.isfinite(df), df, np.nan), df)
    return JobTests(d, se, df, t, p, lo, hi, method, reason, alpha, ab + cb, av + cv)


def job_test(base: JobSummary | np.ndarray, var: JobSummary | np.ndarray, *, alpha: float = 0.05,
             min_df: float = 1.0, resolution: float = 0.0) -> JobTests:
    """Per-group job-level test of one comparison: Welch's t on log job medians (as pqsimd's job_test),
    with the zero-variance rules of pooled_test. Inputs: JobSummary, or arrays of (positive) job medians
    (then nothing is known about within-job spread). min_df defaults to 1 (plain Welch)."""
    def blk(g):
        if isinstance(g, JobSummary):
            return block_stats(g.log_median[:, None], g.within_var[:, None], np.array([g.constant]))
        x = np.asarray(g, dtype=np.float64)
        if x.size == 0 or np.any(x <= 0) or not np.all(np.isfinite(x)):
            raise ValueError("job medians must be finite and > 0")
        return block_stats(np.log(x)[:, None])
    return pooled_test(blk(base), blk(var), None, alpha=alpha, min_df=min_df, resolution=resolution)
