"""`pqsimd campaign`: studies of one plan on several machines (or compilers), merged.

Synthetic studies go through the real `analyze` (raw → results), get the records a run writes
(manifest, plan), and are then read as a campaign: a machine whose speedup of one op is 1.3× the
other's must be found, one without any difference must not; incomparable studies are refused in one
line. The real studies of ../shared/studies (other machines) are used as inputs when present."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pqsimd import microarch
from pqsimd.analyze import analyze_study
from pqsimd.analyze.campaign import run_campaign
from pqsimd.stats.decision import empirical as decision_p, percentile_interval
from pqsimd.stats.interval import verdict_of
from pqsimd.errors import PqsimdError
from synthetic import make_synthetic_study

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "studies"
ZEN5, EMR = SHARED / "zen5-ml-kem-standard", SHARED / "emr-ml-kem-standard"
OPS = ("ntt", "invntt", "basemul", "poly_tomsg")
MEDIANS = {"ref": 6000.0, "avx2": 200.0}
ZEN5_MACHINE = {"cpu_model": "AMD EPYC", "vendor_id": "AuthenticAMD", "cpu_family": "26", "cpu_model_number": "2",
                "stepping": "1", "virtualization": "kvm"}
EMR_MACHINE = {"cpu_model": "Intel(R) Xeon(R) Processor", "vendor_id": "GenuineIntel", "cpu_family": "6",
               "cpu_model_number": "207", "stepping": "2", "virtualization": "kvm"}


def _records(d: Path, machine: dict, compilers=("gcc",), crate_version="0.1.1", crates=None, families=None) -> None:
    """The manifest and plan a run writes, as far as a campaign reads them; crates: further pinned
    crates {name: version}; families: {family: its TOML's text}."""
    chain = {"extra_baseline": "ref", "steps": [{"stage": "hand_simd", "from": "ref", "to": "avx2", "label": "hand SIMD"}]}
    pinned = {"pqcrypto-mlkem": {"version": crate_version, "checksum": "c"},
              **{k: {"version": v, "checksum": f"c{v}"} for k, v in (crates or {}).items()}}
    manifest = {"tool": {"name": "pqsimd", "git_commit": "0" * 40}, "machine": machine, "isa": {"name": "x86_64"},
                "source": {"origin": "crate", "crate": "pqcrypto-mlkem", "crates": pinned},
                **({"families": {f: {"toml": t} for f, t in families.items()}} if families else {}),
                "compilers": {c: {"id": c, "version": f"{c} (Debian 12.2.0) 12.2.0"} for c in compilers},
                "chain": chain, "jobs": {"paired.ml-kem-512.0": {"calibration": {"granularity": 2, "tsc_hz": 2.6e9}}}}
    (d / "manifest.json").write_text(json.dumps(manifest))
    (d / "plan.json").write_text(json.dumps({"design": "paired", "compilers": list(compilers)}))


def synthetic_member(d: Path, seed: int, machine: dict, scale: dict | None = None, compilers=("gcc",),
                     ops=OPS) -> Path:
    """A paired study, J = 10; scale {op: k} makes the variant k× faster on this machine, i.e. every
    job ratio of that op k× larger."""
    scale = scale or {}

    def medians(scheme, variant, op):
        return MEDIANS[variant] / (scale.get(op, 1.0) if variant == "avx2" else 1.0)

    make_synthetic_study(d, schemes=("ml-kem-512",), variants=("ref", "avx2"), ops=ops, jobs=10, spins=20,
                         reps=3, medians=medians, job_sigma=0.03, seed=seed, design="paired", outlier_rate=0.0,
                         compilers=compilers, analysis={"n_boot": 200})
    _records(d, machine, compilers)
    analyze_study(d)
    return d


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return synthetic_member(tmp_path_factory.mktemp("a") / "zen5", 1, ZEN5_MACHINE)


def _ratios(out: Path) -> pd.DataFrame:
    return pd.read_parquet(out / "results" / "ratios.parquet")


def test_a_machine_that_scales_one_op_by_1_3_is_found(base, tmp_path):
    other = synthetic_member(tmp_path / "emr", 2, EMR_MACHINE, scale={"ntt": 1.3})
    run_campaign(tmp_path / "c", [base, other], {}, n_boot=2000)
    r = _ratios(tmp_path / "c").set_index("op")
    assert r.loc["ntt", "verdict"] == "larger" and r.loc["ntt", "machine_effect"]
    assert r.loc["ntt", "ci_low"] <= 1.3 <= r.loc["ntt", "ci_high"] or abs(r.loc["ntt", "ratio"] / 1.3 - 1) < 0.05
    assert not r.drop(index="ntt")["machine_effect"].any(), r
    machines = pd.read_parquet(tmp_path / "c" / "results" / "machines.parquet")
    assert list(machines["microarchitecture"]) == ["Zen 5", "Emerald Rapids"]
    # the rebuilt estimate from spins.parquet is the study's own comparisons row
    sp = pd.read_parquet(tmp_path / "c" / "results" / "speedups.parquet")
    assert np.allclose(sp["rebuilt"], sp["speedup"], rtol=1e-9) and (sp["note"] == "").all()


def test_no_machine_effect_where_there_is_none_and_same_microarchitecture_said(base, tmp_path):
    twin = synthetic_member(tmp_path / "zen5b", 3, ZEN5_MACHINE)
    run_campaign(tmp_path / "c", [base, twin], {}, n_boot=2000)
    r = _ratios(tmp_path / "c")
    assert len(r) == len(OPS) and not r["machine_effect"].any(), r
    summary = json.loads((tmp_path / "c" / "results" / "campaign.json").read_text())
    assert any("same microarchitecture (Zen 5)" in s for s in summary["same_microarchitecture"])


@pytest.mark.parametrize("change, needle", [
    (lambda d: (d / "study.toml").write_text((d / "study.toml").read_text()
                                              + '\n[variants.avx2]\nsources = "avx2"\nflags = ["-O2", "-mavx2"]\n'),
     "variant avx2 differs"),
    (lambda d: _records(d, EMR_MACHINE, crate_version="0.1.0"), "pinned crate pqcrypto-mlkem 0.1.0 in other, 0.1.1 in zen5"),
])
def test_an_incomparable_study_is_refused_in_one_line(base, tmp_path, change, needle):
    other = tmp_path / "other"
    shutil.copytree(base, other)
    if needle.startswith("variant"):  # both declare the variant; only the flags differ
        (base_copy := tmp_path / "base")
        shutil.copytree(base, base_copy)
        (base_copy / "study.toml").write_text((base_copy / "study.toml").read_text()
                                              + '\n[variants.avx2]\nsources = "avx2"\nflags = ["-O3", "-mavx2"]\n')
        first = base_copy
    else:
        first = base
    change(other)
    with pytest.raises(PqsimdError, match="not comparable") as e:
        run_campaign(tmp_path / "c", [first, other], {})
    assert needle in str(e.value) and "\n" not in str(e.value)
    assert not (tmp_path / "c" / "results").exists()  # nothing written
    cli = subprocess.run([sys.executable, "-m", "pqsimd.cli", "campaign", str(tmp_path / "c"), str(first), str(other)],
                         capture_output=True, text=True)
    assert cli.returncode == 2 and len(cli.stderr.strip().splitlines()) == 1 and needle in cli.stderr
    assert "Traceback" not in cli.stderr


# the synthetic family: ref from the PQClean tree's crate, avx2 from a crate of its own
FAMILY_TOML = '[implementations.clean]\n[implementations.avx2]\ncrate = "avx2-crate"\n[implementations.unused]\ncrate = "unused-crate"\n'


def test_comparable_is_judged_by_the_crates_the_compared_builds_use(tmp_path):
    """A pinned crate no compared build uses (a later pqsimd pins more) does not refuse a campaign and
    is said in a note; one a compared build uses does, naming each side with its own version."""
    def member(name, seed, **crates):
        d = synthetic_member(tmp_path / name, seed, ZEN5_MACHINE if seed == 1 else EMR_MACHINE)
        (d / "study.toml").write_text((d / "study.toml").read_text() + '\n[variants.ref]\nsources = "clean"\nflags = ["-O3"]\n'
                                      '\n[variants.avx2]\nsources = "avx2"\nflags = ["-O3", "-mavx2"]\n')
        _records(d, ZEN5_MACHINE if seed == 1 else EMR_MACHINE, crates=crates, families={"ml-kem": FAMILY_TOML})
        return d

    old = member("old", 1, **{"avx2-crate": "1.0"})
    new = member("new", 5, **{"avx2-crate": "1.0", "unused-crate": "0.1.0"})
    summary = json.loads((new / "results" / "summary.json").read_text())  # timed on a busy machine
    summary["shared_cpu"] = {"jobs": 7, "timing_jobs": 10, "waited_fraction": {}}
    (new / "results" / "summary.json").write_text(json.dumps(summary))
    run_campaign(tmp_path / "c", [old, new], {}, n_boot=200)
    notes = json.loads((tmp_path / "c" / "results" / "campaign.json").read_text())["differences"]
    assert any("unused-crate" in n and "no compared build uses" in n for n in notes), notes
    assert "new: 7 of 10 timing jobs shared their CPU with another program" in " ".join(notes)
    newer = member("newer", 6, **{"avx2-crate": "1.1", "unused-crate": "0.1.0"})
    with pytest.raises(PqsimdError, match="not comparable") as e:
        run_campaign(tmp_path / "d", [old, newer], {})
    assert "newer vs old: the sources differ (variant avx2 of ml-kem: pinned crate avx2-crate 1.1 in newer, 1.0 in old)" \
        in str(e.value), str(e.value)


def test_other_ops_need_a_stated_subset(base, tmp_path):
    fewer = synthetic_member(tmp_path / "fewer", 4, EMR_MACHINE, ops=OPS[:2])
    with pytest.raises(PqsimdError, match="ops differ .*--ops"):
        run_campaign(tmp_path / "c", [base, fewer], {})
    run_campaign(tmp_path / "c", [base, fewer], {"ops": list(OPS[:2])}, n_boot=500)
    assert set(_ratios(tmp_path / "c")["op"]) == set(OPS[:2])
    # the statement is kept: the campaign runs again from its campaign.toml
    first = _ratios(tmp_path / "c")
    run_campaign(tmp_path / "c", [], {}, n_boot=500)
    pd.testing.assert_frame_equal(first, _ratios(tmp_path / "c"))
    with pytest.raises(PqsimdError, match="did not measure"):
        run_campaign(tmp_path / "d", [base, fewer], {"ops": [OPS[3]]})


def test_two_compilers_on_one_machine_are_two_columns(tmp_path):
    gcc = synthetic_member(tmp_path / "g", 5, ZEN5_MACHINE, compilers=("gcc",))
    clang = synthetic_member(tmp_path / "c", 6, ZEN5_MACHINE, compilers=("clang",), scale={"invntt": 1.3})
    run_campaign(tmp_path / "camp", [gcc, clang], {}, n_boot=1000)
    r = _ratios(tmp_path / "camp").set_index("op")
    assert set(r["arm"]) == {"c · clang"} and set(r["reference"]) == {"g · gcc"} and len(r) == len(OPS)
    assert list(r.index[r["machine_effect"]]) == ["invntt"]
    from pqsimd.report.campaign import write_campaign_report

    out = write_campaign_report(tmp_path / "camp")
    md = (out / "ml-kem" / "campaign_hand_simd_ref_avx2.md").read_text()
    assert "speedup g · gcc" in md and "speedup c · clang" in md


def test_arms_of_one_study_resample_their_shared_jobs_together():
    """Two compilers timed in the same jobs: the ratio's bootstrap draws the same jobs for both, so
    an arm against an identical copy of itself has no spread at all; independent draws would."""
    from pqsimd.stats.campaign import ArmJobs, ratio_bootstrap

    jobs = pd.Series(np.random.default_rng(1).normal(0.5, 0.05, 10), index=[f"paired.x.{i}" for i in range(10)])
    ev = ArmJobs("paired", ratios=jobs)
    twin = ArmJobs("paired", ratios=jobs.iloc[::-1])  # the same jobs, listed in another order
    rng = np.random.default_rng(0)
    assert np.all(ratio_bootstrap(ev, twin, True, rng, 500) == 0.0)
    assert np.std(ratio_bootstrap(ev, twin, False, rng, 500)) > 0.005


def test_report_and_show(base, tmp_path):
    other = synthetic_member(tmp_path / "emr", 6, EMR_MACHINE, scale={"basemul": 1.3})
    cli = subprocess.run([sys.executable, "-m", "pqsimd.cli", "campaign", str(tmp_path / "c"), str(base), str(other),
                          "--labels", "zen5,emr", "--bootstrap", "1000"], capture_output=True, text=True)
    assert cli.returncode == 0, cli.stderr
    rep = tmp_path / "c" / "report"
    tex = (rep / "ml-kem" / "campaign_hand_simd_ref_avx2.tex").read_text()
    assert "\\begin{tabular}" in tex and "\\textbf{1.3" in tex  # the machine effect, in bold
    assert (rep / "ml-kem" / "campaign_forest.png").read_bytes()[:4] == b"\x89PNG"
    html = (rep / "index.html").read_text()
    assert "Emerald Rapids" in html and "Zen 5" in html and "campaign_forest.png" in html
    show = subprocess.run([sys.executable, "-m", "pqsimd.cli", "show", str(tmp_path / "c")], capture_output=True,
                          text=True, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    assert show.returncode == 0, show.stderr
    assert "Emerald Rapids" in show.stdout and "▲" in show.stdout and "emr / zen5" in show.stdout


def test_decision_p_is_where_the_percentile_interval_starts_to_give_a_verdict():
    """Brute force over gamma: the interval at level 1 - gamma gives a verdict exactly for gamma >= p."""
    rng = np.random.default_rng(0)
    band = np.log1p(0.02)
    for _ in range(60):
        boot = rng.normal(rng.uniform(-0.06, 0.06), rng.uniform(0.005, 0.04), size=1000)
        p = decision_p(boot, band)
        grid = np.linspace(0.001, 1.0, 1000)
        gives = [verdict_of(*percentile_interval(boot, g), band) != "~" for g in grid]
        first = next((g for g, ok in zip(grid, gives) if ok), None)
        if p >= 1.0:
            assert first is None or first >= 0.998
        else:
            assert first is not None and abs(first - p) <= 0.0021, (p, first)


@pytest.mark.parametrize("machine, name", [
    # published identities of real CPUs (family/model/stepping of /proc/cpuinfo)
    ({"vendor_id": "AuthenticAMD", "cpu_family": "23", "cpu_model_number": "1"}, "Zen"),  # EPYC 7601 (Naples)
    ({"vendor_id": "AuthenticAMD", "cpu_family": "23", "cpu_model_number": "8"}, "Zen+"),  # Ryzen 7 2700X
    ({"vendor_id": "AuthenticAMD", "cpu_family": "23", "cpu_model_number": "49"}, "Zen 2"),  # EPYC 7742 (Rome)
    ({"cpu_model": "AMD Ryzen 9 3900X", "cpu_family": "23", "cpu_model_number": "113"}, "Zen 2"),  # Matisse
    ({"vendor_id": "AuthenticAMD", "cpu_family": "25", "cpu_model_number": "1"}, "Zen 3"),  # EPYC 7763 (Milan)
    ({"vendor_id": "AuthenticAMD", "cpu_family": "25", "cpu_model_number": "17"}, "Zen 4"),  # EPYC 9654 (Genoa)
    ({"vendor_id": "AuthenticAMD", "cpu_family": "25", "cpu_model_number": "97"}, "Zen 4"),  # Ryzen 7950X
    ({"vendor_id": "AuthenticAMD", "cpu_family": "26", "cpu_model_number": "2"}, "Zen 5"),  # EPYC 9005 (Turin)
    ({"vendor_id": "GenuineIntel", "cpu_family": "6", "cpu_model_number": "85", "stepping": "4"}, "Skylake-SP"),
    ({"vendor_id": "GenuineIntel", "cpu_family": "6", "cpu_model_number": "85", "stepping": "7"}, "Cascade Lake"),
    ({"vendor_id": "GenuineIntel", "cpu_family": "6", "cpu_model_number": "106"}, "Ice Lake-SP"),
    ({"vendor_id": "GenuineIntel", "cpu_family": "6", "cpu_model_number": "143"}, "Sapphire Rapids"),
    ({"cpu_model": "Intel(R) Xeon(R) Processor", "cpu_family": "6", "cpu_model_number": "207"}, "Emerald Rapids"),
    ({"vendor_id": "GenuineIntel", "cpu_family": "6", "cpu_model_number": "142", "stepping": "10"},
     "Kaby Lake / Coffee Lake (Skylake core)"),  # Core i5-8279U
    ({"cpu_implementer": "0x41", "cpu_part": "0xd08"}, "Cortex-A72"),  # Raspberry Pi 4
    ({"cpu_implementer": "0x41", "cpu_part": "0xd0c"}, "Neoverse N1"),  # Graviton2
    ({"cpu_implementer": "0x41", "cpu_part": "0xd40"}, "Neoverse V1"),  # Graviton3
    ({"cpu_implementer": "0x41", "cpu_part": "0xd4f"}, "Neoverse V2"),  # Grace, Graviton4
    ({"cpu_implementer": "0x61", "cpu_part": "0x023"}, "Apple M1"),
])
def test_machines_are_named_by_microarchitecture(machine, name):
    ua = microarch.identify(machine)
    assert ua.name == name and ua.known and ua.source


def test_an_unknown_cpu_says_what_it_is():
    ua = microarch.identify({"vendor_id": "GenuineIntel", "cpu_family": "6", "cpu_model_number": "1"})
    assert not ua.known and ua.name == "intel family 6 model 1"
    assert all(e.get("source") for k in ("x86", "arm") for e in microarch.table()[k])


@pytest.mark.skipif(not (ZEN5.is_dir() and EMR.is_dir()), reason=f"the shared real studies are not at {SHARED}")
def test_the_real_campaign_zen5_vs_emerald_rapids(tmp_path):
    out = tmp_path / "c"
    cli = subprocess.run([sys.executable, "-m", "pqsimd.cli", "campaign", str(out), str(ZEN5), str(EMR),
                          "--schemes", "ml-kem-768", "--bootstrap", "1000"], capture_output=True, text=True)
    assert cli.returncode == 0, cli.stderr
    machines = pd.read_parquet(out / "results" / "machines.parquet")
    assert list(machines["microarchitecture"]) == ["Zen 5", "Emerald Rapids"]
    r = _ratios(out)
    assert set(r["scheme"]) == {"ml-kem-768"}
    sp = pd.read_parquet(out / "results" / "speedups.parquet")
    assert (sp["note"] == "").all()  # every speedup rebuilt from spins.parquet is the study's own
    # every ratio is the quotient of the two studies' own speedups, inside its own interval
    assert np.allclose(r["ratio"], r["speedup"] / r["speedup_reference"], rtol=1e-9)
    assert ((r["ci_low"] <= r["ratio"]) & (r["ratio"] <= r["ci_high"])).all()
    assert (out / "report" / "index.html").exists()


FRESH = SHARED / "xeon-avx512-ml-kem-standard"  # a fresh clone's `make study` of a pqsimd that pins more crates


@pytest.mark.skipif(not (ZEN5.is_dir() and FRESH.is_dir()), reason=f"the shared real studies are not at {SHARED}")
def test_a_fresh_standard_study_beside_the_shipped_zen5_one(tmp_path):
    """It was refused: 'the sources differ (pinned crate slh-dsa absent vs 0.1.0)', a crate no compared
    build uses, with the sides the wrong way round."""
    out = tmp_path / "c"
    cli = subprocess.run([sys.executable, "-m", "pqsimd.cli", "campaign", str(out), str(ZEN5), str(FRESH),
                          "--schemes", "ml-kem-768", "--ops", "NTT,decaps", "--bootstrap", "200"], capture_output=True,
                         text=True)
    assert cli.returncode == 0, cli.stderr
    notes = json.loads((out / "results" / "campaign.json").read_text())["differences"]
    assert any("slh-dsa" in n and "no compared build uses" in n for n in notes), notes
    assert set(_ratios(out)["scheme"]) == {"ml-kem-768"}


def test_separate_design_and_exact_counts(tmp_path):
    """Separate-design studies (the ratio of geometric means of job medians, each build's jobs
    resampled on their own) and deterministic counts (exact ratios) make a campaign too."""
    dirs = []
    for i, (machine, k) in enumerate([(ZEN5_MACHINE, 1.0), (EMR_MACHINE, 1.3)]):
        d = tmp_path / f"s{i}"
        make_synthetic_study(d, schemes=("ml-kem-512",), variants=("ref", "avx2"), ops=("ntt", "basemul"), jobs=6,
                             spins=20, reps=3, job_sigma=0.03, seed=10 + i, design="separate", outlier_rate=0.0,
                             medians=lambda s, v, o, k=k: MEDIANS[v] / (k if (v, o) == ("avx2", "ntt") else 1.0),
                             metric=("ticks", "instructions"), analysis={"n_boot": 200})
        _records(d, machine)
        (d / "plan.json").write_text(json.dumps({"design": "separate", "compilers": ["gcc"]}))
        analyze_study(d)
        dirs.append(d)
    run_campaign(tmp_path / "c", dirs, {}, n_boot=1000)
    r = _ratios(tmp_path / "c").set_index(["metric", "op"])
    assert r.loc[("ticks", "ntt"), "verdict"] == "larger" and r.loc[("ticks", "ntt"), "method"] == "bootstrap"
    assert r.loc[("ticks", "basemul"), "verdict"] != "larger" and not r.loc[("ticks", "basemul"), "machine_effect"]
    assert r.loc[("instructions", "ntt"), "method"] == "exact"
    exact = (6000 / round(200 / 1.3)) / (6000 / 200)  # the synthetic counts are whole instructions per call
    assert r.loc[("instructions", "ntt"), "ci_low"] == r.loc[("instructions", "ntt"), "ratio"] == pytest.approx(exact)
    sp = pd.read_parquet(tmp_path / "c" / "results" / "speedups.parquet")
    assert (sp["note"] == "").all()


def test_compare_speedups_is_a_campaign_of_two(base, tmp_path):
    other = synthetic_member(tmp_path / "emr", 7, EMR_MACHINE, scale={"ntt": 1.3})
    out = subprocess.run([sys.executable, "-m", "pqsimd.cli", "compare", str(base), str(other), "--speedups"],
                         capture_output=True, text=True, env={"COLUMNS": "220", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    ntt = next(line for line in out.stdout.splitlines() if line.startswith("NTT"))
    assert "▲" in ntt and "Emerald Rapids" in out.stdout
    assert not any("▲" in line or "▼" in line for line in out.stdout.splitlines() if line.startswith(("INVNTT", "basemul")))
    assert not list(tmp_path.glob("*/results/campaign.json"))  # nothing written


@pytest.mark.slurm
def test_slurm_machines_make_one_study_per_partition_and_their_campaign(tmp_path, slurm_cluster):
    d = tmp_path / "cluster"
    tiny = ["--schemes", "ml-kem-512", "--variants", "ref,avx2", "--ops", "ntt,basemul,empty", "--jobs", "3",
            "--spins", "5", "--reps", "3", "--design", "paired"]
    run = subprocess.run([sys.executable, "-m", "pqsimd.cli", "run", str(d), *tiny, "--executor", "slurm",
                          "--machines", "debug,second"], capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, run.stdout + run.stderr
    for part in ("debug", "second"):
        sub = d / "machines" / part
        subs = json.loads((sub / "slurm" / "submissions.json").read_text())["submissions"]
        assert f"--partition={part}" in (sub / "slurm" / "submit-1.sbatch").read_text() and subs
        assert len(list((sub / "raw").glob("paired.*.parquet"))) == 3 and (sub / "results" / "spins.parquet").exists()
    summary = json.loads((d / "campaign" / "results" / "campaign.json").read_text())
    assert summary["arms"] == ["debug", "second"]
    assert any("same microarchitecture" in s for s in summary["same_microarchitecture"])  # one node, two partitions
    assert (d / "campaign" / "report" / "index.html").exists()
    local = subprocess.run([sys.executable, "-m", "pqsimd.cli", "run", str(tmp_path / "x"), "--machines", "a,b"],
                           capture_output=True, text=True)
    assert local.returncode == 2 and "--executor slurm" in local.stderr and len(local.stderr.strip().splitlines()) == 1


def test_jobs_that_ran_on_another_cpu_than_the_manifest_says_are_not_named_by_it(base, tmp_path):
    """On SLURM the manifest describes the submit host; when the jobs' CPU differs, the machine is
    not named from the manifest."""
    other = synthetic_member(tmp_path / "node", 9, ZEN5_MACHINE)
    m = json.loads((other / "manifest.json").read_text())
    m["jobs"] = {"paired.ml-kem-512.0": {"cpu_model": "AMD EPYC 7742 64-Core Processor", "hostname": "n1",
                                         "calibration": {"granularity": 1}}}
    (other / "manifest.json").write_text(json.dumps(m))
    run_campaign(tmp_path / "c", [base, other], {}, n_boot=200)
    machines = pd.read_parquet(tmp_path / "c" / "results" / "machines.parquet").set_index("study")
    assert machines.loc["zen5", "microarchitecture"] == "Zen 5"
    assert machines.loc["node", "microarchitecture"].startswith("AMD EPYC 7742 64-Core Processor (not identified")
    assert machines.loc["node", "job_hosts"] == "n1"


def test_the_instruction_mix_of_a_machine_sensitive_op_is_carried_where_a_study_has_it(base, tmp_path):
    other = synthetic_member(tmp_path / "emr", 8, EMR_MACHINE, scale={"ntt": 1.3})
    rows = [("ntt", cls, label, b, v, share) for cls, label, b, v, share in
            (("total", "total", 900, 60, 1.0), ("vec_mul", "vector multiply", 0, 20, -0.02),
             ("bmi", "BMI/BMI2/POPCNT", 0, 0, 0.0), ("alu", "scalar ALU", 600, 10, 0.70),
             ("load", "loads", 200, 15, 0.22), ("store", "stores", 100, 15, 0.10))]
    rows += [("basemul", "alu", "scalar ALU", 500, 50, 1.0)]
    mr = pd.DataFrame([{"scheme": "ml-kem-512", "op": op, "compiler": "gcc", "stage": "hand_simd", "baseline": "ref",
                        "variant": "avx2", "class": c, "class_label": lab, "base_count": b, "var_count": v,
                        "ratio": b / v if v else float("nan"), "difference": b - v, "share_of_difference": s, "note": ""}
                       for op, c, lab, b, v, s in rows])
    mr.to_parquet(other / "results" / "mix_ratios.parquet")
    run_campaign(tmp_path / "c", [base, other], {}, n_boot=1000)
    mech = pd.read_parquet(tmp_path / "c" / "results" / "mechanism.parquet")
    assert set(mech["op"]) == {"ntt"}  # basemul has no machine effect: no evidence carried for it
    assert list(mech["class_label"]) == ["scalar ALU", "loads", "stores"]  # the largest shares, total left out
    from pqsimd.report.campaign import write_campaign_report

    html = (write_campaign_report(tmp_path / "c") / "index.html").read_text()
    assert "Instruction mix of the machine-sensitive comparisons" in html and "scalar ALU" in html


def test_ratios_on_a_coarse_lattice_are_never_points(tmp_path):
    """Issue 32: ops of 20 and 8.1 / 8.4 ticks per call read whole (batch 1, no noise to speak of): both
    machines' jobs read 20 and 8, every job ratio is 2.5 on both, and the bootstrap of their quotient
    was the point [1.0, 1.0], missing the true 8.4 / 8.1. Each end now moves out by both arms' row
    resolution; the verdict read off it is the one its decision p-value gives."""
    dirs = []
    for i, (machine, med) in enumerate([(ZEN5_MACHINE, 8.1), (EMR_MACHINE, 8.4)]):
        d = tmp_path / f"s{i}"
        make_synthetic_study(d, schemes=("ml-kem-512",), variants=("ref", "avx2"), ops=("ntt",), jobs=10, spins=20,
                             reps=3, medians={"ref": 20.0, "avx2": med}, spin_sigma=1e-5, rep_sigma=1e-5, seed=i,
                             design="paired", outlier_rate=0.0, overhead=20.0, analysis={"n_boot": 200})
        _records(d, machine)
        m = json.loads((d / "manifest.json").read_text())  # two real runs: their jobs ran at other moments
        m["jobs"]["paired.ml-kem-512.0"].update(hostname=f"host{i}", started=f"2026-11-2{i}T10:00:00+00:00")
        (d / "manifest.json").write_text(json.dumps(m))
        analyze_study(d)
        dirs.append(d)
    run_campaign(tmp_path / "c", dirs, {}, n_boot=500)
    r = _ratios(tmp_path / "c").iloc[0]
    sp = pd.read_parquet(tmp_path / "c" / "results" / "speedups.parquet")
    assert (sp["resolution"] > 0).all() and r["ratio"] == 1.0
    assert math.log1p(r["resolution"]) == pytest.approx(np.log1p(sp["resolution"]).sum())
    assert r["ci_low"] < r["ratio"] < r["ci_high"] and r["ci_low"] < 8.4 / 8.1 < r["ci_high"]
    assert math.log(r["ci_high"] / r["ci_low"]) >= 2 * math.log1p(r["resolution"]) - 1e-12
    assert r["verdict"] == "~"  # the clocks cannot tell 2.5 from 2.5 x 1.037


def test_decision_p_with_a_resolution_is_where_the_widened_interval_gives_a_verdict():
    rng = np.random.default_rng(4)
    band = np.log1p(0.02)
    for _ in range(60):
        res = float(rng.choice([0.001, 0.005, 0.015, 0.03]))
        boot = rng.normal(rng.uniform(-0.08, 0.08), rng.uniform(0.002, 0.03), size=1000)
        p = decision_p(boot, band, res)
        grid = np.linspace(0.001, 1.0, 1000)
        for g in grid[::100]:  # the percentile interval, each end moved out by res
            plain = percentile_interval(boot, g)
            assert percentile_interval(boot, g, res) == pytest.approx((plain[0] - res, plain[1] + res))
        gives = [verdict_of(*percentile_interval(boot, g, res), band) != "~" for g in grid]
        first = next((g for g, ok in zip(grid, gives) if ok), None)
        if p >= 1.0:
            assert first is None or first >= 0.998
        else:
            assert first is not None and abs(first - p) <= 0.0021, (p, first, res)


# -- members whose evidence cannot be trusted are refused (issue 36) --------------------------------------

def _cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pqsimd.cli", *map(str, args)], capture_output=True, text=True)


def _one_line(cli: subprocess.CompletedProcess) -> str:
    assert cli.returncode == 2 and "Traceback" not in cli.stderr, cli.stderr
    assert len(cli.stderr.strip().splitlines()) == 1, cli.stderr
    return cli.stderr


def test_a_member_whose_spins_disagree_with_its_comparisons_gives_no_ratio(base, tmp_path):
    """spins.parquet edited (or taken from another analysis): the job medians no longer give the
    study's own speedups, so no ratio and no verdict may be computed from them."""
    other = synthetic_member(tmp_path / "emr", 11, EMR_MACHINE)
    spins = pd.read_parquet(other / "results" / "spins.parquet")
    avx2_ntt = (spins["variant"] == "avx2") & (spins["op"] == "ntt")
    spins.loc[avx2_ntt, "value"] *= 83  # a speedup of 0.36 instead of 30
    spins.to_parquet(other / "results" / "spins.parquet")
    said = _one_line(_cli("campaign", tmp_path / "c", base, other))
    assert "emr" in said and "spins.parquet disagrees with its own comparisons" in said and "ntt" in said
    assert not (tmp_path / "c" / "results").exists()


def test_a_copy_of_a_study_is_not_a_second_machine(base, tmp_path):
    copy = tmp_path / "zen5-again"
    shutil.copytree(base, copy)
    said = _one_line(_cli("campaign", tmp_path / "c", base, copy))
    assert "zen5-again" in said and "it is a copy, not another machine" in said
    # a study whose spins differ but whose manifest records a job run of the first: the same measurements
    first = tmp_path / "zen5"
    shutil.copytree(base, first)
    other = synthetic_member(tmp_path / "emr", 12, EMR_MACHINE)
    for d in (first, other):
        m = json.loads((d / "manifest.json").read_text())
        m["jobs"]["paired.ml-kem-512.0"].update(hostname="vm", started="2026-11-26T21:08:43.292754+00:00")
        (d / "manifest.json").write_text(json.dumps(m))
    said = _one_line(_cli("campaign", tmp_path / "d", first, other))
    assert "job paired.ml-kem-512.0 run on vm at 2026-11-26T21:08:43.292754+00:00 is in both" in said


@pytest.mark.parametrize("summary, needle", [
    (lambda s: s | {"schema_version": "5"}, "schema_version '5' is not a results schema number"),
    (lambda s: s | {"schema_version": 99}, "written by a newer pqsimd (results schema 99"),
    (lambda s: s | {"schema_version": 3}, "written by an older pqsimd (results schema 3)"),
    (lambda s: None, "has no summary.json"),
    (lambda s: "{not json", "cannot be read"),
])
def test_a_member_with_a_missing_or_foreign_summary_is_refused_in_one_line(base, tmp_path, summary, needle):
    other = tmp_path / "emr"
    shutil.copytree(base, other)
    path = other / "results" / "summary.json"
    new = summary(json.loads(path.read_text()))
    if new is None:
        path.unlink()
    else:
        path.write_text(new if isinstance(new, str) else json.dumps(new))
    said = _one_line(_cli("campaign", tmp_path / "c", base, other))
    assert needle in said and str(other / "results") in said
    if needle == "has no summary.json":
        assert "older pqsimd" not in said


def test_a_member_that_is_a_symlink_loop_is_refused_in_one_line(base, tmp_path):
    loop = tmp_path / "loop"
    loop.symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(loop)
    said = _one_line(_cli("campaign", tmp_path / "c", base, loop))
    assert "symbolic link loop" in said and str(loop) in said


def _lay_out(d: Path, factor: float = 1.4) -> None:
    """Make a synthetic study's jobs laid out in two copies (spin s: copy s mod 2) with avx2's copy 1
    `factor` slower, and analyse it again: a job's value is then the geometric mean of its copies'."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for f in sorted((d / "raw").glob("*.parquet")):
        t = pq.read_table(f)
        df = t.to_pandas()
        df["layout"] = (df["spin"] % 2).astype("int16")
        slow = (df["layout"] == 1) & (df["variant"] == "avx2") & (df["metric"] == "ticks")
        df.loc[slow, "raw"] = (np.round((df.loc[slow, "raw"] - df.loc[slow, "null_raw"]) * factor)
                               + df.loc[slow, "null_raw"]).astype("int64")
        df.loc[slow, "ticks"] = df.loc[slow, "raw"]
        df.loc[slow, "per_call"] = (df.loc[slow, "raw"] - df.loc[slow, "null_raw"]) / df.loc[slow, "batch"]
        pq.write_table(pa.Table.from_pandas(df, schema=t.schema, preserve_index=False), f)
    analyze_study(d)


def test_laid_out_members_are_rebuilt_as_analyze_takes_their_jobs(tmp_path):
    """Jobs timed in two laid-out copies: analyze takes a job's value as the geometric mean of its
    copies' medians; the campaign rebuilds the same value, so its evidence agrees with the rows (and
    a campaign of such studies, the default since layouts, is not refused as inconsistent)."""
    a = synthetic_member(tmp_path / "zen5", 13, ZEN5_MACHINE)
    b = synthetic_member(tmp_path / "emr", 14, EMR_MACHINE)
    for d in (a, b):
        _lay_out(d)
    run_campaign(tmp_path / "c", [a, b], {}, n_boot=500)
    sp = pd.read_parquet(tmp_path / "c" / "results" / "speedups.parquet")
    assert (sp["note"] == "").all() and np.allclose(sp["rebuilt"], sp["speedup"], rtol=1e-9)


def test_a_mailed_member_without_spins_is_told_to_copy_its_results_again(base, tmp_path):
    """A study sent without raw/ cannot be analysed again: the way out is its whole results/."""
    other = tmp_path / "emr"
    shutil.copytree(base, other, ignore=shutil.ignore_patterns("raw"))
    (other / "results" / "spins.parquet").unlink()
    said = _one_line(_cli("campaign", tmp_path / "c", base, other))
    assert "has no results/spins.parquet; copy the study's whole results/ again" in said


@pytest.mark.parametrize("version, needle", [(1, "written by an older pqsimd"), (99, "is not one this pqsimd reads"),
                                             ("2", "is not one this pqsimd reads")])
def test_campaign_results_of_another_schema_are_not_shown(base, tmp_path, version, needle):
    """A campaign written before members were checked may hold ratios from inconsistent evidence (its
    show printed 0.498 "smaller" beside speedups of 41.5x and 41.7x): show and report ask for it again."""
    other = synthetic_member(tmp_path / "emr", 15, EMR_MACHINE)
    run_campaign(tmp_path / "c", [base, other], {}, n_boot=200)
    path = tmp_path / "c" / "results" / "campaign.json"
    path.write_text(json.dumps(json.loads(path.read_text()) | {"schema_version": version}))
    said = _one_line(_cli("show", tmp_path / "c"))
    assert needle in said and "pqsimd campaign" in said
