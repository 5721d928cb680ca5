"""RAPL reader on a fake powercap tree: domains, wraparound, a missing DRAM domain, no powercap."""

from pathlib import Path

import pytest

from pqsimd import energy
from pqsimd.run import energy as energy_run

MAX = 262143328850


def zone(root: Path, name: str, label: str, uj: int, max_uj: int = MAX) -> Path:
    d = root / name
    d.mkdir(parents=True)
    (d / "name").write_text(label + "\n")
    (d / "energy_uj").write_text(f"{uj}\n")
    (d / "max_energy_range_uj").write_text(f"{max_uj}\n")
    return d


@pytest.fixture
def intel(tmp_path):
    root = tmp_path / "powercap"
    (root / "intel-rapl").mkdir(parents=True)  # the control type: not a zone
    (root / "intel-rapl" / "enabled").write_text("1\n")
    zone(root, "intel-rapl:0", "package-0", 1_000_000)
    zone(root, "intel-rapl:0:0", "core", 400_000)
    zone(root, "intel-rapl:0:1", "dram", 50_000, max_uj=65532610987)
    zone(root, "intel-rapl-mmio:0", "package-0", 999_999)  # mirror of the package: dropped
    return root


def set_uj(root: Path, zone_name: str, uj: int) -> None:
    # atomic, like sysfs: a reader never sees a half-written value
    tmp = root / zone_name / ".energy_uj.tmp"
    tmp.write_text(f"{uj}\n")
    tmp.replace(root / zone_name / "energy_uj")


def test_discovers_package_and_dram(intel):
    r = energy.Reader(intel)
    assert [(d.key, d.kind) for d in r.domains] == [("package-0", "package"), ("core-0", "core"), ("dram-0", "dram")]
    assert r.has_dram
    assert r.snapshot() == {"package-0": 1_000_000, "core-0": 400_000, "dram-0": 50_000}


def test_joules_between_snapshots_and_wraparound(intel):
    r = energy.Reader(intel)
    before = r.snapshot()
    set_uj(intel, "intel-rapl:0", 3_500_000)  # +2.5 J
    set_uj(intel, "intel-rapl:0:0", 400_000)  # idle
    set_uj(intel, "intel-rapl:0:1", 50_000 + 125_000)
    j = r.joules(before, r.snapshot())
    assert j == {"package-0": pytest.approx(2.5), "core-0": 0.0, "dram-0": pytest.approx(0.125)}

    set_uj(intel, "intel-rapl:0", MAX - 700_000)
    before = r.snapshot()
    set_uj(intel, "intel-rapl:0", 300_000)  # wrapped past max_energy_range_uj
    assert r.joules(before, r.snapshot())["package-0"] == pytest.approx(1.0)
    with pytest.raises(energy.EnergyUnavailable):
        energy.delta_uj(10, 5, 0)  # backwards with no known range: refuse to guess


def test_missing_dram_domain_amd_style(tmp_path):
    root = tmp_path / "powercap"
    zone(root, "intel-rapl:0", "package-0", 5)
    r = energy.Reader(root)
    assert [d.key for d in r.domains] == ["package-0"] and not r.has_dram
    s = energy.status(root)
    assert s["available"] and s["missing"] and "dram" in s["missing"][0]
    name, ok, detail, _ = energy.doctor_check(root)
    assert ok is True and "missing dram" in detail


def test_unavailable_is_reported_with_reason(tmp_path):
    s = energy.status(tmp_path / "nope")
    assert not s["available"] and "does not exist" in s["reason"]
    (tmp_path / "empty").mkdir()
    s = energy.status(tmp_path / "empty")
    assert not s["available"] and "no intel-rapl zones" in s["reason"]
    name, ok, detail, remedy = energy.doctor_check(tmp_path / "nope")
    assert ok is None and detail == "unavailable" and "does not exist" in remedy
    # this machine, for real: either readable or an explicit reason
    real = energy.status()
    assert real["available"] or real["reason"]


def test_measure_and_helpers(intel):
    r = energy.Reader(intel)

    def run():  # stands in for a timed batch: 1000 calls in 0.5 s that cost 2 J of package energy
        set_uj(intel, "intel-rapl:0", 3_000_000)
        return 1000, 0.5

    s = energy.measure(r, run)
    assert s.per_call("package-0") == pytest.approx(2e-3)
    assert s.power("package-0") == pytest.approx(4.0)
    assert energy.joules_per_call(2.0, 1000) == pytest.approx(2e-3)
    assert energy.average_power(2.0, 0.5) == pytest.approx(4.0)
    assert energy.edp(2e-3, 5e-4) == pytest.approx(1e-6)
    with pytest.raises(ValueError):
        energy.average_power(1.0, 0)


class Meter:
    """Drives a fake package counter at a constant power while a harness runs."""

    def __init__(self, root: Path, zone_name: str, watts: float, start: int = 0, max_uj: int = MAX):
        import threading
        import time

        self.root, self.zone, self.watts, self.max = root, zone_name, watts, max_uj
        self.t0, self.start, self._time = time.monotonic(), start, time
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            uj = int(self.start + self.watts * 1e6 * (self._time.monotonic() - self.t0)) % (self.max + 1)
            set_uj(self.root, self.zone, uj)
            self._stop.wait(0.001)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def test_energy_of_a_real_op_on_a_fake_meter(builds, driver, intel):
    """The difference method around real harness runs: a 20 W fake package reads ~20 W; the idle
    DRAM domain reads 0 J; the counter wraps during the runs."""
    r = energy.Reader(intel)
    with Meter(intel, "intel-rapl:0", watts=20.0, start=MAX - 500_000):
        m = energy.measure_op(driver.path, builds["ref"].library, "ml-kem-512", "ntt", r, min_seconds=0.5)
    assert m["calls"] == 2 * m["k"] and m["k"] > 10
    # the fake meter runs on the wall clock: positive power through the wrap, no timing bound asserted
    assert m["watts"]["package-0"] > 0 and m["joules"]["package-0"] > 0
    assert m["joules"]["dram-0"] == 0.0
    assert m["edp"]["package-0"] == pytest.approx(m["joules_per_call"]["package-0"] * m["seconds_per_call"])


def test_energy_study_step_records_unavailable_and_goes_on(builds, driver, tmp_path, intel):
    import json
    import shutil
    from types import SimpleNamespace

    import pyarrow.parquet as pq

    from pqsimd.run.metrics import Job
    from pqsimd.studydir import StudyDir

    sd = StudyDir(tmp_path / "s")
    b = builds["ref"]
    sd.bin_dir.mkdir(parents=True)
    shutil.copy2(b.library, sd.variant_path(b.id))
    shutil.copy2(driver.path, sd.driver_path)
    sd.manifest_json.write_text("{}")
    study = SimpleNamespace(schemes=["ml-kem-512"], cpu=None, ops_for=lambda s: ["ntt"])
    jobs = [Job("ref.gcc.ml-kem-512.energy", {b.id: None}, {"build": b, "scheme": "ml-kem-512"})]
    msgs = []
    console = SimpleNamespace(print=msgs.append)
    # asked for and not measurable: the rest goes on, and the run says so in its exit code (as mix does)
    assert not energy_run.execute(sd, study, jobs, jobs, console=console, root=tmp_path / "no-powercap")
    info = json.loads(sd.manifest_json.read_text())["metrics"]["energy"]
    assert info["status"] == "unavailable" and "does not exist" in info["reason"]
    assert "unavailable" in msgs[0] and not sd.raw_dir.exists()

    with Meter(intel, "intel-rapl:0", watts=15.0):
        assert energy_run.execute(sd, study, jobs, jobs, console=console, root=intel, min_seconds=0.05, repeats=1)
    df = pq.read_table(sd.raw_path("ref.gcc.ml-kem-512.energy")).to_pandas()
    assert set(df.metric) == {"energy_package", "energy_core", "energy_dram"}
    pkg = df[df.metric == "energy_package"].iloc[0]
    assert pkg.per_call == pytest.approx(pkg.raw / pkg.batch) and pkg.raw > 0


def test_energy_alone_without_rapl_exits_non_zero_as_mix_does(tmp_path):
    """Asked for and not measurable here: the run says so in one line and in its exit code."""
    import os
    from pathlib import Path

    from conftest import run_cli

    if energy.status()["available"]:
        pytest.skip("this host has RAPL: energy is measurable here")
    env = {**os.environ, "PQSIMD_FAMILY_PATH": str(Path(__file__).parent / "fixtures" / "families")}
    r = run_cli("run", tmp_path / "s", "--schemes", "shake-256", "--variants", "ref", "--metric", "energy",
                "--preset", "quick", "--jobs", "1", env=env)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert "energy: unavailable" in r.stderr
