"""Simulated hazards per call (`--metric hazards`): the events a PMU would count that make an
instruction slow without adding instructions — store-forwarding failures, 4K aliasing, cache-line-split
loads and stores, legacy-SSE instructions run with dirty upper YMM halves — from the exact trace of each
op under qemu-user with our plugin's hazard model (harness/qemu/hazards.c; x86-64 under qemu-x86_64,
which runs AVX2 but not AVX-512: an EVEX build is skipped, said as such). No PMU is needed; the numbers
are the model's, exact and deterministic for a binary.

The counting protocol of the other counting metrics (run/backends.py: a warm call, then N1 and N2
calls, each in a process of its own):

    per_call(event) = (E(N2) - E(N1)) / (N2 - N1) [- the same for the family's self-check op]

(the bracket for the loads and stores, which the measure loop's own call and return add to; the hazards
of that loop are none). Where: each instruction with an event, mapped to its function in the library
(the driver prints the library's load address under PQSIMD_PRINT_BASE), per call the same way.

One raw file per (build, scheme): DIR/raw/<variant>.<compiler>.<scheme>.hazards.parquet, metric
`hazards.<event>`, its job record carrying the model (store buffer entries, window) and the sites.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timezone
from fractions import Fraction
from importlib import resources
from pathlib import Path
from typing import Any

from rich.console import Console

from .. import binary, machine, store
from .. import metrics as metrics_mod
from ..errors import CountError, PqsimdError
from ..isa import qemu
from ..studydir import StudyDir
from . import instructions as ins
from .backends import N1, N2, QemuPlugin, for_study
from .metrics import pending, per_build_jobs

METRIC = metrics_mod.HAZARDS
PREFIX = "hazards."  # raw rows: hazards.<event>
EVENTS = qemu.HAZARDS
SUBTRACTED = ("Ld", "St")  # the measure loop's call and return: work, not hazards
# The store buffer model: a store is in flight for its next `window` instructions while among the last
# `entries` stores (Golden Cove has 114 store-buffer entries, Zen 4 64: a store that waits to commit
# stays longer; one that commits at once, shorter). Recorded with every job; see hazards.c.
MODEL = {"entries": 64, "window": 64}
TOP_SITES = 8  # per op, the instructions with the most events
CALIBRATION_SOURCE = Path(str(resources.files("pqsimd").joinpath("harness/calibrate/hazards_x86_64.c")))
CALIBRATION_TIMEOUT_S = 120


def calibration_program() -> Path:
    """harness/calibrate/hazards_x86_64.c, built once beside the builds (with the count markers, for the tests)."""
    from ..build import host_tool  # late, upward: cached beside the builds (build.py owns that folder)

    return host_tool("hazard-calibration", "the hazard calibration", [CALIBRATION_SOURCE],
                     ["-O2", "-mavx2", "-std=gnu11", "-Wall"], hashed=(qemu.MARKER_HEADER,))


def calibrate(study) -> dict | None:
    """What each hazard costs on this host, measured (harness/calibrate/hazards_x86_64.c): {"per_event": {event:
    TSC ticks}, "loops": the raw medians, "cpu_model"}; None where it cannot be measured here (another ISA's
    study, or a host that is not x86-64). The times of the study are this host's, so its costs are too."""
    from .. import isa as isa_mod
    name = getattr(study, "isa", None) or isa_mod.host().name
    if name != "x86_64" or isa_mod.host().name != "x86_64":
        return None
    try:
        proc = subprocess.run([str(calibration_program())], capture_output=True, text=True,
                              timeout=CALIBRATION_TIMEOUT_S)
        loops = json.loads(proc.stdout)
    except (PqsimdError, subprocess.TimeoutExpired, ValueError, OSError) as e:
        return {"error": str(e).splitlines()[0] if str(e) else type(e).__name__}
    per = {e: max(0.0, float(v["per_event"])) for e, v in loops.items() if isinstance(v, dict)}
    return {"per_event": per, "unit": "TSC ticks", "loops": loops, "cpu_model": machine.cpu_model(),
            "source": "harness/calibrate/hazards_x86_64.c: each hazard's loop against its clean twin, median of 31 runs"}


@dataclass(frozen=True)
class Trace:
    """One run's hazard events and sites: {event: n}, {(function, offset, disassembly): {event: n}}."""

    events: dict[str, int]
    sites: dict[tuple[str, int, str], dict[str, int]]


@dataclass(frozen=True)
class HazardPair:
    t1: Trace
    t2: Trace
    n1: int = N1
    n2: int = N2

    @property
    def batch(self) -> int:
        return self.n2 - self.n1

    def exact(self, event: str) -> Fraction:
        return Fraction(self.t2.events[event] - self.t1.events[event], self.batch)

    def sites(self) -> list[dict[str, Any]]:
        """Per call at each site (N2 run minus N1 run), the busiest first."""
        out = []
        for key in set(self.t1.sites) | set(self.t2.sites):
            a, b = self.t1.sites.get(key, {}), self.t2.sites.get(key, {})
            per = {e: (b.get(e, 0) - a.get(e, 0)) / self.batch for e in qemu.SITE_EVENTS}
            if any(v > 0 for v in per.values()):
                out.append({"function": key[0], "offset": key[1], "disas": key[2], **per})
        out.sort(key=lambda s: (-sum(s[e] for e in qemu.SITE_EVENTS), s["function"], s["offset"]))
        return out

    def functions(self) -> list[dict[str, Any]]:
        """Per call in each function (every site summed), the busiest first: where an event spread over many
        instructions (a permutation's lanes) comes from."""
        by: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        for s in self.sites():
            for e in qemu.SITE_EVENTS:
                by[s["function"]][e] += s[e]
        out = [{"function": f, **per} for f, per in by.items()]
        out.sort(key=lambda s: (-sum(s[e] for e in qemu.SITE_EVENTS), s["function"]))
        return out


def trace(backend: QemuPlugin, driver: Path, library: Path, scheme: str, op: str, calls: int) -> Trace:
    env = {**os.environ, "PQSIMD_PRINT_BASE": "1"}
    try:
        got = qemu.count(backend.isa, [str(driver), "count", str(library), scheme, op, str(calls)], env=env,
                         so=backend.plugin, hazards=MODEL)
    except CountError as e:
        text = str(e)
        if "Illegal instruction" in text or "signal 4" in text:
            raise CountError(f"{op}: {backend.isa.qemu} cannot run this build ({text}): AVX-512 (EVEX) code is "
                             "beyond QEMU 7.2's x86 emulation", unsupported="an instruction the emulator lacks") from None
        raise CountError(f"{op}: {text}") from None
    base = next((int(line.split("\t")[1], 16) for line in got.stdout.splitlines() if line.startswith("pqsimd-base\t")), None)
    lib = binary.library(library)
    sites: dict[tuple[str, int, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for s in got.sites:  # a block translated twice lists its instructions twice: summed
        offset = s.pc - base if base is not None else s.pc
        f = lib.function_at(offset) if base is not None else None
        key = (f.name, offset - f.insns[0][0], s.disas) if f else ("?", offset, s.disas)
        for e, n in s.events.items():
            sites[key][e] += n
    return Trace(dict(got.hazards or {}), {k: dict(v) for k, v in sites.items()})


def measure_many(backend: QemuPlugin, driver: Path, library: Path, scheme: str, ops: list[str]) -> dict[str, HazardPair]:
    return {op: HazardPair(trace(backend, driver, library, scheme, op, N1),
                           trace(backend, driver, library, scheme, op, N2)) for op in ops}


def per_call(pairs: dict[str, list[HazardPair]], op: str, self_check: str | None) -> dict[str, Fraction]:
    p = pairs[op][0]
    base = pairs[self_check][0] if self_check and self_check in pairs else None
    return {e: p.exact(e) - (base.exact(e) if base and e in SUBTRACTED else 0) for e in EVENTS}


def build_table(build, scheme: str, jid: str, pairs: dict[str, list[HazardPair]], ops: list[str], self_check: str | None):
    rows: dict[str, list[Any]] = {k: [] for k in ("op", "metric", "spin", "batch", "raw", "per_call")}
    for op in ops:
        pc = per_call(pairs, op, self_check)
        p = pairs[op][0]
        for e in EVENTS:
            rows["op"].append(op)
            rows["metric"].append(PREFIX + e)
            rows["spin"].append(0)
            rows["batch"].append(p.batch)
            rows["raw"].append(p.t2.events[e] - p.t1.events[e])
            rows["per_call"].append(float(pc[e]))
    return store.raw_table(rows, {"scheme": scheme, "variant": build.variant, "compiler": build.compiler.id,
                                  "job": jid, "job_index": 0, "rep": 0, "pos": 0, "warmup": False})


def backend_of(study) -> QemuPlugin:
    """The plugin under the emulator of the study's ISA at its vector length (x86-64 too: the study's counting
    backend, callgrind, has no hazard model)."""
    return QemuPlugin(for_study(study).isa)


def run(sd: StudyDir, study, ctx) -> bool:
    backend = backend_of(study)
    jobs = per_build_jobs(sd, study, ctx, METRIC)
    return execute(sd, study, jobs, pending(sd, jobs), ctx.console, backend)


def execute(sd: StudyDir, study, jobs: list, todo: list, console: Console | None = None, backend=None) -> bool:
    console = console or Console(stderr=True, highlight=False)
    backend = backend or backend_of(study)
    version = backend.version()
    info: dict[str, Any] = {
        "status": "ok", "tool": version, "backend": backend.name, "model": MODEL,
        "method": "the plugin's hazard model (harness/qemu/hazards.c) inside the counted region, "
                  f"(E(N2) - E(N1)) / (N2 - N1), minus the self-check op's for {', '.join(SUBTRACTED)}",
        "n1": N1, "n2": N2, "repeats": 1, "skipped": {}, "failed": {},
    }
    if version is None:
        console.print(f"[red]hazards unavailable[/red]: {backend.missing}")
        sd.update_manifest(lambda m: m.setdefault("metrics", {}).__setitem__(METRIC, {**info, "status": "unavailable",
                                                                                      "reason": backend.missing}))
        return False
    console.print(f"hazards ({version}): {len(todo)} jobs to run, {len(jobs) - len(todo)} already finished")
    before = ((sd.read_manifest().get("metrics") or {}).get(METRIC) or {}).get("calibration")
    info["calibration"] = cal = calibrate(study) if todo or not before else before  # measured with the traces
    if cal is not before and cal and "per_event" in cal:
        console.print("hazard costs on this CPU (ticks per event, measured): "
                      + " · ".join(f"{e} {v:.1f}" for e, v in cal["per_event"].items()))
    elif cal is not before and cal:  # measured nowhere: the analysis costs them from data/hazards.toml, and says so
        console.print(f"[yellow]hazard costs not measured here[/yellow] ({cal['error']}): the analysis uses "
                      "data/hazards.toml's rough costs")
    ok = ins.run_per_op(sd, study, todo, console, info, metric=METRIC, label="hazard traces", repeats=1,
                        measure=lambda d, lib, s, ops: measure_many(backend, d, lib, s, ops),
                        write=lambda j, res, started: _write_job(sd, study, j, res, started, version, backend))
    if info["failed"]:
        info["status"] = "partial"
    sd.update_manifest(lambda m: m.setdefault("metrics", {}).__setitem__(METRIC, info))
    return ok


def _write_job(sd: StudyDir, study, job, res: dict[str, list[HazardPair]], started: str, version: str, backend) -> Path:
    b, scheme = job.info["build"], job.info["scheme"]
    cal = ins.calibration_op(scheme)
    self_check = cal[0] if cal else None
    ops = ins.counted_ops(sd, study, job)
    lib = sd.variant_path(b.id)
    record = {
        "id": job.id, "variant": b.variant, "compiler": b.compiler.id, "build": b.id, "scheme": scheme, "index": 0,
        "metric": METRIC, "model": MODEL, "cpu": None, "hostname": socket.gethostname(),
        "cpu_model": machine.cpu_model(), "emulator": {"qemu": backend.isa.qemu, "cpu": backend.isa.qemu_cpu},
        **({"vlen": backend.isa.vlen} if backend.isa.vlen is not None else {}),
        "calibration": {"overhead": 0, "unit": "events", "self_check": self_check},
        "binaries": {b.id: store.sha256_file(lib)}, "tool": version, "backend": backend.name,
        "command": [*qemu.emulator(backend.isa), "-plugin",
                    f"<count.so>,outfile=<out>{backend.isa.plugin_args()}{qemu.plugin_options(hazards=MODEL)}",
                    str(sd.driver_path), "count", str(lib), scheme, "<op>", "<N1|N2>"],
        "n1": N1, "n2": N2, "repeats": 1,
        "counts": {op: [[p.t1.events, p.t2.events] for p in pairs] for op, pairs in res.items()},
        "per_call_exact": {op: {e: ins._frac_text(v) for e, v in per_call(res, op, self_check).items()} for op in ops},
        "sites": {op: res[op][0].sites()[:TOP_SITES] for op in ops},
        "functions": {op: res[op][0].functions() for op in ops},
        **ins.not_counted(sd, study, job),
        "started": started, "finished": datetime.now(timezone.utc).isoformat(),
    }
    return sd.write_raw(job.id, build_table(b, scheme, job.id, res, ops, self_check), record)
