"""`pqsimd show` and the HTML report on a study whose jobs fall into two states and some of whose jobs
shared their CPU: the flagged jobs, and every flagged comparison's verdict with and without them."""

from __future__ import annotations

import html as htmllib
import json
import math
import re

import numpy as np
import pytest
from rich.console import Console
from synthetic import make_synthetic_study

from pqsimd.analyze import analyze_study
from pqsimd.studysets import report_study as write_report
from pqsimd.report.terminal import show_study

SHARED = (2, 5, 7, 10)  # of 12 jobs: another program took their CPU, and their avx2 ran 50% slower


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    def slow(rng, j, n, variant, op):
        return np.full(n, math.log(1.5) if j in SHARED and variant == "avx2" else 0.0)

    def record(job, scheme, j):
        frac = 0.41 if j in SHARED else 0.003
        return {"cpu_share": {"cpu_seconds": 3.0, "waited_seconds": 2.1 if j in SHARED else 0.01,
                              "waited_fraction": frac, "discarded_before": 0, "shared": j in SHARED},
                "cpu_claim": {"waited_seconds": 0.0, "holder": None}}
    d = make_synthetic_study(tmp_path_factory.mktemp("states") / "s", variants=("ref", "avx2"),
                             ops=("ntt", "invntt", "basemul", "gen_a"), jobs=12, spins=20, reps=3, design="paired",
                             medians={"ref": 1500.0, "avx2": 1000.0}, state=slow, job_record=record,
                             analysis={"n_boot": 200, "seed": 1}, seed=5)
    analyze_study(d)
    return d


def test_the_analysis_flags_both_and_the_verdicts_change(study):
    s = json.loads((study / "results" / "summary.json").read_text())
    ids = [f"paired.ml-kem-512.{j}" for j in SHARED]
    assert s["regimes"]["flagged"] == 4 and s["regimes"]["by_job_state"] == 4
    assert s["regimes"]["without_minority"]["changes"] == {"~ -> faster": 4}
    assert s["shared_cpu"]["jobs"] == 4 and s["shared_cpu"]["without_shared"]["changes"] == {"~ -> faster": 4}
    assert sorted(s["shared_cpu"]["waited_fraction"]) == sorted(ids)
    assert s["counts"]["verdicts_changed_without_minority"] == 4 and s["counts"]["verdicts_changed_without_shared"] == 4


def test_show_prints_the_shared_jobs_and_each_verdict_with_and_without(study):
    con = Console(record=True, width=400, color_system=None)
    show_study(study, console=con)
    out = con.export_text()
    assert re.search(r"shared CPU: 4 of 12 timing jobs waited more than a quarter of their time .*"
                     r"paired\.ml-kem-512\.2 \(41%\)", out)
    regimes = out[out.index("\nRegimes\n"):out.index("\nShared CPU\n")]
    shared = out[out.index("\nShared CPU\n"):]
    for block, who in ((regimes, "without the minority's 4 job(s) (paired.ml-kem-512.2, paired.ml-kem-512.5, "
                                 "paired.ml-kem-512.7, paired.ml-kem-512.10)"),
                       (shared, "without the 4 job(s) that shared their CPU")):
        lines = [x for x in block.splitlines() if x.startswith("* ML-KEM-512")]
        assert len(lines) == 4, block
        for x in lines:
            assert re.search(r"\] \([0-9.]+%\) ~ with all jobs; " + re.escape(who) + r": ×1\.[45][0-9]* \[.*\] "
                             r"\(99\.22%\) faster \(8 jobs\)", x), x
    assert "4 of 4 verdict(s) change (~ -> faster 4)" in regimes
    # every row of the tables carries both marks
    assert re.search(r"avx2[¹²³⁴⁵⁶⁷⁸⁹]{2}", out)
    assert "uses jobs that shared their CPU with another program" in out


def test_html_lists_the_flagged_jobs_and_the_verdict_changes(study):
    write_report(study)
    page = htmllib.unescape((study / "report" / "index.html").read_text())
    # after the families' sections (the answer first), each list behind its one-line summary
    assert page.index('<section class="family"') < page.index('<h2 id="states">')
    states = page[page.index('<h2 id="states">'):page.index('<h2 id="methods">')]
    assert "Regimes: jobs in two machine states" in states and "Jobs that shared their CPU" in states
    assert states.count("<details><summary>4 comparisons, 4 verdicts change without them") == 2
    assert states.count("<b>ML-KEM-512") == 8  # 4 comparisons x (minority, shared), each verdict changed
    assert "without the 4 job(s) that shared their CPU" in states
    methods = page[page.index('<h2 id="methods">'):]
    assert re.search(r"jobs that shared their CPU</td><td>4 of 12 timing jobs", methods)
    assert re.search(r"regimes \(jobs in two states\)</td><td>4 comparison\(s\) flagged", methods)
    assert "shared CPU: 4 of 12 timing jobs" in page[page.index('id="warnings"'):]
    assert "4 comparison(s) use jobs that shared their CPU with another program; without those jobs 4 verdict(s) " \
           "change" in page
