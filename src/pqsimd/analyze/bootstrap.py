"""Bootstrap distributions of a group's median, without materialising any resample.

A resample's median is an order statistic, and order statistics of uniform draws have known
distributions, so each bootstrap replicate costs O(1) random numbers plus a binary search:

* naive (the paper's): n spin medians resampled with replacement. With the data sorted, a
  resample of size n is n draws of floor(n·U) on the sorted array; its k-th order statistic is
  floor(n·U_(k)) with U_(k) ~ Beta(k, n−k+1), and U_(k+1) = U_(k) + (1−U_(k))·Beta(1, n−k)
  (the least of the n−k uniforms above U_(k)). Exact in distribution.
* hierarchical: jobs resampled with replacement (counts c ~ Multinomial(J, 1/J)), then the N* =
  Σ c_j·S_j spins drawn with replacement from the chosen jobs' spins, each chosen job copy weighted
  by its spins. In the sorted array, value g then has weight c_job(g); draws are inverse-CDF
  samples of the weighted cumulative count Λ(g) = Σ_j c_j·C_j(g), so the k-th drawn order statistic
  is the g with Λ(g) ≤ N*·U_(k) < Λ(g+1), found by a vectorised binary search over g
  (O(J·log N) per replicate; the upper middle one by looking a few values ahead of the lower). Stage 2 here draws from the chosen jobs' pooled spins, so the number
  of draws landing in one job copy is multinomial around S_j instead of exactly S_j; the difference
  from the textbook two-stage bootstrap is a variance term of relative size ~1/S, and tests check
  the two agree in distribution against a brute-force implementation.

Percentile intervals are taken from these replicates; the ratio of two independent groups'
replicates gives the bootstrap distribution of a speedup.
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
    cum_t: np.ndarray  # (N+1, J) float64 copy of cum.T, row-gathered by the bisection
    lab: np.ndarray  # (N,) job of each sorted value
    cum_t32: np.ndarray  # float32 copy of cum_t (exact for counts < 2**24)

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
        cum_t = np.ascontiguousarray(cum.T, dtype=np.float64)
        return cls(v=v, cum=cum, sizes=cum[:, -1].copy(), cum_t=cum_t, lab=lab.astype(np.int64),
                   cum_t32=cum_t.astype(np.float32))

    @property
    def n(self) -> int:
        return int(self.v.size)

    @property
    def n_jobs(self) -> int:
        return int(self.sizes.size)


def _middle_uniforms(rng: np.random.Generator, total: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions (in [0,1)) of the two middle order statistics of `total` iid uniforms, per replicate.

    For odd totals both are the single middle one."""
    total = np.asarray(total, dtype=np.int64)
    k = (total + 1) // 2  # lower middle, 1-based
    if total.size and np.all(total == total.flat[0]):  # scalar parameters: a faster sampler path
        u_lo = rng.beta(k.flat[0], total.flat[0] - k.flat[0] + 1, size=total.shape)
    else:
        u_lo = rng.beta(k, total - k + 1)
    odd = (total % 2) == 1
    rest = np.maximum(total - k, 1)
    v = rng.random(total.shape)
    u_hi = u_lo + (1.0 - u_lo) * (1.0 - v ** (1.0 / rest))
    u_hi = np.where(odd, u_lo, u_hi)
    return u_lo, u_hi


def naive_medians(sample: Sample, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap replicates of the median, resampling the N values independently."""
    n = sample.n
    u_lo, u_hi = _middle_uniforms(rng, np.full(n_boot, n))
    i_lo = np.minimum((u_lo * n).astype(np.int64), n - 1)
    i_hi = np.minimum((u_hi * n).astype(np.int64), n - 1)
    return 0.5 * (sample.v[i_lo] + sample.v[i_hi])


def weighted_order_index(sample: Sample, counts: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per replicate b, the g with Λ_b(g) ≤ pos_b < Λ_b(g+1), Λ_b(g) = Σ_j counts[b,j]·cum[j,g], and Λ_b(g):
    bisection over g, vectorised over replicates (O(J log N) per replicate, no resample built).

    Λ is a sum of products of small integers; float32 holds it exactly below 2**24, float64 beyond."""
    n = sample.n
    exact32 = int(counts.sum(axis=1).max(initial=0)) * n < 2**24
    dt = np.float32 if exact32 else np.float64
    cum_t = sample.cum_t if dt is np.float64 else sample.cum_t32
    cf = counts.astype(dt)
    lo = np.zeros(pos.shape, dtype=np.int64)  # invariant: Λ(lo) <= pos (Λ(0) = 0)
    hi = np.full(pos.shape, n, dtype=np.int64)  # invariant: Λ(hi) > pos  (Λ(n) = total > pos)
    for _ in range(max(int(n).bit_length(), 1)):
        mid = (lo + hi) >> 1  # once hi = lo + 1, mid = lo and nothing moves
        up = np.einsum("bj,bj->b", cf, cum_t.take(mid, axis=0)) <= pos
        lo = np.where(up, mid, lo)
        hi = np.where(up, hi, mid)
    lam_lo = np.einsum("bj,bj->b", cf, cum_t.take(lo, axis=0)).astype(np.float64)
    return lo, lam_lo


def advance_index(sample: Sample, counts: np.ndarray, g: np.ndarray, lam_g: np.ndarray, pos: np.ndarray,
                  steps: int = 8) -> np.ndarray:
    """Like weighted_order_index for pos >= Λ(g), by looking a few values ahead of g (the upper middle
    order statistic is a value or two above the lower one); bisection for the few that need more.

    Λ(g+t) = Λ(g) + Σ_{i<t} counts[b, job(g+i)]: one (B × steps) gather and cumulative sum."""
    n_jobs = counts.shape[1]
    ext = np.empty((counts.shape[0], n_jobs + 1))
    ext[:, :n_jobs] = counts
    ext[:, n_jobs] = np.inf
    lab = np.concatenate([sample.lab, np.full(steps, n_jobs, dtype=np.int64)])  # past the end: weight inf
    # (steps, B) layout: the cumulative sum runs along the long axis
    ahead = lab[np.arange(steps)[:, None] + g[None, :]]  # jobs of values g, g+1, ..., g+steps-1
    flat = ahead + (n_jobs + 1) * np.arange(g.size)[None, :]
    lam = np.cumsum(ext.ravel().take(flat), axis=0) + lam_g[None, :]  # Λ(g+1), ..., Λ(g+steps)
    fits = lam <= pos[None, :]
    out = g + fits.sum(axis=0)
    far = fits[-1]  # even Λ(g+steps) <= pos: further than we looked
    if far.any():
        out[far] = weighted_order_index(sample, counts[far], pos[far])[0]
    return out


def job_counts(n_jobs: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Stage 1: how often each job is chosen when J jobs are drawn with replacement (B×J counts)."""
    picks = rng.integers(0, n_jobs, size=(n_boot, n_jobs))
    flat = (picks + n_jobs * np.arange(n_boot)[:, None]).ravel()
    return np.bincount(flat, minlength=n_boot * n_jobs).reshape(n_boot, n_jobs)


def hierarchical_medians(sample: Sample, n_boot: int, rng: np.random.Generator,
                         counts: np.ndarray | None = None) -> np.ndarray:
    """Bootstrap replicates of the median, resampling jobs, then spins within the chosen jobs."""
    if counts is None:
        counts = job_counts(sample.n_jobs, n_boot, rng)
    total = counts @ sample.sizes
    u_lo, u_hi = _middle_uniforms(rng, total)
    g_lo, lam_lo = weighted_order_index(sample, counts, u_lo * total)
    g_hi = advance_index(sample, counts, g_lo, lam_lo, u_hi * total)
    return 0.5 * (sample.v[g_lo] + sample.v[g_hi])


def percentile_ci(replicates: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    a = (1.0 - level) / 2.0
    lo, hi = np.quantile(replicates, [a, 1.0 - a])
    return float(lo), float(hi)
