"""results/footprint and its report: each C -> SIMD pair's time speedup beside its exact stack and code-size
change; `show`, the HTML and LaTeX tables print it, and every table of a cost metric (stack, size) says
bytes, never speedup/faster/slower. Oracles: the numbers put in (synthetic), and the stackfix fixture's
raw bytes per build (tests/fixtures/families/stackfix.toml)."""

from __future__ import annotations

import math
import os
import re
import shutil
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from pqsimd import metrics
from pqsimd.analyze import footprint
from pqsimd.report import fmt
from pqsimd.studydir import StudyDir

from conftest import run_cli

FAMILIES = Path(__file__).parent / "fixtures" / "families"
ENV = {**os.environ, "PQSIMD_FAMILY_PATH": str(FAMILIES), "COLUMNS": "200"}
SPEED_WORDS = re.compile(r"speedup|faster|slower", re.I)


def _synthetic():
    groups = pd.DataFrame([
        {"metric": m, "scheme": "s1", "op": op, "variant": v, "compiler": "gcc", "median": n}
        for m, op, v, n in [("stack", "keypair", "ref", 1000), ("stack", "keypair", "avx2", 1250),
                            ("size", "keypair", "ref", 4000), ("size", "keypair", "avx2", 10000),
                            ("stack", "ntt", "ref", 128), ("stack", "ntt", "avx2", 64),
                            ("size", "ntt", "ref", 600), ("size", "ntt", "avx2", 600),
                            ("stack", "empty", "ref", 0), ("stack", "empty", "avx2", 0)]])
    comps = pd.DataFrame([{"metric": "ticks", "scheme": "s1", "op": "keypair", "baseline": "ref", "variant": "avx2",
                           "compiler": "gcc", "speedup": 6.0, "ci_low": 5.5, "ci_high": 6.5, "ci_level": 0.95,
                           "verdict": "faster"}])
    families = {"fam": {"schemes": {"s1": {"label": "S-1"}}, "views": {"portfolio": {"end_to_end": ["keypair"]}}}}
    chain = {"steps": [{"stage": "hand_simd", "from": "ref", "to": "avx2"}], "implementations": []}
    return footprint.footprint_table(comps, groups, families, chain, {"empty"})


def test_the_footprint_table_puts_the_speedup_beside_exact_byte_ratios():
    df = _synthetic()
    assert list(df.columns) == footprint.COLUMNS
    assert set(df["op"]) == {"keypair", "ntt"}  # the self-check op is left out
    kp = df[df.op == "keypair"].iloc[0]
    assert (kp.base, kp.variant, kp.family, bool(kp.end_to_end)) == ("ref", "avx2", "fam", True)
    assert (kp.time_speedup, kp.time_ci_low, kp.time_ci_high, kp.time_verdict) == (6.0, 5.5, 6.5, "faster")
    assert (kp.stack_base, kp.stack_variant, kp.stack_ratio) == (1000, 1250, 1.25)
    assert (kp.size_base, kp.size_variant, kp.size_ratio) == (4000, 10000, 2.5)
    assert kp.sentence == "avx2 makes S-1 keypair 6.00× faster than ref for +25% stack and +150% code"
    ntt = df[df.op == "ntt"].iloc[0]
    assert math.isnan(ntt.time_speedup) and ntt.time_verdict == "not timed" and not ntt.end_to_end
    assert (ntt.stack_ratio, ntt.size_ratio) == (0.5, 1.0)
    assert ntt.sentence == "avx2 vs ref, S-1 ntt (not timed): -50% stack and +0% code"


def test_no_stack_or_size_gives_no_footprint():
    assert footprint.footprint_table(pd.DataFrame(), pd.DataFrame(columns=["metric"]), {}, {}, set()).empty


def test_stack_and_size_are_costs_in_bytes_told_as_changes():
    assert [m for m in metrics.names() if not metrics.reads_as_speedup(m)] == ["stack", "size"]
    assert all(metrics.reads_as_speedup(m) for m in ("ticks", "instructions", None, "cycles"))
    assert [metrics.get(m).per for m in ("stack", "size", "ticks")] == [metrics.Per.OP, metrics.Per.OP, metrics.Per.CALL]
    # analyze's speedup of a cost is base / variant bytes: 0.4 means the variant has 2.5 times the bytes
    assert fmt.ratio("size", 0.4) == "2.50× the bytes (+150%)"
    assert fmt.ratio("stack", 2.0) == "0.500× the bytes (−50%)"
    assert fmt.ratio("size", 1.0) == "1× the bytes (same)"
    assert fmt.ratio("size", float("nan")) == fmt.ratio("size", 0) == fmt.NA
    assert fmt.ratio("ticks", 0.4) == "0.400×"
    assert [fmt.verdict("stack", v) for v in ("faster", "slower", "same", "~")] == ["fewer bytes", "more bytes",
                                                                                   "same bytes", "~"]
    assert fmt.verdict("ticks", "faster") == "faster"
    for s in (0.4, 2.0, 1.0):
        assert not SPEED_WORDS.search(fmt.ratio("size", s))


# --- end to end on the stackfix fixture: ref (clean C) -> avx2 (the same C with -mavx2) ---------------------

@pytest.fixture(scope="module")
def fx(tmp_path_factory):
    d = tmp_path_factory.mktemp("footprint") / "s"
    for args in (("run", d, "--preset", "quick", "--schemes", "stack-fixture", "--variants", "ref,avx2", "--metric",
                  "stack,size"), ("analyze", d), ("report", d)):
        r = run_cli(*args, env=ENV)
        assert r.returncode == 0, r.stderr
    return d


def _raw_bytes(d: Path) -> dict[tuple[str, str, str], float]:
    out = {}
    for v in ("ref", "avx2"):
        for m in ("stack", "size"):
            t = pq.read_table(StudyDir(d).raw_path(f"{v}.gcc.stack-fixture.{m}")).to_pandas()
            out |= {(m, op, v): x for op, x in zip(t.op, t.per_call)}
    return out


def test_results_footprint_holds_each_builds_bytes(fx):
    df = pd.read_parquet(fx / "results" / "footprint.parquet")
    assert list(df.columns) == footprint.COLUMNS
    raw = _raw_bytes(fx)
    assert set(df.op) == {"stack_4096", "stack_call", "table_sum"}  # the self-check op left out
    for r in df.itertuples():
        assert (r.base, r.variant) == ("ref", "avx2")
        for m in ("stack", "size"):
            b, v = raw[(m, r.op, "ref")], raw[(m, r.op, "avx2")]
            assert (getattr(r, f"{m}_base"), getattr(r, f"{m}_variant")) == (b, v)
            assert getattr(r, f"{m}_ratio") == pytest.approx(v / b, rel=1e-12)
        assert r.time_verdict == "not timed" and bool(r.end_to_end) == (r.op in ("stack_call", "table_sum"))
    assert df.set_index("op").loc["stack_4096", "stack_base"] == 4104  # the fixture's 4096 + the ABI's 8


def test_show_prints_the_footprint_and_bytes_not_speedups(fx):
    r = run_cli("show", fx, env=ENV)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "What SIMD costs besides time" in out and "Stack and code across the portfolio" in out
    assert re.search(r"stack call.*ref → avx2.*5,144", out) or "5,144" in out
    for metric in ("stack", "size"):
        r = run_cli("show", fx, "--metric", metric, env=ENV)
        assert r.returncode == 0, r.stderr
        table = r.stdout[r.stdout.index("stack fixture ·"):r.stdout.index("What SIMD costs besides time")]
        assert "bytes vs baseline" in table and "the bytes (" in table
        assert not SPEED_WORDS.search(table), table
        assert "/call" not in table


def test_the_report_has_the_footprint_tables_and_names_bytes(fx):
    rep = fx / "report"
    for name in ("table_footprint", "table_footprint_portfolio"):
        for ext in ("tex", "md", "csv"):
            assert (rep / "footprint" / f"{name}.{ext}").is_file(), (name, ext)
    tex = (rep / "footprint" / "table_footprint.tex").read_text()
    assert "Δ stack" in tex or r"\ensuremath{\Delta} stack" in tex or "stack SIMD" in tex
    assert "4,104" in tex or "4{,}104" in tex
    html = (rep / "index.html").read_text()
    assert "table_footprint" in html and "What SIMD costs besides time" in html
    fam = rep / "stackfix"
    costs = sorted(fam.glob("table*.tex"))
    assert costs, "no per-family tables"
    for t in costs:  # every per-metric table of this study is of a cost: bytes, never a speedup
        text = t.read_text()
        assert "the bytes" in text and not SPEED_WORDS.search(text), t.name
    assert not list(fam.glob("table_decomposition*"))  # a product of byte ratios is no speedup decomposition


def test_show_analyses_a_metric_measured_since_the_last_analysis(fx, tmp_path):
    """`run DIR --metric stack,size` on an analysed study, then `show DIR --metric stack`: the stack is
    measured, so show analyses again (as report does) rather than say the study has no such metric."""
    d = tmp_path / "s"
    shutil.copytree(fx, d, ignore=shutil.ignore_patterns("report"))
    aside = tmp_path / "aside"
    aside.mkdir()
    for v in ("ref", "avx2"):  # the study as it was before `--metric stack` (its size measured)
        shutil.move(StudyDir(d).raw_path(f"{v}.gcc.stack-fixture.stack"), aside)
    shutil.rmtree(d / "results")
    assert run_cli("analyze", d, env=ENV).returncode == 0
    r = run_cli("show", d, "--metric", "stack", env=ENV)
    assert r.returncode != 0 and "has no stack measurements" in r.stderr  # the study before the stack ran
    assert "--metric stack" in r.stderr  # ... and the command that adds them
    later = (d / "results" / "summary.json").stat().st_mtime + 10
    for f in aside.iterdir():  # the stack jobs, written after the analysis
        shutil.move(f, StudyDir(d).raw_dir / f.name)
        os.utime(StudyDir(d).raw_dir / f.name, (later, later))
    r = run_cli("show", d, "--metric", "stack", env=ENV)
    assert r.returncode == 0, r.stderr
    assert "analysing again first" in r.stderr
    assert "bytes vs baseline" in r.stdout and "4,104" in r.stdout
