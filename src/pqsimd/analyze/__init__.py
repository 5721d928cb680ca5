"""`pqsimd analyze DIR`: spin medians → groups, comparisons, decomposition, summary in DIR/results/."""

from __future__ import annotations

import dataclasses
import math
import datetime as _dt
import time
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import PqsimdError
from . import bottleneck, claims, explanations, mechanism, mix, sim
from . import attribution as attribution_mod
from . import footprint as footprint_mod
from . import jobs as jobs_mod
from .calibration import aa_record
from ..model import RECORDED_DESIGN, RESULTS_SCHEMA_VERSION, UNRECORDED_LAYOUT, AloneLayouts, Chain, Design, JobKind, LayoutMode
from .compare import AA_STAGE, compare_all, draw_jobs, public, study_blocks, study_priors, without_record
from .compare import COLUMNS as COMPARISON_COLUMNS
from .decompose import decompose
from .methods import ESTIMAND, estimand_of, methods
from .groups import (EXACT_METRICS, MIN_CLOCK_STEPS, attach_resolution, build_groups, describe, flag_carryover,
                     short_samples)
from .load import drop_failed_builds, load_spins, not_timed_variants
from .settings import Settings, read_study_toml, resolve
from . import coresidency as coresidency_mod
from . import crossimpl as crossimpl_mod
from . import layout as layout_mod
from .write import staged_results, write_json, write_spins, write_table
from ..results import computed_from
from .. import metrics as metrics_mod
from ..studydir import StudyDir

__all__ = ["analyze_study", "Settings"]


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
            "design": plan.get("design") or st.get("design") or RECORDED_DESIGN, "isa": study_isa(manifest, st),
            "vlen": (manifest.get("isa") or {}).get("vlen", st.get("vlen"))}


def study_isa(manifest: dict, st: dict) -> str:
    """The ISA the study built and measured: its manifest's, else its study.toml's; a study made
    before pqsimd had ISAs measured the first one of data/isas.toml (x86-64, then the only one)."""
    from .. import isa as isa_mod

    return (manifest.get("isa") or {}).get("name") or st.get("isa") or isa_mod.names()[0]


def with_isa(df: pd.DataFrame, isa: str, vlen: int | None = None) -> pd.DataFrame:
    """A results table with its `isa` column (every row: the study's ISA), so tables of studies of
    different ISAs stay apart when combined (pqsimd report --beside); and its `vlen` column when the
    ISA has a vector length (every row: the study's; the vector-length view combines studies)."""
    out = df.assign(isa=pd.Series([isa] * len(df), index=df.index, dtype=object))
    if vlen is not None:
        out = out.assign(vlen=pd.Series([int(vlen)] * len(df), index=df.index, dtype="int64"))
    return out


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
            "warmup_ns": st.get("warmup_ns", 0) if design == Design.PAIRED else 0}


SELF_CHECK_TOLERANCE_TICKS = 1.0  # the engine's acceptance for the empty op: 0 +- 1 tick per call


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


def _not_timed(directory: Path) -> dict[tuple, str]:
    """(variant, compiler, scheme, op) -> why the run did not time it: one call (the gate's op check)
    takes longer than the study's cap (max_call_s), from the manifest's builds and the plan."""
    cap = ((read_json_file(StudyDir(directory).plan_json).get("settings") or {}).get("max_call_s"))
    if not cap:
        return {}
    out = {}
    for b in (read_json_file(StudyDir(directory).manifest_json).get("builds") or {}).values():
        for scheme, ops in ((b or {}).get("ops") or {}).items():
            for op, secs in (ops or {}).items() if isinstance(ops, dict) else []:
                if isinstance(secs, (int, float)) and secs > cap:
                    out[(b.get("variant"), b.get("compiler"), scheme, op)] = (
                        f"one call takes {secs:.3g} s, over the study's cap of {cap:g} s per call (max_call_s)")
    return out


def _absent_ops(directory: Path) -> dict[tuple, str]:
    """(variant, compiler, scheme, op) -> why the build has no such op: its implementation's TOML says
    it is absent (`[implementations.<name>.absent]`), read from the family TOML the manifest recorded."""
    from .. import catalog

    manifest = read_json_file(StudyDir(directory).manifest_json)
    variants = manifest.get("variants") if isinstance(manifest.get("variants"), dict) else {}
    families = {}
    for name, info in (manifest.get("families") or {}).items():
        try:
            families[name] = catalog.family_from_toml(info["toml"], info.get("source", name), None)
        except Exception:  # an op table outside the shipped tree: no absent reasons, the rows say "no data"
            continue
    out = {}
    for b in (manifest.get("builds") or {}).values():
        fam = families.get(b.get("family")) if isinstance(b, dict) else None
        impl = fam.implementation(str((variants.get(b.get("variant")) or {}).get("sources"))) if fam else None
        for scheme in fam.schemes if impl is not None else ():
            for op in fam.ops:
                why = impl.absent_reason(op, scheme)
                if why:
                    out[(b.get("variant"), b.get("compiler"), scheme, op)] = f"absent in {impl.name}: {why}"
    return out


def _skipped(directory: Path, families: dict[str, dict]) -> dict[tuple, str]:
    """(variant, compiler, scheme) -> why the run skipped that variant for the scheme's family (the
    family lacks its implementation, or this CPU its features), from the manifest's builds."""
    out = {}
    for b in (read_json_file(StudyDir(directory).manifest_json).get("builds") or {}).values():
        if isinstance(b, dict) and b.get("skipped"):
            for scheme in (families.get(b.get("family")) or {}).get("schemes") or {}:
                out[(b.get("variant"), b.get("compiler"), scheme)] = str(b["skipped"])
    return out


def _ablations(directory: Path) -> list[attribution_mod.Ablation]:
    """The study's ablations as the run recorded them (manifest `ablations`: implementation, groups,
    and the groups each cell's variant switches to native code)."""
    out = []
    for a in (read_json_file(StudyDir(directory).manifest_json).get("ablations") or []):
        try:
            out.append(attribution_mod.AblationDesign(str(a["implementation"]), tuple(a["groups"]),
                                                {str(v): attribution_mod.Cell(c) for v, c in a["cells"].items()}))
        except (KeyError, TypeError, AttributeError):
            continue
    return out


def _aa_pairs(study: dict, present: list[str]) -> dict[str, str]:
    """variant -> its duplicate build's variant id, for the study's A/A duplicates with data."""
    from ..catalog import aa_variant_id

    st = study.get("study", {}) or {}
    listed = st.get("aa") or []
    listed = [listed] if isinstance(listed, str) else listed
    return {v: aa_variant_id(v) for v in listed if isinstance(v, str) and aa_variant_id(v) in present}


def _job_diagnostics(groups: dict, comparisons: pd.DataFrame, threshold: float, self_checks: set[str]) -> pd.DataFrame:
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


def _split_alone(data) -> tuple[pd.DataFrame, pd.DataFrame]:
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


def _code_hashes(directory: Path, key: str = "code") -> dict[tuple[str, str, str, str], str]:
    """(variant, compiler, scheme, op) -> hash of the op's instructions, from the gate records (key
    `code`; `code_commuted`: up to commuted operands, verify/codehash.py)."""
    out = {}
    sd = StudyDir(directory)
    for path in sorted(sd.gate_dir.glob("*.json")) if sd.gate_dir.is_dir() else []:
        g = sd.read_gate(path.stem) or {}
        for scheme, ops in (g.get(key) or {}).items():
            for op, h in (ops or {}).items():
                out[(g.get("variant"), g.get("compiler"), scheme, op)] = h
    return out


def _instruction_counts(groups) -> dict[tuple[str, str, str, str], float]:
    """(variant, compiler, scheme, op) -> exact instructions per call, where the study counted them."""
    return {(g.variant, g.compiler, g.scheme, g.op): float(g.median) for g in groups.values()
            if g.metric == "instructions" and g.deterministic}


def _layout_record(directory: Path, laid: pd.DataFrame) -> dict:
    """How the study laid out its code, and how much layout moved its groups."""
    try:
        plan = StudyDir(directory).read_plan() or {}
    except PqsimdError:  # a study without a job plan (results mailed in): its layout is not known
        plan = {}
    st = plan.get("settings") or {}
    mode = st.get("layout", UNRECORDED_LAYOUT)
    rec = {"mode": mode, "copies_per_job": int(st.get("layouts", 1) or 1) if mode == LayoutMode.RANDOM else 1,
           "groups_with_layouts": int(len(laid))}
    sd_ = laid["layout_sd"].dropna() if len(laid) else pd.Series(dtype=float)
    if len(sd_):
        rec.update(median_layout_sd=float(sd_.median()), max_layout_sd=float(sd_.max()),
                   groups_above_1pct=int((sd_ > 0.01).sum()))
    if mode != LayoutMode.RANDOM:
        rec["note"] = ("layout fixed: every job loaded the builds as linked, so verdicts are conditional on that one "
                       "layout (a difference of where the code sits is not covered by the intervals)")
    return rec


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
    _write_or_remove(table, results, "bottleneck")
    verdicts = claims.evaluate_families(ctx["families"], sim_df, groups, table, mix_dir=results)
    _write_or_remove(verdicts, results, "claims")
    differ = sim_df[sim_df["ir_matches_instructions"].eq(False)] if len(sim_df) else sim_df
    return [f"{len(differ)} simulated (op, variant) rows ran other instructions than the instructions metric "
            f"(e.g. {differ['scheme'].iloc[0]} {differ['op'].iloc[0]} {differ['variant'].iloc[0]}): ops with fresh "
            "randomness per call; their events are one run's (results/sim note)"] if len(differ) else []


def _write_or_remove(table: pd.DataFrame, results: Path, name: str) -> None:
    if len(table):
        write_table(table, results, name)
    else:
        for ext in ("csv", "parquet"):
            (results / f"{name}.{ext}").unlink(missing_ok=True)


def analyze_study(directory: Path, n_boot: int | None = None, seed: int | None = None,
                  adjust: str | None = None) -> Path:
    """Analyse DIR/raw into DIR/results/ (groups, comparisons, decomposition, jobs, aa, ... + summary.json);
    return DIR/results. Bad input is a one-line PqsimdError. The tables are written into a new folder
    that replaces results/ whole when all of them are written: a failure (a full disk, an error)
    leaves the previous results, or none, never a mix that reads as complete."""
    directory = Path(directory)
    if not directory.is_dir():
        raise PqsimdError(f"no study directory at {directory}; create one with `pqsimd run {directory}`")
    final = StudyDir(directory).results_dir
    with staged_results(final) as results:
        _analyze(directory, results, n_boot, seed, adjust)
    return final


def _analyze(directory: Path, results: Path, n_boot: int | None, seed: int | None, adjust: str | None = None) -> None:
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
    mix_only = bool(raw_files) and all(f.name.endswith(".mix.parquet") or sim.is_sim_file(f.name) for f in raw_files)
    if mix_only:  # --metric mix and/or sim alone: their tables are all there is to analyse
        warnings = mix.write_mix_results(directory, results, groups=None, chain=ctx["chain"], core_per_tsc=None,
                                         families=ctx["families"], isa=ctx["isa"], vlen=ctx.get("vlen"))
        warnings += write_why_results(directory, results, None, chain, None, ctx)
        write_json({"schema_version": RESULTS_SCHEMA_VERSION, "mix_only": True, "chain": ctx["chain"],
                    "families": ctx["families"], "warnings": warnings, "isa": ctx["isa"], "vlen": ctx.get("vlen"),
                    "computed_from": sources}, results / "summary.json")
        return
    data = load_spins(directory, pool_cpu_models=settings.pool_cpu_models)
    warnings = list(data.warnings) + drop_failed_builds(data, directory)
    alone_spins, alone_jobs = _split_alone(data)  # a paired study's builds timed alone: co-residency, not its groups
    t_load = time.perf_counter()
    ops_order = _ops_order(study, ctx)

    groups = build_groups(data.spins)
    attach_resolution(groups, data.spins, data.jobs)
    present = sorted(str(v) for v in data.spins["variant"].unique())
    variants = _variants(study, present, chain)
    compilers = list(dict.fromkeys([*ctx["compilers"], *sorted(str(c) for c in data.spins["compiler"].unique())]))
    compilers = [c for c in compilers if c in {str(x) for x in data.spins["compiler"].unique()}]
    groups = _ordered(groups, study, variants, compilers, ops_order)
    group_rows = [describe(g, settings.alpha, settings.threshold) for g in groups.values()]
    groups_df = pd.DataFrame(group_rows)
    self_checks = {f.get("self_check") for f in ctx["families"].values() if f.get("self_check")}
    # the self-check op (an empty function, ~2 ticks) is a harness check, not a measurement: its
    # carry-over "shifts" are fractions of a tick, so it is not tested (nor counted in the Holm family)
    sc = groups_df["op"].isin(self_checks).to_numpy()
    groups_df.loc[sc, ["carryover_p", "carryover_shift", "position0_p", "position0_shift"]] = np.nan
    groups_df.loc[sc, "carryover_after"] = ""
    groups_df["carryover"] = flag_carryover(groups_df, settings.alpha, settings.threshold)
    groups_df["position0"] = flag_carryover(groups_df, settings.alpha, settings.threshold, "position0")
    groups_df["short_jobs"] = short_samples(data.spins, data.jobs, groups_df)
    t_groups = time.perf_counter()

    draw_jobs(groups, settings)
    priors = study_priors(groups, study_blocks(groups))
    t_boot = time.perf_counter()

    absent = [v for v in variants if v not in present]
    not_timed = not_timed_variants(directory)  # failed their gate, skipped, or excluded: never "yet"
    for v in absent:
        if v in not_timed:
            warnings.append(f"variant {v} is not timed: {not_timed[v]}; its comparisons are n/a")
    absent = [v for v in absent if v not in not_timed]
    if absent:
        warnings.append(f"variant(s) {', '.join(absent)} of study.toml have no raw data yet: their comparisons are n/a")
    aa_pairs = _aa_pairs(study, present)
    ablations = _ablations(directory)
    shared = shared_cpu_jobs(data.jobs)
    groups_df["shared_cpu_jobs"] = [len(shared.intersection(g.job_ids)) for g in groups.values()]
    cliff_tables = _cliff_tables(directory, groups)  # comparisons that share a cliff copy: one finding
    comparisons, cwarn, fam, drift_rec = compare_all(
        groups, chain, variants, compilers, ops_order, settings, priors=priors, skip_ops=self_checks, aa=aa_pairs,
        ablation_cells=[(a.base, [v for v in a.cells if v != a.base]) for a in ablations if a.base],
        not_timed=_absent_ops(directory) | _not_timed(directory), skipped=_skipped(directory, ctx["families"]),
        shared_jobs=shared, cliff_copies=cliff_tables[0])
    warnings += cwarn
    if len(present) < 2:
        warnings.append(f"no comparisons: the study has data for one variant ({present[0]}); groups only")
    elif comparisons.empty:
        warnings.append("no comparisons: no pair of the study's variants forms a stage, cumulative or extra comparison")
    if len(comparisons):  # both builds run the same instructions for the op (the gate's code hashes)
        how = layout_mod.identical_code_how(comparisons, _code_hashes(directory),
                                            _code_hashes(directory, "code_commuted"), _instruction_counts(groups))
        comparisons["identical_code"] = (how != "").to_numpy()
        comparisons["identical_code_how"] = how.to_numpy()
    main = comparisons[comparisons["stage"] != AA_STAGE] if len(comparisons) else comparisons
    # (ablation rows are comparisons like any other: in the table and the family; attribution reads them)
    decomposition = decompose(main, chain, settings.threshold,
                              keys=list(dict.fromkeys((m, s, o, c) for (m, s, o, _v, c) in groups)))
    jobs_table = _job_diagnostics(groups, comparisons, settings.threshold, self_checks)
    judged = len(jobs_table)
    jobs_table = with_job_records(with_cpu_share(jobs_table, data.jobs), data.jobs)
    shared_rec = shared_cpu_record(data.jobs, groups_df, main)
    if shared_rec["jobs"]:
        warnings.append(shared_cpu_warning(shared_rec))
    attr = attribution_mod.attribution_table(comparisons, ablations, settings.threshold, level=1.0 - settings.alpha,
                                             n_boot=settings.n_boot, seed=settings.seed)
    attribution_mod.check(attr)
    t_cmp = time.perf_counter()
    aa_table, aa_summary = aa_record(comparisons, aa_pairs, data.spins, settings, ops_order, priors, self_checks,
                                     ctx["design"], fam, jobs=data.jobs)
    if aa_summary.get("false_verdicts"):
        warnings.append(f"A/A check: {aa_summary['false_verdicts']} of {aa_summary['comparisons']} comparisons of a "
                        f"build with its duplicate got a faster/slower verdict (see aa.csv)")
    t_aa = time.perf_counter()

    alone_groups = build_groups(alone_spins) if len(alone_spins) else {}
    attach_resolution(alone_groups, alone_spins, alone_jobs)
    co_table, co_rec = coresidency_mod.coresidency(groups, alone_groups, settings.alpha, settings.threshold,
                                                   matched=_alone_matched(directory))
    if co_rec.get("flagged"):
        warnings.append(f"co-residency: {co_rec['flagged']} of {co_rec['rows']} groups run at another speed beside the "
                        f"study's other builds than alone (worst: {co_rec['worst']}; results/coresidency.csv)")
    identical = layout_mod.identical_code_check(main, fam.gamma) if len(main) else {"n": 0, "verdicts": 0}
    if identical.get("verdicts"):
        warnings.append(f"identical code: {identical['verdicts']} of {identical['n']} timed comparisons of builds that "
                        f"run the same instructions got a faster/slower verdict (at most about "
                        f"{identical['expected_at_most']:g} expected at the family's level): "
                        + "; ".join(identical["rows"][:3]))
    laid = groups_df[groups_df["n_layouts"] > 0] if "n_layouts" in groups_df else groups_df.iloc[:0]
    n_na = int((main["verdict"] == "n/a").sum()) if len(main) else 0
    if n_na:
        warnings.append(f"{n_na} comparison(s) have verdict n/a: no data on one side, or job medians <= 0 "
                        "(below timer resolution); see column reason")
    disturbed = jobs_table[jobs_table["disturbed"].astype(bool)] if len(jobs_table) else jobs_table
    if len(disturbed):
        lines = [jobs_mod.describe_job(r, r["unit"]) for _, r in disturbed.head(4).iterrows()]
        more = f" (+{len(disturbed) - 4} more in jobs.csv)" if len(disturbed) > 4 else ""
        warnings.append(f"{len(disturbed)} disturbed job(s) of {judged}: " + "; ".join(lines) + more)
    if drift_rec["comparisons_flagged"]:
        top = ", ".join(list(drift_rec["jobs"])[:3])
        warnings.append(f"drift: {drift_rec['comparisons_flagged']} of {drift_rec['comparisons_tested']} comparisons "
                        f"trend within a job (Benjamini-Hochberg), mostly in {top}; {drift_rec['rate']:.1%} of "
                        f"{drift_rec['job_tests']} job trend tests have p < {settings.alpha:g} "
                        f"({settings.alpha:.0%} expected without drift)")
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
                        f"{short['variant'].iloc[0]}): their samples last fewer than {MIN_CLOCK_STEPS:,} clock steps (the "
                        "budget could not afford more calls, a fixed --batch, or the probe read the op slower than the "
                        "jobs did), so their resolution is coarser than "
                        "0.1% (groups.resolution_rel; intervals are widened by it); a larger --budget, or --batch auto, "
                        "lengthens them (see groups.short_jobs)")
    self_check = self_check_record(groups_df, self_checks)
    if self_check.get("outside"):
        w = abs(self_check["worst"])
        warnings.append(f"self-check: the empty op reads {self_check['min']:+.2f} to {self_check['max']:+.2f} ticks per call "
                        f"in {self_check['groups']} group(s), outside 0 +- {SELF_CHECK_TOLERANCE_TICKS:g} in {self_check['outside']}: "
                        f"every timed call carries about that much call cost, so ops under {100 * w:,.0f} ticks are biased "
                        "by more than 1% (ratios of two such ops partly cancel it)")
    if (data.spins["metric"] == "ticks").any():
        warnings.append(f"times are {metrics_mod.tick_note(ctx['isa'])}")

    check_estimates(main, decomposition)
    write_table(with_isa(groups_df, ctx["isa"], ctx.get("vlen")), results, "groups")
    write_table(with_isa(public(main) if len(main) else pd.DataFrame(columns=COMPARISON_COLUMNS), ctx["isa"],
                         ctx.get("vlen")), results,
                "comparisons")
    write_table(with_isa(decomposition, ctx["isa"], ctx.get("vlen")), results, "decomposition")
    write_table(jobs_table, results, "jobs")
    if len(attr):
        write_table(attr, results, "attribution")
    else:
        for ext in ("csv", "parquet"):
            (results / f"attribution.{ext}").unlink(missing_ok=True)
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
    write_table(co_table, results, "coresidency")
    _write_or_remove(crossimpl_mod.crossimpl_table(main, ctx["chain"]), results, "crossimpl")
    _write_or_remove(footprint_mod.footprint_table(main, groups_df, ctx["families"], ctx["chain"], self_checks), results,
                     "footprint")
    _write_or_remove(crossimpl_mod.counterparts_table(main, groups_df, ctx["families"], ctx["chain"]), results,
                     "counterparts")
    cliff_rec = _write_cliffs(directory, results, cliff_tables, settings.threshold)
    if cliff_rec.get("flagged"):
        top = cliff_rec["findings"][0]
        warnings.append(f"cliffs: {cliff_rec['flagged']} of {cliff_rec['groups']} groups have a laid-out copy far slower "
                        f"than the rest ({cliff_rec['cliff_copies']} copies; worst {top['scheme']} {top['variant']} "
                        f"job {top['job']} copy {top['copy']}: " + ", ".join(f"{o} {r:.2f}×" for o, r in
                                                                          list(top["ops"].items())[:3])
                        + f"); results/cliffs.csv, `pqsimd cliffs {directory} --retime` re-times them")
    warnings += mix.write_mix_results(directory, results, groups=groups_df, chain=ctx["chain"], core_per_tsc=cpt,
                                      families=ctx["families"], isa=ctx["isa"], vlen=ctx.get("vlen"))
    warnings += write_why_results(directory, results, groups_df, chain, cpt, ctx)
    warnings += explanations.write_explanations(directory, results, main, groups_df, chain, ctx["families"],
                                                compilers[0] if compilers else None, settings.threshold)

    copies_rec = layout_mod.copies_record(main, (_layout_record(directory, laid) or {}).get("copies_per_job"))
    if copies_rec.get("note"):
        warnings.append(f"layouts: {copies_rec['note']}")
    jobs = data.jobs
    estimand = estimand_of(ctx["design"], _layout_record(directory, laid))
    summary = {
        "isa": ctx["isa"],
        # every metric's unit per call as this study prints it (the ISA's tick unit for times)
        "units": {str(m): metrics_mod.unit_of(str(m), ctx["isa"]) for m in data.spins["metric"].unique()},
        "vlen": ctx.get("vlen"),
        "schema_version": RESULTS_SCHEMA_VERSION,
        "generated": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
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
        "core_per_tsc": cpt,
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
            "comparisons": len(main),
            "verdicts": {k: int(v) for k, v in main["verdict"].value_counts().items()} if len(main) else {},
            # how many verdicts differ when a regime's minority, or the jobs that shared their CPU, are left out
            "verdicts_changed_without_minority": without_record(main, "minority")["verdicts_changed"],
            "verdicts_changed_without_shared": without_record(main, "shared")["verdicts_changed"],
            "decomposition_rows": len(decomposition),
        },
        "aa_check": aa_summary,
        "identical_code": identical,
        "coresidency": co_rec,
        "cliffs": cliff_rec,
        "layout": {**_layout_record(directory, laid), **({"copies": copies_rec} if copies_rec else {})},
        "estimand": {"applies": estimand, **ESTIMAND},
        "ablations": [{"implementation": a.implementation, "groups": list(a.groups),
                       "cells": {v: sorted(c) for v, c in a.cells.items()}} for a in ablations],
        "jobs": {"judged": int(judged), "disturbed": int(len(disturbed)),
                 "disturbed_ids": [str(j) for j in disturbed["job"]] if len(disturbed) else []},
        "drift": drift_rec,
        "regimes": regimes_record(main),
        "shared_cpu": shared_rec,
        "carryover": {
            "tested": int(np.isfinite(groups_df["carryover_p"].to_numpy(dtype=float)).sum()),
            "flagged": n_carry,
            "position0_tested": int(np.isfinite(groups_df["position0_p"].to_numpy(dtype=float)).sum()),
            "position0_flagged": int(groups_df["position0"].sum()),
        },
        "warmup": warmup_record(directory, ctx["design"]),
        "clock": clock_record(data.jobs, groups_df[~groups_df["op"].isin(self_checks)], main),
        "computed_from": sources,
        "self_check": self_check,
        "warnings": warnings,
        "timing_s": {
            "load": round(t_load - t0, 3),
            "groups": round(t_groups - t_load, 3),
            "jobs": round(t_boot - t_groups, 3),
            "comparisons": round(t_cmp - t_boot, 3),
            "aa_check": round(t_aa - t_cmp, 3),
        },
    }
    write_json(summary, results / "summary.json")


JOB_RECORD_COLUMNS = ("step", "step_calibrated", "step_data")  # from each job's raw file (load.py)


def _alone_matched(directory: Path) -> bool:
    """The study's alone jobs loaded the paired jobs' copies (`alone_layouts = "paired"`, run/layouts.seed_job)."""
    try:
        st = (StudyDir(directory).read_plan() or {}).get("settings") or {}
    except PqsimdError:
        return False
    return st.get("layout") == LayoutMode.RANDOM and st.get("alone_layouts") == Design.PAIRED


def _cliff_tables(directory: Path, groups: dict):
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


def _write_cliffs(directory: Path, results: Path, tables, threshold: float) -> dict:
    """results/copies and results/cliffs (analyze/cliffs.py) of a laid-out study; nothing otherwise."""
    from . import cliffs as cliffs_mod

    copies, table, rec = tables
    _write_or_remove(copies, results, "copies")
    _write_or_remove(table, results, "cliffs")
    retimed = cliffs_mod.retime_results(directory / "cliffs", threshold)  # `pqsimd cliffs DIR --retime`
    for name, t in retimed.items():
        _write_or_remove(t, results, name)
    rt = retimed["cliff_retime"]
    if len(rt):
        rec["retimed"] = [{"group": f"{r.scheme} {r.op} {r.variant} ({r.compiler})", "test": r.test,
                           "ratio": r.ratio, "ci": [r.ci_low, r.ci_high], "verdict": r.verdict, "belongs": r.belongs}
                          for r in rt.itertuples()]
    return rec


def with_job_records(jobs_table: pd.DataFrame, jobs: pd.DataFrame) -> pd.DataFrame:
    """results/jobs (with a row for every timing job: with_cpu_share) with what each job's raw file
    recorded of its clock: the step its resolution uses, its calibration's and its samples' lattice."""
    have = [c for c in JOB_RECORD_COLUMNS if c in jobs.columns]
    if not len(jobs_table) or not have:
        return jobs_table
    return jobs_table.merge(jobs.drop_duplicates("job")[["job", *have]], on="job", how="left")


def regimes_record(main: pd.DataFrame) -> dict:
    """The regime check's counts: comparisons the dip test tested, the job-state test's candidates,
    flagged (by which test), and the verdicts with and without the minority's jobs."""
    if not len(main):
        return {"tested": 0, "candidates": 0, "flagged": 0}
    note = main["note"].fillna("").astype(str)
    flagged = main["regimes"].astype(bool)
    return {"tested": int(np.isfinite(main["regime_dip_p"].to_numpy(dtype=float)).sum()),
            "candidates": int(np.isfinite(main["regime_p"].to_numpy(dtype=float)).sum()),
            "flagged": int(flagged.sum()),
            "by_job_state": int((flagged & note.str.contains("the job-state test", regex=False)).sum()),
            "by_dip": int((flagged & note.str.contains("the dip test", regex=False)).sum()),
            "without_minority": without_record(main, "minority")}


def shared_cpu_jobs(jobs: pd.DataFrame) -> frozenset[str]:
    """The timing jobs whose driver shared its CPU with another program (kept by --shared-cpu keep)."""
    if not len(jobs) or "shared_cpu" not in jobs.columns:
        return frozenset()
    return frozenset(str(j) for j in jobs.loc[jobs["shared_cpu"].astype(bool), "job"])


def with_cpu_share(jobs_table: pd.DataFrame, jobs: pd.DataFrame) -> pd.DataFrame:
    """results/jobs with every timing job's shared_cpu and cpu_waited_fraction: the judged rows get
    theirs, and a timing job no row judged (too few jobs or comparisons) gets a row of its own."""
    cols = ["shared_cpu", "cpu_waited_fraction"]
    timing = jobs[jobs["metric_kind"] == "ticks"] if len(jobs) and "metric_kind" in jobs.columns else jobs
    if not len(timing) or not set(cols) <= set(timing.columns):
        return jobs_table.assign(shared_cpu=False, cpu_waited_fraction=np.nan)
    share = timing.drop_duplicates("job").set_index("job")[cols]
    out = jobs_table.assign(shared_cpu=jobs_table["job"].map(share["shared_cpu"]).fillna(False).astype(bool),
                            cpu_waited_fraction=jobs_table["job"].map(share["cpu_waited_fraction"]))
    rest = timing[~timing["job"].isin(set(jobs_table["job"]))].drop_duplicates("job")
    if len(rest):
        extra = pd.DataFrame({"metric": "ticks", "scheme": rest["scheme"].to_numpy(), "unit": "",
                              "job": rest["job"].to_numpy(), "units": 0, "disturbed": False,
                              "note": "not judged (fewer than 3 jobs, or 3 comparisons or ops, to judge it by)",
                              "shared_cpu": rest["shared_cpu"].astype(bool).to_numpy(),
                              "cpu_waited_fraction": rest["cpu_waited_fraction"].to_numpy()})
        out = pd.concat([out, extra.reindex(columns=out.columns)], ignore_index=True) if len(out) else \
            extra.reindex(columns=[*jobs_mod.COLUMNS, *cols])
    return out.astype({"shared_cpu": bool, "disturbed": bool})


def shared_cpu_record(jobs: pd.DataFrame, groups_df: pd.DataFrame, main: pd.DataFrame) -> dict:
    """summary.json shared_cpu: the timing jobs that shared their CPU and how long they waited, the
    groups and comparisons that use them, and the verdicts with and without them."""
    timing = jobs[jobs["metric_kind"] == "ticks"] if len(jobs) and "metric_kind" in jobs.columns else jobs
    shared = timing[timing["shared_cpu"].astype(bool)] if "shared_cpu" in timing.columns else timing.iloc[:0]
    rec = {"jobs": int(shared["job"].nunique()), "timing_jobs": int(timing["job"].nunique()) if len(timing) else 0,
           "waited_fraction": {str(j): float(f) for j, f in zip(shared["job"], shared["cpu_waited_fraction"])}}
    if rec["jobs"]:
        uses = main["shared_cpu_jobs"].to_numpy(dtype=float) > 0 if len(main) else np.zeros(0, bool)
        rec.update(groups=int((groups_df["shared_cpu_jobs"] > 0).sum()), comparisons=int(uses.sum()),
                   without_shared=without_record(main, "shared"))
    return rec


def shared_cpu_warning(rec: dict) -> str:
    """One line: which jobs shared their CPU, what uses them, how many verdicts change without them."""
    w = rec["without_shared"]
    jobs = ", ".join(f"{j} ({f:.0%})" for j, f in list(rec["waited_fraction"].items())[:4])
    more = f" and {rec['jobs'] - 4} more" if rec["jobs"] > 4 else ""
    return (f"shared CPU: {rec['jobs']} of {rec['timing_jobs']} timing jobs waited more than a quarter of their time "
            f"for their CPU (another program used it) and were kept: {jobs}{more} (share of the time waited); "
            f"{rec['groups']} group(s) and {rec['comparisons']} comparison(s) use them; without them "
            f"{w['verdicts_changed']} of {w['recomputed']} verdict(s) change (comparisons.csv without_shared_*, "
            "jobs.csv shared_cpu)")


def clock_record(jobs: pd.DataFrame, groups_df: pd.DataFrame, comparisons: pd.DataFrame) -> dict:
    """The clock the jobs read (name, step, --timer-quantum) and what its step did to the results:
    groups whose lattice step (step / calls per sample) is more than 0.1% of their median, the worst,
    and the comparisons whose interval the resolution sets (resolution_limited). The step is each
    job's as analyze used it (load._steps: its samples' lattice, else its calibration's), and the
    jobs whose calibration said otherwise are counted."""
    clocks: dict[str, int] = {}
    ticks_jobs = jobs[(jobs["metric_kind"] == "ticks") & np.isfinite(jobs["step"].to_numpy(dtype=float))] \
        if len(jobs) and {"metric_kind", "step"} <= set(jobs.columns) else jobs.iloc[0:0]
    for _, j in ticks_jobs.iterrows():
        key = f"{j['timer']} step {j['step']:g} ticks" + (
            f" (--timer-quantum {j['timer_quantum']})" if (j["timer_quantum"] or 0) > 1 else "")
        clocks[key] = clocks.get(key, 0) + 1
    steps = {}
    if len(ticks_jobs):
        cal_s, data_s = ticks_jobs["step_calibrated"].to_numpy(dtype=float), ticks_jobs["step_data"].to_numpy(dtype=float)
        steps = {"from_samples": int(np.isfinite(data_s).sum()), "jobs": int(len(ticks_jobs)),
                 "calibration_disagrees": int((np.isfinite(cal_s) & np.isfinite(data_s) & (cal_s != data_s)
                                               & (ticks_jobs["step"].to_numpy(dtype=float) == data_s)).sum()),
                 "calibrated": sorted({int(x) for x in cal_s[np.isfinite(cal_s)]}),
                 "samples": sorted({int(x) for x in data_s[np.isfinite(data_s)]})}
    rel = groups_df["resolution_rel"].to_numpy(dtype=float) if "resolution_rel" in groups_df else np.zeros(0)
    ticks = (groups_df["metric"] == "ticks").to_numpy() if len(groups_df) else np.zeros(0, bool)
    rel = np.where(ticks & np.isfinite(rel), rel, 0.0)
    worst = int(np.argmax(rel)) if rel.size else -1
    limited = comparisons["resolution_limited"].astype(bool) if len(comparisons) and \
        "resolution_limited" in comparisons else pd.Series(dtype=bool)
    return {
        "clocks": clocks,  # "name, step N[, --timer-quantum Q]" -> jobs
        "steps": steps,  # where each job's step came from: its samples' lattice, or its calibration
        "groups_over_0.1%": int((rel > 1e-3).sum()),
        "groups_over_1%": int((rel > 1e-2).sum()),
        "groups": int(ticks.sum()),
        "worst": {**{k: str(groups_df.iloc[worst][k]) for k in ("scheme", "op", "variant", "compiler")},
                  "resolution_rel": float(rel[worst])} if worst >= 0 and rel[worst] > 0 else None,
        "comparisons_resolution_limited": int(limited.sum()),
        "nonpositive_spins": int(groups_df["nonpositive_spins"].sum()) if "nonpositive_spins" in groups_df else 0,
    }


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
