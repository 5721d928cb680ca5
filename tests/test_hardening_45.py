"""Issue 45's smaller defects, each on the level where it is decided (no study is run)."""

import tomllib

from pqsimd import study as study_mod


def test_an_environment_override_is_never_written_into_study_toml(tmp_path, monkeypatch):
    monkeypatch.setenv("PQSIMD_SHARED_CPU", "keep")
    s = study_mod.resolve(tmp_path / "s", {})
    assert s.shared_cpu == "keep"  # this run keeps shared jobs ...
    assert "shared_cpu" not in tomllib.loads(s.to_toml())["study"]  # ... the study does not, for good
    s = study_mod.resolve(tmp_path / "s", {"shared_cpu": "keep"})  # asked on the command line: the study's
    assert tomllib.loads(s.to_toml())["study"]["shared_cpu"] == "keep"
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "study.toml").write_text(s.to_toml())
    monkeypatch.setenv("PQSIMD_SHARED_CPU", "discard")
    s = study_mod.resolve(tmp_path / "t", {})
    assert s.shared_cpu == "discard" and tomllib.loads(s.to_toml())["study"]["shared_cpu"] == "keep"


def test_the_methods_of_a_study_that_timed_nothing_do_not_describe_timing(tmp_path):
    from pqsimd.analyze import analyze_study
    from pqsimd.results import load_study
    from synthetic import make_synthetic_study

    d = make_synthetic_study(tmp_path / "s", schemes=("ml-kem-512",), variants=("ref", "avx2"), ops=("ntt",), jobs=1,
                             spins=3, reps=1, medians={"ref": 1000, "avx2": 40}, seed=7, metric="instructions")
    analyze_study(d)
    r = load_study(d)
    assert r.timed_nothing
    design, warm, carry = r.design_notes()
    text = " ".join((design, warm, carry, r.reading_note()))
    assert "nothing timed" in design and "process" not in text and "spin" not in text and "interval is printed" not in text
    assert "exact" in r.reading_note()


def test_a_vector_length_set_whose_metrics_cannot_give_its_view_is_refused_before_anything(tmp_path):
    import pytest

    from pqsimd.errors import PqsimdError
    from pqsimd.studysets import run_vlens

    d = tmp_path / "set"
    with pytest.raises(PqsimdError) as e:
        run_vlens(d, [128, 256], {"isa": "riscv64", "metric": ["size"]})
    line = str(e.value)
    assert "\n" not in line and "instruction counts" in line and "--metric size,instructions" in line, line
    assert not d.exists()  # nothing written, built or measured


def test_a_vector_length_set_that_failed_at_zero_says_why_in_one_line(tmp_path, monkeypatch, capsys):
    import pqsimd.studysets as sets

    ran = []
    monkeypatch.setattr(sets, "run_study", lambda sub, overrides, **k: ran.append(overrides["vlen"]) or overrides["vlen"])
    monkeypatch.setattr(sets, "report_set", lambda d: ran.append("report"))
    monkeypatch.setattr(sets, "_refuse_measured_nothing", lambda d, subs: None)  # the stand-in runs measure nothing
    ok = sets.run_vlens(tmp_path / "set", [0, 256], {"isa": "riscv64", "metric": ["instructions"]})
    err = capsys.readouterr().err.strip()
    assert not ok and ran == [0, 256, "report"]  # the length that ran still gives its part of the view
    assert len(err.splitlines()) == 1 and "--vlen 0 failed" in err and "without its V extension" in err, err
    assert "pqsimd run NEW_DIR --isa riscv64 --vlen 0" in err


def test_the_copies_advice_names_commands_that_work_on_the_study(tmp_path):
    import pandas as pd

    from pqsimd.analyze.layout import COPIES_CAP, copies_record

    rows = pd.DataFrame({"method": ["csign"] * 10, "copies_needed": [COPIES_CAP + 4.0] * 2 + [12.0] * 8})
    rec = copies_record(rows, 2, tmp_path / "study", jobs=10)
    note = rec["note"]
    # the plan fixed 2 copies per job: more copies are a new directory's, more jobs this study's own
    # ... with this study's other settings (--like), not the defaults
    assert "run with --layouts" not in note, note
    assert f"`pqsimd run NEW_DIR --like {tmp_path / 'study'} --layouts {rec['recommended']}`" in note, note
    assert f"`pqsimd run {tmp_path / 'study'} --jobs 20`" in note and "which its plan fixed" in note, note


def test_tables_and_the_reading_note_name_the_estimand(tmp_path):
    import json

    from pqsimd.analyze import analyze_study
    from pqsimd.model import ESTIMAND_SHORT
    from pqsimd.report.tables import table1_hand_simd, table_full
    from pqsimd.results import load_study
    from synthetic import make_synthetic_study

    d = make_synthetic_study(tmp_path / "s", schemes=("ml-kem-512",), variants=("ref", "avx2"), ops=("ntt",), jobs=6,
                             spins=10, reps=3, medians={"ref": 1000, "avx2": 40}, seed=8, design="paired")
    analyze_study(d)
    path = d / "results" / "summary.json"
    s = json.loads(path.read_text())
    assert s["estimand"]["applies"] == "fixed"
    s["estimand"]["applies"] = "laid_out"  # as a study with randomized layouts records it
    path.write_text(json.dumps(s))
    r = load_study(d)
    fam = r.families[0]
    for t in (table1_hand_simd(r, fam, "ticks"), table_full(r, fam, "ticks")):
        assert f"Speedup: {ESTIMAND_SHORT['laid_out']}." in t.caption, t.caption
    assert "typical layout: the median over jobs and layouts of copy-pair ratios" in ESTIMAND_SHORT["laid_out"]
    assert "not the geometric mean over layouts" in r.reading_note()


def test_the_coresidency_note_says_when_it_was_not_tested_with_power(tmp_path):
    import json

    import pandas as pd

    from pqsimd.analyze import analyze_study
    from pqsimd.results import load_study
    from synthetic import make_synthetic_study

    d = make_synthetic_study(tmp_path / "s", schemes=("ml-kem-512",), variants=("ref", "avx2"), ops=("ntt",), jobs=3,
                             spins=10, reps=3, medians={"ref": 1000, "avx2": 40}, seed=9)
    analyze_study(d)
    path = d / "results" / "summary.json"
    s = json.loads(path.read_text())
    rows = [{"metric": "ticks", "scheme": "ml-kem-512", "op": "ntt", "variant": v, "compiler": "gcc", "n_paired": 10,
             "n_alone": 1, "ratio": 1.0, "ci_low": lo, "ci_high": hi, "flagged": False} for v, lo, hi in
            (("ref", 0.88, 1.13), ("avx2", 0.89, 1.12))]
    pd.DataFrame(rows).to_parquet(d / "results" / "coresidency.parquet")
    s["coresidency"] = {"measured": True, "rows": 2, "flagged": 0, "level": 0.95, "median_ratio": 1.0, "worst": "x"}
    path.write_text(json.dumps(s))
    note = load_study(d).coresidency_note()
    assert "not tested with power at 1 alone job(s) per group" in note and "±12.7%" in note and "--alone 5" in note, note
    s["coresidency"]["median_halfwidth"] = 0.008  # ±0.8%: tested with power, no such line
    path.write_text(json.dumps(s))
    assert "power" not in load_study(d).coresidency_note()


def test_the_ops_the_budget_cut_are_named_in_one_line(tmp_path):
    import json

    from pqsimd.analyze import analyze_study
    from pqsimd.analyze.records import budget_record
    from pqsimd.results import load_study
    from synthetic import make_synthetic_study

    d = tmp_path / "b"
    d.mkdir()
    (d / "plan.json").write_text(json.dumps({"settings": {"spins": 200, "reps": 20, "budget": 0.2}}))
    ops = {"ntt": {"spins": 200, "reps": 20}, "kem_decaps": {"spins": 103, "reps": 10}, "gen_a": {"spins": 197, "reps": 20}}
    (d / "sizing.json").write_text(json.dumps({"schemes": {"s1": {"ops": ops}}}))
    rec = budget_record(d)
    assert rec["cut"] == 2 and rec["ops"] == ["gen_a", "kem_decaps"] and abs(rec["least_share"] - 1030 / 4000) < 1e-12
    (d / "plan.json").write_text(json.dumps({"settings": {"spins": 200, "reps": 20, "budget": None}}))
    assert budget_record(d)["cut"] == 0  # no budget: nothing was cut

    s = make_synthetic_study(tmp_path / "s", schemes=("ml-kem-512",), variants=("ref", "avx2"), ops=("ntt",), jobs=3,
                             spins=10, reps=3, medians={"ref": 1000, "avx2": 40}, seed=10)
    analyze_study(s)
    path = s / "results" / "summary.json"
    summary = json.loads(path.read_text())
    assert "budget" in summary and load_study(s).budget_note() is None
    summary["budget"] = rec
    path.write_text(json.dumps(summary))
    note = load_study(s).budget_note()
    assert "2 op(s)" in note and "down to 26%" in note and "gen_a, kem_decaps" in note and "--budget" in note, note


def test_the_medians_quotient_is_named_only_where_it_falls_outside_the_interval():
    from pqsimd.model import medians_quotient_outside as q

    row = {"median_base": 1000.0, "median_var": 400.0, "ci_low": 2.4, "ci_high": 2.6}
    assert q(row) is None  # 2.5: inside
    assert q({**row, "median_var": 500.0}) == 2.0  # outside: the quotient is given
    assert q({**row, "ci_low": float("nan")}) is None  # no interval, nothing to disagree with
    assert q({**row, "median_var": 0.0}) is None and q({}) is None and q(None) is None


def test_show_and_explain_say_where_the_medians_divided_leave_the_interval(tmp_path):
    """A comparison whose per-build medians, divided, fall outside its interval (as 23 of 315 did on a
    fresh standard study, issue 45): show marks its speedup with the footnote, explain gives the quotient."""
    import pandas as pd
    from click.testing import CliRunner

    from pqsimd.cli import cli as main
    from pqsimd.model import MEDIANS_QUOTIENT_NOTE

    d = _fake_study_with_mix(tmp_path)
    out = CliRunner().invoke(main, ["show", str(d)])
    assert out.exit_code == 0, out.output
    assert MEDIANS_QUOTIENT_NOTE[:40] not in out.output  # medians that agree: no mark
    p = d / "results" / "comparisons.parquet"
    c = pd.read_parquet(p)
    m = (c["metric"] == "ticks") & (c["op"] == "ntt") & (c["baseline"] == "ref") & (c["variant"] == "avx2")
    assert m.sum() == 1
    c.loc[m, "median_var"] = c.loc[m, "median_base"] / (c.loc[m, "ci_high"] * 1.2)  # quotient below the interval
    c.to_parquet(p)
    out = CliRunner().invoke(main, ["show", str(d)])
    assert out.exit_code == 0, out.output
    assert MEDIANS_QUOTIENT_NOTE[:40] in " ".join(out.output.split())
    ex = CliRunner().invoke(main, ["explain", str(d), "--scheme", "ml-kem-512", "--op", "ntt", "--variants", "ref,avx2"])
    assert ex.exit_code == 0, ex.output
    text = " ".join(ex.output.split())
    assert "the two medians, divided, give" in text and "outside the interval" in text


def test_advice_names_the_study_as_it_is_read_now_after_a_copy(tmp_path, monkeypatch):
    """Advice written at analysis names the analysed directory and how pqsimd was started; a copied study
    read elsewhere gets commands that act on the copy (following the original's would write into it)."""
    import json
    import sys

    from pqsimd.analyze import analyze_study
    from pqsimd.results import load_study
    from synthetic import make_synthetic_study

    monkeypatch.setattr(sys, "argv", [".venv/bin/pqsimd", "analyze"])
    d = make_synthetic_study(tmp_path / "orig", schemes=("ml-kem-512",), variants=("ref", "avx2"), ops=("ntt",), jobs=4,
                             spins=8, reps=3, seed=3, design="paired")
    analyze_study(d)
    path = d / "results" / "summary.json"
    s = json.loads(path.read_text())
    assert s["advice_names"] == {"directory": str(d), "invoked": ".venv/bin/pqsimd"}
    s["warnings"] = [f"layouts: `.venv/bin/pqsimd run {d} --jobs 20` narrows them; `.venv/bin/pqsimd cliffs {d}`"]
    path.write_text(json.dumps(s))
    copy = tmp_path / "copy dir"
    import shutil

    shutil.copytree(d, copy)
    monkeypatch.setattr(sys, "argv", ["/usr/local/bin/pqsimd", "show"])
    w = load_study(copy).summary["warnings"][0]
    assert w == f"layouts: `pqsimd run '{copy}' --jobs 20` narrows them; `pqsimd cliffs '{copy}'`", w
    assert str(d) + " " not in w and load_study(d).summary["warnings"][0].count(str(d)) == 2  # the original: its own


def test_explain_reads_no_verdict_as_no_slowdown_and_a_pair_the_other_way_round(tmp_path):
    """explain's likely reason follows the comparison's verdict (`~` is neither slower nor the same, whatever its
    point estimate), and --variants in the other order reads the study's comparison backwards, not the medians."""
    import pandas as pd
    from click.testing import CliRunner

    from pqsimd.cli import cli as main

    d = _fake_study_with_mix(tmp_path)

    def explain(variants):
        out = CliRunner().invoke(main, ["explain", str(d), "--scheme", "ml-kem-512", "--op", "ntt", "--variants", variants])
        assert out.exit_code == 0, out.output
        return " ".join(out.output.split())

    back = explain("avx2,ref")  # the study compares ref → avx2
    assert "the study compares them the other way round, ref → avx2: avx2" in back and "faster" in back, back
    assert "the ratio of the two medians" not in back
    p = d / "results" / "comparisons.parquet"
    c = pd.read_parquet(p)
    m = (c["metric"] == "ticks") & (c["op"] == "ntt") & (c["baseline"] == "ref") & (c["variant"] == "avx2")
    c.loc[m, ["speedup", "ci_low", "ci_high", "verdict"]] = [0.98, 0.95, 1.04, "~"]  # no verdict, point below 1
    c.to_parquet(p)
    text = explain("ref,avx2")
    assert "no verdict" in text and "slower" not in text.split("likely reason")[1], text


def test_a_damaged_constant_time_file_is_named_not_dropped(tmp_path):
    """A ct raw file cut short used to vanish from the results (its build's column gone without a word)."""
    import pytest

    from pqsimd.analyze.ct import ct_records
    from pqsimd.errors import PqsimdError

    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "refnv.gcc.ml-kem-512.ct.parquet").write_bytes(b"PAR1 cut short")
    with pytest.raises(PqsimdError, match=r"refnv\.gcc\.ml-kem-512\.ct\.parquet: not a readable Parquet file.*pqsimd run"):
        ct_records(tmp_path)


def test_hazard_counts_are_not_compared_as_times(tmp_path):
    """A hazards job's raw rows (metric hazards.<event>, exact counts of a model) stay out of the spins: they
    were compared like times (intervals, the clock's resolution, 0 against 0 "below timer resolution")."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pqsimd.analyze import analyze_study
    from pqsimd.analyze.load import load_spins
    from synthetic import make_synthetic_study

    d = make_synthetic_study(tmp_path / "s", schemes=("ml-kem-512",), variants=("ref", "avx2"), ops=("ntt",), jobs=3,
                             spins=6, reps=3, seed=5)
    src = sorted((d / "raw").glob("*.parquet"))[0]
    t = pq.read_table(src)
    t = t.set_column(t.schema.get_field_index("metric"), "metric", pa.array(["hazards.Ld"] * t.num_rows))
    pq.write_table(t, d / "raw" / "ref.gcc.ml-kem-512.hazards.parquet")
    assert set(load_spins(d).spins["metric"].astype(str)) == {"ticks"}
    analyze_study(d)
    import pandas as pd

    assert not pd.read_parquet(d / "results" / "comparisons.parquet")["metric"].astype(str).str.startswith("hazards").any()


def _fake_study_with_mix(tmp_path):
    """An analysed fake ML-KEM-512 ntt study (ref, avx2) with the mix tables explain reads (mix_ops as
    analyze/mix.py writes it, its ticks the groups' medians)."""
    import pandas as pd

    from report_fake import make_fake_study, write_fake_mix

    d = make_fake_study(tmp_path / "s", schemes=("ml-kem-512",), variants=("ref", "avx2"), ops=("ntt",), jobs=4,
                        spins=8, reps=3)
    write_fake_mix(d, ops=("ntt",), schemes=("ml-kem-512",), variants=("ref", "avx2"))
    g = pd.read_parquet(d / "results" / "groups.parquet").set_index(["metric", "op", "variant"])["median"]
    pd.DataFrame([{"scheme": "ml-kem-512", "family": "ml-kem", "op": "ntt", "variant": v, "compiler": "gcc",
                   "instructions": 1000.0, "ticks": g[("ticks", "ntt", v)], "ticks_per_instruction": 0.5}
                  for v in ("ref", "avx2")]).to_parquet(d / "results" / "mix_ops.parquet")
    return d


def test_the_constant_time_legend_promises_no_more_than_the_tests_scope():
    """riscv64 under QEMU checks branches only: its `clean` must not read "no branch or address depends on a secret"."""
    import pandas as pd

    from pqsimd.report.ct import VERDICT_WORDS, verdict_words

    native = pd.DataFrame({"verdict": ["clean"], "scope": [None]})
    assert verdict_words(native) == VERDICT_WORDS
    scoped = pd.DataFrame({"verdict": ["clean"], "scope": ["branches only: addresses and divisions not checked"]})
    assert "no branch or address" not in verdict_words(scoped)["clean"]
    assert "scope" in verdict_words(scoped)["clean"]


def test_a_counts_only_study_shows_its_views_and_refuses_a_timed_metric_in_one_line(tmp_path):
    import json

    from click.testing import CliRunner

    from pqsimd.analyze import analyze_study
    from pqsimd.cli import cli as main
    from synthetic import make_synthetic_study

    d = make_synthetic_study(tmp_path / "s", schemes=("ml-kem-512",), variants=("ref", "avx2"), ops=("ntt",), jobs=3,
                             spins=6, reps=3, seed=7)
    analyze_study(d)
    for f in (d / "results").glob("comparisons.*"):  # as write_mix_only leaves a study that counted only
        f.unlink()
    path = d / "results" / "summary.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "mix_only": True}))
    shown = CliRunner().invoke(main, ["show", str(d)])
    assert shown.exit_code == 0 and "counts only (no timing in this study)" in shown.output, shown.output
    refused = CliRunner().invoke(main, ["show", str(d), "--metric", "ticks"])
    from pqsimd.errors import PqsimdError

    message = str(refused.exception)  # main() prints a PqsimdError as its one line
    assert isinstance(refused.exception, PqsimdError) and "counted only (nothing timed)" in message, message
    assert "--metric ticks" in message and "\n" not in message
