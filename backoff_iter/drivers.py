"""Retry drivers over any iterable of delays: ``retrying``, ``aretrying``, ``@retry``.

One core (:class:`_Driver`) makes every decision - which failures to retry,
how long to sleep, the deadline, the server's hint, when to give up - and
the sync and async drivers only differ in how they sleep.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import time
from types import TracebackType
from typing import (
    Any,
    AsyncIterator,
    Callable,
    Dict,
    Iterable,
    Iterator,
    List,
    Optional,
    Tuple,
    Type,
    TypeVar,
    Union,
    cast,
)

from . import _checks

__all__ = ["Attempt", "retrying", "aretrying", "retry"]

ExceptionFilter = Union[
    Type[BaseException],
    Tuple[Type[BaseException], ...],
    Callable[[BaseException], object],
]
BeforeSleep = Callable[["Attempt", BaseException, float], object]
F = TypeVar("F", bound=Callable[..., Any])
D = TypeVar("D", bound="_Driver")


# Filters already checked, by the `on` they came from: classes and tuples of
# them are few in a program and hashable, so @retry and retrying() check each
# one once.
_FILTERS: Dict[object, Callable[[BaseException], object]] = {}


def _exception_filter(on: object) -> Callable[[BaseException], object]:
    """Turn *on* into a predicate; reject anything that is not a filter."""
    try:
        return _FILTERS[on]
    except (KeyError, TypeError):  # new, or unhashable
        pass
    if isinstance(on, type) and issubclass(on, BaseException):
        matches: Callable[[BaseException], object] = on.__instancecheck__
    elif isinstance(on, tuple) and all(
        isinstance(c, type) and issubclass(c, BaseException) for c in on
    ):
        matches = functools.partial(_isinstance_of, on)
    elif callable(on) and not isinstance(on, (type, tuple)):
        return cast(Callable[[BaseException], object], on)
    else:
        raise TypeError(
            "on must be an exception class, a tuple of them, or a predicate"
            f" callable(exc) -> bool, got {on!r}"
        )
    _FILTERS[on] = matches
    return matches


def _isinstance_of(classes: Tuple[type, ...], exc: BaseException) -> bool:
    return isinstance(exc, classes)


class Attempt:
    """One attempt of a retry loop; use it as a (sync or async) context manager.

    ``number`` counts from 1, ``delay`` is what was slept before it (0.0 for
    the first), ``elapsed`` is the time since the loop started when the
    attempt began, per the driver's ``clock``.  A failure that the driver
    retries is swallowed when the ``with`` block exits.
    """

    __slots__ = ("number", "delay", "elapsed", "_driver")

    def __init__(self, driver: _Driver, number: int, delay: float, elapsed: float):
        self.number = number
        self.delay = delay
        self.elapsed = elapsed
        self._driver = driver

    def retry_after(self, seconds: float) -> None:
        """Ask for the next sleep to last at least *seconds* (e.g. HTTP ``Retry-After``).

        The next delay from the schedule is raised to *seconds* if shorter.
        If that wait would end past the deadline, no further attempt is made.
        """
        self._driver.hint = _checks.seconds("seconds", seconds)

    def __enter__(self) -> Attempt:
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> bool:
        return exc is not None and self._driver.failed(exc)

    async def __aenter__(self) -> Attempt:
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> bool:
        return self.__exit__(exc_type, exc, traceback)

    def __repr__(self) -> str:
        return (
            f"<Attempt number={self.number} delay={self.delay!r}"
            f" elapsed={self.elapsed!r}>"
        )


class _Driver:
    """The decisions shared by the sync and async drivers.

    ``__next__``/``__anext__`` and the decorator's loops only do the
    bookkeeping of one step (sleep, make the next :class:`Attempt`);
    :meth:`failed` and :meth:`decide` make every decision, once for all.
    """

    # Per-call state starts from these class defaults, so making a driver
    # sets only what the caller chose.
    _attempt: Optional[Attempt] = None
    _failure: Optional[BaseException] = None
    _last = False
    _start = 0.0
    _deadline: Optional[float] = None
    hint: Optional[float] = None

    @staticmethod
    def _default_sleep() -> Callable[[float], Any]:
        """The sleep used when none is given, looked up at each call, so a
        test that patches time.sleep or asyncio.sleep is obeyed."""
        raise NotImplementedError

    def __init__(
        self,
        delays: Iterable[float],
        *,
        on: ExceptionFilter = Exception,
        sleep: Optional[Callable[[float], Any]] = None,
        deadline: Optional[float] = None,
        clock: Callable[[], float] = time.monotonic,
        before_sleep: Optional[BeforeSleep] = None,
    ) -> None:
        try:
            self._delays = iter(delays)
        except TypeError:
            _checks.iterable("delays", delays)
        self._matches = _exception_filter(on)
        if sleep is None:
            sleep = self._default_sleep()
        if not (callable(sleep) and callable(clock)):
            _checks.function("sleep", sleep)
            _checks.function("clock", clock)
        if before_sleep is not None:
            _checks.function("before_sleep", before_sleep)
        if deadline is not None:
            self._deadline = _checks.seconds("deadline", deadline, infinite=True)
        self._sleep = sleep
        self._clock = clock
        self._before_sleep = before_sleep

    def begin(self, start: float) -> Attempt:
        """The first attempt, starting the clock (and the deadline) at *start*."""
        self._start = start
        if self._deadline is not None:
            self._deadline += start
        self._attempt = Attempt(self, 1, 0.0, 0.0)
        return self._attempt

    def failed(self, exc: BaseException) -> bool:
        """Record a failure of the current attempt; True if it is to be retried.

        Only ``Exception`` subclasses are ever retried: KeyboardInterrupt,
        SystemExit, GeneratorExit and asyncio's CancelledError always pass.
        """
        if isinstance(exc, Exception) and self._matches(exc):
            self._failure = exc
            return True
        return False

    def decide(self) -> Optional[float]:
        """How long to sleep before the next attempt; None after a success.

        Re-raises the last failure, as itself, when there is nothing left to try.
        """
        failure = self._failure
        if failure is None:
            return None
        self._failure = None
        delay = None if self._last else next(self._delays, None)
        if delay is None:
            raise failure
        if delay.__class__ is not float or not delay >= 0.0:
            delay = _checks.delay_item(delay)  # an int, or a bad value
        hint = self.hint
        if hint is not None:
            self.hint = None
            if hint > delay:
                delay = hint
        if self._deadline is not None:
            remaining = self._deadline - self._clock()
            if remaining < 0 or (hint is not None and hint > remaining):
                raise failure  # no room left, or not for the wait the server asked
            if delay > remaining:  # shortened to end at the deadline: last try
                delay = remaining
                self._last = True
        if self._before_sleep is not None:
            self._before_sleep(cast(Attempt, self._attempt), failure, delay)
        return delay

    def next_attempt(self, delay: float) -> Attempt:
        """The attempt that follows a sleep of *delay*."""
        number = cast(Attempt, self._attempt).number + 1
        self._attempt = Attempt(self, number, delay, self._clock() - self._start)
        return self._attempt


class retrying(_Driver, Iterator[Attempt]):
    """Attempts to run in ``with`` blocks, retrying failures that match *on*.

    >>> from itertools import islice
    >>> from backoff_iter import exponential
    >>> calls, slept = [], []
    >>> def fetch():
    ...     calls.append(1)
    ...     if len(calls) < 3:
    ...         raise OSError("flaky")
    ...     return "data"
    >>> def get():
    ...     for attempt in retrying(islice(exponential(0.1), 4), on=OSError,
    ...                             sleep=slept.append):
    ...         with attempt:
    ...             return fetch()
    >>> get(), slept
    ('data', [0.1, 0.2])

    ``retrying(delays, *, on=Exception, sleep=time.sleep, deadline=None,
    clock=time.monotonic, before_sleep=None)``:

    - *on*: an exception class, a tuple of them, or a predicate
      ``callable(exc) -> bool``.  Other failures propagate at once.
      KeyboardInterrupt, SystemExit and GeneratorExit are never retried.
    - A matching failure is swallowed; the loop sleeps the next delay and
      yields the next attempt.  When the delays run out (or the deadline
      leaves no room), the last failure is re-raised as itself, with its
      traceback.  Success ends the loop; it never sleeps after the last try.
    - *sleep* defaults to :func:`time.sleep`.
    - *deadline* (seconds per *clock*, from the first attempt): no sleep is
      started that would end past it; the last sleep may be shortened to
      end on it.
    - ``attempt.retry_after(seconds)`` raises the next sleep to *seconds*.
    - *before_sleep(attempt, exception, delay)* is called before each sleep,
      for logging and metrics.
    """

    @staticmethod
    def _default_sleep() -> Callable[[float], Any]:
        return time.sleep

    def __iter__(self) -> retrying:
        return self

    def __next__(self) -> Attempt:
        if self._attempt is None:
            return self.begin(self._clock())
        delay = self.decide()
        if delay is None:
            raise StopIteration  # success, or the caller did not report failure
        self._sleep(delay)
        return self.next_attempt(delay)


class aretrying(_Driver, AsyncIterator[Attempt]):
    """:class:`retrying` for ``async for`` and ``async with``.

    *sleep* defaults to :func:`asyncio.sleep`.  Cancellation is never
    swallowed.

    >>> import asyncio
    >>> async def main():
    ...     slept = []
    ...     async def no_wait(seconds):
    ...         slept.append(seconds)
    ...     async for attempt in aretrying([0.5, 1.0], on=ValueError, sleep=no_wait):
    ...         async with attempt:
    ...             if attempt.number < 3:
    ...                 raise ValueError(attempt.number)
    ...             return attempt.number, slept
    >>> asyncio.run(main())
    (3, [0.5, 1.0])
    """

    @staticmethod
    def _default_sleep() -> Callable[[float], Any]:
        return asyncio.sleep

    def __aiter__(self) -> aretrying:
        return self

    async def __anext__(self) -> Attempt:
        if self._attempt is None:
            return self.begin(self._clock())
        delay = self.decide()
        if delay is None:
            raise StopAsyncIteration
        await self._sleep(delay)
        return self.next_attempt(delay)


def _delays_factory(delays: object) -> Callable[[], Iterable[float]]:
    if isinstance(delays, (list, tuple)):
        return lambda: delays
    if callable(delays):
        return cast(Callable[[], Iterable[float]], delays)
    raise TypeError(
        "delays must be a zero-argument callable returning fresh delays"
        " (e.g. lambda: islice(exponential(0.1), 5)) or a list/tuple;"
        f" an iterator is used up after one call, got {delays!r}"
    )


def retry(
    delays: Union[Callable[[], Iterable[float]], List[float], Tuple[float, ...]],
    *,
    on: ExceptionFilter = Exception,
    deadline: Optional[float] = None,
    sleep: Optional[Callable[[float], Any]] = None,
    clock: Callable[[], float] = time.monotonic,
    before_sleep: Optional[BeforeSleep] = None,
) -> Callable[[F], F]:
    """Decorate a sync or async function so failures matching *on* are retried.

    *delays* is a zero-argument callable returning a fresh iterable of
    delays for each call (generators are one-shot), or a plain list/tuple.
    The delays are only made once a call has failed, so a successful call
    costs one ``try`` more than calling the function directly.

    >>> from itertools import islice
    >>> from backoff_iter import exponential
    >>> slept = []
    >>> @retry(lambda: islice(exponential(0.1, cap=5), 5), on=TimeoutError,
    ...        sleep=slept.append)
    ... def ping(results=iter([TimeoutError(), TimeoutError(), "pong"])):
    ...     result = next(results)
    ...     if isinstance(result, Exception):
    ...         raise result
    ...     return result
    >>> ping(), slept
    ('pong', [0.1, 0.2])

    Async functions are detected and sleep with ``asyncio.sleep`` unless
    *sleep* is given.  The other arguments are those of :class:`retrying`.
    """
    factory = _delays_factory(delays)
    # The drivers' own checks, once, at decoration: bad arguments fail here.
    matches = retrying(
        (), on=on, sleep=sleep, deadline=deadline, clock=clock, before_sleep=before_sleep
    )._matches

    def resumed(driver: type[D], start: float, failure: Exception) -> D:
        """The driver for the retries of a call whose first attempt failed."""
        resumed_ = driver(
            factory(), on=on, sleep=sleep, deadline=deadline, clock=clock,
            before_sleep=before_sleep,
        )
        resumed_.begin(start)
        resumed_.failed(failure)
        return resumed_

    def decorate(func: F) -> F:
        _checks.function("func", func)
        # The success path is a bare try; the retries go straight through
        # the driver's decide() and failed(), without the `with` protocol.
        # Here only before_sleep ever sees an Attempt, so only then are they made.
        observed = before_sleep is not None
        if inspect.iscoroutinefunction(func):

            @functools.wraps(func)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                start = clock()
                try:
                    return await func(*args, **kwargs)
                except Exception as exc:
                    if not matches(exc):
                        raise
                    driver = resumed(aretrying, start, exc)
                while True:
                    delay = cast(float, driver.decide())
                    await driver._sleep(delay)
                    if observed:
                        driver.next_attempt(delay)
                    try:
                        return await func(*args, **kwargs)
                    except Exception as exc:
                        if not driver.failed(exc):
                            raise

            return cast(F, async_wrapper)

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = clock()
            try:
                return func(*args, **kwargs)
            except Exception as exc:
                if not matches(exc):
                    raise
                driver = resumed(retrying, start, exc)
            while True:
                delay = cast(float, driver.decide())
                driver._sleep(delay)
                if observed:
                    driver.next_attempt(delay)
                try:
                    return func(*args, **kwargs)
                except Exception as exc:
                    if not driver.failed(exc):
                        raise

        return cast(F, wrapper)

    return decorate
