"""The PQClean layout: an implementation is the folder <scheme dir>/<implementation> of the PQClean
tree (e.g. crypto_kem/<scheme>/clean), namespaced <NAMESPACE>_<IMPLEMENTATION>, plus files of
common/; its KAT program is PQClean's test/ program with -DPQCLEAN_NAMESPACE.

[implementations.<name>] keys: `common` (files of common/ it links; PQClean's randombytes.c never,
the harness brings its own), `defines` (for the op table)."""

from __future__ import annotations

from pathlib import Path

from ..errors import PqsimdError
from .layout import Context, Plan, Unit

KEYS = ("common", "defines")


def check(table: dict, where: str) -> None:
    for key in KEYS:
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(x, str) and x for x in value):
            raise PqsimdError(f"{where}: `{key}` must be a list of strings, got {value!r}")


def groups(table: dict) -> dict[str, str]:
    return {}  # a PQClean implementation is one folder: all of it or none


def _dir(ctx: Context, scheme: str) -> Path | None:
    s = ctx.family.schemes[scheme]
    return None if s.dir is None else ctx.tree.root / s.dir / ctx.impl.name


def schemes(ctx: Context) -> list[str]:
    """The parameter sets the tree has this implementation of (a --source tree may hold a few)."""
    return [sid for sid in ctx.schemes if (d := _dir(ctx, sid)) is None or d.is_dir()]


def namespace(ctx: Context, scheme: str) -> str:
    return f"{ctx.family.schemes[scheme].namespace}_{ctx.impl.name.upper()}"


def plan(ctx: Context) -> Plan:
    tree, fam, impl = ctx.tree, ctx.family, ctx.impl
    common = tree.root / "common"
    names = impl.table.get("common", [])
    p = Plan()
    p.shared = [Unit(common / n, f"common.{n.replace('/', '_')}.o", (f"-I{common}",)) for n in names]
    for sid in schemes(ctx):
        d = _dir(ctx, sid)
        if d is not None and not d.is_dir():
            raise PqsimdError(f"{d} does not exist: the source tree has no '{impl.name}' implementation of {sid}")
        inc = ((f"-I{d}",) if d else ()) + (f"-I{common}",)
        p.schemes[sid] = [Unit(src, f"{sid}.{src.name}.o", inc)
                          for src in (sorted(d.iterdir()) if d else []) if src.suffix in (".c", ".S")]
        ns = namespace(ctx, sid)
        defs = (f"-DPQSIMD_NS={ns}", f'-DPQSIMD_SCHEME="{sid}"', f'-DPQSIMD_IMPL="{impl.name}"',
                *(f"-D{x}" for x in (*impl.table.get("defines", []), *fam.schemes[sid].defines)))
        p.tables[sid] = Unit(impl.op_table or fam.op_table, f"{sid}.ops.o", (*inc, f"-I{ctx.harness}", *defs))
        if d is not None:
            p.inputs += sorted(f for f in d.rglob("*") if f.is_file())
        if fam.kat:
            kat_common = [Unit(common / n, f"common.{n}.o" if n in names else f"katcommon.{n}.o", (f"-I{common}",))
                          for n in fam.kat.get("common", [])]
            rng = Unit(tree.root / fam.kat["rng"], "kat.rng.o", (f"-I{common}",))
            program = Unit(tree.root / fam.kat["program"], f"{sid}.nistkat.o", (f"-DPQCLEAN_NAMESPACE={ns}", *inc))
            p.kat[sid] = [u for u in kat_common if u.obj.startswith("katcommon.")] + [rng, program]
    p.inputs += [common / n for n in names] + sorted(common.glob("*.h"))
    if fam.kat:
        p.inputs += [tree.root / fam.kat["program"], tree.root / fam.kat["rng"]]
        p.inputs += [common / n for n in fam.kat.get("common", [])]
    p.inputs.append(impl.op_table or fam.op_table)
    return p
