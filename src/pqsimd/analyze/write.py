"""The results tables, written atomically through the store's writer."""

from __future__ import annotations

import io
import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..store import atomic_write_bytes, atomic_write_json


def write_table(df: pd.DataFrame, results: Path, name: str) -> None:
    """name.csv (missing values written as `n/a`) and name.parquet (missing values as nulls)."""
    atomic_write_bytes(results / f"{name}.csv", df.to_csv(index=False, na_rep="n/a", float_format="%.10g").encode())
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), buf)
    atomic_write_bytes(results / f"{name}.parquet", buf.getvalue())


def write_or_remove(table: pd.DataFrame, results: Path, name: str) -> None:
    """name.csv and name.parquet when the table has rows; an empty table leaves no file of that name."""
    if len(table):
        write_table(table, results, name)
    else:
        for ext in ("csv", "parquet"):
            (results / f"{name}.{ext}").unlink(missing_ok=True)


@contextmanager
def staged_results(results: Path) -> Iterator[Path]:
    """A fresh folder beside results/ to write into; when the block ends without an error it replaces
    results/ whole (rename), else it is removed and results/ is left as it was."""
    tag = f"{os.getpid()}"
    stage, old = results.with_name(f".results.new-{tag}"), results.with_name(f".results.old-{tag}")
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(parents=True)
    try:
        yield stage
        if results.exists():
            os.replace(results, old)
        try:
            os.replace(stage, results)
        except OSError:
            if old.exists():
                os.replace(old, results)
            raise
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def write_json(obj: Any, path: Path) -> None:
    atomic_write_json(path, obj)


def write_spins(spins: pd.DataFrame, results: Path) -> None:
    """results/spins.parquet: every spin median (the analysis unit), for the report's distribution
    figure and `pqsimd show`, so neither reads raw/."""
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pandas(spins, preserve_index=False), buf, compression="zstd")
    atomic_write_bytes(results / "spins.parquet", buf.getvalue())
