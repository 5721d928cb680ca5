"""A busy machine (issue 47): the `adapt` policy keeps the jobs that share their CPU once the sizing
probe and a job's attempt (or two attempts of one job) show the CPUs busy, and says so once; doctor
and the run say the load; the analysis says how far the estimates move without the shared jobs."""

from __future__ import annotations

import json
from pathlib import Path
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
    assert f"run {sd.path.parent / 'busy-quiet'} --like {sd.path} --shared-cpu discard`" in said[0]


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


def test_the_load_names_the_program_running_on_each_cpu(tmp_path):
    """A program spinning on one CPU is seen there (/proc/PID/stat: running, last on that CPU) and makes
    that CPU busy; doctor's row says so and its verdict line too."""
    import os
    import subprocess
    import sys

    from pqsimd import doctor

    cpu = max(os.sched_getaffinity(0))
    spin = subprocess.Popen([sys.executable, "-c", f"import os\nos.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass"])
    try:
        name = (Path(f"/proc/{spin.pid}/comm")).read_text().strip()
        import time
        time.sleep(0.3)  # pinned and spinning
        load = cpuclaim.current_load()
        assert set(load.busy) == os.sched_getaffinity(0) and load.busy[cpu] > cpuclaim.BUSY_ABOVE
        assert any(p.split(" ×")[0] == name for p in load.programs.get(cpu, [])), load.programs
        avg = [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
        assert load.average is not None and all(abs(a - b) < 2.0 for a, b in zip(load.average, avg))
        assert f"CPU {cpu} " in load.describe() and name in load.describe() and not load.quiet
        row = doctor._load()[0]
        assert row.name == "machine load" and row.ok is None and row.detail.startswith("busy: load average")
        ok, line = doctor.verdict([row])
        assert "other programs keep the CPUs busy now" in line
    finally:
        spin.kill()
        spin.wait()


def test_the_run_estimates_its_time_from_the_probe_and_its_share_of_the_cpu():
    from pqsimd.run.timing import estimate_line

    quiet = {"schemes": {"a": {"probe_cpu_share": {"waited_fraction": 0.01}}}}
    assert estimate_line({"j1": 60.0, "j2": 60.0}, quiet).startswith("timing: 2 job(s), about 2 min of timed budgets")
    assert "while the machine stays this busy" not in estimate_line({"j1": 60.0}, quiet)
    busy = {"schemes": {"a": {"probe_cpu_share": {"waited_fraction": 0.2}}, "b": {"probe_cpu_share": {"waited_fraction": 0.5}}}}
    line = estimate_line({"j1": 60.0, "j2": 60.0}, busy)  # 120 s of budgets at half a CPU: 240 s
    assert "the probe waited 50% of its time for its CPU: about 4 min while the machine stays this busy" in line


def test_one_jobs_interval_is_not_labelled_zero_percent():
    """A quick study (J = 2) with one job that shared its CPU leaves one job without it: its [x, x] has
    confidence 0, printed '(0%)' before; now it says it has no confidence."""
    from pqsimd.results import Levels, level_text

    lv = Levels.of([0.0, 0.5, 0.95])
    assert lv.after(0.0) == " (no confidence: too few jobs)" and lv.after(0.5) == " (50%)"
    assert "0%" not in lv.text().replace("50%", "").replace("95%", "") and lv.text().startswith("50% to 95%")
    assert Levels.of([0.0]).text() == "no confidence (too few jobs)"
    assert level_text(0.5) == "50%"


def test_a_set_whose_run_measured_nothing_says_so_not_run_it_first(tmp_path):
    """Right after `pqsimd run rv --isa riscv64 --vlen ...` whose every counting job failed, the set was
    told to be run first; now the line says this run measured nothing and where the reasons are."""
    from pqsimd.errors import PqsimdError
    from pqsimd.studysets import _refuse_measured_nothing

    a, b = tmp_path / "rv" / "vlen" / "128", tmp_path / "rv" / "vlen" / "256"
    for d in (a, b):
        d.mkdir(parents=True)
    (StudyDir(a).raw_dir).mkdir()
    (StudyDir(a).raw_dir / "x.gcc.s.instructions.parquet").write_bytes(b"PAR1")
    with pytest.raises(PqsimdError) as e:
        _refuse_measured_nothing(tmp_path / "rv", [a, b])
    msg = str(e.value)
    assert f"this run measured nothing in {b}:" in msg and str(a) + "," not in msg and "\n" not in msg
    assert "doctor" in msg and f"run {tmp_path / 'rv'}`" in msg and "first" not in msg
    _refuse_measured_nothing(tmp_path / "rv", [a])  # measured: nothing to say


def test_doctor_says_an_emulated_isa_counts_only_when_its_plugin_builds(tmp_path, monkeypatch):
    """doctor said `--isa riscv64` ok while counting there could not work; it now builds the QEMU
    counting plugin (cached) and says so when it does not build: a header that is not QEMU's."""
    from pqsimd import doctor

    bogus = tmp_path / "qemu-plugin.h"
    bogus.write_text("#error this is not QEMU's plugin API header\n")
    monkeypatch.setenv("PQSIMD_QEMU_PLUGIN_HEADER", str(bogus))
    monkeypatch.setenv("PQSIMD_CACHE", str(tmp_path / "cache"))  # no plugin cached from a good header
    rows = [r for r in doctor._cross() if not r.detail.startswith("missing")]
    if not rows:
        pytest.skip("no emulated ISA's tools installed here (doctor names them as missing)")
    for r in rows:
        assert r.ok is None and "the QEMU counting plugin does not build" in r.detail, r
        assert "does not compile" in r.remedy and "\n" not in r.remedy


def test_a_job_stopped_at_its_limit_while_starved_is_run_again_not_excluded():
    """The limit is 60 s + 10 × the estimate; a driver that waited for its CPU (shared) and had it for
    less than 10 × the estimate was starved, not hung (refo0 of ML-KEM-512 was excluded from a study at
    load 5-9: indcpa_enc, estimate 8.21 s, stopped at 142 s); one that had its CPU longer is hung."""
    from pqsimd.run import limits

    lim = limits._limit(8.21)
    assert lim["seconds"] == 142.1 and lim["estimate"] == 8.21
    assert limits.starved(lim, cpu_seconds=55.0, shared=True)  # waited ~60% of 142 s
    assert not limits.starved(lim, cpu_seconds=55.0, shared=False)  # had its CPU: it was slow on its own
    assert not limits.starved(lim, cpu_seconds=90.0, shared=True)  # more than the work allowed: a loop
    assert not limits.starved(limits._limit(None), cpu_seconds=1.0, shared=True)  # no estimate: no judgement
    assert not limits.starved(limits._limit(0.2), cpu_seconds=30.0, shared=True)  # a small op spinning at 50%
