"""Code and data layout per job: a build's copy relinked from its own objects in a seeded order.

Every job of a build used to load the same bytes at the same offsets, so an alignment accident
(16 bytes moved an op by 12% here) was repeated identically in every job and no interval could see
it. A timing job now loads its own copies: the build's cached objects (one section per function
and per object: build.SECTION_FLAGS) linked again by lld with the job's seed, the input sections in
a seeded order (`--shuffle-sections`, the linker's own shuffling) and padding sections of seeded
sizes (multiples of 16 bytes) among the code and the data, so every function's offset modulo 64 and
4096 varies from copy to copy; the driver adds a seeded stack offset per copy. The layout's effect
becomes variation between jobs that the intervals cover (Curtsinger & Berger, "STABILIZER",
ASPLOS 2013) instead of a bias (Mytkowicz et al., ASPLOS 2009).

A copy is reproducible: the same objects, seed and linker give the same bytes (`relink` again and
compare the sha256; `Copy` records seed, stack offset, sha256 and where each op's function sits).
"""

from __future__ import annotations

import errno
import glob
import hashlib
import os
import threading
import random
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import build, catalog
from .errors import PqsimdError


def settings() -> dict:
    return catalog.compilers_doc()["layout"]


def linker() -> str | None:
    """The first lld on PATH (data/compilers.toml [layout] linkers), or None."""
    for name in settings()["linkers"]:
        path = shutil.which(name)
        if path:
            return os.path.realpath(path)
    return None


def require_linker() -> str:
    path = linker()
    if path is None:
        raise PqsimdError(f"randomized code layout needs lld (apt-get install {settings()['package']}); "
                          f"or run with --layout fixed (verdicts are then about one layout)")
    return path


def linker_record(lld: str | None = None) -> dict:
    """Which lld relinks the copies: its resolved path and the first line of its --version (the tool
    folder is named by a hash of the path only)."""
    lld = lld or require_linker()
    try:
        # as ld.lld: the resolved file is lld's multi-call binary, which answers by the name it is run as
        out = subprocess.run(["ld.lld", "--version"], executable=lld, capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        out = ""
    return {"path": lld, "version": (out.strip().splitlines() or ["unknown"])[0]}


def linker_args(link: list[str]) -> list[str]:
    """What the compiler driver passes to the linker from a link command (-Wl,a,b and -Xlinker a)."""
    out: list[str] = []
    args = iter(link)
    for a in args:
        if a.startswith("-Wl,"):
            out += a[4:].split(",")
        elif a == "-Xlinker":
            out.append(next(args, ""))
    return out


def cannot_lay_out(link: list[str]) -> str | None:
    """Why a build's own link keeps a copy from being laid out by the recorded seed (its variant's
    flags come last in the link, so they win), else None."""
    for a in link:
        if a.startswith("-fuse-ld=") and Path(a.split("=", 1)[1]).name not in ("lld", "ld.lld") \
                and not Path(a.split("=", 1)[1]).name.startswith("ld.lld"):
            return f"the variant's linker ({a}) overrides lld, which lays out the copies"
        if a.startswith("--ld-path="):
            return f"the variant's linker ({a}) overrides lld, which lays out the copies"
    own = next((a for a in linker_args(link) if a.lstrip("-").startswith("shuffle-sections")), None)
    if own is not None:
        return f"the variant's own -Wl,{own} would order the sections instead of the copy's recorded seed"
    return None


def weakened(link: list[str]) -> str:
    """How a build's own flags coarsen its copies' layout ("" if they do not)."""
    off = [f for f in ("-fno-function-sections", "-fno-data-sections") if f in link]
    if not off:
        return ""
    return (f"the variant's {' and '.join(off)} leave{'s' if len(off) == 1 else ''} one section per object, so "
            f"lld shuffles whole objects: functions (or data) inside an object keep their order and offsets")


def _tool_dir(lld: str) -> Path:
    """A folder whose `ld.lld` is the linker found: `-B` it and `-fuse-ld=lld` finds it with gcc and clang
    alike, whatever the versioned name (Debian installs ld.lld-16)."""

    d = build.cache_root().parent / "tools" / f"lld-{hashlib.sha256(lld.encode()).hexdigest()[:12]}"
    link = d / "ld.lld"
    if not link.exists():
        d.mkdir(parents=True, exist_ok=True)
        # unique per process *and thread*: layouts are prepared by a thread pool (CI caught two threads
        # of one process racing on a per-pid name)
        tmp = d / f".ld.lld.{os.getpid()}.{threading.get_ident()}"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(lld)
        os.replace(tmp, link)
    return d


def seed_of(study_seed: int, job_id: str, build_id: str, index: int) -> int:
    """The layout seed of copy `index` of a build in a job: 1 .. 2^31-1 (lld reads 0 as 'random')."""
    h = hashlib.sha256(f"{study_seed}|{job_id}|{build_id}|{index}".encode()).digest()
    return int.from_bytes(h[:8], "little") % ((1 << 31) - 1) + 1


@dataclass
class Padding:
    seed: int
    text: list[int]  # bytes of each padding section among the functions
    data: dict[str, list[int]]  # section kind (data, bss, rodata) -> bytes of each
    stack: int  # the driver's stack offset for this copy

    @classmethod
    def of(cls, seed: int) -> "Padding":
        conf = settings()
        rng = random.Random(seed)
        text = [16 * rng.randrange(64) for _ in range(int(conf["text_pads"]))]
        data = {k: [16 * rng.randrange(256) for _ in range(int(conf["data_pads"]))] for k in ("data", "bss", "rodata")}
        return cls(seed, text, data, 16 * rng.randrange(max(1, int(conf["stack_max"]) // 16)))

    def assembly(self, labels: bool = False) -> str:
        """Sections lld shuffles in among the build's own (never executed, never read). `labels`: each
        pad also gets a local symbol `pqsimd_layout_pad_<kind>_<i>` (run/retime.py's search finds the
        pads with nm; the symbols change no address of the copy, only its symbol table)."""
        flags = {"text": '"ax",%progbits', "data": '"aw",%progbits', "bss": '"aw",%nobits', "rodata": '"a",%progbits'}
        out = []
        for kind, sizes in (("text", self.text), *self.data.items()):
            for i, n in enumerate(sizes):
                out += [f".section .{kind}.pqsimd_layout_pad_{i},{flags[kind]}", ".p2align 4"]
                if labels:
                    out += [f"{PAD_SYMBOL}{kind}_{i}:", f".size {PAD_SYMBOL}{kind}_{i}, {max(n, 1)}"]
                out.append(f".skip {max(n, 1)}")
        return "\n".join(out) + "\n"


@dataclass
class Copy:
    """One laid-out copy of a build, as a job loads it."""

    build: str
    index: int
    seed: int
    stack: int
    path: str
    sha256: str
    offsets: dict[str, dict[str, int]] = field(default_factory=dict)  # scheme -> op -> offset of its function
    check: str = ""  # how the gate checked it (verify/layouts.py)
    fixed: str = ""  # why this copy is the build itself (not relinked), else ""
    weakened: str = ""  # how the build's own flags coarsen the layout (whole objects shuffled), else ""

    def to_dict(self) -> dict:
        return asdict(self)


def link_command(link: list[str], out: Path, padding_obj: Path, seed: int, lld: str) -> list[str]:
    """The build's own link of its shared object, writing `out`, with lld, the padding and the shuffle."""
    cmd = list(link)
    try:
        cmd[cmd.index("-o") + 1] = str(out)
        at = cmd.index("-shared")
    except (ValueError, IndexError):
        raise PqsimdError(f"the build's link command is not a shared-object link: {shlex.join(link)[:200]}") from None
    shuffle = [f"-Wl,--shuffle-sections={glob}={seed}" for glob in settings()["shuffle"]]
    # the variant's flags come last in the build's link (they win); -fuse-ld before them stays ours
    # unless a variant names its own linker, which then cannot be laid out (relink reports it)
    # a copy is timed, never read for source lines: its line tables (build.DEBUG_FLAGS) stay in the build
    return [*cmd[:at + 1], str(padding_obj), f"-B{_tool_dir(lld)}", "-fuse-ld=lld", *shuffle, "-Wl,--strip-debug",
            *cmd[at + 1:]]


def relink(link: list[str], seed: int, out: Path, assembler: list[str] | None = None,
           padding: Padding | None = None) -> tuple[Padding, list[str]]:
    """Links a copy of a build from its objects into `out`; PqsimdError (one line) if lld cannot
    (e.g. a variant with gcc's -flto, whose objects only GNU ld's plugin reads) or must not (LLVM bitcode,
    which lld would optimize again: a clang LTO build's `link` takes its post-LTO objects, build.LTO_DIR).
    `padding`: other pads than the seed's (run/retime.py's search: one copy's order, another's pads)."""
    lld = require_linker()
    pad = padding or Padding.of(seed)
    cc = link[: link.index("-shared")] if "-shared" in link else link[:1]
    why = cannot_lay_out(link)
    if why:
        raise PqsimdError(why)
    if any(a.startswith("-flto") for a in link) and _family(cc) == "gcc":
        # gcc's -flto objects hold GIMPLE for its own linker plugin; lld would link them empty
        raise PqsimdError("gcc -flto objects hold GIMPLE that only GNU ld's plugin reads; lld cannot relink them")
    ir = next((a for a in link if build.bitcode(a)), None)
    if ir is not None:
        # lld would run LTO again, with its own LLVM: other code than the build's (build.LTO_DIR)
        raise PqsimdError(f"its link reads LLVM bitcode ({Path(ir).name}), which lld would optimize again with its own "
                          f"LLVM into other code (its linker kept no post-LTO objects)")
    with tempfile.TemporaryDirectory(prefix="pqsimd-layout-") as tmp:
        asm, obj = Path(tmp) / "pad.s", Path(tmp) / "pad.o"
        asm.write_text(pad.assembly())
        proc = subprocess.run([*(assembler or cc), "-c", str(asm), "-o", str(obj)], capture_output=True, text=True)
        if proc.returncode:
            raise PqsimdError(f"layout padding does not assemble: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
        cmd = link_command(link, out, obj, seed, lld)
        out.parent.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode:
            _remove_linker_temporaries(out)
            _disk_problem(proc.stderr, link, out)
            last = next((l for l in reversed(proc.stderr.strip().splitlines()) if l.strip()), f"exit {proc.returncode}")
            raise PqsimdError(f"lld cannot relink this build ({last.strip()[:200]})")
        recorded = [a if a != str(obj) else "<padding.o>" for a in cmd]
    return pad, recorded


def _remove_linker_temporaries(out: Path) -> None:
    """lld writes `out` as `<out>.tmpXXXXXXX` and renames it when done; killed (SIGBUS on a full disk)
    it leaves that file behind: a half-made copy under another name."""
    for leftover in out.parent.glob(glob.escape(out.name) + ".tmp*"):
        leftover.unlink(missing_ok=True)


def _disk_problem(stderr: str, link: list[str], out: Path) -> None:
    """OSError naming `out` when a failed relink was the disk's doing, not the build's (then the copy is
    not timed as linked: the study stops with one line). lld maps its output, so a full disk kills it
    with SIGBUS rather than saying so: a file system without room for the objects counts as full."""
    for code in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO):
        if os.strerror(code) in stderr:
            raise OSError(code, os.strerror(code), str(out))
    need = sum(Path(a).stat().st_size for a in link if a.endswith((".o", ".a", ".so")) and Path(a).is_file())
    try:
        fs = os.statvfs(out.parent)
    except OSError:
        return
    if fs.f_bavail * fs.f_frsize < need:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(out))


def _family(cc: list[str]) -> str:
    try:
        out = subprocess.run([*cc, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return catalog.compiler_family(out)


def op_offsets(driver: Path, library: Path, scheme: str, launcher: list[str] | tuple = ()) -> dict[str, int]:
    """Where each op's function sits in `library` (driver `where`)."""
    proc = subprocess.run([*launcher, str(driver), "where", str(library), scheme], capture_output=True, text=True,
                          timeout=60)
    if proc.returncode:
        raise PqsimdError(f"driver where {library.name} {scheme}: "
                          f"{(proc.stderr.strip().splitlines() or [f'exit {proc.returncode}'])[-1]}")
    out = {}
    for line in proc.stdout.splitlines():
        op, _, off = line.partition("\t")
        out[op] = int(off)
    return out


PADDING_ARG = "<padding.o>"
PAD_SYMBOL = "pqsimd_layout_pad_"


def relink_recorded(recorded: list[str], seed: int, out: Path, padding: Padding | None = None,
                    labels: bool = False) -> Padding:
    """A copy made again from its job record's link command (the `link` of layouts.json, with
    `<padding.o>` for the seed's padding object): the same objects, seed, padding and linker give the
    same bytes (the caller compares the sha256 with the record's). `padding`: other pads (a search's
    hybrid; the order stays the recorded seed's)."""
    if not recorded or PADDING_ARG not in recorded or "-o" not in recorded or "-shared" not in recorded:
        raise PqsimdError("the copy's record holds no link command to make it again (a fixed layout, or a "
                          "study from before layouts recorded it)")
    pad = padding or Padding.of(seed)
    cc = recorded[: recorded.index("-shared")]
    with tempfile.TemporaryDirectory(prefix="pqsimd-layout-") as tmp:
        asm, obj = Path(tmp) / "pad.s", Path(tmp) / "pad.o"
        asm.write_text(pad.assembly(labels))
        proc = subprocess.run([*cc, "-c", str(asm), "-o", str(obj)], capture_output=True, text=True)
        if proc.returncode:
            raise PqsimdError(f"layout padding does not assemble: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
        cmd = [str(obj) if a == PADDING_ARG else a for a in recorded]
        cmd[cmd.index("-o") + 1] = str(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True)
        except OSError as e:
            raise PqsimdError(f"the recorded link cannot run here ({e})") from None
        if proc.returncode:
            _remove_linker_temporaries(out)
            last = next((l for l in reversed(proc.stderr.strip().splitlines()) if l.strip()), f"exit {proc.returncode}")
            raise PqsimdError(f"the recorded link fails here ({last.strip()[:200]})")
    return pad
