"""Randomized code and data layout per job (layout.py, run/layouts.py, analyze/layout.py).

Real builds relinked by lld: a copy's record reproduces its bytes and offsets, seeds move the code,
the gate refuses a copy that behaves differently, the driver clears vector state; a short real
study of identical code in two layouts; the layout variance component against a known truth."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import require_tool, run_cli

pytestmark = pytest.mark.skipif(
    __import__("pqsimd.layout", fromlist=["linker"]).linker() is None, reason="no lld (apt-get install lld-16)")


def _link(build) -> list[str]:
    return json.loads((build.directory / "build.json").read_text())["link"]


def _symbol(lib: Path, suffix: str) -> int:
    out = subprocess.run(["nm", str(lib)], capture_output=True, text=True, check=True).stdout
    return next(int(line.split()[0], 16) for line in out.splitlines() if line.endswith(suffix))


def test_a_copy_is_reproduced_by_its_seed_and_seeds_move_the_code(builds, driver, tmp_path):
    from pqsimd import layout, store

    ref = builds["ref"]
    a, b = tmp_path / "a.so", tmp_path / "b.so"
    pad, _ = layout.relink(_link(ref), 12345, a)
    layout.relink(_link(ref), 12345, b)
    assert store.sha256_file(a) == store.sha256_file(b)  # same objects, seed and linker: same bytes
    assert layout.op_offsets(driver.path, a, "ml-kem-512") == layout.op_offsets(driver.path, b, "ml-kem-512")
    assert pad.stack % 16 == 0 and pad == layout.Padding.of(12345)
    # eight seeds put poly_frommsg at more than one offset modulo 64 (the 16-byte effect of the issue)
    mods = set()
    for seed in range(1, 9):
        out = tmp_path / f"s{seed}.so"
        layout.relink(_link(ref), seed, out)
        mods.add(_symbol(out, "MLKEM512_CLEAN_poly_frommsg") % 64)
    assert len(mods) >= 2, mods
    assert _symbol(a, "MLKEM512_CLEAN_poly_frommsg") != _symbol(builds["ref"].library, "MLKEM512_CLEAN_poly_frommsg")


def test_the_copy_gate_passes_a_copy_and_refuses_another_builds_bytes(builds, driver, tmp_path):
    from pqsimd import layout
    from pqsimd.verify import layouts as gate

    ref = gate.Reference(driver.path, builds["ref"].library, "ml-kem-512")
    copy = tmp_path / "copy.so"
    layout.relink(_link(builds["ref"]), 7, copy)
    ok, how = gate.check(ref, copy)
    assert ok and "functions" in how and "answers" in how
    # a "copy" that is another build's code: its functions differ (caught before any answer is compared)
    ok, how = gate.check(ref, builds["avx2"].library)
    assert not ok and "functions differ" in how


def test_the_driver_clears_vector_state_and_reads_layout_lines(driver, builds, tmp_path):
    dis = subprocess.run(["objdump", "-d", str(driver.path)], capture_output=True, text=True, check=True).stdout
    assert "vzeroupper" in dis
    lib = builds["ref"].library
    spec = (f"design paired\nscheme ml-kem-512\nvariant {lib}\nvariant {lib}\nlayouts 2\nstack 0 24\ncpu -1\n"
            f"op ntt 2 1 0 1 1\n")
    (tmp_path / "bad.spec").write_text(spec)
    r = subprocess.run([str(driver.path), "run", str(tmp_path / "bad.spec")], capture_output=True, text=True)
    assert r.returncode == 2 and "multiple of 16" in r.stderr
    (tmp_path / "ok.spec").write_text(spec.replace("stack 0 24", "stack 0 2048"))
    r = subprocess.run([str(driver.path), "run", str(tmp_path / "ok.spec")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rows = [line.split("\t") for line in r.stdout.splitlines()[1:]]
    # spin s times copy s mod 2: entries 0 and 1 alternate, one per spin
    assert [(int(x[1]), int(x[2])) for x in rows] == [(0, 0), (1, 1)]


def test_layout_component_recovers_a_known_layout_sd():
    from pqsimd.analyze.groups import Group
    from pqsimd.analyze.layout import layout_component

    rng = np.random.default_rng(5)
    J, L, S = 12, 2, 60

    def group(sd: float) -> Group:
        vals, job, lay, spin = [], [], [], []
        for j in range(J):
            job_effect = rng.normal(0, 0.03)
            for c in range(L):
                copy_effect = rng.normal(0, sd)
                for s in range(S // L):
                    vals.append(1000 * np.exp(job_effect + copy_effect + rng.normal(0, 0.01)))
                    job.append(j), lay.append(c), spin.append(2 * s + c)
        return Group("ticks", "s", "op", "v", "cc", np.array(vals), np.array(job), np.array(spin),
                     [f"j{j}" for j in range(J)], 1, layout=np.array(lay, np.int16))

    big = layout_component(group(0.05))
    assert 0.025 < big["layout_sd"] < 0.09 and big["n_layouts"] == J * L
    none = layout_component(group(0.0))
    assert none["layout_sd"] < 0.01
    # the job value is the median of the copies' medians: with two copies their geometric mean (each copy alike)
    g = group(0.05)
    c0 = np.median(g.values[(g.job == 0) & (g.layout == 0)])
    c1 = np.median(g.values[(g.job == 0) & (g.layout == 1)])
    assert g.job_medians[0] == pytest.approx(np.sqrt(c0 * c1))


@pytest.fixture(scope="module")
def twin_study(tmp_path_factory):
    """ref and its A/A duplicate (the same objects: identical code) in a short study whose every job
    lays both out anew: identical code in different layouts."""
    d = tmp_path_factory.mktemp("layout") / "s"
    r = run_cli("run", d, "--preset", "quick", "--schemes", "ml-kem-512", "--ops", "poly_frommsg,ntt,empty",
                "--variants", "refnv,ref", "--aa", "ref", "--jobs", "6", "--layouts", "2")
    assert r.returncode == 0, r.stderr
    r = run_cli("analyze", d)
    assert r.returncode == 0, r.stderr
    return d


def test_identical_code_in_two_layouts_gets_no_verdict_and_is_found(twin_study):
    import pandas as pd

    d = twin_study
    aa = pd.read_csv(d / "results" / "aa.csv")
    assert len(aa) == 2 and not aa["verdict"].isin(["faster", "slower"]).any(), aa[["op", "speedup", "verdict"]]
    s = json.loads((d / "results" / "summary.json").read_text())
    assert s["layout"]["mode"] == "random" and s["layout"]["copies_per_job"] == 2
    c = pd.read_csv(d / "results" / "comparisons.csv")
    # refnv -> ref of poly_frommsg is the same machine code (the audit): found by the gate's hashes
    row = c[(c["op"] == "poly_frommsg") & (c["baseline"] == "refnv") & (c["variant"] == "ref")]
    assert bool(row["identical_code"].iloc[0])
    assert s["identical_code"]["n"] >= 1
    # every job's raw record names its copies (seed, stack, sha256, offsets) and the copies are gone
    import pyarrow.parquet as pq

    rec = json.loads(pq.read_schema(next((d / "raw").glob("paired.*.parquet"))).metadata[b"pqsimd.job"])
    copies = rec["layout"]["builds"]["ref.gcc.ml-kem"]["copies"]
    assert [c["index"] for c in copies] == [0, 1] and all(c["offsets"]["ml-kem-512"] for c in copies)
    assert not list((d / "bin" / "layouts").glob("*/*.so"))
    g = pd.read_csv(d / "results" / "groups.csv")
    assert (g.loc[g["op"] != "empty", "n_layouts"] == 12).all()


def test_layout_fixed_times_the_builds_as_linked(tmp_path):
    d = tmp_path / "f"
    r = run_cli("run", d, "--preset", "quick", "--schemes", "ml-kem-512", "--ops", "ntt", "--variants", "ref,avx2",
                "--layout", "fixed")
    assert r.returncode == 0, r.stderr
    assert not (d / "bin" / "layouts").exists() or not any((d / "bin" / "layouts").iterdir())
    assert run_cli("analyze", d).returncode == 0
    s = json.loads((d / "results" / "summary.json").read_text())
    assert s["layout"]["mode"] == "fixed" and "conditional on that one layout" in s["layout"]["note"]
    # the plan fixed it: a later run cannot switch to random layouts into the same study
    r = run_cli("run", d, "--layout", "random")
    assert r.returncode != 0 and "layout" in r.stderr


def test_coresidency_interval_is_the_pooled_t_interval():
    from scipy import stats

    from pqsimd.stats.coresidency import ratio_interval

    rng = np.random.default_rng(3)
    lp, la = rng.normal(0.1, 0.05, 10), rng.normal(0.0, 0.05, 3)
    ratio, lo, hi, df = ratio_interval(lp, la, 0.05)
    ci = stats.ttest_ind(lp, la, equal_var=True).confidence_interval(0.95)
    assert (np.log(lo), np.log(hi)) == pytest.approx((ci.low, ci.high)) and df == 11
    assert np.log(ratio) == pytest.approx(lp.mean() - la.mean())
    # one alone job: the paired jobs' variance, df = J - 1 (by hand)
    ratio, lo, hi, df = ratio_interval(lp, la[:1], 0.05)
    half = stats.t.ppf(0.975, 9) * lp.std(ddof=1) * np.sqrt(1 / 10 + 1)
    assert df == 9 and np.log(hi) == pytest.approx(lp.mean() - la[0] + half)


def test_builds_timed_alone_stay_out_of_the_comparisons(tmp_path):
    """The alone jobs give results/coresidency and stay out of the groups and comparisons; on a coarse
    clock (every read rounded to 26 ticks, as a Zen TSC read fenced steps: issue 32), where job values
    stuck on the lattice made a co-residency interval of zero width (ci_low == ratio), too."""
    import pandas as pd

    d = tmp_path / "co"
    r = run_cli("run", d, "--preset", "quick", "--schemes", "ml-kem-512", "--ops", "ntt,poly_tomsg", "--variants",
                "ref,avx2", "--jobs", "3", "--alone", "2", "--timer-quantum", "26")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (d / "raw").glob("alone.*")) == [
        f"alone.{v}.gcc.ml-kem-512.{i}.parquet" for v in ("avx2", "ref") for i in (0, 1)]
    assert run_cli("analyze", d).returncode == 0
    co = pd.read_csv(d / "results" / "coresidency.csv")
    assert set(zip(co["op"], co["variant"])) == {(o, v) for o in ("ntt", "poly_tomsg") for v in ("ref", "avx2")}
    assert (co["n_paired"] == 3).all() and (co["n_alone"] == 2).all()
    # no interval narrower than the clock: each holds its ratio strictly, by at least the resolution
    assert ((co["ci_low"] < co["ratio"]) & (co["ratio"] < co["ci_high"])).all()
    assert (co["resolution"] > 0).all() and (co["ci_high"] / co["ci_low"] - 1 >= co["resolution"] - 1e-12).all()
    spins = pd.read_parquet(d / "results" / "spins.parquet")
    assert not spins["job"].astype(str).str.startswith("alone.").any()
    c = pd.read_csv(d / "results" / "comparisons.csv")
    assert (c["n_base"] > 0).all() and set(c["variant"]) == {"avx2"}
    s = json.loads((d / "results" / "summary.json").read_text())
    assert s["coresidency"]["rows"] == 4
    assert "co-residency:" in run_cli("show", d).stdout


def test_no_lld_is_one_line_naming_the_package_and_the_way_out(monkeypatch):
    from pqsimd import layout
    from pqsimd.errors import PqsimdError

    real = layout.settings()
    monkeypatch.setattr(layout, "settings", lambda: {**real, "linkers": ["ld.pqsimd-no-such-linker"]})
    assert layout.linker() is None
    with pytest.raises(PqsimdError) as e:
        layout.require_linker()
    msg = str(e.value)
    assert "\n" not in msg and f"apt-get install {real['package']}" in msg and "--layout fixed" in msg


def test_the_linker_folder_is_made_once_by_racing_threads(tmp_path, monkeypatch):
    # layouts are prepared by a thread pool: CI once saw two threads of one process collide on the folder's
    # temporary link ("File exists") on a fresh cache
    from concurrent.futures import ThreadPoolExecutor

    from pqsimd import layout

    lld = layout.linker()
    if lld is None:
        pytest.skip("no lld")
    for attempt in range(5):
        monkeypatch.setenv("PQSIMD_CACHE", str(tmp_path / f"cache{attempt}"))
        with ThreadPoolExecutor(16) as pool:
            dirs = list(pool.map(lambda _: layout._tool_dir(lld), range(64)))
        assert len(set(dirs)) == 1
        assert (dirs[0] / "ld.lld").resolve() == Path(lld).resolve()
        assert [p.name for p in dirs[0].iterdir()] == ["ld.lld"]  # no temporary link left behind


def test_copies_and_duplicates_take_one_auto_batch(driver, builds, tmp_path):
    """`batch_of`: an entry takes an earlier entry's auto batch instead of sizing itself. Shown with
    two different builds, whose own auto batches differ (refo0's poly_tomsg is several times slower
    than avx2's), so the test fails if the directive is ignored; then what run/spec.py writes for
    layout copies and an A/A duplicate."""
    from pqsimd.run.spec import batch_of_line

    slow, fast = builds["refo0"].library, builds["avx2"].library
    base = f"design paired\nscheme ml-kem-512\nvariant {slow}\nvariant {fast}\ncpu -1\ntarget 4000\n"

    def batches(extra: str) -> dict[int, set[int]]:
        spec = tmp_path / "s.spec"
        spec.write_text(base + extra + "op poly_tomsg 3 2 0 auto auto\n")
        r = subprocess.run([str(driver.path), "run", str(spec)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        out: dict[int, set[int]] = {}
        for line in r.stdout.splitlines()[1:]:
            x = line.split("\t")
            out.setdefault(int(x[1]), set()).add(int(x[5]))
        return out

    own = batches("")
    assert own[0] != own[1]  # each sized itself: different batches
    shared = batches("batch_of 0 0\n")
    assert shared[1] == shared[0]  # one batch for both, refo0's (the first)
    (tmp_path / "bad.spec").write_text(base + "batch_of 1 1\nop poly_tomsg 1 1 0 auto auto\n")
    r = subprocess.run([str(driver.path), "run", str(tmp_path / "bad.spec")], capture_output=True, text=True)
    assert r.returncode == 2 and "batch_of" in r.stderr
    # what a job's spec says: every copy of a build and of its A/A duplicate takes the first copy's batch
    assert batch_of_line(["ref.gcc.ml-kem", "avx2.gcc.ml-kem", "ref+aa.gcc.ml-kem"], 2) == ["batch_of 0 0 2 2 0 0"]
    assert batch_of_line(["ref.gcc.ml-kem", "avx2.gcc.ml-kem"], 1) == []


# -- what a job times is what was gated (issue 36) -----------------------------------------------------------
# A job checks its copies, then may wait minutes for its CPU: a copy replaced in that wait was what the
# driver loaded, under the old sha256 (the probe timed ref with avx2's code).

def _wait_for_the_cpu_and_then(tmp_path, meddle):
    """A one-job study of the SHAKE fixture whose CPU is held by another 'study': `meddle(copy, base)`
    runs while the job waits for it; the CPU is then let go. Returns the run and the copy's sha256
    when it was gated."""
    import os
    import sys

    from conftest import PQSIMD

    from pqsimd import store

    cpu = min(os.sched_getaffinity(0))
    env = {**os.environ, "PQSIMD_FAMILY_PATH": str(Path(__file__).parent / "fixtures" / "families"),
           "PQSIMD_CACHE": str(tmp_path / "cache"), "PQSIMD_IDLE_WAIT": "0"}
    holder = subprocess.Popen([sys.executable, "-c", "import sys\nfrom pqsimd.run import cpuclaim\n"
                               f"with cpuclaim.claim({cpu}, 'study /elsewhere, job j'):\n"
                               "    print('held', flush=True)\n    sys.stdin.read()"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    d = tmp_path / "s"
    run = subprocess.Popen([str(PQSIMD), "run", str(d), "--schemes", "shake-256", "--variants", "ref", "--preset",
                            "quick", "--jobs", "1", "--spins", "20", "--reps", "5", "--budget", "0", "--layout",
                            "random", "--layouts", "1", "--cpu", str(cpu), "--shared-cpu", "keep"],
                           stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env)
    said = []
    try:
        for line in run.stderr:
            said.append(line)
            if "waiting for CPU" in line:
                break
        (copy,) = (d / "bin" / "layouts").glob("*/ref.*.0.so")
        gated = json.loads((copy.parent / "layouts.json").read_text())["builds"]
        (entry,) = gated.values()
        assert entry["copies"][0]["sha256"] == store.sha256_file(copy)
        meddle(copy, next((d / "bin").glob("ref.*.so")))
    finally:
        holder.stdin.close()
        holder.wait()
        said += run.stderr.readlines()
        run.wait()
    return run.returncode, " ".join("".join(said).split()), entry["copies"][0]["sha256"], d


def test_a_copy_renamed_over_while_the_job_waits_is_not_what_is_timed(tmp_path):
    import os

    from pqsimd import store
    from pqsimd.studydir import StudyDir

    def rename_over(copy, base):
        junk = copy.with_name("junk")
        junk.write_bytes(b"not a shared object")
        os.replace(junk, copy)

    rc, said, gated, d = _wait_for_the_cpu_and_then(tmp_path, rename_over)
    assert rc == 0, said  # the driver loaded the file that was checked, not what the name points to now
    (raw,) = StudyDir(d).raw_files()
    rec = store.read_job_record(raw)
    (entry,) = rec["layout"]["builds"].values()
    assert entry["copies"][0]["sha256"] == gated


def test_a_copy_written_over_in_place_while_the_job_waits_is_refused(tmp_path):
    def write_in_place(copy, base):
        with open(copy, "r+b") as f:  # the same file, other bytes: the build as linked, a valid library
            f.truncate(0)
            f.write(base.read_bytes())

    rc, said, _, d = _wait_for_the_cpu_and_then(tmp_path, write_in_place)
    assert rc != 0 and "changed while it was timed" in said and "Traceback" not in said, said
    assert not list((d / "raw").glob("*.parquet"))  # nothing kept


def test_a_variants_own_link_flags_are_named_where_they_change_the_layout(tmp_path):
    """A variant's flags come last in its link, so they win: its own linker (-fuse-ld=bfd) or its own
    --shuffle-sections would decide the copy instead of lld and the recorded seed: such builds are
    timed as linked, with that reason (not "collect2: error: ld returned 1 exit status");
    -fno-function-sections coarsens the shuffle to whole objects, and that is said. The records name
    every copy by its absolute path, its link by the copy's own name, and the lld that made it."""
    import os
    import shutil

    from conftest import PQSIMD

    from pqsimd import store
    from pqsimd.studydir import StudyDir

    if shutil.which("clang-16") is None:
        require_tool("clang-16 is not installed (make test installs it as root: tools/test-deps.sh)")
    env = {**os.environ, "PQSIMD_FAMILY_PATH": str(Path(__file__).parent / "fixtures" / "families"),
           "PQSIMD_CACHE": str(tmp_path / "cache"), "PQSIMD_IDLE_WAIT": "0"}
    d = tmp_path / "s"
    d.mkdir()
    (d / "study.toml").write_text(
        '[study]\nvariants = ["ref", "bfd", "shuf", "nofs"]\n'
        '[variants.bfd]\nsources = "clean"\nflags = ["-O3", "-fuse-ld=bfd"]\n'
        '[variants.shuf]\nsources = "clean"\nflags = ["-O3", "-fuse-ld=lld", "-Wl,--shuffle-sections=*=0"]\n'
        '[variants.nofs]\nsources = "clean"\nflags = ["-O3", "-fno-function-sections", "-fno-data-sections"]\n')
    r = subprocess.run([str(PQSIMD), "run", "s", "--schemes", "shake-256", "--cc", "clang-16", "--preset", "quick",
                        "--jobs", "1", "--spins", "3", "--reps", "2", "--budget", "0", "--layout", "random",
                        "--layouts", "1", "--shared-cpu", "keep"], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=1200)
    assert r.returncode == 0, r.stderr
    said = " ".join(r.stderr.split())
    assert "layout fixed bfd.clang-16.shake: the variant's linker (-fuse-ld=bfd) overrides lld" in said
    assert "collect2" not in said
    assert ("layout fixed shuf.clang-16.shake: the variant's own -Wl,--shuffle-sections=*=0 would order the sections "
            "instead of the copy's recorded seed") in said
    assert ("layout weaker nofs.clang-16.shake: the variant's -fno-function-sections and -fno-data-sections leave one "
            "section per object") in said
    (raw,) = StudyDir(d).raw_files()
    builds = store.read_job_record(raw)["layout"]["builds"]
    assert builds["bfd.clang-16.shake"]["copies"][0]["fixed"].startswith("the variant's linker")
    assert builds["nofs.clang-16.shake"]["copies"][0]["weakened"]
    ref = builds["ref.clang-16.shake"]
    assert "LLD" in ref["linker"]["version"] and Path(ref["linker"]["path"]).is_absolute()
    (copy,) = ref["copies"]
    assert copy["path"] == str(d / "bin" / "layouts" / raw.stem / "ref.clang-16.shake.0.so")
    link = copy["link"]
    assert link[link.index("-o") + 1] == copy["path"] and not any(".so." in a for a in link)  # no temporary name
