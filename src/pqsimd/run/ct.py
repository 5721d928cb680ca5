"""`--metric ct`: where the secrets of an op steer a branch or an address, per build and op, confirmed
by traces. One job per (build, scheme), exact and deterministic.

1. Taint. `driver ct LIB SCHEME OP 0 SECRET...` (harness/driver/ct.c) runs one call of the op with
   the inputs its family names secret ([ct.secret]: op-table buffers, or `random`, every byte the
   code draws) marked undefined under valgrind's memcheck. Every report inside the call is a site:
   its instruction's offset in LIB, function, file:line, the instruction, and a kind:
     branch    a conditional jump on a secret (timing and cache: a leak on every CPU)
     address   a load or store whose address depends on a secret (a cache line: a leak)
     cmov      a conditional move or set on a secret: constant time on x86-64, shown as such
     operand   a secret in an operand memcheck wants defined that is no address (a vector shift count):
               constant time on x86-64, shown as such
     other     anything else memcheck says about a secret (a system call argument)
   A site inside a function the family names public ([ct.public]: the standard makes its inputs
   public, e.g. ML-KEM's rho) is declassified: listed with the reason, never a leak.
2. Confirmation. memcheck alone is not proof: a compiler may offset a loop counter by a secret and
   branch the same way for every secret. Each remaining site is traced exactly on VARIATIONS different
   secrets, public inputs fixed (driver `ct` variation 0..VARIATIONS-1): a site whose successors (branch)
   or addresses (address) differ between two secrets is a `leak`, with those two as witnesses; one whose
   traces are identical is `unconfirmed`. The tracer is `driver sitetrace`: the call runs natively with a
   breakpoint on each site (address randomization off, so addresses compare between runs), which records
   the successor, the address computed from the instruction's registers, or the dividend. A site whose
   address it cannot compute (a segment, a vector index) is traced by valgrind's lackey instead (every
   instruction and access of the call: exact too, ~1000x slower).
3. Divisions (KyberSlash): memcheck sees no branch in an integer division whose dividend is secret, yet its
   latency depends on it. Every div and idiv of LIB is a site of the same native runs: dividends that differ
   between the secrets make a `div` leak.
   Floating-point divisions and square roots are not checked; the record says so (`not_checked`).
4. Timing evidence (dudect, `driver ct-time`): natively, calls with one fixed secret and calls with fresh
   ones in random order, public inputs fixed; analyze computes Welch's t (stats/dudect.py). Evidence
   beside the verdict, never a verdict of its own: a shared machine moves times for its own reasons.
5. Verdict per op: leak (a confirmed site), unconfirmed (sites, none confirmed), clean (no site but
   declassified ones), n/a with the reason (no secret input, an op table that names no buffer it needs, an
   op that drew no randomness when that was its secret, an op over the study's cap, a build valgrind
   cannot run: AVX-512).
Another ISA (under qemu-user) has no taint tracker: trace_compare counts each instruction of the call with
our plugin over the same secrets; a function whose counts differ holds a branch leak (scope said).

Raw files DIR/raw/<variant>.<compiler>.<scheme>.ct.parquet: one row per op, raw = per_call = the
number of confirmed leak sites (-1: n/a); the job record holds every op's verdict and sites.
"""

from __future__ import annotations

import fnmatch
import functools
import hashlib
import os
import re
import socket
import subprocess
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .. import catalog, isa as isa_mod, machine, store
from ..errors import CountError, PqsimdError, tagged
from ..studydir import StudyDir
from .callgrind import unhandled_instruction, valgrind_path
from .instructions import _workers, job_ops, over_cap
from .metrics import pending, per_build_jobs
from .. import metrics as metrics_mod

METRIC = metrics_mod.CT
VARIATIONS = 8  # secrets per confirmation (0 is the timed one)
TIMEOUT = 900  # seconds for one valgrind run
RANDOM = "random"
HARNESS_FRAMES = ("ct_call", "pqsimd_cmd_ct", "main", "(below main)")
NOT_CHECKED = ("floating-point divisions and square roots on a secret operand are not checked (integer divisions are: "
               "their dividends over the secrets, driver sitetrace)")
LEAK_KINDS = ("branch", "address", "div")
_DIV = re.compile(r"^\s*([0-9a-f]+):\s+(?:i?div[bwlq]?)\s", re.M)


@dataclass
class Site:
    offset: int | None  # of the instruction in LIB (None: outside it, e.g. in libc)
    kind: str
    function: str
    file: str
    line: int | None
    instruction: str
    what: str  # memcheck's words
    stack: list[str] = field(default_factory=list)  # innermost first, harness frames left out
    declassified: str | None = None  # the [ct.public] pattern's reason
    verdict: str = ""  # leak | unconfirmed | declassified | not a leak (cmov)
    witnesses: list[int] = field(default_factory=list)  # two variations whose traces differ
    difference: str = ""
    tracer: str = ""  # what confirmed it: sitetrace (natively) or lackey
    source: str = ""  # the text of its source line (file:line), when the file is there


def _frame_text(frame, tag: str) -> str:
    el = frame.find(tag)
    return el.text if el is not None and el.text else ""


def source_line(directory: str, file: str, line: int | None) -> str:
    """The text of FILE:LINE (stripped), or "" when the file is not there."""
    if not file or not line:
        return ""
    path = Path(directory) / file if directory else Path(file)
    try:
        lines = _read_lines(str(path))
    except OSError:
        return ""
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


@functools.lru_cache(maxsize=64)
def _read_lines(path: str) -> list[str]:
    return Path(path).read_text(errors="replace").splitlines()


def parse_memcheck(xml_text: str, base: int, library: Path) -> list[Site]:
    """memcheck's XML errors inside the call, one Site per instruction (first report wins)."""
    root = ET.fromstring(xml_text)
    sites: dict[Any, Site] = {}
    for err in root.iter("error"):
        kind_m = _frame_text(err, "kind")
        what = _frame_text(err, "what") or _frame_text(err.find("xwhat") or err, "text")
        frames = list(err.find("stack") or [])
        names = [_frame_text(f, "fn") for f in frames]
        if not any(n.startswith("ct_call") for n in names):
            continue  # the harness's own, outside the call
        inner = [f for f in frames if not any(_frame_text(f, "fn").startswith(h) for h in HARNESS_FRAMES)]
        if not inner:
            continue
        in_lib = next((f for f in inner if Path(_frame_text(f, "obj")).name == library.name), None)
        top = inner[0]
        at = top if in_lib is None else in_lib
        offset = int(_frame_text(top, "ip"), 16) - base if in_lib is top else None
        line = _frame_text(at, "line")
        kind = {"UninitCondition": "branch", "UninitValue": "address"}.get(kind_m, "other")
        site = Site(offset, kind, _frame_text(at, "fn") or "?", _frame_text(at, "file"), int(line) if line else None,
                    "", what, [n for n in (_frame_text(f, "fn") for f in inner) if n])
        site.source = source_line(_frame_text(at, "dir"), site.file, site.line)
        key = offset if offset is not None else (site.function, site.file, site.line, kind)
        sites.setdefault(key, site)
    return list(sites.values())


_COMMENT = re.compile(r"\s+(?:#\s|//|<)")  # objdump's comment or symbol after an instruction (not aarch64's #imm)


def disassemble(library: Path, offset: int, objdump: list[str] | tuple[str, ...] = ("objdump",)
                ) -> list[tuple[int, str]]:
    """The instructions from `offset` on in LIB (a few), as (offset, objdump's text) pairs."""
    proc = subprocess.run([*objdump, "-d", "--no-show-raw-insn", f"--start-address={offset}",
                           f"--stop-address={offset + 32}", str(library)], capture_output=True, text=True)
    out = []
    for line in proc.stdout.splitlines():
        parts = line.split(":", 1)
        if len(parts) == 2 and parts[0].strip() and all(c in "0123456789abcdef" for c in parts[0].strip()):
            out.append((int(parts[0], 16), _COMMENT.split(parts[1], 1)[0].strip()))
    return out


def instruction_at(library: Path, offset: int, objdump: list[str] | tuple[str, ...] = ("objdump",)) -> str:
    """The instruction at `offset` in LIB, as objdump prints it ("jae 1234 <f+0x40>" -> "jae 1234",
    "ldr x0, [x1, #8]" whole)."""
    got = disassemble(library, offset, objdump)
    return " ".join(got[0][1].split()) if got else "?"


# AT&T memory operand: [segment:]disp(base,index,scale)
_MEMORY = re.compile(r"(?<![%\w])(%[a-z]s:)?(-?0x[0-9a-f]+|-?\d+)?\((%\w+)?(?:,(%\w+))?(?:,(\d))?\)")
_GPR = re.compile(r"^(r[a-ds]x|r[sd]i|r[bs]p|r\d+|e[a-ds]x|e[sd]i|e[bs]p|r\d+d)$")


def native_site(kind: str, offset: int, text: str, length: int) -> str | None:
    """The site as `driver sitetrace` names it (b:OFF:LEN, a:OFF:BASE:INDEX:SCALE:DISP, d:OFF), or None when
    its address cannot be computed from general registers (a segment, rip, a vector index, no operand):
    lackey traces those."""
    if kind == "div":
        return f"d:{offset}"
    if kind != "address":
        return f"b:{offset}:{length}" if length > 0 else None
    found = _MEMORY.findall(text.split(" ", 1)[1] if " " in text else "")
    if len(found) != 1:
        return None
    segment, disp, base, index, scale = found[0]
    regs = [r.lstrip("%") for r in (base, index) if r]
    if segment or not regs or not all(_GPR.match(r) for r in regs):
        return None
    return (f"a:{offset}:{base.lstrip('%') or '-'}:{index.lstrip('%') or '-'}:{scale or 1}:"
            f"{int(disp, 0) if disp else 0}")


def refine_kind(site: Site) -> str:
    """memcheck says 'depends on' for jumps, moves and sets alike, and 'use of a value' for addresses and any
    other operand it wants defined: the instruction says which. An indirect jump or call is a branch (its
    target); a register-only or rip-relative instruction has no secret address: `operand` (a vector shift
    count, a lane select), constant time on x86-64."""
    mnemonic, _, operands = site.instruction.partition(" ")
    if site.kind == "branch" and mnemonic.startswith(("cmov", "set", "vpcmov", "fcmov", "adc", "sbb")):
        return "cmov"
    if site.kind == "address" and site.instruction not in ("", "?"):
        if mnemonic.startswith(("call", "jmp")) and operands.startswith("*"):
            return "branch"
        if mnemonic.startswith(("rep", "movs", "stos", "lods", "cmps", "scas")):
            return "address"
        memory = _MEMORY.findall(operands)
        if not memory or all(base == "%rip" and not index for _, _, base, index, _ in memory):
            return "operand"
    return site.kind


def declassify(sites: list[Site], public: dict[str, str]) -> None:
    """A site with a frame in a function the family names public is declassified (inlined frames
    count: memcheck names them from the line tables); a "FUNCTION @ LINE" entry declassifies the sites of
    FUNCTION whose source line matches LINE (a branch on a value the standard makes public, computed inline)."""
    whole = {p: why for p, why in public.items() if "@" not in p}
    lines = [(*(part.strip() for part in p.split("@", 1)), why) for p, why in public.items() if "@" in p]
    for s in sites:
        for fn in s.stack or [s.function]:
            pattern = next((p for p in whole if fnmatch.fnmatchcase(fn, p)), None)
            if pattern:
                s.declassified = f"in {fn}: {whole[pattern]}"
                break
        if s.declassified or not s.source:
            continue
        hit = next(((f, why) for f, ln, why in lines
                    if fnmatch.fnmatchcase(s.function, f) and _line_glob(ln).fullmatch(s.source)), None)
        if hit:
            s.declassified = f"at {s.file}:{s.line} `{s.source}`: {hit[1]}"


@functools.lru_cache(maxsize=256)
def _line_glob(pattern: str) -> re.Pattern:
    """A source line pattern: * and ? are wildcards, everything else literal (C has brackets: tt[u])."""
    return re.compile("".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern))


def _driver_cmd(driver: Path, library: Path, scheme: str, op: str, variation: int, secrets: list[str]) -> list[str]:
    return [str(driver), "ct", str(library), scheme, op, str(variation), *secrets]


def _run(cmd: list[str], what: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT,
                              env={**os.environ, **env} if env else None)
    except subprocess.TimeoutExpired:
        raise PqsimdError(f"{what}: no answer within {TIMEOUT} s") from None
    return proc


class NoSecret(Exception):
    """The op's only secret was never there (an op that draws no randomness through randombytes)."""


class Unsupported(Exception):
    """valgrind cannot run this build (an instruction it cannot decode)."""


def _check(proc: subprocess.CompletedProcess, what: str) -> None:
    unsupported = unhandled_instruction(proc.stderr)
    if unsupported:
        raise Unsupported(unsupported)
    if proc.returncode:
        why = [ln for ln in proc.stderr.splitlines() if ln.startswith("driver:")] or proc.stderr.strip().splitlines()
        raise PqsimdError(f"{what}: {(why or [f'exit {proc.returncode}'])[-1]}")


def _base(stdout: str) -> tuple[int, int]:
    vals = dict(line.split("\t", 1) for line in stdout.splitlines() if "\t" in line)
    if "base" not in vals or "marker" not in vals:
        raise PqsimdError("driver ct printed no base and marker")
    if "dry" in stdout.split():
        raise PqsimdError("driver ct: the randomness pool ran dry")
    return int(vals["base"], 16), int(vals["marker"], 16)


def memcheck(driver: Path, library: Path, scheme: str, op: str, secrets: list[str], work: Path,
             objdump: list[str] | tuple[str, ...] = ("objdump",)) -> list[Site]:
    xml = work / f"memcheck.{library.name}.{scheme}.{op}.xml"
    cmd = [valgrind_path() or "valgrind", "--tool=memcheck", "--xml=yes", f"--xml-file={xml}", "--error-limit=no",
           "--read-inline-info=yes", "--num-callers=40", "-q", *_driver_cmd(driver, library, scheme, op, 0, secrets)]
    proc = _run(cmd, f"memcheck {library.name} {scheme} {op}")
    _check(proc, f"memcheck {library.name} {scheme} {op}")
    base, _ = _base(proc.stdout)
    if "nomemcheck" in proc.stdout.split():
        raise PqsimdError("the driver was built without valgrind's memcheck.h: install valgrind (apt-get install "
                          "valgrind), then run again (the driver is rebuilt)")
    drawn = next((int(ln.split("\t")[1]) for ln in proc.stdout.splitlines() if ln.startswith("drawn\t")), 0)
    if secrets == [RANDOM] and drawn == 0:
        xml.unlink(missing_ok=True)
        raise NoSecret("the op drew no randomness through randombytes (its only secret input)")
    sites = parse_memcheck(xml.read_text(), base, library)
    xml.unlink(missing_ok=True)
    for s in sites:
        if s.offset is not None:
            s.instruction = instruction_at(library, s.offset, objdump)
        s.kind = refine_kind(s)
    return sites


@dataclass
class SiteTrace:
    executions: int = 0
    taken: int = 0  # branch: executions whose next instruction is not the fall-through
    digest: Any = field(default_factory=hashlib.sha256)


def trace(driver: Path, library: Path, scheme: str, op: str, secrets: list[str], variation: int,
          sites: dict[int, str], filled: set[str] | None = None) -> dict[int, tuple[int, int, str]]:
    """Per site offset: (executions, taken, digest of its successors (branch) or addresses (address))
    over one call under lackey, the inputs of `variation`; `filled` gets the secrets the driver filled
    with the variation's own bytes (the setup left them as they were)."""
    cmd = [valgrind_path() or "valgrind", "--tool=lackey", "--trace-mem=yes", "--log-fd=1", "-q",
           *_driver_cmd(driver, library, scheme, op, variation, secrets)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1 << 20)
    base = marker = None
    keys: dict[str, int] = {}
    state = {off: SiteTrace() for off in sites}
    inside = False
    current: int | None = None  # the site whose effects the next lines are
    pending_next: int | None = None  # a branch site waiting for its successor
    fallthrough = 0
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            c = line[0]
            if c == "I":
                pc = line[3:line.index(",")]
                if pending_next is not None:
                    st = state[pending_next]
                    st.digest.update(pc.encode())
                    if int(pc, 16) != fallthrough:
                        st.taken += 1
                    pending_next = None
                off = keys.get(pc) if inside else None
                current = off
                if off is not None:
                    st = state[off]
                    st.executions += 1
                    st.digest.update(b"|")
                    if sites[off] != "address":
                        pending_next = off
                        fallthrough = int(pc, 16) + int(line[line.index(",") + 1:])
            elif c == " ":
                if marker is not None and line[1] == "S" and line[3:line.index(",")].lstrip("0") == marker:
                    inside = not inside
                    if not inside:
                        proc.stdout.close()
                        break
                elif current is not None and sites[current] == "address":
                    state[current].digest.update(line[3:].encode())
            elif line.startswith("base\t"):
                base = int(line.split("\t")[1], 16)
                keys = {f"{base + off:08x}": off for off in sites}
            elif line.startswith("marker\t"):
                marker = line.split("\t")[1].strip().lstrip("0")
            elif line.startswith("filled\t") and filled is not None:
                filled.add(line.split("\t")[1].strip())
    finally:
        try:
            proc.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
    err = proc.stderr.read() if proc.stderr else ""
    if base is None or marker is None:
        unsupported = unhandled_instruction(err)
        if unsupported:
            raise Unsupported(unsupported)
        raise PqsimdError(f"lackey {library.name} {scheme} {op}: {(err.strip().splitlines() or ['no output'])[-1]}")
    return {off: (st.executions, st.taken, st.digest.hexdigest()[:16]) for off, st in state.items()}


def native_trace(driver: Path, library: Path, scheme: str, op: str, secrets: list[str], variation: int,
                 specs: list[str]) -> tuple[dict[int, tuple[int, int, str, bool]], set[str], bool]:
    """One native call under `driver sitetrace`: per site offset (executions, taken, digest, cut), the
    secrets the driver filled itself, and whether address randomization stayed on."""
    what = f"driver sitetrace {library.name} {scheme} {op}"
    proc = _run([str(driver), "sitetrace", str(library), scheme, op, str(variation), *specs, "--", *secrets], what)
    if proc.returncode:
        raise PqsimdError(f"{what}: {(proc.stderr.strip().splitlines() or [f'exit {proc.returncode}'])[-1]}")
    out: dict[int, tuple[int, int, str, bool]] = {}
    filled: set[str] = set()
    aslr = False
    for line in proc.stdout.splitlines():
        f = line.split("\t")
        if f[0] == "site":
            out[int(f[1])] = (int(f[2]), int(f[3]), f[4], f[5] == "1")
        elif f[0] == "filled":
            filled.add(f[1].strip())
        elif f[0] == "aslr":
            aslr = True
    return out, filled, aslr


def _verdict(s: Site, runs: list[dict], what: str) -> None:
    """A site's verdict from its traces over the variations: differing ones make a leak, two witnesses."""
    seen: dict[str, int] = {}
    for v, run in enumerate(runs):
        seen.setdefault(run[s.offset][2], v)
    if len(seen) > 1:
        a, b = list(seen.values())[:2]
        (ea, ta, *_), (eb, tb, *_) = runs[a][s.offset], runs[b][s.offset]
        s.verdict = "leak"
        s.witnesses = [a, b]
        if ea != eb:
            s.difference = f"executed {ea} vs {eb} times"
        elif s.kind == "branch" and ta != tb:
            s.difference = f"taken {ta} vs {tb} of {ea} times"
        else:
            s.difference = f"other {what} ({_times(ea)} each)"
    else:
        e, _, _, *cut = runs[0][s.offset]
        s.verdict = "unconfirmed"
        first = f"the first {_times(e)}" if cut and cut[0] else _times(e)
        s.difference = f"the same trace for {len(runs)} secrets ({first})"


def _times(n: int) -> str:
    return f"{n} execution" if n == 1 else f"{n} executions"


WHAT = {"branch": "successors", "address": "addresses", "div": "dividends"}


def confirm(driver: Path, library: Path, scheme: str, op: str, secrets: list[str], sites: list[Site],
            variations: int = VARIATIONS, divisions: list[int] | None = None,
            objdump: list[str] | tuple[str, ...] = ("objdump",), natively: bool = True
            ) -> tuple[list[str], list[Site]]:
    """Each site with an offset traced on `variations` secrets, public inputs fixed: traces that differ make
    it a leak. Natively (`driver sitetrace`, breakpoints on the sites) where its address can be computed, else
    under lackey. The integer divisions at `divisions` (offsets in LIB) are traced in the same runs: those
    whose dividends differ are returned as div leaks. Returns (the secrets the driver filled itself, the
    division leaks). natively=False: every site under lackey (the two tracers' agreement is tested)."""
    native: dict[int, str] = {}
    lackey: dict[int, str] = {}
    for s in sites:
        if s.offset is None:
            s.verdict = "unconfirmed"
            s.difference = "outside the library: not traced"
            continue
        code = disassemble(library, s.offset, objdump)
        length = code[1][0] - code[0][0] if len(code) > 1 else 0
        spec = native_site(s.kind, s.offset, code[0][1] if code else "", length) if natively else None
        (native if spec else lackey)[s.offset] = spec or s.kind
    for off in divisions or ():
        native.setdefault(off, f"d:{off}")
    filled: set[str] = set()
    runs: list[dict] = []
    if native:
        with ThreadPoolExecutor(max_workers=_workers()) as pool:
            got = list(pool.map(lambda v: native_trace(driver, library, scheme, op, secrets, v,
                                                       list(native.values())), range(variations)))
        runs = [g[0] for g in got]
        for g in got:
            filled |= g[1]
        if any(g[2] for g in got):  # addresses do not compare between randomized runs: lackey's instead
            for s in sites:
                if s.offset in native and s.kind == "address":
                    lackey[s.offset] = "address"
    if lackey:  # the secrets' traces side by side (each is one valgrind process)
        with ThreadPoolExecutor(max_workers=_workers()) as pool:
            slow = list(pool.map(lambda v: trace(driver, library, scheme, op, secrets, v, lackey, filled),
                                 range(variations)))
        runs = [{**(runs[v] if runs else {}), **slow[v]} for v in range(variations)]
    for s in sites:
        if s.offset is not None:
            _verdict(s, runs, WHAT.get(s.kind, "traces"))
            s.tracer = "lackey" if s.offset in lackey else "sitetrace"
    named = {s.offset for s in sites}
    div_leaks = []
    for off in sorted(o for o in divisions or () if o not in named):
        if not any(r[off][0] for r in runs):
            continue
        fn, file, line, frames = source_frames(None, library, off)
        d = Site(off, "div", fn, file, line, instruction_at(library, off, objdump),
                 "a division's dividend depends on the secret", frames)
        _verdict(d, runs, WHAT["div"])
        d.tracer = "sitetrace"
        if d.verdict == "leak":
            div_leaks.append(d)
    return sorted(filled), div_leaks


def division_offsets(library: Path, objdump: list[str] | tuple[str, ...] = ("objdump",)) -> list[int]:
    """Offsets of every integer division (div, idiv) in LIB (x86-64 objdump syntax)."""
    proc = subprocess.run([*objdump, "-d", "--no-show-raw-insn", str(library)], capture_output=True, text=True)
    return [int(m.group(1), 16) for m in _DIV.finditer(proc.stdout)]


QEMU_SCOPE = ("under qemu-user: execution counts per instruction compared over the secrets (branches); no taint, "
              "addresses and divisions not checked")


def source_frames(isa, library: Path, offset: int) -> tuple[str, str, int | None, list[str]]:
    """(function, file, line, every inlined frame's function) of an offset in LIB (the ISA's addr2line)."""
    tool = "addr2line" if isa is None or isa.native else f"{isa.gnu_triple}-addr2line"
    proc = subprocess.run([tool, "-f", "-i", "-e", str(library), hex(offset)], capture_output=True, text=True)
    lines = proc.stdout.splitlines()
    fns = lines[0::2]
    where = lines[1] if len(lines) > 1 else "?:0"
    file, _, line = where.rpartition(":")
    line = line.split(" ")[0]
    return (fns[0] if fns else "?"), file, (int(line) if line.isdigit() and line != "0" else None), fns


def trace_compare(isa, driver: Path, library: Path, scheme: str, op: str, secrets: list[str],
                  public: dict[str, str], variations: int = VARIATIONS) -> dict[str, Any]:
    """Another ISA under qemu-user: no taint tracker, but our plugin counts how often each instruction of the
    call runs (driver ct's window). Over `variations` secrets (public inputs fixed), a function whose counts
    differ has control flow that depends on the secret: a branch leak at its first instruction whose count
    differs (the deciding branch is just before it), declassified inside a [ct.public] function."""
    from ..isa import qemu

    so = qemu.plugin()
    runs, base = [], None
    for v in range(variations):
        got = qemu.count(isa, _driver_cmd(driver, library, scheme, op, v, secrets), hist=True, so=so)
        if base is None:
            base, _ = _base(got.stdout)
        runs.append({r.pc: r for r in got.hist or ()})
    pcs = sorted({pc for r in runs for pc in r})
    first_by_function: dict[str, tuple[int, Site]] = {}
    for pc in pcs:
        counts = [r[pc].count if pc in r else 0 for r in runs]
        if len(set(counts)) < 2 or pc < base:
            continue
        off = pc - base
        fn, file, line, frames = source_frames(isa, library, off)
        if fn in first_by_function:
            continue
        a = next(i for i, c in enumerate(counts) if c != counts[0])
        disas = next((r[pc].disas for r in runs if pc in r), "?")
        site = Site(off, "branch", fn, file, line, disas, "execution counts differ between secrets", frames,
                    verdict="leak", witnesses=[0, a], difference=f"executed {counts[0]} vs {counts[a]} times",
                    source=source_line("", file, line))
        first_by_function[fn] = (off, site)
    sites = [s for _, s in first_by_function.values()]
    declassify(sites, public)
    for s in sites:
        if s.declassified:
            s.verdict, s.witnesses = "declassified", []
    return {"verdict": op_verdict(sites), "secrets": secrets, "sites": [asdict(s) for s in sites],
            "variations": variations, "scope": QEMU_SCOPE}


def op_verdict(sites: list[Site]) -> str:
    if any(s.verdict == "leak" and s.kind in LEAK_KINDS for s in sites):
        return "leak"
    if any(s.verdict == "unconfirmed" and s.kind in LEAK_KINDS for s in sites):
        return "unconfirmed"
    return "clean"


def test_op(driver: Path, library: Path, scheme: str, op: str, secrets: list[str], public: dict[str, str],
            work: Path, objdump: list[str] | tuple[str, ...] = ("objdump",), variations: int = VARIATIONS,
            divisions: list[int] | None = None) -> dict[str, Any]:
    """One op of one build: its verdict and sites (taint, declassification, confirmation, and the dividends
    of the divisions at `divisions`, offsets in LIB)."""
    sites = memcheck(driver, library, scheme, op, secrets, work, objdump)
    declassify(sites, public)
    for s in sites:
        if s.declassified:
            s.verdict = "declassified"
        elif s.kind in ("cmov", "operand"):
            s.verdict = "not a leak"
        elif s.kind not in LEAK_KINDS:
            s.verdict = "unconfirmed"
    filled, div_leaks = confirm(driver, library, scheme, op, secrets, [s for s in sites if not s.verdict],
                                variations, divisions, objdump)
    sites += div_leaks
    return {"verdict": op_verdict(sites), "secrets": secrets, "sites": [asdict(s) for s in sites],
            "variations": variations, **({"filled": filled} if filled else {})}


DUDECT_BUDGET_S = 1.0  # per op: the fixed-vs-random calls (and each call's two setups) within about this
DUDECT_MAX, DUDECT_MIN = 2000, 50  # calls
DUDECT_LIMIT_S = 3 * DUDECT_BUDGET_S  # ct-time stops there, however many calls it has


def dudect_calls(call_s: float | None) -> int:
    """How many fixed-vs-random calls fit the budget (a call's setup runs twice: ~3 calls' time each)."""
    if call_s is None or call_s <= 0:
        return 500
    return min(DUDECT_MAX, int(DUDECT_BUDGET_S / (3 * call_s)))


def time_classes(driver: Path, library: Path, scheme: str, op: str, secrets: list[str], calls: int,
                 seed: int) -> dict[str, Any]:
    """dudect's measurements (driver ct-time): the class of each call (0 fixed secret, 1 fresh) and its ticks,
    natively; the statistic is analyze's (stats/dudect.py)."""
    cmd = [str(driver), "ct-time", str(library), scheme, op, str(calls), str(seed), *secrets]
    # a hard stop: a setup that makes a key pair per secret can cost far more than the call
    proc = _run(cmd, f"driver ct-time {library.name} {scheme} {op}",
                env={"PQSIMD_CT_TIME_LIMIT_S": f"{DUDECT_LIMIT_S:g}"})
    if proc.returncode:
        raise PqsimdError(f"driver ct-time {library.name} {scheme} {op}: "
                          f"{(proc.stderr.strip().splitlines() or [f'exit {proc.returncode}'])[-1]}")
    classes, ticks = [], []
    for line in proc.stdout.splitlines():
        c, t = line.split("\t")
        classes.append(c)
        ticks.append(int(t))
    return {"classes": "".join(classes), "ticks": ticks, "seed": seed,
            "method": "dudect: one call per measurement, its class drawn at random (0: one fixed secret, 1: a fresh "
                      "one), public inputs fixed, interleaved in one driver process"}


def op_plan(fam, scheme: str, ops: list[str], buffers: list[str]) -> dict[str, dict[str, Any]]:
    """op -> {secrets} to test, or {verdict: n/a, why}."""
    out: dict[str, dict[str, Any]] = {}
    for op in ops:
        secrets = fam.secrets(op)
        missing = [s for s in secrets if s != RANDOM and s not in buffers]
        if not secrets:
            out[op] = {"verdict": "n/a", "why": "no secret input ([ct.secret] of the family names none)"}
        elif missing:
            out[op] = {"verdict": "n/a", "secrets": secrets,
                       "why": (f"[ct.secret] names {', '.join(missing)}, which this implementation's op table does not "
                               f"(it names {', '.join(buffers)})" if buffers else
                               "this implementation's op table names no buffers (pqsimd_buffer)")}
        else:
            out[op] = {"secrets": secrets}
    return out


def buffer_names(driver: Path, library: Path, scheme: str, launcher: list[str] | tuple = ()) -> list[str]:
    """The op table's named buffers (driver `buffers`: nothing runs; under the ISA's emulator elsewhere)."""
    proc = subprocess.run([*launcher, str(driver), "buffers", str(library), scheme], capture_output=True, text=True,
                          timeout=TIMEOUT)
    if proc.returncode:
        raise PqsimdError(f"driver buffers {library.name} {scheme}: "
                          f"{(proc.stderr.strip().splitlines() or [f'exit {proc.returncode}'])[-1]}")
    return [line.split("\t")[0] for line in proc.stdout.splitlines() if line.strip()]


def _isa(study):
    return isa_mod.of_study(study) if getattr(study, "isa", "") else isa_mod.host()


def ct_job(sd: StudyDir, study, job, isa) -> Path:
    b, scheme = job.info["build"], job.info["scheme"]
    started, t0 = datetime.now(timezone.utc).isoformat(), time.monotonic()
    fam = catalog.family_of(scheme)
    ops = [op for op in job_ops(sd, study, job) if op != fam.self_check]
    lib, driver = sd.gated_library(b.id), sd.gated_driver()
    work = sd.logs_dir
    work.mkdir(parents=True, exist_ok=True)
    plan = op_plan(fam, scheme, ops, buffer_names(driver, lib, scheme, isa.launcher()))
    for op, secs in over_cap(sd, study, job).items():  # as timing and counting: under memcheck ~20-50x longer
        if op in plan and "secrets" in plan[op]:
            plan[op] = {"verdict": "n/a", "secrets": plan[op]["secrets"],
                        "why": f"one call takes {secs:.2g} s, over the study's cap of {study.max_call_s:g} s "
                               f"(max_call_s; a new study with --max-call 0 lifts it)"}
    from .job import build_ops

    seconds = build_ops(sd, b.id, scheme) or {}
    results: dict[str, dict[str, Any]] = {}
    divs = division_offsets(lib, isa.objdump()) if isa.name == "x86_64" else []
    unsupported = None
    for op, p in plan.items():
        if "verdict" in p:
            results[op] = p
            continue
        if unsupported:
            results[op] = {"verdict": "n/a", "why": unsupported, "secrets": p["secrets"]}
            continue
        try:
            if not isa.native:  # no valgrind for this ISA: the plugin's trace comparison
                results[op] = trace_compare(isa, driver, lib, scheme, op, p["secrets"], fam.public_functions())
                continue
            results[op] = test_op(driver, lib, scheme, op, p["secrets"], fam.public_functions(), work, isa.objdump(),
                                  divisions=divs)
            calls = dudect_calls(seconds.get(op))
            if calls >= DUDECT_MIN:
                seed = int(hashlib.sha256(op.encode()).hexdigest()[:8], 16)
                results[op]["timing"] = time_classes(driver, lib, scheme, op, p["secrets"], calls, seed)
            else:
                results[op]["timing"] = {"why": f"one call takes {seconds.get(op):.2g} s: too slow for "
                                                f"{DUDECT_MIN} calls within {DUDECT_BUDGET_S:g} s"}
        except CountError as e:
            results[op] = {"verdict": "n/a", "why": f"the trace under {isa.qemu} failed: {e}", "secrets": p["secrets"]}
        except NoSecret as e:
            results[op] = {"verdict": "n/a", "why": str(e), "secrets": p["secrets"]}
        except Unsupported as e:
            unsupported = f"valgrind cannot run this build: {e}"
            results[op] = {"verdict": "n/a", "why": unsupported, "secrets": p["secrets"]}
    rows: dict[str, list[Any]] = {"op": [], "spin": [], "batch": [], "raw": [], "per_call": []}
    for op, r in results.items():
        leaks = sum(1 for s in r.get("sites", []) if s["verdict"] == "leak" and s["kind"] in LEAK_KINDS)
        rows["op"].append(op)
        rows["spin"].append(0)
        rows["batch"].append(1)
        rows["raw"].append(leaks if r["verdict"] != "n/a" else -1)
        rows["per_call"].append(float(leaks if r["verdict"] != "n/a" else -1))
    table = store.raw_table(rows, {"scheme": scheme, "variant": b.variant, "compiler": b.compiler.id, "metric": METRIC,
                                   "job": job.id, "job_index": 0, "rep": 0, "pos": 0, "warmup": False})
    rec = {"id": job.id, "variant": b.variant, "compiler": b.compiler.id, "build": b.id, "scheme": scheme, "index": 0,
           "metric": METRIC, "cpu": None, "hostname": socket.gethostname(), "cpu_model": machine.cpu_model(),
           "isa": isa.name, "binaries": {b.id: store.sha256_file(sd.variant_path(b.id))},
           "seconds": round(time.monotonic() - t0, 3), "started": started,
           "finished": datetime.now(timezone.utc).isoformat(),
           "method": f"memcheck taint of the op's secret inputs for one call, each site traced on {VARIATIONS} "
                     f"secrets (public inputs fixed; natively by breakpoints, else by lackey): traces that differ "
                     f"= leak",
           "not_checked": NOT_CHECKED, "public": fam.public_functions(), "ops": results,
           "command": [str(sd.driver_path), "ct", str(lib), scheme]}
    return sd.write_raw(job.id, table, rec)


def run(sd: StudyDir, study, ctx) -> bool:
    """The ct metric's runner (run/metrics.py): every pending job on all allowed CPUs."""
    isa = _isa(study)
    jobs = per_build_jobs(sd, study, ctx, METRIC)
    work = pending(sd, jobs)
    ctx.console.print(f"{METRIC}: {len(work)} jobs to run, {len(jobs) - len(work)} already finished")
    if work and isa.native and valgrind_path() is None:
        raise PqsimdError("--metric ct needs valgrind (memcheck and lackey): apt-get install valgrind")
    info = {"status": "ok", "isa": isa.name, "failed": {}, "seconds": 0.0}
    ok = True
    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=_workers()) as pool:
        futures = {pool.submit(ct_job, sd, study, j, isa): j for j in work}
        for fut in as_completed(futures):
            j = futures[fut]
            try:
                path = fut.result()
            except (PqsimdError, OSError, ValueError, KeyError) as e:
                ok = False
                info["failed"][j.id] = str(e)
                info["status"] = "partial"
                ctx.console.print(tagged("failed", "red", f"{j.id}: {e}"), soft_wrap=True)
                continue
            ctx.console.print(f"{METRIC} {j.info['build'].variant} ({j.info['build'].compiler.id}) "
                              f"{j.info['scheme']}: {path.name}")
    info["seconds"] = round(time.monotonic() - t0, 2)
    sd.update_manifest(lambda man: man.setdefault("metrics", {}).update({METRIC: info}))
    return ok
