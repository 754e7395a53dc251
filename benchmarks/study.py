"""Seconds the contention study takes, on one process and on two, against the
plain model loop written the obvious way.

The reference is the model as ``simulation.py`` first wrote it: a heap of
(time, client, kind, version) events, ``abs(rng.gauss(10, 2))`` for every
hop, each client's strategy made with ``strategies.make``.  It runs the same
seeds and sums the same tasks in the same order, so it gives the very same
floats: :func:`study_seconds` checks that before it reports a time.
"""

from __future__ import annotations

import heapq
import random
import time
from collections.abc import Iterator, Sequence

from backoff_iter.simulation import (
    DEFAULT_CLIENTS,
    DEFAULT_STRATEGIES,
    RUNS_PER_TASK,
    Result,
    Run,
    simulate,
)
from backoff_iter.strategies import constant, make

SEED = 2026


def reference_run(
    strategy: str, clients: int, rng: random.Random, base: float = 5.0, cap: float = 2000.0
) -> Run:
    """One run of the model, plainly: ``rng.gauss`` for each hop, in event order."""
    read, write = 0, 1

    def new_schedule() -> Iterator[float]:
        if strategy == "none":
            return constant(0.0)
        scale = 1.0 if strategy == "decorrelated" else 2.0
        return make(strategy, base=scale * base, cap=cap, rng=rng)

    events = [(abs(rng.gauss(10.0, 2.0)), client, read, 0) for client in range(clients)]
    heapq.heapify(events)
    schedules: dict[int, Iterator[float]] = {}
    version = writes = 0
    last_success = 0.0
    while events:
        now, client, kind, carried = heapq.heappop(events)
        if kind == read:
            arrival = now + abs(rng.gauss(10.0, 2.0)) + abs(rng.gauss(10.0, 2.0))
            heapq.heappush(events, (arrival, client, write, version))
            continue
        writes += 1
        reply = now + abs(rng.gauss(10.0, 2.0))
        if carried == version:
            version += 1
            last_success = max(last_success, reply)
            continue
        if client not in schedules:
            schedules[client] = new_schedule()
        backoff = next(schedules[client])
        arrival = reply + abs(rng.gauss(10.0, 2.0)) + backoff
        heapq.heappush(events, (arrival, client, read, 0))
    return Run(writes, last_success, version)


def reference_study(
    strategies: Sequence[str], clients: Sequence[int], runs: int, seed: int
) -> list[Result]:
    """simulate() with the plain loop, in one process: each run seeded on its
    own, runs summed by tasks of RUNS_PER_TASK, tasks summed in order."""
    results = []
    for name in strategies:
        for n in clients:
            work = spent = 0.0
            for start in range(0, runs, RUNS_PER_TASK):
                task_work = task_time = 0.0
                for number in range(start, min(runs, start + RUNS_PER_TASK)):
                    run = reference_run(name, n, random.Random(f"{seed}/{name}/{n}/{number}"))
                    task_work += run.work
                    task_time += run.time
                work += task_work
                spent += task_time
            results.append(Result(name, n, work / runs, spent / runs))
    return results


def _nothing(_: int) -> None:
    return None


def spawn_seconds(processes: int) -> float:
    """Seconds to start *processes* spawned workers (as simulate() does), have
    each answer once, and stop them."""
    import multiprocessing

    started = time.perf_counter()
    pool = multiprocessing.get_context("spawn").Pool(processes)
    try:
        pool.map(_nothing, range(processes), chunksize=1)
    finally:
        pool.terminate()
        pool.join()
    return time.perf_counter() - started


def study_seconds(quick: bool) -> dict[str, float]:
    """Wall seconds of the study on the reference loop, on 1 job and on 2 jobs,
    and of starting 2 processes.  The default study in full mode (seed 2026);
    a small one (10 to 50 clients, 20 runs) in quick mode."""
    clients = (10, 30, 50) if quick else DEFAULT_CLIENTS
    runs = 20 if quick else 100
    times = {}
    started = time.perf_counter()
    expected = reference_study(DEFAULT_STRATEGIES, clients, runs, SEED)
    times["reference"] = time.perf_counter() - started
    for jobs in (1, 2):
        started = time.perf_counter()
        got = simulate(clients=clients, runs=runs, seed=SEED, jobs=jobs)
        times[f"{jobs} jobs"] = time.perf_counter() - started
        if got != expected:  # the same figures, or the times compare nothing
            raise AssertionError(f"jobs={jobs} differs from the reference loop")
    times["spawn 2"] = spawn_seconds(2)
    return times
