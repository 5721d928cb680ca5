"""The static bound beside the painted peak (`--metric stack`, run/stack.py): the compiler's own frame
sizes summed over the op's worst call path.

Where the build's compiler can say them (gcc: `-fstack-usage -fcallgraph-info=su`), every compile of
the build is run again with those flags added, into a side directory of the study
(DIR/stack-usage/<build>/); the timed build, its objects and its cache are never touched. Each side
object's code is compared with the build's object (objdump -d): the frames describe the code that
was painted only if they are the same (they are: the flags only write the .su and .ci files).

    frame      gcc's .su/.ci static stack usage of a function: its reserved frame and, on x86-64, the
               8-byte return address its caller pushed (data/isas.toml [stack] return_address)
    path       from the op's function along the call graph of the .ci files (edges as the compiler
               emitted the calls, tail calls included) to the deepest frame sum
    bound      path frames - the op's own return address (painting counts what is written below it)
               + the ABI's red zone (x86-64: a leaf may write 128 bytes below its stack pointer that
               no frame size counts)

What the bound cannot see, named per op rather than guessed:
    no_frame   functions on the graph without a frame size, counted as 0 bytes: in the library,
               hand-written assembly (.S) and the harness's glue (randombytes, built by the fixed
               toolchain); outside it (`outside`), libc (memcpy, malloc through the PLT)
    indirect   calls through a pointer (gcc's `__indirect_call` node): their targets are not followed
    recursion  a function reached again on its own path: the bound holds for one level only
    dynamic    frames gcc marks dynamic (alloca, variable-length arrays): their size is a minimum
A bound with none of these is an upper bound for the code as compiled; with any, it can be below the
painted peak (hand-written AVX2 assembly with no frame size: BENCHMARKS.md).
"""

from __future__ import annotations

import re
import shlex
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from .errors import PqsimdError

FLAGS = ("-fstack-usage", "-fcallgraph-info=su")
INDIRECT = "__indirect_call"
NODE = re.compile(r'^node: \{ title: "((?:[^"\\]|\\.)*)" label: "((?:[^"\\]|\\.)*)"')
EDGE = re.compile(r'^edge: \{ sourcename: "((?:[^"\\]|\\.)*)" targetname: "((?:[^"\\]|\\.)*)"')
USAGE = re.compile(r"\\n(\d+) bytes \(([a-z,]+)\)$")


class Unavailable(Exception):
    """Why a build has no static bound (a sentence for the job record, not an error of the study)."""


@dataclass
class Node:
    unit: str  # the .ci file's stem (one compile)
    title: str  # the compiler's title: the name, or "<source>:<name>" for a file-local function
    name: str  # the function's name as the symbol table has it
    frame: int | None  # bytes (static usage); None: no frame size (declared, not compiled here)
    qualifier: str = ""  # static | dynamic | dynamic,bounded
    calls: list[str] = field(default_factory=list)  # target titles, as emitted


@dataclass
class Bound:
    bytes: int  # frames of the worst path - the op's return address + the red zone
    frames: int  # the worst path's frame sum
    path: list[tuple[str, int]]  # (function, frame) from the op down
    red_zone: int
    return_address: int
    no_frame: list[str]  # functions reached without a frame size (assembly, outside the build)
    indirect: int  # indirect calls reached
    recursion: list[str]
    dynamic: list[str]
    outside: list[str] = field(default_factory=list)  # of no_frame: not in the library (libc)

    def named(self) -> list[str]:
        """What the bound cannot see, in words (empty: an upper bound)."""
        out = []
        inside = [f for f in self.no_frame if f not in self.outside]
        for names, what in ((inside, "in the library without a frame size (assembly, or the harness's glue)"),
                            (self.outside, "outside the library (libc), not counted")):
            if names:
                out.append(f"{len(names)} function{'s' if len(names) > 1 else ''} {what}: "
                           f"{', '.join(names[:4])}{', ...' if len(names) > 4 else ''}")
        if self.indirect:
            out.append(f"{self.indirect} indirect call{'s' if self.indirect > 1 else ''} not followed")
        if self.recursion:
            out.append(f"recursion through {', '.join(self.recursion)} (one level counted)")
        if self.dynamic:
            out.append(f"dynamic frames ({', '.join(self.dynamic)}: sizes are minimums)")
        return out

    def to_dict(self, painted: int | None = None) -> dict:
        d = {"bytes": self.bytes, "frames": self.frames, "path": [list(p) for p in self.path], "red_zone": self.red_zone,
             "return_address": self.return_address, "no_frame": self.no_frame, "indirect": self.indirect,
             "recursion": self.recursion, "dynamic": self.dynamic, "outside": self.outside, "upper_bound": not self.named(),
             "unseen": self.named()}
        if painted is not None:
            d["minus_painted"] = self.bytes - painted
        return d


# --- the side compile -----------------------------------------------------------------------------------

def _compiles(commands: list[str]) -> list[list[str]]:
    out = []
    for c in commands:
        argv = shlex.split(c)
        if "-c" in argv and "-o" in argv:
            out.append(argv)
    return out


def check_compiler(family: str, flags: list[str]) -> None:
    """Unavailable (one sentence) when this build's compiler cannot give frames and a call graph."""
    if family != "gcc":
        raise Unavailable(f"{family} gives no call graph of frame sizes (gcc's -fcallgraph-info); the bound needs gcc")
    if any(f == "-flto" or f.startswith("-flto=") for f in flags) and "-fno-lto" not in flags:
        raise Unavailable("an LTO build's frames are decided at its link, not in the objects compiled")


def side_compile(commands: list[str], build_dir: Path, side: Path, objdump: list[str] | None = None,
                 jobs: int = 2) -> list[Path]:
    """Every compile of the build again with FLAGS, its object written under `side` (the build's own
    objects untouched); the .ci files. Unavailable when a source is gone or the code differs."""
    build_dir, side = Path(build_dir), Path(side)
    check_side(side, build_dir)
    cmds = []
    for argv in _compiles(commands):
        src = Path(argv[argv.index("-c") + 1])
        if not src.is_file():
            raise Unavailable(f"{src} (a source of the build) is gone: the build was made from another checkout")
        o = argv.index("-o")
        obj = Path(argv[o + 1])
        rel = obj.relative_to(build_dir) if obj.is_relative_to(build_dir) else Path(obj.name)
        out = side / rel
        cmds.append((src, obj, out, [*argv[:o], "-o", str(out), *argv[o + 2:], *FLAGS]))
    if not cmds:
        raise Unavailable("the build record holds no compile commands")
    side.mkdir(parents=True, exist_ok=True)

    def one(item):
        src, obj, out, argv = item
        out.parent.mkdir(parents=True, exist_ok=True)
        try:
            proc = subprocess.run(argv, cwd=build_dir, capture_output=True, text=True, timeout=900)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise Unavailable(f"compiling {src.name} with {' '.join(FLAGS)} failed ({e})") from None
        if proc.returncode:
            raise Unavailable(f"compiling {src.name} with {' '.join(FLAGS)} failed: "
                              f"{(proc.stderr.strip().splitlines() or ['?'])[-1]}")
        if obj.is_file() and _code(obj, objdump) != _code(out, objdump):
            raise Unavailable(f"{src.name} compiled with {' '.join(FLAGS)} is not the build's code")
        return out.with_suffix(".ci")

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        cis = list(pool.map(one, cmds))
    return [c for c in cis if c.is_file()]  # an assembly unit (.S) writes none


def _code(obj: Path, objdump: list[str] | None) -> str:
    proc = subprocess.run([*(objdump or ["objdump"]), "-d", "-r", "-w", str(obj)], capture_output=True, text=True,
                          timeout=600)
    if proc.returncode:
        raise Unavailable(f"objdump cannot read {obj.name}")
    return proc.stdout.split(":", 1)[-1].split("\n", 2)[-1]  # without the header naming the file


# --- the graph --------------------------------------------------------------------------------------------

def _unescape(s: str) -> str:
    return s.replace('\\"', '"').replace("\\\\", "\\")


def read_ci(path: Path) -> list[Node]:
    """The nodes of one .ci file (gcc's VCG call graph with stack usage)."""
    nodes: dict[str, Node] = {}
    unit = Path(path).stem
    for line in Path(path).read_text(errors="replace").splitlines():
        m = NODE.match(line)
        if m:
            title, label = _unescape(m.group(1)), m.group(2)
            u = USAGE.search(label)
            nodes[title] = Node(unit, title, label.split("\\n", 1)[0], int(u.group(1)) if u else None,
                                u.group(2) if u else "")
            continue
        m = EDGE.match(line)
        if m:
            src, dst = _unescape(m.group(1)), _unescape(m.group(2))
            if src in nodes:
                nodes[src].calls.append(dst)
    return list(nodes.values())


class Graph:
    """The call graph of every .ci file of a build: a function is (unit, title); a call to a name
    another unit defines goes there; a file-local title only to its own unit."""

    def __init__(self, cis: list[Path]):
        self.nodes: dict[tuple[str, str], Node] = {}
        self.by_title: dict[str, list[Node]] = {}
        self.by_name: dict[str, list[Node]] = {}
        for ci in cis:
            for n in read_ci(ci):
                self.nodes[(n.unit, n.title)] = n
                if n.frame is not None:
                    self.by_title.setdefault(n.title, []).append(n)
                    self.by_name.setdefault(n.name, []).append(n)

    def resolve(self, caller: Node, title: str) -> Node | str:
        """The node a call goes to, or the name of a function without a frame size."""
        base = title[:-len(".localalias")] if title.endswith(".localalias") else title
        own = self.nodes.get((caller.unit, base))
        if own is not None and own.frame is not None:
            return own
        if title.endswith(".localalias"):  # gcc's alias of a global function, file-qualified: the function itself
            alias = self.nodes.get((caller.unit, base.rsplit(":", 1)[-1]))
            if alias is not None and alias.frame is not None:
                return alias
        there = self.by_title.get(base) or []
        if len(there) == 1:
            return there[0]
        if there:  # one name defined by several units (a weak or duplicated symbol): the largest frame
            return max(there, key=lambda n: n.frame or 0)
        return (own.name if own is not None else base.rsplit(":", 1)[-1])

    def entries(self, name: str) -> list[Node]:
        return list(self.by_name.get(name) or [])

    def worst(self, entry: Node, red_zone: int = 0, return_address: int = 0, defined: set[str] | None = None) -> Bound:
        """The worst path from `entry`; `defined`: the names the library defines (a function without a
        frame that it does not define is outside it: libc)."""
        no_frame: set[str] = set()
        recursion: set[str] = set()
        dynamic: set[str] = set()
        indirect = 0
        memo: dict[tuple[str, str], tuple[int, list]] = {}
        counted: set[tuple[str, str]] = set()

        def visit(n: Node, on_path: set) -> tuple[int, list]:
            nonlocal indirect
            key = (n.unit, n.title)
            if key in memo:
                return memo[key]
            if n.qualifier.startswith("dynamic") and n.qualifier != "dynamic,bounded":
                dynamic.add(n.name)
            best: tuple[int, list] = (0, [])
            on_path = on_path | {key}
            for t in n.calls:
                if t == INDIRECT:
                    if key not in counted:
                        indirect += 1
                    continue
                r = self.resolve(n, t)
                if isinstance(r, str):
                    no_frame.add(r)
                    continue
                if (r.unit, r.title) in on_path:
                    recursion.add(r.name)
                    continue
                sub = visit(r, on_path)
                if sub[0] > best[0] or not best[1]:  # a callee with a 0-byte frame is still on the path
                    best = sub
            counted.add(key)
            out = ((n.frame or 0) + best[0], [(n.name, n.frame or 0), *best[1]])
            memo[key] = out
            return out

        frames, path = visit(entry, set())
        return Bound(bytes=frames - return_address + red_zone, frames=frames, path=path, red_zone=red_zone,
                     return_address=return_address, no_frame=sorted(no_frame), indirect=indirect,
                     recursion=sorted(recursion), dynamic=sorted(dynamic),
                     outside=sorted(f for f in no_frame if defined is not None and f not in defined))


def pick_entry(graph: Graph, name: str, callees: set[str]) -> Node:
    """The op's function among the units defining `name` (a file-local op function is defined once per
    parameter set): the one whose calls are the calls the library's code makes (`callees`)."""
    cands = graph.entries(name)
    if not cands:
        raise Unavailable(f"no compiled unit gives a frame for {name} (assembly, or outside the build)")
    if len(cands) == 1:
        return cands[0]

    def score(n: Node) -> int:
        got = {graph.resolve(n, t).name if isinstance(graph.resolve(n, t), Node) else graph.resolve(n, t)
               for t in n.calls if t != INDIRECT}
        return len(got & callees) - len(got - callees)

    best = max(score(n) for n in cands)
    top = [n for n in cands if score(n) == best]
    if len({graph.worst(n).frames for n in top}) > 1:
        raise Unavailable(f"{len(top)} units define {name} with the same calls and different frames")
    return top[0]


def unavailable_note(e: Exception) -> dict:
    return {"available": False, "why": str(e)}


def check_side(side: Path, build_dir: Path) -> None:
    """The side directory is never the build's (its objects stay as timed)."""
    if Path(side).resolve() == Path(build_dir).resolve() or Path(build_dir).resolve() in Path(side).resolve().parents:
        raise PqsimdError(f"{side}: the stack-usage side directory must be outside the build's {build_dir}")
