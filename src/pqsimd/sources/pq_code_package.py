"""The pq-code-package layout (the ML-KEM and ML-DSA "-native" libraries): one tree of portable C for every
parameter set (chosen by a define), every symbol prefixed by a namespace define, and a native
backend whose functions are switched one by one (`<prefix>USE_NATIVE_<FUNCTION>` macros of a
profile header). A variant switches a subset of the implementation's kernel groups to native code
through a generated profile: it includes the upstream backend header by absolute path and
#undefs the switches that are off (no third-party file is edited or copied).

[implementations.<name>] keys (paths are relative to `tree`; `{tree}`, `{pqclean}` (the family's
PQClean tree) and `{harness}` may start any path or define):
  crate, tree          the pinned crate and the folder in it that holds the implementation
  checkout             instead of crate: the name of a tree the user brings (--sources NAME=PATH)
  expect               files the checkout must hold (relative to it): else --sources is refused in one line
  checkout_hint        what to bring when it does not (said in that line)
  units                portable C, compiled once per parameter set
  shared_units         compiled once per build (unprefixed code every set shares, e.g. PQClean's Keccak)
  includes, defines    for every unit (the build folder, with the generated headers, comes first)
  namespace            the define that prefixes every symbol (set to <scheme namespace>_<IMPL>)
  level_define, levels the define that chooses the parameter set, and its value per scheme
  kat                  sizes and API names for PQClean's KAT program: public_key, secret_key,
                       ciphertext (kem), bytes, headers (that define the sizes), and the functions
                       key_generation, encapsulation/decapsulation or signing/verification
  native               the backend: units, defines, meta (upstream header holding the switches,
                       or naming in impl_macro the one that does: impl), selected (macro the meta
                       defines), switch_prefix, requires_macros (every unit of a build with any group
                       on must see them: the backend's VEX code next to legacy-SSE C costs time),
                       renamed_when_off ({switch: [identifiers]}: upstream's definitions that clash
                       with the portable C's when the switch is off), tied (switches only legal together)
  groups.<name>        label, and switches (of the backend) and/or defines, units, shared_units
                       (used only when the group is on); a backend switch in no group is always off
"""

from __future__ import annotations

import glob
import re
from pathlib import Path

from ..errors import PqsimdError
from .layout import BUILD_DIR, Context, Plan, Unit

KEYS = ("crate", "checkout", "expect", "checkout_hint", "tree", "units", "shared_units", "includes", "defines", "namespace", "level_define", "levels", "kat",
        "native", "groups")
NATIVE_KEYS = ("units", "defines", "meta", "impl_macro", "impl", "selected", "switch_prefix", "requires_macros",
               "flags_hint", "renamed_when_off", "tied")
GROUP_KEYS = ("label", "switches", "defines", "units", "shared_units")
KAT_KEYS = ("headers", "public_key", "secret_key", "ciphertext", "bytes", "key_generation", "encapsulation",
            "decapsulation", "signing", "verification")
PROFILE = "pqsimd_profile.h"
PROFILE_IMPL = "pqsimd_profile_impl.h"
GUARD = "pqsimd_native_guard.h"
RESERVED_GROUPS = ("none", "aa", "all")  # ablation cell ids and A/A ids are made of group names


def _fail(where: str, what: str) -> PqsimdError:
    return PqsimdError(f"{where}: {what}")


def _strings(d: dict, key: str, where: str, required: bool = False) -> list[str]:
    value = d.get(key, [] if not required else None)
    if not isinstance(value, list) or not all(isinstance(x, str) and x for x in value) or (required and not value):
        raise _fail(where, f"`{key}` must be a {'non-empty ' if required else ''}list of strings, got {value!r}")
    return value


def _text(d: dict, key: str, where: str) -> str:
    value = d.get(key)
    if not isinstance(value, str) or not value:
        raise _fail(where, f"`{key}` must be a non-empty string, got {value!r}")
    return value


def _unknown(d: dict, known: tuple[str, ...], where: str) -> None:
    bad = sorted(set(d) - set(known))
    if bad:
        raise _fail(where, f"unknown key(s) {', '.join(bad)}; known: {', '.join(known)}")


def check(table: dict, where: str) -> None:
    if ("crate" in table) == ("checkout" in table):
        raise _fail(where, "give `crate` (a pinned crate) or `checkout` (a tree the user brings with --sources), one of them")
    for key in ("crate" if "crate" in table else "checkout", "tree", "namespace", "level_define"):
        _text(table, key, where)
    _strings(table, "expect", where)
    if "checkout_hint" in table:
        _text(table, "checkout_hint", where)
    _strings(table, "units", where, required=True)
    for key in ("shared_units", "includes", "defines"):
        _strings(table, key, where)
    levels = table.get("levels")
    if not isinstance(levels, dict) or not levels or not all(isinstance(v, str) for v in levels.values()):
        raise _fail(where, f"`levels` must be a table of scheme = \"value of {table.get('level_define')}\", got {levels!r}")
    kat = table.get("kat", {})
    if not isinstance(kat, dict):
        raise _fail(where, f"`kat` must be a table, got {kat!r}")
    _unknown(kat, KAT_KEYS, f"{where}.kat")
    native = table.get("native", {})
    if not isinstance(native, dict):
        raise _fail(where, f"`native` must be a table, got {native!r}")
    _unknown(native, NATIVE_KEYS, f"{where}.native")
    groups_t = table.get("groups", {})
    if not isinstance(groups_t, dict):
        raise _fail(where, f"`groups` must be a table of groups, got {groups_t!r}")
    switched: dict[str, str] = {}
    for name, g in groups_t.items():
        w = f"{where}.groups.{name}"
        if name in RESERVED_GROUPS:
            raise _fail(w, f"a group may not be called {name!r} (ablation cell ids are made of group names)")
        if not isinstance(g, dict):
            raise _fail(w, f"a group must be a table with `label` and `switches` or `defines`, got {g!r}")
        _unknown(g, GROUP_KEYS, w)
        _text(g, "label", w)
        for key in ("switches", "defines", "units", "shared_units"):
            _strings(g, key, w)
        if not g.get("switches") and not g.get("defines"):
            raise _fail(w, "a group needs `switches` (of the native backend) or `defines`")
        if g.get("switches") and not native:
            raise _fail(w, "the group has `switches` but the implementation has no [native] backend")
        for s in g.get("switches", []):
            if s in switched:
                raise _fail(w, f"switch {s} is also in group {switched[s]}: a switch belongs to one group")
            switched[s] = name
    for tie in native.get("tied", []):
        if not isinstance(tie, list) or not all(isinstance(s, str) for s in tie):
            raise _fail(f"{where}.native", f"`tied` must be a list of lists of switches, got {tie!r}")
        owners = {switched.get(s) for s in tie}
        if len(owners) > 1:
            split = ", ".join(f"{s} ({switched.get(s) or 'no group'})" for s in tie)
            raise _fail(f"{where}.native", f"switches that are only legal together are split across groups: {split}; "
                                           f"put them in one group")
    if native:
        for key in ("meta", "selected", "switch_prefix"):
            _text(native, key, f"{where}.native")
        _strings(native, "units", f"{where}.native", required=True)
        if ("impl_macro" in native) != ("impl" in native):
            raise _fail(f"{where}.native", "`impl_macro` and `impl` go together (the header the meta names)")


def groups(table: dict) -> dict[str, str]:
    return {name: g["label"] for name, g in table.get("groups", {}).items()}


def _root(ctx: Context) -> Path:
    t = ctx.impl.table
    who = f"implementation {ctx.impl.name}"
    if t.get("checkout"):
        return ctx.tree.checkout_root(t["checkout"], who) / t["tree"]
    return ctx.tree.crate_root(t.get("crate") or "", who) / t["tree"]


def schemes(ctx: Context) -> list[str]:
    levels = ctx.impl.table["levels"]
    root = _root(ctx)
    if not root.is_dir():
        what = (f"the checkout {ctx.impl.table['checkout']}" if ctx.impl.table.get("checkout")
                else f"the pinned crate {ctx.impl.table.get('crate')}")
        raise PqsimdError(f"{root} does not exist: {what} has no {ctx.impl.name} tree there "
                          f"([implementations.{ctx.impl.name}] tree)")
    return [sid for sid in ctx.schemes if sid in levels]


def namespace(ctx: Context, scheme: str) -> str:
    return f"{ctx.family.schemes[scheme].namespace}_{ctx.impl.name.upper().replace('-', '_')}"


class _Paths:
    """{tree}, {pqclean}, {harness} at the start of a path or inside a define."""

    def __init__(self, ctx: Context):
        self.subst = {"{tree}": str(_root(ctx)), "{pqclean}": str(ctx.tree.root), "{harness}": str(ctx.harness)}
        self.root = _root(ctx)

    def text(self, s: str) -> str:
        for k, v in self.subst.items():
            s = s.replace(k, v)
        return s

    def files(self, patterns: list[str]) -> list[Path]:
        out = []
        for pat in patterns:
            p = self.text(pat)
            full = p if p.startswith("/") else str(self.root / p)
            hits = sorted(glob.glob(full)) if any(c in full for c in "*?[") else [full]
            if not hits or not all(Path(h).is_file() for h in hits):
                raise PqsimdError(f"{full} is missing from the source tree (a unit of {self.root})")
            out += [Path(h) for h in hits]
        return out


def _obj(prefix: str, src: Path, *roots: Path) -> str:
    """An object name that keeps units of the same file name in different folders apart."""
    rel = next((src.relative_to(r) for r in roots if src.is_relative_to(r)), Path(src.name))
    return f"{prefix}.{str(rel).replace('/', '_')}.o"


def upstream_switches(ctx: Context, paths: _Paths) -> list[str]:
    """Every switch the upstream backend header defines, and those the groups name: a switch in no
    group is always off (C), so a library version with a new switch cannot leave it on unnoticed."""
    nat = ctx.impl.table["native"]
    header = paths.root / nat.get("impl", nat["meta"])
    try:
        text = header.read_text()
    except OSError as e:
        raise PqsimdError(f"{header}: cannot read the backend's switches ({e.strerror})") from None
    found = re.findall(rf"^\s*#\s*define\s+{re.escape(nat['switch_prefix'])}(\w+)", text, re.M)
    named = [s for g in ctx.impl.table.get("groups", {}).values() for s in g.get("switches", [])]
    return list(dict.fromkeys([*found, *named]))


def profile(ctx: Context, paths: _Paths, switches_off: list[str]) -> dict[str, str]:
    """The generated headers that select the backend with some switches off: only #include of
    the upstream header, #undef, #define of a rename, #if/#error (our code, nothing derived)."""
    nat = ctx.impl.table["native"]
    prefix = nat["switch_prefix"]
    renames = {s: ids for s, ids in nat.get("renamed_when_off", {}).items() if s in switches_off}
    head = f"/* generated by pqsimd for {ctx.impl.name}: the native backend with these switches off: " \
           f"{', '.join(switches_off) or 'none'} */\n"
    undefs = "".join(f"#undef {prefix}{s}\n" for s in switches_off)
    ties = ""
    for tie in nat.get("tied", []):
        on = " && ".join(f"defined({prefix}{s})" for s in tie)
        off = " && ".join(f"!defined({prefix}{s})" for s in tie)
        ties += f"#if !(({on}) || ({off}))\n#error pqsimd: {', '.join(tie)} are only legal together\n#endif\n"
    selected = (f"#if !defined({nat['selected']})\n#error pqsimd: {nat['meta']} did not select the backend "
                f"({nat['selected']} undefined)\n#endif\n")
    renamed = [i for ids in renames.values() for i in ids]

    def including(header: str) -> str:  # upstream's clashing definitions get names nobody calls
        return ("".join(f"#define {i} pqsimd_unused_backend_{i}\n" for i in renamed)
                + f'#include "{paths.root / header}"\n' + "".join(f"#undef {i}\n" for i in renamed))

    if "impl_macro" in nat:  # the switches live in the header the meta names: redirect it to ours
        main = (head + f'#include "{paths.root / nat["meta"]}"\n' + selected
                + f"#undef {nat['impl_macro']}\n#define {nat['impl_macro']} \"{PROFILE_IMPL}\"\n")
        return {PROFILE: main, PROFILE_IMPL: head + including(nat["impl"]) + undefs + ties}
    return {PROFILE: head + including(nat["meta"]) + selected + undefs + ties}


def _guard(ctx: Context) -> str:
    nat = ctx.impl.table.get("native", {})
    macros = nat.get("requires_macros", [])
    hint = f" (e.g. {nat['flags_hint']})" if nat.get("flags_hint") else ""
    return (f"/* generated by pqsimd: every unit of a build with native code of {ctx.impl.name} is compiled with "
            f"the backend's instruction set (VEX code next to legacy SSE code costs time) */\n"
            + "".join(f"#if !defined({m})\n#error pqsimd: native code of {ctx.impl.name} needs {m} in every unit: "
                      f"compile the variant with the backend's flags{hint}\n#endif\n"
                      for m in macros))


def _kat_api(ctx: Context, scheme: str, ns: str) -> str:
    kat = ctx.impl.table.get("kat", {})
    kem = ctx.family.kind == "kem"
    lines = [f"/* generated by pqsimd: the names PQClean's NIST KAT program expects (PQCLEAN_NAMESPACE=PQSIMD_KAT) "
             f"for {ctx.impl.name} {scheme} */", "#include <stddef.h>", "#include <stdint.h>",
             *(f'#include "{h}"' for h in kat.get("headers", []))]
    sizes = [("PUBLICKEYBYTES", "public_key"), ("SECRETKEYBYTES", "secret_key"), ("BYTES", "bytes")]
    if kem:
        sizes.append(("CIPHERTEXTBYTES", "ciphertext"))
    lines += [f"#define PQSIMD_KAT_CRYPTO_{name} {kat[key]}" for name, key in sizes]
    lines.append(f'#define PQSIMD_KAT_CRYPTO_ALGNAME "{scheme}"')
    if kem:
        lines += [f"#define PQSIMD_KAT_crypto_kem_keypair {ns}_{kat['key_generation']}",
                  f"#define PQSIMD_KAT_crypto_kem_enc {ns}_{kat['encapsulation']}",
                  f"#define PQSIMD_KAT_crypto_kem_dec {ns}_{kat['decapsulation']}",
                  "int PQSIMD_KAT_crypto_kem_keypair(uint8_t *pk, uint8_t *sk);",
                  "int PQSIMD_KAT_crypto_kem_enc(uint8_t *ct, uint8_t *ss, const uint8_t *pk);",
                  "int PQSIMD_KAT_crypto_kem_dec(uint8_t *ss, const uint8_t *ct, const uint8_t *sk);"]
    else:  # harness/kat/sign_attached.c builds the attached API over these
        lines += [f"#define PQSIMD_KAT_crypto_sign_keypair {ns}_{kat['key_generation']}",
                  f"#define PQSIMD_KAT_SIGNATURE {ns}_{kat['signing']}",
                  f"#define PQSIMD_KAT_VERIFY {ns}_{kat['verification']}",
                  "int PQSIMD_KAT_crypto_sign_keypair(uint8_t *pk, uint8_t *sk);",
                  "int PQSIMD_KAT_crypto_sign(uint8_t *sm, size_t *smlen, const uint8_t *m, size_t mlen, const uint8_t *sk);",
                  "int PQSIMD_KAT_crypto_sign_open(uint8_t *m, size_t *mlen, const uint8_t *sm, size_t smlen, const uint8_t *pk);"]
    return "\n".join(lines) + "\n"


def plan(ctx: Context) -> Plan:
    t, fam = ctx.impl.table, ctx.family
    paths = _Paths(ctx)
    nat = t.get("native", {})
    groups_t = t.get("groups", {})
    on = [g for g in groups_t if g in ctx.native]
    switches_on = {s for g in on for s in groups_t[g].get("switches", [])}
    p = Plan()
    defines = [*t.get("defines", []), *(d for g in on for d in groups_t[g].get("defines", []))]
    if switches_on:
        p.generated.update(profile(ctx, paths, [s for s in upstream_switches(ctx, paths) if s not in switches_on]))
        defines += nat.get("defines", [])
    pre = [f"-I{BUILD_DIR}", *(f"-I{paths.text(i)}" for i in t.get("includes", []))]
    if on:
        p.generated[GUARD] = _guard(ctx)
        pre += ["-include", f"{BUILD_DIR}/{GUARD}"]
    pre += [f"-D{paths.text(d)}" for d in defines]
    shared = paths.files([*t.get("shared_units", []), *(u for g in on for u in groups_t[g].get("shared_units", []))])
    p.shared = [Unit(f, _obj("shared", f, paths.root, ctx.tree.root), tuple(pre)) for f in shared]
    units = paths.files([*t["units"], *(nat["units"] if switches_on else []),
                         *(u for g in on for u in groups_t[g].get("units", []))])
    common = ctx.tree.root / "common"
    for sid in schemes(ctx):
        ns = namespace(ctx, sid)
        level = (*pre, f"-D{t['level_define']}={t['levels'][sid]}", f"-D{t['namespace']}={ns}")
        p.schemes[sid] = [Unit(f, _obj(sid, f, paths.root, ctx.tree.root), level) for f in units]
        p.tables[sid] = Unit(ctx.impl.op_table or fam.op_table, f"{sid}.ops.o",
                             (*level, f"-I{ctx.harness}", f"-DPQSIMD_NS={ns}", f'-DPQSIMD_SCHEME="{sid}"',
                              f'-DPQSIMD_IMPL="{ctx.impl.name}"'))
        if fam.kat and t.get("kat"):
            api_dir = f"kat-api-{sid}"
            p.generated[f"{api_dir}/api.h"] = _kat_api(ctx, sid, ns)
            # PQClean's common/ before the tree: the KAT program's randombytes.h is PQClean's (a tree may
            # have one of its own, e.g. mlkem-native v2's mlkem/src/randombytes.h)
            kat_pre = (f"-I{BUILD_DIR}/{api_dir}", f"-I{common}", *level, "-DPQCLEAN_NAMESPACE=PQSIMD_KAT")
            have = {u.src for u in p.shared}
            extra = [Unit(common / n, f"katcommon.{n}.o", (f"-I{common}",)) for n in fam.kat.get("common", [])
                     if common / n not in have]
            own = [Unit(ctx.tree.root / fam.kat["rng"], "kat.rng.o", (f"-I{common}",)),
                   Unit(ctx.tree.root / fam.kat["program"], f"{sid}.nistkat.o", kat_pre)]
            if fam.kind == "sign":
                own.append(Unit(ctx.harness / "kat" / "sign_attached.c", f"{sid}.kat_attached.o", kat_pre))
            p.kat[sid] = extra + own
    p.inputs = sorted(f for f in paths.root.rglob("*") if f.is_file())
    p.inputs += [u.src for u in p.units() if not u.src.is_relative_to(paths.root)]
    # the implementation's folder (harness/impl/<library>/: its op tables and glue) and the KAT adapters
    p.inputs += sorted(Path(ctx.impl.op_table or fam.op_table).parent.glob("*")) + sorted((ctx.harness / "kat").glob("*"))
    p.inputs += sorted(common.glob("*.h"))
    return p
