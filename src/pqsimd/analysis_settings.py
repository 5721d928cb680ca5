"""Analysis settings: defaults ← DIR/study.toml `[analysis]` ← command line.

A record of the study like study.py's: checked when the study is written (study.py), read by analyze/
and by a re-timing (run/retime.py: the study's threshold)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from .errors import PqsimdError
from .stats.multiplicity import ADJUSTMENTS
from .studydir import StudyDir

DEFAULT_SEED = 20240


@dataclass(frozen=True)
class Settings:
    n_boot: int = 2000  # job resamples of Cliff's delta interval
    seed: int = DEFAULT_SEED
    alpha: float = 0.05
    threshold: float = 0.02  # a speedup must clear ±2% (on the log scale) to be a verdict
    extra_baseline: str = ""  # "": the chain's own (data/variants.toml [chain] extra_baseline)
    pool_cpu_models: bool = False
    adjust: str = "fcr"  # the family level of the printed intervals: fcr | by | bonferroni | none (stats/multiplicity.py)
    aa_variants: tuple[str, ...] | None = None  # A/A calibration: these variants against themselves
    # (None: the chain's hand-stage baseline)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["aa_variants"] = list(self.aa_variants) if self.aa_variants is not None else None
        return d


def read_study_toml(directory: Path) -> dict[str, Any]:
    return StudyDir(directory).read_study_doc()


def _check(name: str, value: Any, kind: type, ok, why: str, path: str) -> Any:
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if kind is tuple and isinstance(value, list):
        value = tuple(value)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)) or not ok(value):
        raise PqsimdError(f"{path}: [analysis] {name} = {value!r} is invalid; it must be {why}")
    return value


MAX_BOOT = 100_000  # bootstrap resamples: each is an array over the jobs, per comparison
MAX_SEED = (1 << 63) - 1

RULES = {
    "n_boot": (int, lambda v: 100 <= v <= MAX_BOOT, f"an integer from 100 to {MAX_BOOT:,}"),
    "seed": (int, lambda v: 0 <= v <= MAX_SEED, f"an integer from 0 to {MAX_SEED}"),
    "alpha": (float, lambda v: 0 < v < 1, "a number in (0, 1)"),
    "threshold": (float, lambda v: 0 <= v < 1, "a number in [0, 1), e.g. 0.02 for ±2%"),
    "extra_baseline": (str, lambda v: bool(v), "a variant id"),
    "pool_cpu_models": (bool, lambda v: True, "true or false"),
    "adjust": (str, lambda v: v in ADJUSTMENTS, " or ".join(f'"{a}"' for a in ADJUSTMENTS)),
    "aa_variants": (tuple, lambda v: all(isinstance(x, str) and x for x in v), "a list of variant ids"),
}


def resolve(directory: Path, study: dict[str, Any], **overrides: Any) -> Settings:
    """Settings from the study file's [analysis] table, then the non-None `overrides`."""
    table = study.get("analysis", {}) or {}
    where = str(StudyDir(directory).study_toml)
    if not isinstance(table, dict):
        raise PqsimdError(f"{where}: [analysis] must be a table")
    unknown = set(table) - {f.name for f in fields(Settings)}
    if unknown:
        raise PqsimdError(
            f"{where}: unknown key(s) in [analysis]: {', '.join(sorted(unknown))}; "
            f"known: {', '.join(f.name for f in fields(Settings))}"
        )
    values: dict[str, Any] = {}
    for src, label in ((table, where), ({k: v for k, v in overrides.items() if v is not None}, "command line")):
        for k, v in src.items():
            kind, ok, why = RULES[k]
            values[k] = _check(k, v, kind, ok, why, label)
    return Settings(**values)


ASKED = ("n_boot", "seed", "adjust")  # the settings `pqsimd analyze` takes on its command line


def asked_record(study: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """summary.json's `analysis_asked`: the settings the analysis was given on the command line and the
    study file's [analysis] table as it read it, so an analysis run again for the user keeps the one and
    sees a later edit of the other (`again`)."""
    table = study.get("analysis") if isinstance(study.get("analysis"), dict) else {}
    return {"command_line": {k: v for k, v in overrides.items() if k in ASKED and v is not None},
            "analysis_table": {k: v for k, v in table.items() if k in ASKED}}


def again(directory: Path, summary: dict[str, Any]) -> dict[str, Any]:
    """The command-line settings (n_boot, seed, adjust) to analyse a study again with when the user did
    not ask for an analysis (`report` after measurements changed, `cliffs --retime`): those the last
    analysis was given, unless study.toml's [analysis] has set that key anew since (a later edit wins).
    Results of an older pqsimd, which did not record what was given: their settings, except the keys
    [analysis] sets now."""
    try:
        table = read_study_toml(directory).get("analysis")
    except PqsimdError:
        table = None
    table = table if isinstance(table, dict) else {}
    rec = summary.get("analysis_asked") if isinstance(summary, dict) else None
    if isinstance(rec, dict) and isinstance(rec.get("command_line"), dict):
        then = rec.get("analysis_table") if isinstance(rec.get("analysis_table"), dict) else {}
        return {k: v for k, v in rec["command_line"].items() if k in ASKED and table.get(k) == then.get(k)}
    settings = summary.get("settings") if isinstance(summary, dict) else None
    settings = settings if isinstance(settings, dict) else {}
    return {k: settings[k] for k in ASKED if k in settings and k not in table}
