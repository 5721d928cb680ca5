"""`pqsimd analyze DIR`: spin medians → groups, comparisons, decomposition, summary in DIR/results/."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import time
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import PqsimdError
from . import mechanism, mix
from .calibration import aa_check
from .compare import COLUMNS as COMPARISON_COLUMNS
from .compare import Chain, compare_all, resample_groups, study_blocks, study_priors
from .decompose import decompose
from .groups import EXACT_METRICS, MIN_TSC_STEPS, build_groups, describe, flag_carryover, short_samples
from .load import load_spins, not_timed_variants
from .settings import Settings, read_study_toml, resolve
from .write import write_json, write_spins, write_table
from ..studydir import StudyDir

__all__ = ["analyze_study", "Settings"]

RESULTS_SCHEMA_VERSION = 3  # 2: compiler columns, design, chain and families in summary.json, spins.parquet;
# 3: job-level test columns (test, test_ci_*, p_equiv*, mde, regimes), verdicts same/withheld, variance components

METHODS = {
    "unit": "spin median = median of per_call over the R reps of one (job, spin); warmup spins excluded; "
            "the job is the unit of independence",
    "speedup": "separate design: median(baseline spin medians) / median(variant spin medians); paired design "
               "(both variants in the same jobs): the median of the per-spin ratios baseline/variant",
    "ci": "the paper's 95% percentile bootstrap: both groups' spin medians resampled independently (B replicates); "
          "ignores jobs",
    "hci": "95% percentile hierarchical bootstrap: jobs resampled with replacement, then spins drawn with replacement "
           "from the chosen jobs (stage 2 pools the chosen job copies, so per-copy draw counts are multinomial "
           "around S_j); unreliable with < min_jobs_reliable jobs. Conservative (wider than needed) when jobs "
           "do not differ, because both stages add the within-job variance",
    "mwu_p": "one-sided Mann-Whitney U on spin medians, H1: variant stochastically smaller "
             "(scipy.stats.mannwhitneyu, tie-corrected normal approximation); pseudo-replicated, descriptive only; "
             "0 means below the smallest float64 (< 1e-308)",
    "cliffs_delta": "P(variant < baseline) - P(variant > baseline) = 1 - 2U/(n m) from the U statistic; CI by "
                    "resampling jobs (the hierarchical bootstrap's stage 1; the within-job stage adds O(1/S) and is "
                    "omitted for delta)",
    "job_p": "the job-level test's two-sided p (column test): separate design: the pooled test (test = pooled): per "
             "(metric, scheme, variant, compiler) block, the jobs x ops log job medians are split into a shared job "
             "(machine-state) variance, var of the jobs' op-averaged log medians with J-1 df, and an op-specific "
             "residual variance ((J-1)(O-1)/O df per op); both are moderated (limma-style, maximum-likelihood "
             "F-prior, outlying blocks screened out and not shrunk) over all blocks of the metric; "
             "Var(one job's log median) = a + (1 - 1/O) c, floored by the within-job sampling variance of the job "
             "medians; d = mean log job median of baseline - of variant, se^2 = Var_b/J_b + Var_v/J_v, "
             "Welch-Satterthwaite df; an op outside its block (missing in some job): Welch on log job medians "
             "(test = welch); paired design: one-sample t-test of the jobs' log median per-spin ratios, df J-1 "
             "(test = paired); n/a (not in the family) for exact and withheld rows",
    "test": "pooled | welch | paired: the job-level test used; exact: both groups have identical spin medians "
            "(or identical job medians whose spins pin them, median SE 0): the verdict is from the exact ratio; "
            "refuse: the design cannot support a test, verdict withheld, reason says which rule: R1 a group has "
            "< 2 jobs, R2 effective df < 4 (e.g. an uninformative prior, or a block with a job in another "
            "machine state), R3 J = 2 and > 25% of the variance is op-specific (job effects not shared by a "
            "job's ops); also when job medians have no spread and nothing is known about the spins (test "
            "undefined); the paired test applies R1 only",
    "test_ci": "test_ci_low/high: the (1 - alpha) t interval exp(d -+ t_{1-alpha/2, df} se) of the job-level "
               "speedup exp(mean log job median of baseline - of variant) (paired: exp of the mean log job "
               "ratio); the exact ratio for exact rows. It estimates the job-level speedup, not the median ratio "
               "of column speedup; the verdict uses it",
    "p_equiv": "TOST equivalence on the log scale within ±log(1 + threshold), with the test's own se and df: "
               "the larger of the two one-sided t p-values; p_equiv_holm: Holm over the family",
    "mde": "the minimum detectable speedup of the comparison: the smallest true speedup (ratio > 1; slowdowns: "
           "1/mde) that gets a faster verdict (p < alpha/m, m = the family size, Holm's worst case, and test CI "
           "low > 1 + threshold) with power 0.8, taking the test's se as the truth (pooled, paired: noncentral "
           "t with the test's df; welch: integrated over both groups' variance estimates); n/a with a note when "
           "no speedup below e^50 reaches that power",
    "regimes": "paired design: true when the jobs' median per-spin ratios fall into two clusters (Cochran's Q "
               "p < alpha, the best two-cluster split's share of the spread beyond one normal cluster by a "
               "parametric bootstrap p < alpha, and cluster ratios more than threshold apart; needs >= 4 jobs): "
               "machine states that slow the variants differently; the note gives both cluster ratios. False for "
               "the separate design (not tested)",
    "paired": "paired design: the naive CI resamples the per-spin ratios, the hierarchical CI resamples jobs, then "
              "the ratios of the chosen jobs (descriptive; the verdict uses the job-level t interval)",
    "decomposition": "factors are ratios of group medians (they multiply to the total exactly, in both designs); "
                     "share CIs from the groups' hierarchical bootstrap replicates (share per replicate = "
                     "log factor / log total); shares and their CIs are n/a when the total's CI reaches into "
                     "±threshold of 1 (log(total) ~ 0: shares unbounded), as the note says",
    "p_holm": "Holm step-down adjustment of job_p over the family",
    "p_bh": "Benjamini-Hochberg adjustment of job_p over the family (scipy.stats.false_discovery_control)",
    "verdict": "faster iff the adjusted job p (p_holm, or p_bh with adjust = bh) < alpha and test_ci_low > 1 + "
               "threshold; slower iff adjusted p < alpha and test_ci_high < 1/(1 + threshold); else same iff "
               "p_equiv_holm < alpha; else ~ (inconclusive); withheld when the test refuses (reason says why; "
               "summary warning); exact rows: faster/slower if the exact ratio is outside ±threshold, same if "
               "strictly inside, else ~; n/a if a side has no data",
    "carryover": "paired design: does the build run just before in the spin change a group's time? "
                 "Kruskal-Wallis of job-centred log spin medians across predecessor builds (first in the spin "
                 "is its own level; levels with < 3 spins left out; too few levels: predecessors pooled by variant across compilers), Holm over the groups tested "
                 "(carryover_p_holm); carryover = adjusted p < alpha and the worst level's median shifted by "
                 "more than threshold (carryover_shift, carryover_after); n/a in the separate design",
    "groups": "median, iqr, min, max, mad (unscaled) of spin medians; outliers by Tukey fences (1.5 IQR) on log "
              "spin medians, counted never dropped; icc = one-way random-effects ICC(1) of log spin medians within "
              "jobs; job_cv = sd/mean of job medians, between_var = var of log job medians, within_sd = sqrt of the "
              "pooled within-job variance of log spin medians, deff = 1 + (S - 1) max(icc, 0), n_eff = J S / deff; "
              "drift = a job whose spin medians trend (Spearman, Bonferroni over jobs) by more than threshold "
              "first-to-last quarter; noisy job = job median outside the leave-one-out t prediction interval of the other jobs' log medians (level 0.01/J) and > threshold/2 away; "
              "short_jobs = jobs whose median sample ((spin median + call overhead) x calls per sample + read "
              "overhead) lasts fewer than 90% of 100 TSC steps (the smallest granularity measured on the CPU model; "
              "ticks; auto-batching aims above 100 steps)",
}


def study_context(directory: Path, study: dict) -> dict:
    """What the analysis needs to know beyond the raw data, from the study's own records: the chain
    (manifest, else the shipped one), the families of its schemes (their ops, labels and report
    views, carried to the report), its compilers and design."""
    from .. import catalog

    manifest = read_json_file(StudyDir(directory).manifest_json)
    chain = manifest.get("chain") or catalog.chain().to_dict()
    st = study.get("study", {}) or {}
    families: dict[str, dict] = {}
    for name, info in (manifest.get("families") or {}).items():
        try:
            families[name] = catalog.family_from_toml(info["toml"], info.get("source", name), None).to_results()
        except Exception:  # an op table outside the shipped tree: the TOML still says everything analyze needs
            families[name] = _family_summary_from_toml(info.get("toml", ""), name)
    for scheme in st.get("schemes", []) or []:
        try:
            fam = catalog.family_of(scheme)
        except PqsimdError:
            continue
        families.setdefault(fam.name, fam.to_results())
    plan = read_json_file(StudyDir(directory).plan_json)
    cc = st.get("cc") or []
    cc = [cc] if isinstance(cc, str) else cc
    from_toml = [c.split("=", 1)[0] if "=" in c else Path(c).name for c in cc if isinstance(c, str)]
    return {"chain": chain, "families": families, "compilers": plan.get("compilers") or from_toml,
            "design": plan.get("design") or st.get("design") or "separate"}


def _family_summary_from_toml(text: str, name: str) -> dict:
    try:
        d = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return {"family": name, "ops": [], "schemes": {}, "labels": {}, "views": {}}
    return {"family": d.get("family", name), "title": d.get("title", name), "kind": d.get("kind"),
            "schemes": {k: {"label": v.get("label", k.upper())} for k, v in d.get("schemes", {}).items()},
            "ops": d.get("ops", {}).get("order", []), "labels": d.get("ops", {}).get("labels", {}),
            "self_check": d.get("ops", {}).get("self_check"), "views": d.get("views", {})}


def warmup_record(directory: Path, design: str) -> dict:
    """The warm-up the study ran with, from its plan: warm-up spins per op (dropped before analysis)
    and, in the paired design, how long each build is run untimed before its turn in every spin."""
    plan = read_json_file(StudyDir(directory).plan_json)
    st = plan.get("settings") or {}
    sized = read_json_file(StudyDir(directory).sizing_json) if st.get("budget") else {}
    spins = [o.get("warmup") for s in (sized.get("schemes") or {}).values() if isinstance(s, dict)
             for o in (s.get("ops") or {}).values() if isinstance(o, dict) and "warmup" in o]
    nowarm = sorted({op for s in (sized.get("schemes") or {}).values() if isinstance(s, dict)
                     for op, o in (s.get("ops") or {}).items() if isinstance(o, dict) and o.get("nowarm")})
    return {"design": design, "warmup_spins": st.get("warmup"), "nowarm_ops": nowarm,
            "warmup_spins_sized": [min(spins), max(spins)] if spins else None,
            "warmup_ns": st.get("warmup_ns", 0) if design == "paired" else 0}


SELF_CHECK_TOLERANCE_TICKS = 2.0  # the engine's acceptance for the empty op: 0 +- 2 ticks per call


def self_check_record(groups: pd.DataFrame, self_checks: set[str]) -> dict:
    """What the families' self-check ops (empty functions) read per call in ticks: the call cost the
    harness's loop calibration did not remove. Every timed op carries about that much, so an op of
    T ticks is biased by about reading / T."""
    g = groups[(groups["metric"] == "ticks") & groups["op"].isin(self_checks)] if len(groups) else groups
    if not len(g):
        return {"groups": 0}
    med = g["median"].to_numpy(dtype=float)
    worst = float(med[np.argmax(np.abs(med))])
    return {"ops": sorted(set(g["op"])), "groups": int(len(g)), "min": float(med.min()), "max": float(med.max()),
            "tolerance": SELF_CHECK_TOLERANCE_TICKS, "outside": int((np.abs(med) > SELF_CHECK_TOLERANCE_TICKS).sum()),
            "worst": worst}


def read_json_file(path: Path) -> dict:
    import json

    try:
        d = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return d if isinstance(d, dict) else {}


def _ops_order(study: dict, ctx: dict) -> list[str]:
    order = []
    for fam in ctx["families"].values():
        order += [o for o in fam.get("ops", []) if o not in order]
    return order


def _variants(study: dict, present: list[str], chain: Chain) -> list[str]:
    """The study file's variants (with or without data yet), then any others found in the raw data."""
    listed = [str(v) for v in (study.get("study", {}).get("variants", []) or [])]
    rest = [v for v in chain.variants if v in present and v not in listed]
    rest += sorted(v for v in present if v not in listed and v not in rest)
    return listed + rest


def _natural(name: str) -> tuple:
    digits = "".join(ch for ch in name if ch.isdigit())
    return (name.rstrip("0123456789-"), int(digits) if digits else -1, name)


def _ordered(groups: dict, study: dict, variants: list[str], compilers: list[str], ops_order: list[str]) -> dict:
    """Groups in reading order: ticks first, schemes as in the study (else by parameter set), ops in
    the family's order, variants in chain order, compilers in study order."""
    schemes = [str(x) for x in (study.get("study", {}).get("schemes", []) or [])]
    s_rank = {x: i for i, x in enumerate(schemes)}
    o_rank = {x: i for i, x in enumerate(ops_order)}
    v_rank = {x: i for i, x in enumerate(variants)}
    c_rank = {x: i for i, x in enumerate(compilers)}

    def key(k):
        metric, scheme, op, variant, compiler = k
        return ((metric != "ticks", metric), (s_rank.get(scheme, len(s_rank)), _natural(scheme)),
                (o_rank.get(op, len(o_rank)), op), (c_rank.get(compiler, len(c_rank)), compiler),
                (v_rank.get(variant, len(v_rank)), variant))

    return {k: groups[k] for k in sorted(groups, key=key)}


def analyze_study(directory: Path, n_boot: int | None = None, seed: int | None = None) -> Path:
    """Analyse DIR/raw into DIR/results/{groups,comparisons,decomposition,aa}.{csv,parquet} + summary.json;
    return DIR/results. Bad input is a one-line PqsimdError."""
    t0 = time.perf_counter()
    directory = Path(directory)
    if not directory.is_dir():
        raise PqsimdError(f"no study directory at {directory}; create one with `pqsimd run {directory}`")
    study = read_study_toml(directory)
    settings = resolve(directory, study, n_boot=n_boot, seed=seed)
    ctx = study_context(directory, study)
    chain = Chain.from_dict(ctx["chain"])
    if not settings.extra_baseline:
        settings = dataclasses.replace(settings, extra_baseline=chain.extra_baseline)
    if settings.aa_variants is None:
        settings = dataclasses.replace(settings, aa_variants=(chain.steps[-1][1],) if chain.steps else ())
    raw_files = StudyDir(directory).raw_files()
    mix_only = any(f.name.endswith(".mix.parquet") for f in raw_files) and all(
        f.name.endswith(".mix.parquet") for f in raw_files)
    if mix_only:  # --metric mix alone: the mix tables are all there is to analyse
        results = StudyDir(directory).results_dir
        results.mkdir(parents=True, exist_ok=True)
        warnings = mix.write_mix_results(directory, results, groups=None, chain=ctx["chain"], core_per_tsc=None,
                                         families=ctx["families"])
        write_json({"schema_version": RESULTS_SCHEMA_VERSION, "mix_only": True, "chain": ctx["chain"],
                    "families": ctx["families"], "warnings": warnings}, results / "summary.json")
        return results
    data = load_spins(directory, pool_cpu_models=settings.pool_cpu_models)
    warnings = list(data.warnings)
    t_load = time.perf_counter()
    ops_order = _ops_order(study, ctx)

    groups = build_groups(data.spins)
    present = sorted(str(v) for v in data.spins["variant"].unique())
    variants = _variants(study, present, chain)
    compilers = list(dict.fromkeys([*ctx["compilers"], *sorted(str(c) for c in data.spins["compiler"].unique())]))
    compilers = [c for c in compilers if c in set(data.spins["compiler"].astype(str))]
    groups = _ordered(groups, study, variants, compilers, ops_order)
    group_rows = [describe(g, settings.alpha, settings.threshold) for g in groups.values()]
    groups_df = pd.DataFrame(group_rows)
    self_checks = {f.get("self_check") for f in ctx["families"].values() if f.get("self_check")}
    # the self-check op (an empty function, ~2 ticks) is a harness check, not a measurement: its
    # carry-over "shifts" are fractions of a tick, so it is not tested (nor counted in the Holm family)
    sc = groups_df["op"].isin(self_checks).to_numpy()
    groups_df.loc[sc, ["carryover_p", "carryover_shift"]] = np.nan
    groups_df.loc[sc, "carryover_after"] = ""
    groups_df["carryover"] = flag_carryover(groups_df, settings.alpha, settings.threshold)
    groups_df["short_jobs"] = short_samples(data.spins, data.jobs, groups_df)
    t_groups = time.perf_counter()

    resample_groups(groups, settings)
    priors = study_priors(groups, study_blocks(groups))
    lvl = 1.0 - settings.alpha
    ci = {k: (np.quantile(g.boot_hier, [(1 - lvl) / 2, (1 + lvl) / 2]) if g.boot_hier is not None else (np.nan, np.nan))
          for k, g in groups.items()}
    groups_df["median_hci_low"] = [float(ci[k][0]) for k in groups]
    groups_df["median_hci_high"] = [float(ci[k][1]) for k in groups]
    t_boot = time.perf_counter()

    absent = [v for v in variants if v not in present]
    not_timed = not_timed_variants(directory)  # failed their gate, skipped, or excluded: never "yet"
    for v in absent:
        if v in not_timed:
            warnings.append(f"variant {v} is not timed: {not_timed[v]}; its comparisons are n/a")
    absent = [v for v in absent if v not in not_timed]
    if absent:
        warnings.append(f"variant(s) {', '.join(absent)} of study.toml have no raw data yet: their comparisons are n/a")
    comparisons, cwarn = compare_all(groups, chain, variants, compilers, ops_order, settings, priors=priors,
                                     skip_ops=self_checks)
    warnings += cwarn
    if len(present) < 2:
        warnings.append(f"no comparisons: the study has data for one variant ({present[0]}); groups only")
    elif comparisons.empty:
        warnings.append("no comparisons: no pair of the study's variants forms a stage, cumulative or extra comparison")
    decomposition = decompose(groups, comparisons, chain, 1.0 - settings.alpha, settings.threshold)
    t_cmp = time.perf_counter()
    aa_variants = [v for v in settings.aa_variants if v in present]
    aa_table, aa_summary = aa_check(data.spins, aa_variants, settings, ops_order, priors=priors,
                                       skip_ops=self_checks)
    if aa_summary.get("false_verdicts"):
        warnings.append(f"A/A check: {aa_summary['false_verdicts']} of {aa_summary['comparisons']} comparisons of "
                        f"{', '.join(aa_variants)} with itself got a faster/slower verdict (see aa.csv)")
    t_aa = time.perf_counter()

    n_na = int((comparisons["verdict"] == "n/a").sum()) if len(comparisons) else 0
    if n_na:
        warnings.append(f"{n_na} comparison(s) have verdict n/a: no data on one side, or spin medians <= 0 "
                        "(below timer resolution); see column reason")
    if len(comparisons):
        two = comparisons[(comparisons["test"] == "paired") & (comparisons[["jobs_base", "jobs_var"]].min(axis=1) == 2)]
        if len(two):
            warnings.append(f"{len(two)} paired comparison(s) rest on 2 jobs: their job-level test has 1 df, so only "
                            "very large, very consistent effects get a verdict; run 5 or more jobs (--jobs 5) to conclude")
    few = groups_df[(groups_df["n_jobs"] < settings.min_jobs_reliable) & ~groups_df["deterministic"]]
    if len(few):
        warnings.append(f"{len(few)} group(s) have fewer than {settings.min_jobs_reliable} jobs: "
                        "their hierarchical CIs are unreliable (hci_reliable = false)")
    if groups_df["noisy_jobs"].sum():
        warnings.append(f"{int(groups_df['noisy_jobs'].sum())} noisy job(s) in "
                        f"{int((groups_df['noisy_jobs'] > 0).sum())} group(s) (see groups.noisy_job_ids)")
    if groups_df["drift"].any():
        warnings.append(f"drift within jobs in {int(groups_df['drift'].sum())} group(s) (see groups.drift_jobs)")
    n_carry = int(groups_df["carryover"].sum())
    if n_carry:
        worst = groups_df.loc[groups_df["carryover"]].iloc[
            int(np.argmax(np.abs(groups_df.loc[groups_df["carryover"], "carryover_shift"].to_numpy())))]
        warnings.append(f"carry-over in {n_carry} group(s): the build run just before changes the time (worst: "
                        f"{worst['scheme']} {worst['op']} {worst['variant']} ({worst['compiler']}) {worst['carryover_shift']:+.0%} after "
                        f"{worst['carryover_after']}); lengthen the warm-up (warmup_ns) or see groups.carryover_*")
    short = groups_df[(groups_df["short_jobs"] > 0) & ~groups_df["op"].isin(self_checks)]
    if len(short):
        warnings.append(f"short samples in {len(short)} group(s) (e.g. {short['scheme'].iloc[0]} {short['op'].iloc[0]} "
                        f"{short['variant'].iloc[0]}): their samples last fewer than {MIN_TSC_STEPS} TSC steps, so "
                        "quantization alone moves a ratio by about the threshold; time them with --batch auto "
                        "(see groups.short_jobs)")
    self_check = self_check_record(groups_df, self_checks)
    if self_check.get("outside"):
        w = abs(self_check["worst"])
        warnings.append(f"self-check: the empty op reads {self_check['min']:+.2f} to {self_check['max']:+.2f} ticks per call "
                        f"in {self_check['groups']} group(s), outside 0 +- {SELF_CHECK_TOLERANCE_TICKS:g} in {self_check['outside']}: "
                        f"every timed call carries about that much call cost, so ops under {100 * w:,.0f} ticks are biased "
                        "by more than 1% (ratios of two such ops partly cancel it)")
    if (data.spins["metric"] == "ticks").any():
        warnings.append("ticks are TSC ticks at the nominal TSC frequency, not core cycles")

    results = StudyDir(directory).results_dir
    results.mkdir(parents=True, exist_ok=True)
    write_table(groups_df, results, "groups")
    write_table(comparisons if len(comparisons) else pd.DataFrame(columns=COMPARISON_COLUMNS), results, "comparisons")
    write_table(decomposition, results, "decomposition")
    write_spins(data.spins, results)
    cpt = mechanism.core_per_tsc(list(data.calibrations))
    ins_records = [r for r in StudyDir(directory).job_records().values() if r and r.get("metric") == "instructions"]
    for name, table in (("instructions", mechanism.instruction_table(groups_df, chain, self_checks)),
                        ("ilp", mechanism.ilp_table(groups_df, chain, cpt, self_checks)),
                        ("call_counts", mechanism.call_counts_table(ins_records))):
        if len(table):
            write_table(table, results, name)
        else:
            for ext in ("csv", "parquet"):
                (results / f"{name}.{ext}").unlink(missing_ok=True)
    write_table(aa_table if len(aa_table) else pd.DataFrame(columns=COMPARISON_COLUMNS), results, "aa")
    warnings += mix.write_mix_results(directory, results, groups=groups_df, chain=ctx["chain"], core_per_tsc=cpt,
                                      families=ctx["families"])

    det_cmp = int(comparisons["deterministic"].sum()) if len(comparisons) else 0
    family_size = int(np.isfinite(comparisons["job_p"].to_numpy(dtype=float)).sum()) if len(comparisons) else 0
    jobs = data.jobs
    summary = {
        "schema_version": RESULTS_SCHEMA_VERSION,
        "generated": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "alpha": settings.alpha,
        "threshold": settings.threshold,
        "B": settings.n_boot,
        "n_boot": settings.n_boot,
        "seed": settings.seed,
        "settings": settings.to_dict(),
        "family": {
            "size": family_size,
            "definition": "every comparison in comparisons.csv (all metrics, schemes, ops, stages) with a live "
                          "job-level test (test = pooled, welch or paired); excluded: n/a rows, exact rows (test = "
                          "exact, deterministic ones included) and withheld rows (test = refuse); p_equiv is "
                          "Holm-adjusted over the same family",
            "p_adjusted": "job_p",
            "methods": ["holm", "bh"],
            "verdict_uses": "p_holm" if settings.adjust == "holm" else "p_bh",
        },
        "methods": METHODS,
        "chain": ctx["chain"],
        "families": ctx["families"],
        "design": ctx["design"],
        "ci_level": 1.0 - settings.alpha,
        "core_per_tsc": cpt,
        "deterministic": {
            "groups": int(groups_df["deterministic"].sum()),
            "comparisons": det_cmp,
            "treatment": f"a group is deterministic iff its metric is an exact metric ({', '.join(EXACT_METRICS)}) "
                         "and all its spin medians are identical; a comparison is deterministic iff both its "
                         "groups are: its bootstrap replicates are all the group median (zero-width CIs), mwu_p "
                         "and job_p are n/a (not in the family), test = exact, and the verdict comes from the "
                         "exact ratio (faster > 1 + threshold, slower < 1/(1 + threshold), same strictly "
                         "between, ~ on the boundary). Groups of any other metric whose spin medians are all "
                         "identical are not deterministic (they keep their bootstrap) but their job-level test "
                         "is exact too (methods.test)",
        },
        "study": {
            "directory": str(directory),
            "raw_files": data.files,
            "metrics": sorted(data.spins["metric"].unique()),
            "schemes": list(dict.fromkeys(k[1] for k in groups)),
            "variants": variants,
            "compilers": compilers,
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
            "comparisons": len(comparisons),
            "verdicts": {k: int(v) for k, v in comparisons["verdict"].value_counts().items()} if len(comparisons) else {},
            "decomposition_rows": len(decomposition),
        },
        "aa_check": aa_summary,
        "carryover": {
            "tested": int(np.isfinite(groups_df["carryover_p"].to_numpy(dtype=float)).sum()),
            "flagged": n_carry,
        },
        "warmup": warmup_record(directory, ctx["design"]),
        "self_check": self_check,
        "warnings": warnings,
        "timing_s": {
            "load": round(t_load - t0, 3),
            "groups": round(t_groups - t_load, 3),
            "bootstrap": round(t_boot - t_groups, 3),
            "comparisons": round(t_cmp - t_boot, 3),
            "aa_check": round(t_aa - t_cmp, 3),
        },
    }
    write_json(summary, results / "summary.json")
    return results
