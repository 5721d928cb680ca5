"""The study: what to measure, resolved from defaults ← preset ← DIR/study.toml ← command line.

The resolved study is written back to DIR/study.toml; running the same directory again continues
it, and a change to anything that shapes the measurements is refused once data exists.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import tomli_w

from . import catalog
from .catalog import Variant
from .errors import PqsimdError
from .store import atomic_write_text

# Keys whose change would mix incompatible measurements in one study.
MEASUREMENT_KEYS = ("schemes", "variants", "ops", "spins", "reps", "warmup", "batch", "batch_target", "cc", "metrics")
METRICS = ("ticks", "instructions", "counters", "energy")
MAX_BATCH = 1 << 24  # the harness's own auto-batching limit

# The type of every [study] key, so a study file with `cc = 5` gets one line, not a traceback.
KEY_TYPES: dict[str, tuple[type, ...]] = {
    "schemes": (list,), "variants": (list,), "ops": (list,), "metrics": (list,),
    "jobs": (int,), "spins": (int,), "reps": (int,), "warmup": (int,), "batch_target": (int,),
    "cpu": (int,), "seed": (int,), "batch": (str, int), "cc": (str,), "preset": (str,), "source": (str,),
}


@dataclass
class Study:
    schemes: list[str]
    variants: list[str]
    ops: list[str]
    jobs: int
    spins: int
    reps: int
    warmup: int
    batch: str = "auto"  # "auto" or a positive integer as text
    batch_target: int = 1000  # ticks per sample that auto-batching aims for
    cpu: int | None = None  # None: the last CPU this process may run on
    cc: str = "gcc"
    seed: int = 1
    preset: str = "standard"
    metrics: list[str] = field(default_factory=lambda: ["ticks"])
    source: str | None = None  # None: the pinned crate
    variant_defs: dict[str, Variant] = field(default_factory=dict)
    analysis: dict[str, Any] = field(default_factory=dict)

    def variant(self, vid: str) -> Variant:
        return self.variant_defs[vid]

    def measurement_settings(self) -> dict[str, Any]:
        """What a timing job's samples depend on; recorded in every raw file and checked on resume."""
        return {"spins": self.spins, "reps": self.reps, "warmup": self.warmup, "batch": self.batch,
                "batch_target": self.batch_target, "ops": list(self.ops), "cc": self.cc}

    def to_toml(self) -> str:
        d = asdict(self)
        d.pop("variant_defs")
        analysis = d.pop("analysis")
        for k in [k for k, v in d.items() if v is None]:
            d.pop(k)
        doc: dict[str, Any] = {"study": d, "variants": {v: self.variant_defs[v].to_dict() for v in self.variants}}
        if analysis:
            doc["analysis"] = analysis
        header = "# pqsimd study, fully resolved. `pqsimd run DIR` continues it.\n"
        return header + tomli_w.dumps(doc)


def read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise PqsimdError(f"{path}: malformed TOML ({e}); fix the file or remove it") from None
    except OSError as e:
        raise PqsimdError(f"{path}: cannot read ({e.strerror})") from None


def _check_names(kind: str, given: list[str], valid: list[str]) -> None:
    bad = [g for g in given if g not in valid]
    if bad:
        raise PqsimdError(f"unknown {kind} '{bad[0]}'; valid {kind}s: {', '.join(valid)}")


def _check_types(merged: dict[str, Any], path: Path) -> None:
    for key, types in KEY_TYPES.items():
        value = merged.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, types):
            want = " or ".join("a list of strings" if t is list else {int: "an integer", str: "a string"}[t] for t in types)
            raise PqsimdError(f"{path}: [study] {key} must be {want}, got {value!r}")
        if isinstance(value, list) and not all(isinstance(x, str) for x in value):
            raise PqsimdError(f"{path}: [study] {key} must be a list of strings, got {value!r}")


def _positive(name: str, value: Any, minimum: int = 1) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise PqsimdError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


def resolve(directory: Path, overrides: dict[str, Any]) -> Study:
    """Merge defaults, preset, an existing DIR/study.toml and the command line."""
    path = directory / "study.toml"
    stored = read_toml(path) if path.exists() else {}
    stored_study = dict(stored.get("study", {}))
    cli = {k: v for k, v in overrides.items() if v is not None}

    preset_name = cli.get("preset") or stored_study.get("preset") or "standard"
    presets = catalog.presets()
    if preset_name not in presets:
        raise PqsimdError(f"unknown preset '{preset_name}'; valid presets: {', '.join(presets)}")
    preset = {k: v for k, v in presets[preset_name].items() if k != "description"}
    if "preset" in cli and cli["preset"] != stored_study.get("preset", cli["preset"]):
        # A new preset replaces the stored sizes, so the conflict check below sees the change.
        for k in ("jobs", "spins", "reps", "warmup"):
            stored_study.pop(k, None)

    variant_defs = dict(catalog.builtin_variants())
    for vid, vdef in stored.get("variants", {}).items():
        variant_defs[vid] = catalog.variant_from_dict(vid, vdef, str(path))

    fam = catalog.ml_kem()
    merged: dict[str, Any] = {
        "batch": "auto",
        "schemes": list(fam.schemes),
        "variants": [v for v, d in variant_defs.items() if d.default],
        "ops": list(fam.ops),
        **preset,
        **stored_study,
    }
    merged["preset"] = preset_name
    if "metric" in cli:
        cli["metrics"] = cli.pop("metric")
    if "source" in cli:
        cli["source"] = str(Path(cli["source"]).expanduser().resolve())

    for k, v in cli.items():
        if k != "preset":
            merged[k] = v
    _check_types(merged, path)
    merged["batch"] = str(merged["batch"])
    for key, minimum in (("jobs", 1), ("spins", 1), ("reps", 1), ("warmup", 0), ("batch_target", 1)):
        if key in merged:
            _positive(f"--{key}", merged[key], minimum)

    # Once measurements exist, what shaped them is fixed, wherever a change would come from
    # (command line, preset, or an edited study.toml checked against the stored plan).
    has_data = any((directory / "raw").glob("*.parquet")) if (directory / "raw").is_dir() else False
    if has_data:
        before = dict(stored.get("study", {}))
        if "batch" in before:
            before["batch"] = str(before["batch"])
        for k in (*MEASUREMENT_KEYS, "seed"):
            if k in before and merged.get(k) != before[k]:
                raise PqsimdError(
                    f"{directory} already holds measurements with {k}={before[k]!r}; "
                    f"use a new directory for {k}={merged.get(k)!r}"
                )
        if merged.get("jobs", 0) < before.get("jobs", 0):
            raise PqsimdError(
                f"{directory} already planned {before['jobs']} jobs per group; more are fine "
                f"(--jobs N > {before['jobs']}), fewer would orphan measured jobs"
            )

    merged["batch"] = str(merged["batch"])
    all_schemes = [s for f in catalog.families() for s in f.schemes]
    _check_names("scheme", merged["schemes"], all_schemes)
    _check_names("variant", merged["variants"], list(variant_defs))
    _check_names("op", merged["ops"], list(fam.ops))
    _check_names("metric", merged.get("metrics", ["ticks"]), list(METRICS))
    if merged["batch"] != "auto" and not (merged["batch"].isdigit() and 1 <= int(merged["batch"]) <= MAX_BATCH):
        raise PqsimdError(f"--batch must be 'auto' or an integer from 1 to {MAX_BATCH}, got {merged['batch']!r}")
    if merged.get("cpu") is not None and merged["cpu"] not in os.sched_getaffinity(0):
        allowed = ",".join(str(c) for c in sorted(os.sched_getaffinity(0)))
        raise PqsimdError(f"--cpu {merged['cpu']} is not a CPU this process may use (allowed: {allowed})")

    known = set(Study.__dataclass_fields__) - {"variant_defs", "analysis"}
    unknown = set(merged) - known
    if unknown:
        raise PqsimdError(f"{path}: unknown key(s) in [study]: {', '.join(sorted(unknown))}")
    study = Study(**merged, variant_defs=variant_defs, analysis=dict(stored.get("analysis", {})))
    study.variant_defs = {v: variant_defs[v] for v in study.variants}
    return study


def load(directory: Path) -> Study:
    """The stored study of an existing directory (no command-line changes)."""
    if not (directory / "study.toml").exists():
        raise PqsimdError(f"{directory} holds no study (no study.toml); create one with `pqsimd run {directory}`")
    return resolve(directory, {})


def save(directory: Path, study: Study) -> None:
    atomic_write_text(directory / "study.toml", study.to_toml())
