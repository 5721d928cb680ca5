"""A family TOML is checked when it is loaded: every bad value is one line naming the file and the
key (never a traceback later in build, verify, analyze or report), and unreadable files in
$PQSIMD_FAMILY_PATH are one line too."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from pqsimd import catalog
from pqsimd.errors import PqsimdError

FIXTURES = Path(__file__).parent / "fixtures" / "families"


@pytest.fixture
def family_dir(tmp_path, monkeypatch):
    d = tmp_path / "families"
    d.mkdir()
    for f in ("shake.toml", "shake_ops.c"):
        shutil.copy(FIXTURES / f, d / f)
    monkeypatch.setenv("PQSIMD_FAMILY_PATH", str(d))
    return d


def edit(d: Path, old: str, new: str) -> None:
    p = d / "shake.toml"
    text = p.read_text()
    assert re.search(old, text, re.M), old
    p.write_text(re.sub(old, new, text, count=1, flags=re.M))


@pytest.mark.parametrize("old, new, needle", [
    (r'^oracle = .*$', 'oracle = "nosuchhash"', "`[gate] oracle` must name a hashlib algorithm"),
    (r'^vectors = 6$', 'vectors = "lots"', "`[gate] vectors` must be an integer >= 1"),
    (r'^vectors = 6$', 'vectorz = 6', "unknown key(s) in [gate]: vectorz"),
    (r'^\[gate\]$', '[kat]\nprogram = 5\nrng = "r.c"\n[gate]', "`[kat] program` must be a non-empty string"),
    (r'^distribution = .*$', 'distribution = 5', "`[views] distribution` must be a table"),
    (r'^distribution = .*$', 'distribution = { scheme = "nope", ops = ["shake_32"] }', "distribution` scheme must be"),
    (r'^end_to_end = .*$', 'end_to_end = ["x", 5]', "`[views] end_to_end` must be a list of op names"),
    (r'^end_to_end = .*$', 'end_to_end = ["x"]', "names op 'x', which is not in [ops] order"),
    (r'^macro_prefix = .*$', 'macro_prefix = "Sha 3"', "macro_prefix` must be letters only"),
    (r'^self_check = .*$', 'self_check = "nope"', "self_check = 'nope' is not in [ops] order"),
    (r'^order = .*$', 'order = ["shake_32", "shake_1k", "shake_32", "empty"]', "lists 'shake_32' twice"),
])
def test_bad_family_values_are_one_line_at_load(family_dir, old, new, needle):
    edit(family_dir, old, new)
    with pytest.raises(PqsimdError, match=re.escape(needle)) as e:
        catalog.families()
    assert "\n" not in str(e.value) and "shake.toml" in str(e.value)


@pytest.mark.parametrize("kind", ["directory", "dangling symlink", "not utf-8"])
def test_unreadable_toml_in_the_family_path_is_one_line(family_dir, kind, cli):
    bad = family_dir / "bad.toml"
    if kind == "directory":
        bad.mkdir()
    elif kind == "dangling symlink":
        bad.symlink_to(family_dir / "nowhere.toml")
    else:
        bad.write_bytes(b'family = "\xff\xfe"\n')
    r = cli("list", env={**os.environ})
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    [line] = r.stderr.strip().splitlines()
    assert str(bad) in line and "PQSIMD_FAMILY_PATH" in line


def test_the_same_directory_twice_in_the_family_path_is_one_directory(family_dir, monkeypatch):
    monkeypatch.setenv("PQSIMD_FAMILY_PATH", f"{family_dir}:{family_dir}/")
    assert "shake" in catalog.families()
