"""The report's optional views, each one registered `Part`: `pqsimd report` and `pqsimd show` loop over
PARTS, in this order, and know no view by name. A part is a module of report/ that reads results/ (never
analyze/: analysis decides, the report presents) and offers up to two functions:

    make(study, outdir)                  its figures and tables (written into outdir) and the lines its HTML
                                         section prints: a `Made`, or the (figures, tables[, findings or
                                         lines]) tuple the older parts return (`as_made` reads both)
    show(study, console, metric, compiler)   its section of `pqsimd show`

`html` says where index.html puts what `make` made: EXTRA (the figures and tables after the families'
sections, the mechanism's findings beside them) or the name of the template's own section for it (SECTIONS).
A part that fails costs only itself, named in the report's warnings (`what`).

A new view: its module (report/<name>.py: make and/or show, reading results/ through results.Results) and its
line here; its analysis is a step of analyze/steps.py writing results/<table> that results.py reads.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

EXTRA = "extra"
SECTIONS = ("attribution", "portfolio", "cross_impl", "cross_isa")  # index.html.j2's sections of their own


@dataclass
class Made:
    """What a part's `make` made: figures, tables, findings per family (lines), and lines of its own."""
    figures: list = field(default_factory=list)
    tables: list = field(default_factory=list)
    findings: dict = field(default_factory=dict)
    lines: list = field(default_factory=list)


@dataclass(frozen=True)
class Part:
    name: str
    what: str  # the report's warning names a failed part so: "<what> skipped: ..."
    module: str  # report/<module>.py
    make: str | None = None  # make(study, outdir) -> Made (or the older tuple)
    show: str | None = None  # show(study, console, metric, compiler): its section of `pqsimd show`
    html: str = EXTRA  # EXTRA or one of SECTIONS
    reference: str | None = None  # made only with this --reference (the paper's claims)

    def function(self, which: str):
        return getattr(importlib.import_module(f".{self.module}", __package__), which)


PARTS: tuple[Part, ...] = (
    Part("phase2", "phase-2 parts (instructions vs time, counters, energy)", "phase2", make="report_parts"),
    Part("why", "simulated counter breakdown and bottlenecks", "why", make="why_parts"),
    Part("claims", "claims section", "why", make="claims_parts", reference="paper"),
    Part("mechanism", "instruction-mix parts", "mechanism", make="mechanism_parts"),
    Part("attribution", "attribution parts", "attribution", make="attribution_parts", show="show",
         html="attribution"),
    Part("portfolio", "portfolio view", "portfolio", make="portfolio_parts", show="show", html="portfolio"),
    Part("crossimpl", "cross-implementation view", "crossimpl", make="crossimpl_parts", show="show",
         html="cross_impl"),
    Part("crossisa", "cross-ISA view", "crossisa", make="crossisa_parts", html="cross_isa"),
    Part("layout", "layout sensitivity", "layout", make="layout_parts"),
    Part("footprint", "stack and code size", "footprint", make="parts", show="show"),
    Part("hashshare", "hash share", "hashshare", make="hash_share_parts", show="show"),
    Part("perunit", "per-unit view", "perunit", make="per_unit_parts", show="show"),
    Part("hazards", "simulated hazards", "hazards", make="hazards_parts", show="show"),
    Part("ct", "constant time", "ct", show="show_part"),
    Part("explanations", "explanations", "why", show="show_explanations"),
)


def get(name: str) -> Part:
    return next(p for p in PARTS if p.name == name)


def as_made(out) -> Made:
    """A part's output as a Made: a Made as it is, or the older (figures, tables[, findings | lines]) tuple
    or a bare list of tables; a table given with its files, (Table, files), is the table."""
    if isinstance(out, Made):
        return out
    if isinstance(out, list):
        out = ([], out)
    figures, tables, *rest = out
    extra = rest[0] if rest else None
    return Made(list(figures), [t[0] if isinstance(t, tuple) else t for t in tables],
                extra if isinstance(extra, dict) else {}, extra if isinstance(extra, list) else [])


def make_all(study, outdir, notes: list[str], reference: str | None = None) -> dict[str, Made]:
    """Every part's `make`, in PARTS order: name -> Made; a failure costs only that part (a note)."""
    made: dict[str, Made] = {}
    for part in PARTS:
        if part.make is None or (part.reference is not None and part.reference != reference):
            continue
        try:
            made[part.name] = as_made(part.function(part.make)(study, outdir))
        except Exception as e:
            notes.append(f"{part.what} skipped: {e.__class__.__name__}: {e}")
            made[part.name] = Made()
    return made


def show_all(study, console, metric: str, compiler: str | None) -> None:
    """Every part's section of `pqsimd show`, in PARTS order."""
    for part in PARTS:
        if part.show is not None:
            part.function(part.show)(study, console, metric, compiler)
