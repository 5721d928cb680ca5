"""One job: run the variant's harness for one scheme, pinned to one CPU, and store its samples.

Both executors call this (local directly, SLURM via `pqsimd job DIR JOB`). The raw file appears
only when the job is complete (temp name + rename), with the job record in its metadata.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from .. import counters, machine, store
from .. import study as study_mod
from ..errors import PqsimdError
from .plan import find_job


def default_cpu() -> int:
    """The last CPU this process may run on (SLURM and taskset narrow that set)."""
    return max(os.sched_getaffinity(0))


def harness_command(binary: Path, study: study_mod.Study, scheme: str, cpu: int) -> list[str]:
    cmd = [
        str(binary), "run", "--scheme", scheme, "--ops", ",".join(study.ops),
        "--spins", str(study.spins), "--reps", str(study.reps), "--warmup", str(study.warmup),
        "--batch", study.batch, "--target", str(study.batch_target), "--cpu", str(cpu),
    ]
    if "counters" in study.metrics:  # perf_event_open group around each sample (harness/perf.c)
        cmd += counters.harness_args()
    return cmd


def parse_samples(tsv: Path, job: dict, calibration: dict, metric: str = "ticks") -> pa.Table:
    """Harness TSV (op, spin, rep, batch, raw) → the raw schema, with per-call values."""
    opts = pacsv.ReadOptions(column_names=["op", "spin", "rep", "batch", "raw"], skip_rows=1)
    conv = pacsv.ConvertOptions(column_types={"op": pa.string(), "spin": pa.int32(), "rep": pa.int32(), "batch": pa.int32(), "raw": pa.int64()})
    t = pacsv.read_csv(tsv, read_options=opts, parse_options=pacsv.ParseOptions(delimiter="\t"), convert_options=conv)
    n = t.num_rows
    raw = t["raw"].to_numpy()
    batch = t["batch"].to_numpy()
    # Read overhead once per sample, then the batch loop's own cost once per call.
    per_call = (raw - calibration["overhead"]) / batch - calibration.get("call_overhead", 0.0)
    spin = t["spin"].to_numpy()
    const = lambda v, typ: pa.array([v] * n, typ)  # noqa: E731
    return pa.table({
        "scheme": const(job["scheme"], pa.string()),
        "variant": const(job["variant"], pa.string()),
        "op": t["op"],
        "metric": const(metric, pa.string()),
        "job": const(job["id"], pa.string()),
        "job_index": const(job["index"], pa.int32()),
        "spin": t["spin"],
        "rep": t["rep"],
        "batch": t["batch"],
        "raw": t["raw"],
        "ticks": t["raw"] if metric == "ticks" else pa.nulls(n, pa.int64()),
        "per_call": pa.array(per_call.astype(np.float64)),
        "warmup": pa.array(spin < 0),
    })


def build_here(study: study_mod.Study, job: dict) -> Path:
    """Build (cached) and gate a node-dependent variant on this node; returns its harness."""
    from .. import sources, verify
    from ..build import build_variant

    tree = sources.locate(Path(study.source) if study.source else None)
    b = build_variant(tree, study.variant(job["variant"]), study.cc)
    inputs = verify.vector_inputs(job["scheme"])
    kat = verify.check_kat(tree, b, job["scheme"])
    problem = "" if kat.passed else f"nistkat: {kat.detail}"
    if not problem:
        try:
            problem = verify.self_consistency(verify.run_vectors(b.harness, job["scheme"], inputs), inputs)
        except (RuntimeError, OSError) as e:
            problem = f"vectors: {e}"
    if problem:
        raise PqsimdError(f"job {job['id']}: the build on {socket.gethostname()} fails the gate ({problem}); not timed")
    return b.harness


def pick_cpu(study: study_mod.Study) -> int:
    """The study's CPU if this process may use it (a SLURM allocation may not), else the last allowed."""
    allowed = os.sched_getaffinity(0)
    if study.cpu is not None and study.cpu in allowed:
        return study.cpu
    return default_cpu()


def run_job(directory: Path, job_id: str, progress: Callable[[int, int], None] | None = None,
            build_on_node: bool = False) -> Path:
    """Run one job to completion and return its raw file; raises PqsimdError on failure."""
    directory = Path(directory)
    study = study_mod.load(directory)
    job = find_job(directory, job_id)
    if build_on_node:
        binary = build_here(study, job)
    else:
        binary = store.bin_path(directory, job["variant"])
    if not binary.exists():
        raise PqsimdError(f"job {job_id}: harness {binary} is missing; run `pqsimd run {directory}` to rebuild")
    cpu = pick_cpu(study)
    cmd = harness_command(binary, study, job["scheme"], cpu)
    total = len(study.ops) * (study.spins + study.warmup) * study.reps
    log = store.log_path(directory, job_id)
    log.parent.mkdir(parents=True, exist_ok=True)
    store.raw_dir(directory).mkdir(parents=True, exist_ok=True)
    for stale in store.raw_dir(directory).glob(f".{job_id}.*"):  # left by a killed run of this job
        stale.unlink(missing_ok=True)
    started = datetime.now(timezone.utc).isoformat()
    fd, tmp = tempfile.mkstemp(prefix=f".{job_id}.", suffix=".tsv", dir=store.raw_dir(directory))
    try:
        with os.fdopen(fd, "w") as out, open(log, "w") as err:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, bufsize=1 << 16)
            done = 0
            assert proc.stdout is not None
            for i, line in enumerate(proc.stdout):
                out.write(line)
                if i and progress and i % 512 == 0:
                    progress(i, total)
                done = i
            rc = proc.wait()
        if rc != 0:
            msg = (log.read_text().strip().splitlines() or [f"exit code {rc}"])[-1]
            raise PqsimdError(f"job {job_id}: harness failed ({msg}); log: {log}")
        with open(tmp) as f:
            calibration = json.loads(f.readline())
        # with an open counter group: ticks rows + one metric per event; else parse_samples alone
        table, n_samples = counters.job_table(Path(tmp), job, calibration, parse_samples)
        if n_samples != total:
            raise PqsimdError(f"job {job_id}: expected {total} samples, harness wrote {n_samples}; log: {log}")
        if progress:
            progress(done + 1, total)
        record = {
            **job,
            "cpu": cpu,
            "hostname": socket.gethostname(),
            "cpu_model": machine.cpu_model(),
            "calibration": calibration,
            "counters": counters.status(calibration, counters.read_paranoid(), machine.virtualization()),
            "binary_sha256": store.sha256_file(binary),
            "built_on_node": build_on_node,
            "settings": study.measurement_settings(),
            "command": cmd,
            "started": started,
            "finished": datetime.now(timezone.utc).isoformat(),
            "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
            "slurm_array_task_id": os.environ.get("SLURM_ARRAY_TASK_ID"),
        }
        return store.write_raw(directory, job_id, table, record)
    finally:
        Path(tmp).unlink(missing_ok=True)
