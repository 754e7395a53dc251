"""How the async loops bound one attempt: a scope entered by ``async with
attempt:`` and left with it, under asyncio or trio.

At its timeout the scope cancels the attempt - only the attempt: the code in
the ``async with`` block - and leaving it turns that cancellation into the
builtin ``TimeoutError``, which the loop then retries like any failure.
The task's own cancellation is never taken for a timeout: it propagates.
"""

from __future__ import annotations

import math
import sys
from typing import Any

from . import _checks
from ._sleeping import running_library

__all__ = ["scope"]

_EXPIRED = "backoff_iter: the attempt timed out"


def _timed_out(seconds: float, cause: BaseException | None) -> TimeoutError:
    """The builtin ``TimeoutError`` an attempt cut after *seconds* ends with, the
    same under asyncio and trio, caused by the cancellation that cut it."""
    expired = TimeoutError(f"the attempt timed out after {seconds:g} s")
    expired.__cause__ = cause
    return expired


class _Scope:
    """What the loops need of a timeout scope."""

    async def __aenter__(self) -> None:  # pragma: no cover - an interface
        raise NotImplementedError

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any
    ) -> BaseException | None:
        """None, or the exception that replaces *exc*: the TimeoutError of an
        attempt that timed out (under trio, a group's failures besides the
        cancellations its scope took)."""
        raise NotImplementedError  # pragma: no cover - an interface


def scope(seconds: float) -> _Scope:
    """A timeout of *seconds* for the attempt about to run in the current task.

    *seconds* is ``call.timeout``, which a Part of the user's may set to any
    value: read as a delay is (a Decimal as its float, a number too large as
    ``inf``), and a bad one is an error naming it."""
    seconds = _checks.wait("call.timeout", seconds)
    library = running_library()
    if library == "asyncio":
        if sys.version_info >= (3, 11):
            return _AsyncioScope(seconds)
        return _LegacyAsyncioScope(seconds)  # pragma: no cover - Python 3.9 and 3.10 only
    if library == "trio":
        return _TrioScope(seconds)
    raise RuntimeError(
        "attempt_timeout needs a running asyncio or trio event loop to cancel an attempt"
    )


# Defined where asyncio.timeout exists, as scope() makes it: type checkers
# targeting Python 3.9 or 3.10 then see no use of what those lack.
if sys.version_info >= (3, 11):

    class _AsyncioScope(_Scope):
        """asyncio.timeout (Python 3.11+), which tells its own expiry from the task's cancellation."""

        def __init__(self, seconds: float) -> None:
            import asyncio

            self._seconds = seconds
            self._timeout = asyncio.timeout(None if seconds == math.inf else seconds)

        async def __aenter__(self) -> None:
            await self._timeout.__aenter__()

        async def __aexit__(
            self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any
        ) -> TimeoutError | None:
            try:
                await self._timeout.__aexit__(exc_type, exc, tb)
            except TimeoutError as expired:  # (asyncio's says nothing: ours says how long)
                return _timed_out(self._seconds, expired.__cause__)
            return None


class _LegacyAsyncioScope(_Scope):
    """A timer that cancels the task with a message of its own, which tells its
    cancellation from the task's (Python 3.9 and 3.10 have no asyncio.timeout).

    A caller's ``task.cancel()`` landing in the same pass of the event loop as
    the expiry wins: the timer asks for its cancellation twice, so that the
    task remembers its message (the first request cancels the future the task
    waits on, the second is kept by the task), and a later request of the
    caller replaces that message - then the cancellation is the caller's,
    never a timeout."""

    def __init__(self, seconds: float) -> None:
        self._seconds = seconds
        self._handle: Any = None
        self._expired = False

    async def __aenter__(self) -> None:
        import asyncio

        task = asyncio.current_task()
        if self._seconds < math.inf and task is not None:

            def expire() -> None:
                self._expired = True
                task.cancel(_EXPIRED)
                task.cancel(_EXPIRED)  # kept by the task, until a caller's request replaces it

            self._handle = asyncio.get_running_loop().call_later(self._seconds, expire)

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any
    ) -> TimeoutError | None:
        import asyncio

        if self._handle is not None:
            self._handle.cancel()
        task = asyncio.current_task()
        if not self._expired or not isinstance(exc, asyncio.CancelledError):
            return None
        if exc.args == (_EXPIRED,):
            if getattr(task, "_cancel_message", _EXPIRED) != _EXPIRED:  # a caller's came since
                return None
        elif exc.args or not _expired_within(exc):
            return None
        return _timed_out(self._seconds, exc)


#: The most contexts of a cancellation read for the timer's message.
_MOST_LINKS = 8


def _expired_within(cancelled: BaseException) -> bool:
    """Whether *cancelled*, a CancelledError with no message, came of the
    timer's: Python 3.9 and 3.10 drop the message as a cancellation leaves a
    task the attempt awaited (``gather``'s, ``ensure_future``'s), but the
    task's own error, its context, keeps it - or the caller's, if theirs came
    in the same pass (the message of the first link that has one tells).
    The task ran in frames of its own: a context raised in a frame of the
    error itself is no message dropped but one handled there - the attempt
    caught the timer's cancellation and was cancelled again as it cleaned
    up, by its caller, whose cancellation goes through.  One that comes
    while an awaited task cleans up is lost to it (it ends with the timer's),
    and the attempt is taken for timed out, as ``async_timeout`` takes it on
    those Pythons."""
    import asyncio

    own = _frames(cancelled)
    for link in _checks.contexts(cancelled, _MOST_LINKS):
        if not isinstance(link, asyncio.CancelledError) or not own.isdisjoint(_frames(link)):
            return False
        if link.args:
            return link.args == (_EXPIRED,)
    return False


def _frames(error: BaseException) -> set[int]:
    """The frames *error* went through (their ids)."""
    frames = set()
    trace = error.__traceback__
    while trace is not None:
        frames.add(id(trace.tb_frame))
        trace = trace.tb_next
    return frames


class _TrioScope(_Scope):
    """trio's cancel scope with a deadline."""

    def __init__(self, seconds: float) -> None:
        self._seconds = seconds
        self._scope: Any = None

    async def __aenter__(self) -> None:
        import trio

        self._scope = trio.CancelScope(deadline=trio.current_time() + self._seconds)
        self._scope.__enter__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any
    ) -> BaseException | None:
        try:
            self._scope.__exit__(exc_type, exc, tb)
        except BaseException as rest:
            if not self._scope.cancelled_caught:
                raise
            # It took the cancellations out of a group (the attempt's nursery) and
            # raised the rest: the attempt's failure, as asyncio's TaskGroup raises it.
            return rest
        if self._scope.cancelled_caught:  # its deadline cancelled the attempt
            return _timed_out(self._seconds, exc)
        return None
