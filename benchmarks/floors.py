"""The least a path of ``costs.py`` can cost in Python, timed beside it.

Each floor is a contender that does only the work no retry code written in
Python can skip on that path, and nothing else: a ``for attempt in ...:
with attempt:`` loop of two small objects that decides nothing; a wrapper
that reads the clock twice, makes the event and calls the hook; the calls
of prometheus-client's counters and histogram, or of the OpenTelemetry
SDK's span and instruments, that a hook makes for its events.  They run in
the same rounds as ours (``costs.py``), so a target set below its floor is
seen to be out of reach of Python code, by how much, in the same run.

    >>> from drivers import Flaky
    >>> run = loop(Flaky(2))
    >>> run(), run()
    (1, 1)
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any

from drivers import RETRIES

from backoff_iter.instrument import RetryEvent

_tuple_new = tuple.__new__


class _Attempt:
    """One attempt of :class:`_Loop`: its exit ends the loop or lets it go on."""

    __slots__ = ("loop",)

    def __init__(self, loop: _Loop) -> None:
        self.loop = loop

    def __enter__(self) -> _Attempt:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        loop = self.loop
        if error is None:
            loop.left = -1  # done: the loop stops
            return False
        if isinstance(error, OSError) and loop.left > 0:
            loop.left -= 1  # retried: swallowed, the next attempt follows
            return True
        return False

    async def __aenter__(self) -> _Attempt:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        return self.__exit__(kind, error, traceback)


class _Loop:
    """A retry loop that decides nothing: up to RETRIES retries of OSError, no sleep."""

    __slots__ = ("left",)

    def __init__(self) -> None:
        self.left = RETRIES

    def __iter__(self) -> _Loop:
        return self

    def __next__(self) -> _Attempt:
        if self.left < 0:
            raise StopIteration
        return _Attempt(self)

    def __aiter__(self) -> _Loop:
        return self

    async def __anext__(self) -> _Attempt:
        if self.left < 0:
            raise StopAsyncIteration
        return _Attempt(self)


class _Policy:
    """What a module-level policy is to its loops: a fresh loop for each ``for``."""

    def __iter__(self) -> _Loop:
        return _Loop()

    def __aiter__(self) -> _Loop:
        return _Loop()


def loop(operation: Callable[[], object]) -> Callable[[], object]:
    """*operation* in the least a ``for``/``with`` retry loop costs."""
    policy = _Policy()

    def call() -> object:
        for attempt in policy:
            with attempt:
                return operation()
        raise AssertionError

    return call


def aloop(operation: Callable[[], Awaitable[object]]) -> Callable[[], Awaitable[object]]:
    """*operation* in the least an ``async for``/``async with`` retry loop costs."""
    policy = _Policy()

    async def call() -> object:
        async for attempt in policy:
            async with attempt:
                return await operation()
        raise AssertionError

    return call


def told(
    operation: Callable[[], object], hook: Callable[[RetryEvent], object] | None
) -> Callable[[], object]:
    """*operation* retried up to RETRIES times on OSError, each retry and the
    success told to *hook* as an event with its elapsed time - or, for None,
    the same loop telling nobody and reading no clock (the reference)."""
    clock, new_id = time.monotonic, itertools.count(1).__next__

    def call() -> object:
        start = clock() if hook is not None else 0.0
        number = 0
        while True:
            number += 1
            try:
                result = operation()
            except OSError as error:
                if number > RETRIES:
                    raise
                if hook is not None:
                    hook(
                        _tuple_new(
                            RetryEvent,
                            ("retry", "f", number, error, 0.0, 0.0, clock() - start, None, 1),
                        )
                    )
                continue
            if hook is not None:
                event = ("success", "f", number, result, None, 0.0, clock() - start, None, new_id())
                hook(_tuple_new(RetryEvent, event))
            return result

    return call


def no_op(event: RetryEvent) -> None:
    """A hook that does nothing."""


def prometheus_work() -> Callable[[RetryEvent], None]:
    """A hook that does only prometheus-client's work for each event: an
    attempt counted; for a retry, the retry counted and its delay observed."""
    from prometheus_client import CollectorRegistry, Counter, Histogram

    from backoff_iter.instrument import SLEEP_BUCKETS

    registry = CollectorRegistry()
    attempts = Counter("floor_attempts", "", ["name"], registry=registry).labels("f").inc
    retries = Counter("floor_retries", "", ["name", "error"], registry=registry)
    retried = retries.labels("f", "OSError").inc
    sleep = Histogram("floor_sleep", "", ["name"], registry=registry, buckets=SLEEP_BUCKETS)
    observe = sleep.labels("f").observe

    def hook(event: RetryEvent) -> None:
        attempts()
        if event.kind == "retry":
            retried()
            observe(event.delay)  # type: ignore[arg-type]

    return hook


def opentelemetry_work(meters: Any, tracers: Any) -> Callable[[RetryEvent], None]:
    """A hook that does only the OpenTelemetry SDK's work for each event: an
    attempt counted; for a retry, the retry counted, its delay recorded and
    an event added to the call's span, begun at its first retry; at the end
    the span (begun then if not before) told the attempts and ended."""
    meter = meters.get_meter("floor")
    attempts = meter.create_counter("floor.attempts")
    retries = meter.create_counter("floor.retries")
    sleep = meter.create_histogram("floor.sleep")
    tracer = tracers.get_tracer("floor")
    by_name, by_error = {"name": "f"}, {"name": "f", "error_type": "OSError"}
    spans: list[Any] = []

    def hook(event: RetryEvent) -> None:
        attempts.add(1, by_name)
        if not spans:
            spans.append(tracer.start_span("f", start_time=time.time_ns()))
        span = spans[-1]
        if event.kind == "retry":
            retries.add(1, by_error)
            sleep.record(event.delay, by_name)
            said = {"retry.attempt": event.number, "retry.delay": event.delay}
            said["exception.type"] = "OSError"
            span.add_event("retry", said)
            return
        spans.clear()
        span.set_attribute("retry.attempts", event.number)
        span.end()

    return hook
