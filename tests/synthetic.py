"""Synthetic study directories in the documented raw schema (ARCHITECTURE.md), for tests and benches.

`make_synthetic_study` writes DIR/raw/<job>.parquet (one file per job: variant.compiler.scheme.index
in the separate design, paired.scheme.index holding every variant in the paired design; all ops and
metrics of that job, warmup spins included and flagged) with the `pqsimd.job` metadata, and a
minimal DIR/study.toml. In the paired design the variants of a job share its job effect and each
spin's machine state (`state`), which is what pairing cancels. Values are lognormal around a chosen median with an optional random
per-job shift (`job_sigma`, on the log scale), per-spin and per-rep noise, rare right-tail outliers
(OS interrupts) and an optional linear drift within jobs.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import tomli_w

from pqsimd.store import RAW_SCHEMA  # noqa: E402  (the engine's own schema)

DETERMINISTIC_METRICS = ("instructions",)


def _lookup(medians: Mapping | Callable | None, scheme: str, variant: str, op: str) -> float:
    if medians is None:
        return 1000.0
    if callable(medians):
        return float(medians(scheme, variant, op))
    for key in ((scheme, variant, op), (variant, op), (scheme, variant), (scheme, op), variant, op):
        if key in medians:
            return float(medians[key])
    return 1000.0


def _per_job(value: str | Callable, variant: str, scheme: str, index: int) -> str:
    return value(variant, scheme, index) if callable(value) else value


def make_synthetic_study(
    directory: Path | str,
    schemes: Sequence[str] = ("ml-kem-512",),
    variants: Sequence[str] = ("ref", "avx2"),
    ops: Sequence[str] = ("ntt",),
    jobs: int = 4,
    spins: int = 50,
    reps: int = 5,
    medians: Mapping | Callable | None = None,
    job_sigma: float = 0.0,
    seed: int = 0,
    metric: str | Sequence[str] = "ticks",
    *,
    spin_sigma: float = 0.01,
    rep_sigma: float = 0.03,
    warmup: int = 2,
    outlier_rate: float = 0.005,
    drift: float = 0.0,
    batch: int = 1,
    overhead: float = 20.0,
    granularity: int | Callable = 1,
    cpu_model: str | Callable = "Synthetic CPU @ 3.00GHz",
    hostname: str | Callable = "node001",
    analysis: Mapping[str, Any] | None = None,
    write_study_toml: bool = True,
    design: str = "separate",
    compilers: Sequence[str] = ("gcc",),
    state: Callable | None = None,
    shuffle: bool = False,
    carryover: Mapping[tuple[str, str], float] | None = None,
    first_position: float = 0.0,
    alone: int = 0,
    alone_shift: Mapping[str, float] | None = None,
    job_record: Callable | None = None,
) -> Path:
    """Write a synthetic study into `directory`; return the directory.

    medians: per-call median, looked up as (scheme, variant, op), (variant, op), (scheme, variant),
      (scheme, op), variant, op (first hit; default 1000), or a callable (scheme, variant, op) -> float.
    job_sigma: SD of a random per-job log shift (the "job effect"; 0 = jobs exchangeable with spins).
    metric: one metric or several; "instructions" is deterministic (every sample == the median).
    drift: total relative change of the level from the first to the last spin of each job.
    cpu_model / hostname: a string, or a callable (variant, scheme, job_index) -> str.
    analysis: written as the [analysis] table of study.toml.
    design: "separate" (one file per variant) or "paired" (one file per scheme and job, all variants).
    state: optional callable (rng, job_index, n_spins, variant, op) -> per-spin log factor array (the
      machine's state); in the paired design it is drawn once per job and shared by its variants
      unless the callable depends on the variant.
    shuffle: paired design only: a fresh random variant order in every spin (as the driver runs it),
      recorded in column pos; else the variants run in the listed order.
    carryover: paired design only: {(previous variant, variant): relative change}, e.g.
      {("avx2", "ref"): 0.2} makes ref 20% slower in spins where avx2 ran just before it
      (the first in a spin follows the last of the previous spin; "" = the very first spin).
    first_position: paired design only: relative change of every variant in the spins where it runs
      first (it follows the driver writing the previous spin's results, not only the previous build).
    alone: paired design only: this many jobs per variant, scheme and compiler that time the variant
      alone in its process (design "alone", id alone.<variant>.<compiler>.<scheme>.<i>, run/plan.py).
    alone_shift: {variant: relative change} of its time when alone (e.g. {"avx2": -0.1}: 10% faster).
    job_record: optional callable (job id, scheme, job index) -> dict of fields added to the job's
      `pqsimd.job` record (e.g. the `cpu_share` of a job that shared its CPU), or None.
    """
    directory = Path(directory)
    raw_dir = directory / "raw"
    raw_dir.mkdir(parents=True, exist_ok=True)
    metrics = [metric] if isinstance(metric, str) else list(metric)
    rng = np.random.default_rng(seed)
    n_spin = warmup + spins
    spin_ids = np.arange(-warmup, spins, dtype=np.int32)
    def job_rows(job: str, j: int, variant: str, compiler: str, scheme: str, job_shift: float,
                 states: dict, cols: dict, pos, extra=None) -> None:
        # every reading of this job's clock is a multiple of its step (stats/lattice.py checks it)
        step = int(_per_job(granularity, variants[0] if design == "paired" else variant, scheme, j))
        null = step * round(overhead / step)
        for m in metrics:
            for op in ops:
                med = _lookup(medians, scheme, variant, op)
                shape = (n_spin, reps)
                if m in DETERMINISTIC_METRICS:
                    per_call = np.full(shape, float(round(med)))
                else:
                    level = job_shift + rng.normal(0.0, spin_sigma, size=(n_spin, 1))
                    if state is not None:
                        level = level + states[(variant, op)][:, None]
                    if extra is not None:
                        level = level + extra[:, None]
                    if drift:
                        level = level + np.log1p(drift * np.clip(spin_ids, 0, None) / max(spins - 1, 1))[:, None]
                    per_call = med * np.exp(level + rng.normal(0.0, rep_sigma, size=shape))
                    out = rng.random(shape) < outlier_rate
                    per_call[out] *= 1.0 + rng.exponential(2.0, size=int(out.sum()))
                    # whole counter values on the clock's lattice, as the driver records them
                    raw = step * np.round((per_call * batch + overhead) / step)
                    per_call = (raw - null) / batch
                raw = np.round(per_call * batch + null).astype(np.int64)
                n = per_call.size
                cols["scheme"].append(np.full(n, scheme, dtype=object))
                cols["variant"].append(np.full(n, variant, dtype=object))
                cols["compiler"].append(np.full(n, compiler, dtype=object))
                cols["op"].append(np.full(n, op, dtype=object))
                cols["metric"].append(np.full(n, m, dtype=object))
                cols["job"].append(np.full(n, job, dtype=object))
                cols["job_index"].append(np.full(n, j, dtype=np.int32))
                cols["spin"].append(np.repeat(spin_ids, reps))
                cols["rep"].append(np.tile(np.arange(reps, dtype=np.int32), n_spin))
                cols["pos"].append(np.repeat(np.asarray(pos, dtype=np.int16), reps) if np.ndim(pos)
                                   else np.full(n, pos, dtype=np.int16))
                cols["batch"].append(np.full(n, batch, dtype=np.int32))
                cols["raw"].append(raw.ravel())
                cols["ticks"].append(raw.ravel() if m == "ticks" else np.full(n, None, dtype=object))
                # the driver's null sample: the read overhead (the synthetic calls cost nothing)
                cols["null_raw"].append(np.full(n, null, dtype=np.int64) if m == "ticks"
                                        else np.full(n, None, dtype=object))
                cols["per_call"].append(per_call.ravel())
                cols["warmup"].append(np.repeat(spin_ids < 0, reps))

    def write(job: str, j: int, scheme: str, cols: dict, variants_in: list[str], compiler: str,
              job_design: str | None = None) -> None:
        n = sum(len(x) for x in cols["per_call"])
        # a column the synthetic study does not set (layout: fixed) is null, as the engine writes it
        arrays = [pa.array(np.concatenate(cols[f.name]), type=f.type) if cols[f.name] else pa.nulls(n, f.type)
                  for f in RAW_SCHEMA]
        table = pa.Table.from_arrays(arrays, schema=RAW_SCHEMA)
        meta = {
            "id": job, "variant": variants_in[0] if design == "separate" else None, "variants": variants_in,
            "compiler": compiler, "scheme": scheme, "index": j, "job_index": j, "design": job_design or design,
            "metric": "ticks",
            "cpu": 1, "hostname": _per_job(hostname, variants_in[0], scheme, j),
            "cpu_model": _per_job(cpu_model, variants_in[0], scheme, j),
            "calibration": {"overhead": overhead, "granularity": _per_job(granularity, variants_in[0], scheme, j), "tsc_hz": 3.0e9, "core_per_tsc": 1.0},
            "started": "2026-01-01T00:00:00Z", "finished": "2026-01-01T00:01:00Z",
        }
        if job_record is not None:
            meta.update(job_record(job, scheme, j) or {})
        table = table.replace_schema_metadata({b"pqsimd.job": json.dumps(meta).encode()})
        pq.write_table(table, raw_dir / f"{job}.parquet")

    def draw_states(j: int, variants_in) -> dict:
        if state is None:
            return {}
        out, shared = {}, {}
        for v in variants_in:
            for op in ops:
                s = state(rng, j, n_spin, v, op)
                out[(v, op)] = s
        return out

    for scheme in schemes:
        for compiler in compilers:
            for j in range(jobs):
                if design == "paired":
                    cols = {name: [] for name in RAW_SCHEMA.names}
                    job_shift = rng.normal(0.0, job_sigma) if job_sigma > 0 else 0.0
                    states = draw_states(j, variants)
                    nv = len(variants)
                    order = (np.array([rng.permutation(nv) for _ in range(n_spin)]) if shuffle
                             else np.tile(np.arange(nv), (n_spin, 1)))  # order[s, pos] = variant index
                    where = np.argsort(order, axis=1)  # where[s, v] = position of variant v in spin s
                    for vi, variant in enumerate(variants):
                        extra = np.log1p(first_position * (where[:, vi] == 0)) if first_position else None
                        if carryover:
                            # what ran just before: the previous position, or the last of the previous spin
                            prev = [variants[order[s, where[s, vi] - 1]] if where[s, vi]
                                    else variants[order[s - 1, nv - 1]] if s else "" for s in range(n_spin)]
                            extra = np.log1p(np.array([carryover.get((p, variant), 0.0) for p in prev])) + \
                                (extra if extra is not None else 0.0)
                        job_rows(f"paired.{scheme}.{j}", j, variant, compiler, scheme, job_shift, states, cols,
                                 where[:, vi], extra)
                    write(f"paired.{scheme}.{j}" if len(compilers) == 1 else f"paired.{compiler}.{scheme}.{j}", j,
                          scheme, cols, list(variants), compiler)
                    if j < jobs - 1:
                        continue
                    for variant in variants:  # after the last paired job: the builds alone
                        for i in range(alone):
                            cols = {name: [] for name in RAW_SCHEMA.names}
                            shift = (rng.normal(0.0, job_sigma) if job_sigma > 0 else 0.0) + \
                                math.log1p((alone_shift or {}).get(variant, 0.0))
                            job = f"alone.{variant}.{compiler}.{scheme}.{i}"
                            job_rows(job, i, variant, compiler, scheme, shift, draw_states(i, [variant]), cols, 0)
                            write(job, i, scheme, cols, [variant], compiler, "alone")
                    continue
                for variant in variants:
                    cols = {name: [] for name in RAW_SCHEMA.names}
                    job_shift = rng.normal(0.0, job_sigma) if job_sigma > 0 else 0.0
                    job = f"{variant}.{compiler}.{scheme}.{j}" if len(compilers) > 1 else f"{variant}.{scheme}.{j}"
                    job_rows(job, j, variant, compiler, scheme, job_shift, draw_states(j, [variant]), cols, 0)
                    write(job, j, scheme, cols, [variant], compiler)
    if write_study_toml:
        doc: dict[str, Any] = {
            "study": {
                "schemes": list(schemes),
                "variants": list(variants),
                "ops": list(ops),
                "jobs": jobs,
                "spins": spins,
                "reps": reps,
                "warmup": warmup,
                "metrics": metrics,
                "design": design,
                "cc": list(compilers),
            }
        }
        if analysis:
            doc["analysis"] = dict(analysis)
        (directory / "study.toml").write_text(tomli_w.dumps(doc))
    return directory
