"""One reading of an op's instruction mix (results/mix, mix_ops, mca, mca_mnemonics): instructions per
call per variant, per class and per vector width, the classes one build saves or adds over another, and
the instructions a CPU model makes slow. analyze/explanations.py writes its sentences from it and
`pqsimd explain` (report/explain.py) prints from it: one reading, two presentations. Tables in, numbers
out: no file, no study."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

TOP_CLASSES = 3
ONE_WIDTH = 0.9  # one width holds this much of the vector instructions: "N% 256-bit vector"
MIN_SHARE = 0.10  # a slow instruction is named when added × latency is >= 10% of the estimate


def pct(v: float) -> str:
    return f"{100 * v:.0f}%"


@dataclass
class OpMix:
    """One (scheme, op, compiler)'s mix per variant: instructions per call, per-class counts, the
    vector instructions by width, ticks and ticks per instruction (results/mix, mix_ops)."""

    total: dict[str, float] = field(default_factory=dict)
    counts: dict[str, dict[str, float]] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    widths: dict[str, dict[int, float]] = field(default_factory=dict)
    ops: dict[str, dict] = field(default_factory=dict)
    mnemonics: dict[str, dict[str, float]] = field(default_factory=dict)  # per call, widths summed

    @classmethod
    def of(cls, mix: pd.DataFrame, mix_ops: pd.DataFrame | None, scheme: str, op: str, compiler: str,
           variants: list[str]) -> "OpMix":
        m = cls()
        if mix is None or mix.empty:
            return m
        mx = mix[(mix["scheme"] == scheme) & (mix["op"] == op) & (mix["compiler"] == compiler)]
        cls_rows = mx[mx["level"] == "class"]
        mn = mx[mx["level"] == "mnemonic"]
        m.labels = dict(zip(cls_rows["class"], cls_rows["class_label"]))
        for v in variants:
            c = cls_rows[cls_rows["variant"] == v]
            if c.empty:
                continue
            m.total[v] = float(c["count"].sum())
            m.counts[v] = dict(zip(c["class"], c["count"].astype(float)))
            vec = mn[(mn["variant"] == v) & (mn["width"].fillna(0) > 0)]
            m.widths[v] = {int(w): float(n) for w, n in vec.groupby("width")["count"].sum().items() if n > 0}
            m.mnemonics[v] = {str(k): float(n) for k, n in mn[mn["variant"] == v].groupby("mnemonic")["count"].sum().items()}
            if mix_ops is not None and len(mix_ops):
                r = mix_ops[(mix_ops["scheme"] == scheme) & (mix_ops["op"] == op) & (mix_ops["variant"] == v)
                            & (mix_ops["compiler"] == compiler)]
                m.ops[v] = r.iloc[0].to_dict() if len(r) else {}
        return m

    def has(self, v: str) -> bool:
        return v in self.total

    def vector_share(self, v: str) -> float:
        t = self.total.get(v, 0.0)
        return sum(self.widths.get(v, {}).values()) / t if t > 0 else math.nan

    def width_shares(self, v: str) -> dict[int, float]:
        """Each vector width's share of all of v's instructions, widest first."""
        t = self.total.get(v, 0.0)
        return {w: n / t for w, n in sorted(self.widths.get(v, {}).items(), reverse=True)} if t > 0 else {}


def class_shift(m: OpMix, base: str, v: str, top: int = TOP_CLASSES) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """The classes v executes fewer of than base (saved, largest first) and more of (added), per call."""
    cb, cv = m.counts.get(base, {}), m.counts.get(v, {})
    diff = {c: cb.get(c, 0.0) - cv.get(c, 0.0) for c in set(cb) | set(cv)}
    saved = sorted(((c, x) for c, x in diff.items() if x > 0), key=lambda t: -t[1])[:top]
    added = sorted(((c, -x) for c, x in diff.items() if x < 0), key=lambda t: -t[1])[:top]
    return saved, added


def vector_text(m: OpMix, v: str) -> str:
    """'99% 256-bit vector', '45% vector (30% 256-bit, 15% 128-bit)' or 'scalar' (shares of all instructions)."""
    shares = {w: x for w, x in m.width_shares(v).items() if x >= 0.005}  # a width under 0.5% prints as 0%: left out
    total = sum(shares.values())
    if not shares or total <= 0:
        return "scalar"
    w, s = max(shares.items(), key=lambda t: t[1])
    if s >= ONE_WIDTH * total:
        return f"{pct(total)} {w}-bit vector"
    return f"{pct(total)} vector (" + ", ".join(f"{pct(x)} {wd}-bit" for wd, x in shares.items()) + ")"


def slow_candidates(mcm: pd.DataFrame, mca: pd.DataFrame, mix: pd.DataFrame, scheme: str, op: str, compiler: str,
                    base: str, v: str) -> list[dict]:
    """Instructions v executes more of than base and that a CPU model makes slow (llvm-mca latency
    >= slow_latency), grouped by (slow CPUs, latency): names, counts, and how much higher v's
    estimate is on those CPUs than on the others. Simulated (a cost model), never measured."""
    if mcm is None or mcm.empty or mix is None or mix.empty:
        return []
    mn = mix[(mix["scheme"] == scheme) & (mix["op"] == op) & (mix["compiler"] == compiler) & (mix["level"] == "mnemonic")]
    mca = mca[(mca["scheme"] == scheme) & (mca["op"] == op) & (mca["compiler"] == compiler)] \
        if mca is not None and len(mca) else pd.DataFrame(columns=["variant", "cpu", "predicted_cycles", "predicted_cycles_all"])
    mnb = mn[mn["variant"] == base].groupby("mnemonic")["count"].sum()
    mnv = mn[mn["variant"] == v].groupby("mnemonic")["count"].sum()
    mm = mcm[(mcm["scheme"] == scheme) & (mcm["op"] == op) & (mcm["compiler"] == compiler) & (mcm["variant"] == v)]
    groups: dict[tuple, dict] = {}
    for name, sub in mm.groupby("mnemonic"):
        slow = sub[sub["slow"].astype(bool)]
        added = float(mnv.get(name, 0.0)) - float(mnb.get(name, 0.0))
        if slow.empty or added <= 0:
            continue
        lat = float(slow["max_latency"].max())
        slow_cpus = tuple(sorted(slow["cpu"].astype(str)))
        pred = mca[(mca["variant"] == v) & mca["cpu"].isin(slow_cpus)]["predicted_cycles"]
        # only what could matter: added x latency at least MIN_SHARE of the estimate on a slow CPU
        if len(pred) and added * lat < MIN_SHARE * float(pred.max()):
            continue
        fast = sub[~sub["slow"].astype(bool)]
        g = groups.setdefault((slow_cpus, lat), {"slow": list(slow_cpus), "fast": sorted(fast["cpu"].astype(str)),
                                                  "latency": lat, "names": [], "weight": 0.0,
                                                  "fast_latency": float(fast["max_latency"].max()) if len(fast) else math.nan})
        g["names"].append((name, added))
        g["weight"] += added * lat
    out = sorted(groups.values(), key=lambda g: -g["weight"])
    for g in out:
        g["factor"] = math.nan
        if len(mca) and g["fast"]:
            sv = mca[(mca["variant"] == v) & mca["cpu"].isin(g["slow"])]["predicted_cycles_all"]
            fv = mca[(mca["variant"] == v) & mca["cpu"].isin(g["fast"])]["predicted_cycles_all"]
            if len(sv) and len(fv) and fv.min() > 0:
                g["factor"] = float(sv.max() / fv.min())
    return out
