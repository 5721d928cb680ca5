"""The job plan: J jobs per group in a seeded random order, round by round.

separate design: a job is one build (variant × compiler) of one scheme, one process each.
paired design:   a job is one scheme; its process holds every build of the scheme's family
                 (all variants of all compilers, so cross-compiler comparisons are paired too).
                 With `alone` = N, N jobs per build (on each family's first parameter set) also time that build alone in its
                 process (design "alone", same protocol), spread over the rounds (alone job r of
                 build k in round (r·J/N + k) mod J) and placed in their round by a second generator,
                 so the paired jobs' order is the one without them: the paired/alone ratio says what
                 sharing a process costs (analyze/coresidency.py), not when the alone jobs ran.
                 `alone_sets = "all"`: on every parameter set of the study; `alone_layouts = "paired"`:
                 alone job r loads the copies paired job r of its set loads (run/layouts.seed_job).

Round r holds job r of every group, shuffled, so groups interleave in time and a slow phase of
the machine hits all of them alike. The plan fixes the study's measurement settings: a later run
that would change them is refused (study.check_against_plan); more jobs extend the seeded order.
"""

from __future__ import annotations

import random

from ..model import AloneSets, Design, JobKind
from .. import catalog
from ..errors import PqsimdError
from ..ids import build_id
from ..ids import timing_job_id as job_id
from ..studydir import StudyDir

PLAN_VERSION = 2


def make_plan(study, compilers: list[str]) -> dict:
    """compilers: the study's compiler ids, in order."""
    rng = random.Random(study.seed)
    place = random.Random(study.seed + 1)  # the alone jobs' places: the paired order stays as without them
    alone = _alone_rounds(study, compilers)
    order = []
    for r in range(study.jobs):
        if study.design == Design.PAIRED:
            rnd = [{"scheme": s, "design": study.design, "index": r} for s in study.schemes]
        else:
            rnd = [{"scheme": s, "variant": v, "compiler": c, "design": study.design, "index": r}
                   for v in study.variants for c in compilers for s in study.schemes]
        rng.shuffle(rnd)
        for j in alone.get(r, []):
            rnd.insert(place.randrange(len(rnd) + 1), j)
        for j in rnd:
            order.append({"id": job_id(j["design"], j["scheme"], j["index"], j.get("variant"), j.get("compiler")),
                          "scheme": j["scheme"], **{k: j[k] for k in ("variant", "compiler") if k in j},
                          "index": j["index"], "round": r, "design": j["design"]})
    return {"version": PLAN_VERSION, "seed": study.seed, "design": study.design, "jobs_per_group": study.jobs,
            "compilers": list(compilers), "settings": study.measurement_settings(), "jobs": order}


def _alone_rounds(study, compilers: list[str]) -> dict[int, list[dict]]:
    """round -> the alone jobs placed in it (paired design, [study] alone = N)."""
    n = getattr(study, "alone", 0) if study.design == Design.PAIRED else 0
    out: dict[int, list[dict]] = {}
    # a sample: each family's first parameter set of the study (co-residency is a matter of the
    # builds, not of the set), so measuring it costs about N / (J x sets per family) of the study
    first = list({catalog.family_of(s).name: s for s in reversed(study.schemes)}.values())[::-1] if n else []
    if getattr(study, "alone_sets", AloneSets.FIRST) == AloneSets.ALL:
        first = list(study.schemes)
    builds = [(s, v, c) for v in study.variants for c in compilers for s in study.schemes if s in first]
    for r in range(n):
        for k, (s, v, c) in enumerate(builds):
            rnd = (r * study.jobs // n + k) % study.jobs
            out.setdefault(rnd, []).append({"scheme": s, "variant": v, "compiler": c, "design": JobKind.ALONE, "index": r})
    return out


def _paired_only(jobs: list[dict]) -> list[dict]:
    return [j for j in jobs if j.get("design") != JobKind.ALONE]


def update_plan(sd: StudyDir, study, compilers: list[str]) -> dict:
    """The plan of this study: created at the first run, extended by more jobs; its settings change only
    while none of its jobs is measured (a metric that rides in the timing jobs was added)."""
    fresh = make_plan(study, compilers)
    plan = sd.read_plan()
    if plan is None or (plan.get("version") != PLAN_VERSION and not sd.has_data()):
        sd.write_plan(fresh)
        return fresh
    if plan.get("version") != PLAN_VERSION:
        raise PqsimdError(f"{sd.plan_json} was written by an older pqsimd (plan version {plan.get('version', 1)}); "
                          f"analyze and report still read the study, but new measurements need a new directory")
    if not any(sd.raw_path(j["id"]).exists() for j in plan["jobs"]):
        fresh["settings"] = {**plan["settings"], "metrics": fresh["settings"]["metrics"]}  # a metric grew (study.py)
    else:
        fresh["settings"] = plan["settings"]  # metrics with jobs of their own were added: the timed jobs' stay
    if fresh["settings"] != plan["settings"] and len(fresh["jobs"]) == len(plan["jobs"]):
        plan["settings"] = fresh["settings"]
        plan.pop("sizing", None)  # chosen for the settings before; nothing was timed with it
        sd.sizing_json.unlink(missing_ok=True)
        sd.write_plan(plan)
        return plan
    if len(fresh["jobs"]) > len(plan["jobs"]):
        # more jobs extend the seeded order; the alone jobs (a fixed set) may move to other rounds
        old, new = _paired_only(plan["jobs"]), _paired_only(fresh["jobs"])
        if new[: len(old)] != old or {j["id"] for j in plan["jobs"]} - {j["id"] for j in fresh["jobs"]}:
            raise PqsimdError(f"{sd.plan_json} does not match the study's seed; restore it or use a new directory")
        if "sizing" in plan:  # fixed once (run/sizing.py): more jobs are timed with the same choices
            fresh["sizing"] = plan["sizing"]
        sd.write_plan(fresh)
        return fresh
    return plan


def job_builds(sd: StudyDir, study, job: dict) -> list[tuple[str, str, str]]:
    """(build id, variant, compiler) timed by this job: its one build (separate), or every build of
    the scheme's family that passed the gate for this scheme (paired), in study order; never a
    build excluded for this scheme (it crashed or hung in an earlier job: StudyDir.exclude)."""
    fam = catalog.family_of(job["scheme"]).name
    plan = sd.read_plan() or {}
    compilers = plan.get("compilers") or []
    if job.get("design", study.design) == JobKind.SEPARATE:
        bid = build_id(job["variant"], job["compiler"], fam)
        return [] if sd.exclusion(bid, job["scheme"]) else [(bid, job["variant"], job["compiler"])]
    if job.get("design") == JobKind.ALONE:  # one build of a paired study, alone in its process: if the paired jobs time it
        bid = build_id(job["variant"], job["compiler"], fam)
        g = sd.read_gate(bid)
        ok = g and job["scheme"] in (g.get("passed_schemes") or []) and sd.variant_path(bid).exists() \
            and not sd.exclusion(bid, job["scheme"]) and job["variant"] in study.variants
        return [(bid, job["variant"], job["compiler"])] if ok else []
    out = []
    for v in study.variants:
        for c in compilers:
            bid = build_id(v, c, fam)
            g = sd.read_gate(bid)
            if g and g.get("passed_schemes") and job["scheme"] in g["passed_schemes"] and sd.variant_path(bid).exists() \
                    and not sd.exclusion(bid, job["scheme"]):
                out.append((bid, v, c))
    return out
