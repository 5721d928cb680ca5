#!/usr/bin/env python3
"""The FIPS 205 oracle's answers to the slh-dsa family's gate vectors, and their digests.

For every parameter set: the gate's vectors (pqsimd.verify.kinds.sign_vectors, the same bytes the
driver gets), each answered by PyPI slh-dsa 0.2.5 (a test dependency; FIPS 205 final, checked against
NIST's ACVP vectors in tests/test_family_slhdsa.py):
    SK.seed, SK.prf, PK.seed = the first 3n bytes of the vector's pool (slh_keygen's order)
    pk = PK.seed || PK.root, sk = SK.seed || SK.prf || PK.seed || PK.root
    sig = slh_sign_internal(0x00 || 0x00 || M, sk, opt_rand = PK.seed)   (deterministic, empty context)
and `answers_sha256` = SHA-256 of pk || sk || sig of every vector (verify/kinds.sign_answers_digest).

    .venv/bin/python tools/slh_dsa_gate_digests.py            # print each set's digest
    .venv/bin/python tools/slh_dsa_gate_digests.py --write    # and write them into data/families/slh-dsa.toml
"""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path


def parameter(scheme: str):
    import slhdsa.lowlevel.parameters as params  # distribution slh-dsa, import name slhdsa

    name = scheme.removeprefix("slh-dsa-").replace("-", "_")  # slh-dsa-shake-128f -> shake_128f
    return getattr(params, name)


def keygen(par, sk_seed: bytes, sk_prf: bytes, pk_seed: bytes) -> tuple[bytes, bytes]:
    """slh_keygen_internal: (pk, sk)."""
    from slhdsa.lowlevel.addresses import Address
    from slhdsa.lowlevel.xmss import XMSS

    root = XMSS(par).node(sk_seed, 0, par.h_m, pk_seed, Address(par.d - 1, 0))
    return pk_seed + root, sk_seed + sk_prf + pk_seed + root


def sign_pure(par, sk: bytes, msg: bytes, ctx: bytes = b"", opt_rand: bytes | None = None) -> bytes:
    """slh_sign (Algorithm 22) with opt_rand = PK.seed unless given (hedged)."""
    import slhdsa.lowlevel.slhdsa as ll

    n = par.n
    key = (sk[:n], sk[n:2 * n], sk[2 * n:3 * n], sk[3 * n:])
    mprime = b"\x00" + bytes([len(ctx)]) + ctx + msg
    if opt_rand is None:
        return ll.sign(mprime, key, par, False)
    # slhdsa draws opt_rand from token_bytes when randomize=True: give it ours
    import slhdsa.lowlevel.slhdsa as mod

    saved = mod.token_bytes
    mod.token_bytes = lambda k: opt_rand
    try:
        return ll.sign(mprime, key, par, True)
    finally:
        mod.token_bytes = saved


def answers(scheme: str) -> list[tuple[bytes, bytes, bytes]]:
    """(pk, sk, sig) of each gate vector, by the oracle."""
    from pqsimd.verify import vectors_for

    par = parameter(scheme)
    n = par.n
    out = []
    for v in vectors_for(scheme):
        pk, sk = keygen(par, v.pool[:n], v.pool[n:2 * n], v.pool[2 * n:3 * n])
        out.append((pk, sk, sign_pure(par, sk, v.message)))
    return out


def digest(scheme: str) -> str:
    h = hashlib.sha256()
    for pk, sk, sig in answers(scheme):
        h.update(pk + sk + sig)
    return h.hexdigest()


def main(argv: list[str]) -> int:
    from pqsimd import catalog

    fam = catalog.families()["slh-dsa"]
    found = {sid: digest(sid) for sid in fam.schemes}
    for sid, d in found.items():
        print(f"{sid} {d}", flush=True)
    if "--write" in argv:
        path = Path(__file__).resolve().parents[1] / "src" / "pqsimd" / "data" / "families" / "slh-dsa.toml"
        text = path.read_text()
        for sid, d in found.items():
            text, k = re.subn(rf'(\[schemes\.{re.escape(sid)}\]\n(?:[^\[].*\n)*?gate = {{ answers_sha256 = ")[0-9a-f]{{64}}',
                              rf"\g<1>{d}", text)
            if k != 1:
                print(f"error: no answers_sha256 line of {sid} in {path}", file=sys.stderr)
                return 1
        path.write_text(text)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
