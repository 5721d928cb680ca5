"""One timing job per CPU at a time (a machine-wide claim), and a job whose CPU was shared anyway is
discarded and run again, never kept (issue 29: "a job whose timing overlapped another pqsimd job on
its CPU is discarded and re-run"). The sharing is real: a busy process pinned to the job's CPU."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import PQSIMD, drivers_of
from pqsimd import store
from pqsimd.run import cpuclaim
from pqsimd.studydir import StudyDir

FIXTURES = Path(__file__).parent / "fixtures" / "families"
CPU = min(os.sched_getaffinity(0))
# about a second of driver per job: long enough for a shared CPU to show, short enough for the suite
STUDY = ["--schemes", "shake-256", "--variants", "ref", "--preset", "quick", "--jobs", "1", "--spins", "2000",
         "--reps", "20", "--budget", "0", "--cpu", str(CPU), "--layout", "fixed"]


@pytest.fixture
def env(tmp_path):
    return {**os.environ, "PQSIMD_FAMILY_PATH": str(FIXTURES), "PQSIMD_CACHE": str(tmp_path / "cache")}


def _hog(cpu: int) -> subprocess.Popen:
    """A busy process on `cpu` alone: what another study's driver is to ours."""
    return subprocess.Popen([sys.executable, "-c", f"import os\nos.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass"])


def _records(d: Path) -> list[dict]:
    return [store.read_job_record(p) for p in StudyDir(d).raw_files()]


def test_a_job_waits_for_its_cpu_and_names_who_holds_it(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom pqsimd.run import cpuclaim\n"
         f"with cpuclaim.claim({CPU}, 'study /x, job j0'):\n    print('held', flush=True)\n    time.sleep(1.5)"],
        stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    said: list[str] = []
    t0 = time.monotonic()
    with cpuclaim.claim(CPU, "study /y, job j1", said.append) as held:
        waited = time.monotonic() - t0  # granted only once the holder let go, 1.5 s after it took it
    holder.wait()
    assert waited > 1.0 and held.waited_seconds == pytest.approx(waited, abs=0.05)
    assert held.holder == f"pid {holder.pid}, study /x, job j0"
    assert len(said) == 1 and f"waiting for CPU {CPU}" in said[0]
    assert f"pid {holder.pid}, study /x, job j0" in said[0]


def test_the_claim_does_not_depend_on_tmpdir(tmp_path, monkeypatch):
    a = cpuclaim.lock_path(CPU)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    assert cpuclaim.lock_path(CPU) == a


def test_a_job_that_shared_its_cpu_is_discarded_and_run_again(tmp_path, env):
    d = tmp_path / "s"
    hog = _hog(CPU)
    stop = threading.Event()

    def free_the_cpu_after_the_first_driver() -> None:
        first = None
        while not stop.is_set() and first is None:
            first = (drivers_of(d) or [None])[0]
            time.sleep(0.01)
        while not stop.is_set() and first in drivers_of(d):
            time.sleep(0.005)
        hog.kill()

    watcher = threading.Thread(target=free_the_cpu_after_the_first_driver, daemon=True)
    watcher.start()
    try:
        r = subprocess.run([str(PQSIMD), "run", d, *STUDY], capture_output=True, text=True, timeout=600, env=env)
    finally:
        stop.set()
        hog.kill()
        watcher.join()
    assert r.returncode == 0, r.stderr
    said = " ".join(r.stderr.split())
    assert "discarded and run again: CPU" in said and "shared with another program" in said, r.stderr
    (rec,) = _records(d)
    assert rec["cpu_share"]["discarded_before"] == 1
    assert rec["cpu_claim"]["holder"] is None and rec["cpu_claim"]["waited_seconds"] < 1  # nobody held the CPU
    assert rec["cpu_share"]["waited_fraction"] <= cpuclaim.SHARED_FRACTION


def test_a_job_whose_cpu_stays_shared_is_not_kept(tmp_path, env):
    d = tmp_path / "s"
    hog = _hog(CPU)
    try:
        r = subprocess.run([str(PQSIMD), "run", d, *STUDY], capture_output=True, text=True, timeout=600, env=env)
    finally:
        hog.kill()
    assert r.returncode != 0 and "Traceback" not in r.stderr
    said = " ".join(r.stderr.split())
    assert f"kept CPU {CPU} busy in each of {cpuclaim.ATTEMPTS} attempts" in said and "stays pending" in said
    assert not list(StudyDir(d).raw_files())
    # the CPU free again, the same command times the job
    r = subprocess.run([str(PQSIMD), "run", d, *STUDY], capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stderr
    (rec,) = _records(d)
    assert rec["cpu_share"]["discarded_before"] == 0 and not cpuclaim.Share(
        rec["cpu_share"]["cpu_seconds"], rec["cpu_share"]["waited_seconds"]).shared


def test_share_rule():
    assert not cpuclaim.Share(1.0, 0.01).shared  # 1% of a quiet machine's noise
    assert cpuclaim.Share(1.0, 1.0).shared  # half the time: a second busy process
    assert not cpuclaim.Share(0.01, 0.01).shared  # too short to tell
    assert cpuclaim.share_of(os.getpid()) is not None


def test_pqsimd_keeps_off_the_cpu_it_times():
    allowed = os.sched_getaffinity(0)
    cpu = max(allowed)
    with cpuclaim.away_from(cpu):
        inside = os.sched_getaffinity(0)
    assert os.sched_getaffinity(0) == allowed
    assert inside == (allowed - {cpu} or allowed)
