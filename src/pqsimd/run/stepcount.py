"""Exact instruction counts by single-stepping, natively (x86-64 Linux): the counting backend for builds
valgrind cannot run (AVX-512: valgrind 3.19 stops with SIGILL on the first EVEX instruction).

harness/stepcount/stepcount.c runs `driver count LIB SCHEME OP N ...` under ptrace with a breakpoint on
the driver's pqsimd_measure, and single-steps each of its calls from its first instruction to its return:
the instructions executed inside it, callees included: what callgrind's `--toggle-collect=pqsimd_measure`
counts (tests/test_stepcount.py: equal to callgrind's totals on an AVX2 build, and to a loop of known
length of EVEX instructions). One trap per instruction: about 5-20 µs each here, so a call of 100,000
instructions takes a second or two. With --profile it also gives each call's executions per instruction
address, the exact dynamic profile the mix reads; it simulates no caches or branches (no sim metric).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..errors import CountError, PqsimdError

SOURCE = Path(__file__).resolve().parents[1] / "harness" / "stepcount" / "stepcount.c"
FUNCTION = "pqsimd_measure"  # the driver's function whose calls are counted (callgrind toggles on it too)
NAME = "ptrace-step"
TIMEOUT_S = 3600


def binary(cc: str = "cc") -> Path:
    """The stepper, built once per (source, host compiler) beside the builds."""
    from ..build import host_tool  # late, upward: cached beside the builds (build.py owns that folder)

    return host_tool("stepcount", "the single-step counter", [SOURCE], ["-O2", "-std=gnu11", "-Wall"], cc=cc)


def symbol(program: Path, name: str = FUNCTION) -> tuple[int, bool]:
    """(address of `name` in the program's symbol table, whether the program is position-independent)."""
    nm = shutil.which("nm")
    if nm is None:
        raise PqsimdError("nm not found: the single-step counter finds the driver's function with it (apt-get install binutils)")
    out = subprocess.run([nm, str(program)], capture_output=True, text=True).stdout
    addr = next((int(p[0], 16) for p in (l.split() for l in out.splitlines()) if len(p) == 3 and p[2] == name), None)
    if addr is None:
        raise PqsimdError(f"{program} has no symbol {name}: cannot count its calls")
    return addr, _position_independent(program)


def _position_independent(path: Path) -> bool:
    with open(path, "rb") as f:
        head = f.read(18)
    return int.from_bytes(head[16:18], "little") == 3  # e_type ET_DYN: addresses relative to the load address


def hash_entries(objects: list[Path]) -> str:
    """The --hash list: every function of `objects` whose name data/hash.toml calls a hash entry point, as
    "FILE<TAB>RELATIVE<TAB>ADDRESS" lines (FILE as /proc/PID/maps names it: its real path)."""
    from .. import binary
    from .hashshare import is_hash

    lines = []
    for obj in objects:
        rel = int(_position_independent(obj))
        real = os.path.realpath(obj)
        lines += [f"{real}\t{rel}\t{s.addr:x}" for s in binary.symbols(obj) if s.kind == "code" and is_hash(s.name)]
    return "\n".join(dict.fromkeys(lines)) + "\n"


def _step(program: Path, args: list[str], name: str, profile: bool, hashed: list[Path] | None = None) -> str:
    addr, pie = symbol(program, name)
    with tempfile.TemporaryDirectory(prefix="pqsimd-step-") as d:
        out = Path(d) / "counts"
        mode = ["--profile"] if profile else []
        if hashed is not None:
            (Path(d) / "entries").write_text(hash_entries(hashed))
            mode = ["--hash", str(Path(d) / "entries")]
        proc = subprocess.run([str(binary()), str(out), f"{addr:x}", "1" if pie else "0",
                               *mode, "--", str(program), *args],
                              capture_output=True, text=True, timeout=TIMEOUT_S)
        if proc.returncode != 0:
            why = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
            raise CountError(f"single-stepping {program.name} {' '.join(args[:4])} failed: {why}")
        return out.read_text()


def run(program: Path, args: list[str], name: str = FUNCTION) -> list[int]:
    """The instructions of every call of `name` while `program args...` runs, in call order."""
    return [int(x) for x in _step(program, args, name, False).split()]


def run_hashed(program: Path, args: list[str], objects: list[Path], name: str = FUNCTION) -> list[tuple[int, int]]:
    """Every call of `name`: (its instructions, those inside calls into the hash entry points of `objects` from
    code outside them: callgrind's hash cost, run/hashshare.hash_cost)."""
    out = []
    for line in _step(program, args, name, False, hashed=objects).splitlines():
        n, h = line.split()
        out.append((int(n), int(h)))
    return out


def run_profiles(program: Path, args: list[str], name: str = FUNCTION) -> list[tuple[int, dict[tuple[str, int], int]]]:
    """Every call of `name`: (its instructions, {(file, address as objdump prints it): executions})."""
    out: list[tuple[int, dict[tuple[str, int], int]]] = []
    for line in _step(program, args, name, True).splitlines():
        if line.startswith("# "):
            out.append((int(line[2:]), {}))
        elif line and out:
            path, addr, n = line.rsplit("\t", 2)
            out[-1][1][(path, int(addr, 16))] = int(n)
    return out


def available() -> str | None:
    """None when this host can single-step a child (ptrace permitted), else why not, in one line."""
    try:
        binary()
    except PqsimdError as e:
        return str(e)
    probe = subprocess.run([str(binary()), "/dev/null", "-", "0", "--", "/bin/true"], capture_output=True, text=True)
    if probe.returncode != 0:
        return (f"ptrace is not permitted here ({(probe.stderr.strip().splitlines() or ['?'])[-1]}; a container needs "
                f"CAP_SYS_PTRACE or kernel.yama.ptrace_scope <= 1)")
    return None


class Stepper:
    """The backend form (run/backends.py) of the single-step counter: counts only (no profile, no events)."""

    name = NAME
    simulates = ()
    missing = "the single-step counter cannot run here"

    def __init__(self, isa=None):
        self.isa = isa

    def version(self) -> str | None:
        why = available()
        if why:
            self.missing = why
            return None
        return "pqsimd stepcount (ptrace single-step, native)"

    def count_batch(self, driver: Path, library: Path, scheme: str, requests) -> list:
        """[(instructions, None, hashed)] per (op, calls, counter) request, all in one process (a counter's
        calls are not seen: None, as the QEMU plugin; the hash share from the calls into the library's and the
        driver's hash entry points; no kernel shares)."""
        args = ["count", str(library), scheme, *(x for op, calls, _ in requests for x in (op, str(calls)))]
        got = run_hashed(Path(driver), args, [Path(library), Path(driver)])
        if len(got) != len(requests):
            raise CountError(f"{requests[0][0]} ...: the single-step counter saw {len(got)} calls of {FUNCTION}, "
                             f"expected {len(requests)}")
        return [(n, None, h) for n, h in got]  # no call arcs: a counter's calls and the kernel shares unseen

    def profile_batch(self, driver: Path, library: Path, scheme: str, requests) -> list:
        """[({(object, address): executions}, None)] per (op, calls) request, one process: the exact dynamic
        profile the mix reads (disassembly: objdump of each object, as for callgrind's)."""
        args = ["count", str(library), scheme, *(x for op, calls in requests for x in (op, str(calls)))]
        got = run_profiles(Path(driver), args)
        if len(got) != len(requests):
            raise CountError(f"{requests[0][0]} ...: the single-step counter saw {len(got)} calls of {FUNCTION}, "
                             f"expected {len(requests)}")
        return [(prof, None) for _, prof in got]

    def command(self, driver: Path, library: Path, scheme: str, extra: tuple[str, ...] = ()) -> list[str]:
        return ["stepcount", "<out>", f"<{FUNCTION} address>", "<pie>", "--", str(driver), "count", str(library), scheme,
                "<op>", "<N1>", "<op>", "<N2>", "... (every op of a batch, one process)"]
