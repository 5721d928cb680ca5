"""An ablation: one variant built with subsets of its implementation's kernel groups on native code
(`pqsimd run --ablation`), each subset a variant of its own (a cell), all timed in the same paired
jobs; analyze/attribution.py turns the comparisons all-C cell -> cell into each group's share.

With k <= MAX_FACTORIAL groups every subset is built (the full 2^k factorial: Shapley shares);
with more, the all-C and full cells, each group alone and each group left out (leave-one-out and
add-one-in, 2k + 2 cells). Every cell is built with the variant's flags, so the all-C cell is the
portable C compiled as the native code is (the backend's instruction set everywhere).

Cell ids: <variant>+<group>+<group>... in the implementation's group order, <variant>+none for the
all-C cell (ids.py: '+' is allowed, '.' never)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

from . import ids
from .catalog import Family, Variant
from .errors import PqsimdError

MAX_FACTORIAL = 5
NONE = "none"


@dataclass(frozen=True)
class Ablation:
    family: str
    variant: str  # the variant whose groups are switched
    implementation: str
    groups: tuple[str, ...]
    cells: dict[str, tuple[str, ...]]  # cell variant id -> groups on native code

    @property
    def factorial(self) -> bool:
        return len(self.groups) <= MAX_FACTORIAL

    def describe(self) -> str:
        k = len(self.groups)
        if self.factorial:
            how = f"the full 2^{k} factorial ({len(self.cells)} cells): Shapley shares"
        else:
            how = (f"{k} groups > {MAX_FACTORIAL}: leave-one-out and add-one-in only ({len(self.cells)} cells, not the "
                   f"2^{k} = {2 ** k} of the factorial), no Shapley shares")
        return f"ablation of {self.variant} ({self.family}): groups {', '.join(self.groups)}; {how}, in one paired study"

    def to_manifest(self) -> dict:
        """The manifest's `ablations` record, which analyze reads (analyze/__init__.py)."""
        return {"family": self.family, "variant": self.variant, "implementation": self.implementation,
                "groups": list(self.groups), "design": "factorial" if self.factorial else "one-at-a-time",
                "cells": {v: list(g) for v, g in self.cells.items()}}


def cell_id(variant: str, on: tuple[str, ...]) -> str:
    cid = "+".join((variant, *(on or (NONE,))))
    return ids.check_id("variant", cid, f"the ablation of {variant}",
                        hint="; give the implementation's groups shorter names in its family TOML")


def subsets(groups: tuple[str, ...]) -> list[tuple[str, ...]]:
    k = len(groups)
    if k <= MAX_FACTORIAL:
        return [tuple(g for g, bit in zip(groups, bits) if bit) for bits in itertools.product((0, 1), repeat=k)]
    out = [(), groups, *((g,) for g in groups), *(tuple(x for x in groups if x != g) for g in groups)]
    return list(dict.fromkeys(out))


def of_family(fam: Family, variants: dict[str, Variant], isa: str | None = None) -> Ablation:
    """The family's ablation ([ablation] variant = ..., or the ISA's own in [ablation.isa]): one line if it
    has none or it is unusable."""
    name = (fam.ablation.get("isa") or {}).get(isa) or fam.ablation.get("variant")
    if not name:
        raise PqsimdError(f"family {fam.name} has no [ablation] in {fam.source}; --ablation needs a family whose "
                          f"implementation has kernel groups (e.g. ml-kem, ml-dsa): drop it from --schemes")
    base = variants.get(name)
    if base is None:
        raise PqsimdError(f"{fam.source}: [ablation] variant {name!r} is not a variant of data/variants.toml or the "
                          f"study's study.toml")
    impl = fam.implementation(base.sources)
    if impl is None or not impl.groups:
        raise PqsimdError(f"{fam.source}: [ablation] variant {name!r} builds {base.sources}, which has no kernel "
                          f"groups to switch")
    groups = tuple(impl.groups)
    cells = {cell_id(name, s): s for s in subsets(groups)}
    return Ablation(fam.name, name, impl.name, groups, cells)


def cell_variants(ab: Ablation, variants: dict[str, Variant]) -> dict[str, Variant]:
    """Each cell as a variant: the ablated variant with its groups switched as the cell says."""
    base = variants[ab.variant]
    return {vid: replace(base, id=vid, native=on, default=False,
                         description=f"{ab.variant} with native {', '.join(on) if on else 'nothing'} "
                                     f"(ablation cell)")
            for vid, on in ab.cells.items()}
