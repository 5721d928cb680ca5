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


def _raw_file(path, drop=(), record=None):
    """A raw file written by today's store, then cut back to an older shape: `drop` columns removed and
    the job record replaced by `record` (as schema 1 wrote it: no design, no metric, no version)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pqsimd import store

    n = 6
    t = store.raw_table({"job_index": [0] * n, "spin": [0, 0, 0, 1, 1, 1], "rep": [0, 1, 2] * 2, "pos": [1] * n,
                         "layout": [0] * n, "batch": [2] * n, "raw": [100] * n, "ticks": [100] * n,
                         "per_call": [50.0, 51.0, 52.0, 60.0, 61.0, 62.0], "warmup": [False] * n},
                        {"scheme": "ml-kem-512", "variant": "ref", "compiler": "gcc", "op": "ntt", "metric": "ticks",
                         "job": "j0"})
    t = t.drop_columns(list(drop))
    meta = {} if record is None else {store.JOB_METADATA_KEY: json.dumps(record).encode()}
    pq.write_table(t.replace_schema_metadata(meta), path)
    return pa


def test_the_raw_loader_upgrades_a_first_schema_file_at_the_edge(tmp_path):
    from pqsimd import store
    from pqsimd.model import RECORDED_DESIGN

    p = tmp_path / "old.parquet"
    _raw_file(p, drop=("compiler", "pos", "layout", "batch", "raw"), record={"settings": {"cc": "gcc-12"}})
    table, rec = store.read_raw(p, ["compiler", "pos", "layout", "batch", "raw", "per_call"], dictionary=("compiler",))
    assert set(table.column("compiler").to_pylist()) == {"gcc-12"}  # the study's one compiler, from the record
    assert set(table.column("pos").to_pylist()) == {0} and set(table.column("layout").to_pylist()) == {-1}
    assert set(table.column("batch").to_pylist()) == {1} and table.column("raw").null_count == table.num_rows
    assert rec["design"] == str(RECORDED_DESIGN) and rec["raw_schema_version"] == 1
    with pytest.raises(KeyError, match="per_call"):  # a column no upgrade supplies is named
        _raw_file(p, drop=("per_call",))
        store.read_raw(p, ["per_call"])


def test_a_current_raw_file_loads_unchanged_and_the_old_one_analyses_alike(tmp_path):
    """The same samples in today's shape and in the first one give the same spin medians: the upgrade
    happens in the loader, not in analysis."""
    from pqsimd import store
    from pqsimd.analyze.load import _read_one

    new, old = tmp_path / "new.parquet", tmp_path / "old.parquet"
    _raw_file(new, record={"metric": "ticks", "design": "paired", "settings": {"cc": "gcc"}})
    table, rec = store.read_raw(new, ["pos", "layout", "batch"])
    assert table.column("pos").to_pylist()[0] == 1 and table.column("batch").to_pylist()[0] == 2
    assert rec["design"] == "paired"
    _raw_file(old, drop=("compiler", "pos", "layout"), record={"settings": {"cc": "gcc"}})
    a, _ = _read_one(new, tmp_path)
    b, _ = _read_one(old, tmp_path)
    assert list(a["value"]) == list(b["value"]) == [51.0, 61.0]
    assert list(b["layout"]) == [-1, -1] and list(a["layout"]) == [0, 0]


def test_a_manifest_of_a_newer_pqsimd_is_refused_in_one_line(tmp_path):
    from pqsimd import store
    from pqsimd.errors import PqsimdError

    sd = StudyDir(tmp_path)
    (tmp_path / "manifest.json").write_text(json.dumps({"builds": {}}))  # version 1: read as written
    assert sd.read_manifest() == {"builds": {}}
    (tmp_path / "manifest.json").write_text(json.dumps({"schema_version": store.MANIFEST_SCHEMA_VERSION + 1}))
    with pytest.raises(PqsimdError, match="newer pqsimd .*update pqsimd"):
        sd.read_manifest()
