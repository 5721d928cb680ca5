"""aarch64 under emulation: our QEMU plugin counts exactly (a hand-written loop whose count is known,
and a driver op checked against QEMU's own execution log), the driver cross-builds and its aarch64
timer path runs under qemu-user (function only: never a timing), the ISA data, and the fetch of
QEMU's plugin header."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import require_tool

from pqsimd import catalog, isa
from pqsimd.errors import PqsimdError
from pqsimd.isa import qemu

FIXTURES = Path(__file__).parent / "fixtures"
A64 = isa.get("aarch64")
CROSS_GCC = f"{A64.gnu_triple}-gcc"

if not (shutil.which(A64.qemu) and shutil.which(CROSS_GCC)):  # make test installs them: a failure, not a skip
    require_tool(f"{A64.qemu} or {CROSS_GCC} is not installed (make test installs them as root: tools/test-deps.sh)")


@pytest.fixture(scope="session")
def loop_program(tmp_path_factory):
    out = tmp_path_factory.mktemp("a64") / "loop"
    d = FIXTURES / "aarch64"
    subprocess.run([CROSS_GCC, "-O1", "-o", str(out), str(d / "loop_main.c"), str(d / "loop.S")], check=True)
    return str(out)


@pytest.mark.parametrize("n", [1, 1000, 123457])
def test_plugin_counts_the_loop_exactly(loop_program, n):
    first = qemu.count(A64, [loop_program, "loop", str(n)])
    assert (first.insns, first.windows) == (2 * n + 2, 1)
    assert qemu.count(A64, [loop_program, "loop", str(n)]) == first  # repeated: identical


def test_plugin_splits_blocks_at_markers_and_sums_windows(loop_program):
    # both markers inside one translation block; then three windows add up
    assert qemu.count(A64, [loop_program, "three", "0"]).insns == 3
    c = qemu.count(A64, [loop_program, "loop", "5", "three", "0", "loop", "7"])
    assert (c.insns, c.windows) == (12 + 3 + 16, 3)


def test_histogram_per_instruction(loop_program):
    n = 1000
    c = qemu.count(A64, [loop_program, "loop", str(n), "three", "0"], hist=True)
    assert c.insns == 2 * n + 2 + 3 and sum(r.count for r in c.hist) == c.insns
    by_text = {}
    for r in c.hist:
        by_text.setdefault(r.disas.split()[0], []).append(r.count)
    assert by_text["subs"] == [n] and sorted(by_text["add"]) == [1, 1, 1]
    assert {r.symbol for r in c.hist} == {"count_loop", "count_three"}  # nothing outside the windows
    assert all(not r.disas.startswith("hint") for r in c.hist)  # markers are not counted


def test_plugin_refuses_unbalanced_markers(loop_program):
    with pytest.raises(qemu.CountError, match="unbalanced"):
        qemu.count(A64, [loop_program, "stray", "0", "loop", "3"])
    with pytest.raises(qemu.CountError, match="no counting window"):
        qemu.count(A64, [loop_program])


def test_exec_log_agrees_with_the_formula(loop_program):
    """The second method, independent of the plugin, on the same known loop."""
    assert qemu.exec_log_count(A64, [loop_program, "loop", "1000", "three", "0"]) == [2002, 3]


# --- the driver, cross-built by the build stage with the aarch64 toolchain ----------------------------

@pytest.fixture(scope="session")
def a64_builds(tree):
    """The aarch64 driver and the SHAKE-256 fixture family's `ref` variant, built by build.py for
    the ISA (the cross gcc as the fixed toolchain and as the compiler under test)."""
    from pqsimd import build

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PQSIMD_FAMILY_PATH", str(FIXTURES / "families"))
        driver = build.build_driver(A64)
        fam = catalog.families()["shake"]
        variant = build.build_variant(tree, fam, catalog.builtin_variants()["ref"], build.find_compiler("gcc", A64),
                                      driver)
    assert driver.compiler.command == CROSS_GCC and variant.compiler.isa == A64.name
    return driver, variant


def run_a64(argv, env=None):
    return subprocess.run([*qemu.emulator(A64), *map(str, argv)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


def test_driver_is_aarch64_and_calibrates_under_qemu(a64_builds):
    driver, _ = a64_builds
    assert b"\xb7\x00" == driver.path.read_bytes()[18:20]  # ELF e_machine EM_AARCH64
    proc = run_a64([driver.path, "calibrate"])
    assert proc.returncode == 0, proc.stderr
    cal = json.loads(proc.stdout)
    # qemu-user has no perf_event_open: the generic timer is read, and the JSON says why
    assert cal["timer"]["name"] == "cntvct" and cal["timer"]["cntfrq_hz"] > 0
    assert "perf_event_open ENOSYS" in cal["timer"]["not_used"]
    assert cal["granularity"] >= 1 and cal["tsc_hz"] > 0 and cal["core_per_tsc"] > 0


def test_driver_survives_a_cycle_counter_that_traps(a64_builds):
    """mrs pmccntr_el0 without EL0 access raises SIGILL (as on most kernels): caught, recorded, and
    the generic timer used."""
    driver, _ = a64_builds
    proc = run_a64([driver.path, "calibrate"], env={"PQSIMD_TIMER": "pmccntr-direct"})
    assert proc.returncode == 0, proc.stderr
    timer = json.loads(proc.stdout)["timer"]
    assert timer["name"] == "cntvct" and timer["not_used"] == "pmccntr-direct: mrs pmccntr_el0 raised SIGILL"


def test_driver_runs_a_job_spec_under_qemu(a64_builds):
    driver, variant = a64_builds
    spec = (f"design paired\nscheme shake-256\nvariant {variant.library}\nvariant {variant.library}\ncpu -1\nseed 7\n"
            "warmup_ns 1000\ntarget 100\nop shake_32 2 2 0 auto 3\n")
    proc = subprocess.run([*qemu.emulator(A64), str(driver.path), "run", "-"], input=spec, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert json.loads(lines[0])["timer"]["name"] == "cntvct"
    rows = [line.split("\t") for line in lines[1:]]
    assert len(rows) == 2 * 2 * 2 and {r[5] for r in rows if r[1] == "1"} == {"3"}  # spins x reps x variants


def test_driver_count_plugin_matches_the_exec_log(a64_builds):
    """`driver count` of a real op: the plugin's window equals QEMU's exec log instruction by
    instruction, repeats identically, and the per-call difference is exact."""
    driver, variant = a64_builds
    argv = [str(driver.path), "count", str(variant.library), "shake-256", "shake_32"]
    c2 = qemu.count(A64, [*argv, "2"])
    assert qemu.exec_log_count(A64, [*argv, "2"]) == [c2.insns]
    assert qemu.count(A64, [*argv, "2"]) == c2
    c10 = qemu.count(A64, [*argv, "10"])
    assert (c10.insns - c2.insns) % 8 == 0 and c10.insns > c2.insns  # the same work per call


# --- the ISA data, and the header fetch ----------------------------------------------------------------

def test_isa_data():
    assert isa.host().native and not A64.native  # this suite runs on x86-64
    assert A64.qemu_cpu and A64.counting != isa.host().counting
    with pytest.raises(PqsimdError, match="unknown ISA 'sparc'"):
        isa.get("sparc")


def test_missing_emulator_is_one_line(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(PqsimdError, match=r"qemu-aarch64 not found: .*apt-get install qemu-user") as e:
        A64.launcher()
    assert "\n" not in str(e.value)


def test_plugin_header_fetch_is_cached_and_idempotent(tmp_path):
    """From an empty cache: --cached refuses in one line naming the command; a fetch brings exactly
    QEMU's header (from the Debian source of the installed qemu-user); a second run is instant."""
    env = {**os.environ, "PQSIMD_CACHE": str(tmp_path)}
    script = str(qemu.FETCH_HEADER)
    miss = subprocess.run(["bash", script, "--cached"], capture_output=True, text=True, env=env)
    assert miss.returncode == 1 and miss.stdout == "" and len(miss.stderr.strip().splitlines()) == 1
    assert f"run `bash {script}`" in miss.stderr
    got = subprocess.run(["bash", script], capture_output=True, text=True, env=env, timeout=600)
    assert got.returncode == 0, got.stderr
    header = Path(got.stdout.strip())
    assert header.is_relative_to(tmp_path) and "#define QEMU_PLUGIN_VERSION" in header.read_text()
    assert "apt-get source qemu=" in (header.parent / "SOURCE").read_text()
    assert sorted(p.name for p in (tmp_path / "qemu-src").iterdir()) == [".lock", header.parent.name]  # no leftovers
    t0 = time.monotonic()
    again = subprocess.run(["bash", script], capture_output=True, text=True, env=env)
    assert again.stdout == got.stdout and time.monotonic() - t0 < 5


# --- llvm-mca: the model each -mcpu name really uses -----------------------------------------------------

@pytest.mark.parametrize("version", ["16", "19"])
def test_recorded_mca_models_match_the_installed_llvm_mca(version, tmp_path):
    """data/mca_models.toml against llvm-mca itself: each recorded Arm name still shows its model's
    resources (the resource names are the model's own: A57Unit..., CyUnit..., N1Unit...)."""
    from pqsimd.isa import mca

    mca_bin = shutil.which(f"llvm-mca-{version}")
    assert mca_bin, f"llvm-mca-{version} is not installed (make test installs it: tools/test-deps.sh)"
    sample = tmp_path / "s.s"
    sample.write_text("add x0, x0, x1\nmul v0.8h, v1.8h, v2.8h\n")
    for cpu in ("cortex-a72", "neoverse-n1", "neoverse-v1", "neoverse-v2", "cortex-a510", "apple-m1"):
        out = subprocess.run([mca_bin, f"-mtriple={A64.mca_triple}", f"-mcpu={cpu}", str(sample)], capture_output=True,
                             text=True, check=True).stdout
        first = re.search(r"^Resources:\n\[[\d.]+\]\s+- (\S+)", out, re.M).group(1)
        recorded = mca.model(f"llvm-mca {version}.0.0", A64.name, cpu)
        assert first == recorded["resource"], (version, cpu, first, recorded)
    assert mca.label("llvm-mca 19.1.7", A64.name, "apple-m1") == "apple-m1 (Apple Cyclone (A7, 2013) model)"
    assert "Cortex-A57" in mca.label("llvm-mca 16.0.6", A64.name, "neoverse-n1")
    assert "not recorded" in mca.label("llvm-mca 99.0", A64.name, "apple-m1")
