"""The hash share of every counted op (issue 44): instructions per call inside Keccak/SHA-3/SHA-2 entry points
(data/hash.toml, counted from callgrind's call arcs by run/hashshare.py and recorded in each instructions job
record as `hash_per_call_exact`) over the op's instructions per call, and the Amdahl bound it puts on a faster
hash: an op whose share is s runs at most 1 / (1 - s) times faster however fast the hash gets.

results/hash_share: scheme, op, variant, compiler, instructions (per call, the empty call's overhead included,
as hashed), hashed (per call), share, amdahl_bound. Single-stepped builds (AVX-512) have their share from the
stepper (run/stepcount.py --hash: callgrind's hash cost, exactly); builds counted by the QEMU plugin have no
row: their share is n/a.

results/kernel_share (issue 47): the same op's instructions split by kernel (data/hash.toml: the hash, NTT,
sampling, packing, ...), each instruction counted for the innermost kernel it runs in (run/hashshare.py
kernel_costs, recorded as `kernel_per_call_exact`), and the rest as `other`: scheme, op, variant, compiler,
kernel, label, instructions (per call, as hashed), kernel_instructions (per call), share, consistent (every
kernel >= 0 and their sum <= the op's instructions: false where a kernel calls back into one it was called
from, whose cost callgrind's arcs then count twice). Studies counted before kernel shares have no rows.
"""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path
from statistics import median

import pandas as pd

from ..studydir import StudyDir
from .. import metrics as metrics_mod

COLUMNS = ["scheme", "op", "variant", "compiler", "instructions", "hashed", "share", "amdahl_bound"]
KERNEL_COLUMNS = ["scheme", "op", "variant", "compiler", "kernel", "label", "instructions", "kernel_instructions", "share",
                  "consistent"]
OTHER = "other"
METRIC = metrics_mod.COUNT


def _per_op(directory: Path, field: str):
    """(record's key, op, instructions per call as hashed, the op's entry of `field`) of every instructions job
    record that has `field`: the op's instructions are the median of its repeats' (I(N2) - I(N1)) / (N2 - N1)."""
    for rec in StudyDir(directory).job_records().values():
        if not isinstance(rec, dict) or rec.get("metric") != METRIC or not rec.get(field):
            continue
        n1, n2 = int(rec.get("n1", 0)), int(rec.get("n2", 0))
        key = {"scheme": rec.get("scheme"), "variant": rec.get("variant"), "compiler": rec.get("compiler")}
        for op, value in rec[field].items():
            counts = rec.get("counts", {}).get(op) or []
            if value and counts and n2 > n1:
                yield {**key, "op": op}, median(float(Fraction(b - a, n2 - n1)) for a, b in counts), value


def hash_share_table(directory: Path) -> pd.DataFrame:
    rows = []
    for key, ins, hashed in _per_op(directory, "hash_per_call_exact"):
        h = median(float(Fraction(x)) for x in hashed)
        share = h / ins if ins > 0 else math.nan
        rows.append({**key, "instructions": ins, "hashed": h, "share": share,
                     "amdahl_bound": 1 / (1 - share) if share < 1 else math.inf})
    return pd.DataFrame(rows, columns=COLUMNS)


def kernel_share_table(directory: Path) -> pd.DataFrame:
    """results/kernel_share from the instructions job records (module docstring)."""
    from ..run.hashshare import labels

    names = labels()
    rows = []
    for key, ins, per_kernel in _per_op(directory, "kernel_per_call_exact"):
        got = {k: median(float(Fraction(x)) for x in xs) for k, xs in per_kernel.items() if xs}
        rest = ins - sum(got.values())
        ok = all(v >= 0 for v in got.values()) and rest >= -1e-9
        for k, v in [*got.items(), (OTHER, rest)]:
            rows.append({**key, "kernel": k, "label": names.get(k, k), "instructions": ins, "kernel_instructions": v,
                         "share": v / ins if ins > 0 else math.nan, "consistent": ok})
    return pd.DataFrame(rows, columns=KERNEL_COLUMNS)
