"""`pqsimd show DIR` and `pqsimd compare DIR_A DIR_B`: benchstat-style tables in the terminal (rich)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..errors import PqsimdError
from . import fmt, style
from .load import Study, check_study_dir, load_study

# the comparison each variant is shown against by default (its own stage)
OWN_STAGE = {"refnv": ("compiler", "refo0"), "ref": ("autovec", "refnv"), "avx2": ("hand_simd", "ref")}
VERDICT_STYLE = {"faster": "bold green", "slower": "bold red", "~": "dim", fmt.NA: "yellow"}
MARKS = "¹²³⁴⁵⁶⁷⁸⁹"


def _console(console: Console | None) -> Console:
    if console is not None:
        return console
    return Console(width=None if sys.stdout.isatty() else 160)


def _verdict(v) -> Text:
    s = fmt.NA if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)
    return Text(s, style=VERDICT_STYLE.get(s, ""))


def _ci_of(row: dict) -> tuple:
    lo, hi = row.get("hci_low"), row.get("hci_high")
    if fmt.is_missing(lo) or fmt.is_missing(hi):
        lo, hi = row.get("ci_low"), row.get("ci_high")
    return lo, hi


class _Footnotes:
    def __init__(self) -> None:
        self.items: list[str] = []

    def mark(self, text: str) -> str:
        if text not in self.items:
            self.items.append(text)
        i = self.items.index(text)
        return MARKS[i] if i < len(MARKS) else f"[{i + 1}]"


def _group_marks(g: dict | None, notes: _Footnotes, reliable_jobs: int = 5) -> str:
    if not g:
        return ""
    marks = []
    if not fmt.is_missing(g.get("n_jobs")) and int(g["n_jobs"]) < reliable_jobs:
        marks.append(notes.mark(f"fewer than {reliable_jobs} jobs: hierarchical CI unreliable"))
    if str(g.get("drift")).lower() == "true":
        marks.append(notes.mark("drift: a job's spin medians trend"))
    if not fmt.is_missing(g.get("noisy_jobs")) and int(g["noisy_jobs"]) > 0:
        marks.append(notes.mark("noisy job: a job's median is out of line with the others"))
    return "".join(marks)


def _check_choice(value, allowed, what: str, flag: str) -> None:
    if value is not None and value not in allowed:
        raise PqsimdError(f"no {what} {value!r} in this study; {flag} one of: {', '.join(allowed) or 'none'}")


def show_study(directory, metric: str | None = None, stage: str | None = None,
               console: Console | None = None) -> Study:
    """Print the study's results: per parameter set, op and variant, median, speedup [CI], δ, p, verdict."""
    study = load_study(Path(directory))
    con = _console(console)
    _check_choice(metric, study.metrics, "metric", "--metric")
    stages = sorted(study.comparisons["stage"].dropna().unique()) if "stage" in study.comparisons.columns else []
    _check_choice(stage, stages, "stage", "--stage")
    metric = metric or study.primary_metric
    notes = _Footnotes()
    median_ci = _median_cis(study, metric)
    unit = style.METRIC_UNITS.get(metric, metric)
    threshold = study.get("threshold")
    for scheme in study.schemes:
        title = f"{style.scheme_label(scheme)} · {style.METRIC_TITLES.get(metric, metric)}"
        if stage:
            title += f" · stage {style.STAGE_LABELS.get(stage, stage)}"
        t = Table(title=title, title_justify="left", header_style="bold", box=None, pad_edge=False)
        spread = "median ± 95% CI" if median_ci is not None else "median ± MAD"
        for col, just in (("op", "left"), ("variant", "left"), (f"{spread} ({unit}/call)", "right"),
                          ("vs", "left"), ("speedup [95% CI]", "right"), ("δ", "right"), ("p (Holm)", "right"),
                          ("verdict", "left")):
            t.add_column(col, justify=just, no_wrap=True)
        comp = study.comparisons
        comp = comp[(comp["metric"] == metric) & (comp["scheme"] == scheme)] if not comp.empty else comp
        ops = [o for o in style.sort_ops(comp["op"].unique())] if not comp.empty else []
        for i, op in enumerate(ops):
            for variant in study.variants:
                g = study.group(metric, scheme, op, variant)
                rows = comp[(comp["op"] == op) & (comp["variant"] == variant)]
                if stage:
                    rows = rows[rows["stage"] == stage]
                    if rows.empty:
                        continue
                    row = rows.iloc[0].to_dict()
                else:
                    st, base = OWN_STAGE.get(variant, ("extra", "ref"))
                    if variant == "refo0":
                        row = None
                    else:
                        pick = rows[rows["baseline"] == base]
                        if pick.empty and not rows.empty and base not in study.variants:
                            # its own stage's baseline is not in the study: show what the study has
                            pick = rows.assign(_c=rows.get("stage", pd.Series("", index=rows.index)) != "cumulative")
                            pick = pick.sort_values("_c", kind="stable")
                        row = pick.iloc[0].to_dict() if not pick.empty else {}
                    if g is None and not row:
                        continue
                med = fmt.NA
                if g:
                    med = fmt.quantity(g.get("median"))
                    m = g.get("median")
                    if median_ci is not None:
                        lo, hi = median_ci.get((scheme, op, variant), (math.nan, math.nan))
                        if not (fmt.is_missing(lo) or fmt.is_missing(m)) and m:
                            half = max(hi - m, m - lo)
                            # near zero (the empty op) a relative spread means nothing: give ticks
                            med += f" ± {fmt.quantity(half)}" if abs(m) < 1 else f" ± {100 * half / abs(m):.1f}%"
                        else:
                            med += " ± n/a"
                    elif not fmt.is_missing(g.get("mad")) and not fmt.is_missing(m) and m:
                        med += f" ± {100 * float(g['mad']) / float(m):.1f}%"
                name = Text(style.op_label(op) if variant == study.variants[0] or stage else "")
                var_text = Text(variant + _group_marks(g, notes), style=f"bold {style.variant_colour(variant)}")
                if row is None:  # the floor: nothing to compare against
                    t.add_row(name, var_text, med, "", "", "", "", "")
                    continue
                lo, hi = _ci_of(row)
                sp = fmt.times(row.get("speedup"))
                ci = fmt.ci(lo, hi)
                if row.get("hci_reliable") is not None and str(row.get("hci_reliable")).lower() == "false":
                    ci += notes.mark("fewer than 5 jobs: hierarchical CI unreliable")
                t.add_row(name, var_text, med, row.get("baseline", "") or "",
                          sp if sp == fmt.NA else f"{sp} {ci}", fmt.delta(row.get("cliffs_delta")),
                          fmt.pval(row.get("p_holm")), _verdict(row.get("verdict") if row else None))
            if i < len(ops) - 1 and not stage:
                t.add_row()
        con.print(t)
        con.print()
    for w in study.summary.get("warnings") or []:
        notes.mark(str(w.get("message", w)) if isinstance(w, dict) else str(w))
    if notes.items:
        for i, n in enumerate(notes.items):
            mark = MARKS[i] if i < len(MARKS) else f"[{i + 1}]"
            con.print(f"{mark} {n}", style="dim")
    fam = study.summary.get("family") if isinstance(study.summary.get("family"), dict) else {}
    con.print(Text(
        f"speedup = median(baseline)/median(variant) of spin medians; CI = hierarchical bootstrap where available; "
        f"δ = Cliff's delta; p = Holm-adjusted over {fam.get('size', 'n/a')} comparisons; verdict needs p < "
        f"{study.get('alpha', default='α')} and the CI outside ±{fmt.pct(threshold) if threshold is not None else 'n/a'}.",
        style="dim"))
    return study


def _median_cis(study: Study, metric: str, n_boot: int = 1000) -> dict | None:
    """Hierarchical 95% CI of each group's median (jobs, then spins), from DIR/raw; None without raw data."""
    try:
        from ..analyze.bootstrap import Sample, hierarchical_medians, percentile_ci, rng_for
        from ..analyze.load import load_spins

        spins = load_spins(study.directory).spins
    except (PqsimdError, ImportError):
        return None
    spins = spins[spins["metric"] == metric]
    seed = int(study.get("seed", default=0) or 0)
    out = {}
    for key, d in spins.groupby(["scheme", "op", "variant"], observed=True, sort=False):
        key = tuple(str(k) for k in key)
        sample = Sample.from_jobs(d["value"].to_numpy(float), d["job"].astype(str).to_numpy())
        out[key] = percentile_ci(hierarchical_medians(sample, n_boot, rng_for(seed, "show", metric, *key)))
    return out


# -- compare ---------------------------------------------------------------------------------

def _spins(directory: Path, warnings: list[str]) -> pd.DataFrame | None:
    try:
        from ..analyze.load import load_spins

        return load_spins(directory).spins
    except PqsimdError as e:
        warnings.append(f"{directory}: {e} (CIs n/a)")
    except ImportError as e:
        warnings.append(f"the analysis package is unavailable ({e}); CIs n/a")
    return None


def _by_group(spins: pd.DataFrame | None) -> dict:
    if spins is None or spins.empty:
        return {}
    out = {}
    for key, d in spins.groupby(["metric", "scheme", "op", "variant"], observed=True, sort=False):
        out[tuple(str(k) for k in key)] = (d["value"].to_numpy(float), d["job"].astype(str).to_numpy())
    return out


def _ratio_ci(a, b, n_boot: int, seed: int, key: tuple) -> tuple[float, float]:
    """Hierarchical bootstrap CI of median(B)/median(A): jobs, then spins, each study resampled independently."""
    from ..analyze.bootstrap import Sample, hierarchical_medians, percentile_ci, rng_for

    sa, sb = Sample.from_jobs(*a), Sample.from_jobs(*b)
    ra = hierarchical_medians(sa, n_boot, rng_for(seed, "compare-a", *key))
    rb = hierarchical_medians(sb, n_boot, rng_for(seed, "compare-b", *key))
    if (ra <= 0).any() or (rb <= 0).any():  # below timer resolution: a ratio means nothing
        return math.nan, math.nan
    return percentile_ci(rb / ra)


def _job_p(a, b) -> float:
    from scipy import stats

    def job_medians(x):
        vals, jobs = x
        s = pd.Series(vals).groupby(jobs).median()
        return np.log(s[s > 0].to_numpy())

    ja, jb = job_medians(a), job_medians(b)
    if len(ja) < 2 or len(jb) < 2:
        return math.nan
    if np.ptp(np.concatenate([ja, jb])) == 0:
        return math.nan
    return float(stats.ttest_ind(ja, jb, equal_var=False).pvalue)


def compare_table(dir_a, dir_b, n_boot: int | None = None, seed: int | None = None) -> tuple[pd.DataFrame, dict]:
    """One row per (metric, scheme, op, variant) of either study: ratio B/A with CI, p, verdict."""
    a, b = load_study(check_study_dir(Path(dir_a))), load_study(check_study_dir(Path(dir_b)))
    warnings: list[str] = []
    alpha = float(a.get("alpha", default=0.05))
    thr = float(a.get("threshold", default=0.02))
    n_boot = int(n_boot or min(int(a.get("n_boot", "B", default=2000)), 2000))
    seed = int(seed if seed is not None else a.get("seed", default=0) or 0)
    keys = ["metric", "scheme", "op", "variant"]
    ga = a.groups.set_index(keys) if not a.groups.empty else pd.DataFrame()
    gb = b.groups.set_index(keys) if not b.groups.empty else pd.DataFrame()
    def _idx(seq, x):
        return seq.index(x) if x in seq else len(seq)

    all_keys = sorted(set(ga.index) | set(gb.index), key=lambda k: (
        k[0] != "ticks", k[0], _idx(style.scheme_order(), k[1]), k[1], _idx(style.op_order(), k[2]), k[2],
        _idx(list(style.VARIANT_COLOURS), k[3]), k[3]))
    spins_a, spins_b = _by_group(_spins(a.directory, warnings)), _by_group(_spins(b.directory, warnings))
    rows = []
    for key in all_keys:
        ma = float(ga.loc[key, "median"]) if key in ga.index else math.nan
        mb = float(gb.loc[key, "median"]) if key in gb.index else math.nan
        det = bool(key in ga.index and str(ga.loc[key].get("deterministic", False)).lower() == "true"
                   and key in gb.index and str(gb.loc[key].get("deterministic", False)).lower() == "true")
        ratio = mb / ma if ma and not (math.isnan(ma) or math.isnan(mb)) else math.nan
        lo = hi = p = math.nan
        note = ""
        if key not in ga.index or key not in gb.index:
            note = "only in A" if key in ga.index else "only in B"
        elif det:
            lo = hi = ratio
        elif not (ma > 0 and mb > 0):
            note = "median ≤ 0: below timer resolution"
        elif key in spins_a and key in spins_b:
            lo, hi = _ratio_ci(spins_a[key], spins_b[key], n_boot, seed, key)
            p = _job_p(spins_a[key], spins_b[key])
            if math.isnan(lo):
                note = "resample ≤ 0: below timer resolution"
        else:
            note = "no raw spin medians"
        rows.append(dict(zip(keys, key)) | {"median_a": ma, "median_b": mb, "ratio": ratio, "ci_low": lo,
                                             "ci_high": hi, "job_p": p, "deterministic": det, "note": note})
    df = pd.DataFrame(rows, columns=keys + ["median_a", "median_b", "ratio", "ci_low", "ci_high", "job_p",
                                            "deterministic", "note"])
    df["p_holm"] = np.nan
    fam = df["job_p"].notna()
    if fam.any():
        p = df.loc[fam, "job_p"].to_numpy()
        order = np.argsort(p)
        m = len(p)
        adj = np.minimum(1.0, np.maximum.accumulate(p[order] * (m - np.arange(m))))
        out = np.empty(m)
        out[order] = adj
        df.loc[fam, "p_holm"] = out

    def verdict(r) -> str:
        if fmt.is_missing(r["ratio"]) or (fmt.is_missing(r["ci_low"]) and not r["deterministic"]):
            return fmt.NA
        sig = r["deterministic"] or (not fmt.is_missing(r["p_holm"]) and r["p_holm"] < alpha)
        if sig and r["ci_low"] > 1 + thr:
            return "slower"
        if sig and r["ci_high"] < 1 / (1 + thr):
            return "faster"
        return "~"

    df["verdict"] = df.apply(verdict, axis=1) if len(df) else pd.Series(dtype=str)
    meta = {"a": a, "b": b, "alpha": alpha, "threshold": thr, "n_boot": n_boot, "warnings": warnings,
            "family": int(fam.sum())}
    return df, meta


def _who(study: Study) -> str:
    m = study.manifest.get("machine") if isinstance(study.manifest.get("machine"), dict) else {}
    bits = [str(m[k]) for k in ("hostname", "cpu_model") if m.get(k)]
    return f"{study.directory}" + (f" ({', '.join(bits)})" if bits else "")


def _compare_row(t: Table, r, prev) -> None:
    ratio = fmt.num(r["ratio"])
    cell = ratio if ratio == fmt.NA else f"{ratio} {fmt.ci(r['ci_low'], r['ci_high'])}"
    t.add_row(style.op_label(r["op"]) if r["op"] != prev else "",
              Text(r["variant"], style=f"bold {style.variant_colour(r['variant'])}"),
              fmt.quantity(r["median_a"]), fmt.quantity(r["median_b"]), cell, fmt.pval(r["p_holm"]),
              _verdict(r["verdict"]), Text(r["note"], style="dim"))


def compare_studies(dir_a, dir_b, console: Console | None = None) -> pd.DataFrame:
    """Print the same (metric, scheme, op, variant) across two studies: B/A with a hierarchical CI and verdict."""
    df, meta = compare_table(dir_a, dir_b)
    con = _console(console)
    con.print(f"A = {_who(meta['a'])}")
    con.print(f"B = {_who(meta['b'])}")
    if df.empty:
        con.print("the studies have no (metric, scheme, op, variant) groups: n/a")
        return df
    for (metric, scheme), d in df.groupby(["metric", "scheme"], sort=False):
        unit = style.METRIC_UNITS.get(metric, metric)
        t = Table(title=f"{style.scheme_label(scheme)} · {style.METRIC_TITLES.get(metric, metric)}",
                  title_justify="left", header_style="bold", box=None, pad_edge=False)
        for col, just in (("op", "left"), ("variant", "left"), (f"A median ({unit}/call)", "right"),
                          (f"B median ({unit}/call)", "right"), ("B/A [95% CI]", "right"), ("p (Holm)", "right"),
                          ("verdict (B vs A)", "left"), ("", "left")):
            t.add_column(col, justify=just, no_wrap=True)
        prev = None
        for op, dop in d.groupby("op", sort=False):
            note = dop["note"].iloc[0]
            if len(dop) > 1 and note in ("only in A", "only in B") and (dop["note"] == note).all():
                # a whole op missing from one study: one explicit n/a row, not one per variant
                t.add_row(style.op_label(op), Text("all", style="dim"),
                          "" if note == "only in A" else fmt.NA, fmt.NA if note == "only in A" else "",
                          fmt.NA, fmt.NA, _verdict(fmt.NA), Text(note, style="dim"))
                continue
            for _, r in dop.iterrows():
                _compare_row(t, r, prev)
                prev = r["op"]
        con.print(t)
        con.print()
    for w in meta["warnings"]:
        con.print(f"warning: {w}", style="yellow")
    con.print(Text(
        f"B/A = median(B)/median(A) of spin medians (> 1: B takes longer); 95% CI: hierarchical bootstrap "
        f"(jobs, then spins; each study resampled independently, B = {meta['n_boot']}); p = Welch t on log job "
        f"medians, Holm-adjusted over {meta['family']} rows; verdict needs p < {meta['alpha']} and the CI outside "
        f"±{fmt.pct(meta['threshold'])}; deterministic metrics compare exactly.", style="dim"))
    return df
