"""Issue 27's checks on analysed studies: zero-width intervals, intervals narrower than their
resolution, resolution-limited rows, `± 0.0%` in `show`, and (with --fine) whether each study's
intervals contain a fine-clock study's speedups of the same comparisons.

Issue 32's checks (`--all`): every other interval of timed data in each directory (a study's groups,
co-residency, decomposition and attribution; a campaign's ratios), per table: how many intervals,
how many of zero width, how many whose estimate lies outside. Exact counts (deterministic rows,
metrics other than ticks) are left out: their zero width is the truth.

    .venv/bin/python bench/study_intervals.py DIR [DIR ...] [--fine FINE_DIR] [--scheme S] [--all]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
from mdtable import md  # noqa: E402

KEY = ["scheme", "op", "baseline", "variant"]
# table -> [(estimate, low, high)]; the decomposition's factor_/share_ columns are found per study
INTERVALS = {
    "groups": [("median", "median_ci_low", "median_ci_high")],
    "coresidency": [("ratio", "ci_low", "ci_high")],
    "attribution": [(n, f"{n}_ci_low", f"{n}_ci_high") for n in ("shapley", "share", "leave_one_out", "add_one_in",
                                                                  "total", "interaction")],
    "decomposition": [("total", "total_ci_low", "total_ci_high")],
    "ratios": [("ratio", "ci_low", "ci_high")],
}


def every_interval(d: Path) -> list[dict]:
    """Per table of d/results that holds intervals: intervals, zero-width, estimate outside."""
    out = []
    for table, cols in INTERVALS.items():
        f = d / "results" / f"{table}.csv"
        if not f.exists():
            continue
        t = pd.read_csv(f)
        if "metric" in t:
            t = t[t.metric == "ticks"]
        if "deterministic" in t:
            t = t[~t.deterministic.astype(bool)]
        if table == "ratios" and "method" in t:
            t = t[t.method != "n/a"]
        if table == "decomposition":
            cols = cols + [(c, f"{c}_ci_low", f"{c}_ci_high") for c in t.columns if c.startswith(("factor_", "share_"))
                           and not c.endswith(("_ci_low", "_ci_high", "_ci_level"))]
        n = zero = outside = 0
        for est, lo, hi in cols:
            if est not in t or lo not in t:
                continue
            x = t[[est, lo, hi]].dropna()
            n += len(x)
            zero += int((x[hi] <= x[lo]).sum())
            outside += int(((x[est] < x[lo] - 1e-9 * x[est].abs()) | (x[est] > x[hi] + 1e-9 * x[est].abs())).sum())
        out.append({"study": d.name, "table": table, "intervals": n, "zero-width": zero, "estimate outside": outside})
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("dirs", nargs="+", type=Path)
    ap.add_argument("--fine", type=Path, default=None)
    ap.add_argument("--scheme", default=None)
    ap.add_argument("--pqsimd", type=Path, default=Path(sys.executable).with_name("pqsimd"),
                    help="the pqsimd that made the studies (its show)")
    ap.add_argument("--all", action="store_true", help="also every other interval table (issue 32)")
    a = ap.parse_args()
    fine = None
    if a.fine:
        fine = pd.read_csv(a.fine / "results" / "comparisons.csv")
        fine = fine[fine.metric == "ticks"][KEY + ["speedup", "ci_low", "ci_high"]]
    rows = []
    pqsimd = a.pqsimd
    if a.all:
        print(md(pd.DataFrame([r for d in a.dirs for r in every_interval(d)])))
        print()
    for d in a.dirs:
        if not (d / "results" / "comparisons.csv").exists():  # a campaign: its ratios above
            continue
        c = pd.read_csv(d / "results" / "comparisons.csv")
        c = c[(c.metric == "ticks") & c.speedup.notna()]
        if "resolution" not in c:  # an older pqsimd: no resolution recorded
            c = c.assign(resolution=float("nan"), resolution_limited=False)
        if a.scheme:
            c = c[c.scheme == a.scheme]
        width = c.ci_high - c.ci_low
        # the resolution is a relative half-width on each side of the ratio
        narrower = (width < (c.speedup * c.resolution.fillna(0)) * 0.999).sum()
        show = subprocess.run([str(pqsimd), "show", str(d)], capture_output=True, text=True,
                              env={"COLUMNS": "400", "PATH": "/usr/bin:/bin"}).stdout
        row = {"study": d.name, "comparisons": len(c), "zero-width": int((width <= 0).sum()),
               "narrower than resolution": int(narrower), "resolution-limited": int(c.resolution_limited.fillna(False).astype(bool).sum()),
               "`± 0.0%` in show": show.count("± 0.0%"), "median resolution": "n/a" if c.resolution.isna().all() else f"{c.resolution.median():.3%}"}
        if fine is not None:
            m = c.merge(fine, on=KEY, suffixes=("", "_fine"))
            inside = (m.ci_low <= m.speedup_fine) & (m.speedup_fine <= m.ci_high)
            overlap = (m.ci_low <= m.ci_high_fine) & (m.ci_low_fine <= m.ci_high)
            row.update({"fine's speedup inside": f"{int(inside.sum())}/{len(m)}",
                        "intervals overlap": f"{int(overlap.sum())}/{len(m)}",
                        "median |log ratio| vs fine": f"{(m.speedup / m.speedup_fine).apply(lambda x: abs(__import__('math').log(x))).median():.2%}"})
        rows.append(row)
    if rows:
        print(md(pd.DataFrame(rows)))


if __name__ == "__main__":
    main()
