"""The same (metric, scheme, op, variant, compiler) across two studies: two independent sets of jobs,
so the separate design's estimand and interval (interval.py): the ratio B/A of the geometric means of
the job medians with the Welch t interval on log job medians (withheld below 4 effective df), printed
at the FCR family level over the rows (multiplicity.py), each end moved out by the clock's resolution
(interval.resolution_halfwidth of the two groups' lattice steps, as analyze's comparisons), the
verdict read off that interval.
`pqsimd compare` prints this; it computes nothing itself."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import PqsimdError, command
from ..stats.interval import Evidence, resolution_halfwidth, verdict_of
from ..stats.multiplicity import family_level
from ..stats.pooled import MIN_DF, job_test
from ..analysis_settings import read_study_toml, resolve
from ..results import load_study, read_table

KEYS = ["metric", "scheme", "op", "variant", "compiler"]


def _groups(directory: Path) -> pd.DataFrame:
    g = read_table(directory, "groups")
    if g.empty:
        raise PqsimdError(f"no results in {directory / 'results'}; run {command('analyze', directory)} first")
    return g


def _rel(groups: pd.DataFrame, key) -> float:
    """A group's lattice step relative to its median (0 where results predate it)."""
    r = float(groups.loc[key, "resolution_rel"]) if "resolution_rel" in groups.columns else 0.0
    return r if math.isfinite(r) else 0.0


def compare_studies(dir_a: Path, dir_b: Path) -> tuple[pd.DataFrame, dict]:
    dir_a, dir_b = Path(dir_a), Path(dir_b)
    for d in (dir_a, dir_b):
        if not d.is_dir():
            raise PqsimdError(f"no study directory at {d}; create one with {command('run', d)}")
    settings = resolve(dir_a, read_study_toml(dir_a))
    ga, gb = _groups(dir_a), _groups(dir_b)
    for d, g in ((dir_a, ga), (dir_b, gb)):
        if "compiler" not in g.columns:
            raise PqsimdError(f"{d}: its results predate the compiler column; analyse it again: {command('analyze', d)}")
    sa, sb = load_study(dir_a).spins(), load_study(dir_b).spins()
    ia, ib = ga.set_index(KEYS), gb.set_index(KEYS)
    keys = list(dict.fromkeys(list(ia.index) + list(ib.index)))
    by_a = {k: d for k, d in sa.groupby(KEYS, sort=False, observed=True)}
    by_b = {k: d for k, d in sb.groupby(KEYS, sort=False, observed=True)}
    band = math.log1p(settings.threshold)
    rows, evs = [], []
    for key in keys:
        ma = float(ia.loc[key, "median"]) if key in ia.index else math.nan
        mb = float(ib.loc[key, "median"]) if key in ib.index else math.nan
        det = bool(key in ia.index and key in ib.index and bool(ia.loc[key, "deterministic"]) and bool(ib.loc[key, "deterministic"]))
        ev, note = None, ""
        if key not in ia.index or key not in ib.index:
            note = "only in A" if key in ia.index else "only in B"
        elif not (ma > 0 and mb > 0):
            note = "median <= 0: below timer resolution"
        elif det:
            ev = Evidence.exact(math.log(mb / ma))
        elif key in by_a and key in by_b:
            jm_a = by_a[key].groupby("job")["value"].median().to_numpy()
            jm_b = by_b[key].groupby("job")["value"].median().to_numpy()
            if (jm_a > 0).all() and (jm_b > 0).all():
                t = job_test(jm_b, jm_a, alpha=settings.alpha, min_df=MIN_DF)  # log(B) - log(A): B/A
                m = str(t.method[0])
                ev = (Evidence.exact(float(t.log_speedup[0])) if m == "exact" else
                      Evidence.refuse(str(t.reason[0])) if m == "refuse" else
                      Evidence.t(float(t.log_speedup[0]), float(t.se[0]), float(t.df[0])))
            else:
                note = "job median <= 0: below timer resolution"
        else:
            note = "no spin medians"
        if ev is not None and not det:
            res = resolution_halfwidth(_rel(ia, key), _rel(ib, key))
            ev = ev.at_resolution(res) if math.isfinite(res) else Evidence.refuse(
                "a call lasts less than one lattice step of the clock: below its resolution", d=ev.point)
        evs.append(ev)
        rows.append(dict(zip(KEYS, key)) | {"median_a": ma, "median_b": mb, "deterministic": det, "note": note})
    pdec = np.array([ev.decision_p(band)[0] if ev is not None and ev.in_family else np.nan for ev in evs])
    fam = family_level(pdec, settings.alpha, settings.adjust)
    flip = {"faster": "slower", "slower": "faster"}  # the ratio is a time ratio B/A: above 1 is slower
    for row, ev in zip(rows, evs):
        row.update(ratio=math.nan, ci_low=math.nan, ci_high=math.nan, ci_level=math.nan, verdict="n/a")
        if ev is None:
            continue
        iv = ev.interval(fam.gamma)
        row.update(ratio=math.exp(iv.point) if math.isfinite(iv.point) else math.nan,
                   ci_low=math.exp(iv.lo) if math.isfinite(iv.lo) else math.nan,
                   ci_high=math.exp(iv.hi) if math.isfinite(iv.hi) else math.nan, ci_level=iv.level)
        if ev.kind == "refuse":
            row.update(verdict="withheld", note=ev.reason)
        else:
            v = verdict_of(iv.lo, iv.hi, band)
            row["verdict"] = flip.get(v, v)
    df = pd.DataFrame(rows, columns=KEYS + ["median_a", "median_b", "ratio", "ci_low", "ci_high", "ci_level",
                                            "deterministic", "verdict", "note"])
    meta = {"alpha": settings.alpha, "threshold": settings.threshold, "family": fam.to_dict(), "ci_level": fam.level}
    return df, meta
