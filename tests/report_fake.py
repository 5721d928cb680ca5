"""A small fabricated study for the report tests: raw Parquet + DIR/results/ that follow
ARCHITECTURE.md's schemas, with a cheap stand-in analysis (the real one is pqsimd.analyze).

The numbers are shaped like the paper's (Table 1 speedups for ref->avx2) so the figures and
tables look like the real thing, and the report can be developed and tested without an engine.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as papq
from scipy import stats

PAPER = {  # ref -> avx2, ML-KEM-512/768/1024 (the paper's Table 1)
    "invntt": (56.3, 52.2, 50.5), "basemul": (52.0, 47.6, 41.6), "poly_frommsg": (45.6, 49.2, 55.4),
    "ntt": (35.5, 39.4, 34.6), "indcpa_dec": (35.1, 35.0, 31.1), "indcpa_enc": (10.0, 9.4, 9.4),
    "indcpa_keypair": (8.3, 7.6, 8.1), "gen_a": (4.7, 3.8, 4.8), "poly_getnoise_eta1": (1.4, 1.4, 1.2),
}
REF_TICKS = {
    "gen_a": 30000, "poly_getnoise_eta1": 3000, "poly_getnoise_eta2": 2000, "ntt": 7000, "invntt": 11000,
    "basemul": 9000, "poly_tomsg": 300, "poly_frommsg": 400, "poly_compress": 600,
    "poly_decompress": 400, "polyvec_compress": 2500, "polyvec_decompress": 2000,
    "indcpa_keypair": 90000, "indcpa_enc": 110000, "indcpa_dec": 30000, "kem_keypair_derand": 98000,
    "kem_keypair": 100000, "kem_encaps_derand": 128000, "kem_encaps": 130000, "kem_decaps": 150000,
}
SCHEMES = ["ml-kem-512", "ml-kem-768", "ml-kem-1024"]
VARIANTS = ["refo0", "refnv", "ref", "avx2"]
KEM = {"kem_keypair": (5.4, 5.6, 5.9), "kem_encaps": (6.0, 6.3, 6.5), "kem_decaps": (6.9, 7.0, 7.1)}


def _true_median(scheme: str, op: str, variant: str) -> float:
    i = SCHEMES.index(scheme) if scheme in SCHEMES else 0
    ref = REF_TICKS.get(op, 1000) * (1 + 0.4 * i if op.startswith(("indcpa", "kem", "gen_a")) else 1)
    hand = PAPER.get(op, KEM.get(op, (3.0, 3.0, 3.0)))[i]
    autovec = {"invntt": 0.97, "poly_compress": 1.3, "gen_a": 1.05}.get(op, 1.0)
    return {"refo0": ref * autovec * 5.0, "refnv": ref * autovec, "ref": ref, "avx2": ref / hand}.get(
        variant, ref / 2)


def make_fake_study(directory: Path, schemes=SCHEMES, variants=VARIANTS, ops=None, jobs=3, spins=30,
                    reps=5, seed=1, metrics=("ticks",), drop=(), with_raw=True, design="separate",
                    compilers=("gcc",)) -> Path:
    """A synthetic study (tests/synthetic.py) shaped like the paper, analysed by the real
    `pqsimd analyze` (the report only reads results/), with a manifest like the run stage's.

    `drop`: (scheme, op, baseline, variant) comparisons to leave without data (the variant's rows
    of that scheme and op are removed, so the comparison is `n/a`)."""
    from pqsimd import catalog
    from pqsimd.analyze import analyze_study
    from synthetic import make_synthetic_study

    directory = Path(directory)
    ops = list(ops or REF_TICKS)
    make_synthetic_study(directory, schemes=schemes, variants=variants, ops=ops, jobs=jobs, spins=spins, reps=reps,
                         medians=lambda sc, v, op: _true_median(sc, op, v), job_sigma=0.01, seed=seed, metric=metrics,
                         analysis={"n_boot": 200, "seed": seed}, design=design, compilers=compilers,
                         hostname="fakehost", cpu_model="Fake CPU @ 2.90GHz")
    for scheme, op, _base, variant in drop:
        for path in (directory / "raw").glob("*.parquet"):
            t = papq.read_table(path)
            df = t.to_pandas()
            keep = ~((df["scheme"] == scheme) & (df["op"] == op) & (df["variant"] == variant))
            if keep.all():
                continue
            out = pa.Table.from_pandas(df[keep], schema=t.schema.remove_metadata(), preserve_index=False)
            papq.write_table(out.replace_schema_metadata(t.schema.metadata), path)
    fams = {catalog.family_of(s).name: catalog.family_of(s) for s in schemes}
    (directory / "manifest.json").write_text(json.dumps({
        "schema_version": 2,
        "machine": {"hostname": "fakehost", "cpu_model": "Fake CPU @ 2.90GHz", "virtualization": "kvm",
                    "kernel": "6.1.0"},
        "builds": {f"{v}.{c}.{f}": {"variant": v, "compiler": c, "family": f, "passed": True, "flags_used": ["-O3"]}
                   for v in variants for c in compilers for f in fams},
        "compilers": {c: {"id": c, "version": f"{c} 1.2.3"} for c in compilers},
        "source": {"crate": "pqcrypto-mlkem", "version": "0.1.1", "checksum": "abc123"},
        "tool": {"name": "pqsimd", "version": "0.1.0"},
        "chain": catalog.chain().to_dict(),
        "families": {f.name: {"source": f.source, "toml": f.text, "kind": f.kind, "title": f.title} for f in fams.values()},
        "design": design,
    }, indent=2))
    analyze_study(directory)
    return directory


MIX_CLASSES = {  # class -> (label, share of a scalar build's instructions, share of a SIMD build's)
    "scalar_alu": ("scalar ALU", 0.45, 0.15), "scalar_mul": ("scalar multiply", 0.10, 0.01), "load": ("loads", 0.2, 0.15),
    "store": ("stores", 0.1, 0.08), "branch": ("branches", 0.15, 0.03), "vec_alu": ("vector ALU", 0.0, 0.3),
    "vec_mul": ("vector multiply", 0.0, 0.12), "shuffle_lane": ("shuffles in-lane", 0.0, 0.1),
    "shuffle_cross": ("lane-crossing permutes", 0.0, 0.06),
}


def write_fake_mix(directory: Path, ops=None, schemes=SCHEMES, variants=VARIANTS, compiler="gcc") -> None:
    """results/mix.parquet as analyze/mix.py writes it (class level only), for the report's mix figure."""
    rows = []
    for scheme in schemes:
        for op in ops or REF_TICKS:
            for v in variants:
                total = _true_median(scheme, op, v) * 3
                for c, (label, scalar, simd) in MIX_CLASSES.items():
                    rows.append({"scheme": scheme, "op": op, "variant": v, "compiler": compiler, "level": "class",
                                 "class": c, "class_label": label, "mnemonic": None, "width": None,
                                 "lane_crossing": None, "count": round(total * (simd if v == "avx2" else scalar)),
                                 "count_exact": "yes", "share": None, "total": total})
    pd.DataFrame(rows).to_parquet(Path(directory) / "results" / "mix.parquet")
