"""Verify stage: the correctness gate. A build that fails is never timed.

Per build (variant × compiler × family) and parameter set:
- nistkat: PQClean's own KAT program, linked from the build's objects; the SHA-256 of its output
  must equal `nistkat-sha256` in the scheme's META.yml (families without a KAT program skip it).
- vectors: the kind's deterministic vectors (verify/kinds.py) through the driver, on the very
  shared object that is timed. Each answer must satisfy the kind's own checks (decapsulation
  returns the key, every tampered position is rejected, implicit rejection computed here, a
  digest equals Python's), and the answers must be byte-identical across builds (verify-only
  builds, which cannot promise identical bytes, must pass their own checks).
- ops: the op table lists only ops of the family, each once, and every op returns from one call
  (`driver smoke`: a crash or a hang names the op before any timing job meets it). Which ops the
  build has, and one call's wall time, go into the gate result: the spec times only the ops a
  build has, and time limits are derived from those times (run/limits.py).

Which answer is right is decided by agreement, never by order: among the builds that pass the
KAT and their own checks, the largest group with identical answers is the reference. A tie
between disagreeing groups fails them all (nothing says which is right).

Verify-only builds: an implementation that computes in hardware floating point (`native_fp`,
e.g. Falcon's AVX2 code) built by a variant whose flags may change rounding (`fp_exact = false`, e.g.
-march=native contracting multiply-adds into FMA) cannot promise the KAT bytes or byte-identical
signatures. Such a build takes no part in the agreement, and must
- pass its KAT program, which verifies every signature it makes (PQClean's nistkat opens each
  signed message); the KAT's sha256 is checked where the build reproduces it, else recorded;
- pass its own checks (its signatures verify, tampering is rejected);
- cross-verify with the agreement's reference for every gate message: the reference verifies this
  build's signatures and this build verifies the reference's (`driver gate`'s verify line), so a
  build whose signatures are only self-consistent (a miscompiled hash, a sabotaged sampler) fails.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from .. import catalog, store
from ..build import Build, Driver
from ..run import child
from ..sources import SourceTree
from .kinds import KINDS, POOL_BYTES, Vector, oracle_check

TIMEOUT_S = 1800
SMOKE_TIMEOUT_S = 600.0  # every op of one parameter set once: the slowest (-O0 SPHINCS+-256s) take seconds


@dataclass
class Check:
    check: str  # "nistkat" | "vectors" | "build"
    scheme: str
    passed: bool
    detail: str = ""

    def to_dict(self) -> dict:
        return {"check": self.check, "scheme": self.scheme, "passed": self.passed, "detail": self.detail}


@dataclass
class GateResult:
    build: str
    variant: str
    compiler: str
    family: str
    checks: list[Check] = field(default_factory=list)
    skipped: str | None = None
    ops: dict[str, dict[str, float]] = field(default_factory=dict)  # scheme -> op -> seconds of one call

    @property
    def passed(self) -> bool:
        return self.skipped is None and bool(self.checks) and all(c.passed for c in self.checks)

    def passed_for(self, scheme: str) -> bool:
        mine = [c for c in self.checks if c.scheme in (scheme, "*")]
        return self.skipped is None and bool(mine) and all(c.passed for c in mine)

    def to_dict(self) -> dict:
        schemes = list(dict.fromkeys(c.scheme for c in self.checks if c.scheme != "*"))
        d = {"build": self.build, "variant": self.variant, "compiler": self.compiler, "family": self.family,
             "passed": self.passed, "passed_schemes": [s for s in schemes if self.passed_for(s)],
             "checks": [c.to_dict() for c in self.checks], "ops": self.ops}
        if self.skipped:
            d["skipped"] = self.skipped
        return d


def expected_kat_sha256(tree: SourceTree, scheme: str) -> str | None:
    fam = catalog.family_of(scheme)
    d = fam.schemes[scheme].dir
    meta = tree.root / d / "META.yml" if d else None
    m = re.search(r"^nistkat-sha256:\s*([0-9a-f]{64})", meta.read_text(), re.M) if meta and meta.exists() else None
    return m.group(1) if m else None


def verify_only(build: Build) -> bool:
    """Whether the build cannot promise byte-identical outputs (module docstring): hardware floating point
    under flags that may change rounding, or an implementation that says its bytes are its own
    (`byte_identical = false`: it draws or expands its randomness otherwise than the reference)."""
    impl = catalog.families()[build.family].implementation(build.sources) if build.sources else None
    return bool(impl and ((impl.native_fp and not build.fp_exact) or not impl.byte_identical))


def _has_kat_program(build: Build) -> bool:
    """Whether the build's implementation has a KAT program: PQClean's always; another layout's when its
    table says how to build one (`kat`)."""
    impl = catalog.families()[build.family].implementation(build.sources) if build.sources else None
    return impl is None or impl.layout == "pqclean" or bool(impl.table.get("kat"))


def check_kat(tree: SourceTree, build: Build, scheme: str, launcher: list[str] | tuple = ()) -> Check:
    expected = expected_kat_sha256(tree, scheme)
    if expected is None:
        return Check("nistkat", scheme, False, "META.yml has no nistkat-sha256")
    program = build.kat.get(scheme)
    if program is None and verify_only(build) and not _has_kat_program(build):
        return Check("nistkat", scheme, True, "the implementation has no NIST KAT program: its signatures are "
                                              "cross-verified with the reference instead (verify-only)")
    if program is None:
        return Check("nistkat", scheme, False, "no KAT program was built")
    try:
        proc = child.run([*launcher, str(program)], timeout=TIMEOUT_S, text=False)
    except (OSError, child.TimedOut) as e:
        return Check("nistkat", scheme, False, f"KAT program did not run: {e}")
    if proc.returncode != 0:
        return Check("nistkat", scheme, False, f"KAT program exited {proc.returncode}")
    got = hashlib.sha256(proc.stdout).hexdigest()
    if got != expected and verify_only(build):
        return Check("nistkat", scheme, True, f"ran and verified its signatures; sha256 {got[:16]}… != META.yml "
                                              f"{expected[:16]}…, as this build's floating-point rounding allows "
                                              f"(verify-only: cross-verified with the reference instead)")
    if got != expected:
        return Check("nistkat", scheme, False, f"sha256 {got[:16]}… != META.yml {expected[:16]}…")
    return Check("nistkat", scheme, True, got)


def vector_count(fam: catalog.Family) -> int:
    n = fam.gate.get("vectors", KINDS[fam.kind].default_count)
    return int(n) if isinstance(n, int) and n >= 1 else KINDS[fam.kind].default_count


def vectors_for(scheme: str) -> list[Vector]:
    fam = catalog.family_of(scheme)
    pool = fam.gate_for(scheme).get("pool_bytes", POOL_BYTES)
    return KINDS[fam.kind].vectors(scheme, vector_count(fam), int(pool) if isinstance(pool, int) and pool > 0 else POOL_BYTES)


def _gate_lines(driver: Path, library: Path, scheme: str, lines: list[str], launcher: list[str] | tuple) -> list[str]:
    """`driver gate`'s answer to each input line; RuntimeError with the driver's message if it fails."""
    try:
        proc = child.run([*launcher, str(driver), "gate", str(library), scheme], input="".join(l + "\n" for l in lines),
                         timeout=TIMEOUT_S)
    except child.TimedOut as e:
        raise RuntimeError(f"{e}: {(e.stderr.strip().splitlines() or ['?'])[-1]}") from None
    if proc.returncode != 0:
        raise RuntimeError((proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1])
    out = proc.stdout.splitlines()
    if len(out) != len(lines):
        raise RuntimeError(f"the driver answered {len(out)} of {len(lines)} vectors")
    return out


def run_cross_verify(driver: Path, library: Path, scheme: str, signed: list[tuple[bytes, bytes, bytes]],
                     launcher: list[str] | tuple = ()) -> list[int]:
    """Each (public key, message, signature) verified by this library: the return codes."""
    lines = [f"verify {pk.hex() or '-'} {msg.hex() or '-'} {sig.hex() or '-'}" for pk, msg, sig in signed]
    return [int(x) for x in _gate_lines(driver, library, scheme, lines, launcher)]


def run_vectors(driver: Path, library: Path, scheme: str, vectors: list[Vector],
                launcher: list[str] | tuple = ()) -> list[dict]:
    """The driver's answers, parsed; RuntimeError with the driver's message if it fails."""
    kind = KINDS[catalog.family_of(scheme).kind]
    lines = _gate_lines(driver, library, scheme, [v.line for v in vectors], launcher)
    try:
        return [kind.parse(line, v) for line, v in zip(lines, vectors)]
    except ValueError as e:
        raise RuntimeError(f"unreadable gate answer ({e})") from None


def run_smoke(driver: Path, library: Path, fam: catalog.Family, scheme: str,
              launcher: list[str] | tuple = ()) -> dict[str, float] | str:
    """Every op of the scheme once through the driver: {op: seconds of the call}, or what went wrong."""
    try:
        proc = child.run([*launcher, str(driver), "smoke", str(library), scheme], timeout=SMOKE_TIMEOUT_S)
    except child.TimedOut as e:
        d = child.death(e.stderr)
        return f"op {d.op if d else '?'} did not return within {e.seconds:g} s (a hang?)"
    except OSError as e:
        return f"the driver did not run ({e.strerror})"
    if proc.returncode != 0:
        d = child.death(proc.stderr)
        if d is not None:
            return f"op {d.op} crashed ({d.signal})"
        return (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1].removeprefix("driver: ")
    ops: dict[str, float] = {}
    for line in proc.stdout.splitlines():
        name, _, ns = line.partition("\t")
        if name in ops:
            return f"the op table lists {name} twice"
        if name not in fam.ops:
            return f"the op table lists {name!r}, which is not in the family's [ops] order ({fam.source})"
        ops[name] = int(ns) * 1e-9
    if not ops:
        return "the op table lists no ops"
    return ops


def own_checks(scheme: str, answers: list[dict], vectors: list[Vector]) -> str:
    fam = catalog.family_of(scheme)
    kind = KINDS[fam.kind]
    for i, (d, v) in enumerate(zip(answers, vectors)):
        problem = kind.check(i, d, v, fam.gate_for(scheme))
        if problem:
            return problem
    return oracle_check(fam.kind, answers, fam.gate_for(scheme))


def first_difference(a: list[dict], b: list[dict], fields: tuple[str, ...]) -> str:
    for i, (ra, rb) in enumerate(zip(a, b)):
        for name in (*fields, "used"):
            xa, xb = ra.get(name), rb.get(name)
            if xa == xb:
                continue
            if isinstance(xa, list) and isinstance(xb, list):
                k = next((k for k in range(min(len(xa), len(xb))) if xa[k] != xb[k]), min(len(xa), len(xb)))
                xa, xb = (xa[k] if k < len(xa) else b""), (xb[k] if k < len(xb) else b"")
                name = f"{name}[{k}]"
            if isinstance(xa, bytes) and isinstance(xb, bytes):
                j = next((k for k in range(min(len(xa), len(xb))) if xa[k] != xb[k]), min(len(xa), len(xb)))
                va = f"{xa[j]:02x}" if j < len(xa) else "end"
                vb = f"{xb[j]:02x}" if j < len(xb) else "end"
                return f"vector {i} {name} byte {j}: {va} vs {vb}"
            return f"vector {i} {name}: {xa} vs {xb}"
    return ""


def _key(answers: list[dict]) -> bytes:
    h = hashlib.sha256()
    for d in answers:
        for k in sorted(d):
            h.update(k.encode())
            h.update(repr(d[k]).encode())
    return h.digest()


GATE_CACHE_VERSION = 2  # 2: the ops check


def _cache_file(b: Build, scheme: str) -> Path:
    return b.directory / f"gate-{scheme}.json"


def _gate_code_digest() -> str:
    """The driver's side of the gate protocol (driver/gate.c, gate.h): a change to it re-gates."""
    from importlib import resources

    d = resources.files("pqsimd").joinpath("harness", "driver")
    return hashlib.sha256(b"".join(d.joinpath(n).read_bytes() for n in ("gate.c", "gate.h"))).hexdigest()


def _vectors_digest(vectors: list[Vector], expected_kat: str | None, gate: dict, only_verify: bool,
                    library_sha256: str, emulated: str | None = None) -> str:
    """The key of a cached verdict: the inputs and the very bytes of the shared object checked, and
    the emulated CPU when the ISA has a vector length (vector-length-agnostic code is gated at each)."""
    mode = "|verify-only" if only_verify else ""
    mode += f"|cpu {emulated}" if emulated else ""
    h = hashlib.sha256(f"{GATE_CACHE_VERSION}|{expected_kat}|{json.dumps(gate, sort_keys=True)}{mode}|"
                       f"{_gate_code_digest()}|{library_sha256}".encode())
    for v in vectors:
        h.update(v.line.encode())
    return h.hexdigest()


def _checked(tree: SourceTree, driver: Driver, b: Build, scheme: str, vectors: list[Vector],
             fam: catalog.Family) -> tuple[Check | None, list[dict] | str | None, str, str, dict[str, float] | str]:
    """(KAT check, answers (None: from the cache), own-check problem, answers' key, ops (run_smoke))
    of one build.

    A build's gate outcome depends only on its binaries (the cache key) and the inputs (the
    digest): it is kept beside the build, so a study that reuses a cached build skips the KAT and
    vectors (slow at -O0 for large signature sets). Answers are re-run only when a difference has to
    be named."""
    library_sha256 = store.sha256_file(b.library)
    if b.sha256 and library_sha256 != b.sha256:
        changed = f"{b.library} is not the binary that was built (sha256 {library_sha256[:16]}… != {b.sha256[:16]}…)"
        return None, changed, "", "", changed
    isa = driver.isa
    emulated = isa.qemu_cpu if isa is not None and getattr(isa, "vlen", None) is not None else None
    digest = _vectors_digest(vectors, expected_kat_sha256(tree, scheme) if fam.kat else None, fam.gate_for(scheme),
                             verify_only(b), library_sha256, emulated)
    cache = _cache_file(b, scheme)
    try:
        c = json.loads(cache.read_text())
        if c.get("digest") == digest:
            kat = Check(**c["kat"]) if c.get("kat") else None
            return kat, None, c["own"], c["key"], c["ops"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    launcher = driver.launcher()  # the ISA's emulator when the builds are for another ISA
    kat = check_kat(tree, b, scheme, launcher) if fam.kat else None
    ops = run_smoke(driver.path, b.library, fam, scheme, launcher)
    try:
        answers: list[dict] | str = run_vectors(driver.path, b.library, scheme, vectors, launcher)
        own = own_checks(scheme, answers, vectors)  # type: ignore[arg-type]
        key = _key(answers).hex()  # type: ignore[arg-type]
    except (RuntimeError, OSError) as e:
        return kat, f"driver gate failed: {e}", "", "", ops
    try:
        tmp = cache.with_name(f".{cache.name}.{os.getpid()}")
        tmp.write_text(json.dumps({"digest": digest, "kat": kat.to_dict() if kat else None, "own": own, "key": key,
                                   "ops": ops}))
        os.replace(tmp, cache)
    except OSError:  # a read-only cache only costs time
        pass
    return kat, answers, own, key, ops


def _check_all(tree: SourceTree, driver: Driver, builds: list[Build], schemes: list[str]) -> dict:
    """_checked of every (build, scheme) pair, as many at a time as there are CPUs: each is a few
    child processes (KAT program, driver), so a cold gate of all families takes half the time on 2
    cores. Agreement is decided afterwards, from all answers, as before."""
    pairs = []
    for scheme in schemes:
        fam = catalog.family_of(scheme)
        vectors = vectors_for(scheme)
        pairs += [(b, scheme, vectors, fam) for b in builds if b.family == fam.name and scheme in b.schemes]
    with ThreadPoolExecutor(max_workers=max(1, min(len(pairs), os.cpu_count() or 1))) as pool:
        futures = {(b.id, scheme): pool.submit(_checked, tree, driver, b, scheme, vectors, fam)
                   for b, scheme, vectors, fam in pairs}
        return {k: f.result() for k, f in futures.items()}


def gate(tree: SourceTree, driver: Driver, builds: list[Build], schemes: list[str]) -> dict[str, GateResult]:
    """Both checks for every build of every scheme it holds; the reference decided by agreement."""
    results = {b.id: GateResult(b.id, b.variant, b.compiler.id, b.family) for b in builds}
    checked = _check_all(tree, driver, builds, schemes)
    for scheme in schemes:
        fam = catalog.family_of(scheme)
        mine = [b for b in builds if b.family == fam.name]
        if not mine:
            continue
        kind = KINDS[fam.kind]
        vectors = vectors_for(scheme)
        answers: dict[str, list[dict] | str | None] = {}
        own: dict[str, str] = {}
        keys: dict[str, str] = {}
        kat_ok: dict[str, bool] = {}
        for b in mine:
            if scheme not in b.schemes:
                results[b.id].checks.append(Check("build", scheme, False, f"the source tree has no {scheme} "
                                                                          f"({fam.schemes[scheme].dir})"))
                answers[b.id], own[b.id], keys[b.id] = "not built", "", ""
                kat_ok[b.id] = False
                continue
            kat, answers[b.id], own[b.id], keys[b.id], ops = checked[b.id, scheme]
            if kat is not None:
                results[b.id].checks.append(kat)
            kat_ok[b.id] = kat.passed if kat is not None else True
            if isinstance(ops, str):
                results[b.id].checks.append(Check("ops", scheme, False, ops))
                kat_ok[b.id] = False  # never the reference of the agreement
            else:
                results[b.id].ops[scheme] = ops
                results[b.id].checks.append(Check("ops", scheme, True, f"{len(ops)} ops, each returns from a call"))

        def answers_of(bid: str) -> list[dict]:
            if answers[bid] is None:  # from the cache: run again to name the difference
                b = next(x for x in mine if x.id == bid)
                answers[bid] = run_vectors(driver.path, b.library, scheme, vectors, driver.launcher())
            return answers[bid]  # type: ignore[return-value]

        def cross_check(b: Build) -> str:
            """The verify-only build and the reference verify each other's signatures ("": they do)."""
            if kind.signed is None:
                return f"a verify-only build of a {fam.kind} family has no cross-check; it cannot be gated"
            if reference is None:
                return ("no build of the study reproduces the KAT and agrees with the others, so this build's output "
                        "cannot be cross-verified; time it beside such a build (e.g. the family's clean code)")
            ref_build = next(x for x in mine if x.id == reference)
            r = results[reference]
            try:
                theirs = run_cross_verify(driver.path, ref_build.library, scheme,
                                          kind.signed(answers_of(b.id), vectors), driver.launcher())
                ours = run_cross_verify(driver.path, b.library, scheme,
                                        kind.signed(answers_of(reference), vectors), driver.launcher())
            except (RuntimeError, OSError) as e:
                return f"cross-verification with {r.variant}@{r.compiler} failed: {e}"
            bad = next((i for i, rc in enumerate(theirs) if rc != 0), None)
            if bad is not None:
                return f"vector {bad}: {r.variant}@{r.compiler} does not verify this build's signature"
            bad = next((i for i, rc in enumerate(ours) if rc != 0), None)
            if bad is not None:
                return f"vector {bad}: this build rejects {r.variant}@{r.compiler}'s valid signature"
            return ""

        only_verify = {b.id for b in mine if verify_only(b)}
        candidates = [b.id for b in mine if kat_ok[b.id] and not isinstance(answers[b.id], str) and not own[b.id]
                      and b.id not in only_verify]
        groups: dict[str, list[str]] = {}
        for bid in candidates:
            groups.setdefault(keys[bid], []).append(bid)
        ranked = sorted(groups.values(), key=len, reverse=True)
        reference: str | None = None
        tie = len(ranked) > 1 and len(ranked[0]) == len(ranked[1])
        if ranked and not tie:
            reference = ranked[0][0]
        for b in mine:
            out = answers[b.id]
            if out == "not built":
                continue
            if isinstance(out, str):
                results[b.id].checks.append(Check("vectors", scheme, False, out))
                continue
            detail = own.get(b.id, "")
            if b.id in only_verify:
                detail = detail or cross_check(b)
                impl = fam.implementation(b.sources) if b.sources else None
                why = ("its implementation draws or expands its randomness otherwise than the reference's"
                       if impl is not None and not impl.byte_identical
                       else "this build's floating-point rounding may change its output bytes")
                results[b.id].checks.append(Check("vectors", scheme, not detail, detail or (
                    f"{len(vectors)} vectors pass the {fam.kind} checks and cross-verify both ways with "
                    f"{results[reference].variant}@{results[reference].compiler} (verify-only: {why}, so they are "  # type: ignore[index]
                    f"not compared byte by byte)")))
                continue
            if not detail and tie:
                sides = " vs ".join("/".join(results[x].variant + "@" + results[x].compiler for x in g) for g in ranked[:2])
                detail = f"builds that pass their own checks disagree and none is in the majority ({sides})"
            if not detail and reference is not None and b.id != reference and keys[b.id] != keys[reference]:
                diff = first_difference(answers_of(b.id), answers_of(reference), kind.fields)
                r = results[reference]
                detail = f"differs from the agreeing builds ({r.variant}@{r.compiler}): {diff or 'answers differ'}"
                impl = fam.implementation(b.sources) if b.sources else None
                if impl is not None and impl.native_fp:
                    detail += (f"; {b.sources} computes in hardware floating point: if {b.variant}'s flags change "
                               f"rounding (e.g. -march=native or -mfma contract multiply-adds into FMA), add "
                               f"-ffp-contract=off")
            oracle = fam.gate_for(scheme).get("oracle_name") if fam.gate_for(scheme).get("answers_sha256") else None
            results[b.id].checks.append(Check("vectors", scheme, not detail,
                                              detail or f"{len(vectors)} vectors agree and pass the {fam.kind} checks"
                                              + (f", byte for byte the answers of {oracle}" if oracle else "")))
    return results
