"""attempt_timeout: each attempt's timeout from a schedule, enforced by the async
loops (asyncio and trio), handed to the body by the sync ones, and set on httpx."""

from __future__ import annotations

import asyncio
import contextlib
import math
import sys
import threading
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from checks import rejects
from test_drivers import FakeTime

from backoff_iter import aretrying, exponential, retry, retrying
from backoff_iter.testing import no_sleep

HANG = 10.0  # an attempt that would hang this long is cut at its timeout


class Hangs:
    """An async operation whose first *slow* calls hang HANG seconds, then answers."""

    def __init__(self, slow=1):
        self.slow = slow
        self.calls = 0
        self.cancelled = 0

    async def __call__(self, timeout=None):
        self.calls += 1
        if self.calls <= self.slow:
            try:
                await asyncio.sleep(HANG)
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
        return f"answer {self.calls}"


def test_a_hanging_first_attempt_is_cut_and_the_second_answers_in_both_async_forms():
    """attempt_timeout=0.05: the first attempt fails with TimeoutError (before_sleep sees it), the second answers."""
    for form in ("aretrying", "@retry"):
        seen = []
        operation = Hangs()

        def hook(attempt, outcome, delay, seen=seen):
            seen.append((attempt.number, type(outcome), attempt.timeout))

        options = {"attempt_timeout": 0.05, "before_sleep": hook, "sleep": lambda s: None}

        async def main(operation=operation, options=options, form=form):
            if form == "@retry":
                return await retry([0.0], **options)(operation)()
            async for attempt in aretrying([0.0], **options):
                async with attempt:
                    return await operation()

        assert asyncio.run(main()) == "answer 2", form
        assert seen == [(1, TimeoutError, 0.05)], form
        assert operation.cancelled == 1, form  # the hung attempt was cancelled, not left running


@pytest.mark.parametrize("option", ["parts", "budget", "breaker", "throttle", "rate_limiter"])
def test_a_timeout_set_by_a_part_of_the_users_cuts_an_async_attempt_of_retry_too(option):
    """A Part of the user's may set each attempt's timeout (``call.timeout``), as
    attempt_timeout's does, given in parts= or as any part option: async @retry runs
    each attempt in its scope then, and the first, hanging, is cut at 0.05 s and retried."""
    from backoff_iter.parts import Part

    class ShortAttempts(Part):
        def before_attempt(self, call):
            call.timeout = 0.05
            return 0.0

    part = ShortAttempts()
    given = {option: [part] if option == "parts" else part}
    operation = Hangs()
    decorated = retry([0.0], **given, sleep=lambda s: None)(operation)
    assert asyncio.run(decorated()) == "answer 2"
    assert operation.cancelled == 1


def test_a_timeout_is_a_failure_that_on_decides_about():
    """The builtin TimeoutError is retried when `on` matches it (the default does); else it propagates."""
    operation = Hangs(slow=5)
    with pytest.raises(TimeoutError):
        asyncio.run(retry([0.0] * 3, on=ConnectionError, attempt_timeout=0.01)(operation)())
    assert operation.calls == 1
    operation = Hangs(slow=5)
    with pytest.raises(TimeoutError):
        asyncio.run(retry([0.0] * 2, attempt_timeout=0.01, sleep=lambda s: None)(operation)())
    assert operation.calls == 3 and operation.cancelled == 3


def test_the_tasks_own_cancellation_is_never_taken_for_a_timeout():
    """Cancelling the caller during an attempt propagates CancelledError: no retry, no TimeoutError."""
    operation = Hangs(slow=5)

    async def main():
        started = asyncio.Event()

        async def call():
            async for attempt in aretrying([0.0] * 5, attempt_timeout=5.0, sleep=lambda s: None):
                async with attempt:
                    started.set()
                    return await operation()

        task = asyncio.ensure_future(call())
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert asyncio.all_tasks() == {asyncio.current_task()}

    asyncio.run(main())
    assert operation.calls == 1 and operation.cancelled == 1


def test_timeouts_follow_their_schedule_and_shrink_to_the_deadline():
    """exponential timeouts 1, 2, 4 ... each cut to what the deadline leaves; the last repeats."""
    time_ = FakeTime()
    seen = []
    with pytest.raises(OSError):
        for attempt in retrying(
            [1.0] * 6,
            attempt_timeout=lambda: exponential(1.0),
            deadline=12.0,
            sleep=time_.sleep,
            clock=time_.clock,
        ):
            with attempt:
                seen.append((attempt.elapsed, attempt.timeout))
                time_.now += 0.5
                raise OSError
    # elapsed 0, 1.5, 3, 4.5, ...: timeouts 1, 2, 4, then what the 12 s deadline leaves.
    assert seen[:3] == [(0.0, 1.0), (1.5, 2.0), (3.0, 4.0)]
    assert all(t == min(2.0**i, 12.0 - e) for i, (e, t) in enumerate(seen))
    assert seen[-1][1] < 2.0 ** (len(seen) - 1)  # the deadline shortened the last
    seen.clear()
    for attempt in retrying([0.0] * 3, attempt_timeout=[0.5, 0.25], sleep=lambda s: None):
        with attempt:
            seen.append(attempt.timeout)
            if attempt.number < 4:
                raise OSError
    assert seen == [0.5, 0.25, 0.25, 0.25]


def test_an_attempt_that_starts_past_the_deadline_gets_no_time_not_a_negative_one():
    """A sleep that overshoots the deadline: the next attempt's timeout is 0, never below."""
    time_ = FakeTime()

    def oversleep(seconds):
        time_.sleep(seconds + 1.0)  # the sleep wakes a second late

    seen = []
    for attempt in retrying(
        [0.5], attempt_timeout=5.0, deadline=1.0, sleep=oversleep, clock=time_.clock
    ):
        with attempt:
            seen.append(attempt.timeout)
            if attempt.number == 1:
                raise OSError
    assert seen == [1.0, 0.0]  # elapsed 1.5 at the second: 1 - 1.5 is cut to 0


def test_a_sleep_that_would_end_on_the_deadline_ends_the_call_when_attempts_have_timeouts():
    """deadline=2, attempt_timeout=1: after the second attempt (ending at 1.0) the next delay
    (5 s) reaches the deadline; an attempt after a sleep shortened to end on it would have a
    timeout of 0 (httpx would take it for a non-blocking socket), so the call gives up there,
    its failure as it is.  Without attempt_timeout the sleep is shortened, as before."""
    for timeout, expected in ((1.0, ([0.5], [1.0, 1.0])), (None, ([0.5, 1.0], [None] * 3))):
        time_, seen, events = FakeTime(), [], []
        with pytest.raises(OSError, match="down"):
            for attempt in retrying(
                [0.5, 5.0, 5.0],
                attempt_timeout=timeout,
                deadline=2.0,
                sleep=time_.sleep,
                clock=time_.clock,
                observe=events.append,
                on=OSError,
            ):
                with attempt:
                    seen.append(attempt.timeout)
                    time_.now += 0.25
                    raise OSError("down")
        assert (time_.slept, seen) == expected
        assert events[-1].kind == "give_up" and events[-1].reason == "deadline"


def test_a_before_sleep_that_leaves_no_time_for_a_timed_attempt_ends_the_call():
    """before_sleep takes 1.5 of a 2 s deadline after the first attempt: the 0.5 s delay
    ends on the deadline, so with attempt_timeout no attempt follows (it would get 0 s)."""
    time_, seen = FakeTime(), []

    def slow_hook(attempt, outcome, delay):
        time_.now += 1.5

    with pytest.raises(OSError):
        for attempt in retrying(
            [0.5, 0.5],
            attempt_timeout=1.0,
            deadline=2.0,
            before_sleep=slow_hook,
            sleep=time_.sleep,
            clock=time_.clock,
            on=OSError,
        ):
            with attempt:
                seen.append(attempt.timeout)
                raise OSError
    assert (seen, time_.slept) == ([1.0], [])


def test_without_attempt_timeout_attempts_have_none():
    """attempt.timeout is None unless attempt_timeout is given."""
    for attempt in retrying([0.0]):
        with attempt:
            assert attempt.timeout is None


def test_an_empty_attempt_timeout_schedule_gives_no_timeout_which_reads_inf():
    """docs/timeouts-and-hedging.rst: an empty schedule of timeouts is none at all; attempt.timeout and timeout_arg read inf."""
    seen = []
    for attempt in retrying([0.0], attempt_timeout=[], on=ConnectionError, sleep=lambda s: None):
        with attempt:
            seen.append(attempt.timeout)
            if attempt.number == 1:
                raise ConnectionError
    assert seen == [math.inf, math.inf]

    @retry([0.0], attempt_timeout=lambda: iter(()), timeout_arg="timeout")
    def get(*, timeout):
        return timeout

    assert get() == math.inf


def test_timeout_arg_hands_each_timeout_to_the_function():
    """@retry(attempt_timeout=..., timeout_arg="timeout") passes it as that keyword argument."""
    got = []

    @retry([0.0, 0.0], attempt_timeout=[3.0, 6.0], timeout_arg="timeout", sleep=lambda s: None)
    def get(url, *, timeout):
        got.append((url, timeout))
        if len(got) < 3:
            raise ConnectionError
        return "ok"

    assert get("http://x") == "ok"
    assert got == [("http://x", 3.0), ("http://x", 6.0), ("http://x", 6.0)]

    @retry([0.0], attempt_timeout=1.5, timeout_arg="timeout")
    def anything(**options):
        return options

    assert anything(a=1) == {"a": 1, "timeout": 1.5}

    @retry([0.0], attempt_timeout=2.5, timeout_arg="timeout")
    def positional_or_keyword(url, timeout=None):
        return url, timeout

    assert positional_or_keyword("http://y") == ("http://y", 2.5)


def test_timeout_arg_refuses_a_function_without_that_parameter_at_once():
    """No such keyword parameter: TypeError at decoration, naming timeout_arg."""

    def get(url):
        return url

    rejects(
        lambda: retry(attempt_timeout=1.0, timeout_arg="timeout")(get),
        TypeError,
        "timeout_arg",
        "'timeout'",
    )
    rejects(lambda: retry(timeout_arg="timeout"), ValueError, "timeout_arg", "attempt_timeout")
    rejects(lambda: retry(attempt_timeout=1.0, timeout_arg=3), TypeError, "timeout_arg")
    # Not a name a keyword argument can have: refused before any function is decorated
    # (one taking **kwargs would take it, and every call would hand it over).
    rejects(
        lambda: retry(attempt_timeout=1.0, timeout_arg="time out"),
        TypeError,
        "timeout_arg",
        "'time out'",
    )


@pytest.mark.parametrize(
    "bad, error", [(-1.0, ValueError), (math.nan, ValueError), ("5", TypeError), (True, TypeError)]
)
def test_a_bad_attempt_timeout_is_rejected_at_once(bad, error):
    """A negative, NaN or non-number attempt_timeout names the parameter."""
    rejects(lambda: retrying([1.0], attempt_timeout=bad), error, "attempt_timeout")


def test_a_bad_timeout_from_a_schedule_names_attempt_timeout():
    """A negative value drawn from the schedule is an error naming attempt_timeout."""
    with pytest.raises(ValueError, match="attempt_timeout"):
        for attempt in retrying([1.0], attempt_timeout=[-2.0]):
            with attempt:
                pass


@pytest.mark.parametrize("library", ["asyncio", "trio"])
def test_a_timeout_a_users_part_sets_is_read_as_attempt_timeouts_are(library):
    """call.timeout set by a Part of the user's: a Decimal is its float, an integer beyond
    floats no timeout, and a NaN, negative or non-number one an error naming the timeout -
    never an OverflowError or a TypeError out of the event loop's arithmetic, nor a NaN
    deadline that times every attempt out at once."""
    import trio

    from backoff_iter.parts import Part

    class Sets(Part):
        def __init__(self, value):
            self.value = value

        def before_attempt(self, call):
            call.timeout = self.value
            return 0.0

    async def answers():
        if library == "trio":
            await trio.sleep(0)
        else:
            await asyncio.sleep(0)
        return "answer"

    def run(value):
        decorated = retry([], parts=[Sets(value)], sleep=lambda s: None)(answers)
        return trio.run(decorated) if library == "trio" else asyncio.run(decorated())

    assert run(Decimal("60")) == "answer"
    assert run(10**400) == "answer"
    for bad, error in [(math.nan, ValueError), (-1.0, ValueError), ("5", TypeError)]:
        with pytest.raises(error, match="timeout"):
            run(bad)


def test_the_async_drivers_run_under_trio():
    """aretrying and async @retry under trio with sleep=trio.sleep; attempt_timeout uses a cancel scope."""
    import trio

    slept, calls, cut = [], [], []

    async def sleep(seconds):
        slept.append(seconds)
        await trio.sleep(0)

    async def flaky():
        calls.append(1)
        if len(calls) == 1:
            try:
                await trio.sleep(HANG)  # cut by the attempt's timeout
            except trio.Cancelled:
                cut.append(1)
                raise
        if len(calls) == 2:
            raise ConnectionError
        await trio.sleep(0)  # a checkpoint: a timeout not yet due lets it pass
        return len(calls)

    async def main():
        loop_result = None
        async for attempt in aretrying([0.25, 0.5], sleep=sleep, attempt_timeout=0.05):
            async with attempt:
                loop_result = await flaky()
        calls.clear()
        decorated = retry([0.25, 0.5], sleep=sleep, attempt_timeout=0.05)(flaky)
        return loop_result, await decorated()

    assert trio.run(main) == (3, 3)
    assert slept == [0.25, 0.5, 0.25, 0.5]
    assert cut == [1, 1]  # each form's first attempt was cancelled, not waited out


def test_attempt_timeout_without_an_event_loop_says_what_it_needs():
    """An async loop driven by hand, with no event loop, cannot cancel: a clear RuntimeError."""

    async def main():
        async for attempt in aretrying([0.0], attempt_timeout=1.0):
            async with attempt:
                pass

    coroutine = main()
    with pytest.raises(RuntimeError, match="attempt_timeout"):
        coroutine.send(None)
    coroutine.close()


# -- RetryTransport(attempt_timeout=...) against a server whose first answer hangs ----------


class SlowFirst:
    """A server on 127.0.0.1 whose first answer waits until released (or 5 s), then 200s."""

    def __init__(self):
        self.seen = 0
        self.release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                server.seen += 1
                if server.seen == 1:
                    server.release.wait(5.0)
                body = f"answer {server.seen}".encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                with contextlib.suppress(OSError):  # the client may have given up on it
                    self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/"
        self.thread = threading.Thread(target=self.http.serve_forever, args=(0.02,), daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.release.set()
        self.http.shutdown()
        self.http.server_close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_retry_transport_times_out_a_hanging_attempt_and_the_next_answers(mode):
    """attempt_timeout=0.2 reaches httpx: the hung first request fails, the second answers."""
    import httpx

    from backoff_iter.interop import RetryTransport

    with SlowFirst() as server, no_sleep() as slept:
        transport = RetryTransport(delays=[0.1], attempt_timeout=0.2)
        if mode == "sync":
            with httpx.Client(transport=transport) as client:
                response = client.get(server.url)
        else:

            async def get():
                async with httpx.AsyncClient(transport=transport) as client:
                    return await client.get(server.url)

            response = asyncio.run(get())
    # The first request hangs until the server is released, at its end: only its timeout ends it.
    assert response.text == "answer 2" and server.seen == 2
    assert slept == [0.1]


def test_the_timer_of_pythons_without_asyncio_timeout_cuts_an_attempt_and_only_it():
    """The 3.9/3.10 scope (tested on every Python): its expiry is a TimeoutError, the task's own cancel is not."""
    from backoff_iter._timeouts import _LegacyAsyncioScope

    timers = []

    async def attempt(seconds, body):
        scope = _LegacyAsyncioScope(seconds)
        await scope.__aenter__()
        timers.append(scope._handle)
        try:
            await body()
        except BaseException as exc:  # the attempt's outcome, as `async with attempt` sees it
            return await scope.__aexit__(type(exc), exc, exc.__traceback__), exc
        return await scope.__aexit__(None, None, None), None

    async def hang():
        await asyncio.sleep(HANG)

    async def quick():
        await asyncio.sleep(0)

    async def converts():
        try:
            await asyncio.sleep(HANG)
        except asyncio.CancelledError:
            raise ValueError("the body turned its cancellation into an error") from None

    async def main():
        expired, exc = await attempt(0.02, hang)
        assert isinstance(expired, TimeoutError) and isinstance(exc, asyncio.CancelledError)
        assert await attempt(5.0, quick) == (None, None)  # no expiry, no stray cancellation
        assert timers[-1].cancelled()  # its timer is stopped: it cannot cancel the task later
        expired, exc = await attempt(0.02, converts)  # expired, but no cancellation came out
        assert expired is None and isinstance(exc, ValueError)
        task = asyncio.current_task()

        async def cancel_soon():
            task.cancel()

        canceller = asyncio.ensure_future(cancel_soon())
        expired, exc = await attempt(5.0, hang)  # the task's own cancellation
        await canceller
        assert expired is None and isinstance(exc, asyncio.CancelledError)

        async def cancelled_while_cleaning_up():  # expired, then the task's own cancel
            try:
                await asyncio.sleep(HANG)
            finally:
                task.cancel("the caller's")
                await asyncio.sleep(0)

        expired, exc = await attempt(0.02, cancelled_while_cleaning_up)
        assert expired is None and exc.args == ("the caller's",)

    asyncio.run(main())


def test_a_timeouts_error_has_the_attempts_cancellation_as_its_cause():
    """The TimeoutError the loop retries chains to the CancelledError that cut the attempt."""
    causes = []
    operation = Hangs()

    async def main():
        async for attempt in aretrying(
            [0.0],
            attempt_timeout=0.02,
            sleep=lambda s: None,
            before_sleep=lambda a, outcome, d: causes.append(outcome.__cause__),
        ):
            async with attempt:
                return await operation()

    assert asyncio.run(main()) == "answer 2"
    assert len(causes) == 1 and isinstance(causes[0], asyncio.CancelledError)


def test_an_infinite_attempt_timeout_never_cuts_an_async_attempt():
    """attempt_timeout=inf under asyncio: the attempt runs to its end, timeout reads inf."""
    seen = []

    async def main():
        async for attempt in aretrying([0.0], attempt_timeout=math.inf):
            async with attempt:
                seen.append(attempt.timeout)
                await asyncio.sleep(0)
                return "done"

    assert asyncio.run(main()) == "done" and seen == [math.inf]


def test_the_timer_of_pythons_without_asyncio_timeout_takes_only_its_own_cancellation():
    """The 3.9/3.10 scope: a body that answers the expiry with a CancelledError of its own
    (other arguments) ends in that cancellation, not in a timeout."""
    from backoff_iter._timeouts import _LegacyAsyncioScope

    async def main():
        scope = _LegacyAsyncioScope(0.0)  # expires at the loop's next pass: no real wait
        await scope.__aenter__()
        try:
            await asyncio.sleep(HANG)
        except asyncio.CancelledError:
            own = asyncio.CancelledError("the body's own")
        return await scope.__aexit__(type(own), own, None), scope._expired

    assert asyncio.run(main()) == (None, True)


def test_the_timer_of_pythons_without_asyncio_timeout_nests_and_chains():
    """The 3.9/3.10 scope: an outer attempt's expiry is the outer's, not an inner one's; no timer for inf."""
    from backoff_iter._timeouts import _LegacyAsyncioScope

    async def main():
        outer, inner = _LegacyAsyncioScope(0.02), _LegacyAsyncioScope(5.0)
        await outer.__aenter__()
        await inner.__aenter__()
        with pytest.raises(asyncio.CancelledError) as cut:
            await asyncio.sleep(HANG)  # cut by the outer timer
        exc = cut.value
        assert await inner.__aexit__(type(exc), exc, exc.__traceback__) is None  # not its expiry
        expired = await outer.__aexit__(type(exc), exc, exc.__traceback__)
        assert isinstance(expired, TimeoutError) and expired.__cause__ is exc
        endless = _LegacyAsyncioScope(math.inf)
        await endless.__aenter__()
        assert await endless.__aexit__(None, None, None) is None

    asyncio.run(main())


@pytest.mark.parametrize("library", ["asyncio", "trio"])
def test_a_timed_out_attempts_error_says_how_long_it_ran_under_asyncio_and_trio(library):
    """The TimeoutError the hooks and the caller see says the attempt's timeout, under
    asyncio (whose own says nothing) as under trio, and chains to the cancellation."""
    import trio

    heard = []

    async def hang():
        await (trio.sleep(HANG) if library == "trio" else asyncio.sleep(HANG))

    async def main():
        async for attempt in aretrying(
            [0.0],
            attempt_timeout=0.05,
            sleep=lambda s: None,
            before_sleep=lambda a, outcome, d: heard.append(outcome),
        ):
            async with attempt:
                await hang()

    with pytest.raises(TimeoutError) as given_up:
        trio.run(main) if library == "trio" else asyncio.run(main())
    for expired in (*heard, given_up.value):
        assert str(expired) == "the attempt timed out after 0.05 s"
        cancelled = trio.Cancelled if library == "trio" else asyncio.CancelledError
        assert isinstance(expired.__cause__, cancelled)
    assert len(heard) == 1


@pytest.mark.parametrize("form", ["loop", "stream"])
@pytest.mark.parametrize("library", ["asyncio", "trio"])
def test_a_bad_timeout_from_a_users_part_ends_the_call_as_the_callers_bug(library, form):
    """A Part that sets call.timeout to NaN: the error naming it ends the call as any bug of
    the caller's does - the hooks hear the call end as an "error", and the parts hear of the
    attempt (a breaker's probe comes back) - not a call left running that nobody hears end.
    An async stream's first item is cut by the same scope: the bug ends it before its source
    is made, never retried, even under on=Exception (it was retried like the source's
    failure)."""
    import trio

    from backoff_iter.parts import ERROR, Part

    heard, made = [], []

    class Sets(Part):
        def before_attempt(self, call):
            call.timeout = math.nan
            return 0.0

        def after_attempt(self, outcome, kind, number, spent):
            heard.append((kind, number, type(outcome).__name__))

    events = []

    async def loop():
        async for attempt in aretrying(
            [0.0], parts=[Sets()], observe=events.append, sleep=lambda s: None
        ):
            async with attempt:
                return "answer"

    @retry([0.0], on=Exception, parts=[Sets()], observe=events.append, sleep=lambda s: None)
    async def items():
        made.append(1)
        yield "answer"

    async def stream():
        return [item async for item in items()]

    main = loop if form == "loop" else stream
    with pytest.raises(ValueError, match="timeout"):
        trio.run(main) if library == "trio" else asyncio.run(main())
    assert heard == [(ERROR, 1, "ArgumentValueError")] and made == []
    assert [(event.kind, event.number) for event in events] == [("error", 1)]


@pytest.mark.parametrize("library", ["asyncio", "trio"])
def test_a_misuse_caught_inside_a_timed_attempt_leaves_no_timeout_behind(library):
    """`async with attempt:` twice, the misuse caught in the block: the loop ends
    with the misuse error, and the attempt's timeout is gone with it - no stray
    cancellation of the task once its time is up (a sleep after the loop was cut)."""
    import trio
    import trio.testing

    sleep = trio.sleep if library == "trio" else asyncio.sleep
    caught = []

    async def main():
        with pytest.raises(RuntimeError, match="not the current attempt"):
            async for attempt in aretrying([0.0], attempt_timeout=0.02, sleep=lambda s: None):
                async with attempt:
                    try:
                        async with attempt:
                            pass
                    except RuntimeError as misuse:
                        caught.append(misuse)
        await sleep(0.1)  # past the attempt's 0.02 s
        return "slept"

    if library == "trio":
        result = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    else:
        result = asyncio.run(main())
    assert result == "slept" and len(caught) == 1


@pytest.mark.skipif(
    sys.version_info >= (3, 11),
    reason="3.11 keeps the message on a cancellation's way out of a task (and has asyncio.timeout)",
)
def test_the_timer_of_pythons_without_asyncio_timeout_cuts_an_attempt_awaiting_a_task():
    """The 3.9/3.10 scope, on those Pythons: an attempt awaiting a task
    (gather, ensure_future) that the timer cuts is a TimeoutError - those
    Pythons drop the cancel message on the way out of a task, and the attempt
    came out as a bare CancelledError, never retried."""
    from backoff_iter._timeouts import _EXPIRED, _LegacyAsyncioScope

    async def attempt(body):
        scope = _LegacyAsyncioScope(0.02)
        await scope.__aenter__()
        try:
            await body()
        except BaseException as exc:
            return await scope.__aexit__(type(exc), exc, exc.__traceback__), exc
        return await scope.__aexit__(None, None, None), None

    async def gathered():
        await asyncio.gather(asyncio.sleep(HANG))

    async def in_a_task():
        await asyncio.ensure_future(asyncio.sleep(HANG))

    async def in_tasks_within_tasks():  # the message two tasks down the context chain
        await asyncio.ensure_future(gathered())

    async def main():
        for body in (gathered, in_a_task, in_tasks_within_tasks):
            expired, exc = await attempt(body)
            assert isinstance(expired, TimeoutError), body.__name__
            assert isinstance(exc, asyncio.CancelledError), body.__name__
        task = asyncio.current_task()

        async def cancel_soon():
            task.cancel()

        canceller = asyncio.ensure_future(cancel_soon())  # the task's own, with no message
        expired, exc = await attempt(in_a_task)
        await canceller
        assert expired is None and isinstance(exc, asyncio.CancelledError)

        async def cleans_up_and_is_cancelled():  # the timer's caught, then the caller's
            try:
                await asyncio.sleep(HANG)
            except asyncio.CancelledError:
                task.cancel()  # the caller's, with no message, as the attempt cleans up
                await asyncio.sleep(0)
                raise

        expired, exc = await attempt(cleans_up_and_is_cancelled)
        assert expired is None and exc.args == ()  # the caller's goes through
        assert exc.__context__.args == (_EXPIRED,)  # (the timer's, handled in the same frame)

        for message in ("the caller's", None):  # the timer's and the caller's in one pass
            scope = _LegacyAsyncioScope(HANG)
            await scope.__aenter__()
            expire = scope._handle._callback

            def both(expire=expire, message=message):
                expire()
                task.cancel(message)

            asyncio.get_running_loop().call_soon(both)
            cancelled = None
            try:
                await in_a_task()
            except asyncio.CancelledError as exc:
                cancelled = exc
            assert isinstance(cancelled, asyncio.CancelledError), message
            assert await scope.__aexit__(type(cancelled), cancelled, None) is None, message

    asyncio.run(main())
