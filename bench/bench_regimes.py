"""False alarms and power of the regime check (stats/regime.py: the job-state test pooled over a
parameter set's ops, and the dip test), by simulation and on real studies.

    .venv/bin/python bench/bench_regimes.py [--studies 100] [--seed 1] [--part nulls|power|real ...] [STUDY ...]

One simulated study is shaped like a standard ML-KEM study: 3 parameter sets x 21 ops x 4 variants
(refo0, refnv, ref, avx2) timed in the same J jobs, and per op the chain's 5 comparisons (3 steps, 2
cumulative: refo0->refnv, refnv->ref, ref->avx2, refo0->ref, refo0->avx2), 315 in all. Each variant's
log job median of an op is its level plus noise of scale s (each (op, variant) its own, lognormal
around 1% (`noisy`, the Emerald Rapids study's within-state spread) or 0.2% (`quiet`, machine B)), so
the comparisons of one op share their groups' noise as the real ones do.

Nulls (no two states; every flag is a false alarm): the noise normal, t3 (heavy tails), lognormal
(skewed), one job per (op, variant) off by 10 s (a single outlier), job medians on a lattice of 0.5%
(quantized: most jobs tied; the check gets the resolution analyze would give), one disturbed job (the
same job in every op: its scalar builds 10% slower), and a continuous job effect (every job's scalar
builds off by N(0, 2%), the same in every op: persistent but unimodal). J = 6 ... 40.
Power: m of the J jobs in a second state that slows the scalar builds by d in every op (so the
comparisons scalar -> avx2, 3 of 5 per op, move by d; those among scalar builds do not); d = 2.5% ...
40%, m = 2 ... J/2, at J = 10 and 20 (`noisy` noise). `found` = the share of the moved comparisons
flagged with exactly the state's jobs as their minority; `unmoved flagged` = the share of the others
flagged (false alarms beside a real state).
Real studies (each STUDY: an analysed paired study's results/, e.g. /work/shared/studies/*): the
check on the study as it is; then job labels permuted independently per op (every comparison keeps
its values, the same jobs are no longer the same state across ops: the job-state test's null, its
flags are false alarms; the dip test sees the same values, so its flags are not counted as false);
then a state injected into m jobs of the study's own noise (its scalar builds (1 + d) slower in every
op; jobs drawn at random per repetition): the share of the moved comparisons found.

Columns: `per comparison` is the share of comparisons flagged, `studies with a flag` the share of
studies with any. Nothing is asserted; the figures are in BENCHMARKS.md with this command.
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
from pqsimd.analyze.groups import build_groups  # noqa: E402
from pqsimd.stats.interval import resolution_halfwidth  # noqa: E402
from pqsimd.stats import regime  # noqa: E402
from pqsimd.stats.regime import Row, check  # noqa: E402

BAND = math.log1p(0.02)
ALPHA = 0.05
VARIANTS = ("refo0", "refnv", "ref", "avx2")
SCALAR = (0, 1, 2)  # refo0, refnv, ref
PAIRS = ((0, 1), (1, 2), (2, 3), (0, 2), (0, 3))  # the chain's steps and cumulative rows
N_SETS, N_OPS = 3, 21
NOISE = 0.01  # power: every variant's log job medians N(0, 1%): job ratios N(0, 1.4%)
NULLS = ("normal", "t3", "lognormal", "single outlier", "quantized", "one disturbed job", "continuous job effect")


def medians(rng: np.random.Generator, j: int, noise: str = "normal", scale: float = 0.01,
            spread: float = 0.5) -> np.ndarray:
    """(ops, variants, jobs) log job medians of one parameter set under a null; each (op, variant) its
    own noise scale, lognormal around `scale` (SD `spread` on the log scale, 0: all alike)."""
    s = rng.lognormal(math.log(scale), spread, (N_OPS, len(VARIANTS), 1))
    shape = (N_OPS, len(VARIANTS), j)
    if noise == "t3":
        e = rng.standard_t(3, shape)
    elif noise == "lognormal":
        e = rng.lognormal(0, 1, shape) - math.exp(0.5)
    else:
        e = rng.normal(0, 1, shape)
    if noise == "single outlier":
        hit = rng.integers(0, j, (N_OPS, len(VARIANTS)))
        np.put_along_axis(e, hit[:, :, None], np.take_along_axis(e, hit[:, :, None], 2) + 10.0, axis=2)
    x = rng.uniform(5, 10, (N_OPS, len(VARIANTS), 1)) + s * e
    x[:, 3] -= rng.uniform(1, 4, (N_OPS, 1))  # avx2 faster
    if noise == "quantized":
        q = math.log1p(0.005)
        x = np.round(x / q) * q
    if noise == "one disturbed job":
        x[:, list(SCALAR), 0] += math.log1p(0.10)
    if noise == "continuous job effect":
        x[:, list(SCALAR), :] += rng.normal(0, 0.02, (1, 1, j))
    return x


def rows_of(sets: list[np.ndarray], res: float = 0.0) -> tuple[list[Row], list[tuple[int, int, int]]]:
    """The regime check's rows of a study (one (ops, variants, jobs) array per parameter set), and each
    row's (set, op, pair index)."""
    rows, keys = [], []
    for s, x in enumerate(sets):
        ids = tuple(f"j{i}" for i in range(x.shape[2]))
        for o in range(x.shape[0]):
            for p, (b, v) in enumerate(PAIRS):
                rows.append(Row(("ticks", s), f"op{o}", ids, x[o, b] - x[o, v], res))
                keys.append((s, o, p))
    return rows, keys


def run(rows: list[Row], seed) -> list:
    return check(rows, BAND, ALPHA, lambda i: np.random.default_rng([*seed, i]))


def nulls(studies: int, seed: int, only: set[int] | None = None) -> pd.DataFrame:
    out = []
    for scale_name, scale in (("noisy", 0.01), ("quiet", 0.002)):
        for j in (6, 8, 10, 14, 20, 30, 40):
            if only and j not in only:
                continue
            for kind in NULLS:
                if scale_name == "quiet" and j not in (10, 20):
                    continue
                rng = np.random.default_rng([seed, j, NULLS.index(kind), int(scale * 1e4)])
                n = max(studies // (1 if j in (10, 20) else 4), 10)
                per, cand, st, dip, hit = 0, 0, 0, 0, 0
                for r in range(n):
                    res = resolution_halfwidth(0.005, 0.005) / 2 if kind == "quantized" else 0.0
                    rows, _ = rows_of([medians(rng, j, kind, scale) for _ in range(N_SETS)], res)
                    g = run(rows, (seed, r))
                    f = np.array([x.flagged for x in g])
                    per += int(f.sum())
                    cand += sum(x.candidate for x in g)
                    st += sum("job state" in x.by for x in g)
                    dip += sum("dip" in x.by for x in g)
                    hit += bool(f.any())
                m = n * len(rows)
                out.append({"noise": scale_name, "J": j, "job ratios": kind, "studies": n,
                            "candidates (per comparison)": cand / m, "flagged (per comparison)": per / m,
                            "by job state": st / m, "by dip": dip / m, "studies with a flag": hit / n})
    return pd.DataFrame(out)


def power(studies: int, seed: int, only: set[int] | None = None) -> pd.DataFrame:
    out = []
    for j in (10, 20):
        if only and j not in only:
            continue
        for m in range(2, j // 2 + 1):
            for d in (0.025, 0.05, 0.075, 0.1, 0.2):
                rng = np.random.default_rng([seed, j, m, int(d * 1000)])
                n = max(studies // 4, 10)
                found = moved = flagged_unmoved = unmoved = any_hit = 0
                for r in range(n):
                    sets = [medians(rng, j, scale=NOISE, spread=0.0) for _ in range(N_SETS)]
                    state = sorted(rng.choice(j, m, replace=False))
                    for x in sets:
                        for v in SCALAR:
                            x[:, v, state] += math.log1p(d)
                    rows, keys = rows_of(sets)
                    g = run(rows, (seed, r))
                    want = {f"j{i}" for i in state}
                    half = {f"j{i}" for i in range(j)} - want if 2 * m == j else want  # an even split: either half
                    for (s, o, p), x in zip(keys, g):
                        is_moved = PAIRS[p][1] == 3
                        if is_moved:
                            moved += 1
                            found += x.flagged and set(x.minority) in (want, half)
                        else:
                            unmoved += 1
                            flagged_unmoved += x.flagged
                    any_hit += any(x.flagged for x in g)
                out.append({"J": j, "state jobs m": m, "state d": f"{d:.1%}",
                            "d / ratio SD": d / (NOISE * math.sqrt(2)),
                            "studies": n,
                            "found (moved comparisons)": found / moved,
                            "unmoved flagged": flagged_unmoved / unmoved, "studies with a flag": any_hit / n})
    return pd.DataFrame(out)


def real_medians(study: Path) -> tuple[dict[str, np.ndarray], list[str]]:
    """Per parameter set, the (ops, variants, jobs) log job medians of an analysed study (ticks), the
    jobs in one order; and the ops (the self-check op `empty` left out)."""
    spins = pd.read_parquet(study / "results" / "spins.parquet")
    spins = spins[(spins["metric"] == "ticks") & (spins["op"] != "empty") & spins["variant"].isin(VARIANTS)]
    groups = build_groups(spins)
    ops = sorted({k[2] for k in groups})
    out = {}
    for scheme in sorted({k[1] for k in groups}):
        jobs = None
        arr = []
        for op in ops:
            per = []
            for v in VARIANTS:
                g = next(g for k, g in groups.items() if k[1] == scheme and k[2] == op and k[3] == v)
                jobs = jobs or list(g.job_ids)
                lm = dict(zip(g.job_ids, g.summary.log_median))
                per.append([lm[x] for x in jobs])
            arr.append(per)
        out[scheme] = np.array(arr)
    return out, ops


def real(paths: list[Path], reps: int, seed: int) -> pd.DataFrame:
    out = []
    rng = np.random.default_rng(seed)
    for path in paths:
        sets, _ops = real_medians(path)
        rows, _ = rows_of(list(sets.values()))
        g = run(rows, (seed, 0))
        out.append({"study": path.name, "data": "as it is", "reps": 1,
                    "flagged (per comparison)": np.mean([x.flagged for x in g]),
                    "by job state": np.mean(["job state" in x.by for x in g]),
                    "by dip": np.mean(["dip" in x.by for x in g]), "studies with a job-state flag":
                    float(any("job state" in x.by for x in g)), "found (moved comparisons)": math.nan})
        st = per = hit = 0
        for r in range(reps):
            perm = [x.copy() for x in sets.values()]
            for x in perm:
                for o in range(x.shape[0]):
                    x[o] = x[o][:, rng.permutation(x.shape[2])]
            g = run(rows_of(perm)[0], (seed, r + 1))
            st += sum("job state" in x.by for x in g)
            per += sum(x.flagged for x in g)
            hit += any("job state" in x.by for x in g)
        n = reps * len(rows)
        out.append({"study": path.name, "data": "job labels permuted per op (null)", "reps": reps,
                    "flagged (per comparison)": per / n, "by job state": st / n, "by dip": (per - st) / n,
                    "studies with a job-state flag": hit / reps, "found (moved comparisons)": math.nan})
        for m in (2, 3, 5):
            for d in (0.05, 0.1, 0.2, 0.4):
                found = moved = 0
                for r in range(reps):
                    inj = [x.copy() for x in sets.values()]
                    j = inj[0].shape[2]
                    state = sorted(rng.choice(j, m, replace=False))
                    for x in inj:
                        for v in SCALAR:
                            x[:, v, state] += math.log1p(d)
                    rows, keys = rows_of(inj)
                    g = run(rows, (seed, 100 + r))
                    want = {f"j{i}" for i in state}
                    half = {f"j{i}" for i in range(j)} - want if 2 * m == j else want
                    for (s, o, p), x in zip(keys, g):
                        if PAIRS[p][1] == 3:
                            moved += 1
                            found += x.flagged and set(x.minority) in (want, half)
                out.append({"study": path.name, "data": f"state injected: {m} jobs, scalar {d:.0%} slower",
                            "reps": reps, "flagged (per comparison)": math.nan, "by job state": math.nan,
                            "by dip": math.nan, "studies with a job-state flag": math.nan,
                            "found (moved comparisons)": found / moved})
    return pd.DataFrame(out)


PARTS = ("nulls", "power", "real")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("studies_dirs", nargs="*", type=Path, metavar="STUDY")
    ap.add_argument("--studies", type=int, default=100, help="simulated studies per null (J = 10, 20)")
    ap.add_argument("--reps", type=int, default=40, help="repetitions per real study")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--part", action="append", choices=PARTS)
    ap.add_argument("--J", type=int, action="append", help="only these numbers of jobs (default: all)")
    ap.add_argument("--contrast", type=float, default=regime.MIN_CONTRAST,
                    help=f"a candidate's gap over its wider cluster's range (analyze: {regime.MIN_CONTRAST:g})")
    a = ap.parse_args()
    regime.MIN_CONTRAST = a.contrast
    for part in a.part or PARTS:
        if part == "nulls":
            print("## regimes under single-state nulls\n")
            print(md(nulls(a.studies, a.seed, set(a.J or ()))))
        elif part == "power":
            print("\n## regimes: power against a second state of m jobs\n")
            print(md(power(a.studies, a.seed, set(a.J or ()))))
        elif a.studies_dirs:
            print("\n## regimes on real studies\n")
            print(md(real(a.studies_dirs, a.reps, a.seed)))


if __name__ == "__main__":
    main()
