"""Timing helpers shared by the benchmarks: best of several repeats, GC off."""

from __future__ import annotations

import gc
import time
from collections import deque
from collections.abc import Iterator
from itertools import islice
from typing import Callable


def consume(iterator: Iterator[object], n: int) -> None:
    """Advance *iterator* by *n* items at C speed."""
    deque(islice(iterator, n), maxlen=0)


def best_ns(run: Callable[[], object], units: int, repeats: int) -> float:
    """Best time of *repeats* runs of run(), in nanoseconds per unit of work."""
    best = float("inf")
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeats):
            start = time.perf_counter_ns()
            run()
            best = min(best, time.perf_counter_ns() - start)
    finally:
        if enabled:
            gc.enable()
    return best / units


def ns_per_value(make: Callable[[], Iterator[float]], n: int, repeats: int) -> float:
    """Nanoseconds per delay drawn, over *n* delays of a fresh iterator."""

    def run() -> None:
        consume(make(), n)

    return best_ns(run, n, repeats)


def ns_per_call(call: Callable[[], object], n: int, repeats: int) -> float:
    """Nanoseconds per call of a zero-argument function."""

    def run() -> None:
        for _ in range(n):
            call()

    return best_ns(run, n, repeats)
