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
                    reps=5, seed=1, metrics=("ticks",), drop=(), with_raw=True) -> Path:
    """Write study.toml, manifest.json, raw/*.parquet and results/ into `directory`.

    `drop`: (scheme, op, baseline, variant) comparisons to leave out (to test `n/a`).
    """
    directory = Path(directory)
    (directory / "raw").mkdir(parents=True, exist_ok=True)
    ops = list(ops or REF_TICKS)
    rng = np.random.default_rng(seed)
    spin_rows = []
    for metric in metrics:
        for scheme in schemes:
            for variant in variants:
                for j in range(jobs):
                    job = f"{variant}.{scheme}.{j}"
                    rows = []
                    for op in ops:
                        mu = _true_median(scheme, op, variant)
                        if metric == "instructions":
                            per_call = np.full((spins, reps), round(mu * 2.1))
                        else:
                            job_eff = rng.normal(0, 0.01)
                            per_call = mu * np.exp(job_eff + rng.normal(0, 0.03, (spins, reps)))
                            tail = rng.random((spins, reps)) < 0.03
                            per_call[tail] *= rng.uniform(1.5, 4, tail.sum())
                        for s in range(spins):
                            spin_rows.append((metric, scheme, op, variant, job, s, float(np.median(per_call[s]))))
                            for r in range(reps):
                                rows.append((scheme, variant, op, metric, job, j, s, r, 1,
                                             int(per_call[s, r]) + 30, int(per_call[s, r]) + 30
                                             if metric == "ticks" else None, float(per_call[s, r]), False))
                    if with_raw:
                        df = pd.DataFrame(rows, columns=["scheme", "variant", "op", "metric", "job", "job_index",
                                                         "spin", "rep", "batch", "raw", "ticks", "per_call",
                                                         "warmup"])
                        table = pa.Table.from_pandas(df, preserve_index=False)
                        table = table.replace_schema_metadata({"pqsimd.job": json.dumps({"id": job})})
                        papq.write_table(table, directory / "raw" / f"{job}.{metric}.parquet")
    sm = pd.DataFrame(spin_rows, columns=["metric", "scheme", "op", "variant", "job", "spin", "value"])
    _write_results(directory, sm, variants, seed, drop)
    (directory / "study.toml").write_text(
        f'[study]\nschemes = {json.dumps(list(schemes))}\nvariants = {json.dumps(list(variants))}\n'
        f'jobs = {jobs}\nspins = {spins}\nreps = {reps}\nwarmup = 2\nbatch = "auto"\nseed = {seed}\n'
        f'metric = {json.dumps(list(metrics))}\n\n[analysis]\nalpha = 0.05\nthreshold = 0.02\nbootstrap = 200\n')
    (directory / "manifest.json").write_text(json.dumps({
        "schema_version": 1,
        "machine": {"hostname": "fakehost", "cpu_model": "Fake CPU @ 2.90GHz", "virtualized": True,
                    "tsc_hz": 2.9e9, "kernel": "6.1.0", "constant_tsc": True},
        "variants": {v: {"flags": ["-O3"], "cc": "gcc 12.2.0"} for v in variants},
        "source": {"crate": "pqcrypto-mlkem", "version": "0.1.1", "checksum": "abc123"},
        "tool": {"name": "pqsimd", "version": "0.1.0"},
    }, indent=2))
    return directory


def _boot_ratio(a, b, rng, B=200):
    ia = rng.integers(0, len(a), (B, len(a)))
    ib = rng.integers(0, len(b), (B, len(b)))
    r = np.median(a[ia], axis=1) / np.median(b[ib], axis=1)
    return np.percentile(r, [2.5, 97.5])


def _write_results(directory: Path, sm: pd.DataFrame, variants, seed, drop) -> None:
    rng = np.random.default_rng(seed + 1)
    res = directory / "results"
    res.mkdir(exist_ok=True)
    g = sm.groupby(["metric", "scheme", "op", "variant"])
    groups = g["value"].agg(median="median", min="min", n_spins="size").reset_index()
    groups["n_jobs"] = g["job"].nunique().values
    groups["iqr"] = g["value"].quantile(0.75).values - g["value"].quantile(0.25).values
    groups["mad"] = g["value"].apply(lambda x: float(np.median(np.abs(x - np.median(x))))).values
    groups["outliers_low"] = 0
    groups["outliers_high"] = 3
    groups["icc"] = 0.05
    groups["drift"] = False
    groups["noisy_jobs"] = 0
    groups["deterministic"] = groups["metric"] == "instructions"
    groups["unit"] = groups["metric"].map({"ticks": "ticks", "instructions": "instructions"})
    groups.loc[groups.index[:1], "drift"] = True
    groups.loc[groups.index[1:2], "noisy_jobs"] = 1
    pairs = [("refo0", "refnv", "compiler"), ("refnv", "ref", "autovec"), ("ref", "avx2", "hand_simd")]
    pairs += [("refo0", v, "cumulative") for v in variants if v != "refo0"]
    pairs += [("ref", v, "extra") for v in variants if v not in ("refo0", "refnv", "ref", "avx2")]
    rows = []
    vals = {k: v["value"].to_numpy() for k, v in sm.groupby(["metric", "scheme", "op", "variant"])}
    jobsn = groups.set_index(["metric", "scheme", "op", "variant"])["n_jobs"]
    for (metric, scheme, op) in sorted({k[:3] for k in vals}):
        for base, var, stage in pairs:
            a, b = vals.get((metric, scheme, op, base)), vals.get((metric, scheme, op, var))
            if a is None or b is None or (scheme, op, base, var) in drop:
                continue
            s = np.median(a) / np.median(b)
            lo, hi = _boot_ratio(a, b, rng)
            u = stats.mannwhitneyu(b, a, alternative="less")
            d = 2 * u.statistic / (len(a) * len(b)) - 1  # P(b>a)-P(b<a)
            rows.append(dict(metric=metric, scheme=scheme, op=op, baseline=base, variant=var, stage=stage,
                             speedup=s, ci_low=lo, ci_high=hi, hci_low=lo * 0.99, hci_high=hi * 1.01,
                             hci_reliable=bool(jobsn[(metric, scheme, op, base)] >= 5), mwu_p=u.pvalue,
                             cliffs_delta=-d, delta_ci_low=max(-d - 0.05, -1), delta_ci_high=min(-d + 0.05, 1),
                             job_p=0.05 if s != 1 else 1.0, n_base=len(a), n_var=len(b),
                             jobs_base=int(jobsn[(metric, scheme, op, base)]),
                             jobs_var=int(jobsn[(metric, scheme, op, var)])))
    comp = pd.DataFrame(rows)
    m = len(comp)
    order = np.argsort(comp["mwu_p"].to_numpy())
    holm = np.minimum(1, np.maximum.accumulate(comp["mwu_p"].to_numpy()[order] * (m - np.arange(m))))
    comp["p_holm"] = np.empty(m)
    comp.loc[comp.index[order], "p_holm"] = holm
    comp["p_bh"] = stats.false_discovery_control(comp["mwu_p"].to_numpy())
    comp["verdict"] = np.where((comp["p_holm"] < 0.05) & (comp["hci_low"] > 1.02), "faster",
                               np.where(comp["hci_high"] < 0.98, "slower", "~"))
    # decomposition
    drows = []
    for (metric, scheme, op), _ in comp.groupby(["metric", "scheme", "op"]):
        def sp(b, v):
            r = comp[(comp.metric == metric) & (comp.scheme == scheme) & (comp.op == op)
                     & (comp.baseline == b) & (comp.variant == v)]
            return float(r.speedup.iloc[0]) if len(r) else np.nan
        c, a, h = sp("refo0", "refnv"), sp("refnv", "ref"), sp("ref", "avx2")
        t = sp("refo0", "avx2")
        lt = np.log(c * a * h)
        drows.append(dict(metric=metric, scheme=scheme, op=op, total=t, compiler=c, autovec=a, hand_simd=h,
                          share_compiler=np.log(c) / lt, share_autovec=np.log(a) / lt,
                          share_hand_simd=np.log(h) / lt))
    dec = pd.DataFrame(drows)
    for name, df in (("groups", groups), ("comparisons", comp), ("decomposition", dec)):
        df.to_csv(res / f"{name}.csv", index=False)
        df.to_parquet(res / f"{name}.parquet", index=False)
    (res / "summary.json").write_text(json.dumps({
        "alpha": 0.05, "threshold": 0.02, "n_boot": 200, "seed": seed,
        "family": {"size": m, "definition": "all comparisons of the study (every metric, scheme, op, stage)"},
        "warnings": ["fabricated study for tests"],
    }, indent=2))
