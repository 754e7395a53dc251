"""The overload simulator's speed: simulated attempts per second of process
time against a plain ``heapq`` event loop of the same storm, written here
the fast way, and how its cost grows with clients and seconds.

The reference is the default storm with full jitter and no budget, spelled
out: arrivals drawn one at a time (the next when this one comes, so the
heap holds only what is pending), one FIFO server, timeouts, transient
errors, ``uniform(0, min(cap, base * 2**n))`` backoff.  The simulator runs
the library's own retry core for every failed request; the loop does the
arithmetic inline.
"""

from __future__ import annotations

import heapq
import math
import random
import time

from backoff_iter.overload import simulate_overload

GOAL = 1.0  # at least as fast as the plain loop (issue 28)


def reference(rate: float, capacity: float, seconds: float, seed: int) -> int:
    """The storm, hand-written, with the same per-second figures; returns the
    attempts it simulated."""
    rng = random.Random(seed)
    length = math.ceil(seconds)
    arrivals, sent, goodput = [0] * length, [0] * length, [0] * length
    timeout, error_rate, retries, base, cap = 1.0, 0.01, 3, 0.05, 5.0
    spike_at, spike_for, spike = 10.0, 10.0, 2.0
    push, pop, expovariate = heapq.heappush, heapq.heappop, rng.expovariate
    # (time, kind, request, retries so far): kinds 0 an attempt, 1 a success,
    # 2 a failure, 3 an arrival (whose first attempt goes at once).
    events = [(expovariate(rate), 3, 0, 0)]
    free, attempts, requests = 0.0, 0, 0
    while events:
        now, kind, request, attempt = pop(events)
        if now >= seconds:  # the run's end: what is under way is unfinished, as there
            break
        if kind == 3:
            arrivals[int(now)] += 1
            requests += 1
            spiking = spike_at <= now < spike_at + spike_for
            push(events, (now + expovariate(rate * spike if spiking else rate), 3, requests, 0))
            kind = 0
        if kind == 0:
            attempts += 1
            if now < length:
                sent[int(now)] += 1
            if rng.random() < error_rate:
                kind = 2
            else:
                free = (free if free > now else now) + 1.0 / capacity
                if free - now > timeout:
                    push(events, (now + timeout, 2, request, attempt))
                else:
                    push(events, (free, 1, request, attempt))
                continue
        if kind == 1:
            if now < length:
                goodput[int(now)] += 1
        elif kind == 2 and attempt < retries:
            window = min(cap, base * 2.0**attempt)
            push(events, (now + rng.uniform(0, window), 0, request, attempt + 1))
    return attempts


def attempts_per_second(seconds: float, repeats: int) -> dict[str, float]:
    """Simulated attempts per second of process time, best of *repeats*, the
    two interleaved."""
    best = {"backoff_iter overload": 0.0, "plain heapq loop": 0.0}
    for _ in range(repeats):
        started = time.process_time()
        [run] = simulate_overload(["full_jitter"], ["none"], seconds=seconds, seed=1)
        ours = run.attempts / (time.process_time() - started)
        started = time.process_time()
        theirs = reference(800.0, 1000.0, seconds, 1) / (time.process_time() - started)
        best["backoff_iter overload"] = max(best["backoff_iter overload"], ours)
        best["plain heapq loop"] = max(best["plain heapq loop"], theirs)
    assert all(math.isfinite(v) for v in best.values())
    return best


def scaling(quick: bool) -> list[tuple[int, float, str, int, float]]:
    """(clients, seconds, budgets, attempts, microseconds of process time per
    attempt) for a run at each size: a flat cost per attempt is a cost linear
    in clients x seconds (the attempts grow with the seconds, the policies
    with the clients)."""
    sizes = (
        [(1, 5.0), (1, 10.0), (100, 5.0), (1_000, 5.0)]
        if quick
        else [(1, 30.0), (1, 60.0), (1, 120.0), (100, 60.0), (1_000, 60.0), (10_000, 60.0)]
    )
    rows = []
    for clients, seconds in sizes:
        started = time.process_time()
        [run] = simulate_overload(
            ["full_jitter"], ["token_bucket"], seconds=seconds, clients=clients, seed=1
        )
        spent = time.process_time() - started
        rows.append((clients, seconds, "token_bucket", run.attempts, spent / run.attempts * 1e6))
    return rows
