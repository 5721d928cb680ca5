"""Reading DIR/raw/*.parquet into spin medians, with the jobs' provenance.

The analysis unit is the spin median: the median of `per_call` over the reps of one
(metric, scheme, variant, op, job, spin). Warmup rows are dropped here and never reach the statistics.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from ..errors import PqsimdError, command
from ..ids import build_id
from ..model import RECORDED_DESIGN
from ..stats.lattice import lattice_step
from ..run import cpuclaim
from ..analysis_settings import read_study_toml
from .parallel import parallel_map
from .mix import MIX_FILE_SUFFIX
from .ct import is_ct_file
from .hazards import is_hazards_file
from .sim import is_sim_file
from ..studydir import StudyDir
from .. import store
from .. import metrics as metrics_mod

KEY_COLUMNS = ("metric", "scheme", "variant", "compiler", "op", "job")
NEEDED = (*KEY_COLUMNS, "job_index", "spin", "pos", "per_call", "warmup", "batch", "layout", "raw")
# older raw shapes (no compiler, pos or layout column) are upgraded by the one raw loader, store.read_raw;
# raw: the sample's clock reading, whose lattice checks the calibrated step (lattice.py)


@dataclass
class SpinData:
    """Spin medians of a study (one row per metric, scheme, variant, op, job, spin) and its jobs."""

    spins: pd.DataFrame  # metric scheme variant compiler op job (categorical) job_index spin pos value n_reps
    jobs: pd.DataFrame  # job file variant scheme hostname cpu_model design
    files: int
    warnings: list[str] = field(default_factory=list)
    calibrations: list[dict] = field(default_factory=list)  # each timing job's driver calibration


def _spin_medians(key: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per distinct key: (first row index in sorted order, median of values, count), keys ascending."""
    if key.size > 1 and np.all(key[1:] >= key[:-1]):
        order = None  # already grouped (the harness writes op-, spin-, rep-major)
        sk = key
    else:
        order = np.argsort(key, kind="stable")
        sk = key[order]
    starts = np.flatnonzero(np.r_[True, sk[1:] != sk[:-1]])
    counts = np.diff(np.r_[starts, sk.size])
    sv = values if order is None else values[order]
    if counts.size and np.all(counts == counts[0]):
        r = int(counts[0])
        rows = np.sort(sv.reshape(-1, r), axis=1)  # short rows: a sort beats np.median's partition
        med = (rows[:, (r - 1) // 2] + rows[:, r // 2]) * 0.5
    else:
        # sort values within each key, then take the middle one or two by index arithmetic
        o2 = np.lexsort((sv, sk))
        sv2 = sv[o2]
        med = 0.5 * (sv2[starts + (counts - 1) // 2] + sv2[starts + counts // 2])
    first = starts if order is None else order[starts]
    return first, med, counts


def _read_one(path: Path, directory: Path) -> tuple[dict, dict | None]:
    try:
        table, job_meta = store.read_raw(path, list(NEEDED), dictionary=KEY_COLUMNS)
    except KeyError as e:
        raise PqsimdError(
            f"{path}: not a pqsimd raw file (missing column(s) {e.args[0]}); "
            f"remove it from {path.parent} or redo the job with `pqsimd run {directory}`"
        ) from None
    except (pa.ArrowException, OSError, ValueError) as e:
        raise store.unreadable_raw(path, directory, str(e).splitlines()[0][:120] if str(e) else type(e).__name__) from None
    warm = table.column("warmup").to_numpy(zero_copy_only=False)
    spin = table.column("spin").to_numpy(zero_copy_only=False).astype(np.int64)
    per_call = table.column("per_call").to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
    finite = np.isfinite(per_call)
    keep = ~(np.asarray(warm, dtype=bool) | (spin < 0)) & finite
    dropped_bad = int(per_call.size - np.count_nonzero(finite))
    codes, dicts = [], []
    for c in KEY_COLUMNS:
        col = table.column(c)
        if col.null_count:
            raise PqsimdError(
                f"{path}: column '{c}' has {col.null_count} missing values; the file is not a valid pqsimd raw "
                f"file: delete it and run `pqsimd run {directory}` again to redo that job"
            )
        arr = col.chunk(0) if col.num_chunks else pa.array([], pa.dictionary(pa.int32(), pa.string()))
        if not pa.types.is_dictionary(arr.type):
            arr = arr.dictionary_encode()
        codes.append(arr.indices.to_numpy(zero_copy_only=False))
        dicts.append(arr.dictionary.to_pylist())
    lattice = _sample_lattice(table)
    if not keep.any():
        return {"n": 0, "dropped_bad": dropped_bad, "lattice": lattice}, job_meta
    dims = [max(len(d), 1) for d in dicts]
    gkey = np.ravel_multi_index(codes, dims)[keep]
    job_index = table.column("job_index").to_numpy(zero_copy_only=False)[keep]
    spin, per_call = spin[keep], per_call[keep]
    span = int(spin.max()) + 1
    key = gkey * span + spin
    first, med, counts = _spin_medians(key, per_call)
    first_codes = np.unravel_index(gkey[first], dims)
    out = {c: (dicts[i], first_codes[i]) for i, c in enumerate(KEY_COLUMNS)}
    pos = table.column("pos").to_numpy(zero_copy_only=False)[keep]
    # calls per sample (constant within a job's op and build): sample length = value x batch
    batch = table.column("batch").to_numpy(zero_copy_only=False)[keep][first].astype(np.int64)
    # the laid-out copy each spin timed (run/layouts.py: one copy per build and spin); -1: fixed layout
    lay = table.column("layout").to_numpy(zero_copy_only=False)[keep][first]
    lay = np.where(pd.isna(lay), -1, lay).astype(np.int16)
    out.update(job_index=job_index[first], spin=spin[first], pos=pos[first].astype(np.int16), layout=lay, value=med,
               n_reps=counts,
               batch=batch,
               n=len(first), dropped_bad=dropped_bad, lattice=lattice)
    return out, job_meta


def _sample_lattice(table: pa.Table) -> int | None:
    """The lattice of the file's clock readings (ticks samples, warm-up included): the step the
    samples themselves resolve; None without readings (an exact count, an old file) or evidence."""
    if table.column("raw").null_count == table.num_rows:
        return None
    metric = table.column("metric").chunk(0) if table.column("metric").num_chunks else None
    if metric is None:
        return None
    if pa.types.is_dictionary(metric.type):
        ticks = np.asarray(metric.dictionary.to_pylist(), dtype=object)[metric.indices.to_numpy(zero_copy_only=False)]
    else:
        ticks = np.asarray(metric.to_pylist(), dtype=object)
    raw = table.column("raw").to_numpy(zero_copy_only=False)
    return lattice_step(raw[ticks == metrics_mod.TIME])


def _steps(calibration, lattice: int | None) -> dict:
    """A job's clock step: what its calibration measured (`step_calibrated`; `granularity` in older
    files), what its samples lie on (`step_data`), and the one its resolution uses (`step`): the
    data's lattice wherever it could be told, else the calibration's."""
    cal = calibration if isinstance(calibration, dict) else {}
    measured = next((float(cal[k]) for k in ("step", "granularity")
                     if isinstance(cal.get(k), (int, float)) and not isinstance(cal.get(k), bool) and cal[k] > 0),
                    float("nan"))
    data = float(lattice) if lattice else float("nan")
    # a clock slower than its reads whose updates share no divisor has no lattice to check: its step
    # is its typical update (driver/timer.c, step_from "unfenced")
    used = data if np.isfinite(data) and cal.get("step_from") != "unfenced" else measured
    timer = cal.get("timer") if isinstance(cal.get("timer"), dict) else {}
    quantum = cal.get("timer_quantum") if isinstance(cal.get("timer_quantum"), int) else 0
    return {"step_calibrated": measured, "step_data": data, "step": used, "granularity": used,
            "timer": str(timer.get("name") or "tsc"), "timer_quantum": quantum}


def step_disagreements(jobs: pd.DataFrame) -> str | None:
    """One line naming the jobs whose calibration and samples disagree on the clock's step."""
    if "step_data" not in jobs.columns or not len(jobs):
        return None
    cal, data = jobs["step_calibrated"].to_numpy(dtype=float), jobs["step_data"].to_numpy(dtype=float)
    bad = np.isfinite(cal) & np.isfinite(data) & (cal != data) & (jobs["step"].to_numpy(dtype=float) == data)
    if not bad.any():
        return None
    pairs = sorted({(int(c), int(d)) for c, d in zip(cal[bad], data[bad])})
    names = jobs["job"][bad].astype(str).tolist()
    said = ", ".join(f"calibrated {c} but samples on a lattice of {d}" for c, d in pairs)
    return (f"clock step: {len(names)} job(s) disagree with their calibration ({said}): the samples' lattice is "
            f"used for their resolution ({', '.join(names[:4])}{' ...' if len(names) > 4 else ''})")


def _categorical(parts: list[dict], col: str) -> pd.Categorical:
    """Concatenate per-file (dictionary, codes) pairs into one Categorical without per-row strings."""
    cats: dict[str, int] = {}
    mapped = []
    for p in parts:
        d, codes = p[col]
        lut = np.array([cats.setdefault(x, len(cats)) for x in d], dtype=np.int64)
        mapped.append(lut[codes] if lut.size else codes)
    return pd.Categorical.from_codes(np.concatenate(mapped), categories=list(cats))


def _planned_jobs(directory: Path) -> list[str] | None:
    """The timing jobs of the plan, if the study times anything (an instructions-only study doesn't)."""
    path = StudyDir(directory).plan_json
    if not path.exists():
        return None
    metrics = read_study_toml(directory).get("study", {}).get("metrics", [metrics_mod.DEFAULT])
    if not {"ticks", "counters"} & set(metrics):
        return None
    try:
        plan = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    jobs = plan.get("jobs") if isinstance(plan, dict) else plan
    if not isinstance(jobs, list):
        return None
    ids = [j.get("id") if isinstance(j, dict) else j for j in jobs]
    return [i for i in ids if isinstance(i, str)] or None


def is_counts_file(name: str) -> bool:
    """A raw file its own step reads, never as spins: --metric mix (analyze/mix.py), sim (analyze/sim.py),
    ct (analyze/ct.py), hazards (analyze/hazards.py). A study whose raw files are all such counted only."""
    return name.endswith(MIX_FILE_SUFFIX) or is_sim_file(name) or is_ct_file(name) or is_hazards_file(name)


def load_spins(directory: Path, pool_cpu_models: bool = False) -> SpinData:
    """All raw files of DIR/raw as spin medians; a one-line PqsimdError for anything unreadable."""
    raw = StudyDir(directory).raw_dir
    files = sorted(raw.glob("*.parquet")) if raw.is_dir() else []
    files = [f for f in files if not is_counts_file(f.name)]
    if not files:
        if StudyDir(directory).results("summary.json").is_file():  # results mailed in without raw/: read, not redone
            raise PqsimdError(f"no raw data in {raw}, so {directory} cannot be analysed again; its results are read as "
                              f"they were analysed: {command('show', directory)}, {command('report', directory)}")
        raise PqsimdError(f"no raw data in {raw} (no *.parquet); run {command('run', directory)} first")
    parts, job_rows, warnings, calibrations = [], [], [], []
    dropped_bad = 0
    read = parallel_map(lambda f: _read_one(f, directory), files)
    for path, (part, meta) in zip(files, read):
        dropped_bad += part.pop("dropped_bad")
        if part["n"] == 0:
            warnings.append(f"{path.name}: no measurement rows after dropping warmup; ignored")
            continue
        parts.append(part)
        meta = meta or {}
        if meta.get("metric", metrics_mod.TIME) == metrics_mod.TIME and isinstance(meta.get("calibration"), dict):
            calibrations.append(meta["calibration"])
        d, codes = part["job"]
        for job in sorted({d[i] for i in np.unique(codes)}):
            variant = part["variant"][0][part["variant"][1][0]]
            scheme = part["scheme"][0][part["scheme"][1][0]]
            job_rows.append(
                {
                    "job": job,
                    "file": path.name,
                    "variant": str(meta.get("variant", variant)),
                    "scheme": str(meta.get("scheme", scheme)),
                    "hostname": str(meta.get("hostname") or "unknown"),
                    "cpu_model": str(meta.get("cpu_model") or "unknown"),
                    "design": str(meta.get("design") or RECORDED_DESIGN),  # a record: upgraded by store.read_raw
                    "metric_kind": str(meta.get("metric") or metrics_mod.TIME),
                    "settings": json.dumps(meta.get("settings"), sort_keys=True) if meta.get("settings") else "",
                    "has_metadata": bool(meta),
                    **{k: float((meta.get("calibration") or {}).get(k) or "nan")
                       if isinstance(meta.get("calibration"), dict) else float("nan")
                       for k in ("overhead", "call_overhead")},
                    **_steps(meta.get("calibration"), part["lattice"]),
                    **cpu_share_columns(meta),
                }
            )
    if not parts:
        raise PqsimdError(f"{raw}: the raw files hold no measurement rows (only warmup); run `pqsimd run {directory}`")
    if dropped_bad:
        warnings.append(f"{dropped_bad} samples with a non-finite per_call were ignored")
    spins = pd.DataFrame({c: _categorical(parts, c) for c in KEY_COLUMNS})
    for c in ("job_index", "spin", "pos", "layout", "value", "n_reps", "batch"):
        spins[c] = np.concatenate([p[c] for p in parts])
    jobs = pd.DataFrame(job_rows)
    disagree = step_disagreements(jobs)
    if disagree:
        warnings.append(disagree)
    no_meta = int((~jobs["has_metadata"]).sum())
    if no_meta:
        warnings.append(f"{no_meta} raw file(s) lack the pqsimd.job metadata: their CPU model is unknown")
    seen: dict[str, str] = {}
    for row in job_rows:  # a job's rows are grouped within a file, so a job in two files is the only duplicate
        if row["job"] in seen and seen[row["job"]] != row["file"]:
            raise PqsimdError(
                f"{raw}: job {row['job']} appears in both {seen[row['job']]} and {row['file']}; "
                f"remove the stale copy and re-run `pqsimd analyze {directory}`"
            )
        seen[row["job"]] = row["file"]
    check_settings(jobs, directory)  # a foreign file is named as such before its sizing is compared
    check_sizing({path.name: meta for path, (_, meta) in zip(files, read)}, raw)
    check_identity({path.name: meta for path, (_, meta) in zip(files, read)}, raw)
    planned = _planned_jobs(directory)
    if planned:
        missing = sorted(set(planned) - set(jobs["job"]))
        if missing:
            warnings.append(
                f"{len(missing)} of {len(planned)} planned jobs have no raw file (e.g. {missing[0]}); "
                f"the study is incomplete: `pqsimd run {directory}` continues it"
            )
    check_cpu_models(jobs, directory, pool_cpu_models, warnings)
    return SpinData(spins=spins, jobs=jobs, files=len(files), warnings=warnings, calibrations=calibrations)


def cpu_share_columns(meta: dict) -> dict:
    """shared_cpu, cpu_waited_fraction of a job record: how much of its time the driver waited for its
    CPU (`cpu_share`, run/job.py) and whether that is sharing (`shared`, true for a job kept by
    `--shared-cpu keep`; a record from before it says so by run/cpuclaim.py's rule)."""
    share = meta.get("cpu_share") if isinstance(meta.get("cpu_share"), dict) else {}
    try:
        frac = float(share.get("waited_fraction", math.nan))
        waited = float(share.get("waited_seconds", 0.0))
    except (TypeError, ValueError):
        frac, waited = math.nan, 0.0
    shared = share.get("shared")
    if not isinstance(shared, bool):
        shared = bool(frac > cpuclaim.SHARED_FRACTION and waited >= cpuclaim.SHARED_MIN_SECONDS)
    return {"shared_cpu": shared, "cpu_waited_fraction": frac}


def check_settings(jobs: pd.DataFrame, directory: Path) -> None:
    """Every timing raw file must have been measured with the settings the plan fixed (and be a
    job of the plan): a file from another study, or from before a hand edit, is refused by name."""
    path = StudyDir(directory).plan_json
    if not path.exists():
        return
    try:
        plan = json.loads(path.read_text())
    except (OSError, ValueError):
        raise PqsimdError(f"{path} is unreadable; restore it (it fixes the study's settings)") from None
    if not isinstance(plan, dict) or "settings" not in plan:
        return  # a study from before settings were fixed in the plan
    want = json.dumps(plan["settings"], sort_keys=True)
    planned = {j.get("id") for j in plan.get("jobs", []) if isinstance(j, dict)}
    timing = jobs[jobs["metric_kind"] == metrics_mod.TIME]
    foreign = sorted(set(timing.loc[~timing["job"].isin(planned), "file"]))
    if foreign:
        raise PqsimdError(f"{directory / 'raw'}: {', '.join(foreign[:3])}{' ...' if len(foreign) > 3 else ''} "
                          f"{'is not a job' if len(foreign) == 1 else 'are not jobs'} of this study's plan; move "
                          f"{'it' if len(foreign) == 1 else 'them'} out of raw/ (nothing is pooled across studies)")
    other = sorted(set(timing.loc[(timing["settings"] != "") & (timing["settings"] != want), "file"]))
    if other:
        a = json.loads(timing.loc[timing["file"] == other[0], "settings"].iloc[0])
        diff = next((k for k in plan["settings"] if plan["settings"].get(k) != a.get(k)), "?")
        raise PqsimdError(f"{directory / 'raw'}: {', '.join(other[:3])}{' ...' if len(other) > 3 else ''} were measured "
                          f"with {diff}={a.get(diff)!r}, not the plan's {plan['settings'].get(diff)!r}; move them out "
                          f"of raw/ or restore the study (settings are never mixed)")


def not_timed_variants(directory: Path) -> dict[str, str]:
    """Variants none of whose builds is timed, and why (from the manifest: every build failed its
    gate, was skipped, or was excluded after crashing or hanging)."""
    m = StudyDir(directory).read_manifest()
    builds = m.get("builds") if isinstance(m.get("builds"), dict) else {}
    excluded = {x.get("build") for x in m.get("excluded") or [] if isinstance(x, dict)}
    why: dict[str, list[str]] = defaultdict(list)
    for bid, b in builds.items():
        if not isinstance(b, dict) or "variant" not in b:
            continue
        if b.get("skipped"):
            why[b["variant"]].append(f"skipped ({b['skipped']})")
        elif not b.get("passed_schemes"):
            why[b["variant"]].append(f"{b.get('compiler', '?')} build failed its gate")
        elif bid in excluded:
            why[b["variant"]].append(f"{b.get('compiler', '?')} build excluded (it crashed or hung)")
        else:
            why[b["variant"]].append("")
    return {v: "; ".join(r) for v, r in why.items() if all(r)}


def drop_failed_builds(data: SpinData, directory: Path) -> list[str]:
    """Leave out the numbers of a build that its latest gate (the manifest's builds) does not pass for
    that parameter set: it was timed in an earlier run and fails now (sources, compiler or the gate
    changed), so its old numbers are not what the study now vouches for. One warning per build."""
    builds = StudyDir(directory).read_manifest().get("builds")
    if not isinstance(builds, dict) or data.spins.empty:
        return []
    family = {s: b.get("family") for b in builds.values() if isinstance(b, dict)  # the schemes each family's gate saw
              for s in [*(b.get("passed_schemes") or []), *(x.get("scheme") for x in b.get("checks") or [] if isinstance(x, dict))]}
    keys = data.spins[["variant", "compiler", "scheme"]].drop_duplicates()
    drop, warnings = [], []
    for v, c, s in keys.itertuples(index=False):
        b = builds.get(build_id(str(v), str(c), family[str(s)])) if family.get(str(s)) else None
        if not isinstance(b, dict) or str(s) in (b.get("passed_schemes") or []):
            continue
        why = b.get("skipped") or next((f"{x.get('check')} {x.get('scheme')}: {x.get('detail')}" for x in b.get("checks") or []
                                        if isinstance(x, dict) and not x.get("passed")), "it did not pass")
        drop.append((v, c, s))
        warnings.append(f"build {v} ({c}) of {s} does not pass its gate now ({why}): the numbers of its earlier jobs "
                        f"are left out")
    if drop:
        sp = data.spins
        gone = pd.MultiIndex.from_frame(sp[["variant", "compiler", "scheme"]].astype(str)).isin(
            [tuple(map(str, k)) for k in drop])
        sp = sp[~gone].copy()
        for col in KEY_COLUMNS:
            if isinstance(sp[col].dtype, pd.CategoricalDtype):
                sp[col] = sp[col].cat.remove_unused_categories()
        data.spins = sp
        if sp.empty:
            raise PqsimdError(f"{directory}: no build whose jobs are in raw/ passes its gate now ({warnings[0]}); "
                              f"nothing is analysed: fix the build and `pqsimd run {directory}` again")
    return warnings


def check_sizing(records: dict[str, dict | None], raw: Path) -> None:
    """Every job of a group must have been timed with the same spins, reps, warm-up and calls per
    sample (each job records its sizing): a hand-edited or re-probed sizing.json would pool
    samples of different lengths and counts into one group."""
    seen: dict[tuple[str, str, str], tuple[str, tuple]] = {}
    for name, rec in sorted(records.items()):
        sizing = (rec or {}).get("sizing")
        if not isinstance(sizing, dict):
            continue
        for op, o in sizing.items():
            if not isinstance(o, dict):
                continue
            for build in rec.get("builds") or []:
                batch = (o.get("batch") or {}).get(build) if isinstance(o.get("batch"), dict) else None
                value = (o.get("spins"), o.get("reps"), o.get("warmup"), bool(o.get("nowarm")), batch)
                key = (str(rec.get("scheme")), op, build)
                first = seen.setdefault(key, (name, value))
                if first[1] != value:
                    fields = ("spins", "reps", "warmup", "nowarm", "batch")
                    diff = ", ".join(f"{f} {a} vs {b}" for f, a, b in zip(fields, first[1], value) if a != b)
                    raise PqsimdError(f"{raw}: {first[0]} and {name} timed {op} of {build} with different sizing "
                                      f"({diff}); a group's jobs are never pooled across sizes: move the jobs of one "
                                      f"sizing out of raw/ (or restore sizing.json and re-run them)")


def check_identity(records: dict[str, dict | None], raw: Path) -> None:
    """Jobs are pooled only when they ran the same code: one driver (its sha256) for every job, and
    for each build one shared object (the job records' binaries; not a build made on each SLURM node). A
    driver or a compiler changed between runs would otherwise mix two measurements in one group."""
    def first_clash(field_of) -> tuple[str, str, str] | None:
        seen: dict[str, tuple[str, str]] = {}
        for name, rec in sorted(records.items()):
            for key, sha in field_of(rec or {}):
                if sha is None:
                    continue
                first = seen.setdefault(key, (name, sha))
                if first[1] != sha:
                    return key, first[0], name
        return None

    clash = first_clash(lambda r: [("driver", r["driver_sha256"])] if r.get("driver_sha256") else [])
    if clash:
        raise PqsimdError(f"{raw}: {clash[1]} and {clash[2]} were timed by different drivers (sha256 differs); jobs of "
                          f"two drivers are never pooled: move the jobs of one out of raw/")
    # a node-dependent build made on each SLURM node (built_on_node) differs by design from node to node
    clash = first_clash(lambda r: [(b, sha) for b, sha in (r.get("binaries") or {}).items()
                                   if b not in (r.get("built_on_node") or [])] if isinstance(r.get("binaries"), dict) else [])
    if clash:
        raise PqsimdError(f"{raw}: {clash[1]} and {clash[2]} timed different binaries of build {clash[0]} (compiler or "
                          f"sources changed between them); they are never pooled: move the jobs of one out of raw/")


def check_cpu_models(jobs: pd.DataFrame, directory: Path, pool: bool, warnings: list[str]) -> None:
    known = jobs[jobs["cpu_model"] != "unknown"]
    models = sorted(known["cpu_model"].unique())
    if len(models) <= 1:
        return
    parts = []
    for model in models:
        sub = known[known["cpu_model"] == model]
        hosts = sorted(sub["hostname"].unique())
        by_host = defaultdict(set)
        for h, v in zip(sub["hostname"], sub["variant"]):
            by_host[h].add(v)
        hs = ", ".join(f"{h}: {'/'.join(sorted(by_host[h]))}" for h in hosts[:4])
        more = f" +{len(hosts) - 4} more nodes" if len(hosts) > 4 else ""
        parts.append(f"'{model}' ({len(sub)} jobs; {hs}{more})")
    listing = "; ".join(parts)
    if pool:
        warnings.append(f"jobs ran on {len(models)} CPU models and were pooled (pool_cpu_models = true): {listing}")
        return
    raise PqsimdError(
        f"{directory}: jobs ran on {len(models)} CPU models, which must not be pooled: {listing}; "
        f"measure on one CPU model (e.g. a SLURM --constraint) or set [analysis] pool_cpu_models = true in study.toml"
    )
