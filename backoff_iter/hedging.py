"""Hedged requests: send a second copy of a slow call before the first fails.

"The Tail at Scale" (Dean and Barroso, 2013): when a call is slower than
nearly all others, a copy sent to another replica usually answers first.
:func:`~backoff_iter.hedged` starts attempt 1 at once and each further attempt (a
*hedge*) when its delay after the previous attempt has passed; the first
result accepted wins, and every other attempt is cancelled and awaited
before it returns.  The delays are this library's schedules: a list, a
strategy, or a factory of them.

>>> import asyncio
>>> from backoff_iter import hedged
>>> async def read(replicas=iter(["slow", "fast"])):
...     if next(replicas) == "slow":
...         await asyncio.sleep(10)  # cancelled as soon as the hedge answers
...         return "slow answer"
...     return "fast answer"
>>> asyncio.run(hedged(read, [0.01]))
'fast answer'

The behaviour is gRPC's ``hedgingPolicy`` and retry throttling (design
A6): a failure that ``on`` matches sends the next hedge at once, any other
failure cancels every attempt and propagates; a budget refusing a hedge
means no more hedges, while the attempts already sent go on.  Each call
keeps its own state, so a ``@hedge`` function may run in any number of
tasks at once; only the budget is shared, and the budgets of this library
are thread-safe.
"""

from __future__ import annotations

import asyncio
import functools
import math
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, Union, cast

from . import _checks
from ._filters import ExceptionFilter, exception_filter, is_transient, matches
from .hints import RETRY_AFTER_MAX, server_wait
from .parts import as_part

if TYPE_CHECKING:
    from typing_extensions import ParamSpec

    from .budgets import Budget

    P = ParamSpec("P")

__all__ = ["hedge", "hedged"]

R = TypeVar("R")

#: What hedging takes as delays: a zero-argument function returning fresh
#: delays for each call, a list or tuple, or (for :func:`hedged`) any iterable.
Delays = Union[Callable[[], Iterable[float]], Sequence[float], Iterable[float]]

_END: Any = object()  # no further hedge


class _Hedging:
    """The checked options of hedged calls: one per :func:`hedged` call, one
    per :func:`hedge` decoration, shared by all its calls."""

    __slots__ = (
        "_checked",
        "_factory",
        "_on",
        "_only_exceptions",
        "_on_result",
        "_budget",
        "_hook",
    )

    def __init__(
        self,
        delays: Delays,
        on: ExceptionFilter,
        on_result: Callable[[Any], object] | None,
        budget: Budget | None,
        retry_after: Callable[[Any], float | None] | None,
    ) -> None:
        # A list or tuple is checked whole, at once; other delays as they are drawn.
        self._checked: tuple[float, ...] | None = None
        self._factory: Callable[[], Iterable[object]] | None = None
        if delays.__class__ is list or delays.__class__ is tuple:
            self._checked = tuple(
                _checks.wait("delays", delay) for delay in cast(Sequence[object], delays)
            )
        elif callable(delays):
            self._factory = delays
        else:  # an iterator serves one call; other iterables each call afresh
            _checks.iterable("delays", delays)
            self._factory = functools.partial(iter, delays)
        self._on, self._only_exceptions = exception_filter("on", on)
        if on_result is not None:
            _checks.function("on_result", on_result)
        self._on_result = on_result
        if budget is not None:
            as_part("budget", budget)
        self._budget = budget
        if retry_after is not None:
            _checks.function("retry_after", retry_after)
        self._hook = retry_after

    def _gaps(self) -> Iterator[float]:
        """This call's delays, each checked; ``inf`` ends them."""
        if self._checked is not None:
            return iter(self._checked)
        return map(
            functools.partial(_checks.wait, "delays"),
            _checks.fresh_delays("delays", cast(Any, self._factory)),
        )

    def _hint(self, outcome: Any, failed: bool) -> float | None:
        """The retry_after hook's hint for *outcome*, checked.  An error of the
        hook, or a bad hint, keeps the attempt's failure as its ``__context__``."""
        try:
            hint = self._hook(outcome)  # type: ignore[misc]
            return None if hint is None else server_wait(hint, RETRY_AFTER_MAX)
        except BaseException as error:
            if failed and error.__context__ is None:
                error.__context__ = outcome
            raise

    async def run(self, call: Callable[[], Awaitable[R]], name: str) -> R:
        """Run one hedged call of *call*: its attempts, in tasks named after *name*."""
        loop = asyncio.get_running_loop()
        budget = self._budget
        gaps = self._gaps()
        running: dict[asyncio.Future[R], int] = {}  # each attempt, to its number
        number = 0  # of the latest attempt started
        due: float | None = 0.0  # loop time at which the next attempt starts; None: never
        not_before = -math.inf  # a server's hint: no hedge before then
        trigger: Any = None  # the outcome that brought the next hedge forward
        spent = 0.0  # what the budget's try_retry returned for this call
        last: Any = None  # the latest outcome, an exception or a rejected result
        failed = True  # ... whether it is an exception
        try:
            while True:
                if due is not None:
                    now = loop.time()
                    if now >= due:
                        if number and budget is not None:
                            allowed = budget.try_retry(trigger)
                            if not allowed:  # A6: hedges never wait for the budget
                                due = None
                                continue
                            spent += allowed
                        gap = next(gaps, _END)
                        due = None if gap is _END or gap == math.inf else now + gap
                        number += 1
                        trigger = None
                        running[_start(loop, call, name, number)] = number
                        continue
                if not running:
                    if due is None:  # every attempt failed, no hedge left to send
                        break
                    await asyncio.sleep(due - loop.time())
                    continue
                timeout = None if due is None else max(0.0, due - loop.time())
                done, _ = await asyncio.wait(
                    running, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
                )
                for task in sorted(done, key=running.__getitem__):
                    first = running.pop(task) == 1
                    try:
                        result = task.result()
                    except BaseException as exc:  # the attempt's failure, not ours
                        if not matches(self._on, self._only_exceptions, exc):
                            raise  # fatal: the others are cancelled on the way out
                        last, failed = exc, True
                    else:
                        if self._on_result is None or not self._on_result(result):
                            if budget is not None:
                                budget.record_success(first, spent)
                            return result
                        last, failed = result, False
                    if budget is not None:
                        budget.record_failure(first)
                    if due is not None:  # the next hedge goes at once, or when the server says
                        now = loop.time()
                        if self._hook is not None:
                            hint = self._hint(last, failed)
                            if hint is not None:
                                not_before = max(not_before, now + hint)
                        due = max(now, not_before)
                        trigger = last
        finally:
            if running:
                await _cancel(running)
        if failed:
            raise last
        return cast(R, last)


def _start(
    loop: asyncio.AbstractEventLoop, call: Callable[[], Awaitable[R]], name: str, number: int
) -> asyncio.Future[R]:
    """Attempt *number* of *call*, running in a task of its own."""
    awaitable = call()
    if asyncio.iscoroutine(awaitable):
        return loop.create_task(awaitable, name=f"{name} attempt {number}")
    if not hasattr(awaitable, "__await__"):
        raise _checks.ArgumentTypeError(
            "call",
            f"call must be a zero-argument async function, but {call!r}"
            f" returned {awaitable!r}, which cannot be awaited",
        )
    return asyncio.ensure_future(awaitable)


async def _cancel(attempts: Iterable[asyncio.Future[Any]]) -> None:
    """Cancel *attempts* and wait until every one has finished.

    A cancellation of the caller that arrives meanwhile is raised once they
    have: no attempt is left running, whatever happens."""
    attempts = list(attempts)
    for task in attempts:
        task.cancel()
    interrupted: BaseException | None = None
    pending = set(attempts)
    while pending:
        try:
            _, pending = await asyncio.wait(pending)
        except asyncio.CancelledError as error:
            interrupted = error
    for task in attempts:
        if not task.cancelled():
            task.exception()  # seen: asyncio logs no "exception was never retrieved"
    if interrupted is not None:
        raise interrupted


def hedged(
    call: Callable[[], Awaitable[R]],
    delays: Delays,
    *,
    on: ExceptionFilter = is_transient,
    on_result: Callable[[Any], object] | None = None,
    budget: Budget | None = None,
    retry_after: Callable[[Any], float | None] | None = None,
    name: str = "call",
) -> Coroutine[Any, Any, R]:
    """Await ``call()`` with hedges: further attempts when the previous one is slow.

    Attempt 1 starts at once; attempt *k + 1* starts ``delays[k]`` seconds
    after attempt *k* started, unless a result has been accepted, so *n*
    delays allow at most *n + 1* attempts and an ``inf`` delay sends no
    further hedge.  The arguments are checked at once, before anything runs
    (a list or tuple of delays whole, other delays as they are drawn).

    - *call*: a zero-argument async function; every attempt calls it anew.
    - *delays*: an iterable of seconds, or a zero-argument function
      returning one.
    - *on*: an exception class, a tuple of them, or a predicate
      ``callable(exc) -> bool``.  A failure it matches sends the next hedge
      at once; any other failure (and an attempt's own cancellation)
      cancels every attempt and propagates as itself.
    - *on_result*: ``predicate(result) -> bool``; a result it accepts is
      rejected as an answer and counted like a matched failure.
    - *budget*: a :class:`~backoff_iter.TokenBucket`, a
      :class:`~backoff_iter.RetryBudget` or your own.  Each hedge must be
      allowed by ``try_retry(outcome)`` (the failure that brought it
      forward, or None when its delay passed); a refusal means no more
      hedges, never a wait.  Matched failures are recorded with
      ``record_failure``, the winner with ``record_success``; cancelled
      attempts are not recorded.
    - *retry_after*: ``hook(outcome) -> seconds or None`` on a matched
      failure or rejected result; no further hedge starts before that
      many seconds from now (clamped to 6 hours, ``RETRY_AFTER_MAX``).
    - *name*: names the attempts' tasks (``"call attempt 2"``).

    The first result accepted is returned once every other attempt has been
    cancelled and has finished.  When every attempt has failed and no hedge
    is left, the latest outcome stands: its exception propagates as
    itself, or a rejected result is returned (as the retry drivers return
    their last result).  Cancelling the caller cancels every attempt, and
    waits for them.

    >>> import asyncio
    >>> attempts = []
    >>> async def flaky():
    ...     attempts.append(len(attempts) + 1)
    ...     if len(attempts) < 3:
    ...         raise ConnectionError("replica down")  # the next hedge goes at once
    ...     return f"answer from attempt {len(attempts)}"
    >>> asyncio.run(hedged(flaky, [60, 60, 60], on=ConnectionError)), attempts
    ('answer from attempt 3', [1, 2, 3])
    """
    _checks.function("call", call)
    policy = _Hedging(delays, on, on_result, budget, retry_after)
    return policy.run(call, _checks.text("name", name))


def hedge(
    delays: Callable[[], Iterable[float]] | Sequence[float],
    *,
    on: ExceptionFilter = is_transient,
    on_result: Callable[[Any], object] | None = None,
    budget: Budget | None = None,
    retry_after: Callable[[Any], float | None] | None = None,
    name: str | None = None,
) -> Callable[[Callable[P, Awaitable[R]]], Callable[P, Coroutine[Any, Any, R]]]:
    """Decorate an async function so each call is :func:`hedged`.

    Every attempt calls the function with the caller's arguments.  *delays*
    is a zero-argument function returning fresh delays for each call, or a
    list or tuple (a one-shot iterator would serve one call only, and is
    refused); *name* defaults to the function's qualified name; the other
    arguments are those of :func:`hedged`.

    >>> import asyncio
    >>> @hedge([0.01], on=ConnectionError)
    ... async def lookup(key, replicas=iter([10, 0])):
    ...     await asyncio.sleep(next(replicas))  # the first replica is slow
    ...     return key.upper()
    >>> asyncio.run(lookup("a"))
    'A'
    """
    _checks.reusable_delays("delays", delays)  # a one-shot iterator would serve one call
    policy = _Hedging(delays, on, on_result, budget, retry_after)
    if name is not None:
        name = _checks.text("name", name)

    def decorate(function: Callable[P, Awaitable[R]]) -> Callable[P, Coroutine[Any, Any, R]]:
        _checks.function("function", function)
        if not _checks.is_async(function):
            raise _checks.ArgumentTypeError(
                "function",
                f"hedge decorates async functions, got {function!r}: its attempts"
                " run concurrently in tasks",
            )
        label = name if name is not None else getattr(function, "__qualname__", repr(function))

        @functools.wraps(function)
        async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            return await policy.run(lambda: function(*args, **kwargs), label)

        return wrapper

    return decorate
