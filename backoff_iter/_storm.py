"""The overload simulator's event loop: one run's clients, server and events in simulated time.

:func:`~backoff_iter.overload.simulate_overload` checks the run's options
and reads its figures; a :class:`_Storm` is the run itself, each kind of
event with its handler.  Every client decision is the library's own retry
core (``Call.admit`` and ``Call.decide``) on the simulated clock.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

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

    Three kinds of event, each with its handler, and :meth:`run` takes the
    earliest: a request **arrives** (arrivals are drawn one at a time, the
    next when this one comes, so nothing waits in a heap), an attempt's
    outcome **reaches its client** (told to its call, which may retry), and
    an attempt falls **due** (a retry after its delay, or an attempt the rate
    limiter made wait).  An attempt that goes out is **sent**: the server
    answers in time, too late, or with a transient error.
    """

    __slots__ = (
        "now", "strategy", "budget", "policies", "policy", "clients", "guarded", "quiet",
        "first", "seconds", "length", "arrivals", "sent", "goodput", "service", "timeout",
        "error_rate", "drop", "draw", "expovariate", "due", "outcomes", "free", "requests",
        "attempts", "succeeded", "failed", "phases", "rate", "boundary", "next_arrival",
        "progress", "report_every", "report_at",
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
        self.policy, self.clients = self.policies[0], len(self.policies)
        # Whether an attempt must be admitted first (a breaker, throttle or
        # limiter), and whether a success needs telling to anyone.
        self.guarded, self.quiet = self.policy.plan.guarded, self.policy.plan.quiet
        self.first = _DUE if self.guarded else _SEND
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
        self.requests = self.attempts = self.succeeded = self.failed = 0
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
        """Every event, earliest first, until no arrival, outcome or attempt is left."""
        outcomes, due = self.outcomes, self.due
        arrive, reach, fall_due = self.arrive, self.reach, self.fall_due
        settled, pop = outcomes.popleft, heapq.heappop
        while True:
            upcoming = outcomes[0][0] if outcomes else _INF
            later = due[0][0]
            arrival = self.next_arrival
            if arrival <= upcoming and arrival <= later:
                if arrival == _INF:
                    return
                arrive(arrival)
            elif upcoming <= later:
                reach(*settled())
            else:
                fall_due(*pop(due))

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

    # -- the events --------------------------------------------------------------------

    def arrive(self, now: float) -> None:
        """A request arrives: its client's call is made (if anything will hear
        of it), the next arrival drawn, and its first attempt goes."""
        self.now = now
        request = self.requests
        self.requests += 1
        self.arrivals[int(now)] += 1
        arrival = now + self.expovariate(self.rate)
        self.next_arrival = arrival if arrival < self.boundary else self._arrival_past_boundary()
        if now >= self.report_at:
            self.progress(self.strategy, self.budget, now / self.seconds)  # type: ignore[misc]
            self.report_at = now + self.report_every
        call = None
        if not self.quiet:
            clients = self.clients
            policy = self.policies[int(self.draw() * clients) if clients > 1 else 0]
            call = Call(policy, now, process_hooks=False)
        if self.guarded:
            self.admit(now, request, call)
        else:
            self.send(now, request, call)

    def reach(self, now: float, request: int, call: Call | None, error: Any) -> None:
        """An attempt's outcome reaches its client, whose call decides."""
        self.now = now
        if error is None:  # a success (told only when someone needs telling)
            self.succeeded += 1
            if now < self.length:
                self.goodput[int(now)] += 1
            call.decide(None, None, None)  # type: ignore[union-attr]
            return
        delay = call.decide(None, error, None)  # type: ignore[union-attr]
        if delay is None:
            self.failed += 1
        else:
            heapq.heappush(self.due, (now + delay, request, self.first, call))

    def fall_due(self, now: float, request: int, kind: int, call: Call | None) -> None:
        """A retry after its delay, or an attempt after the rate limiter's wait."""
        self.now = now
        if kind == _DUE:
            self.admit(now, request, call)
        else:
            self.send(now, request, call)

    def admit(self, now: float, request: int, call: Call | None) -> None:
        """The breaker and throttle may refuse the attempt; the limiter may make it wait."""
        try:
            wait = call.admit()  # type: ignore[union-attr]
        except _REFUSED:  # refused: the request fails here, never sent
            self.failed += 1
            return
        if wait:  # the rate limiter's wait (its sleep is _no_sleep)
            heapq.heappush(self.due, (now + wait, request, _SEND, call))
        else:
            self.send(now, request, call)

    def send(self, now: float, request: int, call: Call | None) -> None:
        """The attempt goes to the server: a transient error at once, an answer
        in time, or none within the timeout (too late, or dropped unserved)."""
        self.attempts += 1
        if now < self.length:
            self.sent[int(now)] += 1
        if self.draw() < self.error_rate:  # a transient error, at once
            error, ends = _ERROR, now
        else:
            free = self.free
            start = free if free > now else now
            deadline = now + self.timeout
            if self.drop and start >= deadline:  # the client has gone: dropped, no work done
                error, ends = _TIMEOUT, deadline
            else:
                free = self.free = start + self.service
                if free <= deadline:  # answered in time
                    if self.quiet:  # nothing to tell: counted at once
                        self.succeeded += 1
                        if free < self.length:
                            self.goodput[int(free)] += 1
                    else:
                        self.outcomes.append((free, request, call, None))
                    return
                error, ends = _TIMEOUT, deadline  # the answer would come too late
        if not self.quiet:
            if ends == now:  # before anything pending
                self.outcomes.appendleft((now, request, call, error))
            else:
                self.outcomes.append((ends, request, call, error))
            return
        # Nothing else hears of a quiet client's failure: it decides at once.
        if call is None:
            call = Call(self.policy, now, process_hooks=False)  # as @retry makes it after a try
        delay = call.decide(None, error, None)
        if delay is None:
            self.failed += 1
        else:
            heapq.heappush(self.due, (ends + delay, request, _SEND, call))
