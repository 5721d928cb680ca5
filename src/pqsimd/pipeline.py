"""`pqsimd run`: sources → build → verify → run, each stage handing the next its files."""

from __future__ import annotations

import shutil
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rich.console import Console

from . import __version__, counters, energy, machine, sources, store, verify
from . import study as study_mod
from .build import BuildResult, build_variant, find_compiler
from .errors import PqsimdError
from .run import plan as plan_mod

console = Console(stderr=True, highlight=False)


def _git_commit() -> str | None:
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
        return out.stdout.strip() or None
    except (OSError, subprocess.TimeoutExpired):
        return None


def _install_binary(directory: Path, build: BuildResult) -> str:
    """Copy the cached harness into DIR/bin; refuse to swap the binary under existing data."""
    dest = store.bin_path(directory, build.variant)
    new_sha = store.sha256_file(build.harness)
    if dest.exists():
        old_sha = store.sha256_file(dest)
        if old_sha == new_sha:
            return new_sha
        has_data = any(
            (rec := store.read_job_record(p)) and rec.get("variant") == build.variant
            for p in store.raw_dir(directory).glob("*.parquet")
        )
        if has_data:
            raise PqsimdError(
                f"variant {build.variant} now builds differently (compiler or sources changed) than when its "
                f"jobs in {directory} ran; use a new directory so the two are not mixed"
            )
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.tmp")
    shutil.copy2(build.harness, tmp)
    tmp.replace(dest)
    return new_sha


def _supported(variant_requires: tuple[str, ...]) -> list[str]:
    flags = machine.cpu_flags()
    return [f for f in variant_requires if f not in flags]


def run_study(
    directory: Path,
    overrides: dict[str, Any],
    executor: str = "local",
    slurm_options: dict[str, Any] | None = None,
    time_jobs: bool = True,
) -> bool:
    """Build, verify and time; returns False if any variant or job failed (the rest still ran)."""
    directory = Path(directory)
    store.ensure_dir(directory)
    study = study_mod.resolve(directory, overrides)
    find_compiler(study.cc)  # a missing compiler is one error, before anything is written
    if executor == "slurm":
        from .run import slurm

        slurm.check_tools()
    study_mod.save(directory, study)
    ok = True

    tree = sources.locate(Path(study.source) if study.source else None)
    console.print(f"sources: {tree.crate or 'user tree'} {tree.version or ''} at {tree.root}")

    builds: dict[str, BuildResult] = {}
    gate_results: dict[str, dict] = {}
    for vid in study.variants:
        variant = study.variant(vid)
        missing = _supported(variant.requires_cpu)
        if missing:
            console.print(f"[yellow]skip[/yellow] {vid}: this CPU lacks {', '.join(missing)}")
            gate_results[vid] = {"variant": vid, "passed": False, "skipped": f"CPU lacks {', '.join(missing)}", "checks": []}
            continue
        try:
            b = build_variant(tree, variant, study.cc)
        except PqsimdError as e:
            console.print(f"[red]build failed[/red] {e}")
            gate_results[vid] = {"variant": vid, "passed": False, "checks": [{"check": "build", "scheme": "*", "passed": False, "detail": str(e)}]}
            ok = False
            continue
        console.print(f"build {vid}: {'cached' if b.cached else f'built in {b.seconds:.1f} s'} ({b.compiler.command} {' '.join(b.flags)})")
        builds[vid] = b

    for vid, g in verify.gate(tree, builds, study.schemes).items():
        gate_results[vid] = g.to_dict()
        if g.passed:
            console.print(f"gate {vid}: passed ({len(g.checks)} checks)")
        else:
            bad = [c for c in g.checks if not c.passed]
            more = f" (+{len(bad) - 2} more in gate/{vid}.json)" if len(bad) > 2 else ""
            console.print(f"[red]gate FAILED[/red] {vid}: " + "; ".join(f"{c.check} {c.scheme}: {c.detail}" for c in bad[:2]) + more, soft_wrap=True)
            ok = False
    for vid, g in gate_results.items():
        store.atomic_write_json(store.gate_path(directory, vid), g)

    passing = [v for v in study.variants if gate_results.get(v, {}).get("passed")]
    binaries = {vid: _install_binary(directory, builds[vid]) for vid in passing}

    plan_file = directory / "plan.json"
    plan = store.read_json(plan_file) if plan_file.exists() else None
    fresh = plan_mod.make_plan(study.variants, study.schemes, study.jobs, study.seed)
    if plan is None or not any(store.raw_dir(directory).glob("*.parquet")):
        plan = fresh
        plan_mod.write_plan(directory, plan)
    elif len(fresh["jobs"]) > len(plan["jobs"]):
        # More jobs for a study with data: the seeded order reproduces the old rounds, then adds new ones.
        if fresh["jobs"][: len(plan["jobs"])] != plan["jobs"]:
            raise PqsimdError(f"{directory}/plan.json does not match the study's seed; restore it or use a new directory")
        plan = fresh
        plan_mod.write_plan(directory, plan)
    check_settings(directory, study)

    manifest = {
        "schema_version": store.MANIFEST_SCHEMA_VERSION,
        "tool": {"name": "pqsimd", "version": __version__, "git_commit": _git_commit()},
        "created": datetime.now(timezone.utc).isoformat(),
        "source": tree.to_dict(),
        "variants": {
            vid: {
                **study.variant(vid).to_dict(),
                "compiler": builds[vid].compiler.to_dict() if vid in builds else None,
                "flags_used": builds[vid].flags if vid in builds else None,
                "build_key": builds[vid].key if vid in builds else None,
                "compile_commands": builds[vid].commands if vid in builds else None,
                "binary_sha256": binaries.get(vid),
                "gate": gate_results.get(vid),
            }
            for vid in study.variants
        },
        "machine": machine.machine_info(),
        "counters": counters.manifest_entry(),
        "energy": energy.status(),
        "seed": plan["seed"],
        "job_order": [j["id"] for j in plan["jobs"]],
        "executor": executor,
    }
    store.atomic_write_json(directory / "manifest.json", manifest)

    if not time_jobs:
        return ok
    if "instructions" in study.metrics:
        from .run import instructions

        ok = instructions.execute(directory, study, passing, console=console) and ok
    if "energy" in study.metrics:
        ok = energy.execute(directory, study, passing, console=console) and ok
    if not {"ticks", "counters"} & set(study.metrics):
        _record_jobs(directory)
        return ok
    def expected_sha(vid: str) -> str | None:  # node-built variants have a binary per node
        return None if (executor == "slurm" and study.variant(vid).node_dependent) else binaries[vid]

    pending = [j for j in plan["jobs"] if j["variant"] in passing and not store.finished_job(directory, j["id"], expected_sha(j["variant"]))]
    skipped = len([j for j in plan["jobs"] if j["variant"] not in passing])
    done = len(plan["jobs"]) - len(pending) - skipped
    console.print(f"jobs: {len(pending)} to run, {done} already finished" + (f", {skipped} of failed/skipped variants not run" if skipped else ""))
    if executor == "slurm":
        from .run import slurm

        ok = slurm.execute(directory, pending, slurm_options or {}) and ok
    else:
        from .run import local

        failures = local.execute(directory, pending, console=console)
        ok = ok and not failures
    _record_jobs(directory)
    console.print(f"study: {directory}")
    return ok


def check_settings(directory: Path, study: study_mod.Study) -> None:
    """Refuse to continue a study whose raw files were measured with other settings."""
    want = study.measurement_settings()
    for path in sorted(store.raw_dir(directory).glob("*.parquet")):
        rec = store.read_job_record(path)
        got = (rec or {}).get("settings")
        if got is not None and {k: got.get(k) for k in want} != want:
            diff = next(k for k in want if got.get(k) != want[k])
            raise PqsimdError(
                f"{path} was measured with {diff}={got.get(diff)!r} but {directory}/study.toml now says "
                f"{want[diff]!r}; restore study.toml or use a new directory (nothing is mixed or overwritten)"
            )


def _record_jobs(directory: Path) -> None:
    """Collect each finished job's record (calibration, host, CPU) into the manifest."""
    path = directory / "manifest.json"
    manifest = store.read_json(path)
    jobs = {}
    for p in sorted(store.raw_dir(directory).glob("*.parquet")):
        rec = store.read_job_record(p)
        if rec:
            jobs[rec["id"]] = {k: rec.get(k) for k in ("hostname", "cpu_model", "cpu", "calibration", "started", "finished", "binary_sha256", "slurm_job_id")}
    manifest["jobs"] = jobs
    manifest["updated"] = datetime.now(timezone.utc).isoformat()
    store.atomic_write_json(path, manifest)
