"""A job's spec for the driver (harness/driver/spec.h): which shared objects, which ops, how many
spins, reps and calls per sample, in which design. The text is also kept in the job record.

Which (build, op) pairs are timed is decided here, from the ops each build's table has (the
gate's op check), and written into the spec ("-": not timed), so the driver and pqsimd agree on
every job's sample count. Values are percent-encoded: a path with spaces is one word."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from ..errors import PqsimdError
from ..ids import same_code_build

NOT_TIMED = "-"


def escape(value: str | Path) -> str:
    return quote(str(value), safe="/._+-")


def capped(study, seconds: float | None) -> bool:
    """One call of the op takes longer than the study's cap (max_call_s): the build does not time it."""
    cap = getattr(study, "max_call_s", None)
    return bool(cap) and seconds is not None and seconds > cap


def timed_ops(study, scheme: str, build_ops: list[dict[str, float] | None]) -> dict[str, list[bool]]:
    """Per op of the job (family order), which builds time it: those that have it (the gate's op
    check; None: unknown, i.e. all) and whose one call stays within the study's cap; ops no build
    times are left out."""
    out = {}
    for op in study.ops_for(scheme):
        which = [ops is None or (op in ops and not capped(study, ops[op])) for ops in build_ops]
        if any(which):
            out[op] = which
    return out


def quantum_line(study) -> list[str]:
    """The spec line of `--timer-quantum` (none when the clock is read as it is)."""
    q = getattr(study, "timer_quantum", 0)
    return [f"timer_quantum {q}"] if q and q > 1 else []


def op_sizes(study, sizing: dict | None, scheme: str, op: str, builds: list[str]) -> tuple[int, int, int, list[str]]:
    """(spins, reps, warmup, batch per build) of one op: from the budget sizing when the study has
    one (run/sizing.py), else the study's fixed S × R and batch."""
    if sizing is not None:
        s = ((sizing.get("schemes") or {}).get(scheme) or {}).get("ops", {}).get(op)
        if not isinstance(s, dict):
            raise PqsimdError(f"the study's sizing has no entry for op {op} of {scheme}; delete its sizing.json, and "
                              f"running the study again restores it (or probes the op)")
        return s["spins"], s["reps"], s.get("warmup", study.warmup), [str(s["batch"].get(b, "auto")) for b in builds]
    return study.spins, study.reps, study.warmup, [study.batch] * len(builds)


def no_warm(sizing: dict | None, scheme: str, op: str) -> bool:
    """Whether the paired warm-up is skipped for this op: every build's one call outlasts it."""
    return bool(sizing and sizing["schemes"][scheme]["ops"][op].get("nowarm"))


def job_spec(study, job: dict, builds: list[str], libraries: list[Path], cpu: int, seed: int,
             sizing: dict | None = None, counters: list[str] | None = None,
             timed: dict[str, list[bool]] | None = None, stacks: list[int] | None = None) -> str:
    """`libraries`: per build its copies (run/layouts.py), build-major, as many for each build: the
    driver times copy (spin mod copies) of every build in each spin; `stacks`: one offset per library."""
    timed = timed if timed is not None else timed_ops(study, job["scheme"], [None] * len(builds))
    copies = len(libraries) // max(1, len(builds))
    if copies * len(builds) != len(libraries) or (stacks is not None and len(stacks) != len(libraries)):
        raise PqsimdError(f"job {job['id']}: {len(libraries)} libraries for {len(builds)} builds")
    lines = [
        f"# pqsimd job {job['id']}",
        f"design {study.design}",
        f"scheme {job['scheme']}",
        *(f"variant {escape(lib)}" for lib in libraries),
        *([f"layouts {copies}"] if copies > 1 else []),
        *([f"stack {' '.join(map(str, stacks))}"] if stacks else []),
        *batch_of_line(builds, copies),
        f"cpu {cpu}",
        f"seed {seed}",
        f"warmup_ns {study.warmup_ns if study.design == 'paired' else 0}",
        f"target {study.batch_target}",
    ]
    lines += quantum_line(study)
    if counters:
        lines.append(f"counters {','.join(counters)}")
    for op, which in timed.items():
        spins, reps, warmup, batch = op_sizes(study, sizing, job["scheme"], op, builds)
        batch = [b if t else NOT_TIMED for b, t in zip(batch, which) for _ in range(copies)]
        tail = " nowarm" if no_warm(sizing, job["scheme"], op) else ""
        lines.append(f"op {op} {spins} {reps} {warmup} {' '.join(batch)}{tail}")
    return "\n".join(lines) + "\n"


def batch_of_line(builds: list[str], copies: int) -> list[str]:
    """The driver's `batch_of`: every copy of a build, and of its A/A duplicate, takes the auto batch
    of the first of them, so the same code is never sized twice (a second auto batch can differ,
    and a comparison of the same code would then measure the batch size). Nothing when no entry
    shares its code with another."""
    first: dict[str, int] = {}
    out = []
    for i, b in enumerate(builds):
        src = first.setdefault(same_code_build(b), i * copies)
        out += [src] * copies
    if out == list(range(len(out))):
        return []
    return [f"batch_of {' '.join(map(str, out))}"]


def expected_samples(study, job: dict, builds: list[str], sizing: dict | None,
                     timed: dict[str, list[bool]] | None = None) -> int:
    timed = timed if timed is not None else timed_ops(study, job["scheme"], [None] * len(builds))
    total = 0
    for op, which in timed.items():
        spins, reps, warmup, _ = op_sizes(study, sizing, job["scheme"], op, builds)
        total += (spins + warmup) * reps * sum(which)
    return total


def _splitmix64(state: int) -> tuple[int, int]:
    state = (state + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return state, z ^ (z >> 31)


def spin_orders(seed: int, n_variants: int, n_spins: int) -> list[list[int]]:
    """The paired design's per-spin build orders, as the driver draws them (runner.c: splitmix64,
    Fisher-Yates from the last position, over builds, whatever their number of copies), for n_spins
    spins in the job's order (ops one after another, warmup spins first)."""
    state = seed & 0xFFFFFFFFFFFFFFFF
    out = []
    for _ in range(n_spins):
        order = list(range(n_variants))
        for i in range(n_variants - 1, 0, -1):
            state, r = _splitmix64(state)
            j = r % (i + 1)
            order[i], order[j] = order[j], order[i]
        out.append(order)
    return out
