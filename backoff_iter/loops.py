"""Loop helpers that turn an iterable of delays into a sequence of attempts."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator

from . import _checks, _sleeping

__all__ = ["attempts"]


def attempts(
    delays: Iterable[float], *, sleep: Callable[[float], object] | None = None
) -> Iterator[int]:
    """Attempt numbers 1, 2, 3, ..., sleeping the next delay between two of them.

    It never sleeps before the first attempt nor after the last, so *n*
    delays give *n + 1* attempts.  Leave the loop with ``break`` (or
    ``return``) on success; falling off its end means every attempt failed:

    >>> from itertools import islice
    >>> from backoff_iter import exponential
    >>> slept = []
    >>> for attempt in attempts(islice(exponential(0.1), 3), sleep=slept.append):
    ...     if attempt == 3:
    ...         break
    >>> slept
    [0.1, 0.2]

    *sleep* defaults to :func:`time.sleep`, looked up at each sleep (so a
    test that patches it is obeyed, as in the retry drivers), and
    :func:`backoff_iter.testing.no_sleep` switches it off.  A delay that is
    negative or NaN raises ``ValueError`` instead of being slept, a
    non-number ``TypeError``; an infinite delay (or one longer than the
    platform can sleep) ends the loop: there is no next attempt.
    """
    if sleep is not None:
        _checks.callback("sleep", sleep, ("seconds",))  # (never awaited: a sync loop)
    return _attempts(_checks.iterable("delays", delays), sleep)


def _attempts(delays: Iterator[float], sleep: Callable[[float], object] | None) -> Iterator[int]:
    yield 1
    for number, delay in enumerate(delays, 2):
        seconds = _checks.wait("delays", delay)
        if seconds == math.inf:
            return
        _sleeping.sleep(sleep, seconds)
        yield number
