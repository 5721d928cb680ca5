"""The SLURM executor: script generation and state parsing (unit), and runs on a real one-node
SLURM cluster (``slurm`` marker; the ``slurm_cluster`` fixture in conftest.py starts it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pqsimd.errors import PqsimdError
from pqsimd.run.slurm import script as slurm_script
from pqsimd.run.slurm import states as slurm_states
from pqsimd.run.slurm import status as slurm_status
from pqsimd.run.slurm import submit as slurm_submit
from pqsimd.studydir import StudyDir

# Recorded on the test cluster (slurm-wlm 22.05.8): array 13 = tasks 0-4, task 1 exits 7,
# task 3 scancel'ed while pending (it leaves no record at all).
SCONTROL_RUNNING = 'JobId=13 ArrayJobId=13 ArrayTaskId=2-4 JobName=t.sh UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901755 Nice=0 Account=(null) QOS=(null) JobState=PENDING Reason=Resources Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 RunTime=00:00:00 TimeLimit=UNLIMITED TimeMin=N/A SubmitTime=2026-11-22T00:33:01 EligibleTime=2026-11-22T00:33:02 AccrueTime=2026-11-22T00:33:02 StartTime=2027-11-22T00:33:02 EndTime=Unknown Deadline=N/A SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-11-22T00:33:02 Scheduler=Main Partition=debug AllocNode:Sid=localhost:3644 ReqNodeList=(null) ExcNodeList=(null) NodeList= NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:* TRES=cpu=1,mem=1M,node=1,billing=1 Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=* MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0 Features=(null) DelayBoot=00:00:00 OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null) Command=/tmp/t.sh WorkDir=/tmp StdErr=/dev/null StdIn=/dev/null StdOut=/dev/null Power= \nJobId=15 ArrayJobId=13 ArrayTaskId=1 JobName=t.sh UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901755 Nice=0 Account=(null) QOS=(null) JobState=RUNNING Reason=None Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 RunTime=00:00:01 TimeLimit=365-00:00:00 TimeMin=N/A SubmitTime=2026-11-22T00:33:01 EligibleTime=2026-11-22T00:33:02 AccrueTime=Unknown StartTime=2026-11-22T00:33:02 EndTime=2027-11-22T00:33:02 Deadline=N/A SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-11-22T00:33:02 Scheduler=Backfill Partition=debug AllocNode:Sid=localhost:3644 ReqNodeList=(null) ExcNodeList=(null) NodeList=localhost BatchHost=localhost NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:* TRES=cpu=1,node=1,billing=1 Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=* MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0 Features=(null) DelayBoot=00:00:00 OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null) Command=/tmp/t.sh WorkDir=/tmp StdErr=/dev/null StdIn=/dev/null StdOut=/dev/null Power= \nJobId=14 ArrayJobId=13 ArrayTaskId=0 JobName=t.sh UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901755 Nice=0 Account=(null) QOS=(null) JobState=RUNNING Reason=None Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 RunTime=00:00:01 TimeLimit=365-00:00:00 TimeMin=N/A SubmitTime=2026-11-22T00:33:01 EligibleTime=2026-11-22T00:33:02 AccrueTime=Unknown StartTime=2026-11-22T00:33:02 EndTime=2027-11-22T00:33:02 Deadline=N/A SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-11-22T00:33:02 Scheduler=Backfill Partition=debug AllocNode:Sid=localhost:3644 ReqNodeList=(null) ExcNodeList=(null) NodeList=localhost BatchHost=localhost NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:* TRES=cpu=1,node=1,billing=1 Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=* MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0 Features=(null) DelayBoot=00:00:00 OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null) Command=/tmp/t.sh WorkDir=/tmp StdErr=/dev/null StdIn=/dev/null StdOut=/dev/null Power= \n'
SCONTROL_DONE = 'JobId=13 ArrayJobId=13 ArrayTaskId=4 JobName=t.sh UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901755 Nice=0 Account=(null) QOS=(null) JobState=COMPLETED Reason=None Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 RunTime=00:00:02 TimeLimit=UNLIMITED TimeMin=N/A SubmitTime=2026-11-22T00:33:01 EligibleTime=2026-11-22T00:33:02 AccrueTime=2026-11-22T00:33:02 StartTime=2026-11-22T00:33:04 EndTime=2026-11-22T00:33:06 Deadline=N/A SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-11-22T00:33:04 Scheduler=Main Partition=debug AllocNode:Sid=localhost:3644 ReqNodeList=(null) ExcNodeList=(null) NodeList=localhost BatchHost=localhost NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:* TRES=cpu=1,node=1,billing=1 Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=* MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0 Features=(null) DelayBoot=00:00:00 OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null) Command=/tmp/t.sh WorkDir=/tmp StdErr=/dev/null StdIn=/dev/null StdOut=/dev/null Power= \nJobId=16 ArrayJobId=13 ArrayTaskId=2 JobName=t.sh UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901755 Nice=0 Account=(null) QOS=(null) JobState=COMPLETED Reason=None Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 RunTime=00:00:02 TimeLimit=UNLIMITED TimeMin=N/A SubmitTime=2026-11-22T00:33:01 EligibleTime=2026-11-22T00:33:02 AccrueTime=2026-11-22T00:33:02 StartTime=2026-11-22T00:33:04 EndTime=2026-11-22T00:33:06 Deadline=N/A SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-11-22T00:33:04 Scheduler=Main Partition=debug AllocNode:Sid=localhost:3644 ReqNodeList=(null) ExcNodeList=(null) NodeList=localhost BatchHost=localhost NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:* TRES=cpu=1,node=1,billing=1 Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=* MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0 Features=(null) DelayBoot=00:00:00 OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null) Command=/tmp/t.sh WorkDir=/tmp StdErr=/dev/null StdIn=/dev/null StdOut=/dev/null Power= \nJobId=15 ArrayJobId=13 ArrayTaskId=1 JobName=t.sh UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901755 Nice=0 Account=(null) QOS=(null) JobState=FAILED Reason=NonZeroExitCode Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=7:0 RunTime=00:00:02 TimeLimit=365-00:00:00 TimeMin=N/A SubmitTime=2026-11-22T00:33:01 EligibleTime=2026-11-22T00:33:02 AccrueTime=Unknown StartTime=2026-11-22T00:33:02 EndTime=2026-11-22T00:33:04 Deadline=N/A SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-11-22T00:33:02 Scheduler=Backfill Partition=debug AllocNode:Sid=localhost:3644 ReqNodeList=(null) ExcNodeList=(null) NodeList=localhost BatchHost=localhost NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:* TRES=cpu=1,node=1,billing=1 Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=* MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0 Features=(null) DelayBoot=00:00:00 OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null) Command=/tmp/t.sh WorkDir=/tmp StdErr=/dev/null StdIn=/dev/null StdOut=/dev/null Power= \nJobId=14 ArrayJobId=13 ArrayTaskId=0 JobName=t.sh UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901755 Nice=0 Account=(null) QOS=(null) JobState=COMPLETED Reason=None Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 RunTime=00:00:02 TimeLimit=365-00:00:00 TimeMin=N/A SubmitTime=2026-11-22T00:33:01 EligibleTime=2026-11-22T00:33:02 AccrueTime=Unknown StartTime=2026-11-22T00:33:02 EndTime=2026-11-22T00:33:04 Deadline=N/A SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-11-22T00:33:02 Scheduler=Backfill Partition=debug AllocNode:Sid=localhost:3644 ReqNodeList=(null) ExcNodeList=(null) NodeList=localhost BatchHost=localhost NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:* TRES=cpu=1,node=1,billing=1 Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=* MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0 Features=(null) DelayBoot=00:00:00 OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null) Command=/tmp/t.sh WorkDir=/tmp StdErr=/dev/null StdIn=/dev/null StdOut=/dev/null Power= \n'
SQUEUE_RUNNING = '13_[2-4] PENDING\n13_1 RUNNING\n13_0 RUNNING\n'

# times only: the standard preset also counts instructions and the mix, locally, which is not what these
# tests are about (the slices below cut from the end)
TINY = ["--metric", "ticks", "--schemes", "ml-kem-512", "--variants", "ref,avx2", "--ops", "ntt,empty", "--jobs", "2", "--spins", "5", "--reps", "3",
        "--design", "separate"]


def pqsimd(*args: str, check: bool = True, timeout: float = 900) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "pqsimd.cli", *map(str, args)], capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"pqsimd {' '.join(map(str, args))} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def raw_names(directory: Path) -> set[str]:
    return {p.name[: -len(".parquet")] for p in (directory / "raw").glob("*.parquet")}


def plan_ids(directory: Path) -> list[str]:
    return [j["id"] for j in json.loads((directory / "plan.json").read_text())["jobs"]]


# ------------------------------------------------------------------------------------------
# unit: parsing what squeue / scontrol print
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec, ids",
    [
        ("3", [3]),
        ("0-4", [0, 1, 2, 3, 4]),
        ("2-4%1", [2, 3, 4]),
        ("[1,3,5-7]", [1, 3, 5, 6, 7]),
        ("0-8:4", [0, 4, 8]),
        ("13_[2-4]", [2, 3, 4]),
        ("13_1", [1]),
    ],
)
def test_expand_task_ids(spec, ids):
    assert slurm_states.expand_task_ids(spec) == ids


def test_task_states_while_running():
    records = slurm_states.parse_scontrol_records(SCONTROL_RUNNING)
    assert len(records) == 3
    assert records[0]["AllocNode:Sid"] == "localhost:3644"
    assert records[0]["NodeList"] == "" and records[0]["ReqNodeList"] == "(null)"
    states = slurm_states.task_states(records)
    assert sorted(states) == [0, 1, 2, 3, 4]
    assert {k: s.state for k, s in states.items()} == {0: "RUNNING", 1: "RUNNING", 2: "PENDING", 3: "PENDING", 4: "PENDING"}
    assert states[0].node == "localhost" and states[0].job_id == "14" and states[0].array_id == "13"
    assert states[3].node is None and states[3].reason == "Resources" and states[3].active
    assert not any(s.terminal for s in states.values())


def test_task_states_when_done():
    states = slurm_states.task_states(slurm_states.parse_scontrol_records(SCONTROL_DONE))
    assert sorted(states) == [0, 1, 2, 4]  # task 3, cancelled while pending, has no record
    assert states[1].state == "FAILED" and states[1].exit_code == 7 and states[1].node == "localhost"
    assert states[1].describe() == "FAILED (exit 7)"
    assert all(states[k].state == "COMPLETED" for k in (0, 2, 4))
    assert all(s.terminal for s in states.values())


def test_values_with_spaces_and_signals():
    line = (
        "JobId=40 ArrayJobId=31 ArrayTaskId=5 JobName=x JobState=CANCELLED "
        "Reason=(ReqNodeNotAvail, UnavailableNodes:n1) Comment=two words ExitCode=0:15 "
        "ReqNodeList=(null) NodeList=n7 BatchHost=n7"
    )
    (rec,) = slurm_states.parse_scontrol_records(line)
    assert rec["Reason"] == "(ReqNodeNotAvail, UnavailableNodes:n1)"
    assert rec["Comment"] == "two words"
    st = slurm_states.task_states([rec])[5]
    assert (st.state, st.exit_code, st.signal, st.node) == ("CANCELLED", 0, 15, "n7")
    assert st.describe() == "CANCELLED (exit 0, signal 15)"


def test_parse_squeue():
    assert slurm_states.parse_squeue(SQUEUE_RUNNING) == {"13": [([2, 3, 4], "PENDING"), ([1], "RUNNING"), ([0], "RUNNING")]}
    assert slurm_states.parse_squeue("") == {}


# ------------------------------------------------------------------------------------------
# unit: the sbatch script and its task list
# ------------------------------------------------------------------------------------------


def test_script_and_task_list(tmp_path, monkeypatch):
    d = tmp_path / "study"
    jobs = [
        {"id": "avx2.gcc.ml-kem-512.0", "variant": "avx2"},
        {"id": "ref-native.gcc.ml-kem-512.0", "variant": "ref-native"},
        {"id": "ref.gcc.ml-kem-512.0", "variant": "ref"},
    ]
    options = {
        "partition": "bench",
        "nodelist": "n01",
        "exclusive": True,
        "time_limit": "00:10:00",
        "account": "crypto",
        "sbatch_args": ("--qos=short", "--constraint=avx2"),
    }
    script, tasks = slurm_script.write_submission_files(d, 2, jobs, options, ["echo", "RUN"])
    assert script == d.resolve() / "slurm" / "submit-2.sbatch"
    assert tasks.read_text().splitlines() == [
        "avx2.gcc.ml-kem-512.0",
        "ref-native.gcc.ml-kem-512.0 --build-on-node",
        "ref.gcc.ml-kem-512.0",
    ]
    text = script.read_text()
    for line in (
        "#SBATCH --array=0-2",
        "#SBATCH --ntasks=1",
        "#SBATCH --cpus-per-task=1",
        f"#SBATCH --output={d.resolve()}/logs/slurm/%A_%a.out",
        "#SBATCH --partition=bench",
        "#SBATCH --nodelist=n01",
        "#SBATCH --exclusive",
        "#SBATCH --time=00:10:00",
        "#SBATCH --account=crypto",
        "#SBATCH --qos=short",
        "#SBATCH --constraint=avx2",
    ):
        assert line in text.splitlines(), line
    assert (d / "logs" / "slurm").is_dir()  # sbatch does not create the output directory
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    # what a task does: line i+1 of the task list, extra words as arguments
    env = dict(os.environ, SLURM_ARRAY_TASK_ID="1", SLURM_ARRAY_JOB_ID="77")
    out = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["RUN", str(d.resolve()), "ref-native.gcc.ml-kem-512.0", "--build-on-node"]
    assert "77_1 -> job ref-native.gcc.ml-kem-512.0" in out.stderr
    env["SLURM_ARRAY_TASK_ID"] = "5"
    out = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True)
    assert out.returncode == 3 and "no job for array task 5" in out.stderr


def test_default_script_runs_this_python(tmp_path):
    script, tasks = slurm_script.write_submission_files(tmp_path, 1, [{"id": "ref.gcc.ml-kem-512.0", "variant": "ref"}], {})
    text = script.read_text()
    assert f"exec {sys.executable} -m pqsimd.cli job" in text
    assert "--partition" not in text and "--exclusive" not in text
    assert tasks.read_text() == "ref.gcc.ml-kem-512.0\n"


@pytest.mark.parametrize("key, value", [("partition", "p\nrm -rf ~"), ("account", "a\x00b"), ("nodelist", "n1\rx"),
                                        ("time_limit", "00:10:00\ntouch /tmp/pwned"), ("sbatch_args", ("--qos=x\nid",))])
def test_script_values_with_newlines_are_refused(tmp_path, key, value):
    with pytest.raises(PqsimdError, match="newline or NUL"):
        slurm_script.write_submission_files(tmp_path, 1, [{"id": "x", "variant": "ref"}], {key: value})


def test_script_values_are_quoted(tmp_path):
    d = tmp_path / "a study $(touch pwned)"
    script, _ = slurm_script.write_submission_files(d, 1, [{"id": "x", "variant": "ref"}],
                                                    {"partition": "p q", "account": "$(id)"}, ["echo", "RUN"])
    text = script.read_text()
    assert "#SBATCH --partition='p q'" in text and "#SBATCH --account='$(id)'" in text
    assert f"DIR='{d.resolve()}'" in text
    env = dict(os.environ, SLURM_ARRAY_TASK_ID="0", SLURM_ARRAY_JOB_ID="1")
    out = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0 and not (tmp_path / "pwned").exists() and str(d.resolve()) in out.stdout


def test_missing_sbatch_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(PqsimdError, match=r"sbatch not found: .*--executor local"):
        slurm_submit.execute(tmp_path, [{"id": "ref.gcc.ml-kem-512.0", "variant": "ref"}], {})


def test_failure_line_names_task_job_node_and_error(tmp_path):
    log = tmp_path / "logs" / "slurm" / "31_5.out"
    log.parent.mkdir(parents=True)
    log.write_text("pqsimd: array task 31_5 -> job avx2.ml-kem-512.1 on n7\nerror: job avx2.ml-kem-512.1: harness missing\n")
    st = slurm_states.TaskState(task=5, state="FAILED", array_id="31", exit_code=2, signal=0, node="n7")
    line = slurm_submit.failure_line(tmp_path, "31", 5, "avx2.ml-kem-512.1", st)
    assert line.startswith("task 31_5 (job avx2.ml-kem-512.1) on n7: FAILED (exit 2): error: job avx2.ml-kem-512.1: harness missing")
    assert str(log) in line
    gone = slurm_submit.failure_line(tmp_path, "31", 6, "ref.ml-kem-512.0", None)
    assert gone.startswith("task 31_6 (job ref.ml-kem-512.0) on no node: state unknown")


def test_execute_splits_at_max_array_size_and_reports_failures(tmp_path, monkeypatch, capsys):
    """execute's bookkeeping with SLURM faked: arrays of at most MaxArraySize tasks, plan order."""
    jobs = [{"id": f"ref.ml-kem-512.{i}", "variant": "ref"} for i in range(5)]
    submitted = []

    def fake_submit(script):
        submitted.append(script)
        return str(100 + len(submitted))

    def fake_scontrol(array_id):
        n = len(json.loads((tmp_path / "slurm" / "submissions.json").read_text())["submissions"][int(array_id) - 101]["tasks"])
        return {k: slurm_states.TaskState(task=k, state="FAILED" if (array_id, k) == ("102", 1) else "COMPLETED",
                                   array_id=array_id, exit_code=1 if (array_id, k) == ("102", 1) else 0,
                                   node="n9") for k in range(n)}

    from pqsimd.run.slurm import cluster

    monkeypatch.setattr(cluster, "_require", lambda tool: tool)
    monkeypatch.setattr(slurm_submit, "max_array_size", lambda: 2)
    monkeypatch.setattr(slurm_submit, "submit", fake_submit)
    monkeypatch.setattr(slurm_submit, "query_squeue", lambda ids: {})
    monkeypatch.setattr(slurm_submit, "query_scontrol", fake_scontrol)
    monkeypatch.setattr(slurm_submit, "unfinished_ids", lambda d, ids: {"ref.ml-kem-512.3"} & set(ids))
    assert slurm_submit.execute(tmp_path, jobs, {"partition": "p"}) is False
    subs = json.loads((tmp_path / "slurm" / "submissions.json").read_text())["submissions"]
    assert [s["array_id"] for s in subs] == ["101", "102", "103"]
    assert [s["tasks"] for s in subs] == [[j["id"] for j in jobs[i : i + 2]] for i in (0, 2, 4)]
    assert subs[0]["options"] == {"partition": "p"}
    assert "#SBATCH --array=0-1" in submitted[0].read_text() and "#SBATCH --array=0-0" in submitted[2].read_text()
    err = capsys.readouterr().err
    assert "task 102_1 (job ref.ml-kem-512.3) on n9: FAILED (exit 1)" in err
    assert "1 of 5 job(s) did not finish" in err


def test_progress_says_why_tasks_wait():
    states = {
        0: slurm_states.TaskState(task=0, state="RUNNING"),
        1: slurm_states.TaskState(task=1, state="PENDING", reason="Resources"),
        2: slurm_states.TaskState(task=2, state="PENDING", reason="(ReqNodeNotAvail, UnavailableNodes:n[1-2])"),
    }
    t = slurm_submit._Tracked("55", 1, {0: "a", 1: "b", 2: "c"}, states)
    text = slurm_submit._describe([t])
    assert text.startswith("55: 1 running, 2 pending, waiting: (ReqNodeNotAvail")
    from rich.text import Text

    assert "UnavailableNodes:n[1-2])" in Text.from_markup(text).plain  # survives rich markup


def test_an_array_with_another_name_is_not_ours(tmp_path, monkeypatch):
    """Job ids restart when a cluster is rebuilt: a recorded id now used by another array is not followed."""
    subs = [
        {"number": 1, "array_id": "7", "job_name": "pqsimd-study", "tasks": ["a", "b"]},
        {"number": 2, "array_id": "9", "job_name": "pqsimd-study", "tasks": ["c"]},
    ]
    monkeypatch.setattr(slurm_submit, "query_squeue", lambda ids: {"7": [([0, 1], "RUNNING")], "9": [([0], "PENDING")]})
    monkeypatch.setattr(slurm_submit, "_array_names", lambda ids: {"7": "someone-else", "9": "pqsimd-study"})
    live = slurm_submit._live_tasks(tmp_path, subs)
    assert [(t.array_id, t.tasks) for t in live] == [("9", {0: "c"})]


def test_cluster_helper_says_what_to_install(monkeypatch):
    sys.path.insert(0, str(Path(__file__).parent))
    import slurm_cluster as helper

    monkeypatch.setattr(helper.shutil, "which", lambda tool, path=None: None)
    reason = helper.missing_reason()
    assert "sbatch" in reason and "apt-get install slurm-wlm munge" in reason


# ------------------------------------------------------------------------------------------
# on the real one-node cluster
# ------------------------------------------------------------------------------------------


@pytest.mark.slurm
def test_slurm_run_matches_local_run(tmp_path, slurm_cluster):
    local, remote = tmp_path / "local", tmp_path / "slurm"
    pqsimd("run", local, *TINY)
    out = pqsimd("run", remote, *TINY, "--executor", "slurm")
    assert "4/4 job(s) finished" in out.stderr

    assert raw_names(remote) == raw_names(local) == set(plan_ids(remote))
    for variant in ("ref", "avx2"):
        gate_l = json.loads((local / "gate" / f"{variant}.gcc.ml-kem.json").read_text())
        gate_s = json.loads((remote / "gate" / f"{variant}.gcc.ml-kem.json").read_text())
        assert gate_s == gate_l and gate_s["passed"]

    subs = json.loads((remote / "slurm" / "submissions.json").read_text())["submissions"]
    assert len(subs) == 1 and subs[0]["tasks"] == plan_ids(remote)  # one array, plan order
    assert (remote / "slurm" / "tasks-1.txt").read_text().split() == plan_ids(remote)
    from pqsimd import store

    for job in plan_ids(remote):
        rec = store.read_job_record(StudyDir(remote).raw_path(job))
        assert rec["id"] == job and rec["slurm_job_id"] and rec["hostname"] and rec["cpu_model"]

    # again: nothing to do, nothing resubmitted
    pqsimd("run", remote, "--executor", "slurm")
    assert len(json.loads((remote / "slurm" / "submissions.json").read_text())["submissions"]) == 1


@pytest.mark.slurm
def test_paired_study_on_slurm(tmp_path, slurm_cluster):
    d = tmp_path / "paired"
    out = pqsimd("run", d, *TINY[:-2], "--design", "paired", "--executor", "slurm")
    # the standard preset also times each build alone once (co-residency): array tasks like the others
    assert "4/4 job(s) finished" in out.stderr
    assert raw_names(d) == {"paired.ml-kem-512.0", "paired.ml-kem-512.1", "alone.ref.gcc.ml-kem-512.0",
                            "alone.avx2.gcc.ml-kem-512.0"}
    from pqsimd import store

    rec = store.read_job_record(StudyDir(d).raw_path("paired.ml-kem-512.0"))
    assert rec["variants"] == ["ref", "avx2"] and rec["slurm_job_id"]
    pqsimd("analyze", d)
    import pandas as pd

    co = pd.read_csv(d / "results" / "coresidency.csv")
    assert set(co["variant"]) == {"ref", "avx2"} and (co["n_alone"] == 1).all() and (co["n_paired"] == 2).all()


@pytest.mark.slurm
def test_scancel_one_task_then_rerun_completes_the_study(tmp_path, slurm_cluster):
    d = tmp_path / "study"
    pqsimd("run", d, *TINY[:-6], "--spins", "8000", "--reps", "20", "--design", "separate", "--no-run")  # build + gate
    proc = subprocess.Popen(
        [sys.executable, "-m", "pqsimd.cli", "run", str(d), "--executor", "slurm"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        subs_file = d / "slurm" / "submissions.json"
        victim = None
        deadline = time.monotonic() + 120
        while victim is None and time.monotonic() < deadline and proc.poll() is None:
            if subs_file.exists():
                array = json.loads(subs_file.read_text())["submissions"][0]["array_id"]
                q = slurm_cluster.client(["squeue", "-h", "-j", array, "-t", "RUNNING", "-o", "%i"])
                running = q.stdout.split()
                if running:
                    victim = running[0]
                    break
            time.sleep(0.05)
        assert victim, "no task of the array was seen running"
        assert slurm_cluster.client(["scancel", victim]).returncode == 0
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, err
    task = int(victim.split("_")[1])
    cancelled_job = json.loads(subs_file.read_text())["submissions"][0]["tasks"][task]
    assert f"task {victim} (job {cancelled_job}) on localhost: CANCELLED" in err
    assert raw_names(d) == set(plan_ids(d)) - {cancelled_job}  # the killed job left nothing that counts

    before = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in (d / "raw").glob("*.parquet")}
    out = pqsimd("run", d, "--executor", "slurm")
    assert "1/1 job(s) finished" in out.stderr
    subs = json.loads(subs_file.read_text())["submissions"]
    assert len(subs) == 2 and subs[1]["tasks"] == [cancelled_job]  # only the missing one went again
    assert raw_names(d) == set(plan_ids(d))
    after = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in (d / "raw").glob("*.parquet")}
    assert {k: after[k] for k in before} == before  # finished jobs untouched, nothing duplicated
    from pqsimd import store

    rec = store.read_job_record(StudyDir(d).raw_path(cancelled_job))
    assert rec["id"] == cancelled_job and rec["slurm_array_task_id"] == "0"


@pytest.mark.slurm
def test_failed_task_is_reported_with_task_id_and_node(tmp_path, slurm_cluster, capsys):
    d = tmp_path / "study"
    pqsimd("run", d, *TINY, "--no-run")
    StudyDir(d).variant_path("avx2.gcc.ml-kem").unlink()  # its tasks now fail on the node
    jobs = StudyDir(d).plan_jobs()
    assert slurm_submit.execute(d, jobs, {}) is False
    err = capsys.readouterr().err
    subs = json.loads((d / "slurm" / "submissions.json").read_text())["submissions"]
    array, tasks = subs[0]["array_id"], subs[0]["tasks"]
    for k, job in enumerate(tasks):
        if job.startswith("avx2."):
            line = next(x for x in err.splitlines() if f"task {array}_{k} " in x)
            assert f"task {array}_{k} (job {job}) on localhost: FAILED (exit 2)" in line
            assert "missing" in line  # pqsimd's one-line error from the task log
        else:
            assert f"task {array}_{k} " not in err
    assert "2 of 4 job(s) did not finish" in err
    assert raw_names(d) == {j for j in tasks if j.startswith("ref.")}

    slurm_status.status(d)
    out = capsys.readouterr().out
    assert "2/4 job(s) finished" in out and f"task {array}_" in out


FAKE_JOB = """
import os, sys, time
from pathlib import Path
from pqsimd import store
from pqsimd.studydir import StudyDir
time.sleep(float(os.environ.get("FAKE_JOB_SECONDS", "2")))
StudyDir(Path(sys.argv[1])).write_raw(sys.argv[2], store.RAW_SCHEMA.empty_table(), {"id": sys.argv[2]})
"""


def fake_study(d: Path, n: int) -> list[dict]:
    """A plan without builds: the executor's side only (tasks run FAKE_JOB instead of the harness)."""
    d.mkdir(parents=True, exist_ok=True)
    jobs = [{"id": f"ref.ml-kem-512.{i}", "variant": "ref", "scheme": "ml-kem-512", "index": i, "round": i} for i in range(n)]
    (d / "plan.json").write_text(json.dumps({"seed": 1, "jobs": jobs}))
    (d / "fake_job.py").write_text(FAKE_JOB)
    return jobs


@pytest.mark.slurm
def test_rerun_while_tasks_still_run_follows_them_instead_of_resubmitting(tmp_path, slurm_cluster, capsys):
    import signal

    d = tmp_path / "study"
    jobs = fake_study(d, 3)
    options = {"command": [sys.executable, str(d / "fake_job.py")]}
    code = (f"from pathlib import Path; from pqsimd.run.slurm import submit; "
            f"submit.execute(Path({str(d)!r}), {jobs!r}, {options!r})")
    # SIGINT as a terminal gives it, even where this suite runs in the background (which ignores it)
    first = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    subs_file = d / "slurm" / "submissions.json"
    deadline = time.monotonic() + 60
    while not subs_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    first.send_signal(signal.SIGINT)  # the user's Ctrl-C: the array keeps running on the cluster
    _, err = first.communicate(timeout=60)
    assert "keeps running on the cluster" in err
    assert slurm_submit.execute(d, jobs, options) is True
    captured = capsys.readouterr()
    assert "following 3 job(s) still queued or running" in captured.err
    assert "3/3 job(s) finished" in captured.err
    assert len(json.loads(subs_file.read_text())["submissions"]) == 1  # nothing submitted twice
    assert raw_names(d) == {j["id"] for j in jobs}


@pytest.mark.slurm
def test_slurm_cancel_stops_the_array(tmp_path, slurm_cluster, capsys):
    import threading

    d = tmp_path / "study"
    jobs = fake_study(d, 3)
    result = {}
    # each task just sleeps: the executor's side is all that is tested here
    thread = threading.Thread(
        target=lambda: result.setdefault("ok", slurm_submit.execute(d, jobs, {"command": ["bash", "-c", "sleep 60", "task"]}))
    )
    thread.start()
    subs_file = d / "slurm" / "submissions.json"
    deadline = time.monotonic() + 60
    while not subs_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    slurm_status.cancel(d)
    thread.join(timeout=60)
    assert not thread.is_alive() and result["ok"] is False
    captured = capsys.readouterr()
    array = json.loads(subs_file.read_text())["submissions"][0]["array_id"]
    assert f"cancelled array {array}" in captured.out
    assert "3 of 3 job(s) did not finish" in captured.err
    slurm_status.cancel(d)
    assert "nothing to cancel" in capsys.readouterr().out


@pytest.mark.slurm
def test_cli_sbatch_arg_status_and_cancel(tmp_path, slurm_cluster):
    d = tmp_path / "study"
    run = subprocess.Popen(
        [sys.executable, "-m", "pqsimd.cli", "run", str(d), *TINY, "--executor", "slurm", "--sbatch-arg=--hold"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        subs_file = d / "slurm" / "submissions.json"
        deadline = time.monotonic() + 600  # includes building, if the cache is cold
        while not subs_file.exists() and time.monotonic() < deadline and run.poll() is None:
            time.sleep(0.1)
        assert "#SBATCH --hold" in (d / "slurm" / "submit-1.sbatch").read_text()
        status = pqsimd("slurm", "status", d)
        assert "0/4 job(s) finished" in status.stdout and "4 pending" in status.stdout
        assert "JobHeldUser" in status.stdout
        cancel = pqsimd("slurm", "cancel", d)
        assert "cancelled array" in cancel.stdout
        _, err = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 1
    assert err.count(": CANCELLED") == 4 and "0 of 4" not in err and "4 of 4 job(s) did not finish" in err
    assert raw_names(d) == set()


def test_a_local_run_is_refused_while_the_studys_slurm_tasks_still_run(tmp_path, monkeypatch):
    """Item 5 of issue 29: the SLURM follower was interrupted (Ctrl-C) and its array still runs on the
    cluster; `pqsimd run` with the local executor would time those jobs again and keep both, so it
    is refused in one line naming the array and what to do, before anything is built."""
    import shutil

    from pqsimd import pipeline
    from pqsimd.errors import PqsimdError

    d = tmp_path / "s"
    (d / "slurm").mkdir(parents=True)
    (d / "slurm" / "submissions.json").write_text(json.dumps({"submissions": [
        {"number": 1, "array_id": "41", "job_name": "pqsimd-s", "tasks": ["paired.ml-kem-512.0", "paired.ml-kem-512.1"]}]}))
    monkeypatch.setattr(slurm_submit, "query_squeue", lambda ids: {"41": [([1], "RUNNING")]})
    monkeypatch.setattr(slurm_submit, "_array_names", lambda ids: {"41": "pqsimd-s"})
    real_which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda tool, *a, **k: "/usr/bin/squeue" if tool == "squeue" else real_which(tool))
    monkeypatch.setattr(pipeline, "build_driver", lambda *a, **k: pytest.fail("built while SLURM tasks still run"))
    with pytest.raises(PqsimdError, match=r"1 job\(s\) of .* are still queued or running on SLURM \(array 41\)") as e:
        pipeline.run_study(d, {"schemes": ["ml-kem-512"], "preset": "quick"})
    assert "--executor slurm" in str(e.value) and "slurm cancel" in str(e.value)
    monkeypatch.setattr(slurm_submit, "query_squeue", lambda ids: {})  # the array has ended: a local run may go on
    slurm_submit.refuse_while_in_flight(d)
