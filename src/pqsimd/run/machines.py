"""`pqsimd run DIR --executor slurm --machines A,B`: the same plan once per machine type of a
cluster, then a campaign of them.

Each machine type (a SLURM partition) gets its own sub-study, DIR/machines/<name>/, run as any
SLURM study is (its own plan, sizing, gate records and jobs; the jobs run on that partition's
nodes, each with its own calibration), then analysed; DIR/campaign/ is the campaign of the
sub-studies (analyze/campaign.py, report/campaign.py). Running the command again continues every
sub-study and makes the campaign anew."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import PqsimdError
from ..ids import check_id

MACHINES_DIR = "machines"
CAMPAIGN_DIR = "campaign"


def machine_studies(directory: Path, names: list[str]) -> list[Path]:
    if len(set(names)) != len(names) or len(names) < 2:
        raise PqsimdError(f"--machines {','.join(names)}: give two or more different partitions")
    return [Path(directory) / MACHINES_DIR / check_id("machine", n, "--machines") for n in names]


def run_machines(directory: Path, names: list[str], overrides: dict[str, Any], slurm_options: dict[str, Any],
                 time_jobs: bool = True) -> bool:
    from ..analyze import analyze_study
    from ..analyze.campaign import run_campaign
    from ..pipeline import run_study
    from ..report.campaign import write_campaign_report

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
