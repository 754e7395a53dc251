"""Adaptors: take any iterable of delays and return an iterator.

They work on the strategies of this library, on lists, and on any generator
a user writes; each one checks its arguments when called.  A delay they
compute with is read as the drivers read one: any real number (an integer
beyond floats is ``inf``, never an ``OverflowError``), and a negative, NaN
or non-number one is the argument error naming ``delays``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from itertools import accumulate, repeat
from typing import Any, cast

from . import _checks, _jitter

__all__ = ["capped", "elapsed", "jittered", "within"]


def _given(delays: Iterable[float]) -> Iterator[float]:
    """An iterator of *delays*; a list or tuple, given whole, is checked at
    once (as the drivers check one), not when the bad delay comes up.

    >>> _given([1, -1])
    Traceback (most recent call last):
    ...
    backoff_iter.ArgumentValueError: delays must give non-negative numbers of seconds, got -1
    """
    if isinstance(delays, (list, tuple)):
        _checks.listed("delays", delays)
    return _checks.iterable("delays", delays)


def capped(delays: Iterable[float], cap: float) -> Iterator[float]:
    """Each delay, but never more than *cap*: ``min(cap, d)``.

    >>> list(capped([1, 5, 2, 10], 4))
    [1, 4.0, 2, 4.0]
    """
    cap = _checks.seconds("cap", cap, infinite=True)
    # min(cap, d) keeps the first argument, the cap, on ties.
    return map(min, repeat(cap), map(_seconds, _given(delays)))


def jittered(
    delays: Iterable[float], kind: str | float = "full", *, rng: Any = None
) -> Iterator[float]:
    """Each delay with random jitter added, as chosen by *kind*.

    - ``"full"``: ``uniform(0, d)``
    - ``"equal"``: ``d/2 + uniform(0, d/2)``
    - a fraction ``f`` in (0, 1]: ``uniform(d·(1-f), d·(1+f))``, "plus or
      minus f"

    >>> from random import Random
    >>> [round(d, 3) for d in jittered([10, 10, 10], 0.1, rng=Random(3))]
    [9.476, 10.088, 9.74]
    >>> all(5 <= d <= 10 for d in jittered([10] * 100, "equal"))
    True
    """
    delays = map(_seconds, _given(delays))
    if kind == "full":
        return _jitter.full(delays, _jitter.random_source(rng))
    if kind == "equal":
        return _jitter.equal(delays, _jitter.random_source(rng))
    fraction = None if isinstance(kind, str) else _checks.number("kind", kind)
    if fraction is None or not 0.0 < fraction <= 1.0:
        raise _checks.ArgumentValueError(
            "kind",
            f"kind must be 'full', 'equal' or a fraction in (0, 1], got {_checks.shown(kind)}",
        )
    return _jitter.spread(delays, fraction, _jitter.random_source(rng))


def within(delays: Iterable[float], total: float) -> Iterator[float]:
    """The delays, in order, while their running sum stays within *total*.

    It stops before the first delay that would take the sum past *total*, so
    an infinite strategy becomes a finite time budget:

    >>> from backoff_iter import exponential
    >>> list(within(exponential(1), 10))
    [1.0, 2.0, 4.0]
    >>> list(within([3, 3, 3], 9))
    [3, 3, 3]
    """
    total = _checks.seconds("total", total, infinite=True)
    return _within(_given(delays), total)


def _within(delays: Iterator[float], total: float) -> Iterator[float]:
    spent = 0.0
    for delay in delays:
        spent += delay if delay.__class__ is float and delay >= 0.0 else _seconds(delay)
        if spent > total:
            return
        yield delay


def elapsed(delays: Iterable[float]) -> Iterator[float]:
    """Running totals: the time slept so far after each delay.

    >>> from itertools import islice
    >>> from backoff_iter import exponential
    >>> list(islice(elapsed(exponential(1)), 5))
    [1.0, 3.0, 7.0, 15.0, 31.0]
    """
    return accumulate(map(_seconds, _given(delays)), _add)


def _add(total: float, delay: float) -> float:
    """``total + delay``; ``inf`` for a whole-number total beyond floats plus a float
    (an exact int + a float converts the int: an ``OverflowError``)."""
    try:
        return total + delay
    except OverflowError:
        return math.inf


def _seconds(delay: Any) -> float:
    """A delay of the user's iterable as a number of seconds (see the module's
    docstring); a float or an int that needs no change is itself, at once."""
    kind = delay.__class__
    if (kind is float and delay > 0.0) or (kind is int and 0 <= delay <= _checks.FLOAT_MAX):
        return cast("float", delay)
    if kind is float and delay == 0.0:  # -0.0 as 0.0
        return 0.0
    seconds = _checks.wait("delays", delay)  # checked: a number, not negative nor NaN
    if seconds == math.inf:  # too long to sleep, but a sum or a bound still reads it
        try:
            return float(delay)
        except OverflowError:  # beyond floats
            pass
    return seconds
