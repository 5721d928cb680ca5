"""Bad input gets one line naming the problem and the fix, never a traceback."""

import os

import pytest


def one_line_error(r, *needles):
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr
    errors = [l for l in r.stderr.splitlines() if l.startswith("error:")]
    assert len(errors) == 1, r.stderr
    for n in needles:
        assert n in errors[0], errors[0]
    return errors[0]


@pytest.mark.parametrize(
    "args, needles",
    [
        (["--schemes", "ml-kem-2048"], ["unknown scheme 'ml-kem-2048'", "ml-kem-512, ml-kem-768, ml-kem-1024"]),
        (["--variants", "ref,avx512"], ["unknown variant 'avx512'", "refo0"]),
        (["--ops", "ntt,fft"], ["unknown op 'fft'", "invntt"]),
        (["--preset", "huge"], ["unknown preset 'huge'", "quick"]),
        (["--jobs", "0"], ["--jobs must be an integer >= 1"]),
        (["--batch", "many"], ["--batch must be 'auto' or an integer from 1 to"]),
        (["--batch", "99999999999"], ["--batch must be 'auto' or an integer from 1 to 16777216"]),
        (["--cc", "gcc-nonexistent"], ["compiler 'gcc-nonexistent' not found", "apt-get install"]),
        (["--metric", "joules"], ["unknown metric 'joules'"]),
        (["--cpu", "4096"], ["--cpu 4096 is not a CPU"]),
    ],
)
def test_bad_options(tmp_path, cli, args, needles):
    one_line_error(cli("run", tmp_path / "s", *args), *needles)


def test_malformed_study_toml_names_file_and_line(tmp_path, cli):
    d = tmp_path / "s"
    d.mkdir()
    (d / "study.toml").write_text("[study]\njobs = 3\nspins = = 4\n")
    one_line_error(cli("run", d), "study.toml", "malformed TOML", "line 3")


def test_unknown_study_key(tmp_path, cli):
    d = tmp_path / "s"
    d.mkdir()
    (d / "study.toml").write_text("[study]\nspinz = 4\n")
    one_line_error(cli("run", d), "unknown key(s) in [study]: spinz")


def test_unwritable_directory(tmp_path, cli):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    if os.access(ro, os.W_OK):  # root ignores permissions: use a path that cannot exist instead
        target = "/proc/pqsimd-study"
    else:
        target = ro / "s"
    one_line_error(cli("run", target), "cannot write to", "writable directory")


def test_bad_source_tree(tmp_path, cli):
    (tmp_path / "tree").mkdir()
    one_line_error(cli("run", tmp_path / "s", "--source", tmp_path / "tree"), "is not a PQClean tree", "crypto_kem/")


def test_missing_cargo(tmp_path, cli):
    env = {**os.environ, "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}  # no ~/.cargo/bin, no cargo in /usr/bin?
    if os.path.exists("/usr/bin/cargo"):
        pytest.skip("cargo is installed system-wide; cannot hide it")
    one_line_error(cli("run", tmp_path / "s", env=env), "cargo not found", "--source")


@pytest.mark.parametrize("key, value", [("cc", "5"), ("schemes", '"ml-kem-512"'), ("seed", '"abc"'), ("jobs", "true")])
def test_study_toml_values_are_type_checked(tmp_path, cli, key, value):
    d = tmp_path / "s"
    d.mkdir()
    (d / "study.toml").write_text(f"[study]\n{key} = {value}\n")
    one_line_error(cli("run", d), f"[study] {key} must be")


@pytest.fixture
def measured(tmp_path, cli):
    d = tmp_path / "s"
    r = cli("run", d, "--preset", "quick", "--schemes", "ml-kem-512", "--variants", "ref", "--ops", "empty", "--jobs", "1", "--spins", "2", "--reps", "2")
    assert r.returncode == 0, r.stderr
    return d


def test_changing_measurement_settings_of_existing_data_is_refused(measured, cli):
    one_line_error(cli("run", measured, "--spins", "5"), "already holds measurements with spins=2", "new directory")
    # a preset brings other sizes: refused the same way
    one_line_error(cli("run", measured, "--preset", "standard"), "already holds measurements with", "new directory")
    one_line_error(cli("run", measured, "--seed", "9"), "already holds measurements with seed=1")
    one_line_error(cli("run", measured, "--jobs", "0"), "--jobs must be an integer >= 1")


def test_hand_edited_study_toml_cannot_mix_settings(measured, cli):
    toml = measured / "study.toml"
    toml.write_text(toml.read_text().replace("spins = 2", "spins = 7"))
    err = one_line_error(cli("run", measured), "was measured with spins=2", "7")
    assert "ref.ml-kem-512.0.parquet" in err


def test_more_jobs_extend_the_plan_and_keep_measured_ones(measured, cli):
    from pqsimd import store

    first = store.sha256_file(store.raw_path(measured, "ref.ml-kem-512.0"))
    r = cli("run", measured, "--jobs", "3")
    assert r.returncode == 0, r.stderr
    assert "2 to run, 1 already finished" in r.stderr
    assert sorted(p.name for p in (measured / "raw").glob("*.parquet")) == [f"ref.ml-kem-512.{i}.parquet" for i in range(3)]
    assert store.sha256_file(store.raw_path(measured, "ref.ml-kem-512.0")) == first
    one_line_error(cli("run", measured, "--jobs", "2"), "fewer would orphan measured jobs")


def test_analyze_without_study(tmp_path, cli):
    r = cli("analyze", tmp_path / "nothing")
    assert r.returncode == 2 and "Traceback" not in r.stderr and r.stderr.startswith("error:")


@pytest.mark.parametrize("command", ["status", "cancel"])
def test_slurm_commands_on_a_directory_without_a_study(tmp_path, cli, command):
    one_line_error(cli("slurm", command, tmp_path / "nothing"), "holds no study")
