"""The same raw data analysed by this pqsimd gives the same results as when the golden file was written
(issue 46: a redesign keeps every output identical unless a bug is found, and says so). The studies are
synthetic (seeded: the paired design with alone jobs, and the separate design), analysed by the real
`analyze_study`; every comparison's estimate, interval and verdict and every group's median and interval
are compared with tests/fixtures/golden/results.csv.

An intended change of the results rewrites the file (`python tests/test_results_unchanged.py`) in the same
commit, which says why."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

GOLDEN = Path(__file__).parent / "fixtures" / "golden" / "results.csv"
KEYS = ["study", "table", "metric", "scheme", "op", "baseline", "variant", "compiler", "stage"]
NUMBERS = ["speedup", "ci_low", "ci_high", "ci_level", "median", "median_ci_low", "median_ci_high"]


def results_of(root: Path) -> pd.DataFrame:
    sys.path.insert(0, str(Path(__file__).parent))
    from pqsimd.analyze import analyze_study
    from synthetic import make_synthetic_study

    rows = []
    designs = {"paired": dict(design="paired", shuffle=True, alone=1, job_sigma=0.05),
               "separate": dict(design="separate", job_sigma=0.02)}
    for name, kw in designs.items():
        d = make_synthetic_study(root / name, schemes=("ml-kem-512", "ml-kem-768"), variants=("refnv", "ref", "avx2"),
                                 ops=("ntt", "gen_a"), jobs=6, spins=12, reps=5, seed=46, metric=("ticks", "instructions"),
                                 medians={"refnv": 3000, "ref": 2900, "avx2": 150}, analysis={"n_boot": 200, "seed": 46},
                                 **kw)
        analyze_study(d)
        c = pd.read_parquet(d / "results" / "comparisons.parquet")
        g = pd.read_parquet(d / "results" / "groups.parquet")
        c = c.assign(study=name, table="comparisons")
        g = g.assign(study=name, table="groups", baseline="", stage="")
        for t in (c, g):
            for col in KEYS + NUMBERS + ["verdict"]:
                if col not in t.columns:
                    t[col] = np.nan
            rows.append(t[KEYS + NUMBERS + ["verdict"]])
    out = pd.concat(rows, ignore_index=True)
    return _words(out).sort_values(KEYS).reset_index(drop=True)


def _words(t: pd.DataFrame) -> pd.DataFrame:
    """Key and verdict columns as strings, a missing value as "nan" (as the CSV round trip leaves it)."""
    t = t.copy()
    for c in KEYS + ["verdict"]:
        t[c] = [("nan" if x is None or (isinstance(x, float) and np.isnan(x)) or x in ("", "None") else str(x))
                for x in t[c]]
    return t


def test_the_same_raw_data_gives_the_same_results(tmp_path):
    now = results_of(tmp_path)
    then = pd.read_csv(GOLDEN, dtype={k: str for k in KEYS + ["verdict"]}, keep_default_na=False,
                       na_values={c: ["", "nan"] for c in NUMBERS})
    then = _words(then)
    assert list(now[KEYS].itertuples(index=False)) == list(then[KEYS].itertuples(index=False)), "other rows"
    assert list(now["verdict"]) == list(then["verdict"])
    for c in NUMBERS:
        np.testing.assert_allclose(now[c].to_numpy(float), then[c].to_numpy(float), rtol=1e-9, equal_nan=True,
                                   err_msg=c)


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        results_of(Path(tmp)).to_csv(GOLDEN, index=False)
    print(f"wrote {GOLDEN}")
