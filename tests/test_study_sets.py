"""Studies made of studies (pqsimd/studysets.py), as a user meets them once they exist: a machine set
is known by DIR/machines.toml (show and report read its campaign, analyze makes it again, run
continues it, never a plain study beside machines/); a vector-length set by DIR/vlens.toml, every
hand edit of which is refused in one line naming the file; a typo leaves no half-made set; a set made
with --no-run sends analyze, report and show back to `pqsimd run DIR`; --machines with a --vlen list
is refused, never half-obeyed."""

from __future__ import annotations

import json
import os
import shutil
import tomllib

import pytest

from pqsimd import isa

from conftest import one_line_error, require_tool, run_cli
from test_campaign import EMR_MACHINE, ZEN5_MACHINE, synthetic_member

RV = isa.get("riscv64")
TINY = ["--schemes", "ml-kem-512", "--variants", "ref", "--ops", "ntt", "--no-run"]


def _need_slurm_tools():
    if not shutil.which("sbatch"):
        require_tool("sbatch is not installed (tools/test-deps.sh): --executor slurm checks for it")


def _need_riscv64():
    if not (shutil.which(RV.qemu) and shutil.which("clang-19")):
        require_tool(f"{RV.qemu} or clang-19 is not installed (tools/test-deps.sh)")


def test_machines_with_a_vlen_list_is_refused_not_half_obeyed(tmp_path):
    d = tmp_path / "m2"
    err = one_line_error(run_cli("run", d, "--executor", "slurm", "--machines", "a,b", "--vlen", "128,256", "--isa",
                                 RV.name, "--no-run"), "--vlen 128,256", "one --vlen N", "without --machines")
    assert "Traceback" not in err and not d.exists()


def test_a_machine_set_is_known_by_its_marker_and_continued_as_one(tmp_path):
    _need_slurm_tools()
    d = tmp_path / "m2"
    r = run_cli("run", d, "--executor", "slurm", "--machines", "a,b", *TINY)
    assert r.returncode == 0, r.stderr[-2000:]
    assert tomllib.loads((d / "machines.toml").read_text())["partitions"] == ["a", "b"]
    assert (d / "machines" / "a" / "study.toml").exists() and (d / "machines" / "b" / "study.toml").exists()
    # nothing measured yet: every reader sends the user back to the set's own run
    for cmd in ("show", "analyze", "report"):
        one_line_error(run_cli(cmd, d), f"run `pqsimd run {d}` first")
    # following that advice continues the machines (SLURM, the same partitions), never a study beside them
    again = run_cli("run", d, "--no-run")
    assert again.returncode == 0, again.stderr[-2000:]
    assert not (d / "study.toml").exists() and not (d / "plan.json").exists()
    assert tomllib.loads((d / "machines.toml").read_text())["partitions"] == ["a", "b"]
    assert run_cli("run", d, "--machines", "b,a", "--executor", "slurm", "--no-run").returncode == 0  # same set
    one_line_error(run_cli("run", d, "--machines", "a,c", "--executor", "slurm", "--no-run"),
                   "holds the partitions a,b", f"`pqsimd run {d}`")
    one_line_error(run_cli("run", d, "--executor", "local", "--no-run"), "machine set", "drop --executor local")
    one_line_error(run_cli("run", d, "--vlen", "128,256", "--no-run"), "--vlen 128,256", "one --vlen N")
    # a set without its marker (made before it was written): a plain run is refused, naming the command
    (d / "machines.toml").unlink()
    one_line_error(run_cli("run", d, "--no-run"), "no machines.toml",
                   f"`pqsimd run {d} --executor slurm --machines a,b`")
    assert not (d / "study.toml").exists()


def test_a_typo_in_a_machine_set_leaves_nothing_behind(tmp_path):
    _need_slurm_tools()
    d = tmp_path / "m3"
    one_line_error(run_cli("run", d, "--executor", "slurm", "--machines", "a,b", "--schemes", "bogus", "--no-run"),
                   "unknown scheme 'bogus'")
    assert not d.exists()
    # refused inside the first sub-study's run (after the marker was written): the set is forgotten too
    one_line_error(run_cli("run", d, "--executor", "slurm", "--machines", "a,b", "--cc", "gcc-99", "--no-run"),
                   "gcc-99")
    assert not d.exists()


def test_analyze_show_and_report_of_a_machine_set_read_its_campaign(tmp_path):
    d = tmp_path / "m2"
    synthetic_member(d / "machines" / "zen5", 1, ZEN5_MACHINE)
    synthetic_member(d / "machines" / "emr", 2, EMR_MACHINE, scale={"ntt": 1.3})
    (d / "machines.toml").write_text('partitions = ["zen5", "emr"]\n')
    one_line_error(run_cli("show", d), "no campaign yet", f"`pqsimd analyze {d}`")
    r = run_cli("analyze", d)
    assert r.returncode == 0, r.stderr[-2000:]
    summary = json.loads((d / "campaign" / "results" / "campaign.json").read_text())
    assert summary["arms"] == ["zen5", "emr"]
    assert not (d / "results").exists()  # no study's results at the top of the set
    shown = run_cli("show", d, env={**os.environ, "COLUMNS": "220"})
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert "Emerald Rapids" in shown.stdout and "Zen 5" in shown.stdout
    rep = run_cli("report", d)
    assert rep.returncode == 0, rep.stderr[-2000:]
    assert (d / "campaign" / "report" / "index.html").exists() and not (d / "report").exists()


@pytest.mark.parametrize("text, needles", [
    ('vlens = [-5, 0]\nisa = "riscv64"\n', ["names the vector length -5", "power of two from 128"]),
    ('vlens = []\nisa = "riscv64"\n', ["[]", "two or more different lengths"]),
    ('vlens = [128, 128]\nisa = "riscv64"\n', ["two or more different lengths"]),
    ("vlens = [128, 256]\n", ["no isa"]),
    ('vlens = [128, 256]\nisa = 5\n', ["isa = 5", "known: "]),
    ('vlens = [128, 256]\nisa = "x86_64"\n', ["has no vector length"]),
    ("vlens = 3\n", ["not a list of numbers"]),
    ("vlens = [\n", ["cannot be read"]),
])
def test_a_hand_edited_vlens_toml_is_refused_in_one_line_naming_it(tmp_path, text, needles):
    d = tmp_path / "v"
    d.mkdir()
    (d / "vlens.toml").write_text(text)
    for cmd in (["run", d, "--no-run"], ["analyze", d], ["report", d], ["show", d]):
        err = one_line_error(run_cli(*cmd), f"{d}/vlens.toml", "restore it (vlens = [128, 256, 512]", *needles)
        assert "--vlen" not in err and "/vlen/" not in err, err
    assert sorted(p.name for p in d.iterdir()) == ["vlens.toml"]


def test_a_typo_leaves_no_half_made_vlen_set_and_a_no_run_set_says_run_the_set(tmp_path):
    _need_riscv64()
    d = tmp_path / "vs"
    one_line_error(run_cli("run", d, "--isa", RV.name, "--vlen", "128,256", "--schemes", "bogus", "--no-run"),
                   "unknown scheme 'bogus'")
    assert not d.exists()
    base = ["run", d, "--isa", RV.name, "--schemes", "ml-kem-512", "--variants", "ref", "--ops", "ntt", "--no-run"]
    r = run_cli(*base, "--vlen", "512,128")  # the corrected command, other lengths: a new set
    assert r.returncode == 0, r.stderr[-2000:]
    assert tomllib.loads((d / "vlens.toml").read_text()) == {"vlens": [128, 512], "isa": RV.name}
    assert run_cli(*base, "--vlen", "128,512").returncode == 0  # the same set, in either order
    one_line_error(run_cli(*base, "--vlen", "128,256"), "holds the vector lengths 128,512", f"`pqsimd run {d}`")
    for cmd in ("analyze", "report", "show"):
        err = one_line_error(run_cli(cmd, d), f"run `pqsimd run {d}` first")
        assert f"pqsimd run {d}/vlen" not in err and "pqsimd analyze" not in err, err
