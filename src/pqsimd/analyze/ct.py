"""Constant time beside speed (`--metric ct`, run/ct.py): the job records' verdicts and sites as tables,
and which step of the chain introduced or removed each leak.

Tables (results/):
  constant_time   one row per (scheme, op, variant, compiler, site): the op's verdict (leak, unconfirmed,
                  clean, n/a), the site's function, file, line, offset, instruction, kind (branch,
                  address, cmov, operand, div, other), its own verdict (leak, unconfirmed, declassified, not a leak),
                  the two witness secrets and what differs between their traces; an op without a site
                  is one row with the site columns empty, an n/a op one row with its reason (`why`)
  ct_stages       one row per (scheme, compiler, chain step, change, first site) where the two builds'
                  verdicts differ in leaking: the step, introduced or removed, the leak's sites, the
                  ops (comma list) it holds for, and a sentence

The verdicts are exact (the same binary and secrets give the same traces); the one statistic is dudect's
timing evidence per op (dudect_t: Welch's t of fixed vs fresh secrets, stats/dudect.py), shown beside the
verdict, never deciding it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..stats import dudect as dudect_stats
from ..studydir import StudyDir
from .write import write_or_remove
from .. import metrics as metrics_mod
from .. import store

METRIC = metrics_mod.CT
CT_FILE_SUFFIX = f".{METRIC}.parquet"
COLUMNS = ["scheme", "family", "op", "label", "variant", "compiler", "verdict", "secrets", "why", "function", "file",
           "line", "offset", "instruction", "kind", "site_verdict", "declassified", "witnesses", "difference",
           "dudect_t", "dudect_crop", "dudect_n", "dudect_threshold", "scope"]
STAGE_COLUMNS = ["scheme", "family", "op", "label", "compiler", "stage", "stage_label", "base", "variant", "change",
                 "sites", "sentence"]


def is_ct_file(name: str) -> bool:
    return name.endswith(CT_FILE_SUFFIX)


def ct_records(directory: Path) -> list[dict[str, Any]]:
    """The ct jobs' records (run/ct.py), in file order."""
    sd = StudyDir(directory)
    records = [(path, rec) for path, rec in sorted(sd.job_records().items()) if is_ct_file(path.name)]
    for path, rec in records:
        if not rec:  # damaged (a run cut short, a copy gone wrong): said, as for every raw file, never dropped
            raise store.unreadable_raw(path, Path(directory), "no readable job record")
    return [rec for _, rec in records]


def _family_of(families: dict[str, Any], scheme: str) -> dict[str, Any]:
    return next((f for f in families.values() if scheme in f.get("schemes", {})), {})


def _dudect(timing: dict[str, Any] | None) -> dict[str, Any]:
    """The timing evidence of one op (stats/dudect.py), as columns; empty without measurements."""
    if not timing or not timing.get("ticks"):
        return {}
    d = dudect_stats.dudect(np.array([int(c) for c in timing["classes"]]), np.array(timing["ticks"]))
    if d is None:
        return {}
    return {"dudect_t": round(d.t, 3), "dudect_crop": d.crop, "dudect_n": d.n_fixed + d.n_random,
            "dudect_threshold": dudect_stats.THRESHOLD}


def site_table(records: list[dict[str, Any]], families: dict[str, Any]) -> pd.DataFrame:
    rows = []
    for rec in records:
        fam = _family_of(families, rec["scheme"])
        labels = fam.get("labels", {})
        for op, r in rec.get("ops", {}).items():
            base = {"scheme": rec["scheme"], "family": fam.get("family", ""), "op": op, "label": labels.get(op, op),
                    "variant": rec["variant"], "compiler": rec["compiler"], "verdict": r["verdict"],
                    "secrets": ",".join(r.get("secrets", [])), "why": r.get("why"), "scope": r.get("scope"),
                    **_dudect(r.get("timing"))}
            sites = r.get("sites") or []
            if not sites:
                rows.append(base)
            for s in sites:
                rows.append({**base, "function": s["function"], "file": Path(s["file"]).name if s["file"] else None,
                             "line": s["line"], "offset": s["offset"], "instruction": s["instruction"],
                             "kind": s["kind"], "site_verdict": s["verdict"], "declassified": s["declassified"],
                             "witnesses": ",".join(map(str, s.get("witnesses") or [])) or None,
                             "difference": s.get("difference") or None})
    df = pd.DataFrame(rows, columns=COLUMNS)
    if len(df):
        df["line"] = df["line"].astype("Int64")
        df["offset"] = df["offset"].astype("Int64")
    return df


def _first_leak(rows: pd.DataFrame) -> tuple[str, int] | None:
    """('the branch in F (file.c:124)', sites) of the rows' first leak site, or None."""
    leaks = rows[rows["site_verdict"].eq("leak")]
    if not len(leaks):
        return None
    s = leaks.iloc[0]
    line = f":{int(s['line'])}" if pd.notna(s["line"]) else ""
    return f"the {s['kind']} in {s['function']} ({s['file']}{line})", len(leaks)


def _present_steps(steps: list[dict[str, Any]], present: set[str]) -> list[dict[str, Any]]:
    """The chain's steps between the variants the study built: a variant it left out (a study without the
    chain's middle variant) joins the steps on either side into one ("compiler + auto-vec"), as the speed
    comparisons compare the two variants around it; a variant built but untested (n/a) still splits them."""
    out: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    for st in steps:
        if not pending and st["from"] not in present:
            continue  # the chain starts later in this study
        pending.append(st)
        if st["to"] in present:
            if len(pending) == 1:
                out.append(st)
            else:
                out.append({"stage": "+".join(s["stage"] for s in pending), "from": pending[0]["from"],
                            "to": st["to"], "label": " + ".join(s.get("label") or s["stage"] for s in pending)})
            pending = []
    return out


def _flagged(g: pd.DataFrame, by: str, value: str) -> set[tuple]:
    """The (function, line) of every site flagged in one build, whatever its verdict."""
    r = g[g[by].eq(value) & g["function"].notna()]
    return set(zip(r["function"], r["line"]))


def _settled(g: pd.DataFrame, by: str, a: str, b: str, verdict: dict) -> tuple[str | None, str | None]:
    """The two builds' verdicts as a step reads them: an *unconfirmed* build counts as clean beside a leaking
    one when none of the leak's confirmed sites is even flagged in it (HQC: gcc's one unconfirmed site is
    elsewhere; clang-16's leaks are in code gcc compiled without a flagged site), else it says nothing."""
    va, vb = verdict.get(a), verdict.get(b)
    if {va, vb} == {"leak", "unconfirmed"}:
        leak, other = (a, b) if va == "leak" else (b, a)
        confirmed = g[g[by].eq(leak) & g["site_verdict"].eq("leak")] if "site_verdict" in g else g.iloc[0:0]
        sites = set(zip(confirmed["function"], confirmed["line"]))
        if sites and not sites & _flagged(g, by, other):
            return ("leak", "clean") if va == "leak" else ("clean", "leak")
    return va, vb


def stage_table(sites: pd.DataFrame, chain: dict[str, Any], compilers: list[str] | None = None) -> pd.DataFrame:
    """Per chain step whose builds were both tested (n/a builds say nothing either way, nor an unconfirmed one
    that flags a site of the other's leak: `_settled`):
    where a leak appears or goes, one row per (scheme, compiler, step, change, first site) with the ops
    it holds for, in the family's op order. A chain variant the study did not build is stepped over."""
    if not len(sites):
        return pd.DataFrame(columns=STAGE_COLUMNS)
    found: dict[tuple, dict[str, Any]] = {}
    for (scheme, op, compiler), g in sites.groupby(["scheme", "op", "compiler"], sort=False):
        verdict = g.groupby("variant")["verdict"].first().to_dict()
        steps = [*_present_steps(list(chain.get("steps") or []), set(verdict)), *(chain.get("also") or [])]
        for st in steps:
            a, b = _settled(g, "variant", st["from"], st["to"], verdict)
            if a not in ("leak", "clean") or b not in ("leak", "clean") or a == b:
                continue
            change = "introduced" if b == "leak" else "removed"
            first = _first_leak(g[g["variant"].eq(st["to"] if change == "introduced" else st["from"])])
            if first is None:
                continue
            where, n = first
            key = (scheme, compiler, st["stage"], change, where)
            row = found.setdefault(key, {
                "scheme": scheme, "family": g["family"].iloc[0], "compiler": compiler, "stage": st["stage"],
                "stage_label": st.get("label") or st["stage"], "base": st["from"], "variant": st["to"],
                "change": change, "sites": where + (f" and {n - 1} more site{'s' if n > 2 else ''}" if n > 1 else ""),
                "op": [], "label": []})
            row["op"].append(op)
            row["label"].append(str(g["label"].iloc[0]))
    # another compiler of the same build (--cc gcc,clang-16): the study's first compiler is the baseline
    for (scheme, op, variant), g in sites.groupby(["scheme", "op", "variant"], sort=False) if compilers else ():
        verdict = g.groupby("compiler")["verdict"].first().to_dict()
        order = [c for c in (compilers or []) if c in verdict] + [c for c in verdict if c not in (compilers or [])]
        for c in order[1:]:
            a, b = _settled(g, "compiler", order[0], c, verdict)
            if a not in ("leak", "clean") or b not in ("leak", "clean") or a == b:
                continue
            change = "introduced" if b == "leak" else "removed"
            first = _first_leak(g[g["compiler"].eq(c if change == "introduced" else order[0])])
            if first is None:
                continue
            where, n = first
            key = (scheme, c, "cross_compiler", variant, change, where)
            row = found.setdefault(key, {
                "scheme": scheme, "family": g["family"].iloc[0], "compiler": c, "stage": "cross_compiler",
                "stage_label": f"compiler {order[0]} → {c}", "base": variant, "variant": variant, "change": change,
                "sites": where + (f" and {n - 1} more site{'s' if n > 2 else ''}" if n > 1 else ""),
                "op": [], "label": [], "_step": f"{variant}"})
            row["op"].append(op)
            row["label"].append(str(g["label"].iloc[0]))
    rows = []
    for r in found.values():
        step = r.pop("_step", None) or f"{r['compiler']}, {r['base']} → {r['variant']}"
        r["sentence"] = (f"{r['stage_label']} {r['change']} {r['sites']} ({step}): "
                         f"{r['scheme']} {', '.join(r['label'])}")
        r["op"], r["label"] = ",".join(r["op"]), ",".join(r["label"])
        rows.append(r)
    return pd.DataFrame(rows, columns=STAGE_COLUMNS)


def in_chain_order(sites: pd.DataFrame, chain: dict[str, Any]) -> pd.DataFrame:
    """The rows with their builds in the chain's order (the chain's variants, then the `also` steps'
    variants; others after, as found), as the speed tables list them, not the raw files' alphabetical order."""
    order: list[str] = []
    for st in [*(chain.get("steps") or []), *(chain.get("also") or [])]:
        order += [v for v in (st["from"], st["to"]) if v not in order]
    if not len(sites):
        return sites
    rank = {v: i for i, v in enumerate(order)}
    key = sites["variant"].map(lambda v: rank.get(v, len(rank)))
    return sites.iloc[np.argsort(key.to_numpy(), kind="stable")].reset_index(drop=True)


def write_ct_results(directory: Path, results: Path, chain: dict[str, Any], families: dict[str, Any],
                     compilers: list[str] | None = None) -> list[str]:
    """results/constant_time and ct_stages (none without ct jobs); warnings: the leaks, one line."""
    sites = in_chain_order(site_table(ct_records(directory), families), chain)
    write_or_remove(sites, results, "constant_time")
    write_or_remove(stage_table(sites, chain, compilers), results, "ct_stages")
    if not len(sites):
        return []
    ops = sites.drop_duplicates(["scheme", "op", "variant", "compiler"])
    leaks = ops[ops["verdict"].eq("leak")]
    if not len(leaks):
        return []
    builds = sorted({f"{v} ({c})" for v, c in zip(leaks["variant"], leaks["compiler"])})
    return [f"constant time: {len(leaks)} (op, build) pairs leak a secret through a branch, an address or a division, "
            f"confirmed by traces, in {', '.join(builds)} (results/constant_time.csv; "
            f"`pqsimd show {directory} --metric ct`)"]
