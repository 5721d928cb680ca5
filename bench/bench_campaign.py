"""Coverage, false alarms and power of the campaign's ratio-of-speedups interval, by resampling
real studies (no machine effect by construction).

    .venv/bin/python bench/bench_campaign.py [STUDY ...] [--reps 100] [--boot 1000] [--seed 1]

For every comparison of each STUDY (paired, ticks, sign method, not the self-check op) its J job
log ratios (log job median of the baseline - of the variant, rebuilt from spins.parquet as
analyze/campaign.py does) are the population. Two "machines" are made from it:
  split     the J jobs split at random into two halves (J/2 each): two machines of the same host;
  resample  two independent draws of J jobs with replacement: two machines whose job effects come
            from the same distribution.
Truth: no machine effect, log ratio 0. For each, the campaign's estimand (the difference of the two
median job log ratios) and its interval (percentile bootstrap resampling each machine's jobs
independently, analyze/campaign.py's `ratio_bootstrap`) at 95%: coverage of 0, and the false-alarm
rate (verdict larger/smaller against the study's ±threshold). Then the same with the whole study's
family at once (every comparison one ratio, FCR level as the campaign prints it): the share of
comparisons given a machine effect. Power: machine B's job ratios multiplied by 1.05 and by 1.3
(resample design): the share found `larger` at the FCR level.

Prints Markdown tables; nothing is asserted (tests/test_campaign.py asserts behaviour).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from pqsimd.analyze.campaign import job_medians  # noqa: E402
from pqsimd.stats.campaign import ArmJobs, ratio_bootstrap  # noqa: E402
from pqsimd.stats.decision import empirical as decision_p, percentile_interval  # noqa: E402
from pqsimd.stats.interval import verdict_of  # noqa: E402
from pqsimd.stats.multiplicity import family_level  # noqa: E402
from mdtable import md  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "studies"


def job_ratio_sets(study: Path) -> list[np.ndarray]:
    """Every paired ticks comparison's job log ratios (self-check ops left out)."""
    summ = json.loads((study / "results" / "summary.json").read_text())
    checks = {f.get("self_check") for f in (summ.get("families") or {}).values()}
    jm = job_medians(pd.read_parquet(study / "results" / "spins.parquet"))
    comps = pd.read_parquet(study / "results" / "comparisons.parquet")
    comps = comps[(comps["method"] == "sign") & (comps["metric"] == "ticks") & ~comps["op"].isin(checks)]
    out = []
    for r in comps.drop_duplicates(["scheme", "op", "baseline", "variant", "compiler"]).itertuples(index=False):
        b = jm.get((r.metric, r.scheme, r.op, r.baseline, r.baseline_compiler))
        v = jm.get((r.metric, r.scheme, r.op, r.variant, r.compiler))
        if b is None or v is None:
            continue
        x = (np.log(b[b > 0]) - np.log(v[v > 0])).dropna().to_numpy()
        if x.size >= 4:
            out.append(x)
    return out


def one_ratio(a: np.ndarray, b: np.ndarray, rng, n_boot: int) -> tuple[float, np.ndarray]:
    ea = ArmJobs("paired", ratios=pd.Series(a))
    eb = ArmJobs("paired", ratios=pd.Series(b))
    return ea.estimate - eb.estimate, ratio_bootstrap(ea, eb, False, rng, n_boot)


def machines(x: np.ndarray, design: str, rng, effect: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    if design == "split":
        p = rng.permutation(x.size)
        h = x.size // 2
        return x[p[:h]], x[p[h:2 * h]] + effect
    return rng.choice(x, x.size, replace=True), rng.choice(x, x.size, replace=True) + effect


def simulate(sets: list[np.ndarray], design: str, reps: int, n_boot: int, band: float, alpha: float, rng,
             effect: float = 0.0) -> dict:
    """Per replicate: every comparison's ratio at 95% (single) and at the family's FCR level."""
    cover = alarm = n = 0
    fam_alarm, fam_found, fam_cover, fam_n = [], [], 0, 0
    for _ in range(reps):
        boots, points = [], []
        for x in sets:
            a, b = machines(x, design, rng, effect)
            point, boot = one_ratio(b, a, rng, n_boot)  # B / A: > 0 is a larger speedup on B
            lo, hi = percentile_interval(boot, alpha)
            cover += lo <= effect <= hi
            alarm += verdict_of(lo, hi, band) in ("faster", "slower")
            n += 1
            boots.append(boot)
            points.append(point)
        fam = family_level(np.array([decision_p(b, band) for b in boots]), alpha, "fcr")
        verdicts = []
        for boot in boots:
            lo, hi = percentile_interval(boot, fam.gamma)
            fam_cover += lo <= effect <= hi
            fam_n += 1
            verdicts.append(verdict_of(lo, hi, band))
        fam_alarm.append(np.mean([v in ("faster", "slower") for v in verdicts]))
        fam_found.append(np.mean([v == "faster" for v in verdicts]))
    return {"coverage_95": cover / n, "false_alarm_95": alarm / n, "coverage_fcr": fam_cover / fam_n,
            "machine_effects_fcr": float(np.mean(fam_alarm)), "found_larger_fcr": float(np.mean(fam_found))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("studies", nargs="*", type=Path)
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--boot", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    studies = args.studies or sorted(p for p in SHARED.glob("*") if (p / "results" / "spins.parquet").exists())
    rng = np.random.default_rng(args.seed)
    rows = []
    for study in studies:
        settings = json.loads((study / "results" / "summary.json").read_text()).get("settings", {})
        band, alpha = math.log1p(float(settings.get("threshold", 0.02))), float(settings.get("alpha", 0.05))
        sets = job_ratio_sets(study)
        j = int(np.median([x.size for x in sets]))
        for design, effect, what in (("split", 0.0, "none"), ("resample", 0.0, "none"),
                                     ("resample", math.log(1.05), "×1.05"), ("resample", math.log(1.3), "×1.3")):
            r = simulate(sets, design, args.reps, args.boot, band, alpha, rng, effect)
            size = f"{j // 2} vs {j // 2}" if design == "split" else f"{j} vs {j}"
            rows.append({"study": study.name, "machines": design, "jobs": size, "true effect": what,
                         "comparisons": len(sets)} | {k: round(v, 4) for k, v in r.items()})
            print(rows[-1], file=sys.stderr, flush=True)
    print(md(pd.DataFrame(rows)))


if __name__ == "__main__":
    main()
