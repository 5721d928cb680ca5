"""Job resampling for Cliff's δ interval: seeded generators, a group's sorted spin medians with
per-job cumulative counts (what effect.pair_balance reads), and stage-1 job draws.

Only δ, a descriptive statistic, is resampled; the speedups' intervals are distribution-free
order statistics or t intervals (interval.py), not bootstraps.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np


def rng_for(seed: int, *key: str) -> np.random.Generator:
    """A generator that depends only on the seed and the key (not on what else is analysed)."""
    return np.random.default_rng([seed, *(zlib.crc32(k.encode()) for k in key)])


@dataclass
class Sample:
    """One group's spin medians, sorted, with each value's job (0..J-1)."""

    v: np.ndarray  # sorted values, length N
    cum: np.ndarray  # (J, N+1) int: cum[j, g] = number of values of job j among the g smallest
    sizes: np.ndarray  # (J,) spins per job

    @classmethod
    def from_jobs(cls, values: np.ndarray, job: np.ndarray) -> "Sample":
        values = np.asarray(values, dtype=np.float64)
        _, job = np.unique(np.asarray(job), return_inverse=True)
        order = np.argsort(values, kind="stable")
        v, lab = values[order], job[order]
        n_jobs = int(job.max()) + 1 if job.size else 0
        onehot = np.zeros((n_jobs, v.size + 1), dtype=np.int64)
        onehot[lab, np.arange(1, v.size + 1)] = 1
        cum = np.cumsum(onehot, axis=1)
        return cls(v=v, cum=cum, sizes=cum[:, -1].copy())

    @property
    def n(self) -> int:
        return int(self.v.size)

    @property
    def n_jobs(self) -> int:
        return int(self.sizes.size)


def job_counts(n_jobs: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Stage 1: how often each job is chosen when J jobs are drawn with replacement (B×J counts)."""
    picks = rng.integers(0, n_jobs, size=(n_boot, n_jobs))
    flat = (picks + n_jobs * np.arange(n_boot)[:, None]).ravel()
    return np.bincount(flat, minlength=n_boot * n_jobs).reshape(n_boot, n_jobs)
