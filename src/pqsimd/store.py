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
from .model import RECORDED_DESIGN

MANIFEST_SCHEMA_VERSION = 2
RAW_SCHEMA_VERSION = 4  # 2: compiler and pos columns (paired design); job records carry `settings`;
# 3: null_raw, the contemporaneous null sample that per_call subtracts; 4: layout, the copy of the
# build a sample was timed in (run/layouts.py; null for exact counts and fixed layouts)
JOB_METADATA_KEY = b"pqsimd.job"

RAW_SCHEMA = pa.schema(
    [
        ("scheme", pa.string()),
        ("variant", pa.string()),
        ("compiler", pa.string()),
        ("op", pa.string()),
        ("metric", pa.string()),
        ("job", pa.string()),
        ("job_index", pa.int32()),
        ("spin", pa.int32()),
        ("rep", pa.int32()),
        ("pos", pa.int16()),
        ("layout", pa.int16()),
        ("batch", pa.int32()),
        ("raw", pa.int64()),
        ("ticks", pa.int64()),
        ("null_raw", pa.int64()),
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
    except OSError as e:  # a full disk, a write error: name the file it was for
        Path(tmp).unlink(missing_ok=True)
        if e.filename is None:
            raise OSError(e.errno, e.strerror or str(e).splitlines()[0], str(path)) from e
        raise
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


# --- raw data -----------------------------------------------------------------------------

def raw_table(columns: dict[str, Any], constants: dict[str, Any]) -> pa.Table:
    """The one builder of raw tables: per-row `columns` (arrays of equal length) and per-table
    `constants` (scheme, metric, job, ...), in RAW_SCHEMA's column order and types. Every metric's
    rows go through here; a column neither gives is null (e.g. ticks for exact counts)."""
    n = len(next(iter(columns.values()))) if columns else 0
    arrays = []
    for f in RAW_SCHEMA:
        if f.name in columns:
            x = columns[f.name]
            if isinstance(x, pa.ChunkedArray):  # pa.array() would walk it in Python: ~1 s per timing job
                x = x.combine_chunks()
            arrays.append(x.cast(f.type) if isinstance(x, pa.Array) else pa.array(x, f.type))
        elif f.name in constants:
            arrays.append(pa.array([constants[f.name]] * n, f.type))
        else:
            arrays.append(pa.nulls(n, f.type))
    return pa.Table.from_arrays(arrays, schema=RAW_SCHEMA)


def write_raw(path: Path, table: pa.Table, job_record: dict[str, Any]) -> Path:
    """Write one finished job: temp name, fsync, rename. A killed job leaves nothing that counts."""
    meta = dict(table.schema.metadata or {})
    meta[JOB_METADATA_KEY] = json.dumps({**job_record, "raw_schema_version": RAW_SCHEMA_VERSION}, default=str).encode()
    table = table.select(RAW_SCHEMA.names).cast(RAW_SCHEMA).replace_schema_metadata(meta)
    atomic_write_with(path, lambda f: pq.write_table(table, f, compression="zstd"))
    return path


def read_job_record(path: Path) -> dict[str, Any] | None:
    """The job record of a raw file, upgraded to the current shape (upgrade_job_record), or None if the
    file is unreadable (truncated, corrupt) or has none."""
    try:
        return _record_of(pq.read_schema(path).metadata)
    except Exception:  # any failure to read means: not a finished job
        return None


def _record_of(metadata: dict | None) -> dict[str, Any] | None:
    """The job record in a raw file's schema metadata, upgraded; None when it has none or it is damaged."""
    try:
        rec = json.loads((metadata or {})[JOB_METADATA_KEY])
    except (KeyError, ValueError):
        return None
    return upgrade_job_record(rec) if isinstance(rec, dict) else None


def unreadable_raw(path: Path, directory: Path, why: str) -> PqsimdError:
    """The one line for a raw file that cannot be read, whatever its metric: what to delete and what redoes it."""
    return PqsimdError(f"{path}: not a readable Parquet file ({why}); it was probably cut short by an interrupted run: "
                       f"delete it and run `pqsimd run {directory}` again to redo that job")


# -- the raw loader: older shapes are upgraded here, and nothing downstream tests a raw version again --
#   schema 1 (no raw_schema_version): one compiler and the separate design: no compiler column (the
#     record's settings.cc), no pos column (0), no design in the record (RECORDED_DESIGN), no metric in
#     the record (it timed: readers take a record without a metric as the time metric's)
#   schema 2: compiler and pos columns; the record carries `settings`
#   schema 3: null_raw (not read by analysis)
#   schema 4: layout, the copy a sample was timed in (absent before: -1, the fixed layout)


def upgrade_job_record(rec: dict[str, Any]) -> dict[str, Any]:
    """A job record in the current shape: the fields older records lack, filled as they were then."""
    rec = dict(rec)
    rec.setdefault("raw_schema_version", 1)
    if not rec.get("design"):
        rec["design"] = (rec.get("settings") or {}).get("design") or str(RECORDED_DESIGN)
    return rec


def read_raw(path: Path, columns: list[str], dictionary: tuple[str, ...] = ()) -> tuple[pa.Table, dict[str, Any] | None]:
    """One raw file's `columns` (those of RAW_SCHEMA a reader needs; `dictionary` ones dictionary-encoded),
    in the current shape whatever its schema version, and its job record (None when it has none).
    Missing required columns raise KeyError naming them; damaged files raise Arrow's or OS errors."""
    schema = pq.read_schema(path)
    names = set(schema.names)
    upgradable = {"compiler", "pos", "layout", "batch", "raw"}
    missing = [c for c in columns if c not in names and c not in upgradable]
    if missing:
        raise KeyError(", ".join(missing))
    rec = _record_of(schema.metadata)
    present = [c for c in columns if c in names]
    table = pq.ParquetFile(path, read_dictionary=[c for c in dictionary if c in names]).read(columns=present)
    table = table.unify_dictionaries().combine_chunks()
    n = table.num_rows
    if "compiler" in columns and "compiler" not in names:  # schema 1: the study's one compiler
        cc = str(((rec or {}).get("settings") or {}).get("cc") or "cc")
        table = table.append_column("compiler", pa.array([cc] * n, pa.string()).dictionary_encode())
    if "pos" in columns and "pos" not in names:  # schema 1: the separate design's one build per process
        table = table.append_column("pos", pa.array([0] * n, pa.int16()))
    if "layout" in columns and "layout" not in names:  # schema < 4: the fixed layout
        table = table.append_column("layout", pa.array([-1] * n, pa.int16()))
    if "batch" in columns and "batch" not in names:  # one call per sample
        table = table.append_column("batch", pa.array([1] * n, pa.int32()))
    if "raw" in columns and "raw" not in names:  # no clock readings kept: no lattice to check
        table = table.append_column("raw", pa.nulls(n, pa.int64()))
    return table, rec
