"""The vector-length view of a vector-length set (pqsimd/studysets.py: one sub-study per length in
DIR/vlen/<N>/, each analysed): per (parameter set, op) and chain stage, the exact instruction ratio
baseline → variant at every vector length, and the same ratio against the ISA's default length.

    vlen          scheme, op, stage, baseline, variant, compiler, vlen, base_instructions,
                  var_instructions, ratio (= base / var), reference_vlen, ratio_reference (the ratio at
                  the reference length), relative (ratio / ratio_reference: 1 where the length changes
                  nothing), verdict (the ratio read with the studies' threshold: faster, same, slower)
    vlen_counts   scheme, op, variant, compiler, vlen, instructions, constant (the build counts the same
                  at every length: scalar code, or vector code that does not scale with the length)
    vlen.json     the lengths, the reference, the ISA, the threshold and each sub-study's directory

Counts are each sub-study's exact instruction counts (results/groups, metric instructions); nothing
is timed. The reference is the ISA's default length (data/isas.toml [isa.<name>.vector]) when the set
has it, else its first.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from ..errors import PqsimdError, command
from ..model import Chain, Step
from ..studydir import vlen_sub_studies
from ..results import read_summary, read_table
from ..studydir import StudyDir
from .write import write_json, write_table
from .. import metrics as metrics_mod

METRIC = metrics_mod.COUNT
COLUMNS = ["scheme", "op", "stage", "baseline", "variant", "compiler", "vlen", "base_instructions",
           "var_instructions", "ratio", "reference_vlen", "ratio_reference", "relative", "verdict"]
COUNT_COLUMNS = ["scheme", "op", "variant", "compiler", "vlen", "instructions", "constant"]


def _counts(sub: Path) -> dict[tuple[str, str, str, str], float]:
    g = read_table(sub, "groups", strict=False)
    if g.empty or "metric" not in g.columns:
        return {}
    g = g[g["metric"] == METRIC]
    return {(r.scheme, r.op, r.variant, r.compiler): float(r.median) for r in g.itertuples(index=False)
            if r.median is not None and not math.isnan(float(r.median))}


def _verdict(ratio: float, threshold: float) -> str:
    if ratio > 1 + threshold:
        return "faster"
    if ratio < 1 / (1 + threshold):
        return "slower"
    return "same"


def vlen_tables(directory: Path) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    from .. import isa as isa_mod
    subs = vlen_sub_studies(directory)
    per: dict[int, dict] = {}
    chain = None
    chain_dict = None
    isa = threshold = None
    for v, sub in subs:
        summary = read_summary(sub)
        if not summary:
            raise PqsimdError(f"{sub} has no results; run {command('analyze', directory)} (it analyses every length)")
        if summary.get("vlen") not in (None, v):
            raise PqsimdError(f"{sub} was measured at vector length {summary.get('vlen')}, not {v}; restore it or "
                              f"use a new directory")
        per[v] = _counts(sub)
        chain_dict = chain_dict or summary.get("chain")
        chain = chain or Chain.from_dict(chain_dict)
        isa = isa or summary.get("isa")
        threshold = threshold if threshold is not None else float(summary.get("threshold", 0.01))
    if not any(per.values()):
        raise PqsimdError(f"{directory}: no sub-study counted instructions; run it with --metric instructions")
    vlens = [v for v, _ in subs]
    default = (isa_mod.get(isa).vector or {}).get("default") if isa in isa_mod.names() else None
    reference = default if default in vlens else vlens[0]
    steps = [*chain.steps, *chain.also] if chain else []
    in_chain = {v for s in steps for v in (s.base, s.variant)}
    if chain and chain.extra_baseline:  # variants outside the chain (a family's own `rvv`) against its baseline
        steps += [Step("extra", chain.extra_baseline, v) for v in sorted({k[2] for c in per.values() for k in c})
                  if v not in in_chain and v != chain.extra_baseline]
    rows = []
    keys = sorted({(s, o, c) for counts in per.values() for (s, o, _v, c) in counts})
    for step in steps:
        for scheme, op, comp in keys:
            ratios = {}
            for v in vlens:
                b = per[v].get((scheme, op, step.base, comp))
                x = per[v].get((scheme, op, step.variant, comp))
                if b is None or x is None or x <= 0:
                    continue
                ratios[v] = (b, x, b / x)
            if not ratios:
                continue
            ref = ratios.get(reference)
            for v, (b, x, r) in ratios.items():
                rows.append({"scheme": scheme, "op": op, "stage": step.stage, "baseline": step.base,
                             "variant": step.variant, "compiler": comp, "vlen": v, "base_instructions": b,
                             "var_instructions": x, "ratio": r, "reference_vlen": reference,
                             "ratio_reference": ref[2] if ref else math.nan,
                             "relative": r / ref[2] if ref else math.nan, "verdict": _verdict(r, threshold)})
    counts = []
    for scheme, op, variant, comp in sorted({k for c in per.values() for k in c}):
        got = {v: per[v][(scheme, op, variant, comp)] for v in vlens if (scheme, op, variant, comp) in per[v]}
        constant = len(set(got.values())) == 1 and len(got) == len(vlens)
        counts += [{"scheme": scheme, "op": op, "variant": variant, "compiler": comp, "vlen": v, "instructions": n,
                    "constant": constant} for v, n in got.items()]
    info = {"vlens": vlens, "reference": reference, "isa": isa, "threshold": threshold,
            "studies": {str(v): str(sub) for v, sub in subs}, "chain": chain_dict}
    return (pd.DataFrame(rows, columns=COLUMNS), pd.DataFrame(counts, columns=COUNT_COLUMNS), info)


def write_vlen_results(directory: Path) -> Path:
    """DIR/results/vlen*, written whole."""
    t, c, info = vlen_tables(Path(directory))
    results = StudyDir(directory).results_dir
    results.mkdir(parents=True, exist_ok=True)
    write_table(t, results, "vlen")
    write_table(c, results, "vlen_counts")
    write_json(info, results / "vlen.json")
    return results
