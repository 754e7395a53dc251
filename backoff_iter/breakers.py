"""A circuit breaker: stop calling a dependency that is down (Polly v8's).

Retries with backoff still send every call to a dependency that is down.
:class:`CircuitBreaker` counts the failures over a sliding window; when
there were enough calls and too many failed it *opens*, and calls fail at
once with :class:`~backoff_iter.BrokenCircuitError` without running.  After the break
duration one probe call goes through (*half open*): its success closes the
circuit, its failure opens it again for the next break duration.

>>> from backoff_iter import BrokenCircuitError, CircuitBreaker
>>> now = [0.0]
>>> breaker = CircuitBreaker(failure_ratio=0.5, minimum_throughput=4,
...                          break_duration=[5, 10, 20], clock=lambda: now[0])
>>> for success in (True, False, True, False):  # 2 failures in 4 calls: open
...     breaker.check()
...     breaker.record(success)
>>> breaker.state
'open'
>>> breaker.check()
Traceback (most recent call last):
...
backoff_iter.BrokenCircuitError: the circuit is open: calls are refused for another 5 s
>>> now[0] = 5.0
>>> breaker.check(); breaker.state  # the probe goes
'half_open'
>>> breaker.record(False); breaker.state  # it failed: open for the next duration
'open'
>>> try:
...     breaker.check()
... except BrokenCircuitError as error:
...     error.retry_after
10.0
"""

from __future__ import annotations

import _thread
import math
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Protocol, Union

from . import _checks
from ._sliding import SlidingCounts, detached, reader
from ._stores import fleet_class

if TYPE_CHECKING:
    from ._sliding import Clock
    from .fleet import Store

__all__ = ["Breaker", "BrokenCircuitError", "CircuitBreaker"]


class BrokenCircuitError(Exception):
    """A call the circuit breaker refused because the circuit is open: it never ran.

    An ``Exception`` of its own, not an argument error and not an
    ``OSError``: a retry policy on network errors (``on=OSError``) lets it
    propagate at once, one on ``Exception`` retries it.  ``retry_after`` is
    the number of seconds until the breaker lets a probe through (``inf``
    when the break never ends).
    """

    __module__ = "backoff_iter"

    retry_after: float
    """Seconds until a call may go through as the probe."""

    def __init__(self, retry_after: float, half_open: bool = False) -> None:
        why = (
            "the circuit is half open, its probe still out" if half_open else "the circuit is open"
        )
        until = "for good" if retry_after == math.inf else f"for another {retry_after:g} s"
        super().__init__(f"{why}: calls are refused {until}")
        self.retry_after = retry_after
        self._half_open = half_open

    def __reduce__(self) -> tuple[object, ...]:  # picklable, for worker processes
        return self.__class__, (self.retry_after, self._half_open), self.__dict__


class Breaker(Protocol):
    """What a driver asks of a circuit breaker; implement these two to write your own.

    - ``check()``: before every attempt, the first included: raise
      :class:`BrokenCircuitError` (or your own error) to refuse the attempt
      without running it, or return to let it go.
    - ``record(success)``: after every attempt that ran, *success* telling
      whether it succeeded (False for a failure the breaker should count).
    """

    def check(self) -> None: ...

    def record(self, success: bool) -> None: ...


#: What ``break_duration`` takes: seconds, an iterable of them, or a
#: zero-argument function returning one.
BreakDurations = Union[float, Iterable[float], Callable[[], Iterable[float]]]

_CLOSED, _OPEN, _HALF_OPEN = "closed", "open", "half_open"
_BUCKETS = 10  # the sampling duration is counted in 10 buckets, as Polly does
_END: Any = object()


def _first_break(value: object) -> float:
    """The first break duration, checked eagerly: an argument error if it is
    not a number, negative or NaN; ``inf`` if it is too long to sleep (an
    integer or fraction beyond floats too, as later in the schedule)."""
    return _checks.wait("break_duration", _checks.seconds("break_duration", value, infinite=True))


class CircuitBreaker:
    """Polly v8's circuit breaker: closed, open, half open with one probe.

    - **closed**: every call goes.  Successes and failures are counted over
      the last *sampling_duration* seconds (in 10 buckets, as Polly does);
      when a failure brings the calls counted to at least
      *minimum_throughput* and the failures to at least *failure_ratio* of
      them, the circuit opens.
    - **open**: :meth:`check` raises :class:`BrokenCircuitError`, whose
      ``retry_after`` says when the break ends.  The first check after the
      break duration lets the call go as the probe and the circuit is
      half open.
    - **half open**: other calls are refused.  The probe's success closes
      the circuit (and forgets the counts), its failure opens it again for
      the next break duration.  As in Polly, the first outcome recorded
      while half open decides.  A probe whose outcome never comes (its
      caller was cancelled) does not wedge the breaker: once a break
      duration has passed since it went, the next check sends another; a
      probe a driver's later part refused (a throttle) was never sent, and
      the next call is the probe.

    *break_duration* is seconds, or the break durations in turn: an
    iterable, or a zero-argument function returning one, such as
    ``lambda: exponential(5, cap=60)``.  The schedule restarts when the
    circuit closes: a function is called again, a list or tuple iterated
    afresh (a one-shot iterator goes on where it was).  When the schedule
    runs out, its last duration repeats.  Its values are checked like
    delays: a value that is not a number, negative or NaN is replaced by
    the last duration, one too long to sleep (``inf`` too) keeps the
    circuit open for good; none crashes a call, and a schedule that raises
    has run out.  The first value is taken
    and checked when the breaker is made, so ``break_duration=[]`` or
    ``[-1]`` fails there.

    A *clock* reading that is NaN, infinite or earlier than the last one
    counts as no time passed.  Thread-safe and task-safe: one lock guards
    the state; nothing blocks or sleeps.

    With ``store=`` a :class:`backoff_iter.fleet.RedisStore`, every process
    using the same store name shares one breaker: its failure ratio is over
    the fleet's calls in the sampling duration, it opens for every process,
    and one process at a time sends the half-open probe (see
    :mod:`backoff_iter.fleet`).
    """

    __slots__ = (
        "failure_ratio",
        "minimum_throughput",
        "sampling_duration",
        "break_duration",
        "_now",
        "_lock",
        "_state",
        "_until",
        "_break",
        "_upcoming",
        "_durations",
        "_restart",
        "_counts",
        "_opened_by",
        "_prober",
        "_plans",  # the plans of the policies given it: see parts.kept_plans
    )

    failure_ratio: float
    """The share of failures at which the circuit opens as given (a float)."""
    minimum_throughput: int
    """The calls the sampling duration must count before the circuit may open."""
    sampling_duration: float
    """Seconds over which successes and failures are counted."""
    break_duration: BreakDurations
    """The break duration or schedule, as given."""

    def __new__(
        cls,
        failure_ratio: float = 0.1,
        minimum_throughput: int = 100,
        sampling_duration: float = 30.0,
        break_duration: BreakDurations = 5.0,
        *,
        clock: Clock = time.monotonic,
        store: Store | None = None,
    ) -> CircuitBreaker:
        return object.__new__(cls if store is None else fleet_class(cls, store))

    def __init__(
        self,
        failure_ratio: float = 0.1,
        minimum_throughput: int = 100,
        sampling_duration: float = 30.0,
        break_duration: BreakDurations = 5.0,
        *,
        clock: Clock = time.monotonic,
        store: Store | None = None,
    ) -> None:
        ratio = _checks.number("failure_ratio", failure_ratio)
        if not 0.0 < ratio <= 1.0:
            raise _checks.ArgumentValueError(
                "failure_ratio",
                f"failure_ratio must be in (0, 1], got {_checks.shown(failure_ratio)}",
            )
        self.failure_ratio = ratio
        self.minimum_throughput = _checks.count("minimum_throughput", minimum_throughput, minimum=1)
        self.sampling_duration = _checks.positive("sampling_duration", sampling_duration)
        _checks.callback("clock", clock, ())
        self.break_duration = break_duration
        # The schedule: _upcoming is the next break (taken now, to check it
        # eagerly), then _durations gives the rest; _restart makes it anew.
        self._restart: Callable[[], Iterable[Any]] | None = None
        self._durations: Iterator[Any] | None = None
        self._upcoming: float | None
        if _checks.is_real(break_duration):
            self._upcoming = _first_break(break_duration)
        else:
            if callable(break_duration):
                _checks.callback("break_duration", break_duration, ())  # no arguments, not async
                self._restart = break_duration
                self._durations = _checks.fresh_delays("break_duration", break_duration)
            elif isinstance(break_duration, (str, bytes)) or not isinstance(
                break_duration, Iterable
            ):
                raise _checks.ArgumentTypeError(
                    "break_duration",
                    "break_duration must be seconds, an iterable of them or a"
                    f" zero-argument function returning one, got {_checks.shown(break_duration)}",
                )
            else:
                self._durations = _checks.iterable("break_duration", break_duration)
                # A list starts afresh; an iterator's __iter__ is itself: it goes on.
                self._restart = break_duration.__iter__
            first = next(self._durations, _END)
            if first is _END:
                raise _checks.ArgumentValueError(
                    "break_duration", f"break_duration gave no duration at all: {break_duration!r}"
                )
            self._upcoming = _first_break(first)
        self._break = self._upcoming  # the last break duration served
        self._now = reader(clock)
        self._lock = _thread.allocate_lock()
        self._state = _CLOSED
        self._until = 0.0  # open: when the break ends; half open: when another probe may go
        self._counts = SlidingCounts(self.sampling_duration, _BUCKETS)  # successes, failures
        self._opened_by: BaseException | None = None  # the failure that last opened it
        self._prober: object = None  # who let the half-open probe go (see _runner)

    @property
    def state(self) -> str:
        """``"closed"``, ``"open"`` or ``"half_open"``: open until the first check after the break."""
        return self._state

    def check(self) -> None:
        """Admit a call, or raise :class:`BrokenCircuitError` while the circuit is open.

        The error's ``__cause__`` is the failure that opened the circuit (a
        copy without its traceback), when :meth:`record` was told it; a
        driver replaces it with the refused call's own last failure."""
        if self._state is _CLOSED:  # one read of one attribute: no lock needed
            return
        with self._lock:
            state = self._state
            if state is _CLOSED:
                return
            now = self._now()
            if now >= self._until:  # the break is over, or the probe never reported
                self._state = _HALF_OPEN
                self._until = now + self._break
                self._prober = _runner()
                return
            retry_after = self._until - now
            opened_by = self._opened_by
        refused = BrokenCircuitError(retry_after, state is _HALF_OPEN)
        if opened_by is not None:
            refused.__cause__ = opened_by
        raise refused

    def record(self, success: bool, failure: object = None) -> None:
        """Tell the breaker how a call it let go ended; *failure*, the outcome
        of one that failed, becomes the cause of the refusals it leads to."""
        now = self._now()  # read before the lock is taken
        counts = self._counts
        with self._lock:
            state = self._state
            if state is _HALF_OPEN:
                if success:
                    self._close()
                else:
                    self._open(now, failure)
                return
            # counts.add_first(now) or add_second(now) inline: within the newest
            # bucket, no call under the lock (see budgets._MOST_NOTED).
            if now >= counts._ends:
                counts._advance(now)
            if success:
                counts.first += 1
                return
            counts.second = second = counts.second + 1  # counted while open too,
            if state is _CLOSED:  # as Polly does
                failures = second - counts._second_left
                calls = counts.first - counts._first_left + failures
                if calls >= self.minimum_throughput and failures / calls >= self.failure_ratio:
                    self._open(now, failure)

    def _probe_unsent(self) -> None:
        """The call :meth:`check` let go was never made (a part asked after the
        breaker refused it): were it the half-open probe, the next check
        sends one.  Only the task or thread that let the probe go frees it: a
        call let go while closed, dropped after a wait (a rate limiter's, a
        part's) in which the circuit opened and another call's probe went,
        frees nothing."""
        runner = _runner()
        with self._lock:
            if self._state is _HALF_OPEN and self._prober == runner:
                self._until = -math.inf

    def _open(self, now: float, failure: object) -> None:
        self._opened_by = detached(failure)
        duration = self._next_break()
        self._break = duration
        self._until = now + duration
        self._state = _OPEN

    def _next_break(self) -> float:
        upcoming = self._upcoming
        if upcoming is not None:
            self._upcoming = None
            return upcoming
        if self._durations is None:  # a plain number
            return self._break
        try:
            value = next(self._durations, _END)
        except Exception:  # the user's schedule broke: it has run out
            value = _END
        if value is _END:
            return self._break
        try:
            return _checks.wait("break_duration", value)
        except (TypeError, ValueError):  # not a number, negative or NaN: skipped
            return self._break

    def _close(self) -> None:
        self._state = _CLOSED
        self._counts.clear()
        restart = self._restart
        if restart is not None:
            try:
                fresh = iter(restart())
            except Exception:  # the function raised or returned no iterable: the last break stays
                fresh = None
            # Made anew, the schedule starts at its first break, not at one a
            # fleet's member took ahead of the old schedule (an iterator goes on).
            if fresh is not self._durations:
                self._upcoming = None
            self._durations = fresh

    def __repr__(self) -> str:
        return (
            f"CircuitBreaker(failure_ratio={self.failure_ratio!r},"
            f" minimum_throughput={_checks.shown(self.minimum_throughput)},"
            f" sampling_duration={self.sampling_duration!r},"
            f" break_duration={_checks.shown(self.break_duration)}) {self._state}"
        )


def _runner() -> tuple[str, int]:
    """Who runs now: the asyncio or trio task, else the thread - the same
    from a call's check to the drop of its attempt (one task or thread runs
    both), and, for the calls running at once, each its own.  Asked only as
    the probe goes and when an attempt is dropped: never on a success."""
    asyncio = sys.modules.get("asyncio")
    if asyncio is not None:
        try:
            task = asyncio.current_task()
        except RuntimeError:  # no event loop runs in this thread
            task = None
        if task is not None:
            return "task", id(task)
    trio = sys.modules.get("trio")
    if trio is not None:
        try:
            return "task", id(trio.lowlevel.current_task())
        except RuntimeError:  # not in trio
            pass
    return "thread", _thread.get_ident()
