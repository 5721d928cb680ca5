"""Phase 2 report parts: instruction decomposition, cycles per instruction saved, honest empty sections."""

import json
import math

import pandas as pd
import pytest

from pqsimd.report import phase2

INS = {"refo0": 83396, "refnv": 20674, "ref": 20674, "avx2": 589}
TICKS = {"refo0": 25000.0, "refnv": 6300.0, "ref": 6100.0, "avx2": 160.0}


def groups(metrics=("ticks", "instructions")):
    rows = []
    for m in metrics:
        src = TICKS if m == "ticks" else INS
        for v, med in src.items():
            rows.append({"metric": m, "scheme": "ml-kem-512", "op": "ntt", "variant": v, "median": float(med)})
            rows.append({"metric": m, "scheme": "ml-kem-512", "op": "empty", "variant": v, "median": 0.0})
    return pd.DataFrame(rows)


def test_instruction_table_decomposes_exactly():
    t = phase2.instruction_table(groups())
    assert list(t.op) == ["ntt"]  # the overhead probe is not an op
    r = t.iloc[0]
    assert r.autovec == 1.0 and r.hand_simd == pytest.approx(20674 / 589)
    assert r.compiler * r.autovec * r.hand_simd == pytest.approx(r.total)
    assert r.share_compiler + r.share_autovec + r.share_hand_simd == pytest.approx(1.0)


def test_ilp_table_reads_the_gain_beyond_instruction_count():
    t = phase2.ilp_table(groups(), core_per_tsc=1.39).set_index("stage")
    h = t.loc["hand_simd"]
    assert h.time_speedup == pytest.approx(6100 / 160) and h.instruction_ratio == pytest.approx(20674 / 589)
    assert h.throughput_gain == pytest.approx(h.time_speedup / h.instruction_ratio)
    assert h.throughput_gain == pytest.approx(h.ipc_var / h.ipc_base)
    assert h.reading == "fewer instructions"  # 38.1 vs 35.1: within the 10% band
    assert h.cycles_per_instruction_saved == pytest.approx((6100 - 160) / (20674 - 589) * 1.39)
    assert t.loc["autovec"].reading == "fewer instructions" or t.loc["autovec"].throughput_gain > 1
    assert phase2.ilp_table(groups(("instructions",))).empty  # needs both metrics


def test_sections_say_why_there_is_no_data(tmp_path):
    manifest = {"machine": {"hostname": "vm1", "virtualization": "kvm"},
                "jobs": {"ref.ml-kem-512.0": {"calibration": {"core_per_tsc": 1.4, "counters": {
                    "requested": ["cycles"], "available": False, "errno": 2, "error": "ENOENT", "failed_event": "cycles"}}}},
                "energy": {"available": False, "reason": "/sys/class/powercap does not exist"}}
    c = phase2.counters_section(groups(), manifest)
    assert not c.available and "ENOENT" in c.text and "virtual PMU" in c.text and "TSC ticks" in c.text
    e = phase2.energy_section(manifest)
    assert not e.available and "powercap does not exist" in e.text
    assert "not request" in phase2.counters_section(groups(), {}).text
    assert phase2.core_per_tsc(manifest) == 1.4

    d = tmp_path / "study"
    (d / "results").mkdir(parents=True)
    groups().to_csv(d / "results" / "groups.csv", index=False)
    (d / "manifest.json").write_text(json.dumps(manifest))
    out = phase2.write_phase2(d)
    names = {p.name for p in out["files"].values()}
    assert {"instructions.csv", "cycles_per_instruction_saved.csv", "fig_instructions_vs_time.png", "phase2.md"} <= names
    md = (d / "report" / "phase2" / "phase2.md").read_text()
    assert "## Hardware counters" in md and "## Energy (RAPL)" in md and "1.40 core cycles" in md


def test_counter_data_gives_ratios():
    g = pd.DataFrame([
        {"metric": "cycles", "scheme": "ml-kem-512", "op": "ntt", "variant": "ref", "median": 8000.0},
        {"metric": "retired_instructions", "scheme": "ml-kem-512", "op": "ntt", "variant": "ref", "median": 20000.0},
    ])
    s = phase2.counters_section(g, {})
    assert s.available and s.table.iloc[0].ipc == 2.5
    assert math.isnan(phase2.core_per_tsc({}) or math.nan)
