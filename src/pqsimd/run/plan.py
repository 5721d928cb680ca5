"""The job plan: J jobs per (variant, scheme), in a seeded random order, round by round.

Round r holds job r of every (variant, scheme), shuffled, so variants interleave in time and a
slow phase of the machine hits all of them alike. The order and seed go to DIR/plan.json.
"""

from __future__ import annotations

import random
from pathlib import Path

from .. import store
from ..errors import PqsimdError


def job_id(variant: str, scheme: str, index: int) -> str:
    return f"{variant}.{scheme}.{index}"


def make_plan(variants: list[str], schemes: list[str], jobs: int, seed: int) -> dict:
    rng = random.Random(seed)
    order = []
    for r in range(jobs):
        rnd = [(v, s) for v in variants for s in schemes]
        rng.shuffle(rnd)
        order += [{"id": job_id(v, s, r), "variant": v, "scheme": s, "index": r, "round": r} for v, s in rnd]
    return {"seed": seed, "jobs": order}


def write_plan(directory: Path, plan: dict) -> None:
    store.atomic_write_json(directory / "plan.json", plan)


def load_plan(directory: Path) -> list[dict]:
    path = directory / "plan.json"
    if not path.exists():
        raise PqsimdError(f"{directory} has no plan.json; run `pqsimd run {directory}` to create the study")
    return store.read_json(path)["jobs"]


def find_job(directory: Path, job: str) -> dict:
    for j in load_plan(directory):
        if j["id"] == job:
            return j
    raise PqsimdError(f"job '{job}' is not in {directory}/plan.json")


def pending_jobs(directory: Path) -> list[dict]:
    """Jobs whose raw file is missing or does not read back as that finished job."""
    return [j for j in load_plan(directory) if not store.finished_job(directory, j["id"])]
