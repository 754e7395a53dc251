"""Hedged requests: send a second copy of a slow call before the first fails.

"The Tail at Scale" (Dean and Barroso, 2013): when a call is slower than
nearly all others, a copy sent to another replica usually answers first.
:func:`~backoff_iter.hedged` starts attempt 1 at once and each further
attempt (a *hedge*) when its delay after the previous attempt has passed;
the first result accepted wins, and every other attempt is cancelled and
awaited before it returns.  The delays are this library's schedules: a
list, a strategy, or a factory of them.

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
are thread-safe.  It runs under asyncio and under trio (or anyio on
either), finding the running one itself.

It runs on the retry core's pieces: the options are the drivers'
(:class:`~backoff_iter.HedgeOptions`), the budget is consulted as a part,
the server's hint is applied by the one rule of
:func:`~backoff_iter.hints.sleep_for`, and the hooks hear a ``"hedge"``
event for each hedge sent, a ``"retry"`` for each attempt that failed
while the call went on (its ``delay`` None when no hedge was left to send
for it: the call waits for an attempt still running), a ``"cancelled"``
for each loser, and the call's end (``"success"``, ``"error"`` or
``"give_up"``).  Each attempt's end is told once: a call cut short (its
caller cancelled it) tells the newest attempt still running as its
``"error"``, the older ones as ``"cancelled"``.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, Union, cast

from . import _checks, _sleeping
from ._core import Call
from ._filters import matches
from ._options import HedgeOptions, Policy, reusable
from .hints import clamped, raised
from .parts import ERROR, FAILURE, SUCCESS, tell_each

if TYPE_CHECKING:
    from typing_extensions import ParamSpec, Unpack

    P = ParamSpec("P")

__all__ = ["hedge", "hedged"]

R = TypeVar("R")

#: What hedging takes as delays: a zero-argument function returning fresh
#: delays for each call, a list or tuple, or (for :func:`hedged`) any iterable.
Delays = Union[Callable[[], Iterable[float]], Sequence[float], Iterable[float]]

_INF = math.inf
#: One attempt's end: (its number, its exception or None, its result).
Finished = tuple[int, Union[BaseException, None], Any]


class _Hedging:
    """The checked options of hedged calls: one per :func:`hedged` call, one
    per :func:`hedge` decoration, shared by all its calls."""

    __slots__ = ("_checked", "_factory", "policy")

    def __init__(self, delays: Delays, options: dict[str, Any], reusable: bool) -> None:
        # A list or tuple is checked whole, at once; other delays as they are drawn.
        self._checked: tuple[float, ...] | None = None
        self._factory: Callable[[], Iterable[object]] | None = None
        if delays.__class__ is list or delays.__class__ is tuple:
            self._checked = tuple(
                _checks.wait("delays", delay) for delay in cast("Sequence[object]", delays)
            )
        elif reusable:
            self._factory = _checks.reusable_delays("delays", delays)
        else:
            self._factory, _ = _checks.delays_factory("delays", delays)
        for option, value in options.items():  # a retry driver's option hedging cannot use
            if option not in HedgeOptions.__annotations__:
                taken = ", ".join(HedgeOptions.__annotations__)
                raise _checks.ArgumentTypeError(
                    option,
                    f"hedging takes no {option}= option, got {option}={_checks.shown(value)}:"
                    f" it takes {taken}",
                )
        self.policy = Policy(None, **options)

    def _gaps(self) -> Iterator[float]:
        """This call's delays, each checked; ``inf`` ends them."""
        if self._checked is not None:
            return iter(self._checked)
        return map(
            functools.partial(_checks.wait, "delays"),
            _checks.fresh_delays("delays", cast(Any, self._factory)),
        )

    def _hint(self, outcome: Any) -> float | None:
        """The retry_after hook's hint for *outcome*, clamped.  An error of the
        hook, or a bad hint, keeps the attempt's failure as its ``__context__``."""
        hook = self.policy.retry_after
        if hook is None:
            return None
        try:
            hint = hook(outcome)
            return (
                None if hint is None else clamped(hint, self.policy.retry_after_max, "retry_after")
            )
        except BaseException as error:
            if isinstance(outcome, BaseException) and error.__context__ is None:
                error.__context__ = outcome
            raise

    async def run(self, call: Callable[[], Awaitable[R]], name: str) -> R:
        """Run one hedged call of *call*: its attempts, in tasks named after *name*."""
        policy = self.policy
        events = Call(policy, policy.clock())  # the call's events: its hooks, clock and id
        group: _Attempts = (
            _TrioAttempts(call, name)
            if _sleeping.running_library() == "trio"
            else _AsyncioAttempts(call, name)
        )
        async with group:
            try:
                outcome, failed = await self._hedge(group, events)
            except Exception as error:  # hedging's own (a hook's, a bad delay's): raised below,
                outcome, failed = error, True  # out of the group, as under asyncio (not wrapped)
                with contextlib.suppress(Exception):  # a hook that broke the call may again:
                    await self._cut_short(group, events, error)  # the first error stands
            except BaseException as interruption:  # the caller's cancellation, Ctrl-C: raised
                outcome, failed = interruption, True  # below too, as under asyncio (not wrapped)
                try:
                    await self._cut_short(group, events, interruption)
                except BaseException as error:  # a hook broke as it heard: its error ends the call
                    outcome = error
        if failed:  # raised out of the group (a nursery would wrap it), holding no local: no cycle
            try:
                raise outcome
            finally:
                outcome = None
        return cast(R, outcome)

    async def _hedge(self, group: _Attempts, events: Call) -> tuple[Any, bool]:
        """The schedule of one hedged call in *group*: (its winner's result,
        False), or (the outcome that ends it, whether it is an exception):
        a failure ``on`` does not match, or the last outcome once every
        attempt failed and no hedge is left."""
        policy = self.policy
        gaps = self._gaps()
        number = 0  # of the latest attempt started
        due: float | None = 0.0  # group time at which the next attempt starts; None: never
        started = 0.0  # when the latest attempt started
        not_before = -_INF  # a server's hint: no hedge before then
        trigger: Any = None  # the outcome that brought the next hedge forward
        took: dict[int, tuple[float, ...]] = {}  # what each allow_retry took for each hedge
        last: Any = None  # the latest outcome, an exception or a rejected result
        ended_last = 0  # ... and the number of the attempt it ended (not the latest begun)
        failed = True  # ... whether it is an exception
        reason = "exhausted"  # why no hedge is left, once none is
        while True:
            if due is not None:
                now = group.now()
                if now >= due:
                    if number:
                        if not events._allowed(trigger, FAILURE):  # A6: hedges never wait
                            due, reason = None, "budget"  # for the budget
                            continue
                        took[number + 1] = events.took
                    try:  # until the attempt starts, what breaks gives back what its hedge took
                        gap = next(gaps, None)
                        due = None if gap is None or gap == _INF else now + gap
                        number += 1
                        if number > 1 and events._failure_hooks:
                            events.emit("hedge", trigger, number, now - started)
                        started = now
                        trigger = None
                        group.start(number)
                    except BaseException:  # the next delay or a hook broke, or the call raised
                        events._drop()  # as it was made: the attempt never ran (none for 1)
                        raise
                    # On to the wait below, even when the next hedge is due at once:
                    # the attempts get a pass of the event loop before it starts (an
                    # endless schedule of 0 s would start attempts for ever, none run).
            if not group.running:
                if due is None:  # every attempt failed, no hedge left to send
                    break
                await group.sleep(max(0.0, due - group.now()))  # (due since: trio refuses < 0)
                continue
            timeout = None if due is None else max(0.0, due - group.now())
            ended = await group.finished(timeout)
            for index, (attempt, exc, result) in enumerate(ended):
                try:
                    if exc is not None:
                        retried = matches(policy.on, policy.only_exceptions, exc)
                    else:
                        retried = policy.on_result is not None and bool(policy.on_result(result))
                except Exception as broke:  # ``on`` or ``on_result`` broke: the call ends with
                    if group.under_way():  # it, told as the newest attempt under way's end
                        raise  # (see run and _cut_short) - else as the end of this one
                    return await self._broken(group, events, broke, attempt)
                if exc is not None:
                    if not retried:  # fatal: the others are cancelled
                        tell_each(policy.plan.afters, exc, ERROR, attempt)  # (no budget hears)
                        return await self._broken(group, events, exc, attempt)
                    last, failed, ended_last = exc, True, attempt
                elif not retried:
                    # Once the winner is in, a break ends the call told as the winner's end.
                    try:
                        cancelled = await self._cancel_rest(group, events)
                    except Exception as broke:  # a hook raised as it heard a loser cancelled
                        return await self._broken(group, events, broke, attempt)
                    # Given back: what the winner took, if a hedge, and every hedge not needed:
                    # those cancelled, and those that ended beside it, unheard.
                    unneeded = cancelled + [later for later, _, _ in ended[index + 1 :]]
                    # (the winner's share added last to the sum of theirs, as before the shares)
                    events.took = _added([took[k] for k in (*unneeded, attempt) if k in took])
                    try:
                        events.tell_parts(result, SUCCESS, attempt)
                    except BaseException as broke:  # the budget raised (or Ctrl-C came):
                        return await self._broken(group, events, broke, attempt)  # it ends the call
                    if events._hooks:
                        try:
                            events.emit("success", result, attempt)
                        except BaseException as broke:  # a hook raised: the call ends with it,
                            return broke, True  # the winner's end told (the success)
                    return result, False
                else:
                    last, failed, ended_last = result, False, attempt
                try:
                    tell_each(policy.plan.afters, last, FAILURE, attempt)
                except Exception as broke:  # the budget raised: the call ends with it
                    return await self._broken(group, events, broke, attempt)
                if due is not None:  # the next hedge goes at once, or when the server says
                    now = group.now()
                    hint = self._hint(last)
                    if hint is not None:
                        wait = raised(0.0, hint, policy.retry_after_beyond)
                        if wait == _INF:  # longer than can be waited: no more
                            due, reason = None, "retry_after"
                        else:
                            not_before = max(not_before, now + wait)
                    if due is not None:
                        due = max(now, not_before)
                    trigger = last
                # The call goes on: a hedge to send, an attempt running, or one that ended with it.
                going_on = due is not None or group.running or index + 1 < len(ended)
                if going_on and events._failure_hooks:
                    # No hedge left: nothing is sent for it, the call waits (delay None).
                    until = None if due is None else max(0.0, due - group.now())
                    events.emit("retry", last, attempt, until)
        if events._failure_hooks:
            try:
                events.emit("give_up", last, ended_last, reason=reason)
            except BaseException as broke:  # a hook raised as it heard the end: the call
                return broke, True  # ends with it, its end told once
        return last, failed

    async def _broken(
        self, group: _Attempts, events: Call, error: BaseException, attempt: int
    ) -> tuple[BaseException, bool]:
        """The call ends with *error* - *attempt*'s failure that ``on`` does not
        match, the budget's as it heard how *attempt* went, or (*attempt* the
        winner) a hook's as it heard a loser cancelled: the attempts still
        running cancelled, the hooks told of an ``"error"`` of *attempt*.  A hook
        that raises as it hears one cancelled, or that end, ends the call with
        its own error, the end told once (an interruption is no answer: it cuts
        the call short, see :meth:`_cut_short` - unless the winner is in, when
        nothing is left to cut)."""
        try:
            await self._cancel_rest(group, events)
        except Exception as broke:  # a hook raised as it heard one cancelled: the call ends
            error = broke  # with its error
        try:
            events.tell_error(error, attempt)
        except BaseException as broke:  # a hook raised as it heard the end: the call ends
            return broke, True  # with it, its end told once
        return error, True

    async def _cut_short(self, group: _Attempts, events: Call, error: BaseException) -> None:
        """The call ends with *error* (the caller's cancellation, Ctrl-C, or
        hedging's own: a hook's, a bad delay's): cancel the attempts still
        running, and tell the hooks of each and of the call's end, as the
        retry drivers tell a call ended so - each attempt's end once.  The
        end is an ``"error"`` of the newest attempt under way (not told as
        cancelled too); with none under way (the call waited for a server's
        hint to pass), of the next one, which never ran (reason
        ``"interrupted"``)."""
        under_way = group.under_way()
        ending = under_way[-1] if under_way else 0
        try:
            try:
                stopped = await group.cancel_rest()
            except BaseException:  # interrupted again while they stop (anyio's scopes on
                # asyncio, at every pass): they stopped all the same, and a hook that
                # raises as it hears so leaves the interruption standing
                with contextlib.suppress(Exception):
                    _tell_cancelled(events, under_way, ending)
                raise
            _tell_cancelled(events, stopped, ending)
        finally:  # (the call ends all the same)
            if ending:
                events.tell_error(error, ending)
            else:
                events.tell_error(error, group.latest + 1, "interrupted")

    async def _cancel_rest(self, group: _Attempts, events: Call, ending: int = 0) -> list[int]:
        """Cancel the attempts still running, tell the hooks of each but attempt
        *ending* (whose end the call's error tells); their numbers."""
        cancelled = await group.cancel_rest()
        _tell_cancelled(events, cancelled, ending)
        return cancelled


def _tell_cancelled(events: Call, numbers: list[int], ending: int) -> None:
    """Tell the hooks of *events* that the attempts *numbers* were cancelled, but
    attempt *ending* (whose end the call's error tells)."""
    if events._hooks:
        for number in numbers:
            if number != ending:
                events.emit("cancelled", None, number)


def _added(took: list[tuple[float, ...]]) -> tuple[float, ...]:
    """What each allow_retry took for the hedges in *took*, added up."""
    return tuple(map(sum, zip(*took))) if took else ()


class _Attempts:
    """The attempts of one hedged call, each in a task of the running event loop."""

    latest = 0  # the number of the latest attempt started

    def __init__(self, call: Callable[[], Awaitable[Any]], name: str) -> None:
        self._call = call
        self._name = name

    async def __aenter__(self) -> _Attempts:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        """Cancel every attempt left and wait for each: none outlives the call."""
        await self.cancel_rest()

    @property
    def running(self) -> int:
        """How many attempts are under way."""
        raise NotImplementedError  # pragma: no cover - an interface

    def under_way(self) -> list[int]:
        """The numbers of the attempts under way (not yet seen to end), in order."""
        raise NotImplementedError  # pragma: no cover - an interface

    def now(self) -> float:
        raise NotImplementedError  # pragma: no cover - an interface

    def start(self, number: int) -> None:
        """Start attempt *number* in a task of its own: the latest, once its call
        gave an awaitable (one that raised as it was called never ran)."""
        self._start(number)
        self.latest = number

    def _start(self, number: int) -> None:
        raise NotImplementedError  # pragma: no cover - an interface

    async def sleep(self, seconds: float) -> None:
        raise NotImplementedError  # pragma: no cover - an interface

    async def finished(self, timeout: float | None) -> list[Finished]:
        """The attempts that end within *timeout* seconds (None: no limit), oldest first."""
        raise NotImplementedError  # pragma: no cover - an interface

    async def cancel_rest(self) -> list[int]:
        """Cancel the attempts under way and wait until each has ended; their numbers."""
        raise NotImplementedError  # pragma: no cover - an interface

    def _awaitable(self) -> Awaitable[Any]:
        awaitable = self._call()
        if not hasattr(awaitable, "__await__"):
            raise _checks.ArgumentTypeError(
                "call",
                f"call must be a zero-argument async function, but {self._call!r}"
                f" returned {awaitable!r}, which cannot be awaited",
            )
        return awaitable


class _AsyncioAttempts(_Attempts):
    """Attempts as asyncio tasks."""

    def __init__(self, call: Callable[[], Awaitable[Any]], name: str) -> None:
        import asyncio

        super().__init__(call, name)
        self._asyncio = asyncio
        self._loop = asyncio.get_running_loop()
        self._tasks: dict[Any, int] = {}  # each attempt's task, to its number

    @property
    def running(self) -> int:
        return len(self._tasks)

    def under_way(self) -> list[int]:
        return list(self._tasks.values())  # started in turn: in order

    def now(self) -> float:
        return self._loop.time()

    def _start(self, number: int) -> None:
        awaitable = self._awaitable()
        if not self._asyncio.iscoroutine(awaitable):  # a future, any awaitable: in a task of
            awaitable = _awaited(awaitable)  # its own (one future given twice: two attempts)
        task = self._loop.create_task(awaitable, name=f"{self._name} attempt {number}")
        self._tasks[task] = number

    async def sleep(self, seconds: float) -> None:
        await self._asyncio.sleep(seconds)

    async def finished(self, timeout: float | None) -> list[Finished]:
        done, _ = await self._asyncio.wait(
            self._tasks, timeout=timeout, return_when=self._asyncio.FIRST_COMPLETED
        )
        ended: list[Finished] = []
        for task in sorted(done, key=self._tasks.__getitem__):
            number = self._tasks.pop(task)
            # Read, never raised here: raising would add this frame, which holds
            # `ended`, to the failure's traceback - a cycle only the collector frees.
            if task.cancelled():  # the attempt's own cancellation
                ended.append((number, self._asyncio.CancelledError(), None))
            elif task.exception() is not None:
                ended.append((number, task.exception(), None))
            else:
                ended.append((number, None, task.result()))
        return ended

    async def cancel_rest(self) -> list[int]:
        """Cancel the attempts and wait for each.  A cancellation of the caller
        that arrives meanwhile is raised once they have: none is left running,
        and they are still under way to the call it cuts short (which tells
        their ends, and clears them)."""
        attempts = list(self._tasks)
        numbers = [self._tasks[task] for task in attempts]
        for task in attempts:
            task.cancel()
        interrupted: BaseException | None = None
        pending = set(attempts)
        while pending:
            try:
                await self._asyncio.wait(pending)
            except self._asyncio.CancelledError as error:  # (anyio's scope: at every pass)
                interrupted = error
            pending = {task for task in pending if not task.done()}  # seen done, even so
        for task in attempts:
            if not task.cancelled():
                task.exception()  # seen: asyncio logs no "exception was never retrieved"
        if interrupted is not None:
            try:
                raise interrupted
            finally:
                interrupted = None
        self._tasks.clear()
        return numbers


async def _awaited(awaitable: Awaitable[R]) -> R:
    """*awaitable*'s outcome, as a coroutine: what a task runs."""
    return await awaitable


class _TrioAttempts(_Attempts):
    """Attempts as trio tasks in a nursery of the call, each in its own cancel scope."""

    def __init__(self, call: Callable[[], Awaitable[Any]], name: str) -> None:
        import trio

        super().__init__(call, name)
        self._trio = trio
        self._scopes: dict[int, Any] = {}  # each attempt under way's cancel scope
        self._send, self._receive = trio.open_memory_channel[Finished](_INF)
        self._nursery: Any = None
        self._opened: Any = None

    @property
    def running(self) -> int:
        return len(self._scopes)

    def under_way(self) -> list[int]:
        return list(self._scopes)  # started in turn: in order

    async def __aenter__(self) -> _Attempts:
        self._opened = self._trio.open_nursery()
        self._nursery = await self._opened.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        for scope in self._scopes.values():
            scope.cancel()
        self._scopes.clear()
        await self._opened.__aexit__(*exc_info)

    def now(self) -> float:
        return float(self._trio.current_time())

    def _start(self, number: int) -> None:
        awaitable = self._awaitable()  # (under way once it is made)
        scope = self._trio.CancelScope()
        self._scopes[number] = scope
        self._nursery.start_soon(
            self._attempt, number, scope, awaitable, name=f"{self._name} attempt {number}"
        )

    async def _attempt(self, number: int, scope: Any, awaitable: Awaitable[Any]) -> None:
        with scope:
            try:
                result = await awaitable
            except self._trio.Cancelled:  # its scope's (which takes it), or the caller's: the
                return  # call hears that one itself, and ends with it - out of the nursery, alone
            except BaseException as exc:  # any other, as asyncio's task keeps it: not wrapped
                self._send.send_nowait((number, exc, None))
            else:
                self._send.send_nowait((number, None, result))

    async def sleep(self, seconds: float) -> None:
        await self._trio.sleep(seconds)

    async def finished(self, timeout: float | None) -> list[Finished]:
        ended: list[Finished] = []
        with self._trio.move_on_after(_INF if timeout is None else timeout):
            ended.append(await self._receive.receive())
        while True:
            try:
                ended.append(self._receive.receive_nowait())
            except self._trio.WouldBlock:
                break
        for number, _, _ in ended:
            self._scopes.pop(number, None)
        return sorted(ended, key=lambda end: end[0])

    async def cancel_rest(self) -> list[int]:
        numbers = sorted(self._scopes)
        for scope in self._scopes.values():
            scope.cancel()
        self._scopes.clear()
        return numbers


def hedged(
    call: Callable[[], Awaitable[R]], delays: Delays, **options: Unpack[HedgeOptions]
) -> Coroutine[Any, Any, R]:
    """Await ``call()`` with hedges: further attempts when the previous one is slow.

    Attempt 1 starts at once; attempt *k + 1* starts ``delays[k]`` seconds
    after attempt *k* started, unless a result has been accepted, so *n*
    delays allow at most *n + 1* attempts and an ``inf`` delay sends no
    further hedge.  A hedge due at once (a delay of 0) still waits for one
    pass of the event loop: an attempt that answers in it wins first, and
    an endless schedule of zeros never keeps the caller from running or
    being cancelled.  The arguments are checked at once, before anything runs
    (a list or tuple of delays whole, other delays as they are drawn).

    - *call*: a zero-argument async function; every attempt calls it anew.
    - *delays*: an iterable of seconds, or a zero-argument function
      returning one.
    - *options* (:class:`~backoff_iter.HedgeOptions`), as for the drivers:
      *on* (default :func:`~backoff_iter.is_transient`): a failure it
      matches sends the next hedge at once; any other failure (and an
      attempt's own cancellation) cancels every attempt and propagates as
      itself.  *on_result*: a result it accepts is rejected as an answer
      and counted like a matched failure.  *budget*: each hedge must be
      allowed by ``try_retry(outcome)`` (the failure that brought it
      forward, or None when its delay passed); a refusal means no more
      hedges, never a wait; matched failures are recorded with
      ``record_failure``, the winner with ``record_success``; cancelled
      attempts, and those ending in the same turn of the loop as the
      winner, are not recorded, and what those hedges took comes back with
      the winner's success; a hedge whose call raised as it was made never
      ran, and gives back what it took at once.  *retry_after*: no further
      hedge starts before that many seconds from now (clamped to
      *retry_after_max*; a hint too long to wait sends no further hedge).  *name* names the
      attempts' tasks (``"call attempt 2"``) and the events; *observe*
      gives hooks.

    The first result accepted is returned once every other attempt has been
    cancelled and has finished.  When every attempt has failed and no hedge
    is left, the latest outcome stands: its exception propagates as
    itself, or a rejected result is returned (as the retry drivers return
    their last result).  Cancelling the caller cancels every attempt, and
    waits for them; the hooks hear each attempt cancelled, and the call end
    as an ``"error"``, the cancellation its outcome.

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
    _checks.callback("call", call, (), awaited=True)  # (a zero-argument async function)
    hedging = _Hedging(delays, dict(options), reusable=False)
    return hedging.run(call, hedging.policy.name)


def hedge(
    delays: Callable[[], Iterable[float]] | Sequence[float], **options: Unpack[HedgeOptions]
) -> Callable[[Callable[P, Awaitable[R]]], Callable[P, Coroutine[Any, Any, R]]]:
    """Decorate an async function so each call is :func:`hedged`.

    Every attempt calls the function with the caller's arguments.  *delays*
    is a zero-argument function returning fresh delays for each call, or a
    list or tuple (a one-shot iterator would serve one call only, and is
    refused); *name* defaults to the function's qualified name; the other
    options are those of :func:`hedged`.

    >>> import asyncio
    >>> @hedge([0.01], on=ConnectionError)
    ... async def lookup(key, replicas=iter([10, 0])):
    ...     await asyncio.sleep(next(replicas))  # the first replica is slow
    ...     return key.upper()
    >>> asyncio.run(lookup("a"))
    'A'
    """
    given = reusable(options)  # a policy per function decorated
    _Hedging(delays, given, reusable=True)  # checked now

    def decorate(function: Callable[P, Awaitable[R]]) -> Callable[P, Coroutine[Any, Any, R]]:
        _checks.function("function", function)
        if not _checks.is_async(function):
            raise _checks.ArgumentTypeError(
                "function",
                f"hedge decorates async functions, got {_checks.shown(function)}: its attempts"
                " run concurrently in tasks",
            )
        named = dict(given)
        named.setdefault("name", getattr(function, "__qualname__", repr(function)))
        hedging = _Hedging(delays, named, reusable=True)
        label = hedging.policy.name

        @functools.wraps(function)
        async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            return await hedging.run(lambda: function(*args, **kwargs), label)

        return wrapper

    return decorate
