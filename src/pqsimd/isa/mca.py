"""The scheduling model llvm-mca really uses for a -mcpu name (data/mca_models.toml, generated and
checked by bench/mca_models.py). Many names borrow another core's model: with LLVM 16 cortex-a72,
cortex-a76 and neoverse-n1 get Cortex-A57's, and apple-m1 gets Cyclone's (2013) in every version,
so an estimate is labelled with the model, never with the -mcpu name alone."""

from __future__ import annotations

import re
from functools import cache

from .. import catalog


@cache
def _models() -> dict:
    return catalog._toml(catalog._data_text("mca_models.toml"), "mca_models.toml")


def llvm_major(version: str) -> str | None:
    """'llvm-mca 19.1.7' (run/costmodel.mca_version) or '19.1.7' -> '19'."""
    m = re.search(r"(\d+)\.\d+", version)
    return m.group(1) if m else None


def model(version: str, isa: str, cpu: str) -> dict | None:
    """{"model", "same_as", "resource"} for this llvm-mca version, ISA and -mcpu; None if not recorded."""
    major = llvm_major(version)
    return _models().get(f"llvm{major}", {}).get(isa, {}).get(cpu) if major else None


def label(version: str, isa: str, cpu: str) -> str:
    """How a report names an estimate: 'apple-m1 (Apple Cyclone (A7, 2013) model)'."""
    m = model(version, isa, cpu)
    if m is None:
        return f"{cpu} (model not recorded for {version}: run bench/mca_models.py)"
    return f"{cpu} ({m['model']} model)"
