"""Retry budgets: one object shared by every call to a dependency, so that
retries cannot multiply the load on it when it is overloaded.

A budget answers, on each retryable failure, "may this call retry now?".
When it says no, the driver gives up at once and the last failure (or
result) stands, exactly as when the delays run out.  Both budgets here are
thread-safe, never block and hold no lock across a sleep; share one among
any number of threads, asyncio tasks and retry loops.

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
import time
from collections.abc import Callable
from itertools import count
from typing import Any, Protocol

from . import _checks

__all__ = ["Budget", "RetryBudget", "TokenBucket"]


class Budget(Protocol):
    """What a driver asks of a budget; implement these three to write your own.

    - ``record_success(first_attempt)``: an attempt succeeded (or its result
      was not retried); *first_attempt* tells whether it was the call's first.
    - ``record_failure(first_attempt)``: an attempt failed in a way the
      policy retries (a matching exception, or a result ``on_result``
      accepts), whether or not a retry follows.
    - ``try_retry(outcome) -> bool``: may the call retry now?  Asked last,
      once the delays and the deadline leave room, so a ``True`` is always
      spent on a retry.  *outcome* is the exception or retried result.
    """

    def record_success(self, first_attempt: bool, spent: float = 0.0) -> None: ...

    def record_failure(self, first_attempt: bool) -> None: ...

    def try_retry(self, outcome: Any) -> bool: ...


class TokenBucket:
    """gRPC's retry throttling (design A6): retries stop while failures dominate.

    ``tokens`` starts at *max_tokens*.  Every failed attempt takes one token
    (not below 0), every successful one adds *token_ratio* (not above
    *max_tokens*), and a retry is allowed only while ``tokens`` is greater
    than ``max_tokens / 2``, checked after the failure took its token.
    Counted in thousandths of a token, as gRPC does, so no float drift moves
    the threshold.

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
        "_counted",
    )

    max_tokens: float
    """The bucket's size, as given."""
    token_ratio: float
    """Tokens a success adds, as given."""

    def __init__(self, max_tokens: float = 10.0, token_ratio: float = 0.1) -> None:
        max_tokens = _checks.number("max_tokens", max_tokens)
        if not 0.0 < max_tokens <= 1000.0:
            raise _checks.ArgumentValueError(
                "max_tokens", f"max_tokens must be in (0, 1000], got {max_tokens!r}"
            )
        token_ratio = _checks.number("token_ratio", token_ratio)
        if not 0.0 < token_ratio < float("inf"):
            raise _checks.ArgumentValueError(
                "token_ratio", f"token_ratio must be a finite number above 0, got {token_ratio!r}"
            )
        self.max_tokens = max_tokens
        self.token_ratio = token_ratio
        self._max = round(max_tokens * 1000)
        self._ratio = max(1, round(token_ratio * 1000))
        self._threshold = self._max / 2
        self._milli = self._max
        self._lock = _thread.allocate_lock()
        # Successes are only counted (one call to a C counter, no lock: the
        # success path stays cheap) and added to the tokens before each
        # failure.  Successes only add and failures only take, so adding a
        # run of successes at once, capped, is what adding them one by one
        # gives.
        self._successes = count().__next__
        self._counted = 0  # successes already added

    def _add_successes(self) -> None:
        """Add the successes counted since last time (call with the lock held)."""
        seen = self._successes()  # this call counts one more: not a success
        added = seen - self._counted
        self._counted = seen + 1
        if added:
            self._milli = min(self._max, self._milli + added * self._ratio)

    @property
    def tokens(self) -> float:
        """The tokens now in the bucket."""
        with self._lock:
            self._add_successes()
            return self._milli / 1000

    def record_success(self, first_attempt: bool, spent: float = 0.0) -> None:
        """A successful attempt adds ``token_ratio`` tokens."""
        self._successes()

    def record_failure(self, first_attempt: bool) -> None:
        """A failed attempt takes one token."""
        with self._lock:
            self._add_successes()
            self._milli = max(0, self._milli - 1000)

    def try_retry(self, outcome: Any) -> bool:
        """True while more than half the tokens are left."""
        return self._milli > self._threshold

    def __repr__(self) -> str:
        return (
            f"TokenBucket(max_tokens={self.max_tokens!r},"
            f" token_ratio={self.token_ratio!r}) with {self.tokens} tokens"
        )


class RetryBudget:
    """Finagle's retry budget: retries at most *ratio* of the calls, plus a reserve.

    Every call (its first attempt) deposits *ratio*, every retry withdraws
    one: a retry is allowed only while, over the *window* seconds up to it
    (counted in whole seconds of *clock*), the retries, itself included, stay
    within ``ratio`` times the calls plus a reserve of ``min_per_second *
    window``.  So under a total outage the
    load on the dependency is at most ``1 + ratio`` times the offered load,
    plus the small reserve that lets a quiet client still retry.  Each
    process keeps its own retries to *ratio* of its own calls, so a fleet of
    processes does too, with no coordination.

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
        "_slots",
        "_second",
        "_balance",
        "_lock",
    )

    ratio: float
    """Retries allowed per call made in the window."""
    min_per_second: float
    """The reserve: retries per second allowed with no calls at all."""
    window: float
    """Seconds the calls and retries are counted over."""

    # Each retry costs _UNIT; each call deposits ratio * _UNIT, in integers.
    _UNIT = 1000

    def __init__(
        self,
        ratio: float = 0.2,
        min_per_second: float = 10.0,
        window: float = 10.0,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        ratio = _checks.number("ratio", ratio)
        if not 0.0 <= ratio <= 1000.0:
            raise _checks.ArgumentValueError("ratio", f"ratio must be in [0, 1000], got {ratio!r}")
        min_per_second = _checks.number("min_per_second", min_per_second)
        if not 0.0 <= min_per_second < float("inf"):
            raise _checks.ArgumentValueError(
                "min_per_second",
                f"min_per_second must be a finite number of at least 0, got {min_per_second!r}",
            )
        window = _checks.number("window", window)
        if not 1.0 <= window <= 60.0:
            raise _checks.ArgumentValueError(
                "window", f"window must be in [1, 60] seconds, got {window!r}"
            )
        _checks.function("clock", clock)
        self.ratio = ratio
        self.min_per_second = min_per_second
        self.window = window
        self._clock = clock
        self._deposit = round(ratio * self._UNIT)
        self._reserve = round(min_per_second * window * self._UNIT)
        # Per whole second of the window: what was deposited minus withdrawn.
        self._slots = [0] * max(1, int(window))
        self._second: int | None = None  # the second of the newest slot
        self._balance = 0  # the sum of the slots
        self._lock = _thread.allocate_lock()

    def _advance(self) -> int:
        """Move the window to now, forgetting the seconds that left it; the slot index."""
        second = int(self._clock() // 1)
        slots = self._slots
        if self._second is None:
            self._second = second
        elif second > self._second:
            gone = min(second - self._second, len(slots))
            for offset in range(1, gone + 1):
                index = (self._second + offset) % len(slots)
                self._balance -= slots[index]
                slots[index] = 0
            self._second = second
        return self._second % len(slots)

    def record_success(self, first_attempt: bool, spent: float = 0.0) -> None:
        """A call that succeeded at once deposits."""
        if first_attempt:
            self._record_call()

    def record_failure(self, first_attempt: bool) -> None:
        """A call whose first attempt failed deposits too."""
        if first_attempt:
            self._record_call()

    def _record_call(self) -> None:
        with self._lock:
            index = self._advance()
            self._slots[index] += self._deposit
            self._balance += self._deposit

    def try_retry(self, outcome: Any) -> bool:
        """Withdraw one retry if the window's deposits and the reserve allow it."""
        with self._lock:
            index = self._advance()
            if self._reserve + self._balance < self._UNIT:
                return False
            self._slots[index] -= self._UNIT
            self._balance -= self._UNIT
            return True

    def __repr__(self) -> str:
        return (
            f"RetryBudget(ratio={self.ratio!r}, min_per_second={self.min_per_second!r},"
            f" window={self.window!r})"
        )
