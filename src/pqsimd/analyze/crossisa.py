"""The cross-ISA view: a study of one ISA beside a study of another (`pqsimd report DIR --beside
OTHER`, `pqsimd show DIR --beside OTHER`), per (scheme, op) both hold: each study's hand-SIMD step
(its chain's last step: clean → AVX2 on x86_64, clean → NEON on aarch64) read from its own results
(instruction counts are exact, so the ratios are exact), the hand-SIMD build's mix (vector share,
vector multiplies, permutes per call, the widest vector used), and each llvm-mca estimate of both
builds per core, labelled with the model llvm-mca really used.

    crossisa       one row per (scheme, op, isa): base and SIMD instructions per call, their ratio,
                   lane width, vector share, vector multiplies and permutes per call, and
                   `lane_ratio` = this ratio / (the other ISA's ratio × its lane width / this one's):
                   how far the measured reduction goes beyond what the lane widths alone predict
    crossisa_mca   one row per (scheme, op, isa, cpu): the model, predicted cycles per call of
                   both builds and their ratio

Written to DIR/results/ (the study the view is for), with `beside` (the other study's path) in
crossisa.json. Reads only the two studies' results; the report reads these tables.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from ..errors import PqsimdError, command
from ..model import Chain
from ..results import read_summary, read_table
from ..studydir import StudyDir
from .write import write_json, write_table
from .. import metrics as metrics_mod

PERMUTE_CLASSES = ("shuffle_lane", "shuffle_cross")
VECTOR_MUL_CLASS = "vec_mul"
INS_METRIC = metrics_mod.COUNT


def _side(directory: Path) -> dict:
    """What one study says: ISA, hand-SIMD step, compiler, instruction counts, mix, estimates."""
    summary = read_summary(directory)
    groups = read_table(directory, "groups", strict=False)
    mix_ops = read_table(directory, "mix_ops", strict=False)
    if not summary or (groups.empty and mix_ops.empty):
        raise PqsimdError(f"{directory} has no results to put beside another ISA's; run "
                          f"{command('run', directory, '--metric', 'instructions,mix')} and analyze it first")
    chain = Chain.from_dict(summary.get("chain"))
    step = chain.step("hand_simd") or chain.hand
    if step is None:
        raise PqsimdError(f"{directory}: its chain has no hand-SIMD step to compare across ISAs")
    counts: dict[tuple[str, str, str, str], float] = {}
    if not groups.empty and "metric" in groups.columns:
        g = groups[groups["metric"] == INS_METRIC]
        counts = {(r.scheme, r.op, r.variant, r.compiler): float(r.median) for r in g.itertuples(index=False)}
    if not counts and not mix_ops.empty:  # a mix-only study: its per-op totals are the same exact counts
        counts = {(r.scheme, r.op, r.variant, r.compiler): float(r.instructions) for r in mix_ops.itertuples(index=False)}
    compilers = sorted({k[3] for k in counts})
    return {"dir": directory, "isa": summary.get("isa") or "?", "step": step, "counts": counts,
            "compilers": compilers, "mix_ops": mix_ops, "mix": read_table(directory, "mix", strict=False),
            "mca": read_table(directory, "mca", strict=False)}


def _per_call(mix: pd.DataFrame, scheme: str, op: str, variant: str, compiler: str, classes) -> float:
    if mix.empty:
        return math.nan
    m = mix[(mix["level"] == "class") & (mix["scheme"] == scheme) & (mix["op"] == op) & (mix["variant"] == variant)
            & (mix["compiler"] == compiler) & mix["class"].isin(classes)]
    return float(m["count"].sum()) if len(m) else math.nan


def _mix_op(mix_ops: pd.DataFrame, scheme: str, op: str, variant: str, compiler: str) -> dict:
    if mix_ops.empty:
        return {}
    m = mix_ops[(mix_ops["scheme"] == scheme) & (mix_ops["op"] == op) & (mix_ops["variant"] == variant)
                & (mix_ops["compiler"] == compiler)]
    return m.iloc[0].to_dict() if len(m) else {}


def _rows(side: dict, other: dict, compiler: str, other_compiler: str) -> tuple[list[dict], list[dict]]:
    base, simd = side["step"].base, side["step"].variant
    keys = sorted({(s, o) for (s, o, v, c) in side["counts"] if c == compiler and v == simd})
    other_keys = {(s, o) for (s, o, v, c) in other["counts"] if c == other_compiler and v == other["step"].variant}
    rows, mca_rows = [], []
    for scheme, op in keys:
        if (scheme, op) not in other_keys:
            continue
        b = side["counts"].get((scheme, op, base, compiler))
        v = side["counts"].get((scheme, op, simd, compiler))
        if b is None or v is None or v <= 0:
            continue
        mo = _mix_op(side["mix_ops"], scheme, op, simd, compiler)
        rows.append({
            "scheme": scheme, "op": op, "isa": side["isa"], "compiler": compiler, "baseline": base, "variant": simd,
            "base_instructions": b, "simd_instructions": v, "ratio": b / v,
            "lane_bits": float(mo.get("max_width", math.nan)) if mo else math.nan,
            "vector_share": float(mo.get("vector_share", math.nan)) if mo else math.nan,
            "vec_mul": _per_call(side["mix"], scheme, op, simd, compiler, (VECTOR_MUL_CLASS,)),
            "permutes": _per_call(side["mix"], scheme, op, simd, compiler, PERMUTE_CLASSES),
        })
        mca = side["mca"]
        if mca.empty:
            continue
        for cpu, sub in mca[(mca["scheme"] == scheme) & (mca["op"] == op) & (mca["compiler"] == compiler)].groupby("cpu"):
            pred = {r.variant: float(r.predicted_cycles) for r in sub.itertuples(index=False)}
            model = next((m for m in sub.get("model", pd.Series(dtype=object)) if isinstance(m, str)), None)
            if base in pred and simd in pred:
                mca_rows.append({"scheme": scheme, "op": op, "isa": side["isa"], "cpu": cpu, "model": model,
                                 "base_cycles": pred[base], "simd_cycles": pred[simd],
                                 "ratio": pred[base] / pred[simd] if pred[simd] > 0 else math.nan})
    return rows, mca_rows


def cross_isa(directory: Path, beside: Path) -> dict[str, pd.DataFrame]:
    """The cross-ISA tables of `directory` beside `beside` (a study of another ISA)."""
    a, b = _side(Path(directory)), _side(Path(beside))
    if a["isa"] == b["isa"]:
        raise PqsimdError(f"{directory} and {beside} are both {a['isa']} studies; --beside takes a study of "
                          f"another ISA (pqsimd compare compares two studies of one)")
    common = [c for c in a["compilers"] if c in b["compilers"]]
    if not common:  # like with like: one compiler on both sides, never gcc on one ISA beside clang on the other
        raise PqsimdError(f"{directory} ({', '.join(a['compilers']) or 'no compiler'}) and {beside} "
                          f"({', '.join(b['compilers']) or 'no compiler'}) have no compiler in common; the cross-ISA "
                          f"view compares like with like: run both with the same --cc")
    ra, ma = _rows(a, b, common[0], common[0])
    rb, mb = _rows(b, a, common[0], common[0])
    rows = pd.DataFrame(ra + rb)
    if rows.empty:
        raise PqsimdError(f"{directory} and {beside} share no (parameter set, op) with instruction counts of both "
                          f"builds of their hand-SIMD steps; run both with --metric instructions (or mix) over the "
                          f"same --schemes and --ops")
    ratio = {(r.scheme, r.op, r.isa): (r.ratio, r.lane_bits) for r in rows.itertuples(index=False)}
    lane = []
    for r in rows.itertuples(index=False):
        o = next((v for (s, op, isa), v in ratio.items() if s == r.scheme and op == r.op and isa != r.isa), None)
        expected = o[0] * r.lane_bits / o[1] if o and o[1] and r.lane_bits and not math.isnan(r.lane_bits) else math.nan
        lane.append(r.ratio / expected if expected and not math.isnan(expected) else math.nan)
    rows["lane_ratio"] = lane
    return {"crossisa": rows, "crossisa_mca": pd.DataFrame(ma + mb, columns=["scheme", "op", "isa", "cpu", "model",
                                                                            "base_cycles", "simd_cycles", "ratio"])}


CROSS_ISA_FILES = ("crossisa.csv", "crossisa.parquet", "crossisa_mca.csv", "crossisa_mca.parquet", "crossisa.json")


def remove_cross_isa(directory: Path) -> None:
    """Forget the cross-ISA tables of an earlier `--beside` (a report without it has no such view)."""
    for name in CROSS_ISA_FILES:
        StudyDir(directory).results(name).unlink(missing_ok=True)


def write_cross_isa(directory: Path, beside: Path) -> Path:
    """The cross-ISA tables into DIR/results/ (the report and show read them); returns DIR/results."""
    results = StudyDir(directory).results_dir
    tables = cross_isa(directory, beside)
    results.mkdir(parents=True, exist_ok=True)
    for name, t in tables.items():
        write_table(t, results, name)
    t = tables["crossisa"]
    steps = {r.isa: f"{r.baseline} → {r.variant}" for r in t.itertuples(index=False)}
    write_json({"beside": str(Path(beside).resolve()), "isas": list(dict.fromkeys(t["isa"])), "steps": steps},
               results / "crossisa.json")
    return results
