"""Where every object an op touches sits in a laid-out copy (layout.py), and where two copies differ.

An op's **call tree** is its function and every function it reaches by direct calls and jumps
(verify/codehash.py's disassembly), plus every data object those functions address RIP-relatively
(constants, tables, static buffers: the symbol that contains the address objdump names). Each object
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

import bisect
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .disassembly import disassemble, normalize
from .errors import PqsimdError

KINDS = {"t": "code", "r": "rodata", "d": "data", "b": "bss"}
LINE, PAGE = 64, 4096
RIP_REF = re.compile(r"#\s*([0-9a-f]+)\s*<([^>]+)>")


@dataclass(frozen=True)
class Sym:
    name: str
    addr: int
    size: int
    kind: str  # code | rodata | data | bss

    @property
    def lines(self) -> int:
        """64-byte lines the object spans."""
        if self.size <= 0:
            return 1
        return (self.addr + self.size - 1) // LINE - self.addr // LINE + 1


def symbols(library: Path) -> list[Sym]:
    """Every sized symbol the library defines (functions and data objects), by address."""
    try:
        proc = subprocess.run(["nm", "-S", "--defined-only", str(library)], capture_output=True, text=True,
                              timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise PqsimdError(f"nm cannot read {library.name} ({e})") from None
    if proc.returncode:
        raise PqsimdError(f"nm cannot read {library.name}: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    out = []
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2].lower() in KINDS:
            out.append(Sym(parts[3], int(parts[0], 16), int(parts[1], 16), KINDS[parts[2].lower()]))
    return sorted(set(out), key=lambda s: (s.addr, s.name))


class Image:
    """One copy's symbols and disassembly, read once."""

    def __init__(self, library: Path):
        self.library = Path(library)
        self.syms = symbols(self.library)
        try:
            self.funcs = disassemble(self.library)
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
            raise PqsimdError(f"objdump cannot read {self.library.name} ({e})") from None
        self._data = [s for s in self.syms if s.kind != "code"]
        self._starts = [s.addr for s in self._data]
        self._code = {s.addr: s for s in self.syms if s.kind == "code"}

    def data_at(self, addr: int) -> Sym | None:
        i = bisect.bisect_right(self._starts, addr) - 1
        if i >= 0:
            s = self._data[i]
            if s.addr <= addr < s.addr + max(s.size, 1):
                return s
        return None

    def call_tree(self, start: int) -> list[Sym]:
        """The op's function, the functions it reaches by direct calls and jumps, and the data objects
        they address RIP-relatively: each once, the op's function first."""
        if start not in self.funcs:
            raise PqsimdError(f"{self.library.name}: no function starts at offset {start:#x}")
        seen, todo, data = [], [start], {}
        while todo:
            a = todo.pop()
            if a in seen or a not in self.funcs:
                continue
            seen.append(a)
            name = self.funcs[a][0]
            anonymous: dict[int, int] = {}
            for insn in self.funcs[a][1]:
                text, targets = normalize(insn)
                if text.startswith(("call", "jmp", "j")):
                    todo += [t for t in targets if t in self.funcs and t != a]
                m = RIP_REF.search(insn)
                if m and not text.startswith(("call", "jmp", "j")):
                    at = int(m.group(1), 16)
                    s = self.data_at(at)
                    if s is None:
                        # a constant without a symbol of its own (gcc's .LC pools, merged by the linker):
                        # named by the function that reads it and the order of first use, the same in every copy
                        k = anonymous.setdefault(at, len(anonymous))
                        s = Sym(f"{name}:const{k}", at, 0, "rodata")
                    data.setdefault(s.addr, s)
        out = []
        for a in seen:
            name = self.funcs[a][0]
            s = self._code.get(a)
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
