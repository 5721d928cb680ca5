"""The energy runner (metric energy): RAPL energy per call of every (build, scheme) job
(pqsimd/energy.py reads the RAPL domains and measures one op)."""

from __future__ import annotations

from ..studydir import StudyDir
from .metrics import Context, pending, per_build_jobs


def run(sd: StudyDir, study, ctx: Context) -> bool:
    from .. import energy

    jobs = per_build_jobs(sd, study, ctx, "energy")
    return energy.execute(sd, study, jobs, pending(sd, jobs), ctx.console)
