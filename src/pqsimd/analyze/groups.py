"""Groups = (metric, scheme, op, variant): their spin medians by job, and their descriptive statistics."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from .bootstrap import Sample

DETERMINISTIC_METRICS = ("instructions",)
UNITS = {"ticks": "ticks/call", "instructions": "instructions/call"}
NOISY_ALPHA = 0.01  # level of the leave-one-out outlying-job test (Bonferroni over the jobs of a group)


@dataclass
class Group:
    metric: str
    scheme: str
    op: str
    variant: str
    values: np.ndarray  # spin medians, job-major, spin order within a job
    job: np.ndarray  # job code 0..J-1 per value
    spin: np.ndarray
    job_ids: list[str]
    n_reps: int
    sample: Sample = field(init=False)
    job_medians: np.ndarray = field(init=False)
    deterministic: bool = field(init=False)
    boot_naive: np.ndarray | None = None
    boot_hier: np.ndarray | None = None
    job_counts: np.ndarray | None = None  # stage-1 draws shared by the median and δ bootstraps

    def __post_init__(self) -> None:
        self.sample = Sample.from_jobs(self.values, self.job)
        self.job_medians = np.array([np.median(self.values[self.job == j]) for j in range(len(self.job_ids))])
        self.deterministic = self.metric in DETERMINISTIC_METRICS or bool(np.ptp(self.values) == 0)

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.metric, self.scheme, self.op, self.variant)

    @property
    def n_jobs(self) -> int:
        return len(self.job_ids)

    @property
    def median(self) -> float:
        return float(np.median(self.values))


def build_groups(spins: pd.DataFrame) -> dict[tuple[str, str, str, str], Group]:
    """Split the spin-median table into groups (rows already one per job × spin)."""
    df = spins.sort_values(["metric", "scheme", "op", "variant", "job_index", "job", "spin"], kind="stable")
    out: dict[tuple[str, str, str, str], Group] = {}
    for (metric, scheme, op, variant), g in df.groupby(["metric", "scheme", "op", "variant"], sort=False, observed=True):
        jobs = g["job"].to_numpy()
        job_ids, first = np.unique(jobs, return_index=True)
        job_ids = list(job_ids[np.argsort(first)])  # in job_index order
        code = {j: i for i, j in enumerate(job_ids)}
        out[(metric, scheme, op, variant)] = Group(
            metric=metric, scheme=scheme, op=op, variant=variant,
            values=g["value"].to_numpy(dtype=np.float64),
            job=np.fromiter((code[j] for j in jobs), dtype=np.int64, count=len(jobs)),
            spin=g["spin"].to_numpy(dtype=np.int64),
            job_ids=job_ids,
            n_reps=int(np.median(g["n_reps"].to_numpy())),
        )
    return out


def icc1(y: np.ndarray, job: np.ndarray) -> float:
    """One-way random-effects ICC(1) of y with groups `job` (unbalanced: n0 correction)."""
    n = y.size
    sizes = np.bincount(job)
    k = sizes.size
    if k < 2 or n <= k:
        return float("nan")
    means = np.bincount(job, weights=y) / sizes
    grand = y.mean()
    msb = float(np.sum(sizes * (means - grand) ** 2) / (k - 1))
    msw = float(np.sum((y - means[job]) ** 2) / (n - k))
    n0 = (n - np.sum(sizes**2) / n) / (k - 1)
    den = msb + (n0 - 1) * msw
    return float((msb - msw) / den) if den > 0 else float("nan")


def drift(group: Group, alpha: float, threshold: float) -> tuple[bool, int, float]:
    """Trend of spin medians over spins within each job (Spearman ρ, Bonferroni over the jobs) that is
    also material (first vs last quarter of the job differ by more than `threshold`).

    Returns (flag, number of drifting jobs, the largest |relative change| seen in any job)."""
    if group.deterministic:
        return False, 0, 0.0
    n_drift, worst = 0, 0.0
    level = alpha / max(group.n_jobs, 1)
    for j in range(group.n_jobs):
        y = group.values[group.job == j]
        x = group.spin[group.job == j]
        if y.size < 12:
            continue
        q = y.size // 4
        change = float(np.median(y[-q:]) / np.median(y[:q]) - 1.0)
        worst = max(worst, abs(change))
        if abs(change) <= threshold or np.ptp(y) == 0:
            continue
        rho, p = stats.spearmanr(x, y)
        if np.isfinite(p) and p < level:
            n_drift += 1
    return n_drift > 0, n_drift, worst


def noisy_jobs(group: Group, threshold: float, alpha: float = NOISY_ALPHA) -> list[str]:
    """Jobs whose median lies further from the other jobs than their spread allows.

    Leave-one-out prediction interval on log job medians: t = |y_j − mean(others)| /
    (sd(others)·sqrt(1 + 1/(J−1))) against Student t with J−2 df, Bonferroni over the J jobs
    (level alpha/J), with sd(others) floored by the standard error of one job's median (so very
    stable jobs are not flagged for sub-noise differences); and the deviation must be material
    (> threshold/2). Needs >= 3 jobs."""
    if group.n_jobs < 3 or group.deterministic:
        return []
    y = np.log(group.job_medians)
    logv = np.log(group.values)
    within = 1.4826 * np.median(np.abs(logv - y[group.job]))
    se = 1.2533 * within / np.sqrt(np.bincount(group.job).min())
    J = group.n_jobs
    noisy = []
    for j in range(J):
        others = np.delete(y, j)
        sd = max(float(np.std(others, ddof=1)), se, 1e-12)
        t = abs(y[j] - others.mean()) / (sd * np.sqrt(1.0 + 1.0 / (J - 1)))
        p = 2.0 * stats.t.sf(t, J - 2)
        if p < alpha / J and abs(y[j] - np.median(others)) > np.log1p(threshold / 2):
            noisy.append(group.job_ids[j])
    return noisy


def describe(group: Group, alpha: float, threshold: float) -> dict:
    v = group.values
    q1, q3 = np.percentile(v, [25, 75])
    notes = []
    if group.deterministic:
        out_lo = out_hi = 0
        icc = float("nan")
        notes.append("deterministic: icc n/a")
    else:
        lv = np.log(v)
        l1, l3 = np.percentile(lv, [25, 75])
        iqr_l = l3 - l1
        out_lo = int(np.count_nonzero(lv < l1 - 1.5 * iqr_l))
        out_hi = int(np.count_nonzero(lv > l3 + 1.5 * iqr_l))
        icc = icc1(lv, group.job)
        if not np.isfinite(icc):
            notes.append("icc n/a: fewer than 2 jobs")
    flag, n_drift, worst = drift(group, alpha, threshold)
    noisy = noisy_jobs(group, threshold)
    if group.n_jobs < 3 and not group.deterministic:
        notes.append("noisy-job check needs >= 3 jobs")
    return {
        "metric": group.metric,
        "scheme": group.scheme,
        "op": group.op,
        "variant": group.variant,
        "n_jobs": group.n_jobs,
        "n_spins": int(v.size),
        "n_reps": group.n_reps,
        "median": float(np.median(v)),
        "iqr": float(q3 - q1),
        "min": float(v.min()),
        "max": float(v.max()),
        "mad": float(stats.median_abs_deviation(v, scale=1.0)),
        "outliers_low": out_lo,
        "outliers_high": out_hi,
        "icc": icc,
        "drift": bool(flag),
        "drift_jobs": n_drift,
        "drift_max": worst,
        "noisy_jobs": len(noisy),
        "noisy_job_ids": " ".join(noisy),
        "deterministic": group.deterministic,
        "unit": UNITS.get(group.metric, f"{group.metric}/call"),
        "note": "; ".join(notes),
    }
