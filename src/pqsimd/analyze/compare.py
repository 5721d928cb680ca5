"""The comparison family: chain stages, cumulative, extra and cross-compiler comparisons, their
statistics and verdicts.

Which comparisons exist comes from the chain (data/variants.toml [chain], carried in
summary.json): per compiler, each step of the chain (stage), first → every other variant
(cumulative), variants outside the chain → extra_baseline (extra); with several compilers, each
variant under every compiler against the same variant under the study's first compiler
(cross_compiler).

Two designs: groups measured in separate processes are independent (ratio of medians, two-group
bootstraps; the verdict from the pooled job-level test, pooled.py: each job ran every op of its
(metric, scheme, variant, compiler) block, so its machine state is shared by those ops and, moderated
over the study's blocks, estimated with many more df than one group's J - 1); groups measured in the
same paired jobs are compared spin by spin (median of per-spin ratios, bootstrap of the ratios over
jobs then spins, one-sample t-test on the jobs' log median ratios, and a regime detector). Cliff's δ
and the Mann-Whitney U are the same for both. The speedup and the bootstrap CIs are descriptive; the
verdict comes from the job-level test (`test`, `test_ci_*`), TOST equivalence (`same`) or the exact
ratio, and is `withheld` when the design cannot support a test.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import bootstrap as bs
from .effect import delta_from_u, delta_job_bootstrap, pair_balance, u_statistic
from .equivalence import exact_verdict, tost, withheld_warning
from .groups import EXACT_METRICS, Group, GroupKey
from .pooled import Block, JobTests, Priors, block_stats, fit_priors, job_test, paired_job_test, pooled_test
from .power import mde, mde_se
from .regime import regime_test
from .settings import Settings, parallel_map
from .significance import bh, holm, mwu_less_many

COLUMNS = [
    "metric", "scheme", "op", "baseline", "baseline_compiler", "variant", "compiler", "stage", "design",
    "speedup", "ci_low", "ci_high", "hci_low", "hci_high", "hci_reliable", "mwu_p", "cliffs_delta",
    "delta_ci_low", "delta_ci_high", "job_p", "p_holm", "p_bh", "test", "test_ci_low", "test_ci_high",
    "p_equiv", "p_equiv_holm", "mde", "verdict", "reason", "deterministic", "regimes",
    "n_base", "n_var", "jobs_base", "jobs_var", "median_base", "median_var", "note",
]
# per-row numbers the family-level step needs (TOST, MDE), dropped before the table is written
_HIDDEN = ["h_se", "h_df", "h_var_base", "h_var_var", "h_why"]
POWER = 0.8  # the power at which `mde` is stated
TESTS = ("pooled", "welch", "paired")  # `test` values of rows in the multiple-testing family


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


BlockKey = tuple[str, str, str, str]  # metric, scheme, variant, compiler


@dataclass(frozen=True)
class StudyBlock:
    """One block: the ops whose groups share the same jobs (each job ran all of them in one process)."""

    block: Block
    cols: dict[str, int]  # op -> column of the block


def study_blocks(groups: dict[GroupKey, Group]) -> dict[BlockKey, StudyBlock]:
    """The blocks of a study: per (metric, scheme, variant, compiler), the (jobs x ops) log job medians of
    its positive groups. Rows are jobs (by job id; in the separate design the job id is the process);
    an op whose jobs differ from the block's most common job set (it is missing in some job) is left out
    and tested on its own."""
    by: dict[BlockKey, list[Group]] = {}
    for (metric, scheme, _op, variant, compiler), g in groups.items():
        if g.positive:
            by.setdefault((metric, scheme, variant, compiler), []).append(g)
    out: dict[BlockKey, StudyBlock] = {}
    for key, gs in by.items():
        sets = Counter(tuple(g.job_ids) for g in gs)
        main = max(sets, key=lambda js: (sets[js], len(js)))
        ins = [g for g in gs if tuple(g.job_ids) == main]
        summ = [g.summary for g in ins]
        blk = block_stats(np.stack([x.log_median for x in summ], axis=1), np.stack([x.within_var for x in summ], axis=1),
                          np.array([x.constant for x in summ]))
        out[key] = StudyBlock(blk, {g.op: i for i, g in enumerate(ins)})
    return out


def study_priors(groups: dict[GroupKey, Group], blocks: dict[BlockKey, StudyBlock] | None = None) -> dict[str, Priors]:
    """Per metric, the priors of the shared (job-state) and op-specific variances over all blocks of the
    study: the job-state variance is a property of the machine, so every block estimates it."""
    blocks = study_blocks(groups) if blocks is None else blocks
    per: dict[str, list[Block]] = {}
    for (metric, *_), sb in blocks.items():
        per.setdefault(metric, []).append(sb.block)
    return {m: fit_priors(bl) for m, bl in per.items()}


def _row_test(t: JobTests, i: int, method: str | None = None) -> dict:
    return {"d": float(t.log_speedup[i]), "se": float(t.se[i]), "df": float(t.df[i]), "p": float(t.p[i]),
            "lo": float(t.ci_low[i]), "hi": float(t.ci_high[i]), "method": method or str(t.method[i]),
            "reason": str(t.reason[i]),
            "var_base": float(t.var_base[i]) if t.var_base is not None else math.nan,
            "var_var": float(t.var_var[i]) if t.var_var is not None else math.nan}


def separate_tests(groups: dict[GroupKey, Group], pairs: Sequence[Pair], settings: Settings,
                   priors: dict[str, Priors] | None = None,
                   blocks: dict[BlockKey, StudyBlock] | None = None) -> dict[tuple, dict]:
    """The job-level test of every separate-design comparison, keyed (metric, scheme, op, base, variant):
    the pooled test for the ops both blocks have (one vectorised call per block pair), Welch on the job
    medians for an op outside its block; both with the zero-variance and refusal rules of pooled_test."""
    blocks = study_blocks(groups) if blocks is None else blocks
    priors = dict(priors or {})
    missing = {k[0] for k in blocks} - set(priors)
    if missing:
        priors.update(study_priors(groups, {k: v for k, v in blocks.items() if k[0] in missing}))
    ops: dict[tuple[str, str], list[str]] = {}
    for (metric, scheme, op, _v, _c), g in groups.items():
        if g.positive and op not in ops.setdefault((metric, scheme), []):
            ops[(metric, scheme)].append(op)
    out: dict[tuple, dict] = {}
    seen = set()
    for (metric, scheme), op_list in ops.items():
        for _stage, b, v in pairs:
            if (metric, scheme, b, v) in seen:
                continue
            seen.add((metric, scheme, b, v))
            B, V = blocks.get((metric, scheme, *b)), blocks.get((metric, scheme, *v))
            if B is None or V is None:
                continue
            common = [o for o in op_list if o in B.cols and o in V.cols]
            if common:
                t = pooled_test(B.block.take([B.cols[o] for o in common]), V.block.take([V.cols[o] for o in common]),
                                priors.get(metric), alpha=settings.alpha)
                for i, o in enumerate(common):
                    out[(metric, scheme, o, b, v)] = _row_test(t, i)
            for o in op_list:
                if o in common:
                    continue
                gb, gv = groups.get((metric, scheme, o, *b)), groups.get((metric, scheme, o, *v))
                if gb is None or gv is None or not (gb.positive and gv.positive):
                    continue
                out[(metric, scheme, o, b, v)] = _row_test(job_test(gb.summary, gv.summary, alpha=settings.alpha), 0)
    return out


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
        test="n/a", regimes=False,
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


def _test_fields(row: dict, t: dict, threshold: float, notes: list[str]) -> None:
    """The job-level test's columns of one row (t: a _row_test dict); TOST for rows with a live test."""
    row.update(job_p=t["p"], test=t["method"], test_ci_low=t["lo"], test_ci_high=t["hi"], h_se=t["se"], h_df=t["df"],
               h_var_base=t["var_base"], h_var_var=t["var_var"], h_why=t["reason"])
    if t["method"] in TESTS:
        row["p_equiv"] = float(tost(np.array([t["d"]]), np.array([t["se"]]), np.array([t["df"]]), threshold)[0])
    elif t["method"] == "refuse":
        notes.append(f"job test withheld: {t['reason']}")
    elif t["method"] == "exact":
        notes.append(t["reason"])


def compare_pair(base: Group, var: Group, stage: str, settings: Settings, u: float, p: float,
                 test: dict | None = None) -> dict:
    """One comparison's row; u, p: the Mann-Whitney U of the variant sample and its one-sided p;
    test: the separate design's job-level test of this row (separate_tests), if it has one."""
    n_b, n_v = base.values.size, var.values.size
    delta = delta_from_u(u, n_v, n_b)
    notes = []
    row = {
        "metric": base.metric, "scheme": base.scheme, "op": base.op, "baseline": base.variant,
        "baseline_compiler": base.compiler, "variant": var.variant, "compiler": var.compiler, "stage": stage,
        "n_base": n_b, "n_var": n_v, "jobs_base": base.n_jobs, "jobs_var": var.n_jobs, "median_base": base.median,
        "median_var": var.median, "cliffs_delta": delta, "regimes": False,
        "hci_reliable": min(base.n_jobs, var.n_jobs) >= settings.min_jobs_reliable,
    }
    paired = None if (base.deterministic and var.deterministic) else paired_ratios(base, var)
    if base.deterministic and var.deterministic:
        s = base.median / var.median
        row.update(speedup=s, ci_low=s, ci_high=s, hci_low=s, hci_high=s, delta_ci_low=delta, delta_ci_high=delta,
                   mwu_p=math.nan, job_p=math.nan, deterministic=True, hci_reliable=True, design="exact",
                   test="exact", test_ci_low=s, test_ci_high=s)
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
        per_job = [ratios[job == j] for j in range(sample.n_jobs)]
        t = paired_job_test(per_job, alpha=settings.alpha)
        _test_fields(row, _row_test(t, 0, "paired" if t.method[0] == "welch" else None), settings.threshold, notes)
        # one-sample test: the MDE needs its se and df only
        row["h_var_base"] = row["h_var_var"] = math.nan
        if sample.n_jobs >= 2:
            reg = regime_test(per_job, threshold=settings.threshold, alpha=settings.alpha,
                              rng=bs.rng_for(settings.seed, "regime", *key))
            row["regimes"] = reg.flag
            if reg.flag:
                notes.append(f"regimes: {reg.reason}")
            elif reg.heterogeneous:
                notes.append(f"regime check: {reg.reason}")
        row["_replicates"] = (naive, hier, dboot)
        row.update(speedup=float(np.median(ratios)), mwu_p=p, deterministic=False, design="paired",
                   hci_reliable=sample.n_jobs >= settings.min_jobs_reliable)
        if ratios.size < min(n_b, n_v):
            notes.append(f"{min(n_b, n_v) - ratios.size} spin(s) without a partner left out of the paired ratios")
    else:
        bal = pair_balance(base.sample, var.sample, base.job, var.job, base.values, var.values)
        dboot = delta_job_bootstrap(bal, base.sample.sizes, var.sample.sizes, base.job_counts, var.job_counts)
        if test is None:  # not planned by separate_tests (a caller's own pair): the per-group test
            test = _row_test(job_test(base.summary, var.summary, alpha=settings.alpha), 0)
        _test_fields(row, test, settings.threshold, notes)
        # the percentile intervals of these replicates are filled in by compare_all, many rows at once
        row["_replicates"] = (base.boot_naive / var.boot_naive, base.boot_hier / var.boot_hier, dboot)
        row.update(speedup=base.median / var.median, mwu_p=p, deterministic=False, design="separate")
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


def _mde(r, m: int, settings: Settings) -> float:
    """The row's minimum detectable speedup (power POWER, Holm's worst case alpha/m, as a `faster` verdict:
    CI low > 1 + threshold too); NaN when even e^50 is not detectable or the test has no se."""
    kw = dict(alpha=settings.alpha, power=POWER, m=max(m, 1), threshold=settings.threshold)
    try:
        if r.test == "welch" and r.jobs_base >= 2 and r.jobs_var >= 2 and math.isfinite(r.h_df) \
                and r.h_var_base > 0 and r.h_var_var > 0:
            out = mde(r.h_var_base, int(r.jobs_base), r.h_var_var, int(r.jobs_var), **kw)
        else:  # pooled and paired: a fixed-df test (Welch with a constant side, too: the other's df)
            out = mde_se(r.h_se, r.h_df, **kw)
    except ValueError:
        return math.nan
    return out if math.isfinite(out) else math.nan


def verdicts(df: pd.DataFrame, settings: Settings) -> pd.DataFrame:
    """Adjust job_p and p_equiv over the family (every comparison with a live job-level test: not n/a,
    exact or withheld), state each row's MDE and decide verdicts."""
    df = df.copy()
    df["p_holm"] = holm(df["job_p"].to_numpy(dtype=float)) if len(df) else []
    df["p_bh"] = bh(df["job_p"].to_numpy(dtype=float)) if len(df) else []
    live = df["test"].isin(TESTS).to_numpy() if len(df) else np.zeros(0, bool)
    peq = df["p_equiv"].to_numpy(dtype=float).copy() if len(df) else np.zeros(0)
    peq[~live] = np.nan
    df["p_equiv_holm"] = holm(peq) if len(df) else []
    m = int(np.isfinite(df["job_p"].to_numpy(dtype=float)).sum()) if len(df) else 0
    up, down = 1.0 + settings.threshold, 1.0 / (1.0 + settings.threshold)
    padj_col = "p_holm" if settings.adjust == "holm" else "p_bh"
    verdict, reason, mdes, notes = [], [], [], []
    for r in df.itertuples(index=False):
        note = r.note if isinstance(r.note, str) else ""
        mdes.append(math.nan)
        if r.verdict == "n/a":
            verdict.append("n/a"); reason.append(r.reason); notes.append(note)
            continue
        if r.test == "exact":
            v, why = exact_verdict(r.test_ci_low, r.test_ci_high, settings.threshold)
            verdict.append(v); reason.append(why); notes.append(note)
            continue
        if r.test not in TESTS:
            why = r.h_why if isinstance(r.h_why, str) and r.h_why else "no job-level test"
            verdict.append("withheld"); reason.append(why); notes.append(note)
            continue
        mdes[-1] = _mde(r, m, settings)
        if not math.isfinite(mdes[-1]):
            note = "; ".join(x for x in (note, f"mde n/a: no speedup below e^50 reaches power {POWER:g} at "
                                               f"alpha/{m} (J = {r.jobs_base}/{r.jobs_var})") if x)
        notes.append(note)
        padj, lo, hi, peq_adj = getattr(r, padj_col), r.test_ci_low, r.test_ci_high, r.p_equiv_holm
        ci = f"{r.test} CI [{lo:.4g}, {hi:.4g}]"
        if padj < settings.alpha and lo > up:
            verdict.append("faster"); reason.append(f"{padj_col} = {padj:.3g} < alpha and {ci} > {up:g}")
        elif padj < settings.alpha and hi < down:
            verdict.append("slower"); reason.append(f"{padj_col} = {padj:.3g} < alpha and {ci} < {down:.4g}")
        elif peq_adj < settings.alpha:
            verdict.append("same")
            reason.append(f"equivalent: TOST p_equiv_holm = {peq_adj:.3g} < alpha, within ±{settings.threshold:.0%}")
        elif padj >= settings.alpha:
            verdict.append("~"); reason.append(f"{padj_col} = {padj:.3g} >= alpha = {settings.alpha:g}; "
                                               f"p_equiv_holm = {peq_adj:.3g}")
        else:
            verdict.append("~"); reason.append(f"{ci} reaches into ±{settings.threshold:.0%}")
    df["mde"] = mdes
    df["verdict"] = verdict
    df["reason"] = reason
    df["note"] = notes
    return df


def family_warnings(df: pd.DataFrame) -> list[str]:
    """One line when verdicts were withheld, one when paired comparisons show regimes."""
    out = []
    tested = df[df["verdict"] != "n/a"] if len(df) else df
    if len(tested):
        w = withheld_warning(tested["test"].to_numpy(dtype=object), tested["reason"].to_numpy(dtype=object))
        if w:
            out.append(w)
        reg = tested[tested["regimes"].astype(bool)]
        if len(reg):
            out.append(f"regimes: in {len(reg)} paired comparison(s) the jobs fall into two clusters of ratios "
                       "(machine states that slow the variants differently; see column regimes and the note): "
                       "one speedup describes neither")
    return out


def compare_all(groups: dict[GroupKey, Group], chain: Chain, variants: Sequence[str], compilers: Sequence[str],
                ops_order: Sequence[str], settings: Settings, pairs: list[Pair] | None = None,
                priors: dict[str, Priors] | None = None,
                skip_ops: frozenset[str] | set[str] = frozenset()) -> tuple[pd.DataFrame, list[str]]:
    """Every planned comparison's row, the family's adjustment and verdicts, and warnings. priors: the
    study's (study_priors), e.g. for the A/A check's half-groups; fitted on these groups if not given.
    skip_ops: ops never compared (the families' self-check op: its groups are a harness check, ~0 by
    design, and would only add noise to the multiple-testing family)."""
    warnings: list[str] = []
    if pairs is None:
        pairs, warnings = plan_pairs(chain, variants, compilers, settings.extra_baseline)
    rows: list = []
    metric_scheme_ops: dict[tuple[str, str], list[str]] = {}
    for (metric, scheme, op, _v, _c) in groups:
        if op in skip_ops:
            continue
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
                    why = ("count <= 0 after subtracting the harness's own count" if bad.metric in EXACT_METRICS
                           else "below timer resolution after overhead subtraction")
                    rows.append(_na_row(metric, scheme, op, stage, b, v, base, var,
                                        f"spin medians <= 0 for {bad.variant} ({bad.compiler}; {why}): "
                                        "speedup undefined"))
                    continue
                rows.append((base, var, stage))
    live = [r for r in rows if isinstance(r, tuple) and not (r[0].deterministic and r[1].deterministic)]
    u, p = mwu_less_many([(var.values, base.values) for base, var, _ in live])
    mwu = {(id(b), id(v)): (u[i], p[i]) for i, (b, v, _) in enumerate(live)}
    tests = separate_tests(groups, pairs, settings, priors)

    def one(r):
        if isinstance(r, dict):
            return r
        base, var, stage = r
        uu, pp = mwu.get((id(base), id(var)), (u_statistic(var.values, base.values), math.nan))
        key = (base.metric, base.scheme, base.op, (base.variant, base.compiler), (var.variant, var.compiler))
        return compare_pair(base, var, stage, settings, uu, pp, tests.get(key))

    out = parallel_map(one, rows)
    fill_intervals(out, 1.0 - settings.alpha)
    df = pd.DataFrame(out, columns=COLUMNS + _HIDDEN)
    df = verdicts(df, settings)
    warnings += family_warnings(df)
    return df.drop(columns=_HIDDEN), warnings
