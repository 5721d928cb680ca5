"""The study directory, the only interface between stages: every path in it and every typed read
and write of it goes through StudyDir.

    DIR/study.toml          the resolved study (StudyDir.write_study / read_study_doc)
    DIR/plan.json           settings fixed at the first run, seed, job list (read_plan / write_plan)
    DIR/sizing.json         per-op spins/reps/batch chosen from a time budget (read_sizing / write_sizing)
    DIR/manifest.json       provenance (read_manifest / update_manifest: the one writer)
    DIR/bin/<build>.so      variants (shared objects) and DIR/bin/driver
    DIR/gate/<build>.json   correctness gate result per build
    DIR/excluded/<build>.<scheme>.json   a build that crashed or hung in a timing job or probe (exclude)
    DIR/raw/<job>.parquet   one per finished job (store.write_raw: temp name, then rename)
    DIR/superseded/         raw files of jobs that ran again (supersede): kept, never analysed
    DIR/logs/               driver stderr per job, SLURM task output
    DIR/slurm/              SLURM submissions
    DIR/results/            analyze
    DIR/report/             report
    DIR/.lock               held by the process that runs the study (lock())
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import tomllib
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator

from . import ids, store
from .errors import PqsimdError, command
from .model import LayoutMode, copies_per_job


def load_plan(plan: dict[str, Any]) -> dict[str, Any]:
    """plan.json as every reader takes it, older shapes upgraded here and nowhere else:
      version 1 (no `version`): the separate design's plan; read as written (analyze and report read it; a
        new measurement is refused by run/plan.update_plan)
      version 2: `settings` holds the measurement settings (study.measurement_settings)
      every version: `copies_per_job` (DERIVED: never written) from the settings' `layout` and `layouts`
        (model.copies_per_job), so no reader computes it again"""
    st = plan.get("settings") if isinstance(plan.get("settings"), dict) else {}
    plan["copies_per_job"] = copies_per_job(st.get("layout"), st.get("layouts"))
    return plan


DERIVED = ("copies_per_job",)  # what load_plan adds: not part of plan.json


class StudyDir:
    def __init__(self, path: Path | str):
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"StudyDir({str(self.path)!r})"

    # --- paths -----------------------------------------------------------------------------
    @property
    def study_toml(self) -> Path:
        return self.path / "study.toml"

    @property
    def manifest_json(self) -> Path:
        return self.path / "manifest.json"

    @property
    def plan_json(self) -> Path:
        return self.path / "plan.json"

    @property
    def sizing_json(self) -> Path:
        return self.path / "sizing.json"

    @property
    def raw_dir(self) -> Path:
        return self.path / "raw"

    @property
    def results_dir(self) -> Path:
        return self.path / "results"

    @property
    def report_dir(self) -> Path:
        return self.path / "report"

    @property
    def gate_dir(self) -> Path:
        return self.path / "gate"

    @property
    def excluded_dir(self) -> Path:
        return self.path / "excluded"

    @property
    def superseded_dir(self) -> Path:
        return self.path / "superseded"

    @property
    def logs_dir(self) -> Path:
        return self.path / "logs"

    @property
    def bin_dir(self) -> Path:
        return self.path / "bin"

    @property
    def slurm_dir(self) -> Path:
        return self.path / "slurm"

    @property
    def lock_file(self) -> Path:
        return self.path / ".lock"

    def raw_path(self, job_id: str) -> Path:
        return self.raw_dir / f"{job_id}.parquet"

    def variant_path(self, build_id: str) -> Path:
        return self.bin_dir / f"{build_id}.so"

    @property
    def driver_path(self) -> Path:
        return self.bin_dir / "driver"

    def gated_library(self, build_id: str) -> Path:
        """DIR/bin/<build>.so, checked to be the bytes that passed the gate (the gate record's
        binary_sha256) right before a driver loads it; one line naming the file if not."""
        return self._checked(self.variant_path(build_id), (self.read_gate(build_id) or {}).get("binary_sha256"))

    def gated_driver(self) -> Path:
        """DIR/bin/driver, checked to be the driver the study installed (the manifest's sha256)."""
        return self._checked(self.driver_path, (self.read_manifest().get("driver") or {}).get("sha256"))

    def _checked(self, path: Path, want: str | None) -> Path:
        if want and path.exists() and store.sha256_file(path) != want:
            raise PqsimdError(f"{path} is not the binary this study gated and installed (its sha256 differs); "
                              f"nothing was timed with it: run {command('run', self.path)} to reinstall it")
        return path

    def stack_usage_dir(self, build_id: str) -> Path:
        """DIR/stack-usage/<build>/: the build's units compiled again with -fstack-usage
        -fcallgraph-info=su (stackbound.py), beside the timed build, never in it."""
        return self.path / "stack-usage" / build_id

    def gate_path(self, build_id: str) -> Path:
        return self.gate_dir / f"{build_id}.json"

    def log_path(self, name: str) -> Path:
        return self.logs_dir / f"{name}.log"

    def results(self, name: str) -> Path:
        return self.results_dir / name

    # --- existence ---------------------------------------------------------------------------
    def ensure(self) -> "StudyDir":
        """Create DIR if needed and check it is writable (one line if not)."""
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            probe = self.path / ".pqsimd-write-probe"
            probe.write_text("")
            probe.unlink()
        except OSError as e:
            raise PqsimdError(f"cannot write to {self.path} ({e.strerror}); choose a writable directory") from None
        return self

    def is_study(self) -> bool:
        return self.path.is_dir() and any(p.exists() for p in (self.study_toml, self.plan_json, self.slurm_dir))

    def require(self) -> "StudyDir":
        if not self.path.is_dir():
            raise PqsimdError(f"no study directory at {self.path}; create one with {command('run', self.path)}")
        return self

    # --- study.toml, plan, sizing --------------------------------------------------------------
    def read_study_doc(self) -> dict[str, Any]:
        """The stored study.toml as a dict ({} if there is none); one line if it is malformed."""
        import tomllib

        if not self.study_toml.exists():
            return {}
        try:
            doc = tomllib.loads(self.study_toml.read_text())
        except tomllib.TOMLDecodeError as e:
            raise PqsimdError(f"{self.study_toml}: malformed TOML ({e}); fix the file or remove it") from None
        except (OSError, UnicodeDecodeError) as e:
            raise PqsimdError(f"{self.study_toml}: cannot read ({e}); fix the file or remove it") from None
        return doc

    def write_study(self, text: str) -> None:
        store.atomic_write_text(self.study_toml, text)

    def read_plan(self) -> dict[str, Any] | None:
        if not self.plan_json.exists():
            return None
        plan = store.read_json(self.plan_json)
        if not isinstance(plan, dict) or not isinstance(plan.get("jobs"), list):
            raise PqsimdError(f"{self.plan_json} is not a pqsimd plan; restore it or use a new directory")
        for j in plan["jobs"]:  # job ids become file names: a hand-edited plan must not name a path
            if not isinstance(j, dict):
                raise PqsimdError(f"{self.plan_json}: a job is {j!r}, not a table; restore it or use a new directory")
            ids.check_composite("job", j.get("id"), str(self.plan_json))
            ids.check_id("scheme", j.get("scheme"), str(self.plan_json))
        return load_plan(plan)

    def write_plan(self, plan: dict[str, Any]) -> None:
        store.atomic_write_json(self.plan_json, {k: v for k, v in plan.items() if k not in DERIVED})

    def plan_jobs(self) -> list[dict[str, Any]]:
        plan = self.read_plan()
        if plan is None:
            raise PqsimdError(f"{self.path} has no plan.json; run {command('run', self.path)} to create the study")
        return plan["jobs"]

    def find_job(self, job_id: str) -> dict[str, Any]:
        for j in self.plan_jobs():
            if j["id"] == job_id:
                return j
        raise PqsimdError(f"job '{job_id}' is not in {self.plan_json}")

    def read_sizing(self) -> dict[str, Any] | None:
        """The sizing jobs are timed with: the copy plan.json fixed when it was chosen (sizing.json
        is its readable twin, checked against it by run/sizing.py), else sizing.json (older plans)."""
        plan = self.read_plan() or {}
        if isinstance(plan.get("sizing"), dict):
            return plan["sizing"]
        return self.read_sizing_file()

    def read_sizing_file(self) -> dict[str, Any] | None:
        return store.read_json(self.sizing_json) if self.sizing_json.exists() else None

    def write_sizing(self, sizing: dict[str, Any]) -> None:
        store.atomic_write_json(self.sizing_json, sizing)

    # --- manifest: one writer ----------------------------------------------------------------
    def read_manifest(self) -> dict[str, Any]:
        """manifest.json, the one loader: older shapes are read as written, since every field a reader takes
        is optional there (version 1: no `schema_version`; 2: `schema_version` and `updated`); a manifest of a
        newer pqsimd is refused in one line rather than read by guesswork."""
        if not self.manifest_json.exists():
            return {}
        m = store.read_json(self.manifest_json)
        if not isinstance(m, dict):
            return {}
        version = m.get("schema_version", 1)
        if isinstance(version, int) and not isinstance(version, bool) and version > store.MANIFEST_SCHEMA_VERSION:
            raise PqsimdError(f"{self.manifest_json} was written by a newer pqsimd (manifest schema {version}; this one "
                              f"reads up to {store.MANIFEST_SCHEMA_VERSION}); update pqsimd to read {self.path}")
        return m

    def update_manifest(self, change: dict[str, Any] | Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        """Read, change (top-level keys replaced, or a function applied), write atomically.
        Only the process holding the study lock writes the manifest."""
        manifest = self.read_manifest()
        if callable(change):
            change(manifest)
        else:
            manifest.update(change)
        manifest["schema_version"] = store.MANIFEST_SCHEMA_VERSION
        manifest["updated"] = datetime.now(timezone.utc).isoformat()
        store.atomic_write_json(self.manifest_json, manifest)
        return manifest

    # --- gate --------------------------------------------------------------------------------
    def write_gate(self, build_id: str, result: dict[str, Any]) -> None:
        store.atomic_write_json(self.gate_path(build_id), result)

    def read_gate(self, build_id: str) -> dict[str, Any] | None:
        p = self.gate_path(build_id)
        return store.read_json(p) if p.exists() else None

    # --- exclusions: builds that crashed or hung while being timed ------------------------------
    def exclusion_path(self, build_id: str, scheme: str) -> Path:
        return self.excluded_dir / f"{ids.exclusion_id(build_id, scheme)}.json"

    def exclude(self, build_id: str, scheme: str, record: dict[str, Any]) -> Path:
        """Leave a build out of every later job and probe of `scheme` while its binary is the same
        (record["binary_sha256"]); one file per (build, scheme), so SLURM tasks never race."""
        path = self.exclusion_path(build_id, scheme)
        store.atomic_write_json(path, {"build": build_id, "scheme": scheme, **record})
        return path

    def exclusion(self, build_id: str, scheme: str) -> dict[str, Any] | None:
        """The standing exclusion of this build for this scheme (None: none, or the binary changed)."""
        path = self.exclusion_path(build_id, scheme)
        if not path.exists():
            return None
        rec = store.read_json(path)
        lib = self.variant_path(build_id)
        if not isinstance(rec, dict) or not lib.exists() or rec.get("binary_sha256") != store.sha256_file(lib):
            return None
        return rec

    def exclusions(self) -> list[dict[str, Any]]:
        d = self.excluded_dir
        out = []
        for p in sorted(d.glob("*.json")) if d.is_dir() else []:
            rec = store.read_json(p)
            if isinstance(rec, dict) and self.exclusion(str(rec.get("build")), str(rec.get("scheme"))):
                out.append({**rec, "file": str(p)})
        return out

    # --- raw files ---------------------------------------------------------------------------
    def raw_files(self) -> list[Path]:
        return sorted(self.raw_dir.glob("*.parquet")) if self.raw_dir.is_dir() else []

    def has_data(self) -> bool:
        return bool(self.raw_files())

    def analysed_elsewhere(self) -> bool:
        """results/ whose measurements raw/ does not hold: no raw file at all beside an analysis (a study
        sent in for a campaign without raw/), or none of the raw files results/ records it was computed
        from. Such results are another machine's (or another day's) and stay as analysed: nothing may
        be timed into them here, and no analysis of whatever raw/ holds now may replace them."""
        summary = self.results("summary.json")
        if not summary.is_file():
            return False
        held = {p.name for p in self.raw_files()}
        rec = store.read_json(summary)
        then = rec.get("computed_from") if isinstance(rec, dict) else None
        then = set(then) if isinstance(then, dict) else set()
        if held and (not then or then & held):
            return False
        # a job of this study that runs again moves its raw file to superseded/ first: raw files that went
        # there (a run stopped before their jobs wrote new ones) were measured here
        gone = [p.name for p in self.superseded_dir.glob("*.parquet")] if self.superseded_dir.is_dir() else []
        return not any(g.startswith(name.removesuffix(".parquet") + ".") for g in gone for name in then) \
            and not (gone and not then)

    def refuse_analysed_elsewhere(self, verb: str) -> None:
        """One line when being `verb` here (run, analysed again) would put this machine's measurements
        into, or in place of, results analysed from raw files this study no longer holds."""
        if not self.analysed_elsewhere():
            return
        raise PqsimdError(
            f"{self.path} cannot be {verb} here: its results/ were analysed from raw files its raw/ does not hold "
            f"(measured elsewhere, e.g. a study sent in for a campaign), and this machine's measurements would take "
            f"their place; its results are read as they were analysed: {command('show', self.path)}, "
            f"{command('report', self.path)}; to measure this machine, use a new directory "
            f"({command('run', 'NEW_DIR')} with the study's --preset and --schemes)")

    def job_records(self) -> dict[Path, dict[str, Any] | None]:
        return {p: store.read_job_record(p) for p in self.raw_files()}

    def finished(self, job_id: str, binaries: dict[str, str | None] | None = None) -> bool:
        """The one definition of a finished job: its raw file reads back with its own id, and
        (when given) holds every build the study would time it with now, each with that binary's
        sha256 (None: built on a SLURM node, any binary counts). A paired job that lacks a build
        (one that passed its gate after the job ran) is not finished: its builds are only paired
        when they share the process, so the whole job runs again (see supersede)."""
        path = self.raw_path(job_id)
        if not path.exists():
            return False
        rec = store.read_job_record(path)
        if rec is None or rec.get("id") != job_id:
            return False
        if binaries:
            got = rec.get("binaries") or {}
            for key, sha in binaries.items():
                if key not in got or (sha is not None and got[key] not in (None, sha)):
                    return False
        return True

    def supersede(self, job_id: str) -> Path | None:
        """Move a job's raw file out of raw/ before the job runs again (it lacked a build, or read
        back broken): kept in DIR/superseded/, never analysed, never lost."""
        path = self.raw_path(job_id)
        if not path.exists():
            return None
        dest = self.superseded_dir / f"{job_id}.{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%S%f')}.parquet"
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, dest)
        return dest

    def write_raw(self, job_id: str, table, record: dict[str, Any]) -> Path:
        self.raw_dir.mkdir(parents=True, exist_ok=True)
        return store.write_raw(self.raw_path(job_id), table, record)

    def remove_stale_temporaries(self, job_id: str) -> None:
        """Temp files a killed run of this job left (they never count as data)."""
        if self.raw_dir.is_dir():
            for stale in self.raw_dir.glob(f".{job_id}.*"):
                stale.unlink(missing_ok=True)

    # --- the study lock ----------------------------------------------------------------------
    @contextmanager
    def lock(self, what: str) -> Iterator[None]:
        """Exclusive lock on the study for the duration (a run, the SLURM follower). A second
        holder is refused in one line that says who holds it."""
        self.ensure()
        fd = os.open(self.lock_file, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_holder(fd)
                os.close(fd)
                raise PqsimdError(
                    f"{self.path} is in use by another pqsimd ({holder}); wait for it to finish, or stop it, "
                    f"then run again (two runs would time the same jobs on the same CPU)"
                ) from None
            info = {"pid": os.getpid(), "host": socket.gethostname(), "what": what,
                    "command": " ".join(sys.argv), "since": datetime.now(timezone.utc).isoformat(timespec="seconds")}
            os.ftruncate(fd, 0)
            os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)
            yield
        finally:
            try:
                os.ftruncate(fd, 0)
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
            except OSError:
                pass


def _read_holder(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0).decode() or "{}")
        return f"pid {info.get('pid')} on {info.get('host')}, `{info.get('command')}` since {info.get('since')}"
    except (OSError, ValueError):
        return "another process"


# -- studies made of studies: a vector-length set (DIR/vlens.toml, DIR/vlen/<N>/) and a machine set
# (DIR/machines.toml, DIR/machines/<name>/, DIR/campaign/); pqsimd/studysets.py runs them

VLEN_DIR = "vlen"
SET_FILE = "vlens.toml"
_RESTORE_VLENS = 'restore it (vlens = [128, 256, 512], isa = "riscv64") or use a new directory'


def is_vlen_set(directory: Path) -> bool:
    return (Path(directory) / SET_FILE).is_file()


def _set_doc(path: Path, example: str) -> dict[str, Any]:
    try:
        doc = tomllib.loads(path.read_text())
    except (OSError, ValueError, tomllib.TOMLDecodeError) as e:
        raise PqsimdError(f"{path} cannot be read ({e}); {example}") from None
    return doc


def vlen_set(directory: Path) -> tuple[list[int], str]:
    """The vector lengths and the ISA of a vector-length set, as DIR/vlens.toml names them, each
    checked (a hand-edited file is refused in one line naming it, never read as something else)."""
    from . import isa as isa_mod  # late: only a vector-length set asks for the ISA's limits

    path = Path(directory) / SET_FILE
    doc = _set_doc(path, _RESTORE_VLENS)
    vlens = doc.get("vlens")
    if not isinstance(vlens, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in vlens):
        raise PqsimdError(f"{path} does not name the vector lengths (vlens = {vlens!r} is not a list of numbers); "
                          f"{_RESTORE_VLENS}")
    if len(vlens) < 2 or len(set(vlens)) != len(vlens):
        raise PqsimdError(f"{path} names the vector lengths {vlens!r}; a set needs two or more different lengths: "
                          f"{_RESTORE_VLENS}")
    name = doc.get("isa")
    if not isinstance(name, str) or name not in isa_mod.names():
        given = f"isa = {name!r}" if "isa" in doc else "no isa"
        raise PqsimdError(f"{path} does not name the set's ISA ({given}; known: {', '.join(isa_mod.names())}); "
                          f"{_RESTORE_VLENS}")
    target = isa_mod.get(name)
    if target.vector is None:
        raise PqsimdError(f"{path} names isa = {name!r}, which has no vector length; {_RESTORE_VLENS}")
    for v in vlens:
        try:
            target.at(v)
        except PqsimdError:
            vec = target.vector
            raise PqsimdError(f"{path} names the vector length {v}, which {name} has not (a power of two from "
                              f"{vec['min']} to {vec['max']} bits, or 0); {_RESTORE_VLENS}") from None
    return vlens, name


def read_vlen_set(directory: Path) -> list[int]:
    """The vector lengths of a vector-length set, as DIR/vlens.toml names them."""
    return vlen_set(directory)[0]


def vlen_sub_studies(directory: Path, vlens: list[int] | None = None) -> list[tuple[int, Path]]:
    vlens = vlens if vlens is not None else read_vlen_set(directory)
    return [(v, Path(directory) / VLEN_DIR / str(v)) for v in vlens]


MACHINES_DIR = "machines"
MACHINE_SET_FILE = "machines.toml"
CAMPAIGN_DIR = "campaign"
_RESTORE_MACHINES = 'restore it (partitions = ["a", "b"], the names in machines/) or use a new directory'


def is_machine_set(directory: Path) -> bool:
    return (Path(directory) / MACHINE_SET_FILE).is_file()


def read_machine_set(directory: Path) -> list[str]:
    """The partitions (machine types) of a machine set, as DIR/machines.toml names them."""
    path = Path(directory) / MACHINE_SET_FILE
    names = _set_doc(path, _RESTORE_MACHINES).get("partitions")
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names) or len(names) < 2 \
            or len(set(names)) != len(names):
        raise PqsimdError(f"{path} does not name two or more different partitions (partitions = {names!r}); "
                          f"{_RESTORE_MACHINES}")
    for n in names:
        try:
            ids.check_id("machine", n, str(path))
        except PqsimdError:
            raise PqsimdError(f"{path} names the partition {n!r}, which is no directory name; {_RESTORE_MACHINES}") \
                from None
    return names


def machine_studies(directory: Path, names: list[str] | None = None) -> list[Path]:
    names = names if names is not None else read_machine_set(directory)
    if len(set(names)) != len(names) or len(names) < 2:
        raise PqsimdError(f"--machines {','.join(names)}: give two or more different partitions")
    return [Path(directory) / MACHINES_DIR / ids.check_id("machine", n, "--machines") for n in names]


# --- what a directory is, and the command that reads it ----------------------------------------------

CAMPAIGN_FILE = "campaign.toml"  # written by `pqsimd campaign OUT`, beside OUT/results/campaign.json
CAMPAIGN_SUMMARY = "campaign.json"
STUDY, CAMPAIGN, MACHINE_SET, VLEN_SET = "study", "campaign", "machine set", "vector-length set"
_STUDY_PARTS = ("study.toml", "manifest.json", "plan.json", "raw", "results")
_INSIDE_A_STUDY = ("results", "raw", "report", "bin", "gate", "logs")
_LISTED = 4  # studies named when a directory holds several


def kind(directory: Path) -> str | None:
    """What a directory is to pqsimd: a vector-length set, a machine set, a campaign, a study, or
    None (nothing pqsimd made, or nothing at all)."""
    d = Path(directory)
    if is_vlen_set(d):
        return VLEN_SET
    if is_machine_set(d):
        return MACHINE_SET
    if (d / CAMPAIGN_FILE).is_file() or (d / "results" / CAMPAIGN_SUMMARY).is_file():
        return CAMPAIGN
    if any((d / part).exists() for part in _STUDY_PARTS):
        return STUDY
    return None


def _studies_in(directory: Path) -> list[Path]:
    try:
        subs = sorted(p for p in Path(directory).iterdir() if p.is_dir())
    except OSError:
        return []
    return [p for p in subs if kind(p) is not None]


def _set_members(directory: Path, what: str) -> list[Path]:
    sub = Path(directory) / (MACHINES_DIR if what == MACHINE_SET else VLEN_DIR)
    return sorted(p for p in sub.iterdir() if p.is_dir()) if sub.is_dir() else []


def require_kind(directory: Path, action: str, accepts: tuple[str, ...] = (STUDY,),
                 again: Callable[[Path], list] | None = None) -> str:
    """The kind of DIR when `pqsimd ACTION DIR` reads it; else one line saying what DIR is and the
    command that fits it from where the user stands (never `pqsimd run` on a directory that holds
    other things, never a study's command on a campaign). `again(other)`: the arguments of the same
    command with `other` in DIR's place (default: ACTION OTHER)."""
    d = Path(directory)
    again = again or (lambda other: [action, other])
    what = kind(d)
    if what in accepts:
        return what
    if what is None:
        if not d.exists():
            raise PqsimdError(f"no study directory at {d}; create one with {command('run', d)}")
        if not d.is_dir():
            raise PqsimdError(f"{d} is a file, not a study directory; give the directory `pqsimd run DIR` made")
        if d.name in _INSIDE_A_STUDY and kind(d.parent) is not None:
            raise PqsimdError(f"{d} is part of the {kind(d.parent)} {d.parent}; give that: "
                              f"{command(*again(d.parent))}")
        try:
            empty = not any(d.iterdir())
        except OSError as e:
            raise PqsimdError(f"cannot read {d} ({e.strerror}); fix its permissions") from None
        if empty:
            raise PqsimdError(f"{d} holds no study yet; {command('run', d)} makes one")
        inside = [p for p in _studies_in(d) if kind(p) in accepts]
        if inside:
            names = ", ".join(p.name for p in inside[:_LISTED]) + (", …" if len(inside) > _LISTED else "")
            raise PqsimdError(f"{d} is no study, but holds {len(inside)}: {names}; give one, e.g. "
                              f"{command(*again(inside[0]))}")
        raise PqsimdError(f"{d} is no pqsimd study (it has none of {', '.join(_STUDY_PARTS)}); give the directory "
                          f"`pqsimd run DIR` made")
    if what == CAMPAIGN and action == "analyze":
        raise PqsimdError(f"{d} is a campaign; {command('campaign', d)} computes it again from its {CAMPAIGN_FILE}")
    members = _set_members(d, what) if what in (MACHINE_SET, VLEN_SET) else []
    theirs = (f"; its studies: {', '.join(str(p) for p in members[:_LISTED])}" if members else "")
    raise PqsimdError(f"{d} is a {what}, and pqsimd {action} reads a study; {command('show', d)} prints it{theirs}")


def why_no_cliffs(directory: Path) -> str:
    """Why a study has no results/cliffs (`pqsimd cliffs`), and the command that gives it some."""
    d = Path(directory)
    sd = StudyDir(d)
    if not sd.results("summary.json").is_file():
        return f"it is not analysed yet: {command('analyze', d)}"
    study = sd.read_study_doc().get("study") or {}
    layout, copies = study.get("layout"), study.get("layouts", 1)
    if layout == LayoutMode.FIXED or (isinstance(copies, int) and copies < 2):
        again = [*(["--preset", study["preset"]] if isinstance(study.get("preset"), str) else []), "--layouts", "2"]
        how = "its builds as linked (--layout fixed)" if layout == LayoutMode.FIXED else "one laid-out copy of each build"
        return (f"its jobs time {how}, and a cliff is one copy far slower than the others of its group; "
                f"a study with two or more copies per job has them: {command('run', d.parent / (d.name + '-layouts'), *again)}")
    if sd.analysed_elsewhere():  # analyze would be refused: its raw files are not here
        return ("it has no timed laid-out group: it counts only, or its results predate cliffs, and its raw files "
                "are not here (analysed elsewhere), so only where they are can an analysis add them")
    return (f"it has no timed laid-out group: it counts only, or its results predate cliffs "
            f"({command('analyze', d)} adds them)")
