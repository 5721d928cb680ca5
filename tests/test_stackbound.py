"""stackbound.py: the static bound from gcc's -fstack-usage -fcallgraph-info=su, on small C files whose
frames the C itself fixes; the oracle is gcc's .su file and the C, never the bound's own arithmetic."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from pqsimd import stackbound
from pqsimd.errors import PqsimdError

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")

A = r"""
extern void asm_kernel(void);
extern void (*hook)(void);
static __attribute__((noinline)) void leaf(volatile char *p) { p[0] = 1; }
__attribute__((noinline)) void deep(void) { volatile char a[2048]; a[0] = 0; leaf(a); asm_kernel(); }
__attribute__((noinline)) void shallow(void) { volatile char b[64]; b[0] = 0; leaf(b); }
__attribute__((noinline)) void op(int k) { volatile char c[256]; c[0] = k; if (k) deep(); else shallow(); hook(); c[1] = 0; }
__attribute__((noinline)) int rec(int n) { volatile char d[32]; d[0] = n; return n ? rec(n - 1) + d[0] : 0; }
__attribute__((noinline)) int grow(int n) { char *v = __builtin_alloca(n); v[0] = 1; __asm__ volatile("" :: "r"(v) : "memory"); return v[0]; }
"""
# the same file-local function name in two units, with different callees and frames
B = r"""
extern void deep(void);
static __attribute__((noinline)) void entry(void) { volatile char e[512]; e[0] = 0; deep(); e[1] = 0; }
void (*get_b(void))(void) { return entry; }
"""
C = r"""
extern void shallow(void);
static __attribute__((noinline)) void entry(void) { volatile char e[128]; e[0] = 0; shallow(); e[1] = 0; }
void (*get_c(void))(void) { return entry; }
"""
S = ".text\n.globl asm_kernel\nasm_kernel:\n  sub $4096, %rsp\n  movb $0, (%rsp)\n  add $4096, %rsp\n  ret\n"


def _build(tmp: Path) -> tuple[list[str], Path]:
    """A 'build': its folder with objects and the compile commands a build record holds."""
    build = tmp / "build"
    build.mkdir()
    cmds = []
    for name, text in (("a.c", A), ("b.c", B), ("c.c", C), ("k.S", S)):
        (tmp / name).write_text(text)
        argv = ["gcc", "-O2", "-fPIC", "-c", str(tmp / name), "-o", str(build / f"{name}.o")]
        subprocess.run(argv, check=True, cwd=build)
        cmds.append(shlex.join(argv))
    cmds.append(shlex.join(["gcc", "-shared", "-o", str(build / "variant.so"), *(str(build / f"{n}.o") for n in "abc")]))
    return cmds, build


def _su(side: Path) -> dict[tuple[str, str], tuple[int, str]]:
    out = {}
    for f in side.glob("*.su"):
        for line in f.read_text().splitlines():
            where, n, kind = line.split("\t")
            out[(f.name.split(".")[0], where.rsplit(":", 1)[-1])] = (int(n), kind)
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sb")
    cmds, build = _build(tmp)
    before = {p.name: p.read_bytes() for p in build.iterdir()}
    side = tmp / "side"
    cis = stackbound.side_compile(cmds, build, side)
    assert {p.name: p.read_bytes() for p in build.iterdir()} == before  # the build's folder is untouched
    return stackbound.Graph(cis), _su(side), side


def test_the_side_compile_writes_frames_beside_the_build_not_in_it(built):
    graph, su, side = built
    assert sorted(p.name for p in side.glob("*.ci")) == ["a.c.ci", "b.c.ci", "c.c.ci"]  # the .S unit gives none
    assert not list((side.parent / "build").glob("*.su"))
    for n in graph.nodes.values():  # every frame the graph holds is the one gcc's .su file says
        if n.frame is not None:
            assert su[(n.unit.split(".")[0], n.name)][0] == n.frame


def test_the_worst_path_follows_the_deepest_frames_and_names_what_it_cannot_see(built):
    graph, su, _ = built
    frame = {k[1]: v[0] for k, v in su.items() if k[0] == "a"}
    b = graph.worst(graph.entries("op")[0], red_zone=128, return_address=8, defined={"op", "deep", "leaf", "asm_kernel"})
    assert [f for f, _ in b.path] == ["op", "deep", "leaf"]  # deep's 2048 bytes beat shallow's 64
    assert b.frames == frame["op"] + frame["deep"] + frame["leaf"]
    assert b.bytes == b.frames - 8 + 128
    assert b.no_frame == ["asm_kernel"] and b.indirect == 1  # the .S routine, the call through hook
    assert not b.to_dict()["upper_bound"]
    assert b.outside == [] and any("asm_kernel" in s and "assembly" in s for s in b.named())
    assert any("indirect" in s for s in b.named())
    assert graph.worst(graph.entries("op")[0], defined={"op"}).outside == ["asm_kernel"]
    assert frame["deep"] >= 2048 and frame["op"] >= 256  # the arrays are in the frames


def test_recursion_and_dynamic_frames_are_named(built):
    graph, su, _ = built
    r = graph.worst(graph.entries("rec")[0])
    assert r.recursion == ["rec"] and r.frames == su[("a", "rec")][0]
    g = graph.worst(graph.entries("grow")[0])
    assert su[("a", "grow")][1].startswith("dynamic") and g.dynamic == ["grow"]
    assert any("dynamic" in s for s in g.named()) and any("recursion" in s for s in r.named())


def test_a_file_local_name_in_two_units_is_told_apart_by_its_calls(built):
    graph, su, _ = built
    assert len(graph.entries("entry")) == 2
    for callee, unit in (("deep", "b"), ("shallow", "c")):
        e = stackbound.pick_entry(graph, "entry", {callee})
        assert e.unit.startswith(unit) and e.frame == su[(unit, "entry")][0]
        assert [f for f, _ in graph.worst(e).path][:2] == ["entry", callee]


def test_what_cannot_give_a_bound_says_why_in_one_sentence(tmp_path, built):
    with pytest.raises(stackbound.Unavailable, match="gcc"):
        stackbound.check_compiler("clang", ["-O3"])
    with pytest.raises(stackbound.Unavailable, match="LTO"):
        stackbound.check_compiler("gcc", ["-O3", "-flto"])
    stackbound.check_compiler("gcc", ["-O3"])
    gone = shlex.join(["gcc", "-c", str(tmp_path / "gone.c"), "-o", str(tmp_path / "gone.o")])
    with pytest.raises(stackbound.Unavailable, match="gone.c .*another checkout"):
        stackbound.side_compile([gone], tmp_path, tmp_path.parent / f"{tmp_path.name}-side")
    with pytest.raises(stackbound.Unavailable, match="no function|no compiled unit"):
        stackbound.pick_entry(built[0], "asm_kernel", set())
    with pytest.raises(PqsimdError, match="outside the build"):
        stackbound.side_compile([gone], tmp_path, tmp_path / "inside")
