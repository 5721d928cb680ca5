"""`pqsimd run --ablation`: an implementation's kernel groups switched on in every subset (ablation.py),
each cell a gated variant of one paired study, the manifest's record of the design, and analyze's
attribution from it (on exact instruction counts, the shares are exact). The end-to-end study uses a
test family of two groups (4 cells) of ML-KEM-512, built from the shipped ml-kem.toml."""

import json
import tomllib

import pandas as pd
import pytest
import tomli_w
from conftest import one_line_error

from pqsimd import ablation, catalog, ids, machine

FAMILY, SCHEME = "mlkem-ablation", "mlkem-ablation-512"


def test_k_up_to_5_is_the_full_factorial_and_more_is_one_at_a_time():
    for k in range(1, 6):
        cells = ablation.subsets(tuple(f"g{i}" for i in range(k)))
        assert len(cells) == 2 ** k == len(set(cells))
    groups = tuple(f"g{i}" for i in range(7))
    cells = ablation.subsets(groups)
    assert len(cells) == 2 * 7 + 2 and () in cells and groups in cells
    assert all((g,) in cells and tuple(x for x in groups if x != g) in cells for g in groups)
    ab = ablation.Ablation("f", "v", "impl", groups, {ablation.cell_id("v", c): c for c in cells})
    assert "leave-one-out and add-one-in only (16 cells, not the 2^7 = 128" in ab.describe()
    assert ablation.cell_id("mlkem-native", ()) == "mlkem-native+none"
    assert ablation.cell_id("mlkem-native", ("ntt", "rej")) == "mlkem-native+ntt+rej"


def test_the_shipped_ablations_are_5_groups_with_readable_ids():
    variants = catalog.builtin_variants()
    for name in ("ml-kem", "ml-dsa"):
        ab = ablation.of_family(catalog.families()[name], variants)
        assert len(ab.groups) == 5 and ab.factorial and len(ab.cells) == 32
        for vid, on in ab.cells.items():
            ids.check_id("variant", vid, "test")
            assert "." not in vid and vid.split("+")[1:] == (list(on) or ["none"])
        full = ablation.cell_variants(ab, variants)[ab.variant + "+" + "+".join(ab.groups)]
        assert full.flags == variants[ab.variant].flags and set(full.native) == set(ab.groups)


def test_ablation_of_a_family_without_one_is_one_line(cli, tmp_path):
    r = cli("run", tmp_path / "s", "--schemes", "sphincs-shake-128f-simple", "--ablation", "--no-run")
    one_line_error(r, "family sphincs has no [ablation]")
    assert not (tmp_path / "s").exists()


@pytest.fixture(scope="module")
def family_path(tmp_path_factory):
    """ml-kem.toml cut down to mlkem-native with two groups (ntt, keccak4x) and one parameter set
    under its own ids; reduce, rej and compress are then in no group: always C."""
    doc = tomllib.loads(catalog.families()["ml-kem"].text)
    doc["family"], doc["default"] = FAMILY, False
    doc["schemes"] = {SCHEME: {**doc["schemes"]["ml-kem-512"], "label": "ML-KEM-512 (ablation test)"}}
    impl = doc["implementations"]["mlkem-native"]
    doc["implementations"] = {"mlkem-native": impl}
    impl["levels"] = {SCHEME: "2"}
    impl["groups"] = {g: impl["groups"][g] for g in ("ntt", "keccak4x")}
    impl["absent"] = {"poly_getnoise_eta1": impl["absent"]["poly_getnoise_eta1"]}
    doc.pop("views")
    d = tmp_path_factory.mktemp("families")
    (d / f"{FAMILY}.toml").write_text(tomli_w.dumps(doc))
    return d


@pytest.fixture(scope="module")
def study(family_path, tmp_path_factory):
    from conftest import run_cli
    import os

    if not {"avx2", "bmi2", "popcnt"} <= machine.cpu_flags():
        pytest.skip("this CPU lacks AVX2/BMI2/POPCNT: the native backend cannot run")
    env = {**os.environ, "PQSIMD_FAMILY_PATH": str(family_path)}
    d = tmp_path_factory.mktemp("ablation") / "s"
    r = run_cli("run", d, "--schemes", SCHEME, "--ablation", "--preset", "quick", "--metric", "ticks,instructions",
                "--ops", "kem_keypair_derand,kem_decaps,ntt,empty", env=env)
    assert r.returncode == 0, r.stderr
    a = run_cli("analyze", d, env=env)
    assert a.returncode == 0, a.stderr
    return d, r.stderr


def test_the_study_says_its_design_and_records_it(study):
    d, err = study
    assert f"ablation of mlkem-native ({FAMILY}): groups ntt, keccak4x; the full 2^2 factorial (4 cells)" in err
    rec = json.loads((d / "manifest.json").read_text())["ablations"]
    assert rec == [{"family": FAMILY, "variant": "mlkem-native", "implementation": "mlkem-native",
                    "groups": ["ntt", "keccak4x"], "design": "factorial",
                    "cells": {"mlkem-native+none": [], "mlkem-native+keccak4x": ["keccak4x"],
                              "mlkem-native+ntt": ["ntt"], "mlkem-native+ntt+keccak4x": ["ntt", "keccak4x"]}}]
    for vid in rec[0]["cells"]:  # every cell gated like any build, and holding the study's set only
        g = json.loads((d / "gate" / f"{vid}.gcc.{FAMILY}.json").read_text())
        assert g["passed"] and {c["check"] for c in g["checks"]} == {"nistkat", "vectors", "ops"}
        assert g["passed_schemes"] == [SCHEME]


def test_attribution_on_instructions_is_exact_and_sums_to_one(study):
    d, _ = study
    t = pd.read_parquet(d / "results" / "attribution.parquet")
    ins = t[t.metric == "instructions"].set_index(["op", "group"])
    for op in ("kem_keypair_derand", "kem_decaps"):
        rows = ins.loc[op]
        assert rows["share"].sum() == pytest.approx(1.0, abs=1e-12)
        assert list(rows["share_ci_low"]) == pytest.approx(list(rows["share"]), rel=1e-9)  # exact: no interval
        assert list(rows["share_ci_high"]) == pytest.approx(list(rows["share"]), rel=1e-9)
        assert (rows["share"] > 0.1).all() and rows["total"].iloc[0] > 1.5  # both groups matter end to end
    assert ins.loc[("ntt", "ntt"), "share"] == pytest.approx(1.0) and ins.loc[("ntt", "keccak4x"), "share"] == 0
    c = pd.read_parquet(d / "results" / "comparisons.parquet")
    ab = c[c.stage == "ablation"]
    assert set(ab.baseline) == {"mlkem-native+none"} and len(set(ab.variant)) == 3
    assert set(t.metric) == {"instructions", "ticks"}


def test_removing_ablation_from_a_measured_study_is_refused_before_any_build(study, family_path, tmp_path, cli):
    """Item 11 of issue 29: without `ablation = true` the cells would be ordinary variants, each rebuilt
    with every parameter set and then refused as "compiles differently"; the plan fixed the ablation,
    so the change is refused at once, naming it."""
    import os
    import shutil

    d, _ = study
    copy = tmp_path / "s"
    shutil.copytree(d, copy)
    text = (copy / "study.toml").read_text()
    assert "ablation = true" in text
    (copy / "study.toml").write_text(text.replace("ablation = true\n", ""))
    r = cli("run", copy, env={**os.environ, "PQSIMD_FAMILY_PATH": str(family_path)})
    one_line_error(r, "planned with ablation=True but the study now says ablation=False", "restore it")
    assert "build " not in r.stderr  # nothing was built
