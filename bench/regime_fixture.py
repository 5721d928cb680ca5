"""Write the regime check's real-data test fixture: every job's median per (parameter set, op,
variant) of an analysed paired study (ticks per call, the self-check op left out), one row per
(scheme, op, variant) and one column per job, as analyze computes them from results/spins.parquet.

    .venv/bin/python bench/regime_fixture.py /work/shared/studies/emr-ml-kem-standard tests/fixtures/emr_job_medians.csv
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from pqsimd.analyze.groups import build_groups  # noqa: E402


def main() -> None:
    study, out = Path(sys.argv[1]), Path(sys.argv[2])
    spins = pd.read_parquet(study / "results" / "spins.parquet")
    spins = spins[(spins["metric"] == "ticks") & (spins["op"] != "empty")]
    rows = []
    for (_m, scheme, op, variant, _c), g in build_groups(spins).items():
        rows.append({"scheme": scheme, "op": op, "variant": variant,
                     **{job.rsplit(".", 1)[1]: float(x) for job, x in zip(g.job_ids, g.job_medians)}})
    df = pd.DataFrame(rows)
    jobs = sorted((c for c in df.columns if c.isdigit()), key=int)
    df = df[["scheme", "op", "variant", *jobs]]
    with out.open("w") as f:
        f.write(f"# job medians (ticks per call) of {study.name}: job i of scheme S is paired.S.i; "
                f"written by bench/regime_fixture.py\n")
        df.to_csv(f, index=False, float_format="%.9g")


if __name__ == "__main__":
    main()
