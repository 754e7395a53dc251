"""A retry storm, second by second: an overloaded server, clients that retry,
and the budgets that cure it.  A discrete-event model anyone can check by hand.

Time is in seconds.  Requests arrive as a Poisson process at *rate* per
second, multiplied by *spike* from *spike_at* for *spike_for* seconds.  One
server serves attempts first come, first served, each taking exactly
``1 / capacity`` seconds, and serves every attempt it received, even one
whose client has stopped waiting: that wasted work is what makes overload
last.  An attempt fails when its answer would come later than *timeout*
after it was sent (the client stops waiting then) and, independently, with
probability *error_rate* (a transient error, answered at once, costing the
server nothing).  A failed attempt is retried after the next delay of the
request's own generator of *strategy* (``base``, ``cap``), up to *retries*
times, if the run's shared budget allows; then the request has failed.

Arrivals stop after *seconds*; the requests still under way then run to
their end, so every request either succeeds or fails.

>>> [run] = simulate_overload(["full_jitter"], ["token_bucket"], rate=80,
...                           capacity=100, seconds=30, seed=1)
>>> run.requests == run.series["arrivals"][0] + sum(run.series["arrivals"][1:])
True
>>> run.attempts <= run.requests * 4
True
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

from . import _checks
from .budgets import Budget, RetryBudget, TokenBucket
from .strategies import STRATEGIES, maker

__all__ = ["BUDGETS", "OverloadRun", "simulate_overload"]

#: The budgets a run can share among its clients, by name; each is made with
#: the run's simulated clock.
BUDGETS: dict[str, Callable[[Callable[[], float]], Budget | None]] = {
    "none": lambda clock: None,
    "token_bucket": lambda clock: TokenBucket(),
    "retry_budget": lambda clock: RetryBudget(clock=clock),
}

# Figures of a run that read its series.
LAST_SECONDS = 20  # goodput over the last 20 s
RECOVERED_SHARE = 0.9  # goodput at least 90% of the arrivals ...
RECOVERED_FOR = 5  # ... for 5 s in a row


class OverloadRun(NamedTuple):
    """One (strategy, budget) run; its ``_asdict()`` is the ``--json`` object."""

    strategy: str
    budget: str
    requests: int  #: requests that arrived
    attempts: int  #: attempts the clients sent
    amplification: float  #: attempts / requests
    succeeded: float  #: share of the requests that succeeded
    goodput_last_20s: float  #: successes in the last 20 s over the arrivals then
    recovery_seconds: float | None  #: after the spike, until goodput holds >= 90%; None: never
    series: dict[str, list[int]]  #: per second: arrivals, attempts, goodput


# Events on the heap: (time, kind, request, attempt number, schedule); a tie goes by
# kind, then request, which no two events of one request share.
_SEND, _SUCCESS, _FAILURE = 0, 1, 2


def simulate_overload(
    strategies: Iterable[str] = ("none", "full_jitter"),
    budgets: Iterable[str] = ("none", "token_bucket", "retry_budget"),
    *,
    rate: float = 800.0,
    capacity: float = 1000.0,
    spike: float = 2.0,
    spike_at: float = 10.0,
    spike_for: float = 10.0,
    timeout: float = 1.0,
    error_rate: float = 0.01,
    retries: int = 3,
    base: float = 0.05,
    cap: float = 5.0,
    seconds: float = 120.0,
    seed: int | None = None,
    progress: Callable[[str, str, float], object] | None = None,
) -> list[OverloadRun]:
    """Run every strategy with every budget; one :class:`OverloadRun` per pair.

    Strategies are the library's names plus ``"none"`` (no retries); budgets
    are the names of :data:`BUDGETS`, one shared object per run.  With a
    *seed* runs repeat exactly, each pair drawing from its own stream.
    *progress(strategy, budget, share_done)* is called as a run goes.
    """
    names = list(strategies)
    for name in names:
        if name != "none" and name not in STRATEGIES:
            raise _checks.ArgumentValueError(
                "strategies",
                f"strategies must be 'none' or one of {', '.join(STRATEGIES)}, got {name!r}",
            )
    kinds = list(budgets)
    for kind in kinds:
        if kind not in BUDGETS:
            raise _checks.ArgumentValueError(
                "budgets", f"budgets must be among {', '.join(BUDGETS)}, got {kind!r}"
            )
    if not names:
        raise _checks.ArgumentValueError("strategies", "strategies must name at least one strategy")
    if not kinds:
        raise _checks.ArgumentValueError("budgets", "budgets must name at least one budget")
    rate = _checks.positive("rate", rate)
    capacity = _checks.positive("capacity", capacity)
    spike = _checks.number("spike", spike)
    if not 1.0 <= spike < math.inf:
        raise _checks.ArgumentValueError(
            "spike", f"spike must be a finite number of at least 1, got {spike!r}"
        )
    spike_at = _checks.seconds("spike_at", spike_at)
    spike_for = _checks.seconds("spike_for", spike_for)
    timeout = _checks.positive("timeout", timeout)
    error_rate = _checks.number("error_rate", error_rate)
    if not 0.0 <= error_rate < 1.0:
        raise _checks.ArgumentValueError(
            "error_rate", f"error_rate must be in [0, 1), got {error_rate!r}"
        )
    retries = _checks.count("retries", retries)
    base = _checks.seconds("base", base)
    cap = _checks.seconds("cap", cap, infinite=True)
    seconds = _checks.positive("seconds", seconds)
    if seconds > 1e6:
        raise _checks.ArgumentValueError("seconds", f"seconds must be at most 1e6, got {seconds!r}")
    if progress is not None:
        _checks.function("progress", progress)
    model = _Model(
        rate, capacity, spike, spike_at, spike_for, timeout, error_rate, retries, base, cap, seconds
    )
    return [
        model.run(
            name, kind, random.Random(None if seed is None else f"{seed}/{name}/{kind}"), progress
        )
        for name in names
        for kind in kinds
    ]


class _Model(NamedTuple):
    rate: float
    capacity: float
    spike: float
    spike_at: float
    spike_for: float
    timeout: float
    error_rate: float
    retries: int
    base: float
    cap: float
    seconds: float

    def run(
        self,
        strategy: str,
        budget_name: str,
        rng: random.Random,
        progress: Callable[[str, str, float], object] | None,
    ) -> OverloadRun:
        now = 0.0
        budget = BUDGETS[budget_name](lambda: now)
        seconds = self.seconds
        length = math.ceil(seconds)
        arrivals, sent, goodput = [0] * length, [0] * length, [0] * length
        retries = 0 if strategy == "none" else self.retries
        fresh = (
            None if strategy == "none" else maker(strategy, base=self.base, cap=self.cap, rng=rng)
        )
        service = 1.0 / self.capacity
        timeout, error_rate = self.timeout, self.error_rate
        draw, expovariate = rng.random, rng.expovariate
        push, pop = heapq.heappush, heapq.heappop
        # (time, kind, request, attempt number, the request's schedule once it failed)
        events: list[tuple[float, int, int, int, Iterator[float] | None]] = []
        free = 0.0  # when the server is next idle
        requests = attempts = succeeded = failed = 0
        # The arrival rate is piecewise constant: (rate, until) for each phase.
        phases = iter(
            [
                (self.rate, self.spike_at),
                (self.rate * self.spike, self.spike_at + self.spike_for),
                (self.rate, math.inf),
            ]
        )
        rate = boundary = 0.0

        def arrival_past_boundary() -> float:
            """The first arrival after the rate changes: a memoryless process
            draws afresh from the change, at the new rate."""
            nonlocal rate, boundary
            arrival = boundary
            while arrival >= boundary:
                start, (rate, boundary) = boundary, next(phases)
                arrival = start + expovariate(rate)
            return arrival

        next_arrival = arrival_past_boundary()
        report_every = max(1.0, seconds / 100)
        report_at = report_every if progress is not None else math.inf
        while True:  # the next event, or the next arrival, whichever comes first
            if events and (events[0][0] <= next_arrival or next_arrival >= seconds):
                now, kind, request, number, schedule = pop(events)
            elif next_arrival < seconds:
                now, kind, request, number, schedule = next_arrival, _SEND, requests, 0, None
                requests += 1
                arrivals[int(now)] += 1
                next_arrival = now + expovariate(rate)
                if next_arrival >= boundary:
                    next_arrival = arrival_past_boundary()
            else:
                break
            if now >= report_at:
                progress(strategy, budget_name, min(1.0, now / seconds))  # type: ignore[misc]
                report_at = now + report_every
            if kind == _SEND:
                attempts += 1
                second = int(now)
                if second < length:
                    sent[second] += 1
                if draw() < error_rate:
                    push(events, (now, _FAILURE, request, number, schedule))
                    continue
                free = (free if free > now else now) + service
                if free - now > timeout:
                    push(events, (now + timeout, _FAILURE, request, number, schedule))
                    continue
                if budget is not None:  # the budget must hear of it in time order
                    push(events, (free, _SUCCESS, request, number, schedule))
                    continue
                now = free  # nothing else hears of a success: count it at once
            elif kind == _FAILURE:
                if budget is not None:
                    budget.record_failure(number == 0)
                if number < retries:
                    if schedule is None:  # its first failure: the request's own generator
                        schedule = fresh()  # type: ignore[misc]
                    delay = next(schedule)
                    if budget is None or budget.try_retry(None):
                        push(events, (now + delay, _SEND, request, number + 1, schedule))
                        continue
                failed += 1
                continue
            elif budget is not None:
                budget.record_success(number == 0)
            # A success, at `now`.
            succeeded += 1
            second = int(now)
            if second < length:
                goodput[second] += 1
        if progress is not None:
            progress(strategy, budget_name, 1.0)
        if succeeded + failed != requests:  # pragma: no cover - the model's own invariant
            raise AssertionError(f"{requests} requests, {succeeded} succeeded, {failed} failed")
        return self._figures(
            strategy, budget_name, requests, attempts, succeeded, arrivals, sent, goodput
        )

    def _figures(
        self,
        strategy: str,
        budget: str,
        requests: int,
        attempts: int,
        succeeded: int,
        arrivals: list[int],
        sent: list[int],
        goodput: list[int],
    ) -> OverloadRun:
        last = slice(max(0, len(arrivals) - LAST_SECONDS), None)
        arrived_last = sum(arrivals[last])
        recovery: float | None = None
        start = math.ceil(self.spike_at + self.spike_for)
        for second in range(start, len(arrivals) - RECOVERED_FOR + 1):
            window = range(second, second + RECOVERED_FOR)
            if all(goodput[s] >= RECOVERED_SHARE * arrivals[s] for s in window):
                recovery = float(second - start)
                break
        return OverloadRun(
            strategy=strategy,
            budget=budget,
            requests=requests,
            attempts=attempts,
            amplification=attempts / requests if requests else 0.0,
            succeeded=succeeded / requests if requests else 0.0,
            goodput_last_20s=sum(goodput[last]) / arrived_last if arrived_last else 0.0,
            recovery_seconds=recovery,
            series={"arrivals": arrivals, "attempts": sent, "goodput": goodput},
        )
