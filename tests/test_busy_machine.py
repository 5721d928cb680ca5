"""A busy machine (issue 47): the `adapt` policy keeps the jobs that share their CPU once the sizing
probe and a job's attempt (or two attempts of one job) show the CPUs busy, and says so once; doctor
and the run say the load; the analysis says how far the estimates move without the shared jobs."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from pqsimd.model import DEFAULT_SHARED_CPU, SharedCpu
from pqsimd.run import cpuclaim, job
from pqsimd.studydir import StudyDir

SHARE = cpuclaim.Share(cpu_seconds=1.0, waited_seconds=0.5)  # waited a third of its time: shared


def _study(tmp_path, name: str, probe_waited: float | None) -> StudyDir:
    d = tmp_path / name
    d.mkdir()
    share = {"shared": probe_waited is not None, "waited_fraction": probe_waited or 0.02}
    (d / "sizing.json").write_text(json.dumps({"schemes": {"s": {"probe_cpu_share": share}}}))
    return StudyDir(d)


@pytest.fixture(autouse=True)
def _fresh_run(monkeypatch):
    monkeypatch.setattr(job, "_ADAPTED", {})


def test_adapt_is_the_default_and_keeps_once_the_probe_and_an_attempt_were_shared(tmp_path):
    assert DEFAULT_SHARED_CPU == SharedCpu.ADAPT
    sd, study, said = _study(tmp_path, "busy", 0.56), SimpleNamespace(shared_cpu=SharedCpu.ADAPT), []
    assert not job.keeps_shared(sd, study)  # a quiet start: jobs wait for an idle CPU, as under discard
    assert job.adapt_to_busy(sd, study, "paired.x.0", SHARE, 0, said.append)
    assert job.keeps_shared(sd, study)  # for the rest of the run: no more waiting, no more discarding
    assert job.adapt_to_busy(sd, study, "paired.x.1", SHARE, 0, said.append)
    assert len(said) == 1 and "\n" not in said[0]
    assert "the sizing probe waited 56% of its time" in said[0] and "job paired.x.0 33%" in said[0]
    assert f"run {sd.path.parent / 'busy-quiet'} --shared-cpu discard`" in said[0]


def test_without_a_shared_probe_it_takes_two_attempts_and_discard_never_keeps(tmp_path):
    sd, said = _study(tmp_path, "quiet", None), []
    adapt, discard = SimpleNamespace(shared_cpu=SharedCpu.ADAPT), SimpleNamespace(shared_cpu=SharedCpu.DISCARD)
    assert job.probe_share(sd) is None
    assert not job.adapt_to_busy(sd, adapt, "j", SHARE, 0, said.append) and not said  # one blip: run again
    assert not job.adapt_to_busy(sd, discard, "j", SHARE, 1, said.append)
    assert not job.keeps_shared(sd, discard)
    assert job.adapt_to_busy(sd, adapt, "j", SHARE, 1, said.append)
    assert "an earlier attempt of job j shared its CPU" in said[0]
    other = _study(tmp_path, "other", None)  # another study in the same process decides for itself
    assert not job.keeps_shared(other, adapt)
