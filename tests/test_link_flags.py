"""A variant's flags reach the compile and the link of every object that is timed or gated: LTO
works with gcc and clang, -Wl,... flags act on the timed shared object, a link failure names its
cause, the recorded commands are the ones that built what is timed, and a sanitizer variant is
refused in one line (its runtime would have to be the timing process's first library)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import require_tool

from pqsimd import build, catalog
from pqsimd.build import build_variant
from pqsimd.catalog import Variant
from pqsimd.studydir import StudyDir

FIXTURES = Path(__file__).parent / "fixtures" / "families"
ENV = {**os.environ, "PQSIMD_FAMILY_PATH": str(FIXTURES)}


@pytest.fixture
def shake(monkeypatch):
    monkeypatch.setenv("PQSIMD_FAMILY_PATH", str(FIXTURES))
    return catalog.families()["shake"]


def test_linker_flags_act_on_the_timed_shared_object(tree, driver, shake):
    v = Variant("soname", "clean", ("-O2", "-Wl,-soname,pqsimd_link_probe"))
    b = build_variant(tree, shake, v, "gcc", driver)
    dyn = subprocess.run(["objdump", "-p", str(b.library)], capture_output=True, text=True, check=True).stdout
    assert "SONAME               pqsimd_link_probe" in dyn
    link = next(c for c in b.commands if " -shared " in c)
    assert link.endswith("-Wl,-soname,pqsimd_link_probe")
    assert all(".tmp-" not in c for c in b.commands) and str(b.directory) in link  # the commands as recorded


def test_a_link_failure_names_its_cause(tree, driver, shake):
    from pqsimd.errors import PqsimdError

    v = Variant("badlink", "clean", ("-O2", "-Wl,--no-such-linker-option"))
    with pytest.raises(PqsimdError) as e:
        build_variant(tree, shake, v, "gcc", driver)
    assert "linking variant.so failed" in str(e.value) and "no-such-linker-option" in str(e.value)
    assert "\n" not in str(e.value)


# Two clangs of two LLVM versions (Debian's clang is 14): whichever single lld a host has, at least one
# build's bitcode is of another LLVM than the lld that lays its copies out (issue 32: lld 19 optimized
# clang 16's bitcode again into other code, and the copy gate stopped the study).
CLANGS = ("clang", "clang-16")


def _require(*compilers):
    for cc in compilers:
        if shutil.which(cc) is None:
            require_tool(f"{cc} is not installed (make test installs it as root: tools/test-deps.sh)")


def test_lto_builds_gate_and_time_with_gcc_and_clang(tmp_path, cli):
    _require(*CLANGS)
    d = tmp_path / "s"
    d.mkdir()
    (d / "study.toml").write_text('[study]\nvariants = ["ref", "lto"]\n'
                                  '[variants.lto]\nsources = "clean"\nflags = ["-O2", "-flto"]\n')
    r = cli("run", d, "--schemes", "shake-256", "--cc", ",".join(("gcc", *CLANGS)), "--preset", "quick", "--jobs", "1",
            "--spins", "3", "--reps", "2", "--budget", "0", env=ENV)
    assert r.returncode == 0, r.stderr
    sd = StudyDir(d)
    builds = sd.read_manifest()["builds"]
    for cc in ("gcc", *CLANGS):
        b = builds[f"lto.{cc}.shake"]
        assert b["passed"], b
        link = next(c for c in b["compile_commands"] if " -shared " in c)
        assert link.endswith("-O2 -flto")
    from pqsimd import store

    rec = store.read_job_record(sd.raw_path("paired.shake-256.0"))
    assert {f"lto.{cc}.shake" for cc in ("gcc", *CLANGS)} <= set(rec["builds"])
    # clang's copies are laid out (relinked from the build's post-LTO objects, each gated); gcc's are the
    # build as linked, said in one line
    copies = {bid: b["copies"] for bid, b in rec["layout"]["builds"].items()}
    for cc in CLANGS:
        assert all(not c["fixed"] and "functions" in c["check"] for c in copies[f"lto.{cc}.shake"])
    assert all("GIMPLE" in c["fixed"] for c in copies["lto.gcc.shake"])
    [line] = [l for l in r.stderr.splitlines() if l.startswith("layout fixed")]
    assert line.startswith("layout fixed lto.gcc.shake: gcc -flto objects")


@pytest.mark.parametrize("mode", ["-flto", "-flto=thin"])
def test_clang_lto_copies_hold_the_builds_code_whatever_lld_relinks_them(tree, driver, shake, tmp_path, mode):
    from pqsimd import layout
    from pqsimd.build import LTO_DIR
    from pqsimd.errors import PqsimdError
    from pqsimd.verify import layouts as gate

    _require(*CLANGS)
    for cc in CLANGS:
        b = build_variant(tree, shake, Variant("lto", "clean", ("-O2", mode)), cc, driver)
        native = sorted((b.directory / LTO_DIR).iterdir())
        # the copies link the native objects the build's own LTO made, never its bitcode
        assert native and all(not build.bitcode(f) for f in native)
        assert not any(build.bitcode(a) for a in b.link) and str(native[0]) in b.link
        assert any(build.bitcode(o) for o in b.directory.glob("*.o"))  # the compiles did emit bitcode
        ref = gate.Reference(driver.path, b.library, "shake-256")
        for seed in (1, 2):
            copy = tmp_path / f"{cc}{mode}.{seed}.so"
            layout.relink(b.link, seed, copy)
            ok, how = gate.check(ref, copy)
            assert ok and "functions" in how and "answers" in how, (cc, mode, how)
        # one section per function in the native objects: the functions move between copies
        offsets = {seed: layout.op_offsets(driver.path, tmp_path / f"{cc}{mode}.{seed}.so", "shake-256")
                   for seed in (1, 2)}
        assert offsets[1] != offsets[2]
        # the build's own link (bitcode in) is refused in one line, not relinked into other code
        bitcode_link = next(c for c in b.commands if " -shared " in c)
        with pytest.raises(PqsimdError) as e:
            layout.relink(__import__("shlex").split(bitcode_link), 1, tmp_path / "no.so")
        assert "LLVM bitcode" in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("flag", ["-fsanitize=address", "-fsanitize=undefined"])
def test_a_sanitizer_variant_is_refused_in_one_line(tmp_path, cli, flag):
    d = tmp_path / "s"
    d.mkdir()
    (d / "study.toml").write_text(f'[study]\nvariants = ["san"]\n'
                                  f'[variants.san]\nsources = "clean"\nflags = ["-O1", "{flag}"]\n')
    r = cli("run", d, "--schemes", "shake-256", env=ENV)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    [line] = r.stderr.strip().splitlines()
    assert f"{flag} is not supported" in line and "first library of the process" in line
