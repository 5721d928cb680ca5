"""The object cache: a compile whose preprocessed text, compiler and flags were compiled before is
not compiled again. An ablation's cells differ in a few switches, so most of their units
preprocess to identical text (of 32 cells' 740 units per parameter set of the ML-KEM ablation, 167 differ).

The key is the unit's preprocessed text (`-E -P`: every macro, every included file), the whole
command with the build folder's name replaced (it differs per build; what the folder holds is in
the text), and a salt (the compiler's identity, files named by flags, the CPU for node-dependent
flags). Objects live in <build cache>/objects/, written atomically; a failed compile is never cached.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

PLACEHOLDER = "{build}"


def _preprocess_command(cmd: list[str]) -> list[str]:
    """The compile command with -c ... -o OBJ turned into -E -P (output to stdout)."""
    out, skip = [], False
    for arg in cmd:
        if skip:
            skip = False
            continue
        if arg == "-o":
            skip = True
            continue
        out.append(arg)
    i = out.index("-c")
    return out[:i] + ["-E", "-P"] + out[i + 1:]


def key(cmd: list[str], work: Path, salt: str) -> str | None:
    """The object's key, or None when the unit does not preprocess (the compile then says why)."""
    proc = subprocess.run(_preprocess_command(cmd), cwd=work, capture_output=True)
    if proc.returncode != 0:
        return None
    h = hashlib.sha256(salt.encode())
    o = cmd.index("-o")
    h.update("\0".join(cmd[:o] + cmd[o + 2:]).replace(str(work), PLACEHOLDER).encode())
    h.update(proc.stdout)
    src = Path(cmd[cmd.index("-c") + 1])
    if src.suffix == ".s":  # assembly that is not preprocessed: -E gives nothing, so its own bytes are the text
        h.update((work / src).read_bytes())
    return h.hexdigest()


def compile_unit(cmd: list[str], work: Path, root: Path, salt: str) -> tuple[subprocess.CompletedProcess, bool]:
    """Compile (or take from the cache) the object `cmd` writes; (the compile's outcome, from the cache?)."""
    obj = Path(cmd[cmd.index("-o") + 1])
    k = key(cmd, work, salt)
    cached = root / "objects" / k[:2] / f"{k}.o" if k else None
    if cached is not None and cached.is_file():
        try:
            shutil.copyfile(cached, obj)
            return subprocess.CompletedProcess(cmd, 0, "", ""), True
        except OSError:
            pass  # unreadable: compile it
    proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
    if proc.returncode == 0 and cached is not None:
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            tmp = cached.with_name(f".{cached.name}.{os.getpid()}.{os.urandom(4).hex()}")
            shutil.copyfile(obj, tmp)
            os.replace(tmp, cached)
        except OSError:  # a full or read-only cache only costs time
            pass
    return proc, False
