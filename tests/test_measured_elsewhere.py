"""A study whose results/ were analysed from raw files it does not hold (sent in for a campaign
without raw/, as ../shared/studies are) is never timed, grown or analysed again into this machine's
numbers: `run` and `analyze` refuse in one line before anything is built, written or replaced, and
`explain` does not suggest the command that would do so (issue 45)."""

import hashlib
import shutil

import pytest

from pqsimd.errors import PqsimdError
from pqsimd.studydir import StudyDir


def _digest(d) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted((d / "results").iterdir())}


@pytest.fixture()
def analysed(tmp_path):
    from pqsimd.analyze import analyze_study
    from synthetic import make_synthetic_study

    d = make_synthetic_study(tmp_path / "s", schemes=("ml-kem-512",), variants=("ref", "avx2"), ops=("ntt",),
                             jobs=3, spins=10, reps=3, medians={"ref": 1000, "avx2": 40}, seed=45)
    analyze_study(d)
    return d


def test_a_study_analysed_from_its_own_raw_files_is_not_elsewhere(analysed):
    assert not StudyDir(analysed).analysed_elsewhere()
    raw = StudyDir(analysed).raw_files()
    shutil.copy(raw[0], raw[0].with_name("new-job.parquet"))  # a study that grew: its old raw files are still there
    assert not StudyDir(analysed).analysed_elsewhere()


def test_run_refuses_a_study_without_raw_before_anything_is_written(analysed):
    from pqsimd.pipeline import run_study

    shutil.rmtree(analysed / "raw")
    before, toml = _digest(analysed), (analysed / "study.toml").read_text()
    with pytest.raises(PqsimdError) as e:
        run_study(analysed, overrides={"metric": ["size"]}, time_jobs=True)
    line = str(e.value)
    assert "\n" not in line and "cannot be run or grown here" in line and "NEW_DIR" in line
    assert _digest(analysed) == before and (analysed / "study.toml").read_text() == toml
    assert not (analysed / "raw").exists() and not (analysed / "bin").exists()


def test_analyze_keeps_results_when_raw_holds_none_of_their_files(analysed):
    """The state a grown copy reaches: raw/ holds a job of this machine's, none of the analysed ones."""
    from pqsimd.analyze import analyze_study

    raw = StudyDir(analysed).raw_files()
    local = raw[0].read_bytes()
    shutil.rmtree(analysed / "raw")
    (analysed / "raw").mkdir()
    (analysed / "raw" / "this-machine.parquet").write_bytes(local)
    before = _digest(analysed)
    with pytest.raises(PqsimdError) as e:
        analyze_study(analysed)
    assert "cannot be analysed again here" in str(e.value) and "\n" not in str(e.value)
    assert _digest(analysed) == before


def test_explain_suggests_no_run_on_the_study_and_names_an_unknown_scheme(analysed):
    from pqsimd.report.explain import explain_op

    with pytest.raises(PqsimdError) as e:  # a typo is named as such, before what the results lack
        explain_op(analysed, "ml-kem-521", "ntt")
    assert "did you mean 'ml-kem-512'" in str(e.value) and "instruction mix" not in str(e.value)
    shutil.rmtree(analysed / "raw")
    with pytest.raises(PqsimdError) as e:
        explain_op(analysed, "ml-kem-512", "ntt")
    line = str(e.value)
    assert f"pqsimd run {analysed}" not in line and "NEW_DIR" in line and "\n" not in line


def test_a_run_stopped_after_its_raw_files_were_superseded_is_still_this_machines(analysed):
    """A job that runs again moves its raw file to superseded/ first; a run stopped right then leaves
    raw/ without the analysed files, and the study must still continue here."""
    sd = StudyDir(analysed)
    for p in sd.raw_files():
        sd.supersede(p.stem)
    assert not sd.raw_files() and not sd.analysed_elsewhere()


def test_cliffs_neither_retimes_such_a_study_nor_suggests_analysing_it(analysed, monkeypatch):
    from click.testing import CliRunner

    import pqsimd.run.retime as retime
    from pqsimd.cli import cli
    from pqsimd.studydir import why_no_cliffs

    shutil.rmtree(analysed / "raw")
    timed = []
    monkeypatch.setattr(retime, "retime", lambda *a, **k: timed.append(a))
    r = CliRunner().invoke(cli, ["cliffs", str(analysed), "--retime"])
    assert r.exit_code != 0 and not timed and "cannot be re-timed here" in str(r.exception), r.output
    assert "pqsimd analyze" not in why_no_cliffs(analysed)


def test_show_does_not_advise_analysing_a_study_analysed_elsewhere(analysed):
    from pqsimd.results import load_study

    raw = StudyDir(analysed).raw_files()
    local = raw[0].read_bytes()
    shutil.rmtree(analysed / "raw")
    (analysed / "raw").mkdir()
    (analysed / "raw" / "this-machine.parquet").write_bytes(local)  # left by a grown copy of an older pqsimd
    warnings = load_study(analysed).summary["warnings"]
    assert "not part of these results" in warnings[0] and "pqsimd analyze" not in " ".join(map(str, warnings))
