"""Constant time beside speed (results/constant_time, ct_stages: analyze/ct.py): the terminal view
(`pqsimd show DIR`, and `--metric ct` alone), the HTML section, and the mark beside a speedup whose
variant leaks for that op. Reads results/ only."""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..results import CT_MARK as MARK, read_table
VERDICT_STYLE = {"leak": "bold red", "unconfirmed": "yellow", "clean": "green", "n/a": "dim"}
VERDICT_WORDS = {
    "leak": "a secret steers a branch, an address or a division's operand: traces over different secrets differ "
            "(confirmed)",
    "unconfirmed": "memcheck flags a secret-dependent branch or address, but the traces over the secrets tried are "
                   "identical (not proof of a leak, not proof of none)",
    "clean": "no branch or address depends on a secret (sites in functions the standard makes public are "
             "declassified)",
    "n/a": "not tested, with the reason",
}


def verdict_words(sites: pd.DataFrame) -> dict[str, str]:
    """The legend of these verdicts: where a test had a narrower scope (riscv64 under QEMU: branches only),
    `clean` promises no more than that scope."""
    scoped = sites.get("scope", pd.Series(dtype=object)).dropna()
    if not len(scoped):
        return VERDICT_WORDS
    return {**VERDICT_WORDS, "clean": "nothing that depends on a secret was found within the test's scope (all "
                                      "branches and addresses, or as the scope line says where narrower)"}


def tables(directory: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    return (read_table(directory, "constant_time", strict=False), read_table(directory, "ct_stages", strict=False))


def has_ct(directory: Path) -> bool:
    return not read_table(directory, "constant_time", strict=False).empty


def _site_text(r) -> str:
    line = f":{int(r['line'])}" if pd.notna(r.get("line")) else ""
    return f"{r['kind']} in {r['function']} ({r['file']}{line}) `{r['instruction']}`"


def _cell(r) -> str:
    """'clean', or with the timing evidence 'clean · t +1.2' ('!' past dudect's threshold)."""
    t = r.get("dudect_t")
    if t is None or pd.isna(t):
        return str(r["verdict"])
    past = "!" if abs(t) > r.get("dudect_threshold", 4.5) else ""
    return f"{r['verdict']} · t {t:+.1f}{past}"


def verdict_matrix(sites: pd.DataFrame) -> pd.DataFrame:
    """One row per (scheme, op, compiler), a column per variant: its verdict (and dudect's t)."""
    ops = sites.drop_duplicates(["scheme", "op", "variant", "compiler"]).copy()
    ops["cell"] = [_cell(r) for _, r in ops.iterrows()]
    m = ops.pivot_table(index=["scheme", "label", "op", "compiler"], columns="variant", values="cell",
                        aggfunc="first", sort=False)
    variants = list(dict.fromkeys(ops["variant"]))
    return m.reindex(columns=variants).reset_index()


def leak_rows(sites: pd.DataFrame) -> pd.DataFrame:
    return sites[sites["site_verdict"].eq("leak")]


def show(directory: Path, con: Console) -> None:
    """The constant-time section: verdicts per op and build, every confirmed leak with its source line,
    the chain steps that introduced or removed one, and what was declassified."""
    sites, stages = tables(directory)
    if sites.empty:
        return
    con.print(Text("Constant time (--metric ct)", style="bold underline"))
    m = verdict_matrix(sites)
    variants = [c for c in m.columns if c not in ("scheme", "label", "op", "compiler")]
    t = Table(title="verdict per op and build", title_justify="left", header_style="bold")
    t.add_column("set")
    t.add_column("op")
    if m["compiler"].nunique() > 1:
        t.add_column("compiler")
    for v in variants:
        t.add_column(v)
    for _, r in m.iterrows():
        cells = [r["scheme"], str(r["label"])] + ([r["compiler"]] if m["compiler"].nunique() > 1 else [])
        cells += [Text(str(r[v]) if pd.notna(r[v]) else "", style=VERDICT_STYLE.get(str(r[v]).split(" ")[0], ""))
                  for v in variants]
        t.add_row(*cells)
    con.print(t)
    leaks = leak_rows(sites)
    if len(leaks):
        con.print(Text("leaks (confirmed by traces over different secrets):", style="bold red"))
        for (scheme, label, variant, compiler), g in leaks.groupby(["scheme", "label", "variant", "compiler"],
                                                                    sort=False):
            first = g.iloc[0]
            more = f" and {len(g) - 1} more site{'s' if len(g) > 2 else ''}" if len(g) > 1 else ""
            con.print(f"  {scheme} {label} · {variant} ({compiler}): {_site_text(first)}{more}; secrets "
                      f"{first['witnesses']}: {first['difference']}", soft_wrap=True)
    for s in stages.get("sentence", pd.Series(dtype=str)):
        con.print(f"  {s}", soft_wrap=True)
    declass = sites[sites["site_verdict"].eq("declassified")].drop_duplicates(["family", "declassified"])
    for _, r in declass.iterrows():
        con.print(Text(f"  declassified ({r['family']}): {r['declassified']}", style="dim"), soft_wrap=True)
    for scope in sites.get("scope", pd.Series(dtype=object)).dropna().unique():
        con.print(Text(f"  scope: {scope}", style="dim"), soft_wrap=True)
    na = sites[sites["verdict"].eq("n/a")]
    public = na[na["why"].astype(str).str.contains("no secret input")]
    if len(public):  # one line for the ops that take no secret (the legend promises every n/a its reason)
        con.print(Text(f"  n/a: no secret input: {', '.join(dict.fromkeys(public['op'].astype(str)))}", style="dim"),
                  soft_wrap=True)
    for _, r in na[~na.index.isin(public.index)].drop_duplicates(["why"]).iterrows():
        con.print(Text(f"  n/a: {r['why']}", style="dim"), soft_wrap=True)
    for v, words in verdict_words(sites).items():
        con.print(Text(f"  {v}: {words}", style="dim"), soft_wrap=True)
    con.print(Text(f"  {MARK} beside a speedup: its variant leaks for that op. t: dudect's Welch t of calls with one "
                   "fixed secret against calls with fresh ones, on this machine (! past |t| > 4.5): evidence beside "
                   "the verdict, never a verdict. Integer divisions are checked by their dividends (KyberSlash); "
                   "floating-point divisions and square roots on a secret are not.", style="dim"), soft_wrap=True)
    con.print()


def html_section(directory: Path) -> str:
    """The report's constant-time section (empty without ct results)."""
    sites, stages = tables(directory)
    if sites.empty:
        return ""
    e = html.escape
    m = verdict_matrix(sites)
    variants = [c for c in m.columns if c not in ("scheme", "label", "op", "compiler")]
    multi = m["compiler"].nunique() > 1
    head = "<tr><th>set</th><th>op</th>" + ("<th>compiler</th>" if multi else "") + "".join(
        f"<th>{e(v)}</th>" for v in variants) + "</tr>"
    body = []
    for _, r in m.iterrows():
        cells = [e(r["scheme"]), e(str(r["label"]))] + ([e(r["compiler"])] if multi else [])
        cells += [f'<span class="ct-{e(str(r[v]).split(" ")[0].replace("/", ""))}">{e(str(r[v]))}</span>'
                  if pd.notna(r[v]) else "" for v in variants]
        body.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    out = ['<h2 id="constant-time">Constant time</h2>',
           "<p>Per op and build: whether a secret steers a branch, a memory address or a division (memcheck with the op's "
           "secrets undefined; each site confirmed by exact traces over different secrets, public inputs fixed).</p>",
           f"<table class=\"ct\">{head}{''.join(body)}</table>"]
    leaks = leak_rows(sites)
    if len(leaks):
        out.append("<h3>Leaks</h3><ul>")
        for (scheme, label, variant, compiler), g in leaks.groupby(["scheme", "label", "variant", "compiler"],
                                                                    sort=False):
            first = g.iloc[0]
            more = f" and {len(g) - 1} more" if len(g) > 1 else ""
            out.append(f"<li><b>{e(scheme)} {e(str(label))} · {e(variant)} ({e(compiler)})</b>: "
                       f"{e(_site_text(first))}{e(more)}; secrets {e(str(first['witnesses']))}: "
                       f"{e(str(first['difference']))}</li>")
        out.append("</ul>")
    if not stages.empty:
        out.append("<h3>Which step of the chain</h3><ul>" + "".join(f"<li>{e(s)}</li>" for s in stages["sentence"])
                   + "</ul>")
    scopes = sites.get("scope", pd.Series(dtype=object)).dropna().unique()
    if len(scopes):
        out.append("<p class=\"note\">" + " ".join(f"Scope: {e(str(x))}." for x in scopes) + "</p>")
    declass = sites[sites["site_verdict"].eq("declassified")].drop_duplicates(["family", "declassified"])
    if len(declass):
        out.append("<h3>Declassified</h3><ul>" + "".join(
            f"<li>{e(r['family'])}: {e(str(r['declassified']))}</li>" for _, r in declass.iterrows()) + "</ul>")
    out.append("<p class=\"note\">" + " ".join(f"<b>{e(v)}</b>: {e(w)}." for v, w in verdict_words(sites).items()) +
               " <b>t</b>: dudect's Welch t of calls with one fixed secret against calls with fresh ones, on this "
               "machine (! past |t| &gt; 4.5): evidence beside the verdict, never a verdict."
               " Integer divisions are checked by their dividends over the secrets (KyberSlash); floating-point "
               "divisions and square roots on a secret are not. "
               "Table: results/constant_time.csv.</p>")
    return "\n".join(out)


def write_alone(directory: Path) -> Path:
    """DIR/report/index.html of a study that tested constant time only (no timing, no comparisons)."""
    from ..studydir import StudyDir
    from .files import write_text

    outdir = StudyDir(directory).report_dir
    outdir.mkdir(parents=True, exist_ok=True)
    page = (f"<!doctype html><html><head><meta charset=\"utf-8\"><title>pqsimd report: "
            f"{html.escape(Path(directory).resolve().name)}</title><style>body{{font-family:sans-serif;max-width:1100px;"
            f"margin:2em auto}} table{{border-collapse:collapse}} td,th{{border:1px solid #ccc;padding:2px 8px}} "
            f".ct-leak{{color:#b00;font-weight:bold}} .ct-unconfirmed{{color:#a60}} .ct-clean{{color:#070}} "
            f".note{{color:#555}}</style></head><body><h1>pqsimd report: {html.escape(Path(directory).resolve().name)}"
            f"</h1>{html_section(directory)}</body></html>")
    write_text(outdir / "index.html", page)
    return outdir


def show_part(study, con: Console, metric: str | None = None, compiler: str | None = None) -> None:
    """`pqsimd show`'s constant-time section beside speed (results/constant_time)."""
    show(study.directory, con)
