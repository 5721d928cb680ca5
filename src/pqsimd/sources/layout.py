"""The contract of a source layout: how an implementation's C files are found and compiled.

A layout is one module of pqsimd/sources/ (its name, with '-' for '_', is what a family TOML's
`layout` says). It defines:

    KEYS                      the keys it reads from [implementations.<name>] beyond the common
                              ones (catalog.IMPLEMENTATION_KEYS)
    check(table, where)       every problem of those keys, one line each, when the family is loaded
    groups(table)             the implementation's kernel groups that can be switched between its
                              portable C and its native code (name -> label, in order; {} if none)
    schemes(ctx)              the parameter sets the trees hold this implementation of
    plan(ctx) -> Plan         every compile of a build, the files it depends on and the files it
                              generates

A Plan may name libraries every link needs (`libs`, e.g. -lm). build.py does the rest for every layout alike: the object and build caches, the link of the
shared object (units + op tables + the harness glue), the KAT program's link, the records.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BUILD_DIR = "{build}"  # in a unit's flags: the build folder (generated files live there)


@dataclass(frozen=True)
class Context:
    tree: Any  # sources.SourceTree
    family: Any  # catalog.Family
    impl: Any  # catalog.Implementation
    schemes: tuple[str, ...]  # the parameter sets to build
    native: frozenset[str]  # the implementation's groups switched to their native code
    harness: Path  # pqsimd/harness


@dataclass(frozen=True)
class Unit:
    """One compile: source, object file name in the build folder, and the flags before the
    variant's (includes, defines; BUILD_DIR stands for the build folder)."""

    src: Path
    obj: str
    pre: tuple[str, ...] = ()


@dataclass
class Plan:
    shared: list[Unit] = field(default_factory=list)  # once per build (code every parameter set uses)
    schemes: dict[str, list[Unit]] = field(default_factory=dict)  # per parameter set: its code
    tables: dict[str, Unit] = field(default_factory=dict)  # per parameter set: the op table
    kat: dict[str, list[Unit]] = field(default_factory=dict)  # per set: the KAT program's own units
    generated: dict[str, str] = field(default_factory=dict)  # file name in the build folder -> text
    inputs: list[Path] = field(default_factory=list)  # every file the build depends on (cache key)
    libs: list[str] = field(default_factory=list)  # libraries the links need after the objects (e.g. -lm)

    def units(self) -> list[Unit]:
        """Every distinct compile (a unit shared by several links is compiled once)."""
        seen: dict[str, Unit] = {}
        for u in [*self.shared, *(u for us in self.schemes.values() for u in us), *self.tables.values(),
                  *(u for us in self.kat.values() for u in us)]:
            seen.setdefault(u.obj, u)
        return list(seen.values())
