"""Studies made of studies, run end to end: the top layer that drives run, analyze and report for
each sub-study and then makes the view of them all.

`pqsimd run DIR --isa riscv64 --vlen 128,256,512`: the vector length as a dimension of the study.
Vector-length-agnostic code is one binary that runs at any vector length, so the builds are the same
at every length (from the build cache: made once) and what changes is the emulated CPU. Each
length gets a sub-study, DIR/vlen/<N>/, with `vlen = N` (its own gate at that length: the gate's
verdict is cached per emulated CPU; its own count jobs, each recording the length), run as any study
is; then each is analysed and DIR/results/ gets the vector-length view (analyze/vlen.py: every
exact comparison at each length, against the ISA's default length), DIR/report/ its figure and
tables (report/vlen.py). DIR/vlens.toml names the lengths: `pqsimd run DIR` again continues every
sub-study, `pqsimd analyze|report|show DIR` read them.

`pqsimd run DIR --executor slurm --machines A,B`: the same plan once per machine type of a
cluster, then a campaign of them. Each machine type (a SLURM partition) gets its own sub-study,
DIR/machines/<name>/, run as any SLURM study is (its own plan, sizing, gate records and jobs; the
jobs run on that partition's nodes, each with its own calibration), then analysed; DIR/campaign/ is
the campaign of the sub-studies (analyze/campaign.py, report/campaign.py). Running the command again
continues every sub-study and makes the campaign anew.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import tomli_w

from . import isa as isa_mod
from .analyze import analyze_study
from .analyze.campaign import run_campaign
from .analyze.vlen import write_vlen_results
from .errors import PqsimdError, command
from .pipeline import run_study
from .report.campaign import write_campaign_report
from .report.vlen import write_vlen_report
from .studydir import (CAMPAIGN_DIR, SET_FILE, StudyDir, is_vlen_set, machine_studies, read_vlen_set,
                       vlen_sub_studies)


def run_vlens(directory: Path, vlens: list[int] | None, overrides: dict[str, Any], executor: str = "local",
              slurm_options: dict | None = None, time_jobs: bool = True) -> bool:
    directory = Path(directory)
    if vlens is None:
        vlens = read_vlen_set(directory)
    elif is_vlen_set(directory) and read_vlen_set(directory) != vlens:
        raise PqsimdError(f"{directory} holds the vector lengths {','.join(map(str, read_vlen_set(directory)))}, not "
                          f"{','.join(map(str, vlens))}; continue it with {command('run', directory)} or use a new "
                          f"directory")
    if len(vlens) < 2:
        raise PqsimdError(f"--vlen {','.join(map(str, vlens))}: a vector-length set needs two or more lengths "
                          f"(one length is a study's own setting: --vlen N)")
    if not is_vlen_set(directory) and (directory / "study.toml").exists():
        raise PqsimdError(f"{directory} is a study of one vector length; run the lengths in a new directory")
    stored = tomllib.loads((directory / SET_FILE).read_text()).get("isa") if is_vlen_set(directory) else None
    name = overrides.get("isa") or stored or isa_mod.host().name
    if stored and name != stored:
        raise PqsimdError(f"{directory} is a vector-length set of {stored}, not {name}; use a new directory")
    target = isa_mod.get(name)
    for v in vlens:
        target.at(v)  # one line for an ISA without a vector length, or a length its emulator lacks
    directory.mkdir(parents=True, exist_ok=True)
    (directory / SET_FILE).write_text("# pqsimd vector-length set: one sub-study per length in vlen/<N>/\n"
                                      + tomli_w.dumps({"vlens": vlens, "isa": target.name}))
    ok = True
    for v, sub in vlen_sub_studies(directory, vlens):
        ok = run_study(sub, overrides | {"vlen": v}, executor=executor, slurm_options=slurm_options,
                       time_jobs=time_jobs) and ok
    if not time_jobs:
        return ok
    report_set(directory)
    return ok


def analyse_set(directory: Path) -> Path:
    """Every sub-study analysed, then the vector-length view of them into DIR/results/."""
    for _v, sub in vlen_sub_studies(directory):
        analyze_study(sub)
    return write_vlen_results(directory)


def report_set(directory: Path) -> Path:
    """DIR/report/ of a vector-length set, its view analysed first where DIR/results/ lacks it."""
    if not StudyDir(directory).results("vlen.json").exists():
        analyse_set(directory)
    return write_vlen_report(directory)


def run_machines(directory: Path, names: list[str], overrides: dict[str, Any], slurm_options: dict[str, Any],
                 time_jobs: bool = True) -> bool:
    if slurm_options.get("partition") or slurm_options.get("nodelist"):
        raise PqsimdError("--machines names the partitions itself; drop --partition/--nodelist")
    subs = machine_studies(directory, names)
    ok = True
    for name, sub in zip(names, subs):
        ok = run_study(sub, overrides, executor="slurm", slurm_options=slurm_options | {"partition": name},
                       time_jobs=time_jobs) and ok
    if not time_jobs:
        return ok
    for sub in subs:
        analyze_study(sub)
    run_campaign(Path(directory) / CAMPAIGN_DIR, subs, {}, labels=list(names))
    write_campaign_report(Path(directory) / CAMPAIGN_DIR)
    return ok
