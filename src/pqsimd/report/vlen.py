"""The vector-length view of a vector-length set (pqsimd/studysets.py): the scaling figure (per op, the hand
stage's exact instruction ratio against the vector length), a table of every stage's ratio at every
length, sentences that read them, and DIR/report/index.html linking each length's own report. It reads
DIR/results/vlen*, which analyze/vlen.py wrote; nothing is computed here but the wording. `pqsimd show
DIR` prints the same table."""

from __future__ import annotations

import html as html_mod
import math
import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from . import fmt, style  # noqa: E402
from ..results import Results, load_study, read_json, read_table  # noqa: E402
from ..studydir import StudyDir  # noqa: E402

OP_COLOURS = [style.OKABE_ITO[c] for c in ("blue", "vermillion", "bluish_green", "orange", "reddish_purple", "sky_blue",
                                             "yellow", "black")]


def shown_stages(t: pd.DataFrame, info: dict) -> list[str]:
    """The stages the figure and sentences read: every step that ends at the chain's hand-SIMD variant
    (hand_simd: from the plain C; compiler_vs_hand_*: from the same C with the vector extension, where
    the hand-written code's own share shows), and `extra` (a family's own vector variant against ref)."""
    from ..model import Chain

    hand = Chain.from_dict(info.get("chain")).hand
    stages = [s for s in dict.fromkeys(t["stage"]) if hand is not None and (t[t["stage"] == s]["variant"] == hand.variant).all()]
    return stages + (["extra"] if "extra" in set(t["stage"]) else [])


def load(directory: Path) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    t = read_table(directory, "vlen", strict=False)
    c = read_table(directory, "vlen_counts", strict=False)
    for df in (t, c):
        for col in ("scheme", "op", "stage", "variant", "baseline", "compiler"):
            if col in df.columns:
                df[col] = df[col].astype(str)
    return t, c, read_json(StudyDir(directory).results("vlen.json"))


def _study(info: dict) -> Results | None:
    """The first length's study: its families name the parameter sets and ops."""
    for sub in (info.get("studies") or {}).values():
        try:
            return load_study(Path(sub))
        except Exception:  # a study without results: labels fall back to ids
            continue
    return None


def _label(study: Results | None, scheme: str, op: str) -> str:
    fam = study.family_of(scheme) if study else None
    return f"{fam.scheme_label(scheme) if fam else scheme} {fam.label(op) if fam else op}"


def _keys(t: pd.DataFrame, study: Results | None, stages=None) -> list[tuple[str, str, str, str, str]]:
    """(scheme, op, stage, baseline, variant) in the study's order."""
    d = t if stages is None else t[t["stage"].isin(stages)]
    keys = list(dict.fromkeys(zip(d["scheme"], d["op"], d["stage"], d["baseline"], d["variant"])))
    if study is None:
        return keys
    out = []
    order = study.schemes
    schemes = sorted(dict.fromkeys(k[0] for k in keys), key=lambda sc: order.index(sc) if sc in order else len(order))
    for scheme in schemes:
        fam = study.family_of(scheme)
        ops = list(dict.fromkeys(k[1] for k in keys if k[0] == scheme))
        for op in (fam.sort_ops(ops) if fam else ops):
            out += [k for k in keys if k[0] == scheme and k[1] == op]
    return out


def _ratios(t: pd.DataFrame, key) -> dict[int, pd.Series]:
    scheme, op, stage, base, var = key
    d = t[(t["scheme"] == scheme) & (t["op"] == op) & (t["stage"] == stage) & (t["baseline"] == base)
          & (t["variant"] == var)]
    return {int(r["vlen"]): r for _, r in d.iterrows()}


def sentences(t: pd.DataFrame, c: pd.DataFrame, info: dict, study: Results | None) -> list[str]:
    ref = info.get("reference")
    out = []
    for key in _keys(t, study, shown_stages(t, info)):
        scheme, op, stage, base, var = key
        rows = _ratios(t, key)
        if ref not in rows:
            continue
        at = ", ".join(f"{fmt.times(r['ratio'])} at {v}" for v, r in sorted(rows.items()))
        line = f"{_label(study, scheme, op)}, {base} → {var}: {at} (VLEN in bits)"
        same = [v for v, r in sorted(rows.items()) if r["verdict"] == "same"]
        if same and rows[ref]["verdict"] == "faster":
            line += (f"; at {', '.join(map(str, same))} the vector build runs about as many instructions as its "
                     f"baseline (no vector gain there), against {fmt.times(rows[ref]['ratio'])} at {ref}")
        else:
            rel = [f"{fmt.times(r['relative'])} of VLEN {ref}'s at {v}" for v, r in sorted(rows.items()) if v != ref
                   and not math.isnan(r["relative"])]
            if rel:
                line += "; " + ", ".join(rel)
        out.append(line + ".")
    if not c.empty:
        const = c[c["constant"].astype(bool)]
        if len(const):
            by = const.groupby("variant")["op"].nunique()
            total = c.groupby("variant")["op"].nunique()
            whole = [v for v in by.index if by[v] == total.get(v)]
            if whole:
                out.append(f"{', '.join(whole)} count the same instructions at every vector length in every op "
                           f"(no vector code that follows the length).")
    return out


def figure_ops(study: Results | None, scheme: str) -> set[str] | None:
    """The ops the figure draws for a family: its portfolio's end-to-end ops and dominant kernels
    ([views.portfolio]); None (every op) for a family without one."""
    fam = study.family_of(scheme) if study else None
    p = (fam.views.get("portfolio") if fam else None) or {}
    ops = [*p.get("end_to_end", []), *p.get("kernels", {})]
    return set(ops) or None


def figure(t: pd.DataFrame, info: dict, study: Results | None, outdir: Path, name: str) -> dict:
    from .figures import RC, _save

    stages = shown_stages(t, info)
    keys = [k for k in _keys(t, study, stages) if (figure_ops(study, k[0]) or {k[1]}) >= {k[1]}]
    schemes = list(dict.fromkeys(k[0] for k in keys))
    stages = [s for s in stages if any(k[2] == s for k in keys)]
    vlens = info.get("vlens") or sorted(t["vlen"].unique())
    with plt.rc_context(RC):
        fig, axes = plt.subplots(max(len(stages), 1), max(len(schemes), 1),
                                 figsize=(3.2 * max(len(schemes), 1) + 1.6, 2.9 * max(len(stages), 1)), squeeze=False,
                                 sharey=True, layout="constrained")
        for (row, stage), (col, scheme) in ((x, y) for x in enumerate(stages) for y in enumerate(schemes)):
            ax = axes[row][col]
            mine = [k for k in keys if k[0] == scheme and k[2] == stage]
            for i, key in enumerate(mine):
                rows = _ratios(t, key)
                xs = sorted(rows)
                fam = study.family_of(scheme) if study else None
                ax.plot(xs, [rows[v]["ratio"] for v in xs], marker="o", linewidth=1.2, markersize=3.5,
                        color=OP_COLOURS[i % len(OP_COLOURS)],
                        label=(fam.label(key[1]) if fam else key[1]) + (f" ({key[4]})" if key[2] == "extra" else ""))
            ax.set_xscale("log", base=2)
            ax.set_xticks(vlens, [str(v) for v in vlens])
            ax.set_yscale("log")
            ax.axhline(1.0, color="black", linewidth=0.6)
            ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:g}×"))
            ax.set_xlabel("vector length (bits)")
            step = f"{mine[0][3]} → {mine[0][4]}" if mine else stage
            ax.set_title(f"{_label(study, scheme, '').strip() if study else scheme}\n{step}", fontsize=8)
            if col == 0:
                ax.set_ylabel("instructions, baseline / vector")
            if col == len(schemes) - 1 and mine:
                ax.legend(frameon=False, fontsize=style.SMALL_PT, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        return _save(fig, outdir, name)


def table(t: pd.DataFrame, info: dict, study: Results | None):
    from .tables import Cell, Table

    vlens = info.get("vlens") or sorted(t["vlen"].unique())
    ref = info.get("reference")
    body = []
    for key in _keys(t, study):
        scheme, op, stage, base, var = key
        rows = _ratios(t, key)
        cells = [Cell(_label(study, scheme, op)), Cell(f"{base} → {var}")]
        for v in vlens:
            r = rows.get(v)
            cells.append(Cell(fmt.NA if r is None else fmt.times(r["ratio"]) + ("" if r["verdict"] == "faster" else
                                                                              f" ({r['verdict']})")))
        for v in vlens:
            if v != ref:
                r = rows.get(v)
                cells.append(Cell(fmt.NA if r is None or math.isnan(r["relative"]) else fmt.num(r["relative"])))
        body.append(cells)
    header = ["op", "step", *[f"ratio at {v}" for v in vlens], *[f"{v} / {ref}" for v in vlens if v != ref]]
    caption = (f"Instructions per call of each chain step's baseline over its variant at each vector length (VLEN in "
               f"bits; exact counts of our QEMU plugin under {info.get('isa') or 'emulation'}, emulated: nothing is "
               f"timed), and each ratio over the ratio at VLEN {ref}. (same): within the studies' threshold of 1.")
    return Table(name="table_vlen", title="Across vector lengths", caption=caption, header=header, rows=body, data=t,
                 align="ll" + "r" * (len(header) - 2))


def write_vlen_report(directory: Path, report_sub) -> Path:
    """DIR/report/: each length's own report (`report_sub(study dir) -> its report dir`: the command line's
    layer, which analyses first), and the vector-length view with an index linking them."""
    from .files import write_text
    from .tables import render, write_table

    directory = Path(directory)
    t, c, info = load(directory)
    outdir = StudyDir(directory).report_dir
    outdir.mkdir(parents=True, exist_ok=True)
    subs = {}
    for v, sub in (info.get("studies") or {}).items():
        try:
            subs[v] = report_sub(Path(sub))
        except Exception as e:  # a length whose study cannot be reported (e.g. one variant): said, not fatal
            subs[v] = f"no report ({e})"
    study = _study(info)
    files = figure(t, info, study, outdir, "fig_vlen_scaling") if len(t[t["stage"].isin(shown_stages(t, info))]) else {}
    tab = table(t, info, study)
    write_table(tab, outdir)
    lines = sentences(t, c, info, study)
    write_text(outdir / "vlen.md", "\n".join(f"- {s}" for s in lines) + "\n\n" + render(tab, "md"))
    def link(p: Path) -> str:
        rel = os.path.relpath(Path(p) / "index.html", outdir)  # the set moves as a whole
        return f'<a href="{html_mod.escape(rel)}">{html_mod.escape(rel)}</a>'

    links = "".join(f"<li>VLEN {html_mod.escape(str(v))}: " + (link(p) if isinstance(p, Path) else html_mod.escape(p))
                    + "</li>" for v, p in subs.items())
    fig = ('<img src="fig_vlen_scaling.png" alt="instruction ratio against the vector length" style="max-width:100%">'
           if files else "<p>No hand-SIMD step in these studies: no scaling figure.</p>")
    rows = "".join("<tr>" + "".join(f"<td>{html_mod.escape(x.text)}</td>" for x in r) + "</tr>" for r in tab.body_rows)
    head = "".join(f"<th>{html_mod.escape(h)}</th>" for h in tab.header)
    write_text(outdir / "index.html", f"""<!doctype html><html><head><meta charset="utf-8">
<title>pqsimd: across vector lengths</title></head><body>
<h1>Across vector lengths ({html_mod.escape(str(info.get('isa')))}, emulated: instruction counts, no timings)</h1>
<ul>{''.join(f'<li>{html_mod.escape(s)}</li>' for s in lines)}</ul>
{fig}
<h2>{html_mod.escape(tab.title)}</h2><p>{html_mod.escape(tab.caption)}</p>
<table border="1" cellspacing="0" cellpadding="3"><tr>{head}</tr>{rows}</table>
<h2>Each vector length's own report</h2><ul>{links}</ul>
</body></html>
""")
    return outdir


def show_vlen(directory: Path) -> None:
    """The vector-length table and its sentences in the terminal."""
    from ..console import stdout_console
    from rich.table import Table as RichTable

    t, c, info = load(Path(directory))
    if t.empty:
        from ..errors import PqsimdError, command

        raise PqsimdError(f"{directory} has no vector-length results; run {command('analyze', directory)}")
    study = _study(info)
    tab = table(t, info, study)
    con = stdout_console()
    rt = RichTable(title=f"{tab.title} ({info.get('isa')}, emulated)", title_justify="left", box=None,
                   header_style="bold")
    for h in tab.header:
        rt.add_column(h, justify="left" if h in ("op", "step") else "right")
    for r in tab.body_rows:
        rt.add_row(*(x.text for x in r))
    con.print(rt)
    con.print(tab.caption, soft_wrap=True)
    for s in sentences(t, c, info, study):
        con.print(f"- {s}", soft_wrap=True, markup=False)
