"""The results model: the one reader of DIR/results/ (tables, summary.json, spins.parquet) and the
manifest, and the chain and family types analyze and the report share. analyze writes results/;
report, show, explain and compare read them only through this module (never data/ or raw/):
families, their views and the chain come from summary.json.

Every comparison row carries one estimate (`speedup`) and one interval from the same method
(`ci_low`, `ci_high`, its guaranteed confidence `ci_level`, `method`); `interval(row)` is how every
reader gets them."""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd

from .model import ESTIMAND_SHORT, OLDEST_READABLE_RESULTS, RECORDED_DESIGN, RESULTS_SCHEMA_ADDED, RESULTS_SCHEMA_VERSION, Chain, Design, LayoutMode
from .errors import PqsimdError, command
from . import metrics as metrics_mod
from . import store
from .studydir import StudyDir

RESULT_TABLES = ("groups", "comparisons", "decomposition", "aa", "jobs", "attribution")
SCHEMA_VERSION = RESULTS_SCHEMA_VERSION  # what this reader understands (model.py: analyze writes the same)


@dataclass
class FamilyView:
    """One scheme family as the report shows it (from summary.json "families")."""

    name: str
    title: str
    kind: str
    schemes: list[str]  # the study's schemes of this family, in family order
    ops: list[str]
    labels: dict[str, str]
    scheme_labels: dict[str, str]
    views: dict
    self_check: str | None

    def label(self, op: str) -> str:
        return self.labels.get(op, op)

    def scheme_label(self, scheme: str) -> str:
        return self.scheme_labels.get(scheme, scheme.upper())

    def sort_ops(self, ops) -> list[str]:
        rank = {o: i for i, o in enumerate(self.ops)}
        return sorted(set(ops), key=lambda o: (rank.get(o, len(rank)), o))

    def shown_ops(self, ops) -> list[str]:
        """Ops for figures: the family's order, without its self-check op."""
        return [o for o in self.sort_ops(ops) if o != self.self_check]

    @property
    def macro_prefix(self) -> str:
        p = self.views.get("macro_prefix")
        return p if isinstance(p, str) and p.isalpha() else "".join(ch for ch in self.name.title() if ch.isalpha())


def counted_by(summary: dict, scheme: str, variant: str, compiler: str, manifest: dict) -> str:
    """Who counted one build's instructions: the single-step counter for a build analyze recorded as stepped
    (summary.json `stepped`: AVX-512 builds valgrind cannot run), else the study's counting tool."""
    for r in (summary or {}).get("stepped") or []:
        if (r.get("scheme"), r.get("variant"), r.get("compiler")) == (scheme, variant, compiler):
            return "single-stepped natively under ptrace"
    return counting_tool(manifest)


def counting_tool(manifest: dict) -> str:
    """Who counted a study's instructions, for captions: callgrind (x86-64), or our QEMU plugin
    (aarch64, riscv64 under qemu-user: "emulated", with the vector length where the ISA has one); the
    manifest's isa.counting (run/backends.py)."""
    isa = (manifest.get("isa") or {}) if isinstance(manifest, dict) else {}
    if isa.get("counting") != "qemu-plugin":
        return "callgrind"
    if isa.get("native") is False:  # every number of an emulated study says so (and at which vector length)
        return "our QEMU plugin (emulated" + (f", VLEN {isa['vlen']}" if isa.get("vlen") is not None else "") + ")"
    return "our QEMU plugin"


@dataclass
class Results:
    directory: Path
    groups: pd.DataFrame
    comparisons: pd.DataFrame
    decomposition: pd.DataFrame
    summary: dict = field(default_factory=dict)
    study: dict = field(default_factory=dict)
    manifest: dict = field(default_factory=dict)
    aa: pd.DataFrame = field(default_factory=pd.DataFrame)
    jobs: pd.DataFrame = field(default_factory=pd.DataFrame)
    attribution: pd.DataFrame = field(default_factory=pd.DataFrame)

    # -- what the study holds ------------------------------------------------------------
    @property
    def metrics(self) -> list[str]:
        ms = set()
        for df in (self.comparisons, self.groups):
            if "metric" in df.columns:
                ms.update(df["metric"].dropna().astype(str))
        return sorted(ms, key=lambda m: (m != metrics_mod.TIME, m))

    @property
    def isa(self) -> str | None:
        return self.summary.get("isa") or ((self.manifest or {}).get("isa") or {}).get("name")

    def unit(self, metric: str) -> str:
        """The metric's unit per call as this study prints it: what analyze wrote (summary `units`: the
        study's ISA's tick unit for times), else what the registry says for its ISA (older results)."""
        units = self.summary.get("units") if isinstance(self.summary.get("units"), dict) else {}
        return str(units.get(metric) or metrics_mod.unit_of(metric, self.isa))

    @property
    def tick_note(self) -> str:
        return metrics_mod.tick_note(self.isa)

    @property
    def counted_by(self) -> str:
        return counting_tool(self.manifest or {})

    @property
    def speed_metrics(self) -> list[str]:
        """The study's metrics whose ratio is a speedup (metrics.Ratio.SPEEDUP; not stack, size)."""
        return [m for m in self.metrics if metrics_mod.reads_as_speedup(m)]

    @property
    def timed_nothing(self) -> bool:
        """A study whose metrics were all counted or measured in bytes (instructions, size, stack, ...):
        no clock was read, so nothing said of timing (design, warm-up, intervals over jobs) applies."""
        ms = self.metrics
        return bool(ms) and not any(m in metrics_mod.REGISTRY and metrics_mod.REGISTRY[m].timed for m in ms)

    @property
    def primary_metric(self) -> str:
        """The first speed metric (ticks first); a study of costs alone (stack, size) has its first cost."""
        return metrics_mod.primary(self.metrics)

    @cached_property
    def chain(self) -> Chain:
        return Chain.from_dict(self.summary.get("chain"))

    @property
    def counts_only(self) -> bool:
        """A study that counted only (mix, sim, ct, hazards): no comparisons, its views alone."""
        return bool(self.summary.get("mix_only"))

    @cached_property
    def families(self) -> list[FamilyView]:
        """The families with results, in the study's scheme order."""
        present = set()
        for df in (self.comparisons, self.groups):
            if "scheme" in df.columns:
                present.update(df["scheme"].dropna().astype(str))
        if self.counts_only:  # counts alone (mix, sim, ct, hazards): the study's parameter sets
            present.update(str(s) for s in ((self.study.get("study") or {}).get("schemes") or []))
        out: list[FamilyView] = []
        for name, f in (self.summary.get("families") or {}).items():
            schemes = [s for s in f.get("schemes", {}) if s in present]
            if not schemes:
                continue
            out.append(FamilyView(
                name=name, title=f.get("title", name), kind=f.get("kind", ""), schemes=schemes,
                ops=list(f.get("ops", [])), labels=dict(f.get("labels", {})),
                scheme_labels={s: v.get("label", s.upper()) for s, v in f.get("schemes", {}).items()},
                views=dict(f.get("views", {})), self_check=f.get("self_check")))
        known = {s for f in out for s in f.schemes}
        orphans = sorted(present - known)
        if orphans:  # results whose family summary.json does not describe: show them plainly
            out.append(FamilyView("other", "Other schemes", "", orphans, [], {}, {}, {}, None))
        order = [str(s) for s in (self.study.get("study", {}) or {}).get("schemes", []) or []]
        rank = {s: i for i, s in enumerate(order)}
        out.sort(key=lambda f: min((rank.get(s, len(rank)) for s in f.schemes), default=len(rank)))
        return out

    @cached_property
    def chain_families(self) -> list[FamilyView]:
        """The families with a comparison other than an ablation's: a study of an ablation's cells
        alone has nothing for the chain's views (Table 1, the stage figures, the portfolio)."""
        c = self.comparisons
        if c.empty or "stage" not in c.columns:
            return []
        schemes = set(c.loc[c["stage"].astype(str) != "ablation", "scheme"].astype(str))
        return [f for f in self.families if schemes & set(f.schemes)]

    def family_of(self, scheme: str) -> FamilyView | None:
        return next((f for f in self.families if scheme in f.schemes), None)

    @property
    def schemes(self) -> list[str]:
        return [s for f in self.families for s in f.schemes]

    @cached_property
    def variants(self) -> list[str]:
        vs = set()
        if "variant" in self.groups.columns:
            vs.update(self.groups["variant"].dropna().astype(str))
        for col in ("baseline", "variant"):
            if col in self.comparisons.columns:
                vs.update(self.comparisons[col].dropna().astype(str))
        order = list((self.summary.get("study") or {}).get("variants") or []) + self.chain.variants
        rank = {v: i for i, v in enumerate(dict.fromkeys(order))}
        return sorted(vs - self.aa_duplicates - self.ablation_cells, key=lambda v: (rank.get(v, len(rank)), v))

    @property
    def ablation_cells(self) -> set[str]:
        """An ablation's partial builds (neither all-C nor full native): reported in the attribution, not
        beside the variants."""
        out = set()
        for a in self.summary.get("ablations") or []:
            groups = set(a.get("groups") or [])
            out |= {v for v, c in (a.get("cells") or {}).items() if c and set(c) != groups}
        return out

    @property
    def aa_duplicates(self) -> set[str]:
        """The A/A duplicate builds' variant ids: reported in the A/A check, not beside the variants."""
        return set(((self.summary.get("aa_check") or {}).get("pairs") or {}).values())

    @cached_property
    def explanations(self) -> pd.DataFrame:
        """results/explanations (analyze/explanations.py): a sentence per headline, outlier and slowdown;
        empty for results of a pqsimd before it or a study with nothing to explain."""
        return read_table(self.directory, "explanations", strict=False)

    @cached_property
    def headlines(self) -> pd.DataFrame:
        """results/headlines (analyze/explanations.headline_picks, the one headline rule): per family the hand
        stage's largest and smallest speedup and each headline range's ends, of the primary metric; empty for
        results of a pqsimd before it."""
        t = read_table(self.directory, "headlines", strict=False)
        if t.empty and not (StudyDir(self.directory).results_dir / "headlines.parquet").exists():
            from .headlines import headline_table  # results of an older pqsimd: the same rule over its comparisons

            t = headline_table(self.comparisons, self.summary.get("families") or {}, self.chain, self.primary_metric,
                               self.primary_compiler)
        return t

    def explanation_missing(self, family: str) -> str:
        """The one line a family's explanations give when instruction counts or the mix were not measured."""
        e = self.explanations
        if e.empty or "missing" not in e.columns:
            return ""
        m = e[(e["family"] == family) & e["missing"].fillna("").astype(str).ne("")]["missing"]
        return str(m.iloc[0]) if len(m) else ""

    @cached_property
    def compilers(self) -> list[str]:
        listed = list((self.summary.get("study") or {}).get("compilers") or [])
        have = set()
        for df in (self.groups, self.comparisons):
            if "compiler" in df.columns:
                have.update(df["compiler"].dropna().astype(str))
        return [c for c in listed if c in have] + sorted(have - set(listed))

    def hand_of(self, fam) -> "Step | None":
        """The family's hand stage (model.Chain.hand_for over the variants the study has groups of in its
        parameter sets): the chain's own, or Keccak's from its plain C."""
        g = self.groups
        timed = set(g.loc[g["scheme"].isin(fam.schemes), "variant"]) if not g.empty and "scheme" in g else set()
        return self.chain.hand_for(timed)

    @property
    def primary_compiler(self) -> str | None:
        cs = self.compilers
        return cs[0] if cs else None

    @property
    def design(self) -> str:
        return str(self.summary.get("design") or RECORDED_DESIGN)

    def design_notes(self) -> tuple[str, str, str]:
        """(design, warm-up, carry-over) as one-line statements, from what analyze recorded."""
        if self.timed_nothing:
            none = "not applicable: nothing was timed"
            return (f"nothing timed: exact counts per call ({', '.join(self.metrics)}), one job per build, compared "
                    f"exactly", none, none)
        paired = self.design == Design.PAIRED
        design = (f"{self.design} (all variants in one process, a fresh random order every spin)" if paired
                  else f"{self.design} (one process per variant)")
        w = self.summary.get("warmup") or {}
        parts = []
        sized = w.get("warmup_spins_sized")
        if sized and sized[0] != sized[1]:
            parts.append(f"{sized[0]}–{sized[1]} untimed warm-up spins per op (budget-sized)")
        elif sized or w.get("warmup_spins") is not None:
            parts.append(f"{(sized or [w.get('warmup_spins')])[0]} untimed warm-up spin(s) per op")
        if paired and w.get("warmup_ns"):
            parts.append(f"each build run untimed for {float(w['warmup_ns']) / 1000:g} µs before its reps in every spin")
            if w.get("nowarm_ops"):
                parts.append(f"except {', '.join(w['nowarm_ops'])} (longer than the warm-up itself)")
        warm = "; ".join(parts) or "not recorded (results from an older pqsimd: re-run pqsimd analyze)"
        c = self.summary.get("carryover")
        if paired and c is None:
            carry = "not recorded (results from an older pqsimd: re-run pqsimd analyze)"
        elif not paired:
            carry = "not tested (needs the paired design's shuffled order)"
        elif not c.get("tested"):
            carry = ("not testable: no timed group has two preceding builds with >= 3 spins each (one build per "
                     "job, exact counts only, or too few spins)")
        elif c.get("flagged"):
            g = self.groups
            worst = g.loc[g["carryover"].astype(bool)] if "carryover" in g.columns else g.iloc[0:0]
            detail = ""
            if len(worst):
                r = worst.iloc[int(np.argmax(np.abs(worst["carryover_shift"].to_numpy(dtype=float))))]
                detail = (f"; worst {r['scheme']} {r['op']} {r['variant']} ({r['compiler']}) "
                          f"{float(r['carryover_shift']):+.0%} after {r['carryover_after']}")
            carry = f"found in {c['flagged']} of {c['tested']} groups{detail} (groups.csv carryover_*)"
        else:
            carry = (f"none found in {c['tested']} groups (Kruskal-Wallis over the build run just before, within "
                     f"each position of the spin, Holm)")
        if paired and c and c.get("position0_tested"):
            carry += (f"; first in the spin (after the driver wrote the last spin's results): "
                      f"{c.get('position0_flagged', 0)} of {c['position0_tested']} groups differ (groups.csv position0_*)")
        return design, warm, carry

    def clock_note(self) -> str | None:
        """The clock the jobs read, its step, and what the step did to the numbers (analyze's `clock`)."""
        c = self.summary.get("clock")
        if not isinstance(c, dict):
            return None
        clocks = "; ".join(f"{k} in {n} job{'s' * (n != 1)}" for k, n in (c.get("clocks") or {}).items())
        out = [clocks or "no timing jobs"]
        s = c.get("steps") or {}
        if s.get("jobs"):
            said = f"the samples' own lattice in {s.get('from_samples', 0)} of {s['jobs']} jobs"
            if s.get("calibration_disagrees"):
                said += (f" ({s['calibration_disagrees']} job(s) calibrated "
                         f"{'/'.join(str(x) for x in s.get('calibrated') or [])}: the lattice is used)")
            out.append(f"step from {said}")
        if c.get("groups"):
            out.append(f"{c.get('groups_over_0.1%', 0)} of {c['groups']} groups have a per-call lattice step "
                       f"(step / calls per sample) above 0.1% of their median ({c.get('groups_over_1%', 0)} above 1%)")
        w = c.get("worst")
        if w:
            out.append(f"coarsest {w['scheme']} {w['op']} {w['variant']} ({w['compiler']}) "
                       f"±{100 * w['resolution_rel']:.2g}%")
        out.append(f"{c.get('comparisons_resolution_limited', 0)} comparison(s) resolution-limited (the clock's step, "
                   "not the jobs' spread, sets their interval); every interval is widened by its lattice step")
        if c.get("nonpositive_spins"):
            out.append(f"{c['nonpositive_spins']} spin median(s) <= 0 kept in the estimates")
        return "; ".join(out)

    def power_note(self) -> str | None:
        """When the study is too small to conclude: how many comparisons are inconclusive and the
        speedups they could have detected (the mde column: the smallest true speedup a faster verdict
        would find with 80% power at this study's size), from what analyze wrote."""
        c = self.comparisons
        if not len(c) or "verdict" not in c.columns:
            return "no comparisons"
        if "mde" not in c.columns:
            return "not recorded (results from an older pqsimd: re-run pqsimd analyze)"
        live = c[c["verdict"].isin(["faster", "slower", "same", "~"])]
        inc = live[live["verdict"] == "~"]
        withheld = int((c["verdict"] == "withheld").sum())
        if not len(live) and withheld:
            reasons = c.loc[c["verdict"] == "withheld", "reason"].dropna().astype(str)
            top = reasons.value_counts().index[0] if len(reasons) else "too few jobs; see the warnings"
            return f"{withheld} of {len(c)} comparisons withheld: {top}"
        if not len(inc):
            return None
        m = pd.to_numeric(inc["mde"], errors="coerce")
        m = m[np.isfinite(m)]
        jobs = pd.to_numeric(inc[["jobs_base", "jobs_var"]].min(axis=1), errors="coerce")
        text = f"{len(inc)} of {len(live)} comparisons are inconclusive (~)"
        if len(m):
            text += (f"; at this study's size they could detect only speedups beyond ×{m.median():.3g} (median; "
                     f"×{m.min():.3g}–×{m.max():.3g}) with 80% power")
        else:
            text += "; no speedup is detectable at this study's size"
        need = 6 if self.design == Design.PAIRED else 5
        if len(jobs.dropna()) and jobs.median() < need:
            text += f"; with {int(jobs.median())} jobs per group the study is too small to conclude: run {need} or more"
        return text

    def aa_note(self) -> str:
        """What the A/A check found (summary aa_check), in one line."""
        a = self.summary.get("aa_check") or {}
        if not a.get("ran"):
            return str(a.get("note") or "not run")
        fv = a.get("false_verdicts", 0)
        counts = ", ".join(f"{n} {v}" for v, n in (a.get("verdicts") or {}).items())
        return (f"{a.get('kind', 'A/A')}: {fv} false verdict(s) (faster/slower) in {a.get('comparisons')} comparisons "
                f"with a true speedup of 1 ({counts}); intervals excluding 1: "
                f"{100 * float(a.get('ci_excludes_1') or 0):.1f}%")

    def layout_note(self) -> str:
        """How the code was laid out and what layout did (summary layout, identical_code), in one line."""
        lay = self.summary.get("layout") or {}
        if not lay:
            return "not recorded (results of an older pqsimd: every job loaded the builds as linked)"
        if lay.get("mode") != LayoutMode.RANDOM:
            return str(lay.get("note") or LayoutMode.FIXED)
        n = lay.get("copies_per_job")
        text = f"randomized per job, {n} cop{'y' if n == 1 else 'ies'} of every build per job"
        if lay.get("median_layout_sd") is not None:
            text += (f"; layout SD median {100 * lay['median_layout_sd']:.1f}%, largest {100 * lay['max_layout_sd']:.1f}%, "
                     f"above 1% in {lay.get('groups_above_1pct', 0)} of {lay.get('groups_with_layouts')} groups")
        ic = self.summary.get("identical_code") or {}
        if ic.get("n"):
            text += (f"; identical code: {ic.get('verdicts', 0)} faster/slower verdict(s) in {ic['n']} comparisons "
                     f"(at most about {ic.get('expected_at_most', 0):g} expected)")
            if ic.get("rows_to_test_level"):
                text += (f", a check too small to test the level (no miss in {ic['n']} rows still allows a miss rate "
                         f"up to {100 * float(ic.get('miss_rate_bound', 1)):.0f}%; it takes {ic['rows_to_test_level']})"
                         if not ic.get("can_test_level") else "")
        copies = lay.get("copies") or {}
        if copies.get("recommended"):
            text += (f"; copies per job the layout variance asks for: {copies['recommended']} (median comparison "
                     f"{copies.get('median_needed', 0):g}, cap {copies.get('cap')})")
        return text

    def cliffs_note(self) -> str:
        c = self.summary.get("cliffs") or {}
        if not c.get("groups"):
            return "not judged (no laid-out copies)"
        text = (f"{c.get('flagged', 0)} of {c['groups']} laid-out groups have a cliff copy ({c.get('cliff_copies', 0)} "
                f"of {c.get('copies', 0)} copies); rule: {c.get('rule', 'n/a')}")
        rt = c.get("retimed") or []
        if rt:
            text += "; re-timed: " + ", ".join(f"{r['group']} {r['test']} {r['ratio']:.3f}× {r['verdict']} "
                                               f"({r['belongs']})" for r in rt[:4])
        return text

    def not_measured_notes(self) -> list[str]:
        """One line per counting metric that left builds out (the manifest's `metrics` record: a build the
        backend cannot run, AVX-512 under valgrind's simulation), naming the builds and the reason."""
        out = []
        for metric, rec in sorted(((self.manifest or {}).get("metrics") or {}).items()):
            recs = rec.values() if metric == metrics_mod.SIM and isinstance(rec, dict) and "skipped" not in rec \
                else [rec]
            for r in recs:
                skipped = (r or {}).get("skipped") if isinstance(r, dict) else None
                if not skipped:
                    continue
                where = f" ({r['geometry']['name']})" if isinstance(r.get("geometry"), dict) else ""
                reasons = {}
                for build, why in skipped.items():
                    reasons.setdefault(str(why).split(": ", 1)[-1], []).append(str(build))
                out += [f"{metric}{where}: not measured for {', '.join(sorted(b))}: {why}" for why, b in reasons.items()]
        return out

    def budget_note(self) -> str | None:
        """One line on the ops the time budget sized below the asked spins x reps (summary `budget`), whose
        intervals rest on fewer samples than the rest; None when none was cut or the results say nothing."""
        b = self.summary.get("budget")
        if not isinstance(b, dict) or not b.get("cut"):
            return None
        ops = b.get("ops") or []
        return (f"{b['cut']} op(s) got fewer than the asked {b.get('spins')} spins x {b.get('reps')} reps from the "
                f"{b.get('budget_s')} s budget per job and op (down to {100 * float(b.get('least_share') or 0):.0f}%: "
                f"{', '.join(ops[:6])}{', ...' if len(ops) > 6 else ''}), so their intervals may be wider than the "
                f"capped ops'; a study with a larger --budget (a new directory: the plan fixes it) times them in full")

    def coresidency_note(self) -> str:
        c = self.summary.get("coresidency") or {}
        if not c.get("rows"):
            return "not measured (no build timed alone: [study] alone = 0, or results of an older pqsimd)"
        text = (f"{c['rows']} groups timed alone too; paired/alone median {c.get('median_ratio'):.3f}×, "
                f"{c.get('flagged', 0)} beyond the threshold at {100 * c['level']:.2f}% (worst {c.get('worst')})")
        return text + self._coresidency_power()

    def _coresidency_power(self) -> str:
        """'; not tested with power at this size: ...' when the co-residency intervals (median half-width)
        are wider than the threshold they are judged against, so none flagged says little; '' otherwise."""
        c = self.summary.get("coresidency") or {}
        half, t = c.get("median_halfwidth"), read_table(self.directory, "coresidency", strict=False)
        if half is None and len(t) and {"ci_low", "ci_high"} <= set(t.columns):
            w = np.sqrt(pd.to_numeric(t["ci_high"], errors="coerce") / pd.to_numeric(t["ci_low"], errors="coerce")) - 1
            w = w[np.isfinite(w)]
            half = float(w.median()) if len(w) else None
        thr = self.summary.get("threshold")
        if half is None or thr is None or not half > float(thr):
            return ""
        n = pd.to_numeric(t["n_alone"], errors="coerce").dropna() if "n_alone" in t.columns else pd.Series(dtype=float)
        per = f"{int(n.median())} alone job(s) per group" if len(n) else "this size"
        return (f"; not tested with power at {per}: its intervals are ±{100 * half:.1f}% (median), wider than the "
                f"±{100 * float(thr):.0f}% threshold, so none flagged does not mean none: a study with --alone 5 "
                f"(a new directory: the plan fixes it) tests it")

    def layout_table(self, top: int = 15):
        """Groups ranked by their layout SD (results/groups layout_sd), the most layout-sensitive first."""
        g = self.groups
        if g is None or "layout_sd" not in g.columns:
            return None
        g = g[g["layout_sd"].notna()].sort_values("layout_sd", ascending=False)
        return g[["scheme", "op", "variant", "compiler", "median", "n_layouts", "layout_sd", "layout_share"]].head(top)

    def jobs_note(self) -> str:
        j = self.summary.get("jobs") or {}
        if not j.get("judged"):
            return "not judged (fewer than 3 jobs, or results from an older pqsimd)"
        ids = j.get("disturbed_ids") or []
        return (f"{len(ids)} of {j['judged']} jobs" + (f": {', '.join(ids)} (results/jobs.csv)" if ids else
                                                         " (none unlike its peers)"))

    def regime_note(self) -> str | None:
        """What the regime check found (summary regimes), in one line; None for results without it."""
        r = self.summary.get("regimes")
        if not isinstance(r, dict) or "candidates" not in r:
            return None
        text = (f"{r.get('flagged', 0)} comparison(s) flagged: the job-state test (the same jobs split off across "
                f"a parameter set's ops) found {r.get('by_job_state', 0)} of {r['candidates']} candidate splits, the "
                f"dip test {r.get('by_dip', 0)} of {r.get('tested', 0)} comparisons tested")
        w = r.get("without_minority") or {}
        if w.get("recomputed"):
            text += f"; without the minority's jobs {_changes(w)}"
        return text

    def shared_cpu_note(self) -> str | None:
        """Which timing jobs shared their CPU with another program (kept by --shared-cpu keep) and what
        that did to the verdicts (summary shared_cpu), in one line; None when none did."""
        r = self.summary.get("shared_cpu")
        if not isinstance(r, dict) or not r.get("jobs"):
            return None
        waited = r.get("waited_fraction") or {}
        jobs = ", ".join(f"{j} ({100 * float(f):.0f}%)" for j, f in list(waited.items())[:6])
        more = f" and {len(waited) - 6} more" if len(waited) > 6 else ""
        text = (f"{r['jobs']} of {r.get('timing_jobs')} timing jobs waited more than a quarter of their time for their "
                f"CPU (another program used it) and were kept: {jobs}{more} (share of the time waited; "
                f"results/jobs.csv shared_cpu); {r.get('groups', 0)} group(s) and {r.get('comparisons', 0)} "
                "comparison(s) use them")
        w = r.get("without_shared") or {}
        if w.get("recomputed"):
            text += f"; without them {_changes(w)}"
            text += moves_text(w.get("estimates"), "; ")
        return text

    def without_rows(self, what: str) -> pd.DataFrame:
        """The comparisons recomputed without a set of jobs (what: "minority", a regime's minority state;
        "shared", the jobs that shared their CPU), those whose verdict changes first."""
        c = self.comparisons
        col = f"without_{what}_verdict"
        if not len(c) or col not in c.columns:
            return c.iloc[:0]
        done = c[c[col].fillna("").astype(str) != ""]
        return done.assign(_same=done[col] == done["verdict"]).sort_values("_same", kind="stable").drop(columns="_same")

    def without_line(self, row, what: str) -> str:
        """One comparison with all its jobs and without a set of them: '<set> <op> <base>→<variant>: ×36.3
        [36.2, 53.9] faster with all 10 jobs; without the minority's 3 (paired.…): ×36.2 [36.2, 37.3] faster
        (7 jobs)'."""
        g = row.get if hasattr(row, "get") else (lambda k, d=None: getattr(row, k, d))
        fam = self.family_of(str(g("scheme")))
        where = (f"{fam.scheme_label(g('scheme')) if fam else g('scheme')} {fam.label(g('op')) if fam else g('op')} "
                 f"{g('baseline')}→{g('variant')}" + (f" ({g('compiler')})" if len(self.compilers) > 1 else ""))

        def shown(sp, lo, hi, level, verdict):
            if not (isinstance(sp, (int, float)) and np.isfinite(sp)):
                return str(verdict)
            iv = f" [{lo:.4g}, {hi:.4g}] ({level_text(level)})" if np.isfinite(lo) and np.isfinite(hi) else ""
            if not _has_level(level):  # e.g. one job left: "[x, x] (0%)" says nothing
                iv = f" [{lo:.4g}, {hi:.4g}] (no confidence: too few jobs)" if iv else ""
            return f"×{sp:.4g}{iv} {verdict}"
        p = f"without_{what}_"
        jobs = int(g(f"{p}jobs") or 0)
        if what == "minority":
            gone = str(g("regime_jobs") or "").split()
            who = f"without the minority's {len(gone)} job(s) ({', '.join(gone)})"
        else:
            who = f"without the {int(g('shared_cpu_jobs') or 0)} job(s) that shared their CPU"
        after = shown(*(g(p + c) for c in ("speedup", "ci_low", "ci_high", "ci_level", "verdict")))
        return (f"{where}: {shown(g('speedup'), g('ci_low'), g('ci_high'), g('ci_level'), g('verdict'))} with all "
                f"jobs; {who}: {after} ({jobs} jobs)")

    def estimand_short(self) -> str | None:
        """What this study's speedups are, in a table caption's words (model.ESTIMAND_SHORT), from the
        estimand analyze recorded; None for results that did not record it."""
        applies = (self.summary.get("estimand") or {}).get("applies") if isinstance(self.summary.get("estimand"), dict) \
            else None
        return ESTIMAND_SHORT.get(applies) if applies else None

    def reading_note(self) -> str:
        """How to read a comparison's numbers, in one paragraph, from what analyze recorded (the full
        methods are summary.json `methods`, printed verbatim in the HTML report)."""
        fam = self.summary.get("family") if isinstance(self.summary.get("family"), dict) else {}
        if self.timed_nothing:
            thr = self.summary.get("threshold")
            return (f"nothing was timed: every number is an exact count per call ({', '.join(self.metrics)}), the "
                    f"same for the same binary, so a ratio is exact and has no interval; verdict: faster/slower "
                    f"(fewer/more) when it lies beyond ±{100 * float(thr or 0):.0f}%, same inside it (stack and size "
                    f"are told as a change in bytes). Methods in full: results/summary.json, report/index.html.")
        if "gamma" not in fam:
            return "methods not recorded (results from an older pqsimd: re-run pqsimd analyze)"
        alpha, thr = self.summary.get("alpha"), self.summary.get("threshold")
        how = {"fcr": f"FCR-adjusted, Benjamini-Hochberg: {fam.get('selected')} of {fam.get('m')} comparisons selected "
                      f"at alpha = {alpha}",
               "by": f"FCR-adjusted, Benjamini-Yekutieli (any dependence): {fam.get('selected')} of {fam.get('m')} "
                     f"comparisons selected at alpha = {alpha}",
               "bonferroni": f"Bonferroni over {fam.get('m')} comparisons",
               "none": "no multiplicity adjustment"}.get(fam.get("adjust"), str(fam.get("adjust")))
        other = fam.get("other") or {}
        if other.get("adjust") in ("fcr", "by"):
            how += (f"; {'Benjamini-Yekutieli' if other['adjust'] == 'by' else 'Benjamini-Hochberg'} would change "
                    f"{other.get('verdicts_changed')} verdict(s)")
        est = ("median over jobs of the job ratio (job median of the baseline / of the variant), with its "
               "distribution-free order-statistic interval" if self.design == Design.PAIRED else
               "ratio of the geometric means of the job medians, with the job-level t interval")
        laid = (self.summary.get("layout") or {}).get("mode") == LayoutMode.RANDOM and \
            (self.summary.get("layout") or {}).get("copies_per_job", 1) > 1
        if self.design == Design.PAIRED and laid and self.summary.get("estimand"):
            est = ("the typical layout: the median over jobs and copies of the ratio of one laid-out copy of the "
                   "baseline to one of the variant, with the clustered sign interval (jobs the clusters)")
        if fam.get("units") is not None and fam.get("comparisons") is not None:
            how += f"; {fam['comparisons']} comparisons as {fam['units']} units (those sharing a cliff copy count once)"
        short = self.estimand_short()
        if short and "; not " in short:
            est += " (" + short.split("; ", 1)[1] + ")"
        return (f"speedup = {est}; every interval is printed at a confidence of at least {100 * fam['level']:.2f}% "
                f"({how}); verdict: faster/slower when the interval lies beyond ±{100 * float(thr):.0f}%, same "
                f"inside it, ~ otherwise, withheld when the design cannot reach that confidence; δ = Cliff's delta "
                f"(descriptive). Methods in full: results/summary.json, report/index.html.")

    def comparison(self, metric: str, stage: str | None = None, baseline: str | None = None,
                   variant: str | None = None, compiler: str | None = "primary", scheme: str | None = None) -> pd.DataFrame:
        """Comparison rows; compiler "primary" (default) = the study's first compiler, within-compiler rows."""
        df = self.comparisons
        if df.empty:
            return df
        m = df["metric"] == metric
        if stage is not None:
            m &= df["stage"] == stage
        if baseline is not None:
            m &= df["baseline"] == baseline
        if variant is not None:
            m &= df["variant"] == variant
        if scheme is not None:
            m &= df["scheme"] == scheme
        if compiler is not None and "compiler" in df.columns:
            c = self.primary_compiler if compiler == "primary" else compiler
            m &= (df["compiler"] == c) & (df["baseline_compiler"] == c)
        return df[m]

    def lookup(self, metric: str, scheme: str, op: str, baseline: str, variant: str,
               compiler: str | None = None) -> dict | None:
        """The comparison row (as a dict) of one (metric, scheme, op, baseline, variant) within one compiler
        (default: the study's first), or None."""
        df = self.comparison(metric, baseline=baseline, variant=variant, compiler=compiler or "primary", scheme=scheme)
        if df.empty:
            return None
        rows = df[df["op"] == op]
        return None if rows.empty else rows.iloc[0].to_dict()

    def group(self, metric: str, scheme: str, op: str, variant: str, compiler: str | None = None) -> dict | None:
        df = self.groups
        if df.empty:
            return None
        m = ((df["metric"] == metric) & (df["scheme"] == scheme) & (df["op"] == op) & (df["variant"] == variant))
        if "compiler" in df.columns:
            m &= df["compiler"] == (compiler or self.primary_compiler)
        rows = df[m]
        return None if rows.empty else rows.iloc[0].to_dict()

    def spins(self) -> pd.DataFrame:
        """Every spin median (results/spins.parquet, written by analyze); empty if absent."""
        p = StudyDir(self.directory).results("spins.parquet")
        if not p.exists():
            return pd.DataFrame(columns=["metric", "scheme", "variant", "compiler", "op", "job", "spin", "value"])
        try:
            df = pd.read_parquet(p)
        except Exception as e:
            raise PqsimdError(f"cannot read {p} ({e.__class__.__name__}); re-run {command('analyze', self.directory)}") from None
        for c in ("metric", "scheme", "variant", "compiler", "op", "job"):
            if c in df.columns:
                df[c] = df[c].astype(str)
        return df

    def get(self, *names, default=None):
        """A setting looked up in summary.json, then the study file (top level or one table down)."""
        for source in (self.summary, self.study):
            v = find_key(source, *names)
            if v is not None:
                return v
        return default


def _changes(w: dict) -> str:
    """'2 of 62 verdict(s) change (~ -> faster 1, faster -> withheld 1)' from a without_* record."""
    how = ", ".join(f"{k} {n}" for k, n in (w.get("changes") or {}).items())
    return f"{w.get('verdicts_changed', 0)} of {w['recomputed']} verdict(s) change" + (f" ({how})" if how else "")


def moves_text(m: dict | None, lead: str = "") -> str:
    """'; the estimates move little: without / with median 1.000, range 0.976-1.031, 298 of 315 within
    ±2%' from a without_* record's estimates (recomputed rows only); "" from a record of an older pqsimd."""
    if not m:
        return ""
    if not m.get("n"):
        return (f"{lead}no estimate remains without them (too few other jobs): how far they moved the estimates is "
                f"measured only by a quiet rerun")
    within = m["within_threshold"] / m["n"]
    how = "little" if within >= 0.9 else "much" if within < 0.5 else "some"
    return (f"{lead}the estimates move {how}: without / with median {m['median']:.3f}, range {m['min']:.3f}-"
            f"{m['max']:.3f} (90% within {m['p05']:.3f}-{m['p95']:.3f}), {m['within_threshold']} of {m['n']} "
            f"within ±{m['threshold']:.0%}")


def level_text(v) -> str:
    """A confidence level as text: 95%, 97.85%, and never "100.0%" for a level short of 1 (a family
    level of 1 - 0.05/1696 reads 99.997%)."""
    x = 100 * float(v)
    for d in (0, 1, 2):
        r = round(x, d)
        if abs(r - x) < 5e-3 and (r < 100 or x >= 100):
            return f"{x:.{d}f}%"
    d = 2
    while d < 9 and x < 100 and round(x, d) >= 100:
        d += 1
    return f"{x:.{d}f}%"


def achieved_levels(levels) -> list[float]:
    """The distinct achieved levels (analyze's `*_ci_level`) of a set of printed intervals, ascending;
    missing ones are left out (an interval that is n/a has no level)."""
    out = set()
    for x in levels:
        try:
            v = float(x)
        except (TypeError, ValueError):
            continue
        if np.isfinite(v):
            out.add(round(v, 9))
    return sorted(out)


@dataclass(frozen=True)
class Levels:
    """How a table or caption states the levels of the intervals it prints: the one level they share,
    or, when they differ, each interval with its own (`per_row`)."""

    values: tuple[float, ...]

    @classmethod
    def of(cls, levels) -> "Levels":
        return cls(tuple(achieved_levels(levels)))

    @property
    def per_row(self) -> bool:
        return len(self.values) > 1

    def text(self, own: str = "each interval's own level after it") -> str:
        """'97.85%'; '50% to 97.85% (each interval's own level after it)'; 'n/a' when none is known.
        own: where a reader finds each interval's level (a figure: the results column)."""
        if not self.values:
            return "n/a"
        real = [v for v in self.values if _has_level(v)]  # an interval of no confidence is not labelled "0%"
        if not real:
            return "no confidence (too few jobs)"
        if not self.per_row:
            return level_text(real[0])
        if len(real) == 1:
            return f"{level_text(real[0])} ({own})"
        return f"{level_text(real[0])} to {level_text(real[-1])} ({own})"

    def after(self, level) -> str:
        """What follows an interval: its own level when the table's levels differ, else nothing."""
        if not self.per_row:
            return ""
        try:
            v = float(level)
        except (TypeError, ValueError):
            return ""
        if np.isfinite(v) and not _has_level(v):
            return " (no confidence: too few jobs)"
        return f" ({level_text(v)})" if np.isfinite(v) else ""


def _has_level(level) -> bool:
    """An interval with a confidence above 0 (one job's [x, x] has none, nor a box over three 50% cells);
    an unknown level counts as one."""
    try:
        v = float(level)
    except (TypeError, ValueError):
        return True
    return not (np.isfinite(v) and v <= 0.0)


def find_key(d: dict, *names):
    """The first of `names` found at the top level of `d` or in one of its sub-tables."""
    if not isinstance(d, dict):
        return None
    for n in names:
        if n in d and d[n] is not None:
            return d[n]
    for v in d.values():
        if isinstance(v, dict):
            for n in names:
                if n in v and v[n] is not None:
                    return v[n]
    return None


def interval(row) -> tuple[float, float, float, float]:
    """(estimate, ci_low, ci_high, ci_level) of a comparison row (dict or Series)."""
    g = row.get if hasattr(row, "get") else (lambda k, d=None: getattr(row, k, d))
    return tuple(float(g(k)) if g(k) is not None else float("nan")
                 for k in ("speedup", "ci_low", "ci_high", "ci_level"))  # type: ignore[return-value]


def read_table(directory: Path, name: str, *, strict: bool = True) -> pd.DataFrame:
    """results/<name>.parquet (else .csv) of a study; empty if absent. strict: a damaged file is a
    one-line error naming it; otherwise an empty table (an optional part says it has no data)."""
    try:
        return _read_table(StudyDir(directory).results_dir, name)
    except PqsimdError:
        if strict:
            raise
        return pd.DataFrame()


def read_summary(directory: Path) -> dict:
    return read_json(StudyDir(directory).results("summary.json"))


def _read_table(results: Path, name: str) -> pd.DataFrame:
    pq, csv = results / f"{name}.parquet", results / f"{name}.csv"
    try:
        if pq.exists():
            return pd.read_parquet(pq)
        if csv.exists():
            return pd.read_csv(csv)
    except Exception as e:  # truncated or foreign file
        raise PqsimdError(f"cannot read {pq if pq.exists() else csv} ({e.__class__.__name__}); "
                          f"re-run {command('analyze', results.parent)}") from None
    return pd.DataFrame()


def read_json(path: Path) -> dict:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def read_toml(path: Path) -> dict:
    if not path.exists():
        return {}
    try:
        return tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return {}


def computed_from(directory: Path) -> dict[str, dict[str, str | None]]:
    """What results/ is computed from: each raw file by the sha256 of its bytes (a job run again, or
    rows edited after analyze, change it) and the time its job finished."""
    return {p.name: {"sha256": store.sha256_file(p), "finished": (rec or {}).get("finished")}
            for p, rec in StudyDir(directory).job_records().items()}


def stale_jobs(directory: Path, summary: dict) -> int:
    """How many raw files differ from those results/ was computed from (new, changed or gone); 0 when
    results/ does not say (an older pqsimd) or the study has no raw files (results mailed without
    raw/, as a campaign takes them: nothing to compare with, and nothing to analyse again)."""
    return len(stale_files(directory, summary))


def stale_files(directory: Path, summary: dict) -> list[str]:
    """The raw files (by name) that differ from those results/ was computed from: new ones and ones run
    again first (by their sha256), then the gone; [] where stale_jobs says 0."""
    then = summary.get("computed_from")
    if not isinstance(then, dict) or not StudyDir(directory).raw_files():
        return []
    now = computed_from(directory)

    def same(before, current: dict) -> bool:
        if isinstance(before, dict):
            return before.get("sha256") == current["sha256"]
        return before == current["finished"]  # results of an older pqsimd kept the finish time only

    return [k for k, v in now.items() if k not in then or not same(then[k], v)] + [k for k in then if k not in now]


def read_summary_checked(results: Path, directory: Path, oldest: int) -> dict:
    """results/summary.json, refused in one line when it is missing, damaged, or of a results schema
    this pqsimd does not read (older than `oldest`, newer than SCHEMA_VERSION, or not a number)."""
    path = results / "summary.json"
    again = command("analyze", directory)
    if not path.is_file():
        raise PqsimdError(f"{results} has no summary.json: these results are incomplete (copy the study's whole "
                          f"results/ again, or re-run {again})")
    try:
        summary = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise PqsimdError(f"{path} cannot be read ({e.__class__.__name__}: damaged or not written by pqsimd); "
                          f"copy it again, or re-run {again}") from None
    if not isinstance(summary, dict):
        raise PqsimdError(f"{path} is not a pqsimd summary (not a JSON object); copy it again, or re-run {again}")
    version = summary.get("schema_version", 1)  # the first results had no version
    if not isinstance(version, int) or isinstance(version, bool):
        raise PqsimdError(f"{path}: schema_version {version!r} is not a results schema number (damaged or not "
                          f"written by pqsimd); copy it again, or re-run {again}")
    if version > SCHEMA_VERSION:
        raise PqsimdError(f"{results} was written by a newer pqsimd (results schema {version}; this one reads up to "
                          f"{SCHEMA_VERSION}); update pqsimd to read it")
    if version < oldest:
        raise PqsimdError(f"{results} was written by an older pqsimd (results schema {version}); re-run {again}")
    # older shapes, upgraded here so no reader tests the version again:
    #   schema <= 6: a laid-out job's value was the geometric mean of its copies' medians (7: their median)
    summary.setdefault("job_value_of_copies", "median" if version >= 7 else "mean")
    return with_advice_for(summary, directory)


def with_advice_for(summary: dict, directory: Path) -> dict:
    """The summary with its advice naming this study as it is read now: a study copied or moved since it
    was analysed (summary.json `advice_names`) gets commands that act on itself, not on the original, in the
    form pqsimd was started now (`.venv/bin/pqsimd` only works where it was typed)."""
    import shlex

    from .errors import invoked

    names = summary.get("advice_names")
    if not isinstance(names, dict):
        return summary  # results of an older pqsimd: their advice names the directory analysed
    then_dir, then_cmd = str(names.get("directory") or ""), str(names.get("invoked") or "")
    now_dir, now_cmd = str(directory), invoked()
    pairs = [(f"`{shlex.quote(then_cmd)} ", f"`{shlex.quote(now_cmd)} ")] if then_cmd and then_cmd != now_cmd else []
    if then_dir and then_dir != now_dir:
        pairs += [(f" {shlex.quote(then_dir)} ", f" {shlex.quote(now_dir)} "),
                  (f" {shlex.quote(then_dir)}`", f" {shlex.quote(now_dir)}`")]
    if not pairs:
        return summary

    def fix(x):
        if isinstance(x, str):
            for a, b in pairs:
                x = x.replace(a, b)
            return x
        if isinstance(x, dict):
            return {k: fix(v) for k, v in x.items()}
        if isinstance(x, list):
            return [fix(v) for v in x]
        return x

    return fix(summary)


def older_results_note(summary: dict, directory: Path | str = "DIR") -> str | None:
    """One line for results of an older schema (OLDEST_READABLE_RESULTS onward): what they lack, and how to
    bring them up to date (analysing again, which needs the study's raw/)."""
    version = summary.get("schema_version", 1)
    missing = [what for v, what in sorted(RESULTS_SCHEMA_ADDED.items()) if v > version]
    if not missing:
        return None
    return (f"analysed by an older pqsimd (results schema {version}): shown as analysed then, without "
            f"{'; '.join(missing)}; {command('analyze', directory)} (with the study's raw/) brings them up to date")


CT_MARK = "⚠ct"  # beside a speedup whose variant leaks a secret for that op (results/constant_time)


def with_ct_leaks(comparisons: pd.DataFrame, results: Path) -> pd.DataFrame:
    """The comparisons with `ct_leak`: the compared variant leaks a secret for that op and compiler (a
    confirmed site in results/constant_time), so every view can mark the speedup; False without ct results."""
    ct = _read_table(results, "constant_time") if (results / "constant_time.parquet").exists() else pd.DataFrame()
    if comparisons.empty or not {"scheme", "op", "variant", "compiler"} <= set(comparisons.columns):
        return comparisons
    leaks = set() if ct.empty else set(
        zip(*(ct.loc[ct["verdict"].eq("leak"), c] for c in ("scheme", "op", "variant", "compiler"))))
    comparisons = comparisons.copy()
    comparisons["ct_leak"] = [k in leaks for k in zip(comparisons["scheme"], comparisons["op"],
                                                       comparisons["variant"], comparisons["compiler"])]
    return comparisons


def has_comparisons(directory: Path) -> bool:
    """Whether analyze wrote comparisons (a study of counts and verdicts alone has none)."""
    results = StudyDir(Path(directory)).results_dir
    return any((results / f"comparisons.{x}").exists() for x in ("parquet", "csv"))


def check_study_dir(directory: Path) -> Path:
    directory = Path(directory)
    if not directory.is_dir():
        raise PqsimdError(f"no study directory at {directory}; create one with {command('run', directory)}")
    return directory


def counts_only_results(results: Path) -> bool:
    """Whether results/ are of a study that counted only (mix, sim, ct, hazards: no comparisons); a damaged
    summary is not, and read_summary_checked says what is wrong with it."""
    try:
        summary = json.loads((results / "summary.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(summary, dict) and bool(summary.get("mix_only"))


def load_study(directory: Path, oldest: int | None = None) -> Results:
    """Load DIR/results/ (plus study.toml, manifest.json); a one-line PqsimdError if it is not there.
    `oldest`: the oldest results schema the caller reads (a campaign reads the comparisons and spins of
    studies mailed in without raw files, which cannot be analysed again); default the current one."""
    directory = check_study_dir(directory)
    sd = StudyDir(directory)
    results = sd.results_dir
    counts_only = counts_only_results(results)
    if not results.is_dir() or not (counts_only or any((results / f"comparisons.{x}").exists() for x in ("parquet", "csv"))):
        raise PqsimdError(f"no results in {results}; run {command('analyze', directory)} first")
    summary = read_summary_checked(results, directory, oldest or OLDEST_READABLE_RESULTS)
    tables = {name: _read_table(results, name) for name in RESULT_TABLES}
    older = older_results_note(summary, directory)
    if older:
        summary["warnings"] = [older, *(summary.get("warnings") or [])]
    stale = stale_jobs(directory, summary)
    if stale and sd.analysed_elsewhere():  # analyze refuses it: say what the files are instead
        held = len(sd.raw_files())
        summary["warnings"] = [f"raw/ holds {held} file{'s' if held != 1 else ''} of jobs that are not part of these "
                               f"results, which were analysed from raw files this study does not hold (measured "
                               f"elsewhere): they cannot be analysed with them; measure this machine in a new "
                               f"directory", *(summary.get("warnings") or [])]
    elif stale:  # said first, in show's notes and the report's warnings
        summary["warnings"] = [f"stale: {stale} job{'s' if stale != 1 else ''} since these results were computed "
                               f"({summary.get('generated', 'earlier')}); run {command('analyze', directory)} to "
                               f"include {'them' if stale != 1 else 'it'}", *(summary.get("warnings") or [])]
    return Results(
        directory=directory, groups=tables["groups"], comparisons=with_ct_leaks(tables["comparisons"], results),
        decomposition=tables["decomposition"], aa=tables["aa"], jobs=tables["jobs"],
        attribution=tables["attribution"], summary=summary,
        study=read_toml(sd.study_toml), manifest=read_json(sd.manifest_json),
    )
