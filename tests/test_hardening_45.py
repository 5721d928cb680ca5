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
