"""The single-step counter (run/stepcount.py, harness/stepcount/stepcount.c) is exact: on loops of known
length written in assembly (plain x86-64 and EVEX: vpternlogq, vprolq on zmm registers) it counts every
instruction, and on an AVX2 build it gives callgrind's totals to the instruction; a build valgrind
cannot run (AVX-512) is counted by it through the callgrind backend, which says so."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from pqsimd import catalog, machine
from pqsimd.errors import CountError
from pqsimd.run import stepcount

pytestmark = pytest.mark.skipif(machine.cpuinfo().get("flags") is None or shutil.which("gcc") is None,
                                reason="an x86-64 Linux host with gcc is needed")

# `target(n)`: a loop body of 4 instructions run n times, then `ret`: exactly 4n + 1 instructions.
LOOP = {
    "plain": "1: add $3, %rax\n xor %rdx, %rax\n dec %rdi\n jnz 1b\n ret\n",
    "evex": "1: vpternlogq $0x96, %zmm0, %zmm1, %zmm2\n vprolq $13, %zmm2, %zmm2\n dec %rdi\n jnz 1b\n ret\n",
}
PROGRAM = r"""
#include <stdlib.h>
void target(long n);
__asm__(".text\n.globl target\n.type target, @function\ntarget:\n%s.size target, .-target\n");
int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) target(atol(argv[i]));
    return 0;
}
"""


def _program(tmp_path: Path, kind: str) -> Path:
    src = tmp_path / f"{kind}.c"
    body = LOOP[kind].replace("\n", "\\n")
    src.write_text(PROGRAM.replace("%s", body))
    exe = tmp_path / kind
    subprocess.run(["gcc", "-O2", str(src), "-o", str(exe)], check=True, capture_output=True)
    return exe


@pytest.fixture(scope="module")
def ptrace_ok():
    why = stepcount.available()
    if why:
        pytest.skip(why)


@pytest.mark.parametrize("kind", ["plain", "evex"])
def test_loops_of_known_length_are_counted_exactly(tmp_path, ptrace_ok, kind):
    if kind == "evex" and "avx512f" not in machine.cpu_flags():
        pytest.skip("this CPU has no AVX-512F")
    exe = _program(tmp_path, kind)
    ns = [1, 7, 1000, 3]
    assert stepcount.run(exe, [str(n) for n in ns], name="target") == [4 * n + 1 for n in ns]
    # the non-PIE form (an absolute address) too
    exe2 = tmp_path / f"{kind}-nopie"
    subprocess.run(["gcc", "-O2", "-no-pie", str(tmp_path / f"{kind}.c"), "-o", str(exe2)], check=True, capture_output=True)
    assert stepcount.symbol(exe2, "target")[1] is False and stepcount.symbol(exe, "target")[1] is True
    assert stepcount.run(exe2, ["5"], name="target") == [21]


def test_a_rep_string_instruction_counts_as_valgrind_counts_it(tmp_path, ptrace_ok):
    """`rep stosq` with rcx = n traps n times; valgrind counts n + 1 (the pass that finds rcx at zero), 1 for
    n = 0: the stepper adds that pass. target(n): mov, lea, xor, rep stosq, ret."""
    src = tmp_path / "rep.c"
    src.write_text("long buf[4096];\nvoid target(long n);\n"
                   '__asm__(".text\\n.globl target\\n.type target, @function\\ntarget:\\n mov %rdi, %rcx\\n'
                   ' lea buf(%rip), %rdi\\n xor %eax, %eax\\n rep stosq\\n ret\\n.size target, .-target\\n");\n'
                   "#include <stdlib.h>\nint main(int c, char **v) { for (int i = 1; i < c; i++) target(atol(v[i])); "
                   "return 0; }\n")
    exe = tmp_path / "rep"
    subprocess.run(["gcc", "-O2", str(src), "-o", str(exe)], check=True, capture_output=True)
    ns = [0, 1, 2, 100, 1000]
    assert stepcount.run(exe, [str(n) for n in ns], name="target") == [4 + (n + 1 if n else 1) for n in ns]


def test_a_program_without_the_function_and_a_failing_program_are_one_line(tmp_path, ptrace_ok):
    exe = _program(tmp_path, "plain")
    with pytest.raises(Exception, match="has no symbol nowhere"):
        stepcount.run(exe, ["1"], name="nowhere")
    src = tmp_path / "fails.c"
    src.write_text(PROGRAM.replace("%s", LOOP["plain"].replace("\n", "\\n")).replace("return 0;", "return 4;"))
    subprocess.run(["gcc", "-O2", str(src), "-o", str(tmp_path / "fails")], check=True, capture_output=True)
    with pytest.raises(CountError, match="failed: exit code 4") as e:
        stepcount.run(tmp_path / "fails", ["2"], name="target")
    assert "\n" not in str(e.value)


def _keccak(tree, driver, variant):
    from pqsimd.build import build_variant

    return build_variant(tree, catalog.families()["keccak"], catalog.builtin_variants()[variant], "gcc", driver)


REQUESTS = [("permute_x1", 2, None), ("permute_x1", 10, None), ("permute_x4", 2, None), ("permute_x4", 10, None),
            ("empty", 2, None), ("empty", 10, None)]


def test_equal_to_callgrind_on_an_avx2_build(tree, driver, ptrace_ok):
    from pqsimd.run import callgrind

    if callgrind.valgrind_version() is None:
        pytest.skip("valgrind is not installed")
    b = _keccak(tree, driver, "avx2")
    by_callgrind = [n for n, *_ in callgrind.count_instructions_batch(driver.path, b.library, "keccak-p1600", REQUESTS)]
    by_stepping = [n for n, *_ in stepcount.Stepper().count_batch(driver.path, b.library, "keccak-p1600", REQUESTS)]
    assert by_stepping == by_callgrind
    assert by_stepping[1] - by_stepping[0] > 8 * 1000  # a real permutation was stepped, not an empty call


def test_the_callgrind_backend_steps_what_valgrind_cannot_run(tree, driver, ptrace_ok):
    from pqsimd.run import callgrind
    from pqsimd.run.backends import Callgrind

    if callgrind.valgrind_version() is None:
        pytest.skip("valgrind is not installed")
    if not {"avx512f", "avx512vl", "avx512bw"} <= machine.cpu_flags():
        pytest.skip("this CPU has no AVX-512")
    b = _keccak(tree, driver, "avx512")
    with pytest.raises(CountError) as e:
        callgrind.count_instructions_batch(driver.path, b.library, "keccak-p1600", REQUESTS[:2])
    assert e.value.unsupported and "EVEX" in e.value.unsupported
    backend = Callgrind()
    got = [n for n, *_ in backend.count_batch(driver.path, b.library, "keccak-p1600", REQUESTS)]
    assert got == [n for n, *_ in stepcount.Stepper().count_batch(driver.path, b.library, "keccak-p1600", REQUESTS)]
    assert "EVEX" in backend.stepped[b.library.name]


def test_profiles_equal_callgrinds_and_the_backend_profiles_avx512_by_stepping(tree, driver, ptrace_ok):
    """The --profile form gives callgrind's per-(object, address) profile exactly on the AVX2 build, and the
    callgrind backend's profile_batch hands an AVX-512 build to it (the mix of AVX-512 code)."""
    from pqsimd.run import callgrind
    from pqsimd.run.backends import Callgrind

    if callgrind.valgrind_version() is None:
        pytest.skip("valgrind is not installed")
    req = [("permute_x4", 2), ("permute_x4", 4)]
    b = _keccak(tree, driver, "avx2")
    by_callgrind = [p for p, _ in Callgrind().profile_batch(driver.path, b.library, "keccak-p1600", req)]
    by_stepping = [p for p, _ in stepcount.Stepper().profile_batch(driver.path, b.library, "keccak-p1600", req)]
    assert by_stepping == by_callgrind and sum(by_stepping[1].values()) > sum(by_stepping[0].values()) > 1000
    if not {"avx512f", "avx512vl", "avx512bw"} <= machine.cpu_flags():
        return
    b = _keccak(tree, driver, "avx512")
    backend = Callgrind()
    prof = [p for p, _ in backend.profile_batch(driver.path, b.library, "keccak-p1600", req)]
    counts = [n for n, *_ in stepcount.Stepper().count_batch(driver.path, b.library, "keccak-p1600",
                                                            [(o, n, None) for o, n in req])]
    assert [sum(p.values()) for p in prof] == counts and b.library.name in backend.stepped
    assert any(str(b.library) == obj for obj, _ in prof[0])  # addresses in the variant's own object


def test_a_signal_outside_the_function_reaches_the_program_and_counting_goes_on(tmp_path, ptrace_ok):
    """A signal the program gets between counted calls is delivered (its handler runs, uncounted) and the next
    call is counted as before."""
    src = tmp_path / "sig.c"
    src.write_text(PROGRAM.replace("%s", LOOP["plain"].replace("\n", "\\n"))
                   .replace("#include <stdlib.h>", "#include <stdlib.h>\n#include <signal.h>\nstatic volatile int got;\n"
                            "static void on(int s) { got = s; }")
                   .replace("for (int i = 1; i < argc; i++) target(atol(argv[i]));",
                            "signal(SIGUSR1, on);\n    for (int i = 1; i < argc; i++) { target(atol(argv[i])); raise(SIGUSR1); }\n"
                            "    if (got != SIGUSR1) return 9;"))
    subprocess.run(["gcc", "-O2", str(src), "-o", str(tmp_path / "sig")], check=True, capture_output=True)
    assert stepcount.run(tmp_path / "sig", ["3", "5"], name="target") == [13, 21]


def test_explain_names_the_counter_of_each_stepped_build(tmp_path):
    """analyze records the builds counted by single-stepping (summary.json `stepped`, from the instructions job
    records); explain's header names that counter for them, not callgrind's."""
    import json
    from types import SimpleNamespace

    from pqsimd.analyze.records import stepped_record
    from pqsimd.report.explain import counters_text

    raw = tmp_path / "raw"
    raw.mkdir()
    (tmp_path / "manifest.json").write_text(json.dumps({"isa": {"name": "x86_64"}}))
    summary = {"stepped": [{"scheme": "keccak-p1600", "variant": "avx512", "compiler": "gcc", "because": "EVEX"}]}
    d = SimpleNamespace(directory=tmp_path, summary=summary)
    assert counters_text(d, "keccak-p1600", "gcc", ["avx2", "avx512"]) == \
        "callgrind; avx512 single-stepped natively under ptrace"
    assert counters_text(d, "keccak-p1600", "gcc", ["avx512"]) == "avx512 single-stepped natively under ptrace"
    assert counters_text(d, "keccak-p1600", "clang-16", ["avx512"]) == "callgrind"
    assert stepped_record(tmp_path) == []
