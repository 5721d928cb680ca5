"""Build stage: the driver built once with the fixed toolchain, variants as shared objects that
export one symbol, a cache keyed by every input, exact commands recorded with the variant's flags
last, compiler-family flag spellings from data, failures in one line, killed builds cleaned up."""

import os
import shutil
import subprocess

import pytest

from conftest import require_tool

from pqsimd import catalog
from pqsimd.build import build_driver, build_variant, cache_root, clean_stale_builds, find_compiler
from pqsimd.catalog import Variant
from pqsimd.errors import PqsimdError


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PQSIMD_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_cache_hit_miss_and_key(tree, private_cache, mlkem):
    ref = catalog.builtin_variants()["refo0"]
    first = build_variant(tree, mlkem, ref, "gcc")
    assert not first.cached and first.library.exists() and set(first.kat) == set(mlkem.schemes)
    again = build_variant(tree, mlkem, ref, "gcc")
    assert again.cached and again.key == first.key and again.library == first.library
    other = build_variant(tree, mlkem, Variant(id="refo0", sources="clean", flags=("-O0", "-fno-inline")), "gcc")
    assert other.key != first.key and not other.cached
    variant_dirs = [p for p in (private_cache / "builds").iterdir() if p.name.startswith("refo0.")]
    assert len(variant_dirs) == 2


def test_variant_exports_one_symbol_and_calls_bind_locally(builds):
    out = subprocess.run(["nm", "-D", "--defined-only", str(builds["avx2"].library)], capture_output=True, text=True).stdout
    defined = [l.split()[-1] for l in out.splitlines() if l.strip()]
    assert defined == ["pqsimd_variant_entry"], defined
    dis = subprocess.run(["objdump", "-d", str(builds["avx2"].library)], capture_output=True, text=True).stdout
    plt_calls = {l.split("<")[-1].rstrip(">") for l in dis.splitlines() if "call" in l and "@plt>" in l}
    assert plt_calls and all(not c.startswith("PQCLEAN") for c in plt_calls), plt_calls  # only libc via the PLT


def test_commands_recorded_flags_last_and_driver_built_once(tree, private_cache, mlkem):
    v = Variant(id="x", sources="clean", flags=("-O1", "-fno-tree-vectorize"))
    d = build_driver()
    b = build_variant(tree, mlkem, v, "gcc", d)
    compiles = [c for c in b.commands if " -c " in c]
    # one op table per parameter set, every PQClean file of every set, common code
    assert sum("ops/ml_kem.c" in c for c in compiles) == len(mlkem.schemes)
    assert any("ml-kem-1024/clean/ntt.c" in c for c in compiles)
    assert any("common/fips202.c" in c for c in compiles)
    assert not any("randombytes.c" in c for c in compiles)  # the harness brings its own randomness
    for c in compiles:
        assert c.endswith("-O1 -fno-tree-vectorize") and "-fvisibility=hidden" in c
    assert not any("/driver/" in c for c in compiles)  # timing code is never built by the compiler under test
    assert any("--version-script" in c for c in b.commands)
    # the driver: the fixed toolchain of data/compilers.toml, built once for every variant
    again = build_driver()
    assert again.path == d.path and d.path.exists()
    assert d.compiler.command == catalog.compilers_doc()["harness"]["cc"]


def test_flag_spellings_per_compiler_family_are_data(tree, private_cache, mlkem):
    refnv = catalog.builtin_variants()["refnv"]
    assert "@no-vectorize" in refnv.flags
    assert catalog.translate_flags(refnv.flags, "gcc") == ["-O3", "-fno-tree-vectorize"]
    assert catalog.translate_flags(refnv.flags, "clang") == ["-O3", "-fno-vectorize", "-fno-slp-vectorize"]
    with pytest.raises(PqsimdError, match="no spelling"):
        catalog.translate_flags(("-O2", "@no-such"), "gcc", "v")
    if shutil.which("clang") is None:
        require_tool("clang is not installed (make test installs it as root; see the README)")
    b = build_variant(tree, mlkem, refnv, "clang")
    assert b.flags == ["-O3", "-fno-vectorize", "-fno-slp-vectorize"] and b.compiler.family == "clang"
    from pqsimd import verify

    assert verify.check_kat(tree, b, "ml-kem-512").passed  # a second compiler, same KAT


def test_compile_error_names_variant_file_and_log(tree, private_cache, mlkem):
    with pytest.raises(PqsimdError, match=r"variant bad \(ml-kem\): .* does not compile with gcc -O2 -fno-such-flag") as e:
        build_variant(tree, mlkem, Variant(id="bad", sources="clean", flags=("-O2", "-fno-such-flag")), "gcc")
    assert "\n" not in str(e.value) and "log:" in str(e.value)
    assert not [p for p in (private_cache / "builds").iterdir() if p.name.startswith(("bad.", ".tmp-"))]
    assert "-fno-such-flag" in (private_cache / "builds" / "failed-bad.gcc.ml-kem.log").read_text()


def test_link_error_quotes_the_error_not_a_warning(tree, private_cache, mlkem):
    v = Variant(id="badlink", sources="clean", flags=("-O1", "-Wl,--no-such-linker-option"))
    with pytest.raises(PqsimdError) as e:
        build_variant(tree, mlkem, v, "gcc")
    msg = str(e.value)
    assert "linking" in msg and "no-such-linker-option" in msg and "warning" not in msg.lower() and "log:" in msg


def test_killed_build_leaves_no_temporary_folder(private_cache):
    root = cache_root()
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = root / f".tmp-{dead.pid}-ref.gcc.ml-kem-abc"
    stale.mkdir()
    (stale / "half.o").write_bytes(b"x")
    live = root / f".tmp-{os.getpid()}-ref.gcc.ml-kem-def"
    live.mkdir()
    removed = clean_stale_builds(root)
    assert stale in removed and not stale.exists() and live.exists()


def test_bad_cache_location_is_one_line(tmp_path, monkeypatch):
    f = tmp_path / "afile"
    f.write_text("")
    monkeypatch.setenv("PQSIMD_CACHE", str(f))
    with pytest.raises(PqsimdError, match="PQSIMD_CACHE") as e:
        cache_root()
    assert "\n" not in str(e.value)


def test_missing_compiler_names_the_package():
    with pytest.raises(PqsimdError, match=r"apt-get install clang-99"):
        find_compiler("clang-99")
    with pytest.raises(PqsimdError, match="compiler id"):
        find_compiler("bad/id=gcc")


def test_a_source_tree_with_only_the_selected_parameter_set_builds_and_times(tree, tmp_path, cli):
    """--source may hold one parameter set of a family: the build holds what the tree has."""
    root = tmp_path / "pqclean"
    for sub in ("common", "test"):
        shutil.copytree(tree.root / sub, root / sub, symlinks=True)
    shutil.copytree(tree.root / "crypto_kem" / "ml-kem-512", root / "crypto_kem" / "ml-kem-512", symlinks=True)
    d = tmp_path / "s"
    r = cli("run", d, "--source", root, "--schemes", "ml-kem-512", "--variants", "ref", "--ops", "ntt,empty",
            "--preset", "quick", "--jobs", "1", "--spins", "2", "--reps", "2", "--budget", "0")
    assert r.returncode == 0, r.stderr
    assert (d / "raw" / "paired.ml-kem-512.0.parquet").exists()
    r = cli("run", tmp_path / "t", "--source", root, "--schemes", "ml-kem-768", "--variants", "ref", "--no-run")
    assert r.returncode == 1 and "Traceback" not in r.stderr  # the set the tree lacks: its gate says so
    assert "the source tree has no ml-kem-768" in " ".join(r.stderr.split()), r.stderr
