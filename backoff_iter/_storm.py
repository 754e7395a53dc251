"""The overload simulator's event loop: one run's clients, server and events in simulated time.

:func:`~backoff_iter.overload.simulate_overload` checks the run's options
and reads its figures; a :class:`_Storm` is the run itself, one loop that
takes each event in turn.  Every client decision is the library's own retry
core (``Call.admit`` and ``Call.decide``) on the simulated clock.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from ._core import Call
from .breakers import BrokenCircuitError
from .throttles import ThrottledError

if TYPE_CHECKING:
    import random

    from ._options import Policy
    from .overload import _Model

_INF = math.inf
# The outcomes decide() is given, one instance each: nothing raises them.
_TIMEOUT: Exception = TimeoutError("no answer within the timeout")
_ERROR: Exception = ConnectionError("a transient error")
_REFUSED = (BrokenCircuitError, ThrottledError)
# Kinds of attempts due: one the breaker, throttle and limiter must admit
# first, and one that goes at once.
_DUE, _SEND = 0, 1


class _Storm:
    """One run: the clients, the server and the events between them, in simulated time.

    Three kinds of event, and :meth:`run` takes the earliest: a request
    **arrives** (arrivals are drawn one at a time, the next when this one
    comes, so nothing waits in a heap), an attempt's outcome **reaches its
    client** (told to its call, which may retry), and an attempt falls
    **due** (a retry after its delay, or an attempt the rate limiter made
    wait).  An attempt that goes out is **sent**: the server answers in
    time, too late, or with a transient error.  A storm runs once: a second
    :meth:`run` finds nothing left before the run's end.
    """

    __slots__ = (
        "now", "strategy", "budget", "policies", "clients", "quiet", "first", "seconds",
        "length", "arrivals", "sent", "goodput", "service", "timeout", "error_rate", "drop",
        "draw", "expovariate", "due", "outcomes", "free", "requests", "attempts", "succeeded",
        "failed", "unfinished", "phases", "rate", "boundary", "next_arrival", "progress",
        "report_every", "report_at",
    )  # fmt: skip

    def __init__(
        self,
        model: _Model,
        make_policies: Callable[[Callable[[], float]], list[Policy]],
        rng: random.Random,
        progress: Callable[[str, str, float], object] | None,
        strategy: str,
        budget: str,
    ) -> None:
        self.now = 0.0  # the simulated clock, started before any part reads it
        self.strategy, self.budget = strategy, budget  # what progress() is told
        self.policies = make_policies(self.clock)  # a policy per client, on this clock
        self.clients = len(self.policies)
        # Whether an attempt must be admitted first (a breaker, throttle or
        # limiter): the kind of a new request's first attempt; and whether a
        # success needs telling to anyone.
        plan = self.policies[0].plan
        self.first = _DUE if plan.guarded else _SEND
        self.quiet = plan.quiet
        self.seconds = model.seconds
        self.length = math.ceil(model.seconds)
        self.arrivals, self.sent, self.goodput = (
            [0] * self.length,
            [0] * self.length,
            [0] * self.length,
        )
        self.service, self.timeout = 1.0 / model.capacity, model.timeout
        self.error_rate, self.drop = model.error_rate, model.server == "drop-expired"
        self.draw, self.expovariate = rng.random, rng.expovariate
        # Attempts due later, by time: (time, request, kind, call).  No two
        # pending events share a request, so a tie never compares further.
        self.due: list[tuple[float, int, int, Call | None]] = [(_INF, -1, _SEND, None)]
        # Outcomes of attempts under way, (time, request, call, error or None
        # for a success), in time order in a deque: an attempt sent at s ends
        # at min(f, s + timeout), f being when the server answers it, and as
        # attempts go in time order to a FIFO server, both f and s + timeout
        # grow with s, and so does their minimum.  A dropped attempt ends at
        # s + timeout, before any later one starts; a transient error ends at
        # s, before anything pending: it goes first.
        self.outcomes: deque[tuple[float, int, Call | None, BaseException | None]] = deque()
        self.free = 0.0  # when the server is next idle
        self.requests = self.attempts = self.succeeded = self.failed = self.unfinished = 0
        # The arrival rate is piecewise constant: (rate, until) for each phase.
        self.phases = iter(
            [
                (model.rate, min(model.seconds, model.spike_at)),
                (model.rate * model.spike, min(model.seconds, model.spike_at + model.spike_for)),
                (model.rate, model.seconds),
            ]
        )
        self.rate = self.boundary = 0.0
        self.next_arrival = self._arrival_past_boundary()
        self.progress = progress
        self.report_every = max(1.0, model.seconds / 100)
        self.report_at = 0.0 if progress is not None else _INF  # first at the first arrival

    def clock(self) -> float:
        """The simulated time: the clock of every policy and part."""
        return self.now

    def run(self) -> None:
        """Every event before the run's end (*seconds*), earliest first.

        A request still under way at the end - its attempt queued at the
        server or unanswered, its retry or its rate limiter's wait not yet
        over - is unfinished: neither a success nor a failure, and what it
        would do later is not simulated (a limiter's backlog would otherwise
        go on for minutes and count as successes of the run).

        One loop, each event's handling inline below it: the run's state is
        held in local names while it goes (a method call and the attribute
        reads of one per event cost more than the simulator's own arithmetic).
        """
        outcomes, due = self.outcomes, self.due
        settled, pop, push = outcomes.popleft, heapq.heappop, heapq.heappush
        quiet, first, policies, clients = self.quiet, self.first, self.policies, self.clients
        # The series count what happens before the run's end (seconds, not the end of its
        # last second): a last part second's arrivals set against a whole second's attempts
        # and successes would be a share of two lengths of time.
        arrivals, sent, goodput, seconds = self.arrivals, self.sent, self.goodput, self.seconds
        draw, error_rate, log = self.draw, self.error_rate, math.log
        service, timeout, drop = self.service, self.timeout, self.drop
        free, rate, boundary = self.free, self.rate, self.boundary
        requests, attempts, succeeded, failed = (
            self.requests,
            self.attempts,
            self.succeeded,
            self.failed,
        )
        arrival, report_at = self.next_arrival, self.report_at
        # A quiet client's requests whose end, decided at once, comes after the run's (the
        # unfinished ones not in a queue; 0 unless the storm ran before).
        late = self.unfinished - len(outcomes) - (len(due) - 1)
        while True:
            upcoming = outcomes[0][0] if outcomes else _INF
            later = due[0][0]
            if arrival <= upcoming and arrival <= later:
                # A request arrives: the next arrival is drawn, its client's call
                # made (if anything will hear of it), and its first attempt goes.
                if arrival == _INF:  # (arrivals come before the end, or never)
                    break
                self.now = now = arrival
                request = requests
                requests += 1
                arrivals[int(now)] += 1
                # The next arrival: expovariate(rate) as random.py draws it, -log(1 -
                # random()) / rate (Python 3.9 to 3.13), without the method's call.
                arrival = now - log(1.0 - draw()) / rate
                if arrival >= boundary:
                    arrival = self._arrival_past_boundary()
                    rate, boundary = self.rate, self.boundary
                if now >= report_at:
                    self.progress(self.strategy, self.budget, now / seconds)  # type: ignore[misc]
                    report_at = now + self.report_every
                call = None
                if not quiet:
                    policy = policies[int(draw() * clients) if clients > 1 else 0]
                    call = Call(policy, now, process_hooks=False)
                kind = first
            elif upcoming <= later:
                # An attempt's outcome reaches its client, whose call decides
                # (a success comes here only when someone needs telling).
                if upcoming >= seconds:  # the run is over: the rest is unfinished
                    break
                now, request, call, error = settled()
                self.now = now
                if error is None:  # a success
                    succeeded += 1
                    goodput[int(now)] += 1
                    call.decide(None, None, None)  # type: ignore[union-attr]
                    continue
                delay = call.decide(None, error, None)  # type: ignore[union-attr]
                if delay is None:
                    failed += 1
                else:
                    push(due, (now + delay, request, first, call))
                continue
            else:
                # A retry after its delay, or an attempt after the rate limiter's wait.
                if later >= seconds:  # the run is over: the rest is unfinished
                    break
                now, request, kind, call = pop(due)
                self.now = now
            # A new request's first attempt, or one due: admitted first if it must be.
            if kind == _DUE:
                # The breaker and throttle may refuse the attempt (the request
                # fails, never sent); the rate limiter may make it wait (its
                # sleep is _no_sleep: the wait is an event).
                try:
                    wait = call.admit()  # type: ignore[union-attr]
                except _REFUSED:
                    failed += 1
                    continue
                if wait:
                    push(due, (now + wait, request, _SEND, call))
                    continue
            # The attempt is sent: a transient error at once, an answer in
            # time, or none within the timeout (too late, or dropped unserved).
            attempts += 1
            sent[int(now)] += 1
            if draw() < error_rate:  # a transient error, at once
                error, ends = _ERROR, now
            else:
                start = free if free > now else now
                deadline = now + timeout
                if drop and start >= deadline:  # the client has gone: dropped, no work done
                    error, ends = _TIMEOUT, deadline
                else:
                    free = start + service
                    if free <= deadline:  # answered in time
                        if quiet:  # nothing to tell: counted at once, if before the end
                            if free < seconds:
                                succeeded += 1
                                goodput[int(free)] += 1
                            else:
                                late += 1
                        else:
                            outcomes.append((free, request, call, None))
                        continue
                    error, ends = _TIMEOUT, deadline  # the answer would come too late
            if not quiet:
                if ends == now:  # before anything pending
                    outcomes.appendleft((now, request, call, error))
                else:
                    outcomes.append((ends, request, call, error))
                continue
            # Nothing else hears of a quiet client's failure: it decides at once.
            if call is None:
                call = Call(policies[0], now, process_hooks=False)  # as @retry makes it after a try
            delay = call.decide(None, error, None)
            if delay is None:
                if ends < seconds:  # else unfinished at the end, as a retry after it is
                    failed += 1
                else:
                    late += 1
            else:
                push(due, (ends + delay, request, _SEND, call))
        # The run's state, as it ends (the counts are what its figures read).
        self.free, self.next_arrival, self.report_at = free, arrival, report_at
        self.requests, self.attempts = requests, attempts
        self.succeeded, self.failed = succeeded, failed
        # Under way at the end: an outcome or an attempt due each (the heap's last is inf's).
        self.unfinished = late + len(outcomes) + len(due) - 1

    def _arrival_past_boundary(self) -> float:
        """The first arrival after the rate changes (a memoryless process
        draws afresh from the change, at the new rate); inf after the last."""
        arrival = boundary = self.boundary
        while arrival >= boundary:
            start = boundary
            phase = next(self.phases, None)
            if phase is None:
                return _INF
            self.rate, boundary = phase
            self.boundary = boundary
            arrival = start + self.expovariate(self.rate)
        return arrival
