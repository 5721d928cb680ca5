"""The comparison family: stage, cumulative and extra comparisons, their statistics and verdicts."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from . import bootstrap as bs
from .effect import delta_from_u, delta_job_bootstrap, pair_balance, u_statistic
from .groups import Group
from .settings import Settings, parallel_map
from .significance import bh, holm, job_test, mwu_less_many

STANDARD = ("refo0", "refnv", "ref", "avx2")
STAGES = (("compiler", "refo0", "refnv"), ("autovec", "refnv", "ref"), ("hand_simd", "ref", "avx2"))
COLUMNS = [
    "metric", "scheme", "op", "baseline", "variant", "stage", "speedup", "ci_low", "ci_high",
    "hci_low", "hci_high", "hci_reliable", "mwu_p", "cliffs_delta", "delta_ci_low", "delta_ci_high",
    "job_p", "p_holm", "p_bh", "verdict", "reason", "deterministic", "n_base", "n_var", "jobs_base",
    "jobs_var", "median_base", "median_var", "note",
]


def resample_groups(groups: dict[tuple[str, str, str, str], Group], settings: Settings) -> None:
    """Both bootstraps of every group with positive values (B replicates of its median each), and the
    stage-1 job draws δ reuses. One generator per group (seed + group key), so neither the order nor
    the thread changes a result."""

    def one(item) -> None:
        key, g = item
        if not g.positive:
            return
        rng = bs.rng_for(settings.seed, "hierarchical", *key)
        g.job_counts = bs.job_counts(g.n_jobs, settings.n_boot, rng)
        if g.deterministic:  # every resample has the same median
            g.boot_naive = g.boot_hier = np.full(settings.n_boot, g.median)
            return
        g.boot_naive = bs.naive_medians(g.sample, settings.n_boot, bs.rng_for(settings.seed, "naive", *key))
        g.boot_hier = bs.hierarchical_medians(g.sample, settings.n_boot, rng, g.job_counts)

    parallel_map(one, groups.items())


def plan_pairs(variants: Sequence[str], extra_baseline: str) -> tuple[list[tuple[str, str, str]], list[str]]:
    """(stage, baseline, variant) for the variants present, and warnings.

    refo0→refnv is both the compiler stage and the first cumulative step; it is listed once, as
    `compiler`. The cumulative chain is every row with baseline == refo0."""
    vs = list(dict.fromkeys(variants))
    pairs: list[tuple[str, str, str]] = []
    warnings: list[str] = []
    for stage, b, v in STAGES:
        if b in vs and v in vs:
            pairs.append((stage, b, v))
    if "refo0" in vs:
        for v in vs:
            if v != "refo0" and ("refo0", v) not in {(b, x) for _, b, x in pairs}:
                pairs.append(("cumulative", "refo0", v))
    extras = [v for v in vs if v not in STANDARD and v != extra_baseline]
    if extras:
        if extra_baseline in vs:
            for v in extras:
                if (extra_baseline, v) not in {(b, x) for _, b, x in pairs}:
                    pairs.append(("extra", extra_baseline, v))
        else:
            warnings.append(
                f"extra variant(s) {', '.join(extras)} not compared with '{extra_baseline}': "
                f"the study has no '{extra_baseline}' (set [analysis] extra_baseline in study.toml)"
            )
    return pairs, warnings


def _na_row(metric, scheme, op, stage, baseline, variant, base, var, reason) -> dict:
    row = {c: math.nan for c in COLUMNS}
    row.update(
        metric=metric, scheme=scheme, op=op, baseline=baseline, variant=variant, stage=stage,
        hci_reliable=False, verdict="n/a", reason=reason, deterministic=False,
        n_base=base.values.size if base else 0, n_var=var.values.size if var else 0,
        jobs_base=base.n_jobs if base else 0, jobs_var=var.n_jobs if var else 0,
        median_base=base.median if base else math.nan, median_var=var.median if var else math.nan,
        note=reason,
    )
    return row


def compare_pair(base: Group, var: Group, stage: str, settings: Settings, u: float, p: float) -> dict:
    """One comparison's row; u, p: the Mann-Whitney U of the variant sample and its one-sided p."""
    s = base.median / var.median
    n_b, n_v = base.values.size, var.values.size
    delta = delta_from_u(u, n_v, n_b)
    notes = []
    row = {
        "metric": base.metric, "scheme": base.scheme, "op": base.op, "baseline": base.variant,
        "variant": var.variant, "stage": stage, "speedup": s, "n_base": n_b, "n_var": n_v,
        "jobs_base": base.n_jobs, "jobs_var": var.n_jobs, "median_base": base.median,
        "median_var": var.median, "cliffs_delta": delta,
        "hci_reliable": min(base.n_jobs, var.n_jobs) >= settings.min_jobs_reliable,
    }
    if base.deterministic and var.deterministic:
        row.update(ci_low=s, ci_high=s, hci_low=s, hci_high=s, delta_ci_low=delta, delta_ci_high=delta,
                   mwu_p=math.nan, job_p=math.nan, deterministic=True, hci_reliable=True)
        notes.append("deterministic: zero-width CIs, p-values n/a, verdict from the exact ratio")
    else:
        bal = pair_balance(base.sample, var.sample, base.job, var.job, base.values, var.values)
        dboot = delta_job_bootstrap(bal, base.sample.sizes, var.sample.sizes, base.job_counts, var.job_counts)
        jp, jnote = job_test(base.job_medians, var.job_medians)
        if jnote:
            notes.append(jnote)
        # the percentile intervals of these replicates are filled in by compare_all, many rows at once
        row["_replicates"] = (base.boot_naive / var.boot_naive, base.boot_hier / var.boot_hier, dboot)
        row.update(mwu_p=p, job_p=jp, deterministic=False)
        if not np.isfinite(p):
            notes.append("MWU n/a: no variation in either group")
    if not row["hci_reliable"]:
        notes.append(f"hierarchical CI unreliable: fewer than {settings.min_jobs_reliable} jobs in a group")
    row["note"] = "; ".join(notes)
    return row


def fill_intervals(rows: list[dict], chunk: int = 256) -> None:
    """Percentile 95% intervals of the rows' bootstrap replicates, one np.quantile call per chunk."""
    todo = [r for r in rows if "_replicates" in r]
    for start in range(0, len(todo), chunk):
        part = todo[start:start + chunk]
        for k, (lo, hi) in enumerate((("ci_low", "ci_high"), ("hci_low", "hci_high"),
                                      ("delta_ci_low", "delta_ci_high"))):
            q = np.quantile(np.stack([r["_replicates"][k] for r in part]), [0.025, 0.975], axis=1)
            for i, r in enumerate(part):
                r[lo], r[hi] = float(q[0, i]), float(q[1, i])
        for r in part:
            del r["_replicates"]


def verdicts(df: pd.DataFrame, settings: Settings) -> pd.DataFrame:
    """Adjust job_p over the family (every comparison with a defined job_p) and decide verdicts."""
    df = df.copy()
    df["p_holm"] = holm(df["job_p"].to_numpy(dtype=float)) if len(df) else []
    df["p_bh"] = bh(df["job_p"].to_numpy(dtype=float)) if len(df) else []
    up, down = 1.0 + settings.threshold, 1.0 / (1.0 + settings.threshold)
    padj_col = "p_holm" if settings.adjust == "holm" else "p_bh"
    verdict, reason = [], []
    for r in df.itertuples(index=False):
        if r.verdict == "n/a":
            verdict.append("n/a")
            reason.append(r.reason)
            continue
        if r.deterministic:
            if r.speedup > up:
                verdict.append("faster"); reason.append(f"exact ratio > {up:g}")
            elif r.speedup < down:
                verdict.append("slower"); reason.append(f"exact ratio < {down:.4g}")
            else:
                verdict.append("~"); reason.append(f"exact ratio within ±{settings.threshold:.0%}")
            continue
        padj = getattr(r, padj_col)
        if not np.isfinite(padj):
            verdict.append("~"); reason.append("no job-level test (fewer than 2 jobs in a group, or no spread)")
        elif padj >= settings.alpha:
            verdict.append("~"); reason.append(f"{padj_col} = {padj:.3g} >= alpha = {settings.alpha:g}")
        elif r.hci_low > up:
            verdict.append("faster"); reason.append(f"{padj_col} < alpha and hierarchical CI > {up:g}")
        elif r.hci_high < down:
            verdict.append("slower"); reason.append(f"{padj_col} < alpha and hierarchical CI < {down:.4g}")
        else:
            verdict.append("~"); reason.append(f"hierarchical CI reaches into ±{settings.threshold:.0%}")
    df["verdict"] = verdict
    df["reason"] = reason
    return df


def compare_all(groups: dict[tuple[str, str, str, str], Group], variants: Sequence[str],
                ops_order: Sequence[str], settings: Settings) -> tuple[pd.DataFrame, list[str]]:
    pairs, warnings = plan_pairs(variants, settings.extra_baseline)
    rows = []
    metric_scheme_ops: dict[tuple[str, str], list[str]] = {}
    for (metric, scheme, op, _v) in groups:
        metric_scheme_ops.setdefault((metric, scheme), [])
        if op not in metric_scheme_ops[(metric, scheme)]:
            metric_scheme_ops[(metric, scheme)].append(op)
    rank = {o: i for i, o in enumerate(ops_order)}
    for (metric, scheme), ops in metric_scheme_ops.items():
        for op in sorted(ops, key=lambda o: (rank.get(o, len(rank)), o)):
            for stage, b, v in pairs:
                base, var = groups.get((metric, scheme, op, b)), groups.get((metric, scheme, op, v))
                if base is None and var is None:
                    continue
                if base is None or var is None:
                    missing = b if base is None else v
                    rows.append(_na_row(metric, scheme, op, stage, b, v, base, var,
                                        f"no data for variant {missing} ({metric}, {scheme}, {op})"))
                    continue
                if not (base.positive and var.positive):
                    bad = base.variant if not base.positive else var.variant
                    rows.append(_na_row(metric, scheme, op, stage, b, v, base, var,
                                        f"spin medians <= 0 for {bad} (below timer resolution after overhead "
                                        f"subtraction): speedup undefined"))
                    continue
                rows.append((base, var, stage))
    live = [r for r in rows if isinstance(r, tuple) and not (r[0].deterministic and r[1].deterministic)]
    u, p = mwu_less_many([(var.values, base.values) for base, var, _ in live])
    mwu = {(id(b), id(v)): (u[i], p[i]) for i, (b, v, _) in enumerate(live)}
    out = []
    for r in rows:
        if isinstance(r, dict):
            out.append(r)
            continue
        base, var, stage = r
        uu, pp = mwu.get((id(base), id(var)), (u_statistic(var.values, base.values), math.nan))
        out.append(compare_pair(base, var, stage, settings, uu, pp))
    fill_intervals(out)
    df = pd.DataFrame(out, columns=COLUMNS)
    df = verdicts(df, settings)
    return df, warnings
