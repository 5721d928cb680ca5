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
        (["--batch", "many"], ["--batch must be 'auto' or a positive integer"]),
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
    err = one_line_error(cli("run", d), "study.toml", "malformed TOML", "line 3")


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


def test_changing_measurement_settings_of_existing_data_is_refused(tmp_path, cli):
    d = tmp_path / "s"
    r = cli("run", d, "--preset", "quick", "--schemes", "ml-kem-512", "--variants", "ref", "--ops", "empty", "--jobs", "1", "--spins", "2", "--reps", "2")
    assert r.returncode == 0, r.stderr
    one_line_error(cli("run", d, "--spins", "5"), "already holds measurements with spins=2", "new directory")


def test_analyze_without_study(tmp_path, cli):
    r = cli("analyze", tmp_path / "nothing")
    assert r.returncode == 2 and "Traceback" not in r.stderr and r.stderr.startswith("error:")
