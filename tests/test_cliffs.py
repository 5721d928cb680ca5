"""Cliffs seen, proven and explained (analyze/cliffs.py, run/retime.py, placement.py, report/cliffs.py).

The rule on constructed copies (what it flags and what it must not); the re-timing's interval and
verdicts; and a real study of the `split` fixture family (tests/fixtures/families/split.toml: a
16-byte load from an 8-aligned object is a line-split load when the linker puts the object at 56 mod
64), whose study seed is chosen so that one or two of its copies sit there: the copy table, the flag,
`pqsimd cliffs --retime` (copies made again from their records, bytes checked, timed alone and in
their job, with intervals), where the copies differ and the search. No timing is asserted: only that
each step reports what it found, with its interval, and that the static facts agree with the bytes."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import one_line_error

FIXTURES = Path(__file__).parent / "fixtures" / "families"
BUF = "pqsimd_split_buf"
needs_lld = pytest.mark.skipif(__import__("pqsimd.layout", fromlist=["linker"]).linker() is None,
                               reason="no lld (apt-get install lld-16)")


def _copies(medians: list[float], per_job: int = 2) -> pd.DataFrame:
    return pd.DataFrame({"job": [f"j{i // per_job}" for i in range(len(medians))],
                         "copy": [i % per_job for i in range(len(medians))], "seed": range(len(medians)),
                         "stack": [16 * i for i in range(len(medians))], "median": medians})


def test_a_copy_far_beyond_the_rest_is_flagged_and_named():
    from pqsimd.analyze.cliffs import flag

    rng = np.random.default_rng(1)
    med = list(1000 * np.exp(rng.normal(0, 0.004, 20)))
    med[6] = 1600.0  # job j3 copy 0
    out, row = flag(_copies(med))
    assert row["cliff"] and row["n_cliffs"] == 1
    assert out["cliff"].sum() == 1 and out.loc[6, "cliff"]
    assert row["worst_job"] == "j3" and row["worst_copy"] == 0 and abs(row["worst_norm"] - 1.6) < 0.02
    assert "job j3 copy 0 seed 6 stack 96: 1.6" in row["cliff_copies"]
    assert row["norm_min"] <= row["norm_q10"] <= row["norm_median"] <= row["norm_q90"] <= row["norm_max"]


def test_a_slow_job_a_fast_copy_and_ordinary_spread_are_not_cliffs():
    from pqsimd.analyze.cliffs import flag

    rng = np.random.default_rng(2)
    med = list(1000 * np.exp(rng.normal(0, 0.03, 20)))  # a 3% layout spread: no cliff
    med[4] = med[5] = 1500.0  # both copies of job j2 slow: the job, not a layout
    med[10] = 600.0  # a fast copy: shown, never flagged
    out, row = flag(_copies(med))
    assert not row["cliff"] and not out["cliff"].any()
    assert out.loc[4, "within_job"] == pytest.approx(0.0) and out.loc[10, "norm"] < 0.7


def test_too_few_copies_or_one_per_job_is_said_not_flagged_silently():
    from pqsimd.analyze.cliffs import MIN_COPIES, flag

    _, row = flag(_copies([1000.0] * (MIN_COPIES - 2) + [2000.0]))
    assert not row["cliff"] and "fewer than" in row["note"]
    out, row = flag(_copies([1000.0 + i for i in range(11)] + [2000.0], per_job=1))
    assert row["cliff"] and "one copy per job" in row["note"]  # judged on the group alone, and said
    _, row = flag(_copies([1000.0] * 9 + [-3.0]))
    assert not row["cliff"] and "<= 0" in row["note"]


def test_the_retiming_interval_and_its_verdicts():
    from pqsimd.stats.cliffs import belongs, retime_interval, retime_verdict, search_state

    r, lo, hi = retime_interval(np.log([1.50, 1.46, 1.48, 1.47, 1.49]))
    assert lo < r < hi and 1.44 < lo and hi < 1.52
    assert retime_verdict(lo, hi, 0.02) == "confirmed"
    _, lo2, hi2 = retime_interval(np.log([1.001, 0.999, 1.002, 1.0, 0.998]))
    assert retime_verdict(lo2, hi2, 0.02) == "refuted"
    _, lo3, hi3 = retime_interval(np.log([1.0, 1.5]))  # two processes that disagree: wide
    assert retime_verdict(lo3, hi3, 0.02) == "~"
    assert math.isnan(retime_interval(np.log([1.5]))[1])  # one process: no interval
    wide = retime_interval(np.log([1.50, 1.46, 1.48, 1.47, 1.49]), res=0.05)
    assert wide[1] < lo and wide[2] > hi  # the clock's resolution widens it
    assert belongs("confirmed", "refuted") == "copy"
    assert belongs("refuted", "confirmed") == "context"
    assert belongs("refuted", "refuted") == "not reproduced"
    assert belongs("~", "refuted") == "undecided"
    assert search_state(1.4, 1.6, 0.02, 1.5) == "on" and search_state(0.99, 1.01, 0.02, 1.5) == "off"
    assert search_state(1.0, 1.4, 0.02, 1.5) == "?"


def _split_seed(tmp_path, cli, env) -> int:
    """A study seed whose 8 copies (4 jobs × 2) of ref hold the 8-aligned buffer at 56 mod 64 once or
    twice: the placement is the linker's, computed from the build's own link (no timing)."""
    from pqsimd import layout, placement

    d0 = tmp_path / "built"
    r = cli("run", d0, "--schemes", "split-64", "--variants", "ref", "--no-run", env=env)
    assert r.returncode == 0, r.stderr
    link = json.loads((d0 / "manifest.json").read_text())["builds"]["ref.gcc.split"]["link"]
    for seed in range(1, 60):
        at56 = 0
        for j in range(4):
            for i in range(2):
                out = tmp_path / "probe.so"
                layout.relink(link, layout.seed_of(seed, f"paired.split-64.{j}", "ref.gcc.split", i), out)
                at56 += next(s.addr for s in placement.symbols(out) if s.name == BUF) % 64 == 56
        if at56 in (1, 2):
            return seed
    pytest.fail("no seed in 1..59 puts the buffer at 56 mod 64 in one or two of 8 copies")


@needs_lld
def test_a_study_of_the_split_fixture_flags_retimes_places_and_searches(tmp_path, cli):
    from pqsimd import layout, placement, store

    env = {**os.environ, "PQSIMD_FAMILY_PATH": str(FIXTURES)}
    seed = _split_seed(tmp_path, cli, env)
    d = tmp_path / "split"
    r = cli("run", d, "--schemes", "split-64", "--variants", "refnv,ref", "--jobs", "4", "--layouts", "2", "--alone", "0",
            "--seed", str(seed), "--spins", "30", "--reps", "5", env=env)
    assert r.returncode == 0, r.stderr
    r = cli("analyze", d, env=env)
    assert r.returncode == 0, r.stderr
    copies = pd.read_csv(d / "results" / "copies.csv")
    sl = copies[(copies["op"] == "split_load") & (copies["variant"] == "ref")]
    assert len(sl) == 8 and sl["seed"].notna().all() and sl["stack"].notna().all() and sl["op_offset"].notna().all()
    assert (sl.groupby("job")["copy"].nunique() == 2).all()
    cl = pd.read_csv(d / "results" / "cliffs.csv")
    row = cl[(cl["op"] == "split_load") & (cl["variant"] == "ref")].iloc[0]
    assert row["n_copies"] == 8 and row["cliff"] in (True, False)
    summary = json.loads((d / "results" / "summary.json").read_text())["cliffs"]
    assert summary["groups"] == len(cl) and "robust SDs" in summary["rule"]

    r = cli("cliffs", d, "--retime", "--scheme", "split-64", "--op", "split_load", "--variant", "ref",
            "--processes", "2", env=env)
    assert r.returncode == 0, r.stderr
    rt = pd.read_csv(d / "results" / "cliff_retime.csv")
    assert set(rt["test"]) == {"alone", "context"}
    for t in rt.itertuples():
        assert t.processes == 2 and t.ci_low <= t.ratio <= t.ci_high and t.verdict in ("confirmed", "refuted", "~")
        assert t.belongs in ("copy", "context", "not reproduced", "undecided")
    target = json.loads((d / "cliffs" / "split-64.split_load.ref.gcc" / "target.json").read_text())
    assert target["worst"]["norm"] == pytest.approx(sl["norm"].max())
    # where the copies differ: the buffer the op reads, at the place the copy's own bytes hold it
    pl = pd.read_csv(d / "results" / "cliff_placement.csv")
    buf = pl[pl["object"] == BUF].iloc[0]
    raw = store.read_job_record(d / "raw" / f"{target['worst']['job']}.parquet")
    c = raw["layout"]["builds"]["ref.gcc.split"]["copies"][target["worst"]["copy"]]
    again = tmp_path / "again.so"
    layout.relink_recorded(c["link"], c["seed"], again)
    assert store.sha256_file(again) == c["sha256"]
    assert buf["mod64_worst"] == next(s.addr for s in placement.symbols(again) if s.name == BUF) % 64
    assert (pl["kind"] == "stack").any()
    search = d / "results" / "cliff_search.csv"
    if target["search"]["ran"]:  # the alone test confirmed it: every probe says on, off or undecided
        probes = pd.read_csv(search)
        assert len(probes) and set(probes["state"]) <= {"on", "off", "?"}
        found = target["search"]["found"]
        if found.get("block"):
            assert found["block"]["objects"] and found["off"]
    else:
        assert not search.exists() and target["search"]["why"]
    r = cli("cliffs", d, env=env)
    assert r.returncode == 0 and "belongs to" in r.stdout and "measured, alone" in r.stdout
    r = cli("report", d, env=env)
    assert r.returncode == 0, r.stderr
    assert (d / "report" / "layout" / "fig_copies_split-64.png").exists()


@needs_lld
def test_a_copy_whose_bytes_differ_from_its_record_is_not_retimed(tmp_path):
    from pqsimd.errors import PqsimdError
    from pqsimd.run.retime import CopyRef, make_copy

    ref = CopyRef("paired.x.0", 0, "b", 7, 0, "0" * 64, ["cc", "-shared", "-o", "x.so", "<padding.o>"])
    with pytest.raises(PqsimdError) as e:  # the recorded link does not even run here
        make_copy(ref, tmp_path / "c.so")
    assert "\n" not in str(e.value)
    with pytest.raises(PqsimdError, match="no link command"):
        make_copy(CopyRef("paired.x.0", 0, "b", 7, 0, "", []), tmp_path / "c.so")


def test_cliffs_refuses_a_study_without_results_in_one_line(tmp_path, cli):
    d = tmp_path / "empty"
    d.mkdir()
    one_line_error(cli("cliffs", d), "holds no study yet", f"`pqsimd run {d}` makes one")
    (d / "study.toml").write_text("[study]\n")
    one_line_error(cli("cliffs", d), "no results/cliffs: it is not analysed yet", f"`pqsimd analyze {d}`")
    one_line_error(cli("cliffs", d, "--retime", "--processes", "1"), "--processes 1")
