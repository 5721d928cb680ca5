"""One interface for every metric: which jobs it needs, the one rule for which of them are still
to do (StudyDir.finished: the raw file reads back as that job, with the current binaries), and
how to run them. Every metric writes its rows through store.raw_table and StudyDir.write_raw.

    ticks, counters   timing jobs of the plan (local or SLURM executor); counters ride along
    instructions      exact counts under callgrind, one job per (build, scheme)
    mix               the dynamic instruction mix (callgrind per instruction + objdump) and the
                      llvm-mca estimate, one job per (build, scheme)
    energy            RAPL energy per call, one job per (build, scheme)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from rich.console import Console

from ..build import Build
from ..ids import metric_job_id
from ..studydir import StudyDir


@dataclass
class Job:
    id: str
    binaries: dict[str, str | None]  # build id -> sha256 the job must have been measured with
    info: dict[str, Any]


@dataclass
class Metric:
    name: str
    jobs: Callable[..., list[Job]]
    execute: Callable[..., bool]


def pending(sd: StudyDir, jobs: list[Job]) -> list[Job]:
    return [j for j in jobs if not sd.finished(j.id, j.binaries)]


def per_build_jobs(suffix: str):
    """Jobs of a per-(build, scheme) metric: <variant>.<compiler>.<scheme>.<suffix>."""

    def jobs(sd: StudyDir, study, plan: dict, passing: list[Build], binaries: dict[str, str]) -> list[Job]:
        out = []
        for b in passing:
            for scheme in study.schemes:
                if scheme in b.schemes and scheme in (sd.read_gate(b.id) or {}).get("passed_schemes", []):
                    out.append(Job(metric_job_id(b.variant, b.compiler.id, scheme, suffix), {b.id: binaries[b.id]},
                                   {"build": b, "scheme": scheme}))
        return out

    return jobs


def timing_jobs(sd: StudyDir, study, plan: dict, executor: str) -> list[Job]:
    from .job import expected_binaries

    out = []
    for j in plan["jobs"]:
        bins = expected_binaries(sd, study, j, slurm=executor == "slurm")
        if bins:
            out.append(Job(j["id"], bins, j))
    return out


def execute_all(sd: StudyDir, study, plan: dict, passing: list[Build], binaries: dict[str, str], executor: str,
                slurm_options: dict, console: Console) -> bool:
    ok = True
    if "instructions" in study.metrics:
        from . import instructions

        jobs = per_build_jobs("instructions")(sd, study, plan, passing, binaries)
        ok = instructions.execute(sd, study, jobs, pending(sd, jobs), console) and ok
    if "mix" in study.metrics:
        from . import mix

        jobs = per_build_jobs("mix")(sd, study, plan, passing, binaries)
        ok = mix.execute(sd, study, jobs, mix.pending(sd, study, jobs), console) and ok
    if "energy" in study.metrics:
        from .. import energy

        jobs = per_build_jobs("energy")(sd, study, plan, passing, binaries)
        ok = energy.execute(sd, study, jobs, pending(sd, jobs), console) and ok
    if not {"ticks", "counters"} & set(study.metrics):
        return ok
    jobs = timing_jobs(sd, study, plan, executor)
    todo = pending(sd, jobs)
    not_run = len(plan["jobs"]) - len(jobs)
    again = sum(sd.raw_path(j.id).exists() for j in todo)
    console.print(f"jobs: {len(todo)} to run, {len(jobs) - len(todo)} already finished"
                  + (f", {not_run} without a build that passed the gate, not run" if not_run else "")
                  + (f"; {again} of them again (they lack a build the study times now, or read back broken; "
                     f"the old files move to {sd.superseded_dir})" if again else ""))
    if executor == "slurm":
        from .slurm import submit

        return submit.execute(sd, [j.info for j in todo], slurm_options) and ok
    from . import local

    sizing = sd.read_sizing() if study.budget is not None else None
    weights = None
    if sizing is not None:  # the overall ETA comes from the budgets: each job weighs its expected seconds
        weights = {j.id: sum(o["expected_s"] for o in sizing["schemes"].get(j.info["scheme"], {}).get("ops", {}).values())
                   for j in todo}
    failures = local.execute(sd, [j.info for j in todo], study, console=console, weights=weights)
    return ok and not failures
