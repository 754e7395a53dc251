"""Switch sleeping off in your tests: :func:`no_sleep`."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from . import _sleeping

__all__ = ["no_sleep"]

# Closing blocks in two threads at once: each finds its list's index and deletes it
# as one step (an index found before the other's deletion would name another list).
_closing = threading.Lock()


@contextmanager
def no_sleep() -> Iterator[list[float]]:
    """While open, no loop of this library really sleeps; it yields the delays instead.

    Every driver (``retrying``, ``aretrying``, ``@retry``) and ``attempts``,
    in any thread or task of the process, records each delay it would have
    slept in the list this yields, with or without a ``sleep=`` of its own.
    Your code needs no ``sleep=`` plumbing to be tested:

    >>> from backoff_iter import retry
    >>> @retry([1.0, 2.0, 4.0], on=ConnectionError)
    ... def fetch(replies=iter([ConnectionError(), ConnectionError(), "ok"])):
    ...     reply = next(replies)
    ...     if isinstance(reply, Exception):
    ...         raise reply
    ...     return reply
    >>> with no_sleep() as slept:
    ...     fetch()
    'ok'
    >>> slept
    [1.0, 2.0]

    A delay recorded counts as time passed for its call: a ``deadline=``
    shortens and ends the schedule as it would in a real run (the delays of
    ``@retry([1.0, 1.0, 1.0], deadline=1.5)`` are ``[1.0, 0.5]``, all but
    the milliseconds the attempts took).  A rate limiter's wait before an
    attempt is recorded, but not counted so.

    Blocks nest; the innermost open one records - the one opened last in
    the process, whichever thread opened it: blocks open at once in two
    threads (tests run in parallel threads) share their delays, all in the
    newer list.  Give each such test a ``sleep=`` of its own instead.
    Opening and closing blocks is thread-safe.
    """
    slept: list[float] = []
    _sleeping.recorders.append(slept)
    try:
        yield slept
    finally:
        # By identity: two open blocks' lists may be equal.
        with _closing:
            recorders = _sleeping.recorders
            del recorders[max(i for i, r in enumerate(recorders) if r is slept)]
