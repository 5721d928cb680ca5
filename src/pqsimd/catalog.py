"""The shipped data: scheme families, variants and the decomposition chain, compiler families,
presets (TOML files in pqsimd/data/). Nothing outside data/ names a scheme, an op or a variant.

Families are found in pqsimd/data/families/*.toml and in the directories of $PQSIMD_FAMILY_PATH
(colon-separated), so a user (or a test) adds a family without touching pqsimd.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from . import familyschema, ids
from .errors import PqsimdError, did_you_mean
from .model import Chain, Step  # noqa: F401 (the catalog's chains are model.Chain)

KINDS = ("kem", "sign", "hash")
# Ids become file names and parts of composite ids (build, job): the rules are in ids.py.
SAFE_ID = ids.SAFE_ID
check_id = ids.check_id
aa_variant_id = ids.aa_variant_id


def _data_text(name: str) -> str:
    return resources.files("pqsimd.data").joinpath(name).read_text()


def _toml(text: str, where: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise PqsimdError(f"{where}: malformed TOML ({e})") from None


def _str_list(d: dict, key: str, where: str, default: Any = ()) -> tuple[str, ...]:
    value = d.get(key, default)
    if not isinstance(value, (list, tuple)) or not all(isinstance(x, str) for x in value):
        raise PqsimdError(f"{where}: `{key}` must be a list of strings, got {value!r}")
    return tuple(value)


def _table(d: dict, key: str, where: str) -> dict:
    value = d.get(key, {})
    if not isinstance(value, dict):
        raise PqsimdError(f"{where}: [{key}] must be a table, got {value!r}")
    return value


# --- variants and the chain -----------------------------------------------------------------------

@dataclass(frozen=True)
class Variant:
    id: str
    sources: str  # the family's implementation: "clean" | "avx2" | "mlkem-native" | ...
    flags: tuple[str, ...]
    description: str = ""
    default: bool = False
    requires_cpu: tuple[str, ...] = ()
    node_dependent: bool = False
    native: tuple[str, ...] | None = None  # the implementation's kernel groups on native code (None: all)
    # False: the flags may change floating-point rounding (-march=native contracts a*b+c into FMA,
    # -ffast-math), so builds of implementations that compute in hardware floating point
    # (`native_fp`) cannot promise byte-identical outputs and are gated verify-only.
    fp_exact: bool = True
    isa: tuple[str, ...] | None = None  # the ISAs it builds for (None: every one)

    def builds_for(self, isa: str) -> bool:
        return self.isa is None or isa in self.isa

    def to_dict(self) -> dict[str, Any]:
        out = {
            "sources": self.sources,
            "flags": list(self.flags),
            "description": self.description,
            "default": self.default,
            "requires_cpu": list(self.requires_cpu),
            "node_dependent": self.node_dependent,
        }
        if self.native is not None:  # (absent from the variants without switches, as before it existed)
            out["native"] = list(self.native)
        if not self.fp_exact:  # only then: the plans of studies made before the key existed stay equal
            out["fp_exact"] = False
        if self.isa is not None:
            out["isa"] = list(self.isa)
        return out


VARIANT_KEYS = {"sources": str, "flags": list, "description": str, "default": bool, "requires_cpu": list,
                "node_dependent": bool, "native": list, "fp_exact": bool, "isa": list}


def variant_from_dict(vid: str, d: Any, where: str) -> Variant:
    check_id("variant", vid, where)
    if not isinstance(d, dict):
        raise PqsimdError(f"{where}: [variants.{vid}] must be a table with `sources` and `flags`, got {d!r}")
    unknown = sorted(set(d) - set(VARIANT_KEYS))
    if unknown:
        raise PqsimdError(f"{where}: variant '{vid}' has unknown key(s) {', '.join(unknown)}; known: {', '.join(VARIANT_KEYS)}")
    if "sources" not in d or "flags" not in d:
        raise PqsimdError(f"{where}: variant '{vid}' needs `sources` (a PQClean implementation directory) and `flags` (a list)")
    for key, typ in VARIANT_KEYS.items():
        if key in d and (not isinstance(d[key], typ) or (typ is not bool and isinstance(d[key], bool))):
            want = {str: "a string", list: "a list of strings", bool: "true or false"}[typ]
            raise PqsimdError(f"{where}: variant '{vid}': `{key}` must be {want}, got {d[key]!r}")
    flags = _str_list(d, "flags", f"{where}: variant '{vid}'")
    for f in flags:
        if "\n" in f or "\0" in f:
            raise PqsimdError(f"{where}: variant '{vid}': a flag contains a newline or NUL")
        if f.startswith("-fsanitize="):
            raise PqsimdError(f"{where}: variant '{vid}': {f} is not supported: a sanitizer's runtime must be the first "
                              f"library of the process, and the driver that loads every build is built once without "
                              f"it (and its checks would be what is timed); run the sanitizer on the sources outside "
                              f"pqsimd, e.g. PQClean's own tests")
    check_id("implementation", d["sources"], f"{where}: variant '{vid}' sources")
    native = _str_list(d, "native", f"{where}: variant '{vid}'") if "native" in d else None
    if native is not None and len(set(native)) != len(native):
        raise PqsimdError(f"{where}: variant '{vid}': `native` lists a group twice")
    return Variant(
        id=vid,
        sources=d["sources"],
        flags=flags,
        description=str(d.get("description", "")),
        default=bool(d.get("default", False)),
        requires_cpu=_str_list(d, "requires_cpu", f"{where}: variant '{vid}'"),
        node_dependent=bool(d.get("node_dependent", False)),
        native=native,
        fp_exact=bool(d.get("fp_exact", True)),
        isa=_str_list(d, "isa", f"{where}: variant '{vid}'") if "isa" in d else None,
    )


@cache
def _variants_doc() -> dict[str, Any]:
    return _toml(_data_text("variants.toml"), "variants.toml")


@cache
def builtin_variants() -> dict[str, Variant]:
    return {vid: variant_from_dict(vid, d, "variants.toml") for vid, d in _variants_doc()["variants"].items()}


@cache
def chain(isa: str | None = None) -> Chain:
    """The decomposition chain of an ISA ([chains.<isa>] of variants.toml); None: the first (default)."""
    chains = _variants_doc()["chains"]
    name = isa if isa is not None else next(iter(chains))
    if name not in chains:
        raise PqsimdError(f"variants.toml has no chain for ISA {name!r} (chains: {', '.join(chains)}); add [chains.{name}]")
    return Chain.from_dict(chains[name], f"variants.toml [chains.{name}]")


@cache
def presets() -> dict[str, dict[str, Any]]:
    return _toml(_data_text("presets.toml"), "presets.toml")


# --- compilers ------------------------------------------------------------------------------------

@cache
def compilers_doc() -> dict[str, Any]:
    return _toml(_data_text("compilers.toml"), "compilers.toml")


def compiler_family(version_text: str) -> str:
    """The family (gcc | clang | ...) of a compiler from its --version output."""
    text = version_text.lower()
    for name, fam in compilers_doc()["families"].items():
        if fam.get("detect", name) in text:
            return name
    return "unknown"


def translate_flags(flags: tuple[str, ...] | list[str], family: str, variant: str = "?") -> list[str]:
    """Expand "@name" flags to the compiler family's spelling; an unknown one is an error."""
    fam = compilers_doc()["families"].get(family, {})
    out: list[str] = []
    for f in flags:
        if f.startswith("@"):
            if f not in fam:
                known = [k for k in fam if k.startswith("@")]
                raise PqsimdError(f"variant {variant}: flag {f} has no spelling for compiler family '{family}' "
                                  f"in data/compilers.toml (known: {', '.join(known) or 'none'})")
            out += list(fam[f])
        else:
            out.append(f)
    return out


# --- scheme families ------------------------------------------------------------------------------

IMPLEMENTATION_KEYS = ("layout", "op_table", "requires_cpu", "label", "absent", "notes", "native_fp", "byte_identical")


@dataclass(frozen=True)
class Implementation:
    """One implementation of a family: where its code comes from and how it is laid out (a module of
    pqsimd/sources/, which reads its own keys from `table`)."""

    name: str
    layout: str = "pqclean"
    requires_cpu: tuple[str, ...] = ()
    op_table: Path | None = None  # None: the family's
    label: str = ""
    native_fp: bool = False  # computes in the CPU's floating point: outputs depend on the build's rounding
    # False: its outputs are not the reference implementation's bytes even when correct (it draws or expands its
    # randomness otherwise, e.g. wolfSSL's Falcon sampler): its builds are gated verify-only (cross-verification)
    byte_identical: bool = True
    groups: dict[str, str] = field(default_factory=dict)  # kernel groups a variant switches (name -> label)
    absent: dict[str, Any] = field(default_factory=dict)  # op -> why it has none (or {scheme: why})
    notes: dict[str, str] = field(default_factory=dict)  # op -> how its function differs from other implementations'
    table: dict[str, Any] = field(default_factory=dict)  # [implementations.<name>] as written

    def absent_reason(self, op: str, scheme: str) -> str | None:
        why = self.absent.get(op)
        return why.get(scheme) if isinstance(why, dict) else why


@dataclass(frozen=True)
class Scheme:
    id: str
    dir: str | None  # PQClean directory of the scheme (None: only common/ code)
    namespace: str
    label: str
    defines: tuple[str, ...] = ()  # for this set's op table only (e.g. an API that differs between sets)
    gate: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)  # overrides [gate] for this set


@dataclass(frozen=True)
class Family:
    name: str
    title: str
    kind: str
    op_table: Path  # absolute path of the op table C file
    schemes: dict[str, Scheme]
    implementations: dict[str, Implementation]
    ops: tuple[str, ...]
    labels: dict[str, str] = field(default_factory=dict)
    self_check: str | None = None
    sentence_labels: dict[str, str] = field(default_factory=dict)  # [ops.sentence_labels]: a label no sentence confuses
    fixed_randomness: dict[str, str] = field(default_factory=dict)  # [ops.fixed_randomness]: randomized op -> its twin
    kat: dict[str, Any] = field(default_factory=dict)  # program, rng, common ({} = no KAT)
    gate: dict[str, Any] = field(default_factory=dict)
    views: dict[str, Any] = field(default_factory=dict)
    default: bool = False  # the family `pqsimd run` times when no --schemes is given
    call_counters: dict[str, Any] = field(default_factory=dict)  # op -> function counted per call ([ops.call_counters])
    ablation: dict[str, Any] = field(default_factory=dict)  # [ablation]: variant (whose groups --ablation switches)
    ct: dict[str, Any] = field(default_factory=dict)  # [ct]: secret (op -> secret inputs), public (function -> why)
    source: str = ""  # the TOML file it came from
    text: str = ""  # its content (recorded in the manifest)

    def label(self, op: str) -> str:
        return self.labels.get(op, op)

    def op_names(self) -> dict[str, str]:
        """Every op id with the label the report shows for it (the names `resolve_ops` accepts)."""
        return {op: self.label(op) for op in self.ops}

    def secrets(self, op: str) -> list[str]:
        """The op's secret inputs ([ct.secret]): op-table buffers, or `random` (what it draws)."""
        return list(self.ct.get("secret", {}).get(op, []))

    def public_functions(self) -> dict[str, str]:
        """Functions whose inputs the standard makes public ([ct.public]: a name pattern -> why): a site
        inside one is declassified, not a leak."""
        return dict(self.ct.get("public", {}))

    def implementation(self, name: str) -> Implementation | None:
        return self.implementations.get(name)

    def gate_for(self, scheme: str) -> dict[str, Any]:
        """The family's [gate] table with the set's own overrides ([schemes.<id>.gate]) merged in."""
        return _merged(self.gate, self.schemes[scheme].gate)

    def to_results(self) -> dict[str, Any]:
        """What analyze carries into results/summary.json for the report (which reads no data/)."""
        out = {
            "family": self.name, "title": self.title, "kind": self.kind,
            "schemes": {s.id: {"label": s.label} for s in self.schemes.values()},
            "ops": list(self.ops), "labels": dict(self.labels), "self_check": self.self_check,
            "views": self.views, "sentence_labels": dict(self.sentence_labels),
            "fixed_randomness": dict(self.fixed_randomness),
        }
        kinds = math_kinds()
        used = sorted(set((self.views.get("portfolio") or {}).get("kernels", {}).values()))
        if used:
            out["math"] = {k: kinds[k] for k in used}
        ref = self.views.get("reference")
        if isinstance(ref, str) and ref:
            out["reference"] = reference_table(ref)
        claims = self.views.get("claims")
        if isinstance(claims, str) and claims:
            out["claims"] = claims_file(claims)
        return out


def claims_file(name: str) -> dict[str, Any]:
    """A published paper's mechanistic claims with measurable predictions (data/, beside its
    reference table; analyze/claims.py tests them)."""
    try:
        text = _data_text(name)
    except (FileNotFoundError, OSError):
        return {"name": name, "error": f"data/{name} is missing"}
    return {"name": name, **_toml(text, name)}


def reference_table(name: str) -> dict[str, Any]:
    """A published table shipped in data/ (e.g. the paper's Table 1): its comment header and rows."""
    import csv
    import io

    try:
        text = _data_text(name)
    except (FileNotFoundError, OSError):
        return {"name": name, "error": f"data/{name} is missing"}
    comments = [l[1:].strip() for l in text.splitlines() if l.startswith("#")]
    body = "\n".join(l for l in text.splitlines() if not l.startswith("#"))
    rows = list(csv.DictReader(io.StringIO(body)))
    return {"name": name, "about": comments, "rows": rows}


def _op_table(name: str, base_dir: Path | None, where: str) -> Path:
    """An op table by name: beside a user's family TOML, else a family's own (harness/ops/NAME), else a
    source library's (harness/impl/<library>/NAME, named from harness/: "impl/wolfssl/ml_kem.c")."""
    harness = Path(str(resources.files("pqsimd").joinpath("harness")))
    candidates = ([base_dir / name] if base_dir else []) + [harness / "ops" / name, harness / name]
    path = next((p for p in candidates if p.is_file()), None)
    if path is None:
        raise PqsimdError(f"{where}: op table {name} not found (looked in {', '.join(str(c.parent) for c in candidates)})")
    return path


def _implementation(name: str, i: dict, where: str, base_dir: Path | None, schemes: dict) -> Implementation:
    from . import sources

    lay = sources.find_layout(i.get("layout", "pqclean"), where)
    unknown = sorted(set(i) - set(IMPLEMENTATION_KEYS) - set(lay.KEYS))
    if unknown:
        raise PqsimdError(f"{where}: unknown key(s) {', '.join(unknown)}; known: "
                          f"{', '.join((*IMPLEMENTATION_KEYS, *lay.KEYS))}")
    lay.check(i, where)
    for flag in ("native_fp", "byte_identical"):
        if not isinstance(i.get(flag, flag == "byte_identical"), bool):
            raise PqsimdError(f"{where}: `{flag}` must be true or false, got {i[flag]!r}")
    table = i.get("op_table")
    if table is not None and (not isinstance(table, str) or not table):
        raise PqsimdError(f"{where}: op_table must name an op table C file, got {table!r}")
    absent = _table(i, "absent", where)
    for op, why in absent.items():
        check_id("op", op, where)
        per = why if isinstance(why, dict) else {"": why}
        if not all(isinstance(v, str) and v for v in per.values()) or any(s and s not in schemes for s in per):
            raise PqsimdError(f"{where}: absent.{op} must say why (a string, or a table scheme = why for the "
                              f"schemes of {', '.join(schemes)}), got {why!r}")
    return Implementation(name=name, layout=i.get("layout", "pqclean"),
                          requires_cpu=_str_list(i, "requires_cpu", where),
                          op_table=_op_table(table, base_dir, where) if table else None,
                          label=str(i.get("label", "")), native_fp=bool(i.get("native_fp", False)),
                          byte_identical=bool(i.get("byte_identical", True)),
                          groups=lay.groups(i), absent=absent,
                          notes={str(k): str(v) for k, v in _table(i, "notes", where).items()}, table=i)


def _merged(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merged(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


@cache
def math_kinds() -> dict[str, dict[str, str]]:
    """The kinds of mathematics a portfolio kernel is tagged with (data/math.toml): id -> label, about."""
    doc = _toml(_data_text("math.toml"), "math.toml")
    return {k: {"label": str(v.get("label", k)), "about": str(v.get("about", ""))} for k, v in doc["math"].items()}


def _check_portfolio(views: dict[str, Any], ops: tuple[str, ...], self_check: Any, where: str) -> None:
    """[views.portfolio]: end_to_end (ops) and kernels ({op = math kind}) name the family's own ops,
    never the self-check, and every kind is one of data/math.toml."""
    p = views.get("portfolio")
    if p is None:
        return
    w = f"{where}: [views.portfolio]"
    if not isinstance(p, dict) or set(p) - {"end_to_end", "kernels"}:
        raise PqsimdError(f"{w} must be a table with `end_to_end` (a list of ops) and `kernels` ({{op = kind}}), got {p!r}")
    e2e = _str_list(p, "end_to_end", w, default=[])
    kernels = p.get("kernels", {})
    if not isinstance(kernels, dict) or not all(isinstance(v, str) for v in kernels.values()):
        raise PqsimdError(f"{w}: `kernels` must map each kernel op to its kind of mathematics, got {kernels!r}")
    if not e2e and not kernels:
        raise PqsimdError(f"{w} names no op; list `end_to_end` ops and/or `kernels`")
    for op in [*e2e, *kernels]:
        if op not in ops or op == self_check:
            raise PqsimdError(f"{w}: '{op}' is not a timed op of this family (its ops: "
                              f"{', '.join(o for o in ops if o != self_check)})")
    overlap = sorted(set(e2e) & set(kernels))
    if overlap:
        raise PqsimdError(f"{w}: {', '.join(overlap)} is both end-to-end and a kernel; name it once")
    kinds = math_kinds()
    for op, kind in kernels.items():
        if kind not in kinds:
            raise PqsimdError(f"{w}: kernel '{op}' has kind '{kind}', which data/math.toml does not define "
                              f"(known: {', '.join(kinds)})")


def family_from_toml(text: str, source: str, base_dir: Path | None) -> Family:
    d = _toml(text, source)
    where = source
    name = d.get("family")
    check_id("family", name, where)
    kind = d.get("kind")
    if kind not in KINDS:
        raise PqsimdError(f"{where}: kind must be one of {', '.join(KINDS)}, got {kind!r}")
    op_table = d.get("op_table")
    if not isinstance(op_table, str) or not op_table:
        raise PqsimdError(f"{where}: op_table must name the family's op table C file")
    path = _op_table(op_table, base_dir, where)
    schemes = {}
    for sid, s in _table(d, "schemes", where).items():
        check_id("scheme", sid, where)
        if not isinstance(s, dict) or not isinstance(s.get("namespace"), str):
            raise PqsimdError(f"{where}: [schemes.{sid}] needs a `namespace` string")
        if s.get("dir") is not None and (not isinstance(s["dir"], str) or not s["dir"]):
            raise PqsimdError(f"{where}: [schemes.{sid}] dir must be a directory of the source tree, got {s['dir']!r}")
        w = f"{where}: schemes.{sid}"
        schemes[sid] = Scheme(sid, s.get("dir"), s["namespace"], str(s.get("label", sid.upper())),
                              _str_list(s, "defines", w), _table(s, "gate", w))
    if not schemes:
        raise PqsimdError(f"{where}: a family needs at least one [schemes.<id>]")
    impls = {}
    for iname, i in _table(d, "implementations", where).items():
        check_id("implementation", iname, where)
        if not isinstance(i, dict):
            raise PqsimdError(f"{where}: [implementations.{iname}] must be a table")
        impls[iname] = _implementation(iname, i, f"{where}: implementations.{iname}", base_dir, schemes)
    ops_t = _table(d, "ops", where)
    ops = _str_list(ops_t, "order", f"{where}: [ops]")
    if not ops:
        raise PqsimdError(f"{where}: [ops] order must list the family's ops")
    for op in ops:
        check_id("op", op, where)
    labels = {k: str(v) for k, v in _table(ops_t, "labels", where).items()}
    kat, gate, views = _table(d, "kat", where), _table(d, "gate", where), _table(d, "views", where)
    call_counters = _table(ops_t, "call_counters", where)
    familyschema.check_ops(ops, ops_t, where)
    familyschema.check_kat(kat, where)
    familyschema.check_gate(gate, kind, where)
    for sid, sch in schemes.items():
        familyschema.check_gate(_merged(gate, sch.gate), kind, f"{where}: schemes.{sid}", complete=True)
    familyschema.check_views(views, ops, schemes, where)
    for impl in impls.values():
        familyschema.check_absent(impl.name, impl.absent, impl.notes, ops, where)
    ablation = _table(d, "ablation", where)
    familyschema.check_ablation(ablation, where)
    ct = _table(d, "ct", where)
    familyschema.check_ct(ct, ops, where)
    _check_portfolio(views, ops, ops_t.get("self_check"), where)
    return Family(
        name=name, title=str(d.get("title", name)), kind=kind, op_table=path, schemes=schemes,
        implementations=impls, ops=ops, labels=labels, self_check=ops_t.get("self_check"),
        sentence_labels={k: str(v) for k, v in _table(ops_t, "sentence_labels", where).items()},
        fixed_randomness={k: str(v) for k, v in _table(ops_t, "fixed_randomness", where).items()},
        kat=kat, gate=gate, views=views, default=d.get("default") is True, source=source, text=text,
        call_counters=call_counters, ablation=ablation, ct=ct,
    )


def _family_files() -> list[tuple[str, str, Path | None]]:
    out = []
    shipped = resources.files("pqsimd.data").joinpath("families")
    for entry in sorted(shipped.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".toml"):
            out.append((entry.read_text(), f"data/families/{entry.name}", None))
    seen: set[Path] = set()
    for d in filter(None, os.environ.get("PQSIMD_FAMILY_PATH", "").split(":")):
        p = Path(d).expanduser().resolve()
        if not p.is_dir():
            raise PqsimdError(f"PQSIMD_FAMILY_PATH names {d}, which is not a directory; fix or unset it")
        if p in seen:  # the same directory twice holds the same families, not duplicates
            continue
        seen.add(p)
        for f in sorted(p.glob("*.toml")):
            try:
                text = f.read_text(encoding="utf-8")
            except UnicodeDecodeError as e:
                raise PqsimdError(f"{f}: not UTF-8 text ({e.reason} at byte {e.start}); fix it, or move it out of "
                                  f"PQSIMD_FAMILY_PATH") from None
            except OSError as e:
                why = "a dangling symbolic link" if f.is_symlink() and not f.exists() else e.strerror
                raise PqsimdError(f"{f}: cannot read a family from it ({why}); fix it, or move it out of "
                                  f"PQSIMD_FAMILY_PATH") from None
            out.append((text, str(f), f.parent))
    return out


def families() -> dict[str, Family]:
    """Every scheme family pqsimd can time, by name (shipped first, then $PQSIMD_FAMILY_PATH)."""
    return _families(os.environ.get("PQSIMD_FAMILY_PATH", ""))


@cache
def _families(_path_key: str) -> dict[str, Family]:
    out: dict[str, Family] = {}
    seen: dict[str, str] = {}
    for text, source, base in _family_files():
        fam = family_from_toml(text, source, base)
        if fam.name in out:
            raise PqsimdError(f"family '{fam.name}' is defined twice ({out[fam.name].source} and {source})")
        for sid in fam.schemes:
            if sid in seen:
                raise PqsimdError(f"scheme '{sid}' is in two families ({seen[sid]} and {fam.name})")
            seen[sid] = fam.name
        out[fam.name] = fam
    return out


def all_schemes() -> list[str]:
    return [s for fam in families().values() for s in fam.schemes]


def expand_schemes(names: list[str]) -> list[str]:
    """`all` = every parameter set of every family; a family name = its parameter sets; other names
    stay as they are (checked later, duplicates included)."""
    fams = families()
    out: list[str] = []
    for n in names:
        if not isinstance(n, str):
            out.append(n)
            continue
        out += all_schemes() if n == "all" else list(fams[n].schemes) if n in fams and n not in all_schemes() else [n]
    return out


def family_of(scheme: str) -> Family:
    for fam in families().values():
        if scheme in fam.schemes:
            return fam
    raise PqsimdError(f"unknown scheme '{scheme}'; valid schemes: {', '.join(all_schemes())}"
                      f"{did_you_mean(scheme, all_schemes())}")


def default_family() -> Family:
    """The family `pqsimd run` times when no --schemes is given (the one marked `default = true`)."""
    fams = list(families().values())
    return next((f for f in fams if f.default), fams[0])


# --- op names: an op is named by its id or by the label the report shows ---------------------------

OpNames = dict[str, dict[str, str]]  # family -> {op id: report label}


def recorded_op_names(recorded: dict[str, Any], scheme: str | None = None) -> OpNames:
    """The op names of the families a study's results recorded (summary.json "families", as
    Family.to_results wrote them); with `scheme`, only the family that has it."""
    out: OpNames = {}
    for name, f in (recorded or {}).items():
        if not isinstance(f, dict) or (scheme is not None and scheme not in (f.get("schemes") or {})):
            continue
        labels = f.get("labels") or {}
        out[name] = {str(op): str(labels.get(op, op)) for op in f.get("ops") or []}
    return out


def _ops_named(name: str, names: dict[str, str]) -> list[str]:
    """The ops of one family `name` means: the op of that id, else those of that label, else those whose
    id or label is `name` ignoring case (INVNTT, Invntt and invntt are one op)."""
    if name in names:
        return [name]
    exact = [op for op, label in names.items() if label == name]
    if exact:
        return exact
    folded = name.casefold()
    return [op for op, label in names.items() if folded in (op.casefold(), label.casefold())]


def resolve_ops(given: list[str], families: OpNames, where: str = "the study's families") -> list[str]:
    """The op ids that names given by a user (ids or report labels) mean, in order, each once. A name
    may mean an op in several families (one family's op id may be another's label); one that means
    two ops of one family, or none of any, is refused in one line."""
    out: list[str] = []
    for name in given:
        hits = []
        for fam, names in families.items():
            ops = _ops_named(name, names)
            if len(ops) > 1:
                raise PqsimdError(f"op '{name}' is ambiguous in {fam}: it names {', '.join(ops)}; give one of these ids")
            hits += ops
        if not hits:
            listing = "; ".join(f"{fam}: {', '.join(names)}" for fam, names in families.items())
            known = [n for names in families.values() for pair in names.items() for n in pair]
            raise PqsimdError(f"op '{name}' is not an op of {where} ({listing or 'no ops'}){did_you_mean(name, known)}")
        out += [op for op in hits if op not in out]
    return out


def resolve_op(name: str, families: OpNames, where: str) -> str:
    """The one op id a name means (explain --op, cliffs --op); a label that names ops of several
    families is refused in one line listing them."""
    ops = resolve_ops([name], families, where)
    if len(ops) > 1:
        raise PqsimdError(f"op '{name}' means {', '.join(ops)} in {where}; give one of these ids, or the parameter "
                          f"set (--scheme)")
    return ops[0]
