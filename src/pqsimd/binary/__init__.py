"""The one reader of a built library: nm and objdump run once per library, one call tree per op.

    library(path)        the Library of a shared object, cached by its sha256 (and the objdump that
                         read it): nm -S and objdump -d -w each run at most once per library and
                         process, whichever of the code hash, placement, code size, the stack bound
                         or the layout check asks first
    Library.symbols      every sized symbol it defines (functions and data objects), by address
    Library.functions()  (name, size) of every function symbol: the layout check's structure
    Library.funcs        address -> Func (name, instructions with their lengths) of every function
    Library.function_at(addr)  the function holding an address (the hazards metric's sites)
    Library.tree(start)  the op's call tree (Tree): the function at `start` and every function it
                         reaches by a direct call, jump or conditional jump (a conditional tail jump
                         included), a hand-written routine's unsized piece it falls through into, the
                         data it addresses; a call through the PLT is a leaf (`external`)

What a branch, a call, a conditional jump, an indirect call, the end of a routine, alignment padding and
a data reference look like in objdump's text is the ISA's data (data/isas.toml [isa.<name>.binary],
binary/patterns.py); the ISA is the library's own (its ELF header's e_machine, `elf_machine`), and so is
the objdump that reads it (isa.Isa.objdump). A fourth ISA is a table there: no code here names one.

Consumers: verify/codehash.py (the hash of a tree's instructions), placement.py (where the tree's objects
sit), codesize.py (the tree's bytes), run/stack.py (the op function's callees for the stack bound) and
verify/layouts.py (a copy's functions).
"""

from __future__ import annotations

import bisect
import re
import subprocess
import threading
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import PqsimdError
from ..store import sha256_file
from .patterns import Patterns, elf_isa, of_isa

KINDS = {"t": "code", "r": "rodata", "d": "data", "b": "bss"}
LINE = 64
HEADER = re.compile(r"^([0-9a-f]+) <(.+)>:$")
INSN = re.compile(r"^\s*([0-9a-f]+):\t([0-9a-f ]+?)\s*(?:\t(.*))?$")
TARGET = re.compile(r"\b([0-9a-f]+) <([^>]+)>")
CACHED = 8  # libraries kept read in one process (a re-timing's search reads many copies once each)


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


@dataclass
class Func:
    name: str
    insns: list[tuple[int, int, str]] = field(default_factory=list)  # (address, bytes, text)

    @property
    def external(self) -> bool:
        """A PLT stub: a call out of the library (libc), not the op's code."""
        return "@plt" in self.name

    def texts(self) -> list[str]:
        return [t for _, _, t in self.insns]


@dataclass
class Tree:
    """One op's call tree: its functions in the order they were reached (the op's first), the addresses
    each one's instructions refer to as data (in instruction order), indirect calls (not followed) and the
    functions called out of the library."""
    start: int
    functions: list[int]
    refs: dict[int, list[int]]
    indirect: int
    external: list[str]


def targets(text: str) -> list[int]:
    """The addresses an instruction names (objdump's `ADDR <symbol>`)."""
    return [int(a, 16) for a, _ in TARGET.findall(text)]


COMMENT_ADDR = re.compile(r"#\s*[0-9a-f]+\s*(<[^>]+>)")


def normalize(text: str, patterns: Patterns) -> str:
    """The instruction without addresses (the code hash's text): a named address becomes its symbol,
    an operand holding an address (the ISA's `address`) its `address_as`."""
    text = COMMENT_ADDR.sub(r"\1", text)
    text = TARGET.sub(r"<\2>", text)
    if patterns.address is not None:
        text = patterns.address.sub(patterns.address_as, text)
    return " ".join(text.split())


def _run(argv: list[str], library: Path, timeout: int) -> str:
    tool = Path(argv[0]).name
    try:
        proc = subprocess.run([*argv, str(library)], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise PqsimdError(f"{tool} cannot read {library.name} ({e})") from None
    if proc.returncode:
        raise PqsimdError(f"{tool} cannot read {library.name}: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    return proc.stdout


def parse_nm(text: str) -> list[tuple[int, int, str, str]]:
    """(address, size, type letter, name) of every sized symbol `nm -S --defined-only` lists."""
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 4:
            out.append((int(parts[0], 16), int(parts[1], 16), parts[2], parts[3]))
    return out


def parse_objdump(text: str) -> dict[int, Func]:
    """address -> Func (each instruction with its length) of every function `objdump -d -w` shows."""
    funcs: dict[int, Func] = {}
    cur: Func | None = None
    for line in text.splitlines():
        m = HEADER.match(line)
        if m:
            cur = funcs.setdefault(int(m.group(1), 16), Func(m.group(2)))
            continue
        m = INSN.match(line)
        if m and cur is not None:
            n = len(m.group(2).replace(" ", "")) // 2
            insn = " ".join((m.group(3) or "").split())
            if insn:
                cur.insns.append((int(m.group(1), 16), n, insn))
            elif cur.insns:  # a continuation line of a long instruction's bytes
                a, k, t = cur.insns[-1]
                cur.insns[-1] = (a, k + n, t)
    return funcs


class Library:
    """One built library as nm and objdump read it, each at most once (library() shares them)."""

    def __init__(self, path: Path | None = None, objdump: list[str] | None = None, *, isa: str | None = None,
                 nm_text: str | None = None, objdump_text: str | None = None):
        """From a file (`path`), or from the tools' text (tests: `nm_text`, `objdump_text`, `isa`)."""
        self.path = Path(path) if path is not None else Path("<text>")
        self.isa = isa or elf_isa(self.path)
        self.patterns: Patterns = of_isa(self.isa)
        self._objdump = list(objdump) if objdump else None
        self._nm_text, self._objdump_text = nm_text, objdump_text
        self._lock = threading.Lock()
        self._nm: list | None = None
        self._funcs: dict[int, Func] | None = None
        self._trees: dict[int, Tree] = {}

    @property
    def name(self) -> str:
        return self.path.name

    # --- nm ---------------------------------------------------------------------------------------------
    def nm(self) -> list[tuple[int, int, str, str]]:
        with self._lock:
            if self._nm is None:
                text = self._nm_text if self._nm_text is not None else _run(["nm", "-S", "--defined-only"], self.path, 120)
                self._nm = parse_nm(text)
            return self._nm

    @property
    def symbols(self) -> list[Sym]:
        """Every sized symbol the library defines (functions and data objects), by address."""
        if not hasattr(self, "_syms"):
            out = {Sym(n, a, s, KINDS[t.lower()]) for a, s, t, n in self.nm() if t.lower() in KINDS}
            self._syms = sorted(out, key=lambda s: (s.addr, s.name))
            self._data = [s for s in self._syms if s.kind != "code"]
            self._data_starts = [s.addr for s in self._data]
            self._code_sym = {s.addr: s for s in self._syms if s.kind == "code"}
            self._code_size: dict[int, int] = {}
            for s in self._syms:
                if s.kind == "code" and s.size > 0:
                    self._code_size[s.addr] = max(self._code_size.get(s.addr, 0), s.size)
        return self._syms

    def functions(self) -> Counter:
        """(name, size as nm prints it) of every function symbol (type t or T) the library defines."""
        return Counter((n, f"{s:016x}") for _, s, t, n in self.nm() if t in ("t", "T"))

    def data_at(self, addr: int) -> Sym | None:
        """The data object (read-only, writable or bss) that holds `addr`."""
        self.symbols
        i = bisect.bisect_right(self._data_starts, addr) - 1
        if i >= 0:
            s = self._data[i]
            if s.addr <= addr < s.addr + max(s.size, 1):
                return s
        return None

    def code_symbol(self, addr: int) -> Sym | None:
        self.symbols
        return self._code_sym.get(addr)

    def sized(self, addr: int) -> int:
        """The ELF size nm gives the function at `addr` (0: none, an assembly routine's piece)."""
        self.symbols
        return self._code_size.get(addr, 0)

    # --- objdump ----------------------------------------------------------------------------------------
    @property
    def funcs(self) -> dict[int, Func]:
        with self._lock:
            if self._funcs is None:
                if self._objdump_text is not None:
                    text = self._objdump_text
                else:
                    tool = self._objdump or _isa_objdump(self.isa)
                    text = _run([*tool, "-d", "-w"], self.path, 600)
                self._funcs = parse_objdump(text)
                self._starts = sorted(self._funcs)
            return self._funcs

    @property
    def starts(self) -> list[int]:
        self.funcs
        return self._starts

    def in_code(self, addr: int) -> bool:
        """Whether `addr` lies inside some function's instructions."""
        i = bisect.bisect_right(self.starts, addr) - 1
        if i < 0:
            return False
        f = self.funcs[self.starts[i]]
        return bool(f.insns) and f.insns[0][0] <= addr < f.insns[-1][0] + f.insns[-1][1]

    def function_at(self, addr: int) -> Func | None:
        """The function whose instructions hold `addr` (an emulator's trace names an address, not a symbol)."""
        i = bisect.bisect_right(self.starts, addr) - 1
        return self.funcs[self.starts[i]] if i >= 0 and self.in_code(addr) else None

    def extent(self, start: int) -> int:
        """Bytes of the function at `start` up to and including its last instruction that is not
        alignment padding."""
        f = self.funcs[start]
        last = [i for i, (_, _, t) in enumerate(f.insns) if t and not self.patterns.padding.match(t)]
        if not last:
            return 0
        a, n, _ = f.insns[last[-1]]
        return a + n - f.insns[0][0]

    def size_of(self, start: int) -> int:
        """A function's bytes: its ELF size, or (an assembly routine without one) its extent()."""
        return self.sized(start) or self.extent(start)

    def callees(self, start: int) -> set[str]:
        """Names of the functions the function at `start` calls or jumps to directly (a PLT stub by the
        function's own name)."""
        p = self.patterns
        out = set()
        for text in self.funcs[start].texts() if start in self.funcs else ():
            if p.branch(text) and not p.indirect.match(text):
                out |= {self.funcs[t].name.split("@", 1)[0] for t in targets(text) if t in self.funcs and t != start}
        return out

    def tree(self, start: int) -> Tree:
        """The op's call tree from its function at `start` (see the module's docstring)."""
        if start in self._trees:
            return self._trees[start]
        funcs, p = self.funcs, self.patterns
        if start not in funcs:
            raise PqsimdError(f"{self.name}: no function starts at offset {start:#x}")
        seen: list[int] = []
        done: set[int] = set()
        todo = [start]
        refs: dict[int, list[int]] = {}
        indirect = 0
        external: set[str] = set()
        while todo:
            a = todo.pop()
            if a in done or a not in funcs:
                continue
            done.add(a)
            seen.append(a)
            f = funcs[a]
            if f.external:
                external.add(f.name.split("@", 1)[0])
                continue
            mine: list[int] = refs.setdefault(a, [])
            pages: dict[str, int] = {}
            for _, _, text in f.insns:
                if p.indirect.match(text):
                    indirect += 1
                    continue
                if p.branch(text):
                    todo += [t for t in targets(text) if t in funcs and t != a]
                    continue
                mine += p.refs(text, pages)
            # an unsized piece (an assembly label objdump split a routine at) falls through into the next,
            # unless its last instruction before alignment padding ends it (a `ret` then `nop`s does)
            body = [t for t in f.texts() if not p.padding.match(t)]
            if not self.sized(a) and body and not p.ends.match(body[-1]):
                i = bisect.bisect_right(self.starts, a)
                if i < len(self.starts) and not self.sized(self.starts[i]):
                    todo.append(self.starts[i])
        tree = Tree(start, seen, refs, indirect, sorted(external))
        self._trees[start] = tree
        return tree


def _isa_objdump(isa_name: str) -> list[str]:
    from .. import isa

    return isa.get(isa_name).objdump()


_cache: OrderedDict = OrderedDict()
_cache_lock = threading.Lock()


def library(path: Path, objdump: list[str] | None = None) -> Library:
    """The Library of `path`, shared by every reader in this process while its bytes are the same
    (keyed by their sha256 and the objdump asked for)."""
    path = Path(path)
    try:
        key = (sha256_file(path), tuple(objdump or ()))
    except OSError as e:
        raise PqsimdError(f"cannot read {path.name} ({e.strerror or e})") from None
    with _cache_lock:
        lib = _cache.get(key)
        if lib is not None:
            _cache.move_to_end(key)
            lib.path = path  # the same bytes, perhaps under another name (a copy made again): read the one named
            return lib
    lib = Library(path, objdump)
    with _cache_lock:
        lib = _cache.setdefault(key, lib)
        _cache.move_to_end(key)
        while len(_cache) > CACHED:
            _cache.popitem(last=False)
    return lib


def symbols(path: Path) -> list[Sym]:
    """Every sized symbol the library at `path` defines, by address."""
    return library(path).symbols
