"""Spin medians straight from DIR/raw (figure 1 and `pqsimd compare` need the distributions)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow.compute as pc
import pyarrow.parquet as papq

COLUMNS = ["scheme", "variant", "op", "metric", "job", "spin", "per_call", "warmup"]


def spin_medians(directory: Path, metric: str | None = None, schemes=None, ops=None,
                 variants=None, skipped: list[str] | None = None) -> pd.DataFrame:
    """Spin medians (median of per_call over the reps of one (job, spin)), warmup excluded.

    Columns: metric, scheme, op, variant, job, spin, value. Unreadable (e.g. truncated) raw
    files are skipped and named in `skipped`, never raised: the report says what it left out.
    """
    raw = Path(directory) / "raw"
    frames = []
    for path in sorted(raw.glob("*.parquet")) if raw.is_dir() else []:
        try:
            table = papq.read_table(path, columns=COLUMNS)
        except Exception as e:
            if skipped is not None:
                skipped.append(f"{path.name}: unreadable ({e.__class__.__name__})")
            continue
        mask = pc.invert(pc.fill_null(table["warmup"], False))
        for col, wanted in (("metric", [metric] if metric else None), ("scheme", schemes),
                            ("op", ops), ("variant", variants)):
            if wanted:
                mask = pc.and_(mask, pc.is_in(table[col], value_set=pa_array(wanted)))
        table = table.filter(mask)
        if table.num_rows:
            frames.append(table.drop(["warmup"]).to_pandas())
    if not frames:
        return pd.DataFrame(columns=["metric", "scheme", "op", "variant", "job", "spin", "value"])
    df = pd.concat(frames, ignore_index=True)
    keys = ["metric", "scheme", "op", "variant", "job", "spin"]
    out = df.groupby(keys, sort=False, observed=True)["per_call"].median().rename("value").reset_index()
    return out


def pa_array(values):
    import pyarrow as pa

    return pa.array([str(v) for v in values], type=pa.string())
