"""Names a user can type back (op ids and the report's labels, "did you mean"), suggestions that are
commands pqsimd accepts from where the user stands, doctor's verdict, and tables that keep every
cell whole when piped."""

from __future__ import annotations

import sys
import ast
import os
import re
import shlex
import tomllib
from pathlib import Path

import click
import pytest

from pqsimd import catalog, doctor, study as study_mod
from pqsimd.cli import _next_step
from pqsimd.cli import cli as pqsimd_group
from pqsimd.errors import PqsimdError, did_you_mean
from pqsimd.studydir import (CAMPAIGN, MACHINE_SET, STUDY, VLEN_SET, kind, require_kind, why_no_cliffs)

SRC = Path(__file__).resolve().parents[1] / "src" / "pqsimd"
EVERY_KIND = (STUDY, CAMPAIGN, VLEN_SET, MACHINE_SET)


# --- the command line's own parser: is a suggestion a command pqsimd accepts? ---------------------------

def parse(args: list[str]) -> None:
    """Parse `pqsimd ARGS` with the real click commands (raises click's error when it does not parse). A
    command whose DIRECTORY has a default (`run`: ./study) must be given it: `pqsimd run` alone works
    only in the one directory that holds ./study."""
    command, rest, parent, name = pqsimd_group, list(args), None, "pqsimd"
    while True:
        ctx = command.make_context(name, rest, parent=parent)
        if not isinstance(command, click.Group):
            break
        name, command, rest = command.resolve_command(ctx, [*getattr(ctx, "_protected_args", []), *ctx.args])
        parent = ctx
    for p in command.params:
        if isinstance(p, click.Argument) and p.name == "directory" and p.default is not None:
            assert ctx.get_parameter_source(p.name) is not click.core.ParameterSource.DEFAULT, \
                f"`pqsimd {shlex.join(args)}` leaves {p.name.upper()} to its default"


def suggestions(message: str) -> list[list[str]]:
    """Every `pqsimd ...` a message suggests, as arguments."""
    return [shlex.split(m) for m in re.findall(r"`pqsimd ([^`]*)`", message)]


def refusal(call, *args, **kwargs) -> str:
    with pytest.raises(PqsimdError) as e:
        call(*args, **kwargs)
    message = str(e.value)
    assert "\n" not in message
    return message


def assert_suggestions_parse(message: str, least: int = 1) -> None:
    found = suggestions(message)
    assert len(found) >= least, message
    for args in found:
        parse(args)


# --- op names ----------------------------------------------------------------------------------------------

def kem_names() -> catalog.OpNames:
    return {"ml-kem": catalog.families()["ml-kem"].op_names()}


def test_an_op_is_named_by_its_id_or_its_report_label_in_any_case():
    names = kem_names()
    assert catalog.resolve_ops(["INVNTT", "noise", "tomsg", "iKeypair", "ntt"], names) == \
        ["invntt", "poly_getnoise_eta1", "poly_tomsg", "indcpa_keypair", "ntt"]
    assert catalog.resolve_ops(["Invntt", "IKEYPAIR", "noise η2", "invntt"], names) == \
        ["invntt", "indcpa_keypair", "poly_getnoise_eta2"]  # each once


def test_every_label_the_report_shows_types_back_to_its_op():
    for fam in catalog.families().values():
        names = {fam.name: fam.op_names()}
        for op, label in names[fam.name].items():
            for typed in (op, label, label.upper(), op.upper()):
                assert catalog.resolve_ops([typed], names) == [op], (fam.name, typed)


def test_a_label_means_its_op_in_every_family_that_has_it():
    fams = catalog.families()
    names = {f: fams[f].op_names() for f in ("ml-kem", "ml-dsa")}
    # ML-DSA's op is called keypair; ML-KEM's kem_keypair is labelled keypair
    assert catalog.resolve_ops(["keypair"], names) == ["kem_keypair", "keypair"]
    with pytest.raises(PqsimdError, match="op 'keypair' means kem_keypair, keypair in .*give one of these ids"):
        catalog.resolve_op("keypair", names, "the study's families")
    assert catalog.resolve_op("keypair", {"ml-kem": names["ml-kem"]}, "ml-kem-512") == "kem_keypair"


def test_an_ambiguous_label_is_refused_in_one_line_listing_the_ids():
    names = {"fam": {"load_a": "load", "load_b": "Load", "store": "store"}}
    assert catalog.resolve_ops(["load"], names) == ["load_a"]  # the exact label wins over another case
    message = refusal(catalog.resolve_ops, ["LOAD"], names)
    assert "op 'LOAD' is ambiguous in fam: it names load_a, load_b; give one of these ids" in message


def test_a_typo_gets_the_nearest_name():
    message = refusal(catalog.resolve_ops, ["invtt"], kem_names())
    assert "op 'invtt' is not an op of the study's families (ml-kem: gen_a," in message
    assert message.endswith("did you mean 'invntt'?")
    assert refusal(catalog.resolve_ops, ["tomsgg"], kem_names()).endswith("did you mean 'tomsg'?")
    assert did_you_mean("ML-KEM-521", ["ml-kem-512", "ml-kem-768"]) == "; did you mean 'ml-kem-512'?"
    assert did_you_mean("entirely-else", ["ml-kem-512", "ml-kem-768"]) == ""


def test_run_takes_labels_and_stores_ids_and_typos_of_other_names_get_a_suggestion(tmp_path):
    s = study_mod.resolve(tmp_path / "s", {"ops": ["INVNTT", "noise"]})
    assert s.ops == ["invntt", "poly_getnoise_eta1"]
    assert not (tmp_path / "s").exists()  # resolving writes nothing
    for overrides, needle in (({"schemes": ["ml-kem-521"]}, "did you mean 'ml-kem-512'?"),
                              ({"schemes": ["ML-DSA"]}, "did you mean 'ml-dsa'?"),
                              ({"variants": ["avx"]}, "did you mean 'avx2'?"),
                              ({"preset": "standart"}, "did you mean 'standard'?"),
                              ({"metric": ["instruction"]}, "did you mean 'instructions'?"),
                              ({"isa": "aarch46"}, "did you mean 'aarch64'?")):
        assert refusal(study_mod.resolve, tmp_path / "s", overrides).endswith(needle), overrides


def test_recorded_op_names_come_from_the_results_families():
    recorded = {"ml-kem": catalog.families()["ml-kem"].to_results(), "x": {"schemes": {"x-1": {}}, "ops": ["a"]}}
    assert catalog.recorded_op_names(recorded, "ml-kem-512") == kem_names()
    assert catalog.recorded_op_names(recorded)["x"] == {"a": "a"}  # no labels: the id is its own label
    assert catalog.recorded_op_names(recorded, "nope") == {}


def test_list_shows_each_ops_label_beside_its_id(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # a terminal wide enough that no op's cell wraps
    pqsimd_group.main(["list"], standalone_mode=False, prog_name="pqsimd")
    out = capsys.readouterr().out
    assert "poly_getnoise_eta1 (noise)" in out and "indcpa_keypair (iKeypair)" in out
    assert "invntt (" not in out  # INVNTT differs only in case: either is accepted
    assert "[ml-kem, kind kem, default]" in out  # the family's bracket is text, not markup


def test_list_and_doctor_piped_wrap_their_cells_at_a_readable_width(capsys, monkeypatch):
    """Piped (captured), list and doctor were as wide as their longest cell (~300 and ~900 columns);
    their prose cells wrap at console.PROSE_WIDTH instead, and no cell is cut."""
    from pqsimd.console import PROSE_WIDTH

    monkeypatch.delenv("COLUMNS", raising=False)
    pqsimd_group.main(["list"], standalone_mode=False, prog_name="pqsimd")
    out = capsys.readouterr().out
    assert max(map(len, out.splitlines())) <= PROSE_WIDTH and "…" not in out
    assert "poly_getnoise_eta1" in out and "indcpa_keypair" in out
    doctor.run_doctor()
    out = capsys.readouterr().out
    assert max(map(len, out.splitlines())) <= PROSE_WIDTH and "…" not in out and "valgrind" in out


def test_the_reports_methods_map_each_label_to_its_op_id_and_show_suggests_near_names(tmp_path):
    from report_fake import make_fake_study

    from pqsimd.report.html import methods
    from pqsimd.results import load_study

    d = make_fake_study(tmp_path / "s", schemes=["ml-kem-512"], ops=["poly_getnoise_eta1", "invntt", "ntt"], jobs=3,
                        spins=6, reps=3)
    row = dict(methods(load_study(d)))["op labels (label = op id: --ops and explain --op take either)"]
    assert row == "ML-KEM (FIPS 203): noise = poly_getnoise_eta1"  # INVNTT = invntt differs only in case
    from pqsimd.report.terminal import show_study

    assert refusal(show_study, d, stage="hand-simd").endswith("did you mean 'hand_simd'?")
    assert refusal(show_study, d, metric="tick").endswith("did you mean 'ticks'?")


# --- suggestions are commands that work from where the user stands ------------------------------------

def _study(d: Path) -> Path:
    d.mkdir(parents=True)
    (d / "study.toml").write_text('[study]\npreset = "quick"\nlayout = "random"\nlayouts = 1\n')
    return d


def _campaign(d: Path) -> Path:
    d.mkdir(parents=True)
    (d / "campaign.toml").write_text('[campaign]\nstudies = ["../a", "../b"]\n')
    return d


def test_each_kind_of_directory_is_named_and_sent_to_a_command_that_reads_it(tmp_path):
    a = _study(tmp_path / "studies" / "a")
    _study(tmp_path / "studies" / "b")
    camp = _campaign(tmp_path / "camp")
    mset = tmp_path / "mset"
    (mset / "machines" / "zen4").mkdir(parents=True)
    (mset / "machines.toml").write_text('partitions = ["zen4", "zen5"]\n')
    (tmp_path / "empty").mkdir()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("x")
    assert [kind(p) for p in (a, camp, mset, tmp_path / "other")] == [STUDY, CAMPAIGN, MACHINE_SET, None]

    cases = {
        ("analyze", tmp_path / "nowhere"): ["no study directory at", "`pqsimd run "],
        ("report", tmp_path / "empty"): ["holds no study yet", "`pqsimd run "],
        ("show", tmp_path / "studies"): ["is no study, but holds 2: a, b", "`pqsimd show "],
        ("show", a / "results"): ["is part of the study", f"`pqsimd show {a}`"],
        ("analyze", camp): ["is a campaign", f"`pqsimd campaign {camp}`"],
        ("cliffs", camp): ["is a campaign, and pqsimd cliffs reads a study", f"`pqsimd show {camp}`"],
        ("compare", mset): ["is a machine set", "its studies: " + str(mset / "machines" / "zen4")],
    }
    (a / "results").mkdir()
    for (action, d), needles in cases.items():
        message = refusal(require_kind, d, action)
        assert all(n in message for n in needles), (action, message)
        assert "pqsimd run /" not in message or d.name in ("nowhere", "empty"), message
        assert_suggestions_parse(message)
    message = refusal(require_kind, tmp_path / "other", "show", EVERY_KIND)
    assert "is no pqsimd study" in message and "pqsimd run " + str(tmp_path) not in message
    assert require_kind(camp, "report", EVERY_KIND) == CAMPAIGN
    # the same command with the other directory, the user's own options kept
    message = refusal(require_kind, tmp_path / "studies", "explain",
                      again=lambda d: ["explain", d, "--scheme", "ml-kem-512", "--op", "INVNTT"])
    assert f"`pqsimd explain {tmp_path / 'studies' / 'a'} --scheme ml-kem-512 --op INVNTT`" in message
    assert_suggestions_parse(message)


def test_a_study_without_cliffs_is_told_how_to_get_them(tmp_path):
    d = _study(tmp_path / "q")
    assert_suggestions_parse(why_no_cliffs(d))  # not analysed: analyze
    (d / "results").mkdir()
    (d / "results" / "summary.json").write_text("{}")
    why = why_no_cliffs(d)
    assert "one laid-out copy of each build" in why
    assert f"`pqsimd run {tmp_path / 'q-layouts'} --preset quick --layouts 2`" in why
    assert_suggestions_parse(why)


def test_run_ends_with_the_next_step_as_the_user_typed_the_directory():
    for line in (_next_step(Path("dsa"), no_run=False, report=None), _next_step(Path("dsa"), True, None),
                 _next_step(Path("set"), no_run=False, report=Path("set/report"))):
        assert_suggestions_parse(line)
    line = _next_step(Path("dsa"), no_run=False, report=None)
    assert "`pqsimd analyze dsa`, then `pqsimd report dsa`" in line


def _invoke(*args: str) -> str:
    """`pqsimd ARGS` in this process; the one-line refusal it ends with."""
    return refusal(pqsimd_group.main, list(args), standalone_mode=False, prog_name="pqsimd")


def test_compare_takes_the_subset_options_its_refusals_name_only_with_speedups(tmp_path):
    a, b = _study(tmp_path / "a"), _study(tmp_path / "b")
    message = _invoke("compare", str(a), str(b), "--schemes", "ml-kem-512")
    assert "--schemes only works with --speedups" in message
    parse(["compare", str(a), str(b), "--speedups", "--schemes", "ml-kem-512", "--ops", "ntt", "--labels", "x,y"])
    # what a campaign's refusal names (a subset, distinct labels) is an option of compare --speedups too
    for option in ("--schemes", "--ops", "--variants", "--compilers", "--labels"):
        parse(["compare", "a", "b", "--speedups", option, "x"])


def test_every_suggestion_in_the_source_is_a_command_pqsimd_accepts():
    """Every `pqsimd ...` in a string of src/ (docstrings aside) and every errors.command(...) call,
    with what is computed at run time (a directory, a name) standing in as DIR, parses with the real
    command line; a value computed for an option with fixed choices is not checked."""
    placeholder, checked, bad = "DIR", 0, []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text())
        docs = {id(n.body[0].value) for n in ast.walk(tree)
                if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef)) and n.body
                and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            found: list[list[str]] = []
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "command" \
                    and not any(isinstance(a, ast.Starred) for a in node.args):  # *args: checked where they run
                found = [[str(a.value) if isinstance(a, ast.Constant) else placeholder for a in node.args]]
            elif isinstance(node, ast.JoinedStr):
                text = "".join(v.value if isinstance(v, ast.Constant) else placeholder for v in node.values)
                found = suggestions(text)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                found = suggestions(node.value)
            for args in found:
                checked += 1
                try:
                    parse(args)
                except click.BadParameter:
                    if placeholder not in args:
                        bad.append(f"{path.relative_to(SRC)}:{node.lineno}: pqsimd {shlex.join(args)}")
                except (click.ClickException, AssertionError) as e:
                    why = str(e).splitlines()[0]
                    bad.append(f"{path.relative_to(SRC)}:{node.lineno}: pqsimd {shlex.join(args)}: {why}")
    assert checked > 50 and not bad, "\n".join(dict.fromkeys(bad))


# --- doctor -------------------------------------------------------------------------------------------------

def _found(**changes) -> list[doctor.Finding]:
    rows = {
        "cargo": doctor.Finding("cargo", True, "/usr/bin/cargo", affects="build"),
        "tsc": doctor.Finding("tsc: invariant", True, "constant_tsc", affects="time"),
        "boost": doctor.Finding("turbo/boost", True, "off", affects="time"),
        "virt": doctor.Finding("virtualization", None, "kvm", "use many jobs", affects="time"),
        "valgrind": doctor.Finding("valgrind", True, "/usr/bin/valgrind", affects="count"),
        "avx2": doctor.Finding("cpu: avx2", True, "present", affects="variants"),
        "pmu": doctor.Finding("hardware counters", None, "unavailable: ENOENT", "a virtual PMU", affects="counters"),
    }
    rows.update(changes)
    return list(rows.values())


def test_doctor_ends_with_one_verdict_derived_from_its_checks():
    assert doctor.verdict(_found()) == (True, "ready: can time and count (timing notes: virtualization); "
                                              "not on this host: hardware counters")
    ok, line = doctor.verdict(_found(boost=doctor.Finding("turbo/boost", False, "on", "echo 0 > boost", affects="time")))
    assert not ok and line == "can count, cannot time reliably: turbo/boost: on; fix: echo 0 > boost"
    ok, line = doctor.verdict(_found(valgrind=doctor.Finding("valgrind", None, "missing", "apt-get install valgrind",
                                                             affects="count")))
    assert ok and line.startswith("can time, cannot count: valgrind: missing; fix: apt-get install valgrind")
    ok, line = doctor.verdict(_found(cargo=doctor.Finding("cargo", False, "missing", "apt-get install cargo",
                                                          affects="build"),
                                     boost=doctor.Finding("turbo/boost", False, "on", "echo 0", affects="time")))
    assert not ok and line == "not ready: cargo: missing; fix: apt-get install cargo"
    ok, line = doctor.verdict(_found(avx2=doctor.Finding("cpu: avx2", False, "absent", "elsewhere", affects="variants")))
    assert not ok and "cpu: avx2: absent: what needs it is skipped here" in line


def test_doctor_names_the_microarchitecture_from_the_data(monkeypatch):
    from pqsimd import machine

    zen4 = {"cpu_model": "AMD EPYC", "vendor_id": "AuthenticAMD", "cpu_family": "25", "cpu_model_number": "17"}
    monkeypatch.setattr(machine, "cpu_model", lambda: "AMD EPYC")
    monkeypatch.setattr(machine, "machine_info", lambda: zen4)
    assert doctor.host_name() == "AMD EPYC (Zen 4)"
    monkeypatch.setattr(machine, "machine_info", lambda: {**zen4, "cpu_family": "99"})
    assert doctor.host_name() == "AMD EPYC (amd family 99 model 17: not in data/microarchitectures.toml)"


# --- piped tables keep every cell whole ---------------------------------------------------------------------

def test_piped_tables_are_as_wide_as_their_cells(tmp_path):
    from conftest import run_cli
    from test_campaign import EMR_MACHINE, ZEN5_MACHINE, synthetic_member

    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}  # stdout is a pipe, its width unknown

    def _piped(*args) -> str:
        r = run_cli(*args, env=env)
        assert r.returncode == 0, r.stderr
        return r.stdout

    out = _piped("list")
    kem = catalog.families()["ml-kem"]
    lines = out.splitlines()
    first = next(i for i, line in enumerate(lines) if line.lstrip().startswith("ml-kem-512"))
    col = lines[first - 1].index("ops (the report's label)")  # the ops cell wraps (console.PROSE_WIDTH)
    end = next(i for i in range(first, len(lines)) if lines[i].lstrip().startswith("from data"))
    cell = " ".join(line[col:].strip() for line in lines[first:end] if line[col:].strip())
    assert ", ".join(f"{op} ({label})" if label.lower() != op else op for op, label in kem.op_names().items()) in cell
    a = synthetic_member(tmp_path / "zen5", 1, ZEN5_MACHINE)
    b = synthetic_member(tmp_path / "emr", 2, EMR_MACHINE)
    out = _piped("compare", a, b, "--speedups", "--ops", "INVNTT,NTT")
    assert "…" not in out and len(out.splitlines()[1]) > 80, out
    machines = next(line for line in out.splitlines() if line.lstrip().startswith("zen5"))
    assert "Zen 5" in machines and "gcc (Debian 12.2.0) 12.2.0" in machines
    assert {"INVNTT", "NTT"} <= {line.split()[0] for line in out.splitlines() if line.strip()}
    assert "basemul" not in out  # the stated subset, named by the report's labels
    camp = tmp_path / "camp"
    _piped("campaign", camp, a, b)
    assert "report written to" in _piped("report", camp)  # a campaign's report, not a study's refusal
    assert tomllib.loads((camp / "campaign.toml").read_text())["campaign"]["studies"]


def test_the_report_names_the_machines_microarchitecture_as_doctor_does():
    from pqsimd.report.html import _machine_name

    zen5 = {"cpu_model": "AMD EPYC", "cpu_vendor": "AuthenticAMD", "cpu_family": 26, "cpu_model_number": 2}
    assert _machine_name(zen5) == "AMD EPYC (Zen 5)"
    unknown = {"cpu_model": "Some CPU", "cpu_vendor": "AuthenticAMD", "cpu_family": 99, "cpu_model_number": 1}
    assert _machine_name(unknown) == "Some CPU" and _machine_name({}) == "n/a"


def test_a_hint_names_pqsimd_as_the_user_started_it(monkeypatch):
    """`.venv/bin/pqsimd run study` (README, `make study`) gets hints a shell finds from there; a pqsimd
    found on PATH (an absolute argv[0]) or `python -m` gets the bare name."""
    from pqsimd.errors import command

    monkeypatch.setattr(sys, "argv", [".venv/bin/pqsimd", "run", "study"])
    assert command("run", "study") == "`.venv/bin/pqsimd run study`"
    monkeypatch.setattr(sys, "argv", ["/usr/local/bin/pqsimd", "run", "study"])
    assert command("run", "my study") == "`pqsimd run 'my study'`"
    monkeypatch.setattr(sys, "argv", ["/x/pqsimd/cli.py"])
    assert command("show", "s") == "`pqsimd show s`"
