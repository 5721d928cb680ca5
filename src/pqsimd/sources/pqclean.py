"""The PQClean layout: an implementation is the folder <scheme dir>/<implementation> of the PQClean
tree (e.g. crypto_kem/<scheme>/clean), namespaced <NAMESPACE>_<IMPLEMENTATION>, plus files of
common/; its KAT program is PQClean's test/ program with -DPQCLEAN_NAMESPACE.

[implementations.<name>] keys: `common` (files of common/ it links; PQClean's randombytes.c never,
the harness brings its own), `defines` (for the op table), `folder` (the implementation's folder and
namespace when they are another implementation's: ML-KEM's AVX-512VL one is PQClean's AVX2 folder), `crate_units`
(units of another pinned crate linked in, e.g. XKCP's AVX-512VL 4-way Keccak in place of common/keccak4x:
{crate, tree, units, includes, cflags}; cflags are for those units only and come before the variant's)."""

from __future__ import annotations

from pathlib import Path

from ..errors import PqsimdError
from .layout import Context, Plan, Unit

KEYS = ("common", "defines", "folder", "crate_units")
CRATE_UNIT_KEYS = ("crate", "tree", "units", "includes", "cflags")


def check(table: dict, where: str) -> None:
    folder = table.get("folder")
    if folder is not None and (not isinstance(folder, str) or not folder or "/" in folder):
        raise PqsimdError(f"{where}: `folder` must name an implementation folder of the PQClean tree, got {folder!r}")
    cu = table.get("crate_units")
    if cu is not None:
        if not isinstance(cu, dict) or sorted(set(cu) - set(CRATE_UNIT_KEYS)):
            raise PqsimdError(f"{where}: `crate_units` must be a table of {', '.join(CRATE_UNIT_KEYS)}, got {cu!r}")
        for key in ("crate", "tree"):
            if not isinstance(cu.get(key), str) or not cu.get(key):
                raise PqsimdError(f"{where}: crate_units `{key}` must be a non-empty string, got {cu.get(key)!r}")
        for key in ("units", "includes", "cflags"):
            value = cu.get(key, [])
            if not isinstance(value, list) or not all(isinstance(x, str) and x for x in value) or (key == "units" and not value):
                raise PqsimdError(f"{where}: crate_units `{key}` must be a list of strings, got {value!r}")
    for key in ("common", "defines"):
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(x, str) and x for x in value):
            raise PqsimdError(f"{where}: `{key}` must be a list of strings, got {value!r}")


def groups(table: dict) -> dict[str, str]:
    return {}  # a PQClean implementation is one folder: all of it or none


def _dir(ctx: Context, scheme: str) -> Path | None:
    s = ctx.family.schemes[scheme]
    return None if s.dir is None else ctx.tree.root / s.dir / _folder(ctx)


def _folder(ctx: Context) -> str:
    return ctx.impl.table.get("folder") or ctx.impl.name


def schemes(ctx: Context) -> list[str]:
    """The parameter sets the tree has this implementation of (a --source tree may hold a few)."""
    return [sid for sid in ctx.schemes if (d := _dir(ctx, sid)) is None or d.is_dir()]


def namespace(ctx: Context, scheme: str) -> str:
    return f"{ctx.family.schemes[scheme].namespace}_{_folder(ctx).upper()}"


def plan(ctx: Context) -> Plan:
    tree, fam, impl = ctx.tree, ctx.family, ctx.impl
    common = tree.root / "common"
    names = impl.table.get("common", [])
    p = Plan()
    p.shared = [Unit(common / n, f"common.{n.replace('/', '_')}.o", (f"-I{common}",)) for n in names]
    cu = impl.table.get("crate_units")
    if cu:
        croot = tree.crate_root(cu["crate"], f"implementation {impl.name}") / cu["tree"]
        pre = (*cu.get("cflags", []), *(f"-I{croot / d}" for d in cu.get("includes", [])))
        for u in cu["units"]:
            if not (croot / u).is_file():
                raise PqsimdError(f"{croot / u} is missing from the pinned crate {cu['crate']} (a unit of {impl.name})")
            p.shared.append(Unit(croot / u, f"crate.{u.replace('/', '_')}.o", pre))
            p.inputs.append(croot / u)
        p.inputs += sorted(f for d in cu.get("includes", []) for f in (croot / d).glob("*") if f.is_file())
    for sid in schemes(ctx):
        d = _dir(ctx, sid)
        if d is not None and not d.is_dir():
            raise PqsimdError(f"{d} does not exist: the source tree has no '{_folder(ctx)}' implementation of {sid}")
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
