"""Studies made of studies, run end to end: the top layer that drives run, analyze and report for
each sub-study and then makes the view of them all.

`pqsimd run DIR --isa riscv64 --vlen 128,256,512`: the vector length as a dimension of the study.
Vector-length-agnostic code is one binary that runs at any vector length, so the builds are the same
at every length (from the build cache: made once) and what changes is the emulated CPU. Each
length gets a sub-study, DIR/vlen/<N>/, with `vlen = N` (its own gate at that length: the gate's
verdict is cached per emulated CPU; its own count jobs, each recording the length), run as any study
is; then each is analysed and DIR/results/ gets the vector-length view (analyze/vlen.py: every
exact comparison at each length, against the ISA's default length), DIR/report/ its figure and
tables (report/vlen.py). DIR/vlens.toml names the lengths and the ISA: `pqsimd run DIR` again continues
every sub-study, `pqsimd analyze|report|show DIR` read them.

`pqsimd run DIR --executor slurm --machines A,B`: the same plan once per machine type of a
cluster, then a campaign of them. Each machine type (a SLURM partition) gets its own sub-study,
DIR/machines/<name>/, run as any SLURM study is (its own plan, sizing, gate records and jobs; the
jobs run on that partition's nodes, each with its own calibration), then analysed; DIR/campaign/ is
the campaign of the sub-studies (analyze/campaign.py, report/campaign.py). DIR/machines.toml names the
partitions: `pqsimd run DIR` again continues every sub-study and makes the campaign anew, `pqsimd
analyze DIR` analyses each sub-study and makes the campaign again, `pqsimd report|show DIR` read the
campaign.

Either set is written only once its options passed the checks a plain study's do (study.py, for
every sub-study), so a typo leaves nothing behind; a set made with --no-run (or not finished) sends
analyze, report and show back to `pqsimd run DIR`, never to a sub-study's own run.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import tomli_w

from . import isa as isa_mod
from . import study as study_mod
from .analyze import analyze_study
from .analyze.campaign import is_campaign, run_campaign
from .analyze.vlen import METRIC as VLEN_METRIC
from .analyze.vlen import write_vlen_results
from .errors import PqsimdError, command, invoked
from .pipeline import run_study
from .studydir import (CAMPAIGN_DIR, MACHINE_SET_FILE, MACHINES_DIR, SET_FILE, VLEN_DIR, StudyDir, is_machine_set,
                       is_vlen_set, machine_studies, read_machine_set, vlen_set, vlen_sub_studies)


def _csv(items: list) -> str:
    return ",".join(map(str, items))


def _check_options(subs: list[tuple[Path, dict[str, Any]]]) -> list[study_mod.Study]:
    """Each sub-study's options checked as a plain study's are (study.resolve writes nothing), before
    the set writes anything: a typo is refused in one line and leaves no half-made set."""
    return [study_mod.resolve(StudyDir(sub), overrides) for sub, overrides in subs]


def _check_view(directory: Path, studies: list[study_mod.Study]) -> None:
    """A vector-length set's view is made of its lengths' instruction counts (analyze/vlen.py): a set
    whose metrics lack them is refused in one line before anything is built or measured."""
    if studies and not any(VLEN_METRIC in s.metrics for s in studies):
        metrics = ",".join(studies[0].metrics)
        raise PqsimdError(f"--metric {metrics}: a vector-length set compares its lengths by their instruction counts, "
                          f"which these metrics do not give; add them (--metric {metrics},{VLEN_METRIC}), or measure "
                          f"one length per directory (--vlen N)")


def _write_marker(directory: Path, name: str, text: str) -> bool:
    """Write DIR/<name>; True when the set is new (nothing of it existed)."""
    fresh = not (directory / name).exists()
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_text(text)
    return fresh


def _forget_set(directory: Path, marker: str, subdir: str, made_dir: bool) -> None:
    """A new set refused before any sub-study was written leaves nothing: its marker, its empty
    sub-directory, and DIR itself if this run made it and it is empty (never anything else)."""
    sub = directory / subdir
    if sub.is_dir() and any((p / "study.toml").exists() for p in sub.iterdir()):
        return
    try:
        (directory / marker).unlink(missing_ok=True)
        if sub.is_dir() and not any(sub.rglob("*")):
            shutil.rmtree(sub)
        if made_dir and not any(directory.iterdir()):
            directory.rmdir()
    except OSError:
        pass


def _refuse_beside_a_study(directory: Path, what: str) -> None:
    if (directory / "study.toml").exists():
        raise PqsimdError(f"{directory} is a study of its own; run the {what} in a new directory")


def run_vlens(directory: Path, vlens: list[int] | None, overrides: dict[str, Any], executor: str = "local",
              slurm_options: dict | None = None, time_jobs: bool = True) -> bool:
    directory = Path(directory)
    if is_vlen_set(directory):
        stored, stored_isa = vlen_set(directory)
        if vlens is not None and sorted(vlens) != sorted(stored):
            raise PqsimdError(f"{directory} holds the vector lengths {_csv(stored)}, not {_csv(vlens)}; continue it "
                              f"with {command('run', directory)} or use a new directory")
        vlens = stored  # the same lengths in another order are the same set
        name = overrides.get("isa") or stored_isa
        if name != stored_isa:
            raise PqsimdError(f"{directory} is a vector-length set of {stored_isa}, not {name}; use a new directory")
    else:
        if vlens is None or len(vlens) < 2:
            raise PqsimdError(f"--vlen {_csv(vlens or [])}: a vector-length set needs two or more lengths "
                              f"(one length is a study's own setting: --vlen N)")
        _refuse_beside_a_study(directory, "lengths")
        if is_machine_set(directory):
            raise PqsimdError(f"{directory} is a machine set; run the lengths in a new directory")
        vlens = sorted(vlens)
        name = overrides.get("isa") or isa_mod.host().name
    target = isa_mod.get(name)
    for v in vlens:
        target.at(v)  # one line for an ISA without a vector length, or a length its emulator lacks
    subs = vlen_sub_studies(directory, vlens)
    _check_view(directory, _check_options([(sub, overrides | {"vlen": v}) for v, sub in subs]))
    made_dir = not directory.exists()
    fresh = _write_marker(directory, SET_FILE, "# pqsimd vector-length set: one sub-study per length in vlen/<N>/\n"
                          + tomli_w.dumps({"vlens": vlens, "isa": target.name}))
    failed = []
    try:
        for v, sub in subs:
            if not run_study(sub, overrides | {"vlen": v}, executor=executor, slurm_options=slurm_options,
                             time_jobs=time_jobs):
                failed.append(v)
    except PqsimdError:
        if fresh:
            _forget_set(directory, SET_FILE, VLEN_DIR, made_dir)
        raise
    if failed:
        _say(_failed_lengths(directory, target, failed, len(vlens)))
    if not time_jobs or len(failed) == len(vlens):
        return not failed
    _refuse_measured_nothing(directory, [sub for v, sub in subs if v not in failed])  # the failed ones are said above
    report_set(directory)
    return not failed


def _failed_lengths(directory: Path, target, failed: list[int], n: int) -> str:
    """One line after the lengths' own lines: which lengths failed, and for 0 (the ISA without its vector
    extension, where vector code fails its gate) what to do about it."""
    line = (f"error: {directory}: the run at --vlen {_csv(failed)} failed (the lines above say what); "
            + ("no length ran, so the set has no view" if len(failed) == n else
               "the set's view is made of the lengths that ran"))
    if 0 in failed:
        ext = (target.vector or {}).get("extension", "vector")
        line += (f"; at --vlen 0 {target.name} runs without its {ext} extension, where a build with {ext} code "
                 f"fails its gate: keep 0 out of a set of such builds, or time the builds without {ext} code at 0 "
                 f"in a study of its own ({command('run', 'NEW_DIR', '--isa', target.name, '--vlen', '0')} with "
                 f"--variants)")
    return line


def _say(line: str) -> None:
    from rich.console import Console

    Console(stderr=True, highlight=False).print(line, markup=False, soft_wrap=True)


def _refuse_measured_nothing(directory: Path, subs: list[Path]) -> None:
    """Right after the set's run: a sub-study whose every job failed is said as that (the lines above
    give each job's reason, e.g. a counting tool missing), not as a set still to be run."""
    empty = [sub for sub in subs if not StudyDir(sub).has_data() and not StudyDir(sub).results("summary.json").is_file()]
    if empty:
        raise PqsimdError(f"this run measured nothing in {', '.join(map(str, empty))}: every job of it failed (the lines "
                          f"above say why: fix that, e.g. what `{invoked()} doctor` names), then "
                          f"{command('run', directory)} continues the set")


def _require_measured(directory: Path, subs: list[Path]) -> None:
    """A set whose sub-studies were built but not measured (--no-run, or stopped) is continued by
    running the set, never a sub-study on its own."""
    for sub in subs:
        sd = StudyDir(sub)
        if not sd.has_data() and not sd.results("summary.json").is_file():
            raise PqsimdError(f"{sub} has no measurements yet (the set was made with --no-run, or not finished); "
                              f"run {command('run', directory)} first")


def _analyse_subs(directory: Path, subs: list[Path]) -> None:
    _require_measured(directory, subs)
    for sub in subs:
        if StudyDir(sub).has_data():  # results mailed in without raw/ are read as they were analysed
            analyze_study(sub)


def analyse_set(directory: Path) -> Path:
    """Every sub-study analysed, then the vector-length view of them into DIR/results/."""
    _analyse_subs(directory, [sub for _v, sub in vlen_sub_studies(directory)])
    return write_vlen_results(directory)


def report_set(directory: Path) -> Path:
    """DIR/report/ of a vector-length set, its view analysed first where DIR/results/ lacks it."""
    if not StudyDir(directory).results("vlen.json").exists():
        analyse_set(directory)
    from .report.vlen import write_vlen_report  # late: matplotlib only when a report is written

    return write_vlen_report(directory, report_study)


def show_set_missing(directory: Path) -> None:
    """`pqsimd show` of a vector-length set without its view: what to run, in one line."""
    _require_measured(directory, [sub for _v, sub in vlen_sub_studies(directory)])
    raise PqsimdError(f"{directory} has no vector-length results; run {command('analyze', directory)}")


def run_machines(directory: Path, names: list[str] | None, overrides: dict[str, Any], slurm_options: dict[str, Any],
                 time_jobs: bool = True) -> bool:
    directory = Path(directory)
    if slurm_options.get("partition") or slurm_options.get("nodelist"):
        raise PqsimdError("--machines names the partitions itself; drop --partition/--nodelist")
    if is_machine_set(directory):
        stored = read_machine_set(directory)
        if names is not None and sorted(names) != sorted(stored):
            raise PqsimdError(f"{directory} holds the partitions {_csv(stored)}, not {_csv(names)}; continue it with "
                              f"{command('run', directory)} or use a new directory")
        names = stored  # the same partitions in another order are the same set (the first stays the reference)
    else:
        if names is None:
            raise PqsimdError(f"{directory} is no machine set; give the partitions: --machines A,B")
        _refuse_beside_a_study(directory, "machines")
        if is_vlen_set(directory):
            raise PqsimdError(f"{directory} is a vector-length set; run the machines in a new directory")
    subs = machine_studies(directory, names)
    _check_options([(sub, overrides) for sub in subs])
    made_dir = not directory.exists()
    fresh = _write_marker(directory, MACHINE_SET_FILE,
                          "# pqsimd machine set: one sub-study per partition in machines/<name>/, their campaign "
                          "in campaign/\n" + tomli_w.dumps({"partitions": names}))
    ok = True
    try:
        for name, sub in zip(names, subs):
            ok = run_study(sub, overrides, executor="slurm", slurm_options=slurm_options | {"partition": name},
                           time_jobs=time_jobs) and ok
    except PqsimdError:
        if fresh:
            _forget_set(directory, MACHINE_SET_FILE, MACHINES_DIR, made_dir)
        raise
    if not time_jobs:
        return ok
    _refuse_measured_nothing(directory, subs)
    report_machines(directory, again=True)
    return ok


def analyse_machines(directory: Path) -> Path:
    """Every partition's sub-study analysed, then their campaign made again into DIR/campaign/."""
    directory = Path(directory)
    names = read_machine_set(directory)
    subs = machine_studies(directory, names)
    _analyse_subs(directory, subs)
    return run_campaign(directory / CAMPAIGN_DIR, subs, {}, labels=list(names))


def report_machines(directory: Path, again: bool = False) -> Path:
    """DIR/campaign/report/ of a machine set, its campaign made first where it is missing (or again)."""
    campaign = Path(directory) / CAMPAIGN_DIR
    if again or not is_campaign(campaign):
        analyse_machines(directory)
    from .report.campaign import write_campaign_report  # late: matplotlib only when a report is written

    return write_campaign_report(campaign)


def machine_campaign(directory: Path) -> Path:
    """The campaign `pqsimd show` prints for a machine set; one line saying what to run when there is none."""
    campaign = Path(directory) / CAMPAIGN_DIR
    if not is_campaign(campaign):
        _require_measured(directory, machine_studies(directory))
        raise PqsimdError(f"{directory} has no campaign yet; run {command('analyze', directory)}")
    return campaign


# --- one study: analysed (and its cross-ISA tables written) before the report reads results/ --------------

def ensure_analysed(directory: Path) -> None:
    """Analyse a study whose results/ is missing (the report reads results/ only)."""
    from .report import has_results

    if not has_results(directory) and StudyDir(directory).has_data():
        analyze_study(directory)


def prepare_beside(directory: Path, beside: Path | None) -> None:
    """The cross-ISA tables of `beside` (a study of another ISA) into DIR/results/, or, without one, an
    earlier --beside's removed (it is not this report's)."""
    from .analyze.crossisa import remove_cross_isa, write_cross_isa
    from .results import check_study_dir

    if beside is not None:
        beside = check_study_dir(Path(beside))
        ensure_analysed(beside)
        write_cross_isa(directory, beside)
    else:
        remove_cross_isa(directory)


def report_study(directory: Path, reference: str | None = None, beside: Path | None = None) -> Path:
    """`pqsimd report DIR` of one study: analysed first where results/ is missing, the cross-ISA tables of
    `beside` written, then the report (report/ reads results/ only)."""
    from .report import check_reference, write_report
    from .results import check_study_dir

    check_reference(reference)
    directory = check_study_dir(Path(directory))
    ensure_analysed(directory)
    prepare_beside(directory, beside)
    return write_report(directory, reference=reference)
