"""The XKCP layout: the eXtended Keccak Code Package's lib/ as the pinned crate `xkcp-sys` vendors it
(`XKCP/lib`: common/ and low/, one folder per Keccak-p[1600] implementation and its config folders).
An implementation is a list of XKCP units (C and assembly) and the folders its headers are found in;
every XKCP implementation of one interface exports the same names (KeccakP1600_*,
KeccakP1600times4_*, KeccakP1600times8_*), so a build links exactly one of each, and the op table
(harness/ops/keccak.c) is compiled against the same headers. How the op table makes the 4-way and
8-way ops from what the implementation has (a loop of single permutations, two 4-way calls, or the
native N-way code) is its `defines`.

[implementations.<name>] keys (paths relative to `tree`):
  crate, tree     the pinned crate and XKCP's lib/ folder in it
  units           the XKCP sources (C and assembly), compiled once per build
  includes        the folders of the headers (the implementation's SnP.h and config folder first)
  defines         -D for the op tables (e.g. PQSIMD_KECCAK_X4=4: the native 4-way permutation)
  cflags          compiler flags every unit needs, before the variant's (the variant's still come last)
"""

from __future__ import annotations

from pathlib import Path

from ..errors import PqsimdError
from .layout import Context, Plan, Unit

KEYS = ("crate", "tree", "units", "includes", "defines", "cflags")


def check(table: dict, where: str) -> None:
    for key in ("crate", "tree"):
        if not isinstance(table.get(key), str) or not table.get(key):
            raise PqsimdError(f"{where}: `{key}` must be a non-empty string, got {table.get(key)!r}")
    for key in ("units", "includes", "defines", "cflags"):
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(x, str) and x for x in value) or \
                (key in ("units", "includes") and not value):
            raise PqsimdError(f"{where}: `{key}` must be a {'non-empty ' if key in ('units', 'includes') else ''}"
                              f"list of strings, got {value!r}")


def groups(table: dict) -> dict[str, str]:
    return {}  # one XKCP implementation per build: all of it or none


def _root(ctx: Context) -> Path:
    root = ctx.tree.crate_root(ctx.impl.table.get("crate") or "", f"implementation {ctx.impl.name}") / ctx.impl.table["tree"]
    if not (root / "low").is_dir():
        raise PqsimdError(f"{root} is not XKCP's lib/ (no low/): the pinned crate {ctx.impl.table.get('crate')} has no "
                          f"XKCP there ([implementations.{ctx.impl.name}] tree)")
    return root


def schemes(ctx: Context) -> list[str]:
    _root(ctx)
    return list(ctx.schemes)


def _existing(root: Path, rel: str, what: str) -> Path:
    p = root / rel
    if not p.exists():
        raise PqsimdError(f"{p} is missing from the source tree (a {what} of {root})")
    return p


def plan(ctx: Context) -> Plan:
    t, fam = ctx.impl.table, ctx.family
    root = _root(ctx)
    incs = tuple(f"-I{_existing(root, d, 'header folder')}" for d in t["includes"])
    pre = (*t.get("cflags", []), *incs)
    p = Plan()
    p.shared = [Unit(_existing(root, u, "unit"), f"xkcp.{u.replace('/', '_')}.o", pre) for u in t["units"]]
    for sid in schemes(ctx):
        p.schemes[sid] = []
        p.tables[sid] = Unit(ctx.impl.op_table or fam.op_table, f"{sid}.ops.o",
                             (*pre, f"-I{ctx.harness}", f"-I{ctx.harness}/ops",
                              f"-DPQSIMD_NS={fam.schemes[sid].namespace}_{ctx.impl.name.upper().replace('-', '_')}",
                              f'-DPQSIMD_SCHEME="{sid}"', f'-DPQSIMD_IMPL="{ctx.impl.name}"',
                              *(f"-D{d}" for d in (*t.get("defines", []), *fam.schemes[sid].defines))))
    p.inputs = sorted({u.src for u in p.shared} | {f for d in t["includes"] for f in (root / d).glob("*")
                                                   if f.is_file()})
    p.inputs.append(ctx.impl.op_table or fam.op_table)
    return p
