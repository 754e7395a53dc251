"""Per-delay cost of each strategy: ours, the hand-written limit, every peer.

Each contender is a zero-argument "maker" returning a fresh iterator of
delays for one configuration (base 0.1 s, factor 2, cap 30 s; decorrelated
with factor 3).  Peers that have no such strategy are simply absent.
"""

from __future__ import annotations

import functools
import math
import random
import time
import tracemalloc
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import islice
from types import SimpleNamespace
from typing import Callable

from timing import consume, ns_per_value

import backoff_iter

BASE, CAP = 0.1, 30.0
Maker = Callable[[], Iterator[float]]


# -- the hand-written references: the fastest obvious inline generators ------


def reference_constant(base: float, cap: float) -> Iterator[float]:
    while True:
        yield base


def reference_linear(base: float, cap: float) -> Iterator[float]:
    attempt = 0
    while True:
        delay = base + base * attempt
        if delay >= cap:
            break
        yield delay
        attempt += 1
    while True:
        yield cap


def reference_exponential(base: float, cap: float) -> Iterator[float]:
    delay = base
    while delay < cap:
        yield delay
        delay *= 2
    while True:
        yield cap


def reference_fibonacci(base: float, cap: float) -> Iterator[float]:
    previous, delay = 0.0, base
    while delay < cap:
        yield delay
        previous, delay = delay, previous + delay
    while True:
        yield cap


def reference_full_jitter(base: float, cap: float) -> Iterator[float]:
    draw = random.random
    delay = base
    while delay < cap:
        yield draw() * delay
        delay *= 2
    while True:
        yield draw() * cap


def reference_equal_jitter(base: float, cap: float) -> Iterator[float]:
    draw = random.random
    delay = base
    while delay < cap:
        half = delay / 2
        yield half + draw() * half
        delay *= 2
    half = cap / 2
    while True:
        yield half + draw() * half


def reference_decorrelated(base: float, cap: float) -> Iterator[float]:
    draw = random.random
    sleep = base
    while True:
        sleep = base + draw() * (sleep * 3 - base)
        if sleep > cap:
            sleep = cap
        yield sleep


def reference_smooth_jitter(base: float, cap: float) -> Iterator[float]:
    """Polly's decorrelated jitter V2, inline (no overflow care: the cap comes first)."""
    draw, tanh, sqrt = random.random, math.tanh, math.sqrt
    previous, attempt = 0.0, 0
    while True:
        t = attempt + draw()
        current = 2.0**t * tanh(sqrt(4.0 * t))
        delay = (current - previous) * base / 1.4
        if delay >= cap:
            break
        yield delay
        previous = current
        attempt += 1
    while True:
        yield cap


# -- the peers' equivalents ---------------------------------------------------


def _per_attempt(wait: Callable[[object], float], start: int = 0) -> Iterator[float]:
    """A tenacity wait, called per attempt as tenacity does, as an iterator."""
    state = SimpleNamespace(attempt_number=start)
    while True:
        state.attempt_number += 1
        yield wait(state)


def peer_makers(cap: float) -> dict[str, dict[str, Maker]]:
    """strategy -> {peer name: maker}; peers that are not installed are left out."""
    peers: dict[str, dict[str, Maker]] = {
        "exponential": {},
        "full_jitter": {},
        "equal_jitter": {},
        "decorrelated": {},
    }
    try:
        import backoff
    except ImportError:
        pass
    else:

        def backoff_expo() -> Iterator[float]:
            values = backoff.expo(base=2, factor=BASE, max_value=None if cap == math.inf else cap)
            next(values)  # backoff's generators must be primed
            return values

        peers["exponential"]["backoff"] = backoff_expo
        peers["full_jitter"]["backoff"] = lambda: map(backoff.full_jitter, backoff_expo())
    try:
        import tenacity
    except ImportError:
        pass
    else:
        tenacity_cap = tenacity.wait.wait_exponential(multiplier=BASE, max=cap)
        tenacity_random = tenacity.wait.wait_random_exponential(multiplier=BASE, max=cap)
        for strategy, wait in (("exponential", tenacity_cap), ("full_jitter", tenacity_random)):
            make = functools.partial(_per_attempt, wait)
            # tenacity computes each wait from the attempt number: it can
            # start at any attempt, so the flat-cost check need not iterate.
            make.starting_at = functools.partial(_per_attempt, wait)  # type: ignore[attr-defined]
            peers[strategy]["tenacity"] = make
    try:
        from google.api_core.retry import exponential_sleep_generator
    except ImportError:
        pass
    else:
        peers["full_jitter"]["google-api-core"] = lambda: exponential_sleep_generator(BASE, cap, 2)
    return peers


def our_makers(cap: float) -> dict[str, Maker]:
    """Every strategy of the registry, base 0.1 s and *cap*, with its defaults."""
    return {
        "constant": lambda: backoff_iter.constant(BASE),
        "linear": lambda: backoff_iter.linear(BASE, cap=cap),
        "exponential": lambda: backoff_iter.exponential(BASE, cap=cap),
        "fibonacci": lambda: backoff_iter.fibonacci(BASE, cap=cap),
        "full_jitter": lambda: backoff_iter.full_jitter(BASE, cap),
        "equal_jitter": lambda: backoff_iter.equal_jitter(BASE, cap),
        "decorrelated": lambda: backoff_iter.decorrelated(BASE, cap),
        "smooth_jitter": lambda: backoff_iter.smooth_jitter(BASE, cap),
    }


REFERENCES: dict[str, Callable[[float, float], Iterator[float]]] = {
    "constant": reference_constant,
    "linear": reference_linear,
    "exponential": reference_exponential,
    "fibonacci": reference_fibonacci,
    "full_jitter": reference_full_jitter,
    "equal_jitter": reference_equal_jitter,
    "decorrelated": reference_decorrelated,
    "smooth_jitter": reference_smooth_jitter,
}


def hand_makers(cap: float) -> dict[str, Maker]:
    """The hand-written generator of each strategy, made as ours are."""
    return {name: functools.partial(reference, BASE, cap) for name, reference in REFERENCES.items()}


# -- measurements --------------------------------------------------------------


@dataclass
class Row:
    strategy: str
    ours: float
    reference: float
    peers: dict[str, float] = field(default_factory=dict)

    @property
    def to_reference(self) -> float:
        return self.ours / self.reference

    @property
    def best_peer(self) -> str | None:
        return min(self.peers, key=self.peers.__getitem__) if self.peers else None


def per_value(values: int, repeats: int) -> list[Row]:
    """ns per value, capped schedules, for ours, the reference and each peer."""
    rows = []
    peers = peer_makers(CAP)
    references = hand_makers(CAP)
    for strategy, ours in our_makers(CAP).items():
        row = Row(
            strategy,
            ns_per_value(ours, values, repeats),
            ns_per_value(references[strategy], values, repeats),
        )
        for peer, make in peers.get(strategy, {}).items():
            row.peers[peer] = ns_per_value(make, values, repeats)
        rows.append(row)
    return rows


@dataclass
class FarRow:
    name: str
    near: float  # ns per value around value 10
    far: float | None  # ns per value around value `far_index`, None if not reached
    note: str


def _window(values: Iterator[float], window: int, budget_ns: float) -> float:
    """ns per value over the next *window* values, a growing chunk at a time,
    so a contender whose values grow costly (giant integers) is stopped by the
    budget rather than waited for."""
    start, taken, chunk = time.perf_counter_ns(), 0, 1
    while taken < window and time.perf_counter_ns() - start < budget_ns:
        consume(values, chunk)
        taken += chunk
        chunk = min(chunk * 10, window - taken)
    return (time.perf_counter_ns() - start) / taken


def _far_cost(make: Maker, far_index: int, budget: float, window: int, repeats: int) -> FarRow:
    """Best ns per value near value 10 and near value *far_index* (uncapped)."""
    budget_ns = budget * 1e9
    near = min(_window(islice(make(), 10, None), window, budget_ns) for _ in range(repeats))
    values = make()
    reached = 0
    jump = getattr(make, "starting_at", None)
    if jump is not None:  # computed per attempt: go straight there
        values, reached = jump(far_index), far_index
    deadline = time.perf_counter() + budget
    step = 0
    try:
        while reached < far_index:
            if time.perf_counter() > deadline:
                return FarRow(
                    "", near, None, f"slows down: only value {reached:,} after {budget:g} s"
                )
            step = min(10 * step or 10, 10_000, far_index - reached)  # small steps first
            consume(values, step)
            reached += step
        far = _window(values, window, budget_ns)
        for _ in range(repeats - 1):  # the values stay far out: flat cost is flat
            if far * window > budget_ns / repeats:
                break
            far = min(far, _window(values, window, budget_ns))
    except OverflowError as error:
        where = f"between values {reached:,} and {reached + step:,}"
        return FarRow("", near, None, f"OverflowError {where}: {error}")
    last = next(values)
    note = f"value {far_index:,} and on: {last!r}"
    if far > 3 * near:
        note = f"slows down ({far / near:,.0f}x); {note}"
    return FarRow("", near, far, note)


def contenders(cap: float) -> dict[str, Maker]:
    """Ours and every installed peer's strategies, by "library strategy"."""
    makers: dict[str, Maker] = {
        f"backoff_iter {name}": make for name, make in our_makers(cap).items()
    }
    for strategy, peers in peer_makers(cap).items():
        for peer, make in peers.items():
            makers[f"{peer} {strategy}"] = make
    return makers


def flat_cost(far_index: int, budget: float, repeats: int, window: int = 1000) -> list[FarRow]:
    """Value 10 against value *far_index*, without a cap, for everyone."""
    rows = []
    for name, make in contenders(math.inf).items():
        row = _far_cost(make, far_index, budget, window, repeats)
        row.name = name
        rows.append(row)
    return rows


def peak_memory(values: int) -> dict[str, int]:
    """Peak bytes allocated while drawing *values* delays (capped schedules)."""
    peaks = {}
    for name, make in contenders(CAP).items():
        values_iter = make()
        next(values_iter)  # import-time and first-call allocations are not the point
        tracemalloc.start()
        try:
            consume(islice(values_iter, values), values)
            peaks[name] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    return peaks


__all__ = ["flat_cost", "peak_memory", "per_value"]
