"""Which instructions an op runs, as a hash independent of where the linker put them.

Per build and parameter set, per op: the op's call tree (binary/: its function, driver `where`, and
every function it reaches by direct calls, jumps and conditional jumps), each function's instructions
with addresses taken out (binary.normalize): branch and call targets become the callee's name (or
name+offset inside the function), operands holding an address keep only the symbol objdump names. Two builds whose op hashes are equal run the same instructions
(the converse need not hold: an anonymous constant read through a different nearest symbol makes
identical code look different, never the other way round). analyze/layout.py uses it as a
calibration check: a timed comparison of identical code must not get a faster/slower verdict.

A second hash (`commuted=True`) is the same up to commuted operands: the two operands of `test`
(an AND), of a `cmp` whose flags only an equality test reads (the next instruction is je/jne,
sete/setne or cmove/cmovne: ZF is symmetric), and the two register sources of a three-operand
VEX/EVEX instruction whose operation commutes (vpadd*, vpmul*, vpand/vpor/vpxor, vpcmpeq*,
vpmin*/vpmax*, vadd/vmul/vmin/vmax p[sd]). gcc's refnv and ref builds of ML-KEM's invntt differ only
in the operand order of one `cmp` before `jne`: the same instructions, counted as identical here.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from pathlib import Path

from ..binary import Library, library, normalize

# the cache beside a build (code.json) holds hashes under TREE + scheme; history of the call tree hashed:
#   (none)  direct calls and unconditional jumps only (x86 conditional tail jumps, aarch64 cbz/tbz and every
#           riscv64 branch not followed), through PLT stubs into the PLT
#   tree2:  binary.Library.tree: the ISA's calls, jumps and conditional jumps, a PLT stub a leaf, an
#           assembly routine's unsized piece it falls through into
TREE = "tree2:"

EQUALITY_READERS = re.compile(r"^(je|jne|jz|jnz|sete|setne|setz|setnz|cmove|cmovne|cmovz|cmovnz)[a-z]?\b")
COMMUTING_VEX = re.compile(r"^(vpadd[bwdq]|vpadds[bw]|vpaddus[bw]|vpmull[wdq]|vpmulh[u]?w|vpmulhrsw|vpmul[u]?dq|vpand|"
                           r"vpor|vpxor|vpandq|vpandd|vporq|vpord|vpxorq|vpxord|vpcmpeq[bwdq]|vpmin[su][bwdq]|"
                           r"vpmax[su][bwdq]|vadd[ps][sd]|vmul[ps][sd]|vmin[ps][sd]|vmax[ps][sd]|vandp[sd]|vorp[sd]|"
                           r"vxorp[sd]|vpavg[bw])$")
REGISTER = re.compile(r"^%[a-z0-9]+$")


def _operands(text: str) -> tuple[str, list[str]]:
    """Mnemonic and operands (commas inside parentheses kept)."""
    head, _, rest = text.partition(" ")
    ops, depth, cur = [], 0, ""
    for ch in rest:
        if ch == "," and depth == 0:
            ops.append(cur.strip())
            cur = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        cur += ch
    if cur.strip():
        ops.append(cur.strip())
    return head, ops


def commuted(lines: list[str]) -> list[str]:
    """The instructions with commuting operands in one order (see the module's docstring)."""
    out = []
    for i, t in enumerate(lines):
        head, ops = _operands(t)
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if len(ops) == 2 and (head.startswith("test") or (head.startswith("cmp") and EQUALITY_READERS.match(nxt))):
            ops = sorted(ops)
        elif len(ops) == 3 and COMMUTING_VEX.match(head) and all(REGISTER.match(o) for o in ops[:2]):
            ops = sorted(ops[:2]) + ops[2:]
        out.append(f"{head} {','.join(ops)}" if ops else head)
    return out


def op_hashes(lib: Library, offsets: dict[str, int], commute: bool = False) -> dict[str, str]:
    """op -> sha256 of the normalized instructions of its call tree (offsets: op -> its function);
    commute: up to commuted operands (commuted())."""
    norm: dict[int, tuple[str, list[str]]] = {}

    def of(addr: int) -> tuple[str, list[str]]:
        if addr not in norm:
            f = lib.funcs[addr]
            lines = [normalize(t, lib.patterns) for t in f.texts()]
            norm[addr] = (re.sub(r"\.(constprop|isra|part|cold)\.\d+", "", f.name), commuted(lines) if commute else lines)
        return norm[addr]

    out = {}
    for op, start in offsets.items():
        if start not in lib.funcs:
            continue
        seen = set(lib.tree(start).functions)
        for a in seen:
            of(a)
        h = hashlib.sha256()
        # the op's own function first, then its callees by name: order of the linker never matters
        for a in [start] + sorted(seen - {start}, key=lambda x: (norm[x][0], norm[x][1])):
            name, lines = norm[a]
            h.update((name if a != start else "<op>").encode() + b"\n" + "\n".join(lines).encode() + b"\n\n")
        out[op] = h.hexdigest()
    return out


def build_hashes(driver: Path, build, schemes: list[str], launcher: list[str] | tuple = (),
                 objdump: list[str] | None = None, commute: bool = False) -> dict[str, dict[str, str]]:
    """scheme -> op -> hash for one build (pqsimd.build.Build), cached beside it (its binary never
    changes under its cache folder); {} when the library cannot be read. commute: the hashes up to
    commuted operands (cached under `commuted:<scheme>`), each under TREE."""
    import json

    from ..errors import PqsimdError
    from ..layout import op_offsets

    cache = build.directory / "code.json"
    try:
        have = json.loads(cache.read_text())
    except (OSError, ValueError):
        have = {}
    tag = TREE + ("commuted:" if commute else "")
    want = [s for s in schemes if s in build.schemes and tag + s not in have]
    if want:
        try:
            lib = library(build.library, objdump)
            for s in want:
                have[tag + s] = op_hashes(lib, op_offsets(driver, build.library, s, launcher), commute)
        except (RuntimeError, OSError, subprocess.TimeoutExpired, ValueError, PqsimdError):
            return {s: have[tag + s] for s in schemes if tag + s in have}  # no hashes: no check, never a failed study
        try:
            tmp = cache.with_name(f".code.json.{id(have)}")
            tmp.write_text(json.dumps(have))
            tmp.replace(cache)
        except OSError:
            pass
    return {s: have[tag + s] for s in schemes if tag + s in have}
