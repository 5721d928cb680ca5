"""The dynamic instruction mix of one call of each op, and a cost model of it (`--metric mix`).

Callgrind with per-instruction counts (`--dump-instr=yes`), toggled on pqsimd_measure exactly as
the instructions metric is (run/instructions.py), two runs of N1 < N2 calls per op. Per executed
instruction (object, address) the difference Ir(N2) - Ir(N1) counts what N2 - N1 calls executed,
from every object: the variant, the driver, libc (PQClean's fips202 calls malloc/free). The
family's self-check op (an empty function) is counted the same way and subtracted address by
address, so the loop's own instructions cancel and, summed over all addresses, every op reads
exactly the instructions metric: per call = (sum of the op's differences - the self-check's) /
(N2 - N1). Callgrind's `calls=` lines are followed by the call's *inclusive* cost; those lines
are skipped, so only self costs are summed (and the sum is checked against callgrind's total).

Each address is mapped to its instruction through `objdump -d -M intel` of the object callgrind
names in `ob=` (addresses in callgrind.out are the object's link-time addresses, what objdump
prints; disassemblies are cached per object path and sha256) and classified by mnemonic with
data/mix.toml (classes, memory-only moves as loads/stores, lane-crossing permutes). The vector
width (0 scalar, 128, 256, 512) is the instruction's widest vector operand.

Raw file DIR/raw/<variant>.<compiler>.<scheme>.mix.parquet, rows per op:
    mix.class.<class>                         one per class of data/mix.toml (0 when none executed)
    mix.mnemonic.<mnemonic>.<width>.<class>   one per executed (mnemonic, width, class)
    mca.<cpu>                                 llvm-mca's cycles per call, per --mca-cpu
batch = N2 - N1, raw = net executions over the batch (exact integer), per_call = raw / batch
(exact for ops whose work does not change between calls), spin = repeat (0), rep = 0. The class
rows of an op sum to its mnemonic rows and to its instructions metric.

Cost model (llvm-mca, when installed): the op's hot basic blocks, runs of consecutive executed
instructions with the same net count (ending at a branch, call or return), heaviest first until
they cover >= 95% of the op's executed instructions, each a `# LLVM-MCA-BEGIN/END` region of one
llvm-mca invocation per (op, variant, CPU); per_call = sum over blocks of executions per call x
the block's cycles per iteration (steady state, mca's Total Cycles / Iterations). The job record
holds the llvm-mca version and command, each op's coverage, and per mnemonic the model's latency
and reciprocal throughput, so analysis can name instructions a CPU model makes slow. Without
llvm-mca the estimate is recorded unavailable, with the reason, and the study goes on.
"""

from __future__ import annotations

import bisect
import hashlib
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import tomllib
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime, timezone
from fractions import Fraction
from functools import cache, lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from rich.console import Console

from .. import machine, store
from ..errors import PqsimdError, tagged
from ..studydir import StudyDir
from . import instructions as ins

METRIC = "mix"
N1, N2 = ins.N1, ins.N2  # the instructions metric's: the same differences, the same totals
REPEATS = 1
CLASS_PREFIX = "mix.class."
MNEMONIC_PREFIX = "mix.mnemonic."
MCA_PREFIX = "mca."
CALLGRIND_ARGS = ("--dump-instr=yes", "--dump-line=no", "--compress-strings=no", "--compress-pos=no")
MCA_TIMEOUT_S = 600


# --- the classes (data/mix.toml) ---------------------------------------------------------------

@dataclass(frozen=True)
class Rule:
    cls: str
    match: re.Pattern
    lane_crossing_class: str | None = None
    operands: re.Pattern | None = None  # the rule applies only when the operands match (e.g. NEON registers)


@dataclass(frozen=True)
class Config:
    classes: tuple[str, ...]
    labels: dict[str, str]
    rules: tuple[Rule, ...]
    scalar_move: re.Pattern | None  # [moves] (x86_64: mov/movdqa/movd as load, store or register move)
    vector_move: re.Pattern | None
    gpr_vector_move: re.Pattern | None
    scalar_register_class: str
    vector_register_class: str
    gpr_vector_class: str
    crossing: frozenset[str]
    crossing_when_wide: frozenset[str]
    mca: dict[str, Any]
    text: str
    widths: tuple[tuple[re.Pattern, int], ...] = ()  # [[width]]: operand pattern -> bits (default: x86's)
    syntax: str = "intel"  # "intel": objdump -M intel text; "plain": `mnemonic operands` (QEMU's disassembly)
    isa: str = ""


def _pattern(where: str, text: str) -> re.Pattern:
    try:
        return re.compile(text)
    except re.error as e:
        raise PqsimdError(f"{where}: bad regex {text!r} ({e})") from None


@cache
def config(isa: str | None = None) -> Config:
    """The instruction classes of an ISA: the file its data/isas.toml entry names (`mix`); None: this host's."""
    from .. import isa as isa_mod

    target = isa_mod.get(isa) if isa else isa_mod.host()
    name = target.mix
    text = resources.files("pqsimd.data").joinpath(name).read_text()
    d = tomllib.loads(text)
    where = f"data/{name}"
    classes = tuple(c["id"] for c in d["class"])
    labels = {c["id"]: c.get("label", c["id"]) for c in d["class"]}
    rules = []
    for r in d["rule"]:
        for key in ("class", "lane_crossing_class"):
            if r.get(key) is not None and r[key] not in classes:
                raise PqsimdError(f"{where}: rule class {r[key]!r} is not a listed [[class]]")
        rules.append(Rule(r["class"], _pattern(where, r["match"]), r.get("lane_crossing_class"),
                          _pattern(where, r["operands"]) if "operands" in r else None))
    mv = d.get("moves", {})
    for key in ("scalar_register_class", "vector_register_class", "gpr_vector_class"):
        if key in mv and mv[key] not in classes:
            raise PqsimdError(f"{where}: [moves] {key} {mv[key]!r} is not a listed [[class]]")
    for needed in ("load", "store", "other", "unknown"):
        if needed not in classes:
            raise PqsimdError(f"{where}: the class {needed!r} is required")
    lanes = d.get("lanes", {})
    moves = {k: re.compile(mv[k]) if k in mv else None for k in ("scalar", "vector", "gpr_vector")}
    return Config(classes, labels, tuple(rules), moves["scalar"], moves["vector"], moves["gpr_vector"],
                  mv.get("scalar_register_class", "scalar_alu"), mv.get("vector_register_class", "vec_move"),
                  mv.get("gpr_vector_class", "vec_insert_extract"), frozenset(lanes.get("crossing", ())),
                  frozenset(lanes.get("crossing_when_wide", ())), {**d.get("mca", {}), "triple": target.mca_triple},
                  text, tuple((_pattern(where, w["pattern"]), int(w["bits"])) for w in d.get("width", ())),
                  str(d.get("syntax", "intel")), target.name)


_VREG = re.compile(r"\b([xyz])mm\d+\b")
_VMEM = re.compile(r"\b([XYZ])MMWORD PTR")
_WIDTH = {"x": 128, "y": 256, "z": 512}


def _operands(text: str) -> list[str]:
    """Split Intel-syntax operands on top-level commas."""
    out, depth, cur = [], 0, []
    for ch in text:
        if ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if cur and "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def _is_mem(op: str) -> bool:
    return "[" in op or " PTR " in f" {op} "


def width_of(operands: str, c: Config | None = None) -> int:
    if c is not None and c.widths:
        return max((bits for pat, bits in c.widths if pat.search(operands)), default=0)
    w = [_WIDTH[m.group(1)] for m in _VREG.finditer(operands)]
    w += [_WIDTH[m.group(1).lower()] for m in _VMEM.finditer(operands)]
    return max(w, default=0)


@dataclass(frozen=True)
class Kind:
    cls: str
    width: int
    lane_crossing: bool


@lru_cache(maxsize=1 << 16)
def classify(mnemonic: str, operands: str, isa: str | None = None) -> Kind:
    """The class, vector width and lane crossing of one instruction (the ISA's mix TOML)."""
    c = config(isa)
    width = width_of(operands, c)
    crossing = mnemonic in c.crossing or (mnemonic in c.crossing_when_wide and width >= 256)
    ops = _operands(operands)
    for pattern, reg_class in ((c.scalar_move, c.scalar_register_class), (c.vector_move, c.vector_register_class),
                               (c.gpr_vector_move, None)):
        if pattern is None or not pattern.match(mnemonic):
            continue
        if ops and _is_mem(ops[0]):
            return Kind("store", width, crossing)
        if any(_is_mem(o) for o in ops[1:]):
            return Kind("load", width, crossing)
        if reg_class is None:  # movd/movq: a general register on one side is an insert/extract
            vec = [bool(_VREG.fullmatch(o)) for o in ops]
            reg_class = c.vector_register_class if ops and all(vec) else c.gpr_vector_class
        return Kind(reg_class, width, crossing)
    for r in c.rules:
        if r.match.search(mnemonic) and (r.operands is None or r.operands.search(operands)):
            return Kind(r.lane_crossing_class if (crossing and r.lane_crossing_class) else r.cls, width, crossing)
    return Kind("other", width, crossing)


# --- disassembly (objdump) --------------------------------------------------------------------------

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


# --- callgrind per-instruction profiles ------------------------------------------------------------

Profile = dict[tuple[str, int], int]  # (object, address) -> Ir (self cost)


def parse_profile(text: str) -> Profile:
    """Self Ir per (object, instruction address) of a callgrind out file written with
    CALLGRIND_ARGS; the inclusive cost line after each `calls=` line is skipped. Raises
    ValueError if the self costs do not add up to callgrind's own total."""
    counts: dict[tuple[str, int], int] = defaultdict(int)
    ob = "???"
    skip = False
    last = 0
    total = None
    for line in text.splitlines():
        if not line:
            continue
        c = line[0]
        if c == "0" or c in "+-*" or c.isdigit():
            parts = line.split()
            pos = parts[0]
            if pos == "*":
                addr = last
            elif pos[0] in "+-":
                addr = last + int(pos, 0)
            else:
                addr = int(pos, 0)
            last = addr
            if skip:
                skip = False
                continue
            if len(parts) > 1:
                counts[(ob, addr)] += int(parts[1])
            continue
        if line.startswith("ob="):
            ob = line[3:].strip()
            m = re.match(r"^\(\d+\)\s*(.*)$", ob)
            if m and m.group(1):
                ob = m.group(1)
        elif line.startswith("calls="):
            skip = True
        elif line.startswith(("summary:", "totals:")):
            total = int(line.split(":", 1)[1].split()[0])
    got = sum(counts.values())
    if total is not None and got != total:
        raise ValueError(f"self costs sum to {got}, callgrind's total is {total}")
    return dict(counts)


def profile_run(driver: Path, library: Path, scheme: str, op: str, calls: int) -> Profile:
    return ins.run_callgrind(driver, library, scheme, op, calls, extra=CALLGRIND_ARGS, read=parse_profile)


@dataclass(frozen=True)
class ProfilePair:
    p1: Profile
    p2: Profile
    n1: int = N1
    n2: int = N2
    texts: dict | None = None  # address -> (instruction text, symbol) from the backend (None: objdump's)

    @property
    def batch(self) -> int:
        return self.n2 - self.n1

    def diff(self) -> dict[tuple[str, int], int]:
        keys = set(self.p1) | set(self.p2)
        out = {k: self.p2.get(k, 0) - self.p1.get(k, 0) for k in keys}
        return {k: v for k, v in out.items() if v}


def measure_profile(driver: Path, library: Path, scheme: str, op: str, n1: int = N1, n2: int = N2,
                    backend=None) -> ProfilePair:
    """Both runs' per-instruction profiles, with the study's counting backend (default callgrind)."""
    if backend is None:
        return ProfilePair(profile_run(driver, library, scheme, op, n1), profile_run(driver, library, scheme, op, n2), n1, n2)
    (p1, t1), (p2, t2) = (backend.profile(driver, library, scheme, op, n) for n in (n1, n2))
    return ProfilePair(p1, p2, n1, n2, None if t1 is None else {**t1, **(t2 or {})})


def net_counts(op: ProfilePair, self_check: ProfilePair | None) -> dict[tuple[str, int], int]:
    """Executions over the batch per (object, address): the op's minus the self-check op's."""
    net = defaultdict(int, op.diff())
    if self_check is not None:
        if self_check.batch != op.batch:
            raise ValueError("the op and the self-check op were counted over different batches")
        for k, v in self_check.diff().items():
            net[k] -= v
    return {k: v for k, v in net.items() if v}


# --- the mix ---------------------------------------------------------------------------------------

@dataclass
class Located:
    """One executed instruction: where, what, how often (net, over the batch)."""

    obj: str
    addr: int
    count: int
    insn: Insn | None
    kind: Kind


class Disassemblies:
    def __init__(self):
        self.by_object: dict[str, Disassembly | None] = {}

    def get(self, obj: str) -> Disassembly | None:
        if obj not in self.by_object:
            self.by_object[obj] = disassemble(obj) if obj and obj != "???" else None
        return self.by_object[obj]

    def shas(self) -> dict[str, str]:
        return {o: d.sha256 for o, d in self.by_object.items() if d is not None}


UNKNOWN = Kind("unknown", 0, False)


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


def mix_of(located: list[Located], isa: str | None = None) -> tuple[dict[str, int], dict[tuple[str, int, str], int], dict[tuple[str, int, str], bool]]:
    """(net executions per class, per (mnemonic, width, class)), and lane crossing per mnemonic key."""
    classes: dict[str, int] = {c: 0 for c in config(isa).classes}
    mnemonics: dict[tuple[str, int, str], int] = defaultdict(int)
    crossing: dict[tuple[str, int, str], bool] = {}
    for x in located:
        mn = x.insn.mnemonic if x.insn else "?"
        key = (mn, x.kind.width, x.kind.cls)
        classes[x.kind.cls] = classes.get(x.kind.cls, 0) + x.count
        mnemonics[key] += x.count
        crossing[key] = x.kind.lane_crossing
    return classes, {k: v for k, v in mnemonics.items() if v}, crossing


def mnemonic_metric(mnemonic: str, width: int, cls: str) -> str:
    return f"{MNEMONIC_PREFIX}{mnemonic}.{width}.{cls}"


def parse_mnemonic_metric(metric: str) -> tuple[str, int, str] | None:
    if not metric.startswith(MNEMONIC_PREFIX):
        return None
    rest = metric[len(MNEMONIC_PREFIX):]
    parts = rest.rsplit(".", 2)
    if len(parts) != 3 or not parts[1].isdigit():
        return None
    return parts[0], int(parts[1]), parts[2]


def functions_of(located: list[Located], batch: int, top: int = 8) -> list[list[Any]]:
    """The functions that execute most of an op's instructions: [object, function, per call]."""
    agg: Counter = Counter()
    for x in located:
        if x.count > 0:
            agg[(Path(x.obj).name, x.insn.function if x.insn else "?")] += x.count
    return [[o, f, n / batch] for (o, f), n in agg.most_common(top)]


# --- cost model (llvm-mca) -------------------------------------------------------------------------

def mca_path() -> str | None:
    env = os.environ.get("PQSIMD_LLVM_MCA")
    if env:
        return shutil.which(env) or (env if Path(env).is_file() and os.access(env, os.X_OK) else None)
    for name in config().mca.get("executables", ["llvm-mca"]):
        p = shutil.which(name)
        if p:
            return p
    return None


@cache
def _mca_version_text(path: str) -> str:
    out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
    return out.stdout + out.stderr


def mca_version(path: str) -> str:
    m = re.search(r"LLVM version ([0-9][^\s]*)", _mca_version_text(path))
    return f"llvm-mca {m.group(1)}" if m else "llvm-mca (version unknown)"


def mca_host_cpu(path: str) -> str | None:
    m = re.search(r"Host CPU:\s*(\S+)", _mca_version_text(path))
    return m.group(1) if m and m.group(1) not in ("generic", "(unknown)") else None


@cache
def mca_cpus_known(path: str, isa: str | None = None) -> tuple[str, ...]:
    triple = config(isa).mca["triple"]
    out = subprocess.run([path, f"-mtriple={triple}", "-mcpu=help"], input="", capture_output=True, text=True, timeout=60)
    text = out.stdout + out.stderr
    names = re.findall(r"^\s{2}([A-Za-z0-9_.-]+)\s+-\s+Select the", text, re.M)
    return tuple(names)


def check_mca_cpus(cpus: list[str], isa=None) -> None:
    """--mca-cpu names: CPUs llvm-mca knows for the study's ISA (`llvm-mca -mtriple=... -mcpu=help`),
    else the ISA's mix TOML list."""
    name = isa.name if isa is not None else None
    path = mca_path()
    valid = list(mca_cpus_known(path, name)) if path else []
    valid = valid or list(config(name).mca.get("known_cpus", []))
    for c in cpus:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", c):
            raise PqsimdError(f"--mca-cpu {c!r} is not a CPU name (e.g. znver3, skylake)")
        if c not in valid:
            where = "llvm-mca -mcpu=help" if path else "data/mix.toml [mca] known_cpus (llvm-mca is not installed)"
            near = [v for v in valid if v[:3] == c[:3]][:8]
            raise PqsimdError(f"--mca-cpu {c!r} is not a CPU llvm-mca models (from {where})"
                              + (f"; similar: {', '.join(near)}" if near else ""))
    dup = next((c for c in cpus if cpus.count(c) > 1), None)
    if dup:
        raise PqsimdError(f"--mca-cpu {dup} is listed twice")


@dataclass
class Block:
    located: list[Located]

    @property
    def count(self) -> int:
        return self.located[0].count

    @property
    def weight(self) -> int:
        return self.count * len(self.located)


_CONTROL = ("branch", "call_ret")


def basic_blocks(located: list[Located], dis: Disassemblies, isa: str | None = None) -> list[Block]:
    """Runs of consecutive instructions (in the object's disassembly order) with equal positive net
    counts, each ending at a branch, call or return."""
    excluded = set(config(isa).mca.get("exclude_classes", ["string", "unknown"]))
    blocks: list[Block] = []
    cur: list[Located] = []
    prev_idx = None
    for x in sorted((x for x in located if x.count > 0 and x.insn is not None), key=lambda x: (x.obj, x.addr)):
        d = dis.get(x.obj)
        idx = d.index(x.addr) if d else None
        if x.kind.cls in excluded:  # not modelled: ends the block, counts as not covered
            if cur:
                blocks.append(Block(cur))
                cur = []
            prev_idx = None
            continue
        if cur:
            p = cur[-1]
            if (p.obj != x.obj or idx is None or prev_idx is None or idx != prev_idx + 1 or p.count != x.count
                    or p.kind.cls in _CONTROL):
                blocks.append(Block(cur))
                cur = []
        cur.append(x)
        prev_idx = idx
    if cur:
        blocks.append(Block(cur))
    return blocks


def hot_blocks(blocks: list[Block], coverage: float, total: int | None = None) -> tuple[list[Block], float]:
    """The heaviest blocks until they cover `coverage` of the executed instructions (`total`,
    default: the blocks' own); (blocks, covered share)."""
    total = sum(b.weight for b in blocks) if total is None else total
    if total <= 0:
        return [], 1.0
    out, got = [], 0
    for b in sorted(blocks, key=lambda b: (-b.weight, b.located[0].obj, b.located[0].addr)):
        if got >= coverage * total:
            break
        out.append(b)
        got += b.weight
    return out, got / total


_DIRECT = re.compile(r"^(j[a-z]+|call|loop[a-z]*|jrcxz|jecxz|xbegin)\s+(0x)?[0-9a-f]+$")


def mca_line(insn: Insn, label: str, isa: str | None = None) -> str:
    """One instruction as llvm-mca's parser takes it: direct branch targets become a label (the
    ISA's `direct_branch` pattern in its mix TOML: group 1 kept, the target replaced), nops plain `nop`."""
    if insn.mnemonic == "nop" or classify(insn.mnemonic, insn.operands, isa).cls == "nop":
        return "nop"
    text = insn.text
    direct = config(isa).mca.get("direct_branch")
    m = re.match(direct, text) if direct else _DIRECT.match(text)
    if m:
        return f"{m.group(1)} {label}"
    return text


def mca_source(blocks: list[Block], isa: str | None = None) -> tuple[str, list[int]]:
    """The llvm-mca input: one region per block; returns (text, line number of each instruction)."""
    lines = [".intel_syntax noprefix" if config(isa).syntax == "intel" else "// pqsimd hot blocks"]
    where = []
    for i, b in enumerate(blocks):
        lines.append(f"# LLVM-MCA-BEGIN b{i}")
        lines.append(f".Lb{i}:")
        for x in b.located:
            lines.append(mca_line(x.insn, f".Lb{i}", isa))
            where.append(len(lines))
        lines.append(f"# LLVM-MCA-END b{i}")
    return "\n".join(lines) + "\n", where


def mca_command(path: str, cpu: str, source: str, isa: str | None = None) -> list[str]:
    c = config(isa).mca
    return [path, f"-mtriple={c['triple']}", f"-mcpu={cpu}",
            f"-iterations={int(c.get('iterations', 100))}", "-all-views=false", "-summary-view", "-instruction-info",
            source]


_REGION = re.compile(r"^\[(\d+)\] Code Region(?: - (\S+))?")
_INFO = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+\.\d+)\s")


def parse_mca(text: str, n_regions: int) -> list[dict[str, Any]]:
    """Per region: iterations, total cycles, and (uops, latency, rthroughput) per instruction."""
    regions: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    in_info = False
    for line in text.splitlines():
        m = _REGION.match(line)
        if m:
            cur = {"iterations": None, "cycles": None, "info": []}
            regions.append(cur)
            in_info = False
            continue
        if cur is None:
            if line.startswith("Iterations:"):  # a single unnamed region
                cur = {"iterations": None, "cycles": None, "info": []}
                regions.append(cur)
            else:
                continue
        if line.startswith("Iterations:"):
            cur["iterations"] = int(line.split(":")[1])
        elif line.startswith("Total Cycles:"):
            cur["cycles"] = int(line.split(":")[1])
        elif line.startswith("[1]") and "Instructions:" in line:
            in_info = True
        elif in_info:
            mi = _INFO.match(line)
            if mi:
                cur["info"].append((int(mi.group(1)), int(mi.group(2)), float(mi.group(3))))
            elif line.strip() == "":
                in_info = bool(not cur["info"])
    if len(regions) != n_regions:
        raise ValueError(f"llvm-mca reported {len(regions)} regions for {n_regions} blocks")
    return regions


class McaError(Exception):
    pass


def run_mca(path: str, cpu: str, blocks: list[Block], workdir: Path | None = None,
            isa: str | None = None) -> tuple[list[dict], int, list[str]]:
    """llvm-mca over the blocks (one region each): (regions, lines it could not parse and that were
    replaced by nop, command)."""
    source, where = mca_source(blocks, isa)
    lines = source.split("\n")
    replaced = 0
    with tempfile.TemporaryDirectory(prefix="pqsimd-mca-", dir=workdir) as tmp:
        f = Path(tmp) / "blocks.s"
        for _attempt in range(4):
            f.write_text("\n".join(lines))
            cmd = mca_command(path, cpu, str(f), isa)
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=MCA_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                raise McaError(f"llvm-mca did not finish in {MCA_TIMEOUT_S} s") from None
            if proc.returncode == 0:
                try:
                    return parse_mca(proc.stdout, len(blocks)), replaced, cmd
                except ValueError as e:
                    raise McaError(f"unexpected llvm-mca output ({e})") from None
            bad = {int(m.group(1)) for m in re.finditer(rf"^{re.escape(str(f))}:(\d+):\d+: error", proc.stderr, re.M)}
            bad &= set(where)
            if not bad:
                tail = " ".join(proc.stderr.strip().splitlines()[:2])[:300]
                raise McaError(f"llvm-mca failed ({tail or f'exit code {proc.returncode}'})")
            for ln in bad:  # an instruction its parser does not take: a nop in its place, counted
                lines[ln - 1] = "nop"
                replaced += 1
        raise McaError("llvm-mca kept failing to parse the blocks")


def mca_estimate(path: str, cpu: str, located: list[Located], dis: Disassemblies, batch: int,
                 workdir: Path | None = None, isa: str | None = None) -> dict[str, Any]:
    """Cycles per call of one op on one CPU model, and what the model says per mnemonic."""
    c = config(isa).mca
    executed = sum(x.count for x in located if x.count > 0)
    blocks, covered = hot_blocks(basic_blocks(located, dis, isa), float(c.get("coverage", 0.95)), executed)
    if not blocks:
        return {"cycles_per_call": 0.0, "coverage": covered, "blocks": 0, "replaced": 0, "mnemonics": {}, "top_blocks": []}
    regions, replaced, cmd = run_mca(path, cpu, blocks, workdir, isa)
    total = Fraction(0)
    per_mn: dict[str, list[float]] = {}
    tops = []
    for b, r in zip(blocks, regions):
        if not r["iterations"] or r["cycles"] is None:
            raise McaError("llvm-mca output without iterations or cycles")
        per_iter = Fraction(r["cycles"], r["iterations"])
        total += Fraction(b.count, batch) * per_iter
        tops.append([Path(b.located[0].obj).name, b.located[0].insn.function, hex(b.located[0].addr), len(b.located),
                     b.count / batch, float(per_iter)])
        if len(r["info"]) != len(b.located):
            continue
        for x, (uops, lat, rthr) in zip(b.located, r["info"]):
            s = per_mn.setdefault(x.insn.mnemonic, [0.0, 0.0, 0.0, 0.0])
            n = x.count / batch
            s[0] += n
            s[1] += n * lat
            s[2] += n * rthr
            s[3] = max(s[3], lat)
    tops.sort(key=lambda t: -t[4] * t[5])
    mn = {k: {"count": v[0], "latency": v[1] / v[0] if v[0] else 0.0, "rthroughput": v[2] / v[0] if v[0] else 0.0,
              "max_latency": v[3]} for k, v in sorted(per_mn.items(), key=lambda kv: -kv[1][0])}
    return {"cycles_per_call": float(total), "coverage": covered, "blocks": len(blocks), "replaced": replaced,
            "mnemonics": mn, "top_blocks": tops[:10], "command": cmd[:-1] + ["<blocks.s>"]}


def resolve_mca_cpus(study) -> tuple[list[str], str | None, str | None]:
    """(CPUs to estimate, llvm-mca path, why there is no estimate). No --mca-cpu: the host's CPU
    as llvm-mca names it."""
    path = mca_path()
    if path is None:
        return [], None, ("llvm-mca not found on PATH (it is in Debian's llvm-N package, e.g. "
                          "apt-get install llvm-16; or set PQSIMD_LLVM_MCA)")
    cpus = list(getattr(study, "mca_cpus", None) or [])
    isa = getattr(study, "isa", None)
    if not cpus and isa and config(isa).isa != config().isa:
        return [], path, f"no --mca-cpu given: name the {isa} cores to model (e.g. {', '.join(config(isa).mca.get('known_cpus', [])[:4])})"
    if not cpus:
        host = mca_host_cpu(path)
        if host is None:
            return [], path, "no --mca-cpu given and llvm-mca does not know this host's CPU"
        cpus = [host]
    return cpus, path, None


# --- jobs ------------------------------------------------------------------------------------------

def pending(sd: StudyDir, study, jobs: list) -> list:
    """Jobs not finished (StudyDir.finished), or finished without an estimate for a CPU the study
    now asks for (when llvm-mca can give it)."""
    cpus, path, _why = resolve_mca_cpus(study)
    out = []
    for j in jobs:
        if not sd.finished(j.id, j.binaries):
            out.append(j)
            continue
        if path is not None and cpus:
            rec = store.read_job_record(sd.raw_path(j.id)) or {}
            have = set((rec.get("mca") or {}).get("requested") or [])
            if not set(cpus) <= have:
                out.append(j)
    return out


def build_rows(build, scheme: str, jid: str, per_op: dict[str, dict[str, Any]]) -> Any:
    rows: dict[str, list[Any]] = {k: [] for k in ("op", "metric", "spin", "batch", "raw", "per_call")}

    def add(op, metric, batch, raw, per_call):
        rows["op"].append(op)
        rows["metric"].append(metric)
        rows["spin"].append(0)
        rows["batch"].append(batch)
        rows["raw"].append(raw)
        rows["per_call"].append(per_call)

    for op, r in per_op.items():
        batch = r["batch"]
        for cls, n in r["classes"].items():
            add(op, f"{CLASS_PREFIX}{cls}", batch, n, n / batch)
        for (mn, width, cls), n in sorted(r["mnemonics"].items(), key=lambda kv: (-kv[1], kv[0])):
            add(op, mnemonic_metric(mn, width, cls), batch, n, n / batch)
        for cpu, est in r.get("mca", {}).items():
            if isinstance(est, dict) and "cycles_per_call" in est:
                add(op, f"{MCA_PREFIX}{cpu}", batch, None, est["cycles_per_call"])
    return store.raw_table(rows, {"scheme": scheme, "variant": build.variant, "compiler": build.compiler.id,
                                  "job": jid, "job_index": 0, "rep": 0, "pos": 0, "warmup": False})


def _frac(n: int, d: int) -> str:
    f = Fraction(n, d)
    return str(f.numerator) if f.denominator == 1 else f"{f.numerator}/{f.denominator}"


def analyse_job(build, scheme: str, ops: list[str], self_check: str | None, pairs: dict[str, ProfilePair],
                mca_cpus: list[str], mca: str | None, workdir: Path | None = None,
                isa: str | None = None) -> tuple[dict[str, dict], dict]:
    """Per op: the net mix (classes, mnemonics), its top functions and the cost-model estimates;
    and what the job record says about it."""
    dis = Disassemblies()
    texts = {a: x for p in pairs.values() if p.texts for a, x in p.texts.items()}
    if texts:  # the backend disassembled what ran (QEMU): no objdump of objects
        from .backends import GUEST

        dis.by_object[GUEST] = guest_disassembly(texts, config(isa))
    base = pairs.get(self_check) if self_check else None
    per_op: dict[str, dict[str, Any]] = {}
    mca_info: dict[str, Any] = {"cpus": {}, "failed": {}}
    for op in ops:
        pair = pairs[op]
        net = net_counts(pair, base if op != self_check else pair)
        located = locate(net, dis, isa)
        classes, mnemonics, crossing = mix_of(located, isa)
        r = {"batch": pair.batch, "classes": classes, "mnemonics": mnemonics, "crossing": crossing,
             "functions": functions_of(located, pair.batch), "total": sum(classes.values()), "mca": {}}
        for cpu in mca_cpus:
            try:
                est = mca_estimate(mca, cpu, located, dis, pair.batch, workdir, isa)
            except McaError as e:
                mca_info["failed"].setdefault(cpu, {})[op] = str(e)
                continue
            r["mca"][cpu] = est
            mca_info["cpus"].setdefault(cpu, {})[op] = {k: v for k, v in est.items() if k != "command"}
            if est.get("command"):
                mca_info.setdefault("command", est["command"])
        per_op[op] = r
    return per_op, {"objects": dis.shas(), "mca": mca_info}


def _set_manifest(sd: StudyDir, info: dict) -> None:
    sd.update_manifest(lambda m: m.setdefault("metrics", {}).__setitem__(METRIC, info))


def run(sd: StudyDir, study, ctx) -> bool:
    """The mix metric's runner (run/metrics.py), with the study's ISA's counting backend."""
    from .backends import for_isa
    from .metrics import per_build_jobs

    jobs = per_build_jobs(sd, study, ctx, METRIC)
    return execute(sd, study, jobs, pending(sd, study, jobs), ctx.console, backend=for_isa(study.isa))


def execute(sd: StudyDir, study, jobs: list, todo: list, console: Console | None = None, backend=None) -> bool:
    """The instruction mix (and cost model) of every (build, scheme) job not yet finished; False if one failed."""
    from .backends import Callgrind

    console = console or Console(stderr=True, highlight=False)
    backend = backend or Callgrind()
    isa = getattr(study, "isa", None) or None
    callgrind = backend.name == Callgrind.name
    version = backend.version()
    cpus, mca, mca_why = resolve_mca_cpus(study)
    how = ("callgrind --dump-instr=yes inside pqsimd_measure, per-address (Ir(N2) - Ir(N1)) minus the "
           "self-check op's, mapped to objdump -M intel" if callgrind else
           f"{backend.name} hist=on between the markers, per-address (I(N2) - I(N1)) minus the self-check op's, "
           f"with QEMU's disassembly")
    info: dict[str, Any] = {
        "status": "ok", "tool": version, "backend": backend.name, "isa": isa,
        "objdump": objdump_path() if callgrind else None,
        "method": f"{how}, classified by data/{_mix_file(isa)}",
        "n1": N1, "n2": N2, "repeats": REPEATS, "skipped": {}, "failed": {},
        "mca": {"status": "ok" if mca and cpus else "unavailable", "cpus": cpus,
                "tool": mca_version(mca) if mca else None, "path": mca, **({"reason": mca_why} if mca_why else {})},
    }
    if version is None or (callgrind and objdump_path() is None):
        reason = (backend.missing if version is None
                  else "objdump not found on PATH (install it: apt-get install binutils)")
        console.print(tagged("mix unavailable", "red", f": {reason}"))
        _set_manifest(sd, {**info, "status": "unavailable", "reason": reason})
        return False
    if mca_why:
        console.print(tagged("mix: no cost-model estimate", "yellow", f"({mca_why}); the instruction mix goes on"), soft_wrap=True)
    console.print(f"mix ({version}{', ' + info['mca']['tool'] + ' for ' + ', '.join(cpus) if mca and cpus else ''}): "
                  f"{len(todo)} jobs to run, {len(jobs) - len(todo)} already finished")
    ok = ins.run_per_op(sd, study, todo, console, info, metric=METRIC, label=f"{backend.name} mix runs", repeats=1,
                        measure=lambda d, lib, s, op: measure_profile(d, lib, s, op, backend=None if callgrind else backend),
                        write=lambda j, res, started: _write_job(sd, study, j, {op: (ps[0] if ps else None)
                                                                                for op, ps in res.items()},
                                                                 started, version, cpus, mca, backend))
    if info["failed"]:
        info["status"] = "partial"
    _set_manifest(sd, info)
    return ok


def _mix_file(isa: str | None) -> str:
    from .. import isa as isa_mod

    return (isa_mod.get(isa) if isa else isa_mod.host()).mix


def _write_job(sd: StudyDir, study, job, res: dict[str, ProfilePair | None], started: str, version: str,
               cpus: list[str], mca: str | None, backend=None) -> Path:
    from ..isa import mca as mca_models
    from .backends import Callgrind

    backend = backend or Callgrind()
    isa = getattr(study, "isa", None) or None
    cfg = config(isa)
    b, scheme = job.info["build"], job.info["scheme"]
    cal = ins.calibration_op(scheme)
    self_check = cal[0] if cal else None
    ops = ins.job_ops(sd, study, job)
    pairs = {op: p for op, p in res.items() if p is not None}
    per_op, extra = analyse_job(b, scheme, list(dict.fromkeys([*([self_check] if self_check else []), *ops])),
                                self_check, pairs, cpus if mca else [], mca, isa=isa)
    table = build_rows(b, scheme, job.id, {op: per_op[op] for op in ops})
    lib = sd.variant_path(b.id)
    mca_rec = extra["mca"]
    record = {
        "id": job.id, "variant": b.variant, "compiler": b.compiler.id, "build": b.id, "scheme": scheme, "index": 0,
        "metric": METRIC, "cpu": None, "hostname": socket.gethostname(), "cpu_model": machine.cpu_model(),
        "calibration": {"overhead": 0, "unit": "instructions", "self_check": self_check,
                        "self_check_per_call": (_frac(sum(pairs[self_check].diff().values()), pairs[self_check].batch)
                                                if self_check in pairs else None)},
        "binaries": {b.id: store.sha256_file(lib)}, "tool": version, "backend": backend.name, "isa": cfg.isa,
        "command": backend.command(sd.driver_path, lib, scheme, CALLGRIND_ARGS),
        "objdump": ([objdump_path(), "-d", "-w", "-M", "intel", "--no-show-raw-insn", "<object>"]
                    if backend.name == Callgrind.name else None),
        "objects": extra["objects"], "classes": list(cfg.classes), "mix_toml": _mix_file(isa),
        "mix_toml_sha256": hashlib.sha256(cfg.text.encode()).hexdigest(),
        "n1": N1, "n2": N2, "repeats": REPEATS,
        "per_call_exact": {op: _frac(per_op[op]["total"], per_op[op]["batch"]) for op in ops},
        "lane_crossing": sorted({mn for op in ops for (mn, _w, _c), x in per_op[op]["crossing"].items() if x}),
        "functions": {op: per_op[op]["functions"] for op in ops},
        "mca": {
            "tool": mca_version(mca) if mca else None, "path": mca, "host_cpu": mca_host_cpu(mca) if mca else None,
            "requested": list(cpus), "command": mca_rec.get("command"),
            "coverage_target": float(cfg.mca.get("coverage", 0.95)),
            "iterations": int(cfg.mca.get("iterations", 100)), "triple": cfg.mca["triple"],
            "models": {cpu: mca_models.model(mca_version(mca), cfg.isa, cpu) for cpu in cpus} if mca else {},
            "cpus": {cpu: ops_ for cpu, ops_ in mca_rec["cpus"].items()},
            "failed": mca_rec["failed"],
            **({} if mca else {"status": "unavailable", "reason": resolve_mca_cpus(study)[2]}),
        },
        "started": started, "finished": datetime.now(timezone.utc).isoformat(),
    }
    return sd.write_raw(job.id, table, record)
