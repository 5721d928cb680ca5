"""BENCHMARKS.md tables of the cross-ISA view (issue 20): an aarch64 study (`--isa aarch64`, refo0,
refnv, ref, neon; instructions, mix, llvm-mca per Arm core) beside an x86-64 study (ref, avx2;
instructions, mix), both analysed. Reads their results through analyze/crossisa.py (what
`pqsimd report A64 --beside X86` writes) and prints Markdown.

    .venv/bin/python bench/crossisa_tables.py A64DIR X86DIR [--ops ntt,invntt,...]
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import pandas as pd

from pqsimd.analyze.crossisa import cross_isa
from pqsimd.results import read_table


def fmt(x, digits=2) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:,.{digits}f}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("a64", type=Path)
    ap.add_argument("x86", type=Path)
    ap.add_argument("--ops", default="ntt,invntt,basemul,poly_tomsg,gen_a,noise_x4,indcpa_enc,kem_keypair_derand,"
                                     "kem_encaps_derand,kem_decaps,expand_a,pointwise,uniform_eta,challenge,decompose,"
                                     "keypair_derand,sign_derand,verify")
    ap.add_argument("--mca-schemes", default="ml-kem-512,ml-dsa-44")
    args = ap.parse_args()
    ops = args.ops.split(",")
    t = cross_isa(args.a64, args.x86)
    rows, mca = t["crossisa"], t["crossisa_mca"]
    isas = list(dict.fromkeys(rows["isa"]))
    a64, x86 = isas[0], isas[1]
    print(f"| set | op | {a64} ref | neon | ref/neon | {x86} ref | avx2 | ref/avx2 | lanes-alone ratio | "
          f"vector share neon / avx2 | vec mul per call neon / avx2 | permutes per call neon / avx2 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for scheme in dict.fromkeys(rows["scheme"]):
        for op in ops:
            a = rows[(rows["scheme"] == scheme) & (rows["op"] == op) & (rows["isa"] == a64)]
            x = rows[(rows["scheme"] == scheme) & (rows["op"] == op) & (rows["isa"] == x86)]
            if a.empty or x.empty:
                continue
            a, x = a.iloc[0], x.iloc[0]
            lane = "n/a" if math.isnan(a.lane_ratio) else f"{a.lane_ratio:.2f}×"
            print(f"| {scheme} | {op} | {a.base_instructions:,.0f} | {a.simd_instructions:,.0f} | {a.ratio:.2f}× | "
                  f"{x.base_instructions:,.0f} | {x.simd_instructions:,.0f} | {x.ratio:.2f}× | {lane} | "
                  f"{a.vector_share:.1%} / {x.vector_share:.1%} | {fmt(a.vec_mul, 0)} / {fmt(x.vec_mul, 0)} | "
                  f"{fmt(a.permutes, 0)} / {fmt(x.permutes, 0)} |")
    print()
    m = read_table(args.a64, "mca")
    cpus = list(dict.fromkeys(m["cpu"]))
    models = {c: m[m["cpu"] == c]["model"].dropna().iloc[0] for c in cpus}
    print("| set | op | " + " | ".join(f"{c} ({models[c]} model): ref → neon cycles" for c in cpus) + " |")
    print("|---|---|" + "---|" * len(cpus))
    for scheme in args.mca_schemes.split(","):
        for op in ops:
            cells = []
            for c in cpus:
                e = mca[(mca["scheme"] == scheme) & (mca["op"] == op) & (mca["isa"] == a64) & (mca["cpu"] == c)]
                cells.append(f"{e.base_cycles.iloc[0]:,.0f} → {e.simd_cycles.iloc[0]:,.0f} ({e.ratio.iloc[0]:.1f}×)"
                             if len(e) else "n/a")
            if any(c != "n/a" for c in cells):
                print(f"| {scheme} | {op} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
