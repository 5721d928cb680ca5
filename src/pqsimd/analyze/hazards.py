"""The simulated-hazards table (`--metric hazards`, run/hazards.py) in DIR/results/:

    hazards     one row per (scheme, op, variant, compiler): each event per call (exact fractions in
                *_exact), per 1000 loads where it is a load's, the busiest site of each event (function
                +offset and instruction) and function (with its share of the event), the model's parameters, and a note where the build was not
                traced (AVX-512 under QEMU 7.2)

The numbers are the model's (harness/qemu/hazards.c), never a PMU's. `*_cycles` and `hazard_cycles`:
what they would cost per call on the study's own CPU (`cost_unit`): at the costs the hazards metric measured
on the host that ran it (TSC ticks per event, harness/calibrate/), else at data/hazards.toml's rough
penalties (core cycles, its vendor's or microarchitecture's), for the explanations to weigh against a
difference in time.
"""

from __future__ import annotations

import math
import tomllib
from functools import cache
from importlib import resources
from fractions import Fraction
from pathlib import Path
from typing import Any

import pandas as pd

from .. import metrics as metrics_mod
from .. import microarch, store
from ..studydir import StudyDir

METRIC = metrics_mod.HAZARDS
EVENTS = ("Ld", "St", "SFfail", "Alias4K", "SplitLd", "SplitSt", "SSEdirty", "Transitions")
PER_LOAD = ("SFfail", "Alias4K", "SplitLd")
SITE_EVENTS = ("SFfail", "Alias4K", "SplitLd", "SplitSt", "SSEdirty")
KEYS = ["scheme", "op", "variant", "compiler"]
COSTED = ("SFfail", "Alias4K", "SplitLd", "SplitSt", "SSEdirty", "Transitions")
COLUMNS = [*KEYS, *EVENTS, *(f"{e}_per_kld" for e in PER_LOAD), *(f"{e}_site" for e in SITE_EVENTS),
           *(f"{e}_where" for e in SITE_EVENTS), *(f"{e}_cycles" for e in COSTED), "hazard_cycles", "cost_cpu", "cost_unit", "cost_source",
           *(f"{e}_exact" for e in EVENTS), "sb_entries", "window", "tool", "note"]


@cache
def _penalty_table() -> dict:
    return tomllib.loads(resources.files("pqsimd").joinpath("data/hazards.toml").read_text())


def penalties(manifest: dict) -> tuple[dict[str, float], str, str, str]:
    """What one event costs on the study's CPU: measured on the host that ran the hazards metric (its
    calibration, TSC ticks: the unit of the study's times) where it was, else data/hazards.toml's rough
    core cycles (its vendor's, its microarchitecture's overriding). ({event: cost}, the CPU, the unit, the source)."""
    isa = manifest.get("isa") if isinstance(manifest.get("isa"), dict) else {}
    if isa.get("native") is False:  # traced for an emulated CPU: the host's costs are not its
        return {}, f"{isa.get('name')} under emulation", "", "no CPU of this ISA to cost the hazards on"
    uarch = microarch.identify(manifest.get("machine") or {})
    t = _penalty_table()
    out = dict(t.get("vendor", {}).get(uarch.vendor, {}))
    out.update(t.get("uarch", {}).get(uarch.name, {}))
    source = str(out.pop("source", ""))
    cost = {k: float(v) for k, v in out.items() if k in COSTED}
    cal = ((manifest.get("metrics") or {}).get(METRIC) or {}).get("calibration") or {}
    if cal.get("per_event"):
        measured = {k: float(v) for k, v in cal["per_event"].items() if k in COSTED}
        rest = sorted(set(cost) - set(measured))
        cost = {**{k: cost[k] for k in rest}, **measured}  # a cycle is about a tick; the measured ones are exact units
        source = (f"measured on this host ({cal.get('cpu_model') or uarch.name}: {', '.join(measured)})"
                  + (f"; {', '.join(rest)} from data/hazards.toml ({source})" if rest else ""))
        return cost, uarch.name, "ticks", source
    return cost, uarch.name, "cycles", f"data/hazards.toml ({source})" if source else ""


def is_hazards_file(name: str) -> bool:
    """A hazards job's raw file: read by hazards_table from its job record (exact per-call events), never
    as spins (its rows are counts of the model's events, not times to compare with intervals)."""
    return name.endswith(f".{METRIC}.parquet")


def hazard_files(directory: Path) -> list[Path]:
    raw = StudyDir(directory).raw_dir
    if not raw.is_dir():
        return []
    return sorted(f for f in raw.glob("*.parquet") if is_hazards_file(f.name))


def _site_text(site: dict) -> str:
    return f"{site['function']}+{site['offset']:#x}: {site['disas']}"


def _rows_of(path: Path) -> list[dict[str, Any]]:
    rec = store.read_job_record(path) or {}
    model = rec.get("model") or {}
    rows = []
    for op, per in (rec.get("per_call_exact") or {}).items():
        exact = {e: Fraction(per[e]) for e in EVENTS if e in per}
        row: dict[str, Any] = {"scheme": rec["scheme"], "op": op, "variant": rec["variant"], "compiler": rec["compiler"]}
        row.update({e: float(exact[e]) if e in exact else math.nan for e in EVENTS})
        ld = row["Ld"]
        row.update({f"{e}_per_kld": 1000 * row[e] / ld if ld > 0 else math.nan for e in PER_LOAD})
        sites = (rec.get("sites") or {}).get(op) or []
        funcs = (rec.get("functions") or {}).get(op) or []
        for e in SITE_EVENTS:
            best = max(sites, key=lambda s: s.get(e, 0), default=None)
            row[f"{e}_site"] = _site_text(best) if best and best.get(e, 0) > 0 else ""
            top = max(funcs, key=lambda s: s.get(e, 0), default=None)
            total = sum(f.get(e, 0) for f in funcs)
            row[f"{e}_where"] = (f"{top['function']} ({top[e] / total:.0%})" if top and total > 0 and top.get(e, 0) > 0
                                 else "")
        row.update({f"{e}_exact": str(exact[e]) if e in exact else "" for e in EVENTS})
        row.update({"sb_entries": model.get("entries"), "window": model.get("window"), "tool": rec.get("tool", ""),
                    "note": ""})
        rows.append(row)
    return rows


def hazards_table(directory: Path) -> pd.DataFrame:
    """Every traced (scheme, op, build); a build the emulator could not run is a row per scheme with the
    reason (never zeros)."""
    rows = [r for f in hazard_files(directory) for r in _rows_of(f)]
    manifest = StudyDir(directory).read_manifest()
    cost, cpu, unit, source = penalties(manifest)
    for r in rows:  # what the events would cost on the study's own CPU (the one its times come from)
        for e in COSTED:
            r[f"{e}_cycles"] = r[e] * cost[e] if e in cost else math.nan
        r["hazard_cycles"] = sum(r[f"{e}_cycles"] for e in COSTED if e in cost) if cost else math.nan
        r["cost_cpu"], r["cost_unit"], r["cost_source"] = cpu, unit, source
    skipped = ((manifest.get("metrics") or {}).get(METRIC) or {}).get("skipped") or {}
    for build, reason in skipped.items():
        variant, compiler = (str(build).split(".") + [""])[:2]  # build id: variant.compiler.family
        rows.append({"scheme": str(reason).split(" ", 1)[0], "op": "", "variant": variant, "compiler": compiler,
                     **{e: math.nan for e in EVENTS}, "note": f"not traced: {reason}"})
    if not rows:
        return pd.DataFrame(columns=COLUMNS)
    return pd.DataFrame(rows).reindex(columns=COLUMNS).sort_values(KEYS, kind="stable").reset_index(drop=True)
