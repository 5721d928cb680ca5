"""Verify stage: the correctness gate. A variant that fails is never timed.

Two checks per variant and parameter set:
- nistkat: PQClean's own KAT program, built from the variant's objects; SHA-256 of its output
  must equal `nistkat-sha256` in the scheme's META.yml.
- vectors: deterministic keypair/encaps/decaps outputs, byte-identical across every variant of
  the study; decaps must return the encapsulated key, and a tampered ciphertext must return the
  implicit-rejection key J(z || c') = SHAKE256(z || c', 32), computed here independently.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from . import catalog
from .build import BuildResult
from .sources import SourceTree

N_VECTORS = 8


@dataclass
class Check:
    check: str  # "nistkat" | "vectors"
    scheme: str
    passed: bool
    detail: str = ""

    def to_dict(self) -> dict:
        return {"check": self.check, "scheme": self.scheme, "passed": self.passed, "detail": self.detail}


@dataclass
class GateResult:
    variant: str
    checks: list[Check] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    def to_dict(self) -> dict:
        return {"variant": self.variant, "passed": self.passed, "checks": [c.to_dict() for c in self.checks]}


def expected_kat_sha256(tree: SourceTree, scheme: str) -> str | None:
    fam = catalog.family_of(scheme)
    meta = tree.root / fam.schemes[scheme]["dir"] / "META.yml"
    m = re.search(r"^nistkat-sha256:\s*([0-9a-f]{64})", meta.read_text(), re.M) if meta.exists() else None
    return m.group(1) if m else None


def check_kat(tree: SourceTree, build: BuildResult, scheme: str) -> Check:
    expected = expected_kat_sha256(tree, scheme)
    if expected is None:
        return Check("nistkat", scheme, False, "META.yml has no nistkat-sha256")
    try:
        proc = subprocess.run([str(build.kat[scheme])], capture_output=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as e:
        return Check("nistkat", scheme, False, f"KAT program did not run: {e}")
    if proc.returncode != 0:
        return Check("nistkat", scheme, False, f"KAT program exited {proc.returncode}")
    got = hashlib.sha256(proc.stdout).hexdigest()
    if got != expected:
        return Check("nistkat", scheme, False, f"sha256 {got[:16]}… != META.yml {expected[:16]}…")
    return Check("nistkat", scheme, True, got)


def vector_inputs(scheme: str, n: int = N_VECTORS) -> list[tuple[bytes, bytes, bytes]]:
    """(d, z, m) per vector, derived from a fixed label so every variant gets the same."""
    out = []
    for i in range(n):
        b = hashlib.shake_256(f"pqsimd-gate/{scheme}/{i}".encode()).digest(96)
        out.append((b[:32], b[32:64], b[64:]))
    return out


def run_vectors(harness: Path, scheme: str, inputs: list[tuple[bytes, bytes, bytes]]) -> list[list[bytes]]:
    """Per input: [pk, sk, ct, ss, ss_dec, ss_tampered] as bytes."""
    text = "".join(f"{d.hex()} {z.hex()} {m.hex()}\n" for d, z, m in inputs)
    proc = subprocess.run([str(harness), "vectors", "--scheme", scheme], input=text, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip() or f"exit {proc.returncode}")
    rows = [[bytes.fromhex(x) for x in line.split()] for line in proc.stdout.splitlines()]
    if len(rows) != len(inputs) or any(len(r) != 6 for r in rows):
        raise RuntimeError("vectors output is incomplete")
    return rows


def _first_difference(a: list[list[bytes]], b: list[list[bytes]]) -> str:
    names = ("pk", "sk", "ct", "ss", "ss_dec", "ss_tampered")
    for i, (ra, rb) in enumerate(zip(a, b)):
        for name, xa, xb in zip(names, ra, rb):
            if xa != xb:
                j = next((k for k in range(min(len(xa), len(xb))) if xa[k] != xb[k]), min(len(xa), len(xb)))
                va = f"{xa[j]:02x}" if j < len(xa) else "end"
                vb = f"{xb[j]:02x}" if j < len(xb) else "end"
                return f"vector {i} {name} byte {j}: {va} vs {vb}"
    return ""


def self_consistency(rows: list[list[bytes]], inputs) -> str:
    """decaps(ct) == ss, and a tampered ct gives J(z || c') (FIPS 203 implicit rejection)."""
    for i, ((pk, sk, ct, ss, ss_dec, ss_rej), (_, z, _)) in enumerate(zip(rows, inputs)):
        if ss_dec != ss:
            return f"vector {i}: decaps does not return the encapsulated key"
        tampered = bytes([ct[0] ^ 1]) + ct[1:]
        if ss_rej != hashlib.shake_256(z + tampered).digest(32):
            return f"vector {i}: tampered ciphertext does not give the implicit-rejection key"
    return ""


def gate(tree: SourceTree, builds: dict[str, BuildResult], schemes: list[str]) -> dict[str, GateResult]:
    """Run both checks for every variant; the first KAT-passing variant is the cross-variant reference."""
    results = {v: GateResult(v) for v in builds}
    for scheme in schemes:
        inputs = vector_inputs(scheme)
        outputs: dict[str, list[list[bytes]] | str] = {}
        for vid, b in builds.items():
            results[vid].checks.append(check_kat(tree, b, scheme))
            try:
                outputs[vid] = run_vectors(b.harness, scheme, inputs)
            except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
                outputs[vid] = f"harness vectors failed: {e}"
        kat_ok = [v for v in builds if results[v].checks[-1].passed and not isinstance(outputs[v], str)]
        reference = kat_ok[0] if kat_ok else None
        for vid in builds:
            out = outputs[vid]
            if isinstance(out, str):
                results[vid].checks.append(Check("vectors", scheme, False, out))
                continue
            detail = ""
            if reference is not None and vid != reference:
                diff = _first_difference(out, outputs[reference])  # type: ignore[arg-type]
                if diff:
                    detail = f"differs from {reference}: {diff}"
            detail = detail or self_consistency(out, inputs)
            results[vid].checks.append(Check("vectors", scheme, not detail, detail or f"{len(inputs)} vectors identical"))
    return results
