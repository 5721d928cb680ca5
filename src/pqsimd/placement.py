"""Where every object an op touches sits in a laid-out copy (layout.py), and where two copies differ.

An op's **call tree** is its function and every function it reaches by direct calls and jumps
(binary/: the same tree as the code hash and the code size), plus every data object those functions
address (RIP-relative operands, aarch64's adrp pairs: constants, tables, static buffers, the symbol that
contains the address). Each object
is placed by its start address modulo 64 (the cache line and fetch block), modulo 4096 (the page
offset: L1 sets and 4K aliasing between loads and stores) and its page, and by how many 64-byte lines
it spans. The stack a copy's op runs on is placed by the copy's stack offset only: under address-space
randomization (Linux `randomize_va_space`) the stack's own address modulo 4096 changes with every
process, and so do the pages a library is mapped at; a placement that lives in those bits is the
process's, not the copy's.

Static: nm and objdump on the copies' bytes, nothing is timed. analyze/cliffs.py reads the differences;
run/retime.py's search moves objects and times the result.
"""

from __future__ import annotations

from pathlib import Path

from .binary import LINE, Sym, library, symbols  # noqa: F401  (symbols: where a copy's objects sit)

PAGE = 4096


class Image:
    """One copy's call trees and the objects they touch (binary/: nm and objdump read once)."""

    def __init__(self, library_path: Path, objdump: list[str] | None = None):
        self.library = Path(library_path)
        self.lib = library(self.library, objdump)
        self.syms = self.lib.symbols

    def data_at(self, addr: int) -> Sym | None:
        return self.lib.data_at(addr)

    def call_tree(self, start: int) -> list[Sym]:
        """The op's function, the functions of its call tree (binary.Library.tree) and the data objects
        they address: each once, the op's function first."""
        tree = self.lib.tree(start)
        data: dict[int, Sym] = {}
        out = []
        for a in tree.functions:
            name = self.lib.funcs[a].name
            anonymous: dict[int, int] = {}
            for at in tree.refs.get(a, []):
                s = self.lib.data_at(at)
                if s is None:
                    # a constant without a symbol of its own (gcc's .LC pools, merged by the linker):
                    # named by the function that reads it and the order of first use, the same in every copy
                    k = anonymous.setdefault(at, len(anonymous))
                    s = Sym(f"{name}:const{k}", at, 0, "rodata")
                data.setdefault(s.addr, s)
            s = self.lib.code_symbol(a)
            out.append(s if s is not None else Sym(name, a, 0, "code"))
        return out + sorted(data.values(), key=lambda s: s.addr)


def where(image: Image, offsets: dict[str, int], ops: list[str] | None = None) -> list[dict]:
    """Rows (op, object, kind, addr, size, mod64, mod4096, page, lines) of every object of each op's
    call tree (offsets: op -> its function, driver `where`)."""
    rows = []
    for op, start in offsets.items():
        if ops is not None and op not in ops:
            continue
        for s in image.call_tree(start):
            rows.append({"op": op, "object": s.name, "kind": s.kind, "addr": s.addr, "size": s.size,
                         "mod64": s.addr % LINE, "mod4096": s.addr % PAGE, "page": s.addr // PAGE,
                         "lines": s.lines})
    return rows


def differences(a: list[dict], b: list[dict]) -> list[dict]:
    """Per (op, object) of both copies: its placement in each and which of mod 64, mod 4096, page
    and lines spanned differ (an object only one copy's call tree holds is listed with `only`)."""
    ka = {(r["op"], r["object"], r["kind"]): r for r in a}
    kb = {(r["op"], r["object"], r["kind"]): r for r in b}
    out = []
    for key in list(ka) + [k for k in kb if k not in ka]:
        ra, rb = ka.get(key), kb.get(key)
        row = {"op": key[0], "object": key[1], "kind": key[2]}
        if ra is None or rb is None:
            out.append(row | {"only": "a" if rb is None else "b", "differs": "present"})
            continue
        differs = [k for k in ("mod64", "mod4096", "page", "lines") if ra[k] != rb[k]]
        out.append(row | {"size": ra["size"], "addr_a": ra["addr"], "addr_b": rb["addr"],
                          "mod64_a": ra["mod64"], "mod64_b": rb["mod64"], "mod4096_a": ra["mod4096"],
                          "mod4096_b": rb["mod4096"], "lines_a": ra["lines"], "lines_b": rb["lines"],
                          "only": "", "differs": ",".join(differs)})
    return out


def aliasing_pairs(rows: list[dict], op: str, window: int = 64) -> list[tuple[str, str, int]]:
    """Pairs of writable data objects of one op's call tree whose start addresses lie within `window`
    bytes of each other modulo 4096 (a load from one and a store to the other can then alias in the
    store buffer's 12-bit address check): (object, object, distance mod 4096)."""
    data = [r for r in rows if r["op"] == op and r["kind"] in ("data", "bss", "rodata")]
    out = []
    for i, x in enumerate(data):
        for y in data[i + 1:]:
            d = (y["addr"] - x["addr"]) % PAGE
            d = min(d, PAGE - d)
            if d < window and (x["kind"] != "rodata" or y["kind"] != "rodata"):
                out.append((x["object"], y["object"], d))
    return out
