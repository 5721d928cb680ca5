"""Groups = (metric, scheme, op, variant): their spin medians by job, and their descriptive statistics."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from ..stats.bootstrap import Sample
from ..stats.carryover import levels_test, position0_test
from ..stats.interval import order_level, order_rank
from .layout import layout_component
from ..stats.pooled import JobSummary, job_summary
from ..stats.significance import holm
from ..stats.power import icc1, variance_components
from .. import metrics as metrics_registry
from ..run.sizing import MIN_CLOCK_STEPS

UNITS = {"ticks": "ticks/call", "instructions": "instructions/call"}


EXACT_METRICS = metrics_registry.exact_names()  # counted, not timed: the same binary gives the same count


GroupKey = tuple[str, str, str, str, str]  # metric, scheme, op, variant, compiler


@dataclass
class Group:
    metric: str
    scheme: str
    op: str
    variant: str
    compiler: str
    values: np.ndarray  # spin medians, job-major, spin order within a job
    job: np.ndarray  # job code 0..J-1 per value
    spin: np.ndarray
    job_ids: list[str]
    n_reps: int
    pos: np.ndarray | None = None  # position in the spin's variant order (paired design)
    layout: np.ndarray | None = None  # the laid-out copy each spin timed (-1: fixed layout; run/layouts.py)
    prev: np.ndarray | None = None  # the build that ran just before in the spin: its label, "" = first
    sample: Sample = field(init=False)
    job_medians: np.ndarray = field(init=False)
    deterministic: bool = field(init=False)
    positive: bool = field(init=False)
    nonpositive: int = field(init=False)  # spin medians <= 0 (kept: rank statistics place them low)
    resolution: float = 0.0  # the per-call lattice step: the clock's step / calls per sample (largest over jobs)
    boot_naive: np.ndarray | None = None
    boot_hier: np.ndarray | None = None
    job_counts: np.ndarray | None = None  # stage-1 draws shared by the median and δ bootstraps
    _median: float | None = None
    _summary: JobSummary | None = None
    _copy_logs: list | None = None

    def __post_init__(self) -> None:
        self.sample = Sample.from_jobs(self.values, self.job)
        # Exact counters only, and only when the data agree (kem_keypair draws fresh randomness);
        # identical tick values are quantization, not exactness, and keep their bootstrap.
        self.deterministic = self.metric in EXACT_METRICS and bool(np.ptp(self.values) == 0)
        # A spin median <= 0 (a short op under load, after the null's subtraction) is a low reading, not
        # a broken one: dropping it would bias the group up. Rank statistics (medians, order statistics)
        # keep it as it is; log-scale statistics see it at the floor (log_values). Ratios need every job
        # median > 0: only then is the group `positive`.
        self.nonpositive = int(np.count_nonzero(self.values <= 0))
        if self.laid_out and not self.nonpositive and self.values.size:
            # a job's value is the median of its copies' medians (two copies: their geometric mean): each
            # layout weighs alike, however its spins fell (a median of the pooled spins would sit in the
            # gap between copies)
            self.job_medians = np.exp(self.summary.log_median)
        else:
            self.job_medians = per_job_medians(self.values, self.job, len(self.job_ids))
        self.positive = bool(self.values.size and self.job_medians.min() > 0)

    @property
    def laid_out(self) -> bool:
        """Spins of more than one laid-out copy in some job (layout = random, copies > 1)."""
        return self.layout is not None and self.layout.size > 0 and self.layout.max() >= 1

    @property
    def key(self) -> GroupKey:
        return (self.metric, self.scheme, self.op, self.variant, self.compiler)

    @property
    def n_jobs(self) -> int:
        return len(self.job_ids)

    def copy_logs(self) -> list[np.ndarray] | None:
        """Per job (job order): its laid-out copies' log medians, by copy index; None unless laid out
        and positive."""
        if not (self.laid_out and not self.nonpositive and self.values.size):
            return None
        if self._copy_logs is None:
            from ..stats.pooled import copy_medians
            self._copy_logs = [m for m, _, _ in copy_medians(np.log(self.values), self.job, np.asarray(self.layout))]
        return self._copy_logs

    def copy_index(self) -> list[np.ndarray] | None:
        """Per job: the copy index of each entry of copy_logs()."""
        if not (self.laid_out and not self.nonpositive and self.values.size):
            return None
        lay = np.asarray(self.layout)
        return [np.unique(lay[self.job == j]) for j in np.unique(self.job)]

    @property
    def median(self) -> float:
        """The group's estimate: the typical layout, the median of its copies' medians over jobs and
        copies, each job weighing alike (on the log scale; a tie at half: the geometric mean of the two);
        without layouts the median over jobs of the job medians; as the comparisons' estimand."""
        if self._median is None and self.copy_logs() is not None:
            from ..stats.interval import weighted_median
            self._median = math.exp(weighted_median(self.copy_logs()))
        if self._median is None:
            jm = np.sort(self.job_medians)
            n = jm.size
            a, b = float(jm[(n - 1) // 2]), float(jm[n // 2])
            # the middle value itself (no log round trip: exact counts stay exact)
            self._median = a if a == b else (math.sqrt(a * b) if self.positive else 0.5 * (a + b))
        return self._median

    @property
    def log_values(self) -> np.ndarray:
        """log of the spin medians, those <= 0 at half the smallest positive one: a monotone map, so
        every rank statistic (and the median of a job whose median is > 0) is unchanged."""
        if not self.nonpositive:
            return np.log(self.values)
        pos = self.values[self.values > 0]
        floor = 0.5 * float(pos.min()) if pos.size else 1.0
        return np.log(np.where(self.values > 0, self.values, floor))

    @property
    def summary(self) -> JobSummary:
        """Log job medians, their within-job sampling variances and whether all spins are identical:
        what the job-level tests consume (positive groups only)."""
        if self._summary is None:
            if self.laid_out and not self.nonpositive:
                s = job_summary(self.values, self.job, self.layout)
            else:
                s = job_summary(np.exp(self.log_values) if self.nonpositive else self.values, self.job)
                if self.nonpositive:  # the job medians themselves, not those of the floored values
                    s = dataclasses.replace(s, log_median=np.log(self.job_medians))
            self._summary = s
        return self._summary

    @property
    def resolution_rel(self) -> float:
        """The lattice step relative to the group's median (0: exact, or no step known)."""
        m = self.median
        return self.resolution / abs(m) if self.resolution > 0 and m != 0 else 0.0


def without_jobs(group: Group, drop: set[str] | frozenset[str]) -> Group | None:
    """The group as if the jobs in `drop` had not run (None when none of its jobs remains): the same
    spins of every other job, its resolution kept (a job's clock step is its own; the largest stays)."""
    keep = np.array([j not in drop for j in group.job_ids], dtype=bool)
    if keep.all():
        return group
    if not keep.any():
        return None
    rows = keep[group.job]
    code = np.cumsum(keep) - 1  # old job code -> new
    cut = {f: getattr(group, f)[rows] for f in ("pos", "layout", "prev") if getattr(group, f) is not None}
    return Group(metric=group.metric, scheme=group.scheme, op=group.op, variant=group.variant, compiler=group.compiler,
                 values=group.values[rows], job=code[group.job[rows]], spin=group.spin[rows],
                 job_ids=[j for j, k in zip(group.job_ids, keep) if k], n_reps=group.n_reps,
                 resolution=group.resolution, **cut)


def build_groups(spins: pd.DataFrame) -> dict[GroupKey, Group]:
    """Split the spin-median table into groups, values job-major and in spin order within a job."""
    cols = ["metric", "scheme", "op", "variant", "compiler"]
    cat = {c: spins[c] if isinstance(spins[c].dtype, pd.CategoricalDtype) else spins[c].astype("category")
           for c in (*cols, "job")}
    codes = [cat[c].cat.codes.to_numpy().astype(np.int64) for c in cols]
    cats = [list(map(str, cat[c].cat.categories)) for c in cols]
    jcat = pd.Categorical(cat["job"])
    job_names = list(map(str, jcat.categories))
    job_index = spins["job_index"].to_numpy(dtype=np.int64)
    spin = spins["spin"].to_numpy(dtype=np.int64)
    gkey = np.ravel_multi_index(codes, [max(len(c), 1) for c in cats])
    order = np.lexsort((spin, jcat.codes, job_index, gkey))
    gkey_s = gkey[order]
    starts = np.flatnonzero(np.r_[True, gkey_s[1:] != gkey_s[:-1]])
    ends = np.r_[starts[1:], gkey_s.size]
    values = spins["value"].to_numpy(dtype=np.float64)[order]
    jobs_s = jcat.codes.astype(np.int64)[order]
    spin_s, reps_s = spin[order], spins["n_reps"].to_numpy()[order]
    pos_s = spins["pos"].to_numpy()[order] if "pos" in spins.columns else np.zeros(order.size, np.int16)
    lay_s = spins["layout"].to_numpy()[order] if "layout" in spins.columns else np.full(order.size, -1, np.int16)
    prev_s = predecessors(spins, codes, cats)[order]
    out: dict[GroupKey, Group] = {}
    for a, b in zip(starts, ends):
        idx = np.unravel_index(gkey_s[a], [max(len(c), 1) for c in cats])
        key = tuple(str(cats[i][idx[i]]) for i in range(5))
        jc = jobs_s[a:b]
        bounds = np.flatnonzero(np.r_[True, jc[1:] != jc[:-1]])
        job_codes = jc[bounds]
        local = np.cumsum(np.r_[0, (jc[1:] != jc[:-1]).astype(np.int64)])
        out[key] = Group(
            metric=key[0], scheme=key[1], op=key[2], variant=key[3], compiler=key[4],
            values=values[a:b], job=local, spin=spin_s[a:b],
            job_ids=[job_names[c] for c in job_codes],
            n_reps=int(np.median(reps_s[a:b])), pos=pos_s[a:b], prev=prev_s[a:b], layout=lay_s[a:b],
        )
    return out


def predecessors(spins: pd.DataFrame, codes: list[np.ndarray], cats: list[list[str]]) -> np.ndarray:
    """For each spin row, the build ("variant/compiler") that ran just before the same op in the same
    job: the previous position of its spin, or for the first position the last build of the previous
    spin (the driver runs the spins of an op back to back, shuffling the order every spin). "" when
    unknown: the first measured spin (its predecessor ran in a warm-up spin, not kept) or a missing row.
    Positions are read across metrics, so a metric that lost a row (a counter read failed) still
    gets its neighbours right."""
    n = len(spins)
    if "pos" not in spins.columns or n == 0:
        return np.full(n, "", dtype=object)
    _metric, scheme, op, variant, compiler = codes
    n_comp = max(len(cats[4]), 1)
    t = pd.DataFrame({"job": pd.Categorical(spins["job"]).codes.astype(np.int64), "scheme": scheme, "op": op,
                      "spin": spins["spin"].to_numpy(dtype=np.int64), "pos": spins["pos"].to_numpy(dtype=np.int64),
                      "build": variant * n_comp + compiler})
    at = t.drop_duplicates(["job", "scheme", "op", "spin", "pos"])
    last = t.groupby(["job", "scheme", "op"], sort=False)["pos"].transform("max").to_numpy()
    first = t["pos"].to_numpy() == 0
    want = t[["job", "scheme", "op"]].assign(spin=np.where(first, t["spin"] - 1, t["spin"]),
                                              pos=np.where(first, last, t["pos"] - 1))
    found = want.merge(at, on=["job", "scheme", "op", "spin", "pos"], how="left", sort=False)["build"].to_numpy()
    label = np.array([f"{v}/{c}" for v in cats[3] for c in cats[4]] or [""], dtype=object)
    ok = np.isfinite(found)
    out = np.full(n, "", dtype=object)
    out[ok] = label[found[ok].astype(np.int64)]
    return out


def carryover(group: Group, min_per_level: int = 3) -> tuple[float, float, str]:
    """Does the build that ran just before change this group's spin medians? Kruskal-Wallis of the
    log spin medians across predecessors, stratified by position: each (job, position in the spin)
    is centred on its own, and only positions >= 1 where two or more predecessors occur are
    compared. Position 0 follows the end of the previous spin, where the driver also wrote its
    results: a first-position effect that is not the previous build's; pooled with the rest, it
    would be read as carry-over from whichever build ran last (the group itself, in a spin after its
    own). With two builds position 1 always follows the other one, so position 0 alone is compared
    (the group after itself or after the other). The first-position effect is tested on its own
    (position0). Levels with fewer than `min_per_level` spins are left out; when that leaves
    fewer than two, the predecessors are pooled by variant across compilers. A cell is centred on
    the mean of its levels' medians, which a level holding most of its spins cannot drag along; what
    is left is what the previous build left behind (caches, predictors, frequency) that the warm-up
    did not wash out.

    Returns (p, shift, after): the level whose median differs most from the other levels' pooled
    median, as a relative change (+0.25 = 25% slower after it), and its label; p is nan when there
    are fewer than two levels (the separate design, or a single variant)."""
    nan = float("nan")
    if group.prev is None or group.deterministic or not group.positive:
        return nan, nan, ""
    strata = np.asarray(group.pos, dtype=np.int64) if group.pos is not None else None
    return levels_test(group.log_values, group.prev.astype(str), strata, group.job, min_per_level)


def position0(group: Group, min_per_level: int = 3) -> tuple[float, float]:
    """Is the group slower or faster when it runs first in its spin (right after the driver wrote the
    previous spin's results) than at positions >= 1? Kruskal-Wallis (two levels) of the job-centred
    log spin medians, as carryover. Returns (p, shift: relative change at position 0); nan when the
    group has no positions (the separate design) or fewer than `min_per_level` spins on a side."""
    nan = float("nan")
    if group.pos is None or group.deterministic or not group.positive:
        return nan, nan
    return position0_test(group.log_values, np.asarray(group.pos), group.job, min_per_level)


def per_job_medians(values: np.ndarray, job: np.ndarray, n_jobs: int) -> np.ndarray:
    """Median of values per job code (job-major, contiguous jobs)."""
    sizes = np.bincount(job, minlength=n_jobs)
    if sizes.size and np.all(sizes == sizes[0]):
        return np.median(values.reshape(n_jobs, sizes[0]), axis=1)
    return np.array([np.median(values[job == j]) for j in range(n_jobs)])


def short_samples(spins: pd.DataFrame, jobs: pd.DataFrame, groups_df: pd.DataFrame,
                  min_steps: int = MIN_CLOCK_STEPS, slack: float = 0.5) -> pd.Series:
    """Per group (rows of groups_df): how many of its jobs time samples shorter than `min_steps`
    clock steps (the budget could not afford more calls per sample, or a fixed --batch): one step is
    then more than 1/min_steps of a sample, and the group's resolution (its lattice step) is coarser
    than the harness aims for. A job's sample length is the raw reading the driver's auto-batch aim
    is checked on, (spin median + call overhead) x batch + read overhead; the step is the smallest
    measured on that CPU model in the study, with `slack`: a probe on a loaded machine can read an op
    slower than its jobs do, so a batch sized on it is flagged only below half the aim. Ticks only; 0 where the calibration is unknown (old raw files)."""
    out = pd.Series(0, index=groups_df.index, dtype=np.int64)
    need = {"granularity", "overhead", "call_overhead", "cpu_model"}
    if not len(groups_df) or "batch" not in spins or not need <= set(jobs.columns):
        return out
    t = spins[spins["metric"] == metrics_registry.TIME]
    if not len(t):
        return out
    keys = ["metric", "scheme", "op", "variant", "compiler", "job"]
    j = jobs.drop_duplicates("job").set_index("job")
    step = clock_steps(jobs).groupby(j["cpu_model"]).transform("min")
    # per job (categorical codes, not strings: 10 M rows), its calibration's costs and step
    jcat = pd.Categorical(t["job"])
    names = pd.Index(jcat.categories.astype(str))
    codes = jcat.codes

    def per(series: pd.Series) -> np.ndarray:
        return np.nan_to_num(series.reindex(names).to_numpy(dtype=float))[codes]

    raw = (t["value"].to_numpy(dtype=float) + per(j["call_overhead"])) * t["batch"].to_numpy(dtype=float) \
        + per(j["overhead"])
    steps = raw / per(step.replace(0, np.nan))
    frame = t[keys[:-1]].assign(job=codes, steps=steps)
    med = frame.groupby([*keys[:-1], "job"], observed=True, sort=False)["steps"].median()
    med = med[np.isfinite(med)]
    short = med[med < slack * min_steps].groupby(level=list(range(5)), observed=True).size()
    if not len(short):
        return out
    short.index = short.index.map(lambda k: tuple(str(x) for x in k))
    idx = pd.MultiIndex.from_frame(groups_df[keys[:-1]].astype(str))
    return pd.Series(short.reindex(idx).fillna(0).astype(np.int64).to_numpy(), index=groups_df.index)


def flag_carryover(groups_df: pd.DataFrame, alpha: float, threshold: float, test: str = "carryover") -> pd.Series:
    """<test> (carryover, or position0) = Holm-adjusted Kruskal-Wallis p (over the groups tested) <
    alpha and the shift (the worst predecessor's, or position 0's) is more than threshold:
    significant and material. Writes <test>_p_holm."""
    p = groups_df[f"{test}_p"].to_numpy(dtype=float)
    tested = np.isfinite(p)
    adj = np.full(p.shape, np.nan)
    if tested.any():
        adj[tested] = holm(p[tested])
    groups_df[f"{test}_p_holm"] = adj
    shift = groups_df[f"{test}_shift"].to_numpy(dtype=float)
    return pd.Series(tested & (np.nan_to_num(adj, nan=1.0) < alpha) & (np.abs(np.nan_to_num(shift)) > threshold),
                     index=groups_df.index)


def median_interval(group: Group, alpha: float) -> tuple[float, float, float]:
    """The group median's distribution-free interval: order statistics of the job medians at the
    widest level <= 1 - alpha that J reaches (or [min, max] with its own lower level), each end
    moved out by the group's lattice step (no interval more certain than the clock)."""
    if group.deterministic:
        return group.median, group.median, 1.0
    cl = group.copy_logs()
    if cl is not None and order_rank(len(cl), alpha) > 0:  # laid out: the clustered sign interval
        from ..stats.interval import clustered_interval
        lo, hi = clustered_interval(cl, alpha)
        r = group.resolution
        return math.exp(lo) - r, math.exp(hi) + r, 1.0 - alpha
    jm = np.sort(group.job_medians)
    k = order_rank(jm.size, alpha)
    r = group.resolution
    if k == 0:
        return float(jm[0]) - r, float(jm[-1]) + r, order_level(jm.size, 1)
    return float(jm[k - 1]) - r, float(jm[jm.size - k]) + r, order_level(jm.size, k)


def clock_steps(jobs: pd.DataFrame) -> pd.Series:
    """Each job's clock step (load._steps: its samples' lattice, else its calibration's; 1 if unknown)."""
    j = jobs.drop_duplicates("job").set_index("job")
    step = j["step"] if "step" in j.columns else pd.Series(np.nan, index=j.index)
    return step.where(step > 0).fillna(1.0).astype(float)


def attach_resolution(groups: dict[GroupKey, Group], spins: pd.DataFrame, jobs: pd.DataFrame) -> None:
    """Each group's resolution: the largest per-call lattice step over its spins, step / batch (a
    sample of k calls reads whole clock steps). Ticks: the job's measured step; a perf counter
    counts in ones; exact counts have none."""
    if not groups or "batch" not in spins.columns or not len(spins):
        return
    keys = ["metric", "scheme", "op", "variant", "compiler"]
    step = clock_steps(jobs) if len(jobs) and "job" in jobs.columns else pd.Series(dtype=float)
    jcat = pd.Categorical(spins["job"])
    per_job = step.reindex(pd.Index(jcat.categories.astype(str))).fillna(1.0).to_numpy(dtype=float)
    metric = spins["metric"].astype(str).to_numpy()
    unit = np.where(metric == metrics_registry.TIME, per_job[jcat.codes], 1.0)
    unit[np.isin(metric, list(EXACT_METRICS))] = 0.0
    lattice = unit / np.maximum(spins["batch"].to_numpy(dtype=float), 1.0)
    worst = spins[keys].assign(lattice=lattice).groupby(keys, observed=True, sort=False)["lattice"].max()
    for key, value in worst.items():
        g = groups.get(tuple(str(x) for x in key))
        if g is not None and np.isfinite(value):
            g.resolution = float(value)


def describe(group: Group, alpha: float, threshold: float) -> dict:
    v = group.values
    q1, q3 = np.percentile(v, [25, 75])
    notes = []
    nan = float("nan")
    comp = dict(job_cv=nan, between_var=nan, within_sd=nan, deff=nan, n_eff=nan)
    if group.deterministic:
        out_lo = out_hi = 0
        icc = nan
        notes.append("deterministic: icc and variance components n/a")
    else:
        lv = group.log_values if group.positive else v
        l1, l3 = np.percentile(lv, [25, 75])
        iqr_l = l3 - l1
        out_lo = int(np.count_nonzero(lv < l1 - 1.5 * iqr_l))
        out_hi = int(np.count_nonzero(lv > l3 + 1.5 * iqr_l))
        icc = icc1(lv, group.job)
        if group.positive:
            # what the job-level test sees: job-to-job spread, within-job spread and how much the spins
            # of one job repeat each other (deff; with many spins n_eff tends to J / icc)
            vc = variance_components(np.exp(lv), group.job)
            comp = dict(job_cv=vc.job_cv, between_var=vc.between_var, within_sd=vc.within_sd, deff=vc.deff,
                        n_eff=vc.n_eff)
        elif metrics_registry.of(group.metric).zero_is_measured:
            notes.append(f"0 {metrics_registry.of(group.metric).unit} of {group.metric}: no ratio of "
                         f"{metrics_registry.of(group.metric).unit} against it")
        else:
            notes.append("job medians <= 0 (below timer resolution): outliers and icc on the linear scale, "
                         "no ratios, no variance components")
        if group.nonpositive and group.positive:
            notes.append(f"{group.nonpositive} spin median(s) <= 0 kept: they rank low in every median and count "
                         "at half the smallest positive one on the log scale")
        if not np.isfinite(icc):
            notes.append("icc, deff, n_eff (and job_cv, between_var) n/a: fewer than 2 jobs" if group.n_jobs < 2
                         else "icc, deff, n_eff n/a: no variation")
    co_p, co_shift, co_after = carryover(group)
    p0_p, p0_shift = position0(group)
    lo, hi, level = median_interval(group, alpha)
    return {
        "metric": group.metric,
        "scheme": group.scheme,
        "op": group.op,
        "variant": group.variant,
        "compiler": group.compiler,
        "n_jobs": group.n_jobs,
        "n_spins": int(v.size),
        "n_reps": group.n_reps,
        "median": group.median,
        "median_ci_low": lo,
        "median_ci_high": hi,
        "median_ci_level": level,
        "resolution": group.resolution,
        "resolution_rel": group.resolution_rel,
        "nonpositive_spins": group.nonpositive,
        "iqr": float(q3 - q1),
        "min": float(v.min()),
        "max": float(v.max()),
        "mad": float(np.median(np.abs(v - np.median(v)))),
        "outliers_low": out_lo,
        "outliers_high": out_hi,
        "icc": icc,
        **comp,
        **layout_component(group),
        "carryover_p": co_p,
        "carryover_shift": co_shift,
        "carryover_after": co_after,
        "position0_p": p0_p,
        "position0_shift": p0_shift,
        "deterministic": group.deterministic,
        "positive": group.positive,
        "unit": UNITS.get(group.metric, f"{group.metric}/call"),
        "note": "; ".join(notes),
    }
