"""Under trio, and under anyio on either backend, the async drivers and hedging find
the running library themselves: they sleep, time out and cancel with its primitives,
and need no ``sleep=``.  trio runs on its MockClock, which jumps over every sleep:
nothing really sleeps, and trio's own clock tells how long each wait was."""

from __future__ import annotations

import faulthandler
import itertools
import sys

import anyio
import pytest
import trio
import trio.testing
from test_drivers import Operation

from backoff_iter import CubicRateLimiter, aretrying, hedge, hedged, retry


def run_trio(main):
    """trio.run(main) on a clock that skips every sleep at once; (result, seconds passed)."""
    clock = trio.testing.MockClock(autojump_threshold=0)

    async def timed():
        start = trio.current_time()
        result = await main()
        return result, trio.current_time() - start

    return trio.run(timed, clock=clock)


def test_aretrying_under_trio_sleeps_with_trio_and_needs_no_sleep_argument():
    """aretrying([0.25, 0.5]) under trio: two failures, trio.sleep of each delay (trio's clock moves 0.75 s)."""
    operation = Operation([OSError(), OSError()])

    async def main():
        async for attempt in aretrying([0.25, 0.5]):
            async with attempt:
                return operation()

    assert run_trio(main) == ("ok", 0.75)


def test_an_async_retry_under_trio_sleeps_with_trio():
    """@retry on an async function under trio: the default schedule's sleeps pass on trio's clock."""
    operation = Operation([ConnectionError()])

    @retry([0.5, 1.0])
    async def fetch():
        return operation()

    assert run_trio(fetch) == ("ok", 0.5)


def test_an_attempt_timeout_under_trio_cancels_the_attempt_with_a_cancel_scope():
    """attempt_timeout=1 under trio: a hanging first attempt is cut at 1 s, the retry answers."""
    calls = []

    @retry([0.5], attempt_timeout=1.0)
    async def fetch():
        calls.append(trio.current_time())
        if len(calls) == 1:
            await trio.sleep(60)
        return "ok"

    assert run_trio(fetch) == ("ok", 1.5)


def test_a_failure_left_beside_the_cancellations_a_timeout_took_is_decided_on_under_trio():
    """An attempt's nursery cut at its timeout, one child failing as it is cancelled: the cancel
    scope takes the cancellations and leaves that failure in a group, which the loop decides on
    (retried, the hooks told) as under asyncio - it escaped the `async with` undecided, the
    hooks told nothing."""
    events = []

    async def child():
        try:
            await trio.sleep(60)
        finally:
            raise ConnectionError("reset as it was cancelled")

    async def main():
        async for attempt in aretrying([0.5], attempt_timeout=1.0, observe=events.append):
            async with attempt:
                if attempt.number == 1:
                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(child)
                        await trio.sleep(60)
                return attempt.number

    assert run_trio(main) == (2, 1.5)
    retried, succeeded = events
    assert retried.kind == "retry"  # its outcome the group, as asyncio's TaskGroup raises it
    assert [str(error) for error in retried.outcome.exceptions] == ["reset as it was cancelled"]
    assert (succeeded.kind, succeeded.number) == ("success", 2)


def test_the_rate_limiter_waits_with_trio_too():
    """A CUBIC limiter turned on waits with trio.sleep before the next attempt, never blocking."""
    now = [0.0]
    limiter = CubicRateLimiter(clock=lambda: now[0])
    limiter.record(throttled=True)  # on, with its bucket empty: the next request waits

    async def main():
        async for attempt in aretrying([0.0], rate_limiter=limiter):
            async with attempt:
                return "sent"

    result, seconds = run_trio(main)
    assert result == "sent" and seconds > 0.0


def test_hedged_under_trio_takes_the_fast_hedge_and_cancels_the_slow_attempt():
    """hedged() under trio: attempt 1 hangs, the hedge at 0.1 s answers; attempt 1 is cancelled and its finally runs."""
    ended = []

    replicas = iter([60, 0.05])

    async def read():
        delay = next(replicas)
        try:
            await trio.sleep(delay)
            return f"answer after {delay}"
        finally:
            ended.append(delay)

    result, seconds = run_trio(lambda: hedged(read, [0.1], name="read"))
    assert result == "answer after 0.05" and seconds == pytest.approx(0.15)
    assert sorted(ended) == [0.05, 60]


def test_hedged_under_trio_cancelled_by_the_callers_scope_tells_the_hooks_how_it_ended():
    """The caller's cancel scope ends a hedged call with two attempts hanging: the hooks hear
    attempt 1 cancelled and the call end as an error of attempt 2 (they heard the hedge, then
    nothing) - each attempt's end once."""
    events = []

    async def hang():
        await trio.sleep(60)

    async def main():
        with trio.move_on_after(1.0) as scope:
            await hedged(hang, [0.1], observe=events.append)
        return scope.cancelled_caught

    assert run_trio(main) == (True, 1.0)
    heard = [(event.kind, event.number, type(event.outcome)) for event in events]
    assert heard == [
        ("hedge", 2, type(None)),
        ("cancelled", 1, type(None)),
        ("error", 2, trio.Cancelled),
    ]


def test_hedged_under_trio_cancelled_while_a_hint_holds_the_next_hedge_tells_one_that_never_ran():
    """Attempt 1 failed, a server's hint holds hedge 2 back, nothing runs: the caller's scope
    ends the call then, told as an error of attempt 2, "interrupted" (no attempt to count)."""
    events = []

    async def busy():
        raise OSError("busy")

    async def main():
        with trio.move_on_after(1.0) as scope:
            await hedged(busy, [0], retry_after=lambda outcome: 60, observe=events.append)
        return scope.cancelled_caught

    assert run_trio(main) == (True, 1.0)
    heard = [(event.kind, event.number, event.reason) for event in events]
    assert heard == [("retry", 1, None), ("error", 2, "interrupted")]


@pytest.mark.parametrize("hint", [0.5, 1.5, 2.5, 3.5])
def test_hedged_under_trio_never_sleeps_a_negative_time_when_the_clock_moves_on(monkeypatch, hint):
    """A hint holds the next hedge back, nothing runs: hedged() sleeps until it is due.  The
    clock moving on between the check that it is not due and the sleep never makes trio.sleep
    a negative time (trio raised ValueError).  The clock here moves 1 s at each reading, so
    for one of these hints the due time falls between those two readings."""
    from backoff_iter import hedging

    readings = iter(range(1000))
    monkeypatch.setattr(
        hedging._TrioAttempts, "now", lambda self: float(trio.current_time()) + next(readings)
    )
    replies = iter([ConnectionError("slow down"), "second"])

    async def read():
        reply = next(replies)
        if isinstance(reply, Exception):
            raise reply
        return reply

    result, _ = run_trio(lambda: hedged(read, [3600], retry_after=lambda outcome: hint))
    assert result == "second"


def test_hedge_under_trio_sends_the_next_hedge_at_once_after_a_matched_failure():
    """@hedge under trio: a ConnectionError sends the next hedge at once, not after its 30 s delay."""
    attempts = []

    @hedge([30.0, 30.0], on=ConnectionError)
    async def lookup(key):
        attempts.append(trio.current_time())
        if len(attempts) < 3:
            raise ConnectionError("replica down")
        return key.upper()

    assert run_trio(lambda: lookup("a")) == ("A", 0.0)
    assert len(attempts) == 3


def test_hedged_under_trio_raises_the_last_failure_when_every_attempt_fails():
    """Every attempt fails and no hedge is left: the last failure propagates as itself."""

    errors = iter(["1", "2"])

    async def down():
        raise TimeoutError(next(errors))

    with pytest.raises(TimeoutError, match="2"):
        run_trio(lambda: hedged(down, [0.1]))


def test_hedgings_own_errors_under_trio_come_out_as_themselves_not_in_a_group():
    """A bad hint, a bad delay, a failing hook: raised by hedging itself while attempts run
    in trio's nursery, they come out as themselves, as under asyncio (trio wrapped them
    in an ExceptionGroup, which `except ArgumentValueError` does not catch)."""
    from backoff_iter._checks import ArgumentValueError

    async def down():
        raise ConnectionError("down")

    async def slow():
        await trio.sleep(100)

    def delays():
        yield 1.0
        yield -5

    def hook(event):
        raise RuntimeError("the hook's")

    for make, error, match in (
        (
            lambda: hedged(down, [1.0, 1.0], retry_after=lambda outcome: -1),
            ArgumentValueError,
            "-1",
        ),
        (lambda: hedged(slow, delays), ArgumentValueError, "-5"),
        (lambda: hedged(slow, [1.0], observe=hook), RuntimeError, "the hook's"),
    ):
        with pytest.raises(error, match=match):
            run_trio(make)


def test_an_attempts_base_exception_under_trio_comes_out_as_itself_the_others_cancelled():
    """A hedge raising a BaseException that is no Exception (a SystemExit, say) ends the
    call with it, not in a BaseExceptionGroup of trio's nursery, as under asyncio; the
    slow first attempt is cancelled."""

    class Stop(BaseException):
        pass

    calls, closed = iter(["slow", "stop"]), []

    async def call():
        if next(calls) == "slow":
            try:
                await trio.sleep(100)
            finally:
                closed.append("slow")
        raise Stop("stopped")

    with pytest.raises(Stop, match="stopped"):
        run_trio(lambda: hedged(call, [1.0]))
    assert closed == ["slow"]


class Halt(BaseException):
    """An interruption of the user's own, no Exception."""


def test_an_interruption_of_hedging_under_trio_comes_out_as_itself_not_in_a_group():
    """A BaseException that is no Exception, raised by hedging's own code (here an on_result
    predicate) while attempts run in trio's nursery, comes out as itself, as under asyncio
    and as hedging's Exceptions do (the nursery wrapped it in a BaseExceptionGroup, which
    `except KeyboardInterrupt` does not catch); the attempt still running is cancelled."""
    closed = []

    async def call():
        if not closed:
            closed.append("started")
            try:
                await trio.sleep(100)
            finally:
                closed.append("slow")
        return "answer"

    def judge(result):
        raise Halt("the predicate's")

    with pytest.raises(Halt, match="the predicate's"):
        run_trio(lambda: hedged(call, [1.0], on_result=judge))
    assert closed == ["started", "slow"]


def test_a_hedged_call_under_trio_cancelled_by_its_caller_raises_a_bare_cancelled():
    """The caller's scope cancels a hedged call with two attempts running: the call raises
    trio's Cancelled itself, which `except trio.Cancelled` (anyio's
    get_cancelled_exc_class()) around it catches - it came out in a BaseExceptionGroup
    of the nursery, with each attempt's Cancelled beside it.  Every attempt has ended."""
    ended, seen = [], []

    async def hang():
        try:
            await trio.sleep(60)
        finally:
            ended.append(trio.current_time())

    async def main():
        with trio.move_on_after(1.0) as scope:
            try:
                await hedged(hang, [0.1])
            except trio.Cancelled as cancelled:
                seen.append(cancelled)
                raise
        return scope.cancelled_caught

    assert run_trio(main) == (True, 1.0)
    assert len(seen) == 1 and ended == [1.0, 1.0]


def test_a_hook_that_breaks_as_it_hears_a_cancelled_hedged_call_under_trio_raises_its_error():
    """The hooks hear the caller's cancellation of a hedged call and raise: the hook's error
    ends the call as itself, its context the cancellation, as aretrying's does under trio
    (it came out in an ExceptionGroup of the nursery)."""

    async def hang():
        await trio.sleep(60)

    def hook(event):
        if event.kind == "error":
            raise LookupError("the hook's")

    async def main():
        with trio.move_on_after(1.0):
            await hedged(hang, [0.1], observe=hook)

    with pytest.raises(LookupError, match="the hook's") as raised:
        run_trio(main)
    assert isinstance(raised.value.__context__, trio.Cancelled)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_under_anyio_on_either_backend_the_drivers_and_hedging_need_no_sleep(backend):
    """anyio.run on asyncio and on trio: aretrying, @retry and hedged work with their defaults."""
    operation, fetched = Operation([OSError()]), Operation([OSError()])

    @retry([0.0])
    async def fetch():
        return fetched()

    replicas = iter([3600, 0])

    async def read():
        await anyio.sleep(next(replicas))
        return "fast"

    async def main():
        async for attempt in aretrying([0.0]):
            async with attempt:
                first = operation()
        return first, await fetch(), await hedged(read, [0.0])

    options = {"clock": trio.testing.MockClock(autojump_threshold=0)} if backend == "trio" else {}
    assert anyio.run(main, backend=backend, backend_options=options) == ("ok", "ok", "fast")


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_under_anyio_a_hedged_call_cancelled_by_its_callers_scope_ends_with_the_cancellation(
    backend,
):
    """anyio's cancel scope around a hedged call is cancelled while both attempts run: the
    call ends, the attempts stopped, with the backend's cancellation, which
    `except get_cancelled_exc_class()` catches (on asyncio it hung: the scope cancels the
    task at every pass of the loop, and each cut the wait for the attempts to stop; on
    trio it came out in a group)."""
    stopped, caught = [], []

    async def main():
        with anyio.CancelScope() as scope:

            async def call():
                if len(stopped) == 1:  # attempt 2, attempt 1 running: the caller's scope ends
                    scope.cancel()
                stopped.append("started")
                try:
                    await anyio.sleep(3600)
                finally:
                    stopped.append("stopped")

            try:
                await hedged(call, [0])
            except anyio.get_cancelled_exc_class():
                caught.append(True)
                raise
        return scope.cancelled_caught

    options = {"clock": trio.testing.MockClock(autojump_threshold=0)} if backend == "trio" else {}
    # The hang, should it come back, ends the run after 30 s (exit 1; not for ever): a
    # cancellation cannot end it, and asyncio's own clean-up of the loop would wait for it.
    faulthandler.dump_traceback_later(30.0, exit=True)
    try:
        assert anyio.run(main, backend=backend, backend_options=options) is True
    finally:
        faulthandler.cancel_dump_traceback_later()
    assert caught == [True] and stopped.count("stopped") == 2


def test_hedged_under_trio_lets_a_quick_answer_win_over_an_endless_schedule_of_zero_delays():
    """repeat(0.0) under trio: each hedge waits for a pass of the scheduler, so attempt 1,
    which answers after one checkpoint, wins; no hedges started for ever, none of them run."""
    started = []

    def call():
        started.append(len(started) + 1)
        if len(started) > 50:
            raise RuntimeError("runaway: hedges started with no checkpoint")
        return quick(len(started))

    async def quick(number):
        await trio.sleep(0)
        return number

    assert run_trio(lambda: hedged(call, itertools.repeat(0.0))) == (1, 0.0)
    assert len(started) <= 3


def test_hedged_under_trio_an_endless_schedule_of_zero_delays_is_ended_by_the_callers_scope():
    """repeat(0.0) with attempts that never answer: the other tasks get their turns, and the
    caller's cancel scope, cancelled by one of them, ends the call and its attempts."""
    started, cancelled = [], []

    def call():
        started.append(len(started) + 1)
        if len(started) > 50:
            raise RuntimeError("runaway: hedges started with no checkpoint")
        return hang()

    async def hang():
        try:
            await trio.sleep_forever()
        finally:
            cancelled.append(1)

    async def main():
        scope = trio.CancelScope()

        async def caller():
            with scope:
                await hedged(call, itertools.repeat(0.0))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(caller)
            for _ in range(5):
                await trio.sleep(0)
            scope.cancel()
        return scope.cancelled_caught

    assert run_trio(main) == (True, 0.0)
    assert 2 <= len(started) < 50 and len(cancelled) == len(started)


def test_trio_in_guest_mode_on_asyncio_is_found_as_trio():
    """trio run as a guest of an asyncio loop (trio.lowlevel.start_guest_run): asyncio's loop
    is running in the thread, but the code runs in trio tasks, as sniffio tells; the retry
    loop times out and sleeps with trio, hedging runs its attempts in a trio nursery."""
    import asyncio

    async def trio_main():
        timeouts = 0
        async for attempt in aretrying([0.25], on=TimeoutError, attempt_timeout=1.0):
            async with attempt:
                if attempt.number == 1:
                    try:
                        await trio.sleep_forever()
                    except trio.Cancelled:
                        timeouts += 1
                        raise
        slow = iter([60, 0])

        async def read():
            await trio.sleep(next(slow))
            return "hedge"

        return timeouts, await hedged(read, [0.01])

    async def host():
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        trio.lowlevel.start_guest_run(
            trio_main,
            run_sync_soon_threadsafe=loop.call_soon_threadsafe,
            done_callback=done.set_result,
            clock=trio.testing.MockClock(autojump_threshold=0),  # nothing really sleeps
        )
        return (await done).unwrap()

    assert asyncio.run(host()) == (1, "hedge")


@pytest.mark.parametrize("sleep", ["trio's", "a plain function"])
def test_under_trio_no_retry_starts_once_the_callers_scope_is_cancelled(sleep):
    """The caller's scope is cancelled while attempt 1 ends in a failure it retries (trio delivers
    a cancellation at the next checkpoint, and the attempt reached none after it): the call ends
    with the cancellation there - no before_sleep, no "retry" heard, no attempt 2 - as under
    asyncio, whatever the sleep (a plain one reaches no checkpoint either).  The hooks hear the
    cancellation end attempt 1, which ran (it was of attempt 2, which never did)."""
    events, hooked, ran = [], [], []
    options = {} if sleep == "trio's" else {"sleep": lambda seconds: None}

    async def main():
        with trio.CancelScope() as scope:
            async for attempt in aretrying(
                [0.5],
                on=ConnectionError,
                observe=events.append,
                before_sleep=lambda *args: hooked.append(args),
                **options,
            ):
                async with attempt:
                    ran.append(attempt.number)
                    scope.cancel()  # as another task would, while this one was about to resume
                    raise ConnectionError("refused")
        return scope.cancelled_caught

    assert run_trio(main) == (True, 0.0)
    assert (ran, hooked) == ([1], [])
    assert [(e.kind, e.number, type(e.outcome), e.reason) for e in events] == [
        ("error", 1, trio.Cancelled, None)
    ]


@pytest.mark.parametrize("retries", [3, 0], ids=["retries-left", "the-last-attempt"])
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_an_attempt_turning_its_cancellation_into_an_error_is_told_to_no_part_on_either_backend(
    backend, retries
):
    """The caller's scope is cancelled while the attempt waits, and the attempt
    turns its cancellation into a ConnectionError ("socket closed"): no retry,
    the cancellation ends the call, no part hears a failure of the dependency
    and the hooks hear the cancellation end it - under trio as under asyncio,
    with retries left or none (trio's parts heard "failure", and on the last
    attempt its hooks a give-up on the ConnectionError, which ended the call)."""
    if backend == "asyncio" and sys.version_info < (3, 11):
        pytest.skip("asyncio counts cancellation requests from 3.11 (Task.cancelling)")
    from backoff_iter.parts import Part

    heard, ended, runs, events = [], [], [], []

    class Tally(Part):
        def after_attempt(self, outcome, kind, number, spent):
            heard.append(kind)

    def hook(event):
        cancelled = isinstance(event.outcome, anyio.get_cancelled_exc_class())
        events.append((event.kind, "cancelled" if cancelled else type(event.outcome).__name__))

    @retry(
        [0.0] * retries,
        on=ConnectionError,
        parts=[Tally()],
        observe=[hook],
        sleep=lambda s: None,
    )
    async def fetch():
        runs.append(1)
        try:
            await anyio.sleep(3600)
        except anyio.get_cancelled_exc_class():
            raise ConnectionError("socket closed") from None

    async def call():
        try:
            await fetch()
        except BaseException as error:
            ended.append(isinstance(error, anyio.get_cancelled_exc_class()))
            raise

    async def main():
        async with anyio.create_task_group() as group:
            group.start_soon(call)
            await anyio.wait_all_tasks_blocked()
            group.cancel_scope.cancel()

    anyio.run(main, backend=backend)
    assert (runs, ended, heard, events) == ([1], [True], [], [("error", "cancelled")])


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_with_trio_imported_the_parts_hear_each_failure_on_either_backend(backend):
    """trio imported (this module does), no cancellation: the parts hear each
    failure and the success, under asyncio as under trio."""
    from backoff_iter.parts import Part

    heard = []

    class Tally(Part):
        def after_attempt(self, outcome, kind, number, spent):
            heard.append(kind)

    operation = Operation([OSError()])

    @retry([0.0], on=OSError, parts=[Tally()], sleep=lambda s: None)
    async def fetch():
        return operation()

    async def main():
        return await fetch()

    assert anyio.run(main, backend=backend) == "ok"
    assert heard == ["failure", "success"]


def test_a_sync_loop_sleeping_under_trio_warns_that_it_blocks_trios_event_loop(monkeypatch):
    """``retrying`` in an ``async def`` run by trio sleeps with time.sleep and
    stops every trio task meanwhile: it warns so, naming the user's line."""
    import time

    from test_drivers import _retried_once_in_a_sync_loop

    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)

    async def main() -> object:
        return _retried_once_in_a_sync_loop("loop")

    with pytest.warns(RuntimeWarning, match="blocks the trio event loop") as caught:
        assert run_trio(main)[0] == 2
    assert slept == [0.5]
    assert len(caught) == 1
