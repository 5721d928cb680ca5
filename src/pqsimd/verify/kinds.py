"""The gate's vectors, one protocol per kind (the C side is harness/driver/gate.c).

Each kind says which deterministic inputs to send, how to read the driver's answers, and what
every answer must satisfy on its own (decapsulation returns the key, tampering is rejected, a
digest equals Python's). Inputs come from SHAKE-256 of a fixed label, so every variant, every
run and every machine sends the same bytes.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

# Tamper positions as fractions of a length: first, middle and last byte, then seeded others.
FIXED_FRACTIONS = (0.0, 0.5, 1.0)
EXTRA_FRACTIONS = 2
POOL_BYTES = 256  # randomness served to key generation + encapsulation / signing ([gate] pool_bytes overrides)


def _shake(label: str, n: int) -> bytes:
    return hashlib.shake_256(label.encode()).digest(n)


def fractions(scheme: str, i: int) -> list[float]:
    b = _shake(f"pqsimd-gate/{scheme}/{i}/tamper", 4 * EXTRA_FRACTIONS)
    extra = [int.from_bytes(b[4 * k:4 * k + 4], "little") / 2**32 for k in range(EXTRA_FRACTIONS)]
    return [*FIXED_FRACTIONS, *extra]


def position(f: float, length: int) -> int:
    """The byte the driver flips for fraction f (gate.c: min(len - 1, floor(f * len)))."""
    return min(length - 1, int(f * length))


@dataclass
class Vector:
    """One gate vector: the line sent, and what Python knows about it."""

    line: str
    pool: bytes = b""
    message: bytes = b""
    fractions: tuple[float, ...] = ()


# --- kem ------------------------------------------------------------------------------------------

def kem_vectors(scheme: str, n: int, pool_bytes: int = POOL_BYTES) -> list[Vector]:
    out = []
    for i in range(n):
        pool = _shake(f"pqsimd-gate/{scheme}/{i}", pool_bytes)
        fr = fractions(scheme, i)
        out.append(Vector(f"{pool.hex()} {','.join(repr(f) for f in fr)}", pool=pool, fractions=tuple(fr)))
    return out


KEM_FIELDS = ("pk", "sk", "ct", "ss", "ss_dec")


def kem_parse(line: str, v: Vector) -> dict[str, Any]:
    t = line.split()
    if len(t) != 3 + len(KEM_FIELDS) + len(v.fractions):
        raise ValueError(f"expected {3 + len(KEM_FIELDS) + len(v.fractions)} fields, got {len(t)}")
    d: dict[str, Any] = {"rc": int(t[0]), "used": int(t[1]), "dry": int(t[2])}
    for name, x in zip(KEM_FIELDS, t[3:]):
        d[name] = bytes.fromhex(x) if x != "-" else b""
    d["ss_tampered"] = [bytes.fromhex(x) for x in t[3 + len(KEM_FIELDS):]]
    return d


def rejection_key(rej: dict[str, Any], sk: bytes, ct: bytes) -> bytes:
    """The key an implicitly rejecting KEM returns for a ciphertext it rejects, computed here:
    hash(prefix || z || leading ciphertext bytes || suffix), z a slice of the secret key.
    ML-KEM (FIPS 203): SHAKE256(z || c) with z the last 32 bytes of sk; Classic McEliece:
    SHAKE256(0x00 || s || C), s the last n/8 bytes; HQC: SHAKE256(sigma || u || v || 0x04)."""
    if "z_from_secret_key_tail" in rej:
        z = sk[-int(rej["z_from_secret_key_tail"]):]
    else:
        start, end = rej["z_from_secret_key"]
        z = sk[int(start):int(end)]
    data = bytes.fromhex(rej.get("prefix", "")) + z + ct[: int(rej.get("ciphertext_bytes", len(ct)))] \
        + bytes.fromhex(rej.get("suffix", ""))
    h = hashlib.new(rej["hash"], data)
    return h.digest(int(rej["length"])) if rej["hash"].startswith("shake") else h.digest()[: int(rej["length"])]


def kem_check(i: int, d: dict[str, Any], v: Vector, gate: dict[str, Any]) -> str:
    if d["rc"]:
        return f"vector {i}: a KEM call returned {d['rc']}"
    if d["dry"]:
        return f"vector {i}: key generation and encapsulation drew more than {len(v.pool)} random bytes"
    if d["ss_dec"] != d["ss"]:
        return f"vector {i}: decapsulation does not return the encapsulated key"
    rej = gate.get("implicit_rejection")
    for f, got in zip(v.fractions, d["ss_tampered"]):
        p = position(f, len(d["ct"]))
        if got == d["ss"]:
            return f"vector {i}: ciphertext byte {p} changed, yet decapsulation returns the same key"
        if rej:
            ct = bytearray(d["ct"])
            ct[p] ^= 1
            if got != rejection_key(rej, d["sk"], bytes(ct)):
                return f"vector {i}: ciphertext byte {p} changed: decapsulation does not give the implicit-rejection key"
    return ""


# --- sign -----------------------------------------------------------------------------------------

MESSAGE_LENGTHS = (1, 33, 64, 100, 1000, 3300, 17, 5)


def sign_vectors(scheme: str, n: int, pool_bytes: int = POOL_BYTES) -> list[Vector]:
    out = []
    for i in range(n):
        pool = _shake(f"pqsimd-gate/{scheme}/{i}", pool_bytes)
        msg = _shake(f"pqsimd-gate/{scheme}/{i}/message", MESSAGE_LENGTHS[i % len(MESSAGE_LENGTHS)])
        fr = fractions(scheme, i)
        out.append(Vector(f"{pool.hex()} {msg.hex() or '-'} {','.join(repr(f) for f in fr)}", pool=pool, message=msg,
                          fractions=tuple(fr)))
    return out


SIGN_FIELDS = ("pk", "sk", "sig")


def _rcs(text: str) -> list[int]:
    return [] if text == "-" else [int(x) for x in text.split(",")]


def sign_parse(line: str, v: Vector) -> dict[str, Any]:
    t = line.split()
    if len(t) != 9:
        raise ValueError(f"expected 9 fields, got {len(t)}")
    d: dict[str, Any] = {"rc": int(t[0]), "used": int(t[1]), "dry": int(t[2])}
    for name, x in zip(SIGN_FIELDS, t[3:6]):
        d[name] = bytes.fromhex(x) if x != "-" else b""
    d["verify_rc"] = int(t[6])
    d["sig_tampered_rc"] = _rcs(t[7])
    d["msg_tampered_rc"] = _rcs(t[8])
    return d


DISPATCH_RC = 0x7D15  # an op table's answer when the build's run-time dispatch is not the pinned path (impl/wolfssl/wolfssl_slhdsa.h)


def sign_check(i: int, d: dict[str, Any], v: Vector, gate: dict[str, Any]) -> str:
    if DISPATCH_RC in (d["rc"], d["verify_rc"]):
        return (f"vector {i}: the build's run-time cpuid dispatch is not the path it is pinned to (the library chose "
                f"other code than the variant says)")
    if d["rc"]:
        return f"vector {i}: key generation or signing returned {d['rc']}"
    if d["dry"]:
        return f"vector {i}: key generation and signing drew more than {len(v.pool)} random bytes"
    if d["verify_rc"] != 0:
        return f"vector {i}: verify rejects a valid signature"
    for f, rc in zip(v.fractions, d["sig_tampered_rc"]):
        if rc == 0:
            return f"vector {i}: signature byte {position(f, len(d['sig']))} changed, yet verify accepts it"
    for f, rc in zip(v.fractions, d["msg_tampered_rc"]):
        if rc == 0:
            return f"vector {i}: message byte {position(f, len(v.message))} changed, yet verify accepts the signature"
    if len(d["sig_tampered_rc"]) != len(v.fractions) or len(d["msg_tampered_rc"]) != len(v.fractions):
        return f"vector {i}: the driver skipped tamper checks"
    return ""


def sign_answers_digest(answers: list[dict[str, Any]]) -> str:
    """SHA-256 of pk || sk || sig of every answer, in order: what an oracle's `answers_sha256` is."""
    h = hashlib.sha256()
    for d in answers:
        h.update(d["pk"] + d["sk"] + d["sig"])
    return h.hexdigest()


def oracle_check(kind: str, answers: list[dict[str, Any]], gate: dict[str, Any]) -> str:
    """The answers against an oracle's digest (`answers_sha256`, sign kind): "" when they match or there is none."""
    want = gate.get("answers_sha256")
    if kind != "sign" or not want:
        return ""
    got = sign_answers_digest(answers)
    if got == want:
        return ""
    return (f"the keys and signatures differ from the oracle's: sha256 {got[:16]}… != answers_sha256 {want[:16]}… of "
            f"the family TOML ({gate.get('oracle_name', 'an oracle')})")


def sign_signed(answers: list[dict[str, Any]], vectors: list[Vector]) -> list[tuple[bytes, bytes, bytes]]:
    """(public key, message, signature) of each answer: what another build must verify."""
    return [(d["pk"], v.message, d["sig"]) for d, v in zip(answers, vectors)]


# --- hash -----------------------------------------------------------------------------------------

HASH_LENGTHS = (0, 1, 135, 136, 137, 1000, 168, 64)
HASH_OUT = (32, 64, 200, 1)


def hash_vectors(scheme: str, n: int, pool_bytes: int = 0) -> list[Vector]:  # a digest draws no randomness
    out = []
    for i in range(n):
        msg = _shake(f"pqsimd-gate/{scheme}/{i}/message", HASH_LENGTHS[i % len(HASH_LENGTHS)])
        out.append(Vector(f"{msg.hex() or '-'} {HASH_OUT[i % len(HASH_OUT)]}", message=msg))
    return out


def hash_parse(line: str, v: Vector) -> dict[str, Any]:
    t = line.split()
    if len(t) != 1:
        raise ValueError(f"expected 1 field, got {len(t)}")
    return {"digest": bytes.fromhex(t[0])}


def hash_check(i: int, d: dict[str, Any], v: Vector, gate: dict[str, Any]) -> str:
    oracle = gate.get("oracle")
    if oracle:
        outlen = int(v.line.split()[1])
        h = hashlib.new(oracle, v.message)
        want = h.digest(outlen) if oracle.startswith("shake") else h.digest()[:outlen]
        if d["digest"] != want:
            return f"vector {i}: digest differs from Python's hashlib.{oracle}"
    return ""


@dataclass(frozen=True)
class Kind:
    name: str
    vectors: Any
    parse: Any
    check: Any
    fields: tuple[str, ...]
    default_count: int
    signed: Any = None  # answers -> (pk, message, signature) another build verifies (the verify-only cross-check)


KINDS = {
    "kem": Kind("kem", kem_vectors, kem_parse, kem_check, (*KEM_FIELDS, "ss_tampered"), 8),
    "sign": Kind("sign", sign_vectors, sign_parse, sign_check,
                 (*SIGN_FIELDS, "verify_rc", "sig_tampered_rc", "msg_tampered_rc"), 8, sign_signed),
    "hash": Kind("hash", hash_vectors, hash_parse, hash_check, ("digest",), 8),
}
