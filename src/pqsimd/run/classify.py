"""What kind of instruction this is: its class, vector width and lane crossing, from the ISA's mix
TOML (data/isas.toml names it: data/mix.toml on x86-64, data/mix_aarch64.toml on aarch64). The mix
metric, the cost model and analyze read instructions through it."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources
from typing import Any

from ..errors import PqsimdError

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
    widths: tuple[tuple[re.Pattern, int], ...] = ()  # [[width]]: operand pattern -> bits (default: x86's;
    # VLEN_WIDTH: "vlen", a vector-length-agnostic register, as wide as the study's vector length: mix_width)
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
                  text, tuple((_pattern(where, w["pattern"]), _bits(where, w["bits"])) for w in d.get("width", ())),
                  str(d.get("syntax", "intel")), target.name)


VLEN_WIDTH = -1  # [[width]] bits = "vlen": the register is as wide as the study's vector length


def _bits(where: str, bits) -> int:
    if bits == "vlen":
        return VLEN_WIDTH
    if isinstance(bits, bool) or not isinstance(bits, int) or bits <= 0:
        raise PqsimdError(f"{where}: [[width]] bits must be a number of bits or \"vlen\", got {bits!r}")
    return bits


def mix_width(width: int, vlen: int | None) -> int:
    """An instruction's vector width in bits: a VLEN_WIDTH register at the study's vector length."""
    return (vlen or 0) if width == VLEN_WIDTH else width


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
        found = [bits for pat, bits in c.widths if pat.search(operands)]
        return VLEN_WIDTH if VLEN_WIDTH in found else max(found, default=0)
    w = [_WIDTH[m.group(1)] for m in _VREG.finditer(operands)]
    w += [_WIDTH[m.group(1).lower()] for m in _VMEM.finditer(operands)]
    return max(w, default=0)


@dataclass(frozen=True)
class InsnKind:
    cls: str
    width: int
    lane_crossing: bool


@lru_cache(maxsize=1 << 16)
def classify(mnemonic: str, operands: str, isa: str | None = None) -> InsnKind:
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
            return InsnKind("store", width, crossing)
        if any(_is_mem(o) for o in ops[1:]):
            return InsnKind("load", width, crossing)
        if reg_class is None:  # movd/movq: a general register on one side is an insert/extract
            vec = [bool(_VREG.fullmatch(o)) for o in ops]
            reg_class = c.vector_register_class if ops and all(vec) else c.gpr_vector_class
        return InsnKind(reg_class, width, crossing)
    for r in c.rules:
        if r.match.search(mnemonic) and (r.operands is None or r.operands.search(operands)):
            return InsnKind(r.lane_crossing_class if (crossing and r.lane_crossing_class) else r.cls, width, crossing)
    return InsnKind("other", width, crossing)


UNKNOWN = InsnKind("unknown", 0, False)


def mix_file(isa: str | None) -> str:
    from .. import isa as isa_mod

    return (isa_mod.get(isa) if isa else isa_mod.host()).mix
