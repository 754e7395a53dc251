"""Retried streams (issue 26): what ``@retry`` on a generator function costs
per item on the success path, against the same generator undecorated, sync
and async, in one process run (the variants interleaved, best of N).

Goals: without ``resume=`` at most 1.5x the bare generator per item; with
``resume=`` at most 3x.  Each item is an integer the source makes, so the
figure is the stream's own cost, not the work of a real source.  Beside them,
the least any wrapper costs: a hand-written one passing the items through
(``yield from``; ``async for`` in the async form, which has no ``yield from``).
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import AsyncIterator, Callable, Iterator

from backoff_iter import retry

ITEMS = 20_000
GOALS = {"@retry": 1.5, "@retry(resume=)": 3.0}


def _sources(items: int) -> dict[str, Callable[[], Iterator[int]]]:
    def bare() -> Iterator[int]:
        yield from range(items)

    def source() -> Iterator[int]:
        yield from range(items)

    def resume(state: object) -> Iterator[int]:
        return iter(range(state.count, items))  # type: ignore[attr-defined]

    def one_frame() -> Iterator[int]:  # the least any wrapper costs: one generator frame
        return (yield from source())

    return {
        "bare generator": bare,
        "hand yield from": one_frame,
        "@retry": retry([0.1], on=ConnectionError)(source),
        "@retry(resume=)": retry([0.1], on=ConnectionError, resume=resume)(source),
    }


def _async_sources(items: int) -> dict[str, Callable[[], AsyncIterator[int]]]:
    async def bare() -> AsyncIterator[int]:
        for item in range(items):
            yield item

    async def source() -> AsyncIterator[int]:
        for item in range(items):
            yield item

    async def resume(state: object) -> AsyncIterator[int]:
        for item in range(state.count, items):  # type: ignore[attr-defined]
            yield item

    async def one_frame() -> AsyncIterator[int]:  # the least an async wrapper costs
        async for item in source():
            yield item

    return {
        "bare generator": bare,
        "hand async for": one_frame,
        "@retry": retry([0.1], on=ConnectionError)(source),
        "@retry(resume=)": retry([0.1], on=ConnectionError, resume=resume)(source),
    }


def per_item(items: int, repeats: int) -> list[tuple[str, str, float, float]]:
    """(form, contender, ns per item, x the bare generator), sync and async, each
    the best of *repeats* runs with the contenders interleaved."""
    rows = []
    for form, sources, run in (
        ("sync", _sources(items), _drain),
        ("async", _async_sources(items), _adrain),
    ):
        best = dict.fromkeys(sources, float("inf"))
        enabled = gc.isenabled()
        gc.disable()
        try:
            for _ in range(repeats):
                for name, make in sources.items():
                    best[name] = min(best[name], run(make))
        finally:
            if enabled:
                gc.enable()
        bare = best["bare generator"]
        rows += [(form, name, ns / items, ns / bare) for name, ns in best.items()]
    return rows


def _drain(make: Callable[[], Iterator[int]]) -> float:
    started = time.perf_counter_ns()
    for _ in make():
        pass
    return time.perf_counter_ns() - started


def _adrain(make: Callable[[], AsyncIterator[int]]) -> float:
    async def drain() -> float:
        started = time.perf_counter_ns()
        async for _ in make():
            pass
        return time.perf_counter_ns() - started

    return asyncio.run(drain())


if __name__ == "__main__":
    for form, name, ns, ratio in per_item(ITEMS, 9):
        goal = GOALS.get(name)
        verdict = "" if goal is None else ("ok" if ratio <= goal else "MISSED")
        print(f"{form:5}  {name:18} {ns:8.1f} ns  {ratio:5.2f}x  {verdict}")
