"""Shared pytest fixtures. Each section is self-contained; append new sections below."""

# --- Other programs on the machine -------------------------------------------------------------
# The suite must pass while other programs use the CPUs (a CI runner's neighbours, a build), so
# every study it runs keeps a job whose CPU was shared (marked; --shared-cpu keep) instead of
# discarding it three times and failing. Only tests/test_cpuclaim.py times the discard policy, with
# --shared-cpu discard and contention of its own.
import os as _share_os

_share_os.environ.setdefault("PQSIMD_SHARED_CPU", "keep")

# pytest-xdist's workers (`make test` runs on both CPUs) set COLUMNS=80 and LINES=24, which every pqsimd the tests
# start would take for a terminal's width (console.py): its piped output would wrap where a user's does not
if _share_os.environ.get("PYTEST_XDIST_WORKER"):
    for _name in ("COLUMNS", "LINES"):
        _share_os.environ.pop(_name, None)

# --- SLURM: a real one-node cluster on localhost (tests/slurm_cluster.py) -------------------
# Session-scoped: munged + slurmctld + slurmd start once, on the first test that asks, and the
# daemons this fixture started are stopped by pid at the end. Skips when SLURM is not installed
# or we are not root, unless PQSIMD_REQUIRE_SLURM=1 (CI), where that is a failure instead.
import os as _slurm_os
import sys as _slurm_sys
from pathlib import Path as _SlurmPath

import pytest as _slurm_pytest


@_slurm_pytest.fixture(scope="session")
def slurm_cluster():
    _slurm_sys.path.insert(0, str(_SlurmPath(__file__).parent))
    from slurm_cluster import SlurmCluster, missing_reason

    reason = missing_reason()
    if reason:
        if _slurm_os.environ.get("PQSIMD_REQUIRE_SLURM"):
            _slurm_pytest.fail(f"PQSIMD_REQUIRE_SLURM is set but {reason}")
        _slurm_pytest.skip(reason)
    cluster = SlurmCluster().start()
    saved = _slurm_os.environ.get("SLURM_CONF")
    _slurm_os.environ["SLURM_CONF"] = str(cluster.conf)
    try:
        yield cluster
    finally:
        if saved is None:
            _slurm_os.environ.pop("SLURM_CONF", None)
        else:
            _slurm_os.environ["SLURM_CONF"] = saved
        cluster.stop()


# --- Engine: the pinned PQClean tree and cached variant builds ---------------------------------
import subprocess as _eng_subprocess

import pytest as _eng_pytest

PQSIMD = _SlurmPath(_slurm_sys.executable).with_name("pqsimd")


@_eng_pytest.fixture(scope="session")
def tree():
    from pqsimd import sources

    return sources.locate()


@_eng_pytest.fixture(scope="session")
def driver():
    """The driver, built once with the fixed toolchain (from the user's build cache when warm)."""
    from pqsimd.build import build_driver

    return build_driver()


@_eng_pytest.fixture(scope="session")
def mlkem():
    from pqsimd import catalog

    return catalog.families()["ml-kem"]


@_eng_pytest.fixture(scope="session")
def builds(tree, driver, mlkem):
    """ML-KEM refo0, ref and avx2 (gcc) built once per session (from the build cache when warm)."""
    from pqsimd import catalog
    from pqsimd.build import build_variant

    variants = catalog.builtin_variants()
    return {v: build_variant(tree, mlkem, variants[v], "gcc", driver) for v in ("refo0", "ref", "avx2")}


def sabotaged_tree(tree, tmp, edits):
    """A copy of the parts of the PQClean tree a study needs, with `edits`: {relative path: (old, new)}.
    The sabotage compiles; it is there to be caught by the gate."""
    import shutil

    from pqsimd.sources import SourceTree

    root = _SlurmPath(tmp) / "pqclean"
    for sub in ("common", "test", "crypto_kem"):
        shutil.copytree(tree.root / sub, root / sub, symlinks=True)
    (root / "crypto_sign").mkdir()
    for rel, (old, new) in edits.items():
        p = root / rel
        text = p.read_text()
        assert old in text, f"sabotage target not found in {rel}"
        p.write_text(text.replace(old, new, 1))
    return SourceTree(root=root, origin="path")


def run_cli(*args, cwd=None, timeout=900, env=None):
    """Run the installed `pqsimd` console script as a user would; returns CompletedProcess."""
    return _eng_subprocess.run([str(PQSIMD), *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=timeout, env=env)


@_eng_pytest.fixture
def cli():
    return run_cli


def one_line_error(r, *needles):
    """A refused command: exit 2, no traceback, exactly one `error:` line holding every needle."""
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr
    errors = [l for l in r.stderr.splitlines() if l.startswith("error:")]
    assert len(errors) == 1, r.stderr
    for n in needles:
        assert n in errors[0], errors[0]
    return errors[0]


def capped_ops(study_dir, build: str, scheme: str) -> set[str]:
    """The ops of a study's build that one call of takes longer than the study's cap (max_call_s):
    not timed there, and said so. How many there are depends on the host's speed, so a test asserts
    "timed, or n/a with the cap named", never that a given op is timed."""
    import json

    d = _SlurmPath(study_dir)
    cap = json.loads((d / "plan.json").read_text())["settings"].get("max_call_s")
    ops = (json.loads((d / "gate" / f"{build}.json").read_text()).get("ops") or {}).get(scheme) or {}
    return {op for op, secs in ops.items() if cap and secs > cap}


# --- the families of issue 21: a family's ref and avx2 builds, a test-only family file ----------------

def ref_and_avx2(tree, family, driver):
    """A family's ref and, where this CPU has what avx2 needs, avx2 (gcc), from the build cache when warm."""
    from pqsimd import catalog, machine
    from pqsimd.build import build_variant

    variants = catalog.builtin_variants()
    out = {"ref": build_variant(tree, family, variants["ref"], "gcc", driver)}
    if set(variants["avx2"].requires_cpu) <= machine.cpu_flags():
        out["avx2"] = build_variant(tree, family, variants["avx2"], "gcc", driver)
    return out


def fixture_family(tmp, monkeypatch, name, text):
    """The family file `text` (its op table one of harness/ops/), found through PQSIMD_FAMILY_PATH."""
    from pqsimd import catalog

    d = _SlurmPath(tmp) / "families"
    d.mkdir()
    (d / f"{name}.toml").write_text(text)
    monkeypatch.setenv("PQSIMD_FAMILY_PATH", str(d))
    return catalog.families()[name]


def tree_subset(tree, tmp, dirs):
    """A copy of common/ and `dirs` of the PQClean tree (e.g. one scheme and its KAT program), to edit."""
    import shutil

    from pqsimd.sources import SourceTree

    root = _SlurmPath(tmp) / "pqclean"
    for d in ("common", *dirs):
        shutil.copytree(tree.root / d, root / d)
    return SourceTree(root=root, origin="path")


def drivers_of(d) -> list[int]:
    """Pids of live driver processes timing for study d (their spec file lies in d/raw); a zombie
    (exited, not yet reaped) runs nothing and is not counted."""
    out = []
    for p in _SlurmPath("/proc").iterdir():
        if p.name.isdigit():
            try:
                cmd = (p / "cmdline").read_bytes().split(b"\0")
                state = (p / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if len(cmd) > 2 and cmd[0].endswith(b"/driver") and str(d).encode() in cmd[2] and state != "Z":
                out.append(int(p.name))
    return out


# --- Lanes: the fast lane leaves out every test that runs a real study ---------------------------
# `make test-fast` (pytest -m "not study") is the lane a developer runs while editing: pure Python and
# small fixtures. A test is in the study lane when it, or a fixture it uses (however deep), builds a
# variant, runs the pqsimd command or a study, or needs the SLURM cluster: found from their source,
# so a new test is sorted without anyone remembering to mark it.
import inspect as _lane_inspect
import re as _lane_re

_STUDY_WORDS = _lane_re.compile(r"\bPQSIMD\b|\brun_cli\b|\bcli\(|\bbuild_variant\b|\bbuild_variants\b|\brun_study\b|"
                                r"\bslurm_cluster\b|\brun_job\b|\bmake_campaign_study\b|\bsubprocess\.(run|Popen)\(")
_lane_seen: dict = {}


def _runs_a_study(func) -> bool:
    if func not in _lane_seen:
        try:
            src = _lane_inspect.getsource(func)
        except (OSError, TypeError):
            src = ""
        _lane_seen[func] = bool(_STUDY_WORDS.search(src))
    return _lane_seen[func]


def pytest_collection_modifyitems(config, items):
    for item in items:
        funcs = [getattr(item, "function", None)]
        info = getattr(item, "_fixtureinfo", None)
        for defs in (info.name2fixturedefs.values() if info else []):
            funcs += [d.func for d in defs]
        if any(f is not None and _runs_a_study(f) for f in funcs):
            item.add_marker(_eng_pytest.mark.study)
        # `make test` runs on both CPUs (pytest-xdist, --dist loadgroup): a module's tests stay on one worker (its
        # module-scoped builds are made once), and every test of the one-node SLURM cluster on the same worker
        # (one cluster per machine: its daemons listen on fixed ports)
        uses_slurm = "slurm_cluster" in (getattr(item, "fixturenames", None) or ())
        item.add_marker(_eng_pytest.mark.xdist_group("slurm" if uses_slurm else item.module.__name__))


# -- tools a test needs ---------------------------------------------------------------------------------
# `make test` (CI) installs every tool the suite uses and sets PQSIMD_REQUIRE_TOOLS=1: there a missing
# tool is a failure. Elsewhere (make test-fast on a developer's machine) the tests that need it skip,
# each with the reason, and the rest still run.

def require_tool(reason: str) -> None:
    if _share_os.environ.get("PQSIMD_REQUIRE_TOOLS"):
        _eng_pytest.fail(f"PQSIMD_REQUIRE_TOOLS is set but {reason}", pytrace=False)
    _eng_pytest.skip(reason, allow_module_level=True)
