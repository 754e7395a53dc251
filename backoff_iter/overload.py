"""A retry storm, second by second: an overloaded server, clients that retry,
and what this library offers against it.  A discrete-event model anyone can
check by hand, whose every decision is the library's own.

Time is in seconds.  Requests arrive as a Poisson process at *rate* per
second, multiplied by *spike* from *spike_at* for *spike_for* seconds;
the run ends after *seconds*, and so do arrivals.  A request still under
way then (its attempt queued at the server or unanswered, its retry's
delay or its rate limiter's wait not over) is unfinished: neither a
success nor a failure, and nothing it would do later is simulated, so
every figure is of what happened within the run (the totals are the
series' sums).

**The clients.**  Each request belongs to one of *clients* clients (a
process each), drawn uniformly at random from the run's generator.  A
client is one retry :class:`~backoff_iter._options.Policy` of this library:
the delays of *strategy* (``base``, ``cap``, drawn from the run's
generator), at most *retries* of them, and the parts *budgets* names.  A
request is one call of its client's policy, driven as the drivers drive
it: before each attempt (the first included) ``Call.admit`` asks the
breaker and the throttle - a refusal ends the request there, failed and
never sent - and the rate limiter's ``acquire`` says how long the attempt
waits for its token (that wait is the client's, not part of the timeout);
after each attempt ``Call.decide`` takes the outcome - a success, a
``TimeoutError``, or a ``ConnectionError`` for a transient error - tells
the budget and the parts, and gives the delay before the next attempt, or
ends the request.  A client with nothing to tell (no budget, no part) has
its call made at the first failure; its successes need no call at all.

**The parts**, each with this library's defaults: ``token_bucket`` is
``TokenBucket(max_tokens=10, token_ratio=0.1)``, ``retry_budget``
``RetryBudget(ratio=0.2, min_per_second=10, window=10)``, ``retry_quota``
``RetryQuota(capacity=500, retry_cost=14, success_refund=1)`` (botocore
1.44's, whose throttles are named error codes, never a timeout: each
retry here costs 14, its ``throttle_cost`` too), ``cubic``
``CubicRateLimiter()``, ``sre_throttle``
``AdaptiveThrottle(k=2, window=120)`` and ``breaker``
``CircuitBreaker(failure_ratio=0.1, minimum_throughput=100,
sampling_duration=30, break_duration=5)``.  A run's *budgets* entry is
``none``, or one budget and any of the three others joined by ``+``
(``breaker+token_bucket``).  The clients' ``throttled`` names a timeout,
the server's one sign of overload, a throttle to the limiter and the
throttle; a transient error comes whatever the load, and is none.  With
*budget_scope* ``"process"`` every client has its own budget; with
``"fleet"`` each client's budget, throttle and breaker is a member of one
fleet store per part, shared by all (the arithmetic of
:class:`~backoff_iter.fleet.RedisStore`'s scripts, in-process and in
simulated time, exchanged at most every *sync_interval* seconds).  A rate
limiter is always the client's own.

**The server** serves attempts one at a time, first come first served,
each taking exactly ``1 / capacity`` seconds.  An attempt's client waits
*timeout* seconds from sending it (its *deadline*); an answer that would
come later is a timeout, seen by the client at its deadline.
*server* ``"serve-all"`` serves every attempt it received, even one whose
client has gone: that wasted work is what makes overload last.
``"drop-expired"`` looks at each attempt when it would start serving it
(at dequeue) and drops, at no cost, one whose deadline has come; one it
starts it serves to the end, even if the answer comes too late.
Independently, with probability *error_rate* an attempt fails at once with
a transient error, costing the server nothing (``1``: a total outage).

**Recovery** is measured in whole seconds after the spike's end (without
a spike, from the start) to the first of ``RECOVERED_FOR`` (5) seconds in a
row whose goodput is each at least 90% of their arrivals.  A run that
ends less than that after the spike cannot show it, and its
``recovery_seconds`` is None as for a server that never recovered: such a
run is still worth its other figures (the amplification within a spike),
so it is taken here, while the command line, whose table is the spike's
aftermath, refuses it.

**Bounds.**  So that no run goes on for more than a few minutes, the
expected attempts of a run, ``(requests expected) x (1 + retries)``, are at
most :data:`MAX_ATTEMPTS`, and so are one request's, ``1 + retries`` (a
rate that expects a fraction of a request would let any retries through);
*clients* at most :data:`MAX_CLIENTS`; *seconds* at most :data:`MAX_SECONDS`.

>>> [run] = simulate_overload(["full_jitter"], ["breaker+token_bucket"], rate=80,
...                           capacity=100, seconds=30, clients=4, seed=1)
>>> run.requests == sum(run.series["arrivals"]), run.clients, run.server
(True, 4, 'serve-all')
>>> run.attempts <= run.requests * 4  # a breaker's refusals are never sent
True
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import Any, NamedTuple

from . import _checks
from ._options import Policy
from ._storm import _Storm
from .breakers import CircuitBreaker
from .budgets import Budget, RetryBudget, RetryQuota, TokenBucket
from .fleet import Store
from .fleet._shared import _SharedState
from .limiters import CubicRateLimiter
from .strategies import STRATEGIES, maker
from .throttles import AdaptiveThrottle

__all__ = [
    "BUDGETS",
    "MAX_ATTEMPTS",
    "MAX_CLIENTS",
    "MAX_SECONDS",
    "PARTS",
    "SCOPES",
    "SERVERS",
    "OverloadRun",
    "simulate_overload",
]

# What a retry costs a quota at the library's defaults (botocore's: 14), read from
# one made so (inspect.signature would import inspect: 15 ms of the command's start).
_RETRY_COST: float = RetryQuota().retry_cost

#: The budgets a run can give its clients, by name; each is made with the
#: run's simulated clock and, for a fleet, the store its clients share.
BUDGETS: dict[str, Callable[[Callable[[], float], Store | None], Budget]] = {
    "token_bucket": lambda clock, store: TokenBucket(store=store),
    "retry_budget": lambda clock, store: RetryBudget(clock=clock, store=store),
    # botocore names no timeout a throttle: a timeout, the storm's throttle to the limiter
    # and the throttle (see _overloaded), costs the quota what any retry does.
    "retry_quota": lambda clock, store: RetryQuota(throttle_cost=_RETRY_COST, store=store),
}

#: The other parts a client may have, by name: the policy's option each
#: fills, and how it is made from the simulated clock, the run's generator
#: and, for a part a fleet shares (a throttle, a breaker), the store its clients share.
PARTS: dict[str, tuple[str, Callable[..., Any]]] = {
    "cubic": ("rate_limiter", lambda clock, rng: CubicRateLimiter(clock=clock)),
    "sre_throttle": (
        "throttle",
        lambda clock, rng, store=None: AdaptiveThrottle(clock=clock, rng=rng, store=store),
    ),
    "breaker": (
        "breaker",
        lambda clock, rng, store=None: CircuitBreaker(clock=clock, store=store),
    ),
}
# The parts that --budget-scope fleet shares among the clients, as the budgets.
_FLEET_PARTS = ("sre_throttle", "breaker")

#: Whose budget a client spends: its own, or one its whole fleet shares.
SCOPES = ("process", "fleet")
#: The server serves every attempt, or drops at dequeue those whose client has gone.
SERVERS = ("serve-all", "drop-expired")

#: The most attempts a run may be expected to simulate, (requests expected)
#: x (1 + retries): under a minute for clients with no part (100,000 to
#: 200,000 attempts a second on a 2-core x86_64, CPython 3.11), up to about
#: a quarter of an hour for 10,000 clients sharing a fleet budget with every
#: part (about 6,000 requests a second there).
MAX_ATTEMPTS = 5_000_000
#: The most clients: each holds a policy and its parts (a few kB).
MAX_CLIENTS = 100_000
#: The longest run, in seconds of arrivals: a day.
MAX_SECONDS = 86_400.0

# Figures of a run that read its series.
LAST_SECONDS = 20  # goodput over the last 20 s
RECOVERED_SHARE = 0.9  # goodput at least 90% of the arrivals ...
RECOVERED_FOR = 5  # ... for 5 s in a row


def spike_end(spike: float, spike_at: float, spike_for: float) -> float | None:
    """When a run's spike ends, recovery measured from there (inf for a spike
    ending past floats), or None for a run without one (*spike* 1, or
    *spike_for* 0), measured from its start."""
    return spike_at + spike_for if spike > 1.0 and spike_for > 0.0 else None


def first_of_last(seconds: float) -> int:
    """The first whole-second bucket of a run of *seconds* that goodput over its
    last ``LAST_SECONDS`` is of (the last of them cut short by a run of
    25.5 s: 19.5 s of goodput), or its first for a shorter run."""
    return max(0, math.ceil(seconds) - LAST_SECONDS)


_FAILURES = (TimeoutError, ConnectionError)  # what the clients retry: both, as is_transient does


def _overloaded(outcome: object) -> bool:
    """The clients' ``throttled``: a timeout, the one sign of overload the server gives.
    A transient error (*error_rate*) comes whatever the load: it is no throttle."""
    return isinstance(outcome, TimeoutError)


class OverloadRun(NamedTuple):
    """One (strategy, budget) run; its ``_asdict()`` is the ``--json`` object."""

    strategy: str
    budget: str
    clients: int  #: clients sharing the arrivals
    budget_scope: str  #: "process": a budget per client; "fleet": one shared
    server: str  #: "serve-all" or "drop-expired"
    requests: int  #: requests that arrived
    attempts: int  #: attempts the clients sent within the run
    amplification: float | None  #: attempts / requests (None: no requests)
    succeeded: float | None  #: share of requests that succeeded within the run (None: no requests)
    #: successes in the last 20 s (the whole run if shorter) over the arrivals then
    goodput_last_20s: float | None
    #: after the spike (without one, from the start), until goodput holds >= 90% for 5 s;
    #: None: never within the run (a run that ends less than 5 s after it: never, too)
    recovery_seconds: float | None
    series: dict[str, list[int]]  #: per second of the run: arrivals, attempts, goodput


def _expected_requests(
    rate: float, seconds: float, spike: float, spike_at: float, spike_for: float
) -> float:
    """The requests a run expects: *rate* over its *seconds*, and the spike's
    ``(spike - 1) x rate`` for the part of it within the run."""
    spiking = max(0.0, min(seconds, spike_at + spike_for) - min(seconds, spike_at))
    return rate * (seconds + (spike - 1.0) * spiking)


def _furthest_above_default(factors: dict[str, float]) -> str:
    """Which of the *factors* of a run's expected attempts is furthest above
    its default, as a ratio: the one most likely raised past the bound, which
    the error names (the command line's ``--retries``, not ``--rate``, for
    ``--rate 1 --retries 4999999``).  The factors: the rate, the seconds, how
    many times the requests the spike makes them (``spike``), and ``1 +
    retries``."""
    defaults = simulate_overload.__kwdefaults__ or {}
    rate, seconds = defaults["rate"], defaults["seconds"]
    spiked = _expected_requests(
        rate, seconds, defaults["spike"], defaults["spike_at"], defaults["spike_for"]
    )
    usual = {
        "rate": rate,
        "seconds": seconds,
        "spike": spiked / (rate * seconds),
        "retries": 1.0 + defaults["retries"],
    }
    ratios = {name: value / usual[name] for name, value in factors.items()}
    return max(ratios, key=ratios.__getitem__)


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
    clients: int = 1,
    budget_scope: str = "process",
    sync_interval: float = 0.1,
    server: str = "serve-all",
    seed: int | None = None,
    progress: Callable[[str, str, float], object] | None = None,
) -> list[OverloadRun]:
    """Run every strategy with every budget; one :class:`OverloadRun` per pair.

    Strategies are the library's names plus ``"none"`` (no retries); a
    budget is ``"none"``, or names of :data:`~backoff_iter.overload.BUDGETS`
    (one at most) and :data:`~backoff_iter.overload.PARTS` joined by ``+``.
    With a *seed* runs repeat exactly, each pair drawing from its own
    stream.  *progress(strategy, budget, share_done)* is called as a run
    goes, first at its first arrival.
    """
    for parameter, given in (("strategies", strategies), ("budgets", budgets)):
        if isinstance(given, str):  # one name is not a list of one-letter names
            raise _checks.ArgumentTypeError(
                parameter, f"{parameter} must be a list of names, got {_checks.shown(given)}"
            )
    names = list(_checks.iterable("strategies", strategies))
    for name in names:
        if not (isinstance(name, str) and (name == "none" or name in STRATEGIES)):
            raise _checks.ArgumentValueError(
                "strategies",
                f"strategies must be 'none' or one of {', '.join(STRATEGIES)}, got {_checks.shown(name)}",
            )
    kinds = list(_checks.iterable("budgets", budgets))
    for kind in kinds:
        _budget_parts(kind)
    if not names:
        raise _checks.ArgumentValueError("strategies", "strategies must name at least one strategy")
    if not kinds:
        raise _checks.ArgumentValueError("budgets", "budgets must name at least one budget")
    rate = _checks.positive("rate", rate)
    capacity = _checks.positive("capacity", capacity)
    spike = _checks.number("spike", spike)
    if not 1.0 <= spike < math.inf:
        raise _checks.ArgumentValueError(
            "spike", f"spike must be a finite number of at least 1, got {_checks.shown(spike)}"
        )
    spike_at = _checks.seconds("spike_at", spike_at)
    spike_for = _checks.seconds("spike_for", spike_for)
    timeout = _checks.positive("timeout", timeout)
    error_rate = _checks.number("error_rate", error_rate)
    if not 0.0 <= error_rate <= 1.0:
        raise _checks.ArgumentValueError(
            "error_rate", f"error_rate must be in [0, 1], got {_checks.shown(error_rate)}"
        )
    retries = _checks.count("retries", retries)
    base = _checks.seconds("base", base)
    cap = _checks.seconds("cap", cap, infinite=True)
    seconds = _checks.positive("seconds", seconds)
    if seconds > MAX_SECONDS:
        raise _checks.ArgumentValueError(
            "seconds",
            f"seconds must be at most {MAX_SECONDS:g} (a day), got {_checks.shown(seconds)}",
        )
    clients = _checks.count("clients", clients, minimum=1)
    if clients > MAX_CLIENTS:
        raise _checks.ArgumentValueError(
            "clients", f"clients must be at most {MAX_CLIENTS:,}, got {_checks.shown(clients)}"
        )
    if budget_scope not in SCOPES:
        raise _checks.ArgumentValueError(
            "budget_scope",
            f"budget_scope must be one of {', '.join(SCOPES)}, got {_checks.shown(budget_scope)}",
        )
    sync_interval = _checks.number("sync_interval", sync_interval)
    if not 0.0 <= sync_interval <= 3600.0:
        raise _checks.ArgumentValueError(
            "sync_interval",
            f"sync_interval must be in [0, 3600] seconds, got {_checks.shown(sync_interval)}",
        )
    if server not in SERVERS:
        raise _checks.ArgumentValueError(
            "server", f"server must be one of {', '.join(SERVERS)}, got {_checks.shown(server)}"
        )
    seed = _checks.seed("seed", seed)
    if progress is not None:
        _checks.function("progress", progress)
    expected = _expected_requests(rate, seconds, spike, spike_at, spike_for)
    retrying = any(name != "none" for name in names)
    try:
        work = expected * (1 + (retries if retrying else 0))
    except OverflowError:  # retries beyond floats (10**400): as many as inf
        work = math.inf
    # A rate expecting a fraction of a request lets any retries through the bound below,
    # but the request that comes makes them all: one request makes no more than a run may.
    if retrying and retries >= MAX_ATTEMPTS:
        raise _checks.ArgumentValueError(
            "retries",
            f"retries must be at most {MAX_ATTEMPTS - 1:,} (one request's 1 + retries attempts"
            f" within the {MAX_ATTEMPTS:,} a run may expect), got {_checks.shown(retries)}",
        )
    if not work <= MAX_ATTEMPTS:
        # (the spike by what it adds: a spike of 1000 for no time adds nothing)
        # (the spike's factor from a rate of 1: a rate near the largest float overflows
        # the run's requests to inf, which was taken for the spike's)
        spiked = _expected_requests(1.0, seconds, spike, spike_at, spike_for) / seconds
        factors = {"rate": rate, "seconds": seconds, "spike": spiked}
        got = f"{work:.3g}" if work < math.inf else "more than a float holds"
        if retrying:
            factors["retries"] = 1.0 + retries
        raise _checks.ArgumentValueError(
            _furthest_above_default(factors),
            f"a run may expect at most {MAX_ATTEMPTS:,} attempts, rate x seconds (the spike"
            f" included) x (1 + retries), got {got}; lower the rate, seconds, spike or"
            " retries",
        )
    model = _Model(
        rate,
        capacity,
        spike,
        spike_at,
        spike_for,
        timeout,
        error_rate,
        retries,
        base,
        cap,
        seconds,
        clients,
        budget_scope,
        sync_interval,
        server,
    )
    return [
        model.run(
            name, kind, random.Random(None if seed is None else f"{seed}/{name}/{kind}"), progress
        )
        for name in names
        for kind in kinds
    ]


def _budget_parts(kind: str) -> tuple[str | None, tuple[str, ...]]:
    """The budget and the parts a ``--budgets`` entry names (``breaker+token_bucket``)."""
    if kind == "none":
        return None, ()
    budget: str | None = None
    parts: list[str] = []
    for name in kind.split("+") if isinstance(kind, str) else ("",):  # "": refused below
        if name in BUDGETS and budget is None:
            budget = name
        elif name in PARTS and name not in parts:
            parts.append(name)
        else:
            known = ", ".join([*BUDGETS, *PARTS])
            raise _checks.ArgumentValueError(
                "budgets",
                "budgets must be 'none', or at most one budget and each other part once,"
                f" joined by '+', from {known}; got {_checks.shown(kind)}",
            )
    return budget, tuple(parts)


def _first(make: Callable[[], Iterator[float]], retries: int) -> Callable[[], Iterator[float]]:
    """A factory of the first *retries* delays of what *make* makes."""

    def delays() -> Iterator[float]:
        return islice(make(), retries)

    return delays


def _no_sleep(seconds: float) -> None:
    """The clients' sleep: simulated time passes on the event queue instead."""


def _client(
    delays: Callable[[], Iterator[float]] | tuple[()],
    clock: Callable[[], float],
    **options: Any,
) -> Policy:
    """A client's policy, never warned of an endless schedule: its delays stop
    after *retries* and nobody waits them out (the warning, which a delay
    above an hour or 100 retries give, would tell the user to bound them)."""
    policy = Policy(delays, on=_FAILURES, clock=clock, sleep=_no_sleep, **options)
    policy.mark_warned()
    return policy


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
    clients: int
    budget_scope: str
    sync_interval: float
    server: str

    def _policies(
        self, strategy: str, kind: str, rng: random.Random, clock: Callable[[], float]
    ) -> list[Policy]:
        """A policy per client; one for all when clients hold nothing of their own."""
        delays: Callable[[], Iterator[float]] | tuple[()] = ()  # "none": no retries
        if strategy != "none":
            delays = _first(maker(strategy, base=self.base, cap=self.cap, rng=rng), self.retries)
        budget, parts = _budget_parts(kind)
        if budget is None and not parts:
            return [_client(delays, clock)]
        # In a fleet, one store for each part the clients share.
        stores: dict[str | None, Store] = {}
        if self.budget_scope == "fleet":
            for shared in (budget, *parts):
                if shared in BUDGETS or shared in _FLEET_PARTS:
                    stores[shared] = _SharedState(self.sync_interval, clock=clock)
        policies = []
        for _ in range(self.clients):
            options: dict[str, Any] = {}
            for part in parts:
                key, make_part = PARTS[part]
                store = stores.get(part)
                options[key] = (
                    make_part(clock, rng) if store is None else make_part(clock, rng, store)
                )
            if budget is not None:
                options["budget"] = BUDGETS[budget](clock, stores.get(budget))
            policies.append(_client(delays, clock, throttled=_overloaded, **options))
        return policies

    def run(
        self,
        strategy: str,
        budget: str,
        rng: random.Random,
        progress: Callable[[str, str, float], object] | None,
    ) -> OverloadRun:
        storm = _Storm(
            self,
            lambda clock: self._policies(strategy, budget, rng, clock),
            rng,
            progress,
            strategy,
            budget,
        )
        storm.run()
        if progress is not None:
            progress(strategy, budget, 1.0)
        ended = storm.succeeded + storm.failed + storm.unfinished
        if ended != storm.requests:  # pragma: no cover - an invariant
            raise AssertionError(
                f"{storm.requests} requests, {storm.succeeded} succeeded, {storm.failed} failed,"
                f" {storm.unfinished} unfinished"
            )
        return self._figures(
            strategy,
            budget,
            storm.requests,
            storm.attempts,
            storm.succeeded,
            storm.arrivals,
            storm.sent,
            storm.goodput,
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
        last = slice(first_of_last(self.seconds), None)  # (the run has ceil(seconds) buckets)
        arrived_last = sum(arrivals[last])
        recovery: float | None = None
        # The first whole second after the spike (none within the run if it ends
        # past it, or past floats: spike_at + spike_for may be inf); without a spike
        # (spike 1, or spike_for 0), the run's start: there is nothing to wait for.
        end = spike_end(self.spike, self.spike_at, self.spike_for)
        start = math.ceil(min(0.0 if end is None else end, len(arrivals)))
        for second in range(start, len(arrivals) - RECOVERED_FOR + 1):
            window = range(second, second + RECOVERED_FOR)
            # A window with no arrivals shows nothing: a run without requests never recovers.
            if any(arrivals[s] for s in window) and all(
                goodput[s] >= RECOVERED_SHARE * arrivals[s] for s in window
            ):
                recovery = float(second - start)
                break
        return OverloadRun(
            strategy=strategy,
            budget=budget,
            clients=self.clients,
            budget_scope=self.budget_scope,
            server=self.server,
            requests=requests,
            attempts=attempts,
            amplification=attempts / requests if requests else None,
            succeeded=succeeded / requests if requests else None,
            goodput_last_20s=sum(goodput[last]) / arrived_last if arrived_last else None,
            recovery_seconds=recovery,
            series={"arrivals": arrivals, "attempts": sent, "goodput": goodput},
        )
