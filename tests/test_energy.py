"""RAPL reader on a fake powercap tree: domains, wraparound, a missing DRAM domain, no powercap."""

from pathlib import Path

import pytest

from pqsimd import energy

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
    (root / zone_name / "energy_uj").write_text(f"{uj}\n")


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
