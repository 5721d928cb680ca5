"""Analysis decides, the report presents: report/ imports nothing from analyze/, the headlines come from
one rule (analyze/explanations.headline_picks, written to results/headlines), and the report's optional
views are registered parts (report/parts.py) that `report` and `show` loop over."""

from __future__ import annotations

import ast
from pathlib import Path

import pandas as pd

from pqsimd import metrics

SRC = Path(metrics.__file__).parent


def test_the_report_imports_nothing_from_analyze():
    hits = []
    for path in sorted((SRC / "report").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom):
                names = [("." * node.level) + (node.module or "")] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            if any(n.startswith(("..analyze", "pqsimd.analyze")) or n == "..analyze" for n in names):
                hits.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert not hits, "report/ imports analyze/ (analyse in the command line's layer, studysets.py):\n" + "\n".join(hits)


def _hand(rows):
    return pd.DataFrame([{"scheme": s, "op": op, "stage": "hand_simd", "speedup": sp, "ci_low": sp * 0.9,
                          "ci_high": sp * 1.1, "compiler": "gcc"} for s, op, sp in rows])


def test_one_headline_rule_for_the_report_and_the_explanations():
    from pqsimd.analyze.explanations import select
    from pqsimd.headlines import headline_picks

    fam = {"schemes": {"s1": {}, "s2": {}}, "views": {"headlines": [{"label": "kernels", "ops": ["ntt", "invntt"]},
                                                                     {"label": "one", "ops": ["gen"]}]}}
    d = _hand([("s1", "ntt", 30.0), ("s1", "invntt", 20.0), ("s2", "ntt", 40.0), ("s1", "gen", 0.8),
               ("s2", "gen", 0.9)])
    picks = {(p["kind"], p["group"]): (p["row"]["scheme"], p["row"]["op"], p["n"]) for p in headline_picks(d, fam)}
    assert picks == {("largest", ""): ("s2", "ntt", 5), ("smallest", ""): ("s1", "gen", 5),
                     ("range_high", "kernels"): ("s2", "ntt", 3), ("range_low", "kernels"): ("s1", "invntt", 3),
                     ("range_high", "one"): ("s2", "gen", 2), ("range_low", "one"): ("s1", "gen", 2)}
    kinds = select(d, d.iloc[0:0].assign(ci_high=[]), {"fam": fam})
    headlined = {(s, op) for (s, op, _stage), k in kinds.items() if "headline" in k}
    assert headlined == {(s, op) for s, op, _n in picks.values()}
    # a range of one row is one number in the report, never an explanation's headline of its own
    one = _hand([("s1", "ntt", 30.0), ("s1", "gen", 3.0)])
    fam1 = {"schemes": {"s1": {}}, "views": {"headlines": [{"label": "one", "ops": ["gen"]}]}}
    assert {p["kind"] for p in headline_picks(one, fam1)} == {"largest", "range_high", "range_low"}
    kinds = select(one, one.iloc[0:0].assign(ci_high=[]), {"fam": fam1})
    assert {k[1] for k, v in kinds.items() if "headline" in v} == {"ntt"}


def test_the_headline_table_is_of_the_primary_metric_and_never_of_a_cost():
    from pqsimd.headlines import headline_table
    from pqsimd.model import Chain

    chain = Chain.from_dict({"steps": [{"stage": "hand_simd", "from": "ref", "to": "avx2", "hand": True}]})
    c = _hand([("s1", "ntt", 30.0), ("s1", "chk", 99.0)]).assign(metric=metrics.TIME, baseline="ref", variant="avx2",
                                                                  baseline_compiler="gcc")
    fams = {"fam": {"schemes": {"s1": {}}, "self_check": "chk"}}
    t = headline_table(c, fams, chain, metrics.TIME, "gcc")
    assert list(t["op"]) == ["ntt"] and set(t["metric"]) == {metrics.TIME}  # the self-check op is never a headline
    assert headline_table(c.assign(metric=metrics.STACK), fams, chain, metrics.STACK, "gcc").empty
    assert metrics.primary([metrics.STACK, metrics.COUNT, metrics.TIME]) == metrics.TIME
    assert metrics.primary([metrics.STACK, metrics.SIZE]) == metrics.SIZE


def test_every_registered_part_names_functions_its_module_has():
    from pqsimd.report import parts

    assert len({p.name for p in parts.PARTS}) == len(parts.PARTS)
    for p in parts.PARTS:
        assert p.make or p.show, p.name
        assert p.html == parts.EXTRA or p.html in parts.SECTIONS, p.name
        for which in (p.make, p.show):
            if which:
                assert callable(p.function(which)), (p.name, which)


def test_a_failing_part_costs_only_itself(monkeypatch):
    from pqsimd.report import parts

    extra = parts.Part("broken", "a broken view", "parts", make="get")  # get(study, outdir): a TypeError
    monkeypatch.setattr(parts, "PARTS", (extra,))
    notes: list[str] = []
    made = parts.make_all(object(), Path("."), notes)
    assert made == {"broken": parts.Made()} and notes[0].startswith("a broken view skipped: TypeError")
    assert parts.as_made(([1], [("t", {})], {"f": ["x"]})) == parts.Made([1], ["t"], {"f": ["x"]}, [])
    assert parts.as_made(["t"]) == parts.Made([], ["t"], {}, [])


def test_the_hash_share_is_a_part_of_show_and_the_report(tmp_path):
    """Issue 44's hash share (results/hash_share) as the first view built as a part: its table in the
    report's files and a section of show, from results/ alone."""
    from report_fake import make_fake_study
    from rich.console import Console

    from pqsimd.analyze.write import write_table
    from pqsimd.report import hashshare
    from pqsimd.report.terminal import show_study
    from pqsimd.results import load_study

    d = make_fake_study(tmp_path / "s", schemes=["ml-kem-512"], ops=["gen_a", "ntt"], jobs=2, spins=4, reps=2)
    write_table(pd.DataFrame([
        {"scheme": "ml-kem-512", "op": "gen_a", "variant": "ref", "compiler": "gcc", "instructions": 1000.0,
         "hashed": 800.0, "share": 0.8, "amdahl_bound": 5.0},
        {"scheme": "ml-kem-512", "op": "ntt", "variant": "ref", "compiler": "gcc", "instructions": 500.0,
         "hashed": 0.0, "share": 0.0, "amdahl_bound": 1.0}]), d / "results", "hash_share")
    study = load_study(d)
    _figs, tables = hashshare.hash_share_parts(study, tmp_path / "report")
    assert [t.name for t in tables] == ["table_hash_share_ml-kem"]
    assert (tmp_path / "report" / "hashshare" / "table_hash_share_ml-kem.csv").is_file()
    con = Console(record=True, width=200)
    show_study(d, console=con)
    out = con.export_text()
    assert "how much of each op is hashing" in out
    section = out.split("how much of each op is hashing", 1)[1]
    line = next(x for x in section.splitlines() if x.lstrip().startswith("gen_a"))
    assert "80%" in line and "5.00×" in line


def test_the_per_unit_view_is_a_part_of_show_and_the_report(tmp_path):
    """Issue 44's width effect (results/per_unit): the report's table and show's section print each build's
    per-unit figures and the op-to-op speedup with its interval, from results/ alone."""
    from report_fake import make_fake_study
    from rich.console import Console

    from pqsimd.analyze.write import write_table
    from pqsimd.report import perunit
    from pqsimd.report.terminal import show_study
    from pqsimd.results import load_study

    d = make_fake_study(tmp_path / "s", schemes=["keccak-p1600"], ops=["permute_x4", "permute_x8"], jobs=2,
                        spins=4, reps=2)
    base = {"scheme": "keccak-p1600", "variant": "avx512", "compiler": "gcc", "unit": "permutation",
            "op_from": "permute_x4", "op_to": "permute_x8", "units_from": 4, "units_to": 8}
    write_table(pd.DataFrame([
        {**base, "metric": "ticks", "per_unit_from": 176.5, "per_unit_to": 125.6, "speedup": 1.405,
         "ci_low": 1.38, "ci_high": 1.43, "ci_level": 0.95, "design": "paired", "verdict": "faster"},
        {**base, "metric": "instructions", "per_unit_from": 721.75, "per_unit_to": 358.5, "speedup": 2.013,
         "ci_low": 2.013, "ci_high": 2.013, "ci_level": 1.0, "design": "exact", "verdict": "faster"}]),
        d / "results", "per_unit")
    study = load_study(d)
    _figs, tables = perunit.per_unit_parts(study, tmp_path / "report")
    assert [t.name for t in tables] == ["table_per_unit_keccak"]
    assert (tmp_path / "report" / "perunit" / "table_per_unit_keccak.csv").is_file()
    con = Console(record=True, width=220)
    show_study(d, console=con)
    out = con.export_text()
    section = out.split("per permutation, op to op", 1)[1]
    line = next(x for x in section.splitlines() if x.lstrip().startswith("avx512"))
    assert "176 → 126" in line and "1.41×" in line and "[1.38, 1.43] at 95%" in line and "faster" in line
    assert "722 → 358" in line and "2.01×" in line
