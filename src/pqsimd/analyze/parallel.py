"""Analyze's worker threads: reading raw files and resampling, a few at a time."""

from __future__ import annotations

import os


def threads() -> int:
    """Worker threads for reading and resampling: PQSIMD_THREADS, else min(2, CPUs available)."""
    env = os.environ.get("PQSIMD_THREADS", "")
    if env.isdigit() and int(env) >= 1:
        return int(env)
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return max(1, min(2, n))


def parallel_map(fn, items) -> list:
    """map over a small thread pool (numpy and pyarrow release the GIL); plain map with one thread."""
    items = list(items)
    n = threads()
    if n == 1 or len(items) < 2:
        return [fn(x) for x in items]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=n) as pool:
        return list(pool.map(fn, items))
