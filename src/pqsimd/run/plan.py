"""The job plan: J jobs per group in a seeded random order, round by round.

separate design: a job is one build (variant × compiler) of one scheme, one process each.
paired design:   a job is one scheme; its process holds every build of the scheme's family
                 (all variants of all compilers, so cross-compiler comparisons are paired too).
                 With `alone` = N, rounds 0..N-1 also hold one job per build and scheme that times
                 that build alone in its process (design "alone", same protocol): the paired/alone
                 ratio says what sharing a process costs (analyze/coresidency.py).

Round r holds job r of every group, shuffled, so groups interleave in time and a slow phase of
the machine hits all of them alike. The plan fixes the study's measurement settings: a later run
that would change them is refused (study.check_against_plan); more jobs extend the seeded order.
"""

from __future__ import annotations

import random

from ..errors import PqsimdError
from ..ids import timing_job_id as job_id
from ..studydir import StudyDir

PLAN_VERSION = 2


def make_plan(study, compilers: list[str]) -> dict:
    """compilers: the study's compiler ids, in order."""
    rng = random.Random(study.seed)
    order = []
    for r in range(study.jobs):
        if study.design == "paired":
            rnd = [{"scheme": s} for s in study.schemes]
            if r < getattr(study, "alone", 0):
                rnd += [{"scheme": s, "variant": v, "compiler": c, "alone": True}
                        for v in study.variants for c in compilers for s in study.schemes]
        else:
            rnd = [{"scheme": s, "variant": v, "compiler": c} for v in study.variants for c in compilers for s in study.schemes]
        rng.shuffle(rnd)
        for j in rnd:
            design = "alone" if j.pop("alone", False) else study.design
            order.append({"id": job_id(design, j["scheme"], r, j.get("variant"), j.get("compiler")),
                          **j, "index": r, "round": r, "design": design})
    return {"version": PLAN_VERSION, "seed": study.seed, "design": study.design, "jobs_per_group": study.jobs,
            "compilers": list(compilers), "settings": study.measurement_settings(), "jobs": order}


def update_plan(sd: StudyDir, study, compilers: list[str]) -> dict:
    """The plan of this study: created at the first run, extended by more jobs, never changed."""
    fresh = make_plan(study, compilers)
    plan = sd.read_plan()
    if plan is None or (plan.get("version") != PLAN_VERSION and not sd.has_data()):
        sd.write_plan(fresh)
        return fresh
    if plan.get("version") != PLAN_VERSION:
        raise PqsimdError(f"{sd.plan_json} was written by an older pqsimd (plan version {plan.get('version', 1)}); "
                          f"analyze and report still read the study, but new measurements need a new directory")
    if len(fresh["jobs"]) > len(plan["jobs"]):
        if fresh["jobs"][: len(plan["jobs"])] != plan["jobs"]:
            raise PqsimdError(f"{sd.plan_json} does not match the study's seed; restore it or use a new directory")
        if "sizing" in plan:  # fixed once (run/sizing.py): more jobs are timed with the same choices
            fresh["sizing"] = plan["sizing"]
        sd.write_plan(fresh)
        return fresh
    return plan
