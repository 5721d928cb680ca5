"""`--metric sim`: callgrind's cache and branch simulation per op and build under cache geometries
(data/caches.toml), the bottleneck per op and variant (analyze/bottleneck.py) validated on ops
whose limiter is known by construction (tests/fixtures/families/limits*), and the paper's claims
tested (data/paper_claims.toml -> results/claims, the report's claims section). valgrind is
required (make test installs it): a missing one is a failure, not a skip."""

import os
import random
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from pqsimd import caches
from pqsimd.analyze import bottleneck, claims
from pqsimd.errors import PqsimdError
from pqsimd.run import callgrind, sim
from pqsimd.run.backends import Callgrind
from pqsimd.studydir import StudyDir

from conftest import require_tool, one_line_error, run_cli

if callgrind.valgrind_path() is None:
    require_tool("valgrind is not installed (make test installs it as root: tools/test-deps.sh)")

FIXTURES = Path(__file__).parent / "fixtures" / "families"
ENV = {**os.environ, "PQSIMD_FAMILY_PATH": str(FIXTURES)}
SCHEME = "limits-kernels"
CHASE_STEPS = 4096  # limits_ops.c: loads per call, each to another 64-byte line of a 256 KiB cycle
BODY_LINES = 256 * 1024 // 64  # large_body: 256 KiB of straight-line code
EXPECTED_SIM_ALONE = {"pointer_chase": "memory", "unpredictable_branch": "branches", "large_body": "frontend",
                      "dependency_chain": "core", "independent_loop": "core"}
EXPECTED_WITH_MCA = {**EXPECTED_SIM_ALONE, "dependency_chain": "core-latency", "independent_loop": "core-throughput"}


@pytest.fixture(scope="module")
def limits(tmp_path_factory):
    d = tmp_path_factory.mktemp("limits") / "s"
    r = run_cli("run", d, "--preset", "quick", "--schemes", SCHEME, "--variants", "ref", "--metric",
                "instructions,sim,mix", "--sim-cpu", "cascadelake", "--mca-cpu", "cascadelake", env=ENV)
    assert r.returncode == 0, r.stderr
    r = run_cli("analyze", d, env=ENV)
    assert r.returncode == 0, r.stderr
    return d


def _results(d: Path, name: str) -> pd.DataFrame:
    return pd.read_parquet(StudyDir(d).results_dir / f"{name}.parquet")


def test_known_limiters_are_classified_on_instructions_and_simulation_alone(limits):
    s = _results(limits, "sim")
    table = bottleneck.bottleneck_table(s, groups=None, mca=None, self_checks={"empty"})
    assert dict(zip(table["op"], table["limiter"])) == EXPECTED_SIM_ALONE
    assert set(table["confidence"]) == {"high"}, table[["op", "confidence", "dominance"]]


def test_llvm_mca_splits_the_core_into_latency_and_throughput_bound(limits):
    b = _results(limits, "bottleneck")
    assert dict(zip(b["op"], b["limiter"])) == EXPECTED_WITH_MCA
    assert b["core_source"].str.contains("llvm-mca").all()
    assert b["evidence"].str.contains("per call").all() and (b["geometry"] == "cascadelake").all()


def test_the_simulated_counts_are_what_the_ops_were_built_to_do(limits):
    s = _results(limits, "sim").set_index("op")
    chase, body, coin = s.loc["pointer_chase"], s.loc["large_body"], s.loc["unpredictable_branch"]
    # every chase load misses a 32 KiB D1 (the cycle visits all 4096 lines between two visits of
    # one) and hits the 35.75 MiB LL; a couple of other lines (the chase's own state) may miss too
    assert CHASE_STEPS <= chase["D1mr"] <= CHASE_STEPS + 8 and chase["LL_data_misses"] == 0
    assert body["Ir"] == 8 * 8192 + 1 and BODY_LINES <= body["I1mr"] <= BODY_LINES + 8 and body["D1_misses"] == 0
    assert 0.3 * 4096 < coin["Bcm"] < 0.7 * 4096 and coin["Bc"] >= 4096
    assert s.loc["empty", list(sim.SUBTRACTED)].eq(0).all()  # the loop's own work is subtracted, its misses not
    assert (s[list(sim.EVENTS)] >= 0).all().all()
    # the simulation ran the same instructions as the instructions metric (same binary, same op)
    assert s["ir_matches_instructions"].all()


def _per_call(geometry: caches.Geometry, d: Path, op: str) -> dict:
    sd = StudyDir(d)
    lib = sd.variant_path(f"ref.gcc.limits")
    pairs = {o: [sim.measure(Callgrind(), geometry, sd.driver_path, lib, SCHEME, o)] for o in (op, "empty")}
    return {e: float(v) for e, v in sim.per_call(pairs, op, "empty").items()}


def _geometry(name, i1, d1, ll) -> caches.Geometry:
    return caches.Geometry(name, name, "test", None,
                           {"I1": caches.Cache(*i1), "D1": caches.Cache(*d1), "LL": caches.Cache(*ll)})


def test_a_sabotaged_geometry_moves_the_chase_misses_as_the_model_predicts(limits):
    base = _per_call(caches.get("cascadelake"), limits, "pointer_chase")
    # a last level smaller than the 256 KiB cycle: every load now misses it too
    tiny_ll = _per_call(_geometry("tiny-ll", (32768, 8, 64), (1024, 2, 64), (65536, 8, 64)), limits, "pointer_chase")
    # a first level larger than the cycle: the warm chase never misses
    huge_l1 = _per_call(_geometry("huge-l1", (32768, 8, 64), (1 << 20, 16, 64), (1 << 22, 16, 64)), limits, "pointer_chase")
    assert base["DLmr"] == 0 and CHASE_STEPS <= base["D1mr"] <= CHASE_STEPS + 8
    assert CHASE_STEPS <= tiny_ll["DLmr"] <= CHASE_STEPS + 8 and CHASE_STEPS <= tiny_ll["D1mr"]
    assert huge_l1["D1mr"] <= 8 and huge_l1["DLmr"] == 0
    assert base["Ir"] == tiny_ll["Ir"] == huge_l1["Ir"]  # the geometry changes the misses, not the work
    again = _per_call(caches.get("cascadelake"), limits, "pointer_chase")
    assert again == base  # deterministic: the same binary gives the same events


def test_raw_files_carry_the_geometry_and_the_analysis_compares_exactly(limits):
    import json

    import pyarrow.parquet as pq

    t = pq.read_table(StudyDir(limits).raw_path(f"ref.gcc.{SCHEME}.sim+cascadelake"))
    rec = json.loads(t.schema.metadata[b"pqsimd.job"])
    assert rec["geometry"]["name"] == "cascadelake" and rec["geometry"]["simulated"]["LL"] == [37486592, 143, 64]
    assert rec["geometry"]["specified"]["LL"] == [37486592, 11, 64] and "--LL=37486592,143,64" in rec["command"]
    assert "prefetchers" in rec["model_limits"]
    df = t.to_pandas()
    assert set(df["metric"]) == {f"sim.{e}" for e in sim.EVENTS}
    s = _results(limits, "sim")
    assert (s["geometry_text"].str.contains("35.75 MiB 143-way")).all()


# --- geometries -------------------------------------------------------------------------------

def _brute_force_ways(size: int, ways: int, line: int) -> int:
    lines = size // line
    w = ways
    while not (lines % w == 0 and (lines // w) & (lines // w - 1) == 0):
        w += 1
    return w


def test_valgrind_geometry_keeps_size_and_line_and_raises_ways_least():
    rng = random.Random(7)
    cases = [(37486592, 11, 64), (314572800, 20, 64), (49152, 12, 64), (196608, 6, 128)]
    cases += [(rng.randrange(1, 4096) * 64 * rng.choice([1, 3, 5, 11]), rng.choice([2, 3, 4, 8, 11, 12, 16, 20]), 64)
              for _ in range(200)]
    for size, ways, line in cases:
        if (size // line) < ways:
            continue
        c = caches.valgrind_cache(caches.Cache(size, ways, line))
        assert (c.size, c.line) == (size, line)
        assert c.ways == _brute_force_ways(size, ways, line), (size, ways, line)


@pytest.mark.parametrize("name", [n for n in caches.names() if n != caches.HOST])
def test_valgrind_accepts_every_shipped_geometry(name, tmp_path):
    g = caches.get(name)
    assert g.source and g.title
    r = subprocess.run([callgrind.valgrind_path(), "--tool=callgrind", *Callgrind().sim_options(g),
                        f"--callgrind-out-file={tmp_path / 'out'}", "/bin/true"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_host_geometry_is_read_from_sysfs(tmp_path):
    for i, (level, kind, size, ways) in enumerate([(1, "Data", "48K", 12), (1, "Instruction", "32K", 8),
                                                    (2, "Unified", "2048K", 16), (3, "Unified", "30720K", 15)]):
        d = tmp_path / f"index{i}"
        d.mkdir()
        for f, v in (("level", level), ("type", kind), ("size", size), ("ways_of_associativity", ways),
                     ("coherency_line_size", 64)):
            (d / f).write_text(f"{v}\n")
    g = caches.host(tmp_path)
    assert g.caches == {"I1": caches.Cache(32768, 8, 64), "D1": caches.Cache(49152, 12, 64),
                        "LL": caches.Cache(30720 * 1024, 15, 64)}
    assert g.simulated()["LL"] == caches.Cache(30720 * 1024, 15, 64)  # 32768 sets: already valid
    with pytest.raises(PqsimdError, match="cannot read|lists no"):
        caches.host(tmp_path / "missing")


def test_sim_cpu_is_checked_in_one_line(tmp_path):
    r = run_cli("run", tmp_path / "a", "--schemes", "ml-kem-512", "--metric", "sim", "--sim-cpu", "pentium4", "--no-run")
    one_line_error(r, "pentium4", "cascadelake")
    r = run_cli("run", tmp_path / "b", "--schemes", "ml-kem-512", "--metric", "instructions", "--sim-cpu", "zen4",
                "--no-run")
    one_line_error(r, "--sim-cpu", "add sim to --metric")


def test_callgrind_event_totals_are_parsed_by_name():
    text = "events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw Bc Bcm Bi Bim\nsummary: 10 2 1 0 1 0 0 0 0 3 1 0 0\n"
    got = callgrind.parse_callgrind_events(text)
    assert got["Ir"] == 10 == callgrind.parse_callgrind_totals(text) and got["Bcm"] == 1 and got["D1mr"] == 1


def test_a_backend_without_a_cache_model_records_not_simulated(tmp_path):
    class NoModel:
        name, simulates, missing = "qemu-plugin", False, ""

        def version(self):
            return "qemu"

    sd = StudyDir(tmp_path)
    tmp_path.mkdir(exist_ok=True)
    assert sim.execute(sd, None, caches.get("neoverse-n1"), [], [], backend=NoModel())
    info = sd.read_manifest()["metrics"]["sim"]["neoverse-n1"]
    assert info["status"] == "unavailable" and "not simulated" in info["reason"]
    from types import SimpleNamespace

    from pqsimd.report import why

    figs, tabs = why.why_parts(SimpleNamespace(directory=tmp_path, manifest=sd.read_manifest()), tmp_path / "report")
    assert not figs and len(tabs) == 1 and "not simulated" in tabs[0][0].rows[0][1].text


# --- claims -----------------------------------------------------------------------------------

CLAIMS = {"claims": [
    {"id": "memory", "text": "t", "ops": ["x"], "variants": ["a"],
     "predictions": [{"quantity": "D1_misses_pki", "at_least": 1.0}]},
    {"id": "limit", "text": "t", "ops": ["x"], "variants": ["a"],
     "predictions": [{"quantity": "limiter", "in": ["core-latency"]}]},
    {"id": "across", "text": "t", "ops": ["x"], "variants": ["a"],
     "predictions": [{"quantity": "D1_misses", "across": "schemes", "at_least": 1.0}]},
]}


def _sim_rows(pki_by_scheme: dict[str, float]) -> pd.DataFrame:
    return pd.DataFrame([{"geometry": "g", "scheme": s, "op": "x", "variant": "a", "compiler": "gcc", "Ir": 1000.0,
                          "D1_misses_pki": v, "D1_misses": v, "geometry_text": "g: text"} for s, v in pki_by_scheme.items()])


def test_claim_verdicts_follow_their_predictions():
    bott = pd.DataFrame([{"geometry": "g", "scheme": "s1", "op": "x", "variant": "a", "limiter": "core"}])
    one = claims.evaluate(CLAIMS, _sim_rows({"s1": 5.0}), None, bott, None).set_index("claim")["verdict"]
    assert one.to_dict() == {"memory": claims.SUPPORTED, "limit": claims.UNTESTABLE, "across": claims.UNTESTABLE}
    two = claims.evaluate(CLAIMS, _sim_rows({"s1": 0.0, "s2": 0.5}), None, bott.assign(limiter="memory"), None)
    assert two.set_index("claim")["verdict"].to_dict() == {
        "memory": claims.CONTRADICTED, "limit": claims.CONTRADICTED, "across": claims.CONTRADICTED}
    none = claims.evaluate(CLAIMS, None, None, bott.iloc[0:0], None)
    assert set(none["verdict"]) == {"not measured: needs --metric sim"}
    assert none["why"].str.contains("`pqsimd run DIR --metric sim` measures it").all()


def test_a_study_without_sim_gives_every_paper_claim_a_verdict_that_names_what_it_lacks():
    """ticks, instructions and mix (the default study's metrics): the claims on instructions and vector
    shares are decided, those on misses and limiters say they need --metric sim."""
    import tomllib
    from importlib import resources

    paper = tomllib.loads(resources.files("pqsimd.data").joinpath("paper_claims.toml").read_text())
    schemes, variants = ("ml-kem-512", "ml-kem-768"), ("refnv", "ref", "avx2")
    ins = {"refnv": 9000.0, "ref": 9100.0, "avx2": 600.0}
    groups = pd.DataFrame([{"metric": "instructions", "scheme": s, "op": op, "variant": v, "compiler": "gcc",
                            "median": ins[v]} for s in schemes for op in ("ntt", "gen_a", "poly_getnoise_eta1")
                           for v in variants])
    mix_ops = pd.DataFrame([{"scheme": s, "op": "ntt", "variant": v, "compiler": "gcc", "instructions": ins[v],
                             "vector_share": 0.99 if v == "avx2" else 0.01} for s in schemes for v in variants])
    got = claims.evaluate(paper, None, groups, pd.DataFrame(), mix_ops).set_index("claim")
    assert got.loc["autovec-modular-reduction", "verdict"] == claims.SUPPORTED
    assert got.loc["gen_a-memory-bandwidth", "verdict"] == "not measured: needs --metric sim"
    assert got.loc["noise-sequential-reads", "verdict"] == "not measured: needs --metric sim"
    # its measured half (the same instructions in every set) holds; its misses need the simulation
    assert got.loc["ntt-cache-state", "verdict"] == "not measured: needs --metric sim"
    assert "what was measured holds" in got.loc["ntt-cache-state", "why"]
    assert claims.UNTESTABLE not in set(got["verdict"])
    worse = claims.evaluate(paper, None, groups, pd.DataFrame(), mix_ops.assign(vector_share=0.5)).set_index("claim")
    assert worse.loc["autovec-modular-reduction", "verdict"] == claims.CONTRADICTED


@pytest.fixture(scope="module")
def kem(tmp_path_factory):
    d = tmp_path_factory.mktemp("kem") / "s"
    r = run_cli("run", d, "--preset", "quick", "--schemes", "ml-kem-512,ml-kem-768", "--ops",
                "gen_a,poly_getnoise_eta1,ntt,empty", "--variants", "refnv,ref,avx2", "--metric", "instructions,mix,sim",
                "--sim-cpu", "cascadelake", "--mca-cpu", "cascadelake")
    assert r.returncode == 0, r.stderr
    r = run_cli("report", d, "--reference", "paper")
    assert r.returncode == 0, r.stderr
    return d


def test_each_of_the_papers_four_claims_gets_a_verdict_with_numbers(kem):
    c = _results(kem, "claims").set_index("claim")
    assert set(c.index) == {"gen_a-memory-bandwidth", "noise-sequential-reads", "ntt-cache-state",
                            "autovec-modular-reduction"}
    assert c["verdict"].isin([claims.SUPPORTED, claims.CONTRADICTED]).all(), c[["verdict", "why"]]
    # Under the simulated Cascade Lake caches gen_a's data stay in L1 (SHAKE's 200-byte state and
    # the 384-byte polynomials): no sign of a memory-bandwidth limit
    assert c.loc["gen_a-memory-bandwidth", "verdict"] == claims.CONTRADICTED
    assert "D1_misses_pki" in c.loc["gen_a-memory-bandwidth", "evidence"]
    assert (c["geometry"] == "cascadelake").all() and c["geometry_text"].str.contains("Cascade|cascadelake").all()
    md = (StudyDir(kem).report_dir / "mechanism" / "table_claims.md").read_text()
    assert "The paper's mechanistic claims, tested" in md and "prefetchers" in md
    sim_md = (StudyDir(kem).report_dir / "mechanism" / "table_sim_ml-kem_cascadelake.md").read_text()
    assert "SIMULATION" in sim_md and "bottleneck" in sim_md
    assert (StudyDir(kem).report_dir / "mechanism" / "fig_sim_ml-kem_cascadelake.png").exists()


def test_explain_names_the_bottleneck_of_ref_and_avx2_with_the_simulated_numbers(kem):
    r = run_cli("explain", kem, "--scheme", "ml-kem-768", "--op", "gen_a", "--variants", "ref,avx2")
    assert r.returncode == 0, r.stderr
    lines = [l.split() for l in r.stdout.splitlines() if "confidence" in l]
    assert ["bottleneck", "ref", "(cascadelake):"] == lines[0][:3], r.stdout
    assert lines[1][:2] == ["avx2", "(cascadelake):"], r.stdout
    assert all("I1 misses" in " ".join(l) and "mispredicted branches" in " ".join(l) for l in lines), r.stdout


def test_real_counters_stand_beside_the_simulation_where_a_pmu_measured_them():
    from types import SimpleNamespace

    from pqsimd.report import why

    groups = pd.DataFrame([{"metric": m, "scheme": "s", "op": "x", "variant": "a", "compiler": "gcc", "median": v}
                           for m, v in (("branch_misses", 7.0), ("ticks", 100.0), ("l1d_misses", 3.0))])
    got = why._measured(SimpleNamespace(groups=groups))
    assert got == {("s", "x", "a", "gcc"): {"PMU branch-misses": 7.0, "PMU L1D misses": 3.0}}
    assert why._measured(SimpleNamespace(groups=pd.DataFrame())) == {}


# --- aarch64: the QEMU plugin's own cache and branch models -----------------------------------

@pytest.fixture(scope="module")
def limits_aarch64(tmp_path_factory):
    import shutil

    from pqsimd import isa

    if not (shutil.which(isa.get("aarch64").qemu) and shutil.which("aarch64-linux-gnu-gcc")):
        require_tool("qemu-user or gcc-aarch64-linux-gnu is not installed (make test installs them: tools/test-deps.sh)")
    d = tmp_path_factory.mktemp("limits-a64") / "s"
    r = run_cli("run", d, "--isa", "aarch64", "--preset", "quick", "--schemes", SCHEME, "--variants", "ref",
                "--metric", "instructions,sim", "--sim-cpu", "neoverse-n1", env=ENV)
    assert r.returncode == 0, r.stderr
    r = run_cli("analyze", d, env=ENV)
    assert r.returncode == 0, r.stderr
    return d


def test_known_limiters_are_classified_on_aarch64_under_qemu(limits_aarch64):
    b = _results(limits_aarch64, "bottleneck")
    assert dict(zip(b["op"], b["limiter"])) == EXPECTED_SIM_ALONE
    s = _results(limits_aarch64, "sim").set_index("op")
    assert s["ir_matches_instructions"].all()  # the plugin's cache run counts what the instructions metric counts
    assert CHASE_STEPS <= s.loc["pointer_chase", "D1mr"] <= CHASE_STEPS + 8  # 64 KiB 4-way D1 < the 256 KiB cycle
    assert BODY_LINES <= s.loc["large_body", "I1mr"] <= BODY_LINES + 8
    assert 0.3 * 4096 < s.loc["unpredictable_branch", "Bcm"] < 0.7 * 4096
    assert s.loc["empty", list(sim.SUBTRACTED)].eq(0).all() and (s[list(sim.EVENTS)] >= 0).all().all()


def test_the_core_is_split_by_llvm_mca_else_by_ticks_else_not():
    c = bottleneck.classify
    assert c(4000, 0, 0, 0, 0, 0)["limiter"] == "core"  # instructions and simulation alone cannot see dependencies
    assert c(4000, 0, 0, 0, 0, 0, measured_cycles=5000)["limiter"] == "core-latency"  # 5000 > 2 × 4000 / 4
    assert c(4000, 0, 0, 0, 0, 0, measured_cycles=1200)["limiter"] == "core-throughput"
    got = c(4000, 0, 0, 0, 0, 0, mca_cycles=3000, measured_cycles=1200)  # llvm-mca first
    assert got["limiter"] == "core-latency" and got["est_core"] == 3000
    # stalls the simulation sees are taken out of the measured cycles before the split
    assert c(4000, 0, 0, 0, 0, 0, measured_cycles=2600)["limiter"] == "core-latency"  # 2600 > 2000
    assert c(4000, 0, 0, 50, 0, 0, measured_cycles=2600)["limiter"] == "core-throughput"  # 2600 - 50 × 14 = 1900
    # a limiter the backend does not simulate is left out of the ranking and caps the confidence
    nan = float("nan")
    got = c(4000, 0, 0, 0, 0, nan)
    assert got["limiter"] == "core" and got["confidence"] == "medium" and got["est_branches"] != got["est_branches"]


def _sysfs(d, data_ways=12, data_line=64, data_size="48K"):
    for i, (level, kind, size, ways, line) in enumerate([(1, "Data", data_size, data_ways, data_line),
                                                         (1, "Instruction", "32K", 8, 64),
                                                         (3, "Unified", "32768K", 16, 64)]):
        idx = d / f"index{i}"
        idx.mkdir(parents=True)
        for f, v in (("level", level), ("type", kind), ("size", size), ("ways_of_associativity", ways),
                     ("coherency_line_size", line)):
            (idx / f).write_text(f"{v}\n")
    return d


@pytest.mark.parametrize("bad, needle", [
    ({"data_ways": 0}, "ways is 0"),  # a VM's sysfs: ZeroDivisionError before
    ({"data_line": 0}, "line size is 0"),
    ({"data_size": "0K"}, "size is 0"),  # valgrind crashed on every build ("exit code -8")
    ({"data_size": "-48K"}, "size is -49152"),  # passed to valgrind
    ({"data_line": 48}, "must be a power of two"),
    ({"data_size": "64", "data_ways": 4}, "cannot hold one set"),
])
def test_a_cache_geometry_is_checked_when_read(tmp_path, monkeypatch, bad, needle):
    """Geometries are validated where they are read, the host's from sysfs and the shipped ones from
    data/caches.toml: one line naming the cache and the fix, never a ZeroDivisionError or valgrind's crash."""
    with pytest.raises(PqsimdError) as e:
        caches.host(_sysfs(tmp_path / "sys", **bad))
    assert needle in str(e.value) and "--sim-cpu" in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("d1, needle", [([49152, 0, 64], "ways is 0"), ([49152, 12, 0], "line size is 0"),
                                        ([0, 12, 64], "size is 0"), ([-49152, 12, 64], "size is -49152"),
                                        ([49152, 12], "must be [size in bytes, ways, line size in bytes]")])
def test_a_shipped_cache_geometry_is_checked_when_read(monkeypatch, d1, needle):
    shipped = caches._shipped()
    broken = {**shipped, "cpus": {**shipped["cpus"], "zen5": {**shipped["cpus"]["zen5"], "D1": d1}}}
    monkeypatch.setattr(caches, "_shipped", lambda: broken)
    with pytest.raises(PqsimdError) as e:
        caches.get("zen5")
    assert str(e.value).startswith("data/caches.toml [cpus.zen5]: D1") and needle in str(e.value)


def test_a_build_the_simulation_left_out_is_said_in_show_and_the_report(tmp_path):
    """An AVX-512 build under --metric sim: the run records it as skipped (valgrind cannot decode EVEX); `show`
    prints it as n/a with the reason and the report lists it among the warnings."""
    import pandas as pd

    from pqsimd.results import Results

    why = "keccak-p1600 empty: valgrind cannot decode instruction bytes 0x62 (EVEX prefix 0x62: AVX-512)"
    manifest = {"metrics": {"sim": {"host": {"status": "ok", "geometry": {"name": "host"},
                                             "skipped": {"avx512.gcc.keccak": why}}},
                            "instructions": {"status": "ok", "skipped": {}}}}
    study = Results(tmp_path, pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), manifest=manifest)
    assert study.not_measured_notes() == [
        "sim (host): not measured for avx512.gcc.keccak: valgrind cannot decode instruction bytes 0x62 (EVEX prefix "
        "0x62: AVX-512)"]
    assert Results(tmp_path, pd.DataFrame(), pd.DataFrame(), pd.DataFrame()).not_measured_notes() == []
