"""How much of an op is hashing: the inclusive instructions of its calls into Keccak/SHA-3/SHA-2 entry points
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


@cache
def patterns() -> tuple[str, ...]:
    data = tomllib.loads(resources.files("pqsimd.data").joinpath("hash.toml").read_text())
    return tuple(p.lower() for p in data.get("patterns", []))


def is_hash(name: str) -> bool:
    n = name.lower()
    return any(fnmatch.fnmatchcase(n, p) for p in patterns())


def hash_cost(text: str) -> int:
    """The Ir of every call from non-hash code into a hash function, in one callgrind out file (or region)."""
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
    total = 0
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
            if len(parts) > 1 and is_hash(cfn) and not is_hash(fn):
                total += int(parts[1])
    return total
