"""A time budget per (job, op): spins, reps and calls per sample chosen from a probe of each op,
so ops from tens of ticks to a second share one study.

For each scheme the driver probes every op of every build that passed the gate (`driver probe`:
the auto batch k and the median ticks of 9 samples of k calls). With t_b the per-sample ticks of
build b (k_b calls) and W the paired warm-up, one spin of R reps costs

    paired:   sum_b (R * t_b + W)      (every build in the process)
    separate: max_b (R * t_b)          (one build per process; the slowest sets the pace)

and the job may spend budget * tsc_hz ticks on the op. The study's spins S0 and reps R0 are the
caps; when the budget binds, R and S shrink together (R ~ sqrt of the shrink factor), never below
the floors min_reps and min_spins, and S never above max_spins. The probe's batch k makes a sample
span at least 2,000 steps of the clock as the probe reads the op (its measured step: 2 TSC ticks on
one host, 26 on another), so that one step is <= 0.1% of a sample even in a job that reads the op
twice as fast as the probe did (machine C's jobs swing 2x between machine states); where even the
floors of such samples overrun the budget, k
shrinks to fit it and the op is `budget_limited` (its resolution, step / k per call, is coarser and
recorded per group by analyze). Warmup spins get at most half the
budget (an op whose one spin takes seconds gets none). The choice is written once to
DIR/sizing.json with the probe it came from; a resumed study reads it back, so every job of a
group uses the same spins, reps and batch.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from rich.console import Console

from ..model import Design, JobKind
from .. import catalog
from ..errors import PqsimdError, command
from ..ids import same_code_build
from ..studydir import StudyDir
from . import child, cpuclaim, limits, loaded
from .job import BuildDied, build_ops, death_of, exclude
from .plan import job_builds
from .spec import NOT_TIMED, escape, quantum_line, timed_ops


def choose(cost_per_rep: float, fixed_per_spin: float, budget_ticks: float, s0: int, r0: int,
           min_spins: int, min_reps: int, max_spins: int) -> tuple[int, int]:
    """(spins, reps) whose time S * (R * cost_per_rep + fixed_per_spin) fits the budget."""
    s_cap = min(s0, max_spins)

    def cost(s: int, r: int) -> float:
        return s * (r * cost_per_rep + fixed_per_spin)

    if cost(s_cap, r0) <= budget_ticks:
        return s_cap, r0
    shrink = budget_ticks / cost(s_cap, r0)
    r = max(min_reps, min(r0, int(round(r0 * math.sqrt(shrink)))))
    s = int(budget_ticks // max(r * cost_per_rep + fixed_per_spin, 1e-9))
    return max(min_spins, min(s, s_cap)), r


MIN_CLOCK_STEPS = 1000  # what a sample should span (runner.h PQSIMD_MIN_CLOCK_STEPS): 0.1% per sample
AIM_CLOCK_STEPS = 2000  # what the driver's auto batch aims at (PQSIMD_AIM_CLOCK_STEPS): jobs can read an op 2x faster than its probe


def clock_step(calibration: dict) -> float:
    """The clock's step a job or probe measured (the driver's `step`; `granularity` in older records)."""
    for key in ("step", "granularity"):
        v = calibration.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0:
            return float(v)
    return 1.0


def fit_budget(study, batch: dict[str, int], sample: dict[str, float], budget_ticks: float,
               warm: float) -> tuple[int, int, float, float, bool]:
    """(spins, reps, cost per rep, fixed cost per spin, budget_limited) of one op. The probe's batch
    makes every sample span >= MIN_CLOCK_STEPS steps; when even the floors (min_spins x min_reps)
    of such samples overrun the budget, the batches shrink (in place, `sample` with them) to fit it:
    coarser resolution, said so by budget_limited."""
    def costs() -> tuple[float, float]:
        if study.design == Design.PAIRED:
            return sum(sample.values()), warm * len(sample)
        return max(sample.values()), 0.0

    rep_cost, fixed = costs()
    spins, reps = choose(rep_cost, fixed, budget_ticks, study.spins, study.reps, study.min_spins,
                         study.min_reps, study.max_spins)
    over = spins * (reps * rep_cost + fixed) / budget_ticks
    limited = over > 1.0 and any(k > 1 for k in batch.values())
    if limited:
        for b, k in batch.items():
            smaller = max(1, int(k / over))
            sample[b] *= smaller / k
            batch[b] = smaller
        rep_cost, fixed = costs()
        spins, reps = choose(rep_cost, fixed, budget_ticks, study.spins, study.reps, study.min_spins,
                             study.min_reps, study.max_spins)
    return spins, reps, rep_cost, fixed, limited


def like_originals(per_build: dict[str, tuple[int, int]]) -> dict[str, tuple[int, int]]:
    """{build: (k, probe ticks)} with every A/A duplicate (variant ids.aa_variant_id(v)) given its
    original's k and probe: the duplicate is the same code, and a batch size of its own would make
    the A/A comparison measure the batch-size effect as well (the probe's auto batch varies between
    two probes of one build)."""
    out = dict(per_build)
    for b in per_build:
        orig = same_code_build(b)
        if orig != b and orig in per_build:
            out[b] = per_build[orig]
    return out


def probe(sd: StudyDir, study, scheme: str, builds: list[str], cpu: int | None = None) -> tuple[dict, dict[str, dict[str, tuple[int, int]]]]:
    """Driver probe of every op of the scheme: (calibration, {op: {build: (k, median raw ticks)}}).
    A build that crashes or hangs in it: BuildDied (the caller excludes it and probes again)."""
    cpu = cpuclaim.choose(os.sched_getaffinity(0)).cpu if cpu is None else cpu
    op_seconds = [build_ops(sd, b, scheme) for b in builds]
    timed = timed_ops(study, scheme, op_seconds)
    limit = limits.probe_limit(study, scheme, list(timed), op_seconds)
    what = f"sizing: the driver's probe of {scheme}"
    gated = [(sd.read_gate(b) or {}).get("binary_sha256") for b in builds]
    with loaded.hold([sd.gated_library(b) for b in builds], gated, what, sd.path) as files:  # as a job's (run/loaded.py)
        lines = ["design paired", f"scheme {scheme}", *(f"variant {escape(f)}" for f in files.driver_paths()),
                 f"cpu {cpu}", f"target {study.batch_target}", *quantum_line(study),
                 *(f"op {op} 1 1 0 {' '.join(study.batch if t else NOT_TIMED for t in which)}" for op, which in timed.items())]
        try:
            with cpuclaim.claim(cpu, cpuclaim.holder_of(sd.path, f"sizing probe of {scheme}")), cpuclaim.away_from(cpu):  # a probe times too
                p = child.run([*child.launcher_of(study), str(sd.gated_driver()), "probe", "-"],
                              input="\n".join(lines) + "\n", timeout=limit["seconds"],
                              before_reap=cpuclaim.share_at_exit, on_start=cpuclaim.timing_priority,
                              pass_fds=files.pass_fds)
        except child.TimedOut as e:
            raise death_of(what, e.stderr, builds, scheme, limit) or PqsimdError(
                f"{what} did not finish within {e.seconds:g} s ({limit['from']}); set [study] job_timeout") from None
        files.check_unchanged(what, sd.path)
        if p.returncode != 0:
            died = death_of(what, p.stderr, builds, scheme, None)
            if died is not None:
                raise died
            raise PqsimdError(f"{what} failed ({files.named((p.stderr.strip().splitlines() or ['?'])[-1])})")
    out = p.stdout.splitlines()
    share = p.before_reap
    cal = {**json.loads(out[0]), "time_limit": limit, "cpu": cpu,
           "cpu_share": share.record() if share is not None else None}
    res: dict[str, dict[str, tuple[int, int]]] = {}
    for line in out[1:]:
        op, v, k, raw = line.split("\t")
        res.setdefault(op, {})[builds[int(v)]] = (int(k), int(raw))
    return cal, res


def check_sizing(sizing: Any, study, where: str) -> None:
    """One line if a sizing lacks an op of a scheme it sizes, or holds a value of the wrong shape."""
    def bad(what: str) -> PqsimdError:
        return PqsimdError(f"{where}: {what}; restore it (or delete it, and {command('run', Path(where).parent)} "
                           f"restores it from plan.json or probes again)")

    if not isinstance(sizing, dict) or not isinstance(sizing.get("schemes"), dict):
        raise bad("not a pqsimd sizing (no `schemes` table)")
    for scheme, s in sizing["schemes"].items():
        if scheme not in study.schemes:
            continue
        if not isinstance(s, dict) or not isinstance(s.get("ops"), dict):
            raise bad(f"scheme {scheme} has no `ops` table")
        for op in study.ops_for(scheme):
            o = s["ops"].get(op)
            if not isinstance(o, dict):
                raise bad(f"op {op} of {scheme} is {'missing' if o is None else repr(o)[:40]}")
            for key in ("spins", "reps", "warmup"):
                if not isinstance(o.get(key), int) or isinstance(o.get(key), bool) or o[key] < (key != "warmup"):
                    raise bad(f"op {op} of {scheme}: `{key}` is {o.get(key)!r}, not a count")
            if not isinstance(o.get("batch"), dict) or not all(
                    isinstance(k, int) and not isinstance(k, bool) and k >= 1 for k in o["batch"].values()):
                raise bad(f"op {op} of {scheme}: `batch` is {o.get('batch')!r}, not calls per build")


def _recorded_sizing_differs(sd: StudyDir, sizing: dict) -> str | None:
    """The first job whose recorded sizing differs from `sizing` (a sizing.json edited after jobs ran)."""
    for path, rec in sd.job_records().items():
        got = (rec or {}).get("sizing")
        if not isinstance(got, dict):
            continue
        fixed = (sizing["schemes"].get(rec.get("scheme")) or {}).get("ops", {})
        op = next((op for op, o in got.items() if fixed.get(op) != o), None)
        if op is not None:
            return f"job {rec.get('id')} was timed with {op} sized {_short(got[op])}, it says {_short(fixed.get(op))}"
    return None


def _short(o: Any) -> str:
    if not isinstance(o, dict):
        return repr(o)
    return f"spins={o.get('spins')} reps={o.get('reps')} batch={o.get('batch')}"


def fixed_sizing(sd: StudyDir, study, plan: dict, console: Console | None = None) -> dict[str, Any] | None:
    """The sizing the study fixed, checked: plan.json holds it from the first probe on, and
    sizing.json must equal it (restored when missing, refused when edited). A study whose plan
    predates that copy adopts its sizing.json if every recorded job was timed with it."""
    fixed = plan.get("sizing")
    on_disk = sd.read_sizing_file()
    if fixed is not None:
        if on_disk is None:
            sd.write_sizing(fixed)
            if console:
                console.print(f"sizing: {sd.sizing_json} was missing; restored from {sd.plan_json}")
        elif on_disk != fixed:
            check_sizing(on_disk, study, str(sd.sizing_json))
            why = _recorded_sizing_differs(sd, on_disk) or "it differs from the copy plan.json fixed"
            raise PqsimdError(f"{sd.sizing_json} was edited ({why}); jobs of one group must be timed alike: delete "
                              f"it and `pqsimd run {sd.path}` restores it from plan.json, or use a new directory")
        return fixed
    if on_disk is None:
        if any((rec or {}).get("sizing") for rec in sd.job_records().values()):
            raise PqsimdError(f"{sd.sizing_json} is missing and jobs were timed with it ({sd.plan_json}, written by an "
                              f"older pqsimd, has no copy); restore it from a backup, or use a new directory")
        return None
    check_sizing(on_disk, study, str(sd.sizing_json))
    if on_disk.get("settings") != plan["settings"]:
        raise PqsimdError(f"{sd.sizing_json} was chosen for other settings; restore it or use a new directory")
    why = _recorded_sizing_differs(sd, on_disk)
    if why:
        raise PqsimdError(f"{sd.sizing_json} was edited ({why}); restore it, or use a new directory")
    return on_disk


def ensure_sizing(sd: StudyDir, study, plan: dict, console: Console | None = None) -> dict[str, Any]:
    """The study's sizing: the one fixed before (a resumed study), with any scheme it lacks (none of
    its builds passed the gate then, so none of its jobs ran) probed now; fixed in plan.json."""
    settings = plan["settings"]
    existing = fixed_sizing(sd, study, plan, console)
    if existing is not None and all(s in existing["schemes"] for s in study.schemes):
        if plan.get("sizing") is None:
            plan["sizing"] = existing
            sd.write_plan(plan)
        return existing
    out: dict[str, Any] = existing or {"settings": settings, "method": __doc__.strip().splitlines()[0], "schemes": {}}
    work = []
    for scheme in study.schemes:
        if scheme in out["schemes"]:
            continue
        job = {"id": f"sizing.{scheme}", "scheme": scheme, "design": JobKind.PAIRED, "index": 0}
        builds = [b for b, _, _ in job_builds(sd, study, job)]
        if builds:
            work.append((scheme, builds))
    # Sizing needs estimates, not measurements: the probes run side by side on every allowed CPU that
    # is idle now (on the idlest alone when none is).
    cpus = cpuclaim.room_for(os.sched_getaffinity(0))
    if console and work:
        console.print(f"sizing: probing the ops of {len(work)} parameter sets on {len(cpus)} CPU(s) for a budget of "
                      f"{study.budget:g} s per op and job")
    import queue
    from concurrent.futures import ThreadPoolExecutor

    free: queue.Queue[int] = queue.Queue()
    for c in cpus:
        free.put(c)

    def on_a_free_cpu(scheme: str, builds: list[str]):
        cpu = free.get()  # one probe per CPU at a time
        try:
            shared = 0
            while True:
                try:
                    cal, res = probe(sd, study, scheme, builds, cpu)
                    # a probe that shared its CPU read the ops slow: its batches err long (finer samples)
                    # and its time estimates high; probed again while the policy discards, else kept, said
                    if (cal.get("cpu_share") or {}).get("shared") and study.shared_cpu == "discard" \
                            and shared + 1 < cpuclaim.ATTEMPTS:
                        shared += 1
                        continue
                    return builds, cal, res
                except BuildDied as e:  # left out of the study; the rest is probed and timed
                    exclude(sd, e, f"sizing.{scheme}", console.print if console else None)
                    builds = [b for b in builds if b != e.build]
                    if not builds:  # nothing of this scheme is timed; the other schemes are
                        return [], None, {}
        finally:
            free.put(cpu)

    with ThreadPoolExecutor(max_workers=len(cpus)) as pool:
        probes = list(pool.map(lambda w: on_a_free_cpu(*w), work))
    short: list[str] = []
    crowded: list[str] = []
    for (scheme, _), (builds, cal, probed) in zip(work, probes):
        if not builds:
            continue
        budget_ticks = study.budget * cal["tsc_hz"]
        warm = study.warmup_ns * 1e-9 * cal["tsc_hz"] if study.design == Design.PAIRED else 0.0
        step = clock_step(cal)
        ops = {}
        for op, per_build in probed.items():
            per_build = like_originals(per_build)
            batch = {b: k for b, (k, _) in per_build.items()}
            sample = {b: max(raw, 1) for b, (k, raw) in per_build.items()}
            # an op whose every call outlasts the warm-up is its own warm-up
            nowarm = study.design == Design.PAIRED and min(raw / k for k, raw in per_build.values()) > warm
            spins, reps, rep_cost, fixed, limited = fit_budget(study, batch, sample, budget_ticks,
                                                               0.0 if nowarm else warm)
            # warmup spins cost like any other: no more than half the budget on them
            spin_cost = reps * rep_cost + fixed
            warmup = int(min(study.warmup, (budget_ticks / 2) // max(spin_cost, 1.0)))
            steps = {b: sample[b] / step for b in batch}
            ops[op] = {"spins": spins, "reps": reps, "warmup": warmup, "nowarm": nowarm,
                       "batch": batch, "probe_ticks": {b: raw for b, (_, raw) in per_build.items()},
                       "sample_steps": steps, "budget_limited": limited,
                       "expected_s": (spins + warmup) * spin_cost / cal["tsc_hz"]}
            if limited:
                short.append(f"{scheme} {op} ({min(steps.values()):,.0f} steps)")
        out["schemes"][scheme] = {"tsc_hz": cal["tsc_hz"], "timer_step": step, "builds": builds,
                                  "family": catalog.family_of(scheme).name,
                                  "probe_time_limit": cal["time_limit"], "probe_cpu": cal.get("cpu"),
                                  "probe_cpu_share": cal.get("cpu_share"), "ops": ops}
        if (cal.get("cpu_share") or {}).get("shared"):
            nice = cal["cpu_share"].get("nice") or 0
            crowded.append(f"{scheme} ({cal['cpu_share']['waited_fraction']:.0%}"
                           + (f", at nice {nice} inherited from pqsimd: start it without nice" if nice > cpuclaim.TIMING_NICE
                              else "") + ")")
    if crowded and console:
        console.print(f"sizing: the probe of {', '.join(crowded)} waited that share of its time for its CPU (another "
                      f"program used it): its ops read slow, so their batches are longer than needed (finer samples) "
                      f"and their time estimates high; the jobs' own CPU check decides what is kept")
    if short and console:
        console.print(f"sizing: the budget of {study.budget:g} s per op cannot afford samples of {AIM_CLOCK_STEPS:,} "
                      f"clock steps (the aim, for at least {MIN_CLOCK_STEPS:,} in every job) for {len(short)} op(s), "
                      f"which are timed with fewer calls per sample (coarser "
                      f"resolution, recorded per group): {', '.join(short[:6])}{' ...' if len(short) > 6 else ''}")
    plan["sizing"] = out
    sd.write_plan(plan)  # the plan first: a sizing.json without its copy would be adopted unchecked
    sd.write_sizing(out)
    return out
