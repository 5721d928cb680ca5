"""Sources stage: the pinned C trees from crates.io (or the user's own PQClean tree), and the
source layouts that say how an implementation's files are found and compiled.

Every crate of data/crate/Cargo.toml is pinned by Cargo.lock; `cargo fetch --locked` downloads
and checks them, `cargo metadata` says where they are. Nothing is built as Rust. The PQClean tree
(shipped by pqcrypto-mlkem) is the family's home: its META.yml holds the KAT hashes and its
test/ the KAT program, for every implementation. Other trees (e.g. the pq-code-package libraries
in oqs-sys and mldsa-native-rs) are named by the implementation in the family TOML (`crate`).

A layout is one module of this package (`layout = "pq-code-package"` -> pq_code_package.py)
with the interface of layout.py; a family TOML says which implementation uses which.

A **checkout** is a tree the user brings (`--sources NAME=PATH`, e.g. a git clone of a library at a
release no crate vendors yet): an implementation names it with `checkout = "NAME"` instead of a
crate. It is identified by its `git describe` and a content hash of every file (the .git folder
aside), both recorded in the manifest; `check_checkouts` refuses, in one line, a name no family
uses and a tree without the files an implementation `expect`s (another project, or a release
without the backend).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from types import ModuleType

from ..errors import PqsimdError
from ..ids import SAFE_ID

CRATE = "pqcrypto-mlkem"  # the crate whose pqclean/ folder is the PQClean tree


@dataclass(frozen=True)
class Crate:
    """One pinned crate: where cargo unpacked it, and what Cargo.lock says it is."""

    name: str
    root: Path
    version: str
    checksum: str | None

    def to_dict(self) -> dict:
        return {"root": str(self.root), "version": self.version, "checksum": self.checksum}


@dataclass(frozen=True)
class Checkout:
    """A tree the user brought (`--sources NAME=PATH`): where it is and what it is."""

    name: str
    root: Path
    describe: str | None  # `git describe --tags --always --dirty`; None: not a git checkout
    sha256: str  # of every file's relative path and bytes, sorted (the .git folder aside)

    def to_dict(self) -> dict:
        return {"root": str(self.root), "describe": self.describe, "sha256": self.sha256}


def content_sha256(root: Path) -> str:
    """A tree's content: every regular file's relative path and sha256, in path order (.git aside)."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != ".git")
        for name in sorted(filenames):
            f = Path(dirpath) / name
            if f.is_file() and not f.is_symlink():
                h.update(str(f.relative_to(root)).encode() + b"\0" + hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()


def _describe(root: Path) -> str | None:
    git = shutil.which("git")
    if git is None or not (root / ".git").exists():
        return None
    proc = subprocess.run([git, "-C", str(root), "-c", f"safe.directory={root}", "describe", "--tags", "--always",
                           "--dirty"], capture_output=True, text=True)
    return proc.stdout.strip() or None if proc.returncode == 0 else None


def parse_checkouts(items: list[str] | None) -> dict[str, str]:
    """`NAME=PATH` items (--sources) as {name: path}; one line for an item that is not one."""
    out: dict[str, str] = {}
    for item in items or []:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise PqsimdError(f"--sources {item!r}: give NAME=PATH (NAME: what an implementation's `checkout` says, "
                              f"`pqsimd list`; PATH: your clone)")
        if name in out:
            raise PqsimdError(f"--sources names {name} twice; give one checkout per name")
        out[name] = path
    return out


def check_checkouts(items: list[str] | None, families) -> list[str]:
    """The --sources items, each checked against the implementations that use its name (their
    `expect`ed files), with absolute paths: one line for the first problem."""
    users: dict[str, list] = {}
    for fam in families:
        for impl in fam.implementations.values():
            name = impl.table.get("checkout")
            if name:
                users.setdefault(name, []).append((fam, impl))
    out = []
    for name, path in parse_checkouts(items).items():
        if name not in users:
            known = ", ".join(sorted(users)) or "none"
            raise PqsimdError(f"--sources {name}=...: no implementation builds from a checkout called {name!r} "
                              f"(known: {known})")
        root = Path(path).expanduser().resolve()
        if not root.is_dir():
            raise PqsimdError(f"--sources {name}={path}: no such directory (give the folder of your git clone of {name})")
        for fam, impl in users[name]:
            tree = impl.table.get("tree", "")
            for rel in [*impl.table.get("expect", []), *([tree] if tree else [])]:
                if not (root / rel).exists():
                    hint = impl.table.get("checkout_hint", "")
                    raise PqsimdError(f"--sources {name}={root}: not the tree {fam.name}'s {impl.name} is built from: "
                                      f"no {rel}{'; ' + hint if hint else ''}")
        out.append(f"{name}={root}")
    return out


@dataclass(frozen=True)
class SourceTree:
    root: Path  # the PQClean tree (has common/, crypto_kem/ and crypto_sign/, test/)
    origin: str  # "crate" | "path"
    crate: str | None = None
    version: str | None = None
    checksum: str | None = None
    crates: tuple[Crate, ...] = ()  # every pinned crate (none when --source replaces them)
    checkouts: tuple[Checkout, ...] = ()  # the trees the user brought (--sources NAME=PATH)

    def checkout_root(self, name: str, who: str) -> Path:
        """The tree the user brought under this name; one line saying how to bring it if none."""
        found = next((c for c in self.checkouts if c.name == name), None)
        if found is None:
            raise PqsimdError(f"{who} is built from a checkout of {name} you bring: add --sources {name}=PATH "
                              f"(e.g. a git clone of it)")
        return found.root

    def crate_root(self, name: str, who: str) -> Path:
        """The unpacked tree of a pinned crate; one line if there is none (a --source study)."""
        found = next((c for c in self.crates if c.name == name), None)
        if found is None:
            if self.origin == "path":
                raise PqsimdError(f"{who} comes from the pinned crate {name}, and --source replaces the pinned "
                                  f"sources with a PQClean tree only; run without --source to build it")
            raise PqsimdError(f"{who} needs the crate {name}, which data/crate/Cargo.toml does not pin; add it "
                              f"there (exact version) and commit the regenerated Cargo.lock")
        return found.root

    def to_dict(self) -> dict:
        return {
            "root": str(self.root),
            "origin": self.origin,
            "crate": self.crate,
            "version": self.version,
            "checksum": self.checksum,
            "crates": {c.name: c.to_dict() for c in self.crates},
            **({"checkouts": {c.name: c.to_dict() for c in self.checkouts}} if self.checkouts else {}),
        }


def find_layout(name: str, where: str = "family") -> ModuleType:
    """The layout module named by a family TOML (`pq-code-package` -> sources/pq_code_package.py)."""
    if not isinstance(name, str) or not SAFE_ID.match(name):
        raise PqsimdError(f"{where}: layout must name a module of pqsimd/sources/, got {name!r}")
    module = f"{__name__}.{name.replace('-', '_')}"
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name != module:
            raise
        known = sorted(p.stem.replace("_", "-") for p in Path(__file__).parent.glob("*.py")
                       if p.stem not in ("__init__", "layout"))
        raise PqsimdError(f"{where}: unknown source layout {name!r}; known: {', '.join(known)}") from None


def _crate_dir() -> Path:
    return Path(str(resources.files("pqsimd.data").joinpath("crate")))


def _cargo() -> str:
    cargo = shutil.which("cargo")
    if cargo is None:
        home_cargo = Path.home() / ".cargo" / "bin" / "cargo"
        if home_cargo.exists():
            return str(home_cargo)
        raise PqsimdError(
            "cargo not found: install Rust (`apt-get install cargo` or rustup) so pqsimd can fetch "
            "the pinned PQClean sources, or pass --source PATH to a PQClean tree"
        )
    return cargo


def check_tree(root: Path) -> Path:
    """A PQClean-layout tree has common/ and crypto_kem/ or crypto_sign/; say what is missing.
    (Each family's own directories are checked when it is built.)"""
    root = Path(root).expanduser().resolve()
    if not root.is_dir():
        raise PqsimdError(f"--source {root}: no such directory (point it at the folder that holds common/, crypto_kem/, crypto_sign/)")
    if not (root / "common").is_dir() or not ((root / "crypto_kem").is_dir() or (root / "crypto_sign").is_dir()):
        raise PqsimdError(
            f"{root} is not a PQClean tree: it needs common/ and crypto_kem/ or crypto_sign/ (point --source at the "
            "folder that holds them)"
        )
    return root


def _pinned() -> list[str]:
    """The crates data/crate/Cargo.toml depends on, in file order."""
    text = (_crate_dir() / "Cargo.toml").read_text()
    deps = text.split("[dependencies]", 1)[-1]
    return re.findall(r"^([A-Za-z0-9_-]+)\s*=", deps, re.M)


def _check_cargo_home() -> None:
    """cargo keeps the pinned crates under $CARGO_HOME (default $HOME/.cargo): a directory that is not
    there and cannot be made, or cannot be written, is named in one line before cargo fails obscurely."""
    home = os.environ.get("HOME", "")
    cargo_home = Path(os.environ.get("CARGO_HOME") or Path(home or "/") / ".cargo")
    usable = cargo_home if cargo_home.exists() else cargo_home.parent
    if not usable.is_dir() or not os.access(usable, os.W_OK | os.X_OK):
        what = "CARGO_HOME" if os.environ.get("CARGO_HOME") else f"HOME={home or '(unset)'}"
        raise PqsimdError(f"{usable} is not a writable directory, so cargo cannot keep the pinned sources under "
                          f"{cargo_home} ({what}); set HOME (or CARGO_HOME) to a usable directory, or pass --source "
                          f"PATH to a PQClean tree")


def _cargo_error(stderr: str) -> str:
    """cargo's (or rustup's) own error line, not the last line of a backtrace."""
    lines = [l.strip() for l in stderr.strip().splitlines() if l.strip()]
    return next((l for l in lines if l.startswith("error")), lines[-1] if lines else "(no output)")


def locate(source: Path | None = None, checkouts: list[str] | None = None) -> SourceTree:
    """The PQClean tree and the pinned crates (or the user's PQClean tree), and the user's checkouts
    (`NAME=PATH` items, identified here)."""
    brought = tuple(Checkout(n, Path(p), _describe(Path(p)), content_sha256(Path(p)))
                    for n, p in parse_checkouts(checkouts).items())
    if source is not None:
        return SourceTree(root=check_tree(source), origin="path", checkouts=brought)
    cargo = _cargo()
    _check_cargo_home()
    manifest = _crate_dir() / "Cargo.toml"
    fetch = subprocess.run(
        [cargo, "fetch", "--locked", "--manifest-path", str(manifest)], capture_output=True, text=True
    )
    if fetch.returncode != 0:
        raise PqsimdError(f"cargo could not fetch the pinned sources ({', '.join(_pinned())}; network or registry "
                          f"problem, or HOME={os.environ.get('HOME', '(unset)')} lacks the Rust toolchain?): "
                          f"{_cargo_error(fetch.stderr)}")
    meta = subprocess.run(
        [cargo, "metadata", "--locked", "--offline", "--format-version", "1", "--manifest-path", str(manifest)],
        capture_output=True,
        text=True,
    )
    if meta.returncode != 0:
        raise PqsimdError(f"cargo metadata failed for the pinned sources: {_cargo_error(meta.stderr)}")
    packages = json.loads(meta.stdout)["packages"]
    lock = (_crate_dir() / "Cargo.lock").read_text()
    crates = []
    for name in _pinned():
        pkg = next((p for p in packages if p["name"] == name), None)
        if pkg is None:
            raise PqsimdError(f"{name} is missing from cargo metadata; is {manifest} intact?")
        m = re.search(rf'name = "{re.escape(name)}"\nversion = "[^"]+"\nsource = "[^"]+"\nchecksum = "([0-9a-f]+)"', lock)
        crates.append(Crate(name, Path(pkg["manifest_path"]).parent, pkg["version"], m.group(1) if m else None))
    home = next((c for c in crates if c.name == CRATE), None)
    if home is None:
        raise PqsimdError(f"data/crate/Cargo.toml does not pin {CRATE}, whose PQClean tree every family needs")
    return SourceTree(
        root=check_tree(home.root / "pqclean"),
        origin="crate",
        crate=CRATE,
        version=home.version,
        checksum=home.checksum,
        crates=tuple(crates),
        checkouts=brought,
    )
