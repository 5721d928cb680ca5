"""The paired design's A/A check: `--aa VARIANT` builds the variant twice under two ids, times both in
every paired job, and analyze compares them with the study's own estimand, interval, family level and
verdict rule (a true speedup of 1: faster/slower would be false). A real run of ML-KEM-512."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from conftest import one_line_error, run_cli

OPS = "ntt,poly_tomsg,poly_frommsg,empty"


@pytest.fixture(scope="module")
def aa_study(tmp_path_factory):
    d = tmp_path_factory.mktemp("aa") / "s"
    r = run_cli("run", d, "--preset", "quick", "--schemes", "ml-kem-512", "--ops", OPS, "--variants", "ref,avx2",
                "--aa", "avx2", "--jobs", "6")
    assert r.returncode == 0, r.stderr
    r = run_cli("analyze", d)
    assert r.returncode == 0, r.stderr
    return d


def test_the_duplicate_is_built_gated_and_timed_in_every_paired_job(aa_study):
    d = aa_study
    assert (d / "bin" / "avx2+aa.gcc.ml-kem.so").exists() and (d / "bin" / "avx2.gcc.ml-kem.so").exists()
    assert json.loads((d / "gate" / "avx2+aa.gcc.ml-kem.json").read_text())["passed"]
    spins = pd.read_parquet(d / "results" / "spins.parquet")
    per_job = spins.groupby("job", observed=True)["variant"].apply(lambda v: set(map(str, v)))
    assert all(v == {"ref", "avx2", "avx2+aa"} for v in per_job)


def test_the_aa_comparisons_use_the_studys_rule_and_stay_out_of_its_family(aa_study):
    d = aa_study
    aa = pd.read_csv(d / "results" / "aa.csv")
    c = pd.read_csv(d / "results" / "comparisons.csv")
    s = json.loads((d / "results" / "summary.json").read_text())
    ops = [o for o in OPS.split(",") if o != "empty"]
    assert sorted(aa["op"]) == sorted(ops) and set(aa["baseline"]) == {"avx2"} and set(aa["variant"]) == {"avx2+aa"}
    assert set(aa["method"]) == {"sign"} and (aa["ci_level"] >= s["family"]["level"]).all()
    # printed at the family's level, which the A/A rows do not change: the family is the study's own rows
    assert s["family"]["m"] == len(c) and "avx2+aa" not in set(c["variant"]) | set(c["baseline"])
    a = s["aa_check"]
    assert a["ran"] and a["kind"] == "duplicate build" and a["pairs"] == {"avx2": "avx2+aa"}
    assert a["comparisons"] == len(ops) and a["false_verdicts"] == int(aa["verdict"].isin(["faster", "slower"]).sum())
    # what a reader sees: show's header line and the HTML methods
    r = run_cli("show", d)
    assert r.returncode == 0 and "A/A: duplicate build:" in r.stdout
    import re

    rows = [line for line in r.stdout.splitlines() if re.match(r"^\S*\s+avx2\+aa\S*\s+[\d,.]+", line)]
    assert not rows  # the duplicate is reported in the A/A line, not as a variant row


def test_the_duplicate_survives_a_resumed_run_and_bad_aa_is_one_line(aa_study, tmp_path):
    r = run_cli("run", aa_study)  # continuing the finished study: nothing to do, no refusal
    assert r.returncode == 0 and "0 to run" in r.stderr, r.stderr
    one_line_error(run_cli("run", tmp_path / "x", "--schemes", "ml-kem-512", "--variants", "ref", "--aa", "avx2"),
                   "--aa avx2", "not a variant of this study")
    (tmp_path / "y").mkdir()
    (tmp_path / "y" / "study.toml").write_text('[variants."ref+aa"]\nsources = "clean"\nflags = ["-O0"]\n')
    one_line_error(run_cli("run", tmp_path / "y", "--schemes", "ml-kem-512", "--variants", "ref", "--aa", "ref"),
                   "ref+aa", "not the A/A duplicate")


def test_the_duplicate_is_sized_exactly_like_its_original(aa_study):
    """The A/A pair differs only in its id: the sizing gives the duplicate its original's batch, so
    every raw sample of the two has the same number of calls (a batch of its own would make A/A
    measure the batch-size effect too)."""
    sizing = json.loads((aa_study / "sizing.json").read_text())
    ops = sizing["schemes"]["ml-kem-512"]["ops"]
    assert ops and all(o["batch"]["avx2+aa.gcc.ml-kem"] == o["batch"]["avx2.gcc.ml-kem"] for o in ops.values())
    raw = pd.concat([pd.read_parquet(f, columns=["op", "variant", "batch"]) for f in (aa_study / "raw").glob("*.parquet")])
    raw = raw[raw["variant"].isin(["avx2", "avx2+aa"])]
    per = raw.groupby(["op", "variant"], observed=True)["batch"].agg(lambda b: tuple(sorted(set(b)))).unstack()
    assert len(per) == len(OPS.split(",")) and (per["avx2"] == per["avx2+aa"]).all()


def test_the_sizing_gives_a_duplicate_its_originals_probe():
    from pqsimd.run.sizing import like_originals

    probed = {"avx2.gcc.ml-kem": (66, 1066), "avx2+aa.gcc.ml-kem": (64, 1030), "ref.gcc.ml-kem": (9, 1200),
              "ref+aa.clang.ml-kem": (10, 1300)}  # ref+aa's original under clang was not probed: kept as is
    got = like_originals(probed)
    assert got["avx2+aa.gcc.ml-kem"] == (66, 1066) and got["ref.gcc.ml-kem"] == (9, 1200)
    assert got["ref+aa.clang.ml-kem"] == (10, 1300) and probed["avx2+aa.gcc.ml-kem"] == (64, 1030)


def test_without_a_budget_the_duplicate_and_every_copy_take_the_originals_batch(tmp_path):
    """No time budget: the driver auto-batches in every job. The duplicate and the layout copies of
    a build are the same code: they take the first copy's batch in each job (spec `batch_of`), so the
    A/A comparison never measures a batch-size effect."""
    import pyarrow.parquet as pq

    d = tmp_path / "s"
    r = run_cli("run", d, "--preset", "quick", "--schemes", "ml-kem-512", "--ops", "poly_tomsg,poly_frommsg,empty",
                "--variants", "ref,avx2", "--aa", "avx2", "--jobs", "3", "--budget", "0", "--layouts", "2",
                "--spins", "4", "--reps", "3")
    assert r.returncode == 0, r.stderr
    raws = [p for p in (d / "raw").glob("paired.*.parquet")]
    assert len(raws) == 3
    for p in raws:
        t = pq.read_table(p).to_pandas()
        for op, g in t.groupby("op"):
            k = g.groupby("variant")["batch"].unique()
            assert len(k["avx2"]) == 1 and list(k["avx2+aa"]) == list(k["avx2"]), (p.name, op, k.to_dict())
