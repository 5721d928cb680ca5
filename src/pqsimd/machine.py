"""What this machine is: the facts a reader needs to trust (or distrust) a cycle count."""

from __future__ import annotations

import os
import platform
import re
import shutil
import socket
import subprocess
from functools import cache
from pathlib import Path


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


@cache
def cpuinfo() -> dict[str, str]:
    """The first processor block of /proc/cpuinfo."""
    text = _read("/proc/cpuinfo") or ""
    block = text.split("\n\n")[0]
    out = {}
    for line in block.splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            out[k.strip()] = v.strip()
    return out


def cpu_model() -> str:
    return cpuinfo().get("model name", platform.processor() or "unknown")


def cpu_flags() -> set[str]:
    """The host's CPU features: /proc/cpuinfo's `flags` on x86-64, `Features` on aarch64 (data/isas.toml)."""
    from . import isa
    from .errors import PqsimdError

    try:
        key = isa.host().features
    except PqsimdError:  # an ISA pqsimd has no data for
        key = "flags"
    return set(cpuinfo().get(key, "").split()) - hidden_cpu_flags()


HIDE_ENV = "PQSIMD_HIDE_CPU_FLAGS"  # e.g. "avx512f avx512vl": this host read as one without them


def hidden_cpu_flags() -> set[str]:
    """The CPU features $PQSIMD_HIDE_CPU_FLAGS (space- or comma-separated) takes away from cpu_flags(): a host
    with AVX-512 plays one without (what variants are skipped, what doctor says); nothing else changes."""
    return set(os.environ.get(HIDE_ENV, "").replace(",", " ").split())


def virtualization() -> str | None:
    """Hypervisor and/or container this runs in (e.g. "kvm, in a docker container"), else None."""
    found = []
    if shutil.which("systemd-detect-virt"):
        for flag, fmt in (("--vm", "{}"), ("--container", "in a {} container")):
            out = subprocess.run(["systemd-detect-virt", flag], capture_output=True, text=True)
            name = out.stdout.strip()
            if out.returncode == 0 and name not in ("", "none"):
                found.append(fmt.format(name))
    if not any(not f.startswith("in a") for f in found) and "hypervisor" in cpu_flags():
        vendor = _read("/sys/class/dmi/id/sys_vendor") or _read("/sys/class/dmi/id/product_name")
        found.insert(0, f"hypervisor ({vendor})" if vendor else "hypervisor")
    return ", ".join(found) or None


def machine_info() -> dict:
    ci = cpuinfo()
    flags = cpu_flags()
    online = _read("/sys/devices/system/cpu/online")
    return {
        "hostname": socket.gethostname(),
        "cpu_model": cpu_model(),
        "vendor_id": ci.get("vendor_id"),  # x86-64; aarch64 has the MIDR implementer and part
        "cpu_implementer": ci.get("CPU implementer"),
        "cpu_part": ci.get("CPU part"),
        "cpu_family": ci.get("cpu family"),
        "cpu_model_number": ci.get("model"),
        "stepping": ci.get("stepping"),
        "microcode": ci.get("microcode"),
        "isa": sorted(f for f in flags if re.match(r"(sse|ssse|avx|bmi|popcnt|aes|sha|fma|adx)", f)),
        "tsc_flags": sorted(f for f in flags if "tsc" in f),
        "cores_online": online,
        "cpus_allowed": sorted(os.sched_getaffinity(0)),
        "smt_active": _read("/sys/devices/system/cpu/smt/active"),
        "virtualization": virtualization(),
        "kernel": platform.release(),
        "os": _read("/etc/os-release") and next(
            (l.split("=", 1)[1].strip('"') for l in (_read("/etc/os-release") or "").splitlines() if l.startswith("PRETTY_NAME=")), None
        ),
        "governor": _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        "boost": _read("/sys/devices/system/cpu/cpufreq/boost"),
        "intel_no_turbo": _read("/sys/devices/system/cpu/intel_pstate/no_turbo"),
        "python": platform.python_version(),
    }
