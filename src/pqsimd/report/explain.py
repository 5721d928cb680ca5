"""`pqsimd explain DIR --scheme S --op OP [--variants a,b]`: why one op's variants differ, in a few
lines, from DIR/results/ only (the mix tables of analyze/mix.py, groups, summary.json):
instructions per call per variant, the classes that account for most of the difference, the
vector width used, time and ticks per instruction, llvm-mca's estimate per CPU model beside the
measured time, the likely reason for a slowdown (per call or per instruction) where there is one,
and, with --metric sim, each variant's bottleneck with the simulated events behind it (report/why.py).
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from ..errors import PqsimdError, command, did_you_mean
from . import fmt
from ..results import counted_by, counting_tool, read_summary, read_table
from ..studydir import StudyDir
from ..metrics import unit_of
from ..mixreading import OpMix, class_shift, slow_candidates
from .. import metrics as metrics_mod

TPI_FLAG = 1.25  # ticks per instruction this much above the baseline's: a per-instruction slowdown
LABEL_W = 20


def _read(results: Path, name: str) -> pd.DataFrame:
    return read_table(results.parent, name)


def _summary(results: Path) -> dict:
    return read_summary(results.parent)


def _q(v) -> str:
    """A count per call: exact integers as integers (20,674), else three significant digits."""
    if fmt.is_missing(v):
        return fmt.NA
    v = float(v)
    return f"{int(round(v)):,}" if abs(v - round(v)) < 1e-9 else fmt.quantity(v)


def _signed(v) -> str:
    return ("+" if v > 0 else "−") + _q(abs(v))


def _ratio_words(a: float, b: float, fewer: str, more: str) -> str:
    if not (a > 0 and b > 0):
        return ""
    r = a / b
    return f"{fmt.times(r)} {fewer}" if r >= 1 else f"{fmt.times(1 / r)} {more}"


class _Data:
    def __init__(self, directory: Path):
        self.directory = Path(directory)
        results = StudyDir(self.directory).results_dir
        if not results.is_dir():
            raise PqsimdError(f"no results in {results}; run {command('analyze', self.directory)} first")
        self.mix = _read(results, "mix")
        self.bottleneck = _read(results, "bottleneck")
        self.sim = _read(results, "sim")
        self.summary = _summary(results)
        if self.mix.empty and self.bottleneck.empty:
            if StudyDir(self.directory).analysed_elsewhere():  # growing it here would time this machine into it
                raise PqsimdError(f"{results} holds no instruction mix, and {self.directory}'s measurements were "
                                  f"analysed elsewhere (no raw/ of them here), so it cannot be grown here; measure "
                                  f"the mix on this machine in a new directory: "
                                  f"{command('run', 'NEW_DIR', '--metric', 'mix')} with the study's --schemes")
            raise PqsimdError(f"{results} holds no instruction mix; add it to the study with "
                              f"{command('run', self.directory, '--metric', 'mix')}, then "
                              f"{command('analyze', self.directory)}")
        self.ops = _read(results, "mix_ops")
        self.mca = _read(results, "mca")
        self.mcm = _read(results, "mca_mnemonics")
        self.groups = _read(results, "groups")
        self.comparisons = _read(results, "comparisons")
        self.hash_share = _read(results, "hash_share")
        self.kernel_share = _read(results, "kernel_share")
        self.per_unit = _read(results, "per_unit")
        self.hazards = _read(results, "hazards")

    def comparison(self, scheme: str, op: str, base: str, variant: str, compiler: str) -> dict:
        """The ticks comparison `show` and the report print for base → variant (its speedup, interval and
        verdict: the study's one number for it), or {} when the study has none (a pair off the chain)."""
        c = self.comparisons
        if c.empty or not {"metric", "baseline", "variant", "compiler"} <= set(c.columns):
            return {}
        m = ((c["metric"] == metrics_mod.TIME) & (c["scheme"] == scheme) & (c["op"] == op) & (c["baseline"] == base)
             & (c["variant"] == variant) & (c["compiler"] == compiler))
        if "baseline_compiler" in c.columns:
            m &= c["baseline_compiler"].fillna(compiler) == compiler
        return c[m].iloc[0].to_dict() if m.any() else {}

    def instructions_median(self, scheme: str, op: str, variant: str, compiler: str) -> float | None:
        """A build's instructions per call from the instruction records (their median), or None."""
        g = self.groups
        if g.empty or not {"metric", "median"} <= set(g.columns):
            return None
        m = ((g["metric"] == metrics_mod.COUNT) & (g["scheme"] == scheme) & (g["op"] == op) & (g["variant"] == variant)
             & (g["compiler"] == compiler))
        return float(g[m].iloc[0]["median"]) if m.any() and not fmt.is_missing(g[m].iloc[0]["median"]) else None

    def median_halfwidth(self, scheme: str, op: str, variant: str, compiler: str) -> float | None:
        """The relative half-width of a build's time median's interval (as `show` prints it beside the
        median), or None when the study has none."""
        g = self.groups
        if g.empty or not {"metric", "median", "median_ci_low", "median_ci_high"} <= set(g.columns):
            return None
        m = ((g["metric"] == metrics_mod.TIME) & (g["scheme"] == scheme) & (g["op"] == op) & (g["variant"] == variant)
             & (g["compiler"] == compiler))
        if not m.any():
            return None
        r = g[m].iloc[0]
        med, lo, hi = (float(r[c]) for c in ("median", "median_ci_low", "median_ci_high"))
        if not all(map(math.isfinite, (med, lo, hi))) or med <= 0:
            return None
        return max(hi - med, med - lo) / med

    def family(self, scheme: str) -> dict:
        for f in (self.summary.get("families") or {}).values():
            if scheme in (f.get("schemes") or {}):
                return f
        return {}

    def chain_pairs(self) -> list[tuple[str, str]]:
        ch = self.summary.get("chain") or {}
        return [(s["from"], s["to"]) for s in reversed(ch.get("steps", []))] + \
               [(s["from"], s["to"]) for s in ch.get("also", [])]

    def chain_order(self) -> list[str]:
        ch = self.summary.get("chain") or {}
        st = ch.get("steps", [])
        return ([st[0]["from"]] + [s["to"] for s in st]) if st else []


def _choose(d: _Data, scheme: str, op: str, variants: list[str] | None, compiler: str | None):
    m = d.mix
    schemes = sorted(m["scheme"].astype(str).unique())
    if scheme not in schemes:
        raise PqsimdError(f"scheme {scheme!r} has no instruction mix in {d.directory}; it has: {', '.join(schemes)}"
                          f"{did_you_mean(scheme, schemes)}")
    ms = m[m["scheme"] == scheme]
    ops = list(dict.fromkeys(ms["op"].astype(str)))
    if op not in ops:
        raise PqsimdError(f"op {op!r} has no instruction mix for {scheme}; ops with one: {', '.join(ops)}")
    mo = ms[ms["op"] == op]
    comps = list(dict.fromkeys(mo["compiler"].astype(str)))
    listed = [c for c in (d.summary.get("study") or {}).get("compilers") or [] if c in comps]
    if compiler is None:
        compiler = (listed or comps)[0]
    elif compiler not in comps:
        raise PqsimdError(f"compiler {compiler!r} has no instruction mix for {scheme} {op}; it has: {', '.join(comps)}")
    mo = mo[mo["compiler"] == compiler]
    present = list(dict.fromkeys(mo["variant"].astype(str)))
    if variants:
        bad = [v for v in variants if v not in present]
        if bad:
            raise PqsimdError(f"variant {bad[0]!r} has no instruction mix for {scheme} {op} ({compiler}); "
                              f"it has: {', '.join(present)}{did_you_mean(bad[0], present)}")
        if len(variants) < 2:
            raise PqsimdError(f"--variants needs two variants (the baseline first), e.g. --variants {','.join(present[:2])}")
        chosen = list(dict.fromkeys(variants))
        if len(chosen) < 2:
            raise PqsimdError(f"--variants names {chosen[0]} twice; name two different variants (the baseline first), "
                              f"e.g. --variants {','.join(present[:2])}")
    else:
        pair = next(((a, b) for a, b in d.chain_pairs() if a in present and b in present), None)
        if pair:
            chosen = list(pair)
        else:
            order = d.chain_order()
            chosen = sorted(present, key=lambda v: (order.index(v) if v in order else len(order), v))
            if len(chosen) < 2:
                raise PqsimdError(f"{scheme} {op} ({compiler}) has the mix of one variant ({chosen[0]}); "
                                  f"nothing to compare")
    return compiler, chosen


def _factor(mca: pd.DataFrame) -> str:
    f = mca["disagree_factor"].dropna() if "disagree_factor" in mca.columns else []
    return fmt.num(f.iloc[0]) if len(f) else fmt.NA


def _check_scheme(directory: Path, scheme: str) -> None:
    """An unknown --scheme is named as such (with the nearest one) before anything says what the
    results lack: a typo is not told to measure a mix."""
    known = [s for f in (read_summary(directory).get("families") or {}).values() if isinstance(f, dict)
             for s in (f.get("schemes") or {})]
    if known and scheme not in known:
        raise PqsimdError(f"no parameter set {scheme!r} in {directory}; it has: {', '.join(known)}"
                          f"{did_you_mean(scheme, known)}")


def explain_op(directory: Path, scheme: str, op: str, variants: list[str] | None = None,
               compiler: str | None = None) -> str:
    if StudyDir(directory).results_dir.is_dir():
        _check_scheme(Path(directory), scheme)
    d = _Data(directory)
    if d.mix.empty:  # --metric sim without mix: the bottlenecks and simulated events alone
        from .why import explain_lines

        return "\n".join(explain_lines(d.bottleneck, d.sim, d.family(scheme), scheme, op, variants, compiler,
                                        d.chain_order(), directory))
    compiler, chosen = _choose(d, scheme, op, variants, compiler)
    fam = d.family(scheme)
    label = (fam.get("labels") or {}).get(op, op)
    slabel = ((fam.get("schemes") or {}).get(scheme) or {}).get("label", scheme)
    sel = (d.mix["scheme"] == scheme) & (d.mix["op"] == op) & (d.mix["compiler"] == compiler)
    mx = d.mix[sel]
    mn = mx[mx["level"] == "mnemonic"]
    om = OpMix.of(d.mix, d.ops, scheme, op, compiler, chosen)  # the one reading of the mix (mixreading.py)
    labels, total, counts = om.labels, om.total, om.counts

    def opsrow(v):
        if d.ops.empty:
            return {}
        r = d.ops[(d.ops["scheme"] == scheme) & (d.ops["op"] == op) & (d.ops["variant"] == v) & (d.ops["compiler"] == compiler)]
        return r.iloc[0].to_dict() if len(r) else {}

    info = {v: opsrow(v) for v in chosen}
    base = chosen[0]
    lines = [f"{slabel} · {label} ({op}) · {compiler}: " + " → ".join(chosen) + f"   [instruction mix per call: {counters_text(d, scheme, compiler, chosen)}, exact]"]

    def row(name: str, text: str):
        lines.append(f"  {name:<{LABEL_W}}{text}")

    # the instruction records' medians where the study counted them (the number show and the explanations
    # give); an op that draws fresh randomness per call differs from the mix run's one draw, and says so
    counted = {v: d.instructions_median(scheme, op, v, compiler) for v in chosen}
    shown = {v: counted[v] if counted[v] is not None else total[v] for v in chosen}
    varies = [v for v in chosen if counted[v] is not None and abs(counted[v] - total[v]) > 0.5]
    ins = " · ".join(f"{v} {_q(shown[v])}" for v in chosen)
    rel = "; ".join(f"{v}: {_ratio_words(shown[base], shown[v], 'fewer', 'more')}" for v in chosen[1:]
                    if _ratio_words(shown[base], shown[v], 'fewer', 'more'))
    if varies:
        rel = (rel + "; " if rel else "") + (f"varies per call: medians of the instruction records; the mix below is "
                                             f"one draw ({' · '.join(f'{v} {_q(total[v])}' for v in chosen)})")
    row("instructions/call", ins + (f"  ({rel})" if rel else ""))
    hs = hash_share_text(d.hash_share, scheme, op, compiler, chosen)
    if hs:
        row("hash share", hs)
    ks = kernel_share_text(d.kernel_share, scheme, op, compiler, chosen)
    if ks:
        row("kernels", ks)
    pu = (fam.get("views") or {}).get("per_unit") or {}
    if op in (pu.get("ops") or {}):
        row(f"per {pu['unit']}", per_unit_text(d.per_unit, scheme, compiler, unit_of(metrics_mod.TIME, d.summary.get("isa"))))

    for v in chosen[1:]:
        dtot = total[base] - total[v]
        saved, added = class_shift(om, base, v)
        parts = []
        if saved:
            parts.append(f"{v} saves " + " · ".join(
                f"{labels.get(c, c)} {_signed(-x)}" + (f" ({fmt.pct(x / dtot)})" if 0 < x <= dtot else "") for c, x in saved))
        if added:
            parts.append("adds " + " · ".join(f"{labels.get(c, c)} {_signed(x)}" for c, x in added))
        row("by class" if v == chosen[1] else "", "; ".join(parts) or "the same mix")

    def width_text(v):
        sub = mn[mn["variant"] == v]
        vec = sub[sub["width"].fillna(0) > 0]
        if total[v] <= 0:
            return f"{v} none"
        if vec.empty:
            return f"{v} scalar only"
        by = vec.groupby("width")["count"].sum().sort_values(ascending=False)
        main = ", ".join(f"{int(w)}-bit {fmt.pct(n / by.sum())}" for w, n in by.items() if n > 0)
        return f"{v} {fmt.pct(by.sum() / total[v])} vector ({main})"

    row("vector width", " · ".join(width_text(v) for v in chosen))

    bmi = mn[mn["class"] == "bmi"]
    if not bmi.empty and bmi["count"].sum() > 0:
        txt = []
        for v in chosen:
            b = bmi[bmi["variant"] == v].groupby("mnemonic")["count"].sum().sort_values(ascending=False)
            b = b[b > 0]
            txt.append(f"{v} " + (" · ".join(f"{m} {_q(n)}" for m, n in b.items()) if len(b) else "none"))
        row(labels.get("bmi", "bmi"), "; ".join(txt) + " per call")

    ticks = {v: info[v].get("ticks") for v in chosen}
    timed = all(not fmt.is_missing(ticks[v]) for v in chosen)
    tpi = {v: info[v].get("ticks_per_instruction") for v in chosen}
    comps = {v: d.comparison(scheme, op, base, v, compiler) for v in chosen[1:]}
    # a pair the study compares the other way round (v → base) is that comparison, inverted, for the reasons
    reasons_comp = {v: comps[v] or _inverted(d.comparison(scheme, op, v, base, compiler)) for v in chosen[1:]}
    if timed:
        def with_interval(v):
            half = d.median_halfwidth(scheme, op, v, compiler)
            return f"{v} {_q(ticks[v])}" + (f" ± {fmt.small_pct(half)}" if half is not None else "")
        t = " · ".join(with_interval(v) for v in chosen)
        tp = " → ".join(fmt.num(tpi[v]) for v in chosen)
        norm = info[chosen[-1]].get("family_norm_tpi")
        row(f"time ({unit_of(metrics_mod.TIME, d.summary.get('isa'))})", f"{t} per call (each build's median); ticks/instruction {tp}"
            + (f" (family norm for {chosen[-1]}: {fmt.num(norm)})" if not fmt.is_missing(norm) else ""))
        row("speedup", "; ".join(_speedup_text(comps[v], ticks[base], ticks[v], base, v,
                                               d.comparison(scheme, op, v, base, compiler)) for v in chosen[1:]))
    else:
        row("time", "not measured in this study (run with --metric ticks,instructions,mix for ticks per instruction)")

    mca = d.mca[(d.mca["scheme"] == scheme) & (d.mca["op"] == op) & (d.mca["compiler"] == compiler)] if not d.mca.empty else d.mca
    host = None
    if not mca.empty:
        cpus = list(dict.fromkeys(mca["cpu"].astype(str)))
        host = next((h for h in mca["host_cpu"].dropna().astype(str)), None)
        tool = next((t for t in mca["tool"].dropna().astype(str)), "llvm-mca")
        per = []
        marked = False
        for cpu in cpus:
            vals = []
            for v in chosen:
                r = mca[(mca["cpu"] == cpu) & (mca["variant"] == v)]
                if not len(r):
                    vals.append(fmt.NA)
                    continue
                off = str(r.iloc[0]["agreement"]) in ("model lower", "model higher")
                marked |= off
                vals.append(fmt.quantity(r.iloc[0]["predicted_cycles_all"]) + ("!" if off else ""))
            per.append(f"{cpu}{' (host)' if cpu == host else ''} {' → '.join(vals)}")
        meas = []
        for v in chosen:
            r = mca[mca["variant"] == v]
            meas.append(fmt.quantity(r.iloc[0]["measured_cycles"]) if len(r) else fmt.NA)
        measured = f" (measured est. {' → '.join(meas)})" if any(m != fmt.NA for m in meas) else ""
        row("cost model", f"{tool}, core cycles/call{measured}: " + " · ".join(per))
        dis = mca[mca["variant"].isin(chosen) & mca["agreement"].isin(["model lower", "model higher"])]
        if marked:
            note = "! = more than ×{} away from the measured time".format(_factor(mca))
            if host and len(dis[dis["cpu"] == host]):
                r = dis[dis["cpu"] == host].iloc[0]
                note += (f"; this host's model ({host}) disagrees for {r['variant']}: "
                         f"{fmt.times(r['predicted_vs_measured'])} the measured cycles")
            row("", note)
    else:
        row("cost model", "none (llvm-mca was not run: --metric mix with llvm-mca installed, --mca-cpu CPU,...)")

    if not d.bottleneck.empty:
        from .why import bottleneck_rows

        for name, text in bottleneck_rows(d.bottleneck, scheme, op, chosen, compiler):
            row(name, text)
    seen = set()
    for v in chosen[1:]:
        for name, text in _reason(d, scheme, op, compiler, base, v, total, counts, labels, mn, ticks, tpi, timed, mca, host,
                                  reasons_comp.get(v) or {}):
            if (name, text) not in seen:
                row(name if not any(n == name for n, _ in seen) else "", text)
                seen.add((name, text))
    ex = _read(StudyDir(d.directory).results_dir, "explanations")
    if not ex.empty:  # the report's sentence for this comparison, when it explains one (a headline or outlier)
        hit = ex[(ex["scheme"] == scheme) & (ex["op"] == op) & (ex["compiler"] == compiler) & (ex["base"] == base)
                 & ex["variant"].isin(chosen[1:])]
        for r in hit.itertuples(index=False):
            row("why", f"[{r.kind}] {r.sentence}")
    return "\n".join(lines)


def _cand_text(g: dict, v: str) -> str:
    names = ", ".join(f"{m} ({_q(a)}/call)" for m, a in g["names"])
    fast = (f" ({_q(g['fast_latency'])} on {', '.join(g['fast'])})" if g["fast"] and not fmt.is_missing(g["fast_latency"])
            else "")
    est = (f": {v}'s estimate is {fmt.times(g['factor'])} higher there" if not fmt.is_missing(g["factor"]) else "")
    return f"{names}: llvm-mca latency {_q(g['latency'])} on {', '.join(g['slow'])}{fast}{est}"


def _inverted(comp: dict) -> dict:
    """A comparison read the other way round: its speedup and interval inverted, faster and slower swapped."""
    if not comp or fmt.is_missing(comp.get("speedup")) or not float(comp["speedup"]) > 0:
        return {}
    lo, hi = comp.get("ci_low"), comp.get("ci_high")
    swap = {"faster": "slower", "slower": "faster"}
    return {**comp, "speedup": 1 / float(comp["speedup"]),
            "ci_low": 1 / float(hi) if not fmt.is_missing(hi) and float(hi) > 0 else float("nan"),
            "ci_high": 1 / float(lo) if not fmt.is_missing(lo) and float(lo) > 0 else float("nan"),
            "verdict": swap.get(str(comp.get("verdict")), comp.get("verdict"))}


def _speedup_text(comp: dict, tb, tv, base: str, v: str, reverse: dict | None = None) -> str:
    """base → v's speedup as `show` and the report print it (the comparison's estimate, interval and
    verdict); where the study compares the pair the other way round (v → base), that comparison, said so;
    where it compares neither, the ratio of the two medians, labelled as that."""
    from ..model import medians_quotient_outside, speed_words

    sp = comp.get("speedup")
    if not fmt.is_missing(sp):
        lo, hi = comp.get("ci_low"), comp.get("ci_high")
        ci = f" {fmt.ci(lo, hi)}" if not (fmt.is_missing(lo) or fmt.is_missing(hi)) else ""
        text = f"{v} {speed_words(float(sp), comp.get('verdict'), fmt.times, ci)}"
        q = medians_quotient_outside(comp)
        if q is not None:  # the reader who divides the medians above is told why that number differs
            text += (f" (the two medians, divided, give {fmt.times(q)}, outside the interval: each is its own "
                     f"build's typical layout, the speedup the paired copies' — docs/methods.md)")
        return text
    rsp = (reverse or {}).get("speedup")
    if not fmt.is_missing(rsp):
        lo, hi = reverse.get("ci_low"), reverse.get("ci_high")
        ci = f" {fmt.ci(lo, hi)}" if not (fmt.is_missing(lo) or fmt.is_missing(hi)) else ""
        return (f"the study compares them the other way round, {v} → {base}: {base} "
                f"{speed_words(float(rsp), reverse.get('verdict'), fmt.times, ci)} (--variants {v},{base} reads it so)")
    return f"{v}: {fmt.times(tb / tv)} (the ratio of the two medians: the study compares no such pair)" \
        if tb and tv else f"{v}: {fmt.NA}"


def _reason(d: _Data, scheme, op, compiler, base, v, total, counts, labels, mn, ticks, tpi, timed, mca,
            host, comp: dict | None = None) -> list[tuple[str, str]]:
    """The likely reason for a slowdown (per call, or per instruction) from the data: instructions
    the variant adds that the cost model of this host makes slow, else the shift of classes and the
    model's instructions per cycle; instructions other CPU models make slow on a line of their own.
    Slower or the same: the comparison's verdict where the study has it (the number `show` prints; `~` and
    withheld are neither), else the two medians against the threshold."""
    thr = float(d.summary.get("threshold") or 0.0)  # a difference inside ±threshold is no difference
    verdict = str((comp or {}).get("verdict") or "")
    if timed and verdict and verdict != "n/a":  # the study's verdict, whatever it is: `~` and withheld are no slowdown
        same, slower = verdict == "same", verdict == "slower"
    else:
        same = timed and ticks[base] > 0 and abs(ticks[v] / ticks[base] - 1) <= thr
        slower = timed and not same and ticks[v] > ticks[base]
    speed = float((comp or {}).get("speedup") or math.nan)
    tpi_up = timed and not same and not fmt.is_missing(tpi[base]) and not fmt.is_missing(tpi[v]) and tpi[v] > TPI_FLAG * tpi[base]
    cands = slow_candidates(d.mcm, mca, d.mix, scheme, op, compiler, base, v)
    on_host = [g for g in cands if host in g["slow"]] if host else []
    elsewhere = [g for g in cands if g not in on_host]
    rows: list[tuple[str, str]] = []
    if slower:
        lead = (f"{v} is {fmt.times(1 / speed if speed > 0 else ticks[v] / ticks[base])} slower than {base}"
                + (f" although it executes {fmt.times(total[base] / total[v])} fewer instructions"
                   if total[v] and total[base] > total[v] else ""))
    elif tpi_up:
        lead = f"{v} is faster but at {fmt.times(tpi[v] / tpi[base])} {base}'s ticks per instruction"
    else:
        lead = ""
    if lead:
        if on_host or (cands and not host):
            which = on_host or cands
            where = f"this host's model ({host})" if on_host else "a CPU model (this host's is not among them)"
            rows.append(("likely reason", f"{lead}: " + "; ".join(_cand_text(g, v) for g in which)
                         + f" — slow in {where}"))
            elsewhere = [g for g in elsewhere if g not in which]
        else:
            adds = sorted(((c, counts[v].get(c, 0.0) - counts[base].get(c, 0.0)) for c in counts[v]), key=lambda t: -t[1])
            adds = [(c, x) for c, x in adds if x > 0][:2]
            what = " and ".join(f"{labels.get(c, c)} (+{_q(x)})" for c, x in adds)
            bits = []
            if total[v] > total[base]:
                bits.append(f"it executes {fmt.times(total[v] / total[base])} the instructions" + (f" ({what})" if what else ""))
            elif adds:
                bits.append(f"it runs {what} instead")
            if tpi_up:
                bits.append(f"at {fmt.times(tpi[v] / tpi[base])} the ticks per instruction" if slower else "at a lower rate")
            text = lead + (": " + ", ".join(bits) if bits else "")
            ipc = _model_ipc(mca, host, base, v, total)
            if ipc:
                text += f"; {ipc}"
            rows.append(("likely reason", text))
    elif same:
        rows.append(("likely reason", f"none needed: {v} and {base} take the same time within ±{thr:.0%} "
                     f"({fmt.num(ticks[base])} → {fmt.num(ticks[v])} ticks)"))
    elif timed:
        from ..model import speed_words

        how = (speed_words(speed, verdict, fmt.times) if speed > 0 and verdict
               else _ratio_words(ticks[base], ticks[v], 'faster', 'slower'))
        is_ = "is" if verdict in ("", "faster") else f"against {base}:"  # `~`, withheld: a verdict's words, not a speed
        rows.append(("likely reason", f"{'no slowdown' if verdict in ('', 'faster') else 'no slowdown shown'}: {v} {is_} "
                     f"{how}, with "
                     f"{_ratio_words(total[base], total[v], 'fewer', 'more')} instructions (ticks per instruction "
                     f"{fmt.num(tpi[base])} → {fmt.num(tpi[v])})"))
    else:
        rows.append(("likely reason", "no time measured: the mix alone says where the instructions went (above)"))
    # hazards are weighed where time per instruction is the puzzle: a slowdown, or a rise the cost model misses
    model_off = bool(host) and not mca.empty and bool(((mca["cpu"] == host) & (mca["variant"] == v)
                                                        & mca["agreement"].isin(["model lower", "model higher"])).any())
    rows += _hazard_rows(d, scheme, op, compiler, base, v, ticks, total, tpi,
                         bool(lead) and timed and (slower or model_off))
    if elsewhere:
        rows.append(("slow elsewhere", "; ".join(_cand_text(g, v) for g in elsewhere)
                     + (f" — not slow in this host's model ({host})" if host else "")))
    return rows


HAZARD_WORDS = {"SFfail": "store-forwarding failures", "Alias4K": "4K-aliased loads", "SplitLd": "line-split loads",
                "SplitSt": "line-split stores", "SSEdirty": "SSE instructions with dirty upper YMM halves",
                "Transitions": "AVX-to-SSE transitions"}
ACCOUNTS = 0.5  # hazards worth at least this share of the excess ticks account for it


def _hazard_rows(d: _Data, scheme, op, compiler, base, v, ticks, total, tpi, slowed: bool) -> list[tuple[str, str]]:
    """The simulated hazards (results/hazards) of both builds per call, and where the variant is slow per
    instruction, whether the extra hazards' cycles (data/hazards.toml's penalties on the study's CPU)
    account for the ticks it takes beyond its instructions at the baseline's rate — or that none does."""
    h = d.hazards
    if h.empty or "hazard_cycles" not in h.columns:
        return [("hazards", "not simulated (store forwarding, 4K aliasing, split loads, AVX-SSE mixing): "
                 + command("run", d.directory, "--metric", metrics_mod.HAZARDS) + ", then "
                 + command("analyze", d.directory))] if slowed else []
    costed = [c[: -len("_cycles")] for c in h.columns if c.endswith("_cycles") and c != "hazard_cycles"]
    sub = h[(h["scheme"] == scheme) & (h["op"] == op) & (h["compiler"] == compiler)]
    got = {r["variant"]: r for r in sub.to_dict("records")}
    if base not in got or v not in got:
        missing = [x for x in (base, v) if x not in got]
        notes = [str(r["note"]) for r in h[(h["variant"].isin(missing)) & (h["compiler"] == compiler)].to_dict("records")
                 if r.get("note")]
        return [("hazards", f"{', '.join(missing)} not traced" + (f" ({notes[0]})" if notes else ""))] if slowed else []

    def events(r) -> str:
        seen = [f"{HAZARD_WORDS[e]} {_q(r[e])}" for e in costed if not fmt.is_missing(r[e]) and r[e] > 0]
        return f"{r['variant']} " + (" · ".join(seen) if seen else "none")

    rows = [("hazards", "; ".join(events(got[x]) for x in (base, v)) + " per call (simulated, "
             f"{int(got[v]['sb_entries'] or 0)}-store buffer, {int(got[v]['window'] or 0)}-instruction window)")]
    if not slowed or fmt.is_missing(got[v]["hazard_cycles"]) or fmt.is_missing(tpi[base]):
        return rows
    excess = ticks[v] - tpi[base] * total[v]  # ticks beyond the variant's instructions at the baseline's rate
    extra = {e: (got[v][f"{e}_cycles"] or 0) - (got[base][f"{e}_cycles"] or 0) for e in costed
             if not fmt.is_missing(got[v][f"{e}_cycles"])}
    top = max(extra, key=lambda e: extra[e]) if extra else None
    cpu = got[v]["cost_cpu"]
    unit = str(got[v].get("cost_unit") or "cycles")
    measured = unit != "cycles"  # the host's own measurement is in its tick unit
    how = f"{unit} each, measured on this host" if measured else f"cycles each on {cpu} (data/hazards.toml, rough)"
    if excess <= 0 or top is None:
        return rows
    added = sum(x for x in extra.values() if x > 0)
    where = f"{'SSEdirty' if top == 'Transitions' else top}_where"  # a transition's site is its SSE instruction
    site = got[v].get(where)
    site = site if isinstance(site, str) else ""  # a CSV's empty cell reads back as NaN
    if extra[top] >= ACCOUNTS * excess:
        per = extra[top] / max(got[v][top] - got[base][top], 1e-9)
        rows.append(("hazard found", f"{HAZARD_WORDS[top]} account for it: {_q(got[v][top] - got[base][top])} more per "
                     f"call at ~{fmt.num(per)} {how} ≈ {_q(extra[top])} of the {_q(excess)} ticks {v} takes "
                     f"beyond its instructions at {base}'s rate" + (f"; mostly in {site}" if site else "")))
    else:
        rows.append(("hazard found", f"none of the simulated hazards accounts for it: they add ≈{_q(max(added, 0))} {unit} "
                     f"per call ({'measured costs on this host' if measured else f'rough costs on {cpu}, data/hazards.toml'}) "
                     f"of the {_q(excess)} ticks {v} takes beyond its instructions at {base}'s rate; the cause is "
                     "outside this model (ports, latency chains, the µop cache, page walks, frequency)"))
    return rows


def _model_ipc(mca, host, base, v, total) -> str:
    if not host or mca.empty:
        return ""
    hb = mca[(mca["cpu"] == host) & (mca["variant"] == base)]
    hv = mca[(mca["cpu"] == host) & (mca["variant"] == v)]
    if not (len(hb) and len(hv)) or not (hb.iloc[0]["predicted_cycles_all"] > 0 and hv.iloc[0]["predicted_cycles_all"] > 0):
        return ""
    ib = total[base] / hb.iloc[0]["predicted_cycles_all"]
    iv = total[v] / hv.iloc[0]["predicted_cycles_all"]
    mb, mv = hb.iloc[0]["measured_cycles"], hv.iloc[0]["measured_cycles"]
    meas = (f" (measured {fmt.num(total[base] / mb)} → {fmt.num(total[v] / mv)})"
            if not fmt.is_missing(mb) and not fmt.is_missing(mv) and mb > 0 and mv > 0 else "")
    return f"this host's model ({host}) predicts {fmt.num(ib)} → {fmt.num(iv)} instructions per cycle{meas}"


def _rows_of(table: pd.DataFrame, scheme: str, op: str, compiler: str) -> pd.DataFrame:
    """A results table's rows of one (scheme, op, compiler)."""
    if table.empty:
        return table
    return table[(table["scheme"] == scheme) & (table["op"] == op) & (table["compiler"] == compiler)]


def hash_share_text(table: pd.DataFrame, scheme: str, op: str, compiler: str, variants: list[str]) -> str:
    """Each variant's share of instructions inside Keccak/SHA-3/SHA-2 entry points (results/hash_share) and the
    Amdahl bound it puts on a faster hash; n/a for a variant counted without call arcs (the QEMU plugin)."""
    sel = _rows_of(table, scheme, op, compiler)
    if sel.empty:
        return ""
    parts = []
    for v in variants:
        r = sel[sel["variant"] == v]
        if r.empty:
            parts.append(f"{v} n/a")
            continue
        share, bound = float(r["share"].iloc[0]), float(r["amdahl_bound"].iloc[0])
        limit = "the op is all hashing" if share >= 0.9995 else f"a faster hash gives at most {fmt.times(bound)}"
        parts.append(f"{v} {fmt.pct(share)} ({limit})")
    return " · ".join(parts)


def kernel_share_text(table: pd.DataFrame, scheme: str, op: str, compiler: str, variants: list[str]) -> str:
    """Each variant's instructions by kernel (results/kernel_share: innermost kernel, callgrind's inclusive costs),
    the kernels of at least 1% largest first, `other` last; n/a without call arcs or where the split is not
    consistent (a kernel counted twice)."""
    sel = _rows_of(table, scheme, op, compiler)
    if sel.empty:
        return ""
    parts = []
    for v in variants:
        r = sel[sel["variant"] == v]
        if r.empty or not r["consistent"].astype(bool).all():
            parts.append(f"{v} n/a")
            continue
        named = r[(r["kernel"] != "other") & (r["share"] >= 0.01)].sort_values("share", ascending=False)
        rest = 1 - float(named["share"].sum())
        parts.append(f"{v} " + ", ".join([*(f"{x.label} {fmt.pct(x.share)}" for x in named.itertuples()), f"other {fmt.pct(rest)}"]))
    return " · ".join(parts)


def counters_text(d, scheme: str, compiler: str, variants: list[str]) -> str:
    """Who counted the variants' instructions: the study's tool, and each variant counted otherwise (an AVX-512
    build single-stepped natively, valgrind cannot run it) named after it."""
    manifest = StudyDir(d.directory).read_manifest()
    by = {v: counted_by(d.summary, scheme, v, compiler, manifest) for v in variants}
    main = counting_tool(manifest)
    others = [f"{v} {how}" for v, how in by.items() if how != main]
    return "; ".join([main, *others] if len(others) < len(by) else others)


def per_unit_text(table: pd.DataFrame, scheme: str, compiler: str, tick_unit: str) -> str:
    """Every variant's median time per unit of work of each op (results/per_unit: e.g. ticks per Keccak
    permutation of the 1-, 4- and 8-way ops) and, op to op, the per-unit speedup with its interval: the width
    effect is a variant's row read left to right."""
    if table.empty or "metric" not in table:
        return "no per-unit comparisons in this study's results (an analysis older than the view)"
    t = table[(table["metric"] == metrics_mod.TIME) & (table["scheme"] == scheme) & (table["compiler"] == compiler)]
    parts = []
    for v in dict.fromkeys(t["variant"]):
        rows = t[t["variant"] == v]
        cells = [f"{rows['op_from'].iloc[0]} {_q(float(rows['per_unit_from'].iloc[0]))}"]
        for r in rows.itertuples(index=False):
            cells.append(f"→ {r.op_to} {_q(float(r.per_unit_to))} ({fmt.times(r.speedup)} {fmt.ci(r.ci_low, r.ci_high)}"
                         f" {r.verdict})")
        parts.append(f"{v}: " + " ".join(cells))
    unit = str(t["unit"].iloc[0]) if len(t) else ""
    return ("; ".join(parts) + f" ({tick_unit} per {unit}; speedup per {unit} with its interval)") if parts \
        else "no times in this study"
