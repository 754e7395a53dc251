"""Retried generators and streams: retried until the first item, resumed after it,
never duplicated.  ``@retry`` on a generator function (sync or async) runs
it here, on the same core as any call.

One attempt of a stream is: make the source (the decorated function's
generator, or what ``resume(state)`` returns once items were delivered),
wait for its first item - a failure there is retried like any call's -
then deliver its items one by one.  A failure after items were delivered
is *committed* (gRPC's rule): without ``resume=`` it propagates as it is
and the call gives up (reason ``"committed"``); with ``resume=`` the call
sleeps its next delay, under the same parts, and goes on from where the
consumer is.  The consumer's ``send()``, ``throw()`` and ``close()`` (and
their async twins) reach the source at once.

Without ``resume=`` nothing is retried past the first item, so the stream
steps aside: the items and the consumer's calls go straight to the source
(``yield from``, the cost of one generator frame per item), and whatever
the source lets out - its own failure, or what the consumer threw in and it
did not handle - ends the call as a committed failure.  With ``resume=``
each item is counted, and the two are told apart: the source's failure is
resumed (one it meets as it goes on after a ``throw()`` too), what the
consumer threw in - let out as itself, or raised from it - is its own, never
retried, and ends the call as a close does: the parts hear the attempt end
as one the dependency answered (``Call.abandon``), the hooks a ``"closed"``.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Generator, Iterator
from typing import Any

from . import _checks, _timeouts
from ._attempt import _NO_RESULT, timeout_scope
from ._core import Call, begin
from ._options import Policy

__all__ = ["StreamState"]

Resume = Callable[["StreamState"], Any]


class StreamState:
    """A stream's progress, given to ``resume=`` to make the items that follow.

    >>> state = StreamState(("report.csv",), {"chunk": 1024})
    >>> state.count, state.last
    (0, None)
    """

    __slots__ = ("args", "count", "kwargs", "last")

    args: tuple[Any, ...]
    """The positional arguments the decorated function was called with."""
    kwargs: dict[str, Any]
    """Its keyword arguments."""
    count: int
    """How many items the consumer had received, over every attempt, when
    the source failed: what ``resume`` starts from (not counted on while the
    items it returns flow - count them yourself if you need to)."""
    last: Any
    """The last item the consumer had received then (None before the first)."""

    def __init__(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.args = args
        self.kwargs = kwargs
        self.count = 0
        self.last = None

    def __repr__(self) -> str:
        return f"<StreamState count={self.count} last={self.last!r}>"


class _Unreadable(_checks.ArgumentTypeError):
    """``resume`` returned what the stream cannot read: the user's bug, which
    ends the call at once as an error, never retried."""


def _source(
    func: Callable[..., Any],
    resume: Resume | None,
    state: StreamState,
    kwargs: Any,
    protocol: str = "__iter__",
) -> Any:
    """This attempt's source of items: the function's anew until items were
    delivered, then what *resume* makes of the progress (a stream without
    *resume* never comes back here once it delivered), which must have
    *protocol*: ``__iter__``, or ``__aiter__`` for an async stream.  A
    StopIteration out of *resume* is its bug, never the stream's end: a
    RuntimeError, as out of a generator (PEP 479)."""
    if not state.count:
        return func(*state.args, **kwargs)
    try:
        items = resume(state)  # type: ignore[misc]
    except (StopIteration, StopAsyncIteration) as stop:
        raise RuntimeError(f"resume raised {type(stop).__name__}") from stop
    kind = type(items)  # (asked of the type, as iter() asks: a class itself is no iterable)
    if not hasattr(kind, protocol) and not (
        protocol == "__iter__" and hasattr(kind, "__getitem__")
    ):
        _checks.unawaited(items)  # a coroutine (resume was an async def): closed
        wanted = (
            "an async iterable (an async generator)" if protocol == "__aiter__" else "an iterable"
        )
        raise _Unreadable(
            "resume", f"resume must return {wanted} for this stream, got {_checks.shown(items)}"
        )
    return items


def sync_stream(
    policy: Policy,
    func: Callable[..., Iterator[Any]],
    resume: Resume | None,
    timeout_arg: str | None,
) -> Callable[..., Generator[Any, Any, Any]]:
    """*func*, a generator function, retried and resumed as a generator function."""

    @functools.wraps(func)
    def stream(*args: Any, **kwargs: Any) -> Generator[Any, Any, Any]:
        call = begin(policy, shown=False)
        state = StreamState(args, kwargs)
        while True:
            attempt = call.running(next(call))
            if timeout_arg is not None:
                kwargs[timeout_arg] = attempt.timeout
            try:  # the wait for the first item: a failure here is retried like a call's
                iterator = iter(_source(func, resume, state, kwargs))
                item = next(iterator)
            except StopIteration as end:
                call.settle(attempt, None, end.value)
                return end.value
            except BaseException as failure:
                if failure.__class__ is _Unreadable:
                    call.end_on_error(failure)
                elif call.settle(attempt, failure, _NO_RESULT):
                    continue
                raise
            if resume is None:  # committed: past its first item the stream is the source's
                try:
                    while True:  # the first item, and what answers a send() or throw() to it
                        try:
                            sent = yield item
                        except GeneratorExit:
                            raise
                        except BaseException as thrown:
                            item = _throw(iterator, thrown)
                            continue
                        if sent is None:
                            break
                        item = iterator.send(sent)
                    result = yield from iterator  # items, send, throw and close: straight on
                except StopIteration as end:  # the source ended answering a send() or throw()
                    result = end.value
                except GeneratorExit:
                    _abandon(call, iterator)
                    raise
                except BaseException as failure:
                    if _out_of_close(failure, iterator):  # the stream was closed
                        call.abandon()
                    else:  # whoever threw it: the source let it out
                        call.committed(attempt, failure)
                    raise
                call.settle(attempt, None, result)
                return result
            step = next  # a builtin: cheaper to call than the iterator's bound __next__
            send = getattr(iterator, "send", None) or _unsendable(iterator)
            count = state.count  # kept in a local per item, in the state when it is read
            while True:  # a resumable stream's items, counted: each goes on as it comes
                try:
                    sent = yield item
                except GeneratorExit:  # the consumer closed the stream: no retry
                    _abandon(call, iterator)
                    raise
                except BaseException as thrown:  # the consumer's: passed on, never retried
                    count = state.count = count + 1
                    state.last = item
                    if not hasattr(iterator, "throw"):  # it cannot take it: back to the consumer
                        _abandon(call, iterator)
                        raise
                    try:
                        item = iterator.throw(thrown)
                    except StopIteration as end:  # the source ended: so does the stream
                        call.settle(attempt, None, end.value)
                        return end.value
                    except BaseException as failure:
                        if _lets_out(failure, thrown):  # the consumer's, back to it
                            call.abandon()
                            raise
                        call.restart_schedule()  # the source's own failure: resumed
                        if call.settle(attempt, failure, _NO_RESULT):
                            break
                        raise
                    continue
                count += 1
                try:
                    item = step(iterator) if sent is None else send(sent)
                except StopIteration as end:
                    state.count, state.last = count, item
                    call.settle(attempt, None, end.value)
                    return end.value
                except BaseException as failure:
                    state.count, state.last = count, item  # item: the last one delivered
                    if failure.__class__ is _Unsendable:  # the consumer's send(): its own error
                        _abandon(call, iterator)
                        raise
                    call.restart_schedule()  # it delivered since its last failure
                    if call.settle(attempt, failure, _NO_RESULT):
                        break  # resumed by the next attempt
                    raise

    return stream


class _Unsendable(TypeError):
    """The consumer sent a value into a stream whose resumed source takes none
    (a plain iterator): its own error, which ends the stream, never retried."""


def _unsendable(iterator: Any, method: str = "send") -> Callable[[Any], Any]:
    """What a value sent to *iterator*, which has no *method*, raises."""

    def refuse(value: Any) -> Any:
        raise _Unsendable(
            f"cannot {method}() {value!r} into this stream: its source, resumed as"
            f" {iterator!r}, takes no {method}() (a generator does)"
        )

    return refuse


def _out_of_close(failure: BaseException, iterator: Any) -> bool:
    """Whether *failure*, out of a generator source that ``yield from`` ran,
    came of the consumer's ``close()``: the source's cleanup raised it (a
    GeneratorExit in its chain of contexts: a library may raise its own error
    from the socket's), or Python did as the source ignored the close - it
    yielded again, so it is still suspended, not ended by a failure.

    >>> def stubborn():
    ...     try:
    ...         yield 1
    ...     finally:
    ...         yield 2
    >>> source = stubborn()
    >>> next(source)
    1
    >>> try:
    ...     source.close()
    ... except RuntimeError as failure:
    ...     closed = failure
    >>> def failing():
    ...     yield 1
    ...     raise RuntimeError("its own")
    >>> other = failing()
    >>> next(other)
    1
    >>> try:
    ...     next(other)
    ... except RuntimeError as failure:
    ...     own = failure
    >>> _out_of_close(closed, source), _out_of_close(own, other)
    (True, False)
    """
    return _raised_closing(failure) or (
        failure.__class__ is RuntimeError and getattr(iterator, "gi_frame", None) is not None
    )


#: The most contexts of a failure looked at for a GeneratorExit (a chain is
#: short; one set by hand may go round).
_MOST_CONTEXTS = 32


def _raised_closing(failure: BaseException) -> bool:
    """Whether *failure* was raised while a GeneratorExit was handled: one is
    among its first ``_MOST_CONTEXTS`` contexts (asked of their types: an
    exception's ``__class__`` may say anything).

    >>> try:
    ...     try:
    ...         raise GeneratorExit
    ...     except GeneratorExit:
    ...         try:
    ...             raise OSError("socket shut")
    ...         except OSError as error:
    ...             raise ConnectionError("reset") from error
    ... except ConnectionError as failure:
    ...     wrapped = failure
    >>> _raised_closing(wrapped), _raised_closing(ConnectionError("its own"))
    (True, False)
    """
    return any(
        issubclass(type(context), GeneratorExit)
        for context in _checks.contexts(failure, _MOST_CONTEXTS)
    )


def _lets_out(failure: BaseException, thrown: BaseException) -> bool:
    """Whether *failure*, out of the source the consumer threw *thrown* into,
    is the consumer's own let out - *thrown* itself, or raised from it (the
    RuntimeError Python makes of a StopIteration) - rather than the source's
    own failure as it went on.

    >>> thrown = KeyError("skip")
    >>> _lets_out(thrown, thrown), _lets_out(ConnectionError("cut"), thrown)
    (True, False)
    """
    return failure is thrown or failure.__cause__ is thrown


def _abandon(call: Call, iterator: Any) -> None:
    """The consumer ended the stream after items: its source closed first (its
    ``finally`` runs, whatever a part then says), then the call abandoned."""
    try:
        _close(iterator)
    finally:
        call.abandon()


def _close(iterator: Any) -> None:
    close = getattr(iterator, "close", None)
    if close is not None:
        close()


def _throw(iterator: Any, thrown: BaseException) -> Any:
    """What the source yields once the consumer threw *thrown* in (a source
    that cannot take it gets it back at once)."""
    throw = getattr(iterator, "throw", None)
    if throw is None:
        raise thrown
    return throw(thrown)


def async_stream(
    policy: Policy,
    func: Callable[..., AsyncIterator[Any]],
    resume: Resume | None,
    timeout_arg: str | None,
) -> Callable[..., AsyncGenerator[Any, Any]]:
    """*func*, an async generator function, retried and resumed as one."""

    @functools.wraps(func)
    async def stream(*args: Any, **kwargs: Any) -> AsyncGenerator[Any, Any]:
        call = begin(policy, in_async=True, shown=False)
        state = StreamState(args, kwargs)
        while True:
            attempt = call.running(await call.__anext__())
            timeout = attempt.timeout
            if timeout_arg is not None:
                kwargs[timeout_arg] = timeout
            scope = None if timeout is None else timeout_scope(call, timeout)
            try:  # the wait for the first item, bounded by the attempt's timeout
                iterator = _source(func, resume, state, kwargs, "__aiter__").__aiter__()
                item = await _first(iterator, scope)
            except StopAsyncIteration:
                await call.asettle(attempt, None, None)
                return
            except BaseException as failure:
                if failure.__class__ is _Unreadable:
                    call.end_on_error(failure)
                elif await call.asettle(attempt, failure, _NO_RESULT):
                    continue
                raise
            if resume is None:  # committed: past its first item the stream is the source's
                try:
                    while True:  # an item, or what answers an asend() or athrow() to it
                        try:
                            sent = yield item
                        except GeneratorExit:
                            raise
                        except BaseException as thrown:
                            item = await _athrow(iterator, thrown)
                            continue
                        if sent is not None:
                            item = await iterator.asend(sent)
                            continue
                        # The next item as `async for` takes it, with no call of the
                        # source's bound __anext__: 2.0x a bare generator, not 2.3x.
                        async for item in iterator:  # noqa: B007 - the item is used after the loop
                            break
                        else:
                            raise StopAsyncIteration  # the source ended
                except StopAsyncIteration:
                    await call.asettle(attempt, None, None)
                    return
                except GeneratorExit:
                    await _aabandon(call, iterator)
                    raise
                except BaseException as failure:  # whoever threw it: the source let it out
                    call.committed(attempt, failure)
                    raise
            step = iterator.__anext__
            asend = getattr(iterator, "asend", None) or _unsendable(iterator, "asend")
            count = state.count  # kept in a local per item, in the state when it is read
            while True:
                try:
                    sent = yield item
                except GeneratorExit:
                    await _aabandon(call, iterator)
                    raise
                except BaseException as thrown:  # the consumer's: passed on, never retried
                    count = state.count = count + 1
                    state.last = item
                    if not hasattr(iterator, "athrow"):  # it cannot take it: back to the consumer
                        await _aabandon(call, iterator)
                        raise
                    try:
                        item = await iterator.athrow(thrown)
                    except StopAsyncIteration:
                        await call.asettle(attempt, None, None)
                        return
                    except BaseException as failure:
                        if _lets_out(failure, thrown):
                            call.abandon()
                            raise
                        call.restart_schedule()
                        if await call.asettle(attempt, failure, _NO_RESULT):
                            break
                        raise
                    continue
                count += 1
                try:
                    item = await (step() if sent is None else asend(sent))
                except StopAsyncIteration:
                    state.count, state.last = count, item
                    await call.asettle(attempt, None, None)
                    return
                except BaseException as failure:
                    state.count, state.last = count, item  # item: the last one delivered
                    if failure.__class__ is _Unsendable:  # the consumer's asend(): its own error
                        await _aabandon(call, iterator)
                        raise
                    call.restart_schedule()
                    if await call.asettle(attempt, failure, _NO_RESULT):
                        break
                    raise

    return stream


async def _first(iterator: AsyncIterator[Any], scope: _timeouts._Scope | None) -> Any:
    """The first item of *iterator*, within the attempt's timeout *scope* (None: no bound)."""
    if scope is None:
        return await iterator.__anext__()
    await scope.__aenter__()
    try:
        item = await iterator.__anext__()
    except BaseException as error:
        expired = await scope.__aexit__(type(error), error, error.__traceback__)
        if expired is not None:
            raise expired from error
        raise
    await scope.__aexit__(None, None, None)
    return item


async def _aabandon(call: Call, iterator: Any) -> None:
    """:func:`_abandon` of an async stream."""
    try:
        await _aclose(iterator)
    finally:
        call.abandon()


async def _aclose(iterator: Any) -> None:
    aclose = getattr(iterator, "aclose", None)
    if aclose is not None:
        await aclose()


async def _athrow(iterator: Any, thrown: BaseException) -> Any:
    athrow = getattr(iterator, "athrow", None)
    if athrow is None:
        raise thrown
    return await athrow(thrown)
