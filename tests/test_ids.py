"""Composite ids (builds, jobs) name one thing each: no id may contain the separator, ids read back
from plan.json are checked, and the formats live in one place (pqsimd/ids.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pqsimd import ids
from pqsimd.errors import PqsimdError

from conftest import one_line_error

FIXTURES = Path(__file__).parent / "fixtures" / "families"
ENV = {**os.environ, "PQSIMD_FAMILY_PATH": str(FIXTURES)}


one_line = one_line_error


def test_the_issue_reproduction_is_refused_before_anything_is_built(tmp_path, cli):
    """Variant `a` with compiler `b.c` and variant `a.b` with compiler `c` were both a.b.c.<family>:
    three shared objects for four builds, and one build's time reported for another."""
    d = tmp_path / "s"
    d.mkdir()
    (d / "study.toml").write_text('[study]\nvariants = ["a", "a.b"]\n'
                                  '[variants.a]\nsources = "clean"\nflags = ["-O0"]\n'
                                  '[variants."a.b"]\nsources = "clean"\nflags = ["-O3"]\n')
    one_line(cli("run", d, "--schemes", "shake-256", "--cc", "c=gcc,b.c=clang-16", env=ENV),
             "variant id 'a.b' is not allowed", "joined by '.'")
    assert not (d / "bin").exists()
    (d / "study.toml").write_text('[study]\nvariants = ["a"]\n[variants.a]\nsources = "clean"\nflags = ["-O0"]\n')
    one_line(cli("run", d, "--schemes", "shake-256", "--cc", "c=gcc,b.c=clang-16", env=ENV),
             "compiler id 'b.c' is not allowed")
    # a path whose name holds a dot: the hint says how to name it
    line = one_line(cli("run", d, "--schemes", "shake-256", "--cc", "/usr/bin/gcc-12.2", env=ENV), "'gcc-12.2'")
    assert "--cc mycc=/usr/bin/gcc-12.2" in line and "missing" not in line


def test_composite_ids_parse_back_and_cannot_collide():
    b = ids.BuildId("ref-avx2", "clang-16", "ml-kem")
    assert str(b) == "ref-avx2.clang-16.ml-kem" and ids.BuildId.parse(str(b)) == b
    assert ids.timing_job_id("paired", "ml-kem-512", 3) == "paired.ml-kem-512.3"
    assert ids.timing_job_id("separate", "s", 0, "refo0", "gcc-11") == "refo0.gcc-11.s.0"
    with pytest.raises(PqsimdError, match="would make ids collide"):
        ids.build_id("a", "b.c", "f")
    for bad in ("a.b", "a/b", "", ".x", "x" * 65, 5):
        with pytest.raises(PqsimdError):
            ids.check_id("variant", bad, "here")


def test_a_job_id_naming_a_path_in_plan_json_is_one_line(tmp_path, cli):
    d = tmp_path / "s"
    r = cli("run", d, "--schemes", "shake-256", "--variants", "ref", "--preset", "quick", "--jobs", "1", "--no-run",
            env=ENV)
    assert r.returncode == 0, r.stderr
    plan = json.loads((d / "plan.json").read_text())
    plan["jobs"][0]["id"] = "paired/../../x.0"
    (d / "plan.json").write_text(json.dumps(plan))
    one_line(cli("run", d, env=ENV), "plan.json", "job id 'paired/../../x.0' is not a pqsimd id", "restore")
    one_line(cli("job", d, "paired/../../x.0", env=ENV), "is not a pqsimd id")
    assert not (tmp_path / "x.0.parquet").exists()


def test_two_compilers_with_one_id_get_a_hint_in_the_right_syntax(tmp_path, cli):
    line = one_line(cli("run", tmp_path / "s", "--schemes", "shake-256", "--cc", "a=gcc,a=clang-16", env=ENV),
                    "--cc names two compilers with the id 'a'")
    assert "e.g. --cc ab=clang-16" in line and "ab=a=" not in line
    assert not (tmp_path / "s").exists()
