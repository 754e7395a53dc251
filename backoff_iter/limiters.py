"""Adaptive client-side rate limiting: botocore's CUBIC limiter, to the last float.

A client that gets throttled should not only back off its retries but slow
every request it sends.  :class:`CubicRateLimiter` is botocore's "adaptive"
retry mode: off until the first throttled response, it then lets requests
go at a send rate that drops to 0.7 x the measured rate on each throttle
and grows back along a cubic curve on each success.  Unlike botocore's
bucket it also waits without blocking an event loop (``await aacquire()``);
``try_acquire()`` fails fast, as botocore's ``acquire(block=False)``.

>>> from backoff_iter import CubicRateLimiter
>>> now = [0.0]
>>> limiter = CubicRateLimiter(clock=lambda: now[0])
>>> limiter.enabled, limiter.try_acquire()  # off: every request goes
(False, True)
>>> for i in range(1, 41):  # 20 responses a second for two seconds
...     now[0] = i / 20
...     limiter.record(throttled=False)
>>> limiter.record(throttled=True)  # throttled: on, at 0.7 x the measured rate
>>> limiter.enabled, round(limiter.rate, 2)  # 0.7 x the ~20 responses a second
(True, 13.98)
>>> limiter.try_acquire(), limiter.try_acquire()  # one token was left, then none
(True, False)
"""

from __future__ import annotations

import _thread
import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from . import _checks, _sleeping
from ._sliding import reader

if TYPE_CHECKING:
    from ._sliding import Clock

__all__ = ["CubicRateLimiter", "RateLimiter"]


class RateLimiter(Protocol):
    """What a driver asks of a rate limiter; implement these three to write your own.

    - ``acquire(sleep=None) -> float``: before every attempt of a sync call,
      the first included: wait until a request may go, sleeping with
      *sleep* (``time.sleep`` when None); return the seconds slept.
    - ``await aacquire(sleep=None) -> float``: the same in async code, never
      blocking the event loop: *sleep* is awaited when it returns an
      awaitable (when None, the running event loop's: ``asyncio.sleep``, or
      ``trio.sleep`` under trio).
    - ``record(throttled)``: after every response, *throttled* telling
      whether the server said to slow down.
    """

    def acquire(self, sleep: Callable[[float], Any] | None = None) -> float: ...

    async def aacquire(self, sleep: Callable[[float], Any] | None = None) -> float: ...

    def record(self, throttled: bool) -> None: ...


# botocore's constants (botocore/retries/throttling.py, bucket.py, adaptive.py).
_SCALE = 0.4  # C, the cubic's scale
_BETA = 0.7  # the send rate after a throttle, per measured rate
_SMOOTHING = 0.8  # weight of the newest measured rate
_TIME_BUCKET = 0.5  # seconds per measurement of the send rate
_MIN_RATE = 0.5  # the token bucket's least fill rate, per second
_MAX_RATE_ADJUST = 2.0  # the new rate is at most this times the measured rate
# ... as botocore computes them each time (2.0 and 0.19999999999999996).
_BUCKETS_PER_SECOND = 1 / _TIME_BUCKET
_EARLIER_WEIGHT = 1 - _SMOOTHING


class CubicRateLimiter:
    """botocore's adaptive retry mode: a CUBIC send rate and a token bucket.

    Off (every request goes at once, no token taken) until the first
    throttled response.  Each :meth:`record` measures the response rate (in
    0.5 s buckets, smoothed by 0.8) and sets the bucket's fill rate:

    - throttled: the max rate becomes the measured rate (once on, at most
      the current rate) and the send rate 0.7 x that;
    - otherwise the send rate is the cubic ``0.4 (t - K)**3 + W_max`` of the
      seconds *t* since the last throttle, ``K = cbrt(W_max (1 - 0.7) / 0.4)``;

    never more than twice the measured rate, never below 0.5 per second
    (:attr:`rate`).  The bucket holds ``max(1, rate)`` tokens; a request
    takes one.  Every step is botocore's float arithmetic, so :attr:`rate`
    equals botocore's ``TokenBucket.max_rate`` exactly, response for
    response (the suite checks it against botocore itself).

    A *clock* reading that is NaN, infinite or earlier than the last one
    counts as no time passed.  Waiting callers reserve their token at once
    and sleep until it is theirs at the rate of that moment, in the order
    they came: a rate that changes while they sleep does not move their
    turn (one that rises may let a newcomer go first, as the debt they left
    refills faster).  A wait that is cancelled gives its token back.  Thread-safe and task-safe: one
    lock guards the state, held for a few arithmetic steps and never across
    a sleep or an ``await``.
    """

    __slots__ = (
        "_now",
        "_lock",
        "_enabled",
        "_w_max",
        "_k",
        "_last_throttle",
        "_measured",
        "_count",
        "_measured_at",
        "_next_bucket",
        "_fill",
        "_capacity",
        "_tokens",
        "_filled_at",
        "_plans",  # the plans of the policies given it: see parts.kept_plans
    )

    def __init__(self, *, clock: Clock = time.monotonic) -> None:
        _checks.callback("clock", clock, ())
        self._now = reader(clock)
        self._lock = _thread.allocate_lock()
        start = self._now()
        self._enabled = False
        # The cubic (botocore's CubicCalculator, starting from a max rate of 0).
        self._w_max = 0.0
        self._k = 0.0
        self._last_throttle = start
        # The measured rate (RateClocker): responses counted per time bucket.
        self._measured = 0.0
        self._count = 0
        self._measured_at = float(math.floor(start))  # botocore starts on a whole second
        self._next_bucket = self._measured_at + _TIME_BUCKET
        # The token bucket (TokenBucket(max_rate=1)): it starts empty.
        self._fill = 1.0
        self._capacity = 1.0
        self._tokens = 0.0
        self._filled_at = start

    @property
    def rate(self) -> float:
        """The send rate now, in requests per second (never below 0.5)."""
        return self._fill

    @property
    def enabled(self) -> bool:
        """Whether a throttled response has turned the limiter on."""
        return self._enabled

    @property
    def tokens(self) -> float:
        """The tokens in the bucket now; below 0 while callers wait for theirs."""
        with self._lock:
            elapsed = self._now() - self._filled_at
            return min(self._capacity, self._tokens + elapsed * self._fill)

    def record(self, throttled: bool) -> None:
        """Tell the limiter a response came back, and whether it was a throttle."""
        # One method, its steps written out: it runs on every success.  Each
        # min() and max() is written as the comparison they make.
        with self._lock:
            now = self._now()
            # The measured response rate: responses per 0.5 s bucket, smoothed.
            if now < self._next_bucket:  # in the bucket measured last (a half second's count)
                self._count += 1
                measured = self._measured
            else:
                count = self._count + 1
                bucket = math.floor(now * _BUCKETS_PER_SECOND) / _BUCKETS_PER_SECOND
                if bucket > self._measured_at:
                    measured = count / (bucket - self._measured_at) * _SMOOTHING
                    measured = self._measured = measured + self._measured * _EARLIER_WEIGHT
                    self._count = 0
                    self._measured_at = bucket
                    self._next_bucket = bucket + _TIME_BUCKET
                else:
                    self._count = count
                    measured = self._measured
            if throttled:
                w_max = min(measured, self._fill) if self._enabled else measured
                self._w_max = w_max
                self._k = (w_max * (1 - _BETA) / _SCALE) ** (1 / 3.0)
                self._last_throttle = now
                rate = w_max * _BETA
                self._enabled = True
            else:
                try:
                    rate = _SCALE * (now - self._last_throttle - self._k) ** 3 + self._w_max
                except OverflowError:  # a clock of astronomical seconds: as far as floats go
                    rate = math.inf
            most = _MAX_RATE_ADJUST * measured
            if most < rate:
                rate = most
            # The time so far fills the bucket at the old rate (_refill) ...
            tokens = self._tokens + (now - self._filled_at) * self._fill
            capacity = self._capacity
            self._tokens = tokens if tokens < capacity else capacity
            self._filled_at = now
            # ... and the new rate holds from now on.
            self._fill = _MIN_RATE if rate < _MIN_RATE else rate
            self._capacity = rate if rate >= 1 else 1.0  # every use refills first, clamping to it

    def _refill(self, now: float) -> None:
        self._tokens = min(self._capacity, self._tokens + (now - self._filled_at) * self._fill)
        self._filled_at = now

    def _reserve(self) -> float:
        """Take a token, in advance if need be: the seconds until it is ours."""
        if not self._enabled:  # off: no token, no lock (once on, it stays on)
            return 0.0
        with self._lock:
            self._refill(self._now())
            tokens = self._tokens
            self._tokens = tokens - 1
            return 0.0 if tokens >= 1 else (1 - tokens) / self._fill

    def _give_back(self) -> None:
        """A reserved token whose wait was cut short, or whose attempt never
        ran, goes back to the bucket (off, it took none: nothing goes back)."""
        with self._lock:
            if self._enabled:
                self._tokens = min(self._capacity, self._tokens + 1)

    def try_acquire(self) -> bool:
        """Take a token if one is there now; never wait.  True when off."""
        with self._lock:
            if not self._enabled:
                return True
            self._refill(self._now())
            if self._tokens >= 1:
                self._tokens -= 1
                return True
            return False

    def acquire(self, sleep: Callable[[float], Any] | None = None) -> float:
        """Wait until a request may go; return the seconds slept (0.0 at once).

        *sleep* defaults to ``time.sleep``, looked up at each call; under
        :func:`backoff_iter.testing.no_sleep` the wait is recorded, not slept.
        """
        if sleep is not None:  # checked now, not at the first wait once the limiter is on
            _checks.callback("sleep", sleep, ("seconds",))  # (not async: never awaited here)
        wait = self._reserve()
        if wait:
            try:
                _sleeping.sleep(sleep, wait, _sleeping.RATE_LIMITER)
            except BaseException:
                self._give_back()
                raise
        return wait

    async def aacquire(self, sleep: Callable[[float], Any] | None = None) -> float:
        """:meth:`acquire` for async code: waits with ``await``, never blocking the loop.

        *sleep* defaults to the running event loop's: ``asyncio.sleep``, or
        ``trio.sleep`` under trio.
        A plain function is called and its result awaited only if awaitable.
        """
        if sleep is not None:  # checked now, not at the first wait once the limiter is on
            _checks.callback("sleep", sleep, ("seconds",), awaited=True)
        wait = self._reserve()
        if wait:
            try:
                await _sleeping.asleep(sleep, wait)
            except BaseException:  # cancelled: the token is not used
                self._give_back()
                raise
        return wait

    def __repr__(self) -> str:
        state = "on" if self._enabled else "off"
        return f"CubicRateLimiter() {state}, at {self._fill!r} requests/s"
