"""Sources stage: the pinned PQClean tree from the crates.io package, or the user's own."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from .errors import PqsimdError

CRATE = "pqcrypto-mlkem"


@dataclass(frozen=True)
class SourceTree:
    root: Path  # the PQClean tree (has common/, crypto_kem/ and crypto_sign/, test/)
    origin: str  # "crate" | "path"
    crate: str | None = None
    version: str | None = None
    checksum: str | None = None

    def to_dict(self) -> dict:
        return {
            "root": str(self.root),
            "origin": self.origin,
            "crate": self.crate,
            "version": self.version,
            "checksum": self.checksum,
        }


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


def locate(source: Path | None = None) -> SourceTree:
    if source is not None:
        return SourceTree(root=check_tree(source), origin="path")
    cargo = _cargo()
    manifest = _crate_dir() / "Cargo.toml"
    fetch = subprocess.run(
        [cargo, "fetch", "--locked", "--manifest-path", str(manifest)], capture_output=True, text=True
    )
    if fetch.returncode != 0:
        last = (fetch.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise PqsimdError(f"cargo could not fetch {CRATE} (network or registry problem?): {last}")
    meta = subprocess.run(
        [cargo, "metadata", "--locked", "--offline", "--format-version", "1", "--manifest-path", str(manifest)],
        capture_output=True,
        text=True,
    )
    if meta.returncode != 0:
        last = (meta.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise PqsimdError(f"cargo metadata failed for {CRATE}: {last}")
    packages = json.loads(meta.stdout)["packages"]
    pkg = next((p for p in packages if p["name"] == CRATE), None)
    if pkg is None:
        raise PqsimdError(f"{CRATE} is missing from cargo metadata; is {manifest} intact?")
    root = Path(pkg["manifest_path"]).parent / "pqclean"
    lock = (_crate_dir() / "Cargo.lock").read_text()
    m = re.search(rf'name = "{CRATE}"\nversion = "[^"]+"\nsource = "[^"]+"\nchecksum = "([0-9a-f]+)"', lock)
    return SourceTree(
        root=check_tree(root),
        origin="crate",
        crate=CRATE,
        version=pkg["version"],
        checksum=m.group(1) if m else None,
    )
