"""A campaign's numbers (analyze/campaign.py says what they mean): one arm's jobs for a comparison and
the job bootstrap of a ratio of two arms' speedups (jobs resampled; shared draws for arms timed in the same
jobs; a laid-out arm's typical layout of its resampled copy pairs). Numbers in, numbers out."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .interval import weighted_median

PAIRED, SEPARATE = "paired", "separate"  # the study's design (model.Design's values)


@dataclass
class ArmJobs:
    """One arm's jobs for one comparison (log scale): paired: the job log ratios (by job id);
    separate: the log job medians of the baseline and of the variant."""

    design: str
    ratios: pd.Series | None = None
    base: np.ndarray | None = None
    var: np.ndarray | None = None
    copies: dict | None = None  # paired, laid out: per job its copy pairs' log ratios (the typical layout's)

    @property
    def estimate(self) -> float:
        if self.design == PAIRED and self.copies:
            return weighted_median(list(self.copies.values()))
        if self.design == PAIRED:
            return float(np.median(self.ratios.to_numpy()))
        return float(np.mean(self.base) - np.mean(self.var))

    @property
    def n_jobs(self) -> int:
        return int(self.ratios.size) if self.design == PAIRED else int(min(self.base.size, self.var.size))


def boot_stat(ev: ArmJobs, draws: np.ndarray | None, rng: np.random.Generator, n_boot: int) -> np.ndarray:
    """The estimand on n_boot job resamples (draws: shared job indices, for arms of one study)."""
    if ev.design == PAIRED and ev.copies:  # jobs resampled, the typical layout of their copy pairs
        cl = [ev.copies[j] for j in ev.ratios.index]
        idx = draws if draws is not None else rng.integers(0, len(cl), size=(n_boot, len(cl)))
        if len({c.size for c in cl}) == 1:
            x = np.stack(cl)[idx]  # (B, J, L): every job weighs alike
            return np.median(x.reshape(x.shape[0], -1), axis=1)
        return np.array([weighted_median([cl[i] for i in row]) for row in idx])
    if ev.design == PAIRED:
        x = ev.ratios.to_numpy()
        idx = draws if draws is not None else rng.integers(0, x.size, size=(n_boot, x.size))
        return np.median(x[idx], axis=1)
    b = ev.base[rng.integers(0, ev.base.size, size=(n_boot, ev.base.size))].mean(axis=1)
    v = ev.var[rng.integers(0, ev.var.size, size=(n_boot, ev.var.size))].mean(axis=1)
    return b - v


def ratio_bootstrap(ev: ArmJobs, ev_ref: ArmJobs, same_jobs: bool, rng: np.random.Generator,
                    n_boot: int) -> np.ndarray:
    """Bootstrap distribution of log(speedup on the arm / speedup on the reference arm)."""
    if (same_jobs and ev.design == ev_ref.design == PAIRED
            and set(ev.ratios.index) == set(ev_ref.ratios.index)):  # one study's arms timed in the same jobs
        r = ArmJobs(PAIRED, ratios=ev_ref.ratios[ev.ratios.index],
                     copies={j: ev_ref.copies[j] for j in ev.ratios.index} if ev_ref.copies else None)
        draws = rng.integers(0, ev.ratios.size, size=(n_boot, ev.ratios.size))
        return boot_stat(ev, draws, rng, n_boot) - boot_stat(r, draws, rng, n_boot)
    return boot_stat(ev, None, rng, n_boot) - boot_stat(ev_ref, None, rng, n_boot)
