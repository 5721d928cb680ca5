"""The comparison family: chain stages, cumulative, extra, cross-compiler and A/A comparisons, each
with one estimate, one interval from the same method, and a verdict read off that interval.

Which comparisons exist comes from the chain (data/variants.toml [chain], carried in summary.json):
per compiler, each step of the chain (stage), first → every other variant (cumulative), variants
outside the chain → extra_baseline (extra); with several compilers, each variant under every compiler
against the same variant under the study's first compiler (cross_compiler); with a duplicate build
(`aa`), each such variant against its duplicate (stage aa: a true null, kept out of the family).

Designs (interval.py): builds measured in the same jobs (paired) get the median job ratio and its
order-statistic interval; builds measured in separate processes get the geometric-mean ratio of
the job medians and the job-level t interval (Welch per op with >= 5 jobs a side, else the test
pooled over the ops of a job, pooled.py); deterministic counts get the exact ratio. All intervals are
printed at the family's level (multiplicity.py) and the verdict is read off the printed interval.
Cliff's δ and the Mann-Whitney U are the paper's descriptive statistics of the spins.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..stats import bootstrap as bs
from ..stats import drift as drift_mod
from .. import metrics as metrics_mod
from ..model import Chain, Design
from ..results import level_text
from ..stats.effect import delta_from_u, delta_job_bootstrap, pair_balance, u_statistic
from .groups import EXACT_METRICS, Group, GroupKey, without_jobs
from ..stats.interval import Evidence, jobs_needed, read_verdict, resolution_halfwidth
from ..stats.multiplicity import FamilyLevel, family_level
from ..stats.pooled import MIN_DF, Block, JobTests, Priors, block_stats, fit_priors, job_test, pooled_test
from ..stats.power import mde_se, mde_sign
from ..stats import regime as regime_mod
from ..analysis_settings import Settings
from .parallel import parallel_map
from ..stats.significance import bh, mwu_less_many

COLUMNS = [
    "metric", "scheme", "op", "baseline", "baseline_compiler", "variant", "compiler", "stage", "design",
    "speedup", "ci_low", "ci_high", "ci_level", "method", "p_decision", "verdict", "reason", "mde",
    "cliffs_delta", "delta_ci_low", "delta_ci_high", "mwu_p", "regimes", "regime_p", "regime_dip_p", "regime_jobs",
    "drift", "drift_p", "drift_jobs", "deterministic", "n_base", "n_var", "jobs_base", "jobs_var", "median_base",
    "median_var", "resolution", "resolution_limited", "nonpositive_spins", "shared_cpu_jobs", "cliff_finding",
    "copies", "copies_needed",
    *(f"without_{what}_{c}" for what in ("minority", "shared") for c in ("speedup", "ci_low", "ci_high", "ci_level",
                                                                          "verdict", "jobs")),
    "note",
]
# _job_logs: in _job_ids order (_ev's are sorted); _jobs: every job either side used
_HIDDEN = ["_ev", "_job_ids", "_job_logs", "_copy_logs", "_drift_jobs_p", "_jobs"]  # _copy_logs: csign's pairs
POWER = 0.8  # the power at which `mde` is stated
WELCH_MIN_JOBS = 5  # separate design: per-op Welch from this many jobs a side, else the pooled test
AA_STAGE = "aa"
ABLATION_STAGE = "ablation"  # all-C cell -> another cell of an ablation (analyze/attribution.py)


Pair = tuple[str, tuple[str, str], tuple[str, str]]  # stage, (base variant, compiler), (variant, compiler)


def draw_jobs(groups: dict[GroupKey, Group], settings: Settings) -> None:
    """Stage-1 job draws (B x J counts) for Cliff's δ interval. The generator is seeded by the job set,
    so groups measured in the same jobs (the paired design) get the same draws: their δ interval
    resamples jobs, matched."""

    def one(g: Group) -> None:
        if g.positive:
            rng = bs.rng_for(settings.seed, "jobs", g.metric, g.scheme, *g.job_ids)
            g.job_counts = bs.job_counts(g.n_jobs, settings.n_boot, rng)

    parallel_map(one, groups.values())


BlockKey = tuple[str, str, str, str]  # metric, scheme, variant, compiler


@dataclass(frozen=True)
class StudyBlock:
    """One block: the ops whose groups share the same jobs (each job ran all of them in one process)."""

    block: Block
    cols: dict[str, int]  # op -> column of the block


def study_blocks(groups: dict[GroupKey, Group]) -> dict[BlockKey, StudyBlock]:
    """The blocks of a study: per (metric, scheme, variant, compiler), the (jobs x ops) log job medians of
    its positive groups. An op whose jobs differ from the block's most common job set (it is missing
    in some job) is left out and tested on its own."""
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


def _evidence(t: JobTests, i: int) -> tuple[Evidence, str]:
    """A separate-design test's entry as Evidence, and its method name."""
    m = str(t.method[i])
    if m == "exact":
        return Evidence.exact(float(t.log_speedup[i])), str(t.reason[i])
    if m == "refuse":
        return Evidence.refuse(str(t.reason[i]), float(t.log_speedup[i])), m
    return Evidence.t(float(t.log_speedup[i]), float(t.se[i]), float(t.df[i])), m


def separate_tests(groups: dict[GroupKey, Group], pairs: Sequence[Pair], settings: Settings,
                   priors: dict[str, Priors] | None = None,
                   blocks: dict[BlockKey, StudyBlock] | None = None) -> dict[tuple, tuple[Evidence, str]]:
    """The job-level test of every separate-design comparison, keyed (metric, scheme, op, base, variant):
    Welch on each op's log job medians when both sides have >= WELCH_MIN_JOBS jobs (an op's loading on
    a job's machine state then comes from its own jobs); with fewer, the test pooled over the ops both
    blocks have (one vectorised call per block pair: the job-state variance shared by a job's ops,
    moderated over the study's blocks), and Welch for an op outside its block. The refusal rules of
    pooled_test (R1-R3, effective df < 4) apply to every row."""
    blocks = study_blocks(groups) if blocks is None else blocks
    priors = dict(priors or {})
    missing = {k[0] for k in blocks} - set(priors)
    if missing:
        priors.update(study_priors(groups, {k: v for k, v in blocks.items() if k[0] in missing}))
    ops: dict[tuple[str, str], list[str]] = {}
    for (metric, scheme, op, _v, _c), g in groups.items():
        if g.positive and op not in ops.setdefault((metric, scheme), []):
            ops[(metric, scheme)].append(op)
    out: dict[tuple, tuple[Evidence, str]] = {}
    seen = set()
    for (metric, scheme), op_list in ops.items():
        for _stage, b, v in pairs:
            if (metric, scheme, b, v) in seen:
                continue
            seen.add((metric, scheme, b, v))
            B, V = blocks.get((metric, scheme, *b)), blocks.get((metric, scheme, *v))
            if B is None or V is None:
                continue
            pooled = min(B.block.J, V.block.J) < WELCH_MIN_JOBS
            common = [o for o in op_list if o in B.cols and o in V.cols] if pooled else []
            if common:
                t = pooled_test(B.block.take([B.cols[o] for o in common]), V.block.take([V.cols[o] for o in common]),
                                priors.get(metric), alpha=settings.alpha)
                for i, o in enumerate(common):
                    out[(metric, scheme, o, b, v)] = _evidence(t, i)
            for o in op_list:
                if o in common:
                    continue
                gb, gv = groups.get((metric, scheme, o, *b)), groups.get((metric, scheme, o, *v))
                if gb is None or gv is None or not (gb.positive and gv.positive):
                    continue
                out[(metric, scheme, o, b, v)] = _evidence(job_test(gb.summary, gv.summary, alpha=settings.alpha,
                                                                    min_df=MIN_DF), 0)
    return out


def plan_pairs(chain: Chain, variants: Sequence[str], compilers: Sequence[str],
               extra_baseline: str | None = None, aa: dict[str, str] | None = None,
               ablation_cells: Sequence[tuple[str, list[str]]] = ()) -> tuple[list[Pair], list[str]]:
    """(stage, base, variant) for the variants and compilers present, and warnings.

    The first chain step is also the first cumulative step; it is listed once, with its stage.
    The cumulative chain is every row whose baseline is the chain's first variant. aa: variant ->
    its duplicate build's variant id (A/A pairs; duplicates take part in nothing else).
    ablation_cells: per ablation, (its all-C cell, its other cells): stage `ablation` pairs all-C ->
    cell, which attribution.py reads; cells take part in nothing else."""
    aa = dict(aa or {})
    dups = set(aa.values()) | {c for base, cells in ablation_cells for c in (base, *cells)}
    vs = [v for v in dict.fromkeys(variants) if v not in dups]
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
            # a variant a comparison of the chain's `also` already covers (keccak's plain → avx2 → avx512,
            # ML-KEM's avx2 → avx512vl) is compared: only the others go uncompared
            alone = [v for v in extras if not any(v in pair for pair in have)]
            if alone:
                warnings.append(
                    f"extra variant(s) {', '.join(alone)} not compared with '{extra_baseline}': "
                    f"the study has no '{extra_baseline}' (set [analysis] extra_baseline in study.toml)"
                )
        for v, dup in aa.items():
            if v in vs and dup in variants:
                pairs.append((AA_STAGE, (v, c), (dup, c)))
    for c in cs[1:]:
        for v in vs:
            pairs.append(("cross_compiler", (v, cs[0]), (v, c)))
    present = set(variants)
    for base, cells in ablation_cells:
        for c in cs:
            pairs += [(ABLATION_STAGE, (base, c), (v, c)) for v in cells if base in present and v in present]
    return pairs, warnings


def _base_row(metric, scheme, op, stage, b, v, base: Group | None, var: Group | None) -> dict:
    row = {c: math.nan for c in COLUMNS}
    row.update(
        metric=metric, scheme=scheme, op=op, baseline=b[0], baseline_compiler=b[1], variant=v[0], compiler=v[1],
        stage=stage, deterministic=False, regimes=False, regime_jobs="", drift=False, drift_jobs="", method="n/a",
        shared_cpu_jobs=0, without_minority_verdict="", without_shared_verdict="",
        _jobs=tuple(dict.fromkeys([*(base.job_ids if base else []), *(var.job_ids if var else [])])),
        resolution=0.0, resolution_limited=False,
        nonpositive_spins=(base.nonpositive if base else 0) + (var.nonpositive if var else 0),
        n_base=base.values.size if base else 0, n_var=var.values.size if var else 0,
        jobs_base=base.n_jobs if base else 0, jobs_var=var.n_jobs if var else 0,
        median_base=base.median if base else math.nan, median_var=var.median if var else math.nan,
    )
    return row


def _na_row(metric, scheme, op, stage, b, v, base, var, reason) -> dict:
    row = _base_row(metric, scheme, op, stage, b, v, base, var)
    row.update(design="n/a", verdict="n/a", reason=reason, note=reason)
    return row


def job_log_ratios(base: Group, var: Group) -> tuple[list[str], np.ndarray] | None:
    """The jobs' log ratios log(job median of base / of variant), in base's job order, when both
    groups were measured in the same jobs (the paired design); None otherwise."""
    if set(base.job_ids) != set(var.job_ids) or base.n_jobs < 1:
        return None
    lv = dict(zip(var.job_ids, var.summary.log_median))
    return list(base.job_ids), base.summary.log_median - np.array([lv[j] for j in base.job_ids])


def copy_log_ratios(base: Group, var: Group) -> list[np.ndarray] | None:
    """Per job (base's job order), the log ratios of its laid-out copy pairs: copy l of the baseline
    against copy l of the variant (timed in the same spins) where both have the same copies, else
    every copy of one against every copy of the other; None unless both are laid out, paired."""
    bl, vl = base.copy_logs(), var.copy_logs()
    if bl is None or vl is None or set(base.job_ids) != set(var.job_ids):
        return None
    vpos = {j: i for i, j in enumerate(var.job_ids)}
    bi, vi = base.copy_index(), var.copy_index()
    out = []
    for j, jid in enumerate(base.job_ids):
        k = vpos[jid]
        b, v = bl[j], vl[k]
        if np.array_equal(bi[j], vi[k]):
            out.append(b - v)
        else:
            out.append((b[:, None] - v[None, :]).ravel())
    return out


def _copies_needed(base: Group, var: Group) -> float:
    """stats/layout.copies_needed of a laid-out pair whose builds have the same copies in every job, else nan."""
    from ..stats.layout import copies_needed
    from ..stats.pooled import copy_medians

    if set(base.job_ids) != set(var.job_ids):
        return math.nan
    cb = copy_medians(np.log(base.values), base.job, np.asarray(base.layout))
    cv = dict(zip(var.job_ids, copy_medians(np.log(var.values), var.job, np.asarray(var.layout))))
    y, e = [], []
    for jid, (mb, sb, _) in zip(base.job_ids, cb):
        mv, sv, _ = cv[jid]
        if mb.size != mv.size:
            return math.nan
        y.append(mb - mv)
        e.append(sb + sv)
    if len({x.size for x in y}) != 1:
        return math.nan
    return float(copies_needed(np.stack(y), np.stack(e))[2] or math.nan)


def spin_log_ratios(base: Group, var: Group) -> tuple[np.ndarray, np.ndarray] | None:
    """Per-spin log ratios of the (job, spin) pairs both groups have, in job then spin order, with job
    codes in base's job order (for drift); None when no spin pairs."""
    if base.job_ids == var.job_ids and base.values.size == var.values.size \
            and np.array_equal(base.job, var.job) and np.array_equal(base.spin, var.spin):
        return base.log_values - var.log_values, base.job
    vj = np.array(var.job_ids)[var.job]
    bj = np.array(base.job_ids)[base.job]
    bkey = pd.MultiIndex.from_arrays([bj, base.spin])
    vkey = pd.MultiIndex.from_arrays([vj, var.spin])
    common = bkey.intersection(vkey).sort_values()
    if len(common) == 0:
        return None
    b = pd.Series(base.log_values, index=bkey).reindex(common).to_numpy()
    v = pd.Series(var.log_values, index=vkey).reindex(common).to_numpy()
    rank = {j: i for i, j in enumerate(base.job_ids)}
    return b - v, np.array([rank[j] for j in common.get_level_values(0)])


def _drift(base: Group, var: Group, paired: bool, band: float) -> tuple[float, list[str], dict]:
    """Drift of what the row's estimate uses: the per-spin log ratios of each job (paired), or each
    group's log spin medians (separate). Returns (p, drifting job ids, per-job p)."""
    if paired:
        sr = spin_log_ratios(base, var)
        if sr is None:
            return math.nan, [], {}
        p, ch = drift_mod.job_trends(*sr)
        ids = list(base.job_ids)
    else:
        ps, chs, ids = [], [], []
        for g in (base, var):
            if g.deterministic:
                continue
            pj, cj = drift_mod.job_trends(g.log_values, g.job)
            ps.append(pj), chs.append(cj), ids.extend(g.job_ids)
        if not ps:
            return math.nan, [], {}
        p, ch = np.concatenate(ps), np.concatenate(chs)
    dp, drifting = drift_mod.drift_p(p, ch, band)
    return dp, [ids[j] for j in drifting], {ids[j]: float(p[j]) for j in range(len(ids)) if np.isfinite(p[j])}


RESOLUTION_REFUSAL = ("a call lasts less than one lattice step of the clock (step / calls per sample): below its "
                      "resolution")


def pair_evidence(base: Group, var: Group, settings: Settings, test: tuple[Evidence, str] | None = None
                  ) -> tuple[Evidence, str, list[str] | None, np.ndarray | None, str, float]:
    """What base -> variant's estimate and interval come from: the paired design's sign evidence of the
    job log ratios, else the separate design's job-level test (test: separate_tests' entry for the row;
    None: the per-group test); widened for the clock's resolution, refused below it. Returns (evidence,
    design, job ids and their log ratios (paired), the test's note, the resolution on the log scale)."""
    how = ""
    ids, logs = None, None
    jl = job_log_ratios(base, var)
    if jl is not None:
        ids, logs = jl
        cl = copy_log_ratios(base, var)
        ev, design = (Evidence.csign(cl) if cl is not None else Evidence.sign(logs)), Design.PAIRED
        if ev.kind == "csign":  # a job's log ratio: the median of its copy pairs' (two: their mean)
            logs = np.array([float(np.median(c)) for c in cl])
    else:
        if test is None:  # not planned by separate_tests (a caller's own pair): the per-group test
            test = _evidence(job_test(base.summary, var.summary, alpha=settings.alpha, min_df=MIN_DF), 0)
        ev, method = test
        design = Design.SEPARATE
        how = method if ev.kind == "exact" else ""
    res = resolution_halfwidth(base.resolution_rel, var.resolution_rel)
    if math.isinf(res):
        ev = Evidence.refuse(RESOLUTION_REFUSAL, d=ev.point)
    else:
        ev = ev.at_resolution(res)
    return ev, design, ids, logs, how, res


def compare_pair(base: Group, var: Group, stage: str, settings: Settings, u: float, p: float,
                 test: tuple[Evidence, str] | None = None) -> dict:
    """One comparison's row before the family's level is known (finish_family prints its interval);
    u, p: the Mann-Whitney U of the variant sample and its one-sided p; test: the separate design's
    job-level test of this row (separate_tests), if it has one."""
    n_b, n_v = base.values.size, var.values.size
    row = _base_row(base.metric, base.scheme, base.op, stage, (base.variant, base.compiler),
                    (var.variant, var.compiler), base, var)
    notes: list[str] = []
    band = math.log1p(settings.threshold)
    row["cliffs_delta"] = delta_from_u(u, n_v, n_b)
    row["mwu_p"] = p
    if base.deterministic and var.deterministic:
        ev = Evidence.exact(math.log(base.median / var.median), base.median / var.median)
        row.update(design="exact", deterministic=True, delta_ci_low=row["cliffs_delta"],
                   delta_ci_high=row["cliffs_delta"], mwu_p=math.nan)
        notes.append("deterministic: the exact ratio")
        row["_ev"] = ev
        row["note"] = "; ".join(notes)
        return row
    ev, design, ids, logs, how, res = pair_evidence(base, var, settings, test)
    row["design"] = design
    if design == Design.PAIRED:
        row.update(_job_ids=ids, _job_logs=logs, _copy_logs=list(ev.copies) if ev.kind == "csign" else None)
        if ev.kind == "csign":
            row["copies"] = float(np.median([c.size for c in ev.copies]))
            row["copies_needed"] = _copies_needed(base, var)
    if how:
        notes.append(how)
    if math.isfinite(res):
        row["resolution"] = math.expm1(res)
    if row["nonpositive_spins"]:
        notes.append(f"{row['nonpositive_spins']} spin median(s) <= 0 kept (they rank low; no upward bias)")
    row["_ev"] = ev
    dp, drifting, per_job = _drift(base, var, row["design"] == Design.PAIRED, band)
    row.update(drift_p=dp, _drift_jobs_p=(drifting, per_job))
    if base.job_counts is not None and var.job_counts is not None:
        bal = pair_balance(base.sample, var.sample, base.job, var.job, base.values, var.values)
        dboot = delta_job_bootstrap(bal, base.sample.sizes, var.sample.sizes, base.job_counts, var.job_counts)
        a = settings.alpha / 2.0
        row["delta_ci_low"], row["delta_ci_high"] = (float(x) for x in np.quantile(dboot, [a, 1.0 - a]))
    if not np.isfinite(p):
        notes.append("MWU n/a: no variation in either group")
    row["note"] = "; ".join(notes)
    return row


def _mde(row: dict, ev: Evidence, gamma: float, threshold: float) -> tuple[float, str]:
    """The row's minimum detectable speedup (power POWER, a `faster` verdict at the family's level)."""
    try:
        if ev.kind in ("sign", "csign"):
            x = ev.logs
            sigma = 1.4826 * float(np.median(np.abs(x - np.median(x))))
            out = mde_sign(ev.n, gamma, sigma, threshold, POWER)
        elif ev.kind == "t" and ev.se > 0:
            out = mde_se(ev.se, ev.df, alpha=gamma, power=POWER, m=1, threshold=threshold)
        else:
            return math.nan, ""
    except ValueError:
        return math.nan, ""
    if not math.isfinite(out):
        return math.nan, f"mde n/a: J = {ev.n} cannot reach the family's level" if ev.kind in ("sign", "csign") else \
            f"mde n/a: no speedup below e^50 reaches power {POWER:g}"
    return out, ""


def cliff_findings(df: pd.DataFrame, cliff_copies: pd.DataFrame | None) -> list[str]:
    """Per row, the finding its evidence shares with others: rows whose baseline or variant group
    holds a laid-out copy flagged as a cliff (analyze/cliffs.py) and rows that share such a copy
    (transitively: one cliff copy moves every op it is slow in, and the comparisons of both builds next
    to it in the chain) form one finding, named by its worst copy; "" for rows without a cliff copy."""
    out = [""] * len(df)
    if cliff_copies is None or not len(cliff_copies) or not len(df) or "cliff" not in cliff_copies:
        return out
    cl = cliff_copies[cliff_copies["cliff"].astype(bool)]
    if not len(cl):
        return out
    by_group: dict[tuple, list[tuple]] = {}
    worst: dict[tuple, float] = {}
    for r in cl.itertuples(index=False):
        cid = (str(r.scheme), str(r.variant), str(r.compiler), str(r.job), int(r.copy))
        by_group.setdefault((str(r.metric), str(r.scheme), str(r.op), str(r.variant), str(r.compiler)), []).append(cid)
        worst[cid] = max(worst.get(cid, 0.0), float(r.norm))
    parent: dict = {}

    def find(x):
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x
    row_ids = []
    for r in df[["metric", "scheme", "op", "baseline", "baseline_compiler", "variant", "compiler"]].itertuples(index=False):
        ids = by_group.get((r.metric, r.scheme, r.op, r.baseline, r.baseline_compiler), []) + \
            by_group.get((r.metric, r.scheme, r.op, r.variant, r.compiler), [])
        row_ids.append(ids)
        for a in ids[1:]:
            parent[find(a)] = find(ids[0])
        for a in ids[:1]:
            find(a)
    members: dict = {}
    for cid in worst:
        members.setdefault(find(cid), []).append(cid)
    label = {}
    for root, cids in members.items():
        top = max(cids, key=lambda c: worst[c])
        more = f" (+{len(cids) - 1} more cop{'y' if len(cids) == 2 else 'ies'})" if len(cids) > 1 else ""
        label[root] = f"{top[0]} {top[1]} ({top[2]}) job {top[3]} copy {top[4]}, {worst[top]:.2f}×{more}"
    return [label[find(ids[0])] if ids else "" for ids in row_ids]


def finish_family(df: pd.DataFrame, settings: Settings,
                  level: FamilyLevel | None = None, units: list | None = None) -> tuple[pd.DataFrame, FamilyLevel]:
    """The family's level from its members' decision p-values, then every row's interval at that level,
    its verdict (read off the interval), MDE, and the BH-adjusted regime and drift flags.

    The family: every comparison with a sampling interval (sign or t) outside stage aa (the A/A pairs,
    a true null, are printed at the family's level but are not members: they must not buy verdicts for
    the rest)."""
    band = math.log1p(settings.threshold)
    evs = list(df["_ev"]) if len(df) else []
    stage = df["stage"].to_numpy(dtype=object) if len(df) else np.zeros(0, object)
    pdec = np.full(len(df), np.nan)
    for i, ev in enumerate(evs):
        if isinstance(ev, Evidence) and ev.kind in ("sign", "csign", "t", "exact"):
            pdec[i] = ev.decision_p(band)[0]
    member = np.array([isinstance(ev, Evidence) and ev.in_family for ev in evs], dtype=bool) & (stage != AA_STAGE)
    if units is None and "cliff_finding" in df.columns and len(df):  # comparisons sharing a cliff copy: one unit
        units = [f if isinstance(f, str) and f else ("row", i) for i, f in enumerate(df["cliff_finding"])]
    fam = level or family_level(np.where(member, pdec, np.nan), settings.alpha, settings.adjust, units)
    out = df.copy()
    cols = {c: out[c].tolist() for c in ("speedup", "ci_low", "ci_high", "ci_level", "method", "verdict", "reason",
                                         "mde", "resolution_limited", "note", "copies", "copies_needed")
            if c in out.columns} if len(out) else {}
    for i, ev in enumerate(evs):
        if not isinstance(ev, Evidence):
            continue
        iv, v = read_verdict(ev, fam.gamma, band)
        note = cols["note"][i] if isinstance(cols["note"][i], str) else ""
        cols["method"][i] = iv.method
        cols["speedup"][i] = math.exp(iv.point) if math.isfinite(iv.point) else math.nan
        cols["ci_low"][i] = math.exp(iv.lo) if math.isfinite(iv.lo) else math.nan
        cols["ci_high"][i] = math.exp(iv.hi) if math.isfinite(iv.hi) else math.nan
        cols["ci_level"][i] = iv.level
        if ev.kind == "exact":
            cols["speedup"][i] = ev.ratio
            if not iv.res > 0:
                cols["ci_low"][i] = cols["ci_high"][i] = ev.ratio
        if ev.kind == "refuse":
            why = ev.reason
        elif not iv.reachable:
            what = "of every copy pair" if ev.kind == "csign" else "of the job ratios"
            why = (f"J = {ev.n}: the widest distribution-free interval, [min, max] {what}, has "
                   f"{level_text(iv.level)} confidence, below the family's {level_text(fam.level)}; it takes {jobs_needed(settings.alpha)} "
                   f"or more jobs to reach {1 - settings.alpha:.0%} (more when few comparisons are clear)")
        else:
            ci = f"{level_text(iv.level)} interval [{cols['ci_low'][i]:.4g}, {cols['ci_high'][i]:.4g}]"
            why = {"faster": f"{ci} above {1 + settings.threshold:g}",
                   "slower": f"{ci} below {1 / (1 + settings.threshold):.4g}",
                   "same": f"{ci} within ±{settings.threshold:.0%}",
                   "~": f"{ci} reaches the ±{settings.threshold:.0%} band"}[v]
            if ev.kind == "exact":
                why = f"{'no spread in any job, the ratio to the clock' + chr(39) + 's resolution' if iv.res > 0 else 'exact ratio'}: {why}"
        if iv.res > 0:
            cols["resolution_limited"][i] = iv.resolution_limited
            if iv.resolution_limited:
                note = "; ".join(x for x in (note, f"resolution-limited: the clock's step, not the jobs' spread, sets "
                                                   f"this interval (widened ±{math.expm1(iv.res):.2%} for it); more "
                                                   "calls per sample narrow it") if x)
        cols["verdict"][i], cols["reason"][i] = v, why
        if ev.kind == "csign" and "copies" in cols and iv.reachable and iv.hi - iv.lo < band:  # narrower than the band: enough copies
            cols["copies_needed"][i] = min(float(cols["copies_needed"][i]), float(cols["copies"][i])) \
                if math.isfinite(float(cols["copies_needed"][i])) else float(cols["copies"][i])
        mde, mnote = _mde(cols, ev, fam.gamma, settings.threshold)
        cols["mde"][i] = mde
        if mnote and v not in ("withheld",):
            note = "; ".join(x for x in (note, mnote) if x)
        cols["note"][i] = note
    for c, vals in cols.items():
        out[c] = vals
    out["p_decision"] = pdec
    _regimes(out, settings)
    _drift_flags(out, settings, band)
    return out, fam


def _regimes(df: pd.DataFrame, settings: Settings) -> None:
    """The regime check (regime.py) of the paired rows with sign evidence: the job-state test pooled
    over each parameter set's comparisons measured in the same jobs, and the dip test; the flag, both
    BH-adjusted p-values, the minority's jobs and a note."""
    if not len(df):
        return
    band = math.log1p(settings.threshold)
    idx, rows, keys = [], [], []
    for i, (ev, ids, logs, r) in enumerate(zip(df["_ev"], df["_job_ids"], df["_job_logs"],
                                                df.itertuples(index=False))):
        if isinstance(ev, Evidence) and ev.kind in ("sign", "csign") and r.design == Design.PAIRED \
                and isinstance(ids, list):
            idx.append(i)
            rows.append(regime_mod.Row((r.metric, r.scheme, frozenset(ids)), r.op, tuple(ids), np.asarray(logs),
                                       ev.res))
            keys.append((r.metric, r.scheme, r.op, r.baseline, r.baseline_compiler, r.variant, r.compiler))
    if not rows:
        return
    res = regime_mod.check(rows, band, settings.alpha, lambda n: bs.rng_for(settings.seed, "regime", *keys[n]))
    cols = {c: df[c].tolist() for c in ("regimes", "regime_p", "regime_dip_p", "regime_jobs", "note")}
    for i, row, g in zip(idx, rows, res):
        cols["regime_p"][i], cols["regime_dip_p"][i] = g.p_state_adj, g.p_dip_adj
        if not g.flagged:
            continue
        cols["regimes"][i], cols["regime_jobs"][i] = True, " ".join(g.minority)
        cols["note"][i] = "; ".join(x for x in (cols["note"][i] if isinstance(cols["note"][i], str) else "",
                                                regime_note(g, row.pool[1])) if x)
    for c, vals in cols.items():
        df[c] = vals


def regime_note(g: regime_mod.Regime, scheme: str) -> str:
    """A flagged row's note: both clusters (median, range), the minority's jobs, which test found it."""
    sp = g.split
    x = np.exp(sp.values)

    def cluster(med, lo, hi):
        return f"at {math.exp(med):.4g}x ({lo:.4g}-{hi:.4g})"
    found = []
    if "job state" in g.by:
        found.append(f"the job-state test, BH-adjusted p = {g.p_state_adj:.2g}"
                     + (f", the same jobs split off in {g.also} other comparison(s) of {scheme}" if g.also else ""))
    if "dip" in g.by:
        found.append(f"the dip test, BH-adjusted p = {g.p_dip_adj:.2g}")
    return (f"regimes: {sp.n_low} jobs {cluster(sp.low, x[0], x[sp.k - 1])}, {sp.n_high} "
            f"{cluster(sp.high, x[sp.k], x[-1])}; the minority: {' '.join(g.minority)} ({'; '.join(found)})")


WITHOUT = ("speedup", "ci_low", "ci_high", "ci_level", "verdict", "jobs")


def recompute_without(df: pd.DataFrame, drops: Sequence[frozenset[str]], groups: dict[GroupKey, Group],
                      settings: Settings, gamma: float, priors: dict[str, Priors] | None = None) -> list[dict | None]:
    """Each row as if the jobs in drops[i] had not run: the same evidence (pair_evidence on its groups
    without those jobs; the separate design's job-level test again, over its blocks without them), its
    interval at the family's level 1 - gamma and the verdict read off it: speedup, ci_*, verdict and
    the jobs it used. None where the row is not recomputed (none of its jobs dropped; n/a or exact)."""
    band = math.log1p(settings.threshold)
    out: list[dict | None] = [None] * len(df)
    todo: dict[tuple, list[int]] = {}
    for i, (ev, jobs, drop, design, metric, scheme) in enumerate(zip(
            df["_ev"], df["_jobs"], drops, df["design"], df["metric"], df["scheme"])):
        if drop and isinstance(ev, Evidence) and design in (Design.PAIRED, Design.SEPARATE) and drop.intersection(jobs):
            todo.setdefault((metric, scheme, frozenset(drop)), []).append(i)
    for (metric, scheme, drop), rows in todo.items():
        cut: dict[GroupKey, Group | None] = {}

        def without(key):
            if key not in cut:
                cut[key] = without_jobs(groups[key], drop) if key in groups else None
            return cut[key]
        tests = {}
        if any(df["design"].iat[i] == Design.SEPARATE for i in rows):  # the test pools the ops of a block
            for k in groups:
                if k[:2] == (metric, scheme):
                    without(k)
            pairs = [(df["stage"].iat[i], (df["baseline"].iat[i], df["baseline_compiler"].iat[i]),
                      (df["variant"].iat[i], df["compiler"].iat[i])) for i in rows]
            tests = separate_tests({k: g for k, g in cut.items() if g is not None}, pairs, settings, priors)
        for i in rows:
            r = df.iloc[i]
            b, v = (r.baseline, r.baseline_compiler), (r.variant, r.compiler)
            gb, gv = without((metric, scheme, r.op, *b)), without((metric, scheme, r.op, *v))
            if gb is None or gv is None or not (gb.positive and gv.positive):
                out[i] = {"speedup": math.nan, "ci_low": math.nan, "ci_high": math.nan, "ci_level": math.nan,
                          "verdict": "n/a", "jobs": 0}
                continue
            ev, design, *_ = pair_evidence(gb, gv, settings, tests.get((metric, scheme, r.op, b, v)))
            iv, verdict = read_verdict(ev, gamma, band)
            out[i] = {"speedup": math.exp(iv.point), "ci_low": math.exp(iv.lo) if math.isfinite(iv.lo) else math.nan,
                      "ci_high": math.exp(iv.hi) if math.isfinite(iv.hi) else math.nan, "ci_level": iv.level,
                      "verdict": verdict, "jobs": ev.n if design == Design.PAIRED else gb.n_jobs + gv.n_jobs}
    return out


def _put_without(df: pd.DataFrame, what: str, values: list[dict | None]) -> None:
    for c in WITHOUT:
        old = df[f"without_{what}_{c}"].tolist()
        df[f"without_{what}_{c}"] = [v[c] if v is not None else o for v, o in zip(values, old)]


def _drift_flags(df: pd.DataFrame, settings: Settings, band: float) -> None:
    """BH over the rows' drift p-values; a row drifts when its adjusted p < alpha and some job's fitted
    change over its spins exceeds the threshold (drift_jobs names them)."""
    if not len(df):
        return
    p = df["drift_p"].to_numpy(dtype=float)
    adj = np.full(p.shape, np.nan)
    ok = np.isfinite(p)
    if ok.any():
        adj[ok] = bh(p[ok])
    flags, jobs = [], []
    for a, info in zip(adj, df["_drift_jobs_p"]):
        drifting = info[0] if isinstance(info, tuple) else []
        f = bool(np.isfinite(a) and a < settings.alpha and drifting)
        flags.append(f)
        jobs.append(" ".join(drifting) if f else "")
    df["drift_p"], df["drift"], df["drift_jobs"] = adj, flags, jobs


def drift_record(df: pd.DataFrame, alpha: float) -> dict:
    """Study-level drift: the share of (comparison, job) trend tests with p < alpha, against alpha (what
    no drift gives), the comparisons flagged after BH, and the jobs those flags name."""
    per = [info[1] for info in df.get("_drift_jobs_p", []) if isinstance(info, tuple)]
    ps = np.array([p for d in per for p in d.values()], dtype=float)
    flagged = df[df["drift"].astype(bool)] if len(df) else df
    jobs = Counter(j for s in (flagged["drift_jobs"] if len(flagged) else []) for j in str(s).split() if j)
    return {"job_tests": int(ps.size), "rate": float((ps < alpha).mean()) if ps.size else None, "expected": alpha,
            "comparisons_tested": int(np.isfinite(df["drift_p"].to_numpy(dtype=float)).sum()) if len(df) else 0,
            "comparisons_flagged": int(len(flagged)), "jobs": dict(jobs.most_common())}


def family_warnings(df: pd.DataFrame, fam: FamilyLevel) -> list[str]:
    """One line when verdicts were withheld, one when paired comparisons show regimes."""
    out = []
    live = df[(df["verdict"] != "n/a") & (df["stage"] != AA_STAGE)] if len(df) else df
    if len(live):
        wh = live[live["verdict"] == "withheld"]
        if len(wh):
            top, k = Counter(wh["reason"]).most_common(1)[0]
            out.append(f"{len(wh)} of {len(live)} comparisons withheld (no verdict); most common reason ({k}x): {top}")
        reg = live[live["regimes"].astype(bool)]
        if len(reg):
            w = without_record(live, "minority")
            out.append(f"regimes: in {len(reg)} paired comparison(s) the jobs fall into two clusters of ratios "
                       "(machine states that slow the builds differently; see the note): one speedup describes "
                       f"neither; without the minority's jobs {w['verdicts_changed']} of {w['recomputed']} verdict(s) "
                       "change (comparisons.csv without_minority_*)")
    return out


def estimate_moves(done: pd.DataFrame, what: str, threshold: float | None = None) -> dict:
    """How far the estimates move without a set of jobs: per recomputed comparison with both estimates
    the ratio without / with, its median, range, 5th and 95th percentiles, and how many lie within
    ±threshold (the study's equivalence band; its setting when not given). A verdict can change (to
    withheld: too few jobs left) while the estimate stays where it was; this says which."""
    if not len(done) or f"without_{what}_speedup" not in done.columns:
        return {"n": 0}
    a = pd.to_numeric(done["speedup"], errors="coerce").to_numpy(dtype=float)
    b = pd.to_numeric(done[f"without_{what}_speedup"], errors="coerce").to_numpy(dtype=float)
    ok = np.isfinite(a) & np.isfinite(b) & (a > 0) & (b > 0)
    if not ok.any():
        return {"n": 0}
    r = b[ok] / a[ok]
    t = float(threshold if threshold is not None else Settings.threshold)
    return {"n": int(ok.sum()), "median": float(np.median(r)), "min": float(r.min()), "max": float(r.max()),
            "p05": float(np.quantile(r, 0.05)), "p95": float(np.quantile(r, 0.95)), "threshold": t,
            "within_threshold": int((np.abs(np.log(r)) <= np.log1p(t)).sum())}


def without_record(df: pd.DataFrame, what: str, top: int = 20, threshold: float | None = None) -> dict:
    """What recomputing without a set of jobs did (what: "minority" or "shared"): how many rows were
    recomputed, how many verdicts change, how, and the first `top` changes."""
    col = f"without_{what}_verdict"
    done = df[df[col].fillna("").astype(str) != ""] if len(df) and col in df.columns else df.iloc[:0]
    changed = done[done[col] != done["verdict"]] if len(done) else done
    return {"recomputed": int(len(done)), "verdicts_changed": int(len(changed)),
            "estimates": estimate_moves(done, what, threshold),
            "changes": {f"{a} -> {b}": int(n) for (a, b), n in Counter(zip(changed["verdict"], changed[col])).items()},
            "changed": [{k: (str(r[k]) if k != f"without_{what}_jobs" else int(r[k]))
                         for k in ("scheme", "op", "baseline", "variant", "compiler", "verdict", col,
                                   f"without_{what}_jobs")} for _, r in changed.head(top).iterrows()]}


def compare_all(groups: dict[GroupKey, Group], chain: Chain, variants: Sequence[str], compilers: Sequence[str],
                ops_order: Sequence[str], settings: Settings, pairs: list[Pair] | None = None,
                priors: dict[str, Priors] | None = None, skip_ops: frozenset[str] | set[str] = frozenset(),
                aa: dict[str, str] | None = None, level: FamilyLevel | None = None,
                ablation_cells: Sequence[tuple[str, list[str]]] = (),
                not_timed: dict[tuple, str] | None = None,
                skipped: dict[tuple, str] | None = None, shared_jobs: frozenset[str] | set[str] = frozenset(),
                cliff_copies: pd.DataFrame | None = None
                ) -> tuple[pd.DataFrame, list[str], FamilyLevel, dict]:
    """Every planned comparison's row, the family's level, verdicts, warnings and the drift record.
    skip_ops: ops never compared (the families' self-check op: ~0 by design, a harness check).
    not_timed: (variant, compiler, scheme, op) -> why the run did not time it (the n/a row's reason).
    skipped: (variant, compiler, scheme) -> why the run built no such build for the scheme's family (it
    lacks the implementation): only the chain's steps keep an n/a row for it (the chain is incomplete),
    other comparisons are none of that family's.
    shared_jobs: the timing jobs that shared their CPU (kept by --shared-cpu keep): every row says how
    many it uses, and those that use any are recomputed without them (without_shared_*), as rows with
    regimes are without their minority (without_minority_*).
    The returned frame keeps the hidden columns (_ev, _job_ids) the decomposition and the job
    diagnostics read; public() drops them. level: print at this family level (the A/A halves of the
    separate design are printed at the study's)."""
    warnings: list[str] = []
    if pairs is None:
        pairs, warnings = plan_pairs(chain, variants, compilers, settings.extra_baseline, aa, ablation_cells)
    rows: list = []
    metric_scheme_ops: dict[tuple[str, str], list[str]] = {}
    for (metric, scheme, op, _v, _c) in groups:
        if op in skip_ops:
            continue
        ops = metric_scheme_ops.setdefault((metric, scheme), [])
        if op not in ops:
            ops.append(op)
    rank = {o: i for i, o in enumerate(ops_order)}
    chain_stages = {stage for stage, _b, _v in chain.steps}
    for (metric, scheme), ops in metric_scheme_ops.items():
        for op in sorted(ops, key=lambda o: (rank.get(o, len(rank)), o)):
            for stage, b, v in pairs:
                base, var = groups.get((metric, scheme, op, *b)), groups.get((metric, scheme, op, *v))
                if base is None and var is None:
                    continue
                if base is None or var is None:
                    missing = b if base is None else v
                    why = (not_timed or {}).get((*missing, scheme, op))
                    lacks = (skipped or {}).get((*missing, scheme))
                    if lacks is not None and stage not in chain_stages:
                        continue
                    rows.append(_na_row(metric, scheme, op, stage, b, v, base, var,
                                        f"{missing[0]} ({missing[1]}) did not time {op} of {scheme}: {why}" if why else
                                        f"no data for variant {missing[0]} ({missing[1]}; {metric}, {scheme}, {op})"
                                        + (f": skipped, {lacks}" if lacks else "")))
                    continue
                if not (base.positive and var.positive):
                    bad = base if not base.positive else var
                    m = metrics_mod.of(bad.metric)
                    if m.zero_is_measured:  # 0 bytes is a measurement (a leaf routine writes no stack)
                        rows.append(_na_row(metric, scheme, op, stage, b, v, base, var,
                                            f"{bad.variant} ({bad.compiler}) uses 0 {m.unit} of {bad.metric} here: no "
                                            f"ratio of {m.unit} (results/footprint has both sides)"))
                        continue
                    why = ("count <= 0 after subtracting the harness's own count" if bad.metric in EXACT_METRICS
                           else "below timer resolution after overhead subtraction")
                    rows.append(_na_row(metric, scheme, op, stage, b, v, base, var,
                                        f"job medians <= 0 for {bad.variant} ({bad.compiler}; {why}): "
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
    df = pd.DataFrame(out, columns=COLUMNS + _HIDDEN)
    df["cliff_finding"] = cliff_findings(df, cliff_copies)
    df, fam = finish_family(df, settings, level)
    if len(df):  # the verdicts without the regime's minority, and without the jobs that shared their CPU
        minority = [frozenset(str(j).split()) if f else frozenset() for f, j in zip(df["regimes"], df["regime_jobs"])]
        _put_without(df, "minority", recompute_without(df, minority, groups, settings, fam.gamma, priors))
        shared = frozenset(shared_jobs)
        if shared:
            df["shared_cpu_jobs"] = [len(shared.intersection(j)) for j in df["_jobs"]]
            if priors is None and (df["design"] == Design.SEPARATE).any():
                priors = study_priors(groups)
            _put_without(df, "shared", recompute_without(df, [shared] * len(df), groups, settings, fam.gamma, priors))
    warnings += family_warnings(df, fam)
    return df, warnings, fam, drift_record(df, settings.alpha)


def public(df: pd.DataFrame) -> pd.DataFrame:
    """The comparisons table as written: without the hidden working columns."""
    return df.drop(columns=[c for c in _HIDDEN if c in df.columns])
