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

from pqsimd import catalog
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


def test_lto_builds_gate_and_time_with_gcc_and_clang(tmp_path, cli):
    for cc in ("clang-16",):
        if shutil.which(cc) is None:
            pytest.fail(f"{cc} is not installed (make test installs it as root: tools/test-deps.sh)")
    d = tmp_path / "s"
    d.mkdir()
    (d / "study.toml").write_text('[study]\nvariants = ["ref", "lto"]\n'
                                  '[variants.lto]\nsources = "clean"\nflags = ["-O2", "-flto"]\n')
    r = cli("run", d, "--schemes", "shake-256", "--cc", "gcc,clang-16", "--preset", "quick", "--jobs", "1",
            "--spins", "3", "--reps", "2", "--budget", "0", env=ENV)
    assert r.returncode == 0, r.stderr
    sd = StudyDir(d)
    builds = sd.read_manifest()["builds"]
    for cc in ("gcc", "clang-16"):
        b = builds[f"lto.{cc}.shake"]
        assert b["passed"], b
        link = next(c for c in b["compile_commands"] if " -shared " in c)
        assert link.endswith("-O2 -flto")
    from pqsimd import store

    rec = store.read_job_record(sd.raw_path("paired.shake-256.0"))
    assert {"lto.gcc.shake", "lto.clang-16.shake"} <= set(rec["builds"])


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
