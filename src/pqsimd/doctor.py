"""`pqsimd doctor`: is this machine fit to measure on, and what to do about what isn't."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from . import machine
from .console import PROSE_WIDTH, stdout_console


@dataclass
class Finding:
    name: str
    ok: bool | None  # None: informational (a caveat, not a failure)
    detail: str
    remedy: str = ""
    # what it decides in the verdict: build (no study without it), time, count (instruction counts),
    # variants (a variant's CPU feature), counters, energy; "" for what only informs
    affects: str = ""


# the rows counters.py and energy.py contribute, by the name each gives its row
_AFFECTS = {"perf_event_paranoid": "counters", "hardware counters": "counters", "RAPL energy": "energy"}


def _isa() -> list[Finding]:
    """Every CPU feature a shipped variant or implementation needs (data/), present or not."""
    from . import catalog

    flags = machine.cpu_flags()
    needs: dict[str, list[str]] = {}
    default: set[str] = set()  # features the default study needs: their absence is a problem, else a note
    variants = catalog.builtin_variants()
    default_sources = {v.sources for v in variants.values() if v.default}
    for v in variants.values():
        for f in v.requires_cpu:
            needs.setdefault(f, []).append(f"variant {v.id}")
            if v.default:
                default.add(f)
    for fam in catalog.families().values():
        for impl in fam.implementations.values():
            for f in impl.requires_cpu:
                needs.setdefault(f, []).append(f"{fam.name}/{impl.name}")
                if impl.name in default_sources:
                    default.add(f)
    out = []
    for f, who in sorted(needs.items()):
        users = ", ".join(dict.fromkeys(who))
        out.append(Finding(f"cpu: {f}", True if f in flags else (False if f in default else None),
                           "present" if f in flags else "absent",
                           "" if f in flags else f"{users} will be skipped on this CPU; run them on a machine with {f}",
                           affects="variants"))
    return out


def _feature_groups() -> list[Finding]:
    """The subsets of each feature group of the host's ISA the CPU has (data/isas.toml `feature_groups`, x86-64:
    AVX-512 F, VL, BW, ...: the AVX-512 variants need F, VL and BW, -march=native builds may use the rest).
    Informs only."""
    from . import isa
    from .errors import PqsimdError

    try:
        groups = isa.host().feature_groups or {}
    except PqsimdError:
        return []
    out = []
    for name, prefix in groups.items():
        have = sorted(f.removeprefix(prefix).lstrip("_").upper() for f in machine.cpu_flags() if f.startswith(prefix))
        hidden = sorted(f for f in machine.hidden_cpu_flags() if f.startswith(prefix))
        note = f" ({machine.HIDE_ENV} hides {', '.join(hidden)})" if hidden else ""
        if have:
            out.append(Finding(f"cpu: {name} subsets", None, f"{', '.join(have)}{note}"))
        else:
            out.append(Finding(f"cpu: {name} subsets", None, f"none{note}",
                               f"variants that need {name} are skipped here, one line each; the rest of a study runs"))
    return out


def _timer() -> list[Finding]:
    """Which clock the driver gets on this host: the TSC on x86-64; on aarch64 (data/isas.toml
    [isa.aarch64.doctor]) the cycle counter when user access is enabled, else the generic timer,
    and how to enable it."""
    from . import isa
    from .errors import PqsimdError

    try:
        host = isa.host()
    except PqsimdError as e:
        return [Finding("timer", False, str(e), "run pqsimd on x86-64 or aarch64", affects="build")]
    d = host.doctor
    if not d:
        return _tsc()
    try:
        value = Path(d["sysctl"]).read_text().strip()
    except OSError:
        return [Finding("timer", None, d["without_access"], d["missing"], affects="time")]
    if value == d["enabled"]:
        return [Finding("timer", True, d["with_access"] + f" ({d['sysctl']} = {value})", affects="time")]
    return [Finding("timer", None, d["without_access"] + f" ({d['sysctl']} = {value})", d["remedy"], affects="time")]


def _clock_step() -> list[Finding]:
    """The step of the clock the driver reads here (its calibration): a sample of N steps is known to
    +-1/N, so 0.1% takes samples of 1,000 steps."""
    import json

    from .errors import PqsimdError

    try:
        from .build import build_driver

        driver = build_driver()
        p = subprocess.run([str(driver.path), "calibrate"], capture_output=True, text=True, timeout=60)
        cal = json.loads(p.stdout.splitlines()[0])
    except (PqsimdError, OSError, ValueError, IndexError, subprocess.TimeoutExpired) as e:
        return [Finding("timer: step", None, f"not measured ({str(e).splitlines()[0][:120] if str(e) else type(e).__name__})",
                        "build the driver (pqsimd run) and run doctor again", affects="time")]
    return [Finding("timer: step", True if cal["step"] == 1 else None, step_consequence(cal),
                    "" if cal["step"] == 1 else "nothing to do: pqsimd sizes samples in steps and widens every "
                                                "interval by its lattice step (groups.resolution)", affects="time")]


def step_consequence(cal: dict) -> str:
    """'tsc steps by 26 ticks (fenced readings: back-to-back deltas 52, 78; unfenced increments alone
    say 1): a sample must span >= 26,000 ticks for 0.1% resolution; batches aim at 52,000'."""
    from .run.sizing import AIM_CLOCK_STEPS, MIN_CLOCK_STEPS

    step = int(cal["step"])
    timer = (cal.get("timer") or {}).get("name", "the clock")
    seen = ", ".join(str(v) for v, _ in (cal.get("step_deltas") or {}).get("fenced", [])[:4])
    source = {"fenced": f"fenced readings: back-to-back deltas {seen}" if seen else "fenced readings",
              "unfenced": "its typical update: reads are faster than the clock",
              "quantum": "--timer-quantum"}.get(cal.get("step_from"), f"back-to-back deltas {seen}" if seen else "")
    unfenced = cal.get("step_unfenced")
    if isinstance(unfenced, int) and unfenced != step and cal.get("step_from") == "fenced":
        source += f"; unfenced increments alone say {unfenced}"
    hz = cal.get("tsc_hz") or 0
    need = MIN_CLOCK_STEPS * step
    secs = f" ≈ {need / hz * 1e6:.3g} µs" if hz else ""
    return (f"{timer} steps by {step} tick{'s' * (step != 1)}" + (f" ({source})" if source else "")
            + f": a sample must span ≥ {need:,} ticks{secs} for 0.1% resolution; batches aim at "
            f"{AIM_CLOCK_STEPS:,} steps ({AIM_CLOCK_STEPS * step:,} ticks)")


def _cross() -> list[Finding]:
    """For every other ISA: can `--isa` build, run and count it here (emulator, cross gcc, sysroot,
    the QEMU plugin's header)?"""
    from . import isa
    from .errors import PqsimdError

    out = []
    for name in isa.names():
        target = isa.get(name)
        if target.native:
            continue
        lacking = [w for w, ok in ((target.qemu, shutil.which(target.qemu)),
                                   (f"{target.gnu_triple}-gcc", shutil.which(f"{target.gnu_triple}-gcc")),
                                   (target.sysroot, Path(target.sysroot).is_dir()),
                                   *((c, shutil.which(c)) for c in target.cc)) if not ok]
        if lacking:
            out.append(Finding(f"--isa {name}", None, f"missing: {', '.join(lacking)}",
                               f"apt-get install {' '.join(target.packages)}"))
            continue
        if target.counting == "qemu-plugin":
            from .isa import qemu

            try:
                qemu.plugin_header()
            except PqsimdError as e:
                out.append(Finding(f"--isa {name}", None, "builds and runs; counting needs QEMU's plugin header", str(e)))
                continue
            try:  # the header alone is not the plugin: it must compile here (cached once it has)
                qemu.plugin()
            except PqsimdError as e:
                out.append(Finding(f"--isa {name}", None, "builds and runs; the QEMU counting plugin does not build",
                                   str(e)))
                continue
        builds = f"{', '.join(target.cc)} (its default --cc) and {target.gnu_triple}-gcc" if target.cc \
            else f"{target.gnu_triple}-gcc"
        lengths = (f" (--vlen {target.vector['min']}-{target.vector['max']}, default {target.vector['default']})"
                   if target.vector else "")
        out.append(Finding(f"--isa {name}", True, f"builds with {builds}, runs under {target.qemu} "
                                                  f"-cpu {target.qemu_cpu}{lengths}, counts with {target.counting}"))
    return out


def _tsc() -> list[Finding]:
    flags = machine.cpu_flags()
    inv = "constant_tsc" in flags and "nonstop_tsc" in flags
    return [Finding("tsc: invariant", inv, ", ".join(sorted(f for f in flags if "tsc" in f)) or "no TSC flags",
                    "" if inv else "TSC may change rate with frequency; prefer --metric instructions", affects="time")]


def _frequency() -> list[Finding]:
    info = machine.machine_info()
    out = []
    gov = info["governor"]
    out.append(Finding("cpufreq governor", gov in (None, "performance"), gov or "not exposed (VM or no cpufreq)",
                       "" if gov in (None, "performance") else "cpupower frequency-set -g performance", affects="time"))
    boost = info["boost"] if info["boost"] is not None else (
        None if info["intel_no_turbo"] is None else str(1 - int(info["intel_no_turbo"])))
    out.append(Finding("turbo/boost", boost in (None, "0"), {None: "not exposed", "0": "off", "1": "on"}.get(boost, boost),
                       "" if boost in (None, "0") else "echo 0 > /sys/devices/system/cpu/cpufreq/boost (or intel_pstate/no_turbo=1)",
                       affects="time"))
    smt = info["smt_active"]
    out.append(Finding("SMT", smt in (None, "0"), {None: "not exposed", "0": "off", "1": "on"}.get(smt, smt),
                       "" if smt in (None, "0") else "a sibling thread shares the core: disable SMT or keep the sibling idle",
                       affects="time"))
    virt = info["virtualization"]
    out.append(Finding("virtualization", None if virt else True, virt or "bare metal",
                       "virtualized: TSC ticks are not core cycles and a neighbour may share the core; use many jobs, "
                       "read medians with their CIs, and prefer --metric instructions for exact comparisons" if virt else "",
                       affects="time"))
    return out


def _tools() -> list[Finding]:
    out = []
    cargo = shutil.which("cargo") or (str(Path.home() / ".cargo/bin/cargo") if (Path.home() / ".cargo/bin/cargo").exists() else None)
    out.append(Finding("cargo", cargo is not None, cargo or "missing",
                       "" if cargo else "apt-get install cargo (or rustup), or use --source PATH", affects="build"))
    from . import catalog

    harness_cc = catalog.compilers_doc()["harness"]["cc"]
    path = shutil.which(harness_cc)
    out.append(Finding(f"driver compiler ({harness_cc})", path is not None, path or "missing",
                       "" if path else "apt-get install gcc (the fixed toolchain the driver is built with)",
                       affects="build"))
    missing = []
    for cc in catalog.compilers_doc()["known"]["debian12"]:
        path = shutil.which(cc)
        if path:
            ver = (subprocess.run([path, "--version"], capture_output=True, text=True).stdout.splitlines() or ["?"])[0]
            out.append(Finding(f"compiler {cc}", True, ver))
        else:
            missing.append(cc)
    if missing:
        out.append(Finding("compiler matrix", None, f"not installed: {', '.join(missing)}",
                           f"apt-get install {' '.join(missing)}  (any other toolchain: --cc id=/path/to/cc)"))
    from . import layout

    lld = layout.linker()
    out.append(Finding("lld (randomized layout)", lld is not None, lld or "missing",
                       "" if lld else f"apt-get install {layout.settings()['package']} (every timing job links its own "
                                      f"copies of the builds), or run with --layout fixed", affects="build"))
    vg = shutil.which("valgrind")
    out.append(Finding("valgrind", None if vg is None else True, vg or "missing",
                       "" if vg else "apt-get install valgrind (needed for --metric instructions and mix)",
                       affects="count"))
    mca = [m for m in ("llvm-mca", "llvm-mca-19", "llvm-mca-16") if shutil.which(m)]
    out.append(Finding("llvm-mca", None if not mca else True, ", ".join(mca) or "missing",
                       "" if mca else "apt-get install llvm-16 (the per-CPU cost model of the mechanism view)"))
    return out


def _hazards() -> list[Finding]:
    """Can `--metric hazards` trace this host's builds: its ISA's qemu-user, our plugin (QEMU's header), and
    which builds it cannot run (EVEX: QEMU 7.2 has no AVX-512)."""
    from . import isa
    from . import metrics as metrics_mod
    from .errors import PqsimdError
    from .isa import qemu

    name = f"--metric {metrics_mod.HAZARDS}"
    host = isa.host()
    if not shutil.which(host.qemu):
        return [Finding(name, None, f"{host.qemu} not found", f"apt-get install {' '.join(host.packages)}")]
    try:
        qemu.plugin()
    except PqsimdError as e:
        return [Finding(name, None, "QEMU's plugin is not built here", str(e))]
    evex = ("; AVX-512 (EVEX) builds are skipped: QEMU 7.2 cannot run them"
            if host.name == "x86_64" and "avx512f" in machine.cpu_flags() else "")
    return [Finding(name, True, f"traces each op under {host.qemu} -cpu {host.qemu_cpu} with the plugin's hazard model"
                                + evex)]


def _load() -> list[Finding]:
    """How busy the CPUs are now (/proc/loadavg, /proc/stat over half a second) and what runs on them:
    a timing job on a busy CPU waits for it, and what the run does then (--shared-cpu)."""
    from .run import cpuclaim

    load = cpuclaim.current_load()
    if load.quiet:
        return [Finding("machine load", True, load.describe(), affects="time")]
    return [Finding("machine load", None, f"busy: {load.describe()}",
                    f"{load.busy_cpus} of {len(load.busy)} CPU(s) run other programs: timing jobs will share them; "
                    f"by default (--shared-cpu adapt) a run keeps such jobs, marked, once the sizing probe and a job "
                    f"show the CPUs busy, and gives every verdict with and without them; for clean timings stop those "
                    f"programs or time later", affects="time")]


def findings() -> list[Finding]:
    found = _isa() + _feature_groups() + _timer() + _clock_step() + _frequency() + _load()
    try:
        from .counters import doctor_checks  # hardware counters and energy
        found += [Finding(*c, affects=_AFFECTS.get(c[0], "")) for c in doctor_checks()]
    except ImportError:
        pass
    return found + _tools() + _hazards() + _cross()


def host_name() -> str:
    """The CPU as doctor's title names it: its model name and the microarchitecture
    data/microarchitectures.toml knows it by (as a campaign names its machines)."""
    from .microarch import cpu_label

    return cpu_label({**machine.machine_info(), "cpu_model": machine.cpu_model()}, say_unknown=True)


def _why(f: Finding) -> str:
    return f"{f.name}: {f.detail}" if len(f.detail) <= 24 else f.name


def _fix(problems: list[Finding]) -> str:
    more = f" (and {len(problems) - 1} more in the table)" if len(problems) > 1 else ""
    return f"; fix: {problems[0].remedy}{more}" if problems[0].remedy else more


def verdict(found: list[Finding]) -> tuple[bool, str]:
    """One line from the checks: can a study be built here, can it time (ticks) and count
    (instructions), which variants cannot run, which optional metrics are absent; and whether this
    host is ready for the default study (time, every variant)."""
    def problems(what: str) -> list[Finding]:
        return [f for f in found if f.affects == what and f.ok is False]

    build, time, variants = problems("build"), problems("time"), problems("variants")
    count = [f for f in found if f.affects == "count" and f.ok is not True]
    if build:
        return False, f"not ready: {', '.join(map(_why, build))}{_fix(build)}"
    if time and count:
        return False, (f"not ready: cannot time reliably ({', '.join(map(_why, time))}) nor count instructions "
                       f"({', '.join(map(_why, count))}){_fix(time + count)}")
    if time:
        return False, f"can count, cannot time reliably: {', '.join(map(_why, time))}{_fix(time)}"
    line = "ready: can time and count" if not count else f"can time, cannot count: {', '.join(map(_why, count))}{_fix(count)}"
    caveats = [f.name for f in found if f.affects == "time" and f.ok is None]
    if caveats:
        line += f" (timing notes: {', '.join(caveats)})"
    if any(f.name == "machine load" and f.ok is None for f in found):
        line += "; other programs keep the CPUs busy now (machine load): timings share them"
    if variants:
        line += f"; {', '.join(map(_why, variants))}: what needs it is skipped here"
    absent = [f.name for f in found if f.affects in ("counters", "energy") and f.ok is not True]
    if absent:
        line += f"; not on this host: {', '.join(dict.fromkeys(absent))}"
    return not variants, line


def run_doctor(console: Console | None = None) -> bool:
    console = console or stdout_console(piped_width=PROSE_WIDTH)
    table = Table(title=f"pqsimd doctor: {host_name()}", title_justify="left")
    for col in ("check", "status", "detail", "remedy"):
        table.add_column(col, overflow="fold", no_wrap=col in ("check", "status"))
    found = findings()
    for f in found:
        status = {True: "[green]ok[/green]", False: "[red]problem[/red]", None: "[yellow]note[/yellow]"}[f.ok]
        table.add_row(f.name, status, f.detail, f.remedy)
    console.print(table)
    ok, line = verdict(found)
    style = "bold green" if ok and line.startswith("ready") else "bold yellow" if ok else "bold red"
    console.print(Text(line, style=style))
    return ok
