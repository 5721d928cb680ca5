"""The cost model of an op (llvm-mca, when installed): its hot basic blocks, runs of consecutive executed
instructions with the same net count (ending at a branch, call or return), heaviest first until
they cover >= 95% of the op's executed instructions, each a `# LLVM-MCA-BEGIN/END` region of one
llvm-mca invocation per (op, variant, CPU); per_call = sum over blocks of executions per call x
the block's cycles per iteration (steady state, mca's Total Cycles / Iterations). The job record
holds the llvm-mca version and command, each op's coverage, and per mnemonic the model's latency
and reciprocal throughput, so analysis can name instructions a CPU model makes slow. Without
llvm-mca the estimate is recorded unavailable, with the reason, and the study goes on.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from pathlib import Path
from typing import Any

from ..errors import PqsimdError
from .classify import classify, config
from .disasm import Disassemblies, Insn, Located

MCA_TIMEOUT_S = 600


def mca_path() -> str | None:
    env = os.environ.get("PQSIMD_LLVM_MCA")
    if env:
        return shutil.which(env) or (env if Path(env).is_file() and os.access(env, os.X_OK) else None)
    for name in config().mca.get("executables", ["llvm-mca"]):
        p = shutil.which(name)
        if p:
            return p
    return None


@cache
def _mca_version_text(path: str) -> str:
    out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
    return out.stdout + out.stderr


def mca_version(path: str) -> str:
    m = re.search(r"LLVM version ([0-9][^\s]*)", _mca_version_text(path))
    return f"llvm-mca {m.group(1)}" if m else "llvm-mca (version unknown)"


def mca_host_cpu(path: str) -> str | None:
    m = re.search(r"Host CPU:\s*(\S+)", _mca_version_text(path))
    return m.group(1) if m and m.group(1) not in ("generic", "(unknown)") else None


@cache
def mca_cpus_known(path: str, isa: str | None = None) -> tuple[str, ...]:
    triple = config(isa).mca["triple"]
    out = subprocess.run([path, f"-mtriple={triple}", "-mcpu=help"], input="", capture_output=True, text=True, timeout=60)
    text = out.stdout + out.stderr
    names = re.findall(r"^\s{2}([A-Za-z0-9_.-]+)\s+-\s+Select the", text, re.M)
    return tuple(names)


def check_mca_cpus(cpus: list[str], isa=None) -> None:
    """--mca-cpu names: CPUs llvm-mca knows for the study's ISA (`llvm-mca -mtriple=... -mcpu=help`),
    else the ISA's mix TOML list."""
    name = isa.name if isa is not None else None
    path = mca_path()
    valid = list(mca_cpus_known(path, name)) if path else []
    valid = valid or list(config(name).mca.get("known_cpus", []))
    for c in cpus:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", c):
            raise PqsimdError(f"--mca-cpu {c!r} is not a CPU name (e.g. znver3, skylake)")
        if c not in valid:
            where = "llvm-mca -mcpu=help" if path else "data/mix.toml [mca] known_cpus (llvm-mca is not installed)"
            near = [v for v in valid if v[:3] == c[:3]][:8]
            raise PqsimdError(f"--mca-cpu {c!r} is not a CPU llvm-mca models (from {where})"
                              + (f"; similar: {', '.join(near)}" if near else ""))
    dup = next((c for c in cpus if cpus.count(c) > 1), None)
    if dup:
        raise PqsimdError(f"--mca-cpu {dup} is listed twice")


@dataclass
class BasicBlock:
    located: list[Located]

    @property
    def count(self) -> int:
        return self.located[0].count

    @property
    def weight(self) -> int:
        return self.count * len(self.located)


_CONTROL = ("branch", "call_ret")


def basic_blocks(located: list[Located], dis: Disassemblies, isa: str | None = None) -> list[BasicBlock]:
    """Runs of consecutive instructions (in the object's disassembly order) with equal positive net
    counts, each ending at a branch, call or return."""
    excluded = set(config(isa).mca.get("exclude_classes", ["string", "unknown"]))
    blocks: list[BasicBlock] = []
    cur: list[Located] = []
    prev_idx = None
    for x in sorted((x for x in located if x.count > 0 and x.insn is not None), key=lambda x: (x.obj, x.addr)):
        d = dis.get(x.obj)
        idx = d.index(x.addr) if d else None
        if x.kind.cls in excluded:  # not modelled: ends the block, counts as not covered
            if cur:
                blocks.append(BasicBlock(cur))
                cur = []
            prev_idx = None
            continue
        if cur:
            p = cur[-1]
            if (p.obj != x.obj or idx is None or prev_idx is None or idx != prev_idx + 1 or p.count != x.count
                    or p.kind.cls in _CONTROL):
                blocks.append(BasicBlock(cur))
                cur = []
        cur.append(x)
        prev_idx = idx
    if cur:
        blocks.append(BasicBlock(cur))
    return blocks


def hot_blocks(blocks: list[BasicBlock], coverage: float, total: int | None = None) -> tuple[list[BasicBlock], float]:
    """The heaviest blocks until they cover `coverage` of the executed instructions (`total`,
    default: the blocks' own); (blocks, covered share)."""
    total = sum(b.weight for b in blocks) if total is None else total
    if total <= 0:
        return [], 1.0
    out, got = [], 0
    for b in sorted(blocks, key=lambda b: (-b.weight, b.located[0].obj, b.located[0].addr)):
        if got >= coverage * total:
            break
        out.append(b)
        got += b.weight
    return out, got / total


_DIRECT = re.compile(r"^(j[a-z]+|call|loop[a-z]*|jrcxz|jecxz|xbegin)\s+(0x)?[0-9a-f]+$")


def mca_line(insn: Insn, label: str, isa: str | None = None) -> str:
    """One instruction as llvm-mca's parser takes it: direct branch targets become a label (the
    ISA's `direct_branch` pattern in its mix TOML: group 1 kept, the target replaced), nops plain `nop`."""
    if insn.mnemonic == "nop" or classify(insn.mnemonic, insn.operands, isa).cls == "nop":
        return "nop"
    text = insn.text
    direct = config(isa).mca.get("direct_branch")
    m = re.match(direct, text) if direct else _DIRECT.match(text)
    if m:
        return f"{m.group(1)} {label}"
    return text


def mca_source(blocks: list[BasicBlock], isa: str | None = None) -> tuple[str, list[int]]:
    """The llvm-mca input: one region per block; returns (text, line number of each instruction)."""
    lines = [".intel_syntax noprefix" if config(isa).syntax == "intel" else "// pqsimd hot blocks"]
    where = []
    for i, b in enumerate(blocks):
        lines.append(f"# LLVM-MCA-BEGIN b{i}")
        lines.append(f".Lb{i}:")
        for x in b.located:
            lines.append(mca_line(x.insn, f".Lb{i}", isa))
            where.append(len(lines))
        lines.append(f"# LLVM-MCA-END b{i}")
    return "\n".join(lines) + "\n", where


def mca_command(path: str, cpu: str, source: str, isa: str | None = None) -> list[str]:
    c = config(isa).mca
    return [path, f"-mtriple={c['triple']}", f"-mcpu={cpu}",
            f"-iterations={int(c.get('iterations', 100))}", "-all-views=false", "-summary-view", "-instruction-info",
            source]


_REGION = re.compile(r"^\[(\d+)\] Code Region(?: - (\S+))?")
_INFO = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+\.\d+)\s")


def parse_mca(text: str, n_regions: int) -> list[dict[str, Any]]:
    """Per region: iterations, total cycles, and (uops, latency, rthroughput) per instruction."""
    regions: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    in_info = False
    for line in text.splitlines():
        m = _REGION.match(line)
        if m:
            cur = {"iterations": None, "cycles": None, "info": []}
            regions.append(cur)
            in_info = False
            continue
        if cur is None:
            if line.startswith("Iterations:"):  # a single unnamed region
                cur = {"iterations": None, "cycles": None, "info": []}
                regions.append(cur)
            else:
                continue
        if line.startswith("Iterations:"):
            cur["iterations"] = int(line.split(":")[1])
        elif line.startswith("Total Cycles:"):
            cur["cycles"] = int(line.split(":")[1])
        elif line.startswith("[1]") and "Instructions:" in line:
            in_info = True
        elif in_info:
            mi = _INFO.match(line)
            if mi:
                cur["info"].append((int(mi.group(1)), int(mi.group(2)), float(mi.group(3))))
            elif line.strip() == "":
                in_info = bool(not cur["info"])
    if len(regions) != n_regions:
        raise ValueError(f"llvm-mca reported {len(regions)} regions for {n_regions} blocks")
    return regions


class McaError(Exception):
    pass


# llvm-mca's answer per (llvm-mca, CPU, ISA, block text), for this process: a region is simulated on
# its own, and the same blocks recur in many ops and sets (Keccak's in every op that hashes; a
# polynomial kernel's in every parameter set), so each is simulated once per run of pqsimd.
_REGIONS: dict[tuple[str, str, str | None, str], tuple[dict, int]] = {}
_REGIONS_LOCK = threading.Lock()


def run_mca(path: str, cpu: str, blocks: list[BasicBlock], workdir: Path | None = None,
            isa: str | None = None) -> tuple[list[dict], int, list[str]]:
    """llvm-mca over the blocks (one region each): (regions, lines it could not parse and that were
    replaced by nop, command). Blocks simulated before in this process are not simulated again."""
    keys = [(path, cpu, isa, mca_source([b], isa)[0]) for b in blocks]
    with _REGIONS_LOCK:
        new = list(dict.fromkeys(k for k in keys if k not in _REGIONS))
    cmd = mca_command(path, cpu, "<blocks.s>", isa)
    if new:
        fresh = [blocks[keys.index(k)] for k in new]
        regions, replaced, cmd = _run_mca(path, cpu, fresh, workdir, isa)
        with _REGIONS_LOCK:
            for k, r, n in zip(new, regions, replaced):
                _REGIONS[k] = (r, n)
    got = [_REGIONS[k] for k in keys]
    return [r for r, _ in got], sum(n for _, n in got), cmd


def _run_mca(path: str, cpu: str, blocks: list[BasicBlock], workdir: Path | None = None,
             isa: str | None = None) -> tuple[list[dict], list[int], list[str]]:
    """llvm-mca over the blocks, one region each: (regions, lines replaced by nop per block, command)."""
    source, where = mca_source(blocks, isa)
    lines = source.split("\n")
    block_of = {}  # line number -> index of its block
    k = 0
    for i, b in enumerate(blocks):
        for _ in b.located:
            block_of[where[k]] = i
            k += 1
    replaced = [0] * len(blocks)
    with tempfile.TemporaryDirectory(prefix="pqsimd-mca-", dir=workdir) as tmp:
        f = Path(tmp) / "blocks.s"
        for _attempt in range(4):
            f.write_text("\n".join(lines))
            cmd = mca_command(path, cpu, str(f), isa)
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=MCA_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                raise McaError(f"llvm-mca did not finish in {MCA_TIMEOUT_S} s") from None
            if proc.returncode == 0:
                try:
                    return parse_mca(proc.stdout, len(blocks)), replaced, cmd
                except ValueError as e:
                    raise McaError(f"unexpected llvm-mca output ({e})") from None
            bad = {int(m.group(1)) for m in re.finditer(rf"^{re.escape(str(f))}:(\d+):\d+: error", proc.stderr, re.M)}
            bad &= set(where)
            if not bad:
                tail = " ".join(proc.stderr.strip().splitlines()[:2])[:300]
                raise McaError(f"llvm-mca failed ({tail or f'exit code {proc.returncode}'})")
            for ln in bad:  # an instruction its parser does not take: a nop in its place, counted
                lines[ln - 1] = "nop"
                replaced[block_of[ln]] += 1
        raise McaError("llvm-mca kept failing to parse the blocks")


def mca_estimate(path: str, cpu: str, located: list[Located], dis: Disassemblies, batch: int,
                 workdir: Path | None = None, isa: str | None = None) -> dict[str, Any]:
    """Cycles per call of one op on one CPU model, and what the model says per mnemonic."""
    c = config(isa).mca
    executed = sum(x.count for x in located if x.count > 0)
    blocks, covered = hot_blocks(basic_blocks(located, dis, isa), float(c.get("coverage", 0.95)), executed)
    if not blocks:
        return {"cycles_per_call": 0.0, "coverage": covered, "blocks": 0, "replaced": 0, "mnemonics": {}, "top_blocks": []}
    regions, replaced, cmd = run_mca(path, cpu, blocks, workdir, isa)
    total = Fraction(0)
    per_mn: dict[str, list[float]] = {}
    tops = []
    for b, r in zip(blocks, regions):
        if not r["iterations"] or r["cycles"] is None:
            raise McaError("llvm-mca output without iterations or cycles")
        per_iter = Fraction(r["cycles"], r["iterations"])
        total += Fraction(b.count, batch) * per_iter
        tops.append([Path(b.located[0].obj).name, b.located[0].insn.function, hex(b.located[0].addr), len(b.located),
                     b.count / batch, float(per_iter)])
        if len(r["info"]) != len(b.located):
            continue
        for x, (uops, lat, rthr) in zip(b.located, r["info"]):
            s = per_mn.setdefault(x.insn.mnemonic, [0.0, 0.0, 0.0, 0.0])
            n = x.count / batch
            s[0] += n
            s[1] += n * lat
            s[2] += n * rthr
            s[3] = max(s[3], lat)
    tops.sort(key=lambda t: -t[4] * t[5])
    mn = {k: {"count": v[0], "latency": v[1] / v[0] if v[0] else 0.0, "rthroughput": v[2] / v[0] if v[0] else 0.0,
              "max_latency": v[3]} for k, v in sorted(per_mn.items(), key=lambda kv: -kv[1][0])}
    return {"cycles_per_call": float(total), "coverage": covered, "blocks": len(blocks), "replaced": replaced,
            "mnemonics": mn, "top_blocks": tops[:10], "command": cmd[:-1] + ["<blocks.s>"]}


def resolve_mca_cpus(study) -> tuple[list[str], str | None, str | None]:
    """(CPUs to estimate, llvm-mca path, why there is no estimate). No --mca-cpu: the host's CPU
    as llvm-mca names it."""
    path = mca_path()
    if path is None:
        return [], None, ("llvm-mca not found on PATH (it is in Debian's llvm-N package, e.g. "
                          "apt-get install llvm-16; or set PQSIMD_LLVM_MCA)")
    cpus = list(getattr(study, "mca_cpus", None) or [])
    isa = getattr(study, "isa", None)
    if not cpus and isa and config(isa).isa != config().isa:
        return [], path, f"no --mca-cpu given: name the {isa} cores to model (e.g. {', '.join(config(isa).mca.get('known_cpus', [])[:4])})"
    if not cpus:
        host = mca_host_cpu(path)
        if host is None:
            return [], path, "no --mca-cpu given and llvm-mca does not know this host's CPU"
        cpus = [host]
    return cpus, path, None
