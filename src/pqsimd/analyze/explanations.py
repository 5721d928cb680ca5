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

A randomized op (hedged signing, keypair with fresh coins: `[ops.fixed_randomness]`) never headlines where
the study has its fixed-randomness twin: the twin headlines, and its sentence gives the randomized op's speed.
Rows are ordered as a reader meets them: the hand stage's headlines, outliers and slowdowns, then the other
stages' slowdowns; rows of one op and stage whose sentences have one shape in every parameter set (numbers
and set names aside) are merged into the first, the others' speeds after "Alike at". An op is named by its
sentence label (`sentence_labels`), the parameter set always beside it.

How a sentence reads the evidence: S = t_base / t_var (the comparison's own estimate and interval),
S_i = i_base / i_var (instructions per call from the instruction records, else the mix's total: exact where
every call runs the same instructions, else their median, said "varies per call"), and S / S_i the time per instruction's factor,
so S = S_i × (S / S_i) holds exactly as printed. Vector shares and the mix class that changed come
from results/mix; misses from results/sim (first geometry); slow instructions from llvm-mca (mca).
Across sets, S_i(here) / S_i(there) = (base's growth) / (variant's growth) of instructions per call
from one set to the other: the side that grew differently is the side that explains the difference,
and its vector share by width says how; so does what either side runs in one set only (or no longer): a
mnemonic of at least APPEAR_SHARE of its instructions, and the functions new among its most-run (the mix
records' top functions, set numbers aside): ML-KEM-768's matrix expansion, whose ninth polynomial goes
through the scalar Keccak, executes rorx and the one-state permutation that 512 and 1024 never run. Where the
study has kernel shares (results/kernel_share), a sentence says which kernels its instruction change is
made of (instructions, counted; a kernel's time is not apportioned).

The mix is read by mixreading.py (OpMix, class_shift, vector_text, slow_candidates), which `pqsimd
explain` prints from too (report/explain.py): one reading of the mix, two presentations.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..errors import command
from ..headlines import fixed_twins, group_ops, headline_pool, headline_picks, headline_table  # noqa: F401  (the one headline rule; analyze writes it)
from ..mixreading import TOP_CLASSES, OpMix, class_shift, slow_candidates, vector_text
from ..mixreading import pct as _pct
from ..model import EVIDENCE_WORDS, interval_text, speed_words
from .write import write_or_remove
from .. import metrics as metrics_mod

TIME_METRIC = metrics_mod.TIME
INS_METRIC = metrics_mod.COUNT
ACROSS_FACTOR = 1.5  # a parameter set's speedup this far from the others' median (and intervals apart)
FAMILY_Z = 3.5  # modified z-score of an op's log speedup among the family's ops (Iglewicz & Hoaglin)
VECTOR_NOTE = 0.05  # a baseline with at least this vector share is said to be vectorized already
SHARE_CHANGE = 0.10  # a vector share that moves this much between sets is named as the change
APPEAR_SHARE = 0.01  # a mnemonic that runs in one set only is named when it is this much of the side's instructions
KINDS = ("slowdown", "outlier-across-sets", "outlier-in-family", "headline")  # a row's kind: the first that applies
COLUMNS = ["family", "scheme", "op", "stage", "base", "variant", "compiler", "kind", "also", "sentence", "evidence",
           "speedup", "ci_low", "ci_high", "ci_level", "verdict", "instructions_base", "instructions_var", "instruction_ratio",
           "time_per_instruction_factor", "vector_share_base", "vector_share_var", "width_main_var",
           "other_schemes", "other_speedups", "sim_geometry", "D1_misses_base", "D1_misses_var",
           "mispredicts_base", "mispredicts_var", "missing", "merged_schemes"]


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


def _and(items: list[str], word: str = "and") -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + f" {word} {items[-1]}"



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
    functions: dict[str, dict[str, float]] = field(default_factory=dict)  # variant -> its most-run functions (mix)
    kernels: dict[str, dict[str, float]] = field(default_factory=dict)  # variant -> kernel -> instructions per call
    kernel_labels: dict[str, str] = field(default_factory=dict)

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
    ci = f" {interval_text(lo, hi)}" if _finite(lo) and _finite(hi) else ""
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
    if _x(1.0) in (_x(tf), _x(1 / tf)):  # 0.998 prints as 1× one way round
        return ins + " at the same time per instruction"
    return ins + (f" × {_x(tf)} less time per instruction" if tf >= 1 else f" at {_x(1 / tf)} more time per instruction")


def vector_clause(e: Evidence) -> str:
    m = e.mix
    if not (m.has(e.base) and m.has(e.var)):
        return ""
    def are(v: str) -> str:  # "99% of avx2's instructions are 256-bit vector"
        text = vector_text(m, v)  # its first word is the share as printed ("99%"); the rest says of what
        return f"{text.split(' ', 1)[0]} of {v}'s instructions are {text.split(' ', 1)[1]}"

    # under 0.5% vector prints as "0%" (vector_text leaves such widths out): that is scalar code, said so
    out = are(e.var) if vector_text(m, e.var) != "scalar" else f"{e.var} runs scalar code"
    if m.vector_share(e.base) >= VECTOR_NOTE and vector_text(m, e.base) != "scalar":
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
        facts = []
        for x in dict.fromkeys((side, e.base, e.var)):  # the side that moved more first
            if e.mix.has(x) and ref.mix.has(x) and abs(e.mix.vector_share(x) - ref.mix.vector_share(x)) >= SHARE_CHANGE:
                facts.append(f"{x} is {vector_text(e.mix, x)} at {here} but {vector_text(ref.mix, x)} at {there}"
                             f" ({_tag('mix')})")
        for x in dict.fromkeys((side, e.base, e.var)):
            facts += appeared(e, others, x, labels)
        text += (": " + "; ".join(facts)) if facts else _class_change(e, ref, side, here, there)
    return text


def _counts_differ(e: Evidence, others: list[Evidence], labels: dict[str, str]) -> bool:
    """Whether this set's exact counts show other code than every other set's (a vector share of either side
    SHARE_CHANGE away from each of theirs, or an instruction that runs here only or everywhere but here):
    a sentence merged across sets would hide it (a matrix op whose odd polynomial count runs one SHAKE
    lane alone in one set: 59% vector against 85% in the others)."""
    for x in (e.base, e.var):
        if e.mix.has(x) and others and all(o.mix.has(x) and abs(e.mix.vector_share(x) - o.mix.vector_share(x))
                                           >= SHARE_CHANGE for o in others):
            return True
    return any(appeared(e, others, x, labels) for x in (e.base, e.var))


def _set_free(name: str, scheme: str) -> str:
    """A function's name without its parameter set's number (PQCLEAN_MLKEM768_AVX2_x and PQCLEAN_MLKEM512_AVX2_x
    are one function of two sets): every digit run of the scheme id, where it stands alone as digits."""
    for d in re.findall(r"\d+", scheme):
        name = re.sub(rf"(?<!\d){d}(?!\d)", "", name)
    return name


def appeared(e: Evidence, others: list[Evidence], side: str, labels: dict[str, str]) -> list[str]:
    """What `side` runs in this set and in none of the others, or in all the others and not here (counted):
    mnemonics of at least APPEAR_SHARE of its instructions, by name, and the functions among its most-run
    (the mix record's top functions) that are new here. An instruction that appears or vanishes is other
    code running, which a share that barely moves cannot show."""
    if not e.mix.has(side) or not others or not all(o.mix.has(side) for o in others):
        return []
    here = labels.get(e.row["scheme"], e.row["scheme"])
    names = " or ".join(labels.get(o.row["scheme"], o.row["scheme"]) for o in others)
    mine, theirs = e.mix.mnemonics.get(side, {}), [o.mix.mnemonics.get(side, {}) for o in others]
    t_here = e.mix.total.get(side, 0.0)
    out = []
    new = sorted(((mn, n) for mn, n in mine.items() if n >= APPEAR_SHARE * t_here and all(t.get(mn, 0.0) == 0 for t in theirs)),
                 key=lambda t: -t[1])[:TOP_CLASSES]
    if new:
        text = (f"{side} executes the instructions " + _and([f"{mn} ({_n(n)} per call)" for mn, n in new]) + f" at {here} and none at {names}"
                + f" ({_tag('mix')})")
        fns = functions_only_here(e, others, side)
        if fns:
            text += (f", and among its most-run functions at {here}, not among them at {names}: "
                     + ", ".join(f"{f} ({_n(n)} instructions per call)" for f, n in fns) + f" ({_tag('mix')})")
        out.append(text)
    gone = sorted(((mn, [t.get(mn, 0.0) for t in theirs]) for mn in set().union(*theirs)
                   if mine.get(mn, 0.0) == 0 and all(t.get(mn, 0.0) >= APPEAR_SHARE * o.mix.total.get(side, 0.0)
                                                      for t, o in zip(theirs, others))),
                  key=lambda t: -max(t[1]))[:TOP_CLASSES]
    if gone:
        out.append(f"{side} executes no " + _and([mn for mn, _ in gone], "or") + f" at {here}, where "
                   + f"{names.replace(' or ', ' and ')} execute " + _and([f"{mn} {' and '.join(_n(x) for x in xs)} per call"
                                                                        for mn, xs in gone]) + f" ({_tag('mix')})")
    return out


def functions_only_here(e: Evidence, others: list[Evidence], side: str) -> list[tuple[str, float]]:
    """side's most-run functions here (self instructions per call, the mix record's top list) whose name,
    set number aside, is among no other set's most-run; none when most of them differ (names that do not
    line up across sets say nothing)."""
    mine = e.functions.get(side) or {}
    theirs = [o.functions.get(side) for o in others]
    if not mine or not all(theirs):
        return []
    seen = {_set_free(f, o.row["scheme"]) for t, o in zip(theirs, others) for f in t}
    new = [(f, n) for f, n in mine.items() if _set_free(f, e.row["scheme"]) not in seen]
    if len(new) * 2 > len(mine):
        return []
    return sorted(new, key=lambda t: -t[1])[:2]


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


KERNEL_NOTE = 0.05  # a kernel is named when it holds this much of either side's instructions, or of the change
ONE_KERNEL = 0.95  # an op this much inside one kernel on both sides is that kernel: no split to say


def kernel_clause(e: Evidence) -> str:
    """Which kernels the instruction change is made of (results/kernel_share: each instruction counted for the
    innermost kernel it runs in, from callgrind's inclusive costs): 'by kernel, Keccak/SHA-2 412,000 → 125,000
    per call (3.3× fewer, 60% of the change), NTT ... (counted)'. Instructions, not time: a kernel's time is
    not apportioned."""
    kb, kv = e.kernels.get(e.base), e.kernels.get(e.var)
    if not kb or not kv:
        return ""
    tb, tv = sum(kb.values()), sum(kv.values())
    if tb <= 0 or tv <= 0:
        return ""
    if any(kb.get(k, 0) >= ONE_KERNEL * tb and kv.get(k, 0) >= ONE_KERNEL * tv for k in kb):
        return ""
    change = tb - tv
    parts = []
    for k in sorted(set(kb) | set(kv), key=lambda k: -abs(kb.get(k, 0.0) - kv.get(k, 0.0))):
        b, v = kb.get(k, 0.0), kv.get(k, 0.0)
        big = max(b / tb, v / tv) >= KERNEL_NOTE or (change and abs(b - v) >= KERNEL_NOTE * abs(change))
        if not big or (b == 0 and v == 0):
            continue
        ratio = (f"{_x(b / v)} fewer" if b >= v else f"{_x(v / b)} more") if b > 0 and v > 0 else "new" if b == 0 else "gone"
        of = f", {_pct((b - v) / change)} of the change" if change else ""
        parts.append(f"{e.kernel_labels.get(k, k)} {_n(b)} → {_n(v)} ({ratio}{of})")
    if len(parts) < 2:
        return ""
    return "by kernel, instructions per call " + "; ".join(parts) + f" ({_tag('instructions')}, inclusive call costs)"


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


# -- how a sentence names an op, and which ops may headline ------------------------------------------

def sentence_labels(family: dict) -> dict[str, str]:
    """Each op as a sentence names it: the family's `[ops.sentence_labels]` entry, else its report label. A
    label another op's label extends (a sampler's "noise" beside "noise η2" and "noise×4") is ambiguous in a
    sentence and carries its op id: "noise (<op id>)"."""
    labels = {str(k): str(v) for k, v in (family.get("labels") or {}).items()}
    own = {op: labels.get(op, op) for op in [*(family.get("ops") or []), *labels]}
    own.update({str(k): str(v) for k, v in (family.get("sentence_labels") or {}).items()})

    def extends(longer: str, label: str) -> bool:
        return longer != label and longer.startswith(label) and not longer[len(label)].isalnum()

    out = {}
    for op, label in own.items():
        clash = any(o != op and (m == label or extends(m, label)) for o, m in own.items())
        out[op] = f"{label} ({op})" if clash and label != op else label
    return out


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


def _kernels_of(ks: pd.DataFrame | None) -> tuple[dict[tuple, dict[str, float]], dict[str, str]]:
    """(scheme, op, variant, compiler) -> {kernel: instructions per call} from results/kernel_share (consistent
    rows only), and each kernel's label."""
    if ks is None or ks.empty:
        return {}, {}
    ok = ks[ks["consistent"].astype(bool)]
    out: dict[tuple, dict[str, float]] = {}
    for r in ok.to_dict("records"):
        out.setdefault((r["scheme"], r["op"], r["variant"], r["compiler"]), {})[str(r["kernel"])] = float(r["kernel_instructions"])
    return out, dict(zip(ks["kernel"].astype(str), ks["label"].astype(str)))


def _functions_of(functions: pd.DataFrame | None) -> dict[tuple, dict[str, float]]:
    """(scheme, op, variant, compiler) -> {function: self instructions per call} (the mix records' top functions)."""
    if functions is None or functions.empty:
        return {}
    out: dict[tuple, dict[str, float]] = {}
    for r in functions.to_dict("records"):
        out.setdefault((r["scheme"], r["op"], r["variant"], r["compiler"]), {})[str(r["function"])] = float(r["per_call"])
    return out


def functions_table(directory) -> pd.DataFrame:
    """The mix job records' most-run functions of each op (run/mix.py `functions`: object, function, self
    instructions per call) as rows: scheme, op, variant, compiler, function, per_call."""
    from ..studydir import StudyDir

    rows = []
    for rec in StudyDir(directory).job_records().values():
        if not isinstance(rec, dict) or rec.get("metric") != metrics_mod.MIX:
            continue
        for op, fns in (rec.get("functions") or {}).items():
            for _obj, fn, n in fns:
                rows.append({"scheme": rec.get("scheme"), "op": op, "variant": rec.get("variant"),
                             "compiler": rec.get("compiler"), "function": fn, "per_call": float(n)})
    return pd.DataFrame(rows, columns=["scheme", "op", "variant", "compiler", "function", "per_call"])


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
    # each family's hand stage: the chain's, or a further step into the hand variant from a baseline the family
    # has (Keccak's plain → avx2)
    hand_stage_of = {}
    for f in families.values():
        mine = list(f.get("schemes") or {})
        stage = chain.hand_for(set(c.loc[c["scheme"].isin(mine), "baseline"])).stage
        hand_stage_of.update({s: stage for s in mine})
    hand = c[c["stage"] == c["scheme"].map(hand_stage_of).fillna(chain.hand.stage)]
    kinds = select(hand, c, families, threshold)
    if not kinds:
        return pd.DataFrame(columns=COLUMNS)
    mix, mix_ops = tables.get("mix"), tables.get("mix_ops")
    (ins_metric, ins_varies), sim = _instructions_of(groups), _sim_of(tables.get("sim"))
    has_mix = mix is not None and len(mix) > 0
    fns = _functions_of(tables.get("functions"))
    kern, kernel_labels = _kernels_of(tables.get("kernel_share"))
    fam_of = {s: name for name, f in families.items() for s in (f.get("schemes") or {})}
    set_labels = {s: (i or {}).get("label", s) for f in families.values() for s, i in (f.get("schemes") or {}).items()}
    op_labels = {name: sentence_labels(f) for name, f in families.items()}
    randomized = {name: {t: o for o, t in fixed_twins(f).items()} for name, f in families.items()}  # twin -> its op

    def evidence(r: dict) -> Evidence:
        b, v, comp = r["baseline"], r["variant"], r["compiler"]
        m = OpMix.of(mix, mix_ops, r["scheme"], r["op"], comp, [b, v])
        # the instruction records' counts where the study has them (a separate mix run is one draw of an op
        # that draws fresh randomness per call), else the mix's total
        ins = {x: ins_metric.get((r["scheme"], r["op"], x, comp), m.total[x] if m.has(x) else math.nan) for x in (b, v)}
        s = {x: sim[(r["scheme"], r["op"], x, comp)] for x in (b, v) if (r["scheme"], r["op"], x, comp) in sim}
        return Evidence(r, m, ins, s, {x for x in (b, v) if (r["scheme"], r["op"], x, comp) in ins_metric
                                       and (r["scheme"], r["op"], x, comp) in ins_varies},
                        {x: fns[(r["scheme"], r["op"], x, comp)] for x in (b, v) if (r["scheme"], r["op"], x, comp) in fns},
                        {x: kern[(r["scheme"], r["op"], x, comp)] for x in (b, v) if (r["scheme"], r["op"], x, comp) in kern},
                        kernel_labels)

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
        if r["stage"] == hand_stage_of.get(r["scheme"], chain.hand.stage) and ("outlier-across-sets" in ks
                                                                             or "headline" in ks):
            peers = [o for o in hand[(hand["op"] == r["op"]) & (hand["scheme"] != r["scheme"])
                                     & (hand["scheme"].map(fam_of) == fam)].to_dict("records")]
            if peers and ("outlier-across-sets" in ks or not any(_overlap(r, o) for o in peers)):
                others = [evidence(o) for o in peers]
            elif peers:  # times alike, but the exact counts show other code running here: say so
                cand = [evidence(o) for o in peers]
                if _counts_differ(e, cand, set_labels):
                    others = cand
        sentence = head + (": " + "; ".join(parts) if parts else "")
        vec = vector_clause(e)
        second = []
        if vec:
            second.append(vec)
        kc = kernel_clause(e)
        if kc:
            second.append(kc)
        if r.get("verdict") == "slower" or kind == "slowdown":  # the verdict, not the point estimate
            slow = slowdown_clause(e, tables.get("mca_mnemonics"), tables.get("mca"), mix)
            if slow:
                second.append(slow)
        across = across_clause(e, others, set_labels)
        if across:
            second.append(across)
        rnd = randomized.get(fam, {}).get(r["op"])
        if "headline" in ks and rnd and (r["scheme"], rnd, r["stage"]) in by_key:  # what it stands in for
            o = by_key[(r["scheme"], rnd, r["stage"])]
            second.append(f"with fresh randomness ({op_labels.get(fam, {}).get(rnd, rnd)}) it is "
                          f"{_speed_words(float(o['speedup']), o.get('ci_low'), o.get('ci_high'), o.get('verdict'))}, "
                          f"not the headline: its draws vary per call")
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
            "verdict": r.get("verdict"),
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
    out = pd.DataFrame(rows, columns=COLUMNS)
    out["shown"] = [_shown_rank(r, hand_stage_of.get(r["scheme"], chain.hand.stage)) for r in out.to_dict("records")]
    rank = {"scheme": {s: i for i, s in enumerate(set_labels)}, "op": {o: i for i, o in enumerate(dict.fromkeys(c["op"]))}}
    out = out.sort_values(["family", "shown", "scheme", "op"], key=lambda s: s.map(rank[s.name]) if s.name in rank else s,
                          kind="stable").reset_index(drop=True)
    return merge_repeated(out, set_labels)[COLUMNS]


SHOWN = ("headline", "outlier-across-sets", "outlier-in-family", "slowdown")  # the order a reader meets them


def _shown_rank(r: dict, hand_stage: str) -> int:
    """The hand stage's rows first (a headline, also one explained as a slowdown, then its outliers and
    slowdowns), then the other stages' slowdowns (auto-vectorization, the compiler)."""
    kinds = [r["kind"], *[k for k in str(r.get("also") or "").split(", ") if k]]
    first = min(SHOWN.index(k) for k in kinds if k in SHOWN)
    return first if r["stage"] == hand_stage else len(SHOWN) + first


_NUMBER = re.compile(r"[-+]?\d+(?:,\d{3})*(?:\.\d+)?")


def _shape(sentence: str, labels: list[str]) -> str:
    """A sentence with its parameter sets and numbers taken out: two sentences of one shape say the same."""
    for label in sorted(labels, key=len, reverse=True):
        sentence = sentence.replace(label, "§")
    return _NUMBER.sub("#", sentence)


def merge_repeated(out: pd.DataFrame, set_labels: dict[str, str]) -> pd.DataFrame:
    """Rows of one op and stage whose sentences say the same in every parameter set (one shape, numbers
    aside) become the first set's row, with the others' speeds and instruction ratios after it and their sets
    in `merged_schemes`; a reader meets one sentence, not one per set."""
    out = out.copy()
    out["merged_schemes"] = ""
    if out.empty:
        return out
    labels = list(set_labels.values())
    keep = []
    for _key, g in out.groupby(["family", "op", "stage", "base", "variant", "compiler"], sort=False):
        idx = list(g.index)
        if len(idx) > 1 and len({_shape(str(out.at[i, "sentence"]), labels) for i in idx}) == 1:
            first, rest = idx[0], idx[1:]
            order = list(set_labels)
            rest.sort(key=lambda i: order.index(out.at[i, "scheme"]) if out.at[i, "scheme"] in order else len(order))
            alike = []
            for i in rest:
                r = out.loc[i]
                part = _speed_words(float(r['speedup']), r['ci_low'], r['ci_high'], r['verdict'])
                if _finite(r["instruction_ratio"]):
                    si = float(r["instruction_ratio"])
                    part += f", {_x(si)} fewer instructions" if si >= 1 else f", {_x(1 / si)} more instructions"
                alike.append(f"{set_labels.get(r['scheme'], r['scheme'])} ({part})")
            out.at[first, "sentence"] = str(out.at[first, "sentence"]) + f" Alike at {_and(alike)}."
            out.at[first, "merged_schemes"] = ", ".join(str(out.at[i, "scheme"]) for i in rest)
            kinds = [k for i in idx for k in [out.at[i, "kind"], *str(out.at[i, "also"] or "").split(", ")] if k]
            out.at[first, "also"] = ", ".join(k for k in dict.fromkeys(kinds) if k != out.at[first, "kind"])
            keep.append(first)
        else:
            keep += idx
    return out.loc[sorted(keep)].reset_index(drop=True)


def write_explanations(directory, results, comparisons: pd.DataFrame, groups: pd.DataFrame | None, chain,
                       families: dict, compiler: str | None, threshold: float) -> list[str]:
    """results/explanations (csv + parquet) from the tables analyze wrote before it into `results`;
    removed when nothing is explained, so a re-analysis never leaves a stale one."""
    tables = {}
    for name in ("mix", "mix_ops", "sim", "mca", "mca_mnemonics", "kernel_share"):
        p = results / f"{name}.parquet"
        tables[name] = pd.read_parquet(p) if p.exists() else pd.DataFrame()
    tables["functions"] = functions_table(directory)
    write_or_remove(explanation_table(comparisons, groups, tables, families, chain, compiler, directory, threshold),
                     results, "explanations")
    return []
