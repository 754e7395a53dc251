"""retrying, aretrying and @retry: the same scenarios, sync and async, never really sleeping."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import math
import sys
import time
import traceback
import warnings
from decimal import Decimal
from fractions import Fraction
from itertools import islice
from typing import Any

import pytest
from checks import in_threads, rejects
from hypothesis import given
from hypothesis import strategies as st

from backoff_iter import (
    ArgumentValueError,
    CircuitBreaker,
    RetryBudget,
    TokenBucket,
    _checks,
    aretrying,
    attempts,
    capped,
    constant,
    exponential,
    full_jitter,
    per_failure,
    retry,
    retrying,
)
from backoff_iter.parts import ERROR, FAILURE, SUCCESS, THROTTLE, BreakerPart
from backoff_iter.parts import Part as PartBase


class FakeTime:
    """A clock that only moves when slept on; records every sleep."""

    def __init__(self):
        self.now = 100.0
        self.slept = []

    def clock(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds

    async def asleep(self, seconds):
        self.sleep(seconds)


class Operation:
    """Raises or returns the scripted outcomes in turn, then returns "ok"."""

    def __init__(self, outcomes, time=None, duration=0.0):
        self.outcomes = list(outcomes)
        self.calls = 0
        self.time = time
        self.duration = duration

    def __call__(self):
        self.calls += 1
        if self.time is not None:
            self.time.now += self.duration
        outcome = self.outcomes.pop(0) if self.outcomes else "ok"
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


def run_loop(delays, operation, time, **options):
    if "on_result" in options:  # the result is handed over, the loop decides
        for attempt in retrying(delays, sleep=time.sleep, clock=time.clock, **options):
            with attempt:
                result = attempt.set_result(operation())
        return result
    for attempt in retrying(delays, sleep=time.sleep, clock=time.clock, **options):
        with attempt:
            return operation()


def run_async_loop(delays, operation, time, **options):
    async def main():
        if "on_result" in options:
            async for attempt in aretrying(delays, sleep=time.asleep, clock=time.clock, **options):
                async with attempt:
                    result = attempt.set_result(operation())
            return result
        async for attempt in aretrying(delays, sleep=time.asleep, clock=time.clock, **options):
            async with attempt:
                return operation()

    return asyncio.run(main())


def run_decorator(delays, operation, time, **options):
    if "attempt_timeout" in options:  # a sync function cannot be cut: it is handed its timeout

        def timed(timeout=None):
            return operation()

        options["timeout_arg"] = "timeout"
        return retry(lambda: delays, sleep=time.sleep, clock=time.clock, **options)(timed)()
    return retry(lambda: delays, sleep=time.sleep, clock=time.clock, **options)(operation)()


def run_async_decorator(delays, operation, time, **options):
    async def call():
        return operation()

    decorated = retry(lambda: delays, sleep=time.asleep, clock=time.clock, **options)(call)
    return asyncio.run(decorated())


RUNNERS = [run_loop, run_async_loop, run_decorator, run_async_decorator]
each_driver = pytest.mark.parametrize(
    "run", RUNNERS, ids=["retrying", "aretrying", "retry", "async retry"]
)


@each_driver
def test_retries_matching_failures_sleeping_each_delay(run):
    """Two failures then success: three calls, the first two delays slept, the result returned."""
    time, operation = FakeTime(), Operation([OSError(), OSError(), "data"])
    assert run([0.5, 1.0, 2.0], operation, time, on=OSError) == "data"
    assert operation.calls == 3
    assert time.slept == [0.5, 1.0]


class FalsySleep(list):
    """A sleep= that records its delays in itself: a callable list, falsy while empty."""

    def __call__(self, seconds):
        self.append(seconds)


@each_driver
def test_a_sleep_that_is_falsy_is_still_the_sleep(run, monkeypatch):
    """sleep= given as a callable that is falsy (an empty list that records)
    is called, never replaced by time.sleep or asyncio.sleep as if None."""

    def real_sleep(seconds):
        raise AssertionError(f"really slept {seconds}")

    monkeypatch.setattr(time, "sleep", real_sleep)
    monkeypatch.setattr(asyncio, "sleep", real_sleep)
    fake = FakeTime()
    fake.sleep = fake.asleep = recorded = FalsySleep()
    assert run([0.5, 1.0], Operation([OSError(), OSError()]), fake, on=OSError) == "ok"
    assert recorded == [0.5, 1.0]


@each_driver
def test_success_on_the_first_attempt_never_sleeps(run):
    """A call that works at once makes one call and no sleep."""
    time, operation = FakeTime(), Operation(["at once"])
    assert run(exponential(1), operation, time) == "at once"
    assert operation.calls == 1 and time.slept == []


@each_driver
def test_exhaustion_reraises_the_last_error_itself_with_its_traceback(run):
    """When the delays run out the last exception propagates as itself, its traceback intact."""
    errors = [OSError(f"try {i}") for i in range(1, 4)]
    time, operation = FakeTime(), Operation(errors)
    with pytest.raises(OSError) as raised:
        run([1.0, 2.0], operation, time, on=OSError)
    assert raised.value is errors[-1]
    frames = [frame.name for frame in traceback.extract_tb(raised.value.__traceback__)]
    assert "__call__" in frames  # the frame of Operation that raised it
    assert operation.calls == 3 and time.slept == [1.0, 2.0]  # no sleep after the last


@each_driver
def test_non_matching_errors_pass_through_at_once(run):
    """An error that `on` does not match propagates from the first attempt, unslept."""
    error = KeyError("no")
    time, operation = FakeTime(), Operation([error])
    with pytest.raises(KeyError) as raised:
        run([1.0, 1.0], operation, time, on=OSError)
    assert raised.value is error
    assert operation.calls == 1 and time.slept == []


@each_driver
def test_on_accepts_a_tuple_and_a_predicate(run):
    """A tuple matches any of its classes; a predicate decides per exception."""
    time, operation = FakeTime(), Operation([KeyError(), ValueError(), "done"])
    assert run([0.1] * 3, operation, time, on=(KeyError, ValueError)) == "done"
    time, operation = FakeTime(), Operation([OSError(11), OSError(5)])
    with pytest.raises(OSError) as raised:
        run([0.1] * 3, operation, time, on=lambda exc: exc.args == (11,))
    assert raised.value.args == (5,) and operation.calls == 2


@each_driver
@pytest.mark.parametrize("fatal", [KeyboardInterrupt, SystemExit, GeneratorExit])
def test_interrupts_and_exits_are_never_swallowed(run, fatal):
    """Even with on=BaseException, KeyboardInterrupt, SystemExit and GeneratorExit propagate."""
    time, operation = FakeTime(), Operation([fatal()])
    with pytest.raises(fatal):
        run([1.0], operation, time, on=BaseException)
    assert operation.calls == 1 and time.slept == []


@each_driver
def test_deadline_shortens_the_last_sleep_to_end_on_it(run):
    """With a 10 s deadline and 3 s delays: sleeps 3, 3, 3, then 1 to end at 10, then give up."""
    time = FakeTime()
    operation = Operation([OSError(i) for i in range(20)])
    with pytest.raises(OSError) as raised:
        run(constant(3), operation, time, deadline=10)
    assert time.slept == [3, 3, 3, 1]
    assert operation.calls == 5 and raised.value.args == (4,)
    assert time.now == 110.0


@each_driver
def test_deadline_counts_the_time_the_attempts_take(run):
    """Attempts that take 4 s each leave room for one 1 s sleep in a 10 s deadline."""
    time = FakeTime()
    operation = Operation([OSError(i) for i in range(20)], time, duration=4.0)
    with pytest.raises(OSError):
        run(constant(1), operation, time, deadline=10)
    # t=4 fail, sleep 1 -> t=5, t=9 fail, sleep 1 -> t=10, t=14 fail: past the deadline.
    assert time.slept == [1, 1] and operation.calls == 3


@each_driver
def test_no_sleep_starts_that_would_end_past_the_deadline(run):
    """Once the deadline has passed, the failure is raised without sleeping again."""
    time = FakeTime()
    operation = Operation([OSError(), OSError()], time, duration=11.0)
    with pytest.raises(OSError):
        run([1.0, 1.0], operation, time, deadline=10)
    assert time.slept == [] and operation.calls == 1


def test_server_hint_makes_the_next_sleep_at_least_that_long():
    """attempt.retry_after(5) turns the next 1 s sleep into 5 s; later sleeps follow the schedule."""
    time = FakeTime()
    outcomes = iter([True, False, False])
    for attempt in retrying([1.0, 1.0, 1.0], sleep=time.sleep, clock=time.clock):
        with attempt:
            if next(outcomes):
                attempt.retry_after(5)
            if attempt.number < 3:
                raise ConnectionError
    assert time.slept == [5, 1.0]


def test_server_hint_shorter_than_the_delay_changes_nothing():
    """A hint is a minimum, not a replacement."""
    time = FakeTime()
    for attempt in retrying([3.0, 1.0], sleep=time.sleep, clock=time.clock):
        with attempt:
            attempt.retry_after(2)
            if attempt.number == 1:
                raise ConnectionError
    assert time.slept == [3.0]


def test_server_hint_past_the_deadline_gives_up():
    """If the wait the server asks for would end past the deadline, the failure is raised."""
    time = FakeTime()
    with pytest.raises(ConnectionError):
        for attempt in retrying(constant(1), sleep=time.sleep, clock=time.clock, deadline=10):
            with attempt:
                attempt.retry_after(60)
                raise ConnectionError
    assert time.slept == []


def test_server_hint_works_in_async_loops():
    """aretrying honours retry_after like retrying does."""
    time = FakeTime()

    async def main():
        async for attempt in aretrying([1.0, 1.0], sleep=time.asleep, clock=time.clock):
            async with attempt:
                if attempt.number == 1:
                    attempt.retry_after(7)
                    raise ConnectionError
                return attempt.number

    assert asyncio.run(main()) == 2
    assert time.slept == [7]


def test_attempts_report_number_delay_and_elapsed():
    """Each attempt knows its 1-based number, the delay slept before it and the time since the start."""
    time = FakeTime()
    seen = []
    for attempt in retrying([0.5, 1.5], sleep=time.sleep, clock=time.clock, on=ValueError):
        with attempt:
            seen.append((attempt.number, attempt.delay, attempt.elapsed))
            time.now += 0.25
            if attempt.number < 3:
                raise ValueError
    assert seen == [(1, 0.0, 0.0), (2, 0.5, 0.75), (3, 1.5, 2.5)]


@each_driver
def test_before_sleep_hook_sees_attempt_exception_and_delay(run):
    """The hook is called before each sleep with the failed attempt, its error and the delay."""
    errors = [OSError("a"), OSError("b")]
    calls = []
    time, operation = FakeTime(), Operation(errors)
    run(
        [0.5, 1.5, 9.0],
        operation,
        time,
        before_sleep=lambda attempt, exc, delay: calls.append(
            (attempt.number, exc, delay, list(time.slept))
        ),
    )
    assert calls == [(1, errors[0], 0.5, []), (2, errors[1], 1.5, [0.5])]


def test_async_cancellation_is_never_swallowed():
    """CancelledError raised in an attempt propagates even with on=BaseException."""
    time = FakeTime()

    async def main():
        async for attempt in aretrying(
            [1.0], sleep=time.asleep, clock=time.clock, on=BaseException
        ):
            async with attempt:
                raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(main())
    assert time.slept == []


def test_async_cancellation_during_the_sleep_stops_the_loop():
    """Cancelling a task while it sleeps between attempts ends it at once."""
    calls = []

    async def main():
        asleep = asyncio.Event()

        async def sleep_until_cancelled(seconds):
            asleep.set()
            await asyncio.Event().wait()  # never set: only cancellation ends it

        async def op():
            async for attempt in aretrying(constant(3600), on=OSError, sleep=sleep_until_cancelled):
                async with attempt:
                    calls.append(attempt.number)
                    raise OSError

        task = asyncio.ensure_future(op())
        await asleep.wait()  # it failed once and is now sleeping
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert calls == [1]


# -- the decorator ------------------------------------------------------------


def test_decorator_keeps_the_function_identity():
    """functools.wraps: name, docstring and __wrapped__ survive, for sync and async."""

    def fetch():
        """Fetch it."""

    async def afetch():
        """Fetch it later."""

    for func in (fetch, afetch):
        wrapped = retry([0.1])(func)
        assert wrapped.__name__ == func.__name__
        assert wrapped.__doc__ == func.__doc__
        assert wrapped.__wrapped__ is func
    assert asyncio.iscoroutinefunction(retry([0.1])(afetch))


def test_decorator_makes_fresh_delays_for_every_call():
    """Each call gets its own schedule from the factory: a used-up generator is never reused."""
    time = FakeTime()
    operation = Operation([OSError(), OSError(), "a", OSError(), OSError(), "b"])
    fetch = retry(lambda: islice(exponential(1), 2), sleep=time.sleep, clock=time.clock)(operation)
    assert fetch() == "a" and fetch() == "b"
    assert time.slept == [1.0, 2.0, 1.0, 2.0]


def test_decorator_accepts_a_plain_list():
    """A list is re-iterable, so it serves every call."""
    time = FakeTime()
    operation = Operation([OSError(), "a", OSError(), "b"])
    fetch = retry([0.25], sleep=time.sleep, clock=time.clock)(operation)
    assert (fetch(), fetch()) == ("a", "b")
    assert time.slept == [0.25, 0.25]


def test_decorator_passes_arguments_through():
    """Positional and keyword arguments reach the function on every attempt."""
    seen = []

    @retry([0.0], sleep=lambda s: None)
    def add(a, b=0):
        seen.append((a, b))
        if len(seen) == 1:
            raise OSError
        return a + b

    assert add(2, b=3) == 5
    assert seen == [(2, 3), (2, 3)]


def test_decorator_async_uses_asyncio_sleep_by_default(monkeypatch):
    """An async function sleeps with asyncio.sleep unless told otherwise."""
    slept = []

    async def fake_sleep(seconds):
        slept.append(seconds)

    monkeypatch.setattr(asyncio, "sleep", fake_sleep)
    outcomes = iter([OSError(), "ok"])

    @retry([0.75])
    async def fetch():
        outcome = next(outcomes)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    assert asyncio.run(fetch()) == "ok"
    assert slept == [0.75]


# -- the whole contract, for any schedule and failure pattern ---------------


@given(
    delays=st.lists(st.floats(min_value=0, max_value=100), max_size=8),
    failures=st.lists(st.booleans(), max_size=12),
    driver=st.sampled_from(RUNNERS),
)
def test_calls_sleeps_and_outcome_follow_the_contract(delays, failures, driver):
    """For any delays and any pattern of failures: exactly the specified calls, sleeps and outcome."""
    errors = [OSError(i) if failed else f"result {i}" for i, failed in enumerate(failures)]
    time, operation = FakeTime(), Operation(errors)
    first_success = next((i for i, failed in enumerate(failures) if not failed), len(failures))
    calls = min(first_success + 1, len(delays) + 1)
    try:
        outcome = driver(delays, operation, time, on=OSError)
    except OSError as exc:
        outcome = exc
    assert operation.calls == calls
    assert time.slept == delays[: calls - 1]
    expected = errors[calls - 1] if calls - 1 < len(errors) else "ok"
    assert outcome is expected or outcome == expected


# -- bad input ------------------------------------------------------------------


@each_driver
@pytest.mark.parametrize("bad", [-1.0, math.nan, -5])
def test_a_bad_delay_from_the_users_iterable_is_never_slept(run, bad):
    """A negative or NaN delay drawn from an iterator raises ValueError naming
    it when it is drawn; sleep never sees it."""
    time, operation = FakeTime(), Operation([OSError(), OSError()])
    with pytest.raises(ValueError, match="delays") as raised:
        run(iter([0.5, bad]), operation, time)
    assert repr(bad) in str(raised.value)
    assert time.slept == [0.5]


Pair = collections.namedtuple("Pair", "first second")


@pytest.mark.parametrize(
    "make, error, parameter, words",
    [
        (lambda: retrying([0.5, -1.0]), ValueError, "delays", ["-1.0"]),
        (lambda: retrying((0.5, math.nan)), ValueError, "delays", ["nan"]),
        (lambda: aretrying([0.5, True]), TypeError, "delays", ["True"]),
        (lambda: retry([0.1, "2"]), TypeError, "delays", ["'2'"]),
        (lambda: retry(delays=(0.1, -(10**400))), ValueError, "delays", ["-1000", "..."]),
        (lambda: retry([0.1], attempt_timeout=[5.0, -2]), ValueError, "attempt_timeout", ["-2"]),
        (lambda: retrying([1, ConnectionError]), TypeError, "delays", ["on=ConnectionError"]),
        (lambda: retrying(Pair(0.5, -1)), ValueError, "delays", ["-1"]),  # a tuple's subclass
    ],
)
def test_a_bad_delay_in_a_list_is_refused_when_the_policy_is_made(make, error, parameter, words):
    """A list or tuple is given whole: each delay is checked at once, as the
    loop would take it, before any call runs (a very long one stays allowed:
    it ends the retries)."""
    rejects(make, error, parameter, *words)
    retrying([0.5, 2, math.inf, 10**400, Fraction(1, 3), -0.0])  # numbers of seconds: accepted


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: retrying(5), TypeError, ["delays", "5"]),
        (lambda: retrying([1], on=int), TypeError, ["on", "int"]),
        (lambda: retrying([1], on="OSError"), TypeError, ["on", "'OSError'"]),
        (lambda: retrying([1], on=(OSError, 3)), TypeError, ["on", "3"]),
        # an empty tuple (a config's list of classes, found empty): silently no retry at all
        (lambda: retrying([1], on=()), ValueError, ["on", "()", "no on_result"]),
        (lambda: retry([1], on=()), ValueError, ["on", "()", "is_transient"]),
        (lambda: retrying([1], deadline=-1), ValueError, ["deadline", "-1"]),
        (lambda: retrying([1], sleep=3), TypeError, ["sleep", "3"]),
        (lambda: retrying([1], before_sleep=1), TypeError, ["before_sleep", "1"]),
        (lambda: aretrying(3.5), TypeError, ["delays", "3.5"]),
        (lambda: aretrying([1], deadline=math.nan), ValueError, ["deadline", "nan"]),
        (lambda: retry(iter([1, 2])), TypeError, ["delays", "iterator"]),
        (lambda: retry(exponential(1)), TypeError, ["delays", "lambda"]),
        (lambda: retry(delays=iter([1, 2]), on=OSError), TypeError, ["delays", "iterator"]),
        (lambda: retry([1], on=42), TypeError, ["on", "42"]),
        (lambda: retry([1], deadline=-2), ValueError, ["deadline", "-2"]),
        (lambda: retry([1])(3), TypeError, ["func", "3"]),
        # a strategy itself, bare: not the function to retry (it would be called with it)
        (lambda: retry(exponential), TypeError, ["delays", "retry exponential itself", "lambda"]),
        (lambda: retry(full_jitter), TypeError, ["delays", "full_jitter(0.1)"]),
        (
            lambda: retry(functools.partial(exponential, 0.1)),
            TypeError,
            ["delays", "exponential itself"],
        ),
    ],
)
def test_bad_arguments_raise_at_the_call(call, error, words):
    """Driver and decorator arguments are checked before anything runs."""
    rejects(call, error, *words)


def test_on_nothing_with_on_result_retries_results_alone():
    """on=() beside on_result= retries the results it rejects and no failure: the
    refusal of on=() is for a call that would retry nothing at all."""
    results = iter([None, None, "ok"])
    got = retry([0.0, 0.0], on=(), on_result=lambda r: r is None, sleep=lambda s: None)(
        lambda: next(results)
    )()
    assert got == "ok"
    with pytest.raises(OSError):
        retry([0.0], on=(), on_result=lambda r: False, sleep=lambda s: None)(
            Operation([OSError(), "never"])
        )()


def test_a_bare_retry_decorates_in_a_process_that_never_loaded_the_strategies(monkeypatch):
    """``import backoff_iter`` loads no strategy (each name on first use): a bare @retry
    then asks of no strategy module, and decorates the function it is given."""
    monkeypatch.delitem(sys.modules, "backoff_iter.strategies")

    @retry
    def fetch():
        return "ok"

    assert fetch() == "ok"


def test_a_factory_returning_a_non_iterable_is_reported_on_first_failure():
    """The delays factory runs only after a failure; a bad result names 'delays'."""
    fetch = retry(lambda: 3)(Operation([OSError()]))
    with pytest.raises(TypeError, match="delays") as raised:
        fetch()
    assert raised.value.parameter == "delays"


# -- policies are reusable; one-shot iterators say so ---------------------------


def test_a_policy_from_a_factory_or_a_list_serves_every_loop():
    """A module-level policy starts a fresh schedule on every `for`, like tenacity's Retrying."""
    time = FakeTime()
    for delays in (lambda: iter([1.0, 2.0]), [1.0, 2.0], (1.0, 2.0)):
        policy = retrying(delays, sleep=time.sleep, clock=time.clock)

        def fetch(operation, policy=policy):
            for attempt in policy:
                with attempt:
                    return operation()

        time.slept.clear()
        assert fetch(Operation([OSError(), "a"])) == "a"
        assert fetch(Operation([OSError(), OSError(), "b"])) == "b"
        assert time.slept == [1.0, 1.0, 2.0]


@pytest.mark.parametrize("make", [retrying, aretrying])
def test_a_policy_from_a_one_shot_iterator_refuses_a_second_loop(make):
    """The second loop over a used-up iterator raises RuntimeError instead of returning None."""
    policy = make(iter([1.0]), sleep=lambda s: None)
    numbers = []

    def first_loop():
        for attempt in policy:
            with attempt:
                numbers.append(attempt.number)
                if attempt.number == 1:
                    raise OSError

    async def first_async_loop():
        async for attempt in policy:
            async with attempt:
                numbers.append(attempt.number)
                if attempt.number == 1:
                    raise OSError

    first_loop() if make is retrying else asyncio.run(first_async_loop())
    assert numbers == [1, 2]  # the first loop had the iterator's delay
    with pytest.raises(RuntimeError, match="one-shot"):
        iter(policy) if make is retrying else policy.__aiter__()


def test_a_factory_is_called_only_after_a_first_failure():
    """A call that succeeds at once never builds a schedule; each retried call builds one."""
    made = []

    def factory():
        made.append(1)
        return [0.5]

    policy = retrying(factory, sleep=lambda s: None)
    for operation in (Operation(["ok"]), Operation(["ok"]), Operation([OSError(), "ok"])):
        for attempt in policy:
            with attempt:
                operation()
    assert made == [1]


# -- no delay or hint crashes the driver ----------------------------------------


@each_driver
@pytest.mark.parametrize("huge", [math.inf, 1e12, 10**400])
def test_an_infinite_or_unsleepable_delay_means_no_next_attempt(run, huge):
    """inf, a delay past the platform's sleep, or an int beyond floats: give up, re-raising the failure."""
    time, error = FakeTime(), OSError("down")
    with pytest.raises(OSError) as raised:
        run([0.5, huge, 1.0], Operation([OSError(), error]), time)
    assert raised.value is error
    assert time.slept == [0.5]


def test_an_uncapped_strategy_reaching_inf_ends_the_loop():
    """exponential(1) outgrows what the platform can sleep (then inf): the loop gives up, no OverflowError."""
    from backoff_iter import _checks

    slept = []
    operation = Operation([OSError(i) for i in range(2000)])

    def run():
        for attempt in retrying(lambda: exponential(1), sleep=slept.append):
            with attempt:
                operation()

    with pytest.raises(OSError) as raised, pytest.warns(RuntimeWarning, match="4096 s"):
        run()
    fits = [2.0**i for i in range(1024) if 2.0**i <= _checks.LONGEST]
    assert slept == fits
    assert raised.value.args == (len(fits),)


@each_driver
def test_a_server_hint_is_clamped_to_retry_after_max(run):
    """A hint of 1e12 s becomes 6 hours by default, or the configured maximum."""
    hint = lambda outcome: 1e12
    time = FakeTime()
    run([1.0], Operation([OSError()]), time, retry_after=hint)
    assert time.slept == [6 * 3600.0]
    time = FakeTime()
    run([1.0], Operation([OSError()]), time, retry_after=hint, retry_after_max=30)
    assert time.slept == [30.0]


def test_attempt_retry_after_is_clamped_too():
    """attempt.retry_after(1e12) inside the loop sleeps the maximum, not OverflowError."""
    time = FakeTime()
    for attempt in retrying([1.0], sleep=time.sleep, clock=time.clock, retry_after_max=60):
        with attempt:
            if attempt.number == 1:
                attempt.retry_after(1e12)
                raise OSError
    assert time.slept == [60.0]


# -- async hooks and sleeps --------------------------------------------------------


@pytest.mark.parametrize(
    "run", [run_async_loop, run_async_decorator], ids=["aretrying", "async retry"]
)
def test_an_async_before_sleep_is_awaited(run):
    """A coroutine hook runs to completion before each sleep (no 'never awaited')."""
    seen = []

    async def hook(attempt, exc, delay):
        await asyncio.sleep(0)
        seen.append((attempt.number, delay))

    time = FakeTime()
    run([0.5, 1.5], Operation([OSError(), OSError()]), time, before_sleep=hook)
    assert seen == [(1, 0.5), (2, 1.5)]


@pytest.mark.parametrize(
    "run", [run_async_loop, run_async_decorator], ids=["aretrying", "async retry"]
)
def test_an_async_loops_plain_sleep_may_return_anything(run):
    """A sync sleep returning a value that is not awaitable (a number, say) is called and not awaited."""
    slept = []

    def sleep(seconds):
        slept.append(seconds)
        return seconds

    time = FakeTime()
    time.asleep = sleep  # the runners hand time.asleep to the driver as its sleep
    assert run([0.5], Operation([OSError()]), time) == "ok" and slept == [0.5]


def test_an_async_function_accepts_a_plain_sleep():
    """@retry on an async def with a sync sleep= calls it and awaits nothing."""
    slept = []

    @retry([0.25, 0.5], sleep=slept.append)
    async def fetch(outcomes=iter([OSError(), OSError(), "ok"])):  # noqa: B008
        outcome = next(outcomes)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    assert asyncio.run(fetch()) == "ok"
    assert slept == [0.25, 0.5]


def test_a_sync_loop_rejects_an_async_sleep_or_hook_at_the_first_retry():
    """A coroutine returned by sleep or before_sleep in a sync loop is a TypeError naming it, and is closed."""
    import inspect

    made = []

    async def wait(seconds):
        pass

    def asleep(seconds):
        made.append(wait(seconds))
        return made[-1]

    with pytest.raises(TypeError, match="sleep") as raised:
        retry([1.0], sleep=asleep)(Operation([OSError()]))()
    assert raised.value.parameter == "sleep" and repr(asleep) in str(raised.value)
    with pytest.raises(TypeError, match="before_sleep"):
        retry([1.0], sleep=lambda s: None, before_sleep=lambda a, e, d: asleep(d))(
            Operation([OSError()])
        )()
    assert [inspect.getcoroutinestate(c) for c in made] == [
        "CORO_CLOSED"
    ] * 2  # never "never awaited"


def test_retry_over_a_sync_function_refuses_an_async_sleep_or_before_sleep_at_decoration():
    """@retry(sleep=asyncio.sleep) over a plain function or a generator function is refused
    as it decorates, naming the option (it was refused only at the first retry); over an
    async function, or given a plain function, it is taken."""
    import asyncio

    async def before_sleep(attempt, outcome, delay):
        pass

    def fetch():
        return "ok"

    def numbers():
        yield 1

    for option, hook in (("sleep", asyncio.sleep), ("before_sleep", before_sleep)):
        for function in (fetch, numbers):
            with pytest.raises(TypeError, match="async function") as raised:
                retry([1.0], **{option: hook})(function)
            assert raised.value.parameter == option and function.__qualname__ in str(raised.value)

        async def afetch():
            return "ok"

        assert asyncio.run(retry([1.0], **{option: hook})(afetch)()) == "ok"
    assert retry([1.0], sleep=lambda s: None, before_sleep=print)(fetch)() == "ok"


def test_a_sync_loop_refuses_an_async_sleep_or_before_sleep_as_it_is_made():
    """retrying(sleep=asyncio.sleep) - a sync loop, which never awaits it - is
    refused when the loop is made, naming the option (it was refused at the
    first retry: in an outage); aretrying takes both, and awaits them."""
    import asyncio

    async def before_sleep(attempt, outcome, delay):
        told.append(delay)

    for option, hook in (("sleep", asyncio.sleep), ("before_sleep", before_sleep)):
        rejects(lambda o=option, h=hook: retrying([1.0], **{o: h}), TypeError, option, "async")
    told: list[float] = []

    async def main() -> int:
        async for attempt in aretrying([0.0], on=OSError, before_sleep=before_sleep):
            async with attempt:
                if attempt.number == 1:
                    raise OSError
                return attempt.number
        raise AssertionError

    assert asyncio.run(main()) == 2 and told == [0.0]


def test_attempts_and_the_drivers_obey_a_patched_time_sleep(monkeypatch):
    """time.sleep is looked up at each sleep by attempts() and by every sync driver."""
    slept = []
    monkeypatch.setattr("time.sleep", slept.append)
    from backoff_iter import attempts

    assert list(attempts([0.5, 0.25])) == [1, 2, 3]
    retry([0.75])(Operation([OSError()]))()
    assert slept == [0.5, 0.25, 0.75]


# -- silent endings are errors -----------------------------------------------------


def test_retry_keeps_generator_functions_generator_functions():
    """@retry over a generator function (sync or async) gives a generator function of the same kind."""
    import inspect

    def numbers():
        yield 1

    async def anumbers():
        yield 1

    assert inspect.isgeneratorfunction(retry([1.0])(numbers))
    assert inspect.isasyncgenfunction(retry([1.0])(anumbers))


def test_a_loop_body_without_with_attempt_is_an_error_at_the_next_attempt():
    """Forgetting `with attempt:` cannot silently stop after one attempt."""
    with pytest.raises(RuntimeError, match="with attempt"):
        for _attempt in retrying([1.0], sleep=lambda s: None):
            pass


def test_a_stale_attempt_cannot_swallow_errors():
    """An Attempt kept after its loop ended raises RuntimeError instead of hiding a failure."""
    for attempt in retrying([1.0], sleep=lambda s: None):
        with attempt:
            pass
    with pytest.raises(RuntimeError, match="not the current attempt"):
        with attempt:
            raise OSError("lost?")


def test_a_sync_with_on_an_async_loops_attempt_is_a_type_error():
    """`with` on aretrying's attempt would block the event loop: TypeError."""

    async def main():
        async for attempt in aretrying([1.0]):
            with attempt:
                pass

    with pytest.raises(TypeError, match="async with"):
        asyncio.run(main())


def test_a_retried_stop_iteration_is_raised_from_the_loop_body():
    """StopIteration from the body, once retries run out, leaves the function (not a silent None)."""
    slept = []

    def get():
        for attempt in retrying([0.1], on=Exception, sleep=slept.append):
            with attempt:
                return next(iter([]))
        return "fell off the loop"

    with pytest.raises(StopIteration):
        get()
    assert slept == [0.1]


def test_a_retried_stop_async_iteration_does_not_end_the_async_loop_silently():
    """StopAsyncIteration from the body propagates as itself after the retries."""

    async def get():
        async for attempt in aretrying([0.1], sleep=lambda s: None):
            async with attempt:
                raise StopAsyncIteration("from the body")
        return "fell off the loop"

    with pytest.raises(StopAsyncIteration, match="from the body"):
        asyncio.run(get())


@each_driver
def test_the_on_predicate_is_asked_once_per_failure(run):
    """Three failures, three questions: a stateful predicate sees each failure once."""
    asked = []

    def on(exc):
        asked.append(exc)
        return True

    errors = [OSError(1), OSError(2), OSError(3)]
    run([0.0] * 5, Operation(errors), FakeTime(), on=on)
    assert asked == errors


@each_driver
@pytest.mark.parametrize("fatal", [KeyboardInterrupt, GeneratorExit])
def test_the_on_predicate_is_asked_of_exceptions_only(run, fatal):
    """A BaseException that is no Exception propagates unasked: on='s predicate
    takes an Exception (its type says so)."""
    asked = []
    with pytest.raises(fatal):
        run([0.0], Operation([fatal()]), FakeTime(), on=lambda exc: asked.append(exc) or True)
    assert asked == []


# -- what the user's delays yield --------------------------------------------------


@each_driver
@pytest.mark.parametrize("bad", [None, "1", True, object()])
def test_a_non_number_delay_is_a_type_error_not_the_end(run, bad):
    """None, a string, a bool drawn: TypeError naming delays, with the retried failure as context."""
    error = OSError("real")
    with pytest.raises(TypeError, match="delays") as raised:
        run(iter([bad]), Operation([error]), FakeTime())
    assert raised.value.__context__ is error


def test_a_numpy_bool_delay_is_a_type_error():
    """numpy's bool is no number of seconds either."""
    import numpy  # (matplotlib's, of the test extra)

    with pytest.raises(TypeError, match="delays"):
        run_loop(iter([numpy.bool_(True)]), Operation([OSError()]), FakeTime())
    with pytest.raises(TypeError, match="delays"):
        retrying([numpy.bool_(True)])  # in a list: when the policy is made


@each_driver
def test_every_real_number_is_slept_as_a_float(run):
    """Decimal, Fraction and ints reach sleep as floats (time.sleep rejects Decimal)."""
    from decimal import Decimal
    from fractions import Fraction

    time = FakeTime()
    run([Decimal("0.5"), Fraction(1, 4), 2, Decimal("-0")], Operation([OSError()] * 4), time)
    assert time.slept == [0.5, 0.25, 2.0, 0.0]
    assert all(type(d) is float for d in time.slept)
    assert math.copysign(1.0, time.slept[-1]) == 1.0  # Decimal("-0") as 0.0, not -0.0
    time = FakeTime()  # a float -0.0 too (it passed the plain floats' quick check as itself)
    run([-0.0, -0.0], Operation([OSError()] * 2), time)
    assert [math.copysign(1.0, slept) for slept in time.slept] == [1.0, 1.0]


class Boasting(float):
    """A float subclass whose own comparisons and conversion say anything."""

    def __float__(self):
        raise LookupError("not asked")

    def __le__(self, other):
        return True

    def __ge__(self, other):
        return True


@each_driver
def test_a_float_subclass_delay_or_hint_is_slept_as_the_plain_float_it_holds(run):
    """numpy's float64, from the delays or a retry_after hint, reaches sleep as a float (its + 0.0
    was numpy's again); a subclass's own comparisons are not asked: -1 held is refused."""
    import numpy  # (matplotlib's, of the test extra)

    time = FakeTime()
    hints = iter([None, numpy.float64(3.0)])
    delays = [numpy.float64(0.5), Boasting(0.25), numpy.float64(-0.0)]
    run(
        iter(delays),
        Operation([OSError()] * 3),
        time,
        retry_after=lambda outcome: next(hints, None),
    )
    assert time.slept == [0.5, 3.0, 0.0]
    assert [type(d) for d in time.slept] == [float] * 3
    assert math.copysign(1.0, time.slept[-1]) == 1.0
    error = OSError("real")
    with pytest.raises(ValueError, match="delays") as raised:
        run(iter([Boasting(-1.0)]), Operation([error]), FakeTime())
    assert raised.value.__context__ is error


@each_driver
def test_a_delay_whose_own_float_raises_is_a_type_error_naming_delays(run):
    """A Decimal (or any number) of the user's delays whose float() raises: TypeError naming
    delays and what broke, its error the cause, the retried failure further down the chain."""
    from decimal import Decimal

    class UnreadableDecimal(Decimal):
        def __float__(self):
            raise LookupError("no float here")

    error = OSError("real")
    with pytest.raises(TypeError, match=r"delays.*LookupError: no float here") as raised:
        run(iter([UnreadableDecimal("0.5")]), Operation([error]), FakeTime())
    assert isinstance(raised.value.__cause__, LookupError)
    assert raised.value.__cause__.__context__ is error
    with pytest.raises(TypeError, match="delays"):  # a list: when the policy is made
        retrying([UnreadableDecimal("0.5")])


@each_driver
def test_errors_of_hooks_sleep_and_delays_keep_the_failure_as_context(run):
    """before_sleep, sleep or the delays raising: the new error's __context__ is the real failure."""

    def boom(*args):
        raise LookupError("hook")

    def bad_delays():
        yield 0.5
        raise LookupError("delays")

    for options, delays, failures, raised_error in (
        ({"before_sleep": boom}, [1.0], 1, LookupError),
        ({}, iter([-1.0]), 1, ValueError),  # drawn at the failure
        ({}, bad_delays(), 2, LookupError),  # fails at the second failure's delay
    ):
        errors = [OSError(f"failure {i}") for i in range(failures)]
        with pytest.raises(raised_error) as raised:
            run(delays, Operation(errors), FakeTime(), **options)
        assert raised.value.__context__ is errors[-1]


def test_an_error_of_sleep_keeps_the_failure_as_context():
    """A sleep that raises (KeyboardInterrupt, say) chains to the failure it was waiting after."""
    error = OSError("real")

    def sleep(seconds):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt) as raised:
        retry([1.0], sleep=sleep)(Operation([error]))()
    assert raised.value.__context__ is error
    with pytest.raises(KeyboardInterrupt) as raised:
        for attempt in retrying([1.0], sleep=sleep):
            with attempt:
                raise error
    assert raised.value.__context__ is error


@pytest.mark.parametrize("bad", [math.nan, -1.0, "5"])
def test_a_bad_hint_is_the_callers_bug_and_propagates(bad):
    """attempt.retry_after(nan) raises at once and is never retried, even with on=Exception."""
    calls = []
    with pytest.raises((ValueError, TypeError), match="seconds"):
        for attempt in retrying([0.0] * 3, sleep=lambda s: None):
            with attempt:
                calls.append(attempt.number)
                attempt.retry_after(bad)
    assert calls == [1]


@pytest.mark.skipif(not hasattr(asyncio.Task, "cancelling"), reason="Task.cancelling() is 3.11+")
def test_no_retry_while_the_task_is_being_cancelled():
    """A body that turns the task's cancellation into an error is not retried: CancelledError ends it."""
    calls = []

    async def body():
        async for attempt in aretrying([0.0] * 5, on=Exception, sleep=lambda s: None):
            async with attempt:
                calls.append(attempt.number)
                try:
                    await asyncio.sleep(10)
                except asyncio.CancelledError:
                    raise ValueError("swallowed the cancellation") from None  # as a TaskGroup can

    async def main():
        task = asyncio.ensure_future(body())
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert calls == [1]


needs_task_groups = pytest.mark.skipif(
    sys.version_info < (3, 11), reason="TaskGroup and Task.cancelling() are 3.11+"
)


def in_group(exc):
    """The README's predicate: a ConnectionError, alone or inside an exception group."""
    return isinstance(exc, ConnectionError) or (
        isinstance(exc, BaseExceptionGroup)  # noqa: F821 - the tests using it need 3.11
        and exc.subgroup(ConnectionError) is not None
    )


async def handle_a_task_group_error():
    """What every asyncio service does at some point: a TaskGroup child fails, the
    caller handles the group.  On 3.11 and 3.12 the task keeps cancelling() == 1."""

    async def child():
        raise OSError("child failed")

    with pytest.raises(ExceptionGroup):  # noqa: F821 - 3.11+, as the tests using it
        async with asyncio.TaskGroup() as group:
            group.create_task(child())


async def leave_a_stale_cancellation():
    """A cancellation caught without uncancel(): cancelling() stays 1 on any 3.11+."""
    asyncio.current_task().cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.sleep(0)


@needs_task_groups
@pytest.mark.parametrize(
    "before",
    [
        handle_a_task_group_error,
        pytest.param(
            leave_a_stale_cancellation,
            marks=pytest.mark.skipif(
                sys.version_info >= (3, 13),
                reason="3.13's TaskGroup takes cancelling() > 0 for a pending cancellation and"
                " re-cancels the task itself: a stale count is a real cancellation there",
            ),
        ),
    ],
)
@pytest.mark.parametrize("form", ["aretrying", "@retry"])
def test_a_handled_task_group_error_does_not_poison_later_retries(before, form):
    """After the task handled a TaskGroup error, the README's TaskGroup pattern still retries."""
    calls = []

    async def attempt_once():
        calls.append(1)
        if len(calls) < 3:
            async with asyncio.TaskGroup() as group:
                group.create_task(asyncio.sleep(0))
                raise ConnectionError("reset")
        return len(calls)

    async def main():
        await before()
        if form == "@retry":
            return await retry([0.0] * 3, on=in_group, sleep=lambda s: None)(attempt_once)()
        async for attempt in aretrying([0.0] * 3, on=in_group, sleep=lambda s: None):
            async with attempt:
                return await attempt_once()

    assert asyncio.run(main()) == 3
    assert len(calls) == 3


@needs_task_groups
@pytest.mark.parametrize("form", ["aretrying", "@retry"])
def test_a_stale_cancellation_before_the_call_is_no_cancellation_of_it(form):
    """cancelling() is 1 when the call begins (a cancellation caught earlier, never
    uncancelled): plain failures are still retried - the call counts from 1, not 0."""
    calls = []

    async def attempt_once():
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionError("reset")
        return len(calls)

    async def main():
        await leave_a_stale_cancellation()
        if form == "@retry":
            return await retry([0.0] * 3, on=ConnectionError, sleep=lambda s: None)(attempt_once)()
        async for attempt in aretrying([0.0] * 3, on=ConnectionError, sleep=lambda s: None):
            async with attempt:
                return await attempt_once()

    assert asyncio.run(main()) == 3


@needs_task_groups
@pytest.mark.parametrize("form", ["aretrying", "@retry"])
def test_a_task_cancelled_after_a_stale_cancellation_still_stops(form):
    """With cancelling() already 1 at the start, a new cancellation turned into an error ends the loop."""
    calls = []
    started = asyncio.Event()

    async def swallow_cancellation():
        calls.append(1)
        started.set()
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            raise ValueError("swallowed the cancellation") from None  # as a TaskGroup can

    async def body():
        await leave_a_stale_cancellation()
        if form == "@retry":
            return await retry([0.0] * 5, on=Exception, sleep=lambda s: None)(
                swallow_cancellation
            )()
        async for attempt in aretrying([0.0] * 5, on=Exception, sleep=lambda s: None):
            async with attempt:
                await swallow_cancellation()

    async def main():
        task = asyncio.ensure_future(body())
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert calls == [1]


def test_a_slow_before_sleep_hook_cannot_push_the_sleep_past_the_deadline():
    """The sleep is shortened after the hook, so the next attempt still starts by the deadline."""
    time = FakeTime()

    def slow_hook(attempt, exc, delay):
        time.now += 4.0

    with pytest.raises(OSError):
        for attempt in retrying(
            [5.0, 5.0], sleep=time.sleep, clock=time.clock, deadline=8, before_sleep=slow_hook
        ):
            with attempt:
                raise OSError
    assert time.slept == [4.0]  # 4 s hook + 4 s sleep = the 8 s deadline
    assert time.now == 108.0


@each_driver
def test_a_hook_that_runs_past_the_deadline_starts_no_attempt(run):
    """A before_sleep hook of 2 s with a 1 s deadline: no sleep, no second attempt, a give-up for the deadline."""
    time, events = FakeTime(), []

    def slow_hook(attempt, exc, delay):
        time.now += 2.0

    operation = Operation([OSError()] * 3)
    with pytest.raises(OSError):
        run(
            [0.5, 0.5],
            operation,
            time,
            deadline=1,
            before_sleep=slow_hook,
            observe=events.append,
        )
    assert time.slept == [] and operation.calls == 1
    assert [(e.kind, e.number, e.reason) for e in events] == [("give_up", 1, "deadline")]


class AttemptsOnlyTime(FakeTime):
    """A clock that only the attempts move: its sleeps leave it behind (a coarse
    clock, or a sleep that is not the clock's own)."""

    def sleep(self, seconds):
        self.slept.append(seconds)


@each_driver
@pytest.mark.parametrize("delay, slept", [(8.0, [6.0]), (6.0, [6.0, 2.0])])
def test_the_sleep_the_deadline_shortened_is_the_last_even_if_the_clock_lags(run, delay, slept):
    """Attempts of 4 s, deadline 10: a delay of 8 is cut to 6 and is the last; one of 6 just fits, and the next is cut."""
    time = AttemptsOnlyTime()
    operation = Operation([OSError(i) for i in range(5)], time, duration=4.0)
    with pytest.raises(OSError) as raised:
        run(constant(delay), operation, time, deadline=10)
    assert time.slept == slept
    assert operation.calls == len(slept) + 1 and raised.value.args == (len(slept),)


@each_driver
def test_a_server_hint_ending_exactly_on_the_deadline_is_slept(run):
    """A 10 s hint with 10 s left is honoured; the next failure then finds no time left."""
    time = FakeTime()
    errors = [OSError("first"), OSError("second"), OSError("third")]
    with pytest.raises(OSError) as raised:
        run(constant(1), Operation(errors), time, deadline=10, retry_after=lambda o: 10.0)
    assert time.slept == [10.0] and raised.value is errors[1]


def test_the_longer_of_the_hooks_hint_and_the_attempts_hint_is_slept():
    """attempt.retry_after() and the retry_after hook both ask: the longer wait wins, whichever asked it."""
    for in_body, from_hook in ((5.0, 3.0), (3.0, 5.0)):
        time = FakeTime()
        for attempt in retrying(
            [1.0], sleep=time.sleep, clock=time.clock, retry_after=lambda o, h=from_hook: h
        ):
            with attempt:
                if attempt.number == 1:
                    attempt.retry_after(in_body)
                    raise OSError
        assert time.slept == [5.0], (in_body, from_hook)


class CountingClock(FakeTime):
    """FakeTime that counts its readings."""

    readings = 0

    def clock(self):
        self.readings += 1
        return self.now


@each_driver
@pytest.mark.usefixtures("no_process_hooks")
def test_with_a_deadline_and_no_hook_each_retry_reads_the_clock_twice_at_most(run):
    """The start, then per retry the time left and the next attempt's start, which
    the loops hand to their body (attempt.elapsed); @retry's attempts, which nobody
    is handed, read no start.  The last, shortened sleep ends it unread."""
    time = CountingClock()
    with pytest.raises(OSError):
        run(constant(4.0), Operation([OSError()] * 5), time, deadline=10)
    assert time.slept == [4.0, 4.0, 2.0]  # three retries; the fourth failure stands
    handed = run in (run_loop, run_async_loop)
    assert time.readings == 1 + (2 if handed else 1) * 3


# -- budgets hear every attempt ----------------------------------------------------------


@each_driver
def test_a_retry_budget_hears_which_attempt_was_a_calls_first(run):
    """RetryBudget (ratio 1, no reserve) deposits once per call, at its first attempt's outcome."""
    from backoff_iter import RetryBudget

    budget = RetryBudget(ratio=1.0, min_per_second=0.0, clock=lambda: 0.0)
    calls = []
    for script in (
        [OSError(), "ok"],  # deposits at its first failure, retries once; the success adds nothing
        [OSError()] * 5,  # one deposit, one retry, then refused
        ["ok"],  # a success at once deposits
        [OSError()] * 5,  # its deposit and the one left: two retries
    ):
        operation = Operation(script)
        with contextlib.suppress(OSError):
            run([0.0] * 5, operation, FakeTime(), budget=budget)
        calls.append(operation.calls)
    assert calls == [2, 2, 1, 3]


class Ledger:
    """A budget of one's own (the Budget protocol) that writes down what the driver tells it."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.log = []

    def record_success(self, first_attempt, spent=0.0):
        self.log.append(("success", first_attempt, spent))

    def record_failure(self, first_attempt):
        self.log.append(("failure", first_attempt))

    def try_retry(self, outcome):
        self.log.append(("try", outcome))
        return self.answers.pop(0)


@each_driver
def test_a_budget_of_ones_own_hears_every_outcome_and_what_the_last_retry_took(run):
    """Failures and successes with their first-attempt flag, each retry asked, spent = what the last try_retry gave."""
    errors = [OSError(1), OSError(2)]
    ledger = Ledger([1.5, 2.5])
    assert run([0.0] * 3, Operation(errors), FakeTime(), budget=ledger) == "ok"
    assert ledger.log == [
        ("failure", True),
        ("try", errors[0]),
        ("failure", False),
        ("try", errors[1]),
        ("success", False, 2.5),
    ]
    ledger = Ledger([0])  # refuses: the failure stands
    with pytest.raises(OSError):
        run([0.0] * 3, Operation([errors[0]]), FakeTime(), budget=ledger)
    assert ledger.log == [("failure", True), ("try", errors[0])]
    ledger = Ledger([])
    assert run([0.0], Operation([]), FakeTime(), budget=ledger) == "ok"
    assert ledger.log == [("success", True, 0.0)]


# -- no leaks ----------------------------------------------------------------------


def finish(coroutine):
    """Run a coroutine that never really awaits, without an event loop (which makes cycles of its own)."""
    try:
        coroutine.send(None)
    except StopIteration as stop:
        return stop.value
    raise AssertionError("the coroutine suspended")


def test_a_retried_call_leaves_no_reference_cycle():
    """After calls with retries (success or give-up), in every form, the garbage collector finds nothing."""
    import gc

    def flaky(counts, failures):
        counts.append(1)
        if len(counts) <= failures:
            raise OSError("flaky")  # no local keeps the exception: no cycle of the test's own
        return "ok"

    async def aflaky(counts, failures):
        return flaky(counts, failures)

    def loop(delays, failures):
        counts = []
        for attempt in retrying(delays, sleep=lambda s: None):
            with attempt:
                return flaky(counts, failures)

    async def aloop(delays, failures):
        counts = []
        async for attempt in aretrying(delays, sleep=lambda s: None):
            async with attempt:
                return flaky(counts, failures)

    decorated = retry([0.0, 0.0], sleep=lambda s: None)(flaky)
    adecorated = retry([0.0, 0.0], sleep=lambda s: None)(aflaky)
    calls = [
        lambda f: loop([0.0, 0.0], f),
        lambda f: finish(aloop([0.0, 0.0], f)),
        lambda f: decorated([], f),
        lambda f: finish(adecorated([], f)),
    ]
    gc.collect()
    gc.disable()
    try:
        for call in calls:
            assert call(2) == "ok"
            try:
                call(5)
            except OSError:
                pass
            else:
                raise AssertionError("gave up without raising")
            assert gc.collect() == 0, call
    finally:
        gc.enable()


def test_the_filter_cache_stays_bounded():
    """10,000 exception classes made on the fly do not all stay alive in the cache."""
    from backoff_iter import _filters

    for i in range(10_000):
        retrying([1.0], on=type(f"Error{i}", (Exception,), {}))
    assert len(_filters._FILTERS) <= 256


def test_threads_making_policies_of_new_exception_classes_at_once_fail_none(switching_often):
    """8 threads x 5,000 policies, each on= classes the full cache no longer holds: none
    fails, and the cache stays bounded (two threads evicting the oldest at once both chose
    it, the second's del raising KeyError out of retrying(); or one changed it while
    another iterated it, a RuntimeError)."""
    import threading
    from itertools import chain, repeat

    from backoff_iter import _filters

    classes = [type(f"Error{i}", (Exception,), {}) for i in range(4000)]
    barrier, failed = threading.Barrier(8), []

    def make(first):
        barrier.wait()
        for i in chain.from_iterable(repeat(range(first, 4000, 8), 10)):
            try:
                retrying([1.0], on=(classes[i], OSError))
            except Exception as error:  # what fails is the point
                failed.append(error)

    in_threads(make, numbered=True)
    assert failed == []
    assert len(_filters._FILTERS) <= 256


# -- retry on a result ---------------------------------------------------------------


@each_driver
def test_a_result_on_result_accepts_is_retried_and_the_last_result_returned(run):
    """on_result retries 503s; when the delays run out the last result comes back, not an error."""
    time = FakeTime()
    is_503 = lambda result: result == 503
    assert run([1.0, 2.0], Operation([503, 503, 200]), time, on_result=is_503) == 200
    assert time.slept == [1.0, 2.0]
    time = FakeTime()
    assert run([1.0], Operation([503, 503, 503]), time, on_result=is_503) == 503
    assert time.slept == [1.0]


@pytest.mark.parametrize("breaker", [False, True])  # the bare first try, with a check or none
@each_driver
def test_on_result_is_asked_once_per_result_and_the_parts_hear_each(run, breaker):
    """Each result is judged once - the first try's too, which @retry makes bare - and a part
    hears it as the loop tells it: a result on_result rejects is a failure, the last a success."""
    from backoff_iter import CircuitBreaker
    from backoff_iter.parts import Part

    asked, heard = [], []

    class Hears(Part):
        def after_attempt(self, outcome, kind, number, spent):
            heard.append((outcome, kind, number))

    def judge(result):
        asked.append(result)
        return result == 503

    options = {"breaker": CircuitBreaker(failure_ratio=0.9)} if breaker else {}
    operation = Operation([503, 200])
    assert (
        run([1.0, 1.0], operation, FakeTime(), on_result=judge, parts=[Hears()], **options) == 200
    )
    assert asked == [503, 200] and operation.calls == 2
    assert heard == [(503, "failure", 1), (200, "success", 2)]
    asked.clear(), heard.clear()
    assert run([1.0], Operation(["ok"]), FakeTime(), on_result=judge, parts=[Hears()]) == "ok"
    assert asked == ["ok"] and heard == [("ok", "success", 1)]
    asked.clear(), heard.clear()  # no delay: the rejected first result is the call's
    assert run([], Operation([503]), FakeTime(), on_result=judge, parts=[Hears()]) == 503
    assert asked == [503] and heard == [(503, "failure", 1)]


@each_driver
def test_the_retry_after_hook_sees_the_retried_result(run):
    """retry_after(outcome) gets the result on_result accepted; its number raises the next sleep."""
    time = FakeTime()
    hint = lambda outcome: 7.0 if outcome == 429 else None
    run(
        [1.0, 1.0], Operation([429, 500, 200]), time, on_result=lambda r: r >= 400, retry_after=hint
    )
    assert time.slept == [7.0, 1.0]


def test_on_result_without_a_handed_over_result_is_an_error():
    """With on_result, a loop body that never calls set_result cannot be judged: RuntimeError."""
    with pytest.raises(RuntimeError, match="set_result"):
        for attempt in retrying([1.0], on_result=bool, sleep=lambda s: None):
            with attempt:
                pass


@pytest.mark.parametrize(
    "hint, error",
    [(lambda o: "soon", TypeError), (lambda o: math.nan, ValueError), (lambda o: -1, ValueError)],
)
@each_driver
def test_a_retry_after_hook_returning_a_bad_value_names_it(run, hint, error):
    """A non-number, NaN or negative hint is a clear error naming retry_after."""
    with pytest.raises(error, match="retry_after") as raised:
        run([1.0], Operation([OSError()]), FakeTime(), retry_after=hint)
    assert raised.value.parameter == "retry_after"


@each_driver
def test_a_hook_that_raises_propagates_as_itself(run):
    """A bug in on_result or retry_after is never swallowed or retried."""
    bug = ZeroDivisionError("hook bug")

    def hook(outcome):
        raise bug

    with pytest.raises(ZeroDivisionError) as raised:
        run([1.0], Operation([OSError()]), FakeTime(), retry_after=hook)
    assert raised.value is bug
    with pytest.raises(ZeroDivisionError):
        run([1.0], Operation([5]), FakeTime(), on_result=hook)


# -- the scenario model: results, hints, budgets and factories together --------------


def model(delays, outcomes, hints, max_tokens):
    """What the contract says happens: (calls, sleeps, final outcome index, tokens left)."""
    tokens, sleeps = max_tokens * 1000, []
    for i, outcome in enumerate(outcomes):
        if outcome == "ok":
            tokens = min(max_tokens * 1000, tokens + 100)
            return i + 1, sleeps, i, tokens
        tokens = max(0, tokens - 1000)
        if i >= len(delays):
            return i + 1, sleeps, i, tokens
        delay = delays[i]
        if hints[i] is not None:
            delay = max(delay, min(hints[i], 60.0))
        if not tokens > max_tokens * 1000 / 2:
            return i + 1, sleeps, i, tokens
        sleeps.append(delay)
    raise AssertionError("outcomes end with ok")


@given(
    delays=st.lists(st.floats(min_value=0, max_value=100), max_size=6),
    outcomes=st.lists(st.sampled_from(["error", "bad", "ok"]), max_size=8),
    hints=st.lists(st.none() | st.floats(min_value=0, max_value=1e6), min_size=9, max_size=9),
    max_tokens=st.integers(min_value=1, max_value=8),
    factory=st.booleans(),
    driver=st.sampled_from(RUNNERS),
)
def test_results_hints_budgets_and_factories_follow_the_model(
    delays, outcomes, hints, max_tokens, factory, driver
):
    """Errors and results on_result rejects, server hints, a token bucket: calls, sleeps and outcome as modelled."""
    from backoff_iter import TokenBucket

    outcomes = [*outcomes, "ok"]
    script = [
        OSError(i) if o == "error" else (f"bad {i}" if o == "bad" else f"ok {i}")
        for i, o in enumerate(outcomes)
    ]
    hint_of = {id(s) if isinstance(s, Exception) else s: h for s, h in zip(script, hints)}
    bucket = TokenBucket(max_tokens=max_tokens, token_ratio=0.1)
    calls, sleeps, final, tokens = model(delays, outcomes, hints, max_tokens)
    time, operation = FakeTime(), Operation(script)
    given_delays = (lambda: iter(delays)) if factory else delays
    if driver in (run_decorator, run_async_decorator) and factory:
        given_delays = delays  # the runner wraps it in a factory itself
    try:
        outcome = driver(
            given_delays,
            operation,
            time,
            on=OSError,
            budget=bucket,
            retry_after_max=60,
            on_result=lambda r: r.startswith("bad"),
            retry_after=lambda o: hint_of[id(o) if isinstance(o, Exception) else o],
        )
    except OSError as exc:
        outcome = exc
    assert operation.calls == calls
    assert time.slept == sleeps
    assert outcome is script[final] or outcome == script[final]
    assert bucket.tokens == tokens / 1000


def test_a_non_callable_clock_is_rejected():
    """clock= must be callable, named in the error."""
    rejects(lambda: retrying([1.0], clock=5), TypeError, "clock", "5")
    rejects(lambda: retry([1.0], clock="now"), TypeError, "clock")


def test_whole_number_checks_reject_bools():
    """True is not a count of 1."""
    from backoff_iter import _checks

    rejects(lambda: _checks.count("runs", True), TypeError, "runs", "True")
    assert _checks.count("runs", 3) == 3


@pytest.mark.skipif(sys.version_info < (3, 11), reason="ExceptionGroup is new in Python 3.11")
def test_an_exception_group_is_not_matched_by_its_members_class():
    """on=ConnectionError lets an ExceptionGroup of them pass; the README's predicate retries it."""
    group = ExceptionGroup("task group", [ConnectionError("reset")])  # noqa: F821
    with pytest.raises(ExceptionGroup):  # noqa: F821
        run_loop([0.0], Operation([group]), FakeTime(), on=ConnectionError)

    def on(exc):
        return isinstance(exc, ConnectionError) or (
            isinstance(exc, BaseExceptionGroup)  # noqa: F821
            and exc.subgroup(ConnectionError) is not None
        )

    assert run_loop([0.0], Operation([group]), FakeTime(), on=on) == "ok"


# -- the last defects: huge and negative numbers, async objects, futures -------------------


@each_driver
def test_a_negative_delay_too_large_for_a_float_is_a_value_error(run):
    """-10**400 is negative, not -inf to sleep: ValueError naming delays, and nothing slept."""
    from backoff_iter.testing import no_sleep

    time = FakeTime()
    with no_sleep() as recorded, pytest.raises(ValueError, match="delays") as raised:
        run([-(10**400)], Operation([OSError()]), time, retry_after=lambda o: 5.0)
    assert isinstance(raised.value, ArgumentValueError) and raised.value.parameter == "delays"
    assert time.slept == [] and recorded == []


#: An integer of more digits than str() converts (4300 by default, since 3.9.14).
ENORMOUS = 10**5000
beyond_str = pytest.mark.skipif(
    not getattr(sys, "get_int_max_str_digits", lambda: 0)(), reason="str() converts any int"
)


@beyond_str
@each_driver
def test_a_negative_delay_of_more_digits_than_str_converts_is_a_value_error_naming_delays(run):
    """-10**5000, beyond str()'s digits: ArgumentValueError naming delays and
    counting its digits, not the int-to-string conversion's own ValueError."""
    with pytest.raises(ArgumentValueError) as raised:
        run(iter([-ENORMOUS]), Operation([OSError()]), FakeTime(), on=OSError)
    assert raised.value.parameter == "delays" and "5001 digits" in str(raised.value)


@beyond_str
@pytest.mark.parametrize(
    "make, parameter",
    [
        (lambda: retrying([0.5, -ENORMOUS]), "delays"),
        (lambda: retrying(deadline=-ENORMOUS), "deadline"),
        (lambda: aretrying(retry_after_max=-ENORMOUS), "retry_after_max"),
        (lambda: retry(attempt_timeout=-ENORMOUS), "attempt_timeout"),
        (lambda: exponential(1, cap=-ENORMOUS), "cap"),
    ],
)
def test_an_option_of_more_digits_than_str_converts_is_refused_naming_it(make, parameter):
    """An integer beyond str()'s digits given as an option is refused as any
    bad value is, naming its parameter and its count of digits."""
    rejects(make, ValueError, parameter, "5001 digits")


@pytest.mark.parametrize(
    "enormous", [10**400, ENORMOUS, Fraction(10**400, 3)], ids=["10**400", "10**5000", "fraction"]
)
def test_an_option_that_may_be_endless_takes_a_number_beyond_floats_as_endless(enormous):
    """An option that takes ``inf`` takes an int or a fraction beyond floats
    as ``inf`` too, as the delays and a server's hints do (``1e300`` was
    taken and ``10**400`` refused as too large for a float)."""
    assert retrying(deadline=enormous).deadline == math.inf
    assert retrying(retry_after_max=enormous).retry_after_max == math.inf
    assert list(capped([1.0, 7.0], enormous)) == [1.0, 7.0]
    assert next(exponential(2.0, cap=enormous)) == 2.0
    timed = retrying([], attempt_timeout=enormous, sleep=lambda seconds: None)
    for attempt in timed:
        with attempt:
            assert attempt.timeout == math.inf
    with pytest.raises(ArgumentValueError, match="base is too large for a float"):
        exponential(enormous)  # one that must be finite is still refused


@beyond_str
@pytest.mark.parametrize(
    "make, parameter",
    [
        (lambda: retrying(clock=ENORMOUS), "clock"),
        (lambda: retrying(ENORMOUS), "delays"),
        (lambda: retrying(observe=ENORMOUS), "observe"),
        (lambda: full_jitter(1.0, rng=ENORMOUS), "rng"),
        (lambda: TokenBucket(store=ENORMOUS), "store"),
        (lambda: retrying(sleep=ENORMOUS), "sleep"),
    ],
)
def test_any_argument_of_more_digits_than_str_converts_is_refused_naming_it(make, parameter):
    """Not only a number's: wherever an error echoes what it was given, an
    integer beyond str()'s digits is described, not a crash of its own."""
    rejects(make, (TypeError, ValueError), parameter, "5001 digits")


@beyond_str
def test_a_breaker_of_more_than_str_converts_shows_itself():
    """repr() of a breaker keeps its arguments as given: an enormous one is described."""
    shown = repr(CircuitBreaker(minimum_throughput=ENORMOUS, break_duration=ENORMOUS))
    assert "minimum_throughput=an integer of 5001 digits" in shown
    assert "break_duration=an integer of 5001 digits" in shown


@beyond_str
def test_an_argument_count_of_more_digits_than_str_converts_is_refused_naming_it():
    """A whole number too small and beyond str()'s digits: refused, its digits counted."""
    rejects(lambda: _checks.count("retries", -ENORMOUS), ValueError, "retries", "5001 digits")


def test_attempts_refuses_a_negative_delay_too_large_for_a_float():
    """attempts([-10**400]) raises ValueError at the sleep, as for any negative delay."""
    from backoff_iter import attempts

    with pytest.raises(ValueError, match="delays"):
        list(attempts([-(10**400)], sleep=lambda s: None))


@each_driver
def test_a_hint_too_large_for_a_float_is_clamped_to_retry_after_max(run):
    """A hook's hint of 10**400 sleeps retry_after_max, like any long hint, with no error."""
    time = FakeTime()
    run([1.0], Operation([OSError()]), time, retry_after=lambda o: 10**400, retry_after_max=60)
    assert time.slept == [60.0]


def test_attempt_retry_after_too_large_for_a_float_is_clamped():
    """attempt.retry_after(10**400) clamps to retry_after_max too."""
    time = FakeTime()
    for attempt in retrying([1.0], sleep=time.sleep, clock=time.clock, retry_after_max=30):
        with attempt:
            if attempt.number == 1:
                attempt.retry_after(10**400)
                raise OSError
    assert time.slept == [30.0]


def test_retry_retries_an_object_whose_call_is_async():
    """An instance with `async def __call__` is decorated as async: awaiting it retries."""

    class Client:
        def __init__(self):
            self.calls = 0

        async def __call__(self, path):
            self.calls += 1
            if self.calls < 3:
                raise ConnectionError(path)
            return f"got {path}"

    client = Client()
    fetch = retry([0.0, 0.0], sleep=lambda s: None)(client)
    assert asyncio.run(fetch("/x")) == "got /x" and client.calls == 3


@pytest.mark.parametrize("which", ["sleep", "before_sleep"])
def test_a_future_from_a_sync_loops_sleep_or_hook_is_a_type_error(which):
    """An asyncio.Future (no close()) returned in a sync loop: TypeError naming it, not AttributeError."""
    loop = asyncio.new_event_loop()
    try:
        future = loop.create_future()
        options = (
            {"sleep": lambda s: future}
            if which == "sleep"
            else {"sleep": lambda s: None, "before_sleep": lambda a, o, d: future}
        )
        with pytest.raises(TypeError, match=which) as raised:
            retry([1.0], **options)(Operation([OSError()]))()
        assert raised.value.parameter == which
        assert not future.cancelled()  # left alone: not ours to close
    finally:
        loop.close()


# -- a safe default: delays may be omitted, and a bare @retry works ---------------------------


def test_the_default_schedule_has_an_end():
    """No delays given: at most 10 attempts and 45 s of sleep, each sleep at most 5 s."""
    from backoff_iter import default_delays

    for seed in range(50):
        import random

        random.seed(seed)
        delays = list(default_delays())
        assert 1 <= len(delays) <= 9 and sum(delays) <= 45.0 and max(delays) <= 5.0
    time, operation = FakeTime(), Operation([OSError()] * 100)
    with pytest.raises(OSError):
        run_loop(None, operation, time)
    assert operation.calls <= 10 and sum(time.slept) <= 45.0


@pytest.mark.parametrize("form", ["retrying", "aretrying", "retry"])
def test_every_driver_takes_no_delays(form):
    """retrying(), aretrying() and @retry() give up on the default schedule, never run forever."""
    operation = Operation([OSError()] * 100)
    time = FakeTime()
    with pytest.raises(OSError):
        if form == "retrying":
            for attempt in retrying(sleep=time.sleep, clock=time.clock):
                with attempt:
                    operation()
        elif form == "aretrying":

            async def main():
                async for attempt in aretrying(sleep=time.asleep, clock=time.clock):
                    async with attempt:
                        operation()

            asyncio.run(main())
        else:
            retry(sleep=time.sleep)(operation)()
    assert 2 <= operation.calls <= 10 and 0 < sum(time.slept) <= 45.0


def test_a_bare_retry_decorates_with_the_defaults():
    """@retry without parentheses decorates at once: sync, async, with or without arguments."""
    from backoff_iter.testing import no_sleep

    replies = iter([ConnectionError(), "pong"])

    @retry
    def ping():
        reply = next(replies)
        if isinstance(reply, Exception):
            raise reply
        return reply

    @retry
    def echo(text, *, times=1):
        return text * times

    calls = []

    @retry
    async def aping():
        calls.append(1)
        if len(calls) < 2:
            raise ConnectionError
        return "apong"

    with no_sleep() as slept:
        assert ping() == "pong" and echo("a", times=2) == "aa"
        assert asyncio.run(aping()) == "apong"
    assert len(slept) == 2 and all(0 <= s <= 5 for s in slept)
    assert ping.__name__ == "ping" and echo.__wrapped__.__name__ == "echo"


def test_a_named_function_of_no_arguments_still_serves_as_delays():
    """@retry(my_delays) over another function: my_delays is the schedule, as before."""

    def my_delays():
        return [0.25, 0.5]

    slept = []
    calls = []

    @retry(my_delays)
    def fetch(path):
        calls.append(path)
        if len(calls) < 3:
            raise OSError
        return path

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("time.sleep", slept.append)
        assert fetch("/a") == "/a"
    assert slept == [0.25, 0.5]


def test_a_bare_retried_function_called_with_a_callable_and_keywords_is_called():
    """my_delays(print, x=1) is a call of the function, not a decoration: its own TypeError."""

    @retry
    def my_delays():
        return [0.25]

    with pytest.raises(TypeError, match="argument"):
        my_delays(print, x=1)
    assert my_delays() == [0.25]


def test_a_callable_iterator_is_the_delays_not_the_decorated_function():
    """An iterator that is also callable is delays, refused as one-shot: never decorated."""

    class Ticks:
        def __iter__(self):
            return self

        def __next__(self):
            return 0.0

        def __call__(self):
            raise AssertionError("never called: it is the delays")

    rejects(lambda: retry(Ticks()), TypeError, "delays", "iterator")


def test_a_lambda_is_always_the_delays():
    """retry(lambda: ...) alone is a decorator factory, never a decorated lambda."""
    decorate = retry(lambda: [0.0])
    flaky = Operation([OSError()])
    assert decorate(flaky)() == "ok" and flaky.calls == 2


# -- give_up= and the events every driver reports -----------------------------------------------


@each_driver
def test_give_up_is_told_once_with_the_last_attempt_and_outcome(run):
    """give_up(attempt, outcome) runs when the delays run out, not on success or a foreign error."""
    told = []
    errors = [OSError(1), OSError(2)]
    with pytest.raises(OSError):
        run([0.1], Operation(errors), FakeTime(), give_up=lambda a, o: told.append((a.number, o)))
    assert told == [(2, errors[1])]
    told.clear()
    with pytest.raises(OSError):  # no delay at all: the first attempt, @retry's bare one too
        run([], Operation(errors), FakeTime(), give_up=lambda a, o: told.append((a.number, o)))
    assert told == [(1, errors[0])]
    told.clear()
    run([0.1], Operation([OSError()]), FakeTime(), give_up=lambda a, o: told.append(o))
    with pytest.raises(KeyError):
        run([0.1], Operation([KeyError()]), FakeTime(), on=OSError, give_up=told.append)
    assert told == []


def events_of(run, delays, outcomes, **options):
    """The (kind, number, delay, slept, reason) of every event a driver reported, and its outcome."""
    seen = []
    time = FakeTime()
    try:
        result = run(delays, Operation(outcomes, time, 1.0), time, observe=seen.append, **options)
    except Exception as exc:
        result = exc
    return [(e.kind, e.number, e.delay, e.slept, e.reason) for e in seen], seen, result


@each_driver
def test_three_failures_then_success_report_three_retries_and_a_success(run):
    """One event per attempt: retry, retry, retry, success; delays and the time slept so far."""
    summary, events, result = events_of(run, [0.5, 1.0, 2.0, 4.0], [OSError()] * 3)
    assert result == "ok"
    assert summary == [
        ("retry", 1, 0.5, 0.0, None),
        ("retry", 2, 1.0, 0.5, None),
        ("retry", 3, 2.0, 1.5, None),
        ("success", 4, None, 3.5, None),
    ]
    assert [e.elapsed for e in events] == [1.0, 2.5, 4.5, 7.5]  # each attempt takes 1 s
    assert len({e.call_id for e in events}) == 1 and events[0].call_id > 0
    assert all(isinstance(e.outcome, OSError) for e in events[:3])
    # The result, when the driver saw it (a loop body that returns hands over none).
    assert events[3].outcome == ("ok" if run in (run_decorator, run_async_decorator) else None)


@pytest.mark.parametrize("limited", [False, True])  # a CUBIC limiter that is off, or none
@pytest.mark.parametrize("readings", [[100.0, 101.0], [math.nan, 5.0]])
@each_driver
def test_a_success_at_once_is_one_event_alike_in_every_form(
    run, readings, limited, no_process_hooks
):
    """A first attempt that succeeds (@retry's runs bare) is one success event, with the same
    fields in every form: the clock read as the call began and at the event (a first reading
    that is NaN starts the call at the next one), the policy's hooks and the process's told."""
    from backoff_iter import CubicRateLimiter, instrument

    clock = FakeTime()
    clock.clock = iter(readings).__next__  # read twice: as the call begins, at its event
    mine, everyones = [], []
    instrument.enable(everyones.append)
    options = {"rate_limiter": CubicRateLimiter()} if limited else {}
    result = run([1.0], Operation([]), clock, observe=mine.append, **options)
    assert result == "ok" and len(mine) == 1 and everyones == mine
    (event,) = mine
    outcome = "ok" if run in (run_decorator, run_async_decorator) else None
    elapsed = 1.0 if readings[0] == 100.0 else 0.0
    assert event[:8] == ("success", event.name, 1, outcome, None, 0.0, elapsed, None)


@each_driver
def test_a_breaker_refusing_the_first_attempt_is_one_error_event_in_every_form(
    run, no_process_hooks
):
    """An open circuit refuses the first attempt (@retry's bare one too): the call never runs,
    and the hooks - the policy's and the process's - hear one error event, the refusal, as from
    any loop, whose reason says the attempt never ran."""
    from backoff_iter import BrokenCircuitError, CircuitBreaker, instrument

    everyones = []
    instrument.enable(everyones.append)
    breaker = CircuitBreaker(failure_ratio=0.5, minimum_throughput=1, break_duration=60)
    breaker.record(False)
    summary, events, result = events_of(run, [1.0], [], breaker=breaker)
    assert isinstance(result, BrokenCircuitError)
    assert summary == [("error", 1, None, 0.0, "refused")] and events[0].outcome is result
    assert everyones == events


@pytest.mark.parametrize("form", ["sync", "async"])
def test_a_call_keeps_the_process_hooks_it_began_with(form, no_process_hooks):
    """A process hook enabled during a call hears the calls that begin after (that call is
    not told); one disabled during a call still hears that call's end."""
    from backoff_iter import instrument

    heard = []
    hook = heard.append

    def switch():
        if instrument.enabled():
            instrument.disable()
        else:
            instrument.enable(hook)
        return "ok"

    async def aswitch():
        return switch()

    decorated = retry([1.0])(switch if form == "sync" else aswitch)
    call = decorated if form == "sync" else lambda: asyncio.run(decorated())
    assert call() == "ok" and heard == []  # enabled during the call
    assert call() == "ok" and [event.kind for event in heard] == ["success"]  # disabled during it
    assert instrument.enabled() == ()


def test_the_bare_first_tries_success_events_read_a_monotonic_clock(no_process_hooks):
    """@retry with time.monotonic (its own reading of it, unguarded): each call's success
    event has its own id, its time is the try's, and the process's hooks hear it after."""
    from backoff_iter import instrument

    heard = []
    instrument.enable(lambda event: heard.append(("process", event)))

    def slow():
        before = time.monotonic()
        while time.monotonic() == before:
            pass
        return "ok"

    decorated = retry([1.0], observe=lambda event: heard.append(("own", event)))(slow)
    for _ in range(2):
        started = time.monotonic()
        assert decorated() == "ok"
        took = time.monotonic() - started
    assert [who for who, _ in heard] == ["own", "process"] * 2
    first, second = heard[0][1], heard[2][1]
    assert heard[1][1] is first and second.call_id > first.call_id
    assert first[:6] == ("success", f"{__name__}.{slow.__qualname__}", 1, "ok", None, 0.0)
    assert 0.0 < second.elapsed <= took


@each_driver
def test_each_kind_of_give_up_reports_its_reason(run):
    """The delays run out, the deadline or the budget says no: one give_up event, its reason."""
    from backoff_iter import TokenBucket

    summary, _, _ = events_of(run, [0.5], [OSError()] * 5)
    assert summary[-1] == ("give_up", 2, None, 0.5, "exhausted")
    summary, _, _ = events_of(run, constant(3.0), [OSError()] * 5, deadline=2.0)
    assert [s[0] for s in summary] == ["retry", "give_up"] and summary[-1][-1] == "deadline"
    bucket = TokenBucket(max_tokens=2)
    summary, _, _ = events_of(run, [0.5] * 5, [OSError()] * 5, budget=bucket)
    assert summary == [("give_up", 1, None, 0.0, "budget")]
    bucket = TokenBucket(max_tokens=2)  # the deadline would cut the sleep, the budget refuses it
    summary, _, _ = events_of(run, [3.0] * 5, [OSError()] * 5, budget=bucket, deadline=2.0)
    assert summary == [("give_up", 1, None, 0.0, "budget")]
    summary, _, result = events_of(run, [0.5], [KeyError("x")], on=OSError)
    assert summary == [("error", 1, None, 0.0, None)] and isinstance(result, KeyError)


def test_events_name_the_call():
    """@retry names its events after the function; the loops "call"; name= overrides both."""
    seen = []

    @retry([0.0], observe=seen.append, sleep=lambda s: None)
    def lookup():
        return 1

    lookup()
    retry([0.0], name="db", observe=seen.append)(lambda: 1)()
    for attempt in retrying([0.0], observe=[seen.append]):
        with attempt:
            pass
    assert [e.name for e in seen] == [
        f"{__name__}.test_events_name_the_call.<locals>.lookup",
        "db",
        "call",
    ]


def test_enabled_hooks_see_every_driver_until_disabled():
    """instrument.enable() reaches @retry's fast path and the loops; disable() stops it."""
    from backoff_iter import instrument

    seen = []
    fast = retry([0.0], sleep=lambda s: None)(Operation([]))
    instrument.enable(seen.append)
    try:
        fast()
        retry([0.0], sleep=lambda s: None)(Operation([OSError()]))()
    finally:
        instrument.disable()
    fast()
    assert [e.kind for e in seen] == ["success", "retry", "success"]
    assert len({e.call_id for e in seen}) == 2
    seen.clear()

    async def answer():
        return "ok"

    afast = retry([0.0], sleep=lambda s: None)(answer)
    instrument.enable(seen.append)
    try:
        assert asyncio.run(afast()) == "ok"
    finally:
        instrument.disable()
    assert asyncio.run(afast()) == "ok"
    assert [(e.kind, e.number) for e in seen] == [("success", 1)]  # the async fast path too


def test_observe_must_be_hooks():
    """observe= takes a function or a list of them."""
    rejects(lambda: retrying([1.0], observe=3), TypeError, "observe", "3")
    rejects(lambda: retry([1.0], observe=[print, "x"]), TypeError, "observe", "'x'")
    rejects(lambda: retrying([1.0], name=5), TypeError, "name", "5")


# -- a clock that misbehaves --------------------------------------------------------------------


@pytest.mark.parametrize("reading", [math.nan, math.inf, -math.inf, "backwards"])
@each_driver
def test_a_clock_going_back_or_not_finite_counts_as_no_time_passed(run, reading):
    """With a deadline, a clock reading NaN, inf or going back never raises: no time passed."""
    readings = iter([100.0, 101.0] + [50.0 if reading == "backwards" else reading] * 20)

    class Clock:
        now = 100.0

        def clock(self):
            return next(readings)

        def sleep(self, seconds):
            pass

        async def asleep(self, seconds):
            pass

    operation = Operation([OSError()] * 3)
    assert run([0.5, 0.5, 0.5], operation, Clock(), deadline=10.0) == "ok"
    assert operation.calls == 4


# -- rate limiter, throttle and breaker: asked before every attempt, told every outcome ----------


class Clock(FakeTime):
    """A FakeTime the parts and the drivers share, called as their clock."""

    def __init__(self):
        super().__init__()
        self.now = 1000.0

    def __call__(self):
        return self.now


def run_with(run, clock, operation, delays, **options):
    """run() with the shared clock as the drivers' clock and sleep."""

    shared = clock

    class Time:
        def clock(self):
            return shared()

        sleep = staticmethod(shared.sleep)
        asleep = staticmethod(shared.asleep)

    return run(delays, operation, Time(), **options)


@each_driver
def test_an_open_breaker_refuses_the_first_attempt_without_running_it(run):
    """BrokenCircuitError from the driver, and the operation never called."""
    from backoff_iter import BrokenCircuitError, CircuitBreaker

    clock = Clock()
    breaker = CircuitBreaker(minimum_throughput=2, failure_ratio=0.5, clock=clock)
    for _ in range(2):
        breaker.check()
        breaker.record(False)
    operation = Operation([])
    with pytest.raises(BrokenCircuitError):
        run_with(run, clock, operation, [0.1], breaker=breaker)
    assert operation.calls == 0 and clock.slept == []


@each_driver
def test_the_breaker_hears_every_attempt_and_stops_the_retries_once_it_opens(run):
    """Failures the policy retries count against it: the third opens it, the fourth attempt is refused."""
    from backoff_iter import BrokenCircuitError, CircuitBreaker

    clock = Clock()
    breaker = CircuitBreaker(minimum_throughput=3, failure_ratio=1.0, clock=clock)
    operation = Operation([OSError()] * 10)
    with pytest.raises(BrokenCircuitError):
        run_with(run, clock, operation, [0.1] * 9, breaker=breaker)
    assert operation.calls == 3 and clock.slept == [0.1] * 3 and breaker.state == "open"


@each_driver
def test_a_success_and_an_error_the_policy_does_not_retry_count_as_successes(run):
    """The breaker is told success for a result and for a foreign error: it stays closed."""
    from backoff_iter import CircuitBreaker

    clock = Clock()
    breaker = CircuitBreaker(minimum_throughput=3, failure_ratio=0.6, clock=clock)
    run_with(run, clock, Operation([OSError()]), [0.1], breaker=breaker)  # a failure, a success
    with pytest.raises(KeyError):
        run_with(run, clock, Operation([KeyError()]), [0.1], on=OSError, breaker=breaker)
    run_with(run, clock, Operation([OSError()]), [0.1], breaker=breaker)  # a failure, a success
    # 2 failures in 5 calls; had the KeyError not counted as a success, 2 in 3 would open it.
    assert breaker.state == "closed"


@each_driver
def test_a_throttle_that_rejects_raises_throttled_error_without_running(run):
    """After failures dominate, the throttle rejects: ThrottledError, the operation not called."""
    from random import Random

    from backoff_iter import AdaptiveThrottle, ThrottledError

    clock = Clock()
    throttle = AdaptiveThrottle(k=1.0, clock=clock, rng=Random(3))
    for _ in range(200):  # 200 requests, none accepted: p = 200/201
        try:
            throttle.check()
        except ThrottledError:
            continue  # rejected: counted as a request all the same
        throttle.record(False)
    operation = Operation([])
    with pytest.raises(ThrottledError):
        for _ in range(20):  # p ~ 0.995: some call is rejected
            run_with(run, clock, operation, [0.1], throttle=throttle)
    assert operation.calls < 20


class Unlucky:
    """A random source whose draws are never below a rejection probability under 1."""

    def random(self):
        return 0.999999


@each_driver
def test_throttled_picks_the_failures_that_count_as_throttles(run):
    """With throttled=, only 429s count for the throttle; other retried failures are accepts."""
    from backoff_iter import AdaptiveThrottle

    clock = Clock()
    throttle = AdaptiveThrottle(k=1.0, clock=clock, rng=Unlucky())
    run_with(
        run,
        clock,
        Operation([503, 429, 503]),
        [0.0] * 5,
        on_result=lambda status: status != "ok",
        throttled=lambda status: status == 429,
        throttle=throttle,
    )
    # 4 requests, 3 accepted (the 503s and the success): p = max(0, (4 - 1 * 3) / (4 + 1))
    assert throttle.probability == (4 - 3) / 5
    throttle = AdaptiveThrottle(k=1.0, clock=clock, rng=Unlucky())
    run_with(
        run,
        clock,
        Operation([503, 429, 503]),
        [0.0] * 5,
        on_result=lambda s: s != "ok",
        throttle=throttle,
    )
    assert throttle.probability == (4 - 1) / 5  # by default every retried failure is a throttle


@each_driver
def test_one_throttle_with_and_without_throttled_counts_each_policys_way(run):
    """The same throttle given to one policy with throttled= and to another
    without it counts each call's failures that policy's way."""
    from backoff_iter import AdaptiveThrottle

    clock = Clock()
    throttle = AdaptiveThrottle(k=1.0, clock=clock, rng=Unlucky())

    def call(**throttled):
        failing = Operation([503, 429, 503])
        run_with(run, clock, failing, [0.0] * 5, on_result=lambda s: s != "ok", **throttled)

    call(throttle=throttle)
    assert throttle.probability == (4 - 1) / 5  # every retried failure a throttle
    call(throttle=throttle, throttled=lambda status: status == 429)
    # 8 requests, 1 + 3 accepted: the first call's success, the second's 503s and success
    assert throttle.probability == (8 - 4) / 9


def test_time_monotonic_patched_in_later_is_guarded_as_any_clock(monkeypatch):
    """Only the time.monotonic the library found reads unguarded: one patched in
    later (a test's fake time) that goes back counts as no time passed."""
    import time

    now = [100.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    later = iter([101.0, 50.0, math.nan, 40.0, 102.0])  # what it reads after each attempt
    elapsed = []
    for attempt in retrying([0.0] * 5, on=OSError, clock=time.monotonic, sleep=lambda s: None):
        with attempt:
            elapsed.append(attempt.elapsed)
            now[0] = next(later, now[0])
            if attempt.number < 6:
                raise OSError("down")
    assert elapsed == [0.0, 1.0, 1.0, 1.0, 1.0, 2.0]


def test_a_call_that_ended_keeps_no_failure():
    """After a retried failure the call's outcome stands: the call holds no
    exception (nor its frames), however it was driven."""
    from backoff_iter._core import begin

    for outcome in ({"result": "ok"}, {"exc": KeyError("not retried")}):
        call = begin(retrying([0.0, 0.0], on=OSError, sleep=lambda s: None))
        assert call.decide(None, OSError("down"), None) == 0.0
        assert call.last is not None
        assert call.decide(None, outcome.get("exc"), outcome.get("result")) is None
        assert call.last is None, outcome


def test_a_budget_whose_methods_are_its_own_is_checked_each_time():
    """Each budget given is checked for the protocol's methods: an object
    given them one by one does not vouch for another of its class."""

    class Loose:
        pass

    made = Loose()
    made.record_success = lambda first_attempt, spent: None
    made.record_failure = lambda first_attempt: None
    made.try_retry = lambda outcome: True
    retrying([0.0], budget=made)
    rejects(lambda: retrying([0.0], budget=Loose()), TypeError, "budget", "try_retry()")


@each_driver
def test_throttled_tells_the_rate_limiter_only_of_throttles(run):
    """With throttled= picking 429s, 503s leave the limiter off; one 429 turns it on."""
    from backoff_iter import CubicRateLimiter

    clock = Clock()
    limiter = CubicRateLimiter(clock=clock)
    options = {"on_result": lambda s: s != "ok", "throttled": lambda s: s == 429}
    run_with(run, clock, Operation([503, 503]), [0.0] * 5, rate_limiter=limiter, **options)
    assert not limiter.enabled
    run_with(run, clock, Operation([429]), [0.0] * 5, rate_limiter=limiter, **options)
    assert limiter.enabled


@each_driver
def test_a_failure_that_is_no_throttle_still_counts_against_the_breaker(run):
    """throttled= says which failures are throttles; the breaker counts every retried failure."""
    from backoff_iter import BrokenCircuitError, CircuitBreaker

    clock = Clock()
    breaker = CircuitBreaker(minimum_throughput=3, failure_ratio=1.0, clock=clock)
    operation = Operation([503] * 10)
    with pytest.raises(BrokenCircuitError):
        run_with(
            run,
            clock,
            operation,
            [0.1] * 9,
            on_result=lambda s: s != "ok",
            throttled=lambda s: s == 429,
            breaker=breaker,
        )
    assert operation.calls == 3 and breaker.state == "open"


def replay(limiter, clock, outcomes, delay):
    """What a driver does with a rate limiter, by hand: acquire, the attempt's outcome, the sleep."""
    for throttled in outcomes:
        limiter.acquire(sleep=clock.sleep)
        limiter.record(throttled)
        if throttled:
            clock.sleep(delay)


@each_driver
def test_the_rate_limiter_is_asked_before_every_attempt_and_told_every_response(run):
    """A real CubicRateLimiter fed through the driver ends where one fed by hand does."""
    from backoff_iter import CubicRateLimiter

    clock, by_hand = Clock(), Clock()
    ours, reference = CubicRateLimiter(clock=clock), CubicRateLimiter(clock=by_hand)
    run_with(run, clock, Operation([OSError()] * 3), [0.5] * 5, rate_limiter=ours)
    replay(reference, by_hand, [True, True, True, False], 0.5)
    assert (clock.now, clock.slept) == (by_hand.now, by_hand.slept)
    assert (ours.enabled, ours.rate, ours.tokens) == (
        reference.enabled,
        reference.rate,
        reference.tokens,
    )
    assert ours.enabled and any(s != 0.5 for s in clock.slept)  # it made attempts wait


@each_driver
def test_the_rate_limiters_wait_goes_through_the_drivers_sleep(run):
    """An empty bucket makes every attempt wait, first included (@retry's first
    try runs bare only while a CUBIC limiter is off), slept with the policy's sleep."""
    from backoff_iter import CubicRateLimiter

    clock = Clock()
    limiter = CubicRateLimiter(clock=clock)
    limiter.record(True)  # on, at its lowest rate: each attempt waits for a token
    operation = Operation([OSError()])
    run_with(run, clock, operation, [0.0], rate_limiter=limiter)
    waits = [s for s in clock.slept if s > 0]
    assert operation.calls == 2 and len(waits) == 2


@each_driver
def test_a_rate_limiters_wait_past_the_deadline_ends_the_call_before_the_retry(run):
    """deadline=1: after a 0.1 s delay the empty bucket would make the retry wait 1.9 s,
    past the deadline: no retry starts, the call ends with NoTimeLeft (its cause the
    failure) and the limiter keeps its token.  A wait that fits is waited, as before."""
    from backoff_iter import CubicRateLimiter
    from backoff_iter.parts import NoTimeLeft

    for deadline, ends in ((1.0, True), (5.0, False)):
        clock = Clock()
        limiter = CubicRateLimiter(clock=clock)
        for _ in range(3):
            limiter.record(True)  # on, at its lowest rate
        clock.now += 10.0
        operation = Operation([OSError("down")])
        if ends:
            with pytest.raises(NoTimeLeft, match="past the deadline") as raised:
                run_with(run, clock, operation, [0.1] * 3, rate_limiter=limiter, deadline=deadline)
            assert isinstance(raised.value.__cause__, OSError) and operation.calls == 1
            # the first attempt took the one token; 0.1 s at 0.5 tokens/s refilled 0.05,
            # the retry's reservation given back (else 0.05 - 1)
            assert clock.slept[-1] == 0.1 and limiter.tokens == pytest.approx(0.05)
        else:
            run_with(run, clock, operation, [0.1] * 3, rate_limiter=limiter, deadline=deadline)
            assert operation.calls == 2 and clock.slept[-2:] == [0.1, pytest.approx(1.9)]


@each_driver
def test_a_rate_limiters_wait_past_the_deadline_ends_the_call_before_the_first_attempt(run):
    """deadline=2: four callers queued ahead, the first attempt would wait 10 s, past
    the deadline: it never starts, the call ends at once with NoTimeLeft (no failure to
    be its cause), nothing slept, and the limiter keeps its token.  (It waited the 10 s
    and ran 8 s past the deadline, with an attempt timeout of 0.)  A wait that fits is
    waited, as before."""
    from backoff_iter import CubicRateLimiter
    from backoff_iter.parts import NoTimeLeft

    for deadline, ends in ((2.0, True), (20.0, False)):
        clock = Clock()
        limiter = CubicRateLimiter(clock=clock)
        for _ in range(3):
            limiter.record(True)  # on, at its lowest rate: 0.5 tokens a second
        for _ in range(4):
            limiter.acquire(sleep=lambda s: None)  # queued ahead: -4 tokens
        operation = Operation([])
        options = {"rate_limiter": limiter, "deadline": deadline, "attempt_timeout": 5.0}
        if ends:
            with pytest.raises(
                NoTimeLeft, match=r"end past the deadline .*: no attempt 1"
            ) as raised:
                run_with(run, clock, operation, [0.1], **options)
            assert raised.value.__cause__ is None and operation.calls == 0
            assert clock.slept == [] and limiter.tokens == -4.0
        else:
            assert run_with(run, clock, operation, [0.1], **options) == "ok"
            assert operation.calls == 1 and clock.slept == [10.0]


@each_driver
@pytest.mark.parametrize("timed", [True, False])
def test_a_rate_limiters_wait_ending_on_the_deadline_is_refused_only_with_attempt_timeouts(
    run, timed
):
    """A wait that ends exactly on the deadline would leave the attempt after it a timeout
    of 0 (a socket's "do not wait at all"): with attempt_timeout the call ends with
    NoTimeLeft instead, as a sleep ending on it ends the call; without, the attempt runs
    on the deadline, as after a sleep shortened to end on it.  (It ran with a timeout of 0.)"""
    from backoff_iter import CubicRateLimiter
    from backoff_iter.parts import NoTimeLeft

    clock = Clock()
    limiter = CubicRateLimiter(clock=clock)
    for _ in range(3):
        limiter.record(True)  # on, at its lowest rate, the bucket empty: a wait of 2 s
    operation = Operation([])
    options = {"rate_limiter": limiter, "deadline": 2.0}
    if timed:
        options["attempt_timeout"] = 5.0
        with pytest.raises(NoTimeLeft, match="wait of 2 s would end on the deadline"):
            run_with(run, clock, operation, [0.1], **options)
        assert operation.calls == 0 and clock.slept == [] and limiter.tokens == 0.0
    else:
        assert run_with(run, clock, operation, [0.1], **options) == "ok"
        assert operation.calls == 1 and clock.slept == [2.0]


@each_driver
@pytest.mark.parametrize("refused_attempt", [1, 2])
def test_an_attempt_a_part_after_the_rate_limiter_refuses_gives_its_token_back(
    run, refused_attempt
):
    """A part after the limiter (parts=) refuses the attempt, the first or a retry: the
    token the limiter took for it comes back, as a wait past the deadline gives it back,
    so the request never sent costs the calls after it nothing.  (It was kept: 0.0 tokens
    left for the first attempt refused, not 1.0.)"""
    from backoff_iter import CubicRateLimiter
    from backoff_iter.parts import Part

    class Full(Part):  # a bulkhead of the user's: no room for this attempt
        def before_attempt(self, call):
            if call.number == refused_attempt:
                raise PermissionError("full")
            return 0.0

    clock = Clock()
    limiter = CubicRateLimiter(clock=clock)
    for _ in range(3):
        limiter.record(True)  # on, at its lowest rate: 1 token at most, 0.5 a second
    clock.now += 10.0  # the bucket full: one token
    operation = Operation([OSError("down")])
    with pytest.raises(PermissionError):
        run_with(run, clock, operation, [4.0], rate_limiter=limiter, on=OSError, parts=[Full()])
    assert operation.calls == refused_attempt - 1
    assert limiter.tokens == 1.0  # the refused attempt's token back (the 4 s sleep refilled)


@each_driver
@pytest.mark.parametrize("refuser", ["part", "breaker"])
def test_an_attempt_refused_after_a_rate_limiter_that_is_off_gives_it_nothing(run, refuser):
    """Off, the limiter took no token for the attempt a part after it refuses (a part of
    the user's, or a breaker's check, which @retry's bare first try asks): none comes
    back, and its bucket stays as it was."""
    from backoff_iter import BrokenCircuitError, CircuitBreaker, CubicRateLimiter
    from backoff_iter.parts import BreakerPart, Part

    class Full(Part):
        def before_attempt(self, call):
            raise PermissionError("full")

    clock = Clock()
    if refuser == "part":
        part, refused = Full(), PermissionError
    else:
        breaker = CircuitBreaker(failure_ratio=0.5, minimum_throughput=1, clock=clock)
        breaker.record(False)  # open
        part, refused = BreakerPart(breaker), BrokenCircuitError
    limiter = CubicRateLimiter(clock=clock)
    before = limiter.tokens
    with pytest.raises(refused):
        run_with(run, clock, Operation([]), [0.0], rate_limiter=limiter, parts=[part])
    assert not limiter.enabled and limiter.tokens == before == 0.0


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_cubic_rate_limiter_that_is_off_is_not_asked_before_retrys_first_try(asynchronous):
    """Off, a CubicRateLimiter lets every request go at once and takes nothing: @retry's
    first try runs bare, the limiter not asked, and the success is told to it as any
    response is (its rate moves as one fed by hand).  A rate limiter of the user's own
    is asked before every attempt, first included, as it may make any of them wait."""
    import asyncio
    from unittest import mock

    from backoff_iter import CubicRateLimiter

    clock, by_hand = Clock(), Clock()
    ours, reference = CubicRateLimiter(clock=clock), CubicRateLimiter(clock=by_hand)

    asked = []

    class Asked:  # says when it is asked
        def acquire(self, sleep=None):
            asked.append(self)
            return 0.0

        async def aacquire(self, sleep=None):
            asked.append(self)
            return 0.0

    class Own(Asked):
        def __init__(self):
            self.told = []

        def record(self, throttled):
            self.told.append(throttled)

    own = Own()

    class Slower(Asked, CubicRateLimiter):  # a subclass's acquire may wait even while off
        pass

    def call(limiter):
        options = {"on": OSError, "rate_limiter": limiter, "sleep": clock.sleep}
        if asynchronous:

            async def operation():
                return "ok"

            return asyncio.run(retry([0.0], clock=clock.clock, **options)(operation)())
        return retry([0.0], clock=clock.clock, **options)(lambda: "ok")()

    with mock.patch.object(CubicRateLimiter, "acquire", autospec=True) as acquire:
        with mock.patch.object(CubicRateLimiter, "aacquire", autospec=True) as aacquire:
            clock.now = by_hand.now = 3.25
            assert call(ours) == "ok"
            assert not acquire.called and not aacquire.called
    reference.record(False)
    assert ours.rate == reference.rate != 1.0  # told the success
    assert not ours.enabled
    assert call(own) == "ok"
    assert asked == [own] and own.told == [False]
    slower = Slower(clock=clock)
    assert call(slower) == "ok"
    assert asked == [own, slower]


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_second_cubic_rate_limiter_is_asked_before_retrys_first_try(asynchronous):
    """Two CUBIC limiters (the second a part of its own): the first try runs bare only if
    every limiter it must pass is off - here the first is on, and makes it wait."""
    import asyncio

    from backoff_iter import CubicRateLimiter
    from backoff_iter.parts import RateLimiterPart

    clock = Clock()
    on, off = CubicRateLimiter(clock=clock), CubicRateLimiter(clock=clock)
    on.record(True)  # on, at its lowest rate: an attempt waits for a token
    options = {
        "on": OSError,
        "rate_limiter": on,
        "parts": [RateLimiterPart(off, True)],
        "sleep": clock.asleep if asynchronous else clock.sleep,
        "clock": clock.clock,
    }
    if asynchronous:

        async def operation():
            return "ok"

        assert asyncio.run(retry([0.0], **options)(operation)()) == "ok"
    else:
        assert retry([0.0], **options)(lambda: "ok")() == "ok"
    assert [s for s in clock.slept if s > 0] and on.tokens < 1


def test_parts_without_their_methods_are_rejected():
    """rate_limiter=, throttle= and breaker= name what they lack."""
    rejects(lambda: retrying(rate_limiter=object()), TypeError, "rate_limiter", "acquire()")
    rejects(lambda: retry(throttle=3), TypeError, "throttle", "check()")
    rejects(lambda: aretrying(breaker="open"), TypeError, "breaker", "record()")
    rejects(lambda: retrying(throttled=5), TypeError, "throttled")


def test_what_the_defaults_mean_is_what_derive_finds():
    """The bare plan, a policy's default, is the one _work_out() works out for no options."""
    from backoff_iter._options import CallPlan, Policy

    plan = Policy()._work_out()
    flags = CallPlan.__slots__
    assert [getattr(plan, f) for f in flags] == [getattr(CallPlan(), f) for f in flags]


def test_options_read_as_given_derive_nothing():
    """A policy given only options the call reads as they are skips _derive():
    for each, deriving anyway finds the class's flags, so nothing was missed."""
    from backoff_iter._options import _BARE, _READ_AS_GIVEN, CallPlan, Policy

    given = {
        "on": OSError,
        "sleep": lambda seconds: None,
        "name": "fetch",
        "clock": lambda: 0.0,
        "retry_after_max": 9.0,
    }
    assert set(given) == _READ_AS_GIVEN
    flags = CallPlan.__slots__
    for name, value in given.items():
        policy = Policy(**{name: value})  # type: ignore[misc]
        assert policy.plan is _BARE, name  # _derive() did not run ...
        plan = policy._work_out()
        assert [getattr(plan, f) for f in flags] == [getattr(CallPlan(), f) for f in flags], name
    assert Policy(deadline=1.0).plan is not _BARE  # ... and does for any other option


# -- every option counts, given alone; every bad one is named -----------------------------------


def test_every_option_given_alone_takes_effect():
    """With the default clock and nothing else set, each option still does its part."""
    from backoff_iter import CircuitBreaker, instrument

    def loop(outcomes, delays=(1.0,), body=None, **options):
        """Run retrying over scripted outcomes; (what was slept, the attempts' numbers and timeouts)."""
        slept, seen, operation = [], [], Operation(outcomes)
        try:
            for attempt in retrying(list(delays), sleep=slept.append, **options):
                with attempt:
                    seen.append((attempt.number, attempt.timeout))
                    if body is not None:
                        body(attempt)
                    attempt.set_result(operation())
        except OSError:
            pass
        return slept, seen

    assert loop([OSError()], retry_after=lambda o: 5.0)[0] == [5.0]

    def hint(attempt):
        attempt.retry_after(10.0)

    assert loop([OSError()], body=hint, retry_after_max=2.0)[0] == [2.0]
    assert loop(["bad"], on_result=lambda r: r == "bad")[0] == [1.0]
    assert loop([OSError(), OSError()], deadline=0.0)[0] == []
    told = []
    loop([OSError(), OSError()], give_up=lambda a, o: told.append(a.number))
    loop([OSError()], before_sleep=lambda a, o, d: told.append(d))
    assert told == [2, 1.0]
    ledger = Ledger([True])
    loop([OSError()], budget=ledger)
    assert [entry[0] for entry in ledger.log] == ["failure", "try", "success"]
    events = []
    loop([OSError()], observe=events.append)
    instrument.enable(events.append)
    try:
        loop([], name="db")
    finally:
        instrument.disable()
    assert [(e.kind, e.name) for e in events] == [
        ("retry", "call"),
        ("success", "call"),
        ("success", "db"),
    ]
    assert loop([OSError()], attempt_timeout=2.5)[1] == [(1, 2.5), (2, 2.5)]
    breaker = CircuitBreaker(minimum_throughput=2, failure_ratio=1.0)
    loop([OSError()] * 3, breaker=breaker)  # two failures, the second opens it
    assert breaker.state == "open"


class Part:
    """An object with only the *methods* given, each doing nothing."""

    def __init__(self, *methods):
        for method in methods:
            setattr(self, method, lambda *args: None)


@pytest.mark.parametrize(
    "parameter, methods",
    [
        ("rate_limiter", ["acquire", "aacquire", "record"]),
        ("throttle", ["check", "record"]),
        ("breaker", ["check", "record"]),
        ("budget", ["record_success", "record_failure", "try_retry"]),
    ],
)
def test_a_part_missing_any_one_of_its_methods_is_rejected(parameter, methods):
    """A rate limiter, throttle, breaker or budget lacking one method: TypeError naming the part and the method."""
    for missing in methods:
        part = Part(*(m for m in methods if m != missing))
        rejects(
            lambda part=part: retrying(**{parameter: part}), TypeError, parameter, f"{missing}()"
        )
    retrying(**{parameter: Part(*methods)})  # all there: accepted


@pytest.mark.parametrize(
    "call, error, parameter",
    [
        (lambda: retrying(on_result=5), TypeError, "on_result"),
        (lambda: retrying(retry_after=5), TypeError, "retry_after"),
        (lambda: retrying(give_up=5), TypeError, "give_up"),
        (lambda: retrying(retry_after_max=-1.0), ValueError, "retry_after_max"),
        (lambda: retrying(attempt_timeout=-1.0), ValueError, "attempt_timeout"),
        (lambda: retry(on_result="yes"), TypeError, "on_result"),
    ],
)
def test_each_bad_option_is_named_as_the_parameter(call, error, parameter):
    """.parameter is the option's own name, which the command line shows."""
    rejects(call, error, parameter)


def test_infinite_limits_are_accepted_and_mean_no_limit():
    """retry_after_max, deadline and attempt_timeout may be inf: no clamp, no deadline, no timeout."""
    time = FakeTime()
    slept, timeouts = [], []
    for attempt in retrying(
        [1.0],
        retry_after_max=math.inf,
        deadline=math.inf,
        attempt_timeout=math.inf,
        sleep=slept.append,
        clock=time.clock,
    ):
        with attempt:
            timeouts.append(attempt.timeout)
            if attempt.number == 1:
                attempt.retry_after(1e9)
                raise OSError
    assert slept == [1e9] and timeouts == [math.inf, math.inf]


def test_a_one_shot_iterator_of_timeouts_makes_the_policy_one_shot_too():
    """An iterator as attempt_timeout (or as delays, with a factory of timeouts) serves one loop only."""
    for policy in (
        retrying([1.0], attempt_timeout=iter([1.0, 2.0]), sleep=lambda s: None),
        retrying(iter([1.0]), attempt_timeout=lambda: [1.0], sleep=lambda s: None),
    ):
        for attempt in policy:
            with attempt:
                pass
        with pytest.raises(RuntimeError, match="one-shot"):
            iter(policy)


# -- what hooks and events are told ------------------------------------------------------------


@each_driver
def test_hooks_see_each_attempts_delay_and_elapsed_time(run):
    """before_sleep and give_up get attempts whose delay and elapsed time are right, the first try's too."""
    seen = []
    time = FakeTime()
    with pytest.raises(OSError):
        run(
            [0.5, 1.5],
            Operation([OSError()] * 3, time, duration=1.0),
            time,
            before_sleep=lambda a, o, d: seen.append(("sleep", a.number, a.delay, a.elapsed)),
            give_up=lambda a, o: seen.append(("give up", a.number, a.delay, a.elapsed)),
        )
    assert seen == [("sleep", 1, 0.0, 0.0), ("sleep", 2, 0.5, 1.5), ("give up", 3, 1.5, 4.0)]


@each_driver
def test_before_sleep_sees_the_retried_result(run):
    """For a result on_result retries, the hook's outcome is that result."""
    seen = []
    run(
        [0.5],
        Operation([503]),
        FakeTime(),
        on_result=lambda r: r == 503,
        before_sleep=lambda a, o, d: seen.append(o),
    )
    assert seen == [503]


@pytest.mark.parametrize(
    "run", [run_async_loop, run_async_decorator], ids=["aretrying", "async retry"]
)
def test_an_async_loops_before_sleep_may_return_a_plain_value(run):
    """A sync hook returning something that is not awaitable (list.append's None, a string) is not awaited."""
    seen = []
    time = FakeTime()
    assert (
        run([0.5], Operation([OSError()]), time, before_sleep=lambda a, o, d: f"logged {d}") == "ok"
    )
    assert time.slept == [0.5]
    run([0.5], Operation([OSError()]), FakeTime(), before_sleep=lambda a, o, d: seen.append(d))
    assert seen == [0.5]


def test_a_sync_loops_refusal_of_an_async_hook_names_the_hook():
    """The TypeError shows which before_sleep returned the awaitable."""

    async def asleep(seconds):
        pass

    def hook(attempt, outcome, delay):
        return asleep(delay)

    with pytest.raises(TypeError) as raised:
        retry([1.0], sleep=lambda s: None, before_sleep=hook)(Operation([OSError()]))()
    assert raised.value.parameter == "before_sleep" and repr(hook) in str(raised.value)


@each_driver
def test_events_carry_the_outcome_of_each_attempt(run):
    """An error the policy does not retry, a give-up and a retried result: each event's outcome is it."""
    error = KeyError("x")
    _, events, _ = events_of(run, [0.5], [error], on=OSError)
    assert [(e.kind, e.outcome) for e in events] == [("error", error)]
    errors = [OSError(1), OSError(2)]
    _, events, _ = events_of(run, [0.5], errors)
    assert [(e.kind, e.outcome) for e in events] == [("retry", errors[0]), ("give_up", errors[1])]
    _, events, _ = events_of(run, [0.5], [503], on_result=lambda r: r == 503)
    assert [(e.kind, e.outcome) for e in events] == [("retry", 503), ("success", "ok")]


@each_driver
@pytest.mark.parametrize("huge", [math.inf, 10**400])
def test_an_infinite_delay_is_a_give_up_that_hooks_hear(run, huge):
    """No next attempt: give_up is told and a give_up event says the delays are exhausted."""
    told = []
    summary, _, result = events_of(
        run, [huge], [OSError()], give_up=lambda a, o: told.append(a.number)
    )
    assert summary == [("give_up", 1, None, 0.0, "exhausted")]
    assert told == [1] and isinstance(result, OSError)


def _bad_second_delay():
    yield 0.5
    yield -1.0


def _broken_schedule():
    yield 0.5
    raise LookupError("the schedule broke")


@each_driver
@pytest.mark.parametrize(
    "delays, options, error",
    [
        (_bad_second_delay, {}, ArgumentValueError),
        (_broken_schedule, {}, LookupError),
        ([0.5, 0.5], {"retry_after": lambda o: [None][o.args[0]]}, IndexError),
        ([0.5, 0.5], {"throttled": lambda o: [True][o.args[0]]}, IndexError),
        ([0.5, 0.5], {"on": lambda o: [True][o.args[0]]}, IndexError),
    ],
    ids=["bad delay", "schedule raises", "retry_after raises", "throttled raises", "on raises"],
)
def test_a_call_that_a_bad_schedule_or_callback_ends_after_a_retry_is_an_error_hooks_hear(
    run, delays, options, error
):
    """The second failure's decision breaks (a negative delay, the schedule
    raising, a hook or ``on`` raising): the hooks hear the call end, once, as an
    "error" of that exception (a span begun at the first retry ends)."""
    delays = delays() if callable(delays) else delays  # (one call: an iterator serves)
    summary, events, result = events_of(run, delays, [OSError(0), OSError(1)], **options)
    assert isinstance(result, error) and isinstance(result.__context__, OSError)
    assert summary == [("retry", 1, 0.5, 0.0, None), ("error", 2, None, 0.5, None)]
    assert events[1].outcome is result and events[0].call_id == events[1].call_id


@each_driver
def test_a_deadline_that_leaves_no_time_or_not_the_servers_wait_gives_up_as_deadline(run):
    """A hint past the deadline, or a failure after it: the give_up reason is "deadline"."""
    summary, _, _ = events_of(run, [0.5], [OSError()], deadline=5.0, retry_after=lambda o: 60.0)
    assert summary == [("give_up", 1, None, 0.0, "deadline")]
    summary, _, _ = events_of(run, [0.5], [OSError()], deadline=0.5)  # the attempt takes 1 s
    assert summary == [("give_up", 1, None, 0.0, "deadline")]


@each_driver
def test_on_base_exception_retries_every_exception(run):
    """on=BaseException (or a tuple holding a non-Exception class) still retries ordinary errors."""
    assert run([0.0], Operation([OSError()]), FakeTime(), on=BaseException) == "ok"
    assert run([0.0], Operation([OSError()]), FakeTime(), on=(KeyboardInterrupt, OSError)) == "ok"


# -- the misuses of an attempt ------------------------------------------------------------------


def test_each_misuse_of_an_attempt_names_the_statement_to_use():
    """`async with` on retrying's attempt and `with` on aretrying's: TypeError saying which to use."""

    async def async_with_on_a_sync_loop():
        for attempt in retrying([1.0]):
            async with attempt:
                pass

    with pytest.raises(TypeError, match="use `with attempt:` with this loop, not `async with`"):
        asyncio.run(async_with_on_a_sync_loop())

    async def with_on_an_async_loop():
        async for attempt in aretrying([1.0]):
            with attempt:
                pass

    with pytest.raises(TypeError, match="use `async with attempt:` with this loop, not `with`"):
        asyncio.run(with_on_an_async_loop())


def test_a_stale_attempt_is_refused_in_async_with_too():
    """An Attempt kept after its async loop ended cannot be entered again."""

    async def main():
        async for attempt in aretrying([1.0]):
            async with attempt:
                pass
        async with attempt:
            raise OSError("lost?")

    with pytest.raises(RuntimeError, match=r"<Attempt number=1 .*> is not the current attempt"):
        asyncio.run(main())


def test_an_earlier_attempt_is_refused_while_the_next_one_is_current():
    """Attempt 1 kept and entered again once attempt 2 is handed out: RuntimeError as it is
    entered - its block never runs in place of attempt 2's."""
    loop = iter(retrying([0.0], on=OSError, sleep=lambda s: None))
    first = next(loop)
    with first:
        raise OSError
    next(loop)
    ran = []
    with pytest.raises(RuntimeError, match=r"<Attempt number=1 .*> is not the current attempt"):
        with first:
            ran.append(first.number)
    assert ran == []


@pytest.mark.parametrize("loop", ["retrying", "aretrying"])
@pytest.mark.parametrize("which", ["itself", "the one before"])
def test_an_attempt_misused_in_the_running_ones_block_ends_the_call_never_retried(loop, which):
    """An attempt entered in the block of the running one (itself again, or the
    attempt before it) is the caller's bug: even under on=Exception, which
    matches its RuntimeError, the call ends with it at once - no retry, no
    sleep - and the hooks hear it once, as an "error"."""
    seen, slept, ran = [], [], []
    options = {"on": Exception, "sleep": slept.append, "observe": seen.append}

    def entered(attempt):
        ran.append(attempt.number)
        return attempt if which == "itself" or len(ran) == 1 else first[0]

    first = []
    if loop == "retrying":
        with pytest.raises(RuntimeError, match="not the current attempt") as raised:
            for attempt in retrying([0.5, 0.5, 0.5], **options):
                with attempt:
                    first.append(attempt)
                    if which == "the one before" and attempt.number == 1:
                        raise OSError
                    with entered(attempt):
                        pass
    else:

        async def main():
            async for attempt in aretrying([0.5, 0.5, 0.5], **options):
                async with attempt:
                    first.append(attempt)
                    if which == "the one before" and attempt.number == 1:
                        raise OSError
                    async with entered(attempt):
                        pass

        with pytest.raises(RuntimeError, match="not the current attempt") as raised:
            asyncio.run(main())
    last = 1 if which == "itself" else 2
    assert seen[-1].outcome is raised.value  # the misuse itself, through the block's exit
    assert ran[-1] == last and slept == [0.5] * (last - 1)
    assert [(e.kind, e.number) for e in seen][-1] == ("error", last)
    assert [e.kind for e in seen].count("error") == 1


def test_an_attempt_misused_in_its_own_block_leaves_its_timeout_scope():
    """Under trio, an attempt with a timeout entered again in its own block:
    the misuse goes through its exit, which leaves the attempt's cancel scope
    first (left open, trio says its cancel scope stack is corrupted)."""
    trio = pytest.importorskip("trio")
    from trio.testing import MockClock

    async def main():
        with trio.move_on_after(100):
            async for attempt in aretrying([0.0], on=Exception, attempt_timeout=10.0):
                async with attempt:
                    async with attempt:
                        pass

    with pytest.raises(RuntimeError, match="not the current attempt"):
        trio.run(main, clock=MockClock(autojump_threshold=0))


@pytest.mark.parametrize("statement", ["with", "async with"])
def test_an_attempt_left_twice_is_an_error(statement):
    """__exit__ called a second time (by hand, or a broken context stack) cannot settle the call again."""
    ledger = Ledger([])

    async def main():
        async for attempt in aretrying([1.0], budget=ledger):
            await attempt.__aenter__()
            await attempt.__aexit__(None, None, None)
            await attempt.__aexit__(None, None, None)

    if statement == "with":
        with pytest.raises(RuntimeError, match="not the current attempt"):
            for attempt in retrying([1.0], budget=ledger):
                attempt.__enter__()
                attempt.__exit__(None, None, None)
                attempt.__exit__(None, None, None)
    else:
        with pytest.raises(RuntimeError, match="not the current attempt"):
            asyncio.run(main())
    assert ledger.log == [("success", True, 0.0)]  # one success, told once


def test_a_loop_refused_by_its_breaker_is_over_and_reports_the_refusal():
    """The refusal is an "error" event of attempt 1 whose outcome is the breaker's error; the loop then ends."""
    from backoff_iter import BrokenCircuitError, CircuitBreaker

    breaker = CircuitBreaker(minimum_throughput=1, failure_ratio=0.5)
    breaker.check()
    breaker.record(False)
    events = []
    loop = iter(retrying([1.0], breaker=breaker, observe=events.append))
    with pytest.raises(BrokenCircuitError) as raised:
        next(loop)
    assert [(e.kind, e.number, e.outcome) for e in events] == [("error", 1, raised.value)]
    with pytest.raises(StopIteration):
        next(loop)


@pytest.mark.parametrize("form", ["retrying", "aretrying"])
def test_a_bad_hint_ends_the_loop_and_is_reported_as_an_error(form):
    """attempt.retry_after(-1) raises ArgumentValueError naming "seconds"; an "error" event carries it; the loop is over."""
    events = []
    policy = (retrying if form == "retrying" else aretrying)([0.0] * 3, observe=events.append)

    async def async_loop():
        loop = policy.__aiter__()
        attempt = await loop.__anext__()
        with pytest.raises(ArgumentValueError) as raised:
            async with attempt:
                attempt.retry_after(-1.0)
        with pytest.raises(StopAsyncIteration):
            await loop.__anext__()
        return raised.value

    if form == "retrying":
        loop = iter(policy)
        attempt = next(loop)
        with pytest.raises(ArgumentValueError) as raised:
            with attempt:
                attempt.retry_after(-1.0)
        with pytest.raises(StopIteration):
            next(loop)
        error = raised.value
    else:
        error = asyncio.run(async_loop())
    assert error.parameter == "seconds"
    assert [(e.kind, e.number, e.outcome) for e in events] == [("error", 1, error)]


@pytest.mark.parametrize("form", ["retrying", "aretrying"])
def test_a_bad_hint_is_never_retried_even_when_on_matches_its_error(form):
    """on=ValueError matches the ArgumentValueError of retry_after(-1), but a bad hint is the
    caller's bug: it propagates from attempt 1, and no attempt 2 is made."""
    time, numbers = FakeTime(), []

    async def async_loop():
        async for attempt in aretrying([0.0] * 3, on=ValueError, sleep=time.asleep):
            async with attempt:
                numbers.append(attempt.number)
                attempt.retry_after(-1.0)

    with pytest.raises(ArgumentValueError):
        if form == "retrying":
            for attempt in retrying([0.0] * 3, on=ValueError, sleep=time.sleep):
                with attempt:
                    numbers.append(attempt.number)
                    attempt.retry_after(-1.0)
        else:
            asyncio.run(async_loop())
    assert numbers == [1] and time.slept == []


@pytest.mark.parametrize("bug", ["bad hint", "misuse", "no result"])
@pytest.mark.parametrize("form", ["retrying", "aretrying"])
def test_a_callers_bug_that_ends_the_call_is_told_to_the_parts_as_an_error(form, bug):
    """A bad hint, an Attempt misused or no result handed to on_result ends
    the call as the caller's bug, never
    retried; the parts hear the attempt end as any error the policy does not
    retry (the dependency answered): a half-open breaker's probe comes back and
    the circuit closes, where it stayed half open, refusing every other call."""
    now = [0.0]
    breaker = CircuitBreaker(
        failure_ratio=0.5, minimum_throughput=1, break_duration=10.0, clock=lambda: now[0]
    )
    breaker.record(False)  # open
    now[0] = 11.0  # the break is over: the next call is the probe
    judge = {"on_result": lambda result: False} if bug == "no result" else {}
    policy = (retrying if form == "retrying" else aretrying)(
        [0.0] * 3, on=Exception, breaker=breaker, sleep=lambda seconds: None, **judge
    )

    def body(attempt, first):
        if bug == "bad hint":
            attempt.retry_after(-1.0)
        if bug != "no result":
            with first:  # the first attempt entered again, inside its own block
                pass

    async def async_loop():
        async for attempt in policy:
            async with attempt:
                if bug == "bad hint":
                    attempt.retry_after(-1.0)
                if bug != "no result":
                    async with attempt:
                        pass

    with pytest.raises((ArgumentValueError, RuntimeError, TypeError)):
        if form == "retrying":
            for attempt in policy:
                with attempt:
                    body(attempt, attempt)
        else:
            asyncio.run(async_loop())
    assert breaker.state == "closed"
    breaker.check()  # another call goes


@pytest.mark.parametrize("form", ["@retry", "async @retry", "retrying", "aretrying"])
def test_an_on_result_predicate_that_raises_ends_the_call_told_to_parts_and_hooks(form):
    """on_result's own bug ends the call with its error, never retried: the
    parts hear an error (a half-open breaker's probe comes back) and the
    hooks an "error" event; both heard nothing, the probe stayed out."""
    now, events = [0.0], []
    breaker = CircuitBreaker(
        failure_ratio=0.5, minimum_throughput=1, break_duration=10.0, clock=lambda: now[0]
    )
    breaker.record(False)  # open
    now[0] = 11.0  # the break is over: the next call is the probe

    def judge(result):
        raise KeyError(result)

    options = {
        "on": Exception,
        "on_result": judge,
        "breaker": breaker,
        "observe": events.append,
        "sleep": lambda s: None,
    }

    async def async_loop():
        async for attempt in aretrying([0.0] * 3, **options):
            async with attempt:
                attempt.set_result("pong")

    async def aping():
        return "pong"

    with pytest.raises(KeyError):
        if form == "@retry":
            retry([0.0] * 3, **options)(lambda: "pong")()
        elif form == "async @retry":
            asyncio.run(retry([0.0] * 3, **options)(aping)())
        elif form == "retrying":
            for attempt in retrying([0.0] * 3, **options):
                with attempt:
                    attempt.set_result("pong")
        else:
            asyncio.run(async_loop())
    assert breaker.state == "closed"
    assert [(e.kind, e.number, type(e.outcome)) for e in events] == [("error", 1, KeyError)]


@pytest.mark.parametrize("form", ["@retry", "retrying", "aretrying"])
def test_a_give_up_hook_that_raises_ends_the_call_with_its_error_told_to_the_hooks(form):
    """give_up's own bug ends the call with its error, its cause the failure
    given up on, and the hooks hear an "error" of it (they heard nothing: a
    span begun at the first retry stayed open)."""
    events = []

    def give_up(attempt, outcome):
        raise KeyError("give_up broke")

    def fail():
        raise OSError("down")

    options = {"on": OSError, "give_up": give_up, "observe": events.append, "sleep": lambda s: None}

    async def async_loop():
        async for attempt in aretrying([0.0], **options):
            async with attempt:
                fail()

    with pytest.raises(KeyError) as raised:
        if form == "@retry":
            retry([0.0], **options)(fail)()
        elif form == "retrying":
            for attempt in retrying([0.0], **options):
                with attempt:
                    fail()
        else:
            asyncio.run(async_loop())
    assert isinstance(raised.value.__context__, OSError)
    assert [(e.kind, e.number) for e in events] == [("retry", 1), ("error", 2)]
    assert events[-1].outcome is raised.value


def test_a_sync_function_given_attempt_timeout_without_timeout_arg_is_refused():
    """Nothing can interrupt a sync function, and without timeout_arg nothing
    hands it the timeout: refused when decorated (it was silently ignored; the
    attempt ran as long as it liked).  An async one, or one given
    timeout_arg, is decorated."""

    def fetch(timeout=None):
        return timeout

    def numbers():
        yield 1

    async def afetch():
        return "ok"

    for func in (fetch, numbers):
        rejects(
            lambda func=func: retry([0.1], attempt_timeout=0.5)(func),
            ValueError,
            "attempt_timeout",
            func.__qualname__,
            "timeout_arg",
        )
    assert retry([0.1], attempt_timeout=0.5, timeout_arg="timeout")(fetch)() == 0.5
    assert asyncio.run(retry([0.1], attempt_timeout=0.5)(afetch)()) == "ok"


async def _delays_awaited():
    return [0.1]


async def _delays_async_generated():
    yield 0.1


@pytest.mark.parametrize("delays", [_delays_awaited, _delays_async_generated])
@pytest.mark.parametrize(
    "make", [retrying, aretrying, lambda delays: retry(delays, on=OSError)(lambda: None)]
)
def test_an_async_function_of_delays_is_refused_when_the_policy_is_made(make, delays):
    """Delays are drawn, never awaited: an ``async def`` given as delays is a
    TypeError naming delays at once, not at the first failure (with a
    coroutine never awaited)."""
    rejects(lambda: make(delays), TypeError, "delays", "async function", delays.__qualname__)


def _fetch(url):
    return [0.1]


def _fetch_keyword(*, url):
    return [0.1]


@pytest.mark.parametrize("delays", [_fetch, _fetch_keyword, lambda url, retries=2: [0.1]])
@pytest.mark.parametrize(
    "make",
    [
        retrying,
        aretrying,
        lambda delays: retry(delays, on=OSError),
        lambda delays: retry(on=OSError, attempt_timeout=delays, timeout_arg="timeout"),
        lambda delays: per_failure(default=delays),
    ],
)
def test_a_function_needing_arguments_is_refused_as_delays_when_the_policy_is_made(make, delays):
    """Delays are drawn by calling the function with no arguments: one that
    needs some - the function to retry given where the delays go, as in
    ``@retry(fetch, on=OSError)`` - is a TypeError naming the parameter at
    once; it failed at the first retry with the interpreter's own."""
    with pytest.raises(TypeError) as raised:
        make(delays)
    assert raised.value.parameter in ("delays", "attempt_timeout", "default")
    assert "no arguments" in str(raised.value), raised.value
    assert delays.__qualname__ in str(raised.value)


@pytest.mark.parametrize(
    "delays", [lambda: [0.1], lambda *more: [0.1], lambda retries=1: [0.1], lambda **given: [0.1]]
)
def test_a_function_of_optional_arguments_serves_as_delays(delays):
    """What can be called with no argument serves: defaults, *args, **kwargs."""
    from backoff_iter.testing import no_sleep

    with no_sleep() as slept:
        for attempt in retrying(delays, on=OSError):
            with attempt:
                if attempt.number == 1:
                    raise OSError("reset")
    assert slept == [0.1]


# -- clocks that misbehave, and how often the clock is read ------------------------------------


@each_driver
@pytest.mark.parametrize("first", [math.nan, math.inf, -math.inf])
def test_a_call_starts_at_the_clocks_first_finite_reading(run, first):
    """A start read as NaN or infinite counts as no time: the deadline counts from the next, finite reading."""

    class LateClock(FakeTime):
        readings = 0

        def clock(self):
            self.readings += 1
            return first if self.readings == 1 else self.now

    time = LateClock()
    operation = Operation([OSError(i) for i in range(20)])
    with pytest.raises(OSError):
        run(constant(3), operation, time, deadline=10)
    assert time.slept == [3, 3, 3, 1]


@each_driver
def test_a_clock_that_never_reads_finite_lets_no_time_pass(run):
    """All NaN: every attempt is at 0 s, a 5 s deadline never comes, the delays end the call."""

    class NaNClock(FakeTime):
        def clock(self):
            return math.nan

    time = NaNClock()
    elapsed = []
    with pytest.raises(OSError):
        run(
            [1.0, 1.0],
            Operation([OSError()] * 3),
            time,
            deadline=5.0,
            before_sleep=lambda a, o, d: elapsed.append(a.elapsed),
        )
    assert time.slept == [1.0, 1.0] and elapsed == [0.0, 0.0]


@each_driver
@pytest.mark.usefixtures("no_process_hooks")
def test_without_a_deadline_or_hook_only_the_loops_read_the_clock(run):
    """@retry reads no clock at all; a loop reads it at the start and for each later attempt's elapsed time."""
    time = CountingClock()
    assert run([0.5] * 3, Operation([OSError()] * 3), time) == "ok"
    decorated = run in (run_decorator, run_async_decorator)
    assert time.readings == (0 if decorated else 1 + 3)


# -- the default schedule ------------------------------------------------------------------------


def test_the_default_schedule_is_nine_delays_of_smooth_jitter_from_a_tenth_of_a_second():
    """default_delays() draws what islice(smooth_jitter(0.1, cap=5.0), 9) draws from the same random state."""
    import random

    from backoff_iter import default_delays, smooth_jitter

    for seed in range(20):
        random.seed(seed)
        drawn = list(default_delays())
        random.seed(seed)
        assert drawn == list(islice(smooth_jitter(0.1, cap=5.0), 9))


# -- the decorator's forms and names -------------------------------------------------------------


def test_a_bare_retry_over_a_function_of_one_callable_argument_calls_it():
    """@retry def apply(f): calling apply(print) runs apply, never takes print for a function to decorate."""

    @retry
    def apply(function):
        return function()

    assert apply(lambda: "ran") == "ran"
    assert retry(str)(abs) == str(abs)  # a builtin with no signature to read is called too


def test_a_bare_retry_keeps_an_async_function_of_no_arguments_async():
    """@retry over `async def ping()` is still a coroutine function."""
    import inspect

    @retry
    async def ping():
        return "pong"

    assert inspect.iscoroutinefunction(ping)
    assert asyncio.run(ping()) == "pong"


def test_the_decorators_own_arguments_are_named_when_bad():
    """A one-shot iterator of timeouts, on_result over a stream, resume over a call: each named."""

    def numbers():
        yield 1

    rejects(lambda: retry(attempt_timeout=iter([1.0])), TypeError, "attempt_timeout", "iterator")
    rejects(lambda: retry([1.0], on_result=bool)(numbers), TypeError, "on_result", "stream")
    rejects(lambda: retry([1.0], resume=list)(len), TypeError, "resume", "generator")
    rejects(lambda: retry([1.0], delays=[1.0]), TypeError, "delays", "twice")


def test_the_decorator_given_no_function_says_retry_makes_a_decorator():
    """retry(fetch, on=...)() - fetch taken for the delays, the decorator called bare -
    says what retry() made and what its first argument is, naming func, where it raised
    "_decorate() missing 1 required positional argument"; so do two functions, or a
    value that is no function (retry(fetch, on=...)(url))."""

    def fetch():
        return "ok"

    decorator = retry(fetch, on=ConnectionError)
    rejects(decorator, TypeError, "func", "got nothing", "makes a decorator", "the delays")
    rejects(lambda: decorator(fetch, fetch), TypeError, "func", "got 2 arguments")
    url = "https://example.com/"
    rejects(lambda: decorator(url), TypeError, "func", repr(url), "makes a decorator")
    assert decorator(lambda: "called")() == "called"  # one function: decorated


@pytest.mark.parametrize("kind", [staticmethod, classmethod, property])
def test_retry_above_a_staticmethod_classmethod_or_property_says_to_go_below_it(kind):
    """@retry over @staticmethod (@classmethod, @property) is refused when the class is
    made, saying to put it below: over a staticmethod it made a function that handed the
    instance to the method (TypeError at the call), over the others it said only "must be
    callable" or "delays must be an iterable"."""

    def method(*args):
        return "ok"

    below = f"below @{kind.__name__}, next to the def"
    rejects(lambda: retry([0.0], on=ConnectionError)(kind(method)), TypeError, "func", below)
    why = "handed the instance"  # said of a staticmethod only
    with pytest.raises(TypeError) as raised:
        retry(kind(method))
    assert (why in str(raised.value)) == (kind is staticmethod), str(raised.value)
    rejects(lambda: retry(kind(method)), TypeError, "func", below)  # a bare @retry

    class Service:  # the order that works: @retry next to the def
        @kind
        @retry([0.0], on=ConnectionError)
        def call(*args):
            return "ok"

    assert (Service().call if kind is property else Service().call()) == "ok"


def test_timeout_arg_reaches_an_async_function_too():
    """@retry(attempt_timeout=[...], timeout_arg=...) over an async def passes each attempt's timeout."""
    got = []

    @retry([0.0], attempt_timeout=[2.0, 4.0], timeout_arg="timeout", sleep=lambda s: None)
    async def get(*, timeout):
        got.append(timeout)
        if len(got) == 1:
            raise ConnectionError
        return "ok"

    assert asyncio.run(get()) == "ok" and got == [2.0, 4.0]


def test_events_name_a_callable_object_and_a_function_of_main_by_their_qualified_names():
    """An instance is named after its class; a function of __main__ (or of no module) by its bare name."""
    seen = []

    class Client:
        def __call__(self):
            return "ok"

    def job():
        return "ok"

    def orphan():
        return "ok"

    job.__module__ = "__main__"
    orphan.__module__ = None
    for func in (Client(), job, orphan):
        retry([0.0], observe=seen.append)(func)()
    assert [e.name for e in seen] == [
        f"{__name__}.{Client.__qualname__}",
        job.__qualname__,
        orphan.__qualname__,
    ]


def test_a_builtin_method_of_no_module_is_decorated_and_named_by_its_qualified_name():
    """A method descriptor (str.upper) has no __module__: @retry takes it all the same,
    and its events name it str.upper."""
    seen = []
    assert retry([0.0], observe=seen.append)(str.upper)("ok") == "OK"
    assert [e.name for e in seen] == ["str.upper"]


# -- cancellation and TaskGroups (issue 23: 7, 8, 9) ------------------------------------------------


async def fail_after_the_body(error):
    """A TaskGroup child that fails once the group's body has finished."""
    await asyncio.sleep(0)
    raise error


@needs_task_groups
@pytest.mark.parametrize("form", ["aretrying", "@retry"])
def test_a_task_group_child_failing_after_the_body_is_retried(form):
    """The group's leftover cancellation count (3.11, 3.12) is no cancellation: the README's pattern retries."""
    calls = []

    async def attempt_once():
        calls.append(1)
        if len(calls) < 3:
            async with asyncio.TaskGroup() as group:
                group.create_task(fail_after_the_body(ConnectionError("reset")))
        return len(calls)

    async def main():
        if form == "@retry":
            return await retry([0.0] * 3, on=in_group, sleep=lambda s: None)(attempt_once)()
        async for attempt in aretrying([0.0] * 3, on=in_group, sleep=lambda s: None):
            async with attempt:
                return await attempt_once()

    assert asyncio.run(main()) == 3 and len(calls) == 3


async def cut_when_cancelled():
    """A TaskGroup child that turns its cancellation into an error (a closed connection, say)."""
    try:
        await asyncio.sleep(10)
    except asyncio.CancelledError:
        raise ConnectionError("cut") from None


@needs_task_groups
@pytest.mark.parametrize("form", ["aretrying", "@retry"])
def test_an_outer_timeout_that_a_task_group_turned_into_an_error_ends_the_call(form):
    """asyncio.timeout(0) cancels the attempt; its TaskGroup raises the children's ConnectionError: no retry, TimeoutError."""
    calls = []

    async def attempt_once():
        calls.append(1)
        async with asyncio.TaskGroup() as group:
            group.create_task(cut_when_cancelled())
            await asyncio.sleep(10)

    async def retried():
        if form == "@retry":
            return await retry([0.0] * 5, on=in_group, sleep=lambda s: None)(attempt_once)()
        async for attempt in aretrying([0.0] * 5, on=in_group, sleep=lambda s: None):
            async with attempt:
                await attempt_once()

    async def main():
        async with asyncio.timeout(0):
            await retried()

    with pytest.raises(TimeoutError):
        asyncio.run(main())
    assert calls == [1]


@pytest.mark.skipif(sys.version_info < (3, 11), reason="asyncio.timeout and cancelling() are 3.11+")
@pytest.mark.parametrize("form", ["aretrying", "@retry"])
def test_no_on_result_retry_starts_after_a_cancellation_turned_into_a_result(form):
    """The attempt catches the timeout's cancellation and returns a value on_result retries: the call ends at once."""
    calls = []

    async def attempt_once():
        calls.append(1)
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            return "gave up waiting"
        return "answer"

    retried = lambda result: result == "gave up waiting"

    async def run_once():
        if form == "@retry":
            return await retry([0.0] * 5, on_result=retried, sleep=lambda s: None)(attempt_once)()
        async for attempt in aretrying([0.0] * 5, on_result=retried, sleep=lambda s: None):
            async with attempt:
                attempt.set_result(await attempt_once())

    async def main():
        async with asyncio.timeout(0):
            await run_once()

    with pytest.raises(TimeoutError):
        asyncio.run(main())
    assert calls == [1]


@pytest.mark.parametrize("first", ["the caller", "the timeout"])
def test_a_callers_cancel_in_the_same_loop_pass_as_an_attempt_timeout_wins(first):
    """task.cancel() and an attempt_timeout expiring in one pass of the loop: CancelledError, no retry (3.9/3.10 too)."""
    calls = []

    async def body():
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        async for attempt in aretrying([0.0] * 3, on=Exception, attempt_timeout=0.0):
            if first == "the caller":  # its timer goes before the attempt's own
                loop.call_later(0.0, task.cancel)
            async with attempt:
                if first == "the timeout":
                    loop.call_later(0.0, task.cancel)
                calls.append(attempt.number)
                await asyncio.sleep(10)

    async def main():
        task = asyncio.ensure_future(body())
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert calls == [1]


# -- hints too long to sleep, factories with options, wild clocks (issue 23: 10, 11, 13) ------------

TOO_LONG = [math.inf, 10**400, _checks.LONGEST * 1.01]


@each_driver
@pytest.mark.parametrize("hint", TOO_LONG, ids=["inf", "10**400", "146 years"])
def test_a_hint_too_long_to_sleep_ends_the_call_with_its_failure(run, hint):
    """retry_after_max=inf and a hint past what can be slept: the failure itself, no sleep, no OverflowError."""
    time, events = FakeTime(), []
    failure = OSError("busy")
    with pytest.raises(OSError) as raised:
        run(
            [1.0, 1.0],
            Operation([failure] * 3),
            time,
            retry_after=lambda outcome: hint,
            retry_after_max=math.inf,
            observe=events.append,
        )
    assert raised.value is failure and time.slept == []
    assert [(e.kind, e.reason) for e in events] == [("give_up", "retry_after")]


@pytest.mark.parametrize("hint", TOO_LONG, ids=["inf", "10**400", "146 years"])
def test_a_hint_too_long_given_by_the_loop_body_ends_the_loop(hint):
    """attempt.retry_after(10**400) under retry_after_max=inf: the loop ends with the failure."""
    slept = []
    with pytest.raises(OSError):
        for attempt in retrying([1.0], retry_after_max=math.inf, sleep=slept.append):
            with attempt:
                attempt.retry_after(hint)
                raise OSError("busy")
    assert slept == []


def test_a_factory_with_an_attempt_timeout_and_timeout_arg_is_the_delays():
    """@retry(factory, attempt_timeout=2, timeout_arg="timeout") decorates: the factory gives the delays."""
    slept, seen = [], []

    @retry(lambda: [0.25, 0.5], attempt_timeout=2.0, timeout_arg="timeout", sleep=slept.append)
    def fetch(timeout=None):
        seen.append(timeout)
        if len(seen) < 3:
            raise OSError("slow")
        return "ok"

    assert fetch() == "ok" and slept == [0.25, 0.5] and seen == [2.0, 2.0, 2.0]


@each_driver
@pytest.mark.parametrize("wild", [10**400, -(10**400)], ids=["+10**400", "-10**400"])
def test_a_clock_jumping_to_huge_readings_counts_as_no_time_passing(run, wild):
    """Readings alternating between the fake time and ±10**400: no OverflowError, the deadline as if no time passed."""

    class WildClock(FakeTime):
        readings = 0

        def clock(self):
            self.readings += 1
            return self.now if self.readings % 2 else wild

    time, elapsed = WildClock(), []
    with pytest.raises(OSError):
        run(
            [1.0, 1.0, 1.0],
            Operation([OSError()] * 4),
            time,
            deadline=2.5,
            before_sleep=lambda attempt, outcome, delay: elapsed.append(attempt.elapsed),
        )
    assert time.slept == [1.0, 1.0, 0.5]
    assert all(0.0 <= seconds <= 2.5 for seconds in elapsed)


@each_driver
def test_retry_after_beyond_bounds_how_far_a_hint_raises_the_delay(run):
    """retry_after_beyond=5: a 30 s hint over a 0.5 s delay sleeps 5.5 s, a 2 s hint 2 s (the AWS SDKs' rule)."""
    hints = iter([30.0, 2.0])
    time = FakeTime()
    run(
        [0.5, 0.5],
        Operation([OSError(), OSError()]),
        time,
        retry_after=lambda o: next(hints),
        retry_after_beyond=5,
    )
    assert time.slept == [5.5, 2.0]
    rejects(lambda: retrying(retry_after_beyond=-1), ValueError, "retry_after_beyond")


@each_driver
def test_a_hint_raised_by_beyond_past_any_sleep_is_no_next_attempt(run):
    """retry_after_max=inf and retry_after_beyond=1e10: a hint of 10**12 s raises the 1 s
    delay by 1e10 s, beyond what time.sleep takes (OverflowError): no next attempt, the
    failure as it is, nothing slept; a beyond that still fits is slept."""
    for beyond, slept in ((1e10, []), (1e300, []), (100.0, [101.0])):
        time = FakeTime()
        operation = Operation([OSError("busy")])
        options = {"retry_after_max": math.inf, "retry_after_beyond": beyond, "on": OSError}
        if slept:
            assert run([1.0], operation, time, retry_after=lambda o: 10**12, **options) == "ok"
        else:
            with pytest.raises(OSError, match="busy"):
                run([1.0], operation, time, retry_after=lambda o: 10**12, **options)
        assert time.slept == slept


def test_a_clock_of_ints_gives_elapsed_times_as_floats():
    """A clock returning ints (as time.monotonic_ns would): each attempt's elapsed is a float."""
    now = [100]
    elapsed = []
    for attempt in retrying([0.0, 0.0], clock=lambda: now[0], sleep=lambda s: None, on=OSError):
        with attempt:
            elapsed.append(attempt.elapsed)
            now[0] += 3
            if attempt.number < 3:
                raise OSError
    assert elapsed == [0.0, 3.0, 6.0]
    assert [type(seconds) for seconds in elapsed] == [float] * 3


@pytest.mark.parametrize("kind", [Decimal, Fraction])
def test_a_clock_of_decimals_or_fractions_gives_elapsed_times_as_floats(kind):
    """A clock returning Decimal or Fraction readings works as an int one does
    (a Decimal one raised TypeError adding 0.0), a budget reading it too."""
    now = [kind(100)]
    elapsed = []
    budget = RetryBudget(ratio=1.0, min_per_second=10, clock=lambda: now[0])
    options = {"clock": lambda: now[0], "sleep": lambda s: None, "on": OSError}
    for attempt in retrying([0.5, 0.5], deadline=10, budget=budget, **options):
        with attempt:
            elapsed.append(attempt.elapsed)
            now[0] += kind(3)
            if attempt.number < 3:
                raise OSError
    assert elapsed == [0.0, 3.0, 6.0]
    assert [type(seconds) for seconds in elapsed] == [float] * 3


@pytest.mark.parametrize("kind", [Decimal, Fraction])
def test_the_breaker_throttle_and_rate_limiter_read_a_clock_of_decimals_or_fractions(kind):
    """Each part takes a clock of Decimal or Fraction readings (their clock's type
    says so) and keeps time by it: the breaker opens and half-opens after its 5 s,
    the throttle and the limiter answer as with a float clock."""
    from backoff_iter import AdaptiveThrottle, CircuitBreaker, CubicRateLimiter

    now = [kind(100)]
    breaker = CircuitBreaker(0.5, 2, 10, 5, clock=lambda: now[0])
    for _ in range(2):
        breaker.check()
        breaker.record(False)
    assert breaker.state == "open"
    now[0] += kind(6)
    breaker.check()
    assert breaker.state == "half_open"
    throttle = AdaptiveThrottle(clock=lambda: now[0])
    throttle.check()
    throttle.record(True)
    assert throttle.probability == 0.0
    limiter = CubicRateLimiter(clock=lambda: now[0])
    assert limiter.acquire(sleep=lambda s: None) == 0.0


def test_a_clock_returning_no_number_is_a_type_error_saying_so():
    """A clock of strings fails the call's first reading with an error naming what it returned."""
    with pytest.raises(TypeError, match="a clock returned '12:00'"):
        for attempt in retrying([0.5], clock=lambda: "12:00", deadline=10, on=OSError):
            with attempt:
                pass


def test_a_clock_going_back_below_the_start_never_makes_elapsed_negative():
    """A clock reading 100, 101, then 50 for good: the third attempt's elapsed stays at 1.0
    (no time passed since 101), and every event's elapsed is never negative."""
    readings = iter([100.0, 101.0])
    seen = []
    elapsed = []
    for attempt in retrying(
        [0.0, 0.0],
        clock=lambda: next(readings, 50.0),
        sleep=lambda s: None,
        observe=seen.append,
        on=OSError,
    ):
        with attempt:
            elapsed.append(attempt.elapsed)
            if attempt.number < 3:
                raise OSError
    assert elapsed == [0.0, 1.0, 1.0]
    assert [event.elapsed for event in seen] == [1.0, 1.0, 1.0]


def test_a_hint_raised_only_by_beyond_is_what_the_deadline_must_leave_room_for():
    """retry_after says 30 s, retry_after_beyond=5 raises the 0.5 s delay to 5.5 s only: with a
    deadline of 10 s the call retries after 5.5 s (the honoured hint fits, the asked one not)."""
    time_ = FakeTime()
    operation = Operation([OSError()], time_)
    result = retry(
        [0.5],
        on=OSError,
        retry_after=lambda outcome: 30.0,
        retry_after_beyond=5.0,
        deadline=10.0,
        clock=time_.clock,
        sleep=time_.sleep,
    )(operation)()
    assert (result, time_.slept) == ("ok", [5.5])


def test_parts_hear_the_attempt_after_it_in_the_reverse_order():
    """parts=[outer, inner]: before the attempt outer then inner, after it inner then outer,
    as middleware unwinds."""
    from backoff_iter.parts import Part

    log = []

    class Logs(Part):
        def __init__(self, name):
            self.name = name

        def before_attempt(self, call):
            log.append(("before", self.name))
            return 0.0

        def after_attempt(self, outcome, kind, number, spent):
            log.append(("after", self.name))

    parts = [Logs("outer"), Logs("inner")]
    retry([0.0], on=OSError, parts=parts, sleep=lambda s: None)(Operation([]))()
    assert log == [("before", "outer"), ("before", "inner"), ("after", "inner"), ("after", "outer")]


class _Told:
    """A breaker, a throttle, a rate limiter or a budget of its protocol that
    logs what each call tells it (under its own *name*)."""

    def __init__(self, log, name):
        self.log, self.name = log, name

    def check(self):
        pass

    def acquire(self, sleep=None):
        return 0.0

    async def aacquire(self, sleep=None):
        return 0.0

    def record(self, *told):
        self.log.append((self.name, told))

    def record_success(self, first_attempt, spent=0.0):
        self.log.append((self.name, (first_attempt, spent)))

    def record_failure(self, first_attempt):
        self.log.append((self.name, (first_attempt,)))

    def try_retry(self, outcome):
        return True


class _TellsAll(CircuitBreaker):
    """The library's breaker, its record() overridden with the library's signature."""

    def record(self, success, failure=None):  # type: ignore[override]
        self.log.append(("full", (success, failure)))
        super().record(success, failure)


def _succeed(form, **options):
    """One call, through *form*, whose first attempt returns "ok"."""

    async def ok():
        return "ok"

    async def loop():
        async for attempt in aretrying([0.0], **options):
            async with attempt:
                attempt.set_result("ok")

    if form == "@retry":
        assert retry([0.0], **options)(lambda: "ok")() == "ok"
    elif form == "async @retry":
        assert asyncio.run(retry([0.0], **options)(ok)()) == "ok"
    elif form == "retrying":
        for attempt in retrying([0.0], **options):
            with attempt:
                attempt.set_result("ok")
    else:
        asyncio.run(loop())


@pytest.mark.parametrize("form", ["@retry", "async @retry", "retrying", "aretrying"])
def test_the_options_hear_a_first_attempts_success_as_their_protocols_say(form):
    """A success is told to the rate limiter, the throttle, the breaker, then the
    budget (as middleware unwinds), each with what its protocol takes; a
    subclass of the library's breaker whose record() takes the library's
    signature hears the result with it."""
    log: list[tuple[str, tuple[object, ...]]] = []
    options = {"on": OSError, "sleep": lambda s: None}
    three = {name: _Told(log, name) for name in ("breaker", "throttle", "rate_limiter")}
    _succeed(form, **options, **three)
    assert log == [("rate_limiter", (False,)), ("throttle", (True,)), ("breaker", (True,))]
    del log[:]
    _succeed(form, **options, budget=_Told(log, "budget"), **three)
    assert log == [
        ("rate_limiter", (False,)),
        ("throttle", (True,)),
        ("breaker", (True,)),
        ("budget", (True, 0.0)),
    ]
    del log[:]
    breaker = _TellsAll()
    breaker.log = log
    _succeed(form, **options, breaker=breaker, throttle=_Told(log, "throttle"))
    assert log == [("throttle", (True,)), ("full", (True, "ok"))]
    assert breaker.state == "closed"


class _Breaks(_Told):
    """A part of the protocols (under *name*) whose record() raises once it has logged."""

    def record(self, *told):
        super().record(*told)
        raise RuntimeError(f"{self.name} broke")


class _BreaksOn(PartBase):
    """A part of the user's whose after_attempt raises on an attempt of *kind*."""

    def __init__(self, log, kind, name="part"):
        self.log, self.kind, self.name = log, kind, name

    def after_attempt(self, outcome, kind, number, spent):
        self.log.append((self.name, (kind,)))
        if kind == self.kind:
            raise RuntimeError(f"{self.name} broke")


@pytest.mark.parametrize("form", ["@retry", "async @retry", "retrying", "aretrying"])
@pytest.mark.parametrize("budget", [False, True], ids=["no budget", "budget"])
def test_the_parts_after_one_that_raises_on_a_success_hear_of_it_all_the_same(form, budget):
    """The throttle's record() raises as it hears of a first try's success: the
    breaker and the budget, told after it, hear all the same (a breaker's
    half-open probe comes back, a budget is paid), then the throttle's error
    ends the call.  Without a budget, @retry's first try tells the success
    in one call each (Stages.successes); with one, through each part's
    after_attempt."""
    from backoff_iter import CubicRateLimiter
    from backoff_iter._options import Policy

    log: list[tuple[str, tuple[object, ...]]] = []
    options: dict[str, object] = {"on": OSError, "sleep": lambda s: None}
    options["rate_limiter"] = CubicRateLimiter()  # off: the first try runs bare
    options["throttle"], options["breaker"] = _Breaks(log, "throttle"), _Told(log, "breaker")
    if budget:
        options["budget"] = _Told(log, "budget")
    plan = Policy(**options).plan
    assert plan.fast and (plan.successes is None) == budget
    with pytest.raises(RuntimeError, match="throttle broke"):
        _succeed(form, **options)
    paid = [("budget", (True, 0.0))] if budget else []
    assert log == [("throttle", (True,)), ("breaker", (True,)), *paid]
    # A part of the user's, told first of all, raising: every option's part hears.
    del log[:]
    options["throttle"] = _Told(log, "throttle")
    with pytest.raises(RuntimeError, match="part broke"):
        _succeed(form, **options, parts=[_BreaksOn(log, SUCCESS)])
    assert log == [("part", (SUCCESS,)), ("throttle", (True,)), ("breaker", (True,)), *paid]
    # Two that raise: the first one's error ends the call, once every part has heard.
    del log[:]
    two = [_BreaksOn(log, SUCCESS, "later"), _BreaksOn(log, SUCCESS, "first")]
    with pytest.raises(RuntimeError, match="first broke"):
        _succeed(form, **options, parts=two)
    told = [
        ("first", (SUCCESS,)),
        ("later", (SUCCESS,)),
        ("throttle", (True,)),
        ("breaker", (True,)),
    ]
    assert log == [*told, *paid]


@pytest.mark.parametrize("form", ["@retry", "async @retry", "retrying", "aretrying"])
@pytest.mark.parametrize("kind", [FAILURE, SUCCESS])
def test_the_parts_after_one_that_raises_hear_the_attempt_with_what_they_took(form, kind):
    """A part of the user's raises as it hears of a failure (the call ends with
    its error: no retry) or of the retry's success: the budget, told after it,
    hears the attempt all the same - the success with the retry it paid for
    (spent 1.0), as Part.after_attempt says."""
    log: list[tuple[str, tuple[object, ...]]] = []
    options = {"on": OSError, "sleep": lambda s: None, "budget": _Told(log, "budget")}
    with pytest.raises(RuntimeError, match="part broke"):
        _ends(form, [OSError("down"), "ok"], **options, parts=[_BreaksOn(log, kind)])
    failed = [("part", (FAILURE,)), ("budget", (True,))]
    assert log == (
        failed if kind == FAILURE else [*failed, ("part", (SUCCESS,)), ("budget", (False, 1.0))]
    )


class _SecondBreaks(_Told):
    """A breaker of the protocol (or a part, as *part*) whose second telling raises."""

    def record(self, *told):
        super().record(*told)
        if len(self.log) == 2:
            raise RuntimeError("second broke")

    def after_attempt(self, outcome, kind, number, spent):
        self.record(kind)


@pytest.mark.parametrize("how", ["part", "breaker part"])
def test_a_part_given_twice_is_told_in_each_place_though_its_second_telling_raises(how):
    """The same part given twice is told twice: when its second telling raises,
    the part after it still hears, and neither telling is made again (a part's
    place is found by its bound method, one object per place; a library part's
    one success call, which is one object, is not used for a part given twice)."""
    log: list[tuple[str, tuple[object, ...]]] = []
    told = _SecondBreaks(log, "twice")
    twice = (
        BreakerPart(told)
        if how == "breaker part"
        else type(
            "Twice", (PartBase,), {"after_attempt": lambda self, *heard: told.after_attempt(*heard)}
        )()
    )
    # after them, a part of the same kind (a breaker's part: all tell a success in one call)
    if how == "breaker part":
        last, heard = BreakerPart(_Told(log, "after")), [("after", (True,))]
    else:
        last, heard = _BreaksOn(log, None), [("part", (SUCCESS,))]
    with pytest.raises(RuntimeError, match="second broke"):
        retry([0.0], on=OSError, parts=[last, twice, twice])(lambda: "ok")()
    twice_heard = (True,) if how == "breaker part" else (SUCCESS,)
    assert log == [("twice", twice_heard), ("twice", twice_heard), *heard]


class _InterruptedOn(_BreaksOn):
    """A part of the user's interrupted in its after_attempt on an attempt of
    *kind*: by *interruption* (Ctrl-C, unless told)."""

    def __init__(self, log, kind, name="part", interruption=KeyboardInterrupt):
        super().__init__(log, kind, name)
        self.interruption = interruption

    def after_attempt(self, outcome, kind, number, spent):
        self.log.append((self.name, (kind,)))
        if kind == self.kind:
            raise self.interruption


class _Interrupted(_Told):
    """A part of the protocols (under *name*) whose record() is interrupted once it has logged."""

    def record(self, *told):
        super().record(*told)
        raise KeyboardInterrupt


@pytest.mark.parametrize("form", ["@retry", "async @retry", "retrying", "aretrying"])
@pytest.mark.parametrize("kind", [FAILURE, SUCCESS])
def test_an_interruption_after_a_part_that_raised_ends_the_call_once_all_heard(form, kind):
    """A part raises as it hears of an attempt, and the part told after it is
    interrupted (Ctrl-C in its after_attempt): the parts after them hear all
    the same, then the interruption ends the call - not the ordinary error
    before it, which it keeps as its context: a Ctrl-C is never lost (nor is
    it to a later interruption)."""
    log: list[tuple[str, tuple[object, ...]]] = []
    ends: list[tuple[str, str]] = []
    parts = [
        _BreaksOn(log, None, "heard"),
        _InterruptedOn(log, kind, "exits", SystemExit),
        _InterruptedOn(log, kind, "interrupted"),
        _BreaksOn(log, kind, "first"),
    ]
    with pytest.raises(KeyboardInterrupt) as raised:
        _ends(
            form,
            [OSError("down"), "ok"],
            on=OSError,
            sleep=lambda s: None,
            parts=parts,
            observe=lambda e: ends.append((e.kind, type(e.outcome).__name__)),
        )
    assert str(raised.value.__context__) == "first broke"
    assert ends[-1] == ("error", "KeyboardInterrupt")  # what ends the call
    told = [("first", (kind,)), ("interrupted", (kind,)), ("exits", (kind,)), ("heard", (kind,))]
    failed = [] if kind == FAILURE else [(name, (FAILURE,)) for name, _ in told]
    assert log == [*failed, *told]


@pytest.mark.parametrize("form", ["@retry", "async @retry", "retrying", "aretrying"])
def test_an_interruption_after_an_option_that_raised_on_a_first_success_ends_the_call(form):
    """The throttle's record() raises as it hears of a first try's success and
    the breaker's, told after it, is interrupted (@retry's first try: in one
    call each, Stages.successes): the interruption ends the call, its context
    the throttle's error."""
    log: list[tuple[str, tuple[object, ...]]] = []
    options = {"on": OSError, "sleep": lambda s: None}
    options["throttle"], options["breaker"] = _Breaks(log, "throttle"), _Interrupted(log, "breaker")
    ends: list[tuple[str, str]] = []
    options["observe"] = lambda e: ends.append((e.kind, type(e.outcome).__name__))
    with pytest.raises(KeyboardInterrupt) as raised:
        _succeed(form, **options)
    assert str(raised.value.__context__) == "throttle broke"
    assert ends == [("error", "KeyboardInterrupt")]
    assert log == [("throttle", (True,)), ("breaker", (True,))]


class _HearsOutcomes(PartBase):
    """A part of the user's that logs the kind and the outcome of each attempt it hears."""

    def __init__(self, log):
        self.log = log

    def after_attempt(self, outcome, kind, number, spent):
        self.log.append((kind, outcome))


@pytest.mark.parametrize("form", ["@retry", "async @retry"])
def test_a_first_success_a_part_broke_reaches_the_parts_after_with_its_result(form):
    """@retry's bare first try returns "ok" 2 s after it began; a part raises as it hears
    of it and the next is interrupted: the part after them hears the result itself, and
    the hooks hear the interruption end the call 2 s in (counted from the first try)."""
    log: list[tuple[str, tuple[object, ...]]] = []
    heard: list[tuple[object, ...]] = []
    ends = []
    now = [10.0]

    def ok():
        now[0] = 12.0
        return "ok"

    async def aok():
        return ok()

    parts = [
        _HearsOutcomes(heard),
        _InterruptedOn(log, SUCCESS, "interrupted"),
        _BreaksOn(log, SUCCESS, "first"),
    ]
    options = {"on": OSError, "parts": parts, "clock": lambda: now[0], "observe": ends.append}
    with pytest.raises(KeyboardInterrupt) as raised:
        if form == "@retry":
            retry([0.0], **options)(ok)()
        else:
            asyncio.run(retry([0.0], **options)(aok)())
    assert str(raised.value.__context__) == "first broke"
    assert heard == [(SUCCESS, "ok")]
    assert [(e.kind, type(e.outcome), e.elapsed) for e in ends] == [
        ("error", KeyboardInterrupt, 2.0)
    ]


@pytest.mark.parametrize("form", ["@retry", "async @retry", "retrying", "aretrying"])
def test_an_error_after_a_part_interrupted_leaves_the_interruption_to_end_the_call(form):
    """A part is interrupted as it hears of a success, and the parts told after
    it raise an ordinary error or another interruption: the first, the
    interruption, ends the call once all have heard."""
    log: list[tuple[str, tuple[object, ...]]] = []
    parts = [
        _BreaksOn(log, SUCCESS, "later"),
        _InterruptedOn(log, SUCCESS, "exits", SystemExit),
        _InterruptedOn(log, SUCCESS, "interrupted"),
    ]
    with pytest.raises(KeyboardInterrupt):
        _succeed(form, on=OSError, sleep=lambda s: None, parts=parts)
    assert log == [("interrupted", (SUCCESS,)), ("exits", (SUCCESS,)), ("later", (SUCCESS,))]


class _BreaksWhen(_Told):
    """A breaker of the protocol (under *name*) whose record() raises when told *success*."""

    def __init__(self, log, name, success):
        super().__init__(log, name)
        self.success = success

    def record(self, *told):
        super().record(*told)
        if told[0] == self.success:
            raise RuntimeError(f"{self.name} broke")


def _ends(form, outcomes, **options):
    """One call, through *form*, whose attempts raise or return each of *outcomes* in turn."""
    outcomes = iter(outcomes)

    def attempt_once():
        outcome = next(outcomes)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    async def attempt_once_async():
        return attempt_once()

    async def loop():
        async for attempt in aretrying([0.0], **options):
            async with attempt:
                attempt.set_result(attempt_once())

    if form == "@retry":
        return retry([0.0], **options)(attempt_once)()
    if form == "async @retry":
        return asyncio.run(retry([0.0], **options)(attempt_once_async)())
    if form == "retrying":
        for attempt in retrying([0.0], **options):
            with attempt:
                attempt.set_result(attempt_once())
        return None
    return asyncio.run(loop())


@pytest.mark.parametrize("form", ["@retry", "async @retry", "retrying", "aretrying"])
@pytest.mark.parametrize("kind", [SUCCESS, ERROR, FAILURE])
@pytest.mark.parametrize("retried", [False, True], ids=["first try", "after a retry"])
@pytest.mark.parametrize("library", [False, True], ids=["part", "breaker"])
def test_a_part_that_raises_ends_the_call_with_an_error_the_hooks_hear(
    form, kind, retried, library, no_process_hooks
):
    """A part raises as it hears of a success, of an error the policy does not
    retry or of a failure it retries: the call ends with the part's error,
    and the hooks - the policy's and the process's - hear it as the call's
    "error", whatever the attempt's kind (a span begun at a retry ends).  As
    a breaker's record(), a first try's success is told in one call
    (Stages.successes)."""
    from backoff_iter import instrument

    events: list[tuple[str, int, str]] = []
    everyones: list[instrument.RetryEvent] = []
    instrument.enable(everyones.append)
    log: list[tuple[str, tuple[object, ...]]] = []

    def hook(event):
        events.append((event.kind, event.number, type(event.outcome).__name__))

    outcome = {SUCCESS: "ok", ERROR: ValueError("bad"), FAILURE: OSError("down")}[kind]
    outcomes = [OSError("down"), outcome] if retried else [outcome]
    options: dict[str, object] = {"on": OSError, "sleep": lambda s: None, "observe": [hook]}
    if library:  # a breaker hears a success or an error as record(True), a failure as False
        options["breaker"] = _BreaksWhen(log, "breaker", kind != FAILURE)
    else:
        options["parts"] = [_BreaksOn(log, kind)]
    with pytest.raises(RuntimeError, match="broke"):
        _ends(form, outcomes, **options)
    number = 2 if retried and kind != FAILURE else 1
    before = [("retry", 1, "OSError")] if number == 2 else []
    assert events == [*before, ("error", number, "RuntimeError")]
    assert [(e.kind, e.number, type(e.outcome).__name__) for e in everyones] == events


def test_a_breakers_part_given_twice_first_of_all_is_told_once_in_each_place():
    """A breaker's part given first and again after it (no part before them):
    a first try's success is told to each place once, though the second
    telling raises (its one success call is not used: the first is found)."""
    log: list[tuple[str, tuple[object, ...]]] = []
    twice = BreakerPart(_SecondBreaks(log, "twice"))
    with pytest.raises(RuntimeError, match="second broke"):
        retry([0.0], on=OSError, parts=[twice, twice])(lambda: "ok")()
    assert log == [("twice", (True,)), ("twice", (True,))]


@pytest.mark.parametrize("form", ["@retry", "async @retry", "retrying", "aretrying"])
def test_a_part_whose_after_attempt_is_one_object_in_two_places_is_told_once_in_each(form):
    """A part class whose after_attempt is a staticmethod (one function for
    every instance) given twice: when its second telling raises, the part
    after them hears, and neither place is told again."""
    told: list[str] = []

    class Static(PartBase):
        @staticmethod
        def after_attempt(outcome, kind, number, spent):
            told.append(kind)
            if len(told) == 2:
                raise RuntimeError("second broke")

    log: list[tuple[str, tuple[object, ...]]] = []
    with pytest.raises(RuntimeError, match="second broke"):
        _succeed(form, on=OSError, parts=[_BreaksOn(log, None, "after"), Static(), Static()])
    assert told == [SUCCESS, SUCCESS] and log == [("after", (SUCCESS,))]


@pytest.mark.parametrize("form", ["@retry", "async @retry", "retrying", "aretrying"])
@pytest.mark.parametrize("interrupted", [False, True], ids=["raises", "interrupted"])
def test_a_part_that_raises_after_throttled_broke_leaves_the_first_error_to_end_the_call(
    form, interrupted
):
    """The throttled predicate raises, and a part, told of the failure all the
    same, raises too: the predicate's error, the first, ends the call and the
    hooks hear it - unless the part was interrupted (Ctrl-C), which ends it."""
    log: list[tuple[str, tuple[object, ...]]] = []
    ends: list[tuple[str, str]] = []
    part = _InterruptedOn(log, FAILURE) if interrupted else _BreaksOn(log, FAILURE)

    def throttled(outcome):
        raise ZeroDivisionError("throttled broke")

    ending = KeyboardInterrupt if interrupted else ZeroDivisionError
    with pytest.raises(ending):
        _ends(
            form,
            [OSError("down"), "ok"],
            on=OSError,
            sleep=lambda s: None,
            throttled=throttled,
            parts=[part],
            observe=lambda e: ends.append((e.kind, type(e.outcome).__name__)),
        )
    assert log == [("part", (FAILURE,))]
    assert ends == [("error", ending.__name__)]


@pytest.mark.parametrize("form", ["@retry", "async @retry"])
def test_retrys_first_try_tells_a_success_without_the_options_parts(form):
    """@retry's bare first try tells the library's breaker, throttle and rate
    limiter of a success itself, without their parts' after_attempt (a frame
    each); a retried call's success is told through them, as a loop's is."""
    from unittest import mock

    from backoff_iter import AdaptiveThrottle, CubicRateLimiter
    from backoff_iter.parts import BreakerPart, RateLimiterPart, ThrottlePart

    breaker, throttle, limiter = CircuitBreaker(), AdaptiveThrottle(), CubicRateLimiter()
    options = {"breaker": breaker, "throttle": throttle, "rate_limiter": limiter}
    heard = []
    with contextlib.ExitStack() as patches:
        for kind in (BreakerPart, ThrottlePart, RateLimiterPart):
            told = functools.partial(lambda kind, *args: heard.append((kind, args[1])), kind)
            patches.enter_context(mock.patch.object(kind, "after_attempt", staticmethod(told)))
        _succeed(form, on=OSError, sleep=lambda s: None, **options)
        assert heard == []
        for attempt in retrying([0.0], on=OSError, **options):
            with attempt:
                pass
    assert heard == [
        (RateLimiterPart, "success"),
        (ThrottlePart, "success"),
        (BreakerPart, "success"),
    ]


def test_the_options_of_the_library_and_the_protocols_hear_a_success_in_one_call():
    """@retry's first try tells a success to the library's breaker, throttle and
    rate limiter, and to those of the protocols (a subclass's record() of the
    protocol's signature too), one call each: record(True), or the limiter's
    record(False), the parts' own frames skipped.  A budget, a part of the
    user's, or a subclass's record() of the library's signature (it may read
    the result) are told through after_attempt."""
    from backoff_iter import AdaptiveThrottle, CubicRateLimiter
    from backoff_iter._options import Policy
    from backoff_iter.parts import Part

    class OneArgumentBreaker(CircuitBreaker):
        def record(self, success):  # type: ignore[override]
            super().record(success)

    breaker, throttle, limiter = CircuitBreaker(), AdaptiveThrottle(), CubicRateLimiter()
    plan = Policy(breaker=breaker, throttle=throttle, rate_limiter=limiter).plan
    assert plan.successes == (
        (limiter.record, False),
        (throttle.record, True),
        (breaker.record, True),
    )
    log: list[object] = []
    duck, own = _Told(log, "duck"), OneArgumentBreaker()
    plan = Policy(breaker=own, throttle=duck, rate_limiter=duck).plan
    assert plan.successes == ((duck.record, False), (duck.record, True), (own.record, True))
    assert Policy(throttle=throttle).plan.successes == ((throttle.record, True),)
    assert Policy(breaker=breaker).plan.successes == ((breaker.record, True),)
    assert Policy(parts=[Part()]).plan.successes == ()  # (a part that hears nothing)

    class Hears(Part):
        def after_attempt(self, outcome, kind, number, spent):
            pass

    for heard in (
        {"budget": TokenBucket(), "breaker": breaker},
        {"breaker": _TellsAll(), "throttle": throttle},
        {"throttle": throttle, "parts": [Hears()]},
        {"rate_limiter": limiter, "parts": [Hears()]},
    ):
        assert Policy(**heard).plan.successes is None, heard


def test_one_part_given_alone_is_consulted_as_a_list_of_it_is():
    """parts=Part(), not in a list: taken as the one part (RetryOptions says so)."""
    from backoff_iter.parts import Part

    kinds = []

    class Tally(Part):
        def after_attempt(self, outcome, kind, number, spent):
            kinds.append(kind)

    retry([0.0], on=OSError, parts=Tally(), sleep=lambda s: None)(Operation([OSError()]))()
    assert kinds == ["failure", "success"]


def test_a_plain_decorator_below_retry_hiding_an_async_def_is_refused_at_the_first_call():
    """@retry over a plain decorator (functools.wraps) over an async def: the
    function is a plain one returning a coroutine, which failed after the
    retries, silently never retried.  Its coroutine is refused, closed (no
    'never awaited' warning); a wrapper running the coroutine itself passes."""
    import asyncio
    import functools
    import gc
    import warnings

    def logged(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            return func(*args, **kwargs)

        return wrapper

    def run_to_end(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            return asyncio.run(func(*args, **kwargs))

        return wrapper

    ran = []

    async def fetch():
        ran.append(1)
        if len(ran) < 3:
            raise ConnectionError("reset")
        return "page"

    hidden = retry([0.0, 0.0], on=ConnectionError, sleep=lambda s: None)(logged(fetch))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(TypeError, match=r"fetch returned <coroutine .*Put @retry right above"):
            hidden()
        gc.collect()  # (the coroutine, held by the error's frames until now, is gone)
    assert [str(warning.message) for warning in caught] == []
    assert ran == []  # never run: closed
    run = retry([0.0, 0.0], on=ConnectionError, sleep=lambda s: None)(run_to_end(fetch))
    assert run() == "page"
    assert ran == [1, 1, 1]


def test_a_refused_hidden_coroutine_ends_the_call_as_an_error_the_hooks_and_parts_hear():
    """@retry over a plain decorator hiding an async def: the refusal is the
    call's error - the parts and hooks hear "error", never a success first."""
    import functools

    from backoff_iter.parts import Part

    kinds, events = [], []

    class Tally(Part):
        def after_attempt(self, outcome, kind, number, spent):
            kinds.append((kind, type(outcome).__name__))

    def logged(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            return func(*args, **kwargs)

        return wrapper

    async def fetch():
        return "page"

    hidden = retry(
        [0.0], on=Exception, sleep=lambda s: None, parts=[Tally()], observe=[events.append]
    )(logged(fetch))
    with pytest.raises(TypeError, match="Put @retry right above"):
        hidden()
    assert kinds == [("error", "TypeError")]
    assert [(event.kind, type(event.outcome).__name__) for event in events] == [
        ("error", "TypeError")
    ]


def test_hooks_and_parts_given_as_generators_serve_every_function_a_decorator_decorates():
    """observe= and parts= take iterables: a generator is read once, as the
    decorator is made, and each function it decorates hears and asks them all
    (the decorator's check of its options used the generator up)."""
    from backoff_iter.parts import Part

    kinds, events = [], []

    class Tally(Part):
        def after_attempt(self, outcome, kind, number, spent):
            kinds.append(kind)

    decorator = retry(
        [0.0],
        on=OSError,
        sleep=lambda s: None,
        observe=(hook for hook in [events.append]),
        parts=(part for part in [Tally()]),
    )
    for _ in range(2):
        decorator(Operation([OSError()]))()
    assert kinds == ["failure", "success"] * 2
    assert [event.kind for event in events] == ["retry", "success"] * 2


def test_a_part_awaited_before_each_attempt_guards_the_first_try_of_async_retry():
    """A part with only abefore_attempt: async @retry awaits it before the first
    try (which runs bare when only a breaker's or a throttle's check guards it),
    and its refusal ends the call before the function runs."""
    import asyncio

    from backoff_iter.parts import Part

    class Closed(Part):
        async def abefore_attempt(self, call):
            raise PermissionError("closed")

    ran = []

    @retry([0.0], on=OSError, parts=[Closed()], sleep=lambda s: None)
    async def operation():
        ran.append(1)

    with pytest.raises(PermissionError):
        asyncio.run(operation())
    assert ran == []


def test_an_interrupted_attempt_is_told_to_no_part_the_dependency_never_answered():
    """A half-open breaker's probe interrupted (KeyboardInterrupt, or cancelled by the
    caller's asyncio.wait_for on a hung dependency) is no answer: the breaker hears
    nothing, stays half open, and lets the next probe go once a break has passed (it
    heard a success, and closed on a dependency that hangs).  While closed, such hangs
    never count as successes against the failures; the hooks still hear an error."""
    import asyncio

    from backoff_iter import CircuitBreaker

    now = [0.0]

    def half_open():
        breaker = CircuitBreaker(
            minimum_throughput=1, failure_ratio=1.0, break_duration=5, clock=lambda: now[0]
        )
        now[0] = 0.0
        breaker.check()
        breaker.record(False)  # open
        now[0] = 5.0  # the break is over: the next check lets the probe go
        return breaker

    breaker, seen = half_open(), []

    @retry([0.0], on=OSError, breaker=breaker, sleep=lambda s: None, observe=seen.append)
    def interrupted():
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        interrupted()
    assert breaker.state == "half_open" and [event.kind for event in seen] == ["error"]
    now[0] = 10.0  # a break later: the probe that never reported is sent again
    breaker.check()

    async def cancelled(hangs):  # as asyncio.wait_for does, without waiting for it
        task = asyncio.ensure_future(hangs())
        await asyncio.sleep(0)  # the attempt starts, and waits
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    breaker, heard = half_open(), []

    @retry([0.0], on=OSError, breaker=breaker, sleep=lambda s: None, observe=heard.append)
    async def hangs():
        await asyncio.Event().wait()  # until cancelled

    asyncio.run(cancelled(hangs))
    assert breaker.state == "half_open" and [event.kind for event in heard] == ["error"]

    closed = CircuitBreaker(minimum_throughput=2, failure_ratio=0.5, clock=lambda: now[0])
    closed.record(False)

    @retry([0.0], on=OSError, breaker=closed, sleep=lambda s: None)
    async def hung():
        await asyncio.Event().wait()

    async def three_hangs():
        for _ in range(3):
            await cancelled(hung)

    asyncio.run(three_hangs())
    closed.record(False)  # two failures of two; with the hangs as successes, 2 of 5: closed
    assert closed.state == "open"


def test_a_breakers_check_is_asked_at_each_call_not_bound_when_decorated():
    """check() patched after decoration (as a test double would) refuses the first try too."""
    from unittest import mock

    from backoff_iter import BrokenCircuitError, CircuitBreaker

    operation = Operation([])
    decorated = retry([0.0], on=OSError, breaker=CircuitBreaker(), sleep=lambda s: None)(operation)
    with mock.patch.object(CircuitBreaker, "check", side_effect=BrokenCircuitError(1.0)):
        with pytest.raises(BrokenCircuitError):
            decorated()
    assert operation.calls == 0


def test_observe_and_parts_given_as_none_mean_none():
    """observe=None and parts=None, said explicitly: no hook and no part, not an error."""
    time = FakeTime()
    calls = retry([0.5], on=OSError, observe=None, parts=None, sleep=time.sleep)
    assert calls(Operation([OSError()]))() == "ok"
    assert time.slept == [0.5]


def test_a_signalling_nan_delay_is_refused_as_any_nan_is():
    """Decimal('sNaN'), which float() refuses with a ValueError of its own: an
    ArgumentValueError naming the delays, as Decimal('NaN') gets - never a delay of 0."""
    from decimal import Decimal

    for nan in (Decimal("NaN"), Decimal("sNaN")):
        time = FakeTime()
        with pytest.raises(ArgumentValueError) as raised:
            retry([nan], on=OSError, sleep=time.sleep)(Operation([OSError()]))()
        assert raised.value.parameter == "delays" and time.slept == []


@pytest.mark.skipif(sys.version_info < (3, 11), reason="ExceptionGroup is new in Python 3.11")
def test_a_cancellation_is_found_as_a_cause_and_among_a_groups_members():
    """from_cancellation looks through causes, contexts and the members of groups."""
    from backoff_iter._cancelling import from_cancellation

    caused = RuntimeError("wrapped")
    caused.__cause__ = asyncio.CancelledError()
    group = BaseExceptionGroup  # noqa: F821 - 3.11+
    assert from_cancellation(caused)
    assert from_cancellation(group("attempts", [OSError(), asyncio.CancelledError()]))
    assert not from_cancellation(group("attempts", [OSError(), ValueError()]))


def test_a_budget_hears_nothing_of_an_error_the_policy_does_not_retry():
    """A ValueError under on=OSError ends the call: no failure the budget may pay for, so the
    budget is told nothing."""
    ledger = Ledger([])
    with pytest.raises(ValueError):
        retry([0.0], on=OSError, budget=ledger, sleep=lambda s: None)(Operation([ValueError()]))()
    assert ledger.log == []


def test_a_part_that_does_not_override_allow_retry_takes_nothing():
    """A part overriding only after_attempt took nothing for the retry, and hears so; the
    budget hears what it gave (1.5), not also the True of Part's default allow_retry."""
    from backoff_iter.parts import Part

    class Hears(Part):
        def __init__(self):
            self.told = []

        def after_attempt(self, outcome, kind, number, spent):
            self.told.append((kind, spent))

    hears, ledger = Hears(), Ledger([1.5])
    calls = retry([0.0], on=OSError, budget=ledger, parts=[hears], sleep=lambda s: None)
    assert calls(Operation([OSError()]))() == "ok"
    assert hears.told == [("failure", 0.0), ("success", 0.0)]
    assert ledger.log[-1] == ("success", False, 1.5)


@pytest.mark.parametrize("form", ["sync", "async"])
def test_a_part_reads_the_call_from_its_first_attempt_and_may_hold_it_weakly(form):
    """before_attempt sees number, delay, last and timeout from the first attempt on (0.0
    slept, no failure), the retried failure at the next; a part may key the call weakly."""
    import weakref

    from backoff_iter.parts import Part

    class Peeks(Part):
        def __init__(self):
            self.seen, self.calls = [], weakref.WeakSet()

        def before_attempt(self, call):
            self.seen.append((call.number, call.delay, type(call.last).__name__, call.timeout))
            self.calls.add(call)
            return 0.0

    peeks, failure = Peeks(), OSError("once")
    if form == "sync":
        retry([0.5], on=OSError, parts=[peeks], sleep=lambda s: None)(Operation([failure]))()
    else:
        attempts = [failure]

        async def operation():
            if attempts:
                raise attempts.pop()
            return "ok"

        async def nap(seconds):
            pass

        assert asyncio.run(retry([0.5], on=OSError, parts=[peeks], sleep=nap)(operation)()) == "ok"
    assert peeks.seen == [(1, 0.0, "NoneType", None), (2, 0.5, "OSError", None)]


@each_driver
def test_each_part_hears_what_it_took_itself(run):
    """Two parts allow each retry taking 2.0 and 3.0: each hears the attempts after the
    first retry with what it took (not the 5.0 they took together: a part pays back only
    its own)."""
    from backoff_iter.parts import Part

    class Takes(Part):
        def __init__(self, amount):
            self.amount = amount
            self.told = []

        def allow_retry(self, outcome, kind):
            return self.amount

        def after_attempt(self, outcome, kind, number, spent):
            self.told.append((kind, spent))

    two, three = Takes(2.0), Takes(3.0)
    operation = Operation([OSError(), OSError()])
    assert run([0.0, 0.0], operation, FakeTime(), on=OSError, parts=[two, three]) == "ok"
    assert two.told == [("failure", 0.0), ("failure", 2.0), ("success", 2.0)]
    assert three.told == [("failure", 0.0), ("failure", 3.0), ("success", 3.0)]


@each_driver
def test_a_part_taking_a_whole_number_beyond_floats_is_heard_to_have_taken_inf(run):
    """A part whose allow_retry says it took 10**400 (truthy: the retry goes): the call
    retries and succeeds, the part hearing inf - as far as floats go - for the attempt
    after the retry (the int was added to 0.0: OverflowError out of the call)."""
    from backoff_iter.parts import Part

    class Huge(Part):
        def __init__(self):
            self.told = []

        def allow_retry(self, outcome, kind):
            return 10**400

        def after_attempt(self, outcome, kind, number, spent):
            self.told.append((kind, spent))

    huge = Huge()
    assert run([0.0], Operation([OSError()]), FakeTime(), on=OSError, parts=[huge]) == "ok"
    assert huge.told == [("failure", 0.0), ("success", math.inf)]


@each_driver
@pytest.mark.parametrize(
    "taken, heard", [(Decimal("2.5"), 2.5), (Fraction(1, 4), 0.25), ("yes", None), ([1], None)]
)
def test_a_part_taking_a_decimal_is_heard_as_its_float_and_a_non_number_is_named(run, taken, heard):
    """allow_retry (a budget's try_retry) answering a Decimal or a Fraction: the retry goes
    and the part hears the float; a truthy answer that is no number ends the call with an
    error naming what it is - it was a bare TypeError from the core's own addition."""
    from backoff_iter.parts import Part

    class Takes(Part):
        def __init__(self):
            self.told = []

        def allow_retry(self, outcome, kind):
            return taken

        def after_attempt(self, outcome, kind, number, spent):
            self.told.append((kind, spent))

    part = Takes()
    if heard is None:
        with pytest.raises(TypeError, match=r"allow_retry took .* must be a real number"):
            run([0.0], Operation([OSError()]), FakeTime(), on=OSError, parts=[part])
        return
    assert run([0.0], Operation([OSError()]), FakeTime(), on=OSError, parts=[part]) == "ok"
    assert part.told == [("failure", 0.0), ("success", heard)]


def test_a_before_sleep_hook_ending_exactly_at_the_deadline_leaves_no_retry():
    """before_sleep takes the clock to the deadline itself: no time is left, the call gives up
    after attempt 1 (no attempt starts at the deadline) and sleeps nothing."""
    time_ = FakeTime()
    start = time_.now
    given_up = []

    def slow_hook(attempt, outcome, delay):
        time_.now = start + 5.0

    operation = Operation([OSError(), OSError()], time_)
    decorated = retry(
        [1.0, 1.0],
        on=OSError,
        deadline=5.0,
        clock=time_.clock,
        sleep=time_.sleep,
        before_sleep=slow_hook,
        give_up=lambda attempt, outcome: given_up.append(attempt.number),
    )(operation)
    with pytest.raises(OSError):
        decorated()
    assert (operation.calls, time_.slept, given_up) == (1, [], [1])


def endless_warnings(delays, **options):
    """The RuntimeWarnings of one call of 102 failures and a success under *delays*."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        retry(delays, on=OSError, sleep=lambda s: None, **options)(Operation([OSError()] * 102))()
    return [w for w in caught if issubclass(w.category, RuntimeWarning)]


def test_the_endless_schedule_warning_comes_once_and_never_with_a_deadline():
    """102 retries with no deadline: one warning, not one per retry past the hundredth; with a
    deadline (which bounds the schedule) none."""
    assert len(endless_warnings(lambda: constant(0.0))) == 1
    assert endless_warnings(lambda: constant(0.0), deadline=1e9, clock=lambda: 0.0) == []


def test_a_process_hook_for_failures_only_hears_retries_and_give_ups(no_process_hooks):
    """enable() of a hook whose events are retries and give-ups: it hears each of them."""
    from backoff_iter import instrument

    heard = []

    def hook(event):
        heard.append(event.kind)

    hook.events = {"retry", "give_up"}
    instrument.enable(hook)
    retry([0.0], on=OSError, sleep=lambda s: None)(Operation([OSError()]))()
    with pytest.raises(OSError):
        retry([0.0], on=OSError, sleep=lambda s: None)(Operation([OSError()] * 2))()
    assert heard == ["retry", "retry", "give_up"]


def test_the_next_attempt_tells_the_sleep_shortened_after_a_slow_before_sleep_hook():
    """A before_sleep hook takes 4 s of a 5 s deadline: the 2 s delay is cut to the 1 s left,
    and the next attempt's delay says 1.0, what was slept."""
    time_ = FakeTime()
    start = time_.now
    delays = []

    def slow_hook(attempt, outcome, delay):
        time_.now = start + 4.0

    for attempt in retrying(
        [2.0],
        on=OSError,
        deadline=5.0,
        clock=time_.clock,
        sleep=time_.sleep,
        before_sleep=slow_hook,
    ):
        with attempt:
            delays.append(attempt.delay)
            if attempt.number == 1:
                raise OSError
    assert (delays, time_.slept) == ([0.0, 1.0], [1.0])


# -- what the parts let go, for an attempt that never runs, they get back -----------------


@each_driver
def test_a_retry_the_breaker_then_refuses_gives_the_quota_its_cost_back(run):
    """The second failure opens the breaker; the quota paid 14 for the retry after it,
    which the breaker refuses: the 14 comes back (two retries paid, one ran)."""
    from backoff_iter import BrokenCircuitError, CircuitBreaker, RetryQuota

    time = FakeTime()
    quota = RetryQuota(capacity=100)
    breaker = CircuitBreaker(failure_ratio=0.5, minimum_throughput=2, clock=time.clock)
    operation = Operation([ConnectionError()] * 5)
    with pytest.raises(BrokenCircuitError):
        run([0.0] * 5, operation, time, on=ConnectionError, budget=quota, breaker=breaker)
    assert operation.calls == 2 and quota.available == 86.0


@each_driver
def test_a_part_refusing_the_retry_after_the_budget_said_yes_gives_the_cost_back(run):
    """parts=[...] asked after the budget refuses: what the budget took is given back."""
    from backoff_iter import RetryQuota
    from backoff_iter.parts import Part

    class NoRetries(Part):
        def allow_retry(self, outcome, kind):
            return False

    quota = RetryQuota(capacity=100)
    operation = Operation([ConnectionError()] * 5)
    with pytest.raises(ConnectionError):
        run([0.0] * 5, operation, FakeTime(), on=ConnectionError, budget=quota, parts=[NoRetries()])
    assert operation.calls == 1 and quota.available == 100.0


@each_driver
def test_a_before_sleep_hook_past_the_deadline_gives_the_retrys_cost_back(run):
    """The retry was paid, then the hook ran past the deadline: no retry, nothing paid."""
    from backoff_iter import RetryQuota

    time = FakeTime()

    def slow(attempt, outcome, delay):
        time.now += 5.0

    quota = RetryQuota(capacity=100)
    operation = Operation([ConnectionError()] * 5)
    options = {"on": ConnectionError, "budget": quota, "deadline": 3.0, "before_sleep": slow}
    with pytest.raises(ConnectionError):
        run([1.0] * 5, operation, time, **options)
    assert operation.calls == 1 and quota.available == 100.0


@each_driver
def test_a_jittered_retry_whose_hint_passes_the_deadline_costs_nothing(run):
    """per_failure(jitter=) asks the budget before the server's hint is weighed: a hint
    past the deadline then ends the call, and the cost comes back."""
    from backoff_iter import RetryQuota
    from backoff_iter.schedules import per_failure

    quota = RetryQuota(capacity=100)
    operation = Operation([ConnectionError()] * 5)
    options = {"on": ConnectionError, "budget": quota, "deadline": 10.0}
    delays = per_failure(default=[1.0] * 5, jitter="full")
    with pytest.raises(ConnectionError):
        run(delays, operation, FakeTime(), retry_after=lambda outcome: 30.0, **options)
    assert operation.calls == 1 and quota.available == 100.0


@each_driver
@pytest.mark.parametrize(
    "broken, state",
    [("on", "closed"), ("throttled", "open")],
    ids=["on raises: an error", "throttled raises: a failure"],
)
def test_a_predicate_that_breaks_on_the_half_open_probe_still_tells_the_breaker(run, broken, state):
    """The half-open probe fails and the policy's on= or throttled= predicate raises on its
    failure: the call ends with the predicate's error, and the breaker hears of the probe -
    on= broke: an error not retried (as when on_result breaks), closed; throttled= broke:
    the failure on= matched, open again.  It heard nothing, so every call was refused as
    "half open, its probe still out" for a whole break."""
    from backoff_iter import CircuitBreaker

    def raises(outcome):
        raise LookupError("the predicate's bug")

    time = FakeTime()
    breaker = CircuitBreaker(
        failure_ratio=0.5, minimum_throughput=2, break_duration=30, clock=time.clock
    )
    for _ in range(2):  # an outage: two failures open the circuit
        with pytest.raises(ConnectionError):
            run([], Operation([ConnectionError()]), time, on=ConnectionError, breaker=breaker)
    time.now += 30.0  # the break is over: the next call is the probe
    options = {"on": raises} if broken == "on" else {"on": ConnectionError, "throttled": raises}
    with pytest.raises(LookupError):
        run([1.0], Operation([ConnectionError()]), time, breaker=breaker, **options)
    assert breaker.state == state


@each_driver
def test_a_throttle_refusing_the_half_open_probe_lets_the_next_call_probe(run):
    """The breaker lets its half-open probe go, the throttle asked after it refuses it
    locally: the probe was never sent, so the next call is the probe (it was refused as
    "half open, its probe still out" for a whole break)."""
    from backoff_iter import AdaptiveThrottle, CircuitBreaker, ThrottledError

    class Draws:  # the throttle's rng: lets everything go, until told to reject
        value = 1.0

        def random(self):
            return self.value

    time, draws = FakeTime(), Draws()
    breaker = CircuitBreaker(
        failure_ratio=0.5, minimum_throughput=2, break_duration=30, clock=time.clock
    )
    throttle = AdaptiveThrottle(k=2.0, clock=time.clock, rng=draws)
    options = {"on": ConnectionError, "breaker": breaker, "throttle": throttle}
    for _ in range(2):  # an outage: two failures open the circuit
        with pytest.raises(ConnectionError):
            run([], Operation([ConnectionError()]), time, **options)
    assert breaker.state == "open"
    time.now += 30.0  # the break is over: the next call is the probe ...
    draws.value = 0.0  # ... which the throttle refuses
    with pytest.raises(ThrottledError):
        run([], Operation([]), time, **options)
    time.now += 1.0
    draws.value = 1.0
    assert run([], Operation(["back"]), time, **options) == "back"
    assert breaker.state == "closed"


@each_driver
def test_a_breaker_refusing_after_a_rate_limiter_gives_back_the_probe_let_go_before_it(run):
    """A CUBIC rate limiter (off: the first try runs bare) comes before the parts=: the
    breaker part after it lets its probe go, a second one refuses the attempt - the probe
    was never sent, so the next call is the probe.  (The bare first try counted the parts
    before the refuser among its checks alone, leaving the limiter out: the probe was
    kept out, and the first breaker refused every call for a whole break.)"""
    from backoff_iter import BrokenCircuitError, CircuitBreaker, CubicRateLimiter
    from backoff_iter.parts import BreakerPart

    time = FakeTime()

    def opened(break_duration):
        breaker = CircuitBreaker(
            failure_ratio=0.5,
            minimum_throughput=1,
            break_duration=break_duration,
            clock=time.clock,
        )
        breaker.record(False)
        return breaker

    probing, shut = opened(1.0), opened(100.0)
    time.now += 2.0  # the first break is over: its next check is the probe
    parts = [BreakerPart(probing), BreakerPart(shut)]
    options = {"on": ConnectionError, "rate_limiter": CubicRateLimiter(), "parts": parts}
    with pytest.raises(BrokenCircuitError, match="another 98 s"):
        run([], Operation(["never"]), time, **options)
    probing.check()  # the probe goes (it was refused: "half open, its probe still out")
    assert probing.state == "half_open"


def test_parts_give_back_what_they_took_newest_first_and_never_for_an_attempt_that_ran():
    """A part's attempt_dropped hears what its allow_retry took, newest first, when a
    part after it refuses the retry; one whose before_attempt let an attempt go hears
    0.0 when a part after it refuses that attempt.  Attempts that ran give back nothing."""
    from backoff_iter.parts import Part

    log = []

    class Gives(Part):
        def __init__(self, name, takes=1.0, refuses_retry=False, refuses_attempt=0):
            self.name, self.takes = name, takes
            self.refuses_retry, self.refuses_attempt = refuses_retry, refuses_attempt

        def before_attempt(self, call):
            if call.number == self.refuses_attempt:
                raise PermissionError(self.name)
            return 0.0

        def allow_retry(self, outcome, kind):
            return 0.0 if self.refuses_retry else self.takes

        def attempt_dropped(self, taken):
            log.append((self.name, taken))

    parts = [Gives("a", 2.0), Gives("b", 3.0), Gives("c", refuses_retry=True)]
    with pytest.raises(OSError):
        retry([0.0], on=OSError, parts=parts, sleep=lambda s: None)(Operation([OSError()]))()
    assert log == [("b", 3.0), ("a", 2.0)]

    del log[:]
    parts = [Gives("a", 2.0), Gives("b", 3.0), Gives("c", refuses_attempt=2)]
    operation = Operation([OSError()])
    with pytest.raises(PermissionError):
        retry([0.0], on=OSError, parts=parts, sleep=lambda s: None)(operation)()
    assert log == [("b", 0.0), ("a", 0.0), ("c", 1.0), ("b", 3.0), ("a", 2.0)]
    assert operation.calls == 1

    del log[:]
    parts = [Gives("a", 2.0), Gives("b", 3.0)]
    retry([0.0, 0.0], on=OSError, parts=parts, sleep=lambda s: None)(Operation([OSError()]))()
    assert log == []


def test_in_async_loops_an_awaited_part_that_let_the_attempt_go_gives_it_back():
    """A part with only abefore_attempt (asked in async loops alone) lets the attempt go,
    the part after it refuses it: the first hears attempt_dropped, the refuser does not."""
    from backoff_iter.parts import Part

    log = []

    class Awaited(Part):
        async def abefore_attempt(self, call):
            return 0.0

        def attempt_dropped(self, taken):
            log.append(("awaited", taken))

    class Refuses(Part):
        def before_attempt(self, call):
            raise PermissionError("no")

        def attempt_dropped(self, taken):
            log.append(("refuses", taken))

    async def main():
        async for attempt in aretrying([0.0], parts=[Awaited(), Refuses()]):
            async with attempt:
                pass

    with pytest.raises(PermissionError):
        asyncio.run(main())
    assert log == [("awaited", 0.0)]


@each_driver
def test_a_sleep_cut_short_ends_the_call_told_to_the_hooks_and_costs_no_retry(run):
    """Ctrl-C (or a cancellation) in the sleep before a retry: the call ends with it, the
    hooks hear an "error" after the "retry" (the OpenTelemetry span begun there was left
    open), and the retry the quota paid for, which never ran, costs nothing."""
    from backoff_iter import RetryQuota

    class Interrupted(FakeTime):
        def sleep(self, seconds):
            raise KeyboardInterrupt

        async def asleep(self, seconds):
            raise KeyboardInterrupt

    time, seen, quota = Interrupted(), [], RetryQuota(capacity=100)
    operation = Operation([ConnectionError()] * 3)
    options = {"on": ConnectionError, "budget": quota, "observe": seen.append}
    with pytest.raises(KeyboardInterrupt):
        run([1.0] * 3, operation, time, **options)
    assert [(event.kind, event.number) for event in seen] == [("retry", 1), ("error", 2)]
    assert operation.calls == 1 and quota.available == 100.0


@each_driver
@pytest.mark.parametrize("where", ["before_sleep", "part"])
def test_an_interruption_after_the_retry_was_paid_gives_it_back(run, where):
    """Ctrl-C in a before_sleep hook, or in a part's wait before the retry (a rate
    limiter's): the call ends with it told to the hooks, and the quota's cost comes back
    (caught as Exception only, both left the retry paid and the hooks unaware)."""
    from backoff_iter import RetryQuota
    from backoff_iter.parts import Part

    class Waits(Part):
        def before_attempt(self, call):
            if call.number == 2:
                raise KeyboardInterrupt
            return 0.0

    def hook(attempt, outcome, delay):
        raise KeyboardInterrupt

    seen, quota = [], RetryQuota(capacity=100)
    options = {"on": ConnectionError, "budget": quota, "observe": seen.append}
    if where == "part":
        options["parts"] = [Waits()]
    else:
        options["before_sleep"] = hook
    operation = Operation([ConnectionError()] * 3)
    with pytest.raises(KeyboardInterrupt):
        run([1.0] * 3, operation, FakeTime(), **options)
    kinds = [event.kind for event in seen]
    assert kinds == (["retry", "error"] if where == "part" else ["error"])
    assert operation.calls == 1 and quota.available == 100.0


def test_an_async_call_cancelled_in_its_backoff_sleep_tells_the_hooks_it_ended():
    """The task of an async @retry is cancelled during its sleep (as asyncio.wait_for
    does): the hooks hear the cancellation as the call's "error" (they heard nothing,
    and a span stayed open)."""
    seen = []

    def forever(seconds):  # a sleep that ends only when cancelled
        return asyncio.Event().wait()

    @retry([5.0, 5.0], on=ConnectionError, observe=seen.append, sleep=forever)
    async def fetch():
        raise ConnectionError("down")

    async def main():
        task = asyncio.ensure_future(fetch())
        while not seen:  # until the retry's event: the task sleeps
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert [event.kind for event in seen] == ["retry", "error"]
    assert isinstance(seen[-1].outcome, asyncio.CancelledError)


@each_driver
def test_a_retry_after_hook_raising_after_a_jittered_retry_was_paid_gives_it_back(run):
    """per_failure(jitter=) asks the budget before the retry_after hook: the hook's error
    ends the call, and the cost the quota took for the retry comes back."""
    from backoff_iter.schedules import per_failure

    def broken(outcome):
        raise LookupError("no header")

    delays = per_failure(default=[1.0] * 3, jitter="full")
    _ends_with_the_quota_whole(run, LookupError, delays, retry_after=broken)


def _ends_with_the_quota_whole(run, error, delays, **options):
    """Run a call that fails three times with a quota of 100 under *run*: it ends with
    *error*, and the quota has all 100 back."""
    from backoff_iter import RetryQuota

    quota = RetryQuota(capacity=100)
    with pytest.raises(error):
        run(
            delays,
            Operation([ConnectionError()] * 3),
            FakeTime(),
            on=ConnectionError,
            budget=quota,
            **options,
        )
    assert quota.available == 100.0


@each_driver
def test_a_part_raising_in_allow_retry_after_the_budget_paid_gives_the_retry_back(run):
    """The quota pays for the retry, then a part asked after it raises: the call ends with
    that error, and the quota's cost comes back (it was kept: 86 of 100 left)."""
    from backoff_iter.parts import Part

    class Broken(Part):
        def allow_retry(self, outcome, kind):
            raise LookupError("the part's store is gone")

    _ends_with_the_quota_whole(run, LookupError, [1.0] * 3, parts=[Broken()])


@each_driver
def test_a_budget_beside_a_part_that_takes_gets_back_only_what_it_took(run):
    """A quota at 50 of 100 pays 5 for the retry, a part of the user's 2.0: the success
    after it gives the quota back its own 5, ending at 50 (it was given 7: 52)."""
    from backoff_iter import RetryQuota
    from backoff_iter.parts import Part

    class Takes(Part):
        def allow_retry(self, outcome, kind):
            return 2.0

    quota = RetryQuota(capacity=100, retry_cost=5)
    for _ in range(10):
        quota.try_retry(ConnectionError())
    assert quota.available == 50.0
    operation = Operation([ConnectionError()])
    assert run([1.0], operation, FakeTime(), on=ConnectionError, budget=quota, parts=[Takes()])
    assert quota.available == 50.0


class _BadDraws:
    """An rng whose draws break as *how* says: raising, or drawing out of [0, 1)."""

    def __init__(self, how):
        self.how = how

    def random(self):
        if self.how == "raises":
            raise LookupError("no entropy")
        return -1.0 if self.how == "negative" else 0.5


@each_driver
@pytest.mark.parametrize("how", ["raises", "negative", "warned"])
def test_a_jitter_draw_that_ends_the_call_after_the_budget_paid_gives_the_retry_back(run, how):
    """per_failure(jitter=) draws after the quota paid: a draw that raises, one that is no
    delay (negative) or one warned of as endless under warnings-as-errors (5,000 s) ends
    the call with its error, and the quota's cost comes back (86 of 100 were left)."""
    import warnings

    delays = per_failure(default=[10_000.0] * 3, jitter="full", rng=_BadDraws(how))
    error = {"raises": LookupError, "negative": ValueError, "warned": RuntimeWarning}[how]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        _ends_with_the_quota_whole(run, error, delays)


# -- what mutmut's pass over the core found no test pinning (review-mutcore) --------


class Throttled(Exception):
    """A failure the tests' throttled= predicate names."""


class Taker(PartBase):
    """A part whose retries each take 2.0, recording what it is asked and told."""

    def __init__(self):
        self.asked, self.told = [], []

    def allow_retry(self, outcome, kind):
        self.asked.append((outcome, kind))
        return 2.0

    def after_attempt(self, outcome, kind, number, spent):
        self.told.append((outcome, kind, number, spent))


@each_driver
def test_a_part_that_takes_hears_each_outcome_with_its_kind_number_and_spent(run):
    """A throttle, a failure, a success: allow_retry is asked with each failure and its
    kind; after_attempt hears each outcome, its kind, its number and what the retry took."""
    throttle, failure = Throttled(), OSError()
    part = Taker()
    operation = Operation([throttle, failure, "done"])
    options = {"on": (Throttled, OSError), "throttled": lambda o: isinstance(o, Throttled)}
    options["on_result"] = lambda result: False  # (the loops hand their result over)
    assert run([0.5, 0.5], operation, FakeTime(), parts=[part], **options) == "done"
    assert part.asked == [(throttle, THROTTLE), (failure, FAILURE)]
    assert part.told == [
        (throttle, THROTTLE, 1, 0.0),
        (failure, FAILURE, 2, 2.0),
        ("done", SUCCESS, 3, 2.0),
    ]


@each_driver
def test_a_throttled_predicate_that_breaks_still_tells_the_parts_the_failure(run):
    """throttled= raising ends the call with its error; the parts hear the failure
    (the outcome and its attempt's number), as the attempt did fail."""
    failure = OSError("down")
    part = Taker()

    def throttled(outcome):
        raise LookupError("broken predicate")

    operation = Operation([OSError(), failure])
    predicate = {"throttled": lambda o: o is failure and throttled(o)}
    with pytest.raises(LookupError):
        run([0.5, 0.5], operation, FakeTime(), on=OSError, parts=[part], **predicate)
    assert part.told[-1] == (failure, FAILURE, 2, 2.0)


@each_driver
def test_a_before_sleep_hook_past_the_deadline_hands_give_up_the_attempt_and_failure(run):
    """before_sleep takes the call past its deadline: no sleep, the failure stands, and
    give_up is handed the attempt that failed and its failure."""
    time, error, seen = FakeTime(), OSError("down"), []

    def slow(attempt, outcome, delay):
        time.now += 20.0

    def give_up(attempt, outcome):
        seen.append((attempt.number, outcome))

    with pytest.raises(OSError) as raised:
        run([1.0, 1.0], Operation([error]), time, on=OSError, deadline=10.0,
            before_sleep=slow, give_up=give_up)  # fmt: skip
    assert raised.value is error and seen == [(1, error)] and time.slept == []


@each_driver
def test_a_hint_raised_by_at_most_beyond_still_gives_up_past_the_deadline(run):
    """retry_after_beyond raises the 0.5 s delay to 5.5 s of a 30 s hint: with 3 s left
    that honoured wait ends past the deadline, so the call gives up instead of
    sleeping the 3 s left."""
    time, error = FakeTime(), OSError()
    with pytest.raises(OSError) as raised:
        run([0.5, 0.5], Operation([error]), time, on=OSError, deadline=3.0,
            retry_after=lambda outcome: 30.0, retry_after_beyond=5.0)  # fmt: skip
    assert raised.value is error and time.slept == []
    time = FakeTime()
    assert run([0.5], Operation([OSError()]), time, on=OSError, deadline=9.0,
               retry_after=lambda outcome: 30.0, retry_after_beyond=5.0) == "ok"  # fmt: skip
    assert time.slept == [5.5]


@each_driver
def test_a_long_delay_under_a_deadline_is_no_endless_schedule(run):
    """A delay past ENDLESS_DELAY (an hour) with a deadline to bound it: no warning."""
    time = FakeTime()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert run([5000.0], Operation([OSError()]), time, on=OSError, deadline=1e6) == "ok"
    assert time.slept == [5000.0]


@pytest.mark.parametrize("form", ["loop", "decorator"])
def test_the_endless_schedule_warning_names_the_users_line(form):
    """The warning after 101 retries with no deadline points at this file, the
    user's code, not at a frame of the library."""
    time = FakeTime()
    operation = Operation([OSError()] * 101)

    def loop():
        for attempt in retrying([0.0] * 200, on=OSError, sleep=time.sleep):
            with attempt:
                operation()

    call = loop if form == "loop" else retry([0.0] * 200, on=OSError, sleep=time.sleep)(operation)
    with pytest.warns(RuntimeWarning, match="101 retries") as caught:
        call()
    assert [w.filename for w in caught] == [__file__]


def test_an_async_attempt_entered_in_its_own_block_ends_the_loop_with_the_error():
    """`async with attempt:` nested in its own block is the caller's bug: the error
    propagates out of the loop, never swallowed by the outer block's exit."""
    ran = []

    async def main():
        async for attempt in aretrying([0.0, 0.0], on=RuntimeError, sleep=FakeTime().asleep):
            async with attempt:
                ran.append(attempt.number)
                async with attempt:
                    pass

    with pytest.raises(RuntimeError, match="not the current attempt"):
        asyncio.run(main())
    assert ran == [1]


class Interrupt(BaseException):
    """An interruption (no Exception), as a part's wait may be cut by one."""


def test_a_part_interrupted_before_a_retry_keeps_no_failure_as_its_cause():
    """A part's before_attempt interrupted (a BaseException) before attempt 2: the
    interruption propagates without the retried failure as its __cause__."""

    class Cut(PartBase):
        def before_attempt(self, call):
            if call.number == 2:
                raise Interrupt
            return 0.0

    with pytest.raises(Interrupt) as raised:
        for attempt in retrying([0.0], on=OSError, parts=[Cut()], sleep=FakeTime().sleep):
            with attempt:
                raise OSError("first")
    assert raised.value.__cause__ is None


def _late(time):  # before_sleep runs past the deadline: the failure stands
    def hook(attempt, outcome, delay):
        time.now += 20.0

    return hook


def _broken(time):  # before_sleep raises: its error stands
    def hook(attempt, outcome, delay):
        raise LookupError("the hook's bug")

    return hook


@pytest.mark.parametrize(
    ("make_hook", "deadline", "stands"),
    [(_late, 10.0, OSError), (_broken, None, LookupError)],
    ids=["give-up-after-a-late-hook", "error-of-a-broken-hook"],
)
def test_a_loop_whose_body_catches_what_ends_the_call_ends(make_hook, deadline, stands):
    """before_sleep, after attempt 1 failed, runs past the deadline (the failure
    stands) or raises (its error stands), and the body catches what stands: the loop
    ends there (no RuntimeError of an attempt that never ran), having slept nothing."""
    time, caught = FakeTime(), []
    for attempt in retrying([1.0, 1.0], on=OSError, deadline=deadline,
                            before_sleep=make_hook(time), sleep=time.sleep,
                            clock=time.clock):  # fmt: skip
        try:
            with attempt:
                raise OSError("down")
        except stands as error:
            caught.append(error)
    assert len(caught) == 1 and time.slept == []


@each_driver
def test_a_give_up_after_a_late_hook_is_told_of_the_attempt_that_failed(run):
    """before_sleep runs past the deadline after attempt 2 failed: the hooks hear the
    give-up ("deadline") of attempt 2, after the retry of attempt 1."""
    time, events = FakeTime(), []

    def slow(attempt, outcome, delay):
        if attempt.number == 2:
            time.now += 20.0

    with pytest.raises(OSError):
        run([1.0, 1.0], Operation([OSError(), OSError()]), time, on=OSError, deadline=10.0,
            before_sleep=slow, observe=events.append)  # fmt: skip
    assert [(e.kind, e.number, e.reason) for e in events] == [
        ("retry", 1, None),
        ("give_up", 2, "deadline"),
    ]


def test_a_bare_first_try_under_a_users_clock_tells_its_name_its_call_id_and_elapsed():
    """@retry with a clock of the user's: a success at the first try tells the policy's
    name, a call id of its own and the time the try took, as a call that retried does;
    an on_result that raises on the first result tells its error after that time too."""
    time, events = FakeTime(), []
    operation = Operation([OSError(), "a", "b"], time, duration=2.0)
    decorated = retry([0.5], on=OSError, observe=events.append, sleep=time.sleep, clock=time.clock)(
        operation
    )
    assert decorated() == "a" and decorated() == "b"
    retried, first = events[-2], events[-1]
    assert (first.kind, first.name, first.elapsed) == ("success", retried.name, 2.0)
    assert first.name is not None and first.call_id not in (None, retried.call_id)

    def on_result(result):
        raise LookupError("the predicate's bug")

    events.clear()
    checked = retry([0.5], on_result=on_result, observe=events.append, clock=time.clock)
    with pytest.raises(LookupError):
        checked(Operation(["c"], time, duration=3.0))()
    assert [(e.kind, e.elapsed) for e in events] == [("error", 3.0)]


@pytest.mark.parametrize("run", [run_loop, run_async_loop])
@pytest.mark.parametrize("failures", [0, 1])
def test_a_loop_body_that_returns_without_a_result_tells_the_parts_none(run, failures):
    """A loop body that returns without attempt.set_result hands over no result: the parts
    hear None, as the hooks do - whether the call took a retry (every part hears what it
    took) or succeeded at once - never the loop's private marker of "no result"."""
    heard = []
    events = []
    error = ConnectionResetError("reset")
    run(
        [0.0],
        Operation([error] * failures + ["ignored"]),
        FakeTime(),
        on=OSError,
        parts=[_HearsOutcomes(heard)],
        observe=events.append,
    )
    assert heard == [(FAILURE, error)] * failures + [(SUCCESS, None)]
    assert [(e.kind, e.outcome) for e in events][-1] == ("success", None)


# -- a sync loop sleeping inside a running event loop ------------------------------------------


def _retried_once_in_a_sync_loop(form: str) -> Any:
    """A sync loop (``retrying``, ``@retry`` or ``attempts``) that fails once
    and sleeps 0.5 s with the default sleep; what the form returns."""
    if form == "loop":
        for attempt in retrying([0.5], on=OSError):
            with attempt:
                if attempt.number == 1:
                    raise OSError("reset")
                return attempt.number
    if form == "attempts":
        for number in attempts([0.5]):
            if number == 2:
                return number
        raise AssertionError
    operation = Operation([OSError()])
    retry([0.5], on=OSError)(operation)()
    return operation.calls


@pytest.mark.parametrize("form", ["loop", "decorator", "attempts"])
def test_a_sync_loop_sleeping_in_a_running_event_loop_warns_that_it_blocks_it(form, monkeypatch):
    """``retrying`` where ``aretrying`` was meant - in an ``async def`` - sleeps
    with time.sleep and stops every task of the event loop meanwhile: it
    warns, naming the user's line, and sleeps as asked (as it did)."""
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)  # (looked up at each sleep)

    async def main() -> Any:
        return _retried_once_in_a_sync_loop(form)

    with pytest.warns(RuntimeWarning, match="blocks the asyncio event loop") as caught:
        asyncio.run(main())
    assert slept == [0.5]
    assert [w.filename for w in caught] == [__file__]
    assert str(caught[0].message).startswith("a sync retry loop sleeps")
    assert "aretrying" in str(caught[0].message)


@pytest.mark.parametrize("form", ["loop", "decorator", "attempts"])
def test_a_sync_loop_sleeping_outside_an_event_loop_or_as_told_warns_of_nothing(form, monkeypatch):
    """No warning where nothing is blocked: no event loop running, a worker
    thread of one (run_in_executor), a sleep= of the user's, a delay of 0."""
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)

    async def in_a_thread() -> Any:
        return await asyncio.get_running_loop().run_in_executor(
            None, _retried_once_in_a_sync_loop, form
        )

    async def told_how_to_sleep() -> list[float]:
        mine: list[float] = []
        for attempt in retrying([0.5], on=OSError, sleep=mine.append):
            with attempt:
                if attempt.number == 1:
                    raise OSError("reset")
        for number in attempts([0.0, 0.0]):
            if number == 3:
                break
        return mine

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _retried_once_in_a_sync_loop(form) == 2
        assert asyncio.run(in_a_thread()) == 2
        assert asyncio.run(told_how_to_sleep()) == [0.5]
    assert slept == [0.5, 0.5, 0.0, 0.0]


def test_the_blocking_warning_is_given_once_per_line_whatever_the_delays(monkeypatch):
    """A jittered schedule's delays differ from call to call: the warning
    names none, so Python's filter shows it once for the user's line."""
    monkeypatch.setattr(time, "sleep", lambda seconds: None)

    async def handler() -> None:
        for attempt in retrying(lambda: islice(full_jitter(0.1, 10), 2), on=OSError):
            with attempt:
                if attempt.number < 3:
                    raise OSError("reset")

    async def serve() -> None:
        for _ in range(5):
            await handler()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")  # Python's own action for a RuntimeWarning
        asyncio.run(serve())
    assert len(caught) == 1


def test_a_sync_loop_in_a_notebook_cell_warns_of_nothing(monkeypatch):
    """IPython's kernel runs each cell of a notebook in a task of its own
    asyncio loop: sync code in a cell blocks it as every cell does, and the
    sync loops say nothing there (the task's coroutine is the kernel's)."""
    import types

    kernel = types.ModuleType("ipykernel.kernelbase")  # (the kernel's code, run as it runs it)
    exec("async def shell_main(cell):\n    return cell()\n", kernel.__dict__)
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for form in ("loop", "decorator", "attempts"):
            cell = functools.partial(_retried_once_in_a_sync_loop, form)
            assert asyncio.run(kernel.shell_main(cell)) == 2
    assert slept == [0.5, 0.5, 0.5]


def test_a_rate_limiters_acquire_in_an_event_loop_warns_naming_aacquire(monkeypatch):
    """CubicRateLimiter.acquire() waiting in an ``async def`` blocks the event
    loop: the warning names its async twin, on the user's line."""
    from backoff_iter import CubicRateLimiter

    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)
    limiter = CubicRateLimiter()
    limiter.record(True)  # throttled: the limiter is on, at its first rate

    async def main() -> None:
        while not slept:
            limiter.acquire()

    with pytest.warns(RuntimeWarning, match=r"rate limiter's acquire\(\).*aacquire\(\)") as caught:
        asyncio.run(main())
    assert [w.filename for w in caught] == [__file__]


def test_a_sync_loop_run_by_an_http_clients_own_code_warns_of_nothing(monkeypatch):
    """The first frame outside the library - the line the warning would
    name - decides: an HTTP client's (botocore's, httpx's, whose sync
    clients run our adapters' retries) blocks as all its I/O does, and is
    not warned of, though the user's code called it in an ``async def``."""
    import types

    client = types.ModuleType("httpx._client")  # (a client's code, running our retries)
    client.retrying = retrying  # type: ignore[attr-defined]
    exec(
        "def send():\n"
        "    for attempt in retrying([0.5], on=OSError):\n"
        "        with attempt:\n"
        "            if attempt.number == 1:\n"
        "                raise OSError('reset')\n"
        "            return attempt.number\n",
        client.__dict__,
    )
    monkeypatch.setattr(time, "sleep", lambda seconds: None)

    async def main() -> Any:
        return client.send()

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert asyncio.run(main()) == 2
