"""Retry drivers over any iterable of delays: ``retrying``, ``aretrying``, ``@retry``.

Two objects carry a retry, whatever its form:

- a *policy* (:class:`retrying`, :class:`aretrying`, or the one ``@retry``
  makes), the options checked once: which failures and results to retry,
  the delays, deadline, hints, hooks and budget;
- a *call* (:class:`_Call`), the state of one run of the policy.  Its
  :meth:`_Call.next_sleep` takes the outcome of an attempt and makes every
  decision at once: retry or not, how long to sleep, whether the deadline,
  the budget or the delays leave room.  The sync and async forms differ only
  in how they sleep (:meth:`_Call.pause` and :meth:`_Call.apause`).

The loop forms decide inside ``with attempt:``, so a failure that is not
retried propagates from the loop body itself, as if there were no loop.
"""

from __future__ import annotations

import functools
import math
import sys
import time
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Sequence,
)
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar, Union, cast

from . import _checks, _sleeping

if TYPE_CHECKING:
    from typing_extensions import ParamSpec

    from .budgets import Budget

    P = ParamSpec("P")

__all__ = ["RETRY_AFTER_MAX", "Attempt", "aretrying", "retry", "retrying"]

R = TypeVar("R")

#: The longest server hint honoured by default, in seconds: 6 hours, as
#: urllib3's ``Retry.DEFAULT_RETRY_AFTER_MAX``.  A longer hint is clamped to it.
RETRY_AFTER_MAX = 6 * 3600.0

ExceptionFilter = Union[
    type[BaseException],
    tuple[type[BaseException], ...],
    Callable[[BaseException], object],
]
#: What a policy takes as delays: a zero-argument function returning fresh
#: delays for each call (the reusable form), a list or tuple (reusable too),
#: or any one-shot iterable.
Delays = Union[Callable[[], Iterable[float]], Sequence[float], Iterable[float]]
#: ``before_sleep(attempt, outcome, delay)``: *outcome* is the exception, or
#: the result that ``on_result`` asked to retry.
BeforeSleep = Callable[["Attempt", Any, float], object]

_NO_RESULT: Any = object()  # an attempt that handed over no result
_END: Any = object()  # the delays ran out
_LONGEST = _sleeping.LONGEST

# A call's state: no attempt handed out yet, the current attempt waiting to
# be entered, running in its `with` block, failed and slept (the next
# attempt may come), or the call is over.
_NEW, _READY, _RUNNING, _RETRY, _DONE = range(5)

#: What a policy keeps of ``on``: the exception classes to match, or the predicate.
Filter = Union[tuple[type[BaseException], ...], Callable[[BaseException], object]]

# Filters already checked, by the `on` they came from, with whether every class
# is an Exception.  Bounded: a program that makes exception classes on the fly
# must not grow it forever.
_FILTERS: dict[object, tuple[Filter, bool]] = {}
_FILTERS_MAX = 256


def _exception_filter(on: object) -> tuple[Filter, bool]:
    """*on* as classes (matched with one isinstance) or a predicate, and whether
    it is classes that are all Exceptions; reject anything else."""
    try:
        return _FILTERS[on]
    except (KeyError, TypeError):  # new, or unhashable
        pass
    if isinstance(on, type) and issubclass(on, BaseException):
        classes: tuple[type[BaseException], ...] = (on,)
    elif isinstance(on, tuple) and all(
        isinstance(c, type) and issubclass(c, BaseException) for c in on
    ):
        classes = on
    elif callable(on) and not isinstance(on, (type, tuple)):
        return cast(Callable[[BaseException], object], on), False
    else:
        raise _checks.ArgumentTypeError(
            "on",
            "on must be an exception class, a tuple of them, or a predicate"
            f" callable(exc) -> bool, got {on!r}",
        )
    if len(_FILTERS) >= _FILTERS_MAX:
        del _FILTERS[next(iter(_FILTERS))]  # the oldest
    checked = _FILTERS[on] = classes, all(issubclass(c, Exception) for c in classes)
    return checked


def _hint(name: str, value: object) -> float:
    """A server hint in seconds: a non-negative number, inf allowed."""
    return _checks.seconds(name, value, infinite=True)


class Attempt:
    """One attempt of a retry loop; run it in ``with attempt:`` (``async with``).

    A failure the policy retries is swallowed when the block exits, after
    the sleep before the next attempt; any other failure propagates from the
    block, as if there were no loop.
    """

    __slots__ = ("number", "delay", "elapsed", "_call", "_result", "_bug")

    number: int
    """This attempt's number, from 1."""
    delay: float
    """The seconds slept before it (0.0 for the first)."""
    elapsed: float
    """Seconds from the start of the first attempt to the start of this one, per ``clock``."""

    def __init__(self, call: _Call, number: int, delay: float, elapsed: float) -> None:
        self.number = number
        self.delay = delay
        self.elapsed = elapsed
        self._call = call
        self._result: Any = _NO_RESULT
        self._bug: BaseException | None = None

    def retry_after(self, seconds: float) -> None:
        """Make the next sleep at least *seconds* long (a server's ``Retry-After``).

        The hint is clamped to the policy's ``retry_after_max``; if the wait
        would end past the deadline, no further attempt is made.  A negative,
        NaN or non-number *seconds* is a bug of the caller: its error
        propagates, never retried.
        """
        try:
            self._call._hint = _hint("seconds", seconds)
        except (TypeError, ValueError) as error:
            self._bug = error
            raise

    def set_result(self, value: R) -> R:
        """Hand the attempt's result to the policy's ``on_result``, and return it.

        In the loop forms, call it inside ``with attempt:``: a result that
        ``on_result`` accepts is retried like a failure, and when the retries
        run out the loop ends with that last result in your variable.
        """
        self._result = value
        return value

    def __enter__(self) -> Attempt:
        call = self._call
        if call._state != _READY or call._number != self.number or call._async:
            call._misuse(self, "with")
        call._state = _RUNNING
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        call = self._call
        if call._state != _RUNNING or call._number != self.number:
            call._misuse(self, "with")
        if exc is None and call._policy._plain:
            call._state = _DONE
            return False
        if exc is not None and exc is self._bug:
            delay = None
        else:
            delay = call.next_sleep(self, exc, self._result)
        if delay is None:
            call._state = _DONE
            return False
        call.pause(self, self._result if exc is None else exc, delay)
        call._state = _RETRY
        return True

    async def __aenter__(self) -> Attempt:
        call = self._call
        if call._state != _READY or call._number != self.number or not call._async:
            call._misuse(self, "async with")
        call._state = _RUNNING
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        call = self._call
        if call._state != _RUNNING or call._number != self.number:
            call._misuse(self, "async with")
        if exc is None and call._policy._plain:
            call._state = _DONE
            return False
        if exc is not None and exc is self._bug:
            delay = None
        else:
            _stop_if_cancelling(call._cancelling)
            delay = call.next_sleep(self, exc, self._result)
        if delay is None:
            call._state = _DONE
            return False
        await call.apause(self, self._result if exc is None else exc, delay)
        call._state = _RETRY
        return True

    def __repr__(self) -> str:
        return f"<Attempt number={self.number} delay={self.delay!r} elapsed={self.elapsed!r}>"


def _cancelling() -> int:
    """How many cancellation requests the current task has pending (0 outside
    an asyncio task, or before Python 3.11)."""
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return 0
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no asyncio loop running: trio, or a coroutine driven by hand
        return 0
    cancelling = getattr(task, "cancelling", None)
    return 0 if cancelling is None else cast(int, cancelling())


def _stop_if_cancelling(baseline: int) -> None:
    """Raise CancelledError if the current task was asked to cancel since the
    call started (when it had *baseline* requests pending).

    A TaskGroup can turn the task's own cancellation (from ``asyncio.timeout``,
    say) into an ordinary failure: retrying it would run on past the timeout.
    Compared with the count at the start, not with 0: on Python 3.11 and 3.12
    a task that once handled a TaskGroup's error keeps ``cancelling() == 1``.
    """
    if _cancelling() > baseline:
        import asyncio

        raise asyncio.CancelledError("the task is being cancelled: no retry")


class _Policy:
    """The checked options of a retry policy, shared by all its calls."""

    # Options left at their defaults are read from here: a policy made for
    # every call (``for attempt in retrying(...)``) only sets what it was given.
    _once = False  # made from a one-shot iterator
    _used = False  # ... which a loop has used
    _on: Filter = (Exception,)
    _only_exceptions = True  # _on is classes, each a subclass of Exception
    _on_result: Callable[[Any], object] | None = None
    _retry_after: Callable[[Any], float | None] | None = None
    _retry_after_max = RETRY_AFTER_MAX
    _deadline: float | None = None
    _clock: Callable[[], float] = time.monotonic  # a builtin: no method binding
    _sleep: Callable[[float], Any] | None = None
    _before_sleep: BeforeSleep | None = None
    _give_up: Callable[[Attempt, Any], object] | None = None
    _budget: Budget | None = None
    _plain = True  # a success needs no bookkeeping (no on_result, no budget)
    _simple = True  # a retry is just the next delay (no hints, deadline or budget)

    def __init__(
        self,
        delays: Delays,
        *,
        on: ExceptionFilter = Exception,
        on_result: Callable[[Any], object] | None = None,
        retry_after: Callable[[Any], float | None] | None = None,
        retry_after_max: float = RETRY_AFTER_MAX,
        deadline: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Any] | None = None,
        before_sleep: BeforeSleep | None = None,
        budget: Budget | None = None,
    ) -> None:
        kind = delays.__class__
        if kind is list or kind is tuple:
            self._factory: Callable[[], Iterable[float]] = delays.__iter__  # type: ignore[union-attr]
        elif callable(delays):
            self._factory = delays
        elif isinstance(delays, Sequence) and not isinstance(delays, str):
            self._factory = delays.__iter__
        else:
            self._factory = _checks.iterable("delays", delays).__iter__
            self._once = True
        if on is not Exception:
            self._on, self._only_exceptions = _exception_filter(on)
        if on_result is not None:
            _checks.function("on_result", on_result)
            self._on_result = on_result
            self._plain = False
        if retry_after is not None:
            _checks.function("retry_after", retry_after)
            self._retry_after = retry_after
            self._simple = False
        if retry_after_max is not RETRY_AFTER_MAX:
            self._retry_after_max = _hint("retry_after_max", retry_after_max)
        if deadline is not None:
            self._deadline = _hint("deadline", deadline)
            self._simple = False
        if clock is not time.monotonic:
            _checks.function("clock", clock)
            self._clock = clock
        if sleep is not None:
            _checks.function("sleep", sleep)
            self._sleep = sleep
        if before_sleep is not None:
            _checks.function("before_sleep", before_sleep)
            self._before_sleep = before_sleep
            self._give_up = getattr(before_sleep, "give_up", None)
        if budget is not None:
            _check_budget(budget)
            self._budget = budget
            self._plain = self._simple = False

    def _used_once(self) -> None:
        """Refuse a second loop over a policy made from a one-shot iterator."""
        if self._used:
            raise RuntimeError(
                "this retry policy was made from a one-shot iterator of delays,"
                " which its first loop used up; pass a function returning fresh"
                " delays (lambda: islice(exponential(0.1), 5)) or a list to"
                " reuse the policy"
            )
        self._used = True


def _check_budget(budget: object) -> None:
    for method in ("record_success", "record_failure", "try_retry"):
        if not callable(getattr(budget, method, None)):
            raise _checks.ArgumentTypeError(
                "budget",
                "budget must have record_success(), record_failure() and"
                f" try_retry() methods (a TokenBucket or a RetryBudget), got {budget!r}",
            )


class _Call:
    """The state of one run of a policy; :meth:`next_sleep` decides everything."""

    # A call that succeeds at once only ever sets what __init__ sets: the
    # rest starts from these class defaults (cheaper than setting them all).
    _delays: Iterator[float] | None = None  # made after the first failure
    _number = 1  # of the current attempt
    _delay = 0.0  # slept before the current attempt
    _hint: float | None = None  # from attempt.retry_after()
    _last = False  # the deadline shortened the last sleep
    _async = False  # an aretrying loop
    _cancelling = 0  # the task's pending cancellations when an async call started

    def __init__(self, policy: _Policy, start: float) -> None:
        self._policy = policy
        self._start = start  # of the first attempt, per the policy's clock
        self._state = _NEW

    def next_sleep(
        self, attempt: Attempt | None, exc: BaseException | None, result: Any = _NO_RESULT
    ) -> float | None:
        """The outcome of the current attempt in, the sleep before the next out.

        *exc* is the attempt's exception (None if it returned); *result* its
        result when there is one.  None means the outcome stands: a success,
        a failure not to retry, or no room left to retry (the delays ran out,
        the deadline or the budget say no, or the delay is too long to
        sleep).  The caller then raises the exception or returns the result.
        """
        policy = self._policy
        budget = policy._budget
        if exc is not None:
            on = policy._on
            if policy._only_exceptions:  # classes that are all Exceptions: one isinstance
                if not isinstance(exc, on):  # type: ignore[arg-type]
                    return None
            elif not (
                isinstance(exc, Exception)
                and (isinstance(exc, on) if on.__class__ is tuple else on(exc))  # type: ignore[operator]
            ):
                return None  # not ours to retry: KeyboardInterrupt, a mismatch
            outcome: Any = exc
        elif policy._on_result is None or result is _NO_RESULT:
            if policy._on_result is not None:
                raise RuntimeError(
                    "on_result was given, but the attempt handed over no"
                    " result: call attempt.set_result(value) in the block"
                )
            if budget is not None:
                budget.record_success(self._number == 1)
            return None
        elif policy._on_result(result):
            outcome = result
        else:
            if budget is not None:
                budget.record_success(self._number == 1)
            return None
        if budget is not None:
            budget.record_failure(self._number == 1)
        # The schedule is made at the first failure, then drawn one delay per retry.
        delays = self._delays
        if delays is None:
            delays = self._delays = _checks.fresh_delays("delays", policy._factory)
        delay = _END if self._last else next(delays, _END)
        if delay.__class__ is not float or not 0.0 <= delay <= _LONGEST:
            delay = _END if delay is _END else _sleeping.seconds(delay)
            if delay == math.inf:
                delay = _END  # an infinite wait is no next attempt
        if delay is not _END and (self._hint is not None or not policy._simple):
            delay = self._limit(delay, outcome)
        if delay is _END or delay is None:
            if policy._give_up is not None:
                policy._give_up(attempt, outcome)  # type: ignore[arg-type]
            return None
        self._number += 1
        self._delay = delay
        return delay

    def _limit(self, delay: float, outcome: Any) -> float | None:
        """*delay* raised to the server's hint and fitted to the deadline and
        the budget; None if they leave no room for a retry."""
        policy = self._policy
        hint, self._hint = self._hint, None
        if policy._retry_after is not None:
            asked = policy._retry_after(outcome)
            if asked is not None:
                asked = _hint("retry_after", asked)
                if hint is None or asked > hint:
                    hint = asked
        if hint is not None:
            hint = min(hint, policy._retry_after_max)
            if hint > delay:
                delay = hint
        if policy._deadline is not None:
            remaining = self._start + policy._deadline - policy._clock()
            if remaining <= 0 or (hint is not None and hint > remaining):
                return None  # no room left, or not for the wait the server asked
            if delay > remaining:  # shortened to end at the deadline: the last try
                delay = remaining
                self._last = True
        if policy._budget is not None and not policy._budget.try_retry(outcome):
            return None
        return delay

    def first_attempt(self, observed: bool) -> Attempt | None:
        """@retry's first attempt, made only when a hook will see it."""
        return Attempt(self, 1, 0.0, 0.0) if observed else None

    def _fit(self, delay: float) -> float:
        """*delay*, shortened so the sleep still ends by the deadline after a
        before_sleep hook took its time."""
        deadline = self._policy._deadline
        if deadline is not None:
            remaining = self._start + deadline - self._policy._clock()
            if delay > remaining:
                self._delay = delay = max(0.0, remaining)
        return delay

    def pause(self, attempt: Attempt | None, outcome: Any, delay: float) -> None:
        """Tell before_sleep, then sleep *delay* (sync)."""
        hook = self._policy._before_sleep
        if hook is not None:
            returned = hook(attempt, outcome, delay)  # type: ignore[arg-type]
            if returned is not None and hasattr(returned, "__await__"):
                returned.close()  # type: ignore[attr-defined]
                raise TypeError(
                    f"before_sleep {hook!r} returned an awaitable in a sync"
                    " loop: use aretrying or an async function"
                )
            delay = self._fit(delay)
        _sleeping.sleep(self._policy._sleep, delay)

    async def apause(self, attempt: Attempt | None, outcome: Any, delay: float) -> None:
        """Tell before_sleep (awaited if it is async), then sleep *delay*."""
        hook = self._policy._before_sleep
        if hook is not None:
            returned = hook(attempt, outcome, delay)  # type: ignore[arg-type]
            if returned is not None and hasattr(returned, "__await__"):
                await cast(Awaitable[Any], returned)
            delay = self._fit(delay)
        await _sleeping.asleep(self._policy._sleep, delay)

    def next_attempt(self) -> Attempt:
        """The Attempt that follows a retry."""
        self._state = _READY
        return Attempt(self, self._number, self._delay, self._policy._clock() - self._start)

    def _misuse(self, attempt: Attempt, statement: str) -> None:
        """Raise the error that says how an Attempt was misused."""
        if self._async != (statement == "async with"):
            right = "async with" if self._async else "with"
            raise TypeError(f"use `{right} attempt:` with this loop, not `{statement}`")
        raise RuntimeError(
            f"{attempt!r} is not the current attempt of a running retry loop:"
            " use each attempt once, in its own iteration"
        )

    def _step(self) -> Attempt | None:
        """The loop forms' next attempt; None when the loop is over."""
        state = self._state
        if state == _RETRY:
            return self.next_attempt()
        if state == _DONE:
            return None
        raise RuntimeError(
            f"attempt {self._number} of this retry loop never ran in"
            " `with attempt:`, so its outcome is unknown: put the loop body"
            " in `with attempt:`"
        )


class retrying(_Policy, Iterable[Attempt]):
    """A retry policy for ``for`` loops: it yields attempts to run in ``with`` blocks.

    >>> from itertools import islice
    >>> from backoff_iter import exponential
    >>> calls, slept = [], []
    >>> def fetch():
    ...     calls.append(1)
    ...     if len(calls) < 3:
    ...         raise OSError("flaky")
    ...     return "data"
    >>> def get():
    ...     for attempt in retrying(lambda: islice(exponential(0.1), 4), on=OSError,
    ...                             sleep=slept.append):
    ...         with attempt:
    ...             return fetch()
    >>> get(), slept
    ('data', [0.1, 0.2])

    ``retrying(delays, *, on=Exception, on_result=None, retry_after=None,
    retry_after_max=6 hours, deadline=None, clock=time.monotonic,
    sleep=time.sleep, before_sleep=None, budget=None)``:

    - *delays*: a zero-argument function returning fresh delays (made only
      after a first failure), or a list or tuple: such a policy is
      reusable, every ``for`` over it starts afresh.  A one-shot iterable
      (a strategy, a generator) serves one loop; iterating the policy again
      raises ``RuntimeError``.
    - *on*: an exception class, a tuple of them, or a predicate
      ``callable(exc) -> bool``.  Other failures propagate at once, and
      ``KeyboardInterrupt``, ``SystemExit``, ``GeneratorExit`` and
      cancellation always do.
    - *on_result*: ``predicate(result) -> bool``; hand the result over with
      ``attempt.set_result(value)``.  An accepted result is retried like a
      failure; when nothing is left to try the loop ends with it.
    - *retry_after*: ``hook(outcome) -> seconds or None``, the server's hint
      for the exception or retried result: the next sleep is at least that
      long, clamped to *retry_after_max*.  ``attempt.retry_after(seconds)``
      does the same from the loop body.
    - *deadline* (seconds per *clock*, from the first attempt): no sleep
      starts that would end past it; the last one is shortened to end on it.
    - *before_sleep(attempt, outcome, delay)* runs before each sleep; if it
      also has a ``give_up(attempt, outcome)`` method, that runs when the
      loop gives up (see :func:`backoff_iter.log_retries`).
    - *budget*: a :class:`~backoff_iter.TokenBucket`, a
      :class:`~backoff_iter.RetryBudget` or your own, shared by many calls;
      when it refuses a retry the loop gives up.

    When the delays, the deadline or the budget leave no room, or a delay is
    infinite, the last failure propagates from the ``with`` block as itself,
    with its traceback.  Success ends the loop; it never sleeps after the
    last attempt.
    """

    __slots__ = ()

    def __iter__(self) -> Iterator[Attempt]:
        if self._once:
            self._used_once()
        return _Attempts(self, self._clock())


class aretrying(_Policy, AsyncIterable[Attempt]):
    """:class:`retrying` for ``async for`` and ``async with``.

    *sleep* defaults to :func:`asyncio.sleep`; a plain function is called
    and its result awaited only if it is awaitable.  An async
    *before_sleep* is awaited.  Cancellation is never swallowed, and no
    retry starts while the task is being cancelled.

    >>> import asyncio
    >>> async def main():
    ...     slept = []
    ...     async for attempt in aretrying([0.5, 1.0], on=ValueError, sleep=slept.append):
    ...         async with attempt:
    ...             if attempt.number < 3:
    ...                 raise ValueError(attempt.number)
    ...             return attempt.number, slept
    >>> asyncio.run(main())
    (3, [0.5, 1.0])
    """

    __slots__ = ()

    def __aiter__(self) -> AsyncIterator[Attempt]:
        if self._once:
            self._used_once()
        return _AsyncAttempts(self, self._clock())


class _Attempts(_Call, Iterator[Attempt]):
    """One run of a :class:`retrying` loop."""

    def __next__(self) -> Attempt:
        if self._state == _NEW:  # the first attempt, at once
            self._state = _READY
            return Attempt(self, 1, 0.0, 0.0)
        attempt = self._step()
        if attempt is None:
            raise StopIteration
        return attempt


class _AsyncAttempts(_Call, AsyncIterator[Attempt]):
    """One run of an :class:`aretrying` loop."""

    _async = True

    async def __anext__(self) -> Attempt:
        if self._state == _NEW:
            self._state = _READY
            self._cancelling = _cancelling()
            return Attempt(self, 1, 0.0, 0.0)
        attempt = self._step()
        if attempt is None:
            raise StopAsyncIteration
        return attempt


def _factory(delays: object) -> object:
    """Reject a one-shot iterator for @retry, which needs delays per call."""
    if isinstance(delays, Iterator) and not callable(delays):
        raise _checks.ArgumentTypeError(
            "delays",
            "delays must be a zero-argument function returning fresh delays"
            " (e.g. lambda: islice(exponential(0.1), 5)) or a list/tuple;"
            f" an iterator is used up after one call, got {delays!r}",
        )
    return delays


def retry(
    delays: Callable[[], Iterable[float]] | Sequence[float],
    *,
    on: ExceptionFilter = Exception,
    on_result: Callable[[Any], object] | None = None,
    retry_after: Callable[[Any], float | None] | None = None,
    retry_after_max: float = RETRY_AFTER_MAX,
    deadline: float | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], Any] | None = None,
    before_sleep: BeforeSleep | None = None,
    budget: Budget | None = None,
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a sync or async function so failures matching *on* are retried.

    *delays* is a zero-argument function returning fresh delays for each
    call (made only once a call has failed), or a list or tuple.  The other
    arguments are those of :class:`retrying`; the decorated function keeps
    its signature, and with *on_result* its last result is returned when
    the retries run out.

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
    *sleep* is given (sync or async).  A generator function is rejected: its
    failures happen while it is iterated, after the call has returned.
    """
    policy = _Policy(
        cast(Delays, _factory(delays)),
        on=on,
        on_result=on_result,
        retry_after=retry_after,
        retry_after_max=retry_after_max,
        deadline=deadline,
        clock=clock,
        sleep=sleep,
        before_sleep=before_sleep,
        budget=budget,
    )

    def decorate(func: Callable[P, R]) -> Callable[P, R]:
        _checks.function("func", func)
        import inspect  # only when decorating: it is slow to import

        if inspect.isgeneratorfunction(func) or inspect.isasyncgenfunction(func):
            raise _checks.ArgumentTypeError(
                "func",
                f"retry cannot retry the generator function {func!r}: its"
                " failures happen while it is iterated, after the call returned;"
                " decorate the function that consumes it",
            )
        if inspect.iscoroutinefunction(func):
            return cast("Callable[P, R]", _async_wrapper(policy, func))
        return _sync_wrapper(policy, func)

    return decorate


def _sync_wrapper(policy: _Policy, func: Callable[P, R]) -> Callable[P, R]:
    clock, plain, sleep = policy._clock, policy._plain, _sleeping.sleep
    observed = policy._before_sleep is not None  # a give_up hook comes with it
    # Nobody reads the start time unless a deadline or a hook does: save the clock.
    timed = observed or policy._deadline is not None

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        call = attempt = None
        start = clock() if timed else 0.0
        while True:
            try:
                result = func(*args, **kwargs)
            except Exception as exc:
                if call is None:
                    call = _Call(policy, start)
                    attempt = call.first_attempt(observed)
                delay = call.next_sleep(attempt, exc)
                if delay is None:
                    raise
                if observed:
                    call.pause(attempt, exc, delay)
                else:  # no hook to tell: straight to sleep
                    sleep(policy._sleep, delay)
            else:
                if plain:
                    return result
                if call is None:
                    if policy._on_result is None:  # only a budget to tell
                        policy._budget.record_success(True)  # type: ignore[union-attr]
                        return result
                    call = _Call(policy, start)
                    attempt = call.first_attempt(observed)
                delay = call.next_sleep(attempt, None, result)
                if delay is None:
                    return result
                call.pause(attempt, result, delay)
            if observed:
                attempt = call.next_attempt()

    return wrapper


def _async_wrapper(policy: _Policy, func: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    clock, plain, asleep = policy._clock, policy._plain, _sleeping.asleep
    observed = policy._before_sleep is not None  # a give_up hook comes with it
    timed = observed or policy._deadline is not None

    @functools.wraps(func)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        call = attempt = None
        start = clock() if timed else 0.0
        cancelling = _cancelling()
        while True:
            try:
                result = await func(*args, **kwargs)
            except Exception as exc:
                _stop_if_cancelling(cancelling)
                if call is None:
                    call = _Call(policy, start)
                    attempt = call.first_attempt(observed)
                delay = call.next_sleep(attempt, exc)
                if delay is None:
                    raise
                if observed:
                    await call.apause(attempt, exc, delay)
                else:  # no hook to tell: straight to sleep
                    await asleep(policy._sleep, delay)
            else:
                if plain:
                    return result
                if call is None:
                    if policy._on_result is None:  # only a budget to tell
                        policy._budget.record_success(True)  # type: ignore[union-attr]
                        return result
                    call = _Call(policy, start)
                    attempt = call.first_attempt(observed)
                delay = call.next_sleep(attempt, None, result)
                if delay is None:
                    return result
                await call.apause(attempt, result, delay)
            if observed:
                attempt = call.next_attempt()

    return wrapper
