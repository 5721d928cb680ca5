"""riscv64 under emulation: our QEMU plugin counts exactly (hand-written loops whose counts are known,
compressed and vector instructions among them, at several vector lengths; QEMU's own execution log
as a second method), the markers are what data/isas.toml says and no compiler emits them otherwise,
the driver cross-builds and its riscv64 timer runs under qemu-user (function only: never a timing),
and the vector length as a setting of the ISA."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import require_tool

from pqsimd import isa
from pqsimd.errors import PqsimdError
from pqsimd.isa import qemu

FIXTURES = Path(__file__).parent / "fixtures"
RV = isa.get("riscv64")
CROSS_GCC = f"{RV.gnu_triple}-gcc"

if not (shutil.which(RV.qemu) and shutil.which(CROSS_GCC)):  # make test installs them: a failure, not a skip
    require_tool(f"{RV.qemu} or {CROSS_GCC} is not installed (make test installs them as root: tools/test-deps.sh)")


@pytest.fixture(scope="session")
def loop_program(tmp_path_factory):
    out = tmp_path_factory.mktemp("rv64") / "loop"
    d = FIXTURES / "riscv64"
    subprocess.run([CROSS_GCC, "-O1", "-march=rv64gcv", "-o", str(out), str(d / "loop_main.c"), str(d / "loop.S")],
                   check=True)
    return str(out)


@pytest.mark.parametrize("n", [1, 1000, 123457])
def test_plugin_counts_the_compressed_loop_exactly(loop_program, n):
    first = qemu.count(RV, [loop_program, "loop", str(n)])
    assert (first.insns, first.windows) == (2 * n + 2, 1)
    assert qemu.count(RV, [loop_program, "loop", str(n)]) == first  # repeated: identical


def test_plugin_splits_blocks_at_markers_and_sums_windows(loop_program):
    assert qemu.count(RV, [loop_program, "three", "0"]).insns == 3
    c = qemu.count(RV, [loop_program, "loop", "5", "three", "0", "loop", "7"])
    assert (c.insns, c.windows) == (12 + 3 + 16, 3)


@pytest.mark.parametrize("vlen", [128, 256, 512, 1024])
def test_vector_loop_count_follows_the_vector_length(loop_program, vlen):
    """11 instructions per strip of VLEN/32 elements: the same binary counts what the vector length
    says, and computes the right sums (the program checks them) at every length."""
    for n in (1, 100, 1000):
        strips = -(-n // (vlen // 32))
        assert qemu.count(RV.at(vlen), [loop_program, "vadd", str(n)]).insns == 11 * strips, (vlen, n)


def test_vector_code_without_the_vector_extension_dies_of_sigill(loop_program):
    scalar = RV.at(0)
    assert "v=false" in scalar.qemu_cpu and scalar.vlen == 0
    ok = subprocess.run([*qemu.emulator(scalar), loop_program, "loop", "3"], capture_output=True)
    assert ok.returncode == 0  # scalar code runs
    dead = subprocess.run([*qemu.emulator(scalar), loop_program, "vadd", "3"], capture_output=True)
    assert dead.returncode == -4 or dead.returncode == 128 + 4  # SIGILL


def test_histogram_per_instruction(loop_program):
    n = 1000
    c = qemu.count(RV.at(512), [loop_program, "loop", str(n), "three", "0", "vadd", "64"], hist=True)
    assert c.insns == 2 * n + 2 + 3 + 11 * 4 and sum(r.count for r in c.hist) == c.insns  # 64 / (512 / 32) strips
    by_text: dict[str, list[int]] = {}
    for r in c.hist:
        by_text.setdefault(r.disas.split()[0], []).append(r.count)
    assert by_text["bnez"] == [n, 4] and by_text["vadd.vv"] == [4] and by_text["vsetvli"] == [4]
    assert sorted(by_text["vle32.v"]) == [4, 4]
    assert {r.symbol for r in c.hist} == {"count_loop", "count_three", "vadd_loop"}  # nothing outside the windows
    assert all(not r.disas.startswith("slti") for r in c.hist)  # markers are not counted


def test_plugin_refuses_unbalanced_markers(loop_program):
    with pytest.raises(qemu.CountError, match="unbalanced"):
        qemu.count(RV, [loop_program, "stray", "0", "loop", "3"])
    with pytest.raises(qemu.CountError, match="no counting window"):
        qemu.count(RV, [loop_program])


def test_plugin_without_markers_refuses_to_start(loop_program, tmp_path):
    """The plugin knows no ISA: without the marker words it says what it needs."""
    proc = subprocess.run([*qemu.emulator(RV), "-plugin", f"{qemu.plugin()},outfile={tmp_path / 'o'}",
                           loop_program, "loop", "3"], capture_output=True, text=True)
    assert proc.returncode != 0 and "start= and stop=" in proc.stderr


def test_exec_log_agrees_with_the_formula(loop_program):
    """The second method, independent of the plugin, on the same known loops."""
    assert qemu.exec_log_count(RV.at(256), [loop_program, "loop", "1000", "three", "0", "vadd", "100"]) == \
        [2002, 3, 11 * 13]


# --- the markers: what data/isas.toml says, and never emitted by a compiler -------------------------

@pytest.mark.parametrize("name", ["aarch64", "riscv64"])
def test_marker_words_are_the_headers_assembly(name, tmp_path):
    """count_marker.h's markers, compiled by the ISA's cross gcc, are the words the plugin is given."""
    target = isa.get(name)
    src = tmp_path / "m.c"
    src.write_text(f'#include "{qemu.MARKER_HEADER}"\nvoid f(void) {{ PQSIMD_COUNT_START(); PQSIMD_COUNT_STOP(); }}\n')
    obj = tmp_path / "m.o"
    subprocess.run([f"{target.gnu_triple}-gcc", "-O2", "-c", str(src), "-o", str(obj)], check=True)
    words = [int(w, 16) for w in re.findall(r"^\s*[0-9a-f]+:\s+([0-9a-f]{8})\s", subprocess.run(
        [f"{target.gnu_triple}-objdump", "-d", str(obj)], capture_output=True, text=True, check=True).stdout, re.M)]
    assert list(qemu.marker_words(target)) == words[:2]


# --- the driver, cross-built by the build stage ------------------------------------------------------

@pytest.fixture(scope="session")
def rv_driver():
    from pqsimd import build

    driver = build.build_driver(RV)
    assert driver.compiler.command == CROSS_GCC
    return driver


def run_rv(argv, env=None, vlen=None):
    return subprocess.run([*qemu.emulator(RV.at(vlen)), *map(str, argv)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


def test_driver_is_riscv64_and_calibrates_under_qemu(rv_driver):
    assert b"\xf3\x00" == rv_driver.path.read_bytes()[18:20]  # ELF e_machine EM_RISCV
    proc = run_rv([rv_driver.path, "calibrate"])
    assert proc.returncode == 0, proc.stderr
    cal = json.loads(proc.stdout)
    assert cal["timer"]["name"] == "rdcycle" and cal["timer"]["not_used"] == ""  # qemu-user lets it read
    assert cal["granularity"] >= 1 and cal["tsc_hz"] > 0 and cal["core_per_tsc"] > 0
    forced = json.loads(run_rv([rv_driver.path, "calibrate"], env={"PQSIMD_TIMER": "rdtime"}).stdout)
    assert forced["timer"]["name"] == "rdtime"


# --- the vector length as a setting of the ISA ---------------------------------------------------------

def test_vector_length_setting():
    assert RV.vlen == RV.vector["default"] and f"vlen={RV.vlen}" in RV.qemu_cpu
    assert RV.at(512).qemu_cpu == "rv64,v=true,vlen=512,vext_spec=v1.0" and RV.at(512).vlen == 512
    for bad in (64, 96, 2048, 300):
        with pytest.raises(PqsimdError, match="power of two from 128 to 1024") as e:
            RV.at(bad)
        assert "\n" not in str(e.value)
    with pytest.raises(PqsimdError, match="x86_64 has no vector length"):
        isa.get("x86_64").at(256)
    assert isa.get("x86_64").at(None) == isa.get("x86_64") and isa.with_vector() == ["riscv64"]


def test_recorded_mca_models_match_llvm_mca_19(tmp_path):
    """data/mca_models.toml's riscv64 cores against llvm-mca 19 itself (the first resource of each
    model's resource-pressure view), and the cores of data/mix_riscv64.toml all have such a model."""
    from pqsimd.isa import mca
    from pqsimd.run.classify import config

    mca_bin = shutil.which("llvm-mca-19")
    assert mca_bin, "llvm-mca-19 is not installed (make test installs it: tools/test-deps.sh)"
    sample = tmp_path / "s.s"
    sample.write_text("vsetvli a5, a4, e16, m1, ta, ma\nvle16.v v8, (a0)\nvmul.vv v1, v2, v3\nadd a0, a0, a1\n")
    cpus = config(RV.name).mca["known_cpus"]
    for cpu in cpus:
        out = subprocess.run([mca_bin, f"-mtriple={RV.mca_triple}", f"-mcpu={cpu}", str(sample)], capture_output=True,
                             text=True, check=True).stdout
        first = re.search(r"^Resources:\n\[[\d.]+\]\s+- (\S+)", out, re.M).group(1)
        assert first == mca.model("llvm-mca 19.1.7", RV.name, cpu)["resource"], cpu


def test_captions_say_emulated_and_the_vector_length():
    from pqsimd.results import counting_tool

    rv = {"isa": {"name": RV.name, "counting": "qemu-plugin", "native": False, "vlen": 512}}
    assert counting_tool(rv) == "our QEMU plugin (emulated, VLEN 512)"
