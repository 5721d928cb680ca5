"""A throw-away one-node SLURM cluster on localhost: munged + slurmctld + slurmd.

Debian's ``slurm-wlm`` + ``munge`` packages (22.05), no systemd: the three daemons run in the
foreground as children of this process, with a generated ``slurm.conf``, their own munge key and
socket, their own ports and state directories, all in one temporary directory. Clients find the
cluster through ``SLURM_CONF``. ``stop()`` cancels the cluster's jobs and stops exactly the
daemons it started, by pid.

Used by the ``slurm_cluster`` fixture in ``conftest.py``; by hand::

    python tests/slurm_cluster.py     # starts a cluster, prints SLURM_CONF, Ctrl-C stops it
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "scontrol", "scancel", "sinfo")


def missing_reason() -> str | None:
    """Why a cluster cannot be started here, or None."""
    missing = [t for t in DAEMONS + CLIENTS if _which(t) is None]
    if missing:
        return f"SLURM not installed ({', '.join(missing)} not found): apt-get install slurm-wlm munge"
    if os.geteuid() != 0:
        return "the test cluster's slurmd must run as root (it launches jobs as their user)"
    return None


def _which(tool: str) -> str | None:
    return shutil.which(tool) or shutil.which(tool, path="/usr/sbin:/usr/bin:/sbin:/bin")


def _die_with_parent() -> None:
    """preexec_fn: the daemon gets SIGTERM when this process dies, however it dies (Linux)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def _free_ports(n: int) -> list[int]:
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


class SlurmCluster:
    def __init__(self, cpus: int | None = None, base: Path | None = None, min_job_age: int = 300):
        self.cpus = cpus or len(os.sched_getaffinity(0))
        self.root = Path(tempfile.mkdtemp(prefix="pqsimd-slurm-", dir=base))
        self.conf = self.root / "slurm.conf"
        self.min_job_age = min_job_age
        self.procs: dict[str, subprocess.Popen] = {}
        self.env = dict(os.environ, SLURM_CONF=str(self.conf))

    # -- configuration -----------------------------------------------------------------------
    def _write_files(self) -> None:
        r = self.root
        for sub in ("munge", "state", "spool", "log"):
            (r / sub).mkdir()
        (r / "munge").chmod(0o755)
        key = r / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        ctld_port, d_port = _free_ports(2)
        self.conf.write_text(
            "\n".join(
                [
                    "ClusterName=pqsimdtest",
                    "SlurmctldHost=localhost",
                    f"SlurmctldPort={ctld_port}",
                    f"SlurmdPort={d_port}",
                    "SlurmUser=root",
                    "SlurmdUser=root",
                    "AuthType=auth/munge",
                    "CredType=cred/munge",
                    f"AuthInfo=socket={r}/munge/sock",
                    f"StateSaveLocation={r}/state",
                    f"SlurmdSpoolDir={r}/spool",
                    f"SlurmctldPidFile={r}/slurmctld.pid",
                    f"SlurmdPidFile={r}/slurmd.pid",
                    f"SlurmctldLogFile={r}/log/slurmctld.log",
                    f"SlurmdLogFile={r}/log/slurmd.log",
                    "SelectType=select/cons_tres",
                    "SelectTypeParameters=CR_Core",
                    "ProctrackType=proctrack/linuxproc",
                    "TaskPlugin=task/affinity",
                    "SchedulerType=sched/backfill",
                    "SchedulerParameters=sched_interval=1,bf_interval=1",
                    f"MinJobAge={self.min_job_age}",
                    "ReturnToService=2",
                    "MpiDefault=none",
                    "JobAcctGatherType=jobacct_gather/none",
                    "AccountingStorageType=accounting_storage/none",
                    f"NodeName=localhost CPUs={self.cpus} State=UNKNOWN",
                    "PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP",
                    # a second machine type for `--machines` (the same node: a campaign of one microarchitecture)
                    "PartitionName=second Nodes=localhost MaxTime=INFINITE State=UP",
                    "",
                ]
            )
        )

    def _spawn(self, name: str, args: list[str]) -> None:
        out = open(self.root / "log" / f"{name}.stdout", "wb")
        self.procs[name] = subprocess.Popen(
            args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=self.env,
            start_new_session=True,  # a Ctrl-C of pytest must not kill them before teardown
            preexec_fn=_die_with_parent,  # ... but a killed pytest must not leave them behind
        )
        out.close()

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self, timeout: float = 60.0) -> "SlurmCluster":
        self._write_files()
        r = self.root
        try:
            self._spawn(
                "munged",
                [_which("munged"), "--foreground", "--force", f"--socket={r}/munge/sock",
                 f"--key-file={r}/munge/munge.key", f"--pid-file={r}/munge/munged.pid",
                 f"--log-file={r}/log/munged.log", f"--seed-file={r}/munge/seed"],
            )
            self._wait(lambda: (r / "munge" / "sock").exists(), "munged socket", 15)
            self._spawn("slurmctld", [_which("slurmctld"), "-D", "-f", str(self.conf)])
            self._wait(lambda: self.client(["scontrol", "ping"]).returncode == 0, "slurmctld", timeout)
            self._spawn("slurmd", [_which("slurmd"), "-D", "-N", "localhost", "-f", str(self.conf)])
            self._wait(self._node_idle, "node localhost idle", timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _node_idle(self) -> bool:
        proc = self.client(["sinfo", "-h", "-N", "-o", "%T"])
        states = [line.strip().rstrip("*") for line in proc.stdout.splitlines() if line.strip()]  # a line per partition
        return proc.returncode == 0 and bool(states) and all(s in ("idle", "mixed", "allocated") for s in states)

    def _wait(self, ready, what: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited with {proc.returncode} while waiting for {what}\n{self.logs()}")
            if ready():
                return
            time.sleep(0.2)
        raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}\n{self.logs()}")

    def client(self, args: list[str], timeout: float = 30) -> subprocess.CompletedProcess:
        return subprocess.run([_which(args[0]) or args[0], *args[1:]], env=self.env, capture_output=True,
                              text=True, timeout=timeout)

    def logs(self, lines: int = 15) -> str:
        out = []
        for path in sorted((self.root / "log").glob("*")):
            try:
                tail = path.read_text(errors="replace").splitlines()[-lines:]
            except OSError:
                continue
            out.append(f"--- {path.name}\n" + "\n".join(tail))
        return "\n".join(out)

    def stop(self, remove: bool | None = None) -> None:
        """Cancel the cluster's jobs, stop the daemons this object started (by pid), clean up."""
        if "slurmctld" in self.procs and self.procs["slurmctld"].poll() is None:
            try:
                self.client(["scancel", "--full", "--user", "root"], timeout=10)
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline:
                    q = self.client(["squeue", "-h", "-o", "%A"], timeout=10)
                    if q.returncode != 0 or not q.stdout.strip():
                        break
                    time.sleep(0.2)
            except (subprocess.SubprocessError, OSError):
                pass
        for name in ("slurmd", "slurmctld", "munged"):
            proc = self.procs.get(name)
            if proc is None or proc.poll() is not None:
                continue
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)
        if remove is None:
            remove = not os.environ.get("PQSIMD_SLURM_KEEP")
        if remove:
            shutil.rmtree(self.root, ignore_errors=True)


if __name__ == "__main__":
    reason = missing_reason()
    if reason:
        raise SystemExit(reason)
    def _interrupt(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGHUP, _interrupt)
    cluster = SlurmCluster().start()
    print(f"export SLURM_CONF={cluster.conf}   # Ctrl-C stops the cluster", flush=True)
    try:
        signal.pause()
    except KeyboardInterrupt:
        pass
    finally:
        cluster.stop()
