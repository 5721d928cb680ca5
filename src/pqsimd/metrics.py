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
    ct                constant time: where the op's secrets steer a branch or an address (memcheck
                      taint, confirmed by lackey traces over several secrets), one job per (build,
                      scheme); a verdict per op, never a ratio (run/ct.py)

A metric owns its unit: `unit_of(metric, isa)` (the ISA's tick unit for times, data/isas.toml), which
analyze writes into summary.json `units` and the report reads back (results.Results.unit).
"""

from __future__ import annotations

from dataclasses import dataclass

from . import isa
from .errors import PqsimdError


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
    cost: bool = False  # a cost in bytes, not a time: SIMD / C is a change of bytes (fewer is better), never a
    #                     speedup; per op, not per call (report/fmt.bytes_change says it)


# The ticks unit is the ISA's (data/isas.toml tick_unit: TSC ticks on x86-64, timer ticks on aarch64):
# unit_of(metric, isa) is what results and the report print; `unit` here is the rest's.
REGISTRY: dict[str, Metric] = {m.name: m for m in (
    Metric("ticks", "ticks", "time", "timing", timed=True, exact=False, per_build=False),
    Metric("instructions", "instructions", "instruction count", "instructions", timed=False, exact=True, per_build=True),
    Metric("counters", "events", "hardware counters", "timing", timed=True, exact=False, per_build=False, grouped=False),
    Metric("energy", "µJ", "energy", "energy", timed=True, exact=False, per_build=True, grouped=False),
    Metric("mix", "instructions", "instruction mix", "mix", timed=False, exact=True, per_build=True, grouped=False),
    Metric("sim", "events", "simulated cache and branch events", "sim", timed=False, exact=True, per_build=True,
           grouped=False),
    Metric("stack", "bytes", "peak stack", "stack", timed=False, exact=True, per_build=True, cost=True,
           blurb="peak stack bytes"),
    Metric("size", "bytes", "code size", "stack", timed=False, exact=True, per_build=True, cost=True,
           blurb="code bytes of the call tree"),
    Metric("ct", "leak sites", "constant time", "ct", timed=False, exact=True, per_build=True, grouped=False,
           verdicts=True, blurb="constant time: branches and addresses that depend on a secret"),
)}


def unit_of(metric: str, isa_name: str | None = None) -> str:
    """A metric's unit per call as a study on `isa_name` prints it: the ISA's tick unit for times (a
    study's own, written to summary.json `units` by analyze), the registered unit for the others, the
    name itself for a raw metric of its own (a perf event, energy_package)."""
    if metric == "ticks":
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
    return ", ".join(f"{m.name}{' (default)' if m.name == 'ticks' else ''}{f' ({m.blurb})' if m.blurb else ''}"
                     for m in REGISTRY.values())


def get(name: str) -> Metric:
    return REGISTRY[name]


def is_cost(name: str | None) -> bool:
    """A metric whose ratio is a change in bytes (stack, size), never a speedup."""
    return bool(name) and name in REGISTRY and REGISTRY[name].cost


def counted_by_backend(name: str) -> bool:
    """A count the ISA's counting backend makes (instructions, mix, sim): exact, and not a cost in bytes
    (stack and size are read natively or from the binary) nor a verdict (ct runs valgrind's memcheck)."""
    m = REGISTRY.get(name)
    return bool(m) and m.exact and not m.cost and not m.verdicts


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
