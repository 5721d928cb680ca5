"""The ISA seam: what is ISA-specific in building, launching, counting and modelling code, read from
data/isas.toml (one table per ISA). A study's ISA (`--isa`) reaches build.py (cross compilers, the
driver's toolchain), every launch of code under test (the launcher), run/backends.py (the counting
backend), run/mix.py (instruction classes, llvm-mca triple) and doctor (its timer).

    isa.get(name)        an ISA by name (e.g. the --isa of a study)
    isa.host()           the ISA of this machine
    Isa.launcher()       [] natively, else the emulator prefix: qemu-<isa> -cpu <pinned> -L <sysroot>
    Isa.gcc(), Isa.clang(version)   a compiler command for this ISA from this host
    Isa.objdump()        the disassembler of this ISA's objects
"""

from __future__ import annotations

import platform
import shutil
from dataclasses import dataclass
from functools import cache

from .. import catalog
from ..errors import PqsimdError


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
            out[name] = Isa(name=name, **{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})
        except TypeError as e:
            raise PqsimdError(f"data/isas.toml: [isa.{name}] {e}") from None
    return out


def names() -> list[str]:
    return list(_isas())


def get(name: str) -> Isa:
    try:
        return _isas()[name]
    except KeyError:
        raise PqsimdError(f"unknown ISA {name!r} (known: {', '.join(_isas())})") from None


def host() -> Isa:
    m = platform.machine()
    for i in _isas().values():
        if m in i.machine:
            return i
    raise PqsimdError(f"this machine's ISA {m!r} is not in data/isas.toml (known: {', '.join(_isas())})")
