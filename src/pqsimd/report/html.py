"""index.html: one self-contained file (figures inlined as base64 PNG, CSS inline, no network)."""

from __future__ import annotations

import base64
import re
import datetime as _dt
from dataclasses import dataclass
from pathlib import Path

from .. import __version__
from . import files, fmt, style
from .figures import FigureResult
from .load import Study
from .tables import Table, _env

ARITH = ("ntt", "invntt", "basemul", "poly_frommsg")
MID = ("indcpa_enc", "indcpa_keypair")
KEM = ("kem_keypair", "kem_encaps", "kem_decaps")


@dataclass
class Warning_:
    kind: str
    text: str


# -- headline findings ----------------------------------------------------------------------

def _hand(study: Study, metric: str):
    df = study.comparison(metric, baseline="ref", variant="avx2")
    return df.drop_duplicates(["scheme", "op"]) if not df.empty else df


def _range(df, ops) -> str | None:
    v = df.loc[df["op"].isin(ops), "speedup"].dropna() if not df.empty else []
    if len(v) == 0:
        return None
    lo, hi = v.min(), v.max()
    return fmt.times(lo) if fmt.num(lo) == fmt.num(hi) else f"{fmt.num(lo)}–{fmt.times(hi)}"


def ordering_check(study: Study, metric: str) -> list[str]:
    """Does our Table 1 keep the paper's order: arithmetic ≫ iEnc/iKeypair ≫ gen_a ≫ noise?"""
    df = _hand(study, metric)
    out = []
    if df.empty:
        return out
    for scheme in study.schemes:
        d = df[df["scheme"] == scheme].set_index("op")["speedup"]
        tiers = [d.reindex(list(t)).dropna() for t in (ARITH, MID, ("gen_a",), ("poly_getnoise_eta1",))]
        if any(len(t) == 0 for t in tiers):
            continue
        ok = all(tiers[i].min() > tiers[i + 1].max() for i in range(3))
        out.append(f"{style.scheme_label(scheme)}: {'matches' if ok else 'does not match'} the paper's ordering "
                   f"(arithmetic {_range(df[df.scheme == scheme], ARITH)} ≫ iEnc/iKeypair "
                   f"{_range(df[df.scheme == scheme], MID)} ≫ gen_a {_range(df[df.scheme == scheme], ('gen_a',))} "
                   f"≫ noise {_range(df[df.scheme == scheme], ('poly_getnoise_eta1',))})")
    return out


def headlines(study: Study) -> list[str]:
    metric = study.primary_metric
    df = _hand(study, metric)
    out = []
    if not df.empty and df["speedup"].notna().any():
        best = df.loc[df["speedup"].idxmax()]
        lo, hi = best.get("hci_low"), best.get("hci_high")
        if fmt.is_missing(lo):
            lo, hi = best.get("ci_low"), best.get("ci_high")
        out.append(f"The largest hand-written SIMD speedup (ref→avx2) is {style.op_label(best['op'])} at "
                   f"{style.scheme_label(best['scheme'])}: {fmt.times(best['speedup'])} {fmt.ci(lo, hi)}.")
        parts = []
        for label, ops in (("the arithmetic kernels (NTT, INVNTT, basemul, frommsg)", ARITH),
                           ("gen_a (SHAKE-128 expansion)", ("gen_a",)), ("noise sampling", ("poly_getnoise_eta1",)),
                           ("the KEM end-to-end (keypair, encaps, decaps)", KEM)):
            r = _range(df, ops)
            if r:
                parts.append(f"{label} {r}")
        if parts:
            out.append("ref→avx2 across parameter sets: " + "; ".join(parts) + ".")
    av = study.comparison(metric, baseline="refnv", variant="ref")
    if not av.empty:
        av = av.drop_duplicates(["scheme", "op"])
        a = av[av["op"].isin(ARITH)]["speedup"].dropna()
        counts = av["verdict"].value_counts().to_dict() if "verdict" in av.columns else {}
        txt = (f"GCC auto-vectorization (refnv→ref) over all {len(av)} (scheme, op) pairs: "
               f"{counts.get('faster', 0)} faster, {counts.get('slower', 0)} slower, {counts.get('~', 0)} no verdict")
        if len(a):
            txt += f"; on the arithmetic kernels it ranges {fmt.num(a.min())}–{fmt.times(a.max())}"
        out.append(txt + ".")
    dec = study.decomposition
    if not dec.empty and "share_hand_simd" in dec.columns:
        d = dec[(dec["metric"] == metric) & dec["op"].isin(ARITH)]["share_hand_simd"].dropna()
        if len(d):
            out.append(f"Of the total refo0→avx2 speedup of the arithmetic kernels, hand-written SIMD accounts for "
                       f"{fmt.pct(d.min())}–{fmt.pct(d.max())} of the log speedup.")
    out += ordering_check(study, metric)
    if not study.comparisons.empty and "verdict" in study.comparisons.columns:
        n = len(study.comparisons)
        c = study.comparisons["verdict"].value_counts().to_dict()
        out.append(f"All {n} comparisons of the family: {c.get('faster', 0)} faster, {c.get('slower', 0)} slower, "
                   f"{c.get('~', 0)} without a verdict.")
    return out


# -- methods, provenance, warnings ----------------------------------------------------------

def methods(study: Study) -> list[tuple[str, str]]:
    g = study.get
    fam = study.summary.get("family") if isinstance(study.summary.get("family"), dict) else {}
    thr = g("threshold")
    rows = [
        ("jobs per (variant, parameter set), J", g("jobs", "J")),
        ("spins per op per job, S", g("spins", "S")),
        ("repetitions per spin, R", g("reps", "R")),
        ("warmup spins (recorded, excluded)", g("warmup")),
        ("calls per sample (batch)", g("batch")),
        ("parameter sets", ", ".join(style.scheme_label(s) for s in study.schemes)),
        ("variants", ", ".join(study.variants)),
        ("metrics", ", ".join(study.metrics)),
        ("bootstrap resamples, B", g("n_boot", "B", "bootstrap")),
        ("bootstrap seed", g("seed")),
        ("significance level α", g("alpha")),
        ("practical threshold", fmt.pct(thr) if thr is not None else None),
        ("multiple-testing family", f"{fam.get('size', 'n/a')} comparisons: {fam.get('definition', 'n/a')}"
         if fam else g("family")),
    ]
    return [(k, "n/a" if v is None or v == "" else str(v)) for k, v in rows]


def _flatten(d, prefix="") -> list[tuple[str, str]]:
    out = []
    if isinstance(d, dict):
        for k, v in d.items():
            out += _flatten(v, f"{prefix}{k}." if isinstance(v, dict) else f"{prefix}{k}")
            if not isinstance(v, dict):
                continue
    elif isinstance(d, list):
        out.append((prefix.rstrip("."), ", ".join(str(x) for x in d)))
    else:
        out.append((prefix.rstrip("."), "n/a" if d is None else str(d)))
    return out


def _short(v, n: int = 16) -> str:
    s = str(v)
    return s if len(s) <= n + 3 else s[:n] + "…"


def _jobs_summary(jobs: dict) -> list[tuple[str, str]]:
    recs = [j for j in jobs.values() if isinstance(j, dict)]
    if not recs:
        return []

    def distinct(key):
        return sorted({str(r.get(key)) for r in recs if r.get(key) is not None})

    started = [str(r["started"]) for r in recs if r.get("started")]
    finished = [str(r["finished"]) for r in recs if r.get("finished")]
    out = [("jobs recorded", str(len(recs))), ("hosts", ", ".join(distinct("hostname")) or "n/a"),
           ("CPU models", "; ".join(distinct("cpu_model")) or "n/a"), ("CPUs pinned", ", ".join(distinct("cpu")) or "n/a")]
    if started and finished:
        out.append(("time span", f"{min(started)} → {max(finished)}"))
    return out


def provenance(study: Study) -> list[tuple[str, list[tuple[str, str]]]]:
    """The manifest, condensed for a reader: machine, source, tool, variants, jobs (the file keeps it all)."""
    m = study.manifest
    sections = []
    for key, title in (("machine", "Machine"), ("source", "Source"), ("tool", "Tool")):
        if isinstance(m.get(key), dict):
            sections.append((title, _flatten(m[key])))
    if isinstance(m.get("variants"), dict):
        rows = []
        for vid, v in m["variants"].items():
            if not isinstance(v, dict):
                rows.append((vid, str(v)))
                continue
            comp = v.get("compiler") if isinstance(v.get("compiler"), dict) else {}
            flags = v.get("flags_used") or v.get("flags") or []
            gate = v.get("gate") if isinstance(v.get("gate"), dict) else {}
            bits = [(" ".join(map(str, flags)) if isinstance(flags, list) else str(flags)) or "n/a",
                    str(comp.get("version") or comp.get("command") or v.get("cc") or ""),
                    f"gate {'passed' if gate.get('passed') else 'FAILED'}" if gate else "",
                    f"sha256 {_short(v['binary_sha256'])}" if v.get("binary_sha256") else ""]
            rows.append((vid, " · ".join(b for b in bits if b)))
        sections.append(("Variants", rows))
    if isinstance(m.get("jobs"), dict):
        js = _jobs_summary(m["jobs"])
        if js:
            sections.append(("Jobs", js))
    if isinstance(m.get("metrics"), dict):
        sections.append(("Metrics", _flatten(m["metrics"])))
    rest = [(k, str(v)) for k, v in m.items()
            if k not in ("machine", "source", "tool", "variants", "jobs", "metrics", "job_order")
            and not isinstance(v, (dict, list))]
    if rest:
        sections.append(("Study", rest))
    return sections


def _virtualized(manifest: dict) -> str | None:
    """The hypervisor, if the study ran in a VM (a container alone is not one)."""
    mach = manifest.get("machine") if isinstance(manifest.get("machine"), dict) else {}
    virt = mach.get("virtualization")
    if isinstance(virt, str):
        vms = [p.strip() for p in virt.split(",") if p.strip() and not p.strip().startswith("in a")]
        if vms:
            return ", ".join(vms)
    for k in ("virtualized", "hypervisor", "is_vm"):
        v = mach.get(k, manifest.get(k))
        if v:
            return str(v) if isinstance(v, str) else "hypervisor"
    flags = mach.get("flags") or mach.get("cpu_flags") or ""
    return "hypervisor" if "hypervisor" in (flags if isinstance(flags, str) else " ".join(map(str, flags))) else None


def _groups_list(df, limit=8) -> str:
    items = [f"{r['scheme']} {r['op']} {r['variant']}" for _, r in df.head(limit).iterrows()]
    more = len(df) - limit
    return ", ".join(items) + (f" and {more} more" if more > 0 else "")


def warnings(study: Study, figures: list[FigureResult], notes: list[str]) -> list[Warning_]:
    out = []
    for w in study.summary.get("warnings") or []:
        text = w.get("message") or w.get("text") or str(w) if isinstance(w, dict) else str(w)
        # these three get a more specific warning below (which groups; what ticks mean)
        if not re.search(r"noisy job|drift|TSC ticks|fewer than \d+ jobs", text):
            out.append(Warning_("analysis", text))
    g = study.groups
    if not g.empty:
        if "n_jobs" in g.columns:
            few = g[g["n_jobs"] < 5]
            if len(few):
                out.append(Warning_("few jobs", f"{len(few)} of {len(g)} groups have fewer than 5 jobs: the "
                                    f"hierarchical CIs (which resample jobs) are unreliable there, and job-level "
                                    f"tests have little power. Run more jobs (--jobs)."))
        if "noisy_jobs" in g.columns:
            noisy = g[g["noisy_jobs"].fillna(0) > 0]
            if len(noisy):
                out.append(Warning_("noisy jobs", f"{len(noisy)} groups contain a job whose median is out of line "
                                    f"with the others: {_groups_list(noisy)}."))
        if "drift" in g.columns:
            drift = g[g["drift"].astype("boolean").fillna(False)]
            if len(drift):
                out.append(Warning_("drift", f"{len(drift)} groups show a trend within jobs (drift): "
                                    f"{_groups_list(drift)}."))
    if "ticks" in study.metrics:
        out.append(Warning_("TSC ticks ≠ core cycles", "Times are TSC ticks at the invariant TSC frequency, not "
                            "core clock cycles: under turbo or power capping (e.g. during AVX2 code) the core runs "
                            "at a different frequency, so ticks are wall-clock time, not cycle counts."))
    vm = _virtualized(study.manifest)
    if vm:
        out.append(Warning_("virtualized host", f"The study ran on a virtual machine ({vm}): "
                            "the TSC may be virtualized and neighbours share the hardware; expect more noise and "
                            "treat absolute numbers with care."))
    for f in figures:
        if f.skipped:
            out.append(Warning_("figure skipped", f"{f.title}: {f.skipped}"))
    for n in notes:
        out.append(Warning_("raw data", n))
    return out


# -- rendering ------------------------------------------------------------------------------

def png_width(path: Path) -> int | None:
    head = Path(path).read_bytes()[:24]
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    return int.from_bytes(head[16:20], "big")


def _data_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(Path(path).read_bytes()).decode("ascii")


def write_html(study: Study, outdir: Path, figures: list[FigureResult], tables: list[Table],
               notes: list[str], reference: str | None = None) -> Path:
    figs = [{"name": f.name, "title": f.title, "caption": f.caption, "skipped": f.skipped,
             "src": _data_uri(f.png) if f.png else None,
             # shown at 2/3 of the pixel size (150 dpi -> ~100 css px per inch): figures keep their relative scale
             "width": (int(png_width(f.png) * 2 / 3) if f.png and png_width(f.png) else None)} for f in figures]
    mach = study.manifest.get("machine") if isinstance(study.manifest.get("machine"), dict) else {}
    html = _env().get_template("index.html.j2").render(
        title=f"pqsimd report: {study.directory.resolve().name}",
        directory=str(study.directory.resolve()),
        generated=_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        version=__version__,
        machine=mach.get("cpu_model") or mach.get("cpu") or "n/a",
        headlines=headlines(study),
        tables=tables,
        figures=figs,
        methods=methods(study),
        stat_methods=[(k, str(v)) for k, v in (study.summary.get("methods") or {}).items()]
        if isinstance(study.summary.get("methods"), dict) else [],
        provenance=provenance(study),
        warnings=warnings(study, figures, notes),
        reference=reference,
        colours={v: style.variant_colour(v, study.variants) for v in study.variants},
    )
    return files.write_text(outdir / "index.html", html)
