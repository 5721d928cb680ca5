"""The ISA seam: what is ISA-specific in building, launching, counting and modelling code, read from
data/isas.toml (one table per ISA). A study's ISA (`--isa`) reaches build.py (cross compilers, the
driver's toolchain), every launch of code under test (the launcher), run/backends.py (the counting
backend), run/mix.py (instruction classes, llvm-mca triple) and doctor (its timer).

    isa.get(name)        an ISA by name (e.g. the --isa of a study)
    isa.host()           the ISA of this machine
    Isa.launcher()       [] natively, else the emulator prefix: qemu-<isa> -cpu <pinned> -L <sysroot>
    Isa.gcc(), Isa.clang(version)   a compiler command for this ISA from this host
    Isa.objdump()        the disassembler of this ISA's objects
    Isa.at(vlen)         a vector-length-agnostic ISA at another vector length (data/isas.toml
                         [isa.<name>.vector]; get() gives its default); 0: the CPU without the vector
                         extension; for an ISA without [vector] only None is accepted
    Isa.plugin_args()    what our QEMU plugin is told about the ISA: its markers and branch classes
    of_study(study)      the study's ISA at the study's vector length
"""

from __future__ import annotations

import dataclasses
import platform
import shutil
from dataclasses import dataclass
from functools import cache

from .. import catalog
from ..errors import PqsimdError, did_you_mean


@dataclass(frozen=True)
class Isa:
    name: str
    machine: tuple[str, ...]
    gnu_triple: str
    clang_target: str
    sysroot: str
    qemu: str
    qemu_cpu: str
    counting: str
    mca_triple: str
    timer: str
    tick_unit: str
    packages: tuple[str, ...]
    mix: str = "mix.toml"  # data/ file of its instruction classes (run/mix.py)
    features: str = "flags"  # the /proc/cpuinfo key of its CPU features
    doctor: dict | None = None  # what `pqsimd doctor` reads about its timer (data/isas.toml)
    tick_note: str = ""  # what its tick unit is (data/isas.toml); the unit alone where none is said
    plugin: dict | None = None  # our QEMU plugin's markers and branch classes (data/isas.toml [plugin])
    vector: dict | None = None  # the vector length as a setting: default, min, max, off_cpu ([vector])
    vlen: int | None = None  # the vector length its emulator runs at (0: no vector extension); None: no [vector]
    cc: tuple[str, ...] = ()  # a study's compilers when --cc is not given (empty: the default, gcc)
    cpu_template: str = ""  # qemu_cpu as data/isas.toml writes it ({vlen} in it)
    stack: dict | None = None  # the ABI's red zone and return address in a frame ([stack]: stackbound.py)
    feature_groups: dict | None = None  # name -> CPU-feature prefix whose subsets `pqsimd doctor` names (AVX-512)
    elf_machine: int = 0  # the ELF header's e_machine of its objects (binary/: which ISA a library is)
    binary: dict | None = None  # objdump's text of its calls, jumps, padding, data references ([binary]: binary/)

    def at(self, vlen: int | None) -> "Isa":
        """This ISA at vector length `vlen` (None: its default): qemu_cpu with the length filled in,
        or the CPU without the vector extension for 0. One line for a length the emulator lacks."""
        if self.vector is None:
            if vlen is not None:
                raise PqsimdError(f"--vlen {vlen}: {self.name} has no vector length to set (only ISAs with a "
                                  f"[isa.<name>.vector] table in data/isas.toml: {', '.join(with_vector()) or 'none'})")
            return self
        v = self.vector
        n = v["default"] if vlen is None else vlen
        if isinstance(n, bool) or not isinstance(n, int) or (n != 0 and not (v["min"] <= n <= v["max"] and n & (n - 1) == 0)):
            raise PqsimdError(f"--vlen {vlen}: {self.qemu} runs {self.name} at a vector length that is a power of two "
                              f"from {v['min']} to {v['max']} bits, or 0 (no {v.get('extension', 'vector')} extension)")
        cpu = v["off_cpu"] if n == 0 else self.cpu_template.format(vlen=n)
        return dataclasses.replace(self, vlen=n, qemu_cpu=cpu)

    def plugin_args(self) -> str:
        """The plugin's ISA arguments: ,start=WORD,stop=WORD,pcshift=N,cond=...,ind=...,plain=..."""
        p = self.plugin
        if not p:
            raise PqsimdError(f"data/isas.toml: [isa.{self.name}] has no [plugin] table (markers, branch classes), "
                              f"which counting with {self.counting} needs")
        return f",start={p['start']},stop={p['stop']},pcshift={p.get('pcshift', 2)}" + "".join(
            f",{b}" for b in p.get("branches", []))

    @property
    def native(self) -> bool:
        return platform.machine() in self.machine

    def _tool(self, command: str, what: str) -> str:
        path = shutil.which(command)
        if path is None:
            pkgs = " ".join(self.packages)
            raise PqsimdError(f"{command} not found: {what} for {self.name} needs it (apt-get install {pkgs})")
        return path

    def launcher(self) -> list[str]:
        """What runs this ISA's programs here: nothing natively, else the emulator with the pinned
        CPU and the cross libc."""
        if self.native:
            return []
        return [self._tool(self.qemu, "running programs"), "-cpu", self.qemu_cpu, "-L", self.sysroot]

    def gcc(self) -> list[str]:
        return ["gcc"] if self.native else [self._tool(f"{self.gnu_triple}-gcc", "building")]

    def clang(self, version: str | None = None) -> list[str]:
        name = f"clang-{version}" if version else "clang"
        return [self._tool(name, "building"), f"--target={self.clang_target}"]

    def objdump(self) -> list[str]:
        return ["objdump"] if self.native else [self._tool(f"{self.gnu_triple}-objdump", "disassembling")]


@cache
def _isas() -> dict[str, Isa]:
    doc = catalog._toml(catalog._data_text("isas.toml"), "isas.toml").get("isa", {})
    out = {}
    for name, d in doc.items():
        try:
            i = Isa(name=name, **{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})
        except TypeError as e:
            raise PqsimdError(f"data/isas.toml: [isa.{name}] {e}") from None
        if i.vector is not None:
            missing = [k for k in ("default", "min", "max", "off_cpu") if k not in i.vector]
            if missing or "{vlen}" not in i.qemu_cpu:
                raise PqsimdError(f"data/isas.toml: [isa.{name}.vector] needs default, min, max, off_cpu and qemu_cpu "
                                  f"with {{vlen}} in it (missing: {', '.join(missing) or 'qemu_cpu {vlen}'})")
            i = dataclasses.replace(i, cpu_template=i.qemu_cpu).at(None)
        out[name] = i
    return out


def with_vector() -> list[str]:
    """The ISAs whose vector length is a setting."""
    return [n for n, i in _isas().items() if i.vector is not None]


def of_study(study) -> Isa:
    """The study's ISA, at the study's vector length (its `vlen`, None: the ISA's default)."""
    return get(study.isa).at(getattr(study, "vlen", None))


def names() -> list[str]:
    return list(_isas())


def get(name: str) -> Isa:
    try:
        return _isas()[name]
    except KeyError:
        raise PqsimdError(f"unknown ISA {name!r} (known: {', '.join(_isas())}){did_you_mean(name, _isas())}") from None


def host() -> Isa:
    m = platform.machine()
    for i in _isas().values():
        if m in i.machine:
            return i
    raise PqsimdError(f"this machine's ISA {m!r} is not in data/isas.toml (known: {', '.join(_isas())})")
