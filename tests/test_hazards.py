"""The hazards metric: our QEMU plugin's hazard model counts exactly what a program is built to do
(harness/calibrate/hazards_x86_64.c: each hazard's loop and its clean twin, events per iteration known
by construction); a build QEMU cannot run is skipped, said as such; the costs are this host's when it
measured them, the data's otherwise; explain names the hazard that accounts for a slowdown, or says none
does; and a study end to end."""

from __future__ import annotations

import json
import shutil
import subprocess

import pandas as pd
import pytest

from conftest import require_tool, run_cli

from pqsimd import isa
from pqsimd.analyze import hazards as analyze_hazards
from pqsimd.errors import CountError, PqsimdError
from pqsimd.isa import qemu
from pqsimd.run import hazards

X86 = isa.get("x86_64")
MODEL = {"entries": 64, "window": 64}
EVENTS_PER_ITERATION = {"SFfail": 1, "Alias4K": 2, "SplitLd": 4, "SplitSt": 4, "SSEdirty": 4, "Transitions": 1}

if isa.host().name != "x86_64":
    pytest.skip("the hazard calibration program is x86-64", allow_module_level=True)
if not shutil.which(X86.qemu):  # make test installs it: a failure there, not a skip
    require_tool(f"{X86.qemu} is not installed (make test installs it as root: tools/test-deps.sh)")
try:
    qemu.plugin_header()
except PqsimdError as e:
    require_tool(str(e))


@pytest.fixture(scope="module")
def program():
    return str(hazards.calibration_program())


@pytest.mark.parametrize("event", sorted(EVENTS_PER_ITERATION))
@pytest.mark.parametrize("k", [1, 777])
def test_the_model_counts_each_hazard_as_built(program, event, k):
    bad = qemu.count(X86, [program, "trace", event, str(k), "hazard"], hazards=MODEL).hazards
    clean = qemu.count(X86, [program, "trace", event, str(k), "clean"], hazards=MODEL).hazards
    assert bad[event] == EVENTS_PER_ITERATION[event] * k
    # The overlaps by definition: a transition's SSE instruction runs with dirty upper halves, and the first SSE
    # instruction after the loop's setup dirtied a ymm register is a transition. Beyond them only events that do
    # not grow with k: the call into the loop pushes its return address on a stack whose page offset is random
    # (ASLR), so the loads of the loop's first iterations may 4K-alias it by chance while that store is in flight,
    # at most once per load within the model's window (seen once in a few hundred runs under load).
    chance = MODEL["window"]
    expected = {"Transitions": {"SSEdirty": k}, "SSEdirty": {"Transitions": 1}}.get(event, {})
    for e in EVENTS_PER_ITERATION:
        if e != event:
            assert abs(bad[e] - expected.get(e, 0)) <= (chance if e == "Alias4K" else 0), (event, e, bad)
        assert clean[e] <= (chance if e == "Alias4K" else 0), (event, e, clean)  # the clean twin: none that grow with k
    assert bad["Ld"] == clean["Ld"] and bad["St"] == clean["St"]  # the same accesses, placed differently


def test_the_model_parameters_reach_the_plugin(program):
    got = qemu.count(X86, [program, "trace", "SFfail", "5", "hazard"], hazards={"entries": 7, "window": 3}).hazards
    assert (got["entries"], got["window"], got["SFfail"]) == (7, 3, 5)  # the load is next to its store: in any window


def test_sites_name_the_instruction(program):
    got = qemu.count(X86, [program, "trace", "SplitLd", "100", "hazard"], hazards=MODEL)
    sites = [s for s in got.sites if s.events["SplitLd"]]
    assert sum(s.events["SplitLd"] for s in sites) == 400
    assert {s.disas.split()[0] for s in sites} == {"movdqu"}


def test_the_plugin_refuses_a_bad_model(program):
    with pytest.raises(CountError, match="run failed"):
        qemu.count(X86, [program, "trace", "SFfail", "1", "hazard"], hazards={"entries": 0, "window": 64})


def test_an_evex_build_is_skipped_as_beyond_the_emulator(tmp_path):
    src = tmp_path / "evex.c"
    src.write_text('int main(void) { __asm__ volatile("vpaddd %%zmm0, %%zmm0, %%zmm0" ::: "xmm0"); return 0; }\n')
    exe = tmp_path / "evex"
    subprocess.run(["cc", "-O1", str(src), "-o", str(exe)], check=True)
    backend = hazards.QemuPlugin(X86)
    assert backend.version()
    with pytest.raises(CountError) as e:
        hazards.trace(backend, exe, exe, "ml-kem-512", "NTT", 2)
    assert e.value.unsupported and "AVX-512" in str(e.value)


def test_the_calibration_measures_every_event_here(program):
    got = json.loads(subprocess.run([program], capture_output=True, text=True, check=True).stdout)
    assert set(got) == set(EVENTS_PER_ITERATION)
    for e, v in got.items():
        if v is not None:  # null: no AVX2 on this CPU
            assert v["clean"] > 0 and v["hazard"] > 0  # timings, never asserted beyond being measured


def test_costs_are_the_hosts_where_measured_else_the_datas():
    machine = {"vendor_id": "GenuineIntel", "cpu_family": "6", "cpu_model_number": "207", "cpu_model": "Intel Xeon"}
    cost, cpu, unit, source = analyze_hazards.penalties({"machine": machine})
    assert unit == "cycles" and "data/hazards.toml" in source and cost["SFfail"] > 0
    measured = {"machine": machine, "metrics": {"hazards": {"calibration": {
        "per_event": {"SFfail": 11.0, "Transitions": 400.0}, "cpu_model": "Intel Xeon"}}}}
    cost2, _, unit2, source2 = analyze_hazards.penalties(measured)
    assert unit2 == "ticks" and cost2["SFfail"] == 11.0 and cost2["Transitions"] == 400.0
    assert cost2["SplitLd"] == cost["SplitLd"] and "SplitLd" in source2.split(";")[1]  # not measured: the data's, said so
    assert "from data/hazards.toml" in source2.split(";")[1]
    none, _, _, _ = analyze_hazards.penalties({"machine": {"vendor_id": "SomeoneElse"}})
    assert none == {}
    emulated, cpu, _, why = analyze_hazards.penalties({**measured, "isa": {"name": "aarch64", "native": False}})
    assert emulated == {} and "emulation" in cpu and "no CPU" in why  # the host's costs are not the target's


# -- explain: the hazard that accounts for a slowdown, or none -----------------------------------------

def _rows(d, **over):
    from pqsimd.report import explain

    args = dict(scheme="s", op="gen_a", compiler="gcc", base="c", v="simd", ticks={"c": 30000.0, "simd": 50000.0},
                total={"c": 200000.0, "simd": 50000.0}, tpi={"c": 0.15, "simd": 1.0}, slowed=True)
    args.update(over)
    return dict(explain._hazard_rows(d, **args))


class _D:
    def __init__(self, table):
        self.hazards = table
        self.directory = "DIR"


def _table(transitions_simd: float, unit="ticks"):
    base = {"scheme": "s", "op": "gen_a", "compiler": "gcc", "sb_entries": 64, "window": 64, "cost_cpu": "Emerald Rapids",
            "cost_unit": unit, "SSEdirty_where": "rej_uniform_avx2 (100%)"}
    rows = []
    for v, tr in (("c", 0.0), ("simd", transitions_simd)):
        r = {**base, "variant": v}
        for e, cost in (("SFfail", 15.0), ("Alias4K", 1.0), ("SplitLd", 0.5), ("SplitSt", 4.0), ("SSEdirty", 0.3),
                        ("Transitions", 400.0)):
            r[e] = tr if e == "Transitions" else 10.0
            r[f"{e}_cycles"] = r[e] * cost
        r["hazard_cycles"] = sum(r[f"{e}_cycles"] for e in ("SFfail", "Alias4K", "SplitLd", "SplitSt", "SSEdirty", "Transitions"))
        rows.append(r)
    return pd.DataFrame(rows)


def test_explain_names_the_hazard_that_accounts_for_the_slowdown():
    rows = _rows(_D(_table(90.0)))
    # excess: 50,000 − 0.15 × 50,000 = 42,500 ticks; 90 transitions × 400 = 36,000 of them
    assert "AVX-to-SSE transitions account for it: 90 more per call at ~400 ticks each, measured on this host" \
        in rows["hazard found"]
    assert "36,000 of the 42,500 ticks" in rows["hazard found"] and "rej_uniform_avx2" in rows["hazard found"]


def test_explain_says_when_no_simulated_hazard_accounts():
    rows = _rows(_D(_table(2.0, unit="cycles")))
    assert rows["hazard found"].startswith("none of the simulated hazards accounts for it")
    assert "data/hazards.toml" in rows["hazard found"]


def test_explain_names_the_command_when_hazards_were_not_simulated():
    rows = _rows(_D(pd.DataFrame()))
    assert "pqsimd run DIR --metric hazards" in rows["hazards"]
    assert _rows(_D(pd.DataFrame()), slowed=False) == {}  # nothing to explain: nothing said


# -- end to end ---------------------------------------------------------------------------------------------

def test_a_hazards_study_end_to_end(tmp_path):
    d = tmp_path / "hz"
    r = run_cli("run", str(d), "--schemes", "ml-kem-512", "--variants", "ref,avx2", "--ops", "gen_a,NTT",
                "--metric", "hazards")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "hazard costs on this CPU" in r.stderr + r.stdout
    assert run_cli("analyze", str(d)).returncode == 0
    t = pd.read_csv(d / "results" / "hazards.csv")
    assert set(t["variant"]) == {"ref", "avx2"} and {"gen_a", "ntt"} <= set(t["op"])
    assert (t[["Ld", "St"]] > 0).all().all()
    assert (t["cost_unit"] == "ticks").all() and t["hazard_cycles"].notna().all()
    manifest = json.loads((d / "manifest.json").read_text())
    assert manifest["metrics"]["hazards"]["calibration"]["per_event"]
    # a second run has nothing to do and keeps the calibration
    again = run_cli("run", str(d), "--schemes", "ml-kem-512", "--variants", "ref,avx2", "--ops", "gen_a,NTT",
                    "--metric", "hazards")
    assert again.returncode == 0 and "0 jobs to run" in again.stderr + again.stdout
    assert json.loads((d / "manifest.json").read_text())["metrics"]["hazards"]["calibration"]["per_event"]
    shown = run_cli("show", str(d))
    assert shown.returncode == 0 and "simulated hazards that cost time" in shown.stdout  # the part, untimed: every row
    assert run_cli("report", str(d)).returncode == 0
    assert (d / "report" / "hazards" / "table_hazards_ml-kem.csv").exists()



def test_doctor_says_whether_hazards_can_be_traced(monkeypatch):
    from pqsimd import doctor

    (found,) = doctor._hazards()
    assert found.ok is True and X86.qemu in found.detail
    monkeypatch.setattr(doctor.shutil, "which", lambda name: None)
    (missing,) = doctor._hazards()
    assert missing.ok is None and "not found" in missing.detail and "apt-get install" in missing.remedy


def test_without_the_emulator_the_metric_says_so_in_one_line_and_records_it(tmp_path):
    from rich.console import Console

    from pqsimd.studydir import StudyDir

    class Missing:
        name, missing = "qemu-plugin", "qemu-x86_64 not found on PATH (install it: apt-get install qemu-user)"
        isa = X86

        def version(self):
            return None

    sd = StudyDir(tmp_path)
    con = Console(record=True, width=200)
    assert hazards.execute(sd, object(), [], [], con, Missing()) is False
    assert con.export_text().strip().splitlines() == ["hazards unavailable: " + Missing.missing]
    rec = sd.read_manifest()["metrics"]["hazards"]
    assert rec["status"] == "unavailable" and "apt-get install qemu-user" in rec["reason"]


def test_a_calibration_that_failed_costs_from_the_data_and_says_so():
    machine = {"vendor_id": "GenuineIntel", "cpu_family": "6", "cpu_model_number": "207"}
    failed = {"machine": machine, "metrics": {"hazards": {"calibration": {"error": "timed out"}}}}
    cost, _, unit, source = analyze_hazards.penalties(failed)
    assert unit == "cycles" and cost and source.startswith("data/hazards.toml")
