"""Why a speedup is what it is (results/explanations): for every headline and every outlier of the
hand stage, and every slowdown of any stage, one or two sentences from the evidence the study has,
each fact labelled with how it was obtained (model.EVIDENCE_WORDS: measured, counted, simulated).

Which comparisons (metric ticks, the study's first compiler, never the self-check op):

    headline              the hand stage's largest speedup of the family, its smallest when below 1,
                          and the two ends of each `[[views.headlines]]` group's range across
                          parameter sets: the ops the report's headline bullets name
    outlier-across-sets   the same op's speedup in the family's other parameter sets: its interval
                          overlaps none of theirs and it is at least ACROSS_FACTOR above or below
                          their median
    outlier-in-family     the family's other ops in the same parameter set: its modified z-score
                          (0.6745 × |log S − median| / MAD of the log speedups, Iglewicz & Hoaglin)
                          is at least FAMILY_Z, it is at least ACROSS_FACTOR from the family's
                          median speedup, and its interval excludes that median
    slowdown              any chain stage whose interval lies below 1 / (1 + threshold): the verdict
                          `slower` read off the interval (also where a verdict is withheld)

How a sentence reads the evidence: S = t_base / t_var (the comparison's own estimate and interval),
S_i = i_base / i_var (instructions per call from the instruction records, else the mix's total: exact where
every call runs the same instructions, else their median, said "varies per call"), and S / S_i the time per instruction's factor,
so S = S_i × (S / S_i) holds exactly as printed. Vector shares and the mix class that changed come
from results/mix; misses from results/sim (first geometry); slow instructions from llvm-mca (mca).
Across sets, S_i(here) / S_i(there) = (base's growth) / (variant's growth) of instructions per call
from one set to the other: the side that grew differently is the side that explains the difference,
and its vector share by width says how.

The mix is read by mixreading.py (OpMix, class_shift, vector_text, slow_candidates), which `pqsimd
explain` prints from too (report/explain.py): one reading of the mix, two presentations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..errors import command
from ..headlines import headline_picks, headline_table  # noqa: F401  (the one headline rule; analyze writes it)
from ..mixreading import OpMix, class_shift, slow_candidates, vector_text
from ..mixreading import pct as _pct
from ..model import EVIDENCE_WORDS, speed_words
from .write import write_or_remove
from .. import metrics as metrics_mod

TIME_METRIC = metrics_mod.TIME
INS_METRIC = metrics_mod.COUNT
ACROSS_FACTOR = 1.5  # a parameter set's speedup this far from the others' median (and intervals apart)
FAMILY_Z = 3.5  # modified z-score of an op's log speedup among the family's ops (Iglewicz & Hoaglin)
VECTOR_NOTE = 0.05  # a baseline with at least this vector share is said to be vectorized already
SHARE_CHANGE = 0.10  # a vector share that moves this much between sets is named as the change
KINDS = ("slowdown", "outlier-across-sets", "outlier-in-family", "headline")  # a row's kind: the first that applies
COLUMNS = ["family", "scheme", "op", "stage", "base", "variant", "compiler", "kind", "also", "sentence", "evidence",
           "speedup", "ci_low", "ci_high", "ci_level", "instructions_base", "instructions_var", "instruction_ratio",
           "time_per_instruction_factor", "vector_share_base", "vector_share_var", "width_main_var",
           "other_schemes", "other_speedups", "sim_geometry", "D1_misses_base", "D1_misses_var",
           "mispredicts_base", "mispredicts_var", "missing"]


# -- numbers as the sentences print them --------------------------------------------------------

def _finite(x: Any) -> bool:
    try:
        return x is not None and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def _x(v: float) -> str:
    """A factor: three significant digits (54.9, 1.04, 0.62), whole numbers from 100."""
    return f"{v:,.0f}×" if abs(v) >= 100 else f"{float(f'{v:.3g}'):g}×"


def _n(v: float) -> str:
    """A count per call: exact integers with separators, else three significant digits."""
    return f"{v:,.0f}" if abs(v - round(v)) < 1e-9 or abs(v) >= 100 else f"{float(f'{v:.3g}'):g}"



def _tag(kind: str) -> str:
    return EVIDENCE_WORDS[kind][0]


# -- the evidence of one comparison -------------------------------------------------------------

@dataclass
class Evidence:
    row: dict  # the comparison
    mix: OpMix
    ins: dict[str, float]  # instructions per call by variant (the instruction records, else the mix's total)
    sim: dict[str, dict] = field(default_factory=dict)  # variant -> its sim row (first geometry)
    varies: set[str] = field(default_factory=set)  # variants whose count differs between calls (fresh randomness)

    @property
    def base(self) -> str:
        return self.row["baseline"]

    @property
    def var(self) -> str:
        return self.row["variant"]

    @property
    def speedup(self) -> float:
        return float(self.row["speedup"])

    @property
    def ins_ratio(self) -> float:
        b, v = self.ins.get(self.base), self.ins.get(self.var)
        return b / v if _finite(b) and _finite(v) and b > 0 and v > 0 else math.nan

    @property
    def tpi_factor(self) -> float:
        """S / S_i: how much less time each instruction takes in the variant (exactly S = S_i × this)."""
        si = self.ins_ratio
        return self.speedup / si if _finite(si) and _finite(self.speedup) else math.nan


def _speed_words(s: float, lo: float, hi: float, verdict: object) -> str:
    """The comparison's speed in words from its verdict (model.speed_words), its interval and the tag."""
    ci = f" [{lo:.3g}, {hi:.3g}]" if _finite(lo) and _finite(hi) else ""
    return speed_words(s, verdict, _x, ci) + f" ({_tag('ticks')})"


def mechanism(e: Evidence) -> str:
    """'52.6× fewer instructions (33,724 → 641 per call, counted) × 1.04× less time per instruction'."""
    si, tf = e.ins_ratio, e.tpi_factor
    if not _finite(si):
        return ""
    b, v = e.ins[e.base], e.ins[e.var]
    varies = [x for x in (e.base, e.var) if x in e.varies]
    ins = (f"{_x(si)} fewer instructions" if si >= 1 else f"{_x(1 / si)} more instructions") \
        + f" ({_n(b)} → {_n(v)} per call, {_tag('instructions')}" \
        + (f"; {' and '.join(varies)}'s count varies per call: the median" if varies else "") + ")"
    if not _finite(tf):
        return ins
    if _x(tf) == _x(1.0):
        return ins + " at the same time per instruction"
    return ins + (f" × {_x(tf)} less time per instruction" if tf >= 1 else f" at {_x(1 / tf)} more time per instruction")


def vector_clause(e: Evidence) -> str:
    m = e.mix
    if not (m.has(e.base) and m.has(e.var)):
        return ""
    def are(v: str) -> str:  # "99% of avx2's instructions are 256-bit vector"
        share, text = m.vector_share(v), vector_text(m, v)
        return f"{_pct(share)} of {v}'s instructions are {text[len(_pct(share)) + 1:]}"

    out = are(e.var) if m.vector_share(e.var) > 0 else f"{e.var} runs scalar code"
    if m.vector_share(e.base) >= VECTOR_NOTE:
        out += f", {are(e.base)}"
    return out + f" ({_tag('mix')})"


def across_clause(e: Evidence, others: list[Evidence], labels: dict[str, str]) -> str:
    """Why this set's speedup differs from the others': their speedups, how each side's instructions
    grew from the reference set to this one, and the vector share (by width) of the side that moved."""
    if not others:
        return ""
    ref = min(others, key=lambda o: abs(math.log(o.speedup / float(np.median([x.speedup for x in others])))))
    names = " and ".join(labels.get(o.row["scheme"], o.row["scheme"]) for o in others)
    text = f"at {names} it is " + " and ".join(_x(o.speedup) for o in others)
    if _finite(e.ins_ratio) and _finite(ref.ins_ratio):
        text += f" ({' and '.join(_x(o.ins_ratio) for o in others if _finite(o.ins_ratio))} fewer instructions)"
        here, there = labels.get(e.row["scheme"], e.row["scheme"]), labels.get(ref.row["scheme"], ref.row["scheme"])
        order = list(labels)
        first, last = (ref, e) if order.index(ref.row["scheme"]) < order.index(e.row["scheme"]) else (e, ref)
        gb, gv = last.ins[e.base] / first.ins[e.base], last.ins[e.var] / first.ins[e.var]  # in the family's order
        d_ins = abs(math.log(e.ins_ratio / ref.ins_ratio))
        d_tpi = abs(math.log(e.tpi_factor / ref.tpi_factor)) if _finite(e.tpi_factor) and _finite(ref.tpi_factor) else 0.0
        if d_tpi > d_ins:  # the counts differ less than the time per instruction: say where the difference is
            text += (f"; the difference is in time per instruction (time ratio over instruction ratio {_x(e.tpi_factor)} "
                     f"here, {_x(ref.tpi_factor)} at {there}: {_tag('ticks')} over {_tag('instructions')})")
        text += (f"; from {labels.get(first.row['scheme'])} to {labels.get(last.row['scheme'])} {e.base}'s instructions "
                 f"per call {_grow(gb)} and {e.var}'s {_grow(gv)} ({_tag('instructions')})")
        side = e.base if abs(math.log(gb)) >= abs(math.log(gv)) else e.var  # the side whose count moved more
        if e.mix.has(side) and ref.mix.has(side):
            a, b = e.mix.vector_share(side), ref.mix.vector_share(side)
            if abs(a - b) >= SHARE_CHANGE:
                text += (f": {side} is {vector_text(e.mix, side)} at {here} but {vector_text(ref.mix, side)} at {there}"
                         f" ({_tag('mix')})")
            else:
                text += _class_change(e, ref, side, here, there)
    return text


def _grow(g: float) -> str:
    return f"grow {_x(g)}" if g >= 1 else f"shrink {_x(1 / g)}"


def _class_change(e: Evidence, ref: Evidence, side: str, here: str, there: str) -> str:
    """The class whose share of `side`'s instructions moved most between the two sets."""
    a, b = e.mix.counts.get(side, {}), ref.mix.counts.get(side, {})
    ta, tb = e.mix.total.get(side, 0.0), ref.mix.total.get(side, 0.0)
    if not (ta > 0 and tb > 0):
        return ""
    moved = sorted(((c, a.get(c, 0.0) / ta - b.get(c, 0.0) / tb) for c in set(a) | set(b)), key=lambda t: -abs(t[1]))
    if not moved or abs(moved[0][1]) < 0.02:
        return f": {side}'s mix is the same in both ({_tag('mix')})"
    c, d = moved[0]
    label = e.mix.labels.get(c, c)
    return (f": {label} is {_pct(a.get(c, 0.0) / ta)} of {side}'s instructions at {here} and "
            f"{_pct(b.get(c, 0.0) / tb)} at {there} ({_tag('mix')})")


def slowdown_clause(e: Evidence, mcm: pd.DataFrame, mca: pd.DataFrame, mix: pd.DataFrame) -> str:
    """What a slower variant adds: classes (lane-crossing permutes, gathers, ...), simulated misses,
    and the instructions a cost model makes slow."""
    parts = []
    if e.mix.has(e.base) and e.mix.has(e.var):
        _saved, added = class_shift(e.mix, e.base, e.var, top=2)
        added = [(c, x) for c, x in added if x >= 0.01 * e.mix.total.get(e.var, 0.0)]  # not a stray +1
        if added:
            parts.append(f"{e.var} adds " + ", ".join(f"{e.mix.labels.get(c, c)} +{_n(x)}" for c, x in added)
                         + f" per call ({_tag('mix')})")
        lb, lv = (e.mix.ops.get(x, {}).get("lane_crossing") for x in (e.base, e.var))
        if _finite(lv) and float(lv) > (float(lb) if _finite(lb) else 0.0):
            parts.append(f"lane-crossing instructions {_n(float(lb or 0))} → {_n(float(lv))} per call ({_tag('mix')})")
    sb, sv = e.sim.get(e.base), e.sim.get(e.var)
    if sb and sv:
        moved = [(k, w) for k, w in (("D1_misses", "D1 misses"), ("LL_misses", "LL misses"),
                                     ("mispredicts", "mispredicted branches"))
                 if _finite(sv.get(k)) and _finite(sb.get(k)) and sv[k] > sb[k] + 1]
        if moved:
            parts.append(", ".join(f"{w} {_n(sb[k])} → {_n(sv[k])}" for k, w in moved)
                         + f" per call ({_tag('sim')}, {sb.get('geometry')})")
    cands = slow_candidates(mcm, mca, mix, e.row["scheme"], e.row["op"], e.row["compiler"], e.base, e.var)
    if cands:
        g = cands[0]
        parts.append(", ".join(f"{m} (+{_n(a)}/call)" for m, a in g["names"])
                     + f" has latency {_n(g['latency'])} on {', '.join(g['slow'])} ({_tag('mca')})")
    return "; ".join(parts)


# -- which comparisons ---------------------------------------------------------------------------

def _overlap(a: dict, b: dict) -> bool:
    return not (float(a["ci_low"]) > float(b["ci_high"]) or float(b["ci_low"]) > float(a["ci_high"]))


def select(hand: pd.DataFrame, stages: pd.DataFrame, families: dict, threshold: float = 0.0) -> dict[tuple, list[str]]:
    """(scheme, op, stage) -> the kinds that apply (module docstring). `hand`: the hand stage's rows
    (one per scheme and op, self-check left out); `stages`: every stage's rows (for slowdowns)."""
    kinds: dict[tuple, list[str]] = {}

    def add(r, kind):
        k = (r["scheme"], r["op"], r["stage"])
        if kind not in kinds.setdefault(k, []):
            kinds[k].append(kind)

    fam_of = {s: name for name, f in families.items() for s in (f.get("schemes") or {})}
    hand = hand[hand["speedup"].notna() & (hand["speedup"] > 0)]
    for name, f in families.items():
        d = hand[hand["scheme"].map(fam_of) == name]
        if d.empty:
            continue
        for pick in headline_picks(d, f):  # the one headline rule; a range's ends where it has two ops or more
            if pick["kind"] in ("largest", "smallest") or pick["n"] >= 2:
                add(pick["row"], "headline")
        for _op, g in d.groupby("op"):
            rows = g.to_dict("records")
            for r in rows:
                others = [o for o in rows if o["scheme"] != r["scheme"]]
                if not others:
                    continue
                ratio = r["speedup"] / float(np.median([o["speedup"] for o in others]))
                if max(ratio, 1 / ratio) >= ACROSS_FACTOR and not any(_overlap(r, o) for o in others):
                    add(r, "outlier-across-sets")
        for _scheme, g in d.groupby("scheme"):
            logs = np.log(g["speedup"].to_numpy(dtype=float))
            med = float(np.median(logs))
            mad = float(np.median(np.abs(logs - med)))
            if len(g) < 3 or mad <= 0:
                continue
            for r, lg in zip(g.to_dict("records"), logs):
                z = 0.6745 * abs(lg - med) / mad
                far = abs(lg - med) >= math.log(ACROSS_FACTOR)  # a tight family makes small z-denominators
                if z >= FAMILY_Z and far and (r["ci_low"] > math.exp(med) or r["ci_high"] < math.exp(med)):
                    add(r, "outlier-in-family")
    slower = stages["ci_high"] < 1 / (1 + threshold)  # material: where the report's verdict reads `slower`
    for r in stages[slower].to_dict("records"):
        add(r, "slowdown")
    return kinds


# -- the table -----------------------------------------------------------------------------------

def _instructions_of(groups: pd.DataFrame | None) -> tuple[dict[tuple, float], set[tuple]]:
    """The instruction records' count per call of each (scheme, op, variant, compiler) (their median), and
    the keys whose count varies between calls (not deterministic: an op that draws fresh randomness)."""
    if groups is None or groups.empty or "metric" not in groups.columns:
        return {}, set()
    g = groups[groups["metric"] == INS_METRIC]
    det = g["deterministic"] if "deterministic" in g.columns else pd.Series(True, index=g.index)
    counts = {(r.scheme, r.op, r.variant, r.compiler): float(r.median) for r in g.itertuples(index=False)}
    varies = {(r.scheme, r.op, r.variant, r.compiler) for r, d in zip(g.itertuples(index=False), det)
              if not pd.isna(d) and not bool(d)}
    return counts, varies


def _sim_of(sim: pd.DataFrame | None) -> dict[tuple, dict]:
    if sim is None or sim.empty:
        return {}
    first = sim["geometry"].iloc[0]
    return {(r["scheme"], r["op"], r["variant"], r["compiler"]): r
            for r in sim[sim["geometry"] == first].to_dict("records")}


def missing_note(has_ins: bool, has_mix: bool, directory: Any) -> str:
    """One line: what evidence the study lacks and the command that adds it."""
    if has_ins and has_mix:
        return ""
    metrics = ",".join(m for m, have in ((INS_METRIC, has_ins), ("mix", has_mix)) if not have)
    what = "instruction counts and mix were" if not has_ins and not has_mix else (
        "instruction mix was" if has_ins else "instruction counts were")
    return (f"the {what} not measured in this study; {command('run', directory, '--metric', metrics)} adds "
            f"{'them' if not has_ins and not has_mix else 'it'}, then {command('analyze', directory)}")


def explanation_table(comparisons: pd.DataFrame, groups: pd.DataFrame | None, tables: dict[str, pd.DataFrame],
                      families: dict, chain, compiler: str | None, directory: Any = "DIR",
                      threshold: float = 0.0) -> pd.DataFrame:
    """One row per explained comparison (COLUMNS). `tables`: the analysis's mix, mix_ops, sim, mca and
    mca_mnemonics (any may be empty); `chain`: model.Chain; `compiler`: the study's first."""
    if comparisons is None or comparisons.empty or chain.hand is None:
        return pd.DataFrame(columns=COLUMNS)
    self_checks = {f.get("self_check") for f in families.values() if f.get("self_check")}
    c = comparisons[(comparisons["metric"] == TIME_METRIC) & ~comparisons["op"].isin(self_checks)]
    if compiler is not None:
        c = c[(c["compiler"] == compiler) & (c.get("baseline_compiler", c["compiler"]) == compiler)]
    c = c[c["speedup"].notna() & (c["speedup"] > 0)]
    if c.empty:
        return pd.DataFrame(columns=COLUMNS)
    steps = {s.stage: s for s in (*chain.steps, *chain.also)}
    c = c[c["stage"].isin(list(steps))].drop_duplicates(["scheme", "op", "stage"])
    hand = c[c["stage"] == chain.hand.stage]
    kinds = select(hand, c, families, threshold)
    if not kinds:
        return pd.DataFrame(columns=COLUMNS)
    mix, mix_ops = tables.get("mix"), tables.get("mix_ops")
    (ins_metric, ins_varies), sim = _instructions_of(groups), _sim_of(tables.get("sim"))
    has_mix = mix is not None and len(mix) > 0
    fam_of = {s: name for name, f in families.items() for s in (f.get("schemes") or {})}
    set_labels = {s: (i or {}).get("label", s) for f in families.values() for s, i in (f.get("schemes") or {}).items()}
    op_labels = {name: (f.get("labels") or {}) for name, f in families.items()}

    def evidence(r: dict) -> Evidence:
        b, v, comp = r["baseline"], r["variant"], r["compiler"]
        m = OpMix.of(mix, mix_ops, r["scheme"], r["op"], comp, [b, v])
        # the instruction records' counts where the study has them (a separate mix run is one draw of an op
        # that draws fresh randomness per call), else the mix's total
        ins = {x: ins_metric.get((r["scheme"], r["op"], x, comp), m.total[x] if m.has(x) else math.nan) for x in (b, v)}
        s = {x: sim[(r["scheme"], r["op"], x, comp)] for x in (b, v) if (r["scheme"], r["op"], x, comp) in sim}
        return Evidence(r, m, ins, s, {x for x in (b, v) if (r["scheme"], r["op"], x, comp) in ins_metric
                                       and (r["scheme"], r["op"], x, comp) in ins_varies})

    rows = []
    by_key = {(r["scheme"], r["op"], r["stage"]): r for r in c.to_dict("records")}
    for key, ks in kinds.items():
        r = by_key[key]
        kind = next(k for k in KINDS if k in ks)
        e = evidence(r)
        fam = fam_of.get(r["scheme"], "")
        head = (f"{op_labels.get(fam, {}).get(r['op'], r['op'])} {set_labels.get(r['scheme'], r['scheme'])} "
                f"{e.base} → {e.var}: {_speed_words(e.speedup, r.get('ci_low'), r.get('ci_high'), r.get('verdict'))}")
        mech = mechanism(e)
        parts = [mech] if mech else []
        used = ["ticks"] + (["instructions"] if mech else [])
        others: list[Evidence] = []
        if r["stage"] == chain.hand.stage and ("outlier-across-sets" in ks or "headline" in ks):
            peers = [o for o in hand[(hand["op"] == r["op"]) & (hand["scheme"] != r["scheme"])
                                     & (hand["scheme"].map(fam_of) == fam)].to_dict("records")]
            if peers and ("outlier-across-sets" in ks or not any(_overlap(r, o) for o in peers)):
                others = [evidence(o) for o in peers]
        sentence = head + (": " + "; ".join(parts) if parts else "")
        vec = vector_clause(e)
        second = []
        if vec:
            second.append(vec)
        if r.get("verdict") == "slower" or kind == "slowdown":  # the verdict, not the point estimate
            slow = slowdown_clause(e, tables.get("mca_mnemonics"), tables.get("mca"), mix)
            if slow:
                second.append(slow)
        across = across_clause(e, others, set_labels)
        if across:
            second.append(across)
        if second:
            text = "; ".join(second)
            named = text.startswith((f"{e.base} ", f"{e.var} "))  # a variant's name keeps its case
            sentence += ". " + (text if named else text[0].upper() + text[1:])
        note = missing_note(_finite(e.ins_ratio), has_mix and e.mix.has(e.base), directory)
        sentence += "."  # what is missing is said once per family (the `missing` column), not in every sentence
        if has_mix and e.mix.has(e.base):
            used.append("mix")
        if e.sim and ("D1 misses" in sentence or "mispredicted" in sentence or "LL misses" in sentence):
            used.append("sim")
        if f"({_tag('mca')})" in sentence:
            used.append("mca")
        rows.append({
            "family": fam, "scheme": r["scheme"], "op": r["op"], "stage": r["stage"], "base": e.base, "variant": e.var,
            "compiler": r["compiler"], "kind": kind, "also": ", ".join(k for k in ks if k != kind), "sentence": sentence,
            "evidence": "; ".join(f"{_tag(u)}: {EVIDENCE_WORDS[u][1]}" for u in dict.fromkeys(used)),
            "speedup": e.speedup, "ci_low": r.get("ci_low"), "ci_high": r.get("ci_high"), "ci_level": r.get("ci_level"),
            "instructions_base": e.ins.get(e.base), "instructions_var": e.ins.get(e.var), "instruction_ratio": e.ins_ratio,
            "time_per_instruction_factor": e.tpi_factor,
            "vector_share_base": e.mix.vector_share(e.base) if e.mix.has(e.base) else math.nan,
            "vector_share_var": e.mix.vector_share(e.var) if e.mix.has(e.var) else math.nan,
            "width_main_var": max(e.mix.widths.get(e.var, {0: 0}).items(), key=lambda t: t[1])[0] if e.mix.widths.get(e.var) else 0,
            "other_schemes": ", ".join(o.row["scheme"] for o in others),
            "other_speedups": ", ".join(f"{o.speedup:.4g}" for o in others),
            "sim_geometry": (e.sim.get(e.base) or {}).get("geometry"),
            "D1_misses_base": (e.sim.get(e.base) or {}).get("D1_misses"), "D1_misses_var": (e.sim.get(e.var) or {}).get("D1_misses"),
            "mispredicts_base": (e.sim.get(e.base) or {}).get("mispredicts"),
            "mispredicts_var": (e.sim.get(e.var) or {}).get("mispredicts"),
            "missing": note,
        })
    rank = {"kind": {k: i for i, k in enumerate(KINDS)}, "scheme": {s: i for i, s in enumerate(set_labels)},
            "op": {o: i for i, o in enumerate(dict.fromkeys(c["op"]))}}
    out = pd.DataFrame(rows, columns=COLUMNS)
    return out.sort_values(["family", "kind", "scheme", "op"], key=lambda s: s.map(rank[s.name]) if s.name in rank else s,
                           kind="stable").reset_index(drop=True)


def write_explanations(directory, results, comparisons: pd.DataFrame, groups: pd.DataFrame | None, chain,
                       families: dict, compiler: str | None, threshold: float) -> list[str]:
    """results/explanations (csv + parquet) from the tables analyze wrote before it into `results`;
    removed when nothing is explained, so a re-analysis never leaves a stale one."""
    tables = {}
    for name in ("mix", "mix_ops", "sim", "mca", "mca_mnemonics"):
        p = results / f"{name}.parquet"
        tables[name] = pd.read_parquet(p) if p.exists() else pd.DataFrame()
    write_or_remove(explanation_table(comparisons, groups, tables, families, chain, compiler, directory, threshold),
                     results, "explanations")
    return []
