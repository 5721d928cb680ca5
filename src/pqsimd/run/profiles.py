"""An op's per-instruction profile: executions per (object, address) from two runs of N1 < N2
calls with the study's counting backend (their difference is what N2 - N1 calls executed), net of
the self-check op's, address by address."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from .backends import N1, N2, Callgrind
from .callgrind import Profile


@dataclass(frozen=True)
class ProfilePair:
    p1: Profile
    p2: Profile
    n1: int = N1
    n2: int = N2
    texts: dict | None = None  # address -> (instruction text, symbol) from the backend (None: objdump's)

    @property
    def batch(self) -> int:
        return self.n2 - self.n1

    def diff(self) -> dict[tuple[str, int], int]:
        keys = set(self.p1) | set(self.p2)
        out = {k: self.p2.get(k, 0) - self.p1.get(k, 0) for k in keys}
        return {k: v for k, v in out.items() if v}


def measure_profile(driver: Path, library: Path, scheme: str, op: str, n1: int = N1, n2: int = N2,
                    backend=None) -> ProfilePair:
    """Both runs' per-instruction profiles, with the study's counting backend (default callgrind)."""
    return measure_profiles(driver, library, scheme, [op], n1, n2, backend)[op]


def measure_profiles(driver: Path, library: Path, scheme: str, ops: list[str], n1: int = N1, n2: int = N2,
                     backend=None) -> dict[str, ProfilePair]:
    """Every op's ProfilePair from one backend batch (callgrind: one process)."""
    got = (backend or Callgrind()).profile_batch(driver, library, scheme, [(op, n) for op in ops for n in (n1, n2)])
    out = {}
    for k, op in enumerate(ops):
        (p1, t1), (p2, t2) = got[2 * k], got[2 * k + 1]
        out[op] = ProfilePair(p1, p2, n1, n2, None if t1 is None else {**t1, **(t2 or {})})
    return out


def net_counts(op: ProfilePair, self_check: ProfilePair | None) -> dict[tuple[str, int], int]:
    """Executions over the batch per (object, address): the op's minus the self-check op's."""
    net = defaultdict(int, op.diff())
    if self_check is not None:
        if self_check.batch != op.batch:
            raise ValueError("the op and the self-check op were counted over different batches")
        for k, v in self_check.diff().items():
            net[k] -= v
    return {k: v for k, v in net.items() if v}
