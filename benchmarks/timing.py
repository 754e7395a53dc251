"""Timing helpers shared by the benchmarks: best of several repeats, GC off."""

from __future__ import annotations

import gc
import logging
import time
from collections import deque
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
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


def interleaved(runs: dict[str, Callable[[], object]], units: int, rounds: int) -> dict[str, float]:
    """ns per unit of each run, the best of *rounds* rounds that time every run in
    turn: a noisy neighbour (this machine is shared) slows them all alike, and
    the best round of each is the one least disturbed.  GC is off while timing
    and collected between rounds."""
    best = dict.fromkeys(runs, float("inf"))
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(rounds):
            for name, run in runs.items():
                start = time.perf_counter_ns()
                run()
                best[name] = min(best[name], time.perf_counter_ns() - start)
            gc.collect()
    finally:
        if enabled:
            gc.enable()
    return {name: ns / units for name, ns in best.items()}


def repeated(call: Callable[[], object], n: int) -> Callable[[], None]:
    """A run of *n* calls of *call*."""

    def run() -> None:
        for _ in range(n):
            call()

    return run


async def ainterleaved(
    runs: dict[str, Callable[[], Awaitable[object]]], units: int, rounds: int
) -> dict[str, float]:
    """:func:`interleaved` for coroutine functions, in the running event loop."""
    best = dict.fromkeys(runs, float("inf"))
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(rounds):
            for name, run in runs.items():
                start = time.perf_counter_ns()
                await run()
                best[name] = min(best[name], time.perf_counter_ns() - start)
            gc.collect()
    finally:
        if enabled:
            gc.enable()
    return {name: ns / units for name, ns in best.items()}


def arepeated(call: Callable[[], Awaitable[object]], n: int) -> Callable[[], Awaitable[None]]:
    """A run of *n* awaited calls of *call*."""

    async def run() -> None:
        for _ in range(n):
            await call()

    return run


@contextmanager
def quiet_retry_log() -> Iterator[None]:
    """Retries are logged by default, at WARNING: while measuring, at ERROR, as a
    service that silences them would have it (the hook still runs, as google's
    debug log is still formatted, and no line goes to stderr)."""
    logger = logging.getLogger("backoff_iter")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)
