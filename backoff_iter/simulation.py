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
import math
import random
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import NamedTuple

from . import _checks
from .strategies import STRATEGIES as _LIBRARY
from .strategies import constant, make

__all__ = ["STRATEGIES", "Result", "Run", "simulate", "simulate_once"]

HOP_MEAN, HOP_SD = 10.0, 2.0  # ms, one way
DEFAULT_CLIENTS = tuple(range(10, 200, 10))
DEFAULT_STRATEGIES = ("exponential", "full_jitter", "equal_jitter", "decorrelated", "smooth_jitter")
RUNS_PER_TASK = 20  # runs summed by one task; the same whatever the number of jobs

Schedule = Callable[[float, float, random.Random], Iterator[float]]


def _study(name: str, base: float, cap: float, rng: random.Random) -> Iterator[float]:
    """Strategy *name* as the study makes it.  The study counts attempts from 1,
    so a strategy's first wait is min(cap, 2·base), except decorrelated's,
    which starts from base (its first wait lies in [base, 3·base])."""
    scale = 1.0 if name == "decorrelated" else 2.0
    return make(name, base=scale * base, cap=cap, rng=rng)


#: The strategies of the study, by name: every strategy of the library, made
#: from the study's base and cap, and ``"none"`` (retry at once).
STRATEGIES: dict[str, Schedule] = {
    "none": lambda base, cap, rng: constant(0.0),
    **{name: partial(_study, name) for name in _LIBRARY},
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
    make_schedule = _strategy(strategy)
    _checks.count("clients", clients, minimum=1)
    base, cap = _base_and_cap(base, cap)
    return _run(make_schedule, clients, rng, base, cap)


def _base_and_cap(base: object, cap: object) -> tuple[float, float]:
    """The study's base and cap (ms), checked as the user gave them."""
    checked = _checks.seconds("base", base)
    if not math.isfinite(2.0 * checked):  # the study waits 2·base at first
        raise _checks.ArgumentValueError(
            "base", f"base must be at most {_checks.FLOAT_MAX / 2:g}, got {base!r}"
        )
    return checked, _checks.seconds("cap", cap, infinite=True)


def _run(make_schedule: Schedule, clients: int, rng: random.Random, base: float, cap: float) -> Run:
    gauss = rng.gauss
    # (time the message reaches the server, client, kind, version it carries)
    events: list[tuple[float, int, int, int]] = [
        (abs(gauss(HOP_MEAN, HOP_SD)), client, _READ, 0) for client in range(clients)
    ]
    heapq.heapify(events)
    push, pop = heapq.heappush, heapq.heappop
    schedules: dict[int, Iterator[float]] = {}
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
            schedule = schedules[client] = make_schedule(base, cap, rng)
        backoff = next(schedule)
        push(events, (reply + abs(gauss(HOP_MEAN, HOP_SD)) + backoff, client, _READ, 0))
    return Run(writes, last_success, version)


class _Task(NamedTuple):
    """Runs start..stop of one (strategy, clients) cell: each run seeded on its own."""

    strategy: str
    clients: int
    start: int
    stop: int
    seed: int | None
    base: float
    cap: float

    def __call__(self) -> tuple[float, float]:
        make_schedule = STRATEGIES[self.strategy]
        work = time = 0.0
        for number in range(self.start, self.stop):
            seed = (
                None
                if self.seed is None
                else f"{self.seed}/{self.strategy}/{self.clients}/{number}"
            )
            run = _run(make_schedule, self.clients, random.Random(seed), self.base, self.cap)
            work += run.work
            time += run.time
        return work, time


def _do(task: _Task) -> tuple[float, float]:
    return task()


def _quiet_worker() -> None:
    """Workers leave Ctrl-C to the parent, which stops them."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def simulate(
    strategies: Iterable[str] | None = None,
    clients: Iterable[int] = DEFAULT_CLIENTS,
    runs: int = 100,
    *,
    seed: int | None = None,
    base: float = 5.0,
    cap: float = 2000.0,
    jobs: int = 1,
    progress: Callable[[int, int], object] | None = None,
) -> list[Result]:
    """Mean work and time for each strategy and client count, over *runs* runs.

    *strategies* are names from :data:`STRATEGIES` (default: five strategies
    of the library, without ``"none"``).  With a *seed* the results repeat
    exactly: each run has its own stream, so asking for fewer strategies,
    or running on more *jobs* (processes), gives the same figures.
    *progress(runs_done, runs_total)* is called as runs finish.

    >>> rows = simulate(["exponential", "full_jitter"], clients=[5], runs=10, seed=7)
    >>> [(r.strategy, r.clients) for r in rows]
    [('exponential', 5), ('full_jitter', 5)]
    >>> rows == simulate(["exponential", "full_jitter"], clients=[5], runs=10, seed=7)
    True
    """
    names = list(DEFAULT_STRATEGIES if strategies is None else strategies)
    for name in names:
        _strategy(name, "strategies")
    counts = [_checks.count("clients", n, minimum=1) for n in clients]
    if not names:
        raise _checks.ArgumentValueError("strategies", "strategies must name at least one strategy")
    if not counts:
        raise _checks.ArgumentValueError("clients", "clients must name at least one count")
    _checks.count("runs", runs, minimum=1)
    base, cap = _base_and_cap(base, cap)
    _checks.count("jobs", jobs, minimum=1)
    if progress is not None:
        _checks.function("progress", progress)
    cells = [(name, n) for name in names for n in counts]
    tasks = (
        _Task(name, n, start, min(runs, start + RUNS_PER_TASK), seed, base, cap)
        for name, n in cells
        for start in range(0, runs, RUNS_PER_TASK)
    )
    sums = {cell: [0.0, 0.0] for cell in cells}
    total, done = runs * len(cells), 0

    def add(task: _Task, figures: tuple[float, float]) -> None:
        nonlocal done
        cell = sums[task.strategy, task.clients]
        cell[0] += figures[0]
        cell[1] += figures[1]
        done += task.stop - task.start
        if progress is not None:
            progress(done, total)

    if jobs == 1:
        for task in tasks:
            add(task, task())
    else:
        _in_processes(tasks, jobs, add)
    return [Result(name, n, sums[name, n][0] / runs, sums[name, n][1] / runs) for name, n in cells]


def _in_processes(
    tasks: Iterable[_Task], jobs: int, add: Callable[[_Task, tuple[float, float]], None]
) -> None:
    """Run *tasks* on *jobs* processes, handing results to *add* in the tasks'
    order (so the sums are the floats one process gets), a few tasks ahead."""
    import multiprocessing
    from collections import deque
    from multiprocessing.pool import AsyncResult

    pool = multiprocessing.get_context("spawn").Pool(jobs, initializer=_quiet_worker)
    try:
        pending: deque[tuple[_Task, AsyncResult[tuple[float, float]]]] = deque()
        for task in tasks:
            pending.append((task, pool.apply_async(_do, (task,))))
            if len(pending) >= 4 * jobs:
                first, result = pending.popleft()
                add(first, result.get())
        while pending:
            first, result = pending.popleft()
            add(first, result.get())
    finally:
        pool.terminate()
        pool.join()


def _strategy(name: str, parameter: str = "strategy") -> Schedule:
    try:
        return STRATEGIES[name]
    except (KeyError, TypeError):
        raise _checks.ArgumentValueError(
            parameter, f"{parameter} must be among {', '.join(STRATEGIES)}, got {name!r}"
        ) from None
