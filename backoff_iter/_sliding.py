"""Time for the resilience parts: a clock that never runs backwards, and
counts over a sliding window of buckets.

Shared by the rate limiter, the throttle, the circuit breaker and the retry
budget.  Neither is thread-safe on its own: each owner calls them with its
lock held - but for the short way of :class:`SlidingCounts` (its tallies),
made for calling without the lock.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Union, cast

from ._checks import is_real

if TYPE_CHECKING:
    from decimal import Decimal
    from fractions import Fraction

    #: A clock of the user's: a function of no arguments returning seconds as
    #: a float, an int, a ``Decimal`` or a ``Fraction`` (read as its float by
    #: :func:`steady`).
    Clock = Callable[[], Union[float, Decimal, Fraction]]

# Readings beyond this are taken as "infinite": a time this large cannot be
# doubled or cubed without overflowing, and no real clock gets there.
_HUGE = 2.0**1000


#: The steady reading before any good one: no time has been read yet.
NOT_YET = -math.inf


def steady(value: float, last: float) -> float:
    """A clock's reading *value*, kept monotonic and finite after the steady
    reading *last* (:data:`NOT_YET` before the first good one): a reading
    that is NaN, infinite, beyond ±2**1000 or earlier than *last* counts as
    no time passed - *last* again.  The one clock guard of the library: the
    drivers, the parts and the fleet read their clocks through it
    (:class:`Readings` answers its common case, a reading ahead and within
    range, without the call; a test checks the two agree)."""
    if value.__class__ is not float:
        value = _reading(value)
    if -_HUGE <= value <= _HUGE and value > last:  # False for NaN
        return value
    return last


def _reading(value: object) -> float:
    """A clock's reading that is no float, as one: an int, a ``Decimal`` or a
    ``Fraction`` its float (``inf`` beyond floats); anything else is the error."""
    if not is_real(value):
        raise TypeError(f"a clock returned {value!r}: it must return a number of seconds")
    try:
        return float(value)  # type: ignore[arg-type]
    except OverflowError:  # an int beyond floats
        return math.inf
    except ValueError:  # Decimal('sNaN'): no time passed
        return math.nan


class Readings:
    """*clock*, made monotonic and finite by :func:`steady`.  A clock whose
    first reading is bad stands at 0.0, and its first good reading counts as
    no time passed too: from then on the readings are the clock's less that
    one (else a NaN, then 1000.0, would be 1000 s gone in no time).  An owner
    may read it without its lock: two threads racing may leave ``last`` a
    reading behind, so that a later reading may come a moment before one
    already returned - a count that lands in the newest bucket all the same."""

    __slots__ = ("clock", "last")

    def __init__(self, clock: Clock) -> None:
        # read as floats: steady() makes a Decimal's or a Fraction's reading its float
        self.clock = cast("Callable[[], float]", clock)
        self.last = NOT_YET

    def __call__(self) -> float:
        value, last = self.clock(), self.last
        if value.__class__ is float and last > NOT_YET and last < value <= _HUGE:
            self.last = value  # steady()'s common case, without a call
            return value
        self.last = now = steady(value, last)
        if now > NOT_YET:
            return now
        # A bad first reading: time stands at 0.0 until the first good one, and on from it.
        self.clock = _from_first_good(self.clock)
        self.last = 0.0
        return 0.0


def _from_first_good(clock: Callable[[], float]) -> Callable[[], float]:
    """*clock*'s readings as floats less its first good one (NaN until then)."""
    first = math.nan  # no good reading yet

    def read() -> float:
        nonlocal first
        value = clock()
        if value.__class__ is not float:
            value = _reading(value)
        if first != first:  # (NaN)
            if not -_HUGE <= value <= _HUGE:
                return math.nan
            first = value
        return value - first

    return read


def reader(clock: Clock) -> Callable[[], float]:
    """A function reading *clock* through :class:`Readings` - or
    ``time.monotonic`` itself, steady already (finite, never backwards):
    a part's success reads its clock once or twice, and this is most of it.

    >>> import time
    >>> reader(time.monotonic) is time.monotonic
    True
    >>> readings = iter([5, float("nan"), 3.0, 7.5])
    >>> read = reader(lambda: next(readings))
    >>> [read(), read(), read(), read()]
    [5.0, 5.0, 5.0, 7.5]
    >>> readings = iter([float("nan"), 1000, 1002.5])  # from the first good reading on
    >>> read = reader(lambda: next(readings))
    >>> [read(), read(), read()]
    [0.0, 0.0, 2.5]
    """
    return time.monotonic if clock is time.monotonic else Readings(clock).__call__


def first_past(position: Callable[[float], float], mark: int, guess: float) -> float:
    """The least float x with ``position(x) > mark``, for a non-decreasing
    *position* (a slot or bucket number) and a *guess* of x within a float or
    two (float arithmetic rounds), so that ``reading < first_past(...)`` says
    in one comparison that a reading is in slot *mark* or before; -inf when
    floats cannot say - beyond their range, or where the guess is not within
    a few floats (near 0.0 floats are dense: a window whose origin is below
    0 may put a whole bucket's edge there) - which no reading is below."""
    try:
        end = guess
        for _ in range(_WALK):  # a float or two late
            if not position(end) > mark:
                break
            end = math.nextafter(end, -math.inf)
        else:
            return -math.inf
        for _ in range(_WALK):  # ... or early
            if position(end) > mark:
                return end
            end = math.nextafter(end, math.inf)
    except (OverflowError, ValueError):
        pass
    return -math.inf


#: The floats first_past walks from its guess, at most, each way.
_WALK = 64


def detached(failure: object) -> BaseException | None:
    """A copy of the exception *failure* without its traceback, cause or
    context, for a long-lived part to keep as the cause of refusals to come
    (the original would keep the frames of its traceback alive, and every
    local in them); None for a result, or an exception that cannot be copied."""
    if not isinstance(failure, BaseException):
        return None
    import copy

    try:
        return copy.copy(failure)  # args and __dict__: no traceback, cause or context
    except Exception:  # an exception class whose arguments cannot be replayed
        return None


class SlidingCounts:
    """Two counts (say successes and failures) over the last *span* time units.

    The span is cut into *buckets* buckets of ``span / buckets``: an event
    counts from when it is added until the bucket it fell in leaves the
    window, between ``span - span / buckets`` and ``span`` later.  Adding and
    reading cost O(1) amortised and the memory is fixed.  Times must come
    from :func:`reader` (finite, never backwards); one a moment behind the
    newest bucket, as two threads racing may give, counts in that bucket.

    An event adds one to ``first`` or ``second``, and nothing else: each
    bucket keeps the two as it began, so the counts over the window are
    theirs less those the window's oldest bucket began with.
    """

    __slots__ = (
        "_span",
        "_firsts",
        "_seconds",
        "_first_left",
        "_second_left",
        "_index",
        "_origin",
        "_passed",
        "_ends",
        "first",
        "second",
    )

    first: int
    """Events of the first kind counted, in all (a fleet part sends them)."""
    second: int
    """Events of the second kind counted, in all."""

    def __init__(self, span: float, buckets: int) -> None:
        self._span = span
        self.first = self.second = 0
        # Per bucket of the window (a ring, the newest at _index): first and
        # second as it began; and as the oldest began, what left the window.
        self._firsts = [0] * buckets
        self._seconds = [0] * buckets
        self._first_left = self._second_left = 0
        self._index = 0
        self._origin: float | None = None  # when the first bucket began
        self._passed = 0  # the newest bucket's number, from 0 at the origin
        # The first reading past the newest bucket: below it, nothing moves
        # (-inf before the first reading).
        self._ends = -math.inf

    def _advance(self, now: float) -> None:
        """Move the window to *now*: the buckets it enters begin with the counts now."""
        origin = self._origin
        firsts, span = self._firsts, self._span
        size = len(firsts)
        if origin is None:
            self._origin = origin = now
        else:
            # Bucket k spans [origin + k x span / size, origin + (k + 1) x span / size):
            # multiplying before dividing keeps round numbers exact (12 s in 120
            # buckets: 13.0 s is bucket 130, not 129.99...).
            position = (now - origin) * size / span
            if position >= self._passed + size:  # everything left the window: afresh from now
                self.clear()
                self._origin = origin = now
            else:
                steps = int(position) - self._passed
                if steps <= 0:
                    return
                seconds, first, second = self._seconds, self.first, self.second
                index = self._index
                for _ in range(steps):
                    index = (index + 1) % size
                    firsts[index] = first
                    seconds[index] = second
                self._index = index
                oldest = (index + 1) % size
                self._first_left = firsts[oldest]
                self._second_left = seconds[oldest]
                self._passed += steps
        passed = self._passed
        self._ends = first_past(
            lambda x: int((x - origin) * size / span), passed, origin + (passed + 1) * span / size
        )

    # Each reading within the newest bucket is one comparison: no call.

    def add_first(self, now: float) -> None:
        """Count an event of the first kind."""
        if now >= self._ends:
            self._advance(now)
        self.first += 1

    def count_first(self, now: float, seconds: deque[float]) -> tuple[int, int]:
        """Count the second kind of events waiting in *seconds* (their times,
        taken out oldest first), then one of the first kind at *now*: the two
        counts over the window before it.  One call for a throttle's check,
        whose accepts wait there (told without its lock)."""
        while seconds:  # add_second() inline: no call under the lock
            then = seconds.popleft()
            if then >= self._ends:
                self._advance(then)
            self.second += 1
        if now >= self._ends:
            self._advance(now)
        first = self.first
        self.first = first + 1
        return first - self._first_left, self.second - self._second_left

    def add_second(self, now: float) -> None:
        """Count an event of the second kind."""
        if now >= self._ends:
            self._advance(now)
        self.second += 1

    def totals(self, now: float) -> tuple[int, int]:
        """The two counts over the window ending at *now*."""
        if now >= self._ends:
            self._advance(now)
        return self.first - self._first_left, self.second - self._second_left

    def clear(self) -> None:
        """Forget every event in the window (``first`` and ``second`` count on)."""
        size, first, second = len(self._firsts), self.first, self.second
        self._firsts = [first] * size
        self._seconds = [second] * size
        self._first_left, self._second_left = first, second
        self._index = 0
        self._origin = None
        self._passed = 0
        self._ends = -math.inf

    def restart(self) -> None:
        """Count ``first`` and ``second`` from 0 again, the window's counts kept
        (a fleet part's, in a new process)."""
        first, second = self.first, self.second
        self._firsts = [count - first for count in self._firsts]
        self._seconds = [count - second for count in self._seconds]
        self._first_left -= first
        self._second_left -= second
        self.first = self.second = 0
