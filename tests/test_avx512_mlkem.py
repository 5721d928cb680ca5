"""ML-KEM's AVX-512 variants (issue 44): avx512vl (PQClean avx2 with XKCP's 4-way AVX-512VL Keccak linked in
through the pqclean layout's crate_units) and avx2-evex (the avx2 code compiled with AVX-512 allowed) pass
the gate byte for byte (PQClean's KAT), and their code is what they claim: XKCP's vpternlogq/vprolq Keccak
in avx512vl, none in avx2; bad crate_units data is one line."""

from __future__ import annotations

import subprocess

import pytest

from pqsimd import catalog, machine, verify
from pqsimd.build import build_variant
from pqsimd.errors import PqsimdError
from pqsimd.sources import pqclean

SCHEME = "ml-kem-768"
NEEDS = {"avx2", "bmi2", "popcnt", "avx512f", "avx512vl", "avx512bw"}


def _evex_counts(lib) -> dict[str, int]:
    text = subprocess.run(["objdump", "-d", str(lib)], capture_output=True, text=True, check=True).stdout
    return {m: text.count(m) for m in ("vpternlogq", "vprolq")}


def test_avx512_variants_gate_and_link_what_they_say(tree, driver):
    if not NEEDS <= machine.cpu_flags():
        pytest.skip("this CPU lacks AVX-512F/VL/BW")
    fam, variants = catalog.families()["ml-kem"], catalog.builtin_variants()
    builds = {v: build_variant(tree, fam, variants[v], "gcc", driver, schemes=[SCHEME]) for v in ("avx2", "avx512vl", "avx2-evex")}
    results = verify.gate(tree, driver, list(builds.values()), [SCHEME])
    for bid, r in results.items():
        assert r.passed, (bid, [c.to_dict() for c in r.checks if not c.passed])
    plain, vl, evex = (_evex_counts(builds[v].library) for v in ("avx2", "avx512vl", "avx2-evex"))
    assert plain == {"vpternlogq": 0, "vprolq": 0}
    assert vl["vpternlogq"] > 0 and vl["vprolq"] > 0 and evex["vpternlogq"] > 0
    # only the Keccak unit has AVX-512 in avx512vl: its flags are the avx2 variant's
    assert builds["avx512vl"].flags == builds["avx2"].flags


@pytest.mark.parametrize("bad, needle", [
    ({"crate_units": {"crate": "xkcp-sys", "tree": "XKCP/lib"}}, "crate_units `units` must be a list"),
    ({"crate_units": {"crate": "xkcp-sys", "tree": "XKCP/lib", "units": ["a.c"], "flags": []}}, "crate_units` must be a table"),
    ({"folder": "a/b"}, "`folder` must name an implementation folder"),
])
def test_bad_crate_units_are_one_line(bad, needle):
    with pytest.raises(PqsimdError, match=needle) as e:
        pqclean.check(bad, "ml-kem.toml: implementations.x")
    assert "\n" not in str(e.value)
