"""Store stage: the study directory's layout, atomic writes and the raw-data schema."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from .errors import PqsimdError

MANIFEST_SCHEMA_VERSION = 1
JOB_METADATA_KEY = b"pqsimd.job"

RAW_SCHEMA = pa.schema(
    [
        ("scheme", pa.string()),
        ("variant", pa.string()),
        ("op", pa.string()),
        ("metric", pa.string()),
        ("job", pa.string()),
        ("job_index", pa.int32()),
        ("spin", pa.int32()),
        ("rep", pa.int32()),
        ("batch", pa.int32()),
        ("raw", pa.int64()),
        ("ticks", pa.int64()),
        ("per_call", pa.float64()),
        ("warmup", pa.bool_()),
    ]
)


def ensure_dir(directory: Path) -> Path:
    try:
        directory.mkdir(parents=True, exist_ok=True)
        probe = directory / ".pqsimd-write-probe"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise PqsimdError(f"cannot write to {directory} ({e.strerror}); choose a writable directory") from None
    return directory


def _umask() -> int:
    old = os.umask(0)
    os.umask(old)
    return old


def atomic_write_with(path: Path, write) -> Path:
    """Call write(binary file) on a temp file beside `path`, fsync, rename: readers and crashes
    never see half a file. Every write of pqsimd (study, raw, results, report) goes through here."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; study files are read by others (SLURM nodes)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_bytes(path: Path, data: bytes) -> Path:
    return atomic_write_with(path, lambda f: f.write(data))


def atomic_write_text(path: Path, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: Path, obj: Any) -> Path:
    return atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n")


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise PqsimdError(f"{path} is missing; run `pqsimd run {path.parent}` first") from None
    except json.JSONDecodeError as e:
        raise PqsimdError(f"{path} is corrupt ({e}); remove it and run again") from None


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# --- layout -------------------------------------------------------------------------------

def raw_dir(directory: Path) -> Path:
    return directory / "raw"


def raw_path(directory: Path, job_id: str) -> Path:
    return raw_dir(directory) / f"{job_id}.parquet"


def bin_path(directory: Path, variant: str) -> Path:
    return directory / "bin" / variant


def gate_path(directory: Path, variant: str) -> Path:
    return directory / "gate" / f"{variant}.json"


def log_path(directory: Path, name: str) -> Path:
    return directory / "logs" / f"{name}.log"


# --- raw data -----------------------------------------------------------------------------

def write_raw(directory: Path, job_id: str, table: pa.Table, job_record: dict[str, Any]) -> Path:
    """Write one finished job: temp name, fsync, rename. A killed job leaves nothing that counts."""
    meta = dict(table.schema.metadata or {})
    meta[JOB_METADATA_KEY] = json.dumps(job_record, default=str).encode()
    table = table.cast(RAW_SCHEMA).replace_schema_metadata(meta)
    path = raw_path(directory, job_id)
    atomic_write_with(path, lambda f: pq.write_table(table, f, compression="zstd"))
    return path


def read_job_record(path: Path) -> dict[str, Any] | None:
    """The job record of a raw file, or None if the file is unreadable (truncated, corrupt)."""
    try:
        meta = pq.read_schema(path).metadata or {}
        return json.loads(meta[JOB_METADATA_KEY])
    except Exception:  # any failure to read means: not a finished job
        return None


def finished_job(directory: Path, job_id: str, binary_sha256: str | None = None) -> bool:
    """A job counts as finished when its raw file reads back and matches the job (and binary)."""
    path = raw_path(directory, job_id)
    if not path.exists():
        return False
    rec = read_job_record(path)
    if rec is None or rec.get("id") != job_id:
        return False
    if binary_sha256 is not None and rec.get("binary_sha256") not in (None, binary_sha256):
        return False
    return True
