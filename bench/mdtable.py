"""A DataFrame as a Markdown table (the bench scripts' output), without an extra dependency."""

from __future__ import annotations

import pandas as pd


def md(df: pd.DataFrame, floatfmt: str = ".3f") -> str:
    def cell(v) -> str:
        if isinstance(v, float):
            return "n/a" if v != v else format(v, floatfmt)
        return str(v)

    lines = ["| " + " | ".join(map(str, df.columns)) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines)
