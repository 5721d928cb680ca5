"""One timing job: the driver with the job's shared objects, pinned to one CPU; its samples become
one raw file (ticks, plus one metric per perf event when counters are open).

Both executors call this (local directly, SLURM via `pqsimd job DIR JOB`). The raw file appears
only when the job is complete (temp name + rename), with the job record in its metadata.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import zlib
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from .. import catalog, counters, machine, store
from .. import study as study_mod
from ..errors import PqsimdError, command, os_problem
from ..model import SharedCpu
from ..studydir import StudyDir
from . import child, cpuclaim, layouts, limits, loaded
from .plan import job_builds
from . import spec as spec_mod
from .. import metrics as metrics_mod

BASE_COLUMNS = ["op", "v", "spin", "rep", "pos", "batch", "raw", "null"]


def choose_cpu(study: study_mod.Study, notify: Callable[[str], None] | None = None, what: str = "the job",
               wait: bool = False) -> cpuclaim.Choice:
    """The CPU a timing job or probe runs on: the study's --cpu if this process may use it (a SLURM
    allocation may not), else the allowed CPU idle now; with `wait`, up to cpuclaim.IDLE_WAIT_S for
    one to become idle."""
    allowed = os.sched_getaffinity(0)
    fixed = study.cpu if study.cpu is not None and study.cpu in allowed else None
    if wait:
        return cpuclaim.wait_for_idle(allowed, fixed, notify=notify, what=what)
    return cpuclaim.choose(allowed, fixed)


def job_seed(study_seed: int, job_id: str) -> int:
    """The paired design's per-spin order: reproducible from the study seed and the job."""
    return (study_seed * 1_000_003 + zlib.crc32(job_id.encode())) % (1 << 63)


def expected_binaries(sd: StudyDir, study: study_mod.Study, job: dict, slurm: bool = False) -> dict[str, str | None]:
    """The sha256 of each shared object the job would be timed with now (None: built on the node
    by a SLURM task, so any binary counts)."""
    out: dict[str, str | None] = {}
    for bid, variant, _ in job_builds(sd, study, job):
        lib = sd.variant_path(bid)
        node_built = slurm and study.variant(variant).node_dependent
        out[bid] = None if node_built or not lib.exists() else store.sha256_file(lib)
    return out


def parse_samples(tsv: Path, job: dict, builds: list[tuple[str, str, str]], calibration: dict,
                  copies: int | None = None) -> tuple[pa.Table, int]:
    """Driver TSV → raw table(s): ticks rows, then one metric per open perf event. The driver's
    variant index is build × copies + copy (run/layouts.py); `layout` is the copy (null: fixed)."""
    c = calibration.get("counters") or {}
    events = list(c.get("events", [])) if c.get("available") else []
    n_copies = copies or 1
    names = BASE_COLUMNS + [f"ev{i}" for i in range(len(events))]
    types = {"op": pa.string(), "v": pa.int32(), "spin": pa.int32(), "rep": pa.int32(), "pos": pa.int16(),
             "batch": pa.int32(), "raw": pa.int64(), "null": pa.int64(),
             **{f"ev{i}": pa.string() for i in range(len(events))}}
    try:
        t = pacsv.read_csv(tsv, read_options=pacsv.ReadOptions(column_names=names, skip_rows=1),
                           parse_options=pacsv.ParseOptions(delimiter="\t"),
                           convert_options=pacsv.ConvertOptions(column_types=types))
    except (pa.ArrowInvalid, OSError) as e:
        raise PqsimdError(f"job {job['id']}: unreadable driver output ({str(e).splitlines()[0][:160]})") from None
    entry = t["v"].to_numpy()
    if entry.size and (entry.min() < 0 or entry.max() >= len(builds) * n_copies):
        raise PqsimdError(f"job {job['id']}: driver output names a variant index outside the job")
    v, copy = entry // n_copies, entry % n_copies
    variant = np.array([b[1] for b in builds], dtype=object)[v]
    compiler = np.array([b[2] for b in builds], dtype=object)[v]
    raw = t["raw"].to_numpy()
    batch = t["batch"].to_numpy()
    spin = t["spin"].to_numpy()
    null = t["null"].to_numpy()
    # the op's sample minus the same moment's sample of as many empty calls (driver/runner.c null_sample)
    per_call = (raw - null) / batch
    constants = {"scheme": job["scheme"], "job": job["id"], "job_index": job["index"]}
    rows = {"op": t["op"], "variant": variant, "compiler": compiler, "spin": t["spin"], "rep": t["rep"],
            "pos": t["pos"], "batch": t["batch"], "warmup": spin < 0}
    if copies is not None:  # laid out: which copy; fixed layouts leave the column null
        rows["layout"] = copy.astype(np.int16)
    tables = [store.raw_table({**rows, "raw": raw, "ticks": raw, "null_raw": null, "per_call": per_call},
                              {**constants, "metric": "ticks"})]
    overhead = [float(x) for x in c.get("overhead", [0] * len(events))]
    for i, (event, ov) in enumerate(zip(events, overhead)):
        col = t[f"ev{i}"].to_numpy(zero_copy_only=False)
        keep = col != "NA"  # the group was not on the PMU for the whole sample
        val = col[keep].astype(np.int64)
        sub = {k: (np.asarray(x)[keep] if not isinstance(x, pa.ChunkedArray) else x.to_numpy(zero_copy_only=False)[keep])
               for k, x in rows.items()}
        tables.append(store.raw_table({**sub, "raw": val, "per_call": (val - ov) / batch[keep]},
                                      {**constants, "metric": counters.metric_name(event)}))
    return pa.concat_tables(tables), t.num_rows


def build_here(sd: StudyDir, study: study_mod.Study, job: dict, variant: str, compiler: str) -> Path:
    """Build (cached) and gate a node-dependent variant on this node; returns its shared object."""
    from .. import sources, verify
    from ..build import build_driver, build_variant, find_compiler

    tree = sources.locate(Path(study.source) if study.source else None, study.sources)
    fam = catalog.family_of(job["scheme"])
    driver = build_driver()
    spec = next(c for c in study.cc if c.split("=", 1)[0] == compiler or Path(c).name == compiler)
    subset = [s for s in study.schemes if s in fam.schemes] if variant in study.ablation_cells() else None
    b = build_variant(tree, fam, study.variant(variant), find_compiler(spec), driver, schemes=subset)
    g = verify.gate(tree, driver, [b], [job["scheme"]])[b.id]
    if not g.passed:
        bad = next(c for c in g.checks if not c.passed)
        raise PqsimdError(f"job {job['id']}: the build of {variant} on {socket.gethostname()} fails the gate "
                          f"({bad.check}: {bad.detail}); not timed")
    return b.library


def timed_binaries(builds: list[tuple[str, str, str]], files: loaded.Held, layout_record: dict | None) -> dict[str, str]:
    """build -> the sha256 of the build the job timed: of the file the driver loaded (held and checked,
    run/loaded.py) when it loaded the build itself, else (laid-out copies, each in the layout record)
    the gated build they were made from."""
    n = len(files.sha256) // max(1, len(builds))
    out = {}
    for i, (bid, _, _) in enumerate(builds):
        base = ((layout_record or {}).get("builds") or {}).get(bid, {}).get("base_sha256")
        out[bid] = base or files.sha256[i * n]
    return out


class BuildDied(PqsimdError):
    """A build crashed, or hung past the time limit, in a timing job or a probe: named by the
    driver's last line (driver/guard.h), so it can be left out and the rest timed."""

    def __init__(self, what: str, build: str, scheme: str, how: str, detail: str):
        super().__init__(f"{what}: build {build} {detail}")
        self.build, self.scheme, self.how, self.detail = build, scheme, how, detail


def death_of(what: str, stderr: str, builds: list[str], scheme: str, limit: dict | None) -> BuildDied | None:
    """The build to blame for a driver that died (None: it died outside any build)."""
    d = child.death(stderr)
    if d is None or d.variant is None or not 0 <= d.variant < len(builds):
        return None
    if d.how == "crashed":
        return BuildDied(what, builds[d.variant], scheme, "crashed", f"crashed ({d.signal}) in op {d.op}")
    if limit and limit.get("seconds"):
        return BuildDied(what, builds[d.variant], scheme, "hung",
                         f"did not finish op {d.op} within the time limit of {limit['seconds']:g} s ({limit['from']})")
    return None


def exclude(sd: StudyDir, e: BuildDied, job_id: str, notify: Callable[[str], None] | None) -> None:
    """Leave the build out of the study's later jobs and probes of the scheme (one line, as a gate
    failure), so the rest is timed."""
    lib = sd.variant_path(e.build)
    path = sd.exclude(e.build, e.scheme, {"how": e.how, "detail": e.detail, "job": job_id,
                                          "binary_sha256": store.sha256_file(lib) if lib.exists() else None,
                                          "when": datetime.now(timezone.utc).isoformat(timespec="seconds")})
    (notify or _stderr)(f"excluded {e.build} from {e.scheme}: it {e.detail} (job {job_id}); the rest is timed "
                        f"without it (delete {path} to try it again)")


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)


def build_ops(sd: StudyDir, build: str, scheme: str) -> dict[str, float] | None:
    """The ops a build has for a scheme, with one call's seconds (the gate's op check); None if unknown."""
    ops = ((sd.read_gate(build) or {}).get("ops") or {}).get(scheme)
    return ops if isinstance(ops, dict) else None


def run_job(directory: Path | StudyDir, job_id: str, progress: Callable[[int, int], None] | None = None,
            build_on_node: bool = False, study: study_mod.Study | None = None,
            notify: Callable[[str], None] | None = None) -> Path:
    """Run one job to completion and return its raw file; PqsimdError on failure. A build that
    crashes or hangs is excluded (one line through `notify`) and the job runs again without it.

    `study`: the run's resolved study (the local executor passes it, so a study.toml edited during
    the run changes nothing); a SLURM task loads it, and an edit is refused against the plan."""
    sd = directory if isinstance(directory, StudyDir) else StudyDir(directory)
    study = study or study_mod.load(sd)
    shared: list[cpuclaim.Share] = []
    while True:
        # discard: a job waits for an idle CPU before it runs (a shared one would be thrown away);
        # keep: it runs at once on the idlest
        choice = choose_cpu(study, notify, f"job {job_id}", wait=not keeps_shared(sd, study))
        try:
            return _run_once(sd, job_id, progress, build_on_node, study, notify, len(shared), choice)
        except BuildDied as e:
            exclude(sd, e, job_id, notify)
        except CpuWasShared as e:
            shared.append(e.share)
            worst = max(shared, key=lambda x: x.waited_fraction)
            if len(shared) >= cpuclaim.ATTEMPTS:
                raise PqsimdError(
                    f"job {job_id}: another program kept its CPU busy in each of {len(shared)} attempts "
                    f"({worst.waited()} at most; {choice.describe()}); nothing kept, the job stays "
                    f"pending: run {command('run', sd.path)} again when a CPU is free, or add --shared-cpu keep to "
                    f"keep such jobs, marked, with the verdicts shown with and without them") from None
            if notify:
                notify(f"job {job_id}: discarded and run again: CPU {e.cpu} was shared with another program "
                       f"({e.share.waited()})")


# adapt: per study (its absolute path), why this run keeps the jobs that share their CPU; set once the
# CPUs proved busy (the sizing probe and a job's attempt, or two attempts of one job), for the run
_ADAPTED: dict[str, str] = {}


def keeps_shared(sd: StudyDir, study: study_mod.Study) -> bool:
    """Whether a job that shares its CPU is kept now: keep, or adapt once the CPUs proved busy."""
    return study.shared_cpu == SharedCpu.KEEP or (study.shared_cpu == SharedCpu.ADAPT
                                                   and str(sd.path.absolute()) in _ADAPTED)


def probe_share(sd: StudyDir) -> float | None:
    """The largest share of its time a sizing probe of the study waited for its CPU, among the probes
    that shared it (sizing.json); None when none did."""
    shares = [float((s.get("probe_cpu_share") or {}).get("waited_fraction") or 0.0)
              for s in ((sd.read_sizing() or {}).get("schemes") or {}).values()
              if isinstance(s, dict) and (s.get("probe_cpu_share") or {}).get("shared")]
    return max(shares) if shares else None


def adapt_to_busy(sd: StudyDir, study: study_mod.Study, job_id: str, share: cpuclaim.Share, discarded: int,
                  notify: Callable[[str], None] | None) -> bool:
    """Under adapt: whether this shared attempt is the evidence that the CPUs stay busy (the sizing probe
    shared its CPU too, or an earlier attempt of this job did); if so the run keeps such jobs from now
    on, said once in one line with the command for a quiet rerun."""
    if study.shared_cpu != SharedCpu.ADAPT:
        return False
    key = str(sd.path.absolute())
    if key in _ADAPTED:
        return True
    probe = probe_share(sd)
    if probe is None and discarded < 1:
        return False
    why = (f"the sizing probe waited {probe:.0%} of its time for its CPU" if probe is not None
           else f"an earlier attempt of job {job_id} shared its CPU")
    _ADAPTED[key] = why
    if notify:
        quiet = sd.path.parent / f"{sd.path.name}-quiet"
        notify(f"the CPUs stay busy ({why}, job {job_id} {share.waited_fraction:.0%}): this run keeps the jobs that "
               f"share their CPU, marked, and the analysis gives every verdict and estimate with and without them; "
               f"for a quiet rerun on an idle machine: "
               f"{command('run', quiet, '--like', sd.path, '--shared-cpu', 'discard')}")
    return True


class CpuWasShared(Exception):
    """The job's driver waited for its CPU too long: its samples are not kept (cpuclaim)."""

    def __init__(self, cpu: int, share: cpuclaim.Share):
        super().__init__(f"CPU {cpu} shared")
        self.cpu, self.share = cpu, share


def _run_once(sd: StudyDir, job_id: str, progress: Callable[[int, int], None] | None, build_on_node: bool,
              study: study_mod.Study, notify: Callable[[str], None] | None, discarded: int,
              choice: cpuclaim.Choice) -> Path:
    plan = sd.read_plan() or {}
    job = sd.find_job(job_id)
    builds = job_builds(sd, study, job)
    if not builds:
        raise PqsimdError(f"job {job_id}: no build of its scheme passed the gate (or all were excluded); "
                          f"run {command('run', sd.path)}")
    node_built = {}
    for bid, variant, compiler in builds:
        if build_on_node and study.variant(variant).node_dependent:
            node_built[bid] = build_here(sd, study, job, variant, compiler)
        elif not sd.gated_library(bid).exists():  # the bytes that passed the gate, checked (one line if not)
            raise PqsimdError(f"job {job_id}: variant {sd.variant_path(bid)} is missing; run {command('run', sd.path)} "
                              f"to rebuild")
    libraries, stacks, layout_record = layouts.entries(sd, study, job_id, builds, node_built)
    copies = layout_record["copies_per_job"] if layout_record else None
    driver = sd.gated_driver()
    if not driver.exists():
        raise PqsimdError(f"job {job_id}: driver {driver} is missing; run {command('run', sd.path)} to rebuild")
    sizing = sd.read_sizing() if study.budget is not None else None
    events = list(counters.DEFAULT_EVENTS) if metrics_mod.COUNTERS in study.metrics else None
    ids_ = [b[0] for b in builds]
    op_seconds = [build_ops(sd, b, job["scheme"]) for b in ids_]
    timed = spec_mod.timed_ops(study, job["scheme"], op_seconds)
    # held open from this check of their bytes to the driver's exit: a file replaced while the job waits
    # for its CPU is not what the driver loads (run/loaded.py)
    with loaded.hold(libraries, gated_sha256(sd, builds, layout_record, node_built, len(libraries)), f"job {job_id}",
                     sd.path) as files:
        return _time(sd, job_id, job, plan, study, builds, ids_, files, stacks, layout_record, copies, node_built,
                     driver, choice, sizing, events, timed, op_seconds, progress, notify, discarded)


def gated_sha256(sd: StudyDir, builds: list[tuple[str, str, str]], layout_record: dict | None,
                 node_built: dict[str, Path], n_libraries: int) -> list[str | None]:
    """The sha256 each library the driver loads must have (layouts.entries' order): a laid-out copy
    its gated copy's, a build as linked its gate record's; None for a build made on this node."""
    out: list[str | None] = []
    for bid, _, _ in builds:
        if layout_record is not None:
            out += [None if bid in node_built else c.get("sha256") for c in layout_record["builds"][bid]["copies"]]
        else:
            out.append(None if bid in node_built else (sd.read_gate(bid) or {}).get("binary_sha256"))
    if len(out) != n_libraries:
        raise PqsimdError(f"{len(out)} gated binaries for {n_libraries} libraries")  # the layout record is damaged
    return out


def _time(sd: StudyDir, job_id: str, job: dict, plan: dict, study: study_mod.Study, builds: list[tuple[str, str, str]],
          ids_: list[str], files: loaded.Held, stacks: list[int] | None, layout_record: dict | None, copies: int | None,
          node_built: dict[str, Path], driver: Path, choice: cpuclaim.Choice, sizing: dict | None,
          events: list[str] | None, timed: dict, op_seconds: list, progress: Callable[[int, int], None] | None,
          notify: Callable[[str], None] | None, discarded: int) -> Path:
    cpu = choice.cpu
    seed = job_seed(study.seed, job_id)
    text = spec_mod.job_spec(study, job, ids_, files.driver_paths(), cpu, seed, sizing, events, timed, stacks)
    total = spec_mod.expected_samples(study, job, ids_, sizing, timed)
    limit = limits.job_limit(study, job["scheme"], ids_, timed, op_seconds, sizing)
    log = sd.log_path(job_id)
    started = datetime.now(timezone.utc).isoformat()
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        sd.raw_dir.mkdir(parents=True, exist_ok=True)
        sd.remove_stale_temporaries(job_id)
        fd, tmp = tempfile.mkstemp(prefix=f".{job_id}.", suffix=".tsv", dir=sd.raw_dir)
    except OSError as e:
        raise PqsimdError(f"job {job_id}: {os_problem(e)}") from None
    spec_file = Path(tmp).with_suffix(".spec")
    written = False
    cmd = [*child.launcher_of(study), str(driver), "run", str(spec_file)]
    share: cpuclaim.Share | None = None
    try:
        spec_file.write_text(text)
        timed_out = threading.Event()
        with os.fdopen(fd, "w") as out, open(log, "w") as err, \
                cpuclaim.claim(cpu, cpuclaim.holder_of(sd.path, f"job {job_id}"), notify) as held, cpuclaim.away_from(cpu), \
                child.spawned(cmd, stdout=subprocess.PIPE, stderr=err, text=True, bufsize=1 << 16,
                              pass_fds=files.pass_fds) as proc:
            priority_problem = cpuclaim.timing_priority(proc.pid)  # before it loads and calibrates

            at_expiry: list[cpuclaim.Share | None] = []

            def expire() -> None:
                at_expiry.append(cpuclaim.share_of(proc.pid))  # how much of the limit it had its CPU
                timed_out.set()
                child.stop(proc)

            watchdog = threading.Timer(limit["seconds"], expire) if limit["seconds"] else None
            if watchdog:
                watchdog.daemon = True
                watchdog.start()
            try:
                done = 0
                assert proc.stdout is not None
                for i, line in enumerate(proc.stdout):
                    out.write(line)
                    if i and progress and i % 512 == 0:
                        progress(i, total)
                    done = i
                share = cpuclaim.share_at_exit(proc)
                rc = proc.wait()
            finally:
                if watchdog:
                    watchdog.cancel()
        if rc != 0 and timed_out.is_set() and at_expiry and at_expiry[0] is not None \
                and limits.starved(limit, at_expiry[0].cpu_seconds, at_expiry[0].shared):
            # not hung: starved (an -O0 build was left out of a study on a machine at load 5-9): run again
            raise CpuWasShared(cpu, at_expiry[0])
        if rc != 0:
            stderr = log.read_text(errors="replace")
            died = death_of(f"job {job_id}", stderr, ids_, job["scheme"], limit if timed_out.is_set() else None)
            if died is not None:
                raise died
            why = f"killed at the time limit of {limit['seconds']:g} s" if timed_out.is_set() else \
                (stderr.strip().splitlines() or [f"exit code {rc}"])[-1]
            raise PqsimdError(f"job {job_id}: driver failed ({files.named(why)}); log: {log}")
        if share is not None and share.shared:
            if not keeps_shared(sd, study):
                if not adapt_to_busy(sd, study, job_id, share, discarded, notify):
                    raise CpuWasShared(cpu, share)
            elif notify and study.shared_cpu == SharedCpu.KEEP:  # adapt said it once, when it began to keep
                notify(f"job {job_id}: kept although CPU {cpu} was shared with another program ({share.waited()}): "
                       f"marked in jobs.csv (--shared-cpu keep)")
        files.check_unchanged(f"job {job_id}", sd.path)  # the bytes timed are the bytes checked and recorded
        with open(tmp) as f:
            try:
                calibration = json.loads(f.readline())
            except ValueError:
                raise PqsimdError(f"job {job_id}: the driver wrote no calibration line; log: {log}") from None
        table, n_samples = parse_samples(Path(tmp), job, builds, calibration, copies)
        if n_samples != total:
            raise PqsimdError(f"job {job_id}: expected {total} samples, the driver wrote {n_samples}; log: {log}")
        if progress:
            progress(done + 1, total)
        record = {
            **job,
            "metric": "ticks",
            "builds": ids_,
            "variants": [b[1] for b in builds],
            "compilers": [b[2] for b in builds],
            "binaries": timed_binaries(builds, files, layout_record),
            "layout": layout_record,
            "driver_sha256": store.sha256_file(driver),
            "cpu": cpu,
            "cpu_share": {**share.record(), "discarded_before": discarded, "policy": study.shared_cpu,
                          **({"adapted": _ADAPTED.get(str(sd.path.absolute()), "")}
                             if study.shared_cpu == SharedCpu.ADAPT and share.shared else {}),
                          "priority_problem": priority_problem} if share else None,
            "cpu_choice": {"busy": {str(c): round(b, 3) for c, b in choice.busy.items()},
                           "held": {str(c): h for c, h in choice.held.items()}, "fixed": choice.fixed},
            "cpu_claim": {"waited_seconds": round(held.waited_seconds, 3), "holder": held.holder},
            "hostname": socket.gethostname(),
            "cpu_model": machine.cpu_model(),
            "calibration": calibration,
            "counters": counters.status(calibration, counters.read_paranoid(), machine.virtualization()),
            "built_on_node": list(node_built),
            "settings": plan.get("settings") or study.measurement_settings(),
            "sizing": {op: sizing["schemes"][job["scheme"]]["ops"][op] for op in timed} if sizing else None,
            "timed": {op: [b for b, t in zip(ids_, which) if t] for op, which in timed.items()},
            "time_limit": limit,
            "seed": seed,
            "spec": text,
            "command": cmd,
            "started": started,
            "finished": datetime.now(timezone.utc).isoformat(),
            "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
            "slurm_array_task_id": os.environ.get("SLURM_ARRAY_TASK_ID"),
        }
        sd.supersede(job_id)  # a run of this job without a build the study has now, or a broken file
        path = sd.write_raw(job_id, table, record)
        written = True
        return path
    except OSError as e:  # a full disk, a read-only directory: this job fails, the run goes on
        raise PqsimdError(f"job {job_id}: {os_problem(e)}") from None
    finally:
        Path(tmp).unlink(missing_ok=True)
        spec_file.unlink(missing_ok=True)
        if written:  # after the temporaries: a kill in between leaves nothing of the finished job behind
            layouts.discard(sd, job_id)
