"""Counting guest instructions under qemu-user with our TCG plugin (harness/qemu/count.c), and a
second, independent count from QEMU's own execution log.

    plugin()                  the plugin, built once per (source, header, host compiler) in the
                              build cache; needs QEMU's plugin API header (harness/qemu/fetch-header.sh)
    count(isa, argv, hist)    run argv under the ISA's emulator with the plugin: instructions between
                              the marker instructions (harness/driver/count_marker.h), and with
                              hist=True executions per (address, instruction)
    exec_log_count(isa, argv) the same windows counted from `-singlestep -d in_asm,exec,nochain`: one
                              translation block per instruction and every block execution logged, so
                              each "Trace" line between the markers is one executed instruction. Slow
                              (one log line per instruction): a cross-check, not a metric.
"""

from __future__ import annotations

import dataclasses

import json
import re
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ..errors import CountError, PqsimdError
from . import Isa

TIMEOUT_S = 600
_HARNESS = Path(str(resources.files("pqsimd").joinpath("harness")))
PLUGIN_SOURCE = _HARNESS / "qemu" / "count.c"
PLUGIN_SOURCES = (PLUGIN_SOURCE, _HARNESS / "qemu" / "hazards.c", _HARNESS / "qemu" / "hazards.h")
MARKER_HEADER = _HARNESS / "driver" / "count_marker.h"  # the markers' assembly (their words: data/isas.toml)
FETCH_HEADER = _HARNESS / "qemu" / "fetch-header.sh"


def marker_words(isa: Isa) -> tuple[int, int]:
    """The instruction words of the ISA's start and stop markers (data/isas.toml [isa.<name>.plugin];
    the tests assemble count_marker.h's markers and compare)."""
    p = isa.plugin or {}
    if "start" not in p or "stop" not in p:
        isa.plugin_args()  # the one line naming what is missing
    return int(p["start"], 16), int(p["stop"], 16)


def plugin_header() -> Path:
    """QEMU's qemu-plugin.h for the installed qemu-user, if fetched; else one line naming the command."""
    proc = subprocess.run(["bash", str(FETCH_HEADER), "--cached"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise PqsimdError((proc.stderr.strip().splitlines() or [f"{FETCH_HEADER} failed"])[-1])
    return Path(proc.stdout.strip())


def plugin(cc: str = "cc") -> Path:
    """The plugin shared object (cached by a hash of its sources, the header and the compiler)."""
    from ..build import host_tool  # late, upward: the plugin is cached beside the builds (build.py owns that folder)

    header = plugin_header()
    return host_tool("qemu-plugin", "the QEMU counting plugin", [f for f in PLUGIN_SOURCES if f.suffix == ".c"],
                     ["-O2", "-std=gnu11", "-Wall", "-fPIC", "-shared", "-fvisibility=hidden", f"-I{header.parent}"],
                     hashed=(*(f for f in PLUGIN_SOURCES if f.suffix != ".c"), header), output="count.so", cc=cc)


@dataclass(frozen=True)
class HistRow:
    pc: int
    count: int
    symbol: str | None  # QEMU knows the main program's symbols only
    disas: str


@dataclass(frozen=True)
class PluginCount:
    insns: int  # instructions executed inside the marker windows, summed
    windows: int
    hist: tuple[HistRow, ...] | None = None
    cache: dict[str, int] | None = None  # cache=on: the cache model's events inside the windows
    stdout: str = ""  # what the program printed (count() fills it in)
    hazards: dict[str, int] | None = None  # hazards=on: the hazard model's events inside the windows
    sites: tuple["HazardSite", ...] = ()  # hazards=on: each instruction with an event


HAZARDS = ("Ld", "St", "SFfail", "Alias4K", "SplitLd", "SplitSt", "SSEdirty", "Transitions")
SITE_EVENTS = ("SFfail", "Alias4K", "SplitLd", "SplitSt", "SSEdirty")


@dataclass(frozen=True)
class HazardSite:
    """One guest instruction's hazard events inside the windows (harness/qemu/hazards.c)."""
    pc: int
    events: dict[str, int]
    disas: str


_ENCODING = re.compile(r"^(?:[0-9a-f]{4}|[0-9a-f]{8})\s+")


def parse_output(text: str, encoding_first: bool = False) -> PluginCount:
    """The plugin's outfile: a JSON line, then (hist=on) "0xPC<TAB>count<TAB>symbol<TAB>disas" lines;
    encoding_first: QEMU's disassembly of the ISA starts with the instruction's encoding (RISC-V's
    does: [isa.<name>.plugin] disas_encoding), which is taken off."""
    lines = text.splitlines()
    if not lines:
        raise CountError("the counting plugin wrote nothing (did the program exit normally?)")
    try:
        head = json.loads(lines[0])
        insns, windows, unbalanced, vcpus = (int(head[k]) for k in ("insns", "windows", "unbalanced", "vcpus"))
    except (ValueError, KeyError, TypeError) as e:
        raise CountError(f"unreadable counting plugin output ({e}): {lines[0][:80]!r}") from None
    if windows == 0:
        raise CountError("no counting window: the program never ran a start and a stop marker")
    if unbalanced:
        raise CountError(f"{unbalanced} unbalanced marker(s): a start without a stop, or a stop without a start")
    if vcpus > 1:
        raise CountError(f"the guest started {vcpus - 1} thread(s): the plugin's counts are exact for one thread only")
    cache = {k: int(v) for k, v in head["cache"].items()} if isinstance(head.get("cache"), dict) else None
    hazards = {k: int(head["hazards"][k]) for k in (*HAZARDS, "entries", "window")} \
        if isinstance(head.get("hazards"), dict) else None
    sites = tuple(_site(line) for line in lines[1:] if line.startswith("S\t"))
    lines = [line for line in lines if not line.startswith("S\t")]
    if not head.get("hist"):
        return PluginCount(insns, windows, cache=cache, hazards=hazards, sites=sites)
    rows = []
    for line in lines[1:]:
        pc, count, symbol, disas = line.split("\t", 3)
        if encoding_first:
            disas = _ENCODING.sub("", disas, count=1)
        rows.append(HistRow(int(pc, 16), int(count), None if symbol == "-" else symbol, disas))
    if sum(r.count for r in rows) != insns:
        raise CountError(f"the histogram sums to {sum(r.count for r in rows)}, not the {insns} instructions counted")
    return PluginCount(insns, windows, tuple(rows), cache, hazards=hazards, sites=sites)


def _site(line: str) -> HazardSite:
    _, pc, *counts = line.split("\t", 1 + len(SITE_EVENTS) + 1)
    return HazardSite(int(pc, 16), dict(zip(SITE_EVENTS, map(int, counts[:-1]))), counts[-1].strip())


def emulator(isa: Isa) -> list[str]:
    """The emulator command for counting: on any host, with the ISA's pinned CPU (counts follow it)."""
    qemu = shutil.which(isa.qemu)
    if qemu is None:
        raise PqsimdError(f"{isa.qemu} not found: counting {isa.name} instructions needs it (apt-get install qemu-user)")
    return [qemu, "-cpu", isa.qemu_cpu, *([] if isa.native else ["-L", isa.sysroot])]


def plugin_options(hist: bool = False, caches: dict | None = None, hazards: dict | None = None) -> str:
    """The plugin's arguments after outfile: hist=on, cache=on with each cache as SIZE:WAYS:LINE,
    hazards=on with the store buffer model's sb= (entries) and window= (instructions)."""
    out = ",hist=on" if hist else ""
    if caches:
        out += ",cache=on" + "".join(f",{level.lower()}={c.size}:{c.ways}:{c.line}" for level, c in caches.items())
    if hazards:
        out += f",hazards=on,sb={hazards['entries']},window={hazards['window']}"
    return out


def count(isa: Isa, argv: list[str], hist: bool = False, env: dict | None = None, timeout: float = TIMEOUT_S,
          so: Path | None = None, caches: dict | None = None, hazards: dict | None = None) -> PluginCount:
    """`so`: the plugin (default: plugin(), which hashes its inputs: a caller counting many times passes it);
    `caches`: {"I1"|"D1"|"LL": caches.Cache} to run the plugin's cache model; `hazards`: {"entries": N,
    "window": N} to run its hazard model (harness/qemu/hazards.c)."""
    so = so or plugin()
    with tempfile.TemporaryDirectory(prefix="pqsimd-qemu-") as tmp:
        out = Path(tmp) / "count.out"  # no comma: qemu splits -plugin arguments on commas
        cmd = [*emulator(isa), "-plugin", f"{so},outfile={out}" + isa.plugin_args() + plugin_options(hist, caches, hazards),
               *argv]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise CountError(f"{' '.join(argv[:1])} did not finish in {timeout:.0f} s under {isa.qemu}") from None
        if proc.returncode != 0:
            tail = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
            raise CountError(f"{isa.qemu} run failed ({tail})")
        if not out.exists():
            raise CountError("the counting plugin wrote no output")
        return dataclasses.replace(parse_output(out.read_text(), bool((isa.plugin or {}).get("disas_encoding"))),
                                   stdout=proc.stdout)


_IN_ASM = re.compile(r"^0x([0-9a-f]+):\s+([0-9a-f]{4}|[0-9a-f]{8})\s")
_TRACE = re.compile(r"^Trace \d+: 0x[0-9a-f]+ \[[0-9a-f]+/([0-9a-f]+)/")


def exec_log_count(isa: Isa, argv: list[str], env: dict | None = None, timeout: float = TIMEOUT_S) -> list[int]:
    """Instructions per marker window from QEMU's exec log (streamed from stderr, never stored)."""
    start_word, stop_word = marker_words(isa)
    starts: set[int] = set()
    stops: set[int] = set()
    windows: list[int] = []
    inside: int | None = None
    cmd = [*emulator(isa), "-singlestep", "-d", "in_asm,exec,nochain", *argv]
    with subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env) as proc:
        timed_out = threading.Event()
        killer = threading.Timer(timeout, lambda: (timed_out.set(), proc.kill()))
        killer.start()
        try:
            for line in proc.stderr:  # type: ignore[union-attr]
                m = _TRACE.match(line)
                if m:
                    pc = int(m.group(1), 16)
                    if pc in stops and inside is not None:
                        windows.append(inside)
                        inside = None
                    elif pc in starts and inside is None:
                        inside = 0
                    elif inside is not None:
                        inside += 1
                    continue
                m = _IN_ASM.match(line)
                if m:
                    word = int(m.group(2), 16)
                    if word == start_word:
                        starts.add(int(m.group(1), 16))
                    elif word == stop_word:
                        stops.add(int(m.group(1), 16))
            proc.wait()
        finally:
            killer.cancel()
    if timed_out.is_set():
        raise CountError(f"{' '.join(argv[:1])} did not finish in {timeout:.0f} s under {isa.qemu} -singlestep")
    if proc.returncode != 0:
        raise CountError(f"{isa.qemu} -singlestep run failed (exit code {proc.returncode})")
    if inside is not None or not windows:
        raise CountError("the exec log has no complete marker window")
    return windows
