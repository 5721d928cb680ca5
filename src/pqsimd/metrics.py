"""The metrics a study can ask for: every one is one `Metric`, registered once here, and read by
the study (which names exist, which need the host's own clock), by run (which jobs, which runner:
run/metrics.py executes them), by analyze and by the report (which are exact counts, their unit).

    ticks, counters   timing jobs of the plan (local or SLURM executor); counters ride along
    instructions      exact counts per call, one job per (build, scheme); backend by ISA
    mix               the executed instruction mix and the llvm-mca estimate, one job per
                      (build, scheme); backend by ISA
    energy            RAPL energy per call, one job per (build, scheme)
    sim               simulated cache misses and branch mispredictions per call (callgrind's
                      cache and branch model), one job per (build, scheme, cache geometry)
    (stack and size are costs: their C -> SIMD ratio is told as a change in bytes, never as a speedup)
    stack             peak stack bytes of one call (a painted private stack), one job per (build,
                      scheme); natively or under the ISA's emulator
    size              code + read-only data bytes of the op's call tree (nm, objdump), one job per
                      (build, scheme)
    hazards           simulated hazards a PMU would count (store-forwarding failures, 4K aliasing, line-split
                      loads and stores, SSE with dirty upper YMM halves) per call, from the exact trace under
                      qemu-user with our plugin's model, one job per (build, scheme) (run/hazards.py)
    ct                constant time: where the op's secrets steer a branch or an address (memcheck
                      taint, confirmed by lackey traces over several secrets), one job per (build,
                      scheme); a verdict per op, never a ratio (run/ct.py)

A metric owns its meaning: its unit (`unit_of(metric, isa)`: the ISA's tick unit for times, data/isas.toml,
which analyze writes into summary.json `units` and the report reads back, results.Results.unit), whether a
value is per call or per op, how a ratio between two builds reads (`Ratio.SPEEDUP`: base / variant, a
speedup; `Ratio.CHANGE`: the variant's quantity against the base's, fewer is better, never a speedup), the
words its verdicts are printed as (`verdict_text`) and what a value of 0 means. Code outside this module
names a metric through `TIME`, `COUNT` or `DEFAULT` or asks the `Metric` (tests/test_metric_names.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from . import isa
from .errors import PqsimdError


class Ratio(StrEnum):
    """How a ratio between two builds of one metric reads (analyze's `speedup` column is base / variant)."""
    SPEEDUP = "speedup"  # > 1: the variant is faster (takes less of it)
    CHANGE = "change"  # the variant's quantity against the base's (× and %), fewer is better; never a speedup


class Per(StrEnum):
    """What one value of a metric is of."""
    CALL = "call"  # one call of the op (a median over many)
    OP = "op"  # the op itself: one exact number per build (stack, code bytes)


SPEED_VERDICTS = {"faster": "faster", "slower": "slower", "same": "same"}


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str  # per call, as tables and figures print it
    title: str  # what a table or figure of it is titled
    runner: str  # module of run/ with run(sd, study, ctx) -> bool
    timed: bool  # reads the host's clock or counters: meaningless under an emulator
    exact: bool  # a count: the same binary gives the same number (analysis compares exactly)
    per_build: bool  # one job per (build, scheme), id <variant>.<compiler>.<scheme>.<name>
    grouped: bool = True  # its raw rows carry its name and become analyze's groups (mix, counters, energy: own names)
    blurb: str = ""  # what --metric's help says after the name
    verdicts: bool = False  # its results are verdicts per op (constant time), never a ratio between builds
    ratio: Ratio = Ratio.SPEEDUP  # how a ratio between two builds reads
    per: Per = Per.CALL
    verdict_words: dict = field(default_factory=lambda: SPEED_VERDICTS)  # faster/slower/same as printed
    zero_is_measured: bool = False  # 0 is a measurement (a leaf routine writes no stack), not below resolution
    by_backend: bool = False  # counted by the ISA's counting backend (callgrind, the QEMU plugin, ptrace)
    tick_unit: bool = False  # its unit is the ISA's tick unit (data/isas.toml), not `unit`

    @property
    def reads_as_speedup(self) -> bool:
        return self.ratio is Ratio.SPEEDUP

    def verdict_text(self, verdict) -> str:
        """A comparison's verdict in this metric's words (fewer bytes, not faster)."""
        return self.verdict_words.get(str(verdict), str(verdict))


BYTES_VERDICTS = {"faster": "fewer bytes", "slower": "more bytes", "same": "same bytes"}


# The ticks unit is the ISA's (data/isas.toml tick_unit: TSC ticks on x86-64, timer ticks on aarch64):
# unit_of(metric, isa) is what results and the report print; `unit` here is the rest's.
_BYTES = dict(ratio=Ratio.CHANGE, per=Per.OP, verdict_words=BYTES_VERDICTS, zero_is_measured=True)
REGISTRY: dict[str, Metric] = {m.name: m for m in (
    Metric("ticks", "ticks", "time", "timing", timed=True, exact=False, per_build=False, tick_unit=True),
    Metric("instructions", "instructions", "instruction count", "instructions", timed=False, exact=True, per_build=True,
           by_backend=True),
    Metric("counters", "events", "hardware counters", "timing", timed=True, exact=False, per_build=False, grouped=False),
    Metric("energy", "µJ", "energy", "energy", timed=True, exact=False, per_build=True, grouped=False),
    Metric("mix", "instructions", "instruction mix", "mix", timed=False, exact=True, per_build=True, grouped=False,
           by_backend=True),
    Metric("sim", "events", "simulated cache and branch events", "sim", timed=False, exact=True, per_build=True,
           grouped=False, by_backend=True),
    Metric("stack", "bytes", "peak stack", "stack", timed=False, exact=True, per_build=True,
           blurb="peak stack bytes", **_BYTES),
    Metric("size", "bytes", "code size", "stack", timed=False, exact=True, per_build=True,
           blurb="code bytes of the call tree", **_BYTES),
    Metric("hazards", "events", "simulated hazards", "hazards", timed=False, exact=True, per_build=True, grouped=False,
           blurb="store-forwarding failures, 4K aliasing, split loads, AVX-SSE mixing, simulated"),
    Metric("ct", "leak sites", "constant time", "ct", timed=False, exact=True, per_build=True, grouped=False,
           verdicts=True, blurb="constant time: branches and addresses that depend on a secret"),
)}


# The metrics other modules name (each a key of REGISTRY): the study's time, the exact count beside it, the
# default of --metric, and each metric's own name for the modules that run or analyse it. Code outside this
# module writes these, never the strings (tests/test_metric_names.py).
TIME, COUNT, COUNTERS, ENERGY, MIX, SIM, STACK, SIZE, HAZARDS, CT = REGISTRY
DEFAULT = TIME


def unit_of(metric: str, isa_name: str | None = None) -> str:
    """A metric's unit per call as a study on `isa_name` prints it: the ISA's tick unit for times (a
    study's own, written to summary.json `units` by analyze), the registered unit for the others, the
    name itself for a raw metric of its own (a perf event, energy_package)."""
    if metric in REGISTRY and REGISTRY[metric].tick_unit:
        try:
            return (isa.get(isa_name) if isa_name else isa.host()).tick_unit
        except PqsimdError:
            return REGISTRY[metric].unit
    return REGISTRY[metric].unit if metric in REGISTRY else metric


def tick_note(isa_name: str | None = None) -> str:
    """What a study's tick unit is, in words (data/isas.toml tick_note)."""
    try:
        t = isa.get(isa_name) if isa_name else isa.host()
    except PqsimdError:
        return "ticks of the study's timer"
    return t.tick_note or t.tick_unit


def names() -> list[str]:
    return list(REGISTRY)


def help_list() -> str:
    """--metric's help: every registered metric, the default first, with its blurb where it has one."""
    return ", ".join(f"{m.name}{' (default)' if m.name == DEFAULT else ''}{f' ({m.blurb})' if m.blurb else ''}"
                     for m in REGISTRY.values())


def get(name: str) -> Metric:
    return REGISTRY[name]


def of(name: str | None) -> Metric:
    """The registered metric, or what a raw metric of its own is (a perf event, energy_package: a
    quantity per call whose ratio is a speedup, its name its unit)."""
    if name in REGISTRY:
        return REGISTRY[name]
    return Metric(str(name), str(name), str(name), "", timed=True, exact=False, per_build=False, grouped=False)


def reads_as_speedup(name: str | None) -> bool:
    """Whether a ratio of this metric between two builds is a speedup (Ratio.SPEEDUP), not a change."""
    return of(name).reads_as_speedup


def primary(names) -> str:
    """A study's primary metric among the metrics its results hold: the first whose ratio is a speedup, the
    time first (then by name); a study of costs alone (stack, size) has its first cost."""
    ms = sorted(set(names), key=lambda m: (m != TIME, m))
    return ([m for m in ms if reads_as_speedup(m)] or ms or [DEFAULT])[0]


def counted_by_backend(name: str) -> bool:
    """A count the ISA's counting backend makes (instructions, mix, sim; stack and size are read natively
    or from the binary, ct runs valgrind's memcheck)."""
    m = REGISTRY.get(name)
    return bool(m) and m.by_backend


def exact_names() -> tuple[str, ...]:
    """Metrics that are counts and whose raw rows carry the metric's own name (analyze's groups)."""
    return tuple(m.name for m in REGISTRY.values() if m.exact and m.grouped)


def plan_jobs_needed(selected: list[str]) -> bool:
    """Whether the plan's timing jobs run (and so need their sizing): a metric not per build."""
    return any(not REGISTRY[m].per_build for m in selected if m in REGISTRY)


def check_isa(selected: list[str], isa) -> None:
    """Timed metrics need the ISA's own hardware: under an emulator they would measure the emulator."""
    if isa.native:
        return
    timed = [m for m in selected if m in REGISTRY and REGISTRY[m].timed]
    if timed:
        counting = ",".join(m.name for m in REGISTRY.values() if not m.timed)
        raise PqsimdError(f"--isa {isa.name} runs under {isa.qemu} on this host: --metric {','.join(timed)} would time "
                          f"the emulator, not the code; use --metric {counting} (exact counts and the cost model), "
                          f"or run on a {isa.name} host")
