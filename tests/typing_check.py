"""Type-checked by mypy --strict in test_typing.py, never run: the public API as users type it."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from fractions import Fraction
from itertools import islice
from random import Random

import backoff_iter
from backoff_iter import (
    Attempt,
    aretrying,
    attempts,
    capped,
    constant,
    decorrelated,
    elapsed,
    equal_jitter,
    exponential,
    fibonacci,
    full_jitter,
    hedge,
    hedged,
    jittered,
    linear,
    per_failure,
    plan,
    retry,
    retrying,
    simulate,
    smooth_jitter,
    within,
)

schedules: list[Iterator[float]] = [
    constant(0.5),
    linear(1, 0.5, cap=10),
    exponential(0.1, 2, cap=30),
    fibonacci(1, cap=60),
    full_jitter(0.1, 30, factor=2, rng=Random(1)),
    equal_jitter(0.1, 30, rng=None),
    decorrelated(base=1, cap=30, factor=3.0, rng=Random()),
    smooth_jitter(1, 30, rng=Random(2)),
]
shaped: Iterator[float] = within(capped(jittered(exponential(1), 0.1), 30), 120)
totals: Iterator[float] = elapsed(islice(decorrelated(1), 5))
numbers: Iterator[int] = attempts(shaped, sleep=lambda seconds: None)
names: list[str] = backoff_iter.__all__


def fetch() -> bytes:
    for attempt in retrying(islice(full_jitter(0.1, 5), 4), on=OSError, deadline=30):
        with attempt:
            return b"data"
    raise AssertionError("unreachable: retrying re-raises the last failure")


async def afetch() -> int:
    async for attempt in aretrying([0.1, 0.2], on=(OSError, TimeoutError)):
        async with attempt:
            attempt.retry_after(1.5)
            return attempt.number
    raise AssertionError("unreachable")


def log(attempt: Attempt, exc: BaseException, delay: float) -> None:
    print(attempt.number, attempt.delay, attempt.elapsed, exc, delay)


@retry(lambda: islice(exponential(0.1, cap=5), 5), on=TimeoutError, before_sleep=log)
def ping(host: str) -> str:
    return host


@retry([0.5, 1.0], on=lambda exc: isinstance(exc, OSError))
async def aping(host: str) -> str:
    return host


pong: str = ping("example")


# per_failure's kinds and schedules, as users build them: a dict made beforehand
# (its keys typed as the one class they are), a list of ints, a range.
slow_kinds = {TimeoutError: [5.0, 5.0]}
whole_seconds = [1, 2]
by_kind = per_failure(slow_kinds, throttle=range(1, 4), default=whole_seconds)
by_predicate = per_failure(
    {lambda outcome: outcome is None: (0.5,)}, default=lambda: exponential(0.1)
)


@retry(by_kind, on=OSError)
def put(key: str) -> bool:
    return True


where: float = plan(1, 1.1, 1057.19).sleep_after
study: float = simulate(["full_jitter"], clients=[10], runs=2, seed=1)[0].work


# -- the service features, as users type them --------------------------------

from backoff_iter import (  # noqa: E402
    RetryBudget,
    TokenBucket,
    log_retries,
    parse_retry_after,
)
from backoff_iter.testing import no_sleep  # noqa: E402

policy = retrying(lambda: islice(exponential(0.1), 5), on=OSError, budget=TokenBucket())


def reused() -> bytes:
    for attempt in policy:
        with attempt:
            return b"data"
    raise AssertionError("unreachable")


def status() -> int:
    code = 0
    for attempt in retrying([0.5, 1.0], on_result=lambda code: code == 503):
        with attempt:
            code = attempt.set_result(503)
    return code


@retry(
    [1, 2],  # a list[int] is a Sequence[float]
    on_result=lambda r: r is None,
    retry_after=lambda outcome: parse_retry_after("120"),
    observe=log_retries(),
    name="lookup",
    budget=RetryBudget(ratio=0.1),
)
def lookup(key: str, *, default: int = 0) -> int | None:
    return default


found: int | None = lookup("a", default=1)
lookup(1)  # type: ignore[arg-type]  # the signature is kept: a wrong argument is caught


@retry([0.5])
async def alookup(key: str) -> int:
    return 1


async def use_alookup() -> int:
    return await alookup("a")


@retry
def bare(key: str) -> int:
    return 1


bare_result: int = bare("a")
bare(1)  # type: ignore[arg-type]  # a bare @retry keeps the signature too


@retry()
async def abare() -> str:
    return "x"


# A function of no arguments whose result is numbers (bytes, a list of them, a
# generator of them) is still the function a bare @retry decorates, and still
# serves as the delays of @retry(func) over another function, as at runtime.
@retry
def payload() -> bytes:
    return b"data"


payload_bytes: bytes = payload()


@retry
def countdown() -> Iterator[int]:
    yield from range(3)


counted: list[int] = list(countdown())


def gaps() -> list[float]:
    return [0.5, 1.0]


@retry(gaps)
def spaced(key: str) -> int:
    return 1


spaced_result: int = spaced("a")
spaced(1)  # type: ignore[arg-type]  # decorated by a schedule function: the signature is kept


with no_sleep() as slept_delays:
    recorded: list[float] = slept_delays


# -- the resilience parts, as users type them ----------------------------------

from backoff_iter import (  # noqa: E402
    AdaptiveThrottle,
    Breaker,
    BrokenCircuitError,
    CircuitBreaker,
    CubicRateLimiter,
    Part,
    RateLimiter,
    Throttle,
    ThrottledError,
)

limiter: RateLimiter = CubicRateLimiter(clock=lambda: 0.0)
throttle: Throttle = AdaptiveThrottle(k=2, window=60, rng=Random(1))
breaker: Breaker = CircuitBreaker(0.5, 10, 30, lambda: exponential(5, cap=60))
breakers = [CircuitBreaker(break_duration=5), CircuitBreaker(break_duration=[1, 2.5])]


def guarded() -> float:
    waited: float = limiter.acquire(sleep=lambda seconds: None)
    try:
        throttle.check()
        breaker.check()
    except ThrottledError as error:
        return error.probability
    except BrokenCircuitError as error:
        return error.retry_after
    limiter.record(throttled=False)
    throttle.record(accepted=True)
    breaker.record(success=True)
    return waited


async def aguarded() -> float:
    return await limiter.aacquire()


# A clock may return seconds as a Decimal or a Fraction (read as its float), as
# RetryOptions.clock says: the drivers and every part take one.
def decimal_clock() -> Decimal:
    return Decimal("1.5")


decimal_loop = retrying([0.1], clock=decimal_clock, deadline=10)
decimal_parts = (
    CircuitBreaker(clock=decimal_clock),
    AdaptiveThrottle(clock=lambda: Fraction(3, 2)),
    CubicRateLimiter(clock=decimal_clock),
    RetryBudget(clock=decimal_clock),
)
state: str = breakers[0].state


class Tally(Part):  # a part of the user's: one, a list of them, or None
    def after_attempt(self, outcome: object, kind: str, number: int, spent: float) -> None:
        print(kind)


one_part = retrying([0.1], parts=Tally())
listed_parts = retrying([0.1], parts=[Tally(), Tally()])
no_parts = retrying([0.1], parts=None)
fast: bool = CubicRateLimiter().try_acquire()


@hedge(lambda: islice(constant(0.05), 2), on=ConnectionError, name="replica")
async def replica(key: str) -> bytes:
    return key.encode()


async def read() -> bytes:
    first: bytes = await replica("k")
    return first + await hedged(lambda: replica("k"), [0.05], budget=TokenBucket())


# An exception class where the delays go is a mistake (on= was meant): both type checkers
# refuse the decoration, so each ignore below is needed, and an unneeded one fails the check.
@retry(ConnectionError)  # type: ignore[operator]
def mistaken() -> str:
    return "never decorated"


@retry((ConnectionError, TimeoutError))  # type: ignore[operator]
def mistaken_twice() -> str:
    return "never decorated"


# A one-shot iterator where @retry's delays go (a strategy called, not wrapped in
# a function) would serve one call only: retry refuses it, and so do both checkers.
used_up = retry(exponential(0.1))  # type: ignore[call-overload]
used_up_by_name = retry(delays=islice(exponential(0.1), 3), on=OSError)  # type: ignore[call-overload]


@retry(on=ConnectionError)
def meant() -> str:
    return "decorated"


def retryable(error: Exception) -> bool:  # on= asks its predicate of Exceptions only
    return isinstance(error, OSError)


@retry(on=retryable)
def judged() -> str:
    return "decorated"


judged_loop = retrying([0.1], on=retryable)
judged_aloop = aretrying([0.1], on=retryable)


async def judged_hedge() -> bytes:
    return await hedged(lambda: replica("k"), [0.05], on=retryable)


meant_result: str = meant()
transient: bool = backoff_iter.is_transient(OSError())


@retry(on=ConnectionError, resume=lambda state: iter(range(state.count, 3)))
def streamed(start: int = 0) -> Iterator[int]:
    yield from range(start, 3)


stream_items: list[int] = list(streamed())


# -- the adapters to other schedulers, as their own types see them --------------

import backoff  # noqa: E402
import tenacity  # noqa: E402
from typing_extensions import assert_type  # noqa: E402

from backoff_iter._httpx import RetryTransport as HttpxRetryTransport  # noqa: E402
from backoff_iter._urllib3 import Urllib3Retry as Urllib3RetryItself  # noqa: E402
from backoff_iter.interop import (  # noqa: E402
    RetryTransport,
    Urllib3Retry,
    backoff_wait_gen,
    tenacity_schedule,
    tenacity_wait,
)

# The lazily imported adapters keep their own types for a type checker, not the
# Any of the module's __getattr__ (asserted against the classes where they live).
assert_type(RetryTransport(delays=[0.1], statuses=[503]), HttpxRetryTransport)
assert_type(Urllib3Retry(total=3, delays=[0.1]), Urllib3RetryItself)


@backoff.on_exception(backoff_wait_gen([0.1, 0.2]), OSError, jitter=None)
def via_backoff(key: str) -> int:
    return 1


@backoff.on_predicate(backoff_wait_gen(lambda: islice(exponential(0.1), 3)), jitter=None)
def polled() -> bool:
    return True


tenacity_wait_only = tenacity.Retrying(
    wait=tenacity_wait([0.1]), stop=tenacity.stop_after_attempt(3)
)
tenacity_wait_stop = tenacity_schedule(lambda: islice(exponential(0.1), 3))
tenacity_both = tenacity.Retrying(wait=tenacity_wait_stop[0], stop=tenacity_wait_stop[1])
via_backoff_result: int = via_backoff("a")
