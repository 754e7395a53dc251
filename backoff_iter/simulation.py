"""Simulate contention like the AWS study "Exponential Backoff And Jitter".

One server holds one row with an integer version.  Each of *N* clients wants
one successful write: it reads the version, then writes carrying it; the
write succeeds (version += 1) only if nobody wrote in between.  On failure
the client backs off per its strategy and reads again.  Every one-way
network hop takes ``|Normal(10, 2)|`` ms; server work takes no time.

*Work* is the number of writes the server received; *time* is when the last
client got its success reply (ms).  Both are averaged over independent runs.

>>> [r.work for r in simulate(["none"], clients=[1, 2], runs=3, seed=1)]
[1.0, 3.0]
"""

from __future__ import annotations

import heapq
import random
from typing import Callable, Dict, Iterable, Iterator, List, NamedTuple, Optional, Sequence, Tuple

from . import _checks
from .strategies import (
    constant,
    decorrelated,
    equal_jitter,
    exponential,
    full_jitter,
    smooth_jitter,
)

__all__ = ["STRATEGIES", "Result", "Run", "simulate", "simulate_once"]

HOP_MEAN, HOP_SD = 10.0, 2.0  # ms, one way
DEFAULT_CLIENTS = tuple(range(10, 200, 10))
DEFAULT_STRATEGIES = ("exponential", "full_jitter", "equal_jitter", "decorrelated", "smooth_jitter")

Schedule = Callable[[float, float, random.Random], Iterator[float]]

# How each strategy of the study is made from the study's base and cap.  The
# study counts attempts from 1, so the exponential family's first wait is
# min(cap, 2·base); decorrelated starts from base (first wait in [base, 3·base]);
# smooth jitter's base is its median first wait, 2·base.
STRATEGIES: Dict[str, Schedule] = {
    "none": lambda base, cap, rng: constant(0.0),
    "exponential": lambda base, cap, rng: exponential(2 * base, cap=cap),
    "full_jitter": lambda base, cap, rng: full_jitter(2 * base, cap, rng=rng),
    "equal_jitter": lambda base, cap, rng: equal_jitter(2 * base, cap, rng=rng),
    "decorrelated": lambda base, cap, rng: decorrelated(base, cap, rng=rng),
    "smooth_jitter": lambda base, cap, rng: smooth_jitter(2 * base, cap, rng=rng),
}

_READ, _WRITE = 0, 1


class Run(NamedTuple):
    """One run: writes the server received, ms until the last success reply,
    and how many writes succeeded (every client's, when all finished)."""

    work: int
    time: float
    successes: int


class Result(NamedTuple):
    """Mean work (writes) and time (ms) of one strategy at one client count."""

    strategy: str
    clients: int
    work: float
    time: float


def simulate_once(
    strategy: str,
    clients: int,
    rng: random.Random,
    *,
    base: float = 5.0,
    cap: float = 2000.0,
) -> Run:
    """One run of *clients* clients backing off with *strategy*.

    >>> run = simulate_once("full_jitter", 3, random.Random(0))
    >>> run.successes, run.work >= 3
    (3, True)
    """
    make = _strategy(strategy)
    _checks.count("clients", clients, minimum=1)
    base = _checks.seconds("base", base)
    cap = _checks.seconds("cap", cap, infinite=True)
    return _run(make, clients, rng, base, cap)


def _run(
    make: Schedule, clients: int, rng: random.Random, base: float, cap: float
) -> Run:
    gauss = rng.gauss
    # (time the message reaches the server, client, kind, version it carries)
    events: List[Tuple[float, int, int, int]] = [
        (abs(gauss(HOP_MEAN, HOP_SD)), client, _READ, 0) for client in range(clients)
    ]
    heapq.heapify(events)
    push, pop = heapq.heappush, heapq.heappop
    schedules: Dict[int, Iterator[float]] = {}
    version = writes = 0
    last_success = 0.0
    while events:
        now, client, kind, carried = pop(events)
        if kind == _READ:
            # The reply goes back with the current version and the client
            # sends its write at once: nothing else can happen to it between.
            arrival = now + abs(gauss(HOP_MEAN, HOP_SD)) + abs(gauss(HOP_MEAN, HOP_SD))
            push(events, (arrival, client, _WRITE, version))
            continue
        writes += 1
        reply = now + abs(gauss(HOP_MEAN, HOP_SD))
        if carried == version:
            version += 1
            if reply > last_success:
                last_success = reply
            continue
        schedule = schedules.get(client)
        if schedule is None:
            schedule = schedules[client] = make(base, cap, rng)
        backoff = next(schedule)
        push(events, (reply + abs(gauss(HOP_MEAN, HOP_SD)) + backoff, client, _READ, 0))
    return Run(writes, last_success, version)


def simulate(
    strategies: Optional[Iterable[str]] = None,
    clients: Iterable[int] = DEFAULT_CLIENTS,
    runs: int = 100,
    *,
    seed: Optional[int] = None,
    base: float = 5.0,
    cap: float = 2000.0,
    progress: Optional[Callable[[int, int, str, int], object]] = None,
) -> List[Result]:
    """Mean work and time for each strategy and client count, over *runs* runs.

    *strategies* are names from :data:`STRATEGIES` (default: every
    strategy of the library, without ``"none"``).  With a *seed* the results
    repeat exactly, and each (strategy, clients) pair draws from its own
    stream, so asking for fewer strategies gives the same figures.
    *progress(done, total, strategy, clients)* is called after each pair.

    >>> rows = simulate(["exponential", "full_jitter"], clients=[5], runs=10, seed=7)
    >>> [(r.strategy, r.clients) for r in rows]
    [('exponential', 5), ('full_jitter', 5)]
    >>> rows == simulate(["exponential", "full_jitter"], clients=[5], runs=10, seed=7)
    True
    """
    names = list(DEFAULT_STRATEGIES if strategies is None else strategies)
    makers = [_strategy(name) for name in names]
    counts = [_checks.count("clients", n, minimum=1) for n in clients]
    _checks.count("runs", runs, minimum=1)
    base = _checks.seconds("base", base)
    cap = _checks.seconds("cap", cap, infinite=True)
    if progress is not None:
        _checks.function("progress", progress)
    results = []
    total = len(names) * len(counts)
    for name, make in zip(names, makers):
        for n in counts:
            rng = random.Random(None if seed is None else f"{seed}/{name}/{n}")
            work = time = 0.0
            for _ in range(runs):
                run = _run(make, n, rng, base, cap)
                work += run.work
                time += run.time
            results.append(Result(name, n, work / runs, time / runs))
            if progress is not None:
                progress(len(results), total, name, n)
    return results


def _strategy(name: str) -> Schedule:
    try:
        return STRATEGIES[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"strategy must be one of {', '.join(STRATEGIES)}, got {name!r}"
        ) from None



def table(results: Sequence[Result]) -> str:
    """The results as one small table per strategy."""
    lines: List[str] = []
    for name in dict.fromkeys(r.strategy for r in results):
        lines += [name, f"{'clients':>8}  {'work':>10}  {'time (ms)':>12}"]
        lines += [
            f"{r.clients:>8}  {r.work:>10.1f}  {r.time:>12.1f}"
            for r in results
            if r.strategy == name
        ]
        lines.append("")
    return "\n".join(lines)
