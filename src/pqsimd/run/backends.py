"""How instructions are counted: the backends of the counting metrics (instructions, mix), chosen
by the study's ISA (data/isas.toml `counting`). Both run `driver count LIB SCHEME OP N ...` and count
only inside pqsimd_measure, so the instructions metric's arithmetic ((N2 - N1) difference minus the
self-check op's) and the mix's per-instruction subtraction are the same for both.

    callgrind      valgrind's callgrind, natively (x86_64): Ir toggled on pqsimd_measure; per
                   (object, address) self costs mapped to objdump's disassembly
    qemu-plugin    our TCG plugin under qemu-user (pqsimd/isa/qemu.py): instructions between the
                   marker instructions around the measure loop; per (address, disassembly) with
                   hist=on, the disassembly QEMU itself prints

A backend: `version()` (None: not installed, `missing` says what to install), and for a list of
requests [(op, calls)], in order: `count_batch(driver, lib, scheme, [(op, calls, counter)])` ->
[(instructions, calls of the counter function or None)], `profile_batch(...)` -> [({(object,
address): executions}, {address: instruction text} or None: take objdump's)] for the mix,
`events_batch(driver, lib, scheme, requests, geometry)` -> [{event: count}] for the simulated-events
metric (run/sim.py; `simulates`: which models the backend has, cache and/or branch); `command(...)`
for the job record. Callgrind serves a batch in one process (`driver count LIB SCHEME OP N OP N ...`,
a dump after each pqsimd_measure): valgrind's start-up, most of a small op's cost, is paid once per
batch (counts do not depend on what ran before in the process; simulated misses do, so run/sim.py
sends one request per batch). The plugin runs once per request (its single forms count, profile, events).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from .. import isa as isa_mod
from ..errors import CountError, PqsimdError
from ..isa import qemu
from . import callgrind, stepcount

# The counting protocol every backend runs: the warm call, then N1 and N2 calls; per call is the
# difference over N2 - N1, so setup and the warm call cancel.
N1 = 2  # calls in the short run (the warm call happens before either)
N2 = 10  # calls in the long run: batch = N2 - N1


class _OnePerRun:
    """The batch forms of count, profile and events from the single ones, one backend run per request
    (callgrind has batch forms of its own: one process serves them all). requests: [(op, calls)] (count:
    [(op, calls, counter)]); results in request order."""

    def count_batch(self, driver: Path, library: Path, scheme: str, requests) -> list:
        return [self.count(driver, library, scheme, op, calls, counter) for op, calls, counter in requests]

    def profile_batch(self, driver: Path, library: Path, scheme: str, requests) -> list:
        return [self.profile(driver, library, scheme, op, calls) for op, calls in requests]

    def events_batch(self, driver: Path, library: Path, scheme: str, requests, geometry) -> list:
        return [self.events(driver, library, scheme, op, calls, geometry) for op, calls in requests]


class Callgrind:
    name = "callgrind"
    missing = "valgrind not found on PATH (install it: apt-get install valgrind)"

    def __init__(self, isa=None):
        self.isa = isa
        self.stepped: dict[str, str] = {}  # library file name -> why valgrind could not count it

    def version(self) -> str | None:
        return callgrind.valgrind_version()

    simulates = ("cache", "branch")
    SIM_OPTIONS = ("--cache-sim=yes", "--branch-sim=yes")

    def sim_options(self, geometry) -> tuple[str, ...]:
        return (*self.SIM_OPTIONS, *geometry.valgrind_args())

    # Several requests, one process (the driver's count command takes them all): valgrind starts once
    # per (build, set) instead of once per op and run, which was most of the cost of counting.
    def count_batch(self, driver: Path, library: Path, scheme: str, requests) -> list:
        """Counts under callgrind; a build valgrind cannot run (AVX-512) is counted by single-stepping it
        natively (run/stepcount.py: the same instructions, exactly), remembered in `stepped`."""
        try:
            return callgrind.count_instructions_batch(driver, library, scheme, requests)
        except CountError as e:
            if not e.unsupported:
                raise
            stepper = stepcount.Stepper(self.isa)
            if stepper.version() is None:
                raise CountError(f"{e}; and it cannot be single-stepped instead: {stepper.missing}", e.unsupported) from None
            got = stepper.count_batch(driver, library, scheme, requests)
            self.stepped[Path(library).name] = str(e)
            return got

    def profile_batch(self, driver: Path, library: Path, scheme: str, requests) -> list:
        try:
            got = callgrind.run_callgrind_batch(driver, library, scheme, requests, extra=callgrind.PROFILE_ARGS,
                                                read=callgrind.parse_profile)
        except CountError as e:  # AVX-512: the same profile by single-stepping (run/stepcount.py)
            if not e.unsupported:
                raise
            stepper = stepcount.Stepper(self.isa)
            if stepper.version() is None:
                raise CountError(f"{e}; and it cannot be single-stepped instead: {stepper.missing}", e.unsupported) from None
            got = stepper.profile_batch(driver, library, scheme, requests)
            self.stepped[Path(library).name] = str(e)
            return got
        return [(p, None) for p in got]  # disassembly: objdump of each object

    def events_batch(self, driver: Path, library: Path, scheme: str, requests, geometry) -> list:
        """Every event callgrind collected inside pqsimd_measure under its cache and branch simulation
        with this geometry, per request: {"Ir": n, "D1mr": n, "Bcm": n, ...}, callgrind's names."""
        return callgrind.run_callgrind_batch(driver, library, scheme, requests, extra=self.sim_options(geometry),
                                             read=callgrind.parse_callgrind_events)

    def command(self, driver: Path, library: Path, scheme: str, extra: tuple[str, ...] = ()) -> list[str]:
        return callgrind.callgrind_batch_command(driver, library, scheme, [("<op>", "<N1>"), ("<op>", "<N2>")],
                                                 Path("<out>"), extra) + ["... (every op of a batch, one process)"]


class QemuPlugin(_OnePerRun):
    """Exact guest instruction counts under qemu-user; the plugin cannot see function calls inside
    a variant, so the family's call counters are not counted (None)."""

    name = "qemu-plugin"
    simulates = ("cache", "branch")  # the plugin's own models (harness/qemu/count.c), like valgrind's

    def __init__(self, isa):
        self.isa = isa
        self.missing = f"{isa.qemu} not found on PATH (install it: apt-get install {' '.join(isa.packages)})"
        self.plugin: Path | None = None  # built (or found) once, by version()

    def version(self) -> str | None:
        path = shutil.which(self.isa.qemu)
        if path is None:
            return None
        try:
            self.plugin = qemu.plugin()  # built once; a missing plugin header is one line naming the fetch command
        except PqsimdError as e:
            self.missing = str(e)
            return None
        out = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
        return f"{(out.splitlines() or ['qemu'])[0]} -cpu {self.isa.qemu_cpu}, pqsimd TCG plugin"

    def _argv(self, driver: Path, library: Path, scheme: str, op: str, calls: int) -> list[str]:
        return [str(driver), "count", str(library), scheme, op, str(calls)]

    def count(self, driver: Path, library: Path, scheme: str, op: str, calls: int, counter: str | None = None):
        try:
            return qemu.count(self.isa, self._argv(driver, library, scheme, op, calls), so=self.plugin).insns, None
        except qemu.CountError as e:
            raise CountError(f"{op}: {e}") from None

    def sim_options(self, geometry) -> tuple[str, ...]:
        return (qemu.plugin_options(caches=geometry.caches),)

    def events(self, driver: Path, library: Path, scheme: str, op: str, calls: int, geometry):
        """The plugin's cache and branch models with this geometry as specified (any set count):
        {"Ir": n, "Dr": n, "I1mr": n, ..., "Bcm": n}, callgrind's names."""
        try:
            got = qemu.count(self.isa, self._argv(driver, library, scheme, op, calls), so=self.plugin,
                             caches=geometry.caches)
        except qemu.CountError as e:
            raise CountError(f"{op}: {e}") from None
        return {"Ir": got.insns, **(got.cache or {})}

    def profile(self, driver: Path, library: Path, scheme: str, op: str, calls: int):
        """{("guest", pc): executions} and the disassembly of every pc, from the plugin's histogram."""
        try:
            rows = qemu.count(self.isa, self._argv(driver, library, scheme, op, calls), hist=True, so=self.plugin).hist or ()
        except qemu.CountError as e:
            raise CountError(f"{op}: {e}") from None
        return {(GUEST, r.pc): r.count for r in rows}, {r.pc: (r.disas, r.symbol) for r in rows}

    def command(self, driver: Path, library: Path, scheme: str, extra: tuple[str, ...] = ()) -> list[str]:
        # extra: the mix's histogram (any callgrind-style options: hist=on) or the sim's plugin options (",cache=on,...")
        opts = "".join(e for e in extra if e.startswith(",")) or (",hist=on" if extra else "")
        return [*qemu.emulator(self.isa), "-plugin", f"<count.so>,outfile=<out>{self.isa.plugin_args()}{opts}",
                str(driver), "count", str(library), scheme, "<op>", "<N1|N2>"]


GUEST = "guest"  # the object name of plugin profiles: addresses are the guest's (one process image)
BACKENDS = {Callgrind.name: Callgrind, QemuPlugin.name: QemuPlugin}


def for_isa(name: str | None, vlen: int | None = None):
    """The counting backend of an ISA (its `counting` in data/isas.toml; None: this host's), at a
    vector length (None: the ISA's default, if it has one)."""
    isa = (isa_mod.get(name) if name else isa_mod.host()).at(vlen)
    return BACKENDS[isa.counting](isa)


def emulation(backend) -> dict:
    """What a job record says about the emulated CPU its counts come from: the pinned CPU, and the
    vector length where the ISA has one (every job of a vector-length study records it)."""
    isa = getattr(backend, "isa", None)
    if isa is None or isa.native:
        return {}
    return {"emulator": {"qemu": isa.qemu, "cpu": isa.qemu_cpu}, **({"vlen": isa.vlen} if isa.vlen is not None else {})}


def for_study(study):
    """The counting backend of the study's ISA at the study's vector length."""
    return for_isa(getattr(study, "isa", None) or None, getattr(study, "vlen", None))
