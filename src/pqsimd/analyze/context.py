"""The study's own records as the analysis reads them, beyond the raw data: the chain, families,
compilers, design and ISA (`study_context`), the order groups are read in, and what the manifest, plan
and gate records say of builds and ops (not timed, absent, skipped, ablations, A/A pairs, code hashes)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pandas as pd

from ..errors import PqsimdError
from ..model import RECORDED_DESIGN, Chain, Design, LayoutMode
from ..studydir import StudyDir
from . import attribution as attribution_mod
from .. import metrics as metrics_mod


def read_json_file(path: Path) -> dict:
    try:
        d = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return d if isinstance(d, dict) else {}


def study_context(directory: Path, study: dict) -> dict:
    """What the analysis needs to know beyond the raw data, from the study's own records: the chain
    (manifest, else the shipped one), the families of its schemes (their ops, labels and report
    views, carried to the report), its compilers and design."""
    from .. import catalog

    manifest = read_json_file(StudyDir(directory).manifest_json)
    chain = manifest.get("chain") or catalog.chain().to_dict()
    st = study.get("study", {}) or {}
    families: dict[str, dict] = {}
    for name, info in (manifest.get("families") or {}).items():
        try:
            families[name] = catalog.family_from_toml(info["toml"], info.get("source", name), None).to_results()
        except Exception:  # an op table outside the shipped tree: the TOML still says everything analyze needs
            families[name] = _family_summary_from_toml(info.get("toml", ""), name)
    for scheme in st.get("schemes", []) or []:
        try:
            fam = catalog.family_of(scheme)
        except PqsimdError:
            continue
        families.setdefault(fam.name, fam.to_results())
    for name, f in families.items():  # how sentences name ops and which op headlines are rules of this pqsimd,
        _current_rules(name, f)       # not facts of the study: a study recorded before them takes today's
    plan = read_json_file(StudyDir(directory).plan_json)
    cc = st.get("cc") or []
    cc = [cc] if isinstance(cc, str) else cc
    from_toml = [c.split("=", 1)[0] if "=" in c else Path(c).name for c in cc if isinstance(c, str)]
    return {"chain": chain, "families": families, "compilers": plan.get("compilers") or from_toml,
            "design": plan.get("design") or st.get("design") or RECORDED_DESIGN, "isa": study_isa(manifest, st),
            "vlen": (manifest.get("isa") or {}).get("vlen", st.get("vlen"))}


def _current_rules(name: str, family: dict) -> None:
    """A family summary recorded without `sentence_labels` / `fixed_randomness` (an older study) takes the
    shipped family's, kept to the ops it has."""
    from .. import catalog

    if family.get("sentence_labels") or family.get("fixed_randomness"):
        return
    shipped = catalog.families().get(name)
    if shipped is None:
        return
    ops = set(family.get("ops") or [])
    family["sentence_labels"] = {o: v for o, v in shipped.sentence_labels.items() if o in ops}
    family["fixed_randomness"] = {o: v for o, v in shipped.fixed_randomness.items() if o in ops and v in ops}


def study_isa(manifest: dict, st: dict) -> str:
    """The ISA the study built and measured: its manifest's, else its study.toml's; a study made
    before pqsimd had ISAs measured the first one of data/isas.toml (x86-64, then the only one)."""
    from .. import isa as isa_mod

    return (manifest.get("isa") or {}).get("name") or st.get("isa") or isa_mod.names()[0]


def with_isa(df: pd.DataFrame, isa: str, vlen: int | None = None) -> pd.DataFrame:
    """A results table with its `isa` column (every row: the study's ISA), so tables of studies of
    different ISAs stay apart when combined (pqsimd report --beside); and its `vlen` column when the
    ISA has a vector length (every row: the study's; the vector-length view combines studies)."""
    out = df.assign(isa=pd.Series([isa] * len(df), index=df.index, dtype=object))
    if vlen is not None:
        out = out.assign(vlen=pd.Series([int(vlen)] * len(df), index=df.index, dtype="int64"))
    return out


def _family_summary_from_toml(text: str, name: str) -> dict:
    try:
        d = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return {"family": name, "ops": [], "schemes": {}, "labels": {}, "views": {}}
    return {"family": d.get("family", name), "title": d.get("title", name), "kind": d.get("kind"),
            "schemes": {k: {"label": v.get("label", k.upper())} for k, v in d.get("schemes", {}).items()},
            "ops": d.get("ops", {}).get("order", []), "labels": d.get("ops", {}).get("labels", {}),
            "sentence_labels": d.get("ops", {}).get("sentence_labels", {}),
            "fixed_randomness": d.get("ops", {}).get("fixed_randomness", {}),
            "self_check": d.get("ops", {}).get("self_check"), "views": d.get("views", {})}


def ops_order(study: dict, ctx: dict) -> list[str]:
    order = []
    for fam in ctx["families"].values():
        order += [o for o in fam.get("ops", []) if o not in order]
    return order


def variants_in_order(study: dict, present: list[str], chain: Chain) -> list[str]:
    """The study file's variants (with or without data yet), then any others found in the raw data."""
    listed = [str(v) for v in (study.get("study", {}).get("variants", []) or [])]
    rest = [v for v in chain.variants if v in present and v not in listed]
    rest += sorted(v for v in present if v not in listed and v not in rest)
    return listed + rest


def _natural(name: str) -> tuple:
    digits = "".join(ch for ch in name if ch.isdigit())
    return (name.rstrip("0123456789-"), int(digits) if digits else -1, name)


def ordered_groups(groups: dict, study: dict, variants: list[str], compilers: list[str], ops_order: list[str]) -> dict:
    """Groups in reading order: ticks first, schemes as in the study (else by parameter set), ops in
    the family's order, variants in chain order, compilers in study order."""
    schemes = [str(x) for x in (study.get("study", {}).get("schemes", []) or [])]
    s_rank = {x: i for i, x in enumerate(schemes)}
    o_rank = {x: i for i, x in enumerate(ops_order)}
    v_rank = {x: i for i, x in enumerate(variants)}
    c_rank = {x: i for i, x in enumerate(compilers)}

    def key(k):
        metric, scheme, op, variant, compiler = k
        return ((metric != metrics_mod.TIME, metric), (s_rank.get(scheme, len(s_rank)), _natural(scheme)),
                (o_rank.get(op, len(o_rank)), op), (c_rank.get(compiler, len(c_rank)), compiler),
                (v_rank.get(variant, len(v_rank)), variant))

    return {k: groups[k] for k in sorted(groups, key=key)}


def not_timed_ops(directory: Path) -> dict[tuple, str]:
    """(variant, compiler, scheme, op) -> why the run did not time it: one call (the gate's op check)
    takes longer than the study's cap (max_call_s), from the manifest's builds and the plan."""
    cap = ((read_json_file(StudyDir(directory).plan_json).get("settings") or {}).get("max_call_s"))
    if not cap:
        return {}
    out = {}
    for b in (read_json_file(StudyDir(directory).manifest_json).get("builds") or {}).values():
        for scheme, ops in ((b or {}).get("ops") or {}).items():
            for op, secs in (ops or {}).items() if isinstance(ops, dict) else []:
                if isinstance(secs, (int, float)) and secs > cap:
                    out[(b.get("variant"), b.get("compiler"), scheme, op)] = (
                        f"one call takes {secs:.3g} s, over the study's cap of {cap:g} s per call (max_call_s)")
    return out


def absent_ops(directory: Path) -> dict[tuple, str]:
    """(variant, compiler, scheme, op) -> why the build has no such op: its implementation's TOML says
    it is absent (`[implementations.<name>.absent]`), read from the family TOML the manifest recorded."""
    from .. import catalog

    manifest = read_json_file(StudyDir(directory).manifest_json)
    variants = manifest.get("variants") if isinstance(manifest.get("variants"), dict) else {}
    families = {}
    for name, info in (manifest.get("families") or {}).items():
        try:
            families[name] = catalog.family_from_toml(info["toml"], info.get("source", name), None)
        except Exception:  # an op table outside the shipped tree: no absent reasons, the rows say "no data"
            continue
    out = {}
    for b in (manifest.get("builds") or {}).values():
        fam = families.get(b.get("family")) if isinstance(b, dict) else None
        impl = fam.implementation(str((variants.get(b.get("variant")) or {}).get("sources"))) if fam else None
        for scheme in fam.schemes if impl is not None else ():
            for op in fam.ops:
                why = impl.absent_reason(op, scheme)
                if why:
                    out[(b.get("variant"), b.get("compiler"), scheme, op)] = f"absent in {impl.name}: {why}"
    return out


def skipped_builds(directory: Path, families: dict[str, dict]) -> dict[tuple, str]:
    """(variant, compiler, scheme) -> why the run skipped that variant for the scheme's family (the
    family lacks its implementation, or this CPU its features), from the manifest's builds."""
    out = {}
    for b in (read_json_file(StudyDir(directory).manifest_json).get("builds") or {}).values():
        if isinstance(b, dict) and b.get("skipped"):
            for scheme in (families.get(b.get("family")) or {}).get("schemes") or {}:
                out[(b.get("variant"), b.get("compiler"), scheme)] = str(b["skipped"])
    return out


def ablations(directory: Path) -> list[attribution_mod.Ablation]:
    """The study's ablations as the run recorded them (manifest `ablations`: implementation, groups,
    and the groups each cell's variant switches to native code)."""
    out = []
    for a in (read_json_file(StudyDir(directory).manifest_json).get("ablations") or []):
        try:
            out.append(attribution_mod.AblationDesign(str(a["implementation"]), tuple(a["groups"]),
                                                {str(v): attribution_mod.Cell(c) for v, c in a["cells"].items()}))
        except (KeyError, TypeError, AttributeError):
            continue
    return out


def aa_pairs(study: dict, present: list[str]) -> dict[str, str]:
    """variant -> its duplicate build's variant id, for the study's A/A duplicates with data."""
    from ..catalog import aa_variant_id

    st = study.get("study", {}) or {}
    listed = st.get("aa") or []
    listed = [listed] if isinstance(listed, str) else listed
    return {v: aa_variant_id(v) for v in listed if isinstance(v, str) and aa_variant_id(v) in present}


def code_hashes(directory: Path, key: str = "code") -> dict[tuple[str, str, str, str], str]:
    """(variant, compiler, scheme, op) -> hash of the op's instructions, from the gate records (key
    `code`; `code_commuted`: up to commuted operands, verify/codehash.py)."""
    out = {}
    sd = StudyDir(directory)
    for path in sorted(sd.gate_dir.glob("*.json")) if sd.gate_dir.is_dir() else []:
        g = sd.read_gate(path.stem) or {}
        for scheme, ops in (g.get(key) or {}).items():
            for op, h in (ops or {}).items():
                out[(g.get("variant"), g.get("compiler"), scheme, op)] = h
    return out


def alone_matched(directory: Path) -> bool:
    """The study's alone jobs loaded the paired jobs' copies (`alone_layouts = "paired"`, run/layouts.seed_job)."""
    try:
        st = (StudyDir(directory).read_plan() or {}).get("settings") or {}
    except PqsimdError:
        return False
    return st.get("layout") == LayoutMode.RANDOM and st.get("alone_layouts") == Design.PAIRED
