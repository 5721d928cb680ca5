"""Build stage: cache by sources + flags + compiler, exact commands recorded, flags last."""

import shutil

import pytest

from pqsimd import catalog
from pqsimd.build import build_variant
from pqsimd.catalog import Variant
from pqsimd.errors import PqsimdError


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PQSIMD_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_cache_hit_miss_and_key(tree, private_cache):
    ref = catalog.builtin_variants()["refo0"]
    first = build_variant(tree, ref, "gcc")
    assert not first.cached and first.harness.exists()
    again = build_variant(tree, ref, "gcc")
    assert again.cached and again.key == first.key and again.harness == first.harness
    other = build_variant(tree, Variant(id="refo0", sources="clean", flags=("-O0", "-fno-inline")), "gcc")
    assert other.key != first.key and not other.cached
    assert len(list((private_cache / "builds").iterdir())) == 2


def test_commands_are_recorded_with_variant_flags_last(tree, private_cache):
    v = Variant(id="x", sources="clean", flags=("-O1", "-fno-tree-vectorize"))
    b = build_variant(tree, v, "gcc")
    compiles = [c for c in b.commands if " -c " in c]
    # one ops table per parameter set, every PQClean file of all three sets, common code
    assert sum("ops_mlkem.c" in c for c in compiles) == 3
    assert any("ml-kem-1024/clean/ntt.c" in c for c in compiles)
    assert any("common/fips202.c" in c for c in compiles)
    for c in compiles:
        if "/harness/" in c and "ops_mlkem.c" not in c:
            assert c.endswith("-O2 -std=c11")  # the timing loop is the same code in every variant
        else:
            assert c.endswith("-O1 -fno-tree-vectorize")
    assert any("-z,noexecstack" in c for c in b.commands if " -o " in c and " -c " not in c)


def test_clang_gets_its_own_no_vectorize_flags(tree, private_cache):
    if shutil.which("clang") is None:
        pytest.skip("clang is not installed")
    b = build_variant(tree, catalog.builtin_variants()["refnv"], "clang")
    assert b.flags == ["-O3", "-fno-vectorize", "-fno-slp-vectorize"]
    assert b.compiler.is_clang
    from pqsimd import verify

    assert verify.check_kat(tree, b, "ml-kem-512").passed  # a second compiler, same KAT


def test_compile_error_names_variant_and_file(tree, private_cache):
    with pytest.raises(PqsimdError, match=r"variant bad: .* does not compile with gcc -O2 -fno-such-flag"):
        build_variant(tree, Variant(id="bad", sources="clean", flags=("-O2", "-fno-such-flag")), "gcc")
    assert not [p for p in (private_cache / "builds").iterdir() if p.is_dir()]  # nothing half-built counts
    assert "-fno-such-flag" in (private_cache / "builds" / "failed-bad.log").read_text()
