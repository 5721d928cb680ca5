"""The clock's resolution in each group of a study, read from its raw files (any pqsimd version).

Resolution of a group = the clock's step / calls per sample / the group's median per-call ticks: how
far apart the values one sample can take are, as a share of the op's time. Used for issue 27's
"before and after": a study of an older pqsimd (whose calibration misread the step) is read with the
step given on the command line.

    .venv/bin/python bench/study_resolution.py DIR [DIR ...] [--step 2]

A study without raw/ (../shared/studies/*) is read from its results/spins.parquet.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).parent))
from mdtable import md  # noqa: E402


def groups(directory: Path, step: float | None) -> pd.DataFrame:
    if not (directory / "raw").is_dir():  # a shared study (results only): its spin medians
        return _groups_from_spins(directory, step)
    frames = []
    for path in sorted((directory / "raw").glob("*.parquet")):
        t = pq.read_table(path).to_pandas()
        meta = pq.read_schema(path).metadata or {}
        record = json.loads(meta.get(b"pqsimd.job", b"{}") or b"{}")
        if record.get("design") == "alone":
            continue
        s = step or (record.get("calibration") or {}).get("step") or 1
        if "warmup" in t:
            t = t[~t["warmup"].astype(bool)]
        t = t[t["metric"] == "ticks"] if "metric" in t else t
        t = t[t["op"] != "empty"]  # the self-check op costs ~0 ticks: no resolution to speak of
        t = t.assign(lattice=s / t["batch"])
        frames.append(t[["scheme", "op", "variant", "per_call", "lattice", "batch"]])
    d = pd.concat(frames)
    g = d.groupby(["scheme", "op", "variant"]).agg(median=("per_call", "median"), lattice=("lattice", "median"),
                                                     batch=("batch", "median"))
    g["resolution"] = g["lattice"] / g["median"].abs()
    return g.reset_index()


def _groups_from_spins(directory: Path, step: float | None) -> pd.DataFrame:
    """The same from results/spins.parquet (per-call spin medians, batch) of a study without raw/; the
    step is --step, else the one its summary's clock names."""
    t = pd.read_parquet(directory / "results" / "spins.parquet")
    t = t[(t["metric"] == "ticks") & (t["op"] != "empty")]
    if step is None:
        clocks = (json.loads((directory / "results" / "summary.json").read_text()).get("clock") or {}).get("clocks") or {}
        steps = [float(k.split(" step ")[1].split()[0]) for k in clocks if " step " in k]
        step = max(steps) if steps else 1.0
    t = t.assign(lattice=step / t["batch"].astype(float), per_call=t["value"])
    g = t.groupby(["scheme", "op", "variant"], observed=True).agg(
        median=("per_call", "median"), lattice=("lattice", "median"), batch=("batch", "median"))
    g["resolution"] = g["lattice"] / g["median"].abs()
    return g.reset_index()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("dirs", nargs="+", type=Path)
    ap.add_argument("--step", type=float, default=None, help="the clock's true step (older studies misread it)")
    a = ap.parse_args()
    rows = []
    for d in a.dirs:
        g = groups(d, a.step)
        r = g["resolution"]
        rows.append({"study": d.name, "groups": len(g), "median batch": float(g["batch"].median()),
                     "> 0.1%": int((r > 0.001).sum()), "> 0.2%": int((r > 0.002).sum()),
                     "> 1%": int((r > 0.01).sum()), "median": f"{np.median(r):.4%}", "worst": f"{r.max():.3%}",
                     "worst group": " ".join(map(str, g.loc[r.idxmax(), ["scheme", "op", "variant"]]))})
    print(md(pd.DataFrame(rows)))


if __name__ == "__main__":
    main()
