"""The study: what to measure, resolved from defaults ← preset ← DIR/study.toml ← command line.

The resolved study is written back to DIR/study.toml. Its measurement settings are fixed in
DIR/plan.json by the first run; from then on a change to any of them, from the command line, a
preset or a hand-edited study.toml, is refused in one line (more jobs are fine: they extend the
seeded plan). Every input is checked here, before anything is built or timed.
"""

from __future__ import annotations

import math

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w

from . import catalog
from . import metrics as metrics_mod
from .analysis_settings import resolve as analysis_settings
from .model import (DEFAULT_ALONE_LAYOUTS, DEFAULT_DESIGN, DEFAULT_LAYOUT, DEFAULT_SHARED_CPU, UNRECORDED_ALONE_LAYOUTS,
                    UNRECORDED_LAYOUT, AloneLayouts, AloneSets, Design, LayoutMode, choices)
from .model import SharedCpu as SharedCpuPolicy
from .catalog import Family, Variant
from .errors import PqsimdError, did_you_mean
from .studydir import StudyDir

DESIGNS = choices(Design)
MAX_BATCH = 1 << 24  # the driver's own auto-batching limit
# Every count a user gives, bounded before anything is planned: an unbounded --jobs planned 2.7 GB in 20 s.
# The bounds are far beyond any useful study (the paper: 2 jobs x 1,000 spins x 20 reps).
COUNTS: dict[str, tuple[int, int]] = {  # key -> (least, most)
    "jobs": (1, 10_000), "spins": (1, 100_000), "reps": (1, 10_000), "warmup": (0, 10_000),
    "batch_target": (1, 1_000_000_000), "warmup_ns": (0, 10_000_000_000), "min_spins": (1, 100_000),
    "min_reps": (1, 10_000), "max_spins": (1, 100_000), "timer_quantum": (0, 1_000_000_000), "alone": (0, 100),
    "layouts": (1, 64), "seed": (0, (1 << 63) - 1),
}
MAX_SAMPLES = 10_000_000  # spins x reps of one op and build in one job (the driver writes each as a line)
MAX_PLANNED_JOBS = 1_000_000  # jobs in one plan (every scheme, and in the separate design every build)
MAX_JOB_TIMEOUT_S = 30 * 86_400  # a time limit of a job or probe: longer is no limit (0, inf or none)
TABLES = ("study", "variants", "analysis")

# [study] keys: type, and whether they shape the measurements (then fixed once data exists).
KEYS: dict[str, tuple[tuple[type, ...], bool]] = {
    "schemes": ((list,), True), "variants": ((list,), True), "ops": ((list,), True),
    "metrics": ((list,), True), "cc": ((list, str), True), "jobs": ((int,), False),
    "spins": ((int,), True), "reps": ((int,), True), "warmup": ((int,), True),
    "batch": ((str, int), True), "batch_target": ((int,), True), "design": ((str,), True),
    "warmup_ns": ((int,), True), "budget": ((float, int), True), "min_spins": ((int,), True),
    "min_reps": ((int,), True), "max_spins": ((int,), True),
    "cpu": ((int,), False), "seed": ((int,), True), "preset": ((str,), False), "source": ((str,), True),
    "mca_cpus": ((list,), False),  # --metric mix: llvm-mca CPU models (more later re-estimate; run/mix.py)
    "sim_cpus": ((list,), False),  # --metric sim: cache geometries (data/caches.toml; more later simulate more)
    "job_timeout": ((float, int), False),  # seconds per timing job or probe (0: none); default run/limits.py
    "aa": ((list,), True),
    "max_call_s": ((float, int), True),  # an op whose one call (the gate's op check) takes longer is not timed  # A/A: these variants built a second time (ids.aa_variant_id) and timed beside them
    "ablation": ((bool,), False),  # the families' ablation cells are the study's variants (ablation.py)
    "isa": ((str,), True),  # the instruction set built and measured (data/isas.toml); default: this host's
    "layout": ((str,), True),  # random: every timing job links its own copies of the builds (layout.py); fixed
    "layouts": ((int,), True),  # copies of each build per timing job (layout = random): spin s times copy s mod N
    "alone": ((int,), True),  # paired design: jobs per build and scheme that time the build alone (co-residency)
    "alone_layouts": ((str,), True),  # paired: alone job r times paired job r's copies (same bytes), or its own
    "alone_sets": ((str,), True),  # first: alone jobs on each family's first parameter set; all: on every set
    "timer_quantum": ((int,), True),  # the driver rounds every clock read down to a multiple of it (0: none)
    "shared_cpu": ((str,), False),  # discard | keep: a timing job whose CPU another program used (run/cpuclaim.py)
    "sources": ((list,), True),  # NAME=PATH: trees the user brings (sources.check_checkouts), e.g. mlkem-native=~/mlkem-native
    "vlen": ((int,), True),  # the vector length the emulator runs at (an ISA with [isa.<name>.vector]; 0: no vector unit)
}
LAYOUTS = choices(LayoutMode)
ALONE_LAYOUTS = choices(AloneLayouts)  # paired: alone job r reuses paired job r's copies (analyze/coresidency.py)
ALONE_SETS = choices(AloneSets)
SHARED_CPU = choices(SharedCpuPolicy)  # a timing job whose CPU another program used: run again, or kept and marked
MEASUREMENT_KEYS = tuple(k for k, (_, m) in KEYS.items() if m)


@dataclass
class Study:
    schemes: list[str]
    variants: list[str]
    jobs: int
    spins: int
    reps: int
    warmup: int
    ops: list[str] | None = None  # None: every op of each scheme's family
    cc: list[str] = field(default_factory=lambda: ["gcc"])
    batch: str = "auto"  # "auto" or a positive integer as text
    batch_target: int = 1000  # ticks per sample that auto-batching aims for
    design: str = DEFAULT_DESIGN
    warmup_ns: int = 50_000  # paired: untimed warm-up of an op before each variant's reps
    budget: float | None = None  # seconds per (job, op): spins and reps chosen per op (run/sizing.py)
    min_spins: int = 10
    min_reps: int = 5
    max_spins: int = 1000
    cpu: int | None = None  # None: each job chooses an idle allowed CPU (run/cpuclaim.choose)
    seed: int = 1
    preset: str = "standard"
    metrics: list[str] = field(default_factory=lambda: [metrics_mod.DEFAULT])
    source: str | None = None  # None: the pinned crate
    mca_cpus: list[str] | None = None  # --metric mix: llvm-mca CPU models (None: the host's)
    sim_cpus: list[str] | None = None  # --metric sim: cache geometries (None: the host's)
    job_timeout: float | None = None  # None: derived per job (run/limits.py); 0: no limit
    aa: list[str] = field(default_factory=list)
    max_call_s: float | None = None  # None or 0: no cap
    ablation: bool = False
    isa: str = ""  # resolved to the host's ISA when not given
    layout: str = DEFAULT_LAYOUT
    layouts: int = 2
    alone: int = 0
    alone_layouts: str = DEFAULT_ALONE_LAYOUTS
    alone_sets: str = AloneSets.FIRST
    timer_quantum: int = 0  # --timer-quantum TICKS: a deliberately coarse clock (0: the clock as it is)
    shared_cpu: str = DEFAULT_SHARED_CPU  # a job that shared its CPU: discard and run again, or keep it, marked
    sources: list[str] | None = None  # NAME=PATH of the checkouts the user brings (None: none)
    vlen: int | None = None  # the ISA's vector length (None: an ISA without one)
    variant_defs: dict[str, Variant] = field(default_factory=dict)
    analysis: dict[str, Any] = field(default_factory=dict)
    metrics_from_preset: bool = False  # a new study's metrics are its preset's: one whose tool is missing is left out
    # settings this run took from the environment (PQSIMD_SHARED_CPU), each with what study.toml keeps for
    # it instead (None: nothing): an environment variable lasts a shell, never the study (to_toml)
    from_environment: dict[str, Any] = field(default_factory=dict)

    # --- what the study holds ---------------------------------------------------------------
    def variant(self, vid: str) -> Variant:
        return self.variant_defs[vid]

    def families(self) -> list[Family]:
        out: dict[str, Family] = {}
        for s in self.schemes:
            fam = catalog.family_of(s)
            out.setdefault(fam.name, fam)
        return list(out.values())

    def ablations(self) -> list:
        """The ablation of each of the study's families (--ablation), else none."""
        from . import ablation

        known = {**catalog.builtin_variants(), **self.variant_defs}
        return [ablation.of_family(f, known, self.isa) for f in self.families()] if self.ablation else []

    def ablation_cells(self) -> set[str]:
        return {v for ab in self.ablations() for v in ab.cells}

    def ops_for(self, scheme: str) -> list[str]:
        """The ops a job of this scheme times: its family's, filtered by --ops, in family order."""
        fam = catalog.family_of(scheme)
        if self.ops is None:
            return list(fam.ops)
        return [o for o in fam.ops if o in self.ops]

    def measurement_settings(self) -> dict[str, Any]:
        """What a timing job's samples depend on; fixed in plan.json and recorded in every raw file."""
        return {
            "schemes": list(self.schemes), "variants": list(self.variants), "cc": list(self.cc),
            "ops": {s: self.ops_for(s) for s in self.schemes}, "metrics": list(self.metrics),
            "spins": self.spins, "reps": self.reps, "warmup": self.warmup, "batch": self.batch,
            "batch_target": self.batch_target, "design": self.design, "warmup_ns": self.warmup_ns,
            "ablation": self.ablation,  # an ablation cell's build holds the study's parameter sets only
            "budget": self.budget, "min_spins": self.min_spins, "min_reps": self.min_reps,
            "max_spins": self.max_spins, "seed": self.seed, "source": self.source, "max_call_s": self.max_call_s,
            "variant_defs": {v: _measured(self.variant_defs[v]) for v in self.variants if v in self.variant_defs},
            "isa": self.isa, "layout": self.layout, "layouts": self.layouts, "alone": self.alone,
            "alone_layouts": self.alone_layouts, "alone_sets": self.alone_sets,
            "timer_quantum": self.timer_quantum,
            **({"sources": list(self.sources)} if self.sources else {}),
            **({"vlen": self.vlen} if self.vlen is not None else {}),
        }

    def to_toml(self) -> str:
        d: dict[str, Any] = {}
        for k in KEYS:
            v = self.from_environment[k] if k in self.from_environment else getattr(self, k)
            if k in ("budget", "max_call_s") and v is None:
                v = 0  # "no budget", "no cap" must be written: left out, the preset's value would come back
            if k == "ablation" and not v:
                continue
            if v is not None:
                d[k] = v
        doc: dict[str, Any] = {"study": d, "variants": {v: self.variant_defs[v].to_dict() for v in self.variants}}
        if self.analysis:
            doc["analysis"] = self.analysis
        header = ("# pqsimd study, fully resolved. `pqsimd run DIR` continues it.\n"
                  "# Variant flags are compiler arguments: a study.toml is code; never run one you do not trust.\n")
        return header + tomli_w.dumps(doc)


def _measured(v: Variant) -> dict[str, Any]:
    """A variant as it shapes the measurements: which ISAs it builds for does not (the study's ISA is
    its own setting), so plans made before variants had `isa` stay equal."""
    return {k: x for k, x in v.to_dict().items() if k != "isa"}


# --- checks ---------------------------------------------------------------------------------------

def _type_name(types: tuple[type, ...]) -> str:
    names = {list: "a list of strings", int: "an integer", str: "a string", float: "a number", bool: "true or false"}
    return " or ".join(names[t] for t in types)


def _check_types(values: dict[str, Any], where: str) -> None:
    for key, value in values.items():
        if key not in KEYS or value is None:
            continue
        types = KEYS[key][0]
        ok = isinstance(value, types) and (bool in types or not isinstance(value, bool))
        if ok and isinstance(value, list):
            ok = all(isinstance(x, str) for x in value)
        if not ok:
            raise PqsimdError(f"{where}: [study] {key} must be {_type_name(types)}, got {value!r}")
        if isinstance(value, str) and ("\n" in value or "\0" in value):
            raise PqsimdError(f"{where}: [study] {key} contains a newline or NUL")


def _check_names(kind: str, given: list[str], valid: list[str], where: str) -> None:
    if not given:
        raise PqsimdError(f"{where}: {kind}s is empty; name at least one (valid {kind}s: {', '.join(valid)})")
    bad = [g for g in given if g not in valid]
    if bad:
        extra = f"all, a family ({', '.join(catalog.families())}) or " if kind == "scheme" else ""
        raise PqsimdError(f"unknown {kind} '{bad[0]}'; valid {kind}s: {extra}{', '.join(valid)}"
                          f"{did_you_mean(bad[0], [*valid, *catalog.families()] if kind == 'scheme' else valid)}")
    dup = next((g for g in given if given.count(g) > 1), None)
    if dup:
        raise PqsimdError(f"{where}: {kind} '{dup}' is listed twice")


def _count(name: str, value: Any) -> int:
    least, most = COUNTS[name]
    if not isinstance(value, int) or isinstance(value, bool) or not least <= value <= most:
        raise PqsimdError(f"--{name.replace('_', '-')} must be an integer from {least:,} to {most:,}, got {value!r}")
    return value


def _check_size(merged: dict[str, Any]) -> None:
    """What the counts multiply to, refused before a plan is made (planning allocates every job)."""
    samples = merged.get("spins", 1) * merged.get("reps", 1)
    if samples > MAX_SAMPLES:
        raise PqsimdError(f"--spins {merged.get('spins')} x --reps {merged.get('reps')} = {samples:,} samples per op "
                          f"and build in each job; at most {MAX_SAMPLES:,} (more jobs measure more, and more safely)")
    per_round = len(merged["schemes"]) * (1 if merged.get("design", DEFAULT_DESIGN) == Design.PAIRED
                                          else len(merged["variants"]) * len(merged["cc"]))
    families = len({catalog.family_of(s).name for s in merged["schemes"]})
    planned = merged.get("jobs", 1) * per_round + merged.get("alone", 0) * len(merged["variants"]) * len(merged["cc"]) * families
    if planned > MAX_PLANNED_JOBS:
        raise PqsimdError(f"this study would plan {planned:,} timing jobs ({merged.get('jobs')} per group); at most "
                          f"{MAX_PLANNED_JOBS:,}: fewer --jobs, schemes or variants")


def _check_doc(doc: dict[str, Any], where: str) -> None:
    unknown = [k for k in doc if k not in TABLES]
    if unknown:
        raise PqsimdError(f"{where}: unknown table or key '{unknown[0]}'; a study file has only "
                          f"[{'], ['.join(TABLES)}]")
    for t in TABLES:
        if t in doc and not isinstance(doc[t], dict):
            raise PqsimdError(f"{where}: `{t}` must be a table ([{t}] ...), got {doc[t]!r}")
    unknown = sorted(set(doc.get("study", {})) - set(KEYS))
    if unknown:
        raise PqsimdError(f"{where}: unknown key(s) in [study]: {', '.join(unknown)}; known: {', '.join(KEYS)}")


def _check_ops(ops: list[str] | None, schemes: list[str], where: str) -> list[str] | None:
    """The op ids --ops (or study.toml's ops) means: ids or the report's labels (catalog.resolve_ops)."""
    if ops is None:
        return None
    fams = {catalog.family_of(s).name: catalog.family_of(s) for s in schemes}
    if not ops:
        raise PqsimdError(f"{where}: ops is empty; name at least one op or leave --ops out for all")
    ops = catalog.resolve_ops(ops, {name: f.op_names() for name, f in fams.items()})
    for s in schemes:
        if not any(o in ops for o in catalog.family_of(s).ops):
            raise PqsimdError(f"--ops leaves scheme {s} nothing to time; add one of {', '.join(catalog.family_of(s).ops)}")
    return ops


def parse_cc(cc: list[str] | str) -> list[str]:
    items = [cc] if isinstance(cc, str) else list(cc)
    items = [c.strip() for x in items for c in x.split(",") if c.strip()]
    if not items:
        raise PqsimdError("--cc is empty; name a compiler, e.g. gcc or gcc-12,clang-16")
    return items


# --- resolution -----------------------------------------------------------------------------------

def resolve(directory: Path | StudyDir, overrides: dict[str, Any]) -> Study:
    """Merge defaults, preset, DIR/study.toml and the command line; check everything."""
    sd = directory if isinstance(directory, StudyDir) else StudyDir(directory)
    where = str(sd.study_toml)
    stored = sd.read_study_doc()
    _check_doc(stored, where)
    stored_study = dict(stored.get("study", {}))
    plan = sd.read_plan()
    if plan and isinstance(plan.get("settings"), dict) and "layout" not in plan["settings"]:
        # planned before layouts were randomized: its jobs loaded the builds as linked, so must new ones
        stored_study.setdefault("layout", UNRECORDED_LAYOUT)
        stored_study.setdefault("layouts", 1)
    if plan and isinstance(plan.get("settings"), dict) and "alone" not in plan["settings"]:
        stored_study.setdefault("alone", 0)  # planned before co-residency was measured
    if plan and isinstance(plan.get("settings"), dict) and "alone_layouts" not in plan["settings"]:
        stored_study.setdefault("alone_layouts", UNRECORDED_ALONE_LAYOUTS)  # planned before alone jobs reused the paired copies
        stored_study.setdefault("alone_sets", AloneSets.FIRST)
    _check_types(stored_study, where)
    cli = {k: v for k, v in overrides.items() if v is not None}
    if "metric" in cli:
        cli["metrics"] = cli.pop("metric")
        if plan is not None and isinstance(stored_study.get("metrics"), list):
            # a study grows: --metric M on a study that measured something adds M (what is measured stays)
            cli["metrics"] = [*stored_study["metrics"], *(m for m in cli["metrics"] if m not in stored_study["metrics"])]
    _check_types({k: v for k, v in cli.items() if k in KEYS}, "command line")

    preset_name = cli.get("preset") or stored_study.get("preset") or "standard"
    presets = catalog.presets()
    if preset_name not in presets:
        raise PqsimdError(f"unknown preset '{preset_name}'; valid presets: {', '.join(presets)}"
                          f"{did_you_mean(preset_name, presets)}")
    preset = {k: v for k, v in presets[preset_name].items() if k != "description"}
    if "preset" in cli and cli["preset"] != stored_study.get("preset", cli["preset"]):
        # A new preset replaces the stored sizes, so the settings check sees the change.
        for k in preset:
            stored_study.pop(k, None)

    variant_defs = dict(catalog.builtin_variants())
    vtable = stored.get("variants", {})
    for vid, vdef in vtable.items():
        variant_defs[vid] = catalog.variant_from_dict(vid, vdef, where)

    fam = catalog.default_family()
    from . import isa as isa_mod

    isa_name = cli.get("isa") or stored_study.get("isa") or isa_mod.host().name
    target = isa_mod.get(isa_name)  # an unknown ISA: one line naming the known ones
    merged: dict[str, Any] = {
        "schemes": list(fam.schemes),
        "variants": [v for v, d in variant_defs.items() if d.default and d.builds_for(target.name)],
        **preset,
        **stored_study,
        # like --shared-cpu (a policy, not a measurement setting): it wins over what study.toml stored
        **({"shared_cpu": os.environ["PQSIMD_SHARED_CPU"]} if os.environ.get("PQSIMD_SHARED_CPU") else {}),
    }
    merged["preset"] = preset_name
    merged["isa"] = target.name
    if "cc" not in cli and "cc" not in stored_study and target.cc:
        merged["cc"] = list(target.cc)  # e.g. riscv64: clang-19 (RVV intrinsics)
    from_preset = "metrics" not in cli and "metrics" not in stored_study
    if from_preset and not target.native:  # under an emulator nothing is timed: what it can count
        merged["metrics"] = [m for m in merged.get("metrics", []) if m in metrics_mod.REGISTRY
                             and not metrics_mod.get(m).timed] or ["instructions", "mix"]
    given = cli.pop("vlen", merged.get("vlen"))
    if target.vector is not None or given is not None:
        if given is not None and (isinstance(given, bool) or not isinstance(given, int)):
            raise PqsimdError(f"--vlen must be a vector length in bits, got {given!r}")
        merged["vlen"] = target.at(given).vlen  # one line for an ISA without one, or a length its emulator lacks
    if "source" in cli:
        from .sources import check_tree

        cli["source"] = str(check_tree(Path(cli["source"])))  # a bad --source never reaches study.toml
    for k, v in cli.items():
        if k != "preset":
            merged[k] = v
    _check_types(merged, where)
    if merged.get("sources"):
        from .sources import check_checkouts

        # a bad --sources never reaches study.toml (the checkouts' paths are resolved); a stored one that
        # moved is named too
        merged["sources"] = check_checkouts(merged["sources"], catalog.families().values())
    else:
        merged.pop("sources", None)
    merged["cc"] = parse_cc(merged.get("cc", ["gcc"]))
    merged["batch"] = str(merged.get("batch", "auto"))
    for key in COUNTS:
        if merged.get(key) is not None:
            _count(key, merged[key])
    if merged.get("budget") is not None:
        b = merged["budget"]
        if not isinstance(b, (int, float)) or isinstance(b, bool) or not (0 <= b <= 3600):
            raise PqsimdError(f"--budget must be a time in seconds per op and job, 0 (none) to 3600, got {b!r}")
        merged["budget"] = float(b) if b > 0 else None  # 0: the fixed S x R design
    if merged.get("max_call_s") is not None:
        cap = merged["max_call_s"]
        if isinstance(cap, bool) or not isinstance(cap, (int, float)) or cap < 0:
            raise PqsimdError(f"--max-call must be a time in seconds (0: no cap), got {cap!r}")
        merged["max_call_s"] = float(cap) if cap > 0 else None
    if merged.get("job_timeout") is not None:
        t = merged["job_timeout"]
        if isinstance(t, bool) or not isinstance(t, (int, float)) or t < 0 or math.isnan(t) \
                or MAX_JOB_TIMEOUT_S < t < math.inf:  # a limit past time_t stopped the watchdog with a traceback
            raise PqsimdError(f"--job-timeout must be a time in seconds up to {MAX_JOB_TIMEOUT_S:,} (0, inf or none: "
                              f"no limit), got {t!r}")
        merged["job_timeout"] = 0.0 if math.isinf(t) else float(t)  # no limit is written 0
    if merged.get("shared_cpu", DEFAULT_SHARED_CPU) not in SHARED_CPU:
        raise PqsimdError(f"--shared-cpu (or PQSIMD_SHARED_CPU) must be one of {', '.join(SHARED_CPU)}, got "
                          f"{merged.get('shared_cpu')!r}")
    if merged.get("layout", DEFAULT_LAYOUT) not in LAYOUTS:
        raise PqsimdError(f"--layout must be one of {', '.join(LAYOUTS)}, got {merged.get('layout')!r}")
    if merged.get("alone") and merged.get("design", DEFAULT_DESIGN) != Design.PAIRED:
        merged["alone"] = 0  # the separate design times every build alone already
    for key, allowed in (("alone_layouts", ALONE_LAYOUTS), ("alone_sets", ALONE_SETS)):
        if merged.get(key, allowed[0]) not in allowed:
            raise PqsimdError(f"--{key.replace('_', '-')} must be one of {', '.join(allowed)}, got {merged.get(key)!r}")
    if merged.get("design", DEFAULT_DESIGN) not in DESIGNS:
        raise PqsimdError(f"--design must be one of {', '.join(DESIGNS)}, got {merged.get('design')!r}")

    merged["schemes"] = catalog.expand_schemes(merged["schemes"])
    _check_names("scheme", merged["schemes"], catalog.all_schemes(), where)
    if merged.get("ablation"):
        merged["variants"] = _with_ablation_cells(merged, variant_defs, explicit="variants" in cli or "variants" in stored_study)
    _check_names("variant", merged["variants"], list(variant_defs), where)
    _add_duplicates(merged, variant_defs, where)
    _check_size(merged)
    if merged.get("ops") is not None:
        merged["ops"] = _check_ops(merged["ops"], merged["schemes"], where)
    _check_names("metric", merged.get("metrics", [metrics_mod.DEFAULT]), metrics_mod.names(), where)
    metrics_mod.check_isa(merged.get("metrics", [metrics_mod.DEFAULT]), target)
    if merged.get("mca_cpus"):
        from .run.costmodel import check_mca_cpus  # late: only a study that names cost-model CPUs pays for llvm-mca's list

        if metrics_mod.MIX not in merged.get("metrics", [metrics_mod.DEFAULT]):
            raise PqsimdError("--mca-cpu names CPU models for the cost model of --metric mix; add mix to --metric")
        check_mca_cpus(merged["mca_cpus"], target)
    if merged.get("sim_cpus"):
        from . import caches

        if metrics_mod.SIM not in merged.get("metrics", [metrics_mod.DEFAULT]):
            raise PqsimdError("--sim-cpu names cache geometries for --metric sim; add sim to --metric")
        caches.check(merged["sim_cpus"])
    if merged["batch"] != "auto" and not (merged["batch"].isdigit() and 1 <= int(merged["batch"]) <= MAX_BATCH):
        raise PqsimdError(f"--batch must be 'auto' or an integer from 1 to {MAX_BATCH}, got {merged['batch']!r}")
    if merged.get("cpu") is not None and merged["cpu"] not in os.sched_getaffinity(0):
        allowed = ",".join(str(c) for c in sorted(os.sched_getaffinity(0)))
        raise PqsimdError(f"--cpu {merged['cpu']} is not a CPU this process may use (allowed: {allowed})")
    for c in merged["cc"]:
        if "\n" in c or "\0" in c:
            raise PqsimdError("--cc contains a newline or NUL")

    analysis_settings(sd.path, stored)  # a misspelled or invalid [analysis] key: one line, before any timing
    study = Study(**{k: v for k, v in merged.items() if k in KEYS}, variant_defs=variant_defs,
                  analysis=dict(stored.get("analysis", {})), metrics_from_preset=from_preset)
    study.variant_defs = {v: variant_defs[v] for v in study.variants}
    if os.environ.get("PQSIMD_SHARED_CPU") and "shared_cpu" not in cli:
        study.from_environment["shared_cpu"] = stored_study.get("shared_cpu")
    check_against_plan(sd, study)
    return study


def _with_ablation_cells(merged: dict[str, Any], variant_defs: dict[str, Variant], explicit: bool) -> list[str]:
    """--ablation: every cell of each family's ablation becomes a variant of the study (with the
    variants named explicitly, if any; else the cells alone)."""
    from . import ablation

    fams = list(dict.fromkeys(catalog.family_of(s).name for s in merged["schemes"]))
    cells: dict[str, Variant] = {}
    for name in fams:
        ab = ablation.of_family(catalog.families()[name], variant_defs, merged.get("isa"))
        cells.update(ablation.cell_variants(ab, variant_defs))
    for vid, v in cells.items():
        if vid in variant_defs and variant_defs[vid] != v:
            raise PqsimdError(f"variant {vid} is an ablation cell, but study.toml defines it differently; remove "
                              f"[variants.{vid}] from study.toml or use a new directory")
        variant_defs[vid] = v
    given = list(merged["variants"]) if explicit else []
    return given + [v for v in cells if v not in given]


def _add_duplicates(merged: dict[str, Any], variant_defs: dict[str, Variant], where: str) -> None:
    """`aa`: each listed variant gets a duplicate build (the same definition under ids.aa_variant_id),
    a variant of the study like any other, so every paired job times both (the A/A check)."""
    import dataclasses

    from .ids import aa_variant_id

    for v in merged.get("aa") or []:
        if v not in merged["variants"]:
            raise PqsimdError(f"--aa {v}: not a variant of this study ({', '.join(merged['variants'])}); add it to "
                              f"--variants or name one of them")
        dup = aa_variant_id(v)
        want = dataclasses.replace(variant_defs[v], id=dup, default=False, description=f"A/A duplicate of {v}")
        have = variant_defs.get(dup)
        if have is not None and have.to_dict() != want.to_dict():
            raise PqsimdError(f"{where}: variant '{dup}' is defined and is not the A/A duplicate of '{v}'; rename it "
                              f"(ids ending in +aa are the A/A duplicates)")
        variant_defs[dup] = want
        if dup not in merged["variants"]:
            merged["variants"].append(dup)


def check_against_plan(sd: StudyDir, study: Study) -> None:
    """Once a plan exists (fixed by the first run), no measurement setting may change."""
    from .run.plan import PLAN_VERSION  # late, upward: the plan's version is the plan's

    plan = sd.read_plan()
    if plan is None or plan.get("version") != PLAN_VERSION:
        return  # no plan yet, or an older one (run/plan.py refuses new measurements in it)
    before = plan.get("settings")
    if not isinstance(before, dict):
        raise PqsimdError(f"{sd.plan_json} has no `settings` (they fix what every job measures); restore the file, "
                          f"or use a new directory")
    now = study.measurement_settings()
    if "metrics" in before:
        now["metrics"] = _grown_metrics(sd, plan, before["metrics"], now["metrics"])
    for k in now:
        if k in before and before[k] != now[k]:
            raise PqsimdError(
                f"{sd.path} was planned with {k}={_short(before[k])} but the study now says {k}={_short(now[k])} "
                f"(from the command line, the preset or an edited study.toml); restore it, or use a new directory "
                f"for the new settings (nothing is mixed or overwritten)"
            )
    if study.jobs < plan.get("jobs_per_group", 0):
        raise PqsimdError(
            f"{sd.path} already planned {plan['jobs_per_group']} jobs per group; more are fine "
            f"(--jobs N > {plan['jobs_per_group']}), fewer would orphan measured jobs"
        )


def _grown_metrics(sd: StudyDir, plan: dict, before: list[str], now: list[str]) -> list[str]:
    """The metrics to check against the plan's after a study grew to `now`. Metrics with jobs of their
    own (one per build: instructions, mix, sim, stack, size, energy) are added freely, since no timed
    sample changes; a metric that rides in the timing jobs (ticks, counters) only while none of them is
    measured (run/plan.update_plan then writes the plan's settings anew). Growth gives the plan's own
    list (nothing it fixes changed); a metric dropped gives `now`, which check_against_plan names."""
    if any(m not in now for m in before):
        return now
    riding = [m for m in now if m not in before and m in metrics_mod.REGISTRY and not metrics_mod.get(m).per_build]
    measured = [j["id"] for j in plan.get("jobs", []) if isinstance(j, dict) and sd.raw_path(j["id"]).exists()]
    if riding and measured:
        own = ", ".join(m.name for m in metrics_mod.REGISTRY.values() if m.per_build)
        raise PqsimdError(
            f"{sd.path}: --metric {','.join(riding)} is measured inside the timing jobs, and {len(measured)} of them "
            f"were measured without it; use a new directory for it (metrics with jobs of their own can be added "
            f"to this study: {own})")
    return before


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) < 80 else text[:77] + "..."


def load(directory: Path | StudyDir) -> Study:
    """The stored study of an existing directory (no command-line changes)."""
    sd = directory if isinstance(directory, StudyDir) else StudyDir(directory)
    if not sd.study_toml.exists():
        from .errors import command

        raise PqsimdError(f"{sd.path} holds no study (no study.toml); create one with {command('run', sd.path)}")
    return resolve(sd, {})


def save(directory: Path | StudyDir, study: Study) -> None:
    sd = directory if isinstance(directory, StudyDir) else StudyDir(directory)
    sd.write_study(study.to_toml())
