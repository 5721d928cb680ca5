"""Reading a study directory for the report: results tables, summary, study file, manifest."""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..errors import PqsimdError
from . import style

RESULT_TABLES = ("groups", "comparisons", "decomposition")


@dataclass
class Study:
    directory: Path
    groups: pd.DataFrame
    comparisons: pd.DataFrame
    decomposition: pd.DataFrame
    summary: dict = field(default_factory=dict)
    study: dict = field(default_factory=dict)
    manifest: dict = field(default_factory=dict)

    # -- what the study holds ------------------------------------------------------------
    @property
    def metrics(self) -> list[str]:
        ms = set()
        for df in (self.comparisons, self.groups):
            if "metric" in df.columns:
                ms.update(df["metric"].dropna().astype(str))
        return sorted(ms, key=lambda m: (m != "ticks", m))

    @property
    def primary_metric(self) -> str:
        ms = self.metrics
        return ms[0] if ms else "ticks"

    @property
    def schemes(self) -> list[str]:
        ss = set()
        for df in (self.comparisons, self.groups):
            if "scheme" in df.columns:
                ss.update(df["scheme"].dropna().astype(str))
        return style.sort_schemes(ss)

    @property
    def variants(self) -> list[str]:
        vs = set()
        if "variant" in self.groups.columns:
            vs.update(self.groups["variant"].dropna().astype(str))
        for col in ("baseline", "variant"):
            if col in self.comparisons.columns:
                vs.update(self.comparisons[col].dropna().astype(str))
        return style.sort_variants(vs)

    def comparison(self, metric: str, stage: str | None = None, baseline: str | None = None,
                   variant: str | None = None) -> pd.DataFrame:
        df = self.comparisons
        if df.empty:
            return df
        m = df["metric"] == metric
        if stage is not None and "stage" in df.columns:
            m &= df["stage"] == stage
        if baseline is not None:
            m &= df["baseline"] == baseline
        if variant is not None:
            m &= df["variant"] == variant
        return df[m]

    def lookup(self, metric: str, scheme: str, op: str, baseline: str, variant: str) -> dict | None:
        """The comparison row (as a dict) of one (metric, scheme, op, baseline, variant), or None."""
        df = self.comparisons
        if df.empty:
            return None
        m = ((df["metric"] == metric) & (df["scheme"] == scheme) & (df["op"] == op)
             & (df["baseline"] == baseline) & (df["variant"] == variant))
        rows = df[m]
        if rows.empty:
            return None
        return rows.iloc[0].to_dict()

    def group(self, metric: str, scheme: str, op: str, variant: str) -> dict | None:
        df = self.groups
        if df.empty:
            return None
        m = ((df["metric"] == metric) & (df["scheme"] == scheme) & (df["op"] == op)
             & (df["variant"] == variant))
        rows = df[m]
        return None if rows.empty else rows.iloc[0].to_dict()

    def get(self, *names, default=None):
        """A setting looked up in summary.json, then the study file (top level or one table down)."""
        for source in (self.summary, self.study):
            v = find_key(source, *names)
            if v is not None:
                return v
        return default


def find_key(d: dict, *names):
    """The first of `names` found at the top level of `d` or in one of its sub-tables."""
    if not isinstance(d, dict):
        return None
    for n in names:
        if n in d and d[n] is not None:
            return d[n]
    for v in d.values():
        if isinstance(v, dict):
            for n in names:
                if n in v and v[n] is not None:
                    return v[n]
    return None


def _read_table(results: Path, name: str) -> pd.DataFrame:
    pq, csv = results / f"{name}.parquet", results / f"{name}.csv"
    try:
        if pq.exists():
            return pd.read_parquet(pq)
        if csv.exists():
            return pd.read_csv(csv)
    except Exception as e:  # truncated or foreign file
        raise PqsimdError(f"cannot read {pq if pq.exists() else csv} ({e.__class__.__name__}); "
                          f"re-run `pqsimd analyze {results.parent}`") from None
    return pd.DataFrame()


def read_json(path: Path) -> dict:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def read_toml(path: Path) -> dict:
    if not path.exists():
        return {}
    try:
        return tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return {}


def check_study_dir(directory: Path) -> Path:
    directory = Path(directory)
    if not directory.is_dir():
        raise PqsimdError(f"no study directory at {directory}; create one with `pqsimd run {directory}`")
    return directory


def load_study(directory: Path) -> Study:
    """Load DIR/results/ (plus study.toml, manifest.json); a one-line PqsimdError if it is not there."""
    directory = check_study_dir(directory)
    results = directory / "results"
    if not results.is_dir() or not any((results / f"comparisons.{x}").exists() for x in ("parquet", "csv")):
        raise PqsimdError(f"no results in {results}; run `pqsimd analyze {directory}` first")
    tables = {name: _read_table(results, name) for name in RESULT_TABLES}
    for name, df in tables.items():
        if "metric" not in df.columns and not df.empty:
            df["metric"] = "ticks"
    return Study(
        directory=directory,
        groups=tables["groups"],
        comparisons=tables["comparisons"],
        decomposition=tables["decomposition"],
        summary=read_json(results / "summary.json"),
        study=read_toml(directory / "study.toml"),
        manifest=read_json(directory / "manifest.json"),
    )
