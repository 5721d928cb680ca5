"""`pqsimd run DIR --isa riscv64 --vlen 128,256,512`: the same study once per vector length, then
the vector-length view of them (analyze/vlen.py, report/vlen.py)."""

from __future__ import annotations

from pathlib import Path

VLEN_DIR = "vlen"
SET_FILE = "vlens.toml"


def is_vlen_set(directory: Path) -> bool:
    return (Path(directory) / SET_FILE).is_file()


def run_vlens(directory, vlens, overrides, executor="local", slurm_options=None, time_jobs=True) -> bool:
    raise NotImplementedError
