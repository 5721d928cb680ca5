"""Code bytes reachable from an op's entry (`--metric size`, run/stack.py): static, nm and objdump.

An op's **call tree** is binary.Library.tree's: its function (driver `where`: the op table's entry)
and every function it reaches by direct calls, jumps and conditional jumps (the ISA's patterns,
data/isas.toml [binary]), and, where a hand-written assembly routine has local labels that objdump splits
it at, the piece it falls through into. Its size is counted once per op:

    code     every function of the tree: its ELF size (nm -S), or for a routine without one (assembly)
             the bytes of its instructions up to its last one that is not alignment padding (nop,
             int3, udf): the same in a build and in every laid-out copy of it
    rodata   every read-only data object (nm kind r) the tree's instructions address: x86-64 RIP-relative
             operands and riscv64 auipc pairs (objdump's `# addr <sym>`), aarch64 adrp + add/ldr pairs;
             each once
    unsized  references to read-only bytes without a symbol of their own (gcc's .LC constant pools):
             counted by number, not bytes

Not counted: code outside the shared object (libc's memcpy through the PLT: named in `external`), functions reached only
through a pointer (the tree's `indirect` calls are counted by number), writable data and bss.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from pathlib import Path

from .binary import library


@dataclass
class Size:
    code: int
    rodata: int
    functions: int
    objects: int
    unsized: int  # references to read-only bytes without a symbol
    indirect: int  # indirect calls in the tree (their targets are not followed)
    external: list[str]  # functions called through the PLT (outside the library: not counted)
    members: list[tuple[str, str, int]]  # (kind, name, bytes)

    @property
    def total(self) -> int:
        return self.code + self.rodata


class Image:
    """One shared object's call trees counted in bytes (binary/: nm and objdump read once)."""

    def __init__(self, library_path: Path, objdump: list[str] | None = None):
        self.library = Path(library_path)
        self.lib = library(self.library, objdump)
        self.funcs = self.lib.funcs
        syms = self.lib.symbols
        self.ro = [s for s in syms if s.kind == "rodata" and s.size > 0]
        self.ro_starts = [s.addr for s in self.ro]
        self.other = sorted((s.addr, s.addr + max(s.size, 1)) for s in syms if s.kind in ("data", "bss"))

    def rodata_at(self, addr: int):
        i = bisect.bisect_right(self.ro_starts, addr) - 1
        if i >= 0 and self.ro[i].addr <= addr < self.ro[i].addr + self.ro[i].size:
            return self.ro[i]
        return None

    def _writable(self, addr: int) -> bool:
        i = bisect.bisect_right(self.other, (addr, float("inf"))) - 1
        return i >= 0 and self.other[i][0] <= addr < self.other[i][1]

    def size_of(self, start: int) -> int:
        return self.lib.size_of(start)

    def tree(self, start: int) -> Size:
        tree = self.lib.tree(start)
        seen = [a for a in tree.functions if not self.funcs[a].external]
        ro: dict[int, object] = {}
        unsized: set[int] = set()
        for a in seen:
            for r in tree.refs.get(a, []):
                s = self.rodata_at(r)
                if s is not None:
                    ro[s.addr] = s
                elif r not in self.funcs and not self._writable(r) and not self.lib.in_code(r):
                    unsized.add(r)
        members = [("code", self.funcs[a].name, self.size_of(a)) for a in sorted(seen)]
        members += [("rodata", s.name, s.size) for s in sorted(ro.values(), key=lambda s: s.addr)]
        return Size(code=sum(n for k, _, n in members if k == "code"), rodata=sum(s.size for s in ro.values()),
                    functions=len(seen), objects=len(ro), unsized=len(unsized), indirect=tree.indirect,
                    external=tree.external, members=members)

    def callees(self, start: int) -> set[str]:
        """Names of the functions the function at `start` calls or jumps to directly (a PLT stub by the
        function's own name)."""
        return self.lib.callees(start)


def op_sizes(library_path: Path, offsets: dict[str, int], objdump: list[str] | None = None) -> dict[str, Size]:
    """op -> its call tree's Size (offsets: op -> its function, driver `where`)."""
    img = Image(library_path, objdump)
    return {op: img.tree(start) for op, start in offsets.items()}
