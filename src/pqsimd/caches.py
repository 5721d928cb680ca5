"""Cache geometries for the simulated-events metric (`--metric sim`, run/sim.py): the shipped ones
(data/caches.toml, each with its source) and the host's (read from the OS). A geometry is three
caches, the only ones valgrind's model has: I1, D1 and a last level (LL). Valgrind refuses a cache
whose set count is not a power of two; `simulated()` keeps such a cache's size and line and raises
its ways until the set count is one (what is simulated is recorded beside what was specified)."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

from .errors import PqsimdError, did_you_mean

HOST = "host"
LEVELS = ("I1", "D1", "LL")
SYS_CACHE = Path("/sys/devices/system/cpu/cpu0/cache")


@dataclass(frozen=True)
class Cache:
    size: int  # bytes
    ways: int
    line: int  # bytes

    @property
    def sets(self) -> float:
        return self.size / (self.ways * self.line)

    def text(self) -> str:
        return f"{_size_text(self.size)} {self.ways}-way {self.line} B"

    def as_list(self) -> list[int]:
        return [self.size, self.ways, self.line]


@dataclass(frozen=True)
class Geometry:
    name: str
    title: str
    source: str
    isa: str | None
    caches: dict[str, Cache]  # I1, D1, LL as specified

    def simulated(self) -> dict[str, Cache]:
        return {level: valgrind_cache(c) for level, c in self.caches.items()}

    def valgrind_args(self) -> tuple[str, ...]:
        return tuple(f"--{level}={c.size},{c.ways},{c.line}" for level, c in self.simulated().items())

    def text(self) -> str:
        """One line: the geometry as simulated, and what was changed to make valgrind accept it."""
        sim = self.simulated()
        parts = []
        for level in LEVELS:
            s, c = sim[level], self.caches[level]
            parts.append(f"{level} {s.text()}" + ("" if s == c else f" (specified {c.ways}-way)"))
        return f"{self.name}: " + ", ".join(parts)

    def record(self) -> dict:
        """What every number simulated with this geometry carries (raw job record, results tables)."""
        return {"name": self.name, "title": self.title, "source": self.source,
                "specified": {k: c.as_list() for k, c in self.caches.items()},
                "simulated": {k: c.as_list() for k, c in self.simulated().items()}, "text": self.text()}


def _size_text(n: int) -> str:
    for unit, div in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div and n % (div // 4) == 0:
            return f"{n / div:g} {unit}"
    return f"{n} B"


def _pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def checked(level: str, values, where: str, fix: str) -> Cache:
    """A cache from (size, ways, line) as read, refused in one line unless every value is a positive
    whole number, the line a power of two and the size whole lines of at least one set: a 0 ways or 0
    line divided by zero, a 0 size crashed valgrind on every build, a negative one reached it."""
    if not isinstance(values, (list, tuple)) or len(values) != 3:
        raise PqsimdError(f"{where}: {level} must be [size in bytes, ways, line size in bytes], got {values!r}; {fix}")
    for name, v in zip(("size", "ways", "line size"), values):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise PqsimdError(f"{where}: {level} {name} is {v!r}, not a positive whole number; {fix}")
    size, ways, line = values
    if not _pow2(line) or size % line:
        raise PqsimdError(f"{where}: {level} of {size} B with {line} B lines: the line must be a power of two and the "
                          f"size whole lines; {fix}")
    if size < ways * line:
        raise PqsimdError(f"{where}: {level} of {size} B cannot hold one set of {ways} ways of {line} B lines; {fix}")
    return Cache(size, ways, line)


def valgrind_cache(c: Cache) -> Cache:
    """The cache valgrind can simulate: the same size and line, the set count the largest power of
    two dividing the line count that leaves at least the specified ways."""
    if c.size % c.line or not _pow2(c.line):
        raise PqsimdError(f"cache of {c.size} B with {c.line} B lines: the size must be a multiple of a power-of-two line")
    lines = c.size // c.line
    if lines % c.ways == 0 and _pow2(lines // c.ways):
        return c
    sets = 1
    while lines % (sets * 2) == 0 and lines // (sets * 2) >= c.ways:
        sets *= 2
    return Cache(c.size, lines // sets, c.line)


@lru_cache(maxsize=1)
def _shipped() -> dict:
    text = resources.files("pqsimd.data").joinpath("caches.toml").read_text()
    return tomllib.loads(text)


def model_limits() -> str:
    """What valgrind's model leaves out (printed with every simulated table)."""
    return " ".join(_shipped()["what_the_model_leaves_out"]["text"].split())


def names() -> list[str]:
    return [HOST, *_shipped()["cpus"]]


def _parse_size(text: str) -> int:
    text = text.strip().upper()
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    return int(text.rstrip("KMG")) * mult


def host(sys_cache: Path = SYS_CACHE) -> Geometry:
    """This machine's caches, as the kernel reports them (cpu0): the L1 instruction and data caches
    and the highest level as LL."""
    found: dict[tuple[int, str], Cache] = {}
    fix = f"pick a shipped geometry: --sim-cpu {','.join(names()[1:])}"
    try:
        for d in sorted(sys_cache.glob("index*")):
            level = int((d / "level").read_text())
            kind = (d / "type").read_text().strip()
            values = (_parse_size((d / "size").read_text()), int((d / "ways_of_associativity").read_text()),
                      int((d / "coherency_line_size").read_text()))
            found[(level, kind)] = checked(f"L{level} {kind.lower()} cache", values, f"this host's {d}", fix)
    except (OSError, ValueError) as e:
        raise PqsimdError(f"cannot read this host's caches from {sys_cache} ({e}); {fix}") from None
    i1, d1 = found.get((1, "Instruction")), found.get((1, "Data"))
    top = max((k for k in found if k[1] in ("Unified", "Data") and k[0] > 1), default=None)
    if i1 is None or d1 is None or top is None:
        raise PqsimdError(f"{sys_cache} lists no L1 instruction, L1 data and higher cache; pick a shipped geometry: "
                          f"--sim-cpu {','.join(names()[1:])}")
    from . import machine

    return Geometry(HOST, f"this host ({machine.cpu_model()})", f"the kernel: {sys_cache}", None,
                    {"I1": i1, "D1": d1, "LL": found[top]})


def get(name: str) -> Geometry:
    if name == HOST:
        return host()
    cpus = _shipped()["cpus"]
    if name not in cpus:
        raise PqsimdError(f"unknown --sim-cpu {name!r}; known: {', '.join(names())} (data/caches.toml)"
                          f"{did_you_mean(name, names())}")
    t = cpus[name]
    where, fix = f"data/caches.toml [cpus.{name}]", "fix the geometry (size and line in bytes, ways)"
    if not isinstance(t, dict) or any(k not in t for k in ("title", "source", *LEVELS)):
        raise PqsimdError(f"{where} needs title, source, {', '.join(LEVELS)}; {fix}")
    return Geometry(name, t["title"], t["source"], t.get("isa"),
                    {level: checked(level, t[level], where, fix) for level in LEVELS})


def check(names_: list[str]) -> None:
    for n in names_:
        get(n)
