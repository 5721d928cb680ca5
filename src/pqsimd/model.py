"""The words a study is made of, each defined once: its design, the kinds of job it plans, how its
builds are laid out, what the report's family level adjusts for, what a shared CPU costs a job; and
its decomposition chain (`Chain`, `Step`), read by the catalog, analyze and the report alike.

Each is a `StrEnum`: its members are the very strings study.toml, plan.json, raw records and results
hold (so files of older pqsimd versions read unchanged), and the command line's choices are built
from them. Nothing else in the code spells these values.
"""

from __future__ import annotations

import math

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from .errors import PqsimdError


class Design(StrEnum):
    """How a study's jobs hold its builds."""
    PAIRED = "paired"  # every build of a parameter set in one process per job, a fresh order each spin
    SEPARATE = "separate"  # one process per build and job (the paper's)


class JobKind(StrEnum):
    """What one timing job is (its id's first part for paired and alone jobs: ids.py)."""
    PAIRED = "paired"
    SEPARATE = "separate"
    ALONE = "alone"  # one build of a paired study alone in its process (co-residency)


class LayoutMode(StrEnum):
    """Where a job's builds are in memory."""
    RANDOM = "random"  # every job relinks its own copies in a seeded order (layout.py)
    FIXED = "fixed"  # the builds as linked


class AloneLayouts(StrEnum):
    """Which copies an alone job loads."""
    PAIRED = "paired"  # alone job r loads paired job r's copies (co-residency with the layout held)
    OWN = "own"  # its own seeds


class AloneSets(StrEnum):
    FIRST = "first"  # each family's first parameter set
    ALL = "all"


class Multiplicity(StrEnum):
    """The family level every interval is printed at (stats/multiplicity.py)."""
    FCR = "fcr"  # Benjamini-Hochberg false coverage-statement rate
    BY = "by"  # Benjamini-Yekutieli, valid under any dependence
    BONFERRONI = "bonferroni"
    NONE = "none"


class SharedCpu(StrEnum):
    """What happens to a timing job whose CPU another program used (run/cpuclaim.py)."""
    DISCARD = "discard"  # run again, on an idle CPU when there is one
    KEEP = "keep"  # kept, marked; the verdicts are shown with and without such jobs
    ADAPT = "adapt"  # discard while the CPUs are quiet; once the sizing probe and a job's attempts show them
    # busy, keep (as keep) for the rest of the run, said in one line with the command for a quiet rerun


# A campaign's results/ (analyze/campaign.py writes, report/campaign.py reads): one version, here.
CAMPAIGN_SCHEMA_VERSION = 2  # 2: members whose spins.parquet disagrees with their comparisons are refused

# The results/ a study's analysis writes (analyze) and results.py reads: one version, here.
RESULTS_SCHEMA_VERSION = 7  # 2: compiler columns, design, chain and families in summary.json, spins.parquet;
# 3: job-level test columns, verdicts same/withheld, variance components; 4: one estimand and one
# interval per comparison (speedup, ci_*, ci_level, method, p_decision), the family level, jobs table;
# 5: every derived interval's level (decomposition factor_/share_*_ci_level, attribution *_ci_level);
# 6: the job-state regime test (comparisons regime_p, regime_dip_p, regime_jobs, without_minority_*), jobs
# that shared their CPU (jobs shared_cpu, cpu_waited_fraction; groups and comparisons shared_cpu_jobs;
# comparisons without_shared_*; summary shared_cpu); 7: the typical layout of a laid-out paired comparison
# (method csign: the clustered sign interval over jobs x copies; a laid-out job's value the median of its
# copies), comparisons identical_code_how and cliff_finding, summary estimand, layout copies (copies per job
# the measured layout variance asks for) and family units (comparisons sharing a cliff copy counted once)

# What each results schema added: results of an older pqsimd (from OLDEST_READABLE_RESULTS) are read as
# they are, and the report says which of these they lack rather than show them empty without a word.
OLDEST_READABLE_RESULTS = 4  # one estimand and interval per comparison: what show, report and campaigns need
RESULTS_SCHEMA_ADDED = {
    5: "the level of every derived interval",
    6: "the job-state regime test and the verdicts without jobs that shared their CPU",
    7: "the typical layout as the estimand of laid-out comparisons (csign), identical code up to commuted "
       "operands and cliff findings",
}

DEFAULT_DESIGN = Design.PAIRED
RECORDED_DESIGN = Design.SEPARATE  # what a record without a design was (schema 1: one process per build)
DEFAULT_LAYOUT = LayoutMode.RANDOM
UNRECORDED_LAYOUT = LayoutMode.FIXED  # studies planned before layouts were randomized
DEFAULT_ALONE_LAYOUTS = AloneLayouts.PAIRED
UNRECORDED_ALONE_LAYOUTS = AloneLayouts.OWN
DEFAULT_MULTIPLICITY = Multiplicity.FCR
DEFAULT_SHARED_CPU = SharedCpu.ADAPT


def copies_per_job(layout: str | None, layouts) -> int:
    """The laid-out copies of each build a job loads: `layouts` under randomized layouts, else 1 (a
    missing layout is UNRECORDED_LAYOUT). The one rule: the plan's loader (StudyDir.read_plan) puts it in
    the plan's settings, and every reader takes it from there."""
    return max(1, int(layouts or 1)) if (layout or UNRECORDED_LAYOUT) == LayoutMode.RANDOM else 1


def choices(kind: type[StrEnum]) -> list[str]:
    """The values of an enum, in order: a command-line option's choices."""
    return [m.value for m in kind]


class Step(tuple):
    """One step of the decomposition chain: (stage, base, variant), with its label. A tuple, so a
    step unpacks as `stage, base, variant`."""

    label: str

    def __new__(cls, stage: str, base: str, variant: str, label: str = ""):
        t = super().__new__(cls, (stage, base, variant))
        t.label = label or stage
        return t

    @property
    def stage(self) -> str:
        return self[0]

    @property
    def base(self) -> str:
        return self[1]

    @property
    def variant(self) -> str:
        return self[2]

    def to_dict(self) -> dict[str, str]:
        return {"stage": self.stage, "from": self.base, "to": self.variant, "label": self.label}


@dataclass(frozen=True)
class Chain:
    """The decomposition: each step a stage, the product of the steps the total (first → last);
    defined per ISA in data/variants.toml [chains.<isa>] (catalog.chain), carried into the manifest
    and summary.json (to_dict) and read back by the report (from_dict)."""

    steps: tuple[Step, ...]
    extra_baseline: str
    also: tuple[Step, ...] = ()  # further comparisons made when both variants are present
    compiler_view: tuple[str, ...] = ()
    # implementations side by side (analyze/crossimpl.py): (name, C variant, hand-SIMD variant), the reference first
    implementations: tuple[tuple[str, str, str], ...] = ()

    @property
    def labels(self) -> dict[str, str]:
        return {s.stage: s.label for s in (*self.steps, *self.also)}

    @property
    def variants(self) -> list[str]:
        return ([self.steps[0].base] + [s.variant for s in self.steps]) if self.steps else []

    @property
    def first(self) -> str | None:
        return self.steps[0].base if self.steps else None

    @property
    def last(self) -> str | None:
        return self.steps[-1].variant if self.steps else None

    @property
    def hand(self) -> Step | None:
        """The chain's last step: the hand-written SIMD stage of the paper's Table 1."""
        return self.steps[-1] if self.steps else None

    def hand_for(self, variants) -> Step | None:
        """The hand stage of a family whose builds are `variants`: the chain's hand step where the family has its
        baseline, else a further step into the same hand variant from a baseline it has (Keccak's plain C → AVX2)."""
        h = self.hand
        if h is None or h.base in variants:
            return h
        return next((s for s in self.also if s.variant == h.variant and s.base in variants), h)

    def step(self, stage: str) -> Step | None:
        return next((s for s in (*self.steps, *self.also) if s.stage == stage), None)

    def stage_label(self, stage: str) -> str:
        s = self.step(stage)
        if s is not None:
            return f"{s.label} ({s.base}→{s.variant})"
        return {"cumulative": f"cumulative ({self.first}→X)", "extra": f"extra ({self.extra_baseline}→X)",
                "cross_compiler": "across compilers", "aa": "A/A"}.get(stage, stage)

    def to_dict(self) -> dict[str, Any]:
        d = {"extra_baseline": self.extra_baseline, "steps": [s.to_dict() for s in self.steps],
             "also": [s.to_dict() for s in self.also], "compiler_view": list(self.compiler_view)}
        if self.implementations:
            d["implementations"] = [{"name": n, "c": c, "simd": v} for n, c, v in self.implementations]
        return d

    @classmethod
    def from_dict(cls, d: dict | None, where: str | None = None) -> "Chain":
        """A chain from its dict: checked where it is data someone wrote (`where`: data/variants.toml,
        a study.toml), one line naming what is wrong; as results carry it (where=None), taken as
        written, and an older study's missing chain is an empty one."""
        d = d or {}

        def steps_of(key: str, required: bool) -> tuple[Step, ...]:
            raw = d.get(key, [])
            if where is not None and (not isinstance(raw, list) or (required and not raw)):
                raise PqsimdError(f"{where}: [chain] needs `{key}`, a list of {{stage, from, to}} tables")
            out = []
            for s in raw:
                if where is not None and (not isinstance(s, dict) or
                                          not all(isinstance(s.get(k), str) for k in ("stage", "from", "to"))):
                    raise PqsimdError(f"{where}: every chain {key} entry needs string `stage`, `from` and `to`, got {s!r}")
                out.append(Step(s["stage"], s["from"], s["to"], str(s.get("label", s["stage"]))))
            return tuple(out)

        steps = steps_of("steps", True)
        if where is not None:
            for a, b in zip(steps, steps[1:]):
                if a.variant != b.base:
                    raise PqsimdError(f"{where}: chain steps must connect ({a.variant} then {b.base})")
        impls = d.get("implementations", [])
        if where is not None and (not isinstance(impls, list) or not all(
                isinstance(i, dict) and all(isinstance(i.get(k), str) and i.get(k) for k in ("name", "c", "simd"))
                for i in impls)):
            raise PqsimdError(f"{where}: `implementations` must be a list of {{name, c, simd}} tables (the C and the "
                              f"hand-SIMD variant of each implementation), got {impls!r}")
        return cls(steps, str(d.get("extra_baseline", steps[-1].base if steps else "")), steps_of("also", False),
                   tuple(str(x) for x in d.get("compiler_view", [])),
                   tuple((i["name"], i["c"], i["simd"]) for i in impls if isinstance(i, dict)))


# How each fact of an explanation (analyze/explanations.py) was obtained: the tag printed after it and
# what the tag means, defined once for the sentences, the report's legend and `pqsimd explain`.
EVIDENCE_WORDS = {
    "ticks": ("measured", "the time per call on this machine: the comparison's estimate and interval"),
    "instructions": ("counted", "instructions per call counted exactly under callgrind: a measurement, not a model"),
    "mix": ("counted", "instruction classes and vector widths counted exactly under callgrind"),
    "sim": ("simulated", "valgrind's cache and branch model under a stated geometry, not this machine's counters"),
    "mca": ("simulated", "llvm-mca's model of a CPU: an estimate, not a measurement"),
}


# How a sentence says a comparison's speed (issue 45): the word comes from the comparison's verdict
# (stats/interval.py VERDICTS, read off the interval), never from the point estimate; one helper for
# every sentence (the Why list's headlines, results/explanations, results/footprint).
SPEED_DIRECTIONS = ("faster", "slower")  # the verdicts that say a direction; a sentence may say "than"


def speed_words(speedup: float, verdict: object, factor, ci: str = "") -> str:
    """'6.1× faster', '1.12× slower (0.89×)', 'the same speed (0.997×, within the threshold)', 'no verdict
    (0.98×: the interval is too wide to decide)', '26.9× with its verdict withheld', or the factor alone for
    any other verdict (n/a). `factor` formats a ratio ('6.1×'); `ci` (' [lo, hi]' or '') follows it."""
    v = str(verdict)
    try:
        usable = math.isfinite(float(speedup)) and float(speedup) > 0
    except (TypeError, ValueError):
        usable = False
    if not usable:  # no ratio to read a word beside (a damaged or empty row): the factor as it is
        return f"{factor(speedup)}{ci}"
    if v == "faster":
        return f"{factor(speedup)} faster{ci}"
    if v == "slower":
        return f"{factor(1 / speedup)} slower ({factor(speedup)}{ci})"
    if v == "same":
        return f"the same speed ({factor(speedup)}{ci}, within the threshold)"
    if v == "~":
        return f"no verdict ({factor(speedup)}{ci}: the interval is too wide to decide)"
    if v == "withheld":
        return f"{factor(speedup)}{ci} with its verdict withheld"
    return f"{factor(speedup)}{ci}"


def interval_text(lo: float, hi: float) -> str:
    """An interval as every table, sentence and terminal line prints it: the same number of decimals at both
    ends, chosen by the smaller end (three significant digits), and never a point for a nonzero width."""
    lo, hi = float(lo), float(hi)
    ref = min(abs(lo), abs(hi)) or max(abs(lo), abs(hi))
    if ref == 0:
        return f"[{lo:g}, {hi:g}]"
    d = max(2 - math.floor(math.log10(ref)), 0)
    while lo < hi and f"{lo:.{d}f}" == f"{hi:.{d}f}" and d < 8:
        d += 1
    return f"[{lo:.{d}f}, {hi:.{d}f}]"


def medians_quotient_outside(row: dict | None) -> float | None:
    """The two builds' medians divided (baseline's / variant's), when that quotient falls outside the
    comparison's interval; else None. Each median is its own build's typical layout; the speedup is the
    typical layout of the paired copy ratios: a different estimand, so a reader who divides the medians
    printed beside a speedup is told where the two differ (issue 45). None without a usable interval."""
    if not row:
        return None
    try:
        b, v = float(row.get("median_base")), float(row.get("median_var"))
        lo, hi = float(row.get("ci_low")), float(row.get("ci_high"))
    except (TypeError, ValueError):
        return None
    if not all(map(math.isfinite, (b, v, lo, hi))) or b <= 0 or v <= 0:
        return None
    q = b / v
    return q if not (lo <= q <= hi) else None


MEDIANS_QUOTIENT_NOTE = ("the two builds' medians, divided, fall outside this interval: each median is its own "
                         "build's typical layout (with its own ± interval), the speedup the typical layout of the "
                         "paired copy ratios, a different estimand (docs/methods.md, \"Per-build medians\")")


# Each estimand (analyze/methods.py ESTIMAND, summary.json `estimand.applies`) in the few words a table's
# caption and `show` print beside its speedups (issue 45): what the number is, and what it is not.
ESTIMAND_SHORT = {
    "laid_out": "typical layout: the median over jobs and layouts of copy-pair ratios; not the geometric mean "
                "over layouts, nor the ratio of the per-build medians beside it",
    "fixed": "the median over jobs of the job ratios (one layout); not the ratio of the per-build medians beside it",
    "one_copy": "the median over jobs of the job ratios (each job its own layout); not the ratio of the per-build "
                "medians beside it",
    "separate": "the ratio of the geometric means of the two builds' job medians",
}
