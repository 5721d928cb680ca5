"""The keccak family (Keccak-p[1600] from XKCP, crate xkcp-sys 0.0.5): its plain, AVX2 and AVX-512 builds
pass the gate (SHAKE-256 through the build's 1-, 4- and 8-way permutations, against hashlib), their
digests equal a pure-Python Keccak-f[1600] sponge written here (a second, independent oracle), a build
whose 4-/8-way permutation corrupts one lane fails the gate, and the family's data is what the issue says."""

from __future__ import annotations

import hashlib

import pytest

from pqsimd import catalog, machine, verify
from pqsimd.build import build_variant
from pqsimd.verify import kinds

SCHEME = "keccak-p1600"
AVX512 = {"avx512f", "avx512vl", "avx512bw"}

# --- a pure-Python Keccak-f[1600] (FIPS 202, section 3), independent of XKCP and of hashlib ----------

_RC = []
_r = 1
for _ in range(24):
    c = 0
    for j in range(7):
        if _r & 1:
            c |= 1 << ((1 << j) - 1)
        _r = ((_r << 1) ^ 0x71) & 0xFF if _r & 0x80 else _r << 1
    _RC.append(c)
_ROT = [[0] * 5 for _ in range(5)]
_x, _y = 1, 0
for _t in range(24):
    _ROT[_x][_y] = ((_t + 1) * (_t + 2) // 2) % 64
    _x, _y = _y, (2 * _x + 3 * _y) % 5
M = (1 << 64) - 1


def _rol(v: int, n: int) -> int:
    return ((v << n) | (v >> (64 - n))) & M if n else v


def keccak_f(lanes: list[int]) -> list[int]:
    a = [[lanes[x + 5 * y] for y in range(5)] for x in range(5)]
    for rc in _RC:
        c = [a[x][0] ^ a[x][1] ^ a[x][2] ^ a[x][3] ^ a[x][4] for x in range(5)]
        d = [c[(x - 1) % 5] ^ _rol(c[(x + 1) % 5], 1) for x in range(5)]
        a = [[a[x][y] ^ d[x] for y in range(5)] for x in range(5)]
        b = [[0] * 5 for _ in range(5)]
        for x in range(5):
            for y in range(5):
                b[y][(2 * x + 3 * y) % 5] = _rol(a[x][y], _ROT[x][y])
        a = [[b[x][y] ^ (~b[(x + 1) % 5][y] & b[(x + 2) % 5][y]) for y in range(5)] for x in range(5)]
        a[0][0] ^= rc
    return [a[i % 5][i // 5] for i in range(25)]


def shake256_python(msg: bytes, outlen: int) -> bytes:
    rate = 136
    padded = bytearray(msg) + b"\x1f" + bytes((-len(msg) - 1) % rate)
    padded[-1] |= 0x80
    st = [0] * 25
    for off in range(0, len(padded), rate):
        block = padded[off:off + rate]
        for i in range(rate // 8):
            st[i] ^= int.from_bytes(block[8 * i:8 * i + 8], "little")
        st = keccak_f(st)
    out = b""
    while True:
        out += b"".join(v.to_bytes(8, "little") for v in st)[:rate]
        if len(out) >= outlen:
            return out[:outlen]
        st = keccak_f(st)


def test_the_python_permutation_is_keccak_f():
    """The test's own oracle: Keccak-f[1600] of the zero state (XKCP's KeccakF-1600-IntermediateValues.txt
    first lane) and SHAKE-256 equal to hashlib's, at the rate's edges."""
    assert keccak_f([0] * 25)[0] == 0xF1258F7940E1DDE7
    for n in (0, 135, 136, 137, 300):
        m = bytes(range(256))[: n % 256] * (1 + n // 256)
        m = m[:n]
        assert shake256_python(m, 200) == hashlib.shake_256(m).digest(200)


# --- the builds -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def family():
    return catalog.families()["keccak"]


@pytest.fixture(scope="module")
def builds(tree, family, driver):
    variants = catalog.builtin_variants()
    names = ["plain", "avx2"] + (["avx512"] if AVX512 <= machine.cpu_flags() else [])
    return {v: build_variant(tree, family, variants[v], "gcc", driver) for v in names}


def test_family_is_the_issue_s(family):
    assert family.kind == "hash" and list(family.schemes) == [SCHEME]
    assert [o for o in family.ops if o != family.self_check] == ["permute_x1", "permute_x4", "permute_x8"]
    assert set(family.implementations) == {"plain", "avx2", "avx512"}
    assert {i.table["crate"] for i in family.implementations.values()} == {"xkcp-sys"}
    assert set(family.implementation("avx512").requires_cpu) <= AVX512
    v = catalog.builtin_variants()
    assert v["avx512"].sources == "avx512" and AVX512 <= set(v["avx512"].requires_cpu)


def test_gate_passes_and_digests_equal_the_python_sponge(tree, driver, family, builds):
    results = verify.gate(tree, driver, list(builds.values()), [SCHEME])
    for bid, r in results.items():
        assert r.passed, (bid, [c.to_dict() for c in r.checks if not c.passed])
        assert {"permute_x1", "permute_x4", "permute_x8"} <= set(r.ops[SCHEME])
    vectors = verify.vectors_for(SCHEME)
    assert len(vectors) == 8 and {len(v.message) for v in vectors} >= {0, 135, 136, 137}
    for name, b in builds.items():
        answers = verify.run_vectors(driver.path, b.library, SCHEME, vectors)
        for v, a in zip(vectors, answers):
            outlen = int(v.line.split()[1])
            assert a["digest"] == shake256_python(v.message, outlen), (name, len(v.message), outlen)


def test_a_corrupted_lane_fails_the_gate(tree, driver, family):
    """A build whose N-way permutations flip one bit of lane 2 (PQSIMD_KECCAK_FAULT): the 4-way and 8-way
    states differ from the single-state sponge's, the digest is spoiled, and hashlib's check names it."""
    bad = catalog.variant_from_dict("plain-fault", {"sources": "plain", "flags": ["-O3", "-DPQSIMD_KECCAK_FAULT=2"]},
                                    "test")
    b = build_variant(tree, family, bad, "gcc", driver)
    answers = verify.run_vectors(driver.path, b.library, SCHEME, verify.vectors_for(SCHEME))
    gate = family.gate_for(SCHEME)
    problems = [kinds.hash_check(i, a, v, gate) for i, (a, v) in enumerate(zip(answers, verify.vectors_for(SCHEME)))]
    assert all("differs from Python's hashlib.shake_256" in p for p in problems), problems
    r = verify.gate(tree, driver, [b], [SCHEME])[b.id]
    assert not r.passed


# --- a host without AVX-512 (simulated: PQSIMD_HIDE_CPU_FLAGS) ---------------------------------------

def test_hidden_flags_leave_cpu_flags_and_doctor_says_which_avx512_subsets(monkeypatch):
    from pqsimd import doctor

    real = machine.cpu_flags()
    if not {"avx2"} <= real:
        pytest.skip("an x86-64 host with AVX2 is needed")
    monkeypatch.setenv(machine.HIDE_ENV, "avx512f, avx512vl avx512bw")
    assert machine.cpu_flags() == real - AVX512
    rows = {f.name: f for f in doctor.findings()}
    subsets = rows["cpu: AVX-512 subsets"]
    assert "F," not in subsets.detail + "," and "hides avx512bw, avx512f, avx512vl" in subsets.detail
    # an opt-in variant's feature absent is a note, not a problem: the default study still runs here
    assert rows["cpu: avx512f"].ok is None and "variant avx512" in rows["cpu: avx512f"].remedy
    ok, line = doctor.verdict(list(rows.values()))
    assert ok
    monkeypatch.setenv(machine.HIDE_ENV, "avx2")
    rows = {f.name: f for f in doctor.findings()}
    assert rows["cpu: avx2"].ok is False and not doctor.verdict(list(rows.values()))[0]
    monkeypatch.delenv(machine.HIDE_ENV)
    have = {f.removeprefix("avx512").lstrip("_").upper() for f in real if f.startswith("avx512")}
    detail = {f.name: f for f in doctor.findings()}["cpu: AVX-512 subsets"].detail
    assert set(detail.split(", ")) == have or (not have and detail.startswith("none"))


def test_without_avx512_the_variant_is_skipped_in_one_line_and_the_rest_gates(tmp_path, cli):
    import os

    env = {**os.environ, machine.HIDE_ENV: "avx512f avx512vl avx512bw"}
    r = cli("run", tmp_path / "s", "--schemes", SCHEME, "--variants", "plain,avx2,avx512", "--preset", "quick",
            "--no-run", env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    out = r.stdout + r.stderr
    skips = [l for l in out.splitlines() if "skip" in l and "avx512" in l]
    assert len(skips) == 1 and skips[0].endswith("this CPU lacks avx512f, avx512vl, avx512bw"), skips
    assert "gate plain (gcc, keccak): passed" in out and "gate avx2 (gcc, keccak): passed" in out


def test_per_unit_view_is_checked_and_analysed_with_intervals(family):
    """analyze/perunit divides each op's spins by its units per call and compares op to op within a build,
    paired by job: on known values, the per-unit speedup is exactly the jobs' ratio, its interval their range;
    counts are exact; explain prints the results/per_unit rows it reads."""
    import numpy as np
    import pandas as pd

    from pqsimd import familyschema
    from pqsimd.analysis_settings import Settings
    from pqsimd.analyze.groups import Group
    from pqsimd.analyze.perunit import per_unit_table
    from pqsimd.errors import PqsimdError
    from pqsimd.report.explain import per_unit_text

    pu = family.views["per_unit"]
    assert pu["unit"] == "permutation" and pu["ops"] == {"permute_x1": 1, "permute_x4": 4, "permute_x8": 8}
    fams = {"keccak": {"schemes": {SCHEME: {}}, "views": {"per_unit": pu}}}
    jobs = [f"j{i}" for i in range(8)]
    # per job j: x4 takes 700 * (1 + j/100) ticks, x8 1000 * (1 + j/100) * w_j: the per-permutation ratio in
    # job j is (700/4) / (1000/8 * w_j) = 1.4 / w_j
    w = np.array([1.0, 0.98, 1.02, 0.99, 1.01, 0.97, 1.03, 1.0])

    def group(metric, op, per_job):
        jitter = 0.001 if metric == "ticks" else 0.0  # counts are exact: every spin the same
        vals = np.repeat(per_job, 5) * (1 + np.tile(np.linspace(-jitter, jitter, 5), len(jobs)))
        return Group(metric, SCHEME, op, "avx512", "gcc", vals, np.repeat(np.arange(len(jobs)), 5),
                     np.tile(np.arange(5), len(jobs)), list(jobs), 10)

    drift = 1 + np.arange(8) / 100
    groups = {("ticks", SCHEME, "permute_x4", "avx512", "gcc"): group("ticks", "permute_x4", 700 * drift),
              ("ticks", SCHEME, "permute_x8", "avx512", "gcc"): group("ticks", "permute_x8", 1000 * drift * w),
              ("instructions", SCHEME, "permute_x4", "avx512", "gcc"): group("instructions", "permute_x4",
                                                                            np.full(8, 2887.0)),
              ("instructions", SCHEME, "permute_x8", "avx512", "gcc"): group("instructions", "permute_x8",
                                                                            np.full(8, 2868.0))}
    t = per_unit_table(groups, fams, Settings(alpha=0.05, threshold=0.02))
    ticks = t[t["metric"] == "ticks"].iloc[0]
    assert (ticks["op_from"], ticks["op_to"], ticks["design"]) == ("permute_x4", "permute_x8", "paired")
    ratios = np.sort(1.4 / w)
    assert ticks["speedup"] == pytest.approx(float(np.median(ratios)), rel=1e-9)
    assert ratios[0] - 1e-9 <= ticks["ci_low"] <= ticks["speedup"] <= ticks["ci_high"] <= ratios[-1] + 1e-9
    assert ticks["ci_level"] >= 0.95 and ticks["verdict"] == "faster"
    ins = t[t["metric"] == "instructions"].iloc[0]
    assert ins["design"] == "exact" and ins["speedup"] == pytest.approx((2887 / 4) / (2868 / 8))
    assert ins["per_unit_from"] == pytest.approx(2887 / 4) and ins["ci_low"] == ins["ci_high"]
    text = per_unit_text(t, SCHEME, "gcc", "TSC ticks")
    assert text.startswith("avx512: permute_x4 ") and "→ permute_x8 " in text and "faster)" in text
    assert text.endswith("(TSC ticks per permutation; speedup per permutation with its interval)")
    # a family without the view: no rows
    assert per_unit_table(groups, {"keccak": {"schemes": {SCHEME: {}}, "views": {}}}, Settings()).empty
    for bad, needle in (({"unit": "p", "ops": {"permute_x4": 0}}, "per_unit ops.permute_x4"),
                        ({"unit": "p", "ops": {"nope": 2}}, "names op 'nope'"),
                        ({"ops": {"permute_x4": 4}}, "per_unit unit")):
        with pytest.raises(PqsimdError, match=needle) as e:
            familyschema.check_views({"per_unit": bad}, tuple(family.ops), family.schemes, "keccak.toml")
        assert "\n" not in str(e.value)


def test_a_campaign_names_the_comparisons_only_some_hosts_have():
    """An AVX2-only host skipped avx512: the campaign says which comparison exists only where."""
    import pandas as pd

    from pqsimd.analyze.campaign import KEY, _only_here

    def arm(pairs):
        return pd.DataFrame([{"metric": "ticks", "scheme": SCHEME, "op": o, "baseline": b, "variant": v}
                             for b, v in pairs for o in ("permute_x4", "permute_x8")]).set_index(KEY)

    rows = {"zen5": arm([("plain", "avx2"), ("avx2", "avx512")]), "haswell": arm([("plain", "avx2")])}
    keys = [k for k in rows["zen5"].index if k in rows["haswell"].index]
    assert _only_here(rows, "zen5", keys) == "avx2 → avx512 only in zen5"


@pytest.mark.parametrize("variants", [["plain", "avx2", "avx512"], ["avx2", "avx512vl", "avx2-evex"]])
def test_the_avx512_commands_of_the_readme_warn_of_no_uncompared_variant(variants):
    """README's two AVX-512 commands compare every variant (the chain's `also` steps), so no footnote may say
    "extra variant(s) ... not compared with 'ref'" (adversarial pass, issue 45); a variant nothing compares
    is still named."""
    from pqsimd.analyze.compare import plan_pairs

    pairs, warnings = plan_pairs(catalog.chain("x86_64"), variants, ["gcc"])
    assert {v for _, _, (v, _) in pairs} | {b for _, (b, _), _ in pairs} == set(variants)
    assert not [w for w in warnings if "not compared" in w]
    _, warnings = plan_pairs(catalog.chain("x86_64"), [*variants, "wolfssl-c"], ["gcc"])
    assert [w for w in warnings if "not compared" in w and "wolfssl-c" in w and variants[-1] not in w]


def test_the_keccak_familys_hand_stage_starts_at_its_plain_c():
    """Keccak's chain has no ref: its Table 1, median column and headlines are of plain → avx2 (a 'ref → avx2'
    table was all n/a); a family with ref keeps the chain's hand stage."""
    from pqsimd import catalog

    chain = catalog.chain()
    assert chain.hand_for({"plain", "avx2", "avx512"}).stage == "hand_simd_plain"
    assert chain.hand_for({"refo0", "refnv", "ref", "avx2"}) == chain.hand
    assert chain.hand_for(set()) == chain.hand  # nothing timed: the chain's own, as before
