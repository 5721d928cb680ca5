"""How much of an op is hashing, and each kernel's part (issue 47): the inclusive instructions of its calls into Keccak/SHA-3/SHA-2 entry points
(data/hash.toml) from callgrind's call arcs, read from the same callgrind output as the instruction count.

A call arc's cost line (the line after `calls=`) holds the callee's inclusive cost. Summing the arcs from a
function that is not a hash function into one that is counts every hashed instruction once (a hash function's
own calls into other hash code are inside its arc already). Per call, as the instructions metric:
(H(N2) - H(N1)) / (N2 - N1), over the op's instructions per call.
"""

from __future__ import annotations

import fnmatch
import re
import tomllib
from functools import cache
from importlib import resources

_NAME = re.compile(r"^\((\d+)\)(?:\s+(.*))?$")


HASH = "hash"


@cache
def _data() -> dict:
    return tomllib.loads(resources.files("pqsimd.data").joinpath("hash.toml").read_text())


@cache
def patterns() -> tuple[str, ...]:
    return tuple(p.lower() for p in _data().get("patterns", []))


@cache
def kernels() -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """(name, label, patterns) of every kernel, the hash first (data/hash.toml)."""
    return ((HASH, "Keccak/SHA-2", patterns()),
            *((str(k["name"]), str(k.get("label", k["name"])), tuple(p.lower() for p in k.get("patterns", [])))
              for k in _data().get("kernels", [])))


def labels() -> dict[str, str]:
    return {name: label for name, label, _ in kernels()}


@cache
def kernel_of(name: str) -> str | None:
    """The first kernel whose pattern the function's name matches, else None (other code)."""
    n = name.lower()
    if any(fnmatch.fnmatchcase(n, p.lower()) for p in _data().get("outside", [])):
        return None
    return next((k for k, _, pats in kernels() if any(fnmatch.fnmatchcase(n, p) for p in pats)), None)


def is_hash(name: str) -> bool:
    n = name.lower()
    return any(fnmatch.fnmatchcase(n, p) for p in patterns())


def call_arcs(text: str):
    """(caller, callee, the callee's inclusive Ir) of every call arc of a callgrind out file (or region), names
    uncompressed."""
    names: dict[str, str] = {}

    def name_of(value: str) -> str:
        m = _NAME.match(value.strip())
        if not m:
            return value.strip()
        if m.group(2):
            names[m.group(1)] = m.group(2)
        return names.get(m.group(1), "")

    fn = cfn = ""
    arc = False
    for line in text.splitlines():
        if line.startswith("fn="):
            fn = name_of(line[3:])
        elif line.startswith("cfn="):
            cfn = name_of(line[4:])
        elif line.startswith("calls="):
            arc = True
        elif arc and line and (line[0].isdigit() or line[0] in "+-*"):
            arc = False
            parts = line.split()
            if len(parts) > 1:
                yield fn, cfn, int(parts[1])


def hash_cost(text: str) -> int:
    """The Ir of every call from non-hash code into a hash function, in one callgrind out file (or region)."""
    return sum(c for fn, cfn, c in call_arcs(text) if is_hash(cfn) and not is_hash(fn))


def kernel_costs(text: str) -> dict[str, int]:
    """Ir per kernel in one callgrind out file (or region), each instruction counted for the innermost kernel
    it runs in: the inclusive cost of every call into a kernel's function from code not already inside that
    kernel, less that kernel's calls into other kernels. A function of no kernel runs inside the kernel all its
    callers run in (memcpy called only from the NTT is NTT; so is a helper the NTT calls that calls the NTT
    again), else outside any. Sums to at most the region's Ir unless a function called from inside and from
    outside one kernel calls into it (analyze/hashshare.py checks the sum). Kernels with no call read 0."""
    arcs = list(call_arcs(text))
    callers: dict[str, set[str]] = {}
    for fn, cfn, _ in arcs:
        callers.setdefault(cfn, set()).add(fn)
    inside = _enclosing({f for a in arcs for f in a[:2]}, callers)
    costs = {k: 0 for k, _, _ in kernels()}
    for fn, cfn, c in arcs:
        kf, kc = inside.get(fn), kernel_of(cfn)
        if kc is not None and kc != kf:
            costs[kc] += c  # into kc from outside it
            if kf is not None:
                costs[kf] -= c  # out of kf: its inclusive cost holds it, kc has it
    return costs


def _enclosing(functions: set[str], callers: dict[str, set[str]]) -> dict[str, str | None]:
    """The kernel each function runs inside: its own, else the one every caller runs inside (None: outside any,
    or callers that disagree), by a fixed point over the call graph (a caller not yet known waits)."""
    out: dict[str, str | None] = {f: kernel_of(f) for f in functions if kernel_of(f) is not None}
    todo = [f for f in functions if f not in out]
    changed = True
    while changed:
        changed = False
        for f in todo:
            if f in out:
                continue
            cs = callers.get(f, set()) - {f}
            if not cs:
                out[f], changed = None, True
            elif all(c in out for c in cs):
                ks = {out[c] for c in cs}
                out[f], changed = (ks.pop() if len(ks) == 1 else None), True
    return {f: out.get(f) for f in functions}  # left in a cycle of unknowns: outside any
