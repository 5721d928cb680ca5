"""A campaign: studies that measured the same thing on different machines (or with different
compilers), merged into one answer to "does this speedup hold on other hardware?".

Inputs are each study's results/ (comparisons, decomposition, spins.parquet, summary.json) and its
manifest, plan and study.toml: no raw files. `check_comparable` refuses studies that did not measure
the same thing (pinned sources, variants and flags, ISA, design, chain, preset, analysis threshold;
schemes, ops, variants outside a stated subset), naming the difference in one line; differences
that do not change what was measured (compiler versions, pqsimd versions, J) are listed, one line
each, in the campaign's summary.

One column of the campaign is an **arm**: one study under one of its compilers (a study with two
compilers gives two arms on one machine). Per (metric, scheme, op, baseline, variant) and arm:
- the arm's speedup and interval are the study's own comparisons row (unchanged);
- the arm's job-level evidence is rebuilt from its spins.parquet: per (job, build) the job's value as
  analyze takes it (the median of its spin medians; the geometric mean of its laid-out copies' medians
  where it has several); paired design: the log job ratios log(baseline / variant) (estimand: their median,
  as analyze's `sign` method), separate design: the log job medians of each build (estimand: the
  difference of their means, as analyze's `t`); the rebuilt estimate is checked against the row, and a
  study whose spins.parquet does not give its own rows is refused (its results/ are not one analysis). So
  is a study given twice under two names (a copy: the same spin medians or job runs), which would pass for
  a second machine.
- the **ratio of speedups** of an arm to the reference arm (the first): the same estimand on each
  arm, log ratio = estimate(arm) - estimate(reference); its interval is the percentile bootstrap of
  that difference, resampling each arm's jobs independently (arms of one study share their jobs, so
  they are resampled together). The decision p-value is the smallest miss probability at which that
  interval clears or stays inside ±log(1 + threshold); Benjamini-Hochberg over all the campaign's
  ratios sets the printed level (multiplicity.py, `fcr`), and the verdict (larger | smaller | same
  | ~) is read off the printed interval. Coverage and false alarms: bench/bench_campaign.py.
  No ratio is more certain than the clocks: each arm's speedup is known only to its row's
  `resolution` (interval.resolution_halfwidth of its two groups' lattice steps), so each end of the
  ratio's interval moves out by the sum of the two arms' (log scale), and the decision p-value tests
  the band moved by it (as interval.py's); an exact ratio of timed rows gets that width too.
Absolute times are never compared across machines (their TSC rates differ); only speedups.
"""

from __future__ import annotations

import datetime as _dt
import errno
import hashlib
import json
import math
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .. import microarch
from ..catalog import recorded_op_names, resolve_ops
from ..errors import PqsimdError, command, os_problem
from ..model import OLDEST_READABLE_RESULTS, UNRECORDED_LAYOUT, Design, LayoutMode, copies_per_job
from ..results import Results, load_study, read_json

from ..store import atomic_write_bytes
from ..studydir import CAMPAIGN_FILE, StudyDir, load_plan
from ..studydir import CAMPAIGN_SUMMARY as SUMMARY_FILE
from ..stats.campaign import ArmJobs, ratio_bootstrap
from ..stats.decision import empirical as decision_p, percentile_interval
from ..stats.interval import verdict_of
from ..stats.multiplicity import family_level
from ..model import CAMPAIGN_SCHEMA_VERSION
from .write import write_json, write_table

KEY = ["metric", "scheme", "op", "baseline", "variant"]
RATIO_VERDICTS = {"faster": "larger", "slower": "smaller", "same": "same", "~": "~"}
DEFAULT_BOOT = 4000
DEFAULT_SEED = 28


# -- what the campaign is --------------------------------------------------------------------------

@dataclass
class Spec:
    """What OUT/campaign.toml says: the studies (paths relative to OUT) and a stated subset."""

    studies: list[Path]
    labels: list[str] = field(default_factory=list)
    subset: dict[str, list[str]] = field(default_factory=dict)  # schemes, ops, variants, compilers

    def to_toml(self, out: Path) -> str:
        def rel(p: Path) -> str:
            try:
                return str(Path(p).resolve().relative_to(out.resolve()))
            except ValueError:
                import os

                return os.path.relpath(Path(p).resolve(), out.resolve())

        lines = ["# pqsimd campaign: studies of the same plan on other machines or compilers.",
                 "# `pqsimd campaign OUT` (without studies) runs it again from this file.", "[campaign]",
                 "studies = [" + ", ".join(json.dumps(rel(p)) for p in self.studies) + "]",
                 "labels = [" + ", ".join(json.dumps(x) for x in self.labels) + "]"]
        for k in ("schemes", "ops", "variants", "compilers"):
            if self.subset.get(k):
                lines.append(f"{k} = [" + ", ".join(json.dumps(x) for x in self.subset[k]) + "]")
        return "\n".join(lines) + "\n"


def read_spec(out: Path, studies: list[Path], subset: dict[str, list[str] | None],
              labels: list[str] | None = None) -> Spec:
    """The campaign from the command line (then written to OUT/campaign.toml) or, without studies,
    from OUT/campaign.toml (or a campaign.toml given as the one study)."""
    subset = {k: list(v) for k, v in subset.items() if v}
    if len(studies) == 1 and Path(studies[0]).is_file():
        path, studies = Path(studies[0]), []
    else:
        path = out / CAMPAIGN_FILE
    if not studies:
        if not path.is_file():
            raise PqsimdError(f"no studies given and no {path}; give them: {command('campaign', out, 'DIR1', 'DIR2')}")
        try:
            doc = tomllib.loads(path.read_text()).get("campaign", {})
        except tomllib.TOMLDecodeError as e:
            raise PqsimdError(f"{path} is not valid TOML ({e}); fix it or give the studies on the command line") from None
        listed = doc.get("studies") or []
        if not isinstance(listed, list) or not all(isinstance(s, str) for s in listed):
            raise PqsimdError(f"{path}: [campaign] studies must be a list of study directories")
        studies = [(path.parent / s) for s in listed]
        labels = labels or [str(x) for x in doc.get("labels") or []]
        for k in ("schemes", "ops", "variants", "compilers"):
            if doc.get(k) and k not in subset:
                subset[k] = [str(x) for x in doc[k]]
    studies = [Path(s) for s in studies]
    seen = [_readable_dir(s) for s in studies]
    twice = sorted({str(s) for s in seen if seen.count(s) > 1})
    if twice:
        raise PqsimdError(f"{twice[0]} is given twice; give each study once (a study with two compilers is two "
                          f"columns by itself)")
    if len(studies) < 1:
        raise PqsimdError(f"a campaign needs at least one study; {command('campaign', out, 'DIR1', 'DIR2')}")
    if labels and len(labels) != len(studies):
        raise PqsimdError(f"{len(labels)} labels for {len(studies)} studies; give one label per study")
    labels = labels or _default_labels(studies)
    if len(set(labels)) != len(labels):
        raise PqsimdError(f"two studies have the same label ({', '.join(labels)}); give distinct --labels")
    return Spec(studies, labels, subset)


def _readable_dir(s: Path) -> Path:
    """A study directory's real path; one line when it is missing, not a directory or cannot be read
    (a symbolic link loop, no permission)."""
    try:
        real = s.resolve(strict=True)
        os.listdir(real)
    except FileNotFoundError:
        raise PqsimdError(f"no study directory at {s}; give the directories of analyzed studies") from None
    except NotADirectoryError:
        raise PqsimdError(f"{s} is not a directory; give the directories of analyzed studies") from None
    except (OSError, RuntimeError) as e:  # RuntimeError: a symbolic link loop (Python < 3.13)
        why = "a symbolic link loop" if isinstance(e, RuntimeError) or getattr(e, "errno", None) == errno.ELOOP \
            else os_problem(e)
        raise PqsimdError(f"cannot read the study at {s} ({why}); give the directory of an analyzed study") from None
    return real


def _default_labels(studies: list[Path]) -> list[str]:
    names = [s.resolve().name for s in studies]
    return [n if names.count(n) == 1 else f"{n}-{i + 1}" for i, n in enumerate(names)]


# -- one study as the campaign reads it -----------------------------------------------------------------

@dataclass
class Member:
    label: str
    study: Results
    plan: dict
    sizing_present: bool

    @property
    def directory(self) -> Path:
        return self.study.directory

    @property
    def st(self) -> dict:
        return self.study.study.get("study", {}) or {}

    @property
    def compilers(self) -> list[str]:
        return [str(c) for c in (self.plan.get("compilers") or sorted(set(self.study.groups.get("compiler", []))))]

    @property
    def design(self) -> str:
        return str(self.plan.get("design") or self.study.summary.get("design") or self.st.get("design") or "")

    @property
    def isa(self) -> str:
        return str((self.study.manifest.get("isa") or {}).get("name") or self.study.summary.get("isa") or "")


def layout_design(m: Member) -> str:
    """How a member laid out its code: `fixed` (every job the builds as linked), or `random, N copies
    per job` (results summary `layout`, else the plan's settings)."""
    lay = m.study.summary.get("layout") or {}
    st = {**(m.st or {}), **((m.plan.get("settings") or {}) if isinstance(m.plan, dict) else {})}
    mode = lay.get("mode") or st.get("layout") or UNRECORDED_LAYOUT
    if mode != LayoutMode.RANDOM:
        return str(LayoutMode.FIXED)
    # results from before the layout record: the plan's and study.toml's settings, by the one rule
    n = lay.get("copies_per_job") or (copies_per_job(mode, st["layouts"]) if st.get("layouts") else None)
    return f"{LayoutMode.RANDOM}, {n} copies per job" if n else str(LayoutMode.RANDOM)


def read_member(label: str, directory: Path) -> Member:
    sd = StudyDir(directory)
    for need, path in (("manifest.json", sd.manifest_json), ("plan.json", sd.plan_json), ("study.toml", sd.study_toml)):
        if not path.is_file():
            raise PqsimdError(f"{directory} has no {need}; a campaign needs each study's results/, manifest.json, "
                              f"plan.json and study.toml")
    study = load_study(directory, oldest=OLDEST_READABLE_RESULTS)  # summary.json present and of a schema read here
    if not sd.results("spins.parquet").exists():
        raise PqsimdError(f"{directory} has no results/spins.parquet; copy the study's whole results/ again, or re-run "
                          f"{command('analyze', directory)} where its raw/ is")
    return Member(label, study, load_plan(read_json(sd.plan_json)), sd.sizing_json.exists())


# -- comparability -----------------------------------------------------------------------------------

def _sources(m: Member) -> dict:
    src = m.study.manifest.get("source") or {}
    crates = {k: (v.get("version"), v.get("checksum")) for k, v in (src.get("crates") or {}).items()}
    return {"origin": src.get("origin"), "crates": crates,
            "tree": None if src.get("origin") == "crate" else src.get("root")}


def _implementation_tables(m: Member) -> dict[str, dict | None]:
    """Per family of the study: its `[implementations]` as the study's own family TOML (manifest
    `families`) says them; None where the manifest holds no TOML (an older or synthetic study)."""
    out: dict[str, dict | None] = {}
    for fam, rec in (m.study.manifest.get("families") or {}).items():
        try:
            out[fam] = tomllib.loads((rec or {}).get("toml") or "").get("implementations") or {} \
                if (rec or {}).get("toml") else None
        except tomllib.TOMLDecodeError:
            out[fam] = None
    return out


def sources_used(m: Member, variants: list[str]) -> dict[tuple, dict[str, tuple]]:
    """What code the compared builds were made from: per (family, variant) the sources it used,
    {what: identity}: `pinned crate NAME` (version, checksum) from its implementation's `crate`, or the
    PQClean tree's crate when the implementation names none; `checkout NAME` (describe, content sha256);
    `source tree` (a --source study's root). A crate pinned but used by no compared build is not
    there. Where the study does not say which implementation a variant builds (no family TOML, no
    main crate among several), every pinned crate is, as before."""
    src = m.study.manifest.get("source") or {}
    crates = {k: (v.get("version"), v.get("checksum")) for k, v in (src.get("crates") or {}).items()}
    checkouts = {k: (v.get("describe"), v.get("sha256")) for k, v in (src.get("checkouts") or {}).items()}
    if src.get("origin") not in (None, "crate"):
        tree = {"source tree": (str(src.get("root")),)}
    else:
        main = src.get("crate") or (next(iter(crates)) if len(crates) == 1 else None)
        tree = {f"pinned crate {main}": crates.get(main, ("absent",))} if main else None
    every = {**{f"pinned crate {k}": v for k, v in crates.items()}, **(tree or {})}
    defs = m.study.study.get("variants") or {}
    impls = _implementation_tables(m) or {None: None}
    out: dict[tuple, dict[str, tuple]] = {}
    for fam, table in impls.items():
        for v in variants:
            impl = (table or {}).get(str((defs.get(v) or {}).get("sources") or ""))
            if table is None or tree is None:
                out[fam, v] = every
            elif isinstance(impl, dict) and impl.get("crate"):
                out[fam, v] = {f"pinned crate {impl['crate']}": crates.get(impl["crate"], ("absent",))}
            elif isinstance(impl, dict) and impl.get("checkout"):
                out[fam, v] = {f"checkout {impl['checkout']}": checkouts.get(impl["checkout"], ("absent",))}
            else:
                out[fam, v] = tree
    return out


def _sources_differ(ref: Member, m: Member, variants: list[str]) -> str | None:
    """The first difference between the sources of the compared builds, both sides named; None if
    every compared build of both studies was made from the same code."""
    a, b = sources_used(ref, variants), sources_used(m, variants)
    for key in sorted(set(a) & set(b) or set(a) | set(b), key=str):
        sa, sb = a.get(key) or {}, b.get(key) or {}
        for what in sorted(set(sa) | set(sb)):
            ia, ib = sa.get(what, ("absent",)), sb.get(what, ("absent",))
            if ia != ib:
                fam, v = key
                build = f"variant {v}" + (f" of {fam}" if fam else "")
                # the version, or where both name the same one, the content that tells them apart
                xa, xb = (ia[0], ib[0]) if ia[0] != ib[0] else (f"{ia[0]} ({str(ia[-1])[:12]})", f"{ib[0]} ({str(ib[-1])[:12]})")
                return f"{build}: {what} {xb} in {m.label}, {xa} in {ref.label}"
    return None


def _variant_defs(m: Member) -> dict:
    return {v: (d.get("sources"), tuple(d.get("flags") or ())) for v, d in (m.study.study.get("variants") or {}).items()}


def _set_of(m: Member, what: str) -> list[str]:
    c = m.study.comparisons
    if what == "schemes":
        return [str(x) for x in (m.st.get("schemes") or sorted(set(c["scheme"])))]
    if what == "variants":
        return [str(x) for x in (m.st.get("variants") or [])]
    if what == "ops":
        return sorted(set(c["op"].astype(str)))
    return m.compilers


def check_comparable(members: list[Member], subset: dict[str, list[str]]) -> list[str]:
    """Refuse (PqsimdError, one line) what makes studies measure different things; return the
    differences that do not (one line each), for the summary and the report."""
    ref, notes = members[0], []
    refused: list[str] = []
    for what in ("schemes", "ops", "variants", "compilers"):
        for x in subset.get(what) or []:
            missing = [m.label for m in members if x not in _set_of(m, what)]
            if missing:
                raise PqsimdError(f"the stated {what} subset names {x}, which {', '.join(missing)} did not measure; "
                                  f"state only what every study measured")
    for m in members[1:]:
        who = f"{m.label} vs {ref.label}"
        compared = subset.get("variants") or sorted(set(_set_of(ref, "variants")) & set(_set_of(m, "variants")))
        differ = _sources_differ(ref, m, compared)
        if differ:
            refused.append(f"{who}: the sources differ ({differ})")
        elif _sources(m) != _sources(ref):
            ca, cb = _sources(ref)["crates"], _sources(m)["crates"]
            other = sorted(k for k in set(ca) | set(cb) if ca.get(k) != cb.get(k))
            notes.append(f"{who}: pinned crate{'s' * (len(other) != 1)} {', '.join(other) or 'none'} differ, "
                         f"which no compared build uses")
        if m.isa != ref.isa:
            refused.append(f"{who}: ISA {m.isa} vs {ref.isa} (a cross-ISA comparison is `pqsimd report DIR --beside OTHER`)")
        if m.design != ref.design:
            refused.append(f"{who}: design {m.design} vs {ref.design}")
        if (m.study.manifest.get("chain") or {}).get("steps") != (ref.study.manifest.get("chain") or {}).get("steps"):
            refused.append(f"{who}: the decomposition chain differs")
        if m.st.get("preset") != ref.st.get("preset"):
            refused.append(f"{who}: preset {m.st.get('preset')} vs {ref.st.get('preset')}")
        for k in ("threshold", "alpha", "adjust"):
            a, b = (x.study.summary.get("settings", {}).get(k) for x in (ref, m))
            if a != b:
                refused.append(f"{who}: analysis {k} {b} vs {a}")
        va, vb = _variant_defs(ref), _variant_defs(m)
        for v in sorted(set(va) & set(vb)):
            if subset.get("variants") and v not in subset["variants"]:
                continue
            if va[v] != vb[v]:
                refused.append(f"{who}: variant {v} differs (sources/flags {' '.join(vb[v][1])} vs {' '.join(va[v][1])})")
        for what in ("schemes", "variants", "ops"):
            a, b = set(_set_of(ref, what)), set(_set_of(m, what))
            if a == b:
                continue
            if subset.get(what):  # checked above: the stated subset is in every study
                notes.append(f"{who}: {what} differ ({', '.join(sorted(a ^ b))}); the stated subset is in both")
            else:
                refused.append(f"{who}: {what} differ (only in one: {', '.join(sorted(a ^ b))}); "
                               f"state a subset in both with --{what}")
        for k in ("jobs", "spins", "reps", "budget"):
            if m.st.get(k) != ref.st.get(k):
                notes.append(f"{who}: {k} {m.st.get(k)} vs {ref.st.get(k)}")
        fa, fb = ((x.study.manifest.get("families") or {}) for x in (ref, m))
        for fam in sorted(set(fa) & set(fb)):
            if (fa[fam] or {}).get("toml") != (fb[fam] or {}).get("toml"):
                notes.append(f"{who}: family {fam}'s TOML differs (other pqsimd versions: check its ops time the same code)")
        ta, tb = ((x.study.manifest.get("tool") or {}).get("git_commit") for x in (ref, m))
        if ta != tb:
            notes.append(f"{who}: pqsimd {str(tb)[:7]} vs {str(ta)[:7]}")
        ca, cb = compiler_versions(ref), compiler_versions(m)
        for c in sorted(set(ca) & set(cb)):
            if ca[c] != cb[c]:
                notes.append(f"{who}: compiler {c} is {cb[c]} vs {ca[c]}")
    if refused:
        raise PqsimdError("the studies are not comparable: " + "; ".join(refused))
    for m in members:  # a member timed on a busy machine: its speedups are there, with that said
        shared = m.study.summary.get("shared_cpu") or {}
        if isinstance(shared, dict) and shared.get("jobs"):
            notes.append(f"{m.label}: {shared['jobs']} of {shared.get('timing_jobs')} timing jobs shared their CPU with "
                         f"another program (kept, marked: its own report gives each verdict without them)")
    return notes


def compiler_versions(m: Member) -> dict[str, str]:
    return {c: str(d.get("version", "")).splitlines()[0] if d.get("version") else "?"
            for c, d in (m.study.manifest.get("compilers") or {}).items()}


def measurements_of(m: Member) -> tuple[str, set[tuple]]:
    """What a study measured, to tell a copy from another machine: a digest of its spin medians and
    the job runs its manifest records (job, host, start)."""
    spins = m.study.spins()
    cols = [c for c in ("metric", "scheme", "op", "variant", "compiler", "job", "spin", "layout", "value")
            if c in spins.columns]
    spins = spins[cols].sort_values(cols[:-1], kind="stable") if len(spins) else spins[cols]
    digest = hashlib.sha256(pd.util.hash_pandas_object(spins, index=False).to_numpy().tobytes()).hexdigest()
    runs = {(j, str(r.get("hostname")), str(r["started"])) for j, r in (m.study.manifest.get("jobs") or {}).items()
            if isinstance(r, dict) and r.get("started")}
    return digest, runs


def check_distinct(members: list[Member]) -> None:
    """Refuse (one line) a study given twice under other names: a copy holds the same measurements, and
    beside the original it would look like a second machine agreeing with the first."""
    seen: list[tuple[Member, str, set[tuple]]] = []
    for m in members:
        digest, runs = measurements_of(m)
        for other, d, r in seen:
            shared = sorted(runs & r)
            # equal spin medians alone are a copy only where job records cannot tell the two apart (on
            # a coarse clock two machines' short ops can read the very same lattice points)
            if shared or (digest == d and not (runs and r)):
                what = (f"job {shared[0][0]} run on {shared[0][1]} at {shared[0][2]} is in both" if shared
                        else "the same spin medians")
                raise PqsimdError(f"{m.label} ({m.directory}) holds the measurements of {other.label} "
                                  f"({other.directory}): {what}; it is a copy, not another machine: give each "
                                  f"study once")
        seen.append((m, digest, runs))


# -- machines -----------------------------------------------------------------------------------------

def machine_row(m: Member, compiler: str) -> dict:
    mach = m.study.manifest.get("machine") or {}
    ua = microarch.identify(mach)
    records = [j for j in (m.study.manifest.get("jobs") or {}).values() if isinstance(j, dict)]
    job_models = sorted({str(j["cpu_model"]) for j in records if j.get("cpu_model")})
    name = ua.name
    if job_models and job_models != [str(mach.get("cpu_model", ""))]:
        # the manifest describes the host that ran `pqsimd run` (a SLURM submit host); the jobs ran elsewhere
        name = f"{' / '.join(job_models)} (not identified: the manifest's machine is not where the jobs ran)"
    cal = [j.get("calibration") or {} for j in records]
    jobs = m.study.jobs
    if "step" in jobs.columns and jobs["step"].notna().any():  # the step analyze used (its samples' lattice)
        steps = sorted({float(x) for x in jobs["step"].dropna()})
    else:
        steps = sorted({c["granularity"] for c in cal if isinstance(c.get("granularity"), (int, float))})
    hz = [c["tsc_hz"] for c in cal if isinstance(c.get("tsc_hz"), (int, float))]
    disturbed = int(jobs["disturbed"].astype(bool).sum()) if "disturbed" in jobs.columns else 0
    tsc = (f"{steps[0]:g}" if len(steps) == 1 else f"{steps[0]:g}-{steps[-1]:g}") if steps else "not recorded"
    return {"study": m.label, "compiler": compiler, "directory": str(m.directory), "microarchitecture": name,
            "microarchitecture_source": ua.source if name == ua.name else "",
            "job_hosts": ", ".join(sorted({str(j["hostname"]) for j in records if j.get("hostname")})), "vendor": ua.vendor, "cpu_model": str(mach.get("cpu_model", "")),
            "cpu_family": str(mach.get("cpu_family", "")), "cpu_model_number": str(mach.get("cpu_model_number", "")),
            "stepping": str(mach.get("stepping", "")), "virtualization": str(mach.get("virtualization") or "none recorded"),
            "tsc_step": tsc, "tsc_ghz": float(np.median(hz)) / 1e9 if hz else math.nan,
            "compiler_version": compiler_versions(m).get(compiler, "?"), "isa": m.isa, "design": m.design,
            "jobs_per_group": m.st.get("jobs"), "disturbed_jobs": disturbed,
            "pqsimd": str((m.study.manifest.get("tool") or {}).get("git_commit", ""))[:7]}


def same_microarchitecture(machines: pd.DataFrame) -> list[str]:
    out = []
    by_study = machines.drop_duplicates("study")
    for name, d in by_study.groupby("microarchitecture", sort=False):
        if len(d) > 1:
            out.append(f"{', '.join(d['study'])} come from the same microarchitecture ({name}): a machine effect "
                       f"between them is one of host, virtualization or setup, not of the core")
    return out


# -- job-level evidence ---------------------------------------------------------------------------------


def job_medians(spins: pd.DataFrame, copy_value: str = "median") -> dict[tuple, pd.Series]:
    """(metric, scheme, op, variant, compiler) -> per job: the job's value as analyze takes it
    (groups.Group.job_medians): the median of its spin medians, or, where its spins come from more
    than one laid-out copy and all are > 0, the median of its copies' medians (results schema 7; two
    copies: their geometric mean), or with copy_value="mean" (a member analysed by an older pqsimd,
    schema <= 6) the geometric mean of its copies' medians."""
    out = {}
    for k, (value, copies) in _job_values(spins).items():
        if copies is not None:
            per_job = copies.groupby(level="job", sort=False)
            value = np.exp(per_job.median() if copy_value == "median" else per_job.mean())
        out[k] = value
    return out


def copy_logs(spins: pd.DataFrame) -> dict[tuple, pd.Series]:
    """(metric, scheme, op, variant, compiler) -> the log median of every laid-out copy, indexed by
    (job, copy), for groups of more than one copy per job with every spin > 0 (what a `csign` row of
    analyze was computed from)."""
    return {k: c for k, (_v, c) in _job_values(spins).items() if c is not None}


def _job_values(spins: pd.DataFrame) -> dict[tuple, tuple[pd.Series, pd.Series | None]]:
    cols = ["metric", "scheme", "op", "variant", "compiler"]
    s = spins[cols + ["job", "value"] + (["layout"] if "layout" in spins.columns else [])].copy()
    for c in cols + ["job"]:
        s[c] = s[c].astype(str)
    out = {}
    for k, d in s.groupby(cols, sort=False):
        value = d.groupby("job", sort=False)["value"].median()
        copies = None
        if "layout" in d.columns and d["layout"].notna().any() and d["layout"].max() >= 1 and (d["value"] > 0).all():
            logs = d.assign(value=np.log(d["value"]))  # each copy's median taken on the log scale, as analyze does
            copies = logs.groupby(["job", "layout"], sort=False)["value"].median()
        out[k] = (value, copies)
    return out


def copy_pairs(cb: pd.Series, cv: pd.Series) -> dict[str, np.ndarray]:
    """Per job: the log ratios of its copy pairs as analyze pairs them (compare.copy_log_ratios: copy l
    with copy l where both builds have the same copies, else every pair)."""
    out = {}
    vj = dict(tuple(cv.groupby(level="job", sort=False)))
    for job, b in cb.groupby(level="job", sort=False):
        if job not in vj:
            continue
        v = vj[job]
        bi, vi = b.index.get_level_values("layout"), v.index.get_level_values("layout")
        if sorted(bi) == sorted(vi):
            out[job] = b.droplevel("job").sort_index().to_numpy() - v.droplevel("job").sort_index().to_numpy()
        else:
            out[job] = np.subtract.outer(b.to_numpy(), v.to_numpy()).ravel()
    return out


def evidence(jm: dict[tuple, pd.Series], key: tuple, compiler: str, design: str,
             cl: dict[tuple, pd.Series] | None = None) -> ArmJobs | None:
    """An arm's jobs for the comparison key (metric, scheme, op, baseline, variant); with cl (copy_logs,
    for a row analyze computed as `csign`) the jobs' copy pairs, whose estimate is the typical layout."""
    metric, scheme, op, baseline, variant = key
    if cl is not None and design == Design.PAIRED:
        cb, cv = cl.get((metric, scheme, op, baseline, compiler)), cl.get((metric, scheme, op, variant, compiler))
        if cb is not None and cv is not None:
            pairs = copy_pairs(cb, cv)
            if pairs:
                return ArmJobs(Design.PAIRED, ratios=pd.Series({j: float(np.median(x)) for j, x in pairs.items()}),
                                copies=pairs)
    b, v = jm.get((metric, scheme, op, baseline, compiler)), jm.get((metric, scheme, op, variant, compiler))
    if b is None or v is None:
        return None
    b, v = b[b > 0], v[v > 0]
    if design == Design.PAIRED:
        r = (np.log(b) - np.log(v)).dropna()
        return ArmJobs(Design.PAIRED, ratios=r) if len(r) else None
    if len(b) and len(v):
        return ArmJobs(Design.SEPARATE, base=np.log(b.to_numpy()), var=np.log(v.to_numpy()))
    return None


def row_resolution(row) -> float:
    """A study's comparisons row's clock resolution of its log speedup (its `resolution` column is
    the relative widening, interval.py); 0 for exact counts and results that predate it."""
    r = float(row.get("resolution", math.nan)) if hasattr(row, "get") else math.nan
    return math.log1p(r) if math.isfinite(r) and r > 0 else 0.0


# -- the campaign --------------------------------------------------------------------------------------

@dataclass
class Arm:
    member: Member
    compiler: str
    name: str  # the column: the study's label, with the compiler when the campaign has several


def _arms(members: list[Member], subset: dict[str, list[str]]) -> list[Arm]:
    pairs = [(m, c) for m in members for c in m.compilers if not subset.get("compilers") or c in subset["compilers"]]
    several = len({c for _, c in pairs}) > 1
    return [Arm(m, c, f"{m.label} · {c}" if several else m.label) for m, c in pairs]


def _only_here(rows: dict[str, pd.DataFrame], name: str, keys: list) -> str:
    """Which comparisons only some arms have (e.g. the AVX-512 one where a host lacks AVX-512 and skipped that
    variant), as baseline -> variant with the arms that have it."""
    common = set(keys)
    pairs: dict[str, list[str]] = {}
    for k in rows[name].index:
        if k not in common:
            pair = f"{k[3]} → {k[4]}"
            pairs.setdefault(pair, [])
    for pair in pairs:
        pairs[pair] = [a for a, r in rows.items() if any(f"{k[3]} → {k[4]}" == pair for k in r.index)]
    return "; ".join(f"{p} only in {', '.join(arms)}" for p, arms in pairs.items())


def _rows(arm: Arm, subset: dict[str, list[str]]) -> pd.DataFrame:
    c = arm.member.study.comparisons.copy()
    for k in ("metric", "scheme", "op", "baseline", "variant", "compiler", "baseline_compiler", "stage", "method"):
        if k in c.columns:
            c[k] = c[k].astype(str)
    c = c[(c["compiler"] == arm.compiler) & (c["baseline_compiler"] == arm.compiler)]
    c = c[~c["stage"].isin(["aa", "ablation"])]
    for what, col in (("schemes", "scheme"), ("ops", "op")):
        if subset.get(what):
            c = c[c[col].isin(subset[what])]
    if subset.get("variants"):
        c = c[c["baseline"].isin(subset["variants"]) & c["variant"].isin(subset["variants"])]
    return c.drop_duplicates(KEY)


def build_campaign(spec: Spec, n_boot: int = DEFAULT_BOOT, seed: int = DEFAULT_SEED) -> dict[str, pd.DataFrame | dict]:
    """Every table of the campaign (analysis only; `write_campaign` stores them)."""
    members = [read_member(label, d) for label, d in zip(spec.labels, spec.studies)]
    if spec.subset.get("ops"):  # ids or the report's labels, as the first study's results name its ops
        spec.subset["ops"] = resolve_ops(spec.subset["ops"], recorded_op_names(members[0].study.summary.get("families")),
                                         where=f"{members[0].label}'s families")
    notes = check_comparable(members, spec.subset)
    check_distinct(members)
    arms = _arms(members, spec.subset)
    if not arms:
        raise PqsimdError("the stated compilers subset leaves no study with a compiler; check --compilers")
    ref = members[0].study
    settings = ref.summary.get("settings", {})
    alpha, threshold, adjust = float(settings.get("alpha", 0.05)), float(settings.get("threshold", 0.02)), \
        str(settings.get("adjust", "fcr"))
    band = math.log1p(threshold)
    rng = np.random.default_rng(seed)

    machines = pd.DataFrame([{"arm": a.name} | machine_row(a.member, a.compiler) for a in arms])
    jms, cls = {}, {}
    for m in members:
        sp = m.study.spins()
        jms[id(m)] = job_medians(sp, m.study.summary["job_value_of_copies"])
        cls[id(m)] = copy_logs(sp)
    rows = {a.name: _rows(a, spec.subset).set_index(KEY) for a in arms}
    keys = [k for k in rows[arms[0].name].index if all(k in rows[a.name].index for a in arms)]
    dropped = {a.name: len(rows[a.name]) - len(keys) for a in arms}
    notes += [f"{n}: {d} comparisons not in every study, left out ({_only_here(rows, n, keys)})"
              for n, d in dropped.items() if d]

    speed, evs = [], {}
    for a in arms:
        r = rows[a.name]
        jm = jms[id(a.member)]
        for key in keys:
            row = r.loc[key]
            rec = dict(zip(KEY, key)) | {"arm": a.name, "study": a.member.label, "compiler": a.compiler,
                                          "stage": row["stage"], "method": row["method"]}
            for col in ("speedup", "ci_low", "ci_high", "ci_level", "p_decision"):
                rec[col] = float(row[col]) if pd.notna(row[col]) else math.nan
            rec["resolution"] = math.expm1(row_resolution(row))
            rec["verdict"], note = str(row["verdict"]), ""
            ev = None
            if row["method"] in ("sign", "csign", "t"):
                ev = evidence(jm, key, a.compiler, a.member.design,
                              cls[id(a.member)] if row["method"] == "csign" else None)
                if ev is None:
                    note = "no job medians in spins.parquet"
                elif not math.isclose(math.exp(ev.estimate), rec["speedup"], rel_tol=1e-6):
                    note = f"the job medians give {math.exp(ev.estimate):.6g}, the study's row {rec['speedup']:.6g}"
            rec["n_jobs"] = ev.n_jobs if ev is not None else 0
            rec["rebuilt"] = math.exp(ev.estimate) if ev is not None else math.nan
            rec["note"] = note
            evs[(a.name, key)] = ev
            speed.append(rec)
    speedups = pd.DataFrame(speed)
    check_consistent(speedups, members)

    ratio_rows, boots = [], []
    reference = arms[0]
    by_arm = {name: d.set_index(KEY) for name, d in speedups.groupby("arm", sort=False)}
    for a in arms[1:]:
        same_jobs = a.member is reference.member
        for key in keys:
            ev, ev_ref = evs[(a.name, key)], evs[(reference.name, key)]
            sp, sr = by_arm[a.name].loc[key], by_arm[reference.name].loc[key]
            rec = dict(zip(KEY, key)) | {"stage": sp["stage"], "arm": a.name, "reference": reference.name,
                                          "speedup": sp["speedup"], "speedup_reference": sr["speedup"]}
            res = math.log1p(sp["resolution"]) + math.log1p(sr["resolution"])  # both arms' clocks, log scale
            rec["resolution"] = math.expm1(res)
            if ev is None or ev_ref is None or ev.design != ev_ref.design:
                exact = sp["method"] == sr["method"] == "exact"
                rec.update(ratio=sp["speedup"] / sr["speedup"] if exact else math.nan, method="exact" if exact else "n/a",
                           note="" if exact else "no job-level evidence in one of the studies")
                boots.append(None)
            else:
                b = ratio_bootstrap(ev, ev_ref, same_jobs, rng, n_boot)
                rec.update(ratio=math.exp(ev.estimate - ev_ref.estimate), method="bootstrap", note="",
                           p_decision=decision_p(b, band, res), jobs=ev.n_jobs, jobs_reference=ev_ref.n_jobs)
                boots.append(b)
            ratio_rows.append(rec)
    ratios = pd.DataFrame(ratio_rows)
    fam = family_level(ratios["p_decision"].to_numpy(dtype=float) if "p_decision" in ratios else np.array([]),
                       alpha, adjust)
    lo, hi, lvl, verdicts = [], [], [], []
    for rec, b in zip(ratio_rows, boots):
        res = math.log1p(rec["resolution"])
        if b is None:
            ok = rec["method"] == "exact"
            r = math.log(rec["ratio"]) if ok and rec["ratio"] > 0 else math.nan
            lo.append(r - res), hi.append(r + res), lvl.append(1.0 if ok else math.nan)
            verdicts.append(RATIO_VERDICTS[verdict_of(r - res, r + res, band)] if ok else "n/a")
            continue
        l, h = percentile_interval(b, fam.gamma, res)
        lo.append(l), hi.append(h), lvl.append(fam.level)
        verdicts.append(RATIO_VERDICTS[verdict_of(l, h, band)])
    if len(ratios):
        ratios["ci_low"], ratios["ci_high"] = np.exp(lo), np.exp(hi)
        ratios["ci_level"], ratios["verdict"] = lvl, verdicts
        ratios["machine_effect"] = ratios["verdict"].isin(["larger", "smaller"])
        # a ratio between arms of different layout designs is not a machine effect: the layout is a cause too
        design_of = {a.name: layout_design(a.member) for a in arms}
        ratios["layout_design"] = [f"{design_of[x]} vs {design_of[y]}" if design_of[x] != design_of[y] else design_of[x]
                                   for x, y in zip(ratios["arm"], ratios["reference"])]
        differs = np.array([design_of[x] != design_of[y] for x, y in zip(ratios["arm"], ratios["reference"])])
        ratios["cause"] = np.where(ratios["machine_effect"] & differs, "machine or layout design",
                                   np.where(ratios["machine_effect"], "machine", ""))
        ratios["machine_effect"] = ratios["machine_effect"] & ~differs
    decomposition = pd.concat([_decomposition(a, spec.subset) for a in arms], ignore_index=True)
    ranking = rank_ops(ratios, band) if len(ratios) else pd.DataFrame()
    mechanism = mechanism_evidence(arms, ratios)
    machines_notes = same_microarchitecture(machines)
    designs = {a.member.label: layout_design(a.member) for a in arms}
    if len(set(designs.values())) > 1:
        n = int((ratios["cause"] == "machine or layout design").sum()) if len(ratios) else 0
        notes.append("layout designs differ (" + "; ".join(f"{k}: {v}" for k, v in designs.items()) + "): a fixed "
                     "layout repeats one placement in every job, and another number of copies per job weighs the "
                     f"layouts otherwise, so {n} ratio(s) between such arms are named `machine or layout design` "
                     "(cause), not machine effects")
    summary = {
        "schema_version": CAMPAIGN_SCHEMA_VERSION, "kind": "campaign",
        "generated": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "studies": [{"label": m.label, "directory": str(m.directory)} for m in members],
        "arms": [a.name for a in arms], "reference": reference.name, "subset": spec.subset,
        "differences": notes, "same_microarchitecture": machines_notes,
        "alpha": alpha, "threshold": threshold, "n_boot": n_boot, "seed": seed, "family": fam.to_dict(),
        "chain": ref.summary.get("chain"), "families": ref.summary.get("families"),
        "counts": {"comparisons": len(keys), "ratios": int(len(ratios)),
                   "machine_effects": int(ratios["machine_effect"].sum()) if len(ratios) else 0},
        "methods": methods_text(fam, threshold, n_boot, reference.name),
    }
    return {"machines": machines, "speedups": speedups, "ratios": ratios, "decomposition": decomposition,
            "ranking": ranking, "mechanism": mechanism, "summary": summary}


def check_consistent(speedups: pd.DataFrame, members: list[Member]) -> None:
    """Refuse (one line) a study whose spins.parquet does not give its own comparisons: its results/
    are not one analysis (edited, or files of two analyses mixed), and no ratio or verdict may come
    from evidence that disagrees with the speedup printed beside it."""
    bad = speedups[speedups["note"] != ""] if len(speedups) else speedups
    if not len(bad):
        return
    r = bad.iloc[0]
    m = next(x for x in members if x.label == r["study"])
    n = int((bad["study"] == r["study"]).sum())
    raise PqsimdError(
        f"{m.label} ({m.directory}): its results/spins.parquet disagrees with its own comparisons in {n} row"
        f"{'s' if n != 1 else ''} (e.g. {r['scheme']} {r['op']} {r['baseline']} -> {r['variant']} "
        f"under {r['compiler']}: {r['note']}), so its results are not one analysis; re-run "
        f"{command('analyze', m.directory)} where its raw/ is, or leave it out of the campaign")


def _decomposition(arm: Arm, subset: dict[str, list[str]]) -> pd.DataFrame:
    d = arm.member.study.decomposition.copy()
    if d.empty:
        return d
    d = d[d["compiler"].astype(str) == arm.compiler]
    for what, col in (("schemes", "scheme"), ("ops", "op")):
        if subset.get(what):
            d = d[d[col].astype(str).isin(subset[what])]
    return d.assign(arm=arm.name, study=arm.member.label)


def rank_ops(ratios: pd.DataFrame, band: float) -> pd.DataFrame:
    """Ops by how machine-sensitive their speedup is: per (metric, stage, baseline, variant, op), the
    largest |log ratio| over the other arms in each scheme, its median over schemes (as a factor),
    and how many (scheme, arm) ratios have a machine effect."""
    r = ratios[np.isfinite(ratios["ratio"].astype(float))].copy()
    r["abs_log"] = np.abs(np.log(r["ratio"].astype(float)))
    per_scheme = r.groupby(["metric", "stage", "baseline", "variant", "op", "scheme"], sort=False).agg(
        worst=("abs_log", "max"), effects=("machine_effect", "sum"), n=("machine_effect", "size")).reset_index()
    out = per_scheme.groupby(["metric", "stage", "baseline", "variant", "op"], sort=False).agg(
        sensitivity=("worst", "median"), machine_effects=("effects", "sum"), ratios=("n", "sum")).reset_index()
    out["sensitivity"] = np.exp(out["sensitivity"])
    out = out.sort_values(["metric", "stage", "sensitivity"], ascending=[True, True, False], kind="stable")
    out["rank"] = out.groupby(["metric", "stage", "baseline", "variant"], sort=False).cumcount() + 1
    return out.reset_index(drop=True)


MECHANISM_COLUMNS = ["scheme", "op", "baseline", "variant", "arm", "study", "class", "class_label", "base_count",
                     "var_count", "ratio", "share_of_difference"]
TOP_CLASSES = 3


def mechanism_evidence(arms: list[Arm], ratios: pd.DataFrame) -> pd.DataFrame:
    """For the comparisons with a machine effect, each study's instruction-mix evidence where it has
    one (`--metric mix`: results/mix_ratios): the classes that make most of the instruction
    difference between baseline and variant. Counts are the same on every machine of one ISA and
    compiler; beside a machine effect they say which instructions the machines may run at
    different costs (e.g. BMI2 pdep/pext, microcoded on Zen 1/2)."""
    from ..results import read_table

    out = []
    effects = ratios[ratios["machine_effect"]] if len(ratios) and "machine_effect" in ratios else ratios.iloc[0:0]
    wanted = set(zip(effects.get("scheme", []), effects.get("op", []), effects.get("baseline", []),
                     effects.get("variant", [])))
    for a in arms:
        mr = read_table(a.member.directory, "mix_ratios", strict=False)
        if mr.empty or not wanted:
            continue
        mr = mr[(mr["compiler"].astype(str) == a.compiler) & (mr["class"].astype(str) != "total")]
        for (scheme, op, base, var), d in mr.groupby(["scheme", "op", "baseline", "variant"], sort=False):
            if (scheme, op, base, var) not in wanted:
                continue
            d = d.assign(_w=d["share_of_difference"].astype(float).abs()).sort_values("_w", ascending=False)
            for _, r in d.head(TOP_CLASSES).iterrows():
                out.append({"scheme": scheme, "op": op, "baseline": base, "variant": var, "arm": a.name,
                            "study": a.member.label} | {c: r[c] for c in MECHANISM_COLUMNS[6:]})
    return pd.DataFrame(out, columns=MECHANISM_COLUMNS)


def methods_text(fam, threshold: float, n_boot: int, reference: str) -> list[str]:
    return [
        "Each study's speedup and interval are that study's own comparisons row (its estimand and method, "
        "at its own family level).",
        f"Ratio of speedups = speedup on the arm / speedup on {reference}, the same estimand rebuilt from each "
        "study's spins.parquet (paired: the median over jobs of the job ratio; separate: the ratio of geometric "
        "means of job medians). Interval: percentile bootstrap of the log ratio, "
        f"{n_boot} resamples of each study's jobs, independently per machine (arms of one study together), "
        "each end moved out by both arms' clock resolution (their rows' resolution: no interval is narrower "
        "than the clocks resolve).",
        f"Printed at {100 * fam.level:.4g}%: Benjamini-Hochberg at alpha = {fam.alpha} over the {fam.m} ratios "
        f"with an interval selects {fam.selected}; the verdict is read off the interval against "
        f"±{100 * threshold:g}%: larger/smaller (the machine changes the speedup), same, or ~ (undecided).",
        "Coverage and false alarms of this interval: bench/bench_campaign.py (BENCHMARKS.md).",
        "Speedups are compared across machines, never absolute times (their TSC rates differ).",
    ]


def write_campaign(out: Path, spec: Spec, tables: dict) -> Path:
    results = out / "results"
    atomic_write_bytes(out / CAMPAIGN_FILE, spec.to_toml(out).encode())
    for name in ("machines", "speedups", "ratios", "decomposition", "ranking", "mechanism"):
        write_table(tables[name], results, name)
    write_json(tables["summary"], results / SUMMARY_FILE)
    return results


def run_campaign(out: Path, studies: list[Path], subset: dict[str, list[str] | None], labels: list[str] | None = None,
                 n_boot: int = DEFAULT_BOOT, seed: int = DEFAULT_SEED) -> Path:
    out = Path(out)
    spec = read_spec(out, studies, subset, labels)
    if out.resolve() in [s.resolve() for s in spec.studies]:
        raise PqsimdError(f"{out} is one of the studies; give the campaign its own directory")
    if (out / "manifest.json").exists():
        raise PqsimdError(f"{out} is a study directory; give the campaign its own directory")
    tables = build_campaign(spec, n_boot=n_boot, seed=seed)
    return write_campaign(out, spec, tables)


def is_campaign(directory: Path) -> bool:
    return (Path(directory) / "results" / SUMMARY_FILE).is_file()
