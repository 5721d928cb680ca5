"""objdump's disassembly of a shared object, each instruction with its addresses taken out: the one
reading of the code that the code hash (verify/codehash.py) and the placements (placement.py) share."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

HEADER = re.compile(r"^([0-9a-f]+) <(.+)>:$")
INSN = re.compile(r"^\s*([0-9a-f]+):\s*(.*)$")
TARGET = re.compile(r"\b([0-9a-f]+) <([^>]+)>")
RIPREL = re.compile(r"-?0x[0-9a-f]+\(%rip\)")
COMMENT_ADDR = re.compile(r"#\s*[0-9a-f]+\s*(<[^>]+>)")


def disassemble(library: Path, objdump: list[str] | None = None) -> dict[int, tuple[str, list[str]]]:
    """address -> (name, normalized instructions) of every function in the library's code."""
    proc = subprocess.run([*(objdump or ["objdump"]), "-d", "--no-show-raw-insn", str(library)],
                          capture_output=True, text=True, timeout=300)
    if proc.returncode:
        raise RuntimeError((proc.stderr.strip().splitlines() or ["objdump failed"])[-1])
    funcs: dict[int, tuple[str, list[str]]] = {}
    cur: list[str] | None = None
    for line in proc.stdout.splitlines():
        m = HEADER.match(line)
        if m:
            cur = []
            funcs[int(m.group(1), 16)] = (m.group(2), cur)
            continue
        m = INSN.match(line)
        if m and cur is not None:
            cur.append(m.group(2))
    return funcs


def normalize(insn: str) -> tuple[str, list[int]]:
    """The instruction without addresses, and the addresses it branches or calls to."""
    targets = [int(a, 16) for a, _ in TARGET.findall(insn)]
    text = COMMENT_ADDR.sub(r"\1", insn)
    text = TARGET.sub(r"<\2>", text)
    text = RIPREL.sub("(%rip)", text)
    return " ".join(text.split()), targets
