"""`pqsimd analyze DIR` as an ordered sequence of steps (STEPS), each a function of the `Analysis`
that the steps before it filled in: load the spins, make the groups, draw the jobs and fit the
priors, compare, check A/A, check co-residency, diagnose (warnings), write the tables, the cliffs,
the mechanism tables and summary.json. A new step is one function and its place in STEPS."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from .. import metrics as metrics_mod
from ..analysis_settings import Settings, asked_record, read_study_toml, resolve
from ..errors import PqsimdError, invoked
from ..model import RESULTS_SCHEMA_VERSION, Chain, Design, JobKind
from ..results import computed_from
from ..studydir import StudyDir
from . import attribution as attribution_mod
from . import bottleneck, claims, ct, explanations, hashshare, hazards, mechanism, mix, perunit, sim
from . import coresidency as coresidency_mod
from . import crossimpl as crossimpl_mod
from . import footprint as footprint_mod
from . import jobs as jobs_mod
from . import layout as layout_mod
from .calibration import aa_record
from .compare import AA_STAGE, compare_all, draw_jobs as draw_group_jobs, public, study_blocks, study_priors
from .compare import COLUMNS as COMPARISON_COLUMNS
from .compare import without_record
from .context import (aa_pairs, ablations, absent_ops, alone_matched, code_hashes, not_timed_ops, ops_order,
                      ordered_groups, skipped_builds, study_context, variants_in_order, with_isa)
from .decompose import decompose
from .groups import (EXACT_METRICS, MIN_CLOCK_STEPS, attach_resolution, build_groups, describe, flag_carryover,
                     short_samples)
from .load import drop_failed_builds, is_counts_file, load_spins, not_timed_variants
from .methods import ESTIMAND, estimand_of, methods
from .records import (SELF_CHECK_TOLERANCE_TICKS, stepped_record, budget_record, clock_record, layout_record, regimes_record, self_check_record,
                      shared_cpu_jobs, shared_cpu_record, shared_cpu_warning, warmup_record, with_cpu_share,
                      with_job_records)
from .write import write_json, write_or_remove, write_spins, write_table

# the steps whose durations summary.json reports (timing_s), under these names
TIMED = {"load": "load", "make_groups": "groups", "draw_jobs": "jobs", "compare": "comparisons", "check_aa": "aa_check"}


@dataclass
class Analysis:
    """What the steps share: the study and its settings, then what each step adds (None until then)."""

    directory: Path
    results: Path
    study: dict
    settings: Settings
    ctx: dict  # study_context: chain, families, compilers, design, isa, vlen
    chain: Chain
    sources: dict  # computed_from: the files the results are computed from, read before anything else
    mix_only: bool
    asked: dict = field(default_factory=dict)  # analysis_settings.asked_record: what the command line gave
    warnings: list[str] = field(default_factory=list)
    started: float = 0.0
    mark: float = 0.0
    timing: dict[str, float] = field(default_factory=dict)
    # load
    data: Any = None  # load.Spins
    alone_spins: pd.DataFrame | None = None
    alone_jobs: pd.DataFrame | None = None
    # make_groups
    ops_order: list[str] = field(default_factory=list)
    groups: dict = field(default_factory=dict)
    groups_df: pd.DataFrame | None = None
    present: list[str] = field(default_factory=list)
    variants: list[str] = field(default_factory=list)
    compilers: list[str] = field(default_factory=list)
    self_checks: set[str] = field(default_factory=set)
    # draw_jobs
    priors: Any = None
    # compare
    aa_pairs: dict[str, str] = field(default_factory=dict)
    ablations: list = field(default_factory=list)
    cliff_tables: tuple = ()
    comparisons: pd.DataFrame | None = None
    main: pd.DataFrame | None = None  # the comparisons without the A/A rows
    fam: Any = None  # the family level (stats/multiplicity.py)
    drift: dict = field(default_factory=dict)
    decomposition: pd.DataFrame | None = None
    jobs_table: pd.DataFrame | None = None
    judged: int = 0
    shared: dict = field(default_factory=dict)
    attribution: pd.DataFrame | None = None
    # check_aa, check_coresidency, diagnose
    aa_table: pd.DataFrame | None = None
    aa_summary: dict = field(default_factory=dict)
    co_table: pd.DataFrame | None = None
    co_rec: dict = field(default_factory=dict)
    identical: dict = field(default_factory=dict)
    laid: pd.DataFrame | None = None  # the groups with laid-out copies
    disturbed: pd.DataFrame | None = None
    n_carry: int = 0
    self_check: dict = field(default_factory=dict)
    # write_tables, write_cliffs
    core_per_tsc: float | None = None
    cliffs: dict = field(default_factory=dict)

    def lap(self, step: str) -> None:
        """Record a timed step's duration (since the previous timed step, or the start)."""
        if step in TIMED:
            now = time.perf_counter()
            self.timing[TIMED[step]] = round(now - self.mark, 3)
            self.mark = now


def start(directory: Path, results: Path, n_boot: int | None, seed: int | None, adjust: str | None) -> Analysis:
    """The study's records and settings, before any raw file is read."""
    t0 = time.perf_counter()
    study = read_study_toml(directory)
    settings = resolve(directory, study, n_boot=n_boot, seed=seed, adjust=adjust)
    ctx = study_context(directory, study)
    chain = Chain.from_dict(ctx["chain"])
    if not settings.extra_baseline:
        settings = dataclasses.replace(settings, extra_baseline=chain.extra_baseline)
    if settings.aa_variants is None:
        settings = dataclasses.replace(settings, aa_variants=(chain.steps[-1][1],) if chain.steps else ())
    sources = computed_from(directory)  # before anything is read: a file changed meanwhile reads as stale
    raw_files = StudyDir(directory).raw_files()
    mix_only = bool(raw_files) and all(is_counts_file(f.name) for f in raw_files)
    asked = asked_record(study, {"n_boot": n_boot, "seed": seed, "adjust": adjust})
    return Analysis(directory, results, study, settings, ctx, chain, sources, mix_only, asked=asked, started=t0, mark=t0)


def write_mix_only(a: Analysis) -> None:
    """--metric mix, sim, ct and/or hazards alone: their tables are all there is to analyse."""
    ctx = a.ctx
    warnings = mix.write_mix_results(a.directory, a.results, groups=None, chain=ctx["chain"], core_per_tsc=None,
                                     families=ctx["families"], isa=ctx["isa"], vlen=ctx.get("vlen"))
    warnings += write_why_results(a.directory, a.results, None, a.chain, None, ctx)
    warnings += ct.write_ct_results(a.directory, a.results, ctx["chain"], ctx["families"], ctx.get("compilers"))
    write_hazards(a)
    write_json({"schema_version": RESULTS_SCHEMA_VERSION, "mix_only": True, "chain": ctx["chain"],
                "families": ctx["families"], "warnings": warnings, "isa": ctx["isa"], "vlen": ctx.get("vlen"),
                "computed_from": a.sources, "analysis_asked": a.asked}, a.results / "summary.json")


# --- the steps ----------------------------------------------------------------------------------------------

def load(a: Analysis) -> None:
    """The spins of every job, the failed builds dropped, a paired study's alone jobs set apart."""
    a.data = load_spins(a.directory, pool_cpu_models=a.settings.pool_cpu_models)
    a.warnings += list(a.data.warnings) + drop_failed_builds(a.data, a.directory)
    a.alone_spins, a.alone_jobs = split_alone(a.data)  # a paired study's builds timed alone: co-residency, not its groups


def make_groups(a: Analysis) -> None:
    """The groups (metric, scheme, op, variant, compiler) in reading order, described and checked for
    carry-over, position 0 and short samples."""
    data, settings = a.data, a.settings
    a.ops_order = ops_order(a.study, a.ctx)
    groups = build_groups(data.spins)
    attach_resolution(groups, data.spins, data.jobs)
    a.present = sorted(str(v) for v in data.spins["variant"].unique())
    a.variants = variants_in_order(a.study, a.present, a.chain)
    compilers = list(dict.fromkeys([*a.ctx["compilers"], *sorted(str(c) for c in data.spins["compiler"].unique())]))
    a.compilers = [c for c in compilers if c in {str(x) for x in data.spins["compiler"].unique()}]
    a.groups = ordered_groups(groups, a.study, a.variants, a.compilers, a.ops_order)
    groups_df = pd.DataFrame([describe(g, settings.alpha, settings.threshold) for g in a.groups.values()])
    a.self_checks = {f.get("self_check") for f in a.ctx["families"].values() if f.get("self_check")}
    # the self-check op (an empty function, ~2 ticks) is a harness check, not a measurement: its
    # carry-over "shifts" are fractions of a tick, so it is not tested (nor counted in the Holm family)
    sc = groups_df["op"].isin(a.self_checks).to_numpy()
    groups_df.loc[sc, ["carryover_p", "carryover_shift", "position0_p", "position0_shift"]] = np.nan
    groups_df.loc[sc, "carryover_after"] = ""
    groups_df["carryover"] = flag_carryover(groups_df, settings.alpha, settings.threshold)
    groups_df["position0"] = flag_carryover(groups_df, settings.alpha, settings.threshold, "position0")
    groups_df["short_jobs"] = short_samples(data.spins, data.jobs, groups_df)
    a.groups_df = groups_df


def draw_jobs(a: Analysis) -> None:
    """Each group's job resamples, and the separate design's priors shared across the study."""
    draw_group_jobs(a.groups, a.settings)
    a.priors = study_priors(a.groups, study_blocks(a.groups))


def compare(a: Analysis) -> None:
    """Every comparison with its interval and verdict, the decomposition, the jobs judged, the shared
    CPU record and the ablations' attribution."""
    settings, data, warnings = a.settings, a.data, a.warnings
    absent = [v for v in a.variants if v not in a.present]
    not_timed = not_timed_variants(a.directory)  # failed their gate, skipped, or excluded: never "yet"
    for v in absent:
        if v in not_timed:
            warnings.append(f"variant {v} is not timed: {not_timed[v]}; its comparisons are n/a")
    absent = [v for v in absent if v not in not_timed]
    if absent:
        warnings.append(f"variant(s) {', '.join(absent)} of study.toml have no raw data yet: their comparisons are n/a")
    a.aa_pairs = aa_pairs(a.study, a.present)
    a.ablations = ablations(a.directory)
    shared = shared_cpu_jobs(data.jobs)
    a.groups_df["shared_cpu_jobs"] = [len(shared.intersection(g.job_ids)) for g in a.groups.values()]
    a.cliff_tables = cliff_tables(a.directory, a.groups)  # comparisons that share a cliff copy: one finding
    comparisons, cwarn, a.fam, a.drift = compare_all(
        a.groups, a.chain, a.variants, a.compilers, a.ops_order, settings, priors=a.priors, skip_ops=a.self_checks,
        aa=a.aa_pairs, ablation_cells=[(ab.base, [v for v in ab.cells if v != ab.base]) for ab in a.ablations if ab.base],
        not_timed=absent_ops(a.directory) | not_timed_ops(a.directory),
        skipped=skipped_builds(a.directory, a.ctx["families"]), shared_jobs=shared, cliff_copies=a.cliff_tables[0])
    warnings += cwarn
    if len(a.present) < 2:
        warnings.append(f"no comparisons: the study has data for one variant ({a.present[0]}); groups only")
    elif comparisons.empty:
        warnings.append("no comparisons: no pair of the study's variants forms a stage, cumulative or extra comparison")
    if len(comparisons):  # both builds run the same instructions for the op (the gate's code hashes)
        how = layout_mod.identical_code_how(comparisons, code_hashes(a.directory),
                                            code_hashes(a.directory, "code_commuted"), instruction_counts(a.groups))
        comparisons["identical_code"] = (how != "").to_numpy()
        comparisons["identical_code_how"] = how.to_numpy()
    a.comparisons = comparisons
    a.main = main = comparisons[comparisons["stage"] != AA_STAGE] if len(comparisons) else comparisons
    # (ablation rows are comparisons like any other: in the table and the family; attribution reads them)
    a.decomposition = decompose(main, a.chain, settings.threshold,
                                keys=list(dict.fromkeys((m, s, o, c) for (m, s, o, _v, c) in a.groups)))
    jobs_table = job_diagnostics(a.groups, comparisons, settings.threshold, a.self_checks)
    a.judged = len(jobs_table)
    a.jobs_table = with_job_records(with_cpu_share(jobs_table, data.jobs), data.jobs)
    a.shared = shared_cpu_record(data.jobs, a.groups_df, main, settings.threshold)
    if a.shared["jobs"]:
        warnings.append(shared_cpu_warning(a.shared))
    a.attribution = attribution_mod.attribution_table(comparisons, a.ablations, settings.threshold,
                                                      level=1.0 - settings.alpha, n_boot=settings.n_boot,
                                                      seed=settings.seed)
    attribution_mod.check(a.attribution)


def check_aa(a: Analysis) -> None:
    """The A/A check: each duplicated build against its duplicate."""
    a.aa_table, a.aa_summary = aa_record(a.comparisons, a.aa_pairs, a.data.spins, a.settings, a.ops_order, a.priors,
                                         a.self_checks, a.ctx["design"], a.fam, jobs=a.data.jobs)
    if a.aa_summary.get("false_verdicts"):
        a.warnings.append(f"A/A check: {a.aa_summary['false_verdicts']} of {a.aa_summary['comparisons']} comparisons "
                          f"of a build with its duplicate got a faster/slower verdict (see aa.csv)")


def check_coresidency(a: Analysis) -> None:
    """The builds timed alone against the same builds beside the study's others."""
    alone_groups = build_groups(a.alone_spins) if len(a.alone_spins) else {}
    attach_resolution(alone_groups, a.alone_spins, a.alone_jobs)
    a.co_table, a.co_rec = coresidency_mod.coresidency(a.groups, alone_groups, a.settings.alpha, a.settings.threshold,
                                                       matched=alone_matched(a.directory))
    co_rec = a.co_rec
    if co_rec.get("flagged"):
        a.warnings.append(f"co-residency: {co_rec['flagged']} of {co_rec['rows']} groups run at another speed beside "
                          f"the study's other builds than alone (worst: {co_rec['worst']}; results/coresidency.csv)")


def diagnose(a: Analysis) -> None:
    """The warnings of the study's diagnostics: identical code with verdicts, n/a rows, disturbed jobs,
    drift, carry-over, short samples, the self-check op, the clock's unit."""
    main, groups_df, warnings, settings = a.main, a.groups_df, a.warnings, a.settings
    identical = layout_mod.identical_code_check(main, a.fam.gamma) if len(main) else {"n": 0, "verdicts": 0}
    if identical.get("verdicts"):
        warnings.append(f"identical code: {identical['verdicts']} of {identical['n']} timed comparisons of builds that "
                        f"run the same instructions got a faster/slower verdict (at most about "
                        f"{identical['expected_at_most']:g} expected at the family's level): "
                        + "; ".join(identical["rows"][:3]))
    a.identical = identical
    a.laid = groups_df[groups_df["n_layouts"] > 0] if "n_layouts" in groups_df else groups_df.iloc[:0]
    n_na = int((main["verdict"] == "n/a").sum()) if len(main) else 0
    if n_na:
        warnings.append(f"{n_na} comparison(s) have verdict n/a: no data on one side, or job medians <= 0 "
                        "(below timer resolution); see column reason")
    jobs_table = a.jobs_table
    a.disturbed = disturbed = jobs_table[jobs_table["disturbed"].astype(bool)] if len(jobs_table) else jobs_table
    if len(disturbed):
        lines = [jobs_mod.describe_job(r, r["unit"]) for _, r in disturbed.head(4).iterrows()]
        more = f" (+{len(disturbed) - 4} more in jobs.csv)" if len(disturbed) > 4 else ""
        warnings.append(f"{len(disturbed)} disturbed job(s) of {a.judged}: " + "; ".join(lines) + more)
    drift_rec = a.drift
    if drift_rec["comparisons_flagged"]:
        top = ", ".join(list(drift_rec["jobs"])[:3])
        warnings.append(f"drift: {drift_rec['comparisons_flagged']} of {drift_rec['comparisons_tested']} comparisons "
                        f"trend within a job (Benjamini-Hochberg), mostly in {top}; {drift_rec['rate']:.1%} of "
                        f"{drift_rec['job_tests']} job trend tests have p < {settings.alpha:g} "
                        f"({settings.alpha:.0%} expected without drift)")
    a.n_carry = n_carry = int(groups_df["carryover"].sum())
    if n_carry:
        worst = groups_df.loc[groups_df["carryover"]].iloc[
            int(np.argmax(np.abs(groups_df.loc[groups_df["carryover"], "carryover_shift"].to_numpy())))]
        warnings.append(f"carry-over in {n_carry} group(s): the build run just before changes the time (worst: "
                        f"{worst['scheme']} {worst['op']} {worst['variant']} ({worst['compiler']}) {worst['carryover_shift']:+.0%} after "
                        f"{worst['carryover_after']}); lengthen the warm-up (warmup_ns) or see groups.carryover_*")
    short = groups_df[(groups_df["short_jobs"] > 0) & ~groups_df["op"].isin(a.self_checks)]
    if len(short):
        warnings.append(f"short samples in {len(short)} group(s) (e.g. {short['scheme'].iloc[0]} {short['op'].iloc[0]} "
                        f"{short['variant'].iloc[0]}): their samples last fewer than {MIN_CLOCK_STEPS:,} clock steps (the "
                        "budget could not afford more calls, a fixed --batch, or the probe read the op slower than the "
                        "jobs did), so their resolution is coarser than "
                        "0.1% (groups.resolution_rel; intervals are widened by it); a larger --budget, or --batch auto, "
                        "lengthens them (see groups.short_jobs)")
    a.self_check = self_check = self_check_record(groups_df, a.self_checks)
    if self_check.get("outside"):
        w = abs(self_check["worst"])
        warnings.append(f"self-check: the empty op reads {self_check['min']:+.2f} to {self_check['max']:+.2f} ticks per call "
                        f"in {self_check['groups']} group(s), outside 0 +- {SELF_CHECK_TOLERANCE_TICKS:g} in {self_check['outside']}: "
                        f"every timed call carries about that much call cost, so ops under {100 * w:,.0f} ticks are biased "
                        "by more than 1% (ratios of two such ops partly cancel it)")
    if (a.data.spins["metric"] == metrics_mod.TIME).any():
        warnings.append(f"times are {metrics_mod.tick_note(a.ctx['isa'])}")


def write_tables(a: Analysis) -> None:
    """The tables of groups, comparisons, decomposition, jobs, attribution, spins, the instruction
    tables, A/A, co-residency, implementations side by side and the footprint."""
    results, ctx, main, groups_df = a.results, a.ctx, a.main, a.groups_df
    isa, vlen = ctx["isa"], ctx.get("vlen")
    check_estimates(main, a.decomposition)
    write_table(with_isa(groups_df, isa, vlen), results, "groups")
    write_table(with_isa(public(main) if len(main) else pd.DataFrame(columns=COMPARISON_COLUMNS), isa, vlen), results,
                "comparisons")
    write_table(with_isa(a.decomposition, isa, vlen), results, "decomposition")
    write_table(a.jobs_table, results, "jobs")
    write_or_remove(a.attribution, results, "attribution")
    write_spins(a.data.spins, results)
    a.core_per_tsc = cpt = mechanism.core_per_tsc(list(a.data.calibrations))
    ins_records = [r for r in StudyDir(a.directory).job_records().values() if r and r.get("metric") == metrics_mod.COUNT]
    for name, table in (("instructions", mechanism.instruction_table(groups_df, a.chain, a.self_checks)),
                        ("ilp", mechanism.ilp_table(groups_df, a.chain, cpt, a.self_checks)),
                        ("call_counts", mechanism.call_counts_table(ins_records))):
        write_or_remove(table, results, name)
    write_table(a.aa_table if len(a.aa_table) else pd.DataFrame(columns=COMPARISON_COLUMNS), results, "aa")
    write_table(a.co_table, results, "coresidency")
    write_or_remove(crossimpl_mod.crossimpl_table(main, ctx["chain"]), results, "crossimpl")
    write_or_remove(footprint_mod.footprint_table(main, groups_df, ctx["families"], ctx["chain"], a.self_checks),
                    results, "footprint")
    write_or_remove(crossimpl_mod.counterparts_table(main, groups_df, ctx["families"], ctx["chain"]), results,
                    "counterparts")


def write_cliffs(a: Analysis) -> None:
    """results/copies and results/cliffs (analyze/cliffs.py) of a laid-out study, and the re-timings'
    tables of `pqsimd cliffs DIR --retime`; nothing otherwise."""
    from . import cliffs as cliffs_mod

    copies, table, rec = a.cliff_tables
    write_or_remove(copies, a.results, "copies")
    write_or_remove(table, a.results, "cliffs")
    retimed = cliffs_mod.retime_results(a.directory / "cliffs", a.settings.threshold)
    for name, t in retimed.items():
        write_or_remove(t, a.results, name)
    rt = retimed["cliff_retime"]
    if len(rt):
        rec["retimed"] = [{"group": f"{r.scheme} {r.op} {r.variant} ({r.compiler})", "test": r.test,
                           "ratio": r.ratio, "ci": [r.ci_low, r.ci_high], "verdict": r.verdict, "belongs": r.belongs}
                          for r in rt.itertuples()]
    a.cliffs = rec
    if rec.get("flagged"):
        top = rec["findings"][0]
        a.warnings.append(f"cliffs: {rec['flagged']} of {rec['groups']} groups have a laid-out copy far slower "
                          f"than the rest ({rec['cliff_copies']} copies; worst {top['scheme']} {top['variant']} "
                          f"job {top['job']} copy {top['copy']}: " + ", ".join(f"{o} {r:.2f}×" for o, r in
                                                                            list(top["ops"].items())[:3])
                          + f"); results/cliffs.csv, `pqsimd cliffs {a.directory} --retime` re-times them")


def write_mechanism(a: Analysis) -> None:
    """The instruction mix and llvm-mca tables, the simulated events, bottlenecks and claims."""
    ctx = a.ctx
    a.warnings += mix.write_mix_results(a.directory, a.results, groups=a.groups_df, chain=ctx["chain"],
                                        core_per_tsc=a.core_per_tsc, families=ctx["families"], isa=ctx["isa"],
                                        vlen=ctx.get("vlen"))
    a.warnings += write_why_results(a.directory, a.results, a.groups_df, a.chain, a.core_per_tsc, ctx)


def write_constant_time(a: Analysis) -> None:
    """Constant time beside speed: the ct jobs' verdicts and sites, and the chain steps that introduced or
    removed a leak (results/constant_time, ct_stages)."""
    a.warnings += ct.write_ct_results(a.directory, a.results, a.ctx["chain"], a.ctx["families"],
                                      a.ctx.get("compilers"))


def write_hash_share(a: Analysis) -> None:
    """Each counted op's share of instructions inside hash entry points, and its Amdahl bound (results/hash_share);
    its instructions split by kernel (results/kernel_share, read by the explanations after it)."""
    write_or_remove(hashshare.hash_share_table(a.directory), a.results, "hash_share")
    write_or_remove(hashshare.kernel_share_table(a.directory), a.results, "kernel_share")


def write_per_unit(a: Analysis) -> None:
    """Per unit of work (a family's [views] per_unit: Keccak's permutations), each build's ops compared one to
    the next with their intervals: the width effect (results/per_unit)."""
    write_or_remove(perunit.per_unit_table(a.groups, a.ctx["families"], a.settings), a.results, "per_unit")


def write_hazards(a: Analysis) -> None:
    """Simulated hazards per call of each traced op and build, with their busiest sites (results/hazards)."""
    write_or_remove(hazards.hazards_table(a.directory), a.results, "hazards")


def write_explanations(a: Analysis) -> None:
    """A sentence from the evidence for every headline, outlier and slowdown (results/explanations)."""
    a.warnings += explanations.write_explanations(a.directory, a.results, a.main, a.groups_df, a.chain,
                                                  a.ctx["families"], a.compilers[0] if a.compilers else None,
                                                  a.settings.threshold)


def write_headlines(a: Analysis) -> None:
    """What the report's headlines name (results/headlines): the one headline rule (explanations.headline_picks)
    over the primary metric's hand stage, within the study's first compiler."""
    metrics_present = set(a.main["metric"].dropna().astype(str)) if "metric" in a.main.columns else set()
    if a.groups_df is not None and "metric" in a.groups_df.columns:
        metrics_present |= set(a.groups_df["metric"].dropna().astype(str))
    table = explanations.headline_table(a.main, a.ctx["families"], a.chain, metrics_mod.primary(metrics_present),
                                        a.compilers[0] if a.compilers else None)
    write_or_remove(table, a.results, "headlines")


def write_summary(a: Analysis) -> None:
    """summary.json: the settings, family level, methods, study, counts, every step's record, warnings."""
    directory, ctx, settings, fam = a.directory, a.ctx, a.settings, a.fam
    data, groups_df, main = a.data, a.groups_df, a.main
    layout_rec = layout_record(directory, a.laid)
    copies_rec = layout_mod.copies_record(main, (layout_rec or {}).get("copies_per_job"), directory,
                                          (a.study.get("study") or {}).get("jobs"))
    if copies_rec.get("note"):
        a.warnings.append(f"layouts: {copies_rec['note']}")
    jobs = data.jobs
    estimand = estimand_of(ctx["design"], layout_rec)
    summary = {
        "isa": ctx["isa"],
        # every metric's unit per call as this study prints it (the ISA's tick unit for times)
        "units": {str(m): metrics_mod.unit_of(str(m), ctx["isa"]) for m in data.spins["metric"].unique()},
        "vlen": ctx.get("vlen"),
        "schema_version": RESULTS_SCHEMA_VERSION,
        "generated": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        # where the advice in these results points, and how pqsimd was started: a reader of a copied or
        # moved study (results.read_summary_checked) rewrites them to its own
        "advice_names": {"directory": str(directory), "invoked": invoked()},
        "alpha": settings.alpha,
        "threshold": settings.threshold,
        "n_boot": settings.n_boot,
        "seed": settings.seed,
        "settings": settings.to_dict(),
        "family": {**fam.to_dict(),
                   "definition": "every comparison in comparisons.csv with a sampling interval (method sign, csign "
                                 "or t); excluded: n/a, exact, withheld-by-design and A/A rows; comparisons that "
                                 "share a cliff copy (cliff_finding) count as one unit"},
        "ci_level": fam.level,
        "methods": methods(settings, fam, ctx["design"], estimand),
        "chain": ctx["chain"],
        "families": ctx["families"],
        "design": ctx["design"],
        "core_per_tsc": a.core_per_tsc,
        "deterministic": {
            "groups": int(groups_df["deterministic"].sum()),
            "comparisons": int(main["deterministic"].sum()) if len(main) else 0,
            "treatment": f"a group is deterministic iff its metric is an exact metric ({', '.join(EXACT_METRICS)}) "
                         "and all its spin medians are identical; a comparison of two deterministic groups is the "
                         "exact ratio (method exact, zero-width interval, not in the family)",
        },
        "study": {
            "directory": str(directory),
            "raw_files": data.files,
            "metrics": sorted(data.spins["metric"].unique()),
            "schemes": list(dict.fromkeys(k[1] for k in a.groups)),
            "variants": a.variants,
            "compilers": a.compilers,
            "designs": sorted(data.jobs["design"].unique()),
            "ops": int(data.spins["op"].nunique()),
            "jobs_per_group": {"min": int(groups_df["n_jobs"].min()), "max": int(groups_df["n_jobs"].max())},
            "spins_per_group": {"min": int(groups_df["n_spins"].min()), "max": int(groups_df["n_spins"].max())},
            "reps_per_spin": int(np.median(groups_df["n_reps"])),
            "cpu_models": sorted(jobs["cpu_model"].unique()),
            "hostnames": sorted(jobs["hostname"].unique()),
        },
        "counts": {
            "groups": len(groups_df),
            "comparisons": len(main),
            "verdicts": {k: int(v) for k, v in main["verdict"].value_counts().items()} if len(main) else {},
            # how many verdicts differ when a regime's minority, or the jobs that shared their CPU, are left out
            "verdicts_changed_without_minority": without_record(main, "minority")["verdicts_changed"],
            "verdicts_changed_without_shared": without_record(main, "shared")["verdicts_changed"],
            "decomposition_rows": len(a.decomposition),
        },
        "aa_check": a.aa_summary,
        "identical_code": a.identical,
        "coresidency": a.co_rec,
        "cliffs": a.cliffs,
        "layout": {**layout_rec, **({"copies": copies_rec} if copies_rec else {})},
        "estimand": {"applies": estimand, **ESTIMAND},
        "ablations": [{"implementation": ab.implementation, "groups": list(ab.groups),
                       "cells": {v: sorted(c) for v, c in ab.cells.items()}} for ab in a.ablations],
        "jobs": {"judged": int(a.judged), "disturbed": int(len(a.disturbed)),
                 "disturbed_ids": [str(j) for j in a.disturbed["job"]] if len(a.disturbed) else []},
        "drift": a.drift,
        "regimes": regimes_record(main),
        "shared_cpu": a.shared,
        "carryover": {
            "tested": int(np.isfinite(groups_df["carryover_p"].to_numpy(dtype=float)).sum()),
            "flagged": a.n_carry,
            "position0_tested": int(np.isfinite(groups_df["position0_p"].to_numpy(dtype=float)).sum()),
            "position0_flagged": int(groups_df["position0"].sum()),
        },
        "warmup": warmup_record(directory, ctx["design"]),
        # builds counted by single-stepping (valgrind cannot run them): who counted what, for captions and explain
        "stepped": stepped_record(directory),
        "budget": budget_record(directory),
        "clock": clock_record(data.jobs, groups_df[~groups_df["op"].isin(a.self_checks)], main),
        "computed_from": a.sources,
        "analysis_asked": a.asked,
        "self_check": a.self_check,
        "warnings": a.warnings,
        "timing_s": a.timing,
    }
    write_json(summary, a.results / "summary.json")


STEPS: tuple[Callable[[Analysis], None], ...] = (
    load, make_groups, draw_jobs, compare, check_aa, check_coresidency, diagnose,
    write_tables, write_cliffs, write_mechanism, write_constant_time, write_hash_share, write_per_unit,
    write_hazards, write_explanations, write_headlines, write_summary,
)


# --- what the steps use ---------------------------------------------------------------------------------------

def split_alone(data) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Take the alone jobs (design "alone", run/plan.py) out of the study's spins and jobs; return their
    spins and jobs (their calibration: the resolution of the alone groups)."""
    alone = set(data.jobs.loc[data.jobs["design"] == JobKind.ALONE, "job"]) if len(data.jobs) else set()
    if not alone:
        return data.spins.iloc[:0], data.jobs.iloc[:0]
    mask = data.spins["job"].astype(str).isin(alone).to_numpy()
    out = data.spins[mask].copy()
    data.spins = data.spins[~mask].copy()
    for df in (out, data.spins):
        for c in df.columns:
            if isinstance(df[c].dtype, pd.CategoricalDtype):
                df[c] = df[c].cat.remove_unused_categories()
    alone_jobs = data.jobs[data.jobs["job"].isin(alone)].reset_index(drop=True)
    data.jobs = data.jobs[~data.jobs["job"].isin(alone)].reset_index(drop=True)
    return out, alone_jobs



def job_diagnostics(groups: dict, comparisons: pd.DataFrame, threshold: float, self_checks: set[str]) -> pd.DataFrame:
    """results/jobs: every job judged once (jobs.py): paired jobs on their ratios across the scheme's
    comparisons, separate jobs on their times across their block's ops."""
    band = math.log1p(threshold)
    rows: list[dict] = []
    live = comparisons[(comparisons["design"] == Design.PAIRED) & (comparisons["stage"] != AA_STAGE)
                       & ~comparisons["op"].isin(self_checks)] if len(comparisons) else comparisons
    time_dev: dict[tuple[str, str], dict[str, list[float]]] = {}
    for (metric, scheme, op, _v, _c), g in groups.items():
        if g.positive and op not in self_checks and not g.deterministic:
            devs = jobs_mod.deviations([(g.job_ids, g.summary.log_median)])
            for j, d in devs.items():
                time_dev.setdefault((metric, scheme), {}).setdefault(j, []).extend(d)
    for (metric, scheme), part in (live.groupby(["metric", "scheme"], sort=False) if len(live) else []):
        vecs = [(ids, x) for ids, x in zip(part["_job_ids"], part["_job_logs"]) if isinstance(ids, list)]
        te = {j: float(np.median(v)) for j, v in time_dev.get((metric, scheme), {}).items()}
        rows += jobs_mod.judge(jobs_mod.deviations(vecs), band, te, metric=metric, scheme=scheme, unit="comparisons")
    paired_schemes = set(zip(live["metric"], live["scheme"])) if len(live) else set()
    blocks: dict[tuple, list] = {}
    for (metric, scheme, op, v, c), g in groups.items():
        if (metric, scheme) in paired_schemes or not g.positive or op in self_checks or g.deterministic:
            continue
        blocks.setdefault((metric, scheme, v, c), []).append((g.job_ids, g.summary.log_median))
    for (metric, scheme, v, c), vecs in blocks.items():
        rows += jobs_mod.judge(jobs_mod.deviations(vecs), band, None, metric=metric, scheme=scheme, unit="ops")
    return jobs_mod.table(rows)



def instruction_counts(groups) -> dict[tuple[str, str, str, str], float]:
    """(variant, compiler, scheme, op) -> exact instructions per call, where the study counted them."""
    return {(g.variant, g.compiler, g.scheme, g.op): float(g.median) for g in groups.values()
            if g.metric == metrics_mod.COUNT and g.deterministic}



def cliff_tables(directory: Path, groups: dict):
    """(copies, cliffs, record) of analyze/cliffs.py for the study's laid-out groups."""
    from ..catalog import family_of
    from ..ids import build_id
    from . import cliffs as cliffs_mod

    layouts = {}
    for rec in StudyDir(directory).job_records().values():
        if rec and rec.get("layout"):
            layouts[str(rec.get("id"))] = rec["layout"]

    def build_of(variant: str, compiler: str, scheme: str) -> str:
        try:
            return build_id(variant, compiler, family_of(scheme).name)
        except PqsimdError:
            return ""

    return cliffs_mod.cliff_tables(groups, layouts, build_of)



def write_why_results(directory: Path, results: Path, groups: pd.DataFrame | None, chain: Chain,
                      core_per_tsc: float | None, ctx: dict) -> list[str]:
    """The simulated events (results/sim, sim_comparisons), the bottleneck per op and variant, and
    the verdicts on the families' claims (results/claims); warnings."""
    steps = list(chain.steps) + list(chain.also)
    sim_df = sim.write_sim_results(directory, results, groups, steps)
    mca_path = results / "mca.parquet"
    mca = pd.read_parquet(mca_path) if mca_path.exists() else None
    self_checks = {f.get("self_check") for f in ctx["families"].values() if f.get("self_check")}
    table = bottleneck.bottleneck_table(sim_df, groups, mca, core_per_tsc, self_checks)
    write_or_remove(table, results, "bottleneck")
    verdicts = claims.evaluate_families(ctx["families"], sim_df, groups, table, mix_dir=results)
    write_or_remove(verdicts, results, "claims")
    differ = sim_df[sim_df["ir_matches_instructions"].eq(False)] if len(sim_df) else sim_df
    return [f"{len(differ)} simulated (op, variant) rows ran other instructions than the instructions metric "
            f"(e.g. {differ['scheme'].iloc[0]} {differ['op'].iloc[0]} {differ['variant'].iloc[0]}): ops whose calls "
            "differ (fresh randomness per call, or work that changes from call to call: the two metrics count "
            "other calls); their events are one run's (results/sim note)"] if len(differ) else []



def _outside(p: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> int:
    ok = ~(np.isfinite(p) & np.isfinite(lo) & np.isfinite(hi))
    tol = 1e-9 * np.maximum(1.0, np.abs(np.nan_to_num(p)))
    return int((~(ok | ((lo - tol <= p) & (p <= hi + tol)))).sum())



def check_estimates(comparisons: pd.DataFrame, decomposition: pd.DataFrame) -> None:
    """Every printed estimate lies inside its own printed interval (the construction guarantees it;
    this guards the construction)."""
    def col(df, c):
        return df[c].to_numpy(dtype=float)

    n = _outside(col(comparisons, "speedup"), col(comparisons, "ci_low"), col(comparisons, "ci_high")) \
        if len(comparisons) else 0
    for c in decomposition.columns if len(decomposition) else []:
        if (c == "total" or c.startswith(("factor_", "share_"))) and not c.endswith(("_low", "_high", "_level")):
            n += _outside(col(decomposition, c), col(decomposition, f"{c}_ci_low"), col(decomposition, f"{c}_ci_high"))
    if n:
        raise AssertionError(f"{n} estimate(s) lie outside their own interval: a bug in pqsimd's analysis, please report it")
