"""Each metric owns its unit (pqsimd/metrics.py), times in the study's ISA's tick unit (data/isas.toml):
analyze writes it into summary.json `units` and show and the report print it, so a study taken on an
aarch64 host does not call its times TSC ticks (issue 35)."""

from __future__ import annotations

import json
import subprocess
import tomllib

import tomli_w

from pqsimd import isa, metrics
from pqsimd.analyze import analyze_study

from conftest import PQSIMD
from synthetic import make_synthetic_study


def _study_on(tmp_path, isa_name: str):
    d = make_synthetic_study(tmp_path / isa_name, variants=("ref", "avx2" if isa_name == "x86_64" else "neon"),
                             ops=("ntt",), jobs=3, spins=20, reps=3, design="paired")
    doc = tomllib.loads((d / "study.toml").read_text())
    doc["study"]["isa"] = isa_name
    (d / "study.toml").write_text(tomli_w.dumps(doc))
    analyze_study(d)
    return d


def test_the_registry_gives_times_the_isa_s_unit():
    assert metrics.unit_of("ticks", "x86_64") == isa.get("x86_64").tick_unit == "TSC ticks"
    assert metrics.unit_of("ticks", "aarch64") == isa.get("aarch64").tick_unit != "TSC ticks"
    assert metrics.unit_of("instructions", "aarch64") == "instructions"
    assert metrics.unit_of("energy_package", "x86_64") == "energy_package"  # a raw metric of its own


def test_an_aarch64_study_says_its_own_tick_unit_everywhere(tmp_path):
    d = _study_on(tmp_path, "aarch64")
    unit = isa.get("aarch64").tick_unit
    summary = json.loads((d / "results" / "summary.json").read_text())
    assert summary["units"] == {"ticks": unit}
    assert any(w.startswith("times are ") and "TSC" not in w for w in summary["warnings"])
    show = subprocess.run([str(PQSIMD), "show", d], capture_output=True, text=True, timeout=300)
    assert show.returncode == 0, show.stderr
    assert "TSC" not in show.stdout
    rep = subprocess.run([str(PQSIMD), "report", d], capture_output=True, text=True, timeout=600)
    assert rep.returncode == 0, rep.stderr
    html = (d / "report" / "index.html").read_text()
    assert unit in html and "TSC ticks" not in html


def test_an_x86_study_still_says_tsc_ticks(tmp_path):
    d = _study_on(tmp_path, "x86_64")
    assert json.loads((d / "results" / "summary.json").read_text())["units"] == {"ticks": "TSC ticks"}
    rep = subprocess.run([str(PQSIMD), "report", d], capture_output=True, text=True, timeout=600)
    assert rep.returncode == 0, rep.stderr
    assert "TSC ticks" in (d / "report" / "index.html").read_text()
