"""retrying, aretrying and @retry: the same scenarios, sync and async, never really sleeping."""

from __future__ import annotations

import asyncio
import math
import traceback
from itertools import islice

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backoff_iter import aretrying, constant, exponential, retry, retrying


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
    for attempt in retrying(delays, sleep=time.sleep, clock=time.clock, **options):
        with attempt:
            return operation()


def run_async_loop(delays, operation, time, **options):
    async def main():
        async for attempt in aretrying(
            delays, sleep=time.asleep, clock=time.clock, **options
        ):
            async with attempt:
                return operation()

    return asyncio.run(main())


def run_decorator(delays, operation, time, **options):
    return retry(lambda: delays, sleep=time.sleep, clock=time.clock, **options)(
        operation
    )()


def run_async_decorator(delays, operation, time, **options):
    async def call():
        return operation()

    decorated = retry(lambda: delays, sleep=time.asleep, clock=time.clock, **options)(
        call
    )
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
    operation = Operation([RuntimeError(i) for i in range(20)])
    with pytest.raises(RuntimeError) as raised:
        run(constant(3), operation, time, deadline=10)
    assert time.slept == [3, 3, 3, 1]
    assert operation.calls == 5 and raised.value.args == (4,)
    assert time.now == 110.0


@each_driver
def test_deadline_counts_the_time_the_attempts_take(run):
    """Attempts that take 4 s each leave room for one 1 s sleep in a 10 s deadline."""
    time = FakeTime()
    operation = Operation([RuntimeError(i) for i in range(20)], time, duration=4.0)
    with pytest.raises(RuntimeError):
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
        for attempt in retrying(
            constant(1), sleep=time.sleep, clock=time.clock, deadline=10
        ):
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
    for attempt in retrying(
        [0.5, 1.5], sleep=time.sleep, clock=time.clock, on=ValueError
    ):
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
            async for attempt in aretrying(
                constant(3600), on=OSError, sleep=sleep_until_cancelled
            ):
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
    fetch = retry(
        lambda: islice(exponential(1), 2), sleep=time.sleep, clock=time.clock
    )(operation)
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
    """A negative or NaN delay raises ValueError naming it; sleep never sees it."""
    time, operation = FakeTime(), Operation([OSError(), OSError()])
    with pytest.raises(ValueError, match="delays") as raised:
        run([0.5, bad], operation, time)
    assert repr(bad) in str(raised.value)
    assert time.slept == [0.5]


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: retrying(5), TypeError, ["delays", "5"]),
        (lambda: retrying([1], on=int), TypeError, ["on", "int"]),
        (lambda: retrying([1], on="OSError"), TypeError, ["on", "'OSError'"]),
        (lambda: retrying([1], on=(OSError, 3)), TypeError, ["on", "3"]),
        (lambda: retrying([1], deadline=-1), ValueError, ["deadline", "-1"]),
        (lambda: retrying([1], sleep=3), TypeError, ["sleep", "3"]),
        (lambda: retrying([1], before_sleep=1), TypeError, ["before_sleep", "1"]),
        (lambda: aretrying(None), TypeError, ["delays", "None"]),
        (lambda: aretrying([1], deadline=math.nan), ValueError, ["deadline", "nan"]),
        (lambda: retry(iter([1, 2])), TypeError, ["delays", "iterator"]),
        (lambda: retry(exponential(1)), TypeError, ["delays", "lambda"]),
        (lambda: retry([1], on=42), TypeError, ["on", "42"]),
        (lambda: retry([1], deadline=-2), ValueError, ["deadline", "-2"]),
        (lambda: retry([1])(3), TypeError, ["func", "3"]),
    ],
)
def test_bad_arguments_raise_at_the_call(call, error, words):
    """Driver and decorator arguments are checked before anything runs."""
    with pytest.raises(error) as raised:
        call()
    for word in words:
        assert word in str(raised.value)


def test_a_factory_returning_a_non_iterable_is_reported_on_first_failure():
    """The delays factory runs only after a failure; a bad result names 'delays'."""
    fetch = retry(lambda: 3)(Operation([OSError()]))
    with pytest.raises(TypeError, match="delays"):
        fetch()
