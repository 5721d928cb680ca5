"""BENCHMARKS.md tables of a riscv64 vector-length set (issue 38): per op and set, the exact instruction
ratio of the hand-RVV step (C → RVV) and of the compiler-given-V step (same C with V → RVV) at each
vector length; the RVV build's mix at each length; and, with studies of other ISAs, the same ops'
hand-SIMD ratios beside (x86-64 ref → avx2 and mlkem-native-c → mlkem-native, aarch64 ref → neon).
Reads only results/ (what `pqsimd analyze` wrote) and prints Markdown.

    .venv/bin/python bench/vlen_tables.py SETDIR [--beside X86DIR A64DIR ...] [--ops ntt,invntt,...]
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import pandas as pd

from pqsimd.model import Chain
from pqsimd.results import read_summary, read_table

OPS = ("gen_a,ntt,invntt,basemul,poly_tomsg,poly_frommsg,poly_compress,poly_decompress,polyvec_compress,"
       "polyvec_decompress,indcpa_keypair,indcpa_enc,indcpa_dec,kem_keypair_derand,kem_encaps_derand,kem_decaps,"
       "noise_x4")
VECTOR_CLASSES = ("vec_alu", "vec_mul", "shuffle_lane", "shuffle_cross", "vec_insert_extract", "vec_move")


def times(x) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.2f}×"


def num(x) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:,.0f}"


def ratio_table(t: pd.DataFrame, stage: str, ops: list[str], vlens: list[int]) -> str:
    d = t[t["stage"] == stage]
    if d.empty:
        return f"(no {stage} rows)"
    base, var = d["baseline"].iloc[0], d["variant"].iloc[0]
    head = (f"| set | op | {base} (any VLEN) | " + " | ".join(f"{var} @{v}" for v in vlens) + " | "
            + " | ".join(f"ratio @{v}" for v in vlens) + " |")
    out = [head, "|" + "---|" * (3 + 2 * len(vlens))]
    for scheme in sorted(set(d["scheme"]), key=lambda s: int(s.rsplit("-", 1)[-1])):
        for op in ops:
            r = d[(d["scheme"] == scheme) & (d["op"] == op)].set_index("vlen")
            if r.empty:
                continue
            b = r["base_instructions"]
            bcell = num(b.iloc[0]) if b.nunique() == 1 else " / ".join(num(b.get(v)) for v in vlens)
            out.append(f"| {scheme} | {op} | {bcell} | " + " | ".join(num(r["var_instructions"].get(v)) for v in vlens)
                       + " | " + " | ".join(times(r["ratio"].get(v)) for v in vlens) + " |")
    return "\n".join(out)


def mix_table(setdir: Path, variant: str, ops: list[str], vlens: list[int], scheme: str) -> str:
    out = [f"| op | VLEN | instructions | vector share | vsetvli + vector CSRs | vector loads + stores | vec mul | "
           f"permutes (vrgather) | slides, widen/narrow |", "|" + "---|" * 9]
    for op in ops:
        for v in vlens:
            mix = read_table(setdir / "vlen" / str(v), "mix", strict=False)
            if mix.empty:
                continue
            m = mix[(mix["scheme"] == scheme) & (mix["op"] == op) & (mix["variant"] == variant)]
            cls = m[m["level"] == "class"].set_index("class")["count"]
            mn = m[m["level"] == "mnemonic"]
            if cls.empty:
                continue
            total = cls.sum()
            vec_mem = mn[mn["class"].isin(["load", "store"]) & (mn["width"] > 0)]["count"].sum()
            vector = cls.reindex(VECTOR_CLASSES).fillna(0).sum() + vec_mem
            out.append(f"| {op} | {v} | {num(total)} | {vector / total:.0%} | {num(cls.get('vec_config', 0))} | "
                       f"{num(vec_mem)} | {num(cls.get('vec_mul', 0))} | {num(cls.get('shuffle_cross', 0))} | "
                       f"{num(cls.get('shuffle_lane', 0))} |")
    return "\n".join(out)


def beside_table(setdir: Path, reference: int, others: list[Path], ops: list[str]) -> str:
    """Per (set, op): riscv64's steps at the reference length beside each other study's hand-SIMD
    steps (its chain's hand step and the `also` steps that end at a native variant)."""
    cols: list[tuple[str, dict]] = []
    rv = read_table(setdir, "vlen", strict=False)
    rv = rv[rv["vlen"] == reference]
    for stage in ("hand_simd", "compiler_vs_hand_rvv"):
        d = rv[rv["stage"] == stage]
        if len(d):
            cols.append((f"riscv64 {d['baseline'].iloc[0]} → {d['variant'].iloc[0]} @{reference}",
                         {(r.scheme, r.op): r.ratio for r in d.itertuples(index=False)}))
    for o in others:
        summary = read_summary(o)
        chain = Chain.from_dict(summary.get("chain"))
        g = read_table(o, "groups", strict=False)
        g = g[g["metric"] == "instructions"]
        counts = {(r.scheme, r.op, r.variant): float(r.median) for r in g.itertuples(index=False)}
        steps = [chain.hand, *(s for s in chain.also if s.stage.startswith("hand_simd"))]
        for s in steps:
            got = {(sc, op): counts[(sc, op, s.base)] / counts[(sc, op, s.variant)]
                   for (sc, op, v) in counts if v == s.variant and (sc, op, s.base) in counts and counts[(sc, op, v)] > 0}
            if got:
                cols.append((f"{summary.get('isa')} {s.base} → {s.variant}", got))
    out = ["| set | op | " + " | ".join(c for c, _ in cols) + " |", "|" + "---|" * (2 + len(cols))]
    keys = sorted({k for _, d in cols for k in d if k[1] in ops},
                  key=lambda k: (int(k[0].rsplit("-", 1)[-1]), ops.index(k[1])))
    for scheme, op in keys:
        if op in ops:
            out.append(f"| {scheme} | {op} | " + " | ".join(times(d.get((scheme, op))) for _, d in cols) + " |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("set", type=Path)
    ap.add_argument("--beside", type=Path, nargs="*", default=[])
    ap.add_argument("--ops", default=OPS)
    ap.add_argument("--mix-scheme", default="ml-kem-768")
    ap.add_argument("--mix-ops", default="ntt,invntt,basemul,poly_decompress,gen_a,kem_decaps")
    args = ap.parse_args()
    ops = args.ops.split(",")
    t = read_table(args.set, "vlen")
    import json

    info = json.loads((args.set / "results" / "vlen.json").read_text())
    vlens = info["vlens"]
    chain = Chain.from_dict(info["chain"])
    print("### hand RVV:", chain.hand.base, "→", chain.hand.variant, "\n")
    print(ratio_table(t, chain.hand.stage, ops, vlens), "\n")
    print("### compiler given V vs hand RVV\n")
    print(ratio_table(t, "compiler_vs_hand_rvv", ops, vlens), "\n")
    print(f"### mix of {chain.hand.variant} ({args.mix_scheme})\n")
    print(mix_table(args.set, chain.hand.variant, args.mix_ops.split(","), vlens, args.mix_scheme), "\n")
    if args.beside:
        print("### beside other ISAs\n")
        print(beside_table(args.set, info["reference"], args.beside, ops))


if __name__ == "__main__":
    main()
