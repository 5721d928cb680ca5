"""What a family TOML may say in [kat], [gate], [ops] and [views], checked when the family is
loaded (catalog.family_from_toml), so build, verify, analyze and report never meet a bad value.
Every problem is one line naming the file, the key and what it must be."""

from __future__ import annotations

import hashlib
from typing import Any

from .errors import PqsimdError

KAT_KEYS = ("program", "rng", "common")
GATE_KEYS = ("vectors", "oracle", "implicit_rejection", "pool_bytes", "answers_sha256", "oracle_name")
REJECTION_KEYS = ("hash", "z_from_secret_key_tail", "z_from_secret_key", "length", "prefix", "suffix",
                  "ciphertext_bytes")
OP_LIST_VIEWS = ("table1", "cross_parameter", "end_to_end")
TEXT_VIEWS = ("cross_parameter_note", "end_to_end_title", "reference", "claims", "macro_prefix")
GROUP_VIEWS = ("headlines", "ordering")  # lists of {label, ops}
VIEW_KEYS = (*OP_LIST_VIEWS, *TEXT_VIEWS, *GROUP_VIEWS, "distribution", "ranges", "portfolio",
             "counterpart", "per_unit")  # portfolio: catalog; counterpart: check_counterpart


def _fail(where: str, what: str) -> PqsimdError:
    return PqsimdError(f"{where}: {what}")


def _unknown(table: dict, known: tuple[str, ...], where: str, name: str) -> None:
    bad = sorted(set(table) - set(known))
    if bad:
        raise _fail(where, f"unknown key(s) in [{name}]: {', '.join(bad)}; known: {', '.join(known)}")


def _text(value: Any, where: str, key: str) -> str:
    if not isinstance(value, str) or not value:
        raise _fail(where, f"`{key}` must be a non-empty string, got {value!r}")
    return value


def _positive_int(value: Any, where: str, key: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise _fail(where, f"`{key}` must be an integer >= 1, got {value!r}")
    return value


def _hash_name(value: Any, where: str, key: str) -> str:
    if not isinstance(value, str) or value not in hashlib.algorithms_available:
        raise _fail(where, f"`{key}` must name a hashlib algorithm (e.g. shake_256, sha3_256), got {value!r}")
    return value


def _ops(value: Any, ops: tuple[str, ...], where: str, key: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise _fail(where, f"`{key}` must be a list of op names, got {value!r}")
    unknown = [x for x in value if x not in ops]
    if unknown:
        raise _fail(where, f"`{key}` names op '{unknown[0]}', which is not in [ops] order ({', '.join(ops)})")
    return value


def check_kat(kat: dict, where: str) -> None:
    if not kat:
        return
    _unknown(kat, KAT_KEYS, where, "kat")
    _text(kat.get("program"), where, "[kat] program")
    _text(kat.get("rng"), where, "[kat] rng")
    common = kat.get("common", [])
    if not isinstance(common, list) or not all(isinstance(x, str) and x for x in common):
        raise _fail(where, f"`[kat] common` must be a list of file names in common/, got {common!r}")


def _hex(value: Any, where: str, key: str) -> None:
    try:
        bytes.fromhex(value)
    except (TypeError, ValueError):
        raise _fail(where, f"`{key}` must be bytes in hex, e.g. \"00\", got {value!r}") from None


def check_gate(gate: dict, kind: str, where: str, complete: bool = False) -> None:
    """A family's [gate] (complete=False: a parameter set may add what its implicit rejection needs,
    e.g. where z sits in its secret key) or a parameter set's gate merged over it (complete=True)."""
    _unknown(gate, GATE_KEYS, where, "gate")
    if "vectors" in gate:
        _positive_int(gate["vectors"], where, "[gate] vectors")
    if "pool_bytes" in gate:
        _positive_int(gate["pool_bytes"], where, "[gate] pool_bytes")
    if "oracle" in gate:
        if kind != "hash":
            raise _fail(where, f"`[gate] oracle` is for families of kind hash, this one is {kind}")
        _hash_name(gate["oracle"], where, "[gate] oracle")
    if "answers_sha256" in gate:
        if kind != "sign":
            raise _fail(where, f"`answers_sha256` (an oracle's digest of the gate's sign answers) is for families of "
                               f"kind sign, this one is {kind}")
        value = gate["answers_sha256"]
        if not isinstance(value, str) or len(value) != 64 or any(c not in "0123456789abcdef" for c in value):
            raise _fail(where, f"`answers_sha256` must be 64 lowercase hex digits (a SHA-256), got {value!r}")
    if "oracle_name" in gate:
        _text(gate["oracle_name"], where, "[gate] oracle_name")
    rej = gate.get("implicit_rejection")
    if rej is not None:
        if kind != "kem" or not isinstance(rej, dict):
            raise _fail(where, "[gate.implicit_rejection] must be a table, in a family of kind kem")
        _unknown(rej, REJECTION_KEYS, where, "gate.implicit_rejection")
        _hash_name(rej.get("hash"), where, "[gate.implicit_rejection] hash")
        _positive_int(rej.get("length"), where, "[gate.implicit_rejection] length")
        for key in ("z_from_secret_key_tail", "ciphertext_bytes"):
            if key in rej:
                _positive_int(rej[key], where, f"[gate.implicit_rejection] {key}")
        for key in ("prefix", "suffix"):
            if key in rej:
                _hex(rej[key], where, f"[gate.implicit_rejection] {key}")
        span = rej.get("z_from_secret_key")
        if span is not None and not (isinstance(span, list) and len(span) == 2
                                     and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in span)
                                     and span[0] < span[1]):
            raise _fail(where, f"`[gate.implicit_rejection] z_from_secret_key` must be [start, end] byte offsets, "
                               f"got {span!r}")
        if complete and "z_from_secret_key_tail" not in rej and span is None:
            raise _fail(where, "[gate.implicit_rejection] needs z_from_secret_key_tail or z_from_secret_key (where z "
                               "sits in the secret key), for the family or per parameter set")


def check_absent(impl: str, absent: dict, notes: dict, ops: tuple[str, ...], where: str) -> None:
    for op in absent:
        _ops([op], ops, where, f"[implementations.{impl}.absent]")
    for op in notes:
        _ops([op], ops, where, f"[implementations.{impl}.notes]")


def check_ablation(ablation: dict, where: str) -> None:
    if not ablation:
        return
    _unknown(ablation, ("variant", "isa"), where, "ablation")
    _text(ablation.get("variant"), where, "[ablation] variant")
    per_isa = ablation.get("isa", {})
    if not isinstance(per_isa, dict):
        raise _fail(where, f"[ablation] isa must be a table of ISA = variant, got {per_isa!r}")
    for name, v in per_isa.items():
        _text(v, where, f"[ablation] isa.{name}")


def check_ops(order: tuple[str, ...], ops_t: dict, where: str) -> None:
    dup = next((o for i, o in enumerate(order) if o in order[:i]), None)
    if dup:
        raise _fail(where, f"[ops] order lists '{dup}' twice; name each op once")
    sc = ops_t.get("self_check")
    if sc is not None and sc not in order:
        raise _fail(where, f"[ops] self_check = {sc!r} is not in [ops] order ({', '.join(order)})")
    labels = ops_t.get("labels", {})
    if isinstance(labels, dict):
        bad = next((k for k, v in labels.items() if not isinstance(v, str)), None)
        if bad:
            raise _fail(where, f"[ops.labels] {bad} must be a string, got {labels[bad]!r}")
    for key in ("sentence_labels", "fixed_randomness"):
        table = ops_t.get(key, {})
        if not isinstance(table, dict):
            raise _fail(where, f"[ops.{key}] must be a table of op = string, got {table!r}")
        for op, v in table.items():
            _ops([op], order, where, f"[ops.{key}]")
            _text(v, where, f"[ops.{key}] {op}")
            if key == "fixed_randomness":
                _ops([v], order, where, f"[ops.{key}] {op}")
    counters = ops_t.get("call_counters", {})
    if isinstance(counters, dict):
        for op, fn in counters.items():
            _ops([op], order, where, "[ops.call_counters]")
            _text(fn, where, f"[ops.call_counters] {op}")


def _groups(value: Any, ops: tuple[str, ...], where: str, key: str) -> None:
    if not isinstance(value, list) or not all(isinstance(g, dict) for g in value):
        raise _fail(where, f"`[views] {key}` must be a list of {{label, ops}} tables ([[views.{key}]]), got {value!r}")
    for g in value:
        _unknown(g, ("label", "ops"), where, f"views.{key}")
        _text(g.get("label"), where, f"[[views.{key}]] label")
        _ops(g.get("ops"), ops, where, f"[[views.{key}]] ops")


def check_views(views: dict, ops: tuple[str, ...], schemes: dict, where: str) -> None:
    _unknown(views, VIEW_KEYS, where, "views")
    for key in OP_LIST_VIEWS:
        if key in views:
            _ops(views[key], ops, where, f"[views] {key}")
    for key in TEXT_VIEWS:
        if key in views:
            _text(views[key], where, f"[views] {key}")
    if "macro_prefix" in views and not views["macro_prefix"].isalpha():
        raise _fail(where, f"`[views] macro_prefix` must be letters only (it starts LaTeX macro names), "
                           f"got {views['macro_prefix']!r}")
    for key in GROUP_VIEWS:
        if key in views:
            _groups(views[key], ops, where, key)
    if "per_unit" in views:  # {unit = "permutation", ops = {op = units per call}}: explain's figures per unit
        pu = views["per_unit"]
        if not isinstance(pu, dict) or not isinstance(pu.get("ops"), dict):
            raise _fail(where, f"`[views] per_unit` must be a table {{ unit = ..., ops = {{ op = n }} }}, got {pu!r}")
        _unknown(pu, ("unit", "ops"), where, "views.per_unit")
        _text(pu.get("unit"), where, "[views] per_unit unit")
        _ops(list(pu["ops"]), ops, where, "[views] per_unit ops")
        for op, n in pu["ops"].items():
            _positive_int(n, where, f"[views] per_unit ops.{op}")
    if "distribution" in views:
        dist = views["distribution"]
        if not isinstance(dist, dict):
            raise _fail(where, f"`[views] distribution` must be a table {{ scheme = ..., ops = [...] }}, got {dist!r}")
        _unknown(dist, ("scheme", "ops"), where, "views.distribution")
        if dist.get("scheme") not in schemes:
            raise _fail(where, f"`[views] distribution` scheme must be one of {', '.join(schemes)}, "
                               f"got {dist.get('scheme')!r}")
        _ops(dist.get("ops"), ops, where, "[views] distribution ops")
    if "counterpart" in views:
        cp = views["counterpart"]
        if not isinstance(cp, dict):
            raise _fail(where, f"`[views.counterpart]` must be a table (family, relation, schemes, ops), got {cp!r}")
        _unknown(cp, ("family", "relation", "schemes", "ops"), where, "views.counterpart")
        _text(cp.get("family"), where, "[views.counterpart] family")
        _text(cp.get("relation"), where, "[views.counterpart] relation")
        for key, mine in (("schemes", tuple(schemes)), ("ops", ops)):
            table = cp.get(key)
            if not isinstance(table, dict) or not table or not all(isinstance(v, str) and v for v in table.values()):
                raise _fail(where, f"`[views.counterpart] {key}` must be a table of ours = \"the counterpart's\", got {table!r}")
            bad = [k for k in table if k not in mine]
            if bad:
                raise _fail(where, f"`[views.counterpart] {key}` names {bad[0]!r}, which is not one of this family's {key}")
    if "ranges" in views:
        ranges = views["ranges"]
        if not isinstance(ranges, dict):
            raise _fail(where, f"`[views.ranges]` must be a table of name = [ops], got {ranges!r}")
        for name, value in ranges.items():
            if not name.isalpha():
                raise _fail(where, f"[views.ranges] name {name!r} must be letters only (it ends LaTeX macro names)")
            _ops(value, ops, where, f"[views.ranges] {name}")


def check_ct(ct: dict, ops: tuple[str, ...], where: str) -> None:
    """[ct]: `secret` (op -> the op table's buffers or "random" that are secret), `public` (a function
    name pattern -> why the standard makes its inputs public: sites inside it are declassified; or
    "FUNCTION @ LINE", both patterns: the sites of that function whose source line matches LINE, where a
    value becomes public that no function of its own computes)."""
    _unknown(ct, ("secret", "public"), where, "ct")
    secret = ct.get("secret", {})
    if not isinstance(secret, dict):
        raise _fail(where, f"[ct] secret must be a table of op = [inputs], got {secret!r}")
    for op, names in secret.items():
        _ops([op], ops, where, "[ct.secret]")
        if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
            raise _fail(where, f"[ct.secret] {op} must list the op table's secret buffers (or \"random\"), got {names!r}")
    public = ct.get("public", {})
    if not isinstance(public, dict) or not all(isinstance(v, str) and v for v in public.values()):
        raise _fail(where, f"[ct] public must be a table of function pattern = \"why it is public\", got {public!r}")
    for key in public:
        fn, at, line = (part.strip() for part in key.partition("@"))
        if not fn or (at and not line):
            raise _fail(where, f"[ct.public] {key!r}: write a function pattern, or \"FUNCTION @ SOURCE LINE\" "
                               f"(both glob patterns, e.g. \"*sign_signature* @ *chknorm(*\")")
