"""Build stage.

* The driver (harness/driver/) and the glue every variant links (harness/variant/: registry,
  randomness) are built once with one fixed toolchain (data/compilers.toml [harness]), never by
  the compiler under test: every compiler's code is timed by identical code.
* A variant is one shared object per (variant, compiler, family): every parameter set of the
  family, built from the variant's PQClean implementation by the compiler under test with the
  variant's flags (last, so they win), plus one op table per set. Only pqsimd_variant_entry is
  exported; everything else binds locally (-fvisibility=hidden and a version script).
* PQClean's NIST KAT program per parameter set is linked from the very objects of the variant.

Builds are cached (~/.cache/pqsimd/builds or $PQSIMD_CACHE/builds) by a hash of every input:
sources, flags, compiler identity, op table, harness; every compile command is recorded.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from . import __version__, catalog, objcache, store
from .ids import build_id
from .catalog import Family, Variant
from .errors import PqsimdError
from .sources import SourceTree

PIC_FLAGS = ("-fPIC", "-fvisibility=hidden")
# Every function and object in a section of its own, so that a job's layout (layout.py) can place
# each one anywhere at link time without compiling again.
SECTION_FLAGS = ("-ffunction-sections", "-fdata-sections")
# Line tables for --metric ct's source lines (memcheck names file:line): the code is the same with and
# without them (gcc's -fcompare-debug guarantee); DWARF 4 because valgrind 3.19 cannot read clang's 5.
DEBUG_FLAGS = ("-g", "-gdwarf-4")
LINK_FLAGS = ("-Wl,-z,noexecstack",)
# LLVM's link-time optimization (clang -flto, -flto=full|thin) compiles the bitcode objects when the
# shared object is linked, with the linker's own LLVM. A layout copy relinked from that bitcode by
# whichever lld the host has (another LLVM version: other code) would not be the build, so the build's
# link keeps the native objects its LTO made (`-plugin-opt=obj-path`, which LLVM's gold plugin and lld
# both read, one section per function as in every compile) and `link` relinks those (layout.py).
LTO_DIR = "lto"
LTO_RECIPE = "post-LTO native objects kept in lto/"  # in the cache key of an LLVM LTO build only
RECIPE = 5  # how a variant is built (2: its flags reach the link; 3: source layouts; 4: a section per function;
#            5: line tables); part of the cache key


# --- compilers -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Compiler:
    id: str  # safe id used in file names and results, e.g. "gcc-12"
    command: str  # as the user gave it
    path: str
    version: str  # first line of --version
    family: str  # gcc | clang | unknown
    target: tuple[str, ...] = ()  # arguments that make it build for another ISA (clang --target=...)
    isa: str = ""  # the ISA it builds for, when not this host's
    digest: str = ""  # sha256 of the resolved executable (a wrapper script's own text) and its `-v` output

    @property
    def argv(self) -> list[str]:
        """The command that compiles (and links): the compiler and its target arguments."""
        return [self.path, *self.target]

    def to_dict(self) -> dict:
        d = {"id": self.id, "command": self.command, "path": self.path, "version": self.version, "family": self.family,
             "digest": self.digest}
        if self.isa:  # only then: a host build's cache key stays what it was
            d |= {"target": list(self.target), "isa": self.isa}
        return d


def compiler_id(spec: str) -> tuple[str, str]:
    """(id, command) of a --cc item: `gcc-12`, `/opt/bin/gcc-14`, or `mygcc=/opt/bin/gcc`."""
    if "=" in spec:
        cid, cmd = spec.split("=", 1)
    else:
        cid, cmd = Path(spec).name, spec
    catalog.check_id("compiler", cid, "--cc", hint=f"; name it, e.g. --cc mycc={cmd}" if "=" not in spec else "")
    return cid, cmd


def find_compiler(spec: str, isa=None) -> Compiler:
    """A --cc item as a compiler for `isa` (pqsimd.isa.Isa; None or native: this host): for another
    ISA, gcc[-N] becomes its cross gcc (<triple>-gcc[-N]) and clang[-N] gets --target=<its target>;
    a path given by the user is taken as it is (a cross compiler of the user's)."""
    cid, cmd = compiler_id(spec)
    target: tuple[str, ...] = ()
    cross = isa is not None and not isa.native
    if cross and "/" not in cmd:
        fam = "clang" if cmd.startswith("clang") else "gcc" if cmd.startswith(("gcc", "cc")) else None
        if fam == "gcc":
            cmd = f"{isa.gnu_triple}-gcc" + cmd.removeprefix("cc").removeprefix("gcc")
        elif fam == "clang":
            target = (f"--target={isa.clang_target}",)
    path = shutil.which(cmd)
    if path is None:
        fam = "clang" if "clang" in cid else "gcc" if "gcc" in cid else None
        pkg = catalog.compilers_doc()["families"].get(fam, {}).get("package", "") if fam else ""
        version = cid.split("-", 1)[1] if "-" in cid else ""
        hint = f"apt-get install {pkg.format(version=version)}" if pkg and version else "install it, or pass --cc /path/to/cc"
        if cross and not target:
            hint = f"apt-get install {' '.join(isa.packages)}"
        raise PqsimdError(f"compiler '{cmd}' not found ({hint})")
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise PqsimdError(f"compiler '{cmd}' does not run ({e})") from None
    first = (out.stdout.strip().splitlines() or ["unknown"])[0]
    real = os.path.realpath(path)
    return Compiler(id=cid, command=shlex.join([cmd, *target]), path=real, version=first,
                    family=catalog.compiler_family(out.stdout), target=target, isa=isa.name if cross else "",
                    digest=compiler_digest(real, target))


def compiler_digest(path: str, target: tuple[str, ...] = ()) -> str:
    """What a compiler is, by content: the sha256 of the resolved executable (for a wrapper script,
    the script) and of its `-v` output (the compiler the wrapper calls, its configuration): an
    upgrade or an edit under the same path and banner makes a new identity, so nothing is reused."""
    h = hashlib.sha256()
    try:
        h.update(Path(path).read_bytes())
        out = subprocess.run([path, *target, "-v"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise PqsimdError(f"compiler {path} cannot be read or run ({getattr(e, 'strerror', None) or e})") from None
    h.update((out.stdout + out.stderr).encode())
    return h.hexdigest()


def bitcode(path: str | Path) -> bool:
    """Whether a file is an LLVM bitcode object (clang -flto's), raw or in its wrapper."""
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError:  # not a file (an option), or unreadable: not an input lld would optimize
        return False
    return head in (b"BC\xc0\xde", b"\xde\xc0\x17\x0b")


def cache_root() -> Path:
    base = os.environ.get("PQSIMD_CACHE")
    root = (Path(base) if base else Path.home() / ".cache" / "pqsimd") / "builds"
    try:
        root.mkdir(parents=True, exist_ok=True)
        probe = root / f".probe-{os.getpid()}-{threading.get_ident()}"  # threads of one process call it too
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise PqsimdError(f"build cache {root} is not a writable directory ({e.strerror or e}); "
                          f"set PQSIMD_CACHE to a writable directory") from None
    return root


def host_tool(name: str, what: str, sources: list[Path], flags: list[str], hashed: tuple[Path, ...] = (),
              output: str | None = None, cc: str = "cc") -> Path:
    """A helper program of pqsimd's own (the single-step counter, the QEMU plugin, the hazard calibration)
    built once per (sources, `hashed` inputs, flags, host compiler) into the cache beside the builds:
    DIR/<name>-<hash>/<output or name>. One line naming the fix if the compiler is missing or fails."""
    compiler = shutil.which(cc)
    if compiler is None:
        raise PqsimdError(f"{cc} not found: building {what} needs a C compiler (apt-get install gcc)")
    version = subprocess.run([compiler, "--version"], capture_output=True, text=True).stdout
    h = hashlib.sha256(version.encode() + " ".join(flags).encode())
    for f in (*sources, *hashed):
        h.update(Path(f).read_bytes())
    final = cache_root() / f"{name}-{h.hexdigest()[:16]}" / (output or name)
    if final.exists():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(f".{final.name}-{os.getpid()}-{threading.get_ident()}")
    cmd = [compiler, *flags, *(str(f) for f in sources), "-o", str(tmp)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
        raise PqsimdError(f"{what} does not compile ({tail}): {' '.join(cmd)}")
    os.replace(tmp, final)
    return final


def _harness_dir() -> Path:
    return Path(str(resources.files("pqsimd").joinpath("harness")))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_stale_builds(root: Path) -> list[Path]:
    """Remove temporary build folders whose builder is gone (a killed build leaves one)."""
    removed = []
    for d in root.glob(".tmp-*"):
        m = re.match(r"\.tmp-(\d+)-", d.name)
        if m and not _pid_alive(int(m.group(1))):
            shutil.rmtree(d, ignore_errors=True)
            removed.append(d)
    return removed


def _run(cmd: list[str], cwd: Path) -> tuple[list[str], subprocess.CompletedProcess]:
    return cmd, subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)


def _error_line(stderr: str) -> str:
    """The line that says what went wrong (an error, not a warning, not collect2's summary), else
    the last line."""
    lines = [l for l in stderr.strip().splitlines() if l.strip() and "warning" not in l.lower()]
    for pat in (r"undefined reference", r"not recognized", r"\bld(\.\w+)?: ", r"cannot find", r"fatal error", r"\berror\b"):
        hit = next((l for l in lines if re.search(pat, l, re.I) and not l.startswith("collect2")), None)
        if hit:
            return hit.strip()[:300]
    return (lines[-1] if lines else "(no output)").strip()[:300]


def _fail(root: Path, name: str, cmd: list[str], proc: subprocess.CompletedProcess, what: str) -> PqsimdError:
    log = root / f"failed-{name}.log"  # outlives the temporary build folder
    log.write_text(shlex.join(cmd) + "\n" + proc.stdout + proc.stderr)
    return PqsimdError(f"{what}: {_error_line(proc.stderr)} (log: {log})")


def _intact(final: Path, binary: str) -> bool:
    """Whether a cached build's binary (variant.so, driver) is still the one it built (the sha256 in
    its build.json); if not (replaced, truncated, or a record from before the hash), the folder is
    moved aside and removed, so it is built again: a cached binary is never taken on trust."""
    try:
        want = json.loads((final / "build.json").read_text()).get("sha256")
        if want and store.sha256_file(final / binary) == want:
            return True
    except (OSError, ValueError, AttributeError):
        pass
    aside = final.with_name(f".tmp-{os.getpid()}-stale-{final.name}")
    try:
        os.replace(final, aside)
    except OSError:
        return False  # gone already (another process moved it): it is built again either way
    shutil.rmtree(aside, ignore_errors=True)
    return False


def _publish(work: Path, final: Path) -> None:
    try:
        os.replace(work, final)
    except OSError:  # another process finished the same build first: theirs is identical
        shutil.rmtree(work, ignore_errors=True)


# --- the driver and the glue -------------------------------------------------------------------------

@dataclass
class Driver:
    path: Path
    glue: list[Path]  # objects every variant links (registry, randomness)
    compiler: Compiler
    key: str
    flags: list[str]
    glue_key: str = ""  # what variants depend on: a change to the timing code alone rebuilds no variant
    isa: Any = None  # pqsimd.isa.Isa it runs on (its launcher runs it here); None: this host's
    sha256: str = ""  # of the driver as built (its build.json's)

    def launcher(self) -> list[str]:
        """What runs the driver (and the programs built beside it) here: nothing natively, else the emulator."""
        return self.isa.launcher() if self.isa is not None else []

    def to_dict(self) -> dict:
        return {"compiler": self.compiler.to_dict(), "flags": self.flags, "key": self.key, "glue_key": self.glue_key}


def _hash_files(h, files) -> None:
    for f in files:
        if f.is_file():
            h.update(str(f.name).encode())
            h.update(f.read_bytes())


MEMCHECK_HEADER = Path("/usr/include/valgrind/memcheck.h")


def build_driver(isa=None) -> Driver:
    """The driver and glue objects, with the fixed toolchain (cached); for another ISA its cross gcc."""
    conf = catalog.compilers_doc()["harness"]
    comp = find_compiler(conf["cc"], isa)
    flags = list(conf["flags"])
    harness = _harness_dir()
    glue_sources = sorted((harness / "variant").glob("*")) + [harness / "pqsimd.h"]
    g = hashlib.sha256(json.dumps({"cc": comp.to_dict(), "flags": flags, "pqsimd": __version__}).encode())
    _hash_files(g, glue_sources)
    glue_key = g.hexdigest()
    h = hashlib.sha256(glue_key.encode())
    _hash_files(h, sorted((harness / "driver").glob("*.[ch]")))
    _hash_files(h, [MEMCHECK_HEADER])  # driver/ct.c has the constant-time test only with it
    key = h.hexdigest()
    root = cache_root()
    final = root / f"driver-{comp.isa + '-' if comp.isa else ''}{key[:16]}"
    glue_names = ("registry", "rng")
    if not ((final / "driver").exists() and _intact(final, "driver")):
        clean_stale_builds(root)
        work = Path(tempfile.mkdtemp(prefix=f".tmp-{os.getpid()}-driver-", dir=root))
        try:
            cmds = []
            for name in glue_names:
                cmds.append([*comp.argv, *flags, *PIC_FLAGS, f"-I{harness}", "-c", str(harness / "variant" / f"{name}.c"),
                             "-o", str(work / f"{name}.o")])
            objs = []
            for src in sorted((harness / "driver").glob("*.c")):
                obj = work / f"driver.{src.stem}.o"
                cmds.append([*comp.argv, *flags, f"-I{harness / 'driver'}", "-c", str(src), "-o", str(obj)])
                objs.append(obj)
            for cmd in cmds:
                _, proc = _run(cmd, work)
                if proc.returncode:
                    raise _fail(root, "driver", cmd, proc, f"the pqsimd driver does not compile with {comp.command}")
            link = [*comp.argv, "-o", str(work / "driver"), *map(str, objs), "-ldl", *LINK_FLAGS]
            _, proc = _run(link, work)
            if proc.returncode:
                raise _fail(root, "driver", link, proc, "linking the pqsimd driver failed")
            (work / "build.json").write_text(json.dumps({"compiler": comp.to_dict(), "flags": flags, "key": key,
                                                         "commands": [shlex.join(c) for c in cmds + [link]],
                                                         "sha256": store.sha256_file(work / "driver")}, indent=2))
            _publish(work, final)
        finally:
            if work.exists():
                shutil.rmtree(work, ignore_errors=True)
    sha = json.loads((final / "build.json").read_text()).get("sha256", "")
    return Driver(final / "driver", [final / f"{n}.o" for n in glue_names], comp, key, flags, glue_key, isa, sha)


# --- variants ----------------------------------------------------------------------------------------

@dataclass
class Build:
    """One variant of one family by one compiler."""

    family: str
    variant: str
    compiler: Compiler
    flags: list[str]  # as given to the compiler (family spellings applied)
    key: str
    directory: Path  # cache directory
    library: Path  # the shared object
    kat: dict[str, Path]  # scheme -> KAT program (absent: the family has none)
    schemes: list[str]
    commands: list[str] = field(default_factory=list)
    cached: bool = False
    seconds: float = 0.0
    sources: str = ""  # the PQClean implementation it was built from
    fp_exact: bool = True  # the variant's promise that its flags keep floating-point rounding (the gate reads it)
    link: list[str] = field(default_factory=list)  # the shared object's link from the cached objects (layout.py relinks it)
    sha256: str = ""  # of the shared object as built (the build record's); the gate's verdict is keyed by it

    @property
    def id(self) -> str:
        return build_id(self.variant, self.compiler.id, self.family)

    @property
    def label(self) -> str:
        return f"{self.variant} ({self.compiler.id}, {self.family})"


def _context(tree: SourceTree, fam: Family, variant: Variant, schemes: list[str] | None = None):
    """The layout of the variant's implementation and what it builds (its kernel groups as the
    variant switches them)."""
    from .sources import find_layout
    from .sources.layout import Context

    impl = fam.implementation(variant.sources)
    lay = find_layout(impl.layout)
    native = frozenset(impl.groups if variant.native is None else variant.native)
    ctx = Context(tree=tree, family=fam, impl=impl, schemes=tuple(schemes or fam.schemes), native=native,
                  harness=_harness_dir())
    return lay, ctx


def present_schemes(tree: SourceTree, fam: Family, impl: str, schemes: list[str] | None = None) -> list[str]:
    """The family's parameter sets (of `schemes`, default all) the trees have this implementation
    of (a --source tree may hold a few); one line if none."""
    from .sources import find_layout
    from .sources.layout import Context

    im = fam.implementation(impl)
    ctx = Context(tree=tree, family=fam, impl=im, schemes=tuple(schemes or fam.schemes), native=frozenset(),
                  harness=_harness_dir())
    out = find_layout(im.layout).schemes(ctx)
    if not out:
        first = next(iter(fam.schemes.values()))
        where = f"looked for e.g. {first.dir}/{impl}" if im.layout == "pqclean" else f"layout {im.layout}"
        raise PqsimdError(f"the source tree {tree.root} has no '{impl}' implementation of any {fam.name} parameter set "
                          f"({where})")
    return out


def unavailable(fam: Family, variant: Variant, tree: SourceTree | None = None) -> str | None:
    """Why this family cannot be built as this variant (None if it can)."""
    impl = fam.implementation(variant.sources)
    if impl is None:
        return f"family {fam.name} has no '{variant.sources}' implementation (it has {', '.join(fam.implementations)})"
    unknown = [g for g in (variant.native or ()) if g not in impl.groups]
    if unknown:
        known = f"its groups: {', '.join(impl.groups)}" if impl.groups else "it has no switchable groups"
        return f"implementation {impl.name} has no kernel group '{unknown[0]}' ({known})"
    if tree is not None and impl.table.get("crate") and not any(c.name == impl.table["crate"] for c in tree.crates):
        try:
            tree.crate_root(impl.table["crate"], f"implementation {impl.name}")
        except PqsimdError as e:
            return str(e)
    if tree is not None and impl.table.get("checkout"):
        try:
            tree.checkout_root(impl.table["checkout"], f"implementation {impl.name}")
        except PqsimdError as e:
            return str(e)
    return None


def _node_salt(variant: Variant) -> str:
    if not variant.node_dependent:  # -march=native means something else on every CPU model
        return ""
    from . import machine

    return machine.cpu_model() + " ".join(sorted(machine.cpu_flags()))


def _included_tables(inputs) -> list[Path]:
    """Op tables and headers of harness/ that an op table among the inputs #includes (ml_dsa_aarch64.c
    compiles ml_dsa.c with other names; a family's op ids, ops/<family>_ops.h; a library's glue header),
    followed through the included files: a change to them rebuilds it too."""
    harness = _harness_dir()
    out = []
    todo = [Path(f) for f in inputs]
    while todo:
        f = todo.pop()
        if f.suffix in (".c", ".h") and f.is_relative_to(harness) and f.is_file():
            for n in re.findall(r'^#include "([^"]+\.[ch])"', f.read_text(), re.M):
                # as the compiler finds it: beside the including file, else under -I{harness}
                found = next((p for p in (f.parent / n, harness / n) if p.is_file()), None)
                if found is not None and found not in out and found.name != "optable.h":
                    out.append(found)
                    todo.append(found)
    return out


def llvm_lto(family: str, flags: list[str] | tuple[str, ...]) -> bool:
    """Whether a clang link with these flags runs LLVM's link-time optimization (the last of -flto,
    -flto=MODE, -fno-lto wins)."""
    on = False
    for f in flags:
        if f == "-fno-lto":
            on = False
        elif f == "-flto" or f.startswith("-flto="):
            on = True
    return family == "clang" and on


def _inputs_key(fam: Family, variant: Variant, flags: list[str], comp: Compiler, driver: Driver, plan,
                schemes: list[str], native: list[str]) -> str:
    h = hashlib.sha256(json.dumps({"recipe": RECIPE, "flags": flags, "cc": comp.to_dict(), "sources": variant.sources,
                                   "family": fam.text, "glue": driver.glue_key, "pqsimd": __version__}).encode())
    if llvm_lto(comp.family, flags):  # an LTO build cached before it kept its native objects is built again
        h.update(LTO_RECIPE.encode())
    h.update(json.dumps({"native": native, "schemes": schemes, "generated": plan.generated,
                         "units": [[str(u.src), list(u.pre)] for u in plan.units()]}).encode())
    if plan.libs:  # (only then: the keys of builds without libraries stay what they were)
        h.update(json.dumps({"libs": plan.libs}).encode())
    files = [*plan.inputs, _harness_dir() / "pqsimd.h", _harness_dir() / "ops" / "optable.h",
             _harness_dir() / "variant" / "exports.map", *_included_tables(plan.inputs)]
    h.update(_node_salt(variant).encode())
    files += [Path(f) for f in flags if os.path.isfile(f)]  # files named by flags (-include x.h)
    _hash_files(h, files)
    return h.hexdigest()


def _commands(plan, flags: list[str], comp: Compiler, work: Path) -> tuple[list[list[str]], dict[str, Path]]:
    """Every compile command of the plan, and each unit's object."""
    from .sources.layout import BUILD_DIR

    cmds, objs = [], {}
    for u in plan.units():
        obj = work / u.obj
        pre = [x.replace(BUILD_DIR, str(work)) for x in u.pre]
        cmds.append([*comp.argv, *PIC_FLAGS, *SECTION_FLAGS, *DEBUG_FLAGS, *pre, "-c", str(u.src), "-o", str(obj), *flags])
        objs[u.obj] = obj
    return cmds, objs


def _post_lto_link(comp: Compiler, work: Path, library: list[Path], lto_dir: Path, tail: list[str]) -> list[str] | None:
    """The shared object's link from the native objects its LTO wrote (its bitcode objects replaced by
    them: native.o, native.o1, ... in task order), or None when the linker wrote none (the copies are
    then the build as linked: layout.relink refuses bitcode)."""

    native = sorted((f for f in lto_dir.iterdir() if f.is_file() and f.stat().st_size > 0),
                    key=lambda f: (len(f.name), f.name))
    if not native:
        return None
    rest = [str(o) for o in library if not bitcode(o)]
    return [*comp.argv, "-shared", "-o", str(work / "variant.so"), *map(str, native), *rest, *SECTION_FLAGS, *tail]


def build_variant(tree: SourceTree, fam: Family, variant: Variant, compiler: Compiler | str,
                  driver: Driver | None = None, jobs: int | None = None, schemes: list[str] | None = None) -> Build:
    """Build (or fetch from the cache) one variant of one family by one compiler: every parameter
    set of the family the trees hold, or those of `schemes`."""
    comp = compiler if isinstance(compiler, Compiler) else find_compiler(compiler)
    driver = driver or build_driver()
    why = unavailable(fam, variant, tree)
    if why:
        raise PqsimdError(f"variant {variant.id}: {why}")
    flags = catalog.translate_flags(variant.flags, comp.family, variant.id)
    wanted = [s for s in fam.schemes if schemes is None or s in schemes]
    present = present_schemes(tree, fam, variant.sources, wanted)
    lay, ctx = _context(tree, fam, variant, present)
    plan = lay.plan(ctx)
    key = _inputs_key(fam, variant, flags, comp, driver, plan, wanted, sorted(ctx.native))
    root = cache_root()
    final = root / f"{comp.isa + '.' if comp.isa else ''}{build_id(variant.id, comp.id, fam.name)}-{key[:16]}"
    record = final / "build.json"

    def result(cached: bool, seconds: float) -> Build:
        info = json.loads(record.read_text())
        return Build(family=fam.name, variant=variant.id, compiler=comp, flags=flags, key=key, directory=final,
                     library=final / "variant.so",
                     kat={s: final / f"kat-{s}" for s in fam.schemes if (final / f"kat-{s}").exists()},
                     schemes=info.get("schemes", list(fam.schemes)), commands=info["commands"], cached=cached,
                     seconds=seconds if not cached else info.get("seconds", 0.0), sources=variant.sources,
                     fp_exact=variant.fp_exact, link=info.get("link") or [],
                     sha256=info.get("sha256") or store.sha256_file(final / "variant.so"))

    if record.exists() and _intact(final, "variant.so"):
        return result(True, 0.0)
    t0 = time.monotonic()
    clean_stale_builds(root)
    name = build_id(variant.id, comp.id, fam.name)
    work = Path(tempfile.mkdtemp(prefix=f".tmp-{os.getpid()}-{name}-", dir=root))
    try:
        for rel, text in plan.generated.items():
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            (work / rel).write_text(text)
        cmds, objs = _commands(plan, flags, comp, work)
        salt = json.dumps({"cc": comp.to_dict(), "node": _node_salt(variant)})
        salt += hashlib.sha256(b"".join(Path(f).read_bytes() for f in flags if os.path.isfile(f))).hexdigest()
        with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 2) as pool:
            results = list(pool.map(lambda c: objcache.compile_unit(c, work, root, salt), cmds))
        for cmd, (proc, _) in zip(cmds, results):
            if proc.returncode != 0:
                src = Path(cmd[cmd.index("-c") + 1]).name
                raise _fail(root, name, cmd, proc,
                            f"variant {variant.id} ({fam.name}): {src} does not compile with {comp.command} {' '.join(flags)}")
        commands = list(cmds)
        exports = _harness_dir() / "variant" / "exports.map"
        library = [objs[u.obj] for u in [*(u for us in plan.schemes.values() for u in us), *plan.shared,
                                         *plan.tables.values()]]
        # The variant's flags reach every link too (-flto needs them there, -Wl,... only acts there),
        # after the objects as they come last in every compile.
        so_tail = [*map(str, driver.glue), *plan.libs, *PIC_FLAGS, f"-Wl,--version-script={exports}", *LINK_FLAGS, *flags]
        lto = llvm_lto(comp.family, flags)
        lto_dir = work / LTO_DIR
        if lto:
            lto_dir.mkdir()
            keep = [*SECTION_FLAGS, f"-Wl,-plugin-opt=obj-path={lto_dir / 'native.o'}"]
        links = [("variant.so", [*comp.argv, "-shared", "-o", str(work / "variant.so"), *map(str, library),
                                 *(keep if lto else ()), *so_tail])]
        for sid, own in plan.kat.items():
            kat_objs = [objs[u.obj] for u in [*plan.schemes[sid], *plan.shared, *own]]
            links.append((f"kat-{sid}", [*comp.argv, "-o", str(work / f"kat-{sid}"), *map(str, kat_objs), *plan.libs,
                                         *LINK_FLAGS, *flags]))
        for out_name, cmd in links:
            cmd, proc = _run(cmd, work)
            commands.append(cmd)
            if proc.returncode != 0:
                raise _fail(root, name, cmd, proc, f"variant {variant.id} ({fam.name}): linking {out_name} failed")
        seconds = time.monotonic() - t0
        # recorded with the folder the build ends in (the temporary one is renamed to it)
        recorded = [shlex.join(c).replace(str(work), str(final)) for c in commands]
        # the link of the shared object, as an argument list: layout.py relinks its objects per job
        so_link = links[0][1]
        if lto:
            so_link = _post_lto_link(comp, work, library, lto_dir, so_tail) or so_link
        so_link = [a.replace(str(work), str(final)) for a in so_link]
        (work / "build.json").write_text(json.dumps({
            "family": fam.name, "variant": variant.id, "schemes": present,
            "key": key, "compiler": comp.to_dict(), "flags": flags, "native": sorted(ctx.native),
            "driver": driver.to_dict(), "commands": recorded, "link": so_link, "seconds": round(seconds, 2),
            "objects_from_cache": sum(hit for _, hit in results), "objects": len(results),
            "sha256": store.sha256_file(work / "variant.so"),
        }, indent=2))
        _publish(work, final)
        return result(False, seconds)
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
