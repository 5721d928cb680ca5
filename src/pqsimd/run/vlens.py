"""`pqsimd run DIR --isa riscv64 --vlen 128,256,512`: the vector length as a dimension of the study.

Vector-length-agnostic code is one binary that runs at any vector length, so the builds are the same
at every length (from the build cache: made once) and what changes is the emulated CPU. Each
length gets a sub-study, DIR/vlen/<N>/, with `vlen = N` (its own gate at that length: the gate's
verdict is cached per emulated CPU; its own count jobs, each recording the length), run as any study
is; then each is analysed and DIR/results/ gets the vector-length view (analyze/vlen.py: every
exact comparison at each length, against the ISA's default length), DIR/report/ its figure and
tables (report/vlen.py). DIR/vlens.toml names the lengths: `pqsimd run DIR` again continues every
sub-study, `pqsimd analyze|report|show DIR` read them.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import tomli_w

from ..errors import PqsimdError, command

VLEN_DIR = "vlen"
SET_FILE = "vlens.toml"


def is_vlen_set(directory: Path) -> bool:
    return (Path(directory) / SET_FILE).is_file()


def read_set(directory: Path) -> list[int]:
    """The vector lengths of a vector-length set, as DIR/vlens.toml names them."""
    path = Path(directory) / SET_FILE
    try:
        doc = tomllib.loads(path.read_text())
        vlens = doc["vlens"]
        if not isinstance(vlens, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in vlens):
            raise ValueError("vlens is not a list of numbers")
    except (OSError, ValueError, KeyError, tomllib.TOMLDecodeError) as e:
        raise PqsimdError(f"{path} does not name the vector lengths ({e}); restore it (vlens = [128, 256, 512]) "
                          f"or use a new directory") from None
    return vlens


def sub_studies(directory: Path, vlens: list[int] | None = None) -> list[tuple[int, Path]]:
    vlens = vlens if vlens is not None else read_set(directory)
    return [(v, Path(directory) / VLEN_DIR / str(v)) for v in vlens]


def run_vlens(directory: Path, vlens: list[int] | None, overrides: dict[str, Any], executor: str = "local",
              slurm_options: dict | None = None, time_jobs: bool = True) -> bool:
    from ..pipeline import run_study
    from ..report.vlen import write_vlen_report

    directory = Path(directory)
    if vlens is None:
        vlens = read_set(directory)
    elif is_vlen_set(directory) and read_set(directory) != vlens:
        raise PqsimdError(f"{directory} holds the vector lengths {','.join(map(str, read_set(directory)))}, not "
                          f"{','.join(map(str, vlens))}; continue it with {command('run', directory)} or use a new "
                          f"directory")
    if len(vlens) < 2:
        raise PqsimdError(f"--vlen {','.join(map(str, vlens))}: a vector-length set needs two or more lengths "
                          f"(one length is a study's own setting: --vlen N)")
    if not is_vlen_set(directory) and (directory / "study.toml").exists():
        raise PqsimdError(f"{directory} is a study of one vector length; run the lengths in a new directory")
    from .. import isa as isa_mod

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
    for v, sub in sub_studies(directory, vlens):
        ok = run_study(sub, overrides | {"vlen": v}, executor=executor, slurm_options=slurm_options,
                       time_jobs=time_jobs) and ok
    if not time_jobs:
        return ok
    analyse_set(directory)
    write_vlen_report(directory)
    return ok


def analyse_set(directory: Path) -> Path:
    """Every sub-study analysed, then the vector-length view of them into DIR/results/."""
    from ..analyze import analyze_study
    from ..analyze.vlen import write_vlen_results

    for _v, sub in sub_studies(directory):
        analyze_study(sub)
    return write_vlen_results(directory)
