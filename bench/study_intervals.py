"""Issue 27's checks on analysed studies: zero-width intervals, intervals narrower than their
resolution, resolution-limited rows, `± 0.0%` in `show`, and (with --fine) whether each study's
intervals contain a fine-clock study's speedups of the same comparisons.

    .venv/bin/python bench/study_intervals.py DIR [DIR ...] [--fine FINE_DIR] [--scheme S]
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("dirs", nargs="+", type=Path)
    ap.add_argument("--fine", type=Path, default=None)
    ap.add_argument("--scheme", default=None)
    ap.add_argument("--pqsimd", type=Path, default=Path(sys.executable).with_name("pqsimd"),
                    help="the pqsimd that made the studies (its show)")
    a = ap.parse_args()
    fine = None
    if a.fine:
        fine = pd.read_csv(a.fine / "results" / "comparisons.csv")
        fine = fine[fine.metric == "ticks"][KEY + ["speedup", "ci_low", "ci_high"]]
    rows = []
    pqsimd = a.pqsimd
    for d in a.dirs:
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
    print(md(pd.DataFrame(rows)))


if __name__ == "__main__":
    main()
