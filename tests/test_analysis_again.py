"""An analysis the user did not ask for (`report` after the measurements changed, `cliffs --retime`)
keeps the settings the last analysis was given on the command line, unless study.toml's [analysis]
was edited since (the edit wins); `report` tells changed measurements by what raw/ holds (names and
sha256 recorded in results/), not by file times (issue 45)."""

import json
import os
import shutil

import pytest
from click.testing import CliRunner

from pqsimd.analysis_settings import again, asked_record
from pqsimd.studydir import StudyDir


def _summary(d) -> dict:
    return json.loads((d / "results" / "summary.json").read_text())


@pytest.fixture()
def analysed(tmp_path):
    from pqsimd.analyze import analyze_study
    from synthetic import make_synthetic_study

    d = make_synthetic_study(tmp_path / "s", schemes=("ml-kem-512",), variants=("ref", "avx2"), ops=("ntt",),
                             jobs=4, spins=10, reps=3, medians={"ref": 1000, "avx2": 40}, seed=46)
    analyze_study(d, adjust="bonferroni", n_boot=300)
    return d


def _set_analysis(d, **table):
    text = (d / "study.toml").read_text()
    lines = "".join(f"{k} = {json.dumps(v)}\n" for k, v in table.items())
    (d / "study.toml").write_text(text + ("\n[analysis]\n" if "[analysis]" not in text else "") + lines)


def test_again_keeps_the_command_line_until_study_toml_says_otherwise(analysed):
    assert again(analysed, _summary(analysed)) == {"adjust": "bonferroni", "n_boot": 300}
    _set_analysis(analysed, adjust="by")  # edited after that analysis: the edit wins for its key only
    assert again(analysed, _summary(analysed)) == {"n_boot": 300}
    # an older pqsimd's results (no record of what was given): their settings, but not over [analysis]
    old = {k: v for k, v in _summary(analysed).items() if k != "analysis_asked"}
    assert again(analysed, old) == {"n_boot": 300, "seed": old["settings"]["seed"]}
    assert asked_record({}, {"adjust": None, "seed": 5}) == {"command_line": {"seed": 5}, "analysis_table": {}}


def test_report_analyses_again_by_content_not_file_times(analysed):
    from pqsimd.cli import _analyse_again_if_older

    sd = StudyDir(analysed)
    raw = sd.raw_files()
    away = analysed / "away.parquet"
    shutil.move(raw[-1], away)  # keeps its (older) time
    from pqsimd.analyze import analyze_study

    analyze_study(analysed, adjust="bonferroni")
    assert raw[-1].name not in _summary(analysed)["computed_from"]
    shutil.move(away, raw[-1])  # copied back in with a time older than results/
    past = (analysed / "results" / "summary.json").stat().st_mtime - 3600
    os.utime(raw[-1], (past, past))
    _analyse_again_if_older(analysed)
    s = _summary(analysed)
    assert raw[-1].name in s["computed_from"] and s["settings"]["adjust"] == "bonferroni"
    raw[0].unlink()  # a raw file gone: analysed again too
    _set_analysis(analysed, adjust="by")
    _analyse_again_if_older(analysed)
    s = _summary(analysed)
    assert raw[0].name not in s["computed_from"] and s["settings"]["adjust"] == "by"


def test_cliffs_retime_analyses_again_with_the_last_settings(analysed, monkeypatch):
    import pqsimd.run.retime as retime
    from pqsimd.cli import cli

    monkeypatch.setattr(retime, "retime", lambda *a, **k: None)  # nothing flagged, nothing re-timed
    CliRunner().invoke(cli, ["cliffs", str(analysed), "--retime"])
    assert _summary(analysed)["settings"]["adjust"] == "bonferroni"
    assert _summary(analysed)["settings"]["n_boot"] == 300
