"""The same (metric, scheme, op, variant, compiler) across two studies: the ratio B/A of the group
medians with a hierarchical bootstrap CI (each study's jobs and spins resampled independently), a
Welch test on log job medians, Holm over the rows with a test, and a verdict. `pqsimd compare`
prints this; it computes nothing itself."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import PqsimdError, command
from . import bootstrap as bs
from .settings import read_study_toml, resolve
from .significance import holm, job_test
from ..studydir import StudyDir

KEYS = ["metric", "scheme", "op", "variant", "compiler"]


def _spins(directory: Path) -> pd.DataFrame:
    p = StudyDir(directory).results("spins.parquet")
    if not p.exists():
        raise PqsimdError(f"no results/spins.parquet in {directory}; run {command('analyze', directory)} first")
    df = pd.read_parquet(p)
    for c in KEYS + ["job"]:
        df[c] = df[c].astype(str)
    return df


def _groups(directory: Path) -> pd.DataFrame:
    for ext in ("parquet", "csv"):
        p = StudyDir(directory).results(f"groups.{ext}")
        if p.exists():
            return pd.read_parquet(p) if ext == "parquet" else pd.read_csv(p)
    raise PqsimdError(f"no results in {directory / 'results'}; run {command('analyze', directory)} first")


def compare_studies(dir_a: Path, dir_b: Path, n_boot: int | None = None, seed: int | None = None) -> tuple[pd.DataFrame, dict]:
    dir_a, dir_b = Path(dir_a), Path(dir_b)
    for d in (dir_a, dir_b):
        if not d.is_dir():
            raise PqsimdError(f"no study directory at {d}; create one with {command('run', d)}")
    settings = resolve(dir_a, read_study_toml(dir_a))
    n_boot = int(n_boot or min(settings.n_boot, 2000))
    seed = settings.seed if seed is None else seed
    ga, gb = _groups(dir_a), _groups(dir_b)
    for g in (ga, gb):
        if "compiler" not in g.columns:
            raise PqsimdError("a study's results predate the compiler column; re-run `pqsimd analyze` on it")
    sa, sb = _spins(dir_a), _spins(dir_b)
    ia, ib = ga.set_index(KEYS), gb.set_index(KEYS)
    keys = list(dict.fromkeys(list(ia.index) + list(ib.index)))
    by_a = {k: d for k, d in sa.groupby(KEYS, sort=False, observed=True)}
    by_b = {k: d for k, d in sb.groupby(KEYS, sort=False, observed=True)}
    rows = []
    for key in keys:
        ma = float(ia.loc[key, "median"]) if key in ia.index else math.nan
        mb = float(ib.loc[key, "median"]) if key in ib.index else math.nan
        det = bool(key in ia.index and key in ib.index and bool(ia.loc[key, "deterministic"]) and bool(ib.loc[key, "deterministic"]))
        ratio = mb / ma if ma and not (math.isnan(ma) or math.isnan(mb)) else math.nan
        lo = hi = p = math.nan
        note = ""
        if key not in ia.index or key not in ib.index:
            note = "only in A" if key in ia.index else "only in B"
        elif det:
            lo = hi = ratio
        elif not (ma > 0 and mb > 0):
            note = "median ≤ 0: below timer resolution"
        elif key in by_a and key in by_b:
            a, b = by_a[key], by_b[key]
            sa_, sb_ = bs.Sample.from_jobs(a["value"].to_numpy(float), a["job"].to_numpy()), \
                bs.Sample.from_jobs(b["value"].to_numpy(float), b["job"].to_numpy())
            ra = bs.hierarchical_medians(sa_, n_boot, bs.rng_for(seed, "compare-a", *key))
            rb = bs.hierarchical_medians(sb_, n_boot, bs.rng_for(seed, "compare-b", *key))
            if (ra > 0).all() and (rb > 0).all():
                lo, hi = bs.percentile_ci(rb / ra, 1.0 - settings.alpha)
            else:
                note = "resample ≤ 0: below timer resolution"
            jm_a = a.groupby("job")["value"].median().to_numpy()
            jm_b = b.groupby("job")["value"].median().to_numpy()
            if (jm_a > 0).all() and (jm_b > 0).all():
                p, _ = job_test(jm_a, jm_b)
        else:
            note = "no spin medians"
        rows.append(dict(zip(KEYS, key)) | {"median_a": ma, "median_b": mb, "ratio": ratio, "ci_low": lo,
                                             "ci_high": hi, "job_p": p, "deterministic": det, "note": note})
    df = pd.DataFrame(rows, columns=KEYS + ["median_a", "median_b", "ratio", "ci_low", "ci_high", "job_p",
                                            "deterministic", "note"])
    df["p_holm"] = holm(df["job_p"].to_numpy(float)) if len(df) else []
    up = 1 + settings.threshold

    def verdict(r) -> str:
        if not np.isfinite(r["ratio"]) or (not np.isfinite(r["ci_low"]) and not r["deterministic"]):
            return "n/a"
        sig = r["deterministic"] or (np.isfinite(r["p_holm"]) and r["p_holm"] < settings.alpha)
        if sig and r["ci_low"] > up:
            return "slower"
        if sig and r["ci_high"] < 1 / up:
            return "faster"
        return "~"

    df["verdict"] = df.apply(verdict, axis=1) if len(df) else pd.Series(dtype=str)
    meta = {"alpha": settings.alpha, "threshold": settings.threshold, "n_boot": n_boot,
            "family": int(np.isfinite(df["job_p"].to_numpy(float)).sum()) if len(df) else 0,
            "ci_level": 1.0 - settings.alpha}
    return df, meta
