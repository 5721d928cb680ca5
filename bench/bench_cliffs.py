"""The cliff rule (analyze/cliffs.py): its false-flag rate, its power, and the cliff tables of real studies.

    .venv/bin/python bench/bench_cliffs.py \
        --zen5 ../shared/studies/zen5-ml-kem-layouts \
        --study studies/std --aa studies/aa-copies --split studies/split-bench

* **Cliff table** of each study (--study, --zen5): the flagged groups and the cliff copies, the rule
  applied to per-copy medians computed from results/spins.parquet (every spin median with its job and
  copy), exactly as `pqsimd analyze` does (analyze.cliffs.flag; the group's clock resolution from
  results/groups).
* **False flags on A/A copies** (--aa: a study made by bench/aa_copies.py, every copy of a build the
  same bytes and stack offset in every job): each flagged group is a false flag; the rate is per group
  judged, and per copy.
* **Ground truth** (--split: a study of the `split` fixture family, tests/fixtures/families/split.toml):
  each copy of `split_load` is a true cliff exactly when the linker put `pqsimd_split_buf` at 56 mod 64
  (read from the copy made again from its job record); `aligned_load` copies are never cliffs.
  Sensitivity and false flags against that truth.
* **Power on real copies** (plasmode, --zen5 and --study): in every judged group without a flag, one
  copy drawn at random has its median multiplied by f (f = 1.05 ... 1.6: a cliff of that size added to
  real copies, with the group's real spread and real job effects); power = how often the rule flags
  that copy. Draws per group and size: --draws.
"""

from __future__ import annotations

import argparse
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

from pqsimd.analyze.cliffs import MIN_COPIES, SIZE, Z, flag, rule_text

KEYS = ["metric", "scheme", "op", "variant", "compiler"]
SIZES = (1.05, 1.10, 1.15, 1.20, 1.30, 1.50)


def copies_of(study: Path) -> tuple[pd.DataFrame, dict]:
    """Per-copy medians (KEYS, job, copy, median) of a study's timed groups, and each group's relative
    clock resolution."""
    s = pd.read_parquet(study / "results" / "spins.parquet")
    s = s[(s["metric"] == "ticks") & (s["layout"] >= 0)]
    alone = s["job"].astype(str).str.startswith("alone.")
    s = s[~alone]
    c = (s.groupby([*KEYS, "job", "layout"], observed=True)["value"].median().reset_index()
         .rename(columns={"layout": "copy", "value": "median"}))
    res = {}
    g = study / "results" / "groups.csv"
    if g.exists():
        gd = pd.read_csv(g)
        if "resolution_rel" in gd.columns:
            for r in gd.itertuples():
                v = r.resolution_rel
                res[(r.metric, r.scheme, r.op, r.variant, r.compiler)] = float(v) if v == v else 0.0
    return c, res


def judge(copies: pd.DataFrame, res: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows, flagged = [], []
    for key, g in copies.groupby(KEYS, observed=True, sort=False):
        out, row = flag(g.reset_index(drop=True), res.get(tuple(key), 0.0))
        rows.append(dict(zip(KEYS, key)) | row)
        flagged.append(out.assign(**dict(zip(KEYS, key))))
    return pd.DataFrame(rows), pd.concat(flagged, ignore_index=True)


def judged(groups: pd.DataFrame) -> pd.DataFrame:
    return groups[(groups["n_copies"] >= MIN_COPIES) & ~groups["note"].str.contains("<= 0|not judged", na=False)
                  & (groups["op"] != "empty")]


def cliff_table(groups: pd.DataFrame) -> str:
    g = groups[groups["cliff"]].sort_values("worst_norm", ascending=False)
    lines = ["| set | op | build | copies | norm q10–q90 | worst (job, copy) | in its job | cliff copies |",
             "|---|---|---|---|---|---|---|---|"]
    for r in g.itertuples():
        cc = "; ".join(re.sub(r" seed \d+| stack \d+", "", x).replace("job paired.", "").replace(" copy ", " c")
                       for x in str(r.cliff_copies).split("; "))
        lines.append(f"| {r.scheme} | {r.op} | {r.variant} | {r.n_copies} | {r.norm_q10:.3f}–{r.norm_q90:.3f} | "
                     f"{r.worst_norm:.2f}× ({str(r.worst_job).replace('paired.', '')}, {r.worst_copy}) | "
                     f"{math.exp(r.worst_within_job):.2f}× | {cc} |")
    return "\n".join(lines)


def findings(flagged: pd.DataFrame) -> list[str]:
    c = flagged[flagged["cliff"]]
    out = []
    for (s, v, j, k), g in c.groupby(["scheme", "variant", "job", "copy"], sort=False):
        g = g.sort_values("norm", ascending=False)
        out.append(f"{s} {v} {str(j).replace('paired.', '')} copy {k}: " +
                   ", ".join(f"{o} {n:.2f}×" for o, n in zip(g["op"], g["norm"])))
    return out


def power(copies: pd.DataFrame, groups: pd.DataFrame, res: dict, draws: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    ok = judged(groups)
    ok = ok[~ok["cliff"]]
    keys = set(map(tuple, ok[KEYS].to_numpy()))
    rows = []
    for key, g in copies.groupby(KEYS, observed=True, sort=False):
        if tuple(key) not in keys:
            continue
        g = g.reset_index(drop=True)
        for f in SIZES:
            hits = 0
            for _ in range(draws):
                i = int(rng.integers(len(g)))
                x = g.copy()
                x.loc[i, "median"] *= f
                out, _ = flag(x, res.get(tuple(key), 0.0))
                hits += bool(out.loc[i, "cliff"])
            rows.append(dict(zip(KEYS, key)) | {"size": f, "draws": draws, "hits": hits})
    return pd.DataFrame(rows)


def power_table(p: pd.DataFrame) -> str:
    t = p.groupby("size")[["hits", "draws"]].sum()
    t["power"] = t["hits"] / t["draws"]
    return " · ".join(f"{s:.2f}×: {r.power:.1%}" for s, r in t.iterrows())


def split_truth(study: Path) -> pd.DataFrame:
    """Per copy of the split fixture study: whether pqsimd_split_buf sits at 56 mod 64 (made again from
    its job record) beside the rule's flag."""
    import tempfile

    from pqsimd import layout, placement, store
    from pqsimd.studydir import StudyDir

    sd = StudyDir(study)
    copies, res = copies_of(study)
    groups, flagged = judge(copies, res)
    truth = {}
    with tempfile.TemporaryDirectory() as tmp:
        for rec in sd.job_records().values():
            if not rec or not rec.get("layout"):
                continue
            for b, e in rec["layout"]["builds"].items():
                for c in e["copies"]:
                    out = Path(tmp) / "c.so"
                    layout.relink_recorded(c["link"], c["seed"], out)
                    assert store.sha256_file(out) == c["sha256"]
                    a = next(s.addr for s in placement.symbols(out) if s.name == "pqsimd_split_buf")
                    truth[(rec["id"], b.split(".")[0], int(c["index"]))] = a % 64 == 56
    f = flagged[flagged["op"].isin(["split_load", "aligned_load"])].copy()
    f["split"] = [truth[(j, v, int(c))] and o == "split_load" for j, v, c, o in
                  zip(f["job"], f["variant"], f["copy"], f["op"])]
    return f


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--zen5", type=Path)
    ap.add_argument("--study", type=Path, action="append", default=[])
    ap.add_argument("--aa", type=Path)
    ap.add_argument("--split", type=Path)
    ap.add_argument("--draws", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    print(f"rule: {rule_text()}\n")
    for name, study in ([("Zen 5", a.zen5)] if a.zen5 else []) + [(str(s), s) for s in a.study]:
        copies, res = copies_of(study)
        groups, flagged = judge(copies, res)
        j = judged(groups)
        print(f"## {name}: {int(j['cliff'].sum())} of {len(j)} judged groups flagged, "
              f"{int(flagged['cliff'].sum())} of {len(flagged)} copies\n")
        print(cliff_table(groups) + "\n")
        print("one finding per cliff copy:\n" + "\n".join(f"- {x}" for x in findings(flagged)) + "\n")
        p = power(copies, groups, res, a.draws, a.seed)
        print(f"power on its unflagged groups ({p[['scheme', 'op', 'variant']].drop_duplicates().shape[0]} groups, "
              f"{a.draws} draws each): {power_table(p)}\n")
    if a.aa:
        copies, res = copies_of(a.aa)
        groups, flagged = judge(copies, res)
        j = judged(groups)
        fl = flagged.merge(j[KEYS], on=KEYS)
        print(f"## A/A copies ({a.aa}): {int(j['cliff'].sum())} of {len(j)} judged groups flagged "
              f"({j['cliff'].mean():.2%}); {int(fl['cliff'].sum())} of {len(fl)} copies")
        print(f"largest norm of any A/A copy: {fl['norm'].max():.3f}×; 99th percentile "
              f"{fl['norm'].quantile(0.99):.4f}; largest within-job contrast {math.exp(fl['within_job'].max()):.3f}×")
        if j["cliff"].any():
            print(cliff_table(groups))
        print()
    if a.split:
        f = split_truth(a.split)
        t = f[f["split"]]
        n = f[~f["split"]]
        print(f"## split fixture ({a.split}): {int(t['cliff'].sum())} of {len(t)} true cliff copies flagged "
              f"(sensitivity {t['cliff'].mean():.0%}), {int(n['cliff'].sum())} of {len(n)} other copies flagged; "
              f"true cliffs {t['norm'].min():.2f}-{t['norm'].max():.2f}×, others {n['norm'].min():.3f}-"
              f"{n['norm'].max():.3f}×\n")


if __name__ == "__main__":
    main()
