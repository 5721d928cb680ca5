"""One loader per on-disk format: the plan's (studydir.load_plan) upgrades older shapes and derives the
copies per job once (model.copies_per_job); nothing it derives is written back."""

import json
import shutil
from pathlib import Path

import pytest

from pqsimd.model import copies_per_job
from pqsimd.studydir import StudyDir, load_plan

SHARED = Path(__file__).resolve().parents[2] / "shared" / "studies"


@pytest.mark.parametrize("settings, n", [({}, 1), ({"layout": "fixed", "layouts": 4}, 1),
                                         ({"layout": "random", "layouts": 2}, 2), ({"layout": "random"}, 1)])
def test_the_plan_loader_derives_the_copies_per_job(settings, n):
    assert load_plan({"jobs": [], "settings": settings})["copies_per_job"] == n == copies_per_job(
        settings.get("layout"), settings.get("layouts"))
    assert load_plan({"jobs": []})["copies_per_job"] == 1  # a version-1 plan: no settings, fixed layout


def test_what_the_loader_derives_is_never_written(tmp_path):
    sd = StudyDir(tmp_path)
    sd.write_plan({"version": 2, "jobs": [], "settings": {"layout": "random", "layouts": 3}})
    plan = sd.read_plan()
    assert plan["copies_per_job"] == 3
    sd.write_plan(plan)
    assert "copies_per_job" not in json.loads(sd.plan_json.read_text())


@pytest.mark.skipif(not SHARED.is_dir(), reason="no ../shared/studies beside the checkout")
def test_real_old_studies_load_and_agree_with_their_results(tmp_path):
    for study in sorted(p for p in SHARED.iterdir() if (p / "plan.json").is_file()):
        copy = tmp_path / study.name
        shutil.copytree(study, copy)  # read-only inputs: read a copy
        plan = StudyDir(copy).read_plan()
        summary = json.loads((copy / "results" / "summary.json").read_text())
        recorded = (summary.get("layout") or {}).get("copies_per_job")
        if recorded is not None:
            assert plan["copies_per_job"] == recorded, study.name
