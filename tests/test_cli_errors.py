"""Bad input gets one line naming the problem and the fix, never a traceback, and writes nothing
outside the study directory."""

import os
import signal
import subprocess
import time

import pytest

from conftest import PQSIMD, one_line_error


@pytest.mark.parametrize(
    "args, needles",
    [
        (["--schemes", "ml-kem-2048"], ["unknown scheme 'ml-kem-2048'", "ml-kem-512, ml-kem-768, ml-kem-1024"]),
        (["--variants", "ref,avx1024"], ["unknown variant 'avx1024'", "refo0"]),  # avx512 is a variant since issue 44
        (["--ops", "ntt,fft"], ["op 'fft' is not an op of the study's families", "invntt"]),
        (["--schemes", "ml-kem-512,ml-dsa-44", "--ops", "ntt,expand_a,nope"], ["op 'nope'", "ml-kem:", "ml-dsa:"]),
        (["--preset", "huge"], ["unknown preset 'huge'", "quick"]),
        (["--jobs", "0"], ["--jobs must be an integer from 1 to 10,000, got 0"]),
        # every count is bounded before planning (issue 36: --jobs 99999999999 planned 2.7 GB in 20 s)
        (["--jobs", "99999999999", "--no-run"], ["--jobs must be an integer from 1 to 10,000, got 99999999999"]),
        (["--spins", "99999999999"], ["--spins must be an integer from 1 to 100,000"]),
        (["--reps", "99999999999"], ["--reps must be an integer from 1 to 10,000"]),
        (["--warmup", "99999999999"], ["--warmup must be an integer from 0 to 10,000"]),
        (["--alone", "99999999999"], ["--alone must be an integer from 0 to 100"]),
        (["--layouts", "99999999999"], ["--layouts must be an integer from 1 to 64"]),
        (["--timer-quantum", "99999999999"], ["--timer-quantum must be an integer from 0 to 1,000,000,000"]),
        (["--warmup-ns", "99999999999"], ["--warmup-ns must be an integer from 0 to 10,000,000,000"]),
        (["--seed", "-1"], ["--seed must be an integer from 0 to"]),
        (["--job-timeout", "1e300", "--no-run"], ["--job-timeout must be a time in seconds up to 2,592,000"]),
        (["--seed", str(1 << 64)], ["--seed must be an integer from 0 to"]),
        (["--spins", "100000", "--reps", "10000", "--no-run"], ["--spins 100000 x --reps 10000 = 1,000,000,000 samples"]),
        (["--schemes", "all", "--variants", "refo0,refnv,ref,avx2", "--design", "separate", "--jobs", "10000",
          "--no-run"], ["would plan", "at most 1,000,000"]),
        (["--batch", "many"], ["--batch must be 'auto' or an integer from 1 to"]),
        (["--batch", "99999999999"], ["--batch must be 'auto' or an integer from 1 to 16777216"]),
        (["--cc", "gcc-nonexistent"], ["none of the study's compilers is installed", "compiler 'gcc-nonexistent' not found"]),
        (["--metric", "joules"], ["unknown metric 'joules'"]),
        (["--cpu", "4096"], ["--cpu 4096 is not a CPU"]),
        (["--variants", ","], ["variants is empty"]),
        (["--schemes", ","], ["schemes is empty"]),
        (["--ops", ","], ["ops is empty"]),
        (["--budget", "-1"], ["--budget must be a time in seconds"]),
        (["--design", "paired", "--warmup-ns", "-5"], ["--warmup-ns must be an integer from 0 to"]),
    ],
)
def test_bad_options(tmp_path, cli, args, needles):
    one_line_error(cli("run", tmp_path / "s", *args), *needles)
    assert not (tmp_path / "s").exists()  # a refused new study leaves no directory behind


def test_schemes_by_family_name_or_all(tmp_path, cli):
    from pqsimd import catalog

    r = cli("run", tmp_path / "f", "--schemes", "ml-dsa,ml-kem-512", "--variants", "ref", "--no-run")
    assert r.returncode == 0, r.stderr
    import tomllib

    doc = tomllib.loads((tmp_path / "f" / "study.toml").read_text())
    assert doc["study"]["schemes"] == [*catalog.families()["ml-dsa"].schemes, "ml-kem-512"]
    one_line_error(cli("run", tmp_path / "g", "--schemes", "ml-dsa,ml-dsa-44"), "scheme 'ml-dsa-44' is listed twice")
    assert catalog.expand_schemes(["all"]) == catalog.all_schemes()


def write_study(tmp_path, text):
    d = tmp_path / "s"
    d.mkdir(exist_ok=True)
    (d / "study.toml").write_text(text)
    return d


def test_malformed_study_toml_names_file_and_line(tmp_path, cli):
    d = write_study(tmp_path, "[study]\njobs = 3\nspins = = 4\n")
    one_line_error(cli("run", d), "study.toml", "malformed TOML", "line 3")


@pytest.mark.parametrize("text, needles", [
    ("[study]\nspinz = 4\n", ["unknown key(s) in [study]: spinz"]),
    ("[variants]\nx = 3\n", ["[variants.x] must be a table"]),
    ("study = 5\n", ["`study` must be a table"]),
    ("analysis = 3\n", ["`analysis` must be a table"]),
    ("[extra]\nx = 1\n", ["unknown table or key 'extra'"]),
    ("[variants.v]\nsources = \"clean\"\nflags = [\"-O2\"]\nrequires_cpu = \"avx2\"\n", ["`requires_cpu` must be a list"]),
    ("[variants.v]\nsources = \"clean\"\nflags = [\"-O2\"]\nflavour = 1\n", ["unknown key(s) flavour"]),
    ("[analysis]\nalpah = 0.1\n", ["unknown key(s) in [analysis]: alpah", "alpha"]),
])
def test_wrongly_shaped_study_toml(tmp_path, cli, text, needles):
    one_line_error(cli("run", write_study(tmp_path, text)), *needles)


@pytest.mark.parametrize("vid", ["../escape", "a/b", "", "a b", ".hidden", "x;rm"])
def test_unsafe_variant_ids_are_refused_and_write_nothing_outside(tmp_path, cli, vid):
    d = write_study(tmp_path, f'[study]\nvariants = ["{vid}"]\n[variants."{vid}"]\nsources = "clean"\nflags = ["-O2"]\n')
    before = set(tmp_path.rglob("*"))
    one_line_error(cli("run", d), "is not allowed", "file names")
    assert set(tmp_path.rglob("*")) - before <= {d / ".lock"}


def test_unwritable_directory(tmp_path, cli):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    target = "/proc/pqsimd-study" if os.access(ro, os.W_OK) else ro / "s"  # root ignores permissions
    one_line_error(cli("run", target), "cannot write to", "writable directory")


@pytest.mark.parametrize("kind", ["file", "unwritable"])
def test_bad_cache_location(tmp_path, cli, kind):
    if kind == "file":
        cache = tmp_path / "afile"
        cache.write_text("")
    else:
        cache = "/proc/pqsimd-cache"
    env = {**os.environ, "PQSIMD_CACHE": str(cache)}
    one_line_error(cli("run", tmp_path / "s", "--schemes", "ml-kem-512", "--variants", "ref", env=env),
                   "build cache", "PQSIMD_CACHE")
    assert not (tmp_path / "s").exists()  # refused after study.toml was written: the new directory is gone too


def test_bad_source_tree_does_not_stick(tmp_path, cli):
    (tmp_path / "tree").mkdir()
    d = tmp_path / "s"
    one_line_error(cli("run", d, "--source", tmp_path / "tree"), "is not a PQClean tree", "crypto_kem/")
    assert not (d / "study.toml").exists() or "source" not in (d / "study.toml").read_text()
    r = cli("run", d, "--preset", "quick", "--schemes", "ml-kem-512", "--variants", "ref", "--ops", "empty",
            "--jobs", "1", "--spins", "2", "--reps", "2", "--no-run")
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("kind", ["a file", "missing"])
def test_an_unusable_home_is_named_in_one_line(tmp_path, cli, kind):
    """Item 13 of issue 29: cargo keeps the pinned sources under $HOME/.cargo; a HOME that is a file
    or does not exist is named, not cargo's backtrace ("13: <unknown>")."""
    home = tmp_path / "home"
    if kind == "a file":
        home.write_text("")
    env = {k: v for k, v in os.environ.items() if k != "CARGO_HOME"} | {"HOME": str(home)}
    line = one_line_error(cli("run", tmp_path / "s", "--schemes", "ml-kem-512", env=env),
                          f"{home} is not a writable directory", f"HOME={home}", "--source")
    assert "<unknown>" not in line and not (tmp_path / "s").exists()
    assert kind == "a file" or not home.exists()  # nothing was made there


def test_cargos_own_error_line_is_quoted_not_its_backtrace():
    from pqsimd.sources import _cargo_error

    stderr = ("error: rustup could not choose a version of cargo to run\nhelp: run 'rustup default stable'\n\n"
              "Stack backtrace:\n   0: anyhow::error\n  13: <unknown>\n")
    assert _cargo_error(stderr) == "error: rustup could not choose a version of cargo to run"
    assert _cargo_error("warning: x\nfailed\n") == "failed"


def test_missing_cargo(tmp_path, cli):
    env = {**os.environ, "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    if os.path.exists("/usr/bin/cargo"):
        pytest.skip("cargo is installed system-wide; cannot hide it")
    one_line_error(cli("run", tmp_path / "s", env=env), "cargo not found", "--source")


@pytest.mark.parametrize("key, value", [("cc", "5"), ("schemes", '"ml-kem-512"'), ("seed", '"abc"'), ("jobs", "true"),
                                        ("budget", '"1s"'), ("design", "3")])
def test_study_toml_values_are_type_checked(tmp_path, cli, key, value):
    one_line_error(cli("run", write_study(tmp_path, f"[study]\n{key} = {value}\n")), f"[study] {key} must be")


def test_hints_quote_their_arguments(tmp_path, cli):
    weird = tmp_path / "a b$(touch pwned)"
    r = cli("report", weird)
    err = one_line_error(r, "no study directory")
    assert "'" + str(weird) + "'" in err  # pasting the hint runs nothing
    assert not (tmp_path / "pwned").exists()


@pytest.fixture
def measured(tmp_path, cli):
    d = tmp_path / "s"
    r = cli("run", d, "--preset", "quick", "--schemes", "ml-kem-512", "--variants", "ref", "--ops", "empty", "--jobs",
            "1", "--spins", "2", "--reps", "2", "--design", "separate")
    assert r.returncode == 0, r.stderr
    return d


def test_changing_measurement_settings_of_existing_data_is_refused(measured, cli):
    one_line_error(cli("run", measured, "--spins", "5"), "planned with spins=2", "new directory")
    # a preset brings other sizes: refused the same way
    one_line_error(cli("run", measured, "--preset", "standard"), "was planned with", "new directory")
    one_line_error(cli("run", measured, "--seed", "9"), "planned with seed=1")
    one_line_error(cli("run", measured, "--design", "paired"), "planned with design='separate'")
    one_line_error(cli("run", measured, "--jobs", "0"), "--jobs must be an integer from 1 to")
    one_line_error(cli("run", measured, "--jobs", "99999999999"), "--jobs must be an integer from 1 to 10,000")


def test_more_jobs_extend_the_plan_and_keep_measured_ones(measured, cli):
    from pqsimd import store
    from pqsimd.studydir import StudyDir

    sd = StudyDir(measured)
    first = store.sha256_file(sd.raw_path("ref.gcc.ml-kem-512.0"))
    r = cli("run", measured, "--jobs", "3")
    assert r.returncode == 0, r.stderr
    assert "2 to run, 1 already finished" in " ".join(r.stderr.split())
    assert sorted(p.name for p in sd.raw_files()) == [f"ref.gcc.ml-kem-512.{i}.parquet" for i in range(3)]
    assert store.sha256_file(sd.raw_path("ref.gcc.ml-kem-512.0")) == first
    one_line_error(cli("run", measured, "--jobs", "2"), "fewer would orphan measured jobs")


def test_foreign_raw_file_is_refused_by_analyze(measured, tmp_path, cli):
    """A raw file from another study (other settings) copied into raw/ is never pooled."""
    other = tmp_path / "other"
    r = cli("run", other, "--preset", "quick", "--schemes", "ml-kem-512", "--variants", "ref", "--ops", "empty",
            "--jobs", "2", "--spins", "3", "--reps", "2", "--design", "separate")
    assert r.returncode == 0, r.stderr
    import shutil

    shutil.copy(other / "raw" / "ref.gcc.ml-kem-512.1.parquet", measured / "raw")
    one_line_error(cli("analyze", measured), "ref.gcc.ml-kem-512.1.parquet", "not a job", "move it out")
    (measured / "raw" / "ref.gcc.ml-kem-512.1.parquet").unlink()
    shutil.copy(other / "raw" / "ref.gcc.ml-kem-512.0.parquet", measured / "raw")  # same id, other settings
    one_line_error(cli("analyze", measured), "ref.gcc.ml-kem-512.0.parquet", "measured with spins=3", "never mixed")


def test_ctrl_c_prints_how_to_continue(tmp_path):
    d = tmp_path / "s"
    args = [str(PQSIMD), "run", d, "--preset", "quick", "--schemes", "ml-kem-512", "--variants", "refo0", "--ops",
            "gen_a", "--jobs", "4", "--spins", "300", "--reps", "5", "--design", "separate", "--budget", "0"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not list((d / "raw").glob(".*.tsv")):
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    err = proc.communicate(timeout=120)[1]
    assert proc.returncode == 130 and "Traceback" not in err and "aborted" not in err
    assert "interrupted: finished jobs are kept" in " ".join(err.split()) and "continues the study" in err


def test_analyze_without_study(tmp_path, cli):
    r = cli("analyze", tmp_path / "nothing")
    assert r.returncode == 2 and "Traceback" not in r.stderr and r.stderr.startswith("error:")


@pytest.mark.parametrize("command", ["status", "cancel"])
def test_slurm_commands_on_a_directory_without_a_study(tmp_path, cli, command):
    one_line_error(cli("slurm", command, tmp_path / "nothing"), "holds no study")


def test_budget_takes_a_unit(tmp_path, cli):
    """--budget 0.5, 0.5s and 500ms are the same budget; a word is refused with the accepted forms."""
    import tomllib

    for i, text in enumerate(("0.25", "0.25s", "250ms")):
        r = cli("run", tmp_path / f"b{i}", "--schemes", "ml-kem-512", "--variants", "ref", "--budget", text, "--no-run")
        assert r.returncode == 0, r.stderr
        assert tomllib.loads((tmp_path / f"b{i}" / "study.toml").read_text())["study"]["budget"] == 0.25
    r = cli("run", tmp_path / "w", "--budget", "soon")
    assert r.returncode == 2 and "'soon' is not a duration: give seconds, e.g. 0.5, 0.5s or 500ms" in r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "w").exists()


@pytest.mark.parametrize("args, study_toml, needles", [
    (["--variants", "neon"], None, ["neon (gcc, ml-kem): not built for x86_64", "--isa aarch64"]),
    (["--variants", "mine"], '[variants.mine]\nsources = "cleen"\nflags = ["-O2"]\n',
     ["mine (gcc, ml-kem): family ml-kem has no 'cleen' implementation"]),
    (["--isa", "aarch64", "--ablation", "--metric", "instructions"], None,
     ["32 variants (mlkem-native+none", "not built for aarch64", "--isa x86_64"]),
])
def test_a_study_that_can_build_nothing_here_is_refused_in_one_line(tmp_path, cli, args, study_toml, needles):
    """Item 10 of issue 29: a study whose every build is skipped here (another ISA's variant, a
    misspelt implementation, an ablation of x86 kernels on aarch64) exits non-zero, one line naming
    why and what would run, and leaves no directory (it did not exit 0 with nothing timed)."""
    d = tmp_path / "s"
    if study_toml:
        d.mkdir()
        (d / "study.toml").write_text(study_toml)
    line = one_line_error(cli("run", d, "--schemes", "ml-kem-512", "--preset", "quick", *args),
                          "nothing in this study can be built", *needles)
    assert "pqsimd list" in line
    assert study_toml or not d.exists()


def test_bootstrap_counts_and_seeds_are_bounded(measured, cli, tmp_path):
    """--bootstrap and --seed of analyze and campaign: one line, before anything is read or allocated
    (10^12 resamples were a MemoryError; a negative campaign seed a traceback from numpy)."""
    one_line_error(cli("analyze", measured, "--bootstrap", "999999999999"), "n_boot", "from 100 to 100,000")
    one_line_error(cli("analyze", measured, "--seed", "-1"), "seed", "from 0 to")
    one_line_error(cli("campaign", tmp_path / "c", measured, "--bootstrap", "999999999999"),
                   "--bootstrap must be from 100 to 100,000")
    one_line_error(cli("campaign", tmp_path / "c", measured, "--seed", "-1"), "--seed must be an integer from 0 to")
    assert not (tmp_path / "c").exists()


def test_like_starts_a_new_study_from_another_s_settings_and_refuses_in_one_line(cli, tmp_path):
    """--like DIR (the quiet rerun's advice): a directory without a study is refused, and so is a target that
    holds a study already, each in one line; nothing is written for either."""
    one_line_error(cli("run", tmp_path / "new", "--like", tmp_path / "nowhere"), "--like", "no study.toml there")
    assert not (tmp_path / "new").exists()
    old, new = tmp_path / "old", tmp_path / "taken"
    for d in (old, new):
        d.mkdir()
        (d / "study.toml").write_text("[study]\nschemes = ['ml-kem-512']\n")
    one_line_error(cli("run", new, "--like", old), "holds a study already", "new directory")
