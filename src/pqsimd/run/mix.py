"""The dynamic instruction mix of one call of each op, and a cost model of it (`--metric mix`).

Callgrind with per-instruction counts (`--dump-instr=yes`), toggled on pqsimd_measure exactly as
the instructions metric is (run/instructions.py), two runs of N1 < N2 calls per op. Per executed
instruction (object, address) the difference Ir(N2) - Ir(N1) counts what N2 - N1 calls executed,
from every object: the variant, the driver, libc (PQClean's fips202 calls malloc/free). The
family's self-check op (an empty function) is counted the same way and subtracted address by
address, so the loop's own instructions cancel and, summed over all addresses, every op reads
exactly the instructions metric: per call = (sum of the op's differences - the self-check's) /
(N2 - N1). Callgrind's `calls=` lines are followed by the call's *inclusive* cost; those lines
are skipped, so only self costs are summed (and the sum is checked against callgrind's total).

Each address is mapped to its instruction through `objdump -d -M intel` of the object callgrind
names in `ob=` (addresses in callgrind.out are the object's link-time addresses, what objdump
prints; disassemblies are cached per object path and sha256) and classified by mnemonic with
data/mix.toml (classes, memory-only moves as loads/stores, lane-crossing permutes). The vector
width (0 scalar, 128, 256, 512) is the instruction's widest vector operand.

Raw file DIR/raw/<variant>.<compiler>.<scheme>.mix.parquet, rows per op:
    mix.class.<class>                         one per class of data/mix.toml (0 when none executed)
    mix.mnemonic.<mnemonic>.<width>.<class>   one per executed (mnemonic, width, class)
    mca.<cpu>                                 llvm-mca's cycles per call, per --mca-cpu
batch = N2 - N1, raw = net executions over the batch (exact integer), per_call = raw / batch
(exact for ops whose work does not change between calls), spin = repeat (0), rep = 0. The class
rows of an op sum to its mnemonic rows and to its instructions metric.

The cost model (llvm-mca) is run/costmodel.py; instructions are classified by run/classify.py,
located by run/disasm.py, counted by run/profiles.py (callgrind) or the ISA's backend (run/backends.py).
"""

from __future__ import annotations

import hashlib
import socket
from collections import Counter, defaultdict
from datetime import datetime, timezone
from fractions import Fraction
from pathlib import Path
from typing import Any

from rich.console import Console

from .. import machine, store
from ..errors import tagged
from ..studydir import StudyDir
from . import instructions as ins
from . import stepcount
from .classify import config, mix_file, mix_width
from .costmodel import McaError, mca_estimate, mca_host_cpu, mca_version, resolve_mca_cpus
from .disasm import Disassemblies, Located, guest_disassembly, locate, objdump_path
from .backends import GUEST, N1, N2, Callgrind, emulation, for_study
from .callgrind import PROFILE_ARGS
from .metrics import per_build_jobs
from .profiles import ProfilePair, measure_profiles, net_counts
from .. import metrics as metrics_mod

METRIC = metrics_mod.MIX
REPEATS = 1
CLASS_PREFIX = "mix.class."
MNEMONIC_PREFIX = "mix.mnemonic."
MCA_PREFIX = "mca."

def mix_of(located: list[Located], isa: str | None = None, vlen: int | None = None) -> tuple[dict[str, int], dict[tuple[str, int, str], int], dict[tuple[str, int, str], bool]]:
    """(net executions per class, per (mnemonic, width, class)), and lane crossing per mnemonic key;
    `vlen`: the study's vector length, the width of a vector-length-agnostic register."""
    classes: dict[str, int] = {c: 0 for c in config(isa).classes}
    mnemonics: dict[tuple[str, int, str], int] = defaultdict(int)
    crossing: dict[tuple[str, int, str], bool] = {}
    for x in located:
        mn = x.insn.mnemonic if x.insn else "?"
        key = (mn, mix_width(x.kind.width, vlen), x.kind.cls)
        classes[x.kind.cls] = classes.get(x.kind.cls, 0) + x.count
        mnemonics[key] += x.count
        crossing[key] = x.kind.lane_crossing
    return classes, {k: v for k, v in mnemonics.items() if v}, crossing


def mnemonic_metric(mnemonic: str, width: int, cls: str) -> str:
    return f"{MNEMONIC_PREFIX}{mnemonic}.{width}.{cls}"


def parse_mnemonic_metric(metric: str) -> tuple[str, int, str] | None:
    if not metric.startswith(MNEMONIC_PREFIX):
        return None
    rest = metric[len(MNEMONIC_PREFIX):]
    parts = rest.rsplit(".", 2)
    if len(parts) != 3 or not parts[1].isdigit():
        return None
    return parts[0], int(parts[1]), parts[2]


def functions_of(located: list[Located], batch: int, top: int = 8) -> list[list[Any]]:
    """The functions that execute most of an op's instructions: [object, function, per call]."""
    agg: Counter = Counter()
    for x in located:
        if x.count > 0:
            agg[(Path(x.obj).name, x.insn.function if x.insn else "?")] += x.count
    return [[o, f, n / batch] for (o, f), n in agg.most_common(top)]


def pending(sd: StudyDir, study, jobs: list) -> list:
    """Jobs not finished (StudyDir.finished), or finished without an estimate for a CPU the study
    now asks for (when llvm-mca can give it)."""
    cpus, path, _why = resolve_mca_cpus(study)
    out = []
    for j in jobs:
        if not sd.finished(j.id, j.binaries):
            out.append(j)
            continue
        if path is not None and cpus:
            rec = store.read_job_record(sd.raw_path(j.id)) or {}
            have = set((rec.get("mca") or {}).get("requested") or [])
            if not set(cpus) <= have:
                out.append(j)
    return out


def build_rows(build, scheme: str, jid: str, per_op: dict[str, dict[str, Any]]) -> Any:
    rows: dict[str, list[Any]] = {k: [] for k in ("op", "metric", "spin", "batch", "raw", "per_call")}

    def add(op, metric, batch, raw, per_call):
        rows["op"].append(op)
        rows["metric"].append(metric)
        rows["spin"].append(0)
        rows["batch"].append(batch)
        rows["raw"].append(raw)
        rows["per_call"].append(per_call)

    for op, r in per_op.items():
        batch = r["batch"]
        for cls, n in r["classes"].items():
            add(op, f"{CLASS_PREFIX}{cls}", batch, n, n / batch)
        for (mn, width, cls), n in sorted(r["mnemonics"].items(), key=lambda kv: (-kv[1], kv[0])):
            add(op, mnemonic_metric(mn, width, cls), batch, n, n / batch)
        for cpu, est in r.get("mca", {}).items():
            if isinstance(est, dict) and "cycles_per_call" in est:
                add(op, f"{MCA_PREFIX}{cpu}", batch, None, est["cycles_per_call"])
    return store.raw_table(rows, {"scheme": scheme, "variant": build.variant, "compiler": build.compiler.id,
                                  "job": jid, "job_index": 0, "rep": 0, "pos": 0, "warmup": False})


def _frac(n: int, d: int) -> str:
    f = Fraction(n, d)
    return str(f.numerator) if f.denominator == 1 else f"{f.numerator}/{f.denominator}"


def analyse_job(build, scheme: str, ops: list[str], self_check: str | None, pairs: dict[str, ProfilePair],
                mca_cpus: list[str], mca: str | None, workdir: Path | None = None,
                isa: str | None = None, vlen: int | None = None) -> tuple[dict[str, dict], dict]:
    """Per op: the net mix (classes, mnemonics), its top functions and the cost-model estimates;
    and what the job record says about it."""
    dis = Disassemblies()
    texts = {a: x for p in pairs.values() if p.texts for a, x in p.texts.items()}
    if texts:  # the backend disassembled what ran (QEMU): no objdump of objects
        dis.by_object[GUEST] = guest_disassembly(texts, config(isa))
    base = pairs.get(self_check) if self_check else None
    per_op: dict[str, dict[str, Any]] = {}
    mca_info: dict[str, Any] = {"cpus": {}, "failed": {}}
    for op in ops:
        pair = pairs[op]
        net = net_counts(pair, base if op != self_check else pair)
        located = locate(net, dis, isa)
        classes, mnemonics, crossing = mix_of(located, isa, vlen)
        r = {"batch": pair.batch, "classes": classes, "mnemonics": mnemonics, "crossing": crossing,
             "functions": functions_of(located, pair.batch), "total": sum(classes.values()), "mca": {}}
        for cpu in mca_cpus:
            try:
                est = mca_estimate(mca, cpu, located, dis, pair.batch, workdir, isa)
            except McaError as e:
                mca_info["failed"].setdefault(cpu, {})[op] = str(e)
                continue
            r["mca"][cpu] = est
            mca_info["cpus"].setdefault(cpu, {})[op] = {k: v for k, v in est.items() if k != "command"}
            if est.get("command"):
                mca_info.setdefault("command", est["command"])
        per_op[op] = r
    return per_op, {"objects": dis.shas(), "mca": mca_info}


def _set_manifest(sd: StudyDir, info: dict) -> None:
    sd.update_manifest(lambda m: m.setdefault("metrics", {}).__setitem__(METRIC, info))


def run(sd: StudyDir, study, ctx) -> bool:
    """The mix metric's runner (run/metrics.py), with the study's ISA's counting backend."""
    jobs = per_build_jobs(sd, study, ctx, METRIC)
    return execute(sd, study, jobs, pending(sd, study, jobs), ctx.console, backend=for_study(study))


def execute(sd: StudyDir, study, jobs: list, todo: list, console: Console | None = None, backend=None) -> bool:
    """The instruction mix (and cost model) of every (build, scheme) job not yet finished; False if one failed."""
    console = console or Console(stderr=True, highlight=False)
    backend = backend or Callgrind()
    isa = getattr(study, "isa", None) or None
    callgrind = backend.name == Callgrind.name
    version = backend.version()
    cpus, mca, mca_why = resolve_mca_cpus(study)
    how = ("callgrind --dump-instr=yes inside pqsimd_measure, per-address (Ir(N2) - Ir(N1)) minus the "
           "self-check op's, mapped to objdump -M intel" if callgrind else
           f"{backend.name} hist=on between the markers, per-address (I(N2) - I(N1)) minus the self-check op's, "
           f"with QEMU's disassembly")
    info: dict[str, Any] = {
        "status": "ok", "tool": version, "backend": backend.name, "isa": isa,
        "objdump": objdump_path() if callgrind else None,
        "method": f"{how}, classified by data/{mix_file(isa)}",
        "n1": N1, "n2": N2, "repeats": REPEATS, "skipped": {}, "failed": {},
        "mca": {"status": "ok" if mca and cpus else "unavailable", "cpus": cpus,
                "tool": mca_version(mca) if mca else None, "path": mca, **({"reason": mca_why} if mca_why else {})},
    }
    if version is None or (callgrind and objdump_path() is None):
        reason = (backend.missing if version is None
                  else "objdump not found on PATH (install it: apt-get install binutils)")
        console.print(tagged("mix unavailable", "red", f": {reason}"))
        _set_manifest(sd, {**info, "status": "unavailable", "reason": reason})
        return False
    if mca_why:
        console.print(tagged("mix: no cost-model estimate", "yellow", f"({mca_why}); the instruction mix goes on"), soft_wrap=True)
    console.print(f"mix ({version}{', ' + info['mca']['tool'] + ' for ' + ', '.join(cpus) if mca and cpus else ''}): "
                  f"{len(todo)} jobs to run, {len(jobs) - len(todo)} already finished")
    ok = ins.run_per_op(sd, study, todo, console, info, metric=METRIC, label=f"{backend.name} mix runs", repeats=1,
                        measure=lambda d, lib, s, ops: measure_profiles(d, lib, s, ops, backend=backend),
                        write=lambda j, res, started: _write_job(sd, study, j, {op: (ps[0] if ps else None)
                                                                                for op, ps in res.items()},
                                                                 started, version, cpus, mca, backend))
    if info["failed"]:
        info["status"] = "partial"
    _set_manifest(sd, info)
    return ok



def _write_job(sd: StudyDir, study, job, res: dict[str, ProfilePair | None], started: str, version: str,
               cpus: list[str], mca: str | None, backend=None) -> Path:
    from ..isa import mca as mca_models
    backend = backend or Callgrind()
    isa = getattr(study, "isa", None) or None
    cfg = config(isa)
    b, scheme = job.info["build"], job.info["scheme"]
    cal = ins.calibration_op(scheme)
    self_check = cal[0] if cal else None
    ops = ins.counted_ops(sd, study, job)
    pairs = {op: p for op, p in res.items() if p is not None}
    per_op, extra = analyse_job(b, scheme, list(dict.fromkeys([*([self_check] if self_check else []), *ops])),
                                self_check, pairs, cpus if mca else [], mca, isa=isa,
                                vlen=getattr(study, "vlen", None))
    table = build_rows(b, scheme, job.id, {op: per_op[op] for op in ops})
    lib = sd.variant_path(b.id)
    mca_rec = extra["mca"]
    record = {
        "id": job.id, "variant": b.variant, "compiler": b.compiler.id, "build": b.id, "scheme": scheme, "index": 0,
        "metric": METRIC, "cpu": None, "hostname": socket.gethostname(), "cpu_model": machine.cpu_model(),
        **emulation(backend),
        "calibration": {"overhead": 0, "unit": "instructions", "self_check": self_check,
                        "self_check_per_call": (_frac(sum(pairs[self_check].diff().values()), pairs[self_check].batch)
                                                if self_check in pairs else None)},
        "binaries": {b.id: store.sha256_file(lib)}, "isa": cfg.isa,
        **_profiled_by(backend, sd.driver_path, lib, scheme, version),
        "objdump": ([objdump_path(), "-d", "-w", "-M", "intel", "--no-show-raw-insn", "<object>"]
                    if backend.name == Callgrind.name else None),
        "objects": extra["objects"], "classes": list(cfg.classes), "mix_toml": mix_file(isa),
        "mix_toml_sha256": hashlib.sha256(cfg.text.encode()).hexdigest(),
        "n1": N1, "n2": N2, "repeats": REPEATS,
        "per_call_exact": {op: _frac(per_op[op]["total"], per_op[op]["batch"]) for op in ops},
        "lane_crossing": sorted({mn for op in ops for (mn, _w, _c), x in per_op[op]["crossing"].items() if x}),
        "functions": {op: per_op[op]["functions"] for op in ops},
        "mca": {
            "tool": mca_version(mca) if mca else None, "path": mca, "host_cpu": mca_host_cpu(mca) if mca else None,
            "requested": list(cpus), "command": mca_rec.get("command"),
            "coverage_target": float(cfg.mca.get("coverage", 0.95)),
            "iterations": int(cfg.mca.get("iterations", 100)), "triple": cfg.mca["triple"],
            "models": {cpu: mca_models.model(mca_version(mca), cfg.isa, cpu) for cpu in cpus} if mca else {},
            "cpus": {cpu: ops_ for cpu, ops_ in mca_rec["cpus"].items()},
            "failed": mca_rec["failed"],
            **({} if mca else {"status": "unavailable", "reason": resolve_mca_cpus(study)[2]}),
        },
        **ins.not_counted(sd, study, job),
        "started": started, "finished": datetime.now(timezone.utc).isoformat(),
    }
    return sd.write_raw(job.id, table, record)


def _profiled_by(backend, driver: Path, lib: Path, scheme: str, version: str) -> dict:
    """The record's tool, backend and command: the study's backend's, or the single-step counter's for a build
    the backend could not run (callgrind on AVX-512), with valgrind's reason."""
    why = getattr(backend, "stepped", {}).get(lib.name)
    if why is None:
        return {"tool": version, "backend": backend.name, "command": backend.command(driver, lib, scheme, PROFILE_ARGS)}
    step = stepcount.Stepper()
    return {"tool": "pqsimd stepcount (ptrace single-step, native)", "backend": step.name,
            "command": [*step.command(driver, lib, scheme)[:4], "--profile", *step.command(driver, lib, scheme)[4:]],
            "stepped_because": why}
