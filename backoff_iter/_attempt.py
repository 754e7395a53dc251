"""One attempt of a retry loop: the context manager that hands its outcome to the call.

``for attempt in call: with attempt: ...`` - :class:`Attempt` checks that it
is used as its loop hands it out, and gives :meth:`Call.settle
<backoff_iter._core.Call.settle>` (or ``asettle``) the attempt's exception or
result; the call decides, sleeps, and says whether the block's failure is
swallowed.  An async attempt also runs inside its ``attempt_timeout`` scope.
"""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from . import _timeouts
from .hints import clamped

if TYPE_CHECKING:
    from ._core import Call

__all__ = ["Attempt"]

T = TypeVar("T")

_NO_RESULT: Any = object()  # an attempt that handed over no result

# A call's state: its next attempt may come (the first, or after a retry),
# the attempt handed out waits to be entered, runs in its `with` block, or
# the call is over.
_NEXT, _READY, _RUNNING, _DONE = range(4)


def timeout_scope(call: Call, seconds: float) -> _timeouts._Scope:
    """The scope that cancels an async attempt of *call* at its timeout of
    *seconds*.  A bad ``call.timeout`` (a Part of the user's set it), or no
    event loop to cut the attempt, is the caller's bug: it ends the call at
    once (``Call.stop``), as a bad hint does, never retried."""
    try:
        return _timeouts.scope(seconds)
    except BaseException as error:
        call.stop(error)
        raise


class Attempt:
    """One attempt of a retry loop; run it in ``with attempt:`` (``async with``).

    A failure the policy retries is swallowed when the block exits, after
    the sleep before the next attempt; any other failure propagates from the
    block, as if there were no loop.
    """

    number: int
    """This attempt's number, from 1."""
    delay: float
    """The seconds slept before it (0.0 for the first)."""
    elapsed: float
    """Seconds from the start of the first attempt to the start of this one, per ``clock``."""
    timeout: float | None = None
    """Seconds this attempt may take (``attempt_timeout``, shortened to the
    deadline), or None without ``attempt_timeout``.  The async loops cancel
    the attempt at its timeout; in a sync loop, hand it to your call
    (``requests.get(url, timeout=attempt.timeout)``)."""

    _result: Any  # handed over by set_result()
    _bug: BaseException | None  # the caller's own error, from retry_after()
    _scope: Any = None  # the timeout scope of an async attempt (set in its `async with`)

    def __init__(
        self, call: Call, number: int, delay: float, elapsed: float, timeout: float | None = None
    ) -> None:
        # Every attribute the block's exit reads is set here: an instance's own
        # is read quickly, a class default through an instance slowly on 3.11.
        self._call = call
        self.number = number
        self.delay = delay
        self.elapsed = elapsed
        self.timeout = timeout
        self._result = _NO_RESULT
        self._bug = None

    def retry_after(self, seconds: float) -> None:
        """Make the next sleep at least *seconds* long (a server's ``Retry-After``).

        The hint is clamped to the policy's ``retry_after_max``; if the wait
        would end past the deadline, or is too long to sleep, no further
        attempt is made.  A negative, NaN or non-number *seconds* is a bug
        of the caller: its error propagates, never retried.
        """
        try:
            self._call.hint = clamped(seconds, self._call.policy.retry_after_max, "seconds")
        except (TypeError, ValueError) as error:
            self._bug = error
            raise

    def set_result(self, value: T) -> T:
        """Hand the attempt's result to the policy's ``on_result``, and return it.

        In the loop forms, call it inside ``with attempt:``: a result that
        ``on_result`` accepts is retried like a failure, and when the retries
        run out the loop ends with that last result in your variable.
        """
        self._result = value
        return value

    def __enter__(self) -> Attempt:
        call = self._call
        if call.state != _READY or call.number != self.number or call.in_async:
            call.misuse(self, "with")
        call.state = _RUNNING
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        call = self._call
        if call.state != _RUNNING or call.number != self.number:
            return call.misuse(self, "with", exc)
        if exc is None:
            if call.quiet:  # a success nobody needs told of
                call.state = _DONE
            elif call.policy.on_result is None:  # nothing to decide: told at once
                call.succeeded(self._result)
            else:
                return call.settle(self, None, self._result)
            return False
        if exc is self._bug:
            return call.stop(exc)
        return call.settle(self, exc, self._result)

    async def __aenter__(self) -> Attempt:
        call = self._call
        if call.state != _READY or call.number != self.number or not call.in_async:
            call.misuse(self, "async with")
        call.state = _RUNNING
        if self.timeout is not None:
            self._scope = timeout_scope(call, self.timeout)
            await self._scope.__aenter__()
        else:
            self._scope = None  # (its own, read quickly at the exit)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        call = self._call
        if call.state != _RUNNING or call.number != self.number:
            try:  # raises, unless exc is the misuse ending the call, which goes through
                call.misuse(self, "async with", exc)
            finally:  # either way its timeout goes with it (the block may have caught the misuse)
                scope, self._scope = self._scope, None
                if scope is not None:
                    await scope.__aexit__(exc_type, exc, traceback)
            return False
        if exc is None and call.quiet:  # a success nobody needs told of (and no timeout)
            call.state = _DONE
            return False
        expired = None
        if self._scope is not None:  # the attempt's timeout: its expiry is a TimeoutError
            # (under trio, a failure its scope left beside the cancellations it took)
            expired = await self._scope.__aexit__(exc_type, exc, traceback)
            self._scope = None
            if expired is not None:
                exc = expired
        if exc is None and call.policy.on_result is None:  # nothing to decide: told at once
            call.succeeded(self._result)
            return False
        if exc is not None and exc is self._bug:
            return call.stop(exc)
        if await call.asettle(self, exc, self._result):
            return True
        if expired is not None:
            raise expired
        return False

    def __repr__(self) -> str:
        return f"<Attempt number={self.number} delay={self.delay!r} elapsed={self.elapsed!r}>"
