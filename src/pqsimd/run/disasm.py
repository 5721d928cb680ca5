"""Executed addresses as instructions: `objdump -d -M intel` of each object callgrind names (its
link-time addresses are what objdump prints; cached per path and sha256), or a counting backend's own
disassembly (QEMU's), each instruction classified by run/classify.py."""

from __future__ import annotations

import bisect
import re
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from .. import store
from .classify import UNKNOWN, Config, InsnKind, classify

_LINE = re.compile(r"^\s*([0-9a-f]+):\t(.*)$")
_SYM = re.compile(r"^([0-9a-f]+) <(.+)>:$")
_DROP_PREFIXES = {"bnd", "notrack", "data16", "data32", "addr32", "addr16", "cs", "ds", "es", "ss", "fs", "gs",
                  "lock", "xacquire", "xrelease", "{vex}", "{vex3}", "{evex}", "{disp8}", "{disp32}"}
_REP = {"rep": "rep", "repz": "repe", "repe": "repe", "repnz": "repne", "repne": "repne"}
_STRING = re.compile(r"^(movs|stos|lods|cmps|scas|ins|outs)[bwdq]?$")


@dataclass(frozen=True)
class Insn:
    mnemonic: str
    operands: str
    text: str  # the instruction as objdump printed it, comments and <symbol> annotations removed
    function: str


def parse_insn(text: str) -> tuple[str, str, str]:
    """(mnemonic, operands, clean text) of one objdump -M intel instruction."""
    text = re.sub(r"\s+#.*$", "", text)
    text = re.sub(r"\s*<[^>]*>", "", text).strip()
    toks = text.split(None, 1)
    rep = None
    while toks and (toks[0] in _DROP_PREFIXES or toks[0] in _REP or toks[0].startswith("rex")):
        if toks[0] in _REP:
            rep = _REP[toks[0]]
        toks = toks[1].split(None, 1) if len(toks) > 1 else []
    if not toks:
        return "nop", "", "nop"
    mnemonic = toks[0].lower()
    operands = toks[1].strip() if len(toks) > 1 else ""
    clean = f"{mnemonic} {operands}".strip()
    if rep and _STRING.match(mnemonic):
        mnemonic = f"{rep}_{mnemonic}"
        clean = f"{rep} {clean}"
    return mnemonic, operands, clean


@dataclass
class Disassembly:
    path: str
    sha256: str
    addresses: list[int]  # ascending
    insns: dict[int, Insn]

    def index(self, addr: int) -> int | None:
        i = bisect.bisect_left(self.addresses, addr)
        return i if i < len(self.addresses) and self.addresses[i] == addr else None


_DISASM: dict[tuple[str, str], Disassembly] = {}
_DISASM_LOCK = threading.Lock()


def objdump_path() -> str | None:
    return shutil.which("objdump")


def disassemble(path: str) -> Disassembly | None:
    """The whole object as objdump prints it (Intel syntax), cached per (path, sha256); None if
    the object is not a readable file (e.g. callgrind's ???)."""
    p = Path(path)
    if not p.is_file():
        return None
    sha = store.sha256_file(p)
    with _DISASM_LOCK:
        if (path, sha) in _DISASM:
            return _DISASM[(path, sha)]
    proc = subprocess.run([objdump_path() or "objdump", "-d", "-w", "-M", "intel", "--no-show-raw-insn", str(p)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return None
    insns: dict[int, Insn] = {}
    func = "?"
    for line in proc.stdout.splitlines():
        m = _LINE.match(line)
        if m:
            body = m.group(2)
            if not body or body.startswith("(bad)") or body.startswith("..."):
                continue
            mnemonic, operands, clean = parse_insn(body)
            insns[int(m.group(1), 16)] = Insn(mnemonic, operands, clean, func)
            continue
        s = _SYM.match(line)
        if s:
            func = s.group(2)
    d = Disassembly(str(p), sha, sorted(insns), insns)
    with _DISASM_LOCK:
        _DISASM[(path, sha)] = d
    return d


@dataclass
class Located:
    """One executed instruction: where, what, how often (net, over the batch)."""

    obj: str
    addr: int
    count: int
    insn: Insn | None
    kind: InsnKind


class Disassemblies:
    def __init__(self):
        self.by_object: dict[str, Disassembly | None] = {}

    def get(self, obj: str) -> Disassembly | None:
        if obj not in self.by_object:
            self.by_object[obj] = disassemble(obj) if obj and obj != "???" else None
        return self.by_object[obj]

    def shas(self) -> dict[str, str]:
        return {o: d.sha256 for o, d in self.by_object.items() if d is not None}


def guest_disassembly(texts: dict[int, tuple[str, str | None]], c: Config) -> Disassembly:
    """A backend's own disassembly of the executed addresses (QEMU's, from the plugin's histogram) as
    an object's; with fixed-width instructions (`fixed_width` in the mix TOML) an address's index is
    its instruction number, so runs of consecutive instructions are found as with objdump's."""
    insns = {}
    for addr, (text, symbol) in texts.items():
        toks = text.strip().split(None, 1)
        mnemonic, operands = (toks[0].lower(), toks[1].strip() if len(toks) > 1 else "") if toks else ("nop", "")
        insns[addr] = Insn(mnemonic, operands, f"{mnemonic} {operands}".strip(), symbol or "?")
    width = int(c.mca.get("fixed_width", 0))

    class Guest(Disassembly):
        def index(self, addr: int) -> int | None:
            return addr // width if width and addr in self.insns else super().index(addr)

    return Guest("guest", "", sorted(insns), insns)


def locate(net: dict[tuple[str, int], int], dis: Disassemblies, isa: str | None = None) -> list[Located]:
    out = []
    for (obj, addr), n in sorted(net.items()):
        d = dis.get(obj)
        insn = d.insns.get(addr) if d else None
        kind = classify(insn.mnemonic, insn.operands, isa) if insn else UNKNOWN
        out.append(Located(obj, addr, n, insn, kind))
    return out
