"""A time budget per (job, op): spins, reps and calls per sample chosen from a probe of each op,
so ops from tens of ticks to a second share one study.

For each scheme the driver probes every op of every build that passed the gate (`driver probe`:
the auto batch k and the median ticks of 9 samples of k calls). With t_b the per-sample ticks of
build b (k_b calls) and W the paired warm-up, one spin of R reps costs

    paired:   sum_b (R * t_b + W)      (every build in the process)
    separate: max_b (R * t_b)          (one build per process; the slowest sets the pace)

and the job may spend budget * tsc_hz ticks on the op. The study's spins S0 and reps R0 are the
caps; when the budget binds, R and S shrink together (R ~ sqrt of the shrink factor), never below
the floors min_reps and min_spins, and S never above max_spins. Warmup spins get at most half the
budget (an op whose one spin takes seconds gets none). The choice is written once to
DIR/sizing.json with the probe it came from; a resumed study reads it back, so every job of a
group uses the same spins, reps and batch.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from typing import Any

from rich.console import Console

from .. import catalog
from ..errors import PqsimdError
from ..studydir import StudyDir
from .job import job_builds, pick_cpu


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


def probe(sd: StudyDir, study, scheme: str, builds: list[str], cpu: int | None = None) -> tuple[dict, dict[str, dict[str, tuple[int, int]]]]:
    """Driver probe of every op of the scheme: (calibration, {op: {build: (k, median raw ticks)}})."""
    cpu = pick_cpu(study) if cpu is None else cpu
    ops = study.ops_for(scheme)
    batch = study.batch
    lines = ["design paired", f"scheme {scheme}", *(f"variant {sd.variant_path(b)}" for b in builds), f"cpu {cpu}",
             f"target {study.batch_target}", *(f"op {op} 1 1 0 {' '.join([batch] * len(builds))}" for op in ops)]
    p = subprocess.run([str(sd.driver_path), "probe", "-"], input="\n".join(lines) + "\n", capture_output=True, text=True)
    if p.returncode != 0:
        raise PqsimdError(f"sizing: the driver's probe of {scheme} failed ({(p.stderr.strip().splitlines() or ['?'])[-1]})")
    out = p.stdout.splitlines()
    cal = json.loads(out[0])
    res: dict[str, dict[str, tuple[int, int]]] = {}
    for line in out[1:]:
        op, v, k, raw = line.split("\t")
        res.setdefault(op, {})[builds[int(v)]] = (int(k), int(raw))
    return cal, res


def ensure_sizing(sd: StudyDir, study, plan: dict, console: Console | None = None) -> dict[str, Any]:
    """The study's sizing: read back if it was chosen before (a resumed study), else probed now."""
    settings = plan["settings"]
    existing = sd.read_sizing()
    if existing is not None:
        if existing.get("settings") != settings:
            raise PqsimdError(f"{sd.sizing_json} was chosen for other settings; restore it or use a new directory")
        return existing
    out: dict[str, Any] = {"settings": settings, "method": __doc__.strip().splitlines()[0], "schemes": {}}
    work = []
    for scheme in study.schemes:
        job = {"id": f"sizing.{scheme}", "scheme": scheme, "design": "paired", "index": 0}
        builds = [b for b, _, _ in job_builds(sd, study, job)]
        if builds:
            work.append((scheme, builds))
    # Sizing needs estimates, not measurements: the probes run side by side on every allowed CPU.
    cpus = sorted(os.sched_getaffinity(0))
    if console:
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
            return probe(sd, study, scheme, builds, cpu)
        finally:
            free.put(cpu)

    with ThreadPoolExecutor(max_workers=len(cpus)) as pool:
        probes = list(pool.map(lambda w: on_a_free_cpu(*w), work))
    for (scheme, builds), (cal, probed) in zip(work, probes):
        budget_ticks = study.budget * cal["tsc_hz"]
        warm = study.warmup_ns * 1e-9 * cal["tsc_hz"] if study.design == "paired" else 0.0
        ops = {}
        for op, per_build in probed.items():
            sample = {b: max(raw, 1) for b, (k, raw) in per_build.items()}
            # an op whose every call outlasts the warm-up is its own warm-up
            nowarm = study.design == "paired" and min(raw / k for k, raw in per_build.values()) > warm
            if study.design == "paired":
                rep_cost, fixed = sum(sample.values()), (0.0 if nowarm else warm * len(sample))
            else:
                rep_cost, fixed = max(sample.values()), 0.0
            spins, reps = choose(rep_cost, fixed, budget_ticks, study.spins, study.reps, study.min_spins,
                                 study.min_reps, study.max_spins)
            # warmup spins cost like any other: no more than half the budget on them
            spin_cost = reps * rep_cost + fixed
            warmup = int(min(study.warmup, (budget_ticks / 2) // max(spin_cost, 1.0)))
            ops[op] = {"spins": spins, "reps": reps, "warmup": warmup, "nowarm": nowarm,
                       "batch": {b: k for b, (k, _) in per_build.items()},
                       "probe_ticks": {b: raw for b, (_, raw) in per_build.items()},
                       "expected_s": (spins + warmup) * spin_cost / cal["tsc_hz"]}
        out["schemes"][scheme] = {"tsc_hz": cal["tsc_hz"], "builds": builds, "family": catalog.family_of(scheme).name,
                                  "ops": ops}
    sd.write_sizing(out)
    return out
