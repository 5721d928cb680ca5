"""The laid-out copies of each timing job (layout.py), made and gated before any job runs, on the
host that builds (the local and the SLURM executor alike), and read by run/job.py.

    DIR/bin/layouts/<job>/<build>.<i>.so     copy i of the build, for that job only
    DIR/bin/layouts/<job>/layouts.json       per build: the gated build's sha256, and per copy its
                                             seed, stack offset, sha256, op offsets and gate check

A job's copies are removed once its raw file is written (the record in the raw file rebuilds any of
them: same objects, same seed, same bytes). With `[study] layout = "fixed"` nothing here runs and
every job loads the build itself.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..model import UNRECORDED_ALONE_LAYOUTS, UNRECORDED_LAYOUT, AloneLayouts, JobKind, LayoutMode
from .. import layout, store
from ..errors import PqsimdError, command, os_problem, tagged
from ..studydir import StudyDir
from .plan import job_builds

RECORD = "layouts.json"


def randomized(study) -> bool:
    return getattr(study, "layout", UNRECORDED_LAYOUT) == LayoutMode.RANDOM


def copies_per_job(sd: StudyDir) -> int:
    """The plan's copies per job (StudyDir.read_plan derives it once)."""
    return int((sd.read_plan() or {}).get("copies_per_job") or 1)


def seed_job(study, job: dict) -> str:
    """The job id a copy's seed is drawn for: the job's own, except an alone job of a study with
    `alone_layouts = "paired"`, which reuses the copies of the paired job of its set and index (the same
    bytes and stack offsets: the layout cancels in the paired/alone ratio, analyze/coresidency.py)."""
    if job.get("design") == JobKind.ALONE and getattr(study, "alone_layouts", UNRECORDED_ALONE_LAYOUTS) == AloneLayouts.PAIRED:
        from ..ids import timing_job_id

        return timing_job_id(JobKind.PAIRED, job["scheme"], int(job["index"]) % max(1, int(study.jobs)))
    return job["id"]


def job_dir(sd: StudyDir, job_id: str) -> Path:
    return sd.bin_dir / "layouts" / job_id


def read(sd: StudyDir, job_id: str) -> dict | None:
    try:
        return json.loads((job_dir(sd, job_id) / RECORD).read_text())
    except (OSError, ValueError):
        return None


def _current(rec: dict | None, bid: str, base_sha: str, n: int) -> bool:
    """The record holds n copies of this build made from its current binary, all still on disk."""
    b = (rec or {}).get("builds", {}).get(bid)
    if not b or b.get("base_sha256") != base_sha or len(b.get("copies", [])) != n:
        return False
    return all(Path(c["path"]).exists() and store.sha256_file(Path(c["path"])) == c["sha256"] for c in b["copies"])


def prepare(sd: StudyDir, study, jobs: list[dict], console=None) -> None:
    """Make and gate the copies of every job in `jobs` that lacks them (PqsimdError if a copy fails
    its gate: a linker that changes behaviour must stop the study, never be timed). Each build's link
    (its objects in the build cache) is the one the manifest recorded."""
    if not randomized(study) or not jobs:
        return
    from ..verify import layouts as gate  # late: copies are made at run time, gated by verify (which runs builds through run/child)

    linker = layout.linker_record(layout.require_linker())
    n = copies_per_job(sd)
    links = {bid: (b or {}).get("link") for bid, b in (sd.read_manifest().get("builds") or {}).items()}
    from . import child

    launcher = list(child.launcher_of(study))
    driver = sd.gated_driver()
    work = []  # (job, bid, base, base_sha, [(i, seed, out)])
    for job in jobs:
        rec = read(sd, job["id"])
        for bid, _, _ in job_builds(sd, study, job):
            base = sd.variant_path(bid)
            if not base.exists():
                continue
            base = sd.gated_library(bid)  # the bytes that passed the gate (one line if they changed)
            sha = store.sha256_file(base)
            if _current(rec, bid, sha, n):
                continue
            work.append((job, bid, base, sha))
    if not work:
        return
    say = console.print if console is not None else (lambda *a, **k: None)
    say(f"layouts: {len(work) * n} copies for {len({w[0]['id'] for w in work})} jobs "
                  f"({n} per build and job, relinked by {Path(layout.linker() or '?').name}), each gated")
    refs: dict[tuple[str, str], gate.Reference] = {}

    def reference(bid: str, base: Path, scheme: str) -> gate.Reference:
        key = (bid, scheme)
        if key not in refs:
            try:
                refs[key] = gate.Reference(driver, base, scheme, launcher)
            except (RuntimeError, OSError) as e:
                raise PqsimdError(f"layouts: the gate vector of {bid} ({scheme}) failed on the build itself ({e})") \
                    from None
        return refs[key]

    made: list[Path] = []  # copies written by this call: none is recorded until every one is made and gated

    def make(item) -> tuple[str, str, dict]:
        job, bid, base, sha = item
        scheme = job["scheme"]
        ref = reference(bid, base, scheme)
        copies = []
        link = links.get(bid)
        weaker = layout.weakened(link or [])
        for i in range(n):
            seed = layout.seed_of(study.seed, seed_job(study, job), bid, i)
            out = job_dir(sd, job["id"]).absolute() / f"{bid}.{i}.so"  # recorded: meaningful from any directory
            tmp = out.with_name(f".{out.name}.{os.getpid()}")
            pad = layout.Padding.of(seed)
            fixed, cmd = "", None
            out.parent.mkdir(parents=True, exist_ok=True)
            made.append(out)
            try:
                try:
                    if not link:
                        raise PqsimdError("its build records no link command (built by an older pqsimd: rebuild it)")
                    pad, cmd = layout.relink(link, seed, tmp)
                    cmd = [str(out) if a == str(tmp) else a for a in cmd]  # the copy's name, not the temporary one
                except PqsimdError as e:
                    fixed = str(e)
                    shutil.copyfile(base, tmp)
                os.replace(tmp, out)
            except OSError as e:
                if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS):  # writing the copy, not reading the build
                    raise OSError(e.errno, e.strerror, str(out)) from None
                raise
            finally:
                tmp.unlink(missing_ok=True)  # a full disk leaves no half-made copy under either name
            passed, how = gate.check(ref, out)
            if not passed:
                raise PqsimdError(f"layout {i} of {bid} for job {job['id']} fails the gate: {how}; the study stops "
                                  f"(report it; --layout fixed times the builds as linked)")
            copies.append(layout.Copy(bid, i, seed, pad.stack, str(out), store.sha256_file(out),
                                      {scheme: layout.op_offsets(driver, out, scheme, launcher)}, how, fixed,
                                      "" if fixed else weaker).to_dict() | {"link": cmd})
        return job["id"], bid, {"base_sha256": sha, "linker": linker, "copies": copies}

    try:
        with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
            done = list(pool.map(make, work))
    except BaseException as e:
        for out in made:  # no record names them: the next run makes them again
            out.unlink(missing_ok=True)
        if isinstance(e, OSError):  # a full disk while relinking or copying: the file being written
            raise PqsimdError(f"layouts: {os_problem(e)}") from None
        raise
    by_job: dict[str, dict] = {}
    for job_id, bid, entry in done:
        by_job.setdefault(job_id, read(sd, job_id) or {"job": job_id, "builds": {}})["builds"][bid] = entry
    for job_id, rec in by_job.items():
        store.atomic_write_json(job_dir(sd, job_id) / RECORD, rec)
    fixed = sorted({(c["build"], c["fixed"]) for _, _, e in done for c in e["copies"] if c["fixed"]})
    for bid, why in fixed:
        say(tagged("layout fixed", "yellow", f"{bid}: {why}; its jobs time the build as linked"), soft_wrap=True)
    weaker = sorted({(c["build"], c["weakened"]) for _, _, e in done for c in e["copies"] if c.get("weakened")})
    for bid, why in weaker:
        say(tagged("layout weaker", "yellow", f"{bid}: {why}"), soft_wrap=True)


def entries(sd: StudyDir, study, job_id: str, builds: list[tuple[str, str, str]],
            node_built: dict[str, Path] | None = None) -> tuple[list[Path], list[int] | None, dict | None]:
    """What the job's driver loads: per build its copies (build-major), their stack offsets, and the
    layout record for the job's raw file; the builds themselves when layouts are fixed."""
    node_built = node_built or {}
    if not randomized(study):
        return [node_built.get(b) or sd.variant_path(b) for b, _, _ in builds], None, None
    n = copies_per_job(sd)
    rec = read(sd, job_id)
    libraries, stacks, out = [], [], {}
    for bid, _, _ in builds:
        if bid in node_built:  # built on a SLURM node: no copies were made for it; its stack still moves
            pads = [layout.Padding.of(layout.seed_of(study.seed, seed_job(study, sd.find_job(job_id)), bid, i))
                    for i in range(n)]
            libraries += [node_built[bid]] * n
            stacks += [p.stack for p in pads]
            out[bid] = {"base_sha256": None, "copies": [{"index": i, "seed": p.seed, "stack": p.stack,
                                                          "fixed": "built on the node"} for i, p in enumerate(pads)]}
            continue
        base = sd.variant_path(bid)
        if base.exists() and not _current(rec, bid, store.sha256_file(base), n):
            # a job run on its own (`pqsimd job`, a SLURM task run again): its copies are made here
            prepare(sd, study, [sd.find_job(job_id)])
            rec = read(sd, job_id)
        if not base.exists() or not _current(rec, bid, store.sha256_file(base), n):
            raise PqsimdError(f"job {job_id}: the laid-out copies of {bid} are missing or stale; "
                              f"run {command('run', sd.path)} (it makes them before the jobs)")
        entry = rec["builds"][bid]
        libraries += [Path(c["path"]) for c in entry["copies"]]
        stacks += [int(c["stack"]) for c in entry["copies"]]
        out[bid] = entry
    return libraries, stacks, {"copies_per_job": n, "builds": out}


def discard(sd: StudyDir, job_id: str) -> None:
    """A finished job's copies: its raw file's record can make them again."""
    shutil.rmtree(job_dir(sd, job_id), ignore_errors=True)
