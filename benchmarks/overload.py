"""Simulated attempts per second of the overload simulator, against a plain
``heapq`` loop of the same model written here the obvious way.

The reference is the model with full jitter and no budget, spelled out: a
heap of (time, kind, request, attempt) events, one FIFO server, timeouts,
transient errors, ``uniform(0, min(cap, base * 2**n))`` backoff.
"""

from __future__ import annotations

import heapq
import math
import random
import time

from backoff_iter.overload import simulate_overload


def reference(rate: float, capacity: float, seconds: float, seed: int) -> int:
    """The model, hand-written, with the same per-second figures; returns the
    attempts it simulated."""
    rng = random.Random(seed)
    length = math.ceil(seconds)
    arrivals, sent, goodput = [0] * length, [0] * length, [0] * length
    timeout, error_rate, retries, base, cap = 1.0, 0.01, 3, 0.05, 5.0
    spike_at, spike_for, spike = 10.0, 10.0, 2.0
    events: list[tuple[float, int, int, int]] = []  # (time, kind, request, attempt)
    now, request, free, attempts = 0.0, 0, 0.0, 0
    while now < seconds:  # all arrivals first: the heap orders them
        spiking = spike_at <= now < spike_at + spike_for
        now += rng.expovariate(rate * (spike if spiking else 1.0))
        if now < seconds:
            heapq.heappush(events, (now, 0, request, 0))
            arrivals[int(now)] += 1
            request += 1
    while events:
        now, kind, request, attempt = heapq.heappop(events)
        if kind == 0:  # an attempt is sent
            attempts += 1
            if now < length:
                sent[int(now)] += 1
            if rng.random() < error_rate:
                heapq.heappush(events, (now, 2, request, attempt))
                continue
            free = max(free, now) + 1.0 / capacity
            if free - now > timeout:
                heapq.heappush(events, (now + timeout, 2, request, attempt))
            else:
                heapq.heappush(events, (free, 1, request, attempt))
        elif kind == 1:  # a success
            if now < length:
                goodput[int(now)] += 1
        elif kind == 2 and attempt < retries:  # a failure, retried
            window = min(cap, base * 2.0**attempt)
            heapq.heappush(events, (now + rng.uniform(0, window), 0, request, attempt + 1))
    return attempts


def attempts_per_second(seconds: float, repeats: int) -> dict[str, float]:
    """Simulated attempts per second of wall time, best of *repeats*, both ways."""
    best = {"backoff_iter overload": 0.0, "plain heapq loop": 0.0}
    for _ in range(repeats):
        started = time.perf_counter()
        [run] = simulate_overload(["full_jitter"], ["none"], seconds=seconds, seed=1)
        ours = run.attempts / (time.perf_counter() - started)
        started = time.perf_counter()
        theirs = reference(800.0, 1000.0, seconds, 1) / (time.perf_counter() - started)
        best["backoff_iter overload"] = max(best["backoff_iter overload"], ours)
        best["plain heapq loop"] = max(best["plain heapq loop"], theirs)
    assert all(math.isfinite(v) for v in best.values())
    return best
