"""Identical code in a study, by rule (issue 33): the comparisons whose two builds run the same
instructions for the op (the normalized call trees hash alike), the same up to commuted operands
(verify/codehash.commuted), and the check's size: how many rows, the miss rate that no false verdict in
them still allows, and how many rows it would take to test the family's level.

    .venv/bin/python bench/identical_code.py STUDY

Reads STUDY/bin (the installed builds and the driver) and STUDY/results/comparisons.csv; prints
Markdown. Nothing is timed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from pqsimd.analyze.layout import identical_code_how  # noqa: E402
from pqsimd.stats.layout import zero_miss_bound  # noqa: E402
from pqsimd.layout import op_offsets  # noqa: E402
from pqsimd.binary import library  # noqa: E402
from pqsimd.verify.codehash import op_hashes  # noqa: E402
from mdtable import md  # noqa: E402


def main() -> None:
    study = Path(sys.argv[1])
    comps = pd.read_csv(study / "results" / "comparisons.csv")
    comps = comps[(comps["metric"] == "ticks") & (comps["stage"] != "aa")]
    driver = study / "bin" / "driver"
    code, comm = {}, {}
    for lib in sorted((study / "bin").glob("*.so")):
        variant, compiler, _family = lib.name[:-3].split(".")
        funcs = library(lib)
        for scheme in sorted(set(comps["scheme"])):
            offs = op_offsets(driver, lib, scheme)
            for op, h in op_hashes(funcs, offs).items():
                code[(variant, compiler, scheme, op)] = h
            for op, h in op_hashes(funcs, offs, commute=True).items():
                comm[(variant, compiler, scheme, op)] = h
    how = identical_code_how(comps, code, comm)
    rows = comps.assign(how=how)[how != ""]
    out = rows[["scheme", "op", "baseline", "variant", "how", "speedup", "ci_low", "ci_high", "ci_level", "verdict"]]
    print(md(out.reset_index(drop=True)))
    summ = json.loads((study / "results" / "summary.json").read_text())
    gamma = float(summ["family"]["gamma"])
    n = len(rows)
    import math
    need = math.ceil(math.log(0.05) / math.log(1 - gamma))
    print(f"\n{n} identical-code comparisons ({(how == 'same instructions').sum()} same instructions, "
          f"{(how == 'commuted operands').sum()} up to commuted operands); faster/slower verdicts: "
          f"{int(rows['verdict'].isin(['faster', 'slower']).sum())}; with none in {n} rows a miss rate up to "
          f"{zero_miss_bound(n):.0%} is still possible (95%); testing the family's miss rate {gamma:.2%} takes "
          f"{need} rows without a miss")


if __name__ == "__main__":
    main()
