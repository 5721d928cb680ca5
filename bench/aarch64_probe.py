"""The aarch64 probe of issue 20 (numbers for /work/notes/issue20-groundwork.md and BENCHMARKS.md):
ML-KEM clean and PQClean's aarch64 (NEON) implementation cross-built by build.py with the aarch64
toolchain (gcc, and clang-16 --target), PQClean's nistkat run under qemu-aarch64 against META.yml,
then instructions per call of a few ops counted with our QEMU plugin (`driver count`, the
instructions metric's (N2 - N1) difference minus the empty op), determinism, the exec-log
cross-check, the NEON share of executed instructions, and the -cpu pinning effect.

    .venv/bin/python bench/aarch64_probe.py [--schemes ml-kem-512] [--ops ntt,invntt,kem_decaps]

The groundwork probe, from before `pqsimd run --isa aarch64` existed (which now does all of this with
the family op tables ops/ml_kem_aarch64.c and ops/ml_dsa_aarch64.c; see BENCHMARKS "aarch64 beside
x86"); kept for its -cpu pinning and exec-log timings. It swaps the harness toolchain for the cross
compiler by hand and uses its own probe op table.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import re
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from fractions import Fraction
from pathlib import Path

from pqsimd import build, catalog, isa, sources
from pqsimd.isa import qemu

A64 = isa.get("aarch64")
HERE = Path(__file__).parent
NEON_OPS = HERE / "aarch64" / "ml_kem_neon_ops.c"
N1, N2 = 2, 10
VECTOR = re.compile(r"\b[vq]\d+\b|\bv\d+\.")


@contextmanager
def cross_harness(cc: str):
    """build.py with the fixed toolchain swapped for the cross compiler (what --isa will do)."""
    doc = catalog.compilers_doc()
    saved = catalog.compilers_doc
    catalog.compilers_doc = lambda: {**doc, "harness": {**doc["harness"], "cc": cc}}
    try:
        yield
    finally:
        catalog.compilers_doc = saved


def clang_wrapper(tmp: Path, version: str) -> str:
    """clang-N for aarch64 as one command (build.py links without the variant's flags)."""
    w = tmp / f"clang-{version}-{A64.gnu_triple}"
    w.write_text(f'#!/bin/sh\nexec clang-{version} --target={A64.clang_target} "$@"\n')
    w.chmod(0o755)
    return str(w)


def family_with_neon():
    fam = catalog.families()["ml-kem"]
    neon = catalog.Implementation("aarch64", common=("fips202.c", "keccak2x/fips202x2.c", "keccak2x/feat.S"))
    return fam, dataclasses.replace(fam, op_table=NEON_OPS, implementations={**fam.implementations, "aarch64": neon})


def meta_hash(tree, scheme_dir: str) -> str:
    text = (tree.root / scheme_dir / "META.yml").read_text()
    return re.search(r"nistkat-sha256:\s*([0-9a-f]{64})", text).group(1)


def per_call(driver, lib, scheme, op, empty: Fraction, isa_=A64) -> tuple[Fraction, float]:
    argv = [str(driver.path), "count", str(lib), scheme, op]
    t0 = time.monotonic()
    c1 = qemu.count(isa_, [*argv, str(N1)]).insns
    c2 = qemu.count(isa_, [*argv, str(N2)]).insns
    return Fraction(c2 - c1, N2 - N1) - empty, time.monotonic() - t0


def vector_share(driver, lib, scheme, op) -> float:
    rows = qemu.count(A64, [str(driver.path), "count", str(lib), scheme, op, str(N2)], hist=True).hist
    total = sum(r.count for r in rows)
    return sum(r.count for r in rows if VECTOR.search(r.disas.split(" ", 1)[-1])) / total


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--schemes", default="ml-kem-512,ml-kem-768,ml-kem-1024")
    ap.add_argument("--ops", default="ntt,invntt,gen_a,kem_keypair_derand,kem_encaps_derand,kem_decaps")
    args = ap.parse_args()
    schemes, ops = args.schemes.split(","), args.ops.split(",")
    tree = sources.locate()
    fam, fam_neon = family_with_neon()
    variants = catalog.builtin_variants()
    ref = variants["ref"]
    neon = dataclasses.replace(ref, id="neon", sources="aarch64", description="PQClean aarch64 (NEON)")
    tmp = Path(tempfile.mkdtemp(prefix="pqsimd-a64-"))
    compilers = {"gcc": f"{A64.gnu_triple}-gcc", "clang-16": clang_wrapper(tmp, "16")}
    with cross_harness(compilers["gcc"]):
        driver = build.build_driver()
        builds = {}
        for cid, cc in compilers.items():
            for v, f in ((ref, fam), (neon, fam_neon)):
                t0 = time.monotonic()
                builds[v.id, cid] = build.build_variant(tree, f, v, cc, driver)
                print(f"build {v.id} {cid}: {time.monotonic() - t0:.1f} s", file=sys.stderr)

    print("## nistkat under qemu-aarch64 -cpu", A64.qemu_cpu)
    for (vid, cid), b in builds.items():
        for s in schemes:
            out = subprocess.run([*qemu.emulator(A64), str(b.kat[s])], capture_output=True, check=True).stdout
            got, want = hashlib.sha256(out).hexdigest(), meta_hash(tree, fam.schemes[s].dir)
            print(f"{vid:5} {cid:9} {s}: {'OK' if got == want else 'MISMATCH'} {got[:16]}")

    print("\n## instructions per call (plugin, (N2 - N1) difference minus empty), gcc")
    for s in schemes:
        for vid in ("ref", "neon"):
            b = builds[vid, "gcc"]
            empty, _ = per_call(driver, b.library, s, "empty", Fraction(0))
            for op in ops:
                pc, secs = per_call(driver, b.library, s, op, empty)
                again, _ = per_call(driver, b.library, s, op, empty)
                print(f"{s} {vid:5} {op:20} {float(pc):>12,.1f}  repeat {'same' if again == pc else float(again)}"
                      f"  empty {float(empty)}  ({secs:.2f} s for 2 runs)")

    s = schemes[0]
    print(f"\n## second method: QEMU exec log (-singlestep -d in_asm,exec,nochain), {s}, N = {N1}")
    for vid, op in (("neon", "ntt"), ("neon", "kem_decaps"), ("ref", "ntt")):
        argv = [str(driver.path), "count", str(builds[vid, "gcc"].library), s, op, str(N1)]
        t0 = time.monotonic()
        plugin = qemu.count(A64, argv).insns
        t1 = time.monotonic()
        log = qemu.exec_log_count(A64, argv)
        t2 = time.monotonic()
        print(f"{vid:5} {op:12} plugin {plugin:,} ({t1 - t0:.2f} s)  exec log {log} ({t2 - t1:.1f} s)")

    print(f"\n## NEON share of executed instructions (hist, N = {N2} calls incl. the loop), {s}")
    for vid in ("ref", "neon"):
        for op in ("ntt", "kem_decaps"):
            print(f"{vid:5} {op:12} {vector_share(driver, builds[vid, 'gcc'].library, s, op):.1%}")

    print(f"\n## -cpu pinning, {s} kem_decaps per call")
    for cpu in (A64.qemu_cpu, "cortex-a53", "max"):
        pinned = dataclasses.replace(A64, qemu_cpu=cpu)
        for vid in ("ref", "neon"):
            b = builds[vid, "gcc"]
            empty, _ = per_call(driver, b.library, s, "empty", Fraction(0), pinned)
            pc, _ = per_call(driver, b.library, s, "kem_decaps", empty, pinned)
            print(f"-cpu {cpu:11} {vid:5} {float(pc):,.1f}")


if __name__ == "__main__":
    main()
