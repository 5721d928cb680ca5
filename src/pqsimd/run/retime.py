"""Cliffs proven and explained (issue 33): `pqsimd cliffs DIR --retime`.

For each flagged group (analyze/cliffs.py's rule, read from results/cliffs and results/copies) the
worst copy W and a typical copy T are made again from their job records (layout.relink_recorded; the
bytes must hash to the recorded sha256, else the group is not re-timed) and timed in fresh driver
processes, the study's own driver, the op's spins, reps, warm-up and batch from the study's sizing:

  alone     W and T, nothing else, spins alternating between them, each with its recorded stack
            offset; K processes, W loaded first in every other one (the copy)
  context   every copy of W's job as that job loaded them (its spec: builds, copies, stack offsets,
            batch sharing, order seed), the op only; K processes; W against its job's other copies
            (the context: the job's other copies, their mappings)

Then, for every cliff re-timed: **where the copies differ** (placement.py: every object of the op's
call tree in W and in T, modulo 64, 4096 and the page; their stack offsets), their **simulated events**
(run/sim.py's callgrind cache and branch model, the host's geometry, on both copies: I1/D1/LL misses
and mispredictions per call), and, when the alone test confirmed it, a **search**: hybrid copies with
W's section order and some of T's seeded paddings (text, data, bss, rodata) or T's stack offset, each
timed against T in K_SEARCH processes, name the knob that turns the cliff off (from W) and on (from
T); a padding knob is narrowed to one pad, then to the 16 bytes of that pad whose move turns the cliff
on and off, and the objects of the call tree that move with them are listed. Everything is written to
DIR/cliffs/<group>/ (target.json, spins.parquet, placement.parquet, sim.parquet); analyze reads it into
results/cliff_retime, cliff_placement, cliff_sim and cliff_search.

Measured (the re-timing and the search time real processes on this host) and simulated (callgrind) are
labelled as such everywhere. What callgrind does not simulate (the µop cache, the loop buffer, 4K
aliasing of loads with earlier stores, branch-target buffers, prefetchers) can only show up in the
measured part.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from .. import layout, placement, store
from ..analysis_settings import read_study_toml, resolve
from ..errors import PqsimdError, command
from ..stats.cliffs import SIZE, process_log_ratios, retime_interval, retime_verdict, search_state
from ..studydir import StudyDir, why_no_cliffs
from . import child, cpuclaim
from .spec import escape

CLIFFS_DIR = "cliffs"
K_SEARCH = 3
MAX_PROBES = 40


@dataclass
class CopyRef:
    """One laid-out copy as its job recorded it."""

    job: str
    index: int
    build: str
    seed: int
    stack: int
    sha256: str
    link: list[str]
    norm: float = math.nan
    path: Path | None = None

    def tag(self) -> str:
        return f"{self.job}#{self.index}"

    def record(self) -> dict:
        return {"job": self.job, "copy": self.index, "build": self.build, "seed": self.seed, "stack": self.stack,
                "sha256": self.sha256, "norm": self.norm}


@dataclass
class Target:
    metric: str
    scheme: str
    op: str
    variant: str
    compiler: str
    build: str
    worst: CopyRef
    typical: CopyRef
    partners: list[CopyRef] = field(default_factory=list)
    study_ratio: float = math.nan  # norm(W) / norm(T) in the study
    study_within: float = math.nan  # W against its job's other copies in the study

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        return (self.metric, self.scheme, self.op, self.variant, self.compiler)

    @property
    def tag(self) -> str:
        return ".".join((self.scheme, self.op, self.variant, self.compiler))


def cliffs_dir(sd: StudyDir) -> Path:
    return sd.path / CLIFFS_DIR


# --- choosing what to re-time ---------------------------------------------------------------------------

def _records(sd: StudyDir) -> dict[str, dict]:
    out = {}
    for rec in sd.job_records().values():
        if rec and rec.get("id"):
            out[str(rec["id"])] = rec
    return out


def _copy_ref(records: dict[str, dict], job: str, build: str, index: int, norm: float = math.nan) -> CopyRef:
    rec = records.get(job)
    if rec is None:
        raise PqsimdError(f"job {job}: no raw file with its record (the copies are made again from it)")
    entry = ((rec.get("layout") or {}).get("builds") or {}).get(build)
    if not entry:
        raise PqsimdError(f"job {job}: its record holds no laid-out copies of {build} (a fixed layout)")
    for i, c in enumerate(entry.get("copies", [])):
        if int(c.get("index", i)) == index:
            if c.get("fixed"):
                raise PqsimdError(f"job {job}: copy {index} of {build} was the build as linked ({c['fixed']})")
            return CopyRef(job, index, build, int(c["seed"]), int(c.get("stack") or 0), str(c.get("sha256") or ""),
                           list(c.get("link") or []), norm)
    raise PqsimdError(f"job {job}: its record has no copy {index} of {build}")


def targets(directory: Path, select: dict[str, str] | None = None, limit: int | None = None) -> list[Target]:
    """The flagged groups of a study (results/cliffs), worst first; `select` narrows them by scheme, op,
    variant, compiler (a selected group need not be flagged: its worst copy is re-timed anyway)."""
    from ..catalog import family_of
    from ..ids import build_id
    from ..results import read_table

    sd = StudyDir(directory)
    cl = read_table(directory, "cliffs", strict=False)
    cp = read_table(directory, "copies", strict=False)
    if not len(cl) or not len(cp):
        raise PqsimdError(f"{directory}: no results/cliffs: {why_no_cliffs(directory)}")
    rows = cl
    if select:
        for k, v in select.items():
            if v:
                rows = rows[rows[k].astype(str) == v]
        if not len(rows):
            what = ", ".join(f"{k} {v}" for k, v in select.items() if v)
            raise PqsimdError(f"no laid-out group matches {what} (results/cliffs.csv lists them)")
    else:
        rows = rows[rows["cliff"].astype(bool)]
    rows = rows.sort_values("worst_norm", ascending=False)
    if limit:
        rows = rows.head(limit)
    records = _records(sd)
    out = []
    for r in rows.itertuples():
        g = cp[(cp["metric"] == r.metric) & (cp["scheme"] == r.scheme) & (cp["op"] == r.op) &
               (cp["variant"] == r.variant) & (cp["compiler"] == r.compiler)]
        if not len(g):
            continue
        build = build_id(r.variant, r.compiler, family_of(r.scheme).name)
        w = g.loc[g["norm"].astype(float).idxmax()]
        same_job = g[(g["job"] == w["job"]) & (g["copy"] != w["copy"])]
        band = math.log1p(SIZE) / 2
        typical_row = None
        if len(same_job):
            p = same_job.loc[(np.log(same_job["norm"].astype(float))).abs().idxmin()]
            if abs(math.log(float(p["norm"]))) <= band:
                typical_row = p
        if typical_row is None:
            rest = g[~((g["job"] == w["job"]) & (g["copy"] == w["copy"]))]
            typical_row = rest.loc[(np.log(rest["norm"].astype(float))).abs().idxmin()]
        worst = _copy_ref(records, str(w["job"]), build, int(w["copy"]), float(w["norm"]))
        typical = _copy_ref(records, str(typical_row["job"]), build, int(typical_row["copy"]), float(typical_row["norm"]))
        partners = [_copy_ref(records, str(p["job"]), build, int(p["copy"]), float(p["norm"]))
                    for _, p in same_job.iterrows()]
        out.append(Target(r.metric, r.scheme, r.op, r.variant, r.compiler, build, worst, typical, partners,
                          float(w["norm"]) / float(typical_row["norm"]),
                          math.exp(float(w["within_job"])) if pd.notna(w["within_job"]) else math.nan))
    return out


# --- making copies again --------------------------------------------------------------------------------

def make_copy(ref: CopyRef, out: Path, padding: layout.Padding | None = None, check: bool = True) -> Path:
    """The copy again, from its record; PqsimdError when its bytes are not the recorded ones (a
    hybrid of a search, `padding` given, is not checked: it never existed)."""
    layout.relink_recorded(ref.link, ref.seed, out, padding)
    if check and ref.sha256 and store.sha256_file(out) != ref.sha256:
        raise PqsimdError(f"copy {ref.index} of {ref.build} in job {ref.job}, made again from its record, is not the "
                          f"copy that was timed (sha256 differs: another linker, compiler or objects here); "
                          f"not re-timed")
    return out


# --- timing ---------------------------------------------------------------------------------------------

@dataclass
class OpSizes:
    spins: int
    reps: int
    warmup: int
    batch: str  # a number or auto
    warmup_ns: int
    target: int


def op_sizes(sd: StudyDir, study, target: Target, record: dict | None) -> OpSizes:
    """The op's spins, reps, warm-up and batch as the study's jobs timed it (sizing.json), the warm-up
    before a turn and the batch target as the job's record says."""
    sizing = sd.read_sizing() or {}
    s = (((sizing.get("schemes") or {}).get(target.scheme) or {}).get("ops") or {}).get(target.op)
    cal = (record or {}).get("calibration") or {}
    target_ticks = int(cal.get("batch_target") or getattr(study, "batch_target", 1000) or 1000)
    if isinstance(s, dict):
        batch = s.get("batch", {}).get(target.build, "auto")
        return OpSizes(int(s["spins"]), int(s["reps"]), int(s.get("warmup", study.warmup)), str(batch),
                       int(study.warmup_ns), target_ticks)
    return OpSizes(int(study.spins), int(study.reps), int(study.warmup), str(study.batch), int(study.warmup_ns),
                   target_ticks)


def spec_text(scheme: str, libraries: list[Path], stacks: list[int], copies: int, op: str, sizes: OpSizes,
              batches: list[str], cpu: int, seed: int, batch_of: list[int] | None = None, what: str = "") -> str:
    lines = [f"# pqsimd cliffs {what}".rstrip(), "design paired", f"scheme {scheme}",
             *(f"variant {escape(p)}" for p in libraries),
             *([f"layouts {copies}"] if copies > 1 else []),
             f"stack {' '.join(map(str, stacks))}",
             *([f"batch_of {' '.join(map(str, batch_of))}"] if batch_of else []),
             f"cpu {cpu}", f"seed {seed}", f"warmup_ns {sizes.warmup_ns}", f"target {sizes.target}",
             f"op {op} {sizes.spins} {sizes.reps} {sizes.warmup} {' '.join(batches)}"]
    return "\n".join(lines) + "\n"


def spin_medians(tsv: str) -> pd.DataFrame:
    """Driver output → (entry, spin, value): the median per call of each entry's reps in each spin."""
    lines = tsv.splitlines()[1:]
    if not lines:
        return pd.DataFrame(columns=["entry", "spin", "value"])
    t = pd.DataFrame([ln.split("\t")[:8] for ln in lines if ln.strip()],
                     columns=["op", "v", "spin", "rep", "pos", "batch", "raw", "null"])
    for c in ("v", "spin", "batch", "raw", "null"):
        t[c] = pd.to_numeric(t[c])
    t = t[t["spin"] >= 0]
    t["per_call"] = (t["raw"] - t["null"]) / t["batch"]
    out = t.groupby(["v", "spin"], sort=True)["per_call"].median().reset_index()
    return out.rename(columns={"v": "entry", "per_call": "value"})


class Runner:
    """Driver processes of one re-timing, one at a time on one claimed CPU."""

    def __init__(self, sd: StudyDir, study, notify: Callable[[str], None] | None = None):
        from .job import choose_cpu

        self.sd, self.study, self.notify = sd, study, notify
        self.driver = sd.gated_driver()
        self.launcher = list(child.launcher_of(study))
        self.cpu = choose_cpu(study, notify, "the cliff re-timing").cpu
        self.commands: list[list[str]] = []

    def run(self, spec: str, who: str) -> pd.DataFrame:
        with tempfile.TemporaryDirectory(prefix="pqsimd-cliffs-") as tmp:
            path = Path(tmp) / "job.spec"
            path.write_text(spec)
            cmd = [*self.launcher, str(self.driver), "run", str(path)]
            with cpuclaim.claim(self.cpu, f"study {self.sd.path}, {who}", self.notify), cpuclaim.away_from(self.cpu):
                try:
                    proc = child.run(cmd, timeout=600)
                except child.TimedOut:
                    raise PqsimdError(f"{who}: the driver did not finish within 600 s") from None
            if proc.returncode:
                last = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
                raise PqsimdError(f"{who}: driver failed ({last})")
            self.commands.append([*self.launcher, str(self.driver), "run", "<spec>"])
            return spin_medians(proc.stdout)


def aslr() -> str:
    try:
        v = Path("/proc/sys/kernel/randomize_va_space").read_text().strip()
    except OSError:
        return "unknown"
    return {"0": "off", "1": "on (stack, mmap)", "2": "on (stack, mmap, heap)"}.get(v, v)


def _seed(k: int) -> int:
    return 0x5EED + 7919 * k


def alone_spins(runner: Runner, target: Target, w: Path, t: Path, sizes: OpSizes, k: int, label: str = "alone",
                w_stack: int | None = None, t_stack: int | None = None) -> pd.DataFrame:
    """K processes of W and T alone (W first in even ones): rows test, process, role, spin, value."""
    rows = []
    ws = target.worst.stack if w_stack is None else w_stack
    ts = target.typical.stack if t_stack is None else t_stack
    for p in range(k):
        first = p % 2 == 0
        libs, stacks = ([w, t], [ws, ts]) if first else ([t, w], [ts, ws])
        roles = ["worst", "typical"] if first else ["typical", "worst"]
        spec = spec_text(target.scheme, libs, stacks, 2, target.op, sizes, [sizes.batch] * 2, runner.cpu, _seed(p),
                         [0, 0], f"{label} {target.tag} process {p}")
        sm = runner.run(spec, f"cliffs {label} {target.tag} process {p}")
        sm["role"] = [roles[int(e)] for e in sm["entry"]]
        rows.append(sm.assign(test=label, process=p))
    return pd.concat(rows, ignore_index=True)


def context_spins(runner: Runner, target: Target, record: dict, work: Path, sizes: OpSizes, k: int,
                  made: dict[str, Path]) -> pd.DataFrame:
    """K processes of W's whole job as it loaded its copies (its builds, copies, stack offsets, batch
    sharing, order seed), the op only: rows test, process, role (worst, partner, other), spin, value."""
    lay = record.get("layout") or {}
    builds = list(record.get("builds") or [])
    n = int(lay.get("copies_per_job") or 1)
    libs, stacks, roles = [], [], []
    for b in builds:
        entry = (lay.get("builds") or {}).get(b) or {}
        for i, c in enumerate(entry.get("copies", [])):
            idx = int(c.get("index", i))
            ref = CopyRef(record["id"], idx, b, int(c["seed"]), int(c.get("stack") or 0), str(c.get("sha256") or ""),
                          list(c.get("link") or []))
            key = ref.tag() + "|" + b
            if key not in made:
                made[key] = make_copy(ref, work / f"{b}.{record['id']}.{idx}.so")
            libs.append(made[key])
            stacks.append(ref.stack)
            roles.append("worst" if (b == target.build and idx == target.worst.index) else
                         "partner" if b == target.build else "other")
    spec_lines = (record.get("spec") or "").splitlines()
    batch_of = next((ln.split()[1:] for ln in spec_lines if ln.startswith("batch_of ")), None)
    op_line = next((ln.split() for ln in spec_lines if ln.startswith(f"op {target.op} ")), None)
    if op_line is None:
        raise PqsimdError(f"job {record['id']}: its spec does not time {target.op}")
    batches = op_line[5:5 + len(libs)]
    seed = int(next((ln.split()[1] for ln in spec_lines if ln.startswith("seed ")), 1))
    rows = []
    for p in range(k):
        spec = spec_text(target.scheme, libs, stacks, n, target.op, sizes, batches, runner.cpu, seed,
                         [int(x) for x in batch_of] if batch_of else None, f"context {target.tag} process {p}")
        sm = runner.run(spec, f"cliffs context {target.tag} process {p}")
        sm["role"] = [roles[int(e)] for e in sm["entry"]]
        rows.append(sm.assign(test="context", process=p))
    return pd.concat(rows, ignore_index=True)


# --- explaining -------------------------------------------------------------------------------------------

def placements(target: Target, w: Path, t: Path, offsets: dict[str, dict[str, int]]) -> pd.DataFrame:
    """Every object of the op's call tree in W and T (placement.py), and one row per copy for its stack."""
    rows = []
    for role, lib in (("worst", w), ("typical", t)):
        img = placement.Image(lib)
        for r in placement.where(img, {target.op: offsets[role]}):
            rows.append(r | {"role": role})
        ref = target.worst if role == "worst" else target.typical
        rows.append({"op": target.op, "object": "(stack offset)", "kind": "stack", "addr": ref.stack, "size": 0,
                     "mod64": ref.stack % 64, "mod4096": ref.stack % 4096, "page": ref.stack // 4096, "lines": 0,
                     "role": role})
    return pd.DataFrame(rows)


def simulate(sd: StudyDir, study, target: Target, w: Path, t: Path) -> tuple[pd.DataFrame, dict]:
    """Simulated events per call (callgrind, the host's cache geometry) of the op in W and in T."""
    from .. import caches
    from .backends import for_isa
    from .sim import measure, not_simulated

    backend = for_isa(study.isa)
    info = {"backend": getattr(backend, "name", "?"), "geometry": caches.HOST, "not_simulated": not_simulated(backend),
            "stack": "the driver's count runs no stack offset: the copies' stack offsets are not simulated"}
    if not getattr(backend, "simulates", ()) or backend.version() is None:
        info["unavailable"] = getattr(backend, "missing", "no cache or branch model")
        return pd.DataFrame(columns=["role", "event", "per_call"]), info
    geometry = caches.get(caches.HOST)
    info["geometry"] = geometry.record()
    driver = sd.gated_driver()
    rows = []
    for role, lib in (("worst", w), ("typical", t)):
        try:
            p = measure(backend, geometry, driver, lib, target.scheme, target.op)
        except (RuntimeError, OSError, subprocess.SubprocessError, PqsimdError) as e:
            info["failed"] = f"{role}: {e}"
            return pd.DataFrame(columns=["role", "event", "per_call"]), info
        for e in p.events():
            rows.append({"role": role, "event": e, "per_call": float(p.exact(e))})
    return pd.DataFrame(rows), info


PAD_KINDS = ("text", "rodata", "data", "bss")
FIRST = (32, 2048)  # the first moves of a block: half a cache line (its line offset changes: splits, fetch
# blocks), then half a page with the line offset kept (page offsets: 4K aliasing, L1 sets)
SWEEP = (16, 48, 1024, 3072)  # then the block that turned the cliff off, through the other phases


@dataclass(frozen=True)
class Hybrid:
    """W's section order with some of its pads resized (a block of sections moved), or another stack
    offset."""

    pads: tuple  # (("text", (sizes...)), ("rodata", ...), ("data", ...), ("bss", ...))
    stack: int

    def padding(self, seed: int) -> layout.Padding:
        d = dict(self.pads)
        return layout.Padding(seed, list(d["text"]), {k: list(d[k]) for k in ("data", "bss", "rodata")}, self.stack)


def _pads(p: layout.Padding) -> tuple:
    return tuple((k, tuple(p.text) if k == "text" else tuple(p.data[k])) for k in PAD_KINDS)


class Search:
    """The placement search of one confirmed cliff, on W's own layout: its stack offset set to T's,
    then one block of sections at a time moved (the sections between two of W's seeded pads: the pad
    before grows by a shift, the pad after shrinks by as much, so nothing else moves), each hybrid timed
    against T alone in K_SEARCH processes. A move that turns the cliff off names the block; the block
    is then swept through other shifts (phases modulo 64 and 4096) and the call-tree objects it holds
    are listed with their placements where the cliff is on and where it is off."""

    def __init__(self, runner: Runner, target: Target, w_path: Path, t_path: Path, work: Path, sizes: OpSizes,
                 threshold: float, cliff: float, k: int = K_SEARCH):
        self.runner, self.target, self.t_path, self.work, self.sizes, self.k = runner, target, t_path, work, sizes, k
        self.threshold = threshold
        self.pw, self.pt = layout.Padding.of(target.worst.seed), layout.Padding.of(target.typical.seed)
        self.W = Hybrid(_pads(self.pw), target.worst.stack)
        self.cliff = cliff  # W / T as the alone test measured it
        self.probes: list[dict] = []
        self.spins: list[pd.DataFrame] = []
        self.made: dict[tuple, Path] = {}
        self.moves: list[tuple[str, set]] = []  # per probe: its state and the call-tree objects it moved
        self._base: pd.DataFrame | None = None
        self._objects: dict[tuple, pd.DataFrame] = {}
        self._n = 0
        self.driver = runner.driver
        self.launcher = runner.launcher

    def _path(self, h: Hybrid) -> Path:
        key = h.pads
        if key not in self.made:
            out = self.work / f"hybrid{len(self.made)}.so"
            same = h.pads == self.W.pads
            make_copy(self.target.worst, out, None if same else h.padding(self.target.worst.seed), check=same)
            self.made[key] = out
        return self.made[key]

    def probe(self, h: Hybrid, label: str) -> str:
        """'on' (H is slower than T beyond the threshold), 'off' (within it), '?' (undecided or out of probes)."""
        if self._n >= MAX_PROBES:
            return "?"
        self._n += 1
        sm = alone_spins(self.runner, self.target, self._path(h), self.t_path, self.sizes, self.k, f"search:{label}",
                         w_stack=h.stack)
        self.spins.append(sm)
        lr = process_log_ratios(sm["process"], sm["role"] == "worst", sm["value"])
        ratio, lo, hi = retime_interval(lr)
        state = search_state(lo, hi, self.threshold, self.cliff)
        moved = self._moved(h)
        self.probes.append({"step": len(self.probes), "label": label, "differs_from_worst": self._diff(h) or "none",
                            "stack": h.stack, "ratio": ratio, "ci_low": lo, "ci_high": hi, "state": state,
                            "objects_moved": ", ".join(f"{r.object} {r.mod4096_on}→{r.mod4096_off}"
                                                       for r in moved.itertuples())})
        self.moves.append((state, set(moved["object"]) | ({"(stack offset)"} if h.stack != self.W.stack else set())))
        return state

    def _diff(self, h: Hybrid) -> str:
        out = []
        for (k, a), (_, b) in zip(h.pads, self.W.pads):
            out += [f"{k} pad {i} {y}→{x} B" for i, (x, y) in enumerate(zip(a, b)) if x != y]
        if h.stack != self.W.stack:
            out.append(f"stack {self.W.stack}→{h.stack}")
        return ", ".join(out)

    def _blocks(self) -> list[tuple[str, int, int | None]]:
        """(kind, pad, next pad) in W's address order: the block is the sections between them."""
        lib = self.work / "labelled.so"
        layout.relink_recorded(self.target.worst.link, self.target.worst.seed, lib, labels=True)
        pads = {}
        for sym in placement.symbols(lib):
            if sym.name.startswith(layout.PAD_SYMBOL):
                kind, i = sym.name[len(layout.PAD_SYMBOL):].rsplit("_", 1)
                pads[(kind, int(i))] = sym.addr
        out = []
        for kind in PAD_KINDS:
            seq = sorted((a, i) for (k, i), a in pads.items() if k == kind)
            for n, (_, i) in enumerate(seq):
                out.append((kind, i, seq[n + 1][1] if n + 1 < len(seq) else None))
        return out

    def moved_block(self, kind: str, pad: int, nxt: int | None, shift: int) -> Hybrid | None:
        """W with the block after `pad` moved by `shift` bytes, the next pad shrunk by as much (a pad of
        n bytes takes max(n, 16): layout.Padding writes at least one byte, 16-aligned); the last block of a
        kind moves the sections after it too. None when the next pad is too small to give the bytes."""
        sizes = list(dict(self.W.pads)[kind])
        sizes[pad] = max(sizes[pad], 16) + shift
        if nxt is not None:
            left = max(sizes[nxt], 16) - shift
            if left < 16:
                return None
            sizes[nxt] = left
        return Hybrid(tuple((k, tuple(sizes) if k == kind else v) for k, v in self.W.pads), self.W.stack)

    def objects(self, h: Hybrid) -> pd.DataFrame:
        if h.pads in self._objects:
            return self._objects[h.pads]
        lib = self._path(h)
        off = layout.op_offsets(self.driver, lib, self.target.scheme, self.launcher)[self.target.op]
        self._objects[h.pads] = pd.DataFrame(placement.where(placement.Image(lib), {self.target.op: off}))
        return self._objects[h.pads]

    def run(self) -> dict:
        found: dict = {"stack": None, "block": None, "blocks_off": [], "on": [], "off": [], "candidates": [],
                       "note": ""}
        if self.target.typical.stack != self.W.stack:
            if self.probe(replace(self.W, stack=self.target.typical.stack), "worst with typical's stack offset") == "off":
                found["stack"] = {"on": self.W.stack, "off": self.target.typical.stack}
        blocks = []
        for kind, pad, nxt in self._blocks():
            for shift in FIRST:
                h = self.moved_block(kind, pad, nxt, shift)
                if h is None or not len(self._moved(h)):
                    continue  # no object of the op's call tree moves with this block: it cannot matter
                blocks.append((kind, pad, nxt))
                if self.probe(h, f"{kind} block after pad {pad} moved {shift} B") == "off":
                    found["blocks_off"].append({"kind": kind, "pad": pad, "next": nxt, "shift": shift})
                    break
        if found["blocks_off"]:
            b = found["blocks_off"][0]
            found["block"] = b | {"objects": sorted(set(self._moved(self.moved_block(b["kind"], b["pad"], b["next"],
                                                                                      b["shift"]))["object"]))}
            found["off"].append(b["shift"])
            found["on"].append(0)
            for shift in sorted(set(FIRST + SWEEP) - {b["shift"]}):
                hs = self.moved_block(b["kind"], b["pad"], b["next"], shift)
                if hs is None or not len(self._moved(hs)):
                    continue
                st = self.probe(hs, f"{b['kind']} block after pad {b['pad']} moved {shift} B")
                if st in ("on", "off"):
                    found[st].append(shift)
        offs = [m for st, m in self.moves if st == "off"]
        if offs:
            # an object that moved in every probe that turned the cliff off (the stack counts as one)
            found["candidates"] = sorted(set.intersection(*offs))
        if not found["blocks_off"] and not found["stack"]:
            found["note"] = (f"none of {len(set(blocks))} blocks of sections holding the op's objects (between two seeded "
                             "pads), moved alone, and not the stack offset turns the cliff off: it needs several "
                             "moved at once, lives in the section order, or the probes were undecided")
        return found

    def _moved(self, h: Hybrid) -> pd.DataFrame:
        """The call-tree objects whose address differs between W and the hybrid."""
        if self._base is None:
            self._base = self.objects(self.W).drop_duplicates(["object", "kind"]).set_index(["object", "kind"])
        if h.pads == self.W.pads:
            return pd.DataFrame(columns=["object", "kind", "mod4096_on", "mod4096_off"])
        d = self.objects(h).drop_duplicates(["object", "kind"]).set_index(["object", "kind"])
        both = self._base.join(d, lsuffix="_on", rsuffix="_off", how="inner")
        return both[both["addr_on"] != both["addr_off"]].reset_index()

    def moved(self, found: dict) -> pd.DataFrame:
        """Where every call-tree object sits at each shift of the named block that was probed (on or off);
        objects that never move are left out."""
        b = found.get("block")
        if not b:
            if found.get("stack"):
                return pd.DataFrame([{"object": "(stack offset)", "kind": "stack", "shift": 0, "state": st,
                                      "addr": found["stack"][st], "mod64": found["stack"][st] % 64,
                                      "mod4096": found["stack"][st] % 4096} for st in ("on", "off")])
            return pd.DataFrame()
        rows = []
        for state in ("on", "off"):
            for shift in found[state]:
                h = self.W if shift == 0 else self.moved_block(b["kind"], b["pad"], b["next"], shift)
                for r in self.objects(h).itertuples():
                    rows.append({"object": r.object, "kind": r.kind, "shift": shift, "state": state, "addr": r.addr,
                                 "mod64": r.mod64, "mod4096": r.mod4096})
        d = pd.DataFrame(rows)
        if not len(d):
            return d
        moves = d.groupby(["object", "kind"])["addr"].transform("nunique") > 1
        return d[moves].reset_index(drop=True)


# --- one target, and the command ----------------------------------------------------------------------------

def retime_target(sd: StudyDir, study, target: Target, processes: int, search: bool, simulate_events: bool,
                  notify: Callable[[str], None]) -> Path:
    out_dir = cliffs_dir(sd) / target.tag
    work = Path(tempfile.mkdtemp(prefix="work-", dir=cliffs_dir(sd)))
    records = _records(sd)
    started = datetime.now(timezone.utc).isoformat()
    try:
        w = make_copy(target.worst, work / "worst.so")
        t = make_copy(target.typical, work / "typical.so")
        runner = Runner(sd, study, notify)
        sizes = op_sizes(sd, study, target, records.get(target.worst.job))
        notify(f"cliffs: {target.tag}: W = job {target.worst.job} copy {target.worst.index} ({target.worst.norm:.2f}× "
               f"in the study), T = job {target.typical.job} copy {target.typical.index}; both made again from their "
               f"records, bytes as recorded; {processes} processes alone, {processes} in W's job")
        spins = [alone_spins(runner, target, w, t, sizes, processes)]
        made: dict[str, Path] = {}
        ctx_note = ""
        try:
            spins.append(context_spins(runner, target, records[target.worst.job], work, sizes, processes, made))
        except PqsimdError as e:
            ctx_note = str(e)
        driver = sd.gated_driver()
        launcher = list(child.launcher_of(study))
        offsets = {"worst": layout.op_offsets(driver, w, target.scheme, launcher)[target.op],
                   "typical": layout.op_offsets(driver, t, target.scheme, launcher)[target.op]}
        out_dir.mkdir(parents=True, exist_ok=True)
        placements(target, w, t, offsets).to_parquet(out_dir / "placement.parquet")
        sim_info: dict = {"skipped": "--no-sim"}
        if simulate_events:
            sim_df, sim_info = simulate(sd, study, target, w, t)
            sim_df.to_parquet(out_dir / "sim.parquet")
        alone = spins[0]
        lr = process_log_ratios(alone["process"], alone["role"] == "worst", alone["value"])
        cliff, lo, hi = retime_interval(lr)
        verdict = retime_verdict(lo, hi, study_threshold(sd))
        search_rec: dict = {"ran": False, "why": f"the alone test did not confirm the cliff ({verdict})"}
        if search and verdict == "confirmed":
            s = Search(runner, target, w, t, work, sizes, study_threshold(sd), cliff)
            found = s.run()
            moved = s.moved(found)
            spins += s.spins
            pd.DataFrame(s.probes).to_parquet(out_dir / "search.parquet")
            if len(moved):
                moved.to_parquet(out_dir / "moved.parquet")
            search_rec = {"ran": True, "found": found, "probes": len(s.probes), "processes_per_probe": s.k,
                          "padding": {"worst": _pads_dict(s.pw), "typical": _pads_dict(s.pt)}}
        elif not search:
            search_rec = {"ran": False, "why": "--no-search"}
        pd.concat(spins, ignore_index=True).to_parquet(out_dir / "spins.parquet")
        store.atomic_write_json(out_dir / "target.json", {
            "group": dict(zip(("metric", "scheme", "op", "variant", "compiler"), target.key)), "build": target.build,
            "worst": target.worst.record(), "typical": target.typical.record(),
            "partners": [p.record() for p in target.partners], "study_ratio": target.study_ratio,
            "study_within_job": target.study_within, "processes": processes, "sizes": sizes.__dict__,
            "context_note": ctx_note, "cpu": runner.cpu, "aslr": aslr(), "driver_sha256": store.sha256_file(driver),
            "commands": runner.commands[:1], "sim": sim_info, "search": search_rec,
            "started": started, "finished": datetime.now(timezone.utc).isoformat()})
        return out_dir
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _pads_dict(p: layout.Padding) -> dict:
    return {"text": list(p.text), **{k: list(v) for k, v in p.data.items()}, "stack": p.stack}


def study_threshold(sd: StudyDir) -> float:
    return float(resolve(sd.path, read_study_toml(sd.path)).threshold)


def retime(directory: Path, select: dict[str, str] | None = None, limit: int | None = 3, processes: int = 5,
           search: bool = True, simulate_events: bool = True, notify: Callable[[str], None] | None = None) -> list[Path]:
    """Re-time (and explain) the worst flagged groups of a study; returns their folders in DIR/cliffs/."""
    from .. import study as study_mod

    sd = StudyDir(directory)
    study = study_mod.load(sd)
    say = notify or (lambda line: None)
    todo = targets(directory, select, limit)
    if not todo:
        say("cliffs: no group is flagged; nothing to re-time (--scheme/--op/--variant re-times a group anyway)")
        return []
    cliffs_dir(sd).mkdir(parents=True, exist_ok=True)
    out = []
    for t in todo:
        out.append(retime_target(sd, study, t, processes, search, simulate_events, say))
    return out
