"""The timing runner (metrics ticks and counters): the plan's jobs, on the local or the SLURM executor."""

from __future__ import annotations

from ..studydir import StudyDir
from .metrics import RunContext, Job, pending


def timing_jobs(sd: StudyDir, study, plan: dict, executor: str) -> list[Job]:
    from .job import expected_binaries

    out = []
    for j in plan["jobs"]:
        bins = expected_binaries(sd, study, j, slurm=executor == "slurm")
        if bins:
            out.append(Job(j["id"], bins, j))
    return out


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


def estimate_line(weights: dict[str, float], sizing: dict) -> str:
    """The run's time, estimated from the sizing probe before the first job: the jobs' budgets (each
    op's expected seconds), and, where the probe shared its CPU, that time over the share the probe had
    of it (a CPU shared as the probe's was gives a job that much less of each second)."""
    budget = sum(weights.values())
    waited = [float((s.get("probe_cpu_share") or {}).get("waited_fraction") or 0.0)
              for s in (sizing.get("schemes") or {}).values() if isinstance(s, dict)]
    worst = max(waited, default=0.0)
    line = (f"timing: {len(weights)} job(s), about {_minutes(budget)} of timed budgets (the sizing probe's estimate; "
            f"each job adds its start)")
    if worst > 0.25:
        line += (f"; the probe waited {worst:.0%} of its time for its CPU: about {_minutes(budget / (1 - worst))} "
                 f"while the machine stays this busy")
    return line


def run(sd: StudyDir, study, ctx: RunContext) -> bool:
    plan, console = ctx.plan, ctx.console
    jobs = timing_jobs(sd, study, plan, ctx.executor)
    todo = pending(sd, jobs)
    not_run = len(plan["jobs"]) - len(jobs)
    again = sum(sd.raw_path(j.id).exists() for j in todo)
    console.print(f"jobs: {len(todo)} to run, {len(jobs) - len(todo)} already finished"
                  + (f", {not_run} without a build that passed the gate, not run" if not_run else "")
                  + (f"; {again} of them again (they lack a build the study times now, or read back broken; "
                     f"the old files move to {sd.superseded_dir})" if again else ""))
    from . import layouts

    layouts.prepare(sd, study, [j.info for j in todo], console)
    if ctx.executor == "slurm":
        from .slurm import submit

        return submit.execute(sd, [j.info for j in todo], ctx.slurm_options)
    from . import local

    sizing = sd.read_sizing() if study.budget is not None else None
    weights = None
    if sizing is not None:  # the overall ETA comes from the budgets: each job weighs its expected seconds
        weights = {j.id: sum(o["expected_s"] for o in sizing["schemes"].get(j.info["scheme"], {}).get("ops", {}).values())
                   for j in todo}
    if weights:
        console.print(estimate_line(weights, sizing), markup=False, soft_wrap=True)
    failures = local.execute(sd, [j.info for j in todo], study, console=console, weights=weights)
    return not failures
