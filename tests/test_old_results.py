"""Results written by an older pqsimd still load, show and report (issue 35): read as they were
analysed, with one line saying what later schemas added that they lack; a study mailed in without
raw/ is not sent round in circles (analyze says it cannot be analysed again and what can be done).

The real studies of ../shared/studies (other machines, older pqsimd versions) are the inputs when
present; a synthetic study taken back to schema 4 covers the same paths everywhere."""

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from conftest import run_cli
from pqsimd.errors import PqsimdError
from pqsimd.model import OLDEST_READABLE_RESULTS, RESULTS_SCHEMA_VERSION
from pqsimd.results import load_study

SHARED = Path(__file__).resolve().parents[2] / "shared" / "studies"
REAL = sorted(p for p in SHARED.glob("*") if (p / "results" / "summary.json").is_file()) if SHARED.is_dir() else []


def _as_schema(d: Path, version: int) -> None:
    """The study's results as an older pqsimd wrote them: its version, without what came later."""
    res = d / "results"
    summary = json.loads((res / "summary.json").read_text())
    summary["schema_version"] = version
    for key in ("estimand", "shared_cpu", "units"):
        summary.pop(key, None)
    (res / "summary.json").write_text(json.dumps(summary))
    later = ("regime_", "without_minority", "without_shared", "shared_cpu", "identical_code_how", "cliff_finding")
    for name in ("comparisons", "groups", "jobs"):
        pq = res / f"{name}.parquet"
        if pq.exists():
            t = pd.read_parquet(pq)
            t = t[[c for c in t.columns if not c.startswith(later) and not c.endswith("_ci_level")]]
            t.to_parquet(pq)
            t.to_csv(res / f"{name}.csv", index=False)


@pytest.fixture()
def old_synthetic(tmp_path):
    from pqsimd.analyze import analyze_study
    from synthetic import make_synthetic_study

    d = make_synthetic_study(tmp_path / "s", schemes=("ml-kem-512",), variants=("ref", "avx2"), ops=("ntt", "invntt"),
                             jobs=4, spins=20, reps=3, medians={"ref": 1000, "avx2": 40}, seed=3)
    analyze_study(d)
    _as_schema(d, OLDEST_READABLE_RESULTS)
    return d


def test_older_results_load_with_a_line_saying_what_they_lack(old_synthetic):
    r = load_study(old_synthetic)
    note = r.summary["warnings"][0]
    assert f"results schema {OLDEST_READABLE_RESULTS}" in note and "typical layout" in note and "\n" not in note
    assert len(r.comparisons) and "ntt" in set(r.comparisons["op"])


def test_current_results_carry_no_such_line(tmp_path):
    from pqsimd.analyze import analyze_study
    from synthetic import make_synthetic_study

    d = make_synthetic_study(tmp_path / "s", schemes=("ml-kem-512",), variants=("ref", "avx2"), ops=("ntt",),
                             jobs=3, spins=10, reps=3, medians={"ref": 1000, "avx2": 40}, seed=4)
    analyze_study(d)
    assert not any("older pqsimd" in w for w in load_study(d).summary.get("warnings") or [])
    assert json.loads((d / "results" / "summary.json").read_text())["schema_version"] == RESULTS_SCHEMA_VERSION


def test_too_old_a_schema_is_one_line(old_synthetic):
    _as_schema(old_synthetic, OLDEST_READABLE_RESULTS - 1)
    with pytest.raises(PqsimdError) as e:
        load_study(old_synthetic)
    assert "older pqsimd" in str(e.value) and "\n" not in str(e.value)


def test_older_results_without_raw_show_and_report_and_analyze_says_why_not(old_synthetic):
    shutil.rmtree(old_synthetic / "raw")
    shown = run_cli("show", old_synthetic)
    assert shown.returncode == 0, shown.stderr
    assert "older pqsimd" in shown.stdout and "ntt" in shown.stdout.lower()
    rep = run_cli("report", old_synthetic)
    assert rep.returncode == 0, rep.stderr
    assert (old_synthetic / "report" / "index.html").is_file()
    again = run_cli("analyze", old_synthetic)
    assert again.returncode != 0
    line = again.stderr.strip()
    assert "\n" not in line and "cannot be analysed again" in line and "pqsimd show" in line
    assert "Traceback" not in again.stderr


@pytest.mark.skipif(not REAL, reason=f"no real studies in {SHARED} (studies from other machines)")
@pytest.mark.parametrize("study", REAL, ids=[p.name for p in REAL])
def test_real_studies_of_other_machines_show_and_report(study, tmp_path):
    d = tmp_path / study.name
    shutil.copytree(study, d)
    version = json.loads((d / "results" / "summary.json").read_text())["schema_version"]
    shown = run_cli("show", d)
    assert shown.returncode == 0, shown.stderr
    if version < RESULTS_SCHEMA_VERSION:
        assert f"results schema {version}" in shown.stdout
    rep = run_cli("report", d)
    assert rep.returncode == 0, rep.stderr
    html = (d / "report" / "index.html").read_text()
    assert "older pqsimd" in html or version == RESULTS_SCHEMA_VERSION
    if not (d / "raw").is_dir():
        again = run_cli("analyze", d)
        assert again.returncode != 0 and "cannot be analysed again" in again.stderr and "Traceback" not in again.stderr
