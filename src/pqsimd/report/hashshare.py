"""The hash share view (issue 44), a registered part (report/parts.py): each counted op's instructions per call
inside the hash entry points of data/hash.toml over its instructions per call, and the Amdahl bound that puts
on a faster hash (results/hash_share, written by analyze/hashshare.py). A table per family in the report
(hashshare/table_hash_share_<family>), a section in `pqsimd show`; nothing when results/ has no hash share."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..results import Results, read_table
from . import fmt

CAPTION = ("Instructions per call inside the hash entry points (Keccak, SHA-3, SHA-2: data/hash.toml; exact counts "
           "from callgrind's call arcs, or for AVX-512 builds from single-stepping them natively: the same count) over "
           "the op's instructions per call, and the Amdahl bound that share puts on a faster hash: the op runs at most "
           "1 / (1 − share) times faster however fast the hash gets. Builds counted by the QEMU plugin (aarch64, "
           "riscv64) have no share.")
HEADER = ["op", "parameter set", "variant", "instructions/call", "hashed/call", "hash share", "Amdahl bound"]


def load(study: Results) -> pd.DataFrame:
    return read_table(study.directory, "hash_share", strict=False)


def rows(study: Results, df: pd.DataFrame, fam, compiler: str | None) -> list[list[str]]:
    """One row per (op, parameter set, variant) of the family, in the family's op order and the study's
    variant order, within `compiler` (the study's first when None)."""
    comp = compiler or study.primary_compiler
    d = df[df["scheme"].isin(fam.schemes) & ((df["compiler"] == comp) if comp else True)]
    order = {v: i for i, v in enumerate(study.variants)}
    out = []
    for op in fam.sort_ops(set(d["op"])):
        prev = None
        for scheme in fam.schemes:
            sub = d[(d["op"] == op) & (d["scheme"] == scheme)]
            for r in sorted(sub.itertuples(index=False), key=lambda r: order.get(r.variant, len(order))):
                out.append([fam.label(op) if prev != op else "", fam.scheme_label(scheme), r.variant,
                            fmt.quantity(r.instructions), fmt.quantity(r.hashed), fmt.pct(r.share),
                            "∞" if not fmt.is_missing(r.share) and r.share >= 1 else fmt.times(r.amdahl_bound)])
                prev = op
    return out


def hash_share_parts(study: Results, outdir: Path) -> tuple[list, list]:
    """([], [Table]) of the hash share, one per family with rows; empty without results/hash_share."""
    from .tables import family_part_tables

    df = load(study)
    return family_part_tables(study, df, outdir, "hashshare", "table_hash_share",
                              lambda fam: f"{fam.title}: how much of each op is hashing", CAPTION, HEADER,
                              lambda fam: rows(study, df, fam, None), "lll" + "r" * (len(HEADER) - 3))


def show(study: Results, con, metric: str | None = None, compiler: str | None = None) -> None:
    """`pqsimd show`: the hash share per family (nothing without results/hash_share)."""
    from .terminal import show_family_parts

    df = load(study)
    show_family_parts(study, con, df, lambda fam: f"{fam.title} · how much of each op is hashing", CAPTION, HEADER,
                      lambda fam: rows(study, df, fam, compiler), 3)
