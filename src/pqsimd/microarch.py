"""A machine named by its microarchitecture, from what a study's manifest recorded about the CPU
(vendor, family, model, stepping on x86-64; the MIDR implementer and part on aarch64), looked up
in data/microarchitectures.toml (each entry with its source). The first matching entry wins."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources


@dataclass(frozen=True)
class Microarchitecture:
    name: str  # "Zen 5", "Emerald Rapids", or "<vendor> family F model M" when no entry matches
    vendor: str  # the data's vendor key, or "" when unknown
    source: str  # where the entry comes from; "" when no entry matched
    known: bool


@cache
def table() -> dict:
    return tomllib.loads(resources.files("pqsimd").joinpath("data/microarchitectures.toml").read_text())


def _int(value) -> int | None:
    try:
        return int(str(value).strip(), 0)
    except (TypeError, ValueError):
        return None


def _vendor(machine: dict) -> str:
    """The data's vendor key: from the recorded vendor_id or MIDR implementer, else a word of the
    CPU model name (manifests written before pqsimd recorded vendor_id)."""
    vendors = table().get("vendors", {})
    vid, impl = str(machine.get("vendor_id") or ""), str(machine.get("cpu_implementer") or "").lower()
    for key, v in vendors.items():
        if vid and vid in v.get("vendor_ids", []) or impl and impl in [i.lower() for i in v.get("implementers", [])]:
            return key
    words = set(str(machine.get("cpu_model") or "").replace("(R)", " ").split())
    for key, v in vendors.items():
        if words & set(v.get("model_words", [])):
            return key
    return ""


def _in_ranges(x: int | None, ranges) -> bool:
    return x is not None and any(lo <= x <= hi for lo, hi in ranges)


def identify(machine: dict) -> Microarchitecture:
    """The microarchitecture of a manifest's `machine` record."""
    machine = machine if isinstance(machine, dict) else {}
    vendor = _vendor(machine)
    fam, model, step = (_int(machine.get(k)) for k in ("cpu_family", "cpu_model_number", "stepping"))
    part = str(machine.get("cpu_part") or "").lower()
    for e in table().get("x86", []):
        if (e["vendor"] == vendor and fam == e["family"] and _in_ranges(model, e["models"])
                and ("steppings" not in e or _in_ranges(step, [e["steppings"]]))):
            return Microarchitecture(e["name"], vendor, e["source"], True)
    for e in table().get("arm", []):
        if e["vendor"] == vendor and part in [p.lower() for p in e["parts"]]:
            return Microarchitecture(e["name"], vendor, e["source"], True)
    if part:
        desc = f"{vendor or 'implementer ' + str(machine.get('cpu_implementer'))} part {part}"
    else:
        desc = f"{vendor or machine.get('cpu_model') or 'unknown CPU'} family {fam} model {model}"
        desc += f" stepping {step}" if step is not None else ""
    return Microarchitecture(desc, vendor, "", False)


def cpu_label(machine: dict, say_unknown: bool = False) -> str:
    """A machine record's CPU as doctor and the report name it: its model name and the
    microarchitecture this table knows it by, "AMD EPYC (Zen 4)"; an unknown one by the model name
    alone, or with what was looked up (say_unknown)."""
    machine = machine if isinstance(machine, dict) else {}
    model = machine.get("cpu_model") or machine.get("cpu") or "n/a"
    uarch = identify(machine)
    if uarch.known:
        return model if uarch.name in model else f"{model} ({uarch.name})"
    return f"{model} ({uarch.name}: not in data/microarchitectures.toml)" if say_unknown else model
