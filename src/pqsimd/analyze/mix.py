"""The instruction mix (`--metric mix`, run/mix.py) as result tables, outside the groups and
comparisons (one metric per class and per mnemonic would swamp them; the counts are exact, so
there is nothing to bootstrap):

    mix            per (scheme, op, variant, compiler): executions per call of each class
                   (level "class", all classes, zeros included) and of each (mnemonic, width,
                   class) (level "mnemonic"); exact fraction, share of the op's instructions
    mix_ratios     per op and chain step (and `also` step) with both variants: per class the
                   base and variant counts, their ratio base/variant and difference, and the
                   class's share of the op's total instruction difference (class "total" first)
    mix_ops        per (scheme, op, variant, compiler): instructions per call, vector
                   instructions by width (128/256/512) and the widest used, and, with the
                   groups of a timed study, ticks (and est. core cycles) per instruction beside
                   the family's norm (median over its ops)
    mca            per op, variant and llvm-mca CPU model: predicted cycles per call (hot blocks
                   covering >= 95% of the instructions) and extrapolated to all of them, beside
                   the measured time (ticks × core_per_tsc); whether they agree
    mca_mnemonics  per op, variant, CPU model and mnemonic: count per call, the model's latency
                   and reciprocal throughput; `slow` marks latencies >= data/mix.toml slow_latency

Raw files: DIR/raw/*.mix.parquet only (their metrics start with "mix." and "mca.").
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from ..run import classify
from ..run import mix as run_mix
from ..studydir import StudyDir
from ..metrics import unit_of
from .context import with_isa
from .. import metrics as metrics_mod

MIX_FILE_SUFFIX = ".mix.parquet"
TIME_METRIC = metrics_mod.TIME
INS_METRIC = metrics_mod.COUNT
TABLES = ("mix", "mix_ratios", "mix_ops", "mca", "mca_mnemonics")

COLUMNS = {
    "mix": ["scheme", "op", "variant", "compiler", "level", "class", "class_label", "mnemonic", "width",
            "lane_crossing", "count", "count_exact", "share", "total"],
    "mix_ratios": ["scheme", "op", "compiler", "stage", "baseline", "variant", "class", "class_label", "base_count",
                   "var_count", "ratio", "difference", "share_of_difference", "note"],
    "mix_ops": ["scheme", "family", "op", "variant", "compiler", "instructions", "vector", "vector_share",
                "width_128", "width_256", "width_512", "max_width", "lane_crossing", "ticks", "ticks_per_instruction",
                "cycles_per_instruction", "family_norm_tpi", "tpi_vs_norm", "note"],
    "mca": ["scheme", "op", "variant", "compiler", "cpu", "model", "tool", "host_cpu", "predicted_cycles", "coverage",
            "predicted_cycles_all", "blocks", "replaced", "ticks", "core_per_tsc", "measured_cycles",
            "predicted_vs_measured", "agreement", "disagree_factor", "slow", "note"],
    "mca_mnemonics": ["scheme", "op", "variant", "compiler", "cpu", "mnemonic", "count", "latency", "rthroughput",
                      "max_latency", "slow"],
}


def mix_files(source: Path) -> list[Path]:
    source = Path(source)
    raw = StudyDir(source).raw_dir if StudyDir(source).raw_dir.is_dir() else source
    return sorted(raw.glob(f"*{MIX_FILE_SUFFIX}")) if raw.is_dir() else []


def _read(path: Path) -> tuple[pd.DataFrame, dict]:
    t = pq.read_table(path)
    meta = t.schema.metadata or {}
    try:
        rec = json.loads(meta.get(b"pqsimd.job", b"{}"))
    except ValueError:
        rec = {}
    df = t.to_pandas()
    df = df[~df["warmup"].astype(bool)]
    return df, rec if isinstance(rec, dict) else {}


def _exact(raw: Any, batch: Any) -> str:
    if raw is None or (isinstance(raw, float) and math.isnan(raw)) or not batch:
        return ""
    f = Fraction(int(raw), int(batch))
    return str(f.numerator) if f.denominator == 1 else f"{f.numerator}/{f.denominator}"


def _chain_steps(chain: Any) -> list[tuple[str, str, str]]:
    """(stage, base, variant) of the chain's steps and `also` steps, from a catalog-style dict or
    the analyze Chain."""
    if chain is None:
        from .. import catalog

        chain = catalog.chain().to_dict()
    if isinstance(chain, dict):
        out = [(s["stage"], s["from"], s["to"]) for s in chain.get("steps", [])]
        return out + [(s["stage"], s["from"], s["to"]) for s in chain.get("also", [])]
    return list(getattr(chain, "steps", ())) + list(getattr(chain, "also", ()))


def _families_of(families: dict | None, schemes) -> dict[str, str]:
    out = {}
    for name, f in (families or {}).items():
        for s in (f.get("schemes") or {}):
            out[s] = name
    for s in schemes:
        if s not in out:
            try:
                from .. import catalog

                out[s] = catalog.family_of(s).name
            except Exception:  # a scheme no loaded family knows: its own norm
                out[s] = s
    return out


def _medians(groups: pd.DataFrame | None, metric: str) -> dict[tuple[str, str, str, str], float]:
    if groups is None or len(groups) == 0 or "metric" not in groups.columns:
        return {}
    g = groups[groups["metric"] == metric]
    return {(r.scheme, r.op, r.variant, r.compiler): float(r.median) for r in g.itertuples(index=False)}


def _self_checks(families: dict | None) -> set[str]:
    return {f.get("self_check") for f in (families or {}).values() if f.get("self_check")}


def mix_results(source: Path, groups: pd.DataFrame | None = None, chain: Any = None, core_per_tsc: float | None = None,
                families: dict | None = None, isa: str | None = None, vlen: int | None = None) -> dict[str, pd.DataFrame]:
    """The mix tables (TABLES) from the mix raw files of `source` (a study directory or its raw/);
    `groups` (analyze's groups table) adds time beside them. Empty tables (with their columns) when
    the study has no mix data, so a re-analysis never leaves stale ones. `isa`: the study's (its
    instruction classes; None: this host's)."""
    from ..isa import mca as mca_models

    cfg = classify.config(isa)
    labels = cfg.labels
    rows_mix: list[dict] = []
    rows_mca: list[dict] = []
    rows_mcm: list[dict] = []
    totals: dict[tuple[str, str, str, str], float] = {}
    class_counts: dict[tuple[str, str, str, str], dict[str, float]] = {}
    widths: dict[tuple[str, str, str, str], dict[int, float]] = {}
    crossing_ops: dict[tuple[str, str, str, str], float] = {}
    slow_lat = float(cfg.mca.get("slow_latency", 10))
    for path in mix_files(source):
        df, rec = _read(path)
        if df.empty:
            continue
        mca_rec = rec.get("mca") or {}
        for (scheme, op, variant, compiler), sub in df.groupby(["scheme", "op", "variant", "compiler"], sort=False):
            key = (scheme, op, variant, compiler)
            cls = sub[sub["metric"].str.startswith(run_mix.CLASS_PREFIX)]
            total = float(cls["per_call"].sum())
            totals[key] = total
            class_counts[key] = {}
            for r in cls.itertuples(index=False):
                c = r.metric[len(run_mix.CLASS_PREFIX):]
                class_counts[key][c] = float(r.per_call)
                rows_mix.append({"scheme": scheme, "op": op, "variant": variant, "compiler": compiler, "level": "class",
                                 "class": c, "class_label": labels.get(c, c), "mnemonic": None, "width": None,
                                 "lane_crossing": None, "count": float(r.per_call), "count_exact": _exact(r.raw, r.batch),
                                 "share": float(r.per_call) / total if total else math.nan, "total": total})
            w = widths.setdefault(key, {})
            crossing_ops[key] = 0.0
            for r in sub[sub["metric"].str.startswith(run_mix.MNEMONIC_PREFIX)].itertuples(index=False):
                parsed = run_mix.parse_mnemonic_metric(r.metric)
                if parsed is None:
                    continue
                mn, width, c = parsed
                crossing = mn in cfg.crossing or (mn in cfg.crossing_when_wide and width >= 256)
                if crossing:
                    crossing_ops[key] += float(r.per_call)
                w[width] = w.get(width, 0.0) + float(r.per_call)
                rows_mix.append({"scheme": scheme, "op": op, "variant": variant, "compiler": compiler,
                                 "level": "mnemonic", "class": c, "class_label": labels.get(c, c), "mnemonic": mn,
                                 "width": width, "lane_crossing": crossing, "count": float(r.per_call),
                                 "count_exact": _exact(r.raw, r.batch),
                                 "share": float(r.per_call) / total if total else math.nan, "total": total})
            for r in sub[sub["metric"].str.startswith(run_mix.MCA_PREFIX)].itertuples(index=False):
                cpu = r.metric[len(run_mix.MCA_PREFIX):]
                est = ((mca_rec.get("cpus") or {}).get(cpu) or {}).get(op) or {}
                cov = float(est.get("coverage", math.nan))
                slow = {mn: v for mn, v in (est.get("mnemonics") or {}).items()
                        if float(v.get("max_latency", 0)) >= slow_lat and float(v.get("count", 0)) > 0}
                model = mca_models.model(mca_rec.get("tool") or "", cfg.isa, cpu)
                rows_mca.append({
                    "scheme": scheme, "op": op, "variant": variant, "compiler": compiler, "cpu": cpu,
                    "model": model["model"] if model else None,
                    "tool": mca_rec.get("tool"), "host_cpu": mca_rec.get("host_cpu"),
                    "predicted_cycles": float(r.per_call), "coverage": cov,
                    "predicted_cycles_all": float(r.per_call) / cov if cov and cov > 0 else math.nan,
                    "blocks": int(est.get("blocks", 0)), "replaced": int(est.get("replaced", 0)),
                    "slow": "; ".join(f"{mn} ×{v['count']:.6g}/call (latency {v['max_latency']:.0f})"
                                      for mn, v in sorted(slow.items(), key=lambda kv: -kv[1]["count"])),
                })
                for mn, v in (est.get("mnemonics") or {}).items():
                    rows_mcm.append({"scheme": scheme, "op": op, "variant": variant, "compiler": compiler, "cpu": cpu,
                                     "mnemonic": mn, "count": float(v.get("count", 0)),
                                     "latency": float(v.get("latency", math.nan)),
                                     "rthroughput": float(v.get("rthroughput", math.nan)),
                                     "max_latency": float(v.get("max_latency", math.nan)),
                                     "slow": float(v.get("max_latency", 0)) >= slow_lat})

    out = {name: pd.DataFrame(columns=COLUMNS[name]) for name in TABLES}
    if not totals:
        return out
    out["mix"] = pd.DataFrame(rows_mix, columns=COLUMNS["mix"])

    ticks = _medians(groups, TIME_METRIC)
    fam_of = _families_of(families, {k[0] for k in totals})
    self_checks = _self_checks(families)

    # mix_ratios: per chain step with both variants present
    rows_r = []
    ops_keys = list(dict.fromkeys((k[0], k[1], k[3]) for k in totals))
    for scheme, op, comp in ops_keys:
        for stage, b, v in _chain_steps(chain):
            kb, kv = (scheme, op, b, comp), (scheme, op, v, comp)
            if kb not in totals or kv not in totals:
                continue
            tb, tv = totals[kb], totals[kv]
            dtot = tb - tv
            base_row = {"scheme": scheme, "op": op, "compiler": comp, "stage": stage, "baseline": b, "variant": v}

            def one(c: str, nb: float, nv: float) -> dict:
                return {**base_row, "class": c, "class_label": labels.get(c, c) if c != "total" else "all instructions",
                        "base_count": nb, "var_count": nv, "ratio": nb / nv if nv > 0 else (math.inf if nb > 0 else math.nan),
                        "difference": nb - nv, "share_of_difference": (nb - nv) / dtot if dtot else math.nan,
                        "note": "" if dtot else "no total difference: shares n/a"}

            rows_r.append(one("total", tb, tv))
            for c in cfg.classes:
                nb, nv = class_counts[kb].get(c, 0.0), class_counts[kv].get(c, 0.0)
                if nb or nv:
                    rows_r.append(one(c, nb, nv))
    out["mix_ratios"] = pd.DataFrame(rows_r, columns=COLUMNS["mix_ratios"])

    # mix_ops: widths, ticks per instruction and the family norm
    rows_o = []
    for key, total in totals.items():
        scheme, op, variant, comp = key
        w = widths.get(key, {})
        vec = sum(n for wd, n in w.items() if wd > 0)
        t = ticks.get(key)
        tpi = t / total if (t is not None and total > 0) else math.nan
        rows_o.append({"scheme": scheme, "family": fam_of.get(scheme, scheme), "op": op, "variant": variant,
                       "compiler": comp, "instructions": total, "vector": vec,
                       "vector_share": vec / total if total else math.nan,
                       "width_128": w.get(128, 0.0), "width_256": w.get(256, 0.0), "width_512": w.get(512, 0.0),
                       "max_width": max((wd for wd, n in w.items() if n > 0), default=0),
                       "lane_crossing": crossing_ops.get(key, 0.0),
                       "ticks": t if t is not None else math.nan, "ticks_per_instruction": tpi,
                       "cycles_per_instruction": tpi * core_per_tsc if (core_per_tsc and np.isfinite(tpi)) else math.nan})
    ops_df = pd.DataFrame(rows_o, columns=[c for c in COLUMNS["mix_ops"] if c not in ("family_norm_tpi", "tpi_vs_norm", "note")])
    norms = []
    for r in ops_df.itertuples(index=False):
        peers = ops_df[(ops_df["family"] == r.family) & (ops_df["variant"] == r.variant) & (ops_df["compiler"] == r.compiler)
                       & ~ops_df["op"].isin(self_checks)]["ticks_per_instruction"].dropna()
        norms.append(float(peers.median()) if len(peers) else math.nan)
    ops_df["family_norm_tpi"] = norms
    ops_df["tpi_vs_norm"] = ops_df["ticks_per_instruction"] / ops_df["family_norm_tpi"]
    ops_df["note"] = np.where(ops_df["ticks"].isna(), "no ticks for this op and variant (not timed)",
                              np.where(ops_df["instructions"] <= 0, "no instructions (the self-check op)", ""))
    out["mix_ops"] = ops_df[COLUMNS["mix_ops"]]

    # mca: beside the measured time
    factor = float(cfg.mca.get("disagree_factor", 1.5))
    for r in rows_mca:
        key = (r["scheme"], r["op"], r["variant"], r["compiler"])
        t = ticks.get(key)
        r["ticks"] = t if t is not None else math.nan
        r["core_per_tsc"] = core_per_tsc if core_per_tsc else math.nan
        meas = t * core_per_tsc if (t is not None and core_per_tsc) else (t if t is not None else math.nan)
        r["measured_cycles"] = meas
        r["disagree_factor"] = factor
        pred = r["predicted_cycles_all"]
        if totals.get(key, 0) <= 0:
            r["predicted_vs_measured"], r["agreement"] = math.nan, "n/a"
            r["note"] = "no instructions (the self-check op)"
        elif not np.isfinite(meas) or meas <= 0 or not np.isfinite(pred):
            r["predicted_vs_measured"], r["agreement"] = math.nan, "n/a"
            r["note"] = "no ticks for this op and variant (not timed)" if not np.isfinite(meas) else "measured time <= 0"
        else:
            q = pred / meas
            r["predicted_vs_measured"] = q
            r["agreement"] = "agrees" if 1 / factor <= q <= factor else ("model lower" if q < 1 else "model higher")
            r["note"] = (f"measured in {unit_of(metrics_mod.TIME, isa)} × core_per_tsc (est. core cycles)" if core_per_tsc else
                         f"measured in {unit_of(metrics_mod.TIME, isa)} (no core_per_tsc: not core cycles)")
            if r["host_cpu"] and r["cpu"] != r["host_cpu"]:
                r["note"] += f"; the model is {r['cpu']}, the measuring host is {r['host_cpu']} (llvm-mca's name)"
    out["mca"] = pd.DataFrame(rows_mca, columns=COLUMNS["mca"])
    out["mca_mnemonics"] = pd.DataFrame(rows_mcm, columns=COLUMNS["mca_mnemonics"])
    return out


def write_mix_results(directory: Path, results: Path | None = None, **kwargs) -> list[str]:
    """mix_results written to DIR/results/ (csv + parquet, like every table); returns warnings."""
    from .write import write_table

    directory = Path(directory)
    results = results or StudyDir(directory).results_dir
    tables = mix_results(directory, **kwargs)
    if kwargs.get("isa"):
        tables = {name: with_isa(t, kwargs["isa"], kwargs.get("vlen")) for name, t in tables.items()}
    if all(t.empty for t in tables.values()):
        for name in TABLES:
            for ext in ("csv", "parquet"):
                (results / f"{name}.{ext}").unlink(missing_ok=True)
        return []
    results.mkdir(parents=True, exist_ok=True)
    for name, t in tables.items():
        write_table(t, results, name)
    warn = []
    bad = tables["mca"][tables["mca"]["agreement"].isin(["model lower", "model higher"])]
    if len(bad):
        warn.append(f"llvm-mca disagrees with the measured time (beyond ×{classify.config(kwargs.get('isa')).mca.get('disagree_factor', 1.5)}) "
                    f"for {len(bad)} of {len(tables['mca'])} (op, variant, CPU model) estimates (see mca.csv)")
    return warn
