"""`pqsimd run`: sources → build → verify → run, each stage handing the next its files in the
study directory. The run holds the study lock throughout and fixes its settings once."""

from __future__ import annotations

import shutil
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rich.console import Console

from . import __version__, catalog, counters, energy, machine, sources, store
from . import isa as isa_mod
from . import metrics as metrics_mod
from . import study as study_mod
from .build import Build, Compiler, build_driver, build_variant, compiler_id, find_compiler, unavailable
from .console import log_console
from .errors import Interrupted, PqsimdError, command, tagged
from .ids import build_id
from .run import plan as plan_mod
from .studydir import StudyDir

console = log_console(highlight=False)


def _git_commit() -> str | None:
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
        return out.stdout.strip() or None
    except (OSError, subprocess.TimeoutExpired):
        return None


def _install(sd: StudyDir, source: Path, dest: Path, build: str | None, gated: str) -> str:
    """Copy a cached binary into DIR/bin, as the bytes that were built and gated (`gated`: their
    sha256); refuse to swap it under data measured with the old one (a variant's jobs record its
    binaries, every job its driver's)."""
    if dest.exists() and store.sha256_file(dest) == gated:
        return gated
    if dest.exists():
        timed = [rec for rec in sd.job_records().values() if rec]
        if build is not None and any(build in (rec.get("binaries") or {}) for rec in timed):
            raise PqsimdError(
                f"build {build} now compiles differently (compiler or sources changed) than when its jobs in {sd.path} "
                f"ran; use a new directory so the two are not mixed"
            )
        if build is None and any(rec.get("driver_sha256") not in (None, gated) for rec in timed):
            raise PqsimdError(
                f"the pqsimd driver differs from the one that timed the jobs in {sd.path} (rebuilt from other "
                f"harness code or flags); use a new directory so jobs of two drivers are not mixed"
            )
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.tmp")
    shutil.copy2(source, tmp)
    if store.sha256_file(tmp) != gated:
        tmp.unlink(missing_ok=True)
        raise PqsimdError(f"{source} changed after it was built and gated (sha256 differs); run again to rebuild it")
    tmp.replace(dest)
    return gated


def _nothing_to_build(study: study_mod.Study, target, skip_lines: list[str]) -> str:
    """One line for a study none of whose builds can be made here: what was skipped and what would run."""
    isas = sorted({i for v in study.variants for i in (study.variant(v).isa or ()) if i != target.name})
    other = f"; {', '.join(isas)} builds need --isa {isas[0]} (counted, not timed: --metric instructions,mix)" \
        if isas else ""
    shown = "; ".join(skip_lines[:3]) + (f"; and {len(skip_lines) - 3} more" if len(skip_lines) > 3 else "")
    return (f"nothing in this study can be built for {target.name} here, so nothing would be timed: {shown}{other}; "
            f"choose variants whose sources and ISA fit (`pqsimd list`)")


def _missing_cpu_features(required: tuple[str, ...]) -> list[str]:
    flags = machine.cpu_flags()
    return [f for f in dict.fromkeys(required) if f not in flags]  # a feature the variant and its sources both need: once


def resolve_compilers(study: study_mod.Study) -> tuple[list[Compiler], list[str]]:
    """The study's compilers that exist here (for its ISA), and one line for each that does not."""
    target = isa_mod.get(study.isa)
    found, problems, ids = [], [], {}
    for spec in study.cc:
        compiler_id(spec)  # a bad id is the user's to fix, not a missing compiler
        try:
            c = find_compiler(spec, target)
        except PqsimdError as e:
            problems.append(str(e))
            continue
        if c.id in ids:
            raise PqsimdError(f"--cc names two compilers with the id '{c.id}' ({ids[c.id]} and {spec}); "
                              f"give one an id of its own, e.g. --cc {c.id}b={c.command}")
        ids[c.id] = spec
        found.append(c)
    return found, problems


def run_study(directory: Path, overrides: dict[str, Any], executor: str = "local",
              slurm_options: dict[str, Any] | None = None, time_jobs: bool = True) -> bool:
    """Build, verify and time; returns False if any build, variant or job failed (the rest ran)."""
    fresh = not Path(directory).exists()
    sd = StudyDir(directory).ensure()
    with sd.lock("pqsimd run"):
        try:
            return _run_locked(sd, overrides, executor, slurm_options or {}, time_jobs)
        except Interrupted:
            raise  # stopped by the user: the study stays, to be continued
        except PqsimdError:
            if fresh:
                _forget_refused(sd)
            raise


def _without_missing_tools(sd: StudyDir, study: study_mod.Study) -> None:
    """A new study's preset metrics whose tool this machine lacks (valgrind for the counts) are left
    out, each with one line saying how to add them later; metrics asked for by name are not: their
    runner says what is missing and the run fails."""
    from .run.backends import for_study

    backend = None
    for m in list(study.metrics):
        if not metrics_mod.counted_by_backend(m):
            continue
        backend = backend or for_study(study)
        if backend.version() is None:
            study.metrics.remove(m)
            console.print(tagged("not counted", "yellow", f"--metric {m} (the preset's): {backend.missing}; then "
                                 f"add it to the study with {command('run', sd.path, '--metric', m)}"), soft_wrap=True)



def _forget_refused(sd: StudyDir) -> None:
    """A new study refused before anything was measured leaves no directory: what this run wrote
    (the directory did not exist before it, and it held the lock since) is removed by name, and the
    directory if that leaves it empty (never anything someone else wrote)."""
    if sd.has_data():
        return
    try:
        for f in (sd.study_toml, sd.plan_json, sd.sizing_json, sd.manifest_json):
            f.unlink(missing_ok=True)
        for d in (sd.bin_dir, sd.gate_dir, sd.logs_dir, sd.raw_dir, sd.excluded_dir):
            if d.is_dir():
                shutil.rmtree(d)
        sd.lock_file.unlink(missing_ok=True)
        sd.path.rmdir()
    except OSError:
        pass


def _run_locked(sd: StudyDir, overrides: dict[str, Any], executor: str, slurm_options: dict[str, Any],
                time_jobs: bool) -> bool:
    started = time.monotonic()
    seconds: dict[str, float] = {}
    sd.refuse_analysed_elsewhere("run or grown")  # before study.toml is written again or anything is built
    study = study_mod.resolve(sd, overrides)
    compilers, missing = resolve_compilers(study)
    for line in missing:
        console.print(tagged("compiler missing", "red", f"{line}; the study goes on without it"), soft_wrap=True)
    if not compilers:
        raise PqsimdError("none of the study's compilers is installed: " + "; ".join(missing))
    from .run.slurm import submit

    if executor == "slurm":
        submit.check_tools()
    elif time_jobs:  # one run at a time per study, also while its SLURM tasks still run
        submit.refuse_while_in_flight(sd.path)
    if study.metrics_from_preset:
        _without_missing_tools(sd, study)
    study_mod.save(sd, study)
    ok = not missing

    lap = time.monotonic()
    tree = sources.locate(Path(study.source) if study.source else None, study.sources)
    console.print(f"sources: {tree.crate or 'user tree'} {tree.version or ''} at {tree.root}"
                  + "".join(f"; {c.name} {c.version}" for c in tree.crates if c.name != tree.crate)
                  + "".join(f"; {c.name} checkout {c.describe or '(not git)'} at {c.root} (content {c.sha256[:12]})"
                            for c in tree.checkouts), markup=False)
    target = isa_mod.of_study(study)
    seconds["sources"] = time.monotonic() - lap
    lap = time.monotonic()
    driver = build_driver(target)
    console.print(f"driver: built once with {driver.compiler.command} ({driver.compiler.version})"
                  + ("" if target.native else f"; {target.name} code runs under {' '.join(target.launcher())}"),
                  soft_wrap=True, markup=False)

    ablations = study.ablations()
    for ab in ablations:
        console.print(ab.describe(), soft_wrap=True, markup=False)
    cells = {v for ab in ablations for v in ab.cells}
    builds: list[Build] = []
    gate_results: dict[str, dict] = {}
    skipped: dict[tuple[str, str, str], list[str]] = {}  # (family, compiler, why) -> variants: one line each
    for fam in study.families():
        for vid in study.variants:
            variant = study.variant(vid)
            for comp in compilers:
                bid = build_id(vid, comp.id, fam.name)
                why = None if variant.builds_for(target.name) else f"not built for {target.name} (isa = {', '.join(variant.isa or ())})"
                why = why or unavailable(fam, variant, tree)
                impl = fam.implementation(variant.sources)
                # an emulated CPU has what the ISA's pinned model has; the host's flags say nothing about it
                lacking = _missing_cpu_features(tuple(variant.requires_cpu) + (impl.requires_cpu if impl else ())) \
                    if target.native else []
                if not why and lacking:
                    why = f"this CPU lacks {', '.join(lacking)}"
                if why:
                    skipped.setdefault((fam.name, comp.id, why), []).append(vid)
                    gate_results[bid] = {"build": bid, "variant": vid, "compiler": comp.id, "family": fam.name,
                                         "passed": False, "passed_schemes": [], "skipped": why, "checks": []}
                    continue
                # An ablation cell holds only the study's parameter sets (2^k cells x every set would
                # multiply the builds); every other build holds the family's every set.
                subset = [s for s in study.schemes if s in fam.schemes] if vid in cells else None
                try:
                    b = build_variant(tree, fam, variant, comp, driver, schemes=subset)
                except PqsimdError as e:
                    console.print(tagged("build failed", "red", str(e)), soft_wrap=True)
                    gate_results[bid] = {"build": bid, "variant": vid, "compiler": comp.id, "family": fam.name,
                                         "passed": False, "passed_schemes": [],
                                         "checks": [{"check": "build", "scheme": "*", "passed": False, "detail": str(e)}]}
                    ok = False
                    continue
                how = "cached" if b.cached else f"built in {b.seconds:.1f} s"
                console.print(f"build {vid} ({comp.id}, {fam.name}): {how} ({comp.command} {' '.join(b.flags)})", soft_wrap=True,
                              markup=False)
                builds.append(b)

    skip_lines = []
    for (fam_name, comp_id, why), vids in skipped.items():
        named = ", ".join(vids) if len(vids) <= 3 else f"{len(vids)} variants ({vids[0]} ... {vids[-1]})"
        skip_lines.append(f"{named} ({comp_id}, {fam_name}): {why}")
        console.print(tagged("skip", "yellow", skip_lines[-1]), soft_wrap=True)
    if not builds and ok:
        raise PqsimdError(_nothing_to_build(study, target, skip_lines))

    from . import verify

    seconds["build"] = time.monotonic() - lap
    lap = time.monotonic()
    for bid, g in verify.gate(tree, driver, builds, study.schemes).items():
        gate_results[bid] = g.to_dict()
        b = next(x for x in builds if x.id == bid)
        if g.passed:
            console.print(f"gate {b.label}: passed ({len(g.checks)} checks)", markup=False)
        else:
            bad = [c for c in g.checks if not c.passed]
            more = f" (+{len(bad) - 2} more in gate/{bid}.json)" if len(bad) > 2 else ""
            why = ""
            if target.vlen == 0 and any("SIGILL" in c.detail for c in bad):  # vector code on a CPU without it
                why = f" ({target.name} under --vlen 0 has no {target.vector.get('extension', 'vector')} extension)"
            console.print(tagged("gate FAILED", "red", f"{b.label}: " + "; ".join(f"{c.check} {c.scheme}: {c.detail}"
                                                                             for c in bad[:2]) + more + why), soft_wrap=True)
            ok = False
    from .verify import codehash

    for b in builds:  # which instructions each op runs: the identical-code check of analyze/layout.py
        if gate_results[b.id].get("passed_schemes"):
            gate_results[b.id]["code"] = codehash.build_hashes(driver.path, b, gate_results[b.id]["passed_schemes"],
                                                               driver.launcher(), target.objdump())
            gate_results[b.id]["code_commuted"] = codehash.build_hashes(
                driver.path, b, gate_results[b.id]["passed_schemes"], driver.launcher(), target.objdump(), commute=True)
    passing = [b for b in builds if gate_results[b.id]["passed_schemes"]]
    seconds["gates"] = time.monotonic() - lap  # verify: the gate of every build
    driver_sha = _install(sd, driver.path, sd.driver_path, None, driver.sha256 or store.sha256_file(driver.path))
    sd.update_manifest({"driver": {**driver.to_dict(), "sha256": driver_sha}})  # what every launch checks
    binaries = {b.id: _install(sd, b.library, sd.variant_path(b.id), b.id, b.sha256) for b in passing}
    for bid, sha in binaries.items():
        gate_results[bid]["binary_sha256"] = sha  # the bytes that passed: every job checks its libraries against it
    for bid, g in gate_results.items():
        sd.write_gate(bid, g)

    if study.max_call_s:
        for b in passing:
            slow = [f"{op} of {sc} ({secs:.2g} s)" for sc, ops in (gate_results[b.id].get("ops") or {}).items()
                    if sc in study.schemes for op, secs in (ops or {}).items()
                    if op in study.ops_for(sc) and isinstance(secs, (int, float)) and secs > study.max_call_s]
            if slow:
                console.print(tagged("not timed", "yellow", f"{b.label}: one call takes longer than the cap of "
                              f"{study.max_call_s:g} s (max_call_s; --max-call 0 lifts it): " + ", ".join(slow[:6])
                              + (f" and {len(slow) - 6} more" if len(slow) > 6 else "")), soft_wrap=True)
    for x in sd.exclusions():
        if x.get("how") == "hung":  # a time limit may have been too tight, or the host busy: tried again
            Path(x["file"]).unlink(missing_ok=True)
            console.print(tagged("retry", "yellow", f"{x['build']} for {x['scheme']}: in an earlier run it {x['detail']} "
                          f"(job {x['job']}); it is timed again (a hang excludes it again, for that run)"), soft_wrap=True)
    for x in sd.exclusions():  # builds that crashed in an earlier run: still left out
        console.print(tagged("excluded", "red", f"{x['build']} from {x['scheme']}: it {x['detail']} (job {x['job']}); "
                      f"delete {x['file']} to try it again"), soft_wrap=True)
        ok = False

    plan = plan_mod.update_plan(sd, study, [c.id for c in compilers])
    sizing = None
    if time_jobs and executor == "local" and any(metrics_mod.get(m).timed for m in study.metrics):
        from .run import cpuclaim

        low = cpuclaim.priority_note()  # an unprivileged `nice pqsimd run`: said before anything is timed
        if low:
            console.print(tagged("priority", "yellow", low), soft_wrap=True)
        load = cpuclaim.current_load(window=cpuclaim.WINDOW_S)  # what else runs here, before anything is timed
        console.print(f"machine: {load.describe()}" + ("" if load.quiet else
                      f"; jobs that share a CPU are {'kept, marked' if study.shared_cpu == 'keep' else 'discarded'}"
                      + (" until the sizing probe and a job show the CPUs stay busy, then kept, marked"
                         if study.shared_cpu == "adapt" else "") + f" (--shared-cpu {study.shared_cpu})"),
                      markup=False, soft_wrap=True)
    if study.budget is not None and time_jobs and metrics_mod.plan_jobs_needed(study.metrics):
        from .run import sizing as sizing_mod

        lap = time.monotonic()
        sizing = sizing_mod.ensure_sizing(sd, study, plan, console=console)
        seconds["sizing"] = time.monotonic() - lap

    sd.update_manifest({
        "tool": {"name": "pqsimd", "version": __version__, "git_commit": _git_commit()},
        "created": sd.read_manifest().get("created") or datetime.now(timezone.utc).isoformat(),
        "source": tree.to_dict(),
        "driver": {**driver.to_dict(), "sha256": driver_sha},
        "families": {f.name: {"source": f.source, "kind": f.kind, "title": f.title, "toml": f.text} for f in study.families()},
        "compilers": {c.id: c.to_dict() for c in compilers},
        "compilers_missing": missing,
        "chain": catalog.chain(target.name).to_dict(),
        "isa": {"name": target.name, "native": target.native, "launcher": target.launcher(),
                "counting": target.counting, "mca_triple": target.mca_triple, "tick_unit": target.tick_unit,
                **({"vlen": target.vlen} if target.vlen is not None else {})},
        "design": study.design,
        "timer_quantum": study.timer_quantum,
        "variants": {vid: study.variant(vid).to_dict() for vid in study.variants},
        "ablations": [ab.to_manifest() for ab in ablations],
        "builds": {
            bid: {
                **g,
                "flags_used": next((b.flags for b in builds if b.id == bid), None),
                "build_key": next((b.key for b in builds if b.id == bid), None),
                "compile_commands": next((b.commands for b in builds if b.id == bid), None),
                # the link of its shared object from the cached objects: run/layouts.py relinks it per job
                "link": next((b.link or None for b in builds if b.id == bid), None),
                "binary_sha256": binaries.get(bid),
            }
            for bid, g in gate_results.items()
        },
        "machine": machine.machine_info(),
        "counters": counters.manifest_entry(),
        "energy": energy.status(),
        "seed": plan["seed"],
        "job_order": [j["id"] for j in plan["jobs"]],
        "excluded": sd.exclusions(),
        "executor": executor,
    })

    if not time_jobs:
        return ok
    from .run import metrics as run_metrics

    ok = run_metrics.execute_all(sd, study, plan, passing, binaries, executor, slurm_options, console, seconds) and ok
    ok = ok and not sd.exclusions()
    record_jobs(sd)
    _record_stages(sd, seconds, time.monotonic() - started)
    sd.update_manifest({"excluded": sd.exclusions()})
    console.print(f"study: {sd.path}", markup=False)
    return ok


def _record_stages(sd: StudyDir, seconds: dict[str, float], total: float) -> None:
    """Where this run's wall time went, stage by stage (the runners by name: timing, instructions,
    mix, ...): printed in one line and kept in the manifest's `runs`, one entry per run."""
    parts = {k: round(v, 1) for k, v in seconds.items() if v >= 0.05}
    console.print(f"wall time {total:.0f} s: " + ", ".join(f"{k} {v:g} s" for k, v in parts.items()), markup=False)
    entry = {"finished": datetime.now(timezone.utc).isoformat(), "seconds": round(total, 1), "stages": parts}
    sd.update_manifest(lambda m: m.setdefault("runs", []).append(entry))


def record_jobs(sd: StudyDir) -> None:
    """Collect each finished job's record (calibration, host, CPU) into the manifest."""
    jobs = {}
    for rec in sd.job_records().values():
        if rec and rec.get("id"):
            jobs[rec["id"]] = {k: rec.get(k) for k in ("metric", "hostname", "cpu_model", "cpu", "calibration", "started",
                                                        "finished", "binaries", "slurm_job_id")}
    sd.update_manifest({"jobs": jobs})


__all__ = ["run_study", "record_jobs", "command"]
