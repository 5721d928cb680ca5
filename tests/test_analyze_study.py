"""`pqsimd analyze` end to end on synthetic study directories: the results contract, the A/A check,
deterministic metrics, and bad input (one-line errors or explicit n/a, never NaN or a traceback)."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from synthetic import make_synthetic_study

from pqsimd.analyze import analyze_study
from pqsimd.errors import PqsimdError

VARIANTS = ("refo0", "refnv", "ref", "avx2")
MEDIANS = {"refo0": 20000.0, "refnv": 6000.0, "ref": 5000.0, "avx2": 200.0,
           ("ref", "gen_a"): 5000.0, ("avx2", "gen_a"): 1200.0}
FAST = {"n_boot": 400, "seed": 3}

GROUP_COLUMNS = ["metric", "scheme", "op", "variant", "compiler", "n_jobs", "n_spins", "median", "median_ci_low",
                 "median_ci_high", "median_ci_level", "iqr", "min", "mad", "outliers_low", "outliers_high", "icc",
                 "deterministic", "unit", "job_cv", "between_var", "within_sd", "deff", "n_eff"]
COMPARISON_COLUMNS = ["metric", "scheme", "op", "baseline", "baseline_compiler", "variant", "compiler", "stage",
                      "design", "speedup", "ci_low", "ci_high", "ci_level", "method", "p_decision", "mwu_p",
                      "cliffs_delta", "delta_ci_low", "delta_ci_high", "verdict", "reason", "n_base", "n_var",
                      "jobs_base", "jobs_var", "mde", "regimes", "regime_p", "regime_dip_p", "regime_jobs", "drift",
                      "drift_p", "drift_jobs", "shared_cpu_jobs", "without_minority_verdict", "without_shared_verdict"]
DECOMP_COLUMNS = ["metric", "scheme", "op", "compiler", "total", "total_ci_low", "total_ci_high", "total_ci_level",
                  "factor_compiler", "factor_autovec", "factor_hand_simd", "factor_hand_simd_ci_low",
                  "factor_hand_simd_ci_high", "share_compiler", "share_autovec", "share_hand_simd",
                  "share_hand_simd_ci_low", "share_hand_simd_ci_high"]


def study(tmp_path: Path, name: str = "s", **kw) -> Path:
    args = dict(schemes=("ml-kem-512", "ml-kem-768"), variants=VARIANTS, ops=("ntt", "gen_a", "kem_decaps"),
                jobs=6, spins=40, reps=5, medians=MEDIANS, job_sigma=0.01, seed=1, analysis=FAST)
    args.update(kw)
    return make_synthetic_study(tmp_path / name, **args)


def rewrite(path: Path, fn) -> None:
    """Apply fn(DataFrame, meta dict) -> (DataFrame, meta) to one raw file, keeping its schema."""
    t = pq.read_table(path)
    meta = json.loads(t.schema.metadata[b"pqsimd.job"])
    df, meta = fn(t.to_pandas(), meta)
    out = pa.Table.from_pandas(df, schema=t.schema.remove_metadata(), preserve_index=False)
    pq.write_table(out.replace_schema_metadata({b"pqsimd.job": json.dumps(meta).encode()}), path)


def one_line(e: pytest.ExceptionInfo) -> str:
    msg = str(e.value)
    assert "\n" not in msg and msg
    return msg


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    d = study(tmp_path_factory.mktemp("full"))
    return d, analyze_study(d)


def test_results_files_and_columns(full):
    d, res = full
    assert res == d / "results"
    for name in ("groups", "comparisons", "decomposition"):
        assert (res / f"{name}.csv").exists() and (res / f"{name}.parquet").exists()
    g = pd.read_parquet(res / "groups.parquet")
    c = pd.read_parquet(res / "comparisons.parquet")
    dec = pd.read_parquet(res / "decomposition.parquet")
    assert set(GROUP_COLUMNS) <= set(g.columns)
    assert set(COMPARISON_COLUMNS) <= set(c.columns)
    assert set(DECOMP_COLUMNS) <= set(dec.columns)
    assert len(g) == 2 * 3 * 4  # schemes × ops × variants
    assert (g["n_jobs"] == 6).all() and (g["n_spins"] == 240).all()  # warmup spins dropped
    # refo0→refnv once (compiler), refnv→ref, ref→avx2, refo0→ref and refo0→avx2 (cumulative)
    stages = c.groupby("stage").size().to_dict()
    assert stages == {"compiler": 6, "autovec": 6, "hand_simd": 6, "cumulative": 12}
    cum = c[c["baseline"] == "refo0"]
    assert set(cum["variant"]) == {"refnv", "ref", "avx2"}
    assert c.duplicated(["metric", "scheme", "op", "baseline", "variant"]).sum() == 0


def test_speedups_verdicts_and_intervals(full):
    _, res = full
    c = pd.read_parquet(res / "comparisons.parquet")
    hs = c[(c["stage"] == "hand_simd") & (c["op"] == "ntt")]
    assert hs["speedup"].to_numpy() == pytest.approx(25.0, rel=0.02)
    assert (hs["verdict"] == "faster").all()
    assert (hs["cliffs_delta"] == 1.0).all() and (hs["mwu_p"] < 1e-10).all()
    gen = c[(c["stage"] == "hand_simd") & (c["op"] == "gen_a")]
    assert gen["speedup"].to_numpy() == pytest.approx(5000 / 1200, rel=0.02)
    for lo, mid, hi in (("ci_low", "speedup", "ci_high"), ("delta_ci_low", "cliffs_delta", "delta_ci_high")):
        assert (c[lo] <= c[mid] + 1e-12).all() and (c[mid] <= c[hi] + 1e-12).all()
    # separate design, 6 jobs a side: Welch per op, the t interval printed at the family's level
    summ = json.loads((res / "summary.json").read_text())
    fam = summ["family"]
    assert (c["design"] == "separate").all() and (c["method"] == "t").all() and not c["regimes"].any()
    assert fam["m"] == len(c) and c["ci_level"].to_numpy() == pytest.approx(fam["level"])
    assert fam["level"] == pytest.approx(1 - fam["selected"] * 0.05 / fam["m"])
    # the verdict is read off the printed interval, and given exactly where p_decision <= gamma
    band = math.log1p(summ["threshold"])
    lo, hi = np.log(c["ci_low"]), np.log(c["ci_high"])
    want = np.where(lo > band, "faster", np.where(hi < -band, "slower", np.where((lo > -band) & (hi < band), "same", "~")))
    assert list(c["verdict"]) == list(want)
    assert list(c["verdict"] != "~") == list(c["p_decision"] <= fam["gamma"] * (1 + 1e-12))
    assert (hs["ci_low"] > 1.02).all() and (c["mde"] > 1).all()


def test_groups_carry_variance_components(full):
    _, res = full
    g = pd.read_parquet(res / "groups.parquet")
    assert (g["between_var"] > 0).all() and (g["within_sd"] > 0).all() and (g["job_cv"] > 0).all()
    assert (g["deff"] >= 1).all() and np.allclose(g["n_eff"], g["n_spins"] / g["deff"])
    assert (g["n_eff"] <= g["n_spins"]).all()


def test_decomposition_telescopes(full):
    _, res = full
    dec = pd.read_parquet(res / "decomposition.parquet")
    assert len(dec) == 6
    prod = dec["factor_compiler"] * dec["factor_autovec"] * dec["factor_hand_simd"]
    assert prod.to_numpy() == pytest.approx(dec["total"].to_numpy(), rel=1e-12)
    shares = dec[["share_compiler", "share_autovec", "share_hand_simd"]].sum(axis=1)
    assert shares.to_numpy() == pytest.approx(1.0)
    assert "kem_decaps" in set(dec["op"])
    # every derived number lies inside its interval; the total's interval is the product of the stages'
    lo = dec["factor_compiler_ci_low"] * dec["factor_autovec_ci_low"] * dec["factor_hand_simd_ci_low"]
    assert lo.to_numpy() == pytest.approx(dec["total_ci_low"].to_numpy(), rel=1e-12)
    assert ((dec["total_ci_low"] <= dec["total"]) & (dec["total"] <= dec["total_ci_high"])).all()
    for st in ("compiler", "autovec", "hand_simd"):
        assert (dec[f"share_{st}_ci_low"] <= dec[f"share_{st}"] + 1e-12).all()
        assert (dec[f"share_{st}"] <= dec[f"share_{st}_ci_high"] + 1e-12).all()


def test_summary_and_no_nan_in_csv(full):
    _, res = full
    s = json.loads((res / "summary.json").read_text())
    assert s["n_boot"] == 400 and s["seed"] == 3 and s["alpha"] == 0.05 and s["threshold"] == 0.02
    assert s["family"]["m"] == 30 and "definition" in s["family"] and s["schema_version"] == 7
    assert s["counts"]["comparisons"] == 30
    for name in ("groups", "comparisons", "decomposition"):
        text = (res / f"{name}.csv").read_text().lower()
        assert "nan" not in text.replace("n/a", "")


def test_same_seed_same_results_and_overrides(tmp_path, full):
    d, res = full
    first = pd.read_parquet(res / "comparisons.parquet")
    analyze_study(d)
    again = pd.read_parquet(res / "comparisons.parquet")
    pd.testing.assert_frame_equal(first, again)
    analyze_study(d, n_boot=300, seed=4)  # the command line wins over study.toml
    s = json.loads((res / "summary.json").read_text())
    assert s["n_boot"] == 300 and s["seed"] == 4
    other = pd.read_parquet(res / "comparisons.parquet")
    # the speedups' intervals are not resampled: another seed or B changes none of them
    for col in ("speedup", "ci_low", "ci_high", "verdict"):
        pd.testing.assert_series_equal(first[col], other[col])
    analyze_study(d)  # back to the file's settings for the other tests


def test_aa_two_halves_of_one_variant_give_no_verdict(tmp_path):
    """A/A: the jobs of one variant split into two disjoint halves, the second half relabelled as
    an extra variant; with a real job effect, every op must come out `~`."""
    ops = tuple(f"op{i}" for i in range(8))
    d = make_synthetic_study(tmp_path / "aa", schemes=("ml-kem-512",), variants=("ref",), ops=ops, jobs=12,
                             spins=60, reps=5, medians={"ref": 3000.0}, job_sigma=0.02, seed=5,
                             analysis={"n_boot": 1000, "seed": 1})
    for path in sorted((d / "raw").glob("*.parquet")):
        t = pq.read_table(path, columns=["job_index"])
        if t.column("job_index")[0].as_py() >= 6:
            def relabel(df, meta):
                df["variant"] = "ref-b"
                df["job"] = df["job"].str.replace("ref.", "ref-b.", regex=False)
                meta["variant"] = "ref-b"
                return df, meta
            rewrite(path, relabel)
    analyze_study(d)
    c = pd.read_parquet(d / "results" / "comparisons.parquet")
    assert len(c) == len(ops) and set(c["stage"]) == {"extra"} and set(c["baseline"]) == {"ref"}
    assert c["verdict"].isin(["~", "same"]).all(), c[["op", "speedup", "ci_low", "ci_high", "verdict"]]
    assert (c["method"] == "t").all()  # independent halves: the separate design's interval


def test_deterministic_instruction_counts(tmp_path):
    d = study(tmp_path, variants=("ref", "avx2"), ops=("ntt",), schemes=("ml-kem-512",),
              metric=("ticks", "instructions"))
    analyze_study(d)
    g = pd.read_parquet(d / "results" / "groups.parquet")
    c = pd.read_parquet(d / "results" / "comparisons.parquet")
    gi = g[g["metric"] == "instructions"]
    assert gi["deterministic"].all() and (gi["unit"] == "instructions/call").all()
    ci = c[c["metric"] == "instructions"].iloc[0]
    assert ci["deterministic"] and ci["speedup"] == 25.0
    assert ci["ci_low"] == ci["ci_high"] == 25.0 and ci["ci_level"] == 1.0
    assert ci["verdict"] == "faster" and "exact ratio" in ci["reason"] and ci["method"] == "exact"
    assert pd.isna(ci["mwu_p"]) and ci["p_decision"] == 0.0 and "deterministic" in ci["note"]
    s = json.loads((d / "results" / "summary.json").read_text())
    assert s["deterministic"]["comparisons"] == 1 and s["family"]["m"] == 1  # only the ticks row
    assert s["deterministic"]["treatment"].startswith(
        "a group is deterministic iff its metric is an exact metric (instructions, stack, size) and all its spin medians are identical")
    row = (d / "results" / "comparisons.csv").read_text().splitlines()
    assert any(",instructions," not in r for r in row) and "n/a" in "".join(row)


@pytest.mark.parametrize("jobs,withheld", [(5, True), (6, False)])
def test_paired_verdicts_need_the_jobs_that_reach_the_level(tmp_path, jobs, withheld):
    """Five paired jobs cannot give a 95% distribution-free interval ([min, max] has 93.75%): the
    interval is printed with its own level and the verdict withheld, saying so; six jobs can."""
    d = study(tmp_path, jobs=jobs, variants=("ref", "avx2"), schemes=("ml-kem-512",), design="paired")
    analyze_study(d)
    c = pd.read_parquet(d / "results" / "comparisons.parquet")
    s = json.loads((d / "results" / "summary.json").read_text())
    assert (c["method"] == "sign").all()
    if withheld:
        assert (c["verdict"] == "withheld").all() and (c["ci_level"] == 1 - 2 / 32).all()
        assert c["reason"].str.contains("J = 5: the widest distribution-free interval").all()
        assert any("withheld" in w and "6 or more jobs" in w for w in s["warnings"])
    else:
        assert (c["verdict"] == "faster").all() and (c["ci_level"] == 1 - 2 / 64).all()


def test_one_job_per_group_gives_no_job_test_but_no_crash(tmp_path):
    d = study(tmp_path, jobs=1, variants=("ref", "avx2"), schemes=("ml-kem-512",), ops=("ntt",))
    analyze_study(d)
    c = pd.read_parquet(d / "results" / "comparisons.parquet").iloc[0]
    assert pd.isna(c["p_decision"]) and c["verdict"] == "withheld" and c["method"] == "refuse"
    assert "fewer than 2 jobs" in c["reason"]
    s = json.loads((d / "results" / "summary.json").read_text())
    assert s["family"]["m"] == 0 and any(w.startswith("1 of 1 comparisons withheld") for w in s["warnings"])


def test_drift_and_a_disturbed_job_are_flagged(tmp_path):
    """Paired design: a variant whose time drifts 10% within every job makes the ratio drift (named
    jobs, BH); one job in which the variant runs 25% slower is one disturbed job (reported once, with
    its direction), not a flag per comparison. A calm study flags neither."""
    kw = dict(variants=("ref", "avx2"), schemes=("ml-kem-512",), ops=("ntt", "gen_a", "kem_decaps", "invntt"),
              jobs=8, spins=80, job_sigma=0.0, design="paired")
    def state(rng, j, n, variant, op):  # job 3: the variant 25% slower (its ratios 25% lower)
        return np.full(n, np.log(1.25) if (j == 3 and variant == "avx2") else 0.0)
    d = study(tmp_path, name="bad", state=state, **kw)
    analyze_study(d)
    jobs = pd.read_parquet(d / "results" / "jobs.parquet")
    bad = jobs[jobs["disturbed"]]
    assert list(bad["job"]) == ["paired.ml-kem-512.3"] and bad["up_share"].iloc[0] == 0.0
    s = json.loads((d / "results" / "summary.json").read_text())
    assert s["jobs"]["disturbed_ids"] == ["paired.ml-kem-512.3"]
    assert any("1 disturbed job(s)" in w and "lower" in w for w in s["warnings"])
    calm = study(tmp_path, name="calm", **kw)
    analyze_study(calm)
    assert not pd.read_parquet(calm / "results" / "jobs.parquet")["disturbed"].any()
    assert not pd.read_parquet(calm / "results" / "comparisons.parquet")["drift"].any()
    def drift_state(rng, j, n, variant, op):
        return np.log1p(0.10 * np.arange(n) / max(n - 1, 1)) if variant == "avx2" else np.zeros(n)
    dd = study(tmp_path, name="drift2", state=drift_state, **kw)
    analyze_study(dd)
    c = pd.read_parquet(dd / "results" / "comparisons.parquet")
    assert c["drift"].all() and c["drift_jobs"].str.split().map(len).min() >= 6
    s = json.loads((dd / "results" / "summary.json").read_text())
    assert s["drift"]["comparisons_flagged"] == len(c) and s["drift"]["rate"] > 0.5
    assert any(w.startswith("drift:") for w in s["warnings"])


# --- bad input --------------------------------------------------------------------------------

def test_missing_raw_data_is_one_line_error(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(PqsimdError) as e:
        analyze_study(tmp_path / "empty")
    assert "no raw data" in one_line(e) and "pqsimd run" in str(e.value)
    with pytest.raises(PqsimdError) as e:
        analyze_study(tmp_path / "nowhere")
    assert "no study directory" in one_line(e)


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty"])
def test_damaged_parquet_is_one_line_error_naming_the_file(tmp_path, damage):
    d = study(tmp_path, variants=("ref", "avx2"), schemes=("ml-kem-512",), ops=("ntt",), jobs=2)
    victim = d / "raw" / "avx2.ml-kem-512.1.parquet"
    data = victim.read_bytes()
    victim.write_bytes({"truncate": data[: len(data) // 2], "garbage": b"\x00junk" * 50, "empty": b""}[damage])
    with pytest.raises(PqsimdError) as e:
        analyze_study(d)
    msg = one_line(e)
    assert str(victim) in msg and "delete it" in msg


def test_foreign_parquet_is_one_line_error(tmp_path):
    d = study(tmp_path, variants=("ref",), schemes=("ml-kem-512",), ops=("ntt",), jobs=2)
    pq.write_table(pa.table({"x": [1, 2]}), d / "raw" / "stray.parquet")
    with pytest.raises(PqsimdError) as e:
        analyze_study(d)
    assert "stray.parquet" in one_line(e) and "missing column" in str(e.value)


def test_one_variant_gives_groups_and_says_no_comparisons(tmp_path):
    d = study(tmp_path, variants=("ref",))
    res = analyze_study(d)
    g = pd.read_parquet(res / "groups.parquet")
    c = pd.read_csv(res / "comparisons.csv")
    assert len(g) == 6 and len(c) == 0 and set(COMPARISON_COLUMNS) <= set(c.columns)
    s = json.loads((res / "summary.json").read_text())
    assert any("one variant" in w for w in s["warnings"]) and s["family"]["m"] == 0
    dec = pd.read_csv(res / "decomposition.csv")
    assert dec["note"].str.startswith("n/a").all() and "nan" not in (res / "decomposition.csv").read_text().lower()


def test_comparison_without_data_is_explicit_na(tmp_path):
    d = study(tmp_path, variants=("ref", "avx2"), schemes=("ml-kem-512",), ops=("ntt", "noise_x4"))
    # noise_x4 exists only in avx2: drop it from the ref job files
    for path in (d / "raw").glob("ref.*.parquet"):
        rewrite(path, lambda df, m: (df[df["op"] != "noise_x4"], m))
    res = analyze_study(d)
    c = pd.read_parquet(res / "comparisons.parquet")
    row = c[c["op"] == "noise_x4"].iloc[0]
    assert row["verdict"] == "n/a" and "no data for variant ref" in row["reason"]
    assert row["n_base"] == 0 and row["jobs_var"] == 6
    line = [r for r in (res / "comparisons.csv").read_text().splitlines() if "noise_x4" in r][0]
    assert "n/a" in line and "nan" not in line.lower().replace("n/a", "")
    assert c.loc[c["op"] == "ntt", "verdict"].iloc[0] == "faster"
    s = json.loads((res / "summary.json").read_text())
    assert any("no data on one side" in w and "n/a" in w for w in s["warnings"]) and s["family"]["m"] == 1


def test_different_cpu_models_are_not_pooled(tmp_path):
    model = lambda v, s, j: "Intel Xeon Gold 6248" if v == "ref" else "AMD EPYC 7742"  # noqa: E731
    host = lambda v, s, j: "node01" if v == "ref" else "node07"  # noqa: E731
    d = study(tmp_path, variants=("ref", "avx2"), schemes=("ml-kem-512",), ops=("ntt",), jobs=2,
              cpu_model=model, hostname=host)
    with pytest.raises(PqsimdError) as e:
        analyze_study(d)
    msg = one_line(e)
    for part in ("Intel Xeon Gold 6248", "AMD EPYC 7742", "node01: ref", "node07: avx2", "pool_cpu_models"):
        assert part in msg
    text = (d / "study.toml").read_text().replace("[analysis]", "[analysis]\npool_cpu_models = true")
    (d / "study.toml").write_text(text)
    res = analyze_study(d)
    s = json.loads((res / "summary.json").read_text())
    assert any("pooled" in w for w in s["warnings"]) and len(s["study"]["cpu_models"]) == 2


def test_bad_analysis_settings_are_one_line_errors(tmp_path):
    d = study(tmp_path, variants=("ref",), schemes=("ml-kem-512",), ops=("ntt",), jobs=2,
              analysis={"alpha": 2.0})
    with pytest.raises(PqsimdError) as e:
        analyze_study(d)
    assert "alpha" in one_line(e)
    (d / "study.toml").write_text((d / "study.toml").read_text().replace("alpha = 2.0", "bogus = 1"))
    with pytest.raises(PqsimdError) as e:
        analyze_study(d)
    assert "bogus" in one_line(e)


def test_cli_prints_one_line_error(tmp_path):
    exe = Path(sys.executable).with_name("pqsimd")
    if not exe.exists():
        pytest.skip("pqsimd console script not installed in this environment")
    d = study(tmp_path, variants=("ref", "avx2"), schemes=("ml-kem-512",), ops=("ntt",), jobs=2)
    (d / "raw" / "ref.ml-kem-512.0.parquet").write_bytes(b"PAR1 truncated")
    r = subprocess.run([str(exe), "analyze", str(d)], capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "ref.ml-kem-512.0.parquet" in r.stderr
    shutil.rmtree(d / "raw")
    make_synthetic_study(d, variants=("ref", "avx2"), schemes=("ml-kem-512",), ops=("ntt",), jobs=2, spins=20,
                         reps=3, medians=MEDIANS, analysis=FAST)
    r = subprocess.run([str(exe), "analyze", str(d), "--bootstrap", "200"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert (d / "results" / "comparisons.csv").exists() and not math.isnan(
        pd.read_csv(d / "results" / "comparisons.csv")["speedup"].iloc[0])


def test_op_below_timer_resolution_is_na_not_inf(tmp_path):
    """An op whose per_call = (raw - overhead)/batch hovers around 0 has no ratio: n/a with the reason.
    The family's self-check op (`empty`, ~0 by design) is described in groups but never compared."""
    d = study(tmp_path, variants=VARIANTS, schemes=("ml-kem-512",), ops=("ntt", "poly_tomsg", "empty"))
    rng = np.random.default_rng(0)
    for path in (d / "raw").glob("*.parquet"):
        def jitter(df, meta):
            e = df["op"].isin(["poly_tomsg", "empty"])
            df.loc[e, "per_call"] = rng.normal(0.0, 1.0, int(e.sum())).round()
            return df, meta
        rewrite(path, jitter)
    res = analyze_study(d)
    c = pd.read_parquet(res / "comparisons.parquet")
    e = c[c["op"] == "poly_tomsg"]
    assert len(e) == 5 and (e["verdict"] == "n/a").all() and e["reason"].str.contains("timer resolution").all()
    assert not (c["op"] == "empty").any()
    g = pd.read_parquet(res / "groups.parquet")
    assert not g.loc[g["op"].isin(["poly_tomsg", "empty"]), "positive"].any()
    assert (g["op"] == "empty").sum() == len(VARIANTS)
    dec = pd.read_parquet(res / "decomposition.parquet")
    assert dec.loc[dec["op"] == "poly_tomsg", "note"].str.contains("timer resolution").all()
    for name in ("groups", "comparisons", "decomposition"):
        text = (res / f"{name}.csv").read_text().lower().replace("n/a", "")
        assert "nan" not in text and "inf" not in text


def test_constant_baseline_against_noisy_variant(tmp_path):
    """Identical tick values on one side are quantization, not exactness: an interval, not an exact ratio."""
    d = study(tmp_path, variants=("ref", "avx2"), schemes=("ml-kem-512",), ops=("ntt",))
    for path in (d / "raw").glob("ref.*.parquet"):
        rewrite(path, lambda df, m: (df.assign(per_call=5000.0), m))
    res = analyze_study(d)
    c = pd.read_parquet(res / "comparisons.parquet").iloc[0]
    g = pd.read_parquet(res / "groups.parquet").set_index("variant")
    assert not g.loc["ref", "deterministic"] and not g.loc["avx2", "deterministic"]
    assert g.loc["ref", "iqr"] == 0
    assert not c["deterministic"] and c["verdict"] == "faster"
    assert c["ci_low"] < c["speedup"] < c["ci_high"] and c["method"] == "t" and np.isfinite(c["p_decision"])


def test_listed_variant_without_any_data_is_na(tmp_path):
    d = study(tmp_path, variants=("ref", "avx2"), schemes=("ml-kem-512",), ops=("ntt",), jobs=2)
    for path in (d / "raw").glob("avx2.*.parquet"):
        path.unlink()
    res = analyze_study(d)
    c = pd.read_parquet(res / "comparisons.parquet")
    assert len(c) == 1 and c["verdict"].iloc[0] == "n/a" and "no data for variant avx2" in c["reason"].iloc[0]
    s = json.loads((res / "summary.json").read_text())
    assert any("avx2 of study.toml have no raw data" in w for w in s["warnings"])
    assert any("one variant" in w for w in s["warnings"])


def test_builtin_aa_check_on_a_job_effect(tmp_path):
    ops = tuple(f"op{i}" for i in range(6))
    d = make_synthetic_study(tmp_path / "aa2", schemes=("ml-kem-512",), variants=("ref", "avx2"), ops=ops, jobs=10,
                             spins=60, reps=5, medians={"ref": 3000.0, "avx2": 300.0}, job_sigma=0.03, seed=8,
                             analysis={"n_boot": 1000, "seed": 2})
    res = analyze_study(d)
    aa = pd.read_parquet(res / "aa.parquet")
    assert len(aa) == len(ops) and set(aa["baseline"]) == {"ref[even]"} and set(aa["variant"]) == {"ref[odd]"}
    assert (aa["jobs_base"] == 5).all() and (aa["jobs_var"] == 5).all() and (aa["stage"] == "aa").all()
    s = json.loads((res / "summary.json").read_text())["aa_check"]
    assert s["variants"] == ["ref"] and s["comparisons"] == len(ops) and s["false_verdicts"] == 0
    assert s["kind"] == "job halves" and 0 <= s["ci_excludes_1"] <= 0.5
    # the A/A rows are their own family: the study's comparisons are untouched by them
    c = pd.read_parquet(res / "comparisons.parquet")
    assert json.loads((res / "summary.json").read_text())["family"]["m"] == len(c) == len(ops)
    (d / "study.toml").write_text((d / "study.toml").read_text().replace("[analysis]", "[analysis]\naa_variants = []"))
    res = analyze_study(d)
    s = json.loads((res / "summary.json").read_text())["aa_check"]
    assert s["comparisons"] == 0 and len(pd.read_csv(res / "aa.csv")) == 0


def test_same_job_in_two_files_is_one_line_error(tmp_path):
    d = study(tmp_path, variants=("ref", "avx2"), schemes=("ml-kem-512",), ops=("ntt",), jobs=2)
    shutil.copy(d / "raw" / "ref.ml-kem-512.0.parquet", d / "raw" / "ref.ml-kem-512.0.copy.parquet")
    with pytest.raises(PqsimdError) as e:
        analyze_study(d)
    assert "ref.ml-kem-512.0" in one_line(e) and "stale copy" in str(e.value)


def test_self_check_reading_is_recorded_and_warned_outside_one_tick(tmp_path):
    """The empty op is the harness's self-check: at 0 +- 1 tick per call nothing is said; when one
    variant's empty reads ~3 ticks, summary.json records it and a warning names the size of the bias."""
    d = study(tmp_path, variants=("ref", "avx2"), schemes=("ml-kem-512",), ops=("ntt", "empty"))
    rng = np.random.default_rng(1)
    offset = {"ref": 0.0, "avx2": 3.0}
    for path in (d / "raw").glob("*.parquet"):
        variant = path.name.split(".")[0]

        def shift(df, meta, variant=variant):
            e = df["op"] == "empty"
            df.loc[e, "per_call"] = offset[variant] + rng.normal(0.0, 0.3, int(e.sum()))
            return df, meta
        rewrite(path, shift)
    summary = json.loads((analyze_study(d) / "summary.json").read_text())
    sc = summary["self_check"]
    assert sc["groups"] == 2 and sc["outside"] == 1 and sc["ops"] == ["empty"]
    assert sc["max"] == pytest.approx(3.0, abs=0.15) and abs(sc["min"]) < 0.15
    w = [x for x in summary["warnings"] if x.startswith("self-check")]
    assert len(w) == 1 and f"ops under {100 * abs(sc['worst']):,.0f} ticks" in w[0] and 290 <= 100 * sc["worst"] <= 310
    # back inside the tolerance: recorded, no warning
    for path in (d / "raw").glob("*.parquet"):
        def zero(df, meta):
            e = df["op"] == "empty"
            df.loc[e, "per_call"] = rng.normal(0.0, 0.3, int(e.sum()))
            return df, meta
        rewrite(path, zero)
    summary = json.loads((analyze_study(d) / "summary.json").read_text())
    assert summary["self_check"]["outside"] == 0
    assert not [x for x in summary["warnings"] if x.startswith("self-check")]


@pytest.mark.parametrize("batch, short", [(1, True), (20, False)])
def test_samples_shorter_than_half_the_step_aim_are_flagged(tmp_path, batch, short):
    """avx2 ntt at 200 ticks per call on a clock that steps by 3: one call per sample is 73 steps
    (a step is 1.4% of a sample), 20 calls are 1,340 steps. Only the former is flagged (below half
    the 1,000-step aim), per job, with a warning; the 5,000-tick ref samples (1,673 steps) never are."""
    d = study(tmp_path, variants=("ref", "avx2"), schemes=("ml-kem-512",), ops=("ntt",), jobs=4,
              batch=batch, granularity=3)
    res = analyze_study(d)
    g = pd.read_parquet(res / "groups.parquet").set_index("variant")
    assert g.loc["ref", "short_jobs"] == 0
    assert g.loc["avx2", "short_jobs"] == (4 if short else 0)
    assert g.loc["avx2", "resolution"] == pytest.approx(3 / batch)  # the lattice step: step / calls per sample
    warns = [w for w in json.loads((res / "summary.json").read_text())["warnings"] if w.startswith("short samples")]
    assert len(warns) == (1 if short else 0)
    if short:
        assert "ml-kem-512 ntt avx2" in warns[0] and "--batch auto" in warns[0]


def test_a_batch_sized_on_one_job_is_not_flagged_where_another_job_reads_a_coarser_step(tmp_path):
    """One job reads a step of 3, another 7 on the same CPU model. A 3,300-tick sample (1,100 steps
    of 3) was sized on the 3: it is not short in the 7 job (471 steps, though below half the aim)."""
    d = study(tmp_path, variants=("ref", "avx2"), schemes=("ml-kem-512",), ops=("ntt",), jobs=4,
              medians={"ref": 5000.0, "avx2": 3280.0}, granularity=lambda v, s, j: 3 if j % 2 == 0 else 7)
    g = pd.read_parquet(analyze_study(d) / "groups.parquet")
    assert (g["short_jobs"] == 0).all()


def test_a_variant_its_family_lacks_is_no_comparison_of_that_family(tmp_path):
    """ML-KEM and ML-DSA in one study, each with its own pq-code-package variant: the run skips
    mldsa-native-c for ML-KEM (and the reverse), so ML-KEM's comparisons hold no mldsa-native-c row;
    a chain variant a family lacks (HQC's avx2) keeps its chain step as n/a, naming why."""
    d = study(tmp_path, variants=("ref", "avx2", "mlkem-native-c", "mldsa-native-c"),
              schemes=("ml-kem-768", "ml-dsa-65"), ops=("ntt",), jobs=2)
    lacking = {("mldsa-native-c", "ml-kem"), ("mlkem-native-c", "ml-dsa"), ("avx2", "ml-dsa")}
    scheme = {"ml-kem": "ml-kem-768", "ml-dsa": "ml-dsa-65"}
    for v, fam in lacking:
        for path in (d / "raw").glob(f"{v}.{scheme[fam]}.*.parquet"):
            path.unlink()
    builds = {f"{v}.gcc.{fam}": {"build": f"{v}.gcc.{fam}", "variant": v, "compiler": "gcc", "family": fam,
                                 "passed": False, "passed_schemes": [], "skipped": f"family {fam} lacks {v}"}
              for v, fam in lacking}
    (d / "manifest.json").write_text(json.dumps({"builds": builds}))
    c = pd.read_parquet(analyze_study(d) / "comparisons.parquet")
    kem, dsa = c[c.scheme == "ml-kem-768"], c[c.scheme == "ml-dsa-65"]
    assert "mldsa-native-c" not in set(kem.variant) | set(kem.baseline)
    assert "mlkem-native-c" not in set(dsa.variant) | set(dsa.baseline)
    assert kem.speedup.notna().all() and set(kem.variant) == {"avx2", "mlkem-native-c"}
    hand = dsa[(dsa.baseline == "ref") & (dsa.variant == "avx2")]
    assert len(hand) == 1 and hand.verdict.iloc[0] == "n/a" and "family ml-dsa lacks avx2" in hand.reason.iloc[0]
    assert dsa[dsa.variant == "mldsa-native-c"].speedup.notna().all()


def test_an_op_an_implementation_lacks_is_na_with_its_tomls_reason(tmp_path):
    """mlkem-native has no single-polynomial eta1 sampler: the n/a row says why, as the family's
    TOML does ([implementations.mlkem-native.absent]), not just that there is no data."""
    from pqsimd import catalog

    fam = catalog.families()["ml-kem"]
    d = study(tmp_path, variants=("ref", "mlkem-native"), schemes=("ml-kem-768",),
              ops=("ntt", "poly_getnoise_eta1"), jobs=2)
    for path in (d / "raw").glob("mlkem-native.*.parquet"):
        rewrite(path, lambda df, m: (df[df["op"] != "poly_getnoise_eta1"], m))
    (d / "manifest.json").write_text(json.dumps({
        "families": {"ml-kem": {"toml": fam.text, "source": "data/families/ml-kem.toml"}},
        "variants": {"ref": {"sources": "clean"}, "mlkem-native": {"sources": "mlkem-native"}},
        "builds": {f"{v}.gcc.ml-kem": {"build": f"{v}.gcc.ml-kem", "variant": v, "compiler": "gcc", "family": "ml-kem",
                                       "passed": True, "passed_schemes": ["ml-kem-768"]} for v in ("ref", "mlkem-native")}}))
    c = pd.read_parquet(analyze_study(d) / "comparisons.parquet")
    row = c[c.op == "poly_getnoise_eta1"].iloc[0]
    why = fam.implementation("mlkem-native").absent_reason("poly_getnoise_eta1", "ml-kem-768")
    assert row.verdict == "n/a" and row.reason.endswith(f"absent in mlkem-native: {why}")
    assert c[c.op == "ntt"].speedup.notna().all()
