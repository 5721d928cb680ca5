"""Code bytes reachable from an op's entry (`--metric size`, run/stack.py): static, nm and objdump.

An op's **call tree** is its function (driver `where`: the op table's entry) and every function it
reaches by direct calls, jumps and branches (x86-64 call/jmp/j*, aarch64 bl/b/b.cond/cbz/tbz, riscv64
jal/j/b*), and, where a hand-written assembly routine has local labels that objdump splits it at, the
piece it falls through into. Its size is counted once per op:

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
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .errors import PqsimdError
from .placement import symbols

HEADER = re.compile(r"^([0-9a-f]+) <(.+)>:$")
LINE = re.compile(r"^\s*([0-9a-f]+):\t([0-9a-f ]+?)\s*(?:\t(.*))?$")
TARGET = re.compile(r"\b([0-9a-f]+) <([^>]+)>")
COMMENT_REF = re.compile(r"#\s*(?:0x)?([0-9a-f]+)\s*<([^>]+)>")
ADRP = re.compile(r"^adrp\s+(x\d+),\s*([0-9a-f]+)")
ADRP_USE = re.compile(r"^(?:add\s+x\d+,\s*(x\d+),\s*#(0x[0-9a-f]+|\d+)|ld\w*\s+[^\[]*\[(x\d+)(?:,\s*#(0x[0-9a-f]+|\d+))?\])")
PADDING = re.compile(r"^(nop|int3|data16|cs nop|xchg\s+%ax,%ax|udf|\.inst\s+0x0+$|\.word\s+0x0+$|c\.nop|unimp|\(bad\))")
BRANCH = re.compile(r"^(call|jmp|j[a-z]{1,3}|bl|b|b\.[a-z]+|cbn?z|tbn?z|jal|j|beqz?|bnez?|blez?|bgez?|bltu?z?|bgeu?|bgtz?)\b")
INDIRECT = re.compile(r"^(call\s+\*|callq\s+\*|blr\b|jalr\b)")
ENDS = re.compile(r"^(ret|jmp|b\s|br\b|jr\b|c\.jr\b|j\s)")


@dataclass
class Func:
    name: str
    insns: list[tuple[int, int, str]] = field(default_factory=list)  # (address, bytes, text)

    def extent(self) -> int:
        """Bytes up to and including the last instruction that is not alignment padding."""
        last = [i for i, (_, _, t) in enumerate(self.insns) if t and not PADDING.match(t)]
        if not last:
            return 0
        a, n, _ = self.insns[last[-1]]
        return a + n - self.insns[0][0]


def disassemble(library: Path, objdump: list[str] | None = None) -> dict[int, Func]:
    """address -> Func (with each instruction's length) of every function objdump shows."""
    try:
        proc = subprocess.run([*(objdump or ["objdump"]), "-d", "-w", str(library)], capture_output=True, text=True,
                              timeout=600)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise PqsimdError(f"objdump cannot read {Path(library).name} ({e})") from None
    if proc.returncode:
        raise PqsimdError(f"objdump cannot read {Path(library).name}: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    funcs: dict[int, Func] = {}
    cur: Func | None = None
    for line in proc.stdout.splitlines():
        m = HEADER.match(line)
        if m:
            cur = funcs.setdefault(int(m.group(1), 16), Func(m.group(2)))
            continue
        m = LINE.match(line)
        if m and cur is not None:
            n = len(m.group(2).replace(" ", "")) // 2
            text = " ".join((m.group(3) or "").split())
            if text:
                cur.insns.append((int(m.group(1), 16), n, text))
            elif cur.insns:  # a continuation line of a long instruction's bytes
                a, k, t = cur.insns[-1]
                cur.insns[-1] = (a, k + n, t)
    return funcs


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
    """One shared object's symbols and disassembly, read once."""

    def __init__(self, library: Path, objdump: list[str] | None = None):
        self.library = Path(library)
        syms = symbols(self.library)
        self.funcs = disassemble(self.library, objdump)
        self.starts = sorted(self.funcs)
        self.code_size = {}
        for s in syms:
            if s.kind == "code" and s.size > 0:
                self.code_size[s.addr] = max(self.code_size.get(s.addr, 0), s.size)
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
        return self.code_size.get(start) or self.funcs[start].extent()

    def tree(self, start: int) -> Size:
        if start not in self.funcs:
            raise PqsimdError(f"{self.library.name}: no function starts at offset {start:#x}")
        seen: set[int] = set()
        todo = [start]
        ro: dict[int, object] = {}
        unsized: set[int] = set()
        indirect = 0
        external: set[str] = set()
        while todo:
            a = todo.pop()
            if a in seen or a not in self.funcs:
                continue
            seen.add(a)
            f = self.funcs[a]
            if "@plt" in f.name:  # a call out of the library (libc): its stub is not the op's code
                external.add(f.name.split("@", 1)[0])
                continue
            pages: dict[str, int] = {}
            for _, _, text in f.insns:
                if INDIRECT.match(text):
                    indirect += 1
                    continue
                if BRANCH.match(text):
                    todo += [t for t in (int(x, 16) for x, _ in TARGET.findall(text)) if t in self.funcs and t != a]
                    continue
                refs = [int(m.group(1), 16) for m in COMMENT_REF.finditer(text)]
                m = ADRP.match(text)
                if m:
                    pages[m.group(1)] = int(m.group(2), 16)
                    continue
                m = ADRP_USE.match(text)
                if m:
                    reg, imm = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
                    if reg in pages:
                        refs.append(pages[reg] + (int(imm, 0) if imm else 0))
                for r in refs:
                    s = self.rodata_at(r)
                    if s is not None:
                        ro[s.addr] = s
                    elif r not in self.funcs and not self._writable(r) and not self._in_code(r):
                        unsized.add(r)
            # an unsized piece (an assembly label objdump split at) falls through into the next
            if a not in self.code_size and f.insns and not ENDS.match(f.insns[-1][2]):
                i = bisect.bisect_right(self.starts, a)
                if i < len(self.starts) and self.starts[i] not in self.code_size:
                    todo.append(self.starts[i])
        seen = {a for a in seen if "@plt" not in self.funcs[a].name}
        members = [("code", self.funcs[a].name, self.size_of(a)) for a in sorted(seen)]
        members += [("rodata", s.name, s.size) for s in sorted(ro.values(), key=lambda s: s.addr)]
        return Size(code=sum(n for k, _, n in members if k == "code"), rodata=sum(s.size for s in ro.values()),
                    functions=len(seen), objects=len(ro), unsized=len(unsized), indirect=indirect, external=sorted(external), members=members)

    def callees(self, start: int) -> set[str]:
        """Names of the functions the function at `start` calls or jumps to directly (a PLT stub by the
        function's own name)."""
        out = set()
        for _, _, text in self.funcs[start].insns if start in self.funcs else ():
            if BRANCH.match(text) and not INDIRECT.match(text):
                out |= {self.funcs[t].name.split("@", 1)[0] for t in (int(x, 16) for x, _ in TARGET.findall(text))
                        if t in self.funcs and t != start}
        return out

    def _in_code(self, addr: int) -> bool:
        i = bisect.bisect_right(self.starts, addr) - 1
        if i < 0:
            return False
        f = self.funcs[self.starts[i]]
        return bool(f.insns) and f.insns[0][0] <= addr < f.insns[-1][0] + f.insns[-1][1]


def op_sizes(library: Path, offsets: dict[str, int], objdump: list[str] | None = None) -> dict[str, Size]:
    """op -> its call tree's Size (offsets: op -> its function, driver `where`)."""
    img = Image(library, objdump)
    return {op: img.tree(start) for op, start in offsets.items()}
