"""valgrind's callgrind, natively (x86-64): the one place that runs it and reads what it writes.

`driver count LIB SCHEME OP N` runs the op's setup and one warm call, then `pqsimd_measure(op, N)`,
a noinline C function of the driver that calls the op N times; callgrind collects only inside it
(`--toggle-collect=pqsimd_measure`: assembly routines have no symbol sizes, so the C wrapper is what
is toggled). What is read: the Ir total, every event (under cache and branch simulation), the calls
of one function, or the self cost per instruction address (`--dump-instr=yes`). Valgrind cannot
decode AVX-512: a run that hits an instruction it cannot decode fails with the reason, read from
valgrind's own output. The counting backends (run/backends.py) call it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Sequence

from ..errors import CountError
from . import child

TIMEOUT_S = 600
PROFILE_ARGS = ("--dump-instr=yes", "--dump-line=no", "--compress-strings=no", "--compress-pos=no")

_TOTALS = re.compile(r"^(?:totals|summary):\s*(\d+)", re.M)
_UNHANDLED = re.compile(r"unhandled instruction bytes:((?:\s+0x[0-9A-Fa-f]+)+)")


def valgrind_path() -> str | None:
    return shutil.which("valgrind")


def valgrind_version() -> str | None:
    path = valgrind_path()
    if path is None:
        return None
    out = subprocess.run([path, "--version"], capture_output=True, text=True)
    return out.stdout.strip() or None


def callgrind_batch_command(driver: Path, library: Path, scheme: str, requests: Sequence[tuple[str, int]],
                            out_file: Path, extra: tuple[str, ...] = ()) -> list[str]:
    """One callgrind process for every (op, calls) request in order: it dumps after each
    pqsimd_measure (out_file.1, .2, ...: each holds one request's region, since a dump zeroes the
    counts)."""
    return [
        valgrind_path() or "valgrind", "--tool=callgrind", "--toggle-collect=pqsimd_measure",
        "--dump-after=pqsimd_measure", *extra, f"--callgrind-out-file={out_file}", str(driver), "count", str(library),
        scheme, *(x for op, calls in requests for x in (op, str(calls))),
    ]


def parse_callgrind_totals(text: str) -> int:
    """The event total (Ir) of a callgrind out file ('totals:' line, else 'summary:')."""
    m = _TOTALS.search(text)
    if m is None:
        raise ValueError("callgrind output has no totals/summary line")
    return int(m.group(1))


_EVENTS = re.compile(r"^events:\s*(.+)$", re.M)
_TOTAL_LINE = re.compile(r"^(?:totals|summary):\s*([\d ]+)$", re.M)  # the line parse_callgrind_totals reads


def parse_callgrind_events(text: str) -> dict[str, int]:
    """Every event total of a callgrind out file, by the names of its `events:` line (from the same
    line as parse_callgrind_totals, so Ir here equals the instructions metric's)."""
    names, totals = _EVENTS.search(text), _TOTAL_LINE.search(text)
    if names is None or totals is None:
        raise ValueError("callgrind output has no events/totals line")
    values = [int(x) for x in totals.group(1).split()]
    return dict(zip(names.group(1).split(), values + [0] * (len(names.group(1).split()) - len(values))))


def unhandled_instruction(valgrind_stderr: str) -> str | None:
    """The one-line reason if valgrind stopped on an instruction it cannot decode, else None."""
    m = _UNHANDLED.search(valgrind_stderr)
    if m:
        raw = m.group(1).split()
        evex = " (EVEX prefix 0x62: AVX-512)" if raw and raw[0].lower() == "0x62" else ""
        return f"valgrind cannot decode instruction bytes {' '.join(raw[:6])}...{evex}"
    if "signal 4 (SIGILL)" in valgrind_stderr or "driver: crashed: SIGILL" in valgrind_stderr:
        # with -q valgrind does not print the bytes, and the driver's own handler names the signal
        return "valgrind raised SIGILL (an instruction it cannot run, e.g. AVX-512's EVEX code)"
    return None


def run_callgrind_batch(driver: Path, library: Path, scheme: str, requests: Sequence[tuple[str, int]],
                        workdir: Path | None = None, extra: tuple[str, ...] = (), read=None) -> list:
    """Every (op, calls) request in one callgrind process, in order: [read(text of its region)].
    Valgrind's start-up and translation (most of a small op's run) are paid once, not per request;
    the counts are the same as one process per request (each region is one pqsimd_measure, after
    the op's own setup and warm call). An op that crashes or cannot be decoded is named."""
    read = read or parse_callgrind_totals
    ops = [op for op, _ in requests]
    with tempfile.TemporaryDirectory(prefix="pqsimd-cg-", dir=workdir) as tmp:
        out_file = Path(tmp) / "callgrind.out"
        cmd = callgrind_batch_command(driver, library, scheme, requests, out_file, extra)
        try:
            proc = child.run(cmd, timeout=TIMEOUT_S * len(requests))
        except child.TimedOut:
            raise CountError(f"{_named(ops)}: callgrind did not finish in {TIMEOUT_S * len(requests)} s") from None
        dumps = [Path(f"{out_file}.{k}") for k in range(1, len(requests) + 1)]
        done = sum(1 for d in dumps if d.exists())
        at = ops[min(done, len(ops) - 1)]  # the request running when the process stopped
        unsupported = unhandled_instruction(proc.stderr)
        if unsupported:
            raise CountError(f"{at}: {unsupported}", unsupported=unsupported)
        if proc.returncode != 0 or done < len(requests):
            # the program's own last line (valgrind's lines, "==pid== ...", come after it)
            own = [l for l in proc.stderr.strip().splitlines() if l.strip() and not l.startswith("==")]
            raise CountError(f"{at}: callgrind run failed ({(own or [f'exit code {proc.returncode}'])[-1]})")
        try:
            return [read(d.read_text()) for d in dumps]
        except (OSError, ValueError) as e:
            raise CountError(f"{_named(ops)}: unreadable callgrind output ({e})") from None


def _named(ops: list[str]) -> str:
    return ops[0] if len(ops) == 1 else f"{ops[0]} ... {ops[-1]} ({len(ops)} runs)"


def parse_calls_to(text: str, suffix: str) -> int | None:
    """Calls, inside the collected region, of every function whose name ends with `suffix` (a
    namespaced PQClean function: <NAMESPACE>_<IMPL>_<suffix>), from a callgrind out file; None when
    no call of such a function appears at all (inlined or renamed: not a count of 0)."""
    names: dict[str, str] = {}
    current = None
    total = 0
    seen = False
    for line in text.splitlines():
        if line.startswith(("cfn=", "fn=")):
            m = re.match(r"c?fn=\((\d+)\)(?: (.*))?", line)
            if m:
                if m.group(2):
                    names[m.group(1)] = m.group(2)
                name = names.get(m.group(1), "")
            else:
                name = line.split("=", 1)[1]
            if line.startswith("cfn="):
                current = name
        elif line.startswith("calls=") and current is not None:
            if current == suffix or current.endswith("_" + suffix):
                total += int(line.split("=", 1)[1].split()[0])
                seen = True
            current = None
    return total if seen else None


def count_instructions_batch(driver: Path, library: Path, scheme: str, requests: Sequence[tuple[str, int, str | None]],
                             workdir: Path | None = None) -> list[tuple[int, int | None, int]]:
    """count_instructions of every (op, calls, counter) request, in one callgrind process: (Ir, calls of the
    counter function or None, Ir inside hash entry points, Ir per kernel: run/hashshare.py)."""
    from .hashshare import hash_cost, kernel_costs

    texts = run_callgrind_batch(driver, library, scheme, [(op, calls) for op, calls, _ in requests], workdir,
                                read=lambda t: t)
    try:
        return [(parse_callgrind_totals(t), parse_calls_to(t, counter) if counter else None, hash_cost(t),
                 kernel_costs(t))
                for t, (_, _, counter) in zip(texts, requests)]
    except ValueError as e:
        raise CountError(f"{requests[0][0]} ...: unreadable callgrind output ({e})") from None


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
