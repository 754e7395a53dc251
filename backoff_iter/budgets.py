"""Retry budgets: one object shared by every call to a dependency, so that
retries cannot multiply the load on it when it is overloaded.

A budget answers, on each retryable failure, "may this call retry now?".
When it says no, the driver gives up at once and the last failure (or
result) stands, exactly as when the delays run out.  The budgets here are
thread-safe, never block and hold no lock across a sleep; share one among
any number of threads, asyncio tasks and retry loops.  Given a ``store``
(:class:`backoff_iter.fleet.RedisStore`), ``TokenBucket``, ``RetryBudget``
and ``RetryQuota`` count for a whole fleet of processes instead of one.

>>> from backoff_iter import TokenBucket, retry
>>> bucket = TokenBucket(max_tokens=10, token_ratio=0.1)
>>> @retry([0.0] * 9, budget=bucket, sleep=lambda seconds: None)
... def down():
...     raise ConnectionError("overloaded")
>>> attempts = []
>>> for call in range(3):
...     try:
...         down()
...     except ConnectionError:
...         attempts.append(round(10 - bucket.tokens))
>>> attempts  # tokens spent so far: the first call retried 4 times, later ones never
[5, 6, 7]
"""

from __future__ import annotations

import _thread
import math
import time
from typing import TYPE_CHECKING, Any, Protocol, cast

from . import _checks
from ._filters import is_timeout
from ._sliding import first_past, reader
from ._stores import fleet_class as _fleet_class

if TYPE_CHECKING:
    from ._sliding import Clock
    from .fleet import Store

__all__ = ["Budget", "RetryBudget", "RetryQuota", "TokenBucket"]

# Successes (a retry budget's calls) are noted without the lock: appended to
# a list, which is thread-safe.  Under the lock, whatever reads or decides
# next takes them in with ``len()`` and ``del`` of a slice and arithmetic: on
# the hot paths nothing under a lock calls a function but ``len()``, since
# CPython may switch threads after a call, and a thread switched out holding
# the lock makes every other thread queue behind it (one ``itertools.count``
# step under a hand-written bucket's lock took 2 threads from 0.96 to 0.45 of
# one thread's throughput, on 3.11).  Past this many noted, a success takes
# them in itself, under the lock: the list stays short.
_MOST_NOTED = 1024

# On locks: every part takes its lock with ``with lock:``, never as
# ``lock.acquire()`` then ``try:``/``finally: lock.release()``.  The latter
# costs half as much (``with`` looks up and calls ``__enter__`` and
# ``__exit__``: 80-110 ns a use on 3.11 and 3.13), but an exception a signal
# handler raises (KeyboardInterrupt) as ``acquire()`` returns lands before
# the ``try:`` and leaves the lock held for good: every later call on the part
# then hangs.  ``with`` leaves no such gap (3.10+): a review made it happen
# hundreds of times a second with one, never with the other.


class Budget(Protocol):
    """What a driver asks of a budget; implement these three to write your own.

    For one call (one run of a retry policy):

    - ``record_failure(first_attempt)``: an attempt failed in a way the
      policy retries (a matching exception, or a result ``on_result``
      accepts), whether or not a retry follows; *first_attempt* tells
      whether it was the call's first.
    - ``try_retry(outcome) -> float``: may the call retry now?  Asked after
      ``record_failure``, and last, once the delays and the deadline leave
      room.  A retry it allowed may still not run (a breaker or a throttle
      refuses it, or a ``before_sleep`` hook runs past the deadline): a
      budget with ``give_back`` then gets it back.  *outcome* is the exception
      or retried result.  A falsy answer (``0``, ``False``) refuses; a truthy
      one allows, and is what the retry took from the budget (``True``
      counts as 1, for budgets that do not weigh retries).
    - ``record_success(first_attempt, spent=0.0)``: an attempt succeeded (or
      its result was not retried).  *spent* is what this call's last retry
      took (its ``try_retry`` answer; ``0.0`` when it never retried), so a
      budget can give back what a call that recovered used, as botocore's
      quota does; for a hedged call, what its unneeded hedges took too.
    - ``give_back(taken)``, optional: a retry ``try_retry`` allowed, taking
      *taken*, never ran (a breaker or a throttle refused it, a hook ran
      past the deadline, the call was cancelled in its sleep, or an error
      ended it first: a part asked after the budget, or a jitter drawn
      after it, raised).
      ``RetryQuota`` has it; a ``RetryBudget``'s withdrawal stays (given
      back in a later slot of its window, it would outlive the withdrawal).
    """

    def record_success(self, first_attempt: bool, spent: float = 0.0) -> None: ...

    def record_failure(self, first_attempt: bool) -> None: ...

    def try_retry(self, outcome: Any) -> float: ...


#: The largest reserve a RetryBudget takes, in retries a second: a billion
#: (counted in thousandths, over a minute, it stays an exact integer).
_MOST_PER_SECOND = 1e9


def _thousandths(name: str, value: float, unit: str, minimum: int = 1) -> int:
    """*value* counted in whole thousandths, refusing what they cannot hold.
    A value off whole thousandths by float rounding alone (``0.1 * 3``, sums)
    is taken: within 1e-12 of itself, thousands of times float rounding's
    error, and small enough to refuse a fraction of a thousandth up to sizes
    of hundreds of millions (1e-9 took any size of 500,000 or more, rounded)."""
    milli = value * 1000.0
    whole = round(milli)
    if whole < minimum or abs(milli - whole) > 1e-12 * milli:
        smallest = "0" if minimum == 0 else "0.001"
        raise _checks.ArgumentValueError(
            name,
            f"{name} is counted in thousandths of {unit}: it must be a whole number"
            f" of them, at least {smallest} (0.001, 0.1, 2.5), got {_checks.shown(value)}",
        )
    return whole


class TokenBucket:
    """gRPC's retry throttling (design A6): retries stop while failures dominate.

    ``tokens`` starts at *max_tokens*.  Every failed attempt takes one token
    (not below 0), every successful one adds *token_ratio* (not above
    *max_tokens*), and a retry is allowed only while ``tokens`` is greater
    than ``max_tokens / 2``, checked after the failure took its token.
    Counted in thousandths of a token, as gRPC does, so no float drift moves
    the threshold: both numbers must be whole thousandths (``0.1`` is,
    ``0.0004`` is not).  Thread-safe; a success takes no lock (but one in
    1,025 with nothing between to take in those before it).

    With ``store=`` a :class:`backoff_iter.fleet.RedisStore`, every process
    using the same store name shares one bucket (see :mod:`backoff_iter.fleet`).

    >>> bucket = TokenBucket(max_tokens=4, token_ratio=0.5)
    >>> bucket.record_failure(True); bucket.try_retry(None), bucket.tokens
    (True, 3.0)
    >>> bucket.record_failure(False); bucket.try_retry(None), bucket.tokens
    (False, 2.0)
    >>> bucket.record_success(True); bucket.tokens
    2.5
    """

    __slots__ = (
        "max_tokens",
        "token_ratio",
        "_milli",
        "_max",
        "_ratio",
        "_threshold",
        "_lock",
        "_successes",
        "_plans",  # the plans of the policies given it: see parts.kept_plans
    )

    max_tokens: float
    """The bucket's size as given (a float)."""
    token_ratio: float
    """Tokens a success adds as given (a float)."""

    def __new__(
        cls, max_tokens: float = 10.0, token_ratio: float = 0.1, *, store: Store | None = None
    ) -> TokenBucket:
        return object.__new__(cls if store is None else _fleet_class(cls, store))

    def __init__(
        self, max_tokens: float = 10.0, token_ratio: float = 0.1, *, store: Store | None = None
    ) -> None:
        max_tokens = _checks.number("max_tokens", max_tokens)
        if not 0.0 < max_tokens <= 1000.0:
            raise _checks.ArgumentValueError(
                "max_tokens", f"max_tokens must be in (0, 1000], got {_checks.shown(max_tokens)}"
            )
        token_ratio = _checks.number("token_ratio", token_ratio)
        if not 0.0 < token_ratio < float("inf"):
            raise _checks.ArgumentValueError(
                "token_ratio",
                f"token_ratio must be a finite number above 0, got {_checks.shown(token_ratio)}",
            )
        self.max_tokens = max_tokens
        self.token_ratio = token_ratio
        self._max = _thousandths("max_tokens", max_tokens, "a token")
        # A ratio of 1000 tokens or more fills any bucket with one success.
        self._ratio = (
            _thousandths("token_ratio", token_ratio, "a token")
            if token_ratio < 1000.0
            else 1_000_000
        )
        self._threshold = self._max / 2
        self._milli = self._max
        self._lock = _thread.allocate_lock()
        # Successes noted, not yet added to the tokens (see _MOST_NOTED).
        # Successes only add and failures only take, so adding a run of
        # successes at once, capped, is what adding them one by one gives.
        self._successes: list[None] = []

    @property
    def tokens(self) -> float:
        """The tokens now in the bucket."""
        with self._lock:
            TokenBucket._fold(self)
            return self._milli / 1000

    def record_success(self, first_attempt: bool, spent: float = 0.0) -> None:
        """A successful attempt adds ``token_ratio`` tokens."""
        successes = self._successes
        successes.append(None)
        if len(successes) > _MOST_NOTED:
            with self._lock:
                self._fold()

    def _fold(self) -> None:
        """Add the successes noted to the tokens (lock held)."""
        successes = self._successes
        added = len(successes)
        del successes[:added]
        milli = self._milli + added * self._ratio
        self._milli = milli if milli < self._max else self._max

    # Below, the successes noted are added inline: no call under the lock.

    def record_failure(self, first_attempt: bool) -> None:
        """A failed attempt takes one token."""
        with self._lock:
            milli, successes = self._milli, self._successes
            if successes:
                added = len(successes)
                del successes[:added]
                milli += added * self._ratio
                if milli > self._max:
                    milli = self._max
            milli -= 1000
            self._milli = milli if milli > 0 else 0

    def try_retry(self, outcome: Any) -> bool:
        """True while more than half the tokens are left."""
        with self._lock:
            successes = self._successes
            if successes:
                added = len(successes)
                del successes[:added]
                milli = self._milli + added * self._ratio
                self._milli = milli if milli < self._max else self._max
            return self._milli > self._threshold

    def __repr__(self) -> str:
        return (
            f"TokenBucket(max_tokens={self.max_tokens!r},"
            f" token_ratio={self.token_ratio!r}) with {self.tokens} tokens"
        )


class RetryBudget:
    """Finagle's retry budget: retries at most *ratio* of the calls, plus a reserve.

    Every call (its first attempt) deposits *ratio*, every retry withdraws
    one: a retry is allowed only while, over the last *window* seconds of
    *clock*, the retries, itself included, stay within ``ratio`` times the
    calls plus a reserve of ``min_per_second * window``.  So under a total
    outage the load on the dependency is at most ``1 + ratio`` times the
    offered load, plus the small reserve that lets a quiet client still
    retry.  The window is ``ceil(window)`` slots of ``window / ceil(window)``
    seconds each (one-second slots for a whole number of seconds), and both
    the calls and the reserve are counted over it.

    The reserve behaves as Finagle's: a quiet client may spend all of it in
    one burst, and each retry it paid for comes back when that retry leaves
    the window - on average ``min_per_second`` retries a second, never more
    than ``min_per_second * window`` within one window.  A clock that goes
    backwards, or returns ``inf`` or NaN, counts as no time passing.
    Deposits are counted in thousandths of a retry: *ratio* must be a whole
    number of them (``0.2`` and ``0.001`` are, ``0.0005`` is not).

    Each process keeps its retries to *ratio* of its own calls, but the
    reserve is per process: a fleet of n processes has n reserves.  With
    ``store=`` a :class:`backoff_iter.fleet.RedisStore` the whole fleet
    shares one window and one reserve (see :mod:`backoff_iter.fleet`).
    Thread-safe.

    >>> now = [0.0]
    >>> budget = RetryBudget(ratio=0.5, min_per_second=0, window=10, clock=lambda: now[0])
    >>> for call in range(4):
    ...     budget.record_failure(True)  # four calls, each failing at once
    >>> [budget.try_retry(None) for _ in range(3)]  # 0.5 x 4 calls: two retries
    [True, True, False]
    >>> now[0] = 10.0  # a window later, those calls no longer count
    >>> budget.record_failure(True); budget.try_retry(None)
    False
    """

    __slots__ = (
        "ratio",
        "min_per_second",
        "window",
        "_clock",
        "_deposit",
        "_reserve",
        "_width",
        "_slots",
        "_slot",
        "_balance",
        "_lock",
        "_calls",
        "_ends",
        "_deposited",
        "_plans",  # the plans of the policies given it: see parts.kept_plans
    )

    ratio: float
    """Retries allowed per call made in the window."""
    min_per_second: float
    """The reserve: retries per second allowed with no calls at all."""
    window: float
    """Seconds the calls, the retries and the reserve are counted over."""

    # Each retry costs _UNIT; each call deposits ratio * _UNIT, in integers.
    _UNIT = 1000

    def __new__(
        cls,
        ratio: float = 0.2,
        min_per_second: float = 10.0,
        window: float = 10.0,
        *,
        clock: Clock = time.monotonic,
        store: Store | None = None,
    ) -> RetryBudget:
        return object.__new__(cls if store is None else _fleet_class(cls, store))

    def __init__(
        self,
        ratio: float = 0.2,
        min_per_second: float = 10.0,
        window: float = 10.0,
        *,
        clock: Clock = time.monotonic,
        store: Store | None = None,
    ) -> None:
        ratio = _checks.number("ratio", ratio)
        if not 0.0 <= ratio <= 1000.0:
            raise _checks.ArgumentValueError(
                "ratio", f"ratio must be in [0, 1000], got {_checks.shown(ratio)}"
            )
        min_per_second = _checks.number("min_per_second", min_per_second)
        if not 0.0 <= min_per_second <= _MOST_PER_SECOND:
            raise _checks.ArgumentValueError(
                "min_per_second",
                f"min_per_second must be in [0, {_MOST_PER_SECOND:g}] retries a second,"
                f" got {_checks.shown(min_per_second)}",
            )
        window = _checks.number("window", window)
        if not 1.0 <= window <= 60.0:
            raise _checks.ArgumentValueError(
                "window", f"window must be in [1, 60] seconds, got {_checks.shown(window)}"
            )
        _checks.callback("clock", clock, ())
        self.ratio = ratio
        self.min_per_second = min_per_second
        self.window = window
        self._clock = reader(clock)  # made steady, and floats, unless time.monotonic
        # A call's deposit in thousandths of a retry: a ratio they cannot hold is refused
        # (0.0005 would deposit nothing, 0.0015 as much as 0.002).
        self._deposit = _thousandths("ratio", ratio, "a retry per call", minimum=0)
        self._reserve = round(min_per_second * window * self._UNIT)
        slots = math.ceil(window)
        self._width = window / slots
        # Per slot of the window: what was deposited minus withdrawn.
        self._slots = [0] * slots
        self._slot: int | None = None  # the number of the newest slot
        self._balance = 0  # the sum of the slots
        self._lock = _thread.allocate_lock()
        # Calls in the newest slot are only noted (see _MOST_NOTED) and added
        # to it, under the lock, before the window moves or is read.
        self._calls: list[None] = []
        # The first reading past the newest slot, once a call was deposited
        # (-inf before: no reading is below it).
        self._ends = -math.inf
        # What calls deposited, in all: a fleet's budget takes it in (what it
        # sends and may spend) and starts it again from 0.
        self._deposited = 0

    def _advance(self, now: float | None = None) -> int:
        """Add the calls counted since last time to the newest slot, then move the
        window to *now* (the clock's reading now if None), forgetting the slots that
        left it; the newest slot's index.  Call with the lock held."""
        if now is None:
            now = self._clock()
        try:
            slot = math.floor(now / self._width)
        except (OverflowError, ValueError):  # inf or NaN: no time passed
            slot = 0 if self._slot is None else self._slot
        slots = self._slots
        calls = self._calls
        if calls:  # only noted once there is a newest slot
            added = len(calls)
            del calls[:added]
            deposit = added * self._deposit
            slots[self._slot % len(slots)] += deposit  # type: ignore[operator]
            self._balance += deposit
            self._deposited += deposit
        if self._slot is None:
            self._slot = slot
        elif slot > self._slot:  # a clock going backwards moves nothing
            gone = min(slot - self._slot, len(slots))
            for offset in range(1, gone + 1):
                index = (self._slot + offset) % len(slots)
                self._balance -= slots[index]
                slots[index] = 0
            self._slot = slot
        return self._slot % len(slots)

    def record_success(self, first_attempt: bool, spent: float = 0.0) -> None:
        """A call that succeeded at once deposits."""
        if first_attempt:  # _call_at's short way inline: the success path is the hot one
            now, calls = self._clock(), self._calls
            if now < self._ends and len(calls) < _MOST_NOTED:
                calls.append(None)
            else:
                self._call_at(now)

    def record_failure(self, first_attempt: bool) -> None:
        """A call whose first attempt failed deposits too."""
        if first_attempt:
            self._record_call()

    def _record_call(self) -> None:
        self._call_at(self._clock())

    def _call_at(self, now: float) -> None:
        """Deposit a call made *now*, per the clock."""
        calls = self._calls
        if now < self._ends and len(calls) < _MOST_NOTED:
            # The newest slot (or before: the clock went back).  Noted without the
            # lock; should another thread move the window meanwhile, the call
            # lands in the next slot, as if a moment later.
            calls.append(None)
            return
        with self._lock:
            index = self._advance(now)
            self._slots[index] += self._deposit
            self._balance += self._deposit
            self._deposited += self._deposit
            slot, width = cast(int, self._slot), self._width
            self._ends = first_past(lambda x: math.floor(x / width), slot, (slot + 1) * width)

    def try_retry(self, outcome: Any) -> bool:
        """Withdraw one retry if the window's deposits and the reserve allow it."""
        now = self._clock()  # read before the lock is taken
        with self._lock:
            slots = self._slots
            if now < self._ends:
                # The window need not move: _advance inline, without a call under the lock.
                index = self._slot % len(slots)  # type: ignore[operator]
                calls = self._calls
                if calls:
                    added = len(calls)
                    del calls[:added]
                    deposit = added * self._deposit
                    slots[index] += deposit
                    self._balance += deposit
            else:
                index = self._advance(now)
            if self._reserve + self._balance < self._UNIT:
                return False
            slots[index] -= self._UNIT
            self._balance -= self._UNIT
            return True

    def __repr__(self) -> str:
        return (
            f"RetryBudget(ratio={self.ratio!r}, min_per_second={self.min_per_second!r},"
            f" window={self.window!r})"
        )


class RetryQuota:
    """The AWS SDKs' retry quota (their "standard" retry mode): retries spend
    from a quota that successful calls refill.

    The quota starts at *capacity*.  A retry takes *retry_cost* from it, or
    *throttle_cost* when the failure is a throttle - one the driver's
    ``throttled=`` predicate names - or, given, *timeout_cost* when it is a
    timeout (:func:`~backoff_iter.is_timeout`); when the quota cannot pay,
    the retry is refused (``try_retry`` returns 0) and nothing is taken.  A
    call that succeeded at once gives back *success_refund*; one that
    succeeded after retries gives back what its last retry took; a call that
    failed gives back nothing; the quota never goes above *capacity*.
    ``available`` reads what is left.  Counted in thousandths, like
    :class:`TokenBucket`.

    The defaults are botocore's standard mode to the unit, from botocore
    1.44 ("retry behavior 2.1", November 2026): 500, a retry 14, a
    throttling retry 5, no cost of its own for a timeout.  botocore before
    1.44 is ``RetryQuota(retry_cost=5, throttle_cost=5, timeout_cost=10)``.
    Thread-safe; a call that succeeds at once takes no lock (but one in
    1,025 with nothing between to take in those before it).

    >>> quota = RetryQuota(capacity=30)
    >>> quota.try_retry(ConnectionError()), quota.try_retry(ConnectionError(), throttled=True)
    (14.0, 5.0)
    >>> quota.available, quota.try_retry(ConnectionError())  # 11 left: not enough for 14
    (11.0, 0.0)
    >>> quota.record_success(False, spent=5.0); quota.available  # recovered: its last retry's back
    16.0
    """

    __slots__ = (
        "capacity",
        "retry_cost",
        "throttle_cost",
        "timeout_cost",
        "success_refund",
        "_capacity",
        "_retry",
        "_throttle",
        "_timeout",
        "_refund",
        "_milli",
        "_lock",
        "_successes",
        "_plans",  # the plans of the policies given it: see parts.kept_plans
    )

    capacity: float
    """The quota's size as given (a float)."""
    retry_cost: float
    """What a retry takes as given (a float)."""
    throttle_cost: float
    """What a retry after a throttle takes as given (a float)."""
    timeout_cost: float | None
    """What a retry after a timeout takes as given (a float; None: as any retry)."""
    success_refund: float
    """What a call that succeeded at once gives back as given (a float)."""

    def __new__(
        cls,
        capacity: float = 500,
        retry_cost: float = 14,
        throttle_cost: float = 5,
        success_refund: float = 1,
        *,
        timeout_cost: float | None = None,
        store: Store | None = None,
    ) -> RetryQuota:
        return object.__new__(cls if store is None else _fleet_class(cls, store))

    def __init__(
        self,
        capacity: float = 500,
        retry_cost: float = 14,
        throttle_cost: float = 5,
        success_refund: float = 1,
        *,
        timeout_cost: float | None = None,
        store: Store | None = None,
    ) -> None:
        given: dict[str, tuple[float, int]] = {}
        for name, value, low in (
            ("capacity", capacity, 1),
            ("retry_cost", retry_cost, 1),
            ("throttle_cost", throttle_cost, 1),
            ("timeout_cost", retry_cost if timeout_cost is None else timeout_cost, 1),
            ("success_refund", success_refund, 0),
        ):
            number = _checks.number(name, value)
            if not 0.0 <= number <= 1e12:
                raise _checks.ArgumentValueError(
                    name, f"{name} must be in [0, 1e12], got {_checks.shown(value)}"
                )
            given[name] = (number, _thousandths(name, number, "a unit", low))
        (self.capacity, self._capacity) = given["capacity"]
        for name in ("retry_cost", "throttle_cost", "timeout_cost", "success_refund"):
            if given[name][1] > self._capacity:
                raise _checks.ArgumentValueError(
                    name, f"{name} must be at most capacity ({capacity!r}), got {given[name][0]!r}"
                )
        (self.retry_cost, self._retry) = given["retry_cost"]
        (self.throttle_cost, self._throttle) = given["throttle_cost"]
        self.timeout_cost = None if timeout_cost is None else given["timeout_cost"][0]
        self._timeout = None if timeout_cost is None else given["timeout_cost"][1]
        (self.success_refund, self._refund) = given["success_refund"]
        self._milli = self._capacity
        self._lock = _thread.allocate_lock()
        # As TokenBucket's: the calls that succeeded at once, noted, their
        # refunds not yet added (see _MOST_NOTED).
        self._successes: list[None] = []

    def _cost(self, outcome: Any, throttled: bool) -> int:
        """What a retry of *outcome* takes, in thousandths."""
        if throttled:
            return self._throttle
        if self._timeout is not None and is_timeout(outcome):
            return self._timeout
        return self._retry

    @property
    def available(self) -> float:
        """What the quota can still pay for."""
        with self._lock:
            RetryQuota._fold(self)
            return self._milli / 1000

    def _fold(self) -> None:
        """Add the refunds of the successes noted (lock held)."""
        successes = self._successes
        added = len(successes)
        del successes[:added]
        milli = self._milli + added * self._refund
        self._milli = milli if milli < self._capacity else self._capacity

    def _units(self, spent: float) -> int:
        """*spent* in thousandths, at most the capacity (never raises: *spent*
        is compared before it is multiplied, an int beyond floats included)."""
        if spent >= self.capacity:
            return self._capacity
        return round(spent * 1000.0)

    def record_success(self, first_attempt: bool, spent: float = 0.0) -> None:
        """Give back *success_refund* (a call that succeeded at once) and
        *spent*: what the call's last retry took (a call that recovered; for
        a hedged call, the hedges it did not need too)."""
        if first_attempt:
            successes = self._successes
            successes.append(None)
            if len(successes) > _MOST_NOTED:
                with self._lock:
                    self._fold()
        if spent > 0.0:  # NaN is not
            units = self._units(spent)
            with self._lock:  # the refunds noted added inline, as in try_retry
                successes = self._successes
                added = len(successes)
                del successes[:added]
                milli = self._milli + added * self._refund + units
                self._milli = milli if milli < self._capacity else self._capacity

    def record_failure(self, first_attempt: bool) -> None:
        """A failure costs nothing until it is retried."""

    def give_back(self, taken: float) -> None:
        """A retry :meth:`try_retry` took *taken* for never ran (a breaker or a
        throttle refused it, the deadline came first): *taken* goes back, as
        what a recovered call spent does."""
        self.record_success(False, taken)

    def try_retry(self, outcome: Any, throttled: bool = False) -> float:
        """Take a retry's cost and return it, or return 0.0 if the quota cannot
        pay; *throttled*: the failure is a throttle (the drivers tell it)."""
        # _cost, and the refunds counted so far, inline: no Python call under the lock.
        if throttled:
            cost = self._throttle
        elif self._timeout is not None and is_timeout(outcome):
            cost = self._timeout
        else:
            cost = self._retry
        with self._lock:
            milli = self._milli
            successes = self._successes
            if successes:
                added = len(successes)
                del successes[:added]
                milli += added * self._refund
                if milli > self._capacity:
                    milli = self._capacity
            if milli < cost:
                self._milli = milli
                return 0.0
            self._milli = milli - cost
        return cost / 1000

    def __repr__(self) -> str:
        return (
            f"RetryQuota(capacity={self.capacity!r}, retry_cost={self.retry_cost!r},"
            f" throttle_cost={self.throttle_cost!r}, success_refund={self.success_refund!r},"
            f" timeout_cost={self.timeout_cost!r})"
            f" with {self.available} available"
        )
