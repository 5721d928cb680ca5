"""Atomic writes of the results tables (temp file in the same directory, then os.replace)."""

from __future__ import annotations

import io
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq


def _atomic_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_table(df: pd.DataFrame, results: Path, name: str) -> None:
    """name.csv (missing values written as `n/a`) and name.parquet (missing values as nulls)."""
    _atomic_bytes(results / f"{name}.csv", df.to_csv(index=False, na_rep="n/a", float_format="%.10g").encode())
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), buf)
    _atomic_bytes(results / f"{name}.parquet", buf.getvalue())


def write_json(obj: Any, path: Path) -> None:
    _atomic_bytes(path, (json.dumps(obj, indent=2, default=str) + "\n").encode())
