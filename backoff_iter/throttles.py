"""Client-side adaptive throttling (Google SRE book, "Handling Overload").

When a backend rejects much of what it gets, sending it more only adds to
its load.  :class:`AdaptiveThrottle` rejects requests locally, before they
are sent, with probability ``max(0, (requests - k x accepts) / (requests +
1))`` over the last two minutes: with ``k = 2`` the client sends about
twice what the backend accepts, and the rest fail at once with
:class:`~backoff_iter.ThrottledError`.

>>> from random import Random
>>> from backoff_iter import AdaptiveThrottle, ThrottledError
>>> throttle = AdaptiveThrottle(k=2.0, rng=Random(1))
>>> def call(backend_accepts):
...     throttle.check()  # may raise ThrottledError: then the request is never sent
...     throttle.record(accepted=backend_accepts)
>>> for _ in range(10):
...     call(True)
>>> throttle.probability  # all accepted: nothing is rejected
0.0
>>> sent = 0
>>> for _ in range(100):  # the backend goes down
...     try:
...         call(False)
...         sent += 1
...     except ThrottledError:
...         pass
>>> sent  # of 100: the rest failed at once, without adding to the backend's load
43
>>> throttle.probability  # (110 requests - 2 x 10 accepts) / (110 + 1)
0.8108108108108109
"""

from __future__ import annotations

import _thread
import collections
import time
from typing import TYPE_CHECKING, Any, Protocol

from . import _checks, _jitter
from ._sliding import SlidingCounts, detached, reader
from ._stores import fleet_class

if TYPE_CHECKING:
    from ._sliding import Clock
    from .fleet import Store

__all__ = ["AdaptiveThrottle", "Throttle", "ThrottledError"]


class ThrottledError(Exception):
    """A request the client-side throttle rejected locally: it was never sent.

    An ``Exception`` of its own, not an argument error and not an
    ``OSError``: a retry policy on network errors (``on=OSError``) lets it
    propagate at once, one on ``Exception`` retries it.  ``probability`` is
    the rejection probability it was drawn against.
    """

    __module__ = "backoff_iter"

    probability: float
    """The probability of rejection at the time, in (0, 1)."""

    def __init__(self, probability: float) -> None:
        super().__init__(
            "adaptive throttling rejected the request locally"
            f" (rejection probability {probability:.3f})"
        )
        self.probability = probability

    def __reduce__(self) -> tuple[object, ...]:  # picklable, for worker processes
        return self.__class__, (self.probability,), self.__dict__


class Throttle(Protocol):
    """What a driver asks of a client-side throttle; implement these two to write your own.

    - ``check()``: before every attempt, the first included: raise
      :class:`ThrottledError` (or your own error) to refuse the attempt
      without running it, or return to let it go.  Every check counts as a
      request, refused or not.
    - ``record(accepted)``: after every attempt that ran, *accepted* telling
      whether the backend accepted it (False when it refused it as
      overloaded or throttled).
    """

    def check(self) -> None: ...

    def record(self, accepted: bool) -> None: ...


_BUCKETS = 120  # the window is counted in 120 buckets: 1 s each at the default 120 s


class AdaptiveThrottle:
    """Google SRE client-side throttling: reject locally what the backend would refuse.

    :meth:`check` (before each attempt) counts a request and rejects it with
    probability ``max(0, (requests - k x accepts) / (requests + 1))``, the
    counts being those of the last *window* seconds before it; a rejected
    request raises :class:`ThrottledError` and still counts as a request,
    as in the SRE book.  :meth:`record` (after each attempt) counts an
    accept.  *k* (at least 1) is how many requests per accepted one the
    backend may see: lower is more aggressive.

    The window is counted in 120 buckets (1 s each at the default 120 s):
    an event counts for between ``window - window / 120`` and ``window``
    seconds, at O(1) cost per call and in fixed memory.  A *clock* reading
    that is NaN, infinite or earlier than the last one counts as no time
    passed.  *rng* is any ``random.Random``-like object (with ``random()``),
    the module-level ``random`` when None.  Thread-safe and task-safe: one
    lock guards the counts; nothing blocks or sleeps.  An accept takes no
    lock (but one in 65 with no check between, which counts those waiting):
    it waits for the next check (or :attr:`probability`) to count it, at
    the time it was told.

    With ``store=`` a :class:`backoff_iter.fleet.RedisStore`, the requests
    and accepts are the whole fleet's: every process using the same store
    name throttles by them (see :mod:`backoff_iter.fleet`).
    """

    __slots__ = (
        "k",
        "window",
        "_now",
        "_random",
        "_counts",
        "_lock",
        "_rejected_by",
        "_accepts",
        "_plans",  # the plans of the policies given it: see parts.kept_plans
    )

    #: Accepts told but not yet counted, at most: each waits for the next
    #: check (which holds the lock anyway), so that a success takes no lock.
    _WAITING = 64

    k: float
    """Requests allowed per accepted request as given (a float)."""
    window: float
    """Seconds the requests and accepts are counted over as given (a float)."""

    def __new__(
        cls,
        k: float = 2.0,
        window: float = 120.0,
        *,
        clock: Clock = time.monotonic,
        rng: Any = None,
        store: Store | None = None,
    ) -> AdaptiveThrottle:
        return object.__new__(cls if store is None else fleet_class(cls, store))

    def __init__(
        self,
        k: float = 2.0,
        window: float = 120.0,
        *,
        clock: Clock = time.monotonic,
        rng: Any = None,
        store: Store | None = None,
    ) -> None:
        self.k = _checks.factor("k", k)
        self.window = _checks.positive("window", window)
        _checks.callback("clock", clock, ())
        self._random = _jitter.random_source(rng)
        self._now = reader(clock)
        self._counts = SlidingCounts(self.window, _BUCKETS)  # requests, accepts
        self._lock = _thread.allocate_lock()
        self._rejected_by: BaseException | None = None  # the latest failure recorded
        self._accepts: collections.deque[float] = collections.deque()  # their times, waiting

    def _probability(self, requests: int, accepts: int) -> float:
        return max(0.0, (requests - self.k * accepts) / (requests + 1))

    @property
    def probability(self) -> float:
        """The probability that a request checked now is rejected."""
        now = self._now()
        with self._lock:
            if self._accepts:
                self._count_accepts()
            return self._probability(*self._counts.totals(now))

    def check(self) -> None:
        """Count a request and admit it, or raise :class:`ThrottledError`, whose
        ``__cause__`` is the latest refusal :meth:`record` was told of (a copy
        without its traceback); a driver replaces it with the refused call's
        own last failure."""
        now = self._now()  # read before the lock is taken (see Readings)
        with self._lock:
            # the accepts waiting counted first, then this request: one call
            requests, accepts = self._counts.count_first(now, self._accepts)
            if requests <= self.k * accepts:  # the probability is 0: no draw
                return
            probability = self._probability(requests, accepts)
            if not self._random() < probability:
                return
            rejected_by = self._rejected_by
        refused = ThrottledError(probability)
        if rejected_by is not None:
            refused.__cause__ = rejected_by
        raise refused

    def record(self, accepted: bool, failure: object = None) -> None:
        """Tell the throttle whether the backend accepted a request it let go;
        *failure*, the outcome of one it refused, becomes the cause of the
        rejections that follow."""
        if accepted:
            waiting = self._accepts
            waiting.append(self._now())  # one atomic step: no lock
            if len(waiting) > self._WAITING:
                with self._lock:
                    self._count_accepts()
        elif failure is not None:
            self._rejected_by = detached(failure)

    def _count_accepts(self) -> None:
        """Count the accepts waiting, each at its time (the lock held)."""
        waiting, add = self._accepts, self._counts.add_second
        while waiting:
            add(waiting.popleft())

    def __repr__(self) -> str:
        return f"AdaptiveThrottle(k={self.k!r}, window={self.window!r})"
