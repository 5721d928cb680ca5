"""Build stage: one harness executable per (variant, compiler) holding every parameter set,
plus PQClean's NIST KAT program per parameter set from the same objects.

Builds are cached by a hash of sources + flags + compiler identity; every compile command is
recorded. The variant's flags go last, so they win; common code is compiled with them too.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from . import __version__, catalog
from .catalog import SchemeFamily, Variant
from .errors import PqsimdError
from .sources import SourceTree

HARNESS_OWN_FLAGS = ("-O2", "-std=c11")  # timer/runner/main: identical code in every variant
LINK_FLAGS = ("-Wl,-z,noexecstack",)


@dataclass(frozen=True)
class Compiler:
    command: str
    path: str
    version: str  # first line of --version
    is_clang: bool

    def to_dict(self) -> dict:
        return {"command": self.command, "path": self.path, "version": self.version, "is_clang": self.is_clang}


@dataclass
class BuildResult:
    variant: str
    key: str
    directory: Path  # cache directory
    harness: Path
    kat: dict[str, Path]  # scheme -> KAT program
    compiler: Compiler
    flags: list[str]
    commands: list[list[str]] = field(default_factory=list)
    cached: bool = False
    seconds: float = 0.0


def find_compiler(cc: str) -> Compiler:
    path = shutil.which(cc)
    if path is None:
        hint = f"apt-get install {cc}" if cc.startswith(("gcc-", "clang-")) else "install it or pass --cc"
        raise PqsimdError(f"compiler '{cc}' not found on PATH ({hint})")
    out = subprocess.run([path, "--version"], capture_output=True, text=True)
    first = (out.stdout.strip().splitlines() or ["unknown"])[0]
    return Compiler(command=cc, path=os.path.realpath(path), version=first, is_clang="clang" in out.stdout.lower())


def _harness_dir() -> Path:
    return Path(str(resources.files("pqsimd").joinpath("harness")))


def cache_root() -> Path:
    return Path(os.environ.get("PQSIMD_CACHE", Path.home() / ".cache" / "pqsimd")) / "builds"


def _impl_dir(tree: SourceTree, fam: SchemeFamily, scheme: str, impl: str) -> Path:
    d = tree.root / fam.schemes[scheme]["dir"] / impl
    if not d.is_dir():
        raise PqsimdError(f"{d} does not exist: the source tree has no '{impl}' implementation of {scheme}")
    return d


def _hash_inputs(tree: SourceTree, fam: SchemeFamily, variant: Variant, flags: list[str], comp: Compiler) -> str:
    h = hashlib.sha256()
    h.update(json.dumps({"flags": flags, "cc": comp.to_dict(), "sources": variant.sources, "pqsimd": __version__}).encode())
    files: list[Path] = []
    for scheme in fam.schemes:
        files += sorted(_impl_dir(tree, fam, scheme, variant.sources).rglob("*"))
    files += sorted((tree.root / "common").rglob("*"))
    files += [tree.root / fam.kat_program, tree.root / fam.kat_rng]
    files += sorted(_harness_dir().glob("*.[ch]"))
    if variant.node_dependent:  # -march=native means something else on every CPU model
        from . import machine

        h.update(machine.cpu_model().encode())
        h.update(" ".join(sorted(machine.cpu_flags())).encode())
    # Files named by flags (e.g. -include x.h) are inputs too.
    files += [Path(f) for f in flags if os.path.isfile(f)]
    for f in files:
        if f.is_file():
            h.update(str(f.name).encode())
            h.update(f.read_bytes())
    return h.hexdigest()


def _compile_plan(tree: SourceTree, fam: SchemeFamily, variant: Variant, flags: list[str], comp: Compiler, out: Path):
    """Every compile as (object, command), and the object lists of the harness and KAT links."""
    common = tree.root / "common"
    harness = _harness_dir()
    steps: list[tuple[Path, list[str]]] = []

    def cc(src: Path, obj: Path, pre: list[str], own_flags: list[str] | None = None) -> Path:
        fl = list(own_flags) if own_flags is not None else list(flags)
        steps.append((obj, [comp.path, *pre, "-c", str(src), "-o", str(obj), *fl]))
        return obj

    common_objs = {
        name: cc(common / name, out / f"common.{name.replace('/', '_')}.o", [f"-I{common}"])
        for name in fam.common.get(variant.sources, ())
    }
    scheme_objs: dict[str, list[Path]] = {}
    harness_objs: list[Path] = []
    for scheme, info in fam.schemes.items():
        impl = _impl_dir(tree, fam, scheme, variant.sources)
        inc = [f"-I{impl}", f"-I{common}"]
        objs = [
            cc(src, out / f"{scheme}.{src.name}.o", inc)
            for src in sorted(impl.iterdir())
            if src.suffix in (".c", ".S")
        ]
        scheme_objs[scheme] = objs
        ns = f"{info['namespace']}_{variant.sources.upper()}"
        defs = [f"-DPQSIMD_NS={ns}", f'-DPQSIMD_SCHEME="{scheme}"', f'-DPQSIMD_IMPL="{variant.sources}"']
        if variant.sources == "avx2":
            defs.append("-DPQSIMD_AVX2")
        harness_objs.append(cc(harness / fam.op_table, out / f"{scheme}.ops.o", [*inc, f"-I{harness}", *defs]))
    for name in ("timer.c", "runner.c", "main.c", "perf.c"):
        harness_objs.append(cc(harness / name, out / f"harness.{name}.o", [f"-I{harness}"], list(HARNESS_OWN_FLAGS)))

    harness_link = [o for objs in scheme_objs.values() for o in objs] + list(common_objs.values()) + harness_objs

    kat_links: dict[str, list[Path]] = {}
    kat_common = {
        name: common_objs.get(name) or cc(common / name, out / f"katcommon.{name}.o", [f"-I{common}"])
        for name in fam.kat_common
    }
    rng = cc(tree.root / fam.kat_rng, out / "kat.rng.o", [f"-I{common}"])
    for scheme, info in fam.schemes.items():
        impl = _impl_dir(tree, fam, scheme, variant.sources)
        ns = f"{info['namespace']}_{variant.sources.upper()}"
        kat = cc(tree.root / fam.kat_program, out / f"{scheme}.nistkat.o", [f"-DPQCLEAN_NAMESPACE={ns}", f"-I{impl}", f"-I{common}"])
        extra = [o for n, o in common_objs.items() if n not in kat_common and n != "randombytes.c"]
        kat_links[scheme] = [*scheme_objs[scheme], *extra, *kat_common.values(), rng, kat]
    return steps, harness_link, kat_links


def _run(cmd: list[str], cwd: Path) -> tuple[list[str], subprocess.CompletedProcess]:
    return cmd, subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)


def build_variant(tree: SourceTree, variant: Variant, cc: str, fam: SchemeFamily | None = None, jobs: int | None = None) -> BuildResult:
    fam = fam or catalog.ml_kem()
    comp = find_compiler(cc)
    flags = list(variant.flags_for(comp.is_clang))
    key = _hash_inputs(tree, fam, variant, flags, comp)
    final = cache_root() / f"{variant.id}-{key[:16]}"
    record = final / "build.json"
    if record.exists():
        info = json.loads(record.read_text())
        return BuildResult(
            variant=variant.id, key=key, directory=final, harness=final / "harness",
            kat={s: final / f"kat-{s}" for s in fam.schemes}, compiler=comp, flags=flags,
            commands=info["commands"], cached=True, seconds=info.get("seconds", 0.0),
        )

    t0 = time.monotonic()
    cache_root().mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{variant.id}-", dir=cache_root()))
    try:
        steps, harness_link, kat_links = _compile_plan(tree, fam, variant, flags, comp, work)
        with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 2) as pool:
            results = list(pool.map(lambda s: _run(s[1], work), steps))
        for cmd, proc in results:
            if proc.returncode != 0:
                log = cache_root() / f"failed-{variant.id}.log"  # outlives the temp build dir
                log.write_text(shlex.join(cmd) + "\n" + proc.stderr)
                first = next((l for l in proc.stderr.splitlines() if "error" in l), proc.stderr.strip()[:200])
                src = cmd[cmd.index("-c") + 1]
                raise PqsimdError(f"variant {variant.id}: {Path(src).name} does not compile with {comp.command} {' '.join(flags)}: {first} (log: {log})")
        links = [("harness", harness_link)] + [(f"kat-{s}", objs) for s, objs in kat_links.items()]
        commands = [cmd for cmd, _ in results]
        for name, objs in links:
            cmd = [comp.path, "-o", str(work / name), *map(str, objs), *flags, *LINK_FLAGS]
            cmd, proc = _run(cmd, work)
            commands.append(cmd)
            if proc.returncode != 0:
                first = (proc.stderr.strip().splitlines() or ["?"])[0]
                raise PqsimdError(f"variant {variant.id}: linking {name} failed: {first}")
        seconds = time.monotonic() - t0
        (work / "build.json").write_text(json.dumps({
            "variant": variant.id, "key": key, "compiler": comp.to_dict(), "flags": flags,
            "commands": [shlex.join(c) for c in commands], "seconds": round(seconds, 2),
        }, indent=2))
        try:
            os.replace(work, final)
        except OSError:  # another process finished the same build first: theirs is identical
            shutil.rmtree(work, ignore_errors=True)
        info = json.loads(record.read_text())
        return BuildResult(
            variant=variant.id, key=key, directory=final, harness=final / "harness",
            kat={s: final / f"kat-{s}" for s in fam.schemes}, compiler=comp, flags=flags,
            commands=info["commands"], cached=False, seconds=seconds,
        )
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
