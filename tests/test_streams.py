"""@retry over generator functions: retried until the first item, resumed after it
(with resume=), never duplicated; close, send and throw pass through."""

from __future__ import annotations

import asyncio
import functools
import inspect
from itertools import islice

import httpx
import pytest
import trio
import trio.testing
from streaming_server import cutting_server

from backoff_iter import CircuitBreaker, StreamState, TokenBucket, retry
from backoff_iter.testing import no_sleep


class Source:
    """A stream of 0..9 that fails (ConnectionError) on the calls listed in
    *before* before its first item, and after item *after* on the calls in
    *cut*; it records its calls, where each began, and whether it was closed."""

    def __init__(self, before=(), after=None, cut=()):
        self.before, self.after, self.cut = set(before), after, set(cut)
        self.calls, self.starts, self.closed = 0, [], 0

    def items(self, start=0):
        self.calls += 1
        call = self.calls
        self.starts.append(start)
        try:
            if call in self.before:
                raise ConnectionError(f"refused on call {call}")
            for number in range(start, 10):
                if call in self.cut and number == self.after + 1:
                    raise ConnectionError(f"cut after {self.after}")
                yield number
        finally:
            self.closed += 1

    async def aitems(self, start=0):
        for number in self.items(start):
            await asyncio.sleep(0) if _on_asyncio() else await trio.sleep(0)
            yield number


def _on_asyncio():
    from backoff_iter._sleeping import running_library

    return running_library() == "asyncio"


def resume_from_count(source, method="items"):
    """resume=: the items after what the consumer received, by count."""
    return lambda state: getattr(source, method)(state.count)


# -- sync streams -----------------------------------------------------------------------------


def test_a_stream_failing_before_its_first_item_is_called_again():
    """Two failures before the first item, then 0..9: exactly 0..9, from three calls."""
    source = Source(before=[1, 2])
    stream = retry([0.0, 0.0])(source.items)
    with no_sleep() as slept:
        assert list(stream()) == list(range(10))
    assert source.calls == 3 and slept == [0.0, 0.0]


def test_a_stream_failing_after_items_propagates_without_resume():
    """Cut after item 4: 0..4 delivered, then the ConnectionError itself; no second call."""
    source = Source(after=4, cut=[1])
    got = []
    with no_sleep() as slept, pytest.raises(ConnectionError, match="cut after 4"):
        for item in retry([0.0, 0.0])(source.items)():
            got.append(item)
    assert got == [0, 1, 2, 3, 4] and source.calls == 1 and slept == []


def test_a_resumable_stream_delivers_every_item_exactly_once():
    """Cut after item 4, resume= from state.count: 0..9 once each, the second call starting at 5."""
    source = Source(after=4, cut=[1])
    stream = retry([0.5], resume=resume_from_count(source))(source.items)
    with no_sleep() as slept:
        assert list(stream()) == list(range(10))
    assert source.starts == [0, 5] and slept == [0.5]


def test_the_resume_state_holds_the_arguments_the_count_and_the_last_item():
    """resume gets the call's args and kwargs, the items delivered and the last of them."""
    seen = []
    source = Source(after=2, cut=[1])

    def resume(state):
        seen.append((state.args, state.kwargs, state.count, state.last))
        return source.items(state.count)

    def items(start=0, *, tag):
        yield from source.items(start)

    stream = retry([0.0], resume=resume)(items)
    with no_sleep():
        assert list(stream(0, tag="x")) == list(range(10))
    assert seen == [((0,), {"tag": "x"}, 3, 2)]


def test_after_progress_the_schedule_starts_over():
    """Each cut after new items sleeps the schedule's first delay again: progress resets it."""

    def items(start=0):  # cut at 2, 5 and 8, each time after delivering something new
        for number in range(start, 10):
            if number in (2, 5, 8) and number > start:
                raise ConnectionError("cut")
            yield number

    stream = retry([0.1, 0.2, 0.4], resume=lambda state: items(state.count))(items)
    with no_sleep() as slept:
        assert list(stream()) == list(range(10))
    assert slept == [0.1, 0.1, 0.1]  # never 0.2: each attempt delivered before it failed


def test_a_stream_resumed_often_after_progress_is_not_warned_of_an_endless_schedule():
    """Cut after every two items 200 times, each cut after progress: the schedule starts over
    each time, so 200 retries of a 3-delay schedule are not "endless" (the warning, an error
    under -W error, ended such a stream after 101); with no progress the warning comes."""
    import warnings

    from backoff_iter import constant

    def items(start=0):
        yield from range(start, start + 2)
        if start < 400:
            raise ConnectionError("cut")

    stream = retry([0.1, 0.2, 0.4], resume=lambda state: items(state.count))(items)
    with no_sleep(), warnings.catch_warnings():
        warnings.simplefilter("error")
        assert list(stream()) == list(range(402))

    def stuck(start=0):
        yield 0
        raise ConnectionError("cut")

    def no_progress(state):
        raise ConnectionError("still down")
        yield  # pragma: no cover - a generator that fails at once

    endless = retry(lambda: islice(constant(0.1), 150), resume=no_progress)(stuck)
    with no_sleep(), pytest.warns(RuntimeWarning, match="retries with no deadline"):
        with pytest.raises(ConnectionError, match="still down"):
            list(endless())


def test_a_resumed_attempt_failing_before_any_item_uses_the_schedule():
    """Resumed sources that fail at once are failed attempts: the schedule goes on, then the failure stands."""
    calls = []

    def items(start=0):
        calls.append(start)
        if start:
            raise ConnectionError("still down")
        yield 0
        raise ConnectionError("cut")

    stream = retry([0.1, 0.2], resume=lambda state: items(state.count))(items)
    got = []
    with no_sleep() as slept, pytest.raises(ConnectionError, match="still down"):
        got.extend(stream())
    assert got == [0] and calls == [0, 1, 1] and slept == [0.1, 0.2]


def test_a_budget_that_refuses_ends_the_stream_with_the_original_failure():
    """A drained TokenBucket: the failure before the first item is raised as itself, no retry."""
    bucket = TokenBucket(max_tokens=2, token_ratio=0.1)
    bucket.record_failure(True)  # one token left: half the bucket, no retry
    source = Source(before=[1])
    with no_sleep() as slept, pytest.raises(ConnectionError, match="refused on call 1"):
        list(retry([0.0], budget=bucket)(source.items)())
    assert source.calls == 1 and slept == []


def test_a_stream_succeeds_when_it_ends_and_a_committed_failure_is_a_give_up():
    """Hooks hear success at the end; a failure after items is a give-up, reason "committed", told to the breaker."""
    events = []
    breaker = CircuitBreaker(failure_ratio=0.5, minimum_throughput=1)
    decorated = retry([0.0], observe=events.append, breaker=breaker)
    with no_sleep():
        assert list(decorated(Source().items)()) == list(range(10))
        assert breaker.state == "closed"
        with pytest.raises(ConnectionError):
            list(decorated(Source(after=0, cut=[1]).items)())
    assert [(e.kind, e.reason) for e in events] == [("success", None), ("give_up", "committed")]
    assert breaker.state == "open"


@pytest.mark.parametrize(
    "broken, state",
    [("on", "closed"), ("throttled", "open")],
    ids=["on raises: an error", "throttled raises: a failure"],
)
def test_a_predicate_that_breaks_on_a_committed_failure_still_tells_the_breaker(broken, state):
    """A stream fails after its first item, and the on= or throttled= predicate raises on
    the failure: the call ends with the predicate's error, and the breaker hears of the
    attempt as a plain call's would (on= broke: an error, closed; throttled= broke: the
    failure on= matched, open).  It heard nothing."""

    def raises(outcome):
        raise LookupError("the predicate's bug")

    def items():
        yield 0
        raise ConnectionError("cut")

    breaker = CircuitBreaker(failure_ratio=0.5, minimum_throughput=1)
    options = {"on": raises} if broken == "on" else {"on": ConnectionError, "throttled": raises}
    with pytest.raises(LookupError):
        list(retry([0.0], breaker=breaker, **options)(items)())
    assert breaker.state == state
    assert breaker._counts.first + breaker._counts.second == 1  # one attempt heard


def test_a_part_failing_after_throttled_broke_on_a_committed_failure_leaves_its_error():
    """A stream fails after its first item, the throttled= predicate raises on the
    failure, and a part told of it all the same raises too: the predicate's error, the
    first, ends the call, and the hooks hear it as an "error"."""
    from backoff_iter import Part

    class StoreDown(Part):
        def after_attempt(self, outcome, kind, number, spent):
            raise OSError("store down")

    def raises(outcome):
        raise LookupError("the predicate's bug")

    def items():
        yield 0
        raise ConnectionError("cut")

    events = []
    decorated = retry(
        [0.0], on=ConnectionError, throttled=raises, parts=[StoreDown()], observe=events.append
    )
    with pytest.raises(LookupError) as raised:
        list(decorated(items)())
    assert [(event.kind, event.outcome) for event in events] == [("error", raised.value)]


@pytest.mark.parametrize("form", ["stream", "call"])
def test_a_part_failing_as_it_hears_a_committed_failure_ends_the_call_as_an_error(form):
    """A part raises as it is told of the failure (a fleet breaker's store down): the call
    ends with its error, and the hooks hear it as an "error" (a span begun at a retry ends),
    as they do for a plain call whose retries ran out.  A committed stream told them nothing."""
    from backoff_iter import Part

    class StoreDown(Part):
        def after_attempt(self, outcome, kind, number, spent):
            if kind != "success":
                raise OSError("store down")

    events = []

    def items():
        yield 0
        raise ConnectionError("cut")

    def call():
        raise ConnectionError("cut")

    decorated = retry([], on=ConnectionError, parts=[StoreDown()], observe=events.append)
    with pytest.raises(OSError, match="store down") as raised:
        list(decorated(items)()) if form == "stream" else decorated(call)()
    assert isinstance(raised.value.__context__, ConnectionError)
    assert [(event.kind, event.outcome) for event in events] == [("error", raised.value)]


def test_a_stream_resumed_after_the_deadlines_last_sleep_is_not_resumed_again():
    """The deadline cut the first retry's sleep to its last (8 s to 6); the resumed source
    delivers 3 and 4, then fails: no further attempt, though the clock (moved only by the
    sources, 4 s a call) still shows time left - the last sleep was the last."""
    now, calls = [0.0], []

    def items(start=0):
        now[0] += 4.0
        calls.append(start)
        yield from range(start, start + 3 if start == 0 else start + 2)
        raise ConnectionError(f"cut after {start}")

    stream = retry(
        [8.0, 8.0, 8.0], deadline=10.0, clock=lambda: now[0], resume=lambda s: items(s.count)
    )(items)
    got = []
    with no_sleep() as slept, pytest.raises(ConnectionError, match="cut after 3"):
        for item in stream():
            got.append(item)
    assert got == [0, 1, 2, 3, 4] and calls == [0, 3] and slept == [6.0]


@pytest.mark.parametrize("taken", [1, 2])  # closed at its first item, and past it
def test_closing_the_stream_closes_the_source_and_starts_no_retry(taken):
    """close() mid-stream: the source's finally runs, nothing is called again, and the hooks
    hear the call end with one "closed" event, of the attempt that delivered (no outcome)."""
    events = []
    source = Source()
    stream = retry([0.0], observe=events.append)(source.items)()
    assert [next(stream) for _ in range(taken)] == list(range(taken))
    stream.close()
    assert source.closed == 1 and source.calls == 1
    assert [(e.kind, e.number, e.outcome, e.reason) for e in events] == [("closed", 1, None, None)]


def _closed_at_no_cost(source, error, match, taken, form, resume):
    """*source* retried on *error* (resumed from the count if *resume*), its first
    *taken* items read then the stream closed (*form*: "sync" or "async"): the close
    raises *error* (matching *match*), and the budget paid nothing, the hooks heard the
    stream closed."""
    bucket, events = TokenBucket(), []
    options = {"resume": lambda state: source(state.count)} if resume else {}
    decorated = retry([0.0], on=error, budget=bucket, observe=events.append, **options)
    stream = decorated(source)()
    tokens = bucket.tokens
    with pytest.raises(error, match=match):
        if form == "sync":
            assert [next(stream) for _ in range(taken)] == list(range(taken))
            stream.close()
        else:

            async def main():
                assert [await stream.__anext__() for _ in range(taken)] == list(range(taken))
                await stream.aclose()

            asyncio.run(main())
    assert bucket.tokens == tokens and [event.kind for event in events] == ["closed"]


@pytest.mark.parametrize("resume", [False, True])
@pytest.mark.parametrize("form", ["sync", "async"])
@pytest.mark.parametrize("taken", [1, 3])  # closed at its first item, and past it
def test_a_source_failing_as_it_is_closed_is_still_a_closed_stream(taken, form, resume):
    """The source's cleanup fails as the consumer closes the stream (its connection reset
    as it is shut): the error comes out of close(), but the stream was closed, not cut:
    the budget pays nothing, the hooks hear it closed.  Without resume a sync stream closed
    past its first item took it for a committed failure (a token taken, a give-up
    "committed" logged), unlike the same stream closed at its first item, or an async one."""

    def items(start=0):
        try:
            yield from range(start, 10)
        finally:
            raise ConnectionError("reset as it was closed")

    async def aitems(start=0):
        try:
            for item in range(start, 10):
                yield item
        finally:
            raise ConnectionError("reset as it was closed")

    source = items if form == "sync" else aitems
    _closed_at_no_cost(source, ConnectionError, "reset as it was closed", taken, form, resume)


@pytest.mark.parametrize("resume", [False, True])
@pytest.mark.parametrize("form", ["sync", "async"])
@pytest.mark.parametrize("taken", [1, 3])  # closed at its first item, and past it
def test_a_cleanup_error_a_library_wraps_as_the_stream_closes_is_still_a_closed_stream(
    taken, form, resume
):
    """The source's cleanup fails and its library raises its own error from the first (as
    httpx maps a socket's OSError to a ReadError): the stream was closed all the same.
    Without resume a sync stream closed past its first item looked only at the error's
    own context, found the OSError, and took the close for a committed failure."""

    def shut():
        try:
            raise OSError("socket shut")
        except OSError as error:
            raise ConnectionError("reset as it was closed") from error

    def items(start=0):
        try:
            yield from range(start, 10)
        finally:
            shut()

    async def aitems(start=0):
        try:
            for item in range(start, 10):
                yield item
        finally:
            shut()

    source = items if form == "sync" else aitems
    _closed_at_no_cost(source, ConnectionError, "reset as it was closed", taken, form, resume)


@pytest.mark.parametrize("resume", [False, True])
@pytest.mark.parametrize("form", ["sync", "async"])
@pytest.mark.parametrize("taken", [1, 3])  # closed at its first item, and past it
def test_a_source_ignoring_the_close_is_still_a_closed_stream(taken, form, resume):
    """The source yields again as it is closed (a yield in its finally): close() raises
    RuntimeError("generator ignored GeneratorExit"), as Python's own, but the stream was
    closed, not cut: the budget pays nothing, the hooks hear it closed.  Without resume a sync
    stream closed past its first item took that RuntimeError for the source's own failure,
    a committed give-up under on=RuntimeError (a token taken, the give-up logged)."""

    def items(start=0):
        try:
            yield from range(start, 10)
        finally:
            yield "one more"

    async def aitems(start=0):
        try:
            for item in range(start, 10):
                yield item
        finally:
            yield "one more"

    source = items if form == "sync" else aitems
    _closed_at_no_cost(source, RuntimeError, "ignored GeneratorExit", taken, form, resume)


@pytest.mark.parametrize("taken", [1, 3])  # thrown at its first item, and past it
@pytest.mark.parametrize(
    ("thrown", "heard"),
    [(ConnectionError("mine"), ("give_up", "committed")), (KeyError("mine"), ("error", None))],
)
def test_without_resume_what_the_source_lets_out_of_a_throw_ends_the_call(taken, thrown, heard):
    """Without resume= throw() goes straight to the source, and what it lets out ends the
    call as its own failure would: a committed give-up if on= matches it, an error if not;
    nothing is retried."""
    events = []
    source = Source()
    stream = retry([0.0], on=ConnectionError, observe=events.append)(source.items)()
    assert [next(stream) for _ in range(taken)] == list(range(taken))
    with no_sleep() as slept, pytest.raises(type(thrown), match="mine"):
        stream.throw(thrown)
    assert [(event.kind, event.reason) for event in events] == [heard]
    assert source.closed == 1 and source.calls == 1 and slept == []


@pytest.mark.parametrize("sends", [0, 1, 2])  # ends answering its first item's send, or later
def test_send_reaches_a_stream_without_resume_and_its_return_value_comes_through(sends):
    """Values sent at the first item and past it reach the source; the value it returns
    answering a send() is the decorated generator's, a success."""
    events = []

    def echo():
        received = []
        while True:
            got = yield len(received)
            if got == "stop":
                return received
            received.append(got)

    stream = retry([0.0], observe=events.append)(echo)()
    assert next(stream) == 0
    sent = [f"value {number}" for number in range(sends)]
    assert [stream.send(value) for value in sent] == list(range(1, sends + 1))
    if sends:
        assert next(stream) == sends + 1 and stream.send("late") == sends + 2
        sent += [None, "late"]
    with pytest.raises(StopIteration) as ended:
        stream.send("stop")
    assert ended.value.value == sent and [event.kind for event in events] == ["success"]


def test_a_throw_the_source_answers_by_returning_ends_the_stream_with_its_value():
    """The source catches the consumer's exception and returns: the stream ends, a success."""
    events = []

    def stoppable():
        try:
            yield 1
        except ValueError:
            return "stopped"

    stream = retry([0.0], observe=events.append)(stoppable)()
    assert next(stream) == 1
    with pytest.raises(StopIteration) as ended:
        stream.throw(ValueError())
    assert ended.value.value == "stopped" and [event.kind for event in events] == ["success"]


class Closable:
    """A resumed source that is an iterator object (not a generator): it records its close()."""

    def __init__(self, items):
        self.items, self.closed = iter(items), False

    def __iter__(self):
        return self

    def __next__(self):
        return next(self.items)

    def close(self):
        self.closed = True


class AsyncClosable(Closable):
    def __aiter__(self):
        return self

    async def __anext__(self):
        try:
            return next(self.items)
        except StopIteration:
            raise StopAsyncIteration from None

    async def aclose(self):
        self.closed = True


def test_closing_a_resumed_stream_closes_the_resumed_source_at_once():
    """The source resume= made is closed by close(), not left to the garbage collector."""
    source, resumed = Source(after=4, cut=[1]), Closable(range(5, 10))
    stream = retry([0.0], resume=lambda state: resumed)(source.items)()
    with no_sleep():
        assert [next(stream) for _ in range(6)] == [0, 1, 2, 3, 4, 5]
    stream.close()
    assert resumed.closed


def test_aclosing_a_resumed_async_stream_closes_the_resumed_source_at_once():
    """aclose() closes what resume= made, at once."""
    source, resumed = Source(after=4, cut=[1]), AsyncClosable(range(5, 10))

    async def main():
        stream = retry([0.0], resume=lambda state: resumed)(source.aitems)()
        got = [await stream.__anext__() for _ in range(6)]
        await stream.aclose()
        return got

    with no_sleep():
        assert asyncio.run(main()) == [0, 1, 2, 3, 4, 5]
    assert resumed.closed


@pytest.mark.parametrize("form", ["sync", "async"])
def test_an_empty_stream_is_a_success(form):
    """A stream that ends before any item succeeds: its hooks hear so, its parts too."""
    events = []

    def empty():
        return
        yield

    async def aempty():
        return
        yield

    if form == "sync":
        assert list(retry([0.0], observe=events.append)(empty)()) == []
    else:

        async def main():
            return [item async for item in retry([0.0], observe=events.append)(aempty)()]

        assert asyncio.run(main()) == []
    assert [event.kind for event in events] == ["success"]


def test_send_and_throw_reach_the_source_and_a_thrown_error_is_never_retried():
    """send() values reach the source; an exception thrown in comes back unretried."""
    received = []

    def echo():
        while True:
            received.append((yield len(received)))

    stream = retry([0.0, 0.0], on=Exception, resume=lambda state: echo())(echo)()
    assert next(stream) == 0
    assert stream.send("a") == 1 and stream.send("b") == 2
    with no_sleep() as slept, pytest.raises(KeyError):
        stream.throw(KeyError("the consumer's"))
    assert received == ["a", "b"] and slept == []


@pytest.mark.parametrize("form", ["sync", "async"])
def test_a_source_failing_on_its_own_as_it_answers_a_throw_is_resumed(form):
    """The consumer throws KeyError in to skip an item; the source, fetching what follows,
    fails on its own (ConnectionError): that failure is the source's, not what the consumer
    threw in, so with resume= it is resumed from where the consumer is (the hooks hear a
    retry; the schedule starts over, as after any progress).  It was taken for the
    consumer's: never resumed, the hooks told nothing."""
    events, heard, calls = [], [], []

    def skipping(start=0):
        calls.append(start)
        if len(calls) == 1:
            raise ConnectionError("refused")  # before the first item
        for number in range(start, 5):
            try:
                yield number
            except KeyError:
                if len(calls) == 2:  # only the first source to deliver is cut
                    raise ConnectionError("cut while skipping") from None

    async def askipping(start=0):
        for number in skipping(start):  # the same items, from an async generator
            try:
                yield number
            except KeyError:
                if len(calls) == 2:
                    raise ConnectionError("cut while skipping") from None

    source = skipping if form == "sync" else askipping

    def resume(state):
        heard.append((state.count, state.last))
        return source(state.count)

    stream = retry([0.25, 0.5], on=ConnectionError, observe=events.append, resume=resume)(source)()
    with no_sleep() as slept:
        if form == "sync":
            received = [next(stream), next(stream), stream.throw(KeyError("skip")), *stream]
        else:

            async def consume():
                got = [await stream.__anext__(), await stream.__anext__()]
                got.append(await stream.athrow(KeyError("skip")))
                return got + [item async for item in stream]

            received = asyncio.run(consume())
    assert received == [0, 1, 2, 3, 4] and heard == [(2, 1)] and slept == [0.25, 0.25]
    assert [(e.kind, e.number) for e in events] == [("retry", 1), ("retry", 2), ("success", 3)]
    assert calls == [0, 0, 2]


@pytest.mark.parametrize("form", ["sync", "async"])
@pytest.mark.parametrize("translated", [False, True])
def test_what_the_consumer_threw_in_stays_its_own_when_the_source_lets_it_out(form, translated):
    """With resume=, the consumer's exception let out by the source - as itself, or as the
    RuntimeError Python makes of a StopIteration (PEP 479) - is never resumed, even under
    on=Exception: the call ends as a closed stream's does."""
    events, calls = [], []

    def items(start=0):
        calls.append(start)
        # Not `yield from range(...)`: 3.12+ takes a StopIteration thrown in there for
        # the range's end, and makes no RuntimeError of it (PEP 479).
        for number in range(start, 5):  # noqa: UP028
            yield number

    async def aitems(start=0):
        calls.append(start)
        for number in range(start, 5):
            yield number

    source = items if form == "sync" else aitems
    thrown = (StopIteration if form == "sync" else StopAsyncIteration)() if translated else None
    thrown = thrown or KeyError("mine")
    stream = retry(
        [0.0], on=Exception, observe=events.append, resume=lambda state: source(state.count)
    )(source)()
    expected = RuntimeError if translated else KeyError
    with no_sleep() as slept, pytest.raises(expected) as raised:
        if form == "sync":
            next(stream), next(stream), stream.throw(thrown)
        else:

            async def consume():
                await stream.__anext__(), await stream.__anext__()
                await stream.athrow(thrown)

            asyncio.run(consume())
    assert (raised.value.__cause__ if translated else raised.value) is thrown
    assert calls == [0] and slept == [] and [event.kind for event in events] == ["closed"]


def test_a_source_that_handles_a_thrown_error_goes_on():
    """The source catches what the consumer threw in and yields on: the stream goes on."""

    def tolerant():
        for number in range(5):
            try:
                yield number
            except ValueError:
                yield "handled"

    stream = retry([0.0])(tolerant)()
    assert [next(stream), stream.throw(ValueError()), next(stream)] == [0, "handled", 1]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_item_answering_a_throw_counts_for_resume(mode):
    """0, 1, then the consumer throws and the source answers "handled", then 2, then the
    source fails: resume= hears of 4 items delivered, the last 2."""
    heard = []

    def tolerant():
        yield 0
        try:
            yield 1
        except ValueError:
            yield "handled"
        yield 2
        raise ConnectionError("cut")

    async def atolerant():
        for item in tolerant():  # the same items and failure, from an async generator
            try:
                yield item
            except ValueError:
                yield "handled"

    def resume(state):
        heard.append((state.count, state.last))
        return iter(["rest"]) if mode == "sync" else _aiter(["rest"])

    source = tolerant if mode == "sync" else atolerant
    stream = retry([0.0], on=ConnectionError, resume=resume)(source)()
    with no_sleep():
        if mode == "sync":
            received = [next(stream), next(stream), stream.throw(ValueError()), *stream]
        else:

            async def consume():
                got = [await stream.__anext__(), await stream.__anext__()]
                got.append(await stream.athrow(ValueError()))
                return got + [item async for item in stream]

            received = asyncio.run(consume())
    assert received == [0, 1, "handled", 2, "rest"]
    assert heard == [(4, 2)]


async def _aiter(items):
    for item in items:
        yield item


def test_a_generator_function_first_and_alone_is_decorated_and_a_schedule_goes_as_delays():
    """@retry(gen) decorates gen; @retry(delays=schedule) takes a generator-function schedule."""

    def schedule():
        yield 0.25
        yield 0.5

    source = Source(before=[1, 2])

    @retry(delays=schedule)
    def flaky():
        yield from source.items()

    with no_sleep() as slept:
        assert list(flaky()) == list(range(10))
    assert slept == [0.25, 0.5]
    assert inspect.isgeneratorfunction(retry(schedule)) and list(retry(schedule)()) == [0.25, 0.5]


def test_an_object_whose_call_is_a_generator_is_retried_as_a_stream():
    """An instance whose __call__ is a generator (sync or async) is a stream, as an object
    with an async __call__ is a coroutine function: a failure before its first item is
    retried, and resume= applies (it was called once, told a success before any item)."""
    source = Source(before=[1], after=4, cut=[2])

    class Feed:
        def __call__(self):
            yield from source.items()

    class AsyncFeed:
        async def __call__(self):
            async for item in source.aitems():
                yield item

    resume = resume_from_count(source)
    with no_sleep() as slept:
        assert list(retry([0.0] * 2, resume=resume)(Feed())()) == list(range(10))
    assert source.starts == [0, 0, 5] and slept == [0.0, 0.0]
    source.calls, source.starts = 0, []  # a partial of such an object too
    with no_sleep():
        decorated = retry([0.0] * 2, resume=resume)(functools.partial(Feed()))
        assert list(decorated()) == list(range(10))
    assert source.starts == [0, 0, 5]
    decorated = retry([0.0] * 2, resume=resume_from_count(source, "aitems"))(AsyncFeed())
    source.calls, source.starts = 0, []

    async def main():
        return [item async for item in decorated()]

    with no_sleep():
        assert asyncio.run(main()) == list(range(10))
    assert source.starts == [0, 0, 5]


@pytest.mark.parametrize("resume", [False, True])
def test_a_stream_closed_after_items_gives_a_half_open_breakers_probe_back(resume):
    """The probe of a half-open breaker is a stream the consumer closes after two items: the
    breaker hears the attempt end as one the dependency answered (its items flowed) and
    closes, a budget pays nothing, the hooks hear it closed; before, the breaker stayed half
    open, refusing every other call for the whole break."""
    now = [0.0]
    breaker = CircuitBreaker(minimum_throughput=1, break_duration=5.0, clock=lambda: now[0])
    breaker.record(False)
    now[0] = 6.0  # the break is over: the next call is the probe
    bucket, events, source = TokenBucket(), [], Source()
    options = {"resume": resume_from_count(source)} if resume else {}
    stream = retry([0.0], breaker=breaker, budget=bucket, observe=events.append, **options)
    probe = stream(source.items)()
    assert [next(probe), next(probe)] == [0, 1] and breaker.state == "half_open"
    tokens = bucket.tokens
    probe.close()
    assert breaker.state == "closed" and bucket.tokens == tokens
    assert source.closed == 1 and [event.kind for event in events] == ["closed"]


@pytest.mark.parametrize("resume", [False, True])
@pytest.mark.parametrize("form", ["sync", "async"])
def test_a_part_failing_as_a_stream_is_closed_comes_after_the_source_is_closed(form, resume):
    """A part whose after_attempt raises (a fleet breaker's store unreachable, say) as the
    consumer closes the stream: its error comes out of close(), but only once the source
    is closed (its finally run): the part is told after, never in place of the close.  The
    hooks hear the call end with the part's error, not closed."""
    from backoff_iter.parts import Part

    source, closed_when_told, events = Source(), [], []

    class Failing(Part):
        def after_attempt(self, outcome, kind, number, spent):
            closed_when_told.append(source.closed)
            raise ConnectionError("the part's store is unreachable")

    options = {"resume": resume_from_count(source, "aitems" if form == "async" else "items")}
    decorated = retry(
        [0.0], parts=[Failing()], observe=events.append, **(options if resume else {})
    )
    if form == "sync":
        stream = decorated(source.items)()
        assert next(stream) == 0
        with pytest.raises(ConnectionError, match="unreachable"):
            stream.close()
    else:
        stream = decorated(source.aitems)()

        async def main():
            assert await stream.__anext__() == 0
            with pytest.raises(ConnectionError, match="unreachable"):
                await stream.aclose()

        asyncio.run(main())
    assert source.closed == 1 and closed_when_told == [1]  # closed before the part was told
    assert [(event.kind, str(event.outcome)) for event in events] == [
        ("error", "the part's store is unreachable")
    ]


def test_send_and_throw_into_a_stream_resumed_from_a_plain_iterator_are_the_consumers():
    """A stream resumed from a list's iterator (no send, no throw): a value sent is refused
    with TypeError, never dropped (the next item came as if nothing was sent); what is thrown
    in comes back as itself, and a StopIteration thrown is never taken for the stream's end
    (the hooks heard a success); each ends the stream as the consumer's close does,
    retrying nothing."""

    def cut():
        yield 0
        raise ConnectionError("cut")

    def make(events):
        return retry([0.0], resume=lambda state: [1, 2, 3], observe=events.append)(cut)

    for into, raised in (
        (lambda stream: stream.send("hello"), TypeError),
        (lambda stream: stream.throw(ValueError("the consumer's")), ValueError),
        (lambda stream: stream.throw(StopIteration("the consumer's")), RuntimeError),
    ):
        events = []
        stream = make(events)()
        with no_sleep():
            assert [next(stream), next(stream)] == [0, 1]  # resumed after the cut
            with pytest.raises(raised):
                into(stream)
        assert [event.kind for event in events] == ["retry", "closed"]  # no success, no retry
        with pytest.raises(StopIteration):
            next(stream)  # the stream is over


def test_asend_and_athrow_into_an_async_stream_resumed_from_a_plain_async_iterator():
    """The async twin: a resumed source with no asend and no athrow (a plain async
    iterator): a value sent is refused with TypeError, what is thrown in comes back."""

    class Items:
        def __init__(self, items):
            self.items = iter(items)

        def __aiter__(self):
            return self

        async def __anext__(self):
            for item in self.items:
                return item
            raise StopAsyncIteration

    async def cut():
        yield 0
        raise ConnectionError("cut")

    async def main(into, raised):
        events = []
        stream = retry([0.0], resume=lambda state: Items([1, 2]), observe=events.append)(cut)()
        with no_sleep():
            assert [await stream.__anext__(), await stream.__anext__()] == [0, 1]
            with pytest.raises(raised):
                await into(stream)
        assert [event.kind for event in events] == ["retry", "closed"]

    asyncio.run(main(lambda stream: stream.asend("hello"), TypeError))
    asyncio.run(main(lambda stream: stream.athrow(ValueError("the consumer's")), ValueError))


class AwaitableWithoutClose:
    """An awaitable that is no coroutine: it has no close() to call."""

    def __await__(self):
        yield from ()


@pytest.mark.parametrize("returned", [42, None, "coroutine", list, AwaitableWithoutClose()])
def test_a_resume_returning_what_is_not_items_ends_the_stream_at_once_naming_resume(returned):
    """resume returning a number, None, a coroutine (an async def), a class (list: iter()
    asks the type, and a class is no iterable) or an awaitable without close() is the user's
    bug: an ArgumentTypeError naming resume, never retried, even under on=Exception (it was
    retried as a TypeError, resume called again each time); the hooks hear an error; no
    coroutine is left un-awaited to warn (and what has no close() is not asked to)."""
    from backoff_iter._checks import ArgumentTypeError

    source = Source(after=1, cut=[1])

    async def coroutine(state):
        return []

    made = []

    def resume(state):
        resume.calls += 1
        if returned == "coroutine":
            made.append(coroutine(state))
            return made[-1]
        return returned

    resume.calls = 0
    events, got = [], []
    stream = retry(
        [0.0] * 3, on=Exception, resume=resume, observe=events.append, sleep=lambda s: None
    )(source.items)
    with pytest.raises(ArgumentTypeError, match="resume must return an iterable") as raised:
        for item in stream():
            got.append(item)
    assert raised.value.parameter == "resume" and got == [0, 1] and resume.calls == 1
    assert [event.kind for event in events] == ["retry", "error"]
    assert all(inspect.getcoroutinestate(made) == "CORO_CLOSED" for made in made)


def test_a_resume_returning_what_iter_reads_by_index_goes_on_from_it():
    """resume may return an object with __getitem__ alone (the old sequence protocol, which
    iter() and a for loop read): the stream goes on from it, not refused as no iterable."""

    class FromIndex:
        def __init__(self, start):
            self.start = start

        def __getitem__(self, index):
            if self.start + index >= 10:
                raise IndexError(index)
            return self.start + index

    source = Source(after=4, cut=[1])
    stream = retry([0.0], resume=lambda state: FromIndex(state.count))(source.items)
    with no_sleep():
        assert list(stream()) == list(range(10))
    assert source.calls == 1


@pytest.mark.parametrize("returned", [[3, 4], 42])
def test_an_async_resume_returning_what_is_not_async_items_ends_the_stream_naming_resume(returned):
    """An async stream's resume returning a list or a number: ArgumentTypeError naming resume,
    raised at once, not retried under on=Exception."""
    from backoff_iter._checks import ArgumentTypeError

    source = Source(after=1, cut=[1])
    calls = []

    def resume(state):
        calls.append(state.count)
        return returned

    stream = retry([0.0] * 3, on=Exception, resume=resume, sleep=lambda s: None)(source.aitems)
    got = []

    async def main():
        async for item in stream():
            got.append(item)

    with pytest.raises(ArgumentTypeError, match="resume must return an async iterable"):
        asyncio.run(main())
    assert got == [0, 1] and calls == [2]


@pytest.mark.parametrize("form", ["sync", "async"])
def test_a_resume_raising_stop_iteration_is_an_error_never_the_end_of_the_stream(form):
    """resume raising StopIteration (a next() on an exhausted iterator of its own, say) is its
    bug, a RuntimeError as in a generator (PEP 479): the sync stream took it for its end, the
    consumer got 0, 1 and the hooks a success, items 2..9 dropped without a word."""
    source = Source(after=1, cut=[1])
    mirrors = iter([])

    def resume(state):
        next(mirrors)  # none left: StopIteration
        return source.items(state.count) if form == "sync" else source.aitems(state.count)

    events, got = [], []
    decorated = retry([0.0], resume=resume, observe=events.append, sleep=lambda s: None)
    if form == "sync":
        with pytest.raises(RuntimeError, match="resume raised StopIteration"):
            for item in decorated(source.items)():
                got.append(item)
    else:

        async def main():
            async for item in decorated(source.aitems)():
                got.append(item)

        with pytest.raises(RuntimeError, match="resume raised StopIteration"):
            asyncio.run(main())
    assert got == [0, 1] and [event.kind for event in events] == ["retry", "error"]


def test_the_return_value_of_a_stream_comes_through():
    """A generator's return value is the decorated generator's."""

    def counted():
        yield 1
        return "done"

    stream = retry([0.0])(counted)()
    assert next(stream) == 1
    with pytest.raises(StopIteration) as ended:
        next(stream)
    assert ended.value.value == "done"


def test_the_stream_state_reads_well():
    """StreamState's repr shows the progress."""
    state = StreamState((1,), {})
    state.count, state.last = 3, "c"
    assert repr(state) == "<StreamState count=3 last='c'>"


# -- async streams, under asyncio and trio -------------------------------------------------------


def run_async(library, main):
    if library == "trio":
        return trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    return asyncio.run(main())


@pytest.mark.parametrize("library", ["asyncio", "trio"])
def test_an_async_stream_is_retried_before_its_first_item_and_resumed_after(library):
    """Two refusals, then a cut after item 4 resumed from the count: 0..9 once each."""
    source = Source(before=[1, 2], after=4, cut=[3])
    stream = retry([0.0] * 3, resume=resume_from_count(source, "aitems"))(source.aitems)

    async def main():
        return [item async for item in stream()]

    assert run_async(library, main) == list(range(10))
    assert source.starts == [0, 0, 0, 5]


@pytest.mark.parametrize("library", ["asyncio", "trio"])
def test_an_async_stream_failing_after_items_propagates_without_resume(library):
    """Cut after item 4, no resume=: 0..4, then the failure itself."""
    source = Source(after=4, cut=[1])
    got = []

    async def main():
        async for item in retry([0.0])(source.aitems)():
            got.append(item)

    with pytest.raises(ConnectionError):
        run_async(library, main)
    assert got == [0, 1, 2, 3, 4] and source.calls == 1


@pytest.mark.parametrize("taken", [1, 2])
def test_an_async_stream_closed_early_closes_its_source(taken):
    """aclose() mid-stream: the source's finally has run when it returns, and no retry."""
    source = Source()

    async def main():
        stream = retry([0.0])(source.aitems)()
        got = [await stream.__anext__() for _ in range(taken)]
        await stream.aclose()
        return got, source.closed  # not left to the loop's finalizer

    assert asyncio.run(main()) == (list(range(taken)), 1) and source.calls == 1


@pytest.mark.parametrize("taken", [1, 2])
def test_an_async_source_that_handles_a_thrown_error_goes_on_to_a_success(taken):
    """Without resume=, athrow() reaches the source, which answers and goes on; its end is a
    success.  After the first item or a later one (those pass through `async for`)."""
    events = []

    async def tolerant():
        for number in range(3):
            try:
                yield number
            except ValueError:
                yield "handled"

    async def main():
        stream = retry([0.0], observe=events.append)(tolerant)()
        got = [await stream.__anext__() for _ in range(taken)]
        return got + [await stream.athrow(ValueError())] + [item async for item in stream]

    assert asyncio.run(main()) == [*range(taken), "handled", *range(taken, 3)]
    assert [event.kind for event in events] == ["success"]


def test_asend_and_athrow_reach_an_async_source():
    """asend() values reach the source; athrow()'s exception is the consumer's, never retried."""
    received = []

    async def echo():
        while True:
            received.append((yield len(received)))

    async def main():
        stream = retry([0.0], on=Exception)(echo)()
        assert await stream.__anext__() == 0
        assert await stream.asend("a") == 1
        with pytest.raises(KeyError):
            await stream.athrow(KeyError("mine"))

    asyncio.run(main())
    assert received == ["a"]


@pytest.mark.parametrize("resume", [None, lambda state: AsyncClosable(range(state.count, 9))])
def test_what_an_async_source_lets_out_of_athrow_is_heard_only_without_resume(resume):
    """As in the sync form: without resume= what the consumer threw in and the source let out
    ends the call as a committed failure; with resume= it is the consumer's: the stream was
    closed.
    Neither retries, and asend() and __anext__() go on reaching the source past its first item."""
    events, received = [], []

    async def echo():
        while True:
            received.append((yield len(received)))

    async def main():
        stream = retry([0.0], on=KeyError, observe=events.append, resume=resume)(echo)()
        assert [await stream.__anext__(), await stream.__anext__()] == [0, 1]
        assert await stream.asend("b") == 2
        with no_sleep() as slept, pytest.raises(KeyError):
            await stream.athrow(KeyError("mine"))
        return slept

    assert asyncio.run(main()) == [] and received == [None, "b"]
    told = [(event.kind, event.reason) for event in events]
    assert told == ([("give_up", "committed")] if resume is None else [("closed", None)])


def test_an_attempt_timeout_bounds_the_first_item_of_each_attempt_not_the_gaps():
    """attempt_timeout=1 under trio: a first item 60 s late is retried; 2 s gaps later are fine."""
    calls = []

    async def slow_start():
        calls.append(trio.current_time())
        if len(calls) == 1:
            await trio.sleep(60)
        for number in range(3):
            yield number
            await trio.sleep(2)

    stream = retry([0.5], attempt_timeout=1.0)(slow_start)

    async def main():
        return [item async for item in stream()]

    assert run_async("trio", main) == [0, 1, 2]
    assert calls == [0.0, 1.5]


def test_timeout_arg_hands_each_attempt_of_a_stream_its_timeout():
    """A sync and an async generator function given timeout_arg= get each attempt's
    timeout (attempt_timeout=[2.0, 4.0]) as that keyword, the retried attempt too."""
    got = []

    def items(*, timeout):
        got.append(timeout)
        if len(got) % 2:
            raise ConnectionError("refused")
        yield from range(2)

    async def aitems(*, timeout):
        for item in items(timeout=timeout):
            yield item

    options = {"attempt_timeout": [2.0, 4.0], "timeout_arg": "timeout", "sleep": lambda s: None}
    assert list(retry([0.0], **options)(items)()) == [0, 1]

    async def main():
        return [item async for item in retry([0.0], **options)(aitems)()]

    assert asyncio.run(main()) == [0, 1]
    assert got == [2.0, 4.0, 2.0, 4.0]


def test_an_attempt_timeout_cuts_the_first_item_of_an_async_stream_under_asyncio_too():
    """attempt_timeout=0.05 under asyncio: a first item that hangs is cut with TimeoutError
    (asyncio.timeout tells its own expiry by the type of what it is handed), before_sleep
    sees it, and the stream is called again."""
    calls, seen = [], []

    async def slow_start():
        calls.append(len(calls) + 1)
        if len(calls) == 1:
            await asyncio.sleep(10)
        for number in range(3):
            yield number

    def hook(attempt, outcome, delay):
        seen.append(type(outcome))

    stream = retry([0.0], attempt_timeout=0.05, before_sleep=hook, sleep=lambda s: None)(slow_start)

    async def main():
        return [item async for item in stream()]

    assert asyncio.run(main()) == [0, 1, 2]
    assert calls == [1, 2] and seen == [TimeoutError]


# -- a real download, cut twice, resumed with Range ----------------------------------------------


def test_an_httpx_download_cut_twice_is_resumed_with_range_byte_for_byte():
    """A 100 kB body cut twice mid-way: the Range requests resume it, every byte exactly once."""
    body = bytes(range(256)) * 400
    with cutting_server(body=body, cuts=2) as server, httpx.Client() as client:

        def chunks(url, start=0):
            headers = {"Range": f"bytes={start}-"} if start else {}
            with client.stream("GET", url, headers=headers) as response:
                response.raise_for_status()
                for chunk in response.iter_bytes():
                    yield start, chunk
                    start += len(chunk)

        def after(state):
            offset, chunk = state.last
            return chunks(*state.args, start=offset + len(chunk))

        download = retry([0.0, 0.0], resume=after)(chunks)
        with no_sleep():
            got = b"".join(chunk for _, chunk in download(f"{server.url}/file"))
    assert got == body
    assert server.requests[0] is None and all(r.startswith("bytes=") for r in server.requests[1:])
    assert len(server.requests) == 3


def test_an_async_line_reader_is_resumed_by_its_line_count():
    """Lines from a server that drops the connection twice: resumed by count, each line once."""
    lines = [f"line {number}" for number in range(200)]

    async def main(url):
        async with httpx.AsyncClient() as client:

            async def read(url, skip=0):
                async with client.stream("GET", url) as response:
                    number = 0
                    async for line in response.aiter_lines():
                        if number >= skip:
                            yield line
                        number += 1

            reader = retry([0.0, 0.0], resume=lambda state: read(*state.args, skip=state.count))(
                read
            )
            return [line async for line in reader(url)]

    with cutting_server(lines=lines, cuts=2, cut_after=1000) as server, no_sleep():
        assert asyncio.run(main(f"{server.url}/lines")) == lines
    assert len(server.requests) == 3


# -- what mutmut's pass over the core found no test pinning (review-mutcore) --------


class _Hears:
    """A part recording each attempt it hears of: (outcome, kind, number)."""

    def __init__(self):
        from backoff_iter.parts import Part

        heard = self.heard = []

        class Hears(Part):
            def after_attempt(self, outcome, kind, number, spent):
                heard.append((outcome, kind, number))

        self.part = Hears()


def _cut_after_one(cut):
    def items():
        yield 0
        raise cut

    return items


def test_a_committed_throttle_is_told_as_one_and_give_up_is_handed_its_attempt():
    """A stream cut after an item, the cut a throttle: the parts hear it as a throttle of
    attempt 1, and give_up is handed that attempt and the failure."""
    cut, hears, given_up = ConnectionError("cut"), _Hears(), []
    decorated = retry([0.0], on=ConnectionError, throttled=lambda outcome: outcome is cut,
                      parts=[hears.part], give_up=lambda a, o: given_up.append((a.number, o)))  # fmt: skip
    with no_sleep(), pytest.raises(ConnectionError) as raised:
        list(decorated(_cut_after_one(cut))())
    assert raised.value is cut
    assert hears.heard == [(cut, "throttle", 1)] and given_up == [(1, cut)]


def test_a_committed_failure_no_policy_retries_is_told_as_an_error_of_its_attempt():
    """A stream cut after an item by a failure on= does not match: the parts hear that
    failure as an error of attempt 1."""
    cut, hears = ConnectionError("cut"), _Hears()
    decorated = retry([0.0], on=KeyError, parts=[hears.part])
    with no_sleep(), pytest.raises(ConnectionError):
        list(decorated(_cut_after_one(cut))())
    assert hears.heard == [(cut, "error", 1)]


def test_a_stream_closed_after_items_is_told_as_an_answered_attempt_of_its_number():
    """close() after items of the second attempt: the parts hear attempt 2 end as an
    error with no outcome (the dependency answered), after attempt 1's failure."""
    source, hears = Source(before=[1]), _Hears()
    stream = retry([0.0], on=ConnectionError, parts=[hears.part])(source.items)()
    with no_sleep():
        assert next(stream) == 0
    stream.close()
    assert [(kind, number) for outcome, kind, number in hears.heard] == [
        ("failure", 1),
        ("error", 2),
    ]
    assert hears.heard[-1][0] is None


def test_a_committed_failure_throttled_breaks_on_is_told_once_as_a_plain_failure():
    """throttled= raising on a stream's committed failure: the parts hear that failure
    once, as a plain failure of attempt 1; the call ends with the predicate's error."""
    cut, hears = ConnectionError("cut"), _Hears()

    def throttled(outcome):
        raise LookupError("the predicate's bug")

    decorated = retry([0.0], on=ConnectionError, throttled=throttled, parts=[hears.part])
    with no_sleep(), pytest.raises(LookupError):
        list(decorated(_cut_after_one(cut))())
    assert hears.heard == [(cut, "failure", 1)]


def test_a_part_failing_as_it_hears_a_committed_failure_hears_it_once():
    """A part that raises as it hears a stream's committed failure is told once: its
    error ends the call."""
    from backoff_iter.parts import Part

    cut, heard = ConnectionError("cut"), []

    class Breaks(Part):
        def after_attempt(self, outcome, kind, number, spent):
            heard.append((outcome, kind, number))
            raise LookupError("the part's bug")

    decorated = retry([0.0], on=ConnectionError, parts=[Breaks()])
    with no_sleep(), pytest.raises(LookupError):
        list(decorated(_cut_after_one(cut))())
    assert heard == [(cut, "failure", 1)]


def test_a_chain_of_contexts_that_goes_round_is_searched_only_so_far():
    """Contexts set by hand may form a ring: searching it for a GeneratorExit ends (no
    close found), and one past the first 32 contexts is not looked for."""
    from backoff_iter import _streams

    first, second = ConnectionError("first"), OSError("second")
    first.__context__, second.__context__ = second, first
    assert not _streams._raised_closing(first)
    chain = [OSError(number) for number in range(33)]  # (32 contexts after the first)
    for later, earlier in zip(chain, chain[1:]):
        later.__context__ = earlier
    chain[-1].__context__ = GeneratorExit()
    assert not _streams._raised_closing(chain[0])
    assert _streams._raised_closing(chain[1])
