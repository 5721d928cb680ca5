"""The wolfSSL layout (wolfCrypt as the crate `wolfssl-sys` vendors it in `wolfssl-src/`): one library
for every parameter set (the set is a run-time argument, e.g. `SLHDSA_SHAKE128F`), configured by a
`user_settings.h` (`-DWOLFSSL_USER_SETTINGS`, wolfSSL's own alternative to ./configure) that pqsimd
generates from the implementation's `settings`. No autotools run: every unit is compiled by the
compiler under test with the variant's flags, through the same object and build caches as any other
layout, so a configure step never sits between the flags and the code.

Hand-written SIMD (`--enable-intelasm` = `USE_INTEL_SPEEDUP`) is chosen by wolfSSL at run time from
cpuid. A build is one path: `cpuid` lists the flags the build pins (a generated constructor calls
wolfSSL's `cpuid_select_flags` with exactly these before any other code runs, so the vendor test in
its Keccak dispatch and features the variant does not claim, SHA-NI or AVX-512, never change the
path), and the op table checks after every gate call that the modules' dispatch state is the pinned
one (harness/impl/wolfssl/wolfssl_pin.h).

[implementations.<name>] keys (paths relative to `tree`; `{harness}` may start a path):
  crate, tree     the pinned crate and wolfSSL's folder in it
  units           the wolfCrypt sources (C and assembly), compiled once per build
  settings        the lines of user_settings.h: "NAME" or "NAME VALUE" (#define NAME VALUE)
  cpuid           the CPUID_* flags a build pins ([] or absent: no run-time dispatch is compiled in)
  params          per scheme, the value of PQSIMD_WOLF_PARAM for its op table (e.g. SLHDSA_SHAKE128F)
  defines         extra -D for the op tables
  cflags          compiler flags every unit of the implementation needs, before the variant's (e.g. -mfma for
                  wolfSSL's AVX2 Falcon FFT, which uses FMA intrinsics); the variant's flags still come last
  libs            libraries the shared object and the KAT program link (e.g. -lm: Falcon's hardware doubles)
  set_defines     per scheme, extra -D for that set's op table and KAT adapter (e.g. PQSIMD_WOLF_K=3)
  kat             PQClean's NIST KAT program on this implementation (families with a [kat]): `adapter`, a C
                  file defining PQSIMD_KAT_crypto_kem_* / the signature API over wolfSSL, compiled per set
                  with PQSIMD_WOLF_PARAM; `headers` and the size macros public_key, secret_key, ciphertext,
                  bytes of the generated api.h ("{param}" stands for the set's params value)
"""

from __future__ import annotations

import glob
import re
from pathlib import Path

from ..errors import PqsimdError
from .layout import BUILD_DIR, Context, Plan, Unit

KEYS = ("crate", "tree", "units", "settings", "cpuid", "params", "defines", "set_defines", "kat", "cflags", "libs")
KAT_KEYS = ("adapter", "headers", "public_key", "secret_key", "ciphertext", "bytes")
SETTINGS = "user_settings.h"
PIN = "pqsimd_wolfssl_pin.h"
_SETTING = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*( [^\n]+)?$")
_FLAG = re.compile(r"^CPUID_[A-Z0-9_]+$")


def _fail(where: str, what: str) -> PqsimdError:
    return PqsimdError(f"{where}: {what}")


def check(table: dict, where: str) -> None:
    for key in ("crate", "tree"):
        if not isinstance(table.get(key), str) or not table.get(key):
            raise _fail(where, f"`{key}` must be a non-empty string, got {table.get(key)!r}")
    for key in ("units", "settings", "cpuid", "defines", "cflags", "libs"):
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(x, str) and x for x in value) or (key == "units" and not value):
            raise _fail(where, f"`{key}` must be a {'non-empty ' if key == 'units' else ''}list of strings, got {value!r}")
    bad = next((s for s in table.get("settings", []) if not _SETTING.match(s)), None)
    if bad is not None:
        raise _fail(where, f"setting {bad!r} is not `NAME` or `NAME VALUE` (a line of user_settings.h)")
    bad = next((f for f in table.get("cpuid", []) if not _FLAG.match(f)), None)
    if bad is not None:
        raise _fail(where, f"cpuid flag {bad!r} is not a wolfSSL CPUID_* name (wolfssl/wolfcrypt/cpuid.h)")
    params = table.get("params")
    if not isinstance(params, dict) or not params or not all(isinstance(v, str) and v for v in params.values()):
        raise _fail(where, f"`params` must be a table of scheme = \"wolfSSL parameter id\", got {params!r}")
    sd = table.get("set_defines", {})
    if not isinstance(sd, dict) or not all(isinstance(v, list) and all(isinstance(x, str) and x for x in v)
                                           for v in sd.values()):
        raise _fail(where, f"`set_defines` must be a table of scheme = [defines], got {sd!r}")
    kat = table.get("kat", {})
    if not isinstance(kat, dict):
        raise _fail(where, f"`kat` must be a table, got {kat!r}")
    bad_keys = sorted(set(kat) - set(KAT_KEYS))
    if bad_keys:
        raise _fail(where, f"unknown key(s) in kat: {', '.join(bad_keys)}; known: {', '.join(KAT_KEYS)}")
    if kat and not all(isinstance(kat.get(k), str) and kat.get(k) for k in ("adapter", "public_key", "secret_key", "bytes")):
        raise _fail(where, "`kat` needs adapter, public_key, secret_key and bytes (and ciphertext for a KEM)")


def groups(table: dict) -> dict[str, str]:
    return {}  # one switch (USE_INTEL_SPEEDUP) for the whole library: all of it or none


def _root(ctx: Context) -> Path:
    return ctx.tree.crate_root(ctx.impl.table.get("crate") or "", f"implementation {ctx.impl.name}") / ctx.impl.table["tree"]


def schemes(ctx: Context) -> list[str]:
    root = _root(ctx)
    if not (root / "wolfcrypt" / "src").is_dir():
        raise PqsimdError(f"{root} is not a wolfSSL tree (no wolfcrypt/src): the pinned crate "
                          f"{ctx.impl.table.get('crate')} has no wolfSSL there ([implementations.{ctx.impl.name}] tree)")
    return [sid for sid in ctx.schemes if sid in ctx.impl.table["params"]]


def _files(ctx: Context, patterns: list[str]) -> list[Path]:
    root = _root(ctx)
    out = []
    for pat in patterns:
        p = pat.replace("{harness}", str(ctx.harness))
        full = p if p.startswith("/") else str(root / p)
        hits = sorted(glob.glob(full)) if any(c in full for c in "*?[") else [full]
        if not hits or not all(Path(h).is_file() for h in hits):
            raise PqsimdError(f"{full} is missing from the source tree (a unit of {root})")
        out += [Path(h) for h in hits]
    return out


def settings_header(ctx: Context) -> str:
    t = ctx.impl.table
    lines = [f"/* generated by pqsimd for {ctx.family.name} / {ctx.impl.name}: wolfSSL's user settings "
             f"(WOLFSSL_USER_SETTINGS), from the family TOML; nothing else configures the library */",
             "#ifndef PQSIMD_WOLFSSL_USER_SETTINGS_H", "#define PQSIMD_WOLFSSL_USER_SETTINGS_H"]
    lines += [f"#define {s}" for s in t.get("settings", [])]
    lines += ["#endif"]
    return "\n".join(lines) + "\n"


def pin_header(ctx: Context) -> str:
    flags = ctx.impl.table.get("cpuid", [])
    mask = " | ".join(flags) if flags else "0"
    return (f"/* generated by pqsimd for {ctx.impl.name}: the run-time dispatch state every build of it is pinned to */\n"
            f"#define PQSIMD_WOLF_DISPATCH {1 if flags else 0}\n"
            f"#define PQSIMD_WOLF_CPUID ({mask})\n"
            f"#define PQSIMD_WOLF_CPUID_NAMES \"{' '.join(flags) or 'none'}\"\n")


def _kat_api(ctx: Context, scheme: str) -> str:
    kat, param = ctx.impl.table["kat"], ctx.impl.table["params"][scheme]
    kem = ctx.family.kind == "kem"
    sizes = [("PUBLICKEYBYTES", "public_key"), ("SECRETKEYBYTES", "secret_key"), ("BYTES", "bytes")]
    if kem:
        sizes.append(("CIPHERTEXTBYTES", "ciphertext"))
    lines = [f"/* generated by pqsimd: the names PQClean's NIST KAT program expects (PQCLEAN_NAMESPACE=PQSIMD_KAT) for "
             f"{ctx.impl.name} {scheme}, defined by {Path(kat['adapter']).name} */", "#include <stddef.h>",
             "#include <stdint.h>", *(f"#include <{h}>" for h in kat.get("headers", []))]
    lines += [f"#define PQSIMD_KAT_CRYPTO_{name} {kat[key].replace('{param}', param)}" for name, key in sizes]
    lines.append(f'#define PQSIMD_KAT_CRYPTO_ALGNAME "{scheme}"')
    if kem:
        lines += ["int PQSIMD_KAT_crypto_kem_keypair(uint8_t *pk, uint8_t *sk);",
                  "int PQSIMD_KAT_crypto_kem_enc(uint8_t *ct, uint8_t *ss, const uint8_t *pk);",
                  "int PQSIMD_KAT_crypto_kem_dec(uint8_t *ss, const uint8_t *ct, const uint8_t *sk);"]
    else:
        lines += ["int PQSIMD_KAT_crypto_sign_keypair(uint8_t *pk, uint8_t *sk);",
                  "int PQSIMD_KAT_crypto_sign(uint8_t *sm, size_t *smlen, const uint8_t *m, size_t mlen, const uint8_t *sk);",
                  "int PQSIMD_KAT_crypto_sign_open(uint8_t *m, size_t *mlen, const uint8_t *sm, size_t smlen, const uint8_t *pk);"]
    return "\n".join(lines) + "\n"


def _obj(prefix: str, src: Path, *roots: Path) -> str:
    rel = next((src.relative_to(r) for r in roots if src.is_relative_to(r)), Path(src.name))
    return f"{prefix}.{str(rel).replace('/', '_')}.o"


def plan(ctx: Context) -> Plan:
    t, fam = ctx.impl.table, ctx.family
    root = _root(ctx)
    p = Plan()
    p.generated[SETTINGS] = settings_header(ctx)
    p.generated[PIN] = pin_header(ctx)
    pre = (*t.get("cflags", []), f"-I{BUILD_DIR}", f"-I{root}", "-DWOLFSSL_USER_SETTINGS")
    p.shared = [Unit(f, _obj("wolf", f, root, ctx.harness), pre) for f in _files(ctx, t["units"])]
    for sid in schemes(ctx):
        p.schemes[sid] = []
        p.tables[sid] = Unit(ctx.impl.op_table or fam.op_table, f"{sid}.ops.o",
                             (*pre, f"-I{ctx.harness}", f"-DPQSIMD_WOLF_PARAM={t['params'][sid]}",
                              f"-DPQSIMD_NS={fam.schemes[sid].namespace}_{ctx.impl.name.upper().replace('-', '_')}",
                              f'-DPQSIMD_SCHEME="{sid}"', f'-DPQSIMD_IMPL="{ctx.impl.name}"',
                              *(f"-D{d}" for d in (*t.get("defines", []), *fam.schemes[sid].defines,
                                                   *t.get("set_defines", {}).get(sid, [])))))
        if fam.kat and t.get("kat"):
            api_dir = f"kat-api-{sid}"
            p.generated[f"{api_dir}/api.h"] = _kat_api(ctx, sid)
            common = ctx.tree.root / "common"
            kat_pre = (f"-I{BUILD_DIR}/{api_dir}", *pre, f"-I{common}", "-DPQCLEAN_NAMESPACE=PQSIMD_KAT",
                       f"-DPQSIMD_WOLF_PARAM={t['params'][sid]}", *(f"-D{d}" for d in t.get("set_defines", {}).get(sid, [])))
            extra = [Unit(common / n, f"katcommon.{n}.o", (f"-I{common}",)) for n in fam.kat.get("common", [])]
            own = [Unit(ctx.tree.root / fam.kat["rng"], "kat.rng.o", (f"-I{common}",)),
                   Unit(ctx.tree.root / fam.kat["program"], f"{sid}.nistkat.o", kat_pre),
                   Unit(_files(ctx, [t["kat"]["adapter"]])[0], f"{sid}.kat_adapter.o", kat_pre)]
            p.kat[sid] = extra + own
    p.libs = list(t.get("libs", []))
    p.inputs = sorted(f for pat in ("wolfcrypt/src/*", "wolfssl/wolfcrypt/*.h", "wolfssl/*.h") for f in root.glob(pat)
                      if f.is_file())
    p.inputs += [u.src for u in p.units() if not u.src.is_relative_to(root)]
    # the implementation's folder (harness/impl/<library>/: its op tables, glue, pin header, KAT adapters)
    p.inputs += sorted(f for f in Path(ctx.impl.op_table or fam.op_table).parent.glob("*") if f.is_file())
    return p
