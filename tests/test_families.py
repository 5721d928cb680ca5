"""Scheme families are data: the shipped ones load and match their op tables, a test-only family
(tests/fixtures/families: SHAKE-256 from PQClean's common/) runs end to end, and no scheme, op or
variant name appears in pqsimd's code outside data/."""

from __future__ import annotations

import io
import json
import re
import subprocess
import tokenize
from pathlib import Path

import pandas as pd
import pytest

from conftest import capped_ops

from pqsimd import catalog
from pqsimd.errors import PqsimdError

SRC = Path(catalog.__file__).parent
FIXTURES = Path(__file__).parent / "fixtures" / "families"


def names_in_data() -> tuple[set[str], set[str]]:
    """Every scheme, op and variant id the shipped data defines; the second set: ids distinctive
    enough (a digit, '-' or '_') to be looked for inside longer strings too."""
    ids = set()
    for fam in catalog.families().values():
        ids |= set(fam.schemes) | set(fam.ops)
    ids |= set(catalog.builtin_variants()) | set(catalog.chain().variants)
    ids -= set(catalog.KINDS)  # kinds (kem, sign, hash) are the gate's protocols, named in code on purpose
    distinctive = {i for i in ids if re.search(r"[-_0-9]", i)}
    return ids, distinctive


def string_literals(path: Path):
    for tok in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
        if tok.type == tokenize.STRING:
            yield tok.start[0], tok.string


def test_no_scheme_op_or_variant_name_in_the_code():
    ids, distinctive = names_in_data()
    hits = []
    for path in sorted(SRC.rglob("*.py")):
        if "data" in path.relative_to(SRC).parts:
            continue
        for line, lit in string_literals(path):
            body = re.sub(r"^[rbfuRBFU]*('''|\"\"\"|'|\")", "", lit)[: -1]
            body = body.rstrip("'\"")
            words = set(re.findall(r"[A-Za-z0-9][A-Za-z0-9_-]*", body))
            bad = ({body} & ids) | (words & distinctive)
            if bad:
                hits.append(f"{path.relative_to(SRC)}:{line}: {sorted(bad)}")
    assert not hits, "names that belong in data/:\n" + "\n".join(hits)


def test_shipped_families_load_and_the_default_is_marked():
    fams = catalog.families()
    assert catalog.default_family().default and catalog.default_family().name in fams
    for fam in fams.values():
        assert fam.kind in catalog.KINDS and fam.ops and fam.schemes and fam.op_table.is_file()
        assert not set(fam.views.get("table1", [])) - set(fam.ops)
        assert fam.self_check in fam.ops


def test_op_tables_match_their_family_toml(tree, driver):
    """The driver lists each built variant's ops: exactly the TOML's, in its order, less those the
    implementation declares absent for the set (`absent`, e.g. slh-dsa's Keccak ops in its SHA-2 sets)."""
    from pqsimd.build import build_variant

    variants = catalog.builtin_variants()
    for fam in catalog.families().values():
        # ref builds the clean C; a family without one (keccak: XKCP's plain C) by the first variant it has
        v = variants["ref"] if fam.implementation("clean") else next(
            x for x in variants.values() if fam.implementation(x.sources) and not x.requires_cpu)
        b = build_variant(tree, fam, v, "gcc", driver)
        out = subprocess.run([str(driver.path), "list", str(b.library)], capture_output=True, text=True, check=True).stdout
        rows = [line.split("\t") for line in out.splitlines()]
        assert [r[1] for r in rows] == list(fam.schemes)
        kinds = {"kem": "1", "sign": "2", "hash": "3"}
        impl = fam.implementation(v.sources)
        for r in rows:
            ops = [op for op in fam.ops if not impl.absent_reason(op, r[1])]
            assert r[2] == v.sources and r[3] == kinds[fam.kind] and r[4:] == ops, (fam.name, r[1])


@pytest.mark.parametrize("text, needle", [
    ('family = "x"\nkind = "kem"\nop_table = "nope.c"\n', "op table nope.c not found"),
    ('family = "x"\nkind = "cipher"\n', "kind must be one of"),
    ('family = "../x"\nkind = "kem"\n', "is not allowed"),
    ('family = "x"\nkind = "hash"\nop_table = "shake_ops.c"\n[ops]\norder = ["a"]\n', "at least one [schemes"),
])
def test_bad_family_files_are_one_line(tmp_path, monkeypatch, text, needle):
    (tmp_path / "shake_ops.c").write_text("")
    (tmp_path / "x.toml").write_text(text)
    monkeypatch.setenv("PQSIMD_FAMILY_PATH", str(tmp_path))
    with pytest.raises(PqsimdError, match=re.escape(needle)) as e:
        catalog.families()
    assert "\n" not in str(e.value)


def test_a_family_defined_only_in_test_fixtures_runs_end_to_end(tmp_path, cli):
    """The promise: a new family is one TOML file plus one op table. This one (SHAKE-256, two ops)
    is found through PQSIMD_FAMILY_PATH and goes run -> analyze -> report -> show."""
    import os

    env = {**os.environ, "PQSIMD_FAMILY_PATH": str(FIXTURES)}
    d = tmp_path / "fx"
    r = cli("run", d, "--schemes", "shake-256", "--preset", "quick", "--jobs", "2", "--spins", "6", "--reps", "3", env=env)
    assert r.returncode == 0, r.stderr
    assert sum("gate" in l and "passed" in l for l in r.stderr.splitlines()) == 4  # refo0, refnv, ref, avx2
    r = cli("report", d, env=env)
    assert r.returncode == 0, r.stderr
    rep = d / "report" / "shake"
    for f in ("table1_hand_simd.tex", "table_full.md", "fig3_hand_simd.png", "fig2_decomposition.png"):
        assert (rep / f).exists(), f
    html = (d / "report" / "index.html").read_text()
    assert "SHAKE-256 (test fixture)" in html and 'id="shake"' in html
    assert r"\pqsimdShakeSpeedup" in (d / "report" / "macros.tex").read_text()
    r = cli("show", d, env=env)
    assert r.returncode == 0 and "SHAKE-256" in r.stdout and "32 B → 1 KiB" in r.stdout
    gate = json.loads((d / "gate" / "ref.gcc.shake.json").read_text())
    assert gate["passed"] and "hash checks" in next(c for c in gate["checks"] if c["check"] == "vectors")["detail"]


def test_a_broken_fixture_family_is_refused_by_its_oracle(tmp_path, cli):
    """The hash kind's gate checks every digest against hashlib: a family whose op table digests
    wrongly fails the gate and is not timed."""
    import os
    import shutil

    fx = tmp_path / "families"
    shutil.copytree(FIXTURES, fx)
    c = (fx / "shake_ops.c").read_text()
    (fx / "shake_ops.c").write_text(c.replace("shake256(o, outlen, m, mlen);", "shake256(o, outlen, m, mlen); o[0] ^= 1;"))
    env = {**os.environ, "PQSIMD_FAMILY_PATH": str(fx)}
    r = cli("run", tmp_path / "s", "--schemes", "shake-256", "--variants", "ref", "--preset", "quick", "--jobs", "1",
            "--spins", "2", "--reps", "2", env=env)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    line = next(l for l in r.stderr.splitlines() if "gate FAILED" in l)
    assert "digest differs from Python's hashlib.shake_256" in " ".join(r.stderr.split())
    assert not list((tmp_path / "s" / "raw").glob("*.parquet")) if (tmp_path / "s" / "raw").exists() else True
    assert line


def test_a_mixed_study_of_the_three_shipped_families_runs_end_to_end(tmp_path, cli):
    """ML-KEM, ML-DSA and SPHINCS+ in one paired study (ref vs avx2, each scheme timing its own
    ops): run -> analyze -> report -> show, every family with its own tables, figures and rows."""
    schemes = ("ml-kem-768", "ml-dsa-65", "sphincs-shake-128f-simple")
    d = tmp_path / "mixed"
    r = cli("run", d, "--schemes", ",".join(schemes), "--variants", "ref,avx2", "--preset", "quick", "--jobs", "2",
            "--budget", "0.005")
    if r.returncode != 0 and "lacks" in r.stderr:
        pytest.skip("this CPU cannot run the avx2 variants")
    assert r.returncode == 0, r.stderr
    r = cli("analyze", d)
    assert r.returncode == 0, r.stderr
    summary = json.loads((d / "results" / "summary.json").read_text())
    assert set(summary["families"]) == {"ml-kem", "ml-dsa", "sphincs"}
    comparisons = pd.read_csv(d / "results" / "comparisons.csv").groupby("scheme")["op"].agg(set).to_dict()
    for scheme in schemes:
        fam = catalog.family_of(scheme)
        timed = set(comparisons[scheme])
        # its own ops, all of them but those one call of which outlasts the cap in both builds (a slow host), none
        # of the others'
        slow = capped_ops(d, f"ref.gcc.{fam.name}", scheme) & capped_ops(d, f"avx2.gcc.{fam.name}", scheme)
        assert timed == set(fam.ops) - {fam.self_check} - slow, scheme
    r = cli("report", d)
    assert r.returncode == 0, r.stderr
    html = (d / "report" / "index.html").read_text()
    for fam in ("ml-kem", "ml-dsa", "sphincs"):
        for f in ("table1_hand_simd.md", "table_full.md", "fig3_hand_simd.png"):
            assert (d / "report" / fam / f).exists(), (fam, f)
        assert f'id="{fam}"' in html
    r = cli("show", d)
    assert r.returncode == 0 and all(catalog.family_of(s).schemes[s].label in r.stdout for s in schemes)
