"""False alarms and power of pqsimd's diagnostics and verdict rule, by simulation.

    .venv/bin/python bench/bench_diagnostics.py [--studies 200] [--seed 1] [--part carryover ...]

One simulated study is shaped like a standard ML-KEM study: 3 parameter sets x 105 paired comparisons
x J = 10 jobs (S = 200 spins for drift). Single-state nulls (the machine in one state, however noisy):
job log ratios normal, t3, lognormal (skewed), heteroscedastic (each job its own noise level) and
quantized (most jobs tied), and spins AR(1) with phi 0.4 or 0.7 (drift). Alternatives: a two-state
machine (3 of 10 jobs in a state that moves a third of the comparisons by 3-30%: disturbed jobs;
half the jobs in the other state: regimes), and a drift of 5% over a job.

Carry-over (groups.carryover, paired design): groups of J = 10 jobs x 60 spins, 2 or 3 builds in a
fresh random order every spin; null: no carry-over, with or without a first-position effect (every
build 5% slower when it runs first in its spin, after the driver wrote the previous spin's results);
alternative: the group 5% slower right after one other build. `stratified` is the test analyze runs
(positions >= 1 centred per job and position; position 0 alone with two builds), `pooled` the rule
before it (every spin, centred per job), `position0` the first-position test.

Columns: `per unit` is the share of comparisons (jobs, job trends) flagged, `per study` the share of
studies with any flag. The verdict part: the share of false verdicts among verdicts (FCR-adjusted, the
default) and the share of studies with any false verdict, for 20 of 315 comparisons whose true speedup
sits exactly on the +2% edge and the rest clear, and for an all-A/A study. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from mdtable import md  # noqa: E402
from pqsimd.stats import drift as drift_mod  # noqa: E402
from pqsimd.analyze import jobs as jobs_mod  # noqa: E402
from pqsimd.analyze.groups import Group, carryover, position0  # noqa: E402
from pqsimd.stats.interval import Evidence, verdict_of  # noqa: E402
from pqsimd.stats.significance import holm  # noqa: E402
from pqsimd.stats.multiplicity import family_level  # noqa: E402
from pqsimd.stats.regime import regime_test  # noqa: E402
from pqsimd.stats.significance import bh  # noqa: E402

BAND = math.log1p(0.02)
J, N_CMP, N_SCHEMES = 10, 105, 3
NULLS = ("normal", "t3", "lognormal", "heteroscedastic", "quantized")


def job_ratios(kind: str, rng: np.random.Generator, n: int) -> np.ndarray:
    """(n comparisons, J jobs) log ratios around each comparison's own value, scale ~0.2% (machine B)."""
    scale = rng.lognormal(math.log(0.002), 0.5, (n, 1))
    if kind == "normal":
        e = rng.normal(0, 1, (n, J))
    elif kind == "t3":
        e = rng.standard_t(3, (n, J))
    elif kind == "lognormal":
        e = rng.lognormal(0, 1, (n, J)) - 1
    elif kind == "heteroscedastic":  # each job its own noise level, within a factor of 4
        e = rng.normal(0, 1, (n, J)) * np.exp(rng.uniform(-math.log(2), math.log(2), (1, J)))
    elif kind == "quantized":
        e = np.where(rng.random((n, J)) < 0.7, 0.0, rng.normal(0, 1, (n, J)))
    else:
        raise ValueError(kind)
    return rng.uniform(-1, 4, (n, 1)) + scale * e


def two_state(rng: np.random.Generator, n: int, shift=(0.03, 0.3), jobs=(0, 1, 2), share=1 / 3) -> np.ndarray:
    x = job_ratios("normal", rng, n)
    hit = rng.random(n) < share
    for j in jobs:
        x[hit, j] += rng.choice([-1, 1], hit.sum()) * rng.uniform(*shift, hit.sum())
    return x


def disturbed(studies: int, rng: np.random.Generator) -> pd.DataFrame:
    rows = []
    for kind in (*NULLS, "two-state (3 jobs)"):
        flagged = found = 0
        any_study = 0
        for _ in range(studies):
            hit_study = False
            for _s in range(N_SCHEMES):
                x = two_state(rng, N_CMP) if kind.startswith("two") else job_ratios(kind, rng, N_CMP)
                ids = [f"j{i}" for i in range(J)]
                res = jobs_mod.judge(jobs_mod.deviations((ids, r) for r in x), BAND)
                bad = {r["job"] for r in res if r["disturbed"]}
                if kind.startswith("two"):
                    found += len(bad & {"j0", "j1", "j2"})
                    flagged += len(bad - {"j0", "j1", "j2"})
                else:
                    flagged += len(bad)
                hit_study |= bool(bad - ({"j0", "j1", "j2"} if kind.startswith("two") else set()))
            any_study += hit_study
        n_jobs = studies * N_SCHEMES * J
        rows.append({"job effects": kind, "quiet jobs flagged (per unit)": flagged / (n_jobs * (0.7 if kind.startswith("two") else 1)),
                     "studies with a false flag": any_study / studies,
                     "disturbed jobs found (power)": found / (studies * N_SCHEMES * 3) if kind.startswith("two") else math.nan})
    return pd.DataFrame(rows)


def regimes(studies: int, rng: np.random.Generator) -> pd.DataFrame:
    rows = []
    kinds = (*NULLS, "two states, 5% apart", "two states, 20% apart")
    for kind in kinds:
        flags = per = 0
        studies_hit = 0
        for _ in range(max(studies // 4, 10)):
            n = N_SCHEMES * N_CMP
            if kind.startswith("two"):
                x = job_ratios("normal", rng, n)
                gap = 0.05 if "5%" in kind else 0.2
                x[:, : J // 2] += gap
            else:
                x = job_ratios(kind, rng, n)
            res = [regime_test(r, BAND, rng) for r in x]
            p = np.array([r.p for r in res])
            adj = bh(p)
            f = (adj < 0.05) & np.array([r.gap > BAND for r in res])
            flags += int(f.sum())
            per += int((p < 0.05).sum())
            studies_hit += bool(f.any())
        k = max(studies // 4, 10)
        rows.append({"job ratios": kind, "p < 0.05 (per comparison)": per / (k * N_SCHEMES * N_CMP),
                     "flagged after BH (per comparison)": flags / (k * N_SCHEMES * N_CMP),
                     "studies with a flag": studies_hit / k})
    return pd.DataFrame(rows)


def ar1(rng: np.random.Generator, shape: tuple[int, int], phi: float) -> np.ndarray:
    e = rng.normal(0, 1, shape)
    out = np.empty(shape)
    out[:, 0] = e[:, 0] / math.sqrt(1 - phi**2)
    for i in range(1, shape[1]):
        out[:, i] = phi * out[:, i - 1] + e[:, i]
    return out * math.sqrt(1 - phi**2)


def drift(studies: int, rng: np.random.Generator, spins: int = 200) -> pd.DataFrame:
    rows = []
    for label, phi, slope in (("AR(1) phi 0", 0.0, 0.0), ("AR(1) phi 0.4", 0.4, 0.0), ("AR(1) phi 0.7", 0.7, 0.0),
                              ("phi 0.4 + 5% drift in one job of each comparison", 0.4, 0.05)):
        k = max(studies // 10, 5)
        job_p = []
        flagged = hit = 0
        for _ in range(k):
            ps, drifting = [], []
            for _c in range(N_SCHEMES * N_CMP):
                y = ar1(rng, (J, spins), phi) * 0.01
                if slope:
                    y[0] += np.linspace(0, slope, spins)
                res = [drift_mod.block_trend(r) for r in y]
                pj, ch = np.array([r[0] for r in res]), np.array([r[1] for r in res])
                job_p.extend(pj)
                p, dj = drift_mod.drift_p(pj, ch, BAND)
                ps.append(p)
                drifting.append(bool(dj))
            adj = bh(np.array(ps))
            f = (adj < 0.05) & np.array(drifting)
            flagged += int(f.sum())
            hit += bool(f.any())
        rows.append({"spins": label, "job tests p < 0.05": float(np.mean(np.array(job_p) < 0.05)),
                     "comparisons flagged after BH": flagged / (k * N_SCHEMES * N_CMP), "studies with a flag": hit / k})
    return pd.DataFrame(rows)


def verdicts(studies: int, rng: np.random.Generator, adjust: str) -> pd.DataFrame:
    rows = []
    for label in ("20 of 315 on the +2% edge, the rest clear", "all A/A (true ratio 1)"):
        fcp, any_false, n_verdicts = [], 0, 0
        for _ in range(studies):
            n = N_SCHEMES * N_CMP
            noise = rng.lognormal(math.log(0.002), 0.5, (n, 1)) * rng.standard_t(3, (n, J))  # median 0
            truth = np.zeros(n) if label.startswith("all") else np.r_[np.full(20, BAND), rng.uniform(0.2, 4, n - 20)]
            x = truth[:, None] + noise
            evs = [Evidence.sign(r) for r in x]
            fam = family_level(np.array([ev.decision_p(BAND)[0] for ev in evs]), 0.05, adjust)
            v = []
            for ev in evs:
                iv = ev.interval(fam.gamma)
                v.append(verdict_of(iv.lo, iv.hi, BAND) if iv.reachable else "withheld")
            v = np.array(v)
            false = ((v == "faster") & (truth <= BAND)) | ((v == "slower") & (truth >= -BAND)) | \
                    ((v == "same") & (np.abs(truth) >= BAND))
            given = np.isin(v, ["faster", "slower", "same"])
            n_verdicts += int(given.sum())
            fcp.append(false.sum() / max(given.sum(), 1))
            any_false += bool(false.any())
        rows.append({"study": label, "adjust": adjust, "false share among verdicts (FCR)": float(np.mean(fcp)),
                     "studies with a false verdict": any_false / studies, "verdicts per study": n_verdicts / studies})
    return pd.DataFrame(rows)


def carry_group(rng: np.random.Generator, builds: int, first: float, carry: float, jobs: int = 10,
                spins: int = 60) -> tuple[Group, Group]:
    """Build 0's group (with positions, and without: the pooled rule), builds in a random order per spin."""
    vals, job, spin, pos, prev = [], [], [], [], []
    for j in range(jobs):
        level = rng.normal(0, 0.02)
        last = ""
        for s in range(spins):
            order = rng.permutation(builds)
            p = int(np.flatnonzero(order == 0)[0])
            before = f"b{order[p - 1]}" if p else last
            x = level + rng.normal(0, 0.01) + np.log1p(first) * (p == 0) + np.log1p(carry) * (before == "b1")
            vals.append(1000 * np.exp(x)), job.append(j), spin.append(s), pos.append(p), prev.append(before)
            last = f"b{order[-1]}"
    kw = dict(metric="ticks", scheme="s", op="o", variant="b0", compiler="gcc", values=np.array(vals),
              job=np.array(job), spin=np.array(spin), job_ids=[f"j{j}" for j in range(jobs)], n_reps=5,
              prev=np.array(prev, dtype=object))
    return Group(**kw, pos=np.array(pos)), Group(**kw, pos=None)


def carry(studies: int, rng: np.random.Generator, per_study: int = 10, threshold: float = 0.02) -> pd.DataFrame:
    rows = []
    for builds in (2, 3):
        for label, first, eff in (("null", 0.0, 0.0), ("null + first-position 5%", 0.05, 0.0),
                                  ("carry-over 5% after one build", 0.0, 0.05)):
            res = {"stratified": [], "pooled": [], "position0": []}
            for _ in range(studies):
                per = {k: [] for k in res}
                for _g in range(per_study):
                    g, flat = carry_group(rng, builds, first, eff)
                    per["stratified"].append(carryover(g)[:2])
                    per["pooled"].append(carryover(flat)[:2])
                    per["position0"].append(position0(g))
                for k, v in per.items():
                    p, sh = np.array(v, dtype=float).T
                    adj = holm(p) if np.isfinite(p).all() else np.full_like(p, np.nan)
                    res[k].append((p < 0.05, (p < 0.05) & (np.abs(sh) > threshold),
                                   (adj < 0.05) & (np.abs(sh) > threshold)))
            for k, v in res.items():
                rows.append({"builds": builds, "truth": label, "test": k,
                             "groups with p < 0.05": float(np.mean([a.mean() for a, _, _ in v])),
                             "groups flagged (p < 0.05, shift > 2%)": float(np.mean([b.mean() for _, b, _ in v])),
                             "studies with a Holm flag": float(np.mean([c.any() for _, _, c in v]))})
    return pd.DataFrame(rows)


PARTS = ("disturbed", "regimes", "drift", "verdicts", "carryover")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--studies", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--part", action="append", choices=PARTS, help="only these parts (default: all)")
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    for part in a.part or PARTS:
        if a.part:  # a part alone: its own generator (all parts: one sequence, as before --part existed)
            rng = np.random.default_rng([a.seed, PARTS.index(part)])
        if part == "disturbed":
            print("## disturbed jobs (results/jobs)\n")
            print(md(disturbed(a.studies, rng)))
        elif part == "regimes":
            print("\n## regimes (dip test, BH; the regime check's second test: bench_regimes.py measures both)\n")
            print(md(regimes(a.studies, rng)))
        elif part == "drift":
            print("\n## drift (block medians, BH)\n")
            print(md(drift(a.studies, rng)))
        elif part == "verdicts":
            print("\n## verdicts\n")
            print(md(pd.concat([verdicts(a.studies, rng, adj) for adj in ("fcr", "bonferroni", "by")])))
        else:
            print(f"\n## carry-over ({max(a.studies // 4, 10)} studies of 10 groups)\n")
            print(md(carry(max(a.studies // 4, 10), rng)))


if __name__ == "__main__":
    main()
