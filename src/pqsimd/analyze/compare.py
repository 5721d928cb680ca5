"""The comparison family: chain stages, cumulative, extra and cross-compiler comparisons, their
statistics and verdicts.

Which comparisons exist comes from the chain (data/variants.toml [chain], carried in
summary.json): per compiler, each step of the chain (stage), first → every other variant
(cumulative), variants outside the chain → extra_baseline (extra); with several compilers, each
variant under every compiler against the same variant under the study's first compiler
(cross_compiler).

Two designs: groups measured in separate processes are independent (ratio of medians, two-group
bootstraps, Welch on job medians); groups measured in the same paired jobs are compared spin by
spin (median of per-spin ratios, bootstrap of the ratios over jobs then spins, one-sample t-test
on the jobs' log median ratios). Cliff's δ and the Mann-Whitney U are the same for both.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import bootstrap as bs
from .effect import delta_from_u, delta_job_bootstrap, pair_balance, u_statistic
from .groups import Group, GroupKey
from .settings import Settings, parallel_map
from .significance import bh, holm, job_test, mwu_less_many, paired_job_test

COLUMNS = [
    "metric", "scheme", "op", "baseline", "baseline_compiler", "variant", "compiler", "stage", "design",
    "speedup", "ci_low", "ci_high", "hci_low", "hci_high", "hci_reliable", "mwu_p", "cliffs_delta",
    "delta_ci_low", "delta_ci_high", "job_p", "p_holm", "p_bh", "verdict", "reason", "deterministic",
    "n_base", "n_var", "jobs_base", "jobs_var", "median_base", "median_var", "note",
]


@dataclass(frozen=True)
class Chain:
    """The decomposition chain as analyze reads it (catalog.Chain.to_dict())."""

    steps: tuple[tuple[str, str, str], ...]  # (stage, base, variant)
    extra_baseline: str
    labels: dict[str, str]
    also: tuple[tuple[str, str, str], ...] = ()  # further (stage, base, variant) when both are present

    @classmethod
    def from_dict(cls, d: dict) -> "Chain":
        steps = tuple((s["stage"], s["from"], s["to"]) for s in d["steps"])
        also = tuple((s["stage"], s["from"], s["to"]) for s in d.get("also", []))
        labels = {s["stage"]: s.get("label", s["stage"]) for s in [*d["steps"], *d.get("also", [])]}
        return cls(steps, d.get("extra_baseline", steps[-1][1]), labels, also)

    @property
    def variants(self) -> list[str]:
        return [self.steps[0][1]] + [v for _, _, v in self.steps] if self.steps else []

    @property
    def first(self) -> str:
        return self.steps[0][1]

    @property
    def last(self) -> str:
        return self.steps[-1][2]


Pair = tuple[str, tuple[str, str], tuple[str, str]]  # stage, (base variant, compiler), (variant, compiler)


def resample_groups(groups: dict[GroupKey, Group], settings: Settings) -> None:
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


def plan_pairs(chain: Chain, variants: Sequence[str], compilers: Sequence[str],
               extra_baseline: str | None = None) -> tuple[list[Pair], list[str]]:
    """(stage, base, variant) for the variants and compilers present, and warnings.

    The first chain step is also the first cumulative step; it is listed once, with its stage.
    The cumulative chain is every row whose baseline is the chain's first variant."""
    vs = list(dict.fromkeys(variants))
    cs = list(dict.fromkeys(compilers))
    extra_baseline = extra_baseline or chain.extra_baseline
    pairs: list[Pair] = []
    warnings: list[str] = []
    for c in cs:
        have = set()
        for stage, b, v in chain.steps:
            if b in vs and v in vs:
                pairs.append((stage, (b, c), (v, c)))
                have.add((b, v))
        if chain.steps and chain.first in vs:
            for v in vs:
                if v != chain.first and (chain.first, v) not in have:
                    pairs.append(("cumulative", (chain.first, c), (v, c)))
                    have.add((chain.first, v))
        for stage, b, v in chain.also:
            if b in vs and v in vs and (b, v) not in have:
                pairs.append((stage, (b, c), (v, c)))
                have.add((b, v))
        extras = [v for v in vs if v not in chain.variants and v != extra_baseline]
        if extras and extra_baseline in vs:
            for v in extras:
                if (extra_baseline, v) not in have:
                    pairs.append(("extra", (extra_baseline, c), (v, c)))
        elif extras and c == cs[0]:
            warnings.append(
                f"extra variant(s) {', '.join(extras)} not compared with '{extra_baseline}': "
                f"the study has no '{extra_baseline}' (set [analysis] extra_baseline in study.toml)"
            )
    for c in cs[1:]:
        for v in vs:
            pairs.append(("cross_compiler", (v, cs[0]), (v, c)))
    return pairs, warnings


def _na_row(metric, scheme, op, stage, b, v, base, var, reason) -> dict:
    row = {c: math.nan for c in COLUMNS}
    row.update(
        metric=metric, scheme=scheme, op=op, baseline=b[0], baseline_compiler=b[1], variant=v[0], compiler=v[1],
        stage=stage, design="n/a", hci_reliable=False, verdict="n/a", reason=reason, deterministic=False,
        n_base=base.values.size if base else 0, n_var=var.values.size if var else 0,
        jobs_base=base.n_jobs if base else 0, jobs_var=var.n_jobs if var else 0,
        median_base=base.median if base else math.nan, median_var=var.median if var else math.nan,
        note=reason,
    )
    return row


def paired_ratios(base: Group, var: Group) -> tuple[np.ndarray, np.ndarray, list[str]] | None:
    """Per-spin ratios base/variant for the (job, spin) pairs both groups have, with each ratio's job
    code; None unless the groups were measured in the same jobs (the paired design)."""
    if set(base.job_ids) != set(var.job_ids):
        return None
    bj = np.array(base.job_ids)[base.job]
    vj = np.array(var.job_ids)[var.job]
    bkey = pd.MultiIndex.from_arrays([bj, base.spin])
    vkey = pd.MultiIndex.from_arrays([vj, var.spin])
    common = bkey.intersection(vkey)
    if len(common) == 0:
        return None
    b = pd.Series(base.values, index=bkey).reindex(common).to_numpy()
    v = pd.Series(var.values, index=vkey).reindex(common).to_numpy()
    jobs = common.get_level_values(0).to_numpy()
    names, code = np.unique(jobs, return_inverse=True)
    return b / v, code, list(names)


def compare_pair(base: Group, var: Group, stage: str, settings: Settings, u: float, p: float) -> dict:
    """One comparison's row; u, p: the Mann-Whitney U of the variant sample and its one-sided p."""
    n_b, n_v = base.values.size, var.values.size
    delta = delta_from_u(u, n_v, n_b)
    notes = []
    row = {
        "metric": base.metric, "scheme": base.scheme, "op": base.op, "baseline": base.variant,
        "baseline_compiler": base.compiler, "variant": var.variant, "compiler": var.compiler, "stage": stage,
        "n_base": n_b, "n_var": n_v, "jobs_base": base.n_jobs, "jobs_var": var.n_jobs, "median_base": base.median,
        "median_var": var.median, "cliffs_delta": delta,
        "hci_reliable": min(base.n_jobs, var.n_jobs) >= settings.min_jobs_reliable,
    }
    paired = None if (base.deterministic and var.deterministic) else paired_ratios(base, var)
    if base.deterministic and var.deterministic:
        s = base.median / var.median
        row.update(speedup=s, ci_low=s, ci_high=s, hci_low=s, hci_high=s, delta_ci_low=delta, delta_ci_high=delta,
                   mwu_p=math.nan, job_p=math.nan, deterministic=True, hci_reliable=True, design="exact")
        notes.append("deterministic: zero-width CIs, p-values n/a, verdict from the exact ratio")
    elif paired is not None:
        ratios, job, _names = paired
        key = (base.metric, base.scheme, base.op, base.variant, base.compiler, var.variant, var.compiler)
        sample = bs.Sample.from_jobs(ratios, job)
        rng = bs.rng_for(settings.seed, "paired", *key)
        counts = bs.job_counts(sample.n_jobs, settings.n_boot, rng)
        naive = bs.naive_medians(sample, settings.n_boot, bs.rng_for(settings.seed, "paired-naive", *key))
        hier = bs.hierarchical_medians(sample, settings.n_boot, rng, counts)
        bal = pair_balance(base.sample, var.sample, base.job, var.job, base.values, var.values)
        dboot = delta_job_bootstrap(bal, base.sample.sizes, var.sample.sizes, base.job_counts, var.job_counts)
        jp, jnote = paired_job_test(ratios, job)
        if jnote:
            notes.append(jnote)
        row["_replicates"] = (naive, hier, dboot)
        row.update(speedup=float(np.median(ratios)), mwu_p=p, job_p=jp, deterministic=False, design="paired",
                   hci_reliable=sample.n_jobs >= settings.min_jobs_reliable)
        if ratios.size < min(n_b, n_v):
            notes.append(f"{min(n_b, n_v) - ratios.size} spin(s) without a partner left out of the paired ratios")
    else:
        bal = pair_balance(base.sample, var.sample, base.job, var.job, base.values, var.values)
        dboot = delta_job_bootstrap(bal, base.sample.sizes, var.sample.sizes, base.job_counts, var.job_counts)
        jp, jnote = job_test(base.job_medians, var.job_medians)
        if jnote:
            notes.append(jnote)
        # the percentile intervals of these replicates are filled in by compare_all, many rows at once
        row["_replicates"] = (base.boot_naive / var.boot_naive, base.boot_hier / var.boot_hier, dboot)
        row.update(speedup=base.median / var.median, mwu_p=p, job_p=jp, deterministic=False, design="separate")
    if not row.get("deterministic") and not np.isfinite(p):
        notes.append("MWU n/a: no variation in either group")
    if not row["hci_reliable"]:
        notes.append(f"hierarchical CI unreliable: fewer than {settings.min_jobs_reliable} jobs in a group")
    row["note"] = "; ".join(notes)
    return row


def fill_intervals(rows: list[dict], level: float, chunk: int = 256) -> None:
    """Percentile intervals (level, e.g. 0.95) of the rows' bootstrap replicates, one np.quantile per chunk."""
    a = (1.0 - level) / 2.0
    todo = [r for r in rows if "_replicates" in r]
    for start in range(0, len(todo), chunk):
        part = todo[start:start + chunk]
        for k, (lo, hi) in enumerate((("ci_low", "ci_high"), ("hci_low", "hci_high"),
                                      ("delta_ci_low", "delta_ci_high"))):
            q = np.quantile(np.stack([r["_replicates"][k] for r in part]), [a, 1.0 - a], axis=1)
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


def compare_all(groups: dict[GroupKey, Group], chain: Chain, variants: Sequence[str], compilers: Sequence[str],
                ops_order: Sequence[str], settings: Settings, pairs: list[Pair] | None = None) -> tuple[pd.DataFrame, list[str]]:
    warnings: list[str] = []
    if pairs is None:
        pairs, warnings = plan_pairs(chain, variants, compilers, settings.extra_baseline)
    rows: list = []
    metric_scheme_ops: dict[tuple[str, str], list[str]] = {}
    for (metric, scheme, op, _v, _c) in groups:
        ops = metric_scheme_ops.setdefault((metric, scheme), [])
        if op not in ops:
            ops.append(op)
    rank = {o: i for i, o in enumerate(ops_order)}
    for (metric, scheme), ops in metric_scheme_ops.items():
        for op in sorted(ops, key=lambda o: (rank.get(o, len(rank)), o)):
            for stage, b, v in pairs:
                base, var = groups.get((metric, scheme, op, *b)), groups.get((metric, scheme, op, *v))
                if base is None and var is None:
                    continue
                if base is None or var is None:
                    missing = b if base is None else v
                    rows.append(_na_row(metric, scheme, op, stage, b, v, base, var,
                                        f"no data for variant {missing[0]} ({missing[1]}; {metric}, {scheme}, {op})"))
                    continue
                if not (base.positive and var.positive):
                    bad = base if not base.positive else var
                    rows.append(_na_row(metric, scheme, op, stage, b, v, base, var,
                                        f"spin medians <= 0 for {bad.variant} ({bad.compiler}; below timer resolution "
                                        f"after overhead subtraction): speedup undefined"))
                    continue
                rows.append((base, var, stage))
    live = [r for r in rows if isinstance(r, tuple) and not (r[0].deterministic and r[1].deterministic)]
    u, p = mwu_less_many([(var.values, base.values) for base, var, _ in live])
    mwu = {(id(b), id(v)): (u[i], p[i]) for i, (b, v, _) in enumerate(live)}

    def one(r):
        if isinstance(r, dict):
            return r
        base, var, stage = r
        uu, pp = mwu.get((id(base), id(var)), (u_statistic(var.values, base.values), math.nan))
        return compare_pair(base, var, stage, settings, uu, pp)

    out = parallel_map(one, rows)
    fill_intervals(out, 1.0 - settings.alpha)
    df = pd.DataFrame(out, columns=COLUMNS)
    df = verdicts(df, settings)
    return df, warnings
