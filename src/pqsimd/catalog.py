"""The shipped data: variants, presets and scheme families (TOML files in pqsimd/data/)."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from .errors import PqsimdError


@dataclass(frozen=True)
class Variant:
    id: str
    sources: str  # PQClean implementation directory: "clean" | "avx2"
    flags: tuple[str, ...]
    clang_flags: tuple[str, ...] | None = None
    description: str = ""
    default: bool = False
    requires_cpu: tuple[str, ...] = ()
    node_dependent: bool = False

    def flags_for(self, cc_is_clang: bool) -> tuple[str, ...]:
        return self.clang_flags if (cc_is_clang and self.clang_flags is not None) else self.flags

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "sources": self.sources,
            "flags": list(self.flags),
            "description": self.description,
            "default": self.default,
            "requires_cpu": list(self.requires_cpu),
            "node_dependent": self.node_dependent,
        }
        if self.clang_flags is not None:
            d["clang_flags"] = list(self.clang_flags)
        return d


@dataclass(frozen=True)
class SchemeFamily:
    family: str
    op_table: str
    kat_program: str
    kat_rng: str
    kat_common: tuple[str, ...]
    schemes: dict[str, dict[str, str]]  # scheme id -> {dir, namespace}
    common: dict[str, tuple[str, ...]]  # impl -> common files
    ops: tuple[str, ...]
    labels: dict[str, str] = field(default_factory=dict)


def _load(name: str) -> dict[str, Any]:
    text = resources.files("pqsimd.data").joinpath(name).read_text()
    return tomllib.loads(text)


def variant_from_dict(vid: str, d: dict[str, Any], where: str) -> Variant:
    if "sources" not in d or "flags" not in d:
        raise PqsimdError(f"variant '{vid}' in {where} needs `sources` (clean|avx2) and `flags` (a list)")
    if not isinstance(d["flags"], list) or not all(isinstance(f, str) for f in d["flags"]):
        raise PqsimdError(f"variant '{vid}' in {where}: `flags` must be a list of strings")
    return Variant(
        id=vid,
        sources=str(d["sources"]),
        flags=tuple(d["flags"]),
        clang_flags=tuple(d["clang_flags"]) if "clang_flags" in d else None,
        description=str(d.get("description", "")),
        default=bool(d.get("default", False)),
        requires_cpu=tuple(d.get("requires_cpu", ())),
        node_dependent=bool(d.get("node_dependent", False)),
    )


@cache
def builtin_variants() -> dict[str, Variant]:
    return {vid: variant_from_dict(vid, d, "variants.toml") for vid, d in _load("variants.toml").items()}


@cache
def presets() -> dict[str, dict[str, Any]]:
    return _load("presets.toml")


@cache
def ml_kem() -> SchemeFamily:
    d = _load("ml-kem.toml")
    return SchemeFamily(
        family=d["family"],
        op_table=d["op_table"],
        kat_program=d["kat_program"],
        kat_rng=d["kat_rng"],
        kat_common=tuple(d["kat_common"]),
        schemes=d["schemes"],
        common={k: tuple(v) for k, v in d["common"].items()},
        ops=tuple(d["ops"]["order"]),
        labels=dict(d["ops"].get("labels", {})),
    )


def families() -> list[SchemeFamily]:
    """Every scheme family pqsimd can time (ML-DSA and SLH-DSA will add theirs here)."""
    return [ml_kem()]


def family_of(scheme: str) -> SchemeFamily:
    for fam in families():
        if scheme in fam.schemes:
            return fam
    valid = ", ".join(s for fam in families() for s in fam.schemes)
    raise PqsimdError(f"unknown scheme '{scheme}'; valid schemes: {valid}")
