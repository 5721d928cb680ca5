"""The files a timing driver loads are held open from the check of their bytes to its exit
(run/loaded.py, issue 36): what the driver opens is the checked file whatever its name points to
later, bytes written into it are found, and its messages name the files, not their descriptors."""

from __future__ import annotations

import hashlib
import os

import pytest

from pqsimd.errors import PqsimdError
from pqsimd.run import loaded


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def test_the_driver_opens_the_checked_file_whatever_replaces_its_name(tmp_path):
    a = tmp_path / "a.so"
    a.write_bytes(b"gated bytes")
    with loaded.hold([a, a], [_sha(b"gated bytes")] * 2, "job j", tmp_path) as files:
        assert len(set(files.fds)) == 1  # one file given twice is opened once
        other = tmp_path / "other"
        other.write_bytes(b"other bytes")
        os.replace(other, a)  # renamed over while the job waits
        (path,) = set(files.driver_paths())
        assert path.read_bytes() == b"gated bytes"
        files.check_unchanged("job j", tmp_path)
        msg = files.named(f"driver: cannot load variant {path}: file too short")
        assert msg == f"driver: cannot load variant {a}: file too short"


def test_bytes_written_into_a_held_file_are_found(tmp_path):
    a = tmp_path / "a.so"
    a.write_bytes(b"gated bytes")
    with loaded.hold([a], [_sha(b"gated bytes")], "job j", tmp_path) as files:
        with open(a, "r+b") as f:
            f.write(b"G")
        with pytest.raises(PqsimdError, match="changed while it was timed"):
            files.check_unchanged("job j", tmp_path)


def test_a_file_that_is_not_the_gated_one_is_refused_before_anything_runs(tmp_path):
    a = tmp_path / "a.so"
    a.write_bytes(b"replaced")
    with pytest.raises(PqsimdError, match="is not the binary this study gated"):
        with loaded.hold([a], [_sha(b"gated bytes")], "job j", tmp_path):
            pass


def test_thousands_of_held_copies_fit_under_the_open_file_limit(tmp_path):
    """An ablation's 32 cells x 64 layouts is 2,048 copies in one job, over a default soft limit of
    1,024 open files: the limit is raised to the hard one for them (or one line says it cannot be)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 2048 + 256:
        pytest.skip(f"the hard limit of open files here is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))
    try:
        paths = []
        for i in range(2048):
            p = tmp_path / f"c{i}.so"
            p.write_bytes(b"x")
            paths.append(p)
        with loaded.hold(paths, [None] * len(paths), "job j", tmp_path) as files:
            assert len(set(files.fds)) == 2048
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
