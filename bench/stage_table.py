"""One stage's factors from an analysed study, as the Markdown tables in BENCHMARKS.md.

    .venv/bin/python bench/stage_table.py DIR --stage autovec --ops ntt,invntt,basemul,poly_frommsg --by compiler
    .venv/bin/python bench/stage_table.py DIR --stage hand_simd --by scheme

--by compiler: rows = op, columns = compilers, each cell the factor over the study's parameter
sets (one value, or min–max), per metric. --by scheme: rows = op, columns = parameter sets
(the primary compiler). Reads DIR/results/comparisons.csv only (what `pqsimd analyze` wrote);
verdict marks as in the report: none = faster, ~ inconclusive, ▼ slower, ≈ same.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

MARK = {"faster": "", "slower": " ▼", "same": " ≈", "~": " ~", "withheld": " ⊘", "n/a": " n/a"}


def cell(rows: pd.DataFrame, digits: int) -> str:
    rows = rows[rows["speedup"].notna()]  # n/a rows (capped, absent) say why in comparisons.csv
    if rows.empty:
        return "n/a"
    lo, hi = rows["speedup"].min(), rows["speedup"].max()
    fmt = f"{{:.{digits}f}}"
    text = fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else f"{fmt.format(lo)}–{fmt.format(hi)}"
    if len(rows) == 1:
        text += MARK.get(str(rows["verdict"].iloc[0]), "")
    return text


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("directory", type=Path)
    ap.add_argument("--stage", default="hand_simd")
    ap.add_argument("--ops", default=None, help="comma list (default: every op with that stage)")
    ap.add_argument("--by", choices=["compiler", "scheme"], default="scheme")
    ap.add_argument("--metric", default=None, help="comma list (default: every metric of the study)")
    ap.add_argument("--digits", type=int, default=2)
    ap.add_argument("--schemes", default=None, help="comma list of parameter sets, or a prefix ending in '*' (default: all)")
    args = ap.parse_args()
    path = args.directory / "results" / "comparisons.csv"
    if not path.exists():
        sys.exit(f"no {path}; run `pqsimd analyze {args.directory}` first")
    c = pd.read_csv(path, keep_default_na=False, na_values=["n/a"])
    c = c[(c["stage"] == args.stage) & (c["compiler"] == c["baseline_compiler"])]
    if args.schemes:
        keep = args.schemes.split(",")
        c = c[c["scheme"].map(lambda s: any(s == k or (k.endswith("*") and s.startswith(k[:-1])) for k in keep))]
    if c.empty:
        sys.exit(f"no {args.stage} comparisons in {path}")
    ops = args.ops.split(",") if args.ops else list(dict.fromkeys(c["op"]))
    metrics = args.metric.split(",") if args.metric else list(dict.fromkeys(c["metric"]))
    first = c.iloc[0]
    print(f"{args.stage} ({first['baseline']} → {first['variant']}), {args.directory}")
    for metric in metrics:
        m = c[(c["metric"] == metric) & c["speedup"].notna()]
        if m.empty:
            continue
        if args.by == "scheme":
            m = m[m["compiler"] == m["compiler"].iloc[0]]
        cols = list(dict.fromkeys(m[args.by]))
        print(f"\n{metric}\n")
        print("| op | " + " | ".join(cols) + " |")
        print("|---|" + "---|" * len(cols))
        for op in ops:
            r = m[m["op"] == op]
            if r.empty:
                continue
            print(f"| {op} | " + " | ".join(cell(r[r[args.by] == col], args.digits) for col in cols) + " |")


if __name__ == "__main__":
    main()
