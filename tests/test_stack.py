"""`--metric stack,size`: an op's peak stack on a painted private stack and the code bytes of its call
tree, exact on the stackfix fixture (tests/fixtures/families/stackfix.toml) natively and under
qemu-aarch64; the oracle is independent of the metric: the fixture's known array sizes, and nm -S of
the fixture's own symbols."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pqsimd import codesize, isa, layout, store
from pqsimd.errors import PqsimdError
from pqsimd.run import stack as stack_run
from pqsimd.studydir import StudyDir

from conftest import one_line_error, run_cli

FAMILIES = Path(__file__).parent / "fixtures" / "families"
ENV = {**os.environ, "PQSIMD_FAMILY_PATH": str(FAMILIES)}
ARRAY = 4096  # stackfix_ops.c FIXTURE_STACK
# What each ISA's ABI adds to the fixture's arrays, from the ABI, not from the metric:
#   x86-64  a function is entered with rsp = 8 mod 16 (the return address), gcc aligns a >= 16-byte
#           array to 16: 8 bytes between the return address and the array stay unwritten (and count,
#           they are below the deepest byte written); a call pushes its 8-byte return address
#   aarch64 bl writes no stack; a non-leaf function saves x29 and x30 (16 bytes)
EXPECTED = {
    "x86_64": {"stack_4096": ARRAY + 8, "stack_call": (ARRAY + 8) + (1024 + 8 + 8), "empty": 0},
    "aarch64": {"stack_4096": ARRAY, "stack_call": ARRAY + (1024 + 16), "empty": 0},
}
FUNCTIONS = {"stack_4096": ["pqsimd_fixture_stack_4096"],
             "stack_call": ["pqsimd_fixture_stack_call", "pqsimd_fixture_stack_4096"],
             "table_sum": ["pqsimd_fixture_table_sum", "pqsimd_fixture_table_helper"],
             "empty": ["op_empty"]}
TABLE_BYTES = 64 * 4  # stackfix_ops.c's static const uint32_t table[64]
# gcc's frame sizes (.su) of the fixture's functions, from the fixture's C and the ABI, not from the metric:
#   x86-64  the frame counts the caller's 8-byte return address; stack_4096 is a leaf, so gcc puts the
#           bottom of its array in the 128-byte red zone below the stack pointer (unreserved, not in the
#           frame): 120 bytes of it, as the 16-aligned array ends 8 bytes under the return address (rsp is
#           8 mod 16 on entry); stack_call calls, so it reserves its 1024 bytes + 8 to keep the call
#           16-aligned
#   aarch64 no return address on the stack, no red zone; a non-leaf saves x29 and x30 (16 bytes)
FRAMES = {
    "x86_64": {"pqsimd_fixture_stack_4096": ARRAY + 8 + 8 - 120, "pqsimd_fixture_stack_call": 1024 + 8 + 8},
    "aarch64": {"pqsimd_fixture_stack_4096": ARRAY, "pqsimd_fixture_stack_call": 1024 + 16},
}
BOUND = {  # the static bound per op: the worst path's frames - the op's return address + the red zone
    "x86_64": {"stack_4096": (ARRAY + 8 + 8 - 120) - 8 + 128, "stack_call": (1040 + ARRAY + 8 + 8 - 120) - 8 + 128},
    "aarch64": {"stack_4096": ARRAY, "stack_call": 1040 + ARRAY},
}


def _study(d: Path, *extra: str) -> Path:
    r = run_cli("run", d, "--preset", "quick", "--schemes", "stack-fixture", "--variants", "ref", "--metric", "stack,size",
                *extra, env=ENV)
    assert r.returncode == 0, r.stderr
    return d


@pytest.fixture(scope="module")
def native(tmp_path_factory):
    return _study(tmp_path_factory.mktemp("stack") / "s")


@pytest.fixture(scope="module")
def a64(tmp_path_factory):
    a = isa.get("aarch64")
    if not (shutil.which(a.qemu) and shutil.which(f"{a.gnu_triple}-gcc")):
        pytest.fail(f"{a.qemu} or {a.gnu_triple}-gcc is not installed (make test installs them as root: "
                    "tools/test-deps.sh)", pytrace=False)
    return _study(tmp_path_factory.mktemp("stack-a64") / "s", "--isa", "aarch64")


def _raw(d: Path, metric: str):
    t = pq.read_table(StudyDir(d).raw_path(f"ref.gcc.stack-fixture.{metric}"))
    return t.to_pandas(), json.loads(t.schema.metadata[store.JOB_METADATA_KEY])


def _nm_sizes(lib: Path, nm: str) -> dict[str, int]:
    out = subprocess.run([nm, "-S", "--defined-only", str(lib)], capture_output=True, text=True, check=True).stdout
    return {p[3]: int(p[1], 16) for p in (l.split() for l in out.splitlines()) if len(p) == 4}


def _check(d: Path, isa_name: str, nm: str) -> None:
    df, rec = _raw(d, "stack")
    got = dict(zip(df.op, df.per_call))
    assert {op: got[op] for op in EXPECTED[isa_name]} == EXPECTED[isa_name]
    assert all(a == b for a, b in rec["paints"].values())  # both paints see the same deepest byte
    assert (df.raw - df.per_call == rec["calibration"]["bytes"]).all() and rec["calibration"]["op"] == "empty"
    df, rec = _raw(d, "size")
    nm_size = _nm_sizes(StudyDir(d).variant_path("ref.gcc.stackfix"), nm)
    want = {op: sum(nm_size[f] for f in fs) for op, fs in FUNCTIONS.items()}
    want["table_sum"] += TABLE_BYTES
    assert dict(zip(df.op, df.per_call)) == want
    assert rec["parts"]["table_sum"]["rodata"] == TABLE_BYTES and rec["parts"]["stack_call"]["functions"] == 2


def _su(d: Path) -> dict[str, int]:
    """function -> static frame bytes, read from the side directory's .su files (gcc's own words)."""
    out = {}
    for su in (StudyDir(d).stack_usage_dir("ref.gcc.stackfix")).glob("*.su"):
        for line in su.read_text().splitlines():
            where, n, kind = line.split("\t")
            assert kind == "static", line
            out[where.rsplit(":", 1)[-1]] = int(n)
    return out


def _check_static(d: Path, isa_name: str) -> None:
    df, rec = _raw(d, "stack")
    painted = dict(zip(df.op, df.per_call))
    su = _su(d)
    assert {f: su[f] for f in FRAMES[isa_name]} == FRAMES[isa_name]
    abi = isa.get(isa_name).stack
    for op, st in rec["static"].items():
        assert st["available"] and st["upper_bound"] and not st["unseen"], (op, st)
        assert st["bytes"] >= painted[op], (op, st["bytes"], painted[op])  # a bound above what was painted
        assert st["frames"] == sum(su[f] for f, _ in st["path"]) == sum(n for _, n in st["path"])
        assert st["bytes"] == st["frames"] - abi["return_address"] + abi["red_zone"]
        assert st["minus_painted"] == st["bytes"] - painted[op]
    assert [f for f, _ in rec["static"]["stack_call"]["path"]] == FUNCTIONS["stack_call"]
    assert [f for f, _ in rec["static"]["table_sum"]["path"]] == FUNCTIONS["table_sum"]
    # the bound is the frames as the C and the ABI give them: x86-64 stack_4096 = its frame - the op's return
    # address + the whole red zone, of which the array leaves 8 bytes unwritten; aarch64 has nothing unwritten
    assert {op: rec["static"][op]["bytes"] for op in BOUND[isa_name]} == BOUND[isa_name]


def _check_build_untouched(d: Path) -> None:
    """The side compile wrote only under DIR/stack-usage: the build's cache folder holds no .su or .ci, and
    the installed library is the bytes the gate passed."""
    sd = StudyDir(d)
    man = json.loads((d / "manifest.json").read_text())
    folder = Path(man["builds"]["ref.gcc.stackfix"]["link"][man["builds"]["ref.gcc.stackfix"]["link"].index("-o") + 1]).parent
    assert folder.is_dir() and not list(folder.glob("*.su")) and not list(folder.glob("*.ci"))
    assert store.sha256_file(sd.variant_path("ref.gcc.stackfix")) == sd.read_gate("ref.gcc.stackfix")["binary_sha256"]
    assert json.loads((sd.stack_usage_dir("ref.gcc.stackfix") / "done.json").read_text())["ci"]


def test_the_static_bound_is_above_the_painted_peak_with_the_fixtures_frames(native):
    _check_static(native, isa.host().name)
    _check_build_untouched(native)


def test_the_static_bound_under_qemu_aarch64(a64):
    _check_static(a64, "aarch64")
    _check_build_untouched(a64)


def test_the_fixture_stack_and_size_are_exact_natively(native):
    assert isa.host().name in EXPECTED
    _check(native, isa.host().name, "nm")


def test_the_fixture_stack_and_size_are_exact_under_qemu_aarch64(a64):
    _check(a64, "aarch64", f"{isa.get('aarch64').gnu_triple}-nm" if shutil.which("aarch64-linux-gnu-nm") else "nm")
    _, rec = _raw(a64, "stack")
    assert rec["emulator"]["qemu"] == isa.get("aarch64").qemu


def test_rerun_resumes_and_the_manifest_records_both(native):
    sd = StudyDir(native)
    before = {p.name: p.stat().st_mtime_ns for p in sd.raw_files()}
    r = run_cli("run", native, "--preset", "quick", "--schemes", "stack-fixture", "--variants", "ref", "--metric",
                "stack,size", env=ENV)
    assert r.returncode == 0, r.stderr
    assert "stack: 0 jobs to run, 1 already finished" in r.stderr
    assert {p.name: p.stat().st_mtime_ns for p in sd.raw_files()} == before
    m = json.loads((native / "manifest.json").read_text())["metrics"]
    assert m["stack"]["status"] == m["size"]["status"] == "ok"


def test_a_laid_out_copy_has_the_sizes_of_its_build(native, tmp_path):
    sd = StudyDir(native)
    lib = sd.variant_path("ref.gcc.stackfix")
    link = json.loads((native / "manifest.json").read_text())["builds"]["ref.gcc.stackfix"]["link"]
    copy = tmp_path / "copy.so"
    layout.relink(link, 12345, copy)
    assert store.sha256_file(copy) != store.sha256_file(lib)  # another layout
    sizes = {}
    for so in (lib, copy):
        offsets = layout.op_offsets(sd.driver_path, so, "stack-fixture")
        sizes[so] = {op: (s.code, s.rodata, s.functions, s.objects) for op, s in codesize.op_sizes(so, offsets).items()}
    assert sizes[lib] == sizes[copy]


def test_an_unknown_op_is_one_line(native):
    sd = StudyDir(native)
    with pytest.raises(PqsimdError) as e:
        stack_run.measure_stack(sd.driver_path, sd.variant_path("ref.gcc.stackfix"), "stack-fixture", ["no_such_op"])
    assert str(e.value).endswith("driver: unknown op no_such_op") and "\n" not in str(e.value)


def test_a_misspelt_metric_is_one_line(tmp_path):
    one_line_error(run_cli("run", tmp_path / "s", "--metric", "stak", "--schemes", "ml-kem-512"), "stak")
