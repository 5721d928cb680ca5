"""A/A copies: a study whose laid-out copies are all the same bytes and stack offset, per build.

Runs `pqsimd run DIR ARGS...` in this process with layout.seed_of replaced by one seed per build
(the seed of job "aa", copy 0): every job still relinks, gates and times 2 copies of every build,
spins alternating between them, but all copies of a build in all jobs are one layout. Whatever the
cliff rule (analyze/cliffs.py) flags in such a study is a false flag: a property of the machine, the
process (its random mappings and stack address) or the job, never of a layout. bench/bench_cliffs.py
reads it.

    PQSIMD_IDLE_WAIT=0 chrt -f 50 .venv/bin/python bench/aa_copies.py studies/aa-copies   # standard ML-KEM
"""

from __future__ import annotations

import sys

from pqsimd import layout


def main(argv: list[str]) -> None:
    original = layout.seed_of

    def one_layout(study_seed: int, job_id: str, build_id: str, index: int) -> int:
        return original(study_seed, "aa", build_id, 0)

    layout.seed_of = one_layout
    from pqsimd.cli import main as cli_main

    sys.argv = ["pqsimd", "run", *argv]
    cli_main()


if __name__ == "__main__":
    main(sys.argv[1:])
