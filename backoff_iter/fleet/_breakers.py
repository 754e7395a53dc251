"""A circuit breaker and a client-side throttle counting for a fleet: a
:class:`~backoff_iter.CircuitBreaker` or :class:`~backoff_iter.AdaptiveThrottle`
given ``store=`` is one of these classes.

Both keep their own window of counts, as in-process, for when they are
alone, and send what they count to the fleet's window.  A throttle's
probability is the fleet's: its requests and accepts over the window as
last heard, with this process's own since.  A breaker's state is the
fleet's: its script opens the circuit when a failure brings the fleet's
ratio to the threshold, and hands the one half-open probe to the first
process that asks for it once the break is over.
"""

from __future__ import annotations

import math
import time
from collections import deque
from typing import TYPE_CHECKING, Any, cast

from backoff_iter import _checks
from backoff_iter._sliding import SlidingCounts, detached
from backoff_iter.breakers import _BUCKETS as _BREAKER_BUCKETS
from backoff_iter.breakers import (
    _CLOSED,
    _HALF_OPEN,
    _OPEN,
    BreakDurations,
    BrokenCircuitError,
    CircuitBreaker,
    _runner,
)
from backoff_iter.throttles import _BUCKETS as _THROTTLE_BUCKETS
from backoff_iter.throttles import AdaptiveThrottle

from ._count_script import LONGEST
from ._member import Member, state

if TYPE_CHECKING:
    from backoff_iter._sliding import Clock

    from ._store import Store

#: The most one slot of a fleet window counts: beyond, poison.
_MOST_PER_SLOT = 10**12
#: The longest window (``sampling_duration``) a fleet part keeps, in seconds
#: (about 31 years): its keys' lifetime in ms and its slots in us stay whole
#: numbers Redis takes (1e14 s and more failed every exchange).
LONGEST_WINDOW = 1e9


def _bounded(name: str, value: float, given: object) -> None:
    """Refuse a window (*value*, as *given*) longer than a fleet keeps."""
    if value > LONGEST_WINDOW:
        raise _checks.ArgumentValueError(
            name, f"{name} must be at most 1e9 seconds with a store, got {_checks.shown(given)}"
        )


#: A throttle's window in the fleet: 12 slots (10 s each at the default 120 s),
#: so that an exchange reads 24 numbers, not 240; its own keeps 120.
_FLEET_SLOTS = 12


class Counts(SlidingCounts):
    """A part's two counts over its window - its own, for when it is alone -
    and, cumulative, what it sends the fleet (``first``, ``second``), of
    which the fleet acknowledged ``first_acked`` and ``second_acked``."""

    __slots__ = ("first_acked", "second_acked", "others")

    others: tuple[int, int]
    """The fleet's totals as last heard, less this process's counts in them
    (those acknowledged): the fleet's totals now are these plus this
    process's own counts, ``first`` and ``second``, in one addition each."""

    def __init__(self, span: float, buckets: int) -> None:
        super().__init__(span, buckets)
        self.first_acked = self.second_acked = 0
        self.others = (0, 0)

    def unsent(self) -> bool:
        return self.first != self.first_acked or self.second != self.second_acked

    def restart(self) -> None:
        # A fresh member: the fleet's totals as last heard are all the others'.
        first, second = self.others
        self.others = (first + self.first_acked, second + self.second_acked)
        self.first_acked = self.second_acked = 0
        super().restart()  # first and second from 0


class FleetTotals(Counts):
    """A throttle's counts: while the fleet's last answer holds, its totals
    are the fleet's with this process's own since (else its own window's)."""

    __slots__ = ("part",)

    part: FleetAdaptiveThrottle

    def totals(self, now: float) -> tuple[int, int]:
        if self.part._alone:
            return SlidingCounts.totals(self, now)
        first, second = self.others
        return first + self.first, second + self.second

    def count_first(self, now: float, seconds: deque[float]) -> tuple[int, int]:
        if self.part._alone:
            return SlidingCounts.count_first(self, now, seconds)
        # (Calling it, then adding the others' counts, took the fleet's check and
        # failure to 1.22-1.28x the in-process one, against 1.2x.)
        # SlidingCounts.count_first() inline, with totals(): a check is the hot path
        while seconds:
            then = seconds.popleft()
            if then >= self._ends:
                self._advance(then)
            self.second += 1
        first, second = self.others
        totals = first + self.first, second + self.second
        if now >= self._ends:
            self._advance(now)
        self.first += 1
        return totals


class CountMember(Member):
    """A throttle's or a breaker's half of an exchange: two cumulative counts."""

    if not TYPE_CHECKING:
        __slots__ = ()

    # The in-process class's own _counts holds a Counts.

    def _idle(self) -> bool:
        return not self._tally().unsent()

    def _wait(self) -> None:
        self._alone = True  # its own counts, until the next answer

    def _tally(self) -> Counts:
        return cast(Counts, self._counts)  # type: ignore[attr-defined]

    def _renew(self, member: str) -> None:
        super()._renew(member)
        self._tally().restart()

    def _acknowledge(self, sent: list[Any], first: int, second: int) -> None:
        counts = self._tally()
        counts.first_acked, counts.second_acked = sent[1], sent[3]
        counts.others = (first - sent[1], second - sent[3])

    def _tallies(self) -> list[Any]:
        counts = self._tally()
        return [counts.first_acked, counts.first, counts.second_acked, counts.second]


class FleetAdaptiveThrottle(CountMember, AdaptiveThrottle):
    """An AdaptiveThrottle whose requests and accepts are the fleet's."""

    __slots__ = (*state(Member), "__weakref__")
    KIND = "throttle"
    SCRIPT = "throttle"

    def __init__(
        self,
        k: float = 2.0,
        window: float = 120.0,
        *,
        clock: Clock = time.monotonic,
        rng: Any = None,
        store: Store | None = None,
    ) -> None:
        AdaptiveThrottle.__init__(self, k, window, clock=clock, rng=rng)
        _bounded("window", self.window, window)
        counts = self._counts = FleetTotals(self.window, _THROTTLE_BUCKETS)
        counts.part = self
        width = max(1, round(self.window / _FLEET_SLOTS * 1e6))
        self._join(store, (width, _FLEET_SLOTS, _MOST_PER_SLOT), self.window)  # type: ignore[arg-type]
        self._alone = True  # its own counts, until it hears

    def _fold(self) -> None:
        if self._accepts:  # those told without the lock: the exchange sends them
            self._count_accepts()

    def _renew(self, member: str) -> None:
        super()._renew(member)
        self._accepts.clear()  # the parent's, which the parent sends

    def _outgoing(self, now: float, live: bool) -> list[Any]:
        return self._tallies()

    def _take(self, sent: list[Any], answer: list[int], sent_at: float) -> None:
        self._acknowledge(sent, answer[1], answer[2])

    def __repr__(self) -> str:
        return self._describe(AdaptiveThrottle.__repr__(self))


class BreakerMember(CountMember):
    """What a breaker keeps of the fleet's state, beside its counts."""

    if not TYPE_CHECKING:
        __slots__ = ()

    _outcome: str  # the outcome of this process's probe, until the fleet has it
    _asks: bool  # refused after the break: asking for the probe
    _holds: bool  # the fleet's probe is this process's to send
    _probing: bool  # this process's probe is out
    _heard: int  # the fleet's state in the last answer (-1: none yet)
    _cause: BaseException | None  # a failure since the last exchange (a copy)
    _sent_now: float  # the breaker's clock when the exchange under way was sent

    def _idle(self) -> bool:
        # Not while the fleet's circuit is open or half open, as last heard, and
        # the break (or the probe) not over, nor while asking for the probe: a
        # process that stopped exchanging would go on alone, and send a probe
        # of its own after the break.
        if self._asks or (self._heard > 0 and self._now() < self._until):  # type: ignore[attr-defined]
            return False
        return CountMember._idle(self)

    def _renew(self, member: str) -> None:
        super()._renew(member)
        self._outcome = ""
        self._asks = self._holds = self._probing = False
        self._heard = -1
        self._cause = None


class FleetCircuitBreaker(BreakerMember, CircuitBreaker):
    """A CircuitBreaker whose ratio and state are the fleet's: its script
    opens it, and lets one probe go at a time, for every process.  Alone (no
    answer for a while), it is the in-process breaker on its own counts."""

    __slots__ = (*state(Member, BreakerMember), "__weakref__")
    KIND = "breaker"
    SCRIPT = "breaker"

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
        CircuitBreaker.__init__(
            self, failure_ratio, minimum_throughput, sampling_duration, break_duration, clock=clock
        )
        _bounded("sampling_duration", self.sampling_duration, sampling_duration)
        self._counts = Counts(self.sampling_duration, _BREAKER_BUCKETS)
        self._outcome = ""
        self._asks = self._holds = self._probing = False
        self._heard = -1
        self._cause = None
        self._sent_now = 0.0
        width = max(1, round(self.sampling_duration / _BREAKER_BUCKETS * 1e6))
        parameters = (
            self.failure_ratio,
            self.minimum_throughput,
            width,
            _BREAKER_BUCKETS,
            _MOST_PER_SLOT,
        )
        self._join(store, parameters, self.sampling_duration)  # type: ignore[arg-type]
        self._alone = True  # the in-process breaker, until it hears

    def _upcoming_break(self) -> float:
        """The break the next opening would serve, not yet taken from the schedule."""
        if self._upcoming is None:
            self._upcoming = self._next_break()
        return self._upcoming

    def check(self) -> None:
        """Admit a call, or raise :class:`~backoff_iter.BrokenCircuitError` while
        the fleet's circuit is open or its probe is out elsewhere."""
        if self._state is _CLOSED:  # one read of one attribute: no lock needed
            return
        if self._alone:
            return CircuitBreaker.check(self)
        with self._lock:
            if self._state is _CLOSED:
                return
            if self._holds:  # the fleet's probe: this call sends it
                self._holds = False
                self._probing = True
                self._prober = _runner()
                return
            now = self._now()
            if now >= self._until:  # the break is over: ask the fleet for the probe
                # (A probe of this process's out so long never reported: it lapsed, as the
                # fleet holds; the probe the fleet hands out next is a new one, to send.)
                self._probing = False
                self._asks = True
                if self._signal is not None:
                    self._signal.set()
                retry_after = self._timing.interval
            else:
                retry_after = self._until - now
            half_open, opened_by = self._state is _HALF_OPEN, self._opened_by
        refused = BrokenCircuitError(retry_after, half_open)
        if opened_by is not None:
            refused.__cause__ = opened_by
        raise refused

    def record(self, success: bool, failure: object = None) -> None:
        """Tell the breaker how a call it let go ended: counted for the fleet;
        the outcome of this process's probe decides for the fleet."""
        if self._alone:
            CircuitBreaker.record(self, success, failure)
            return
        counts = self._counts
        with self._lock:
            now = self._now()
            # counts.add_first(now) or add_second(now) inline, as the in-process record's
            if now >= counts._ends:
                counts._advance(now)
            if success:
                counts.first += 1
            else:
                counts.second += 1
                if self._cause is None and failure is not None:
                    self._cause = detached(failure)  # one copy an exchange, at most
            if self._probing:  # as the fleet will, at once
                self._probing = False
                self._outcome = "1" if success else "0"
                if success:
                    self._close()
                else:
                    self._opened_by = detached(failure)
                    self._state, self._until = _OPEN, now + self._upcoming_break()
                if self._signal is not None:
                    self._signal.set()

    def _probe_unsent(self) -> None:
        """The fleet's probe, let go here, was never sent: the next call here sends
        it (only when the task or thread that let it go drops it, as in-process)."""
        if self._alone:
            CircuitBreaker._probe_unsent(self)
            return
        runner = _runner()
        with self._lock:
            if self._probing and self._prober == runner:
                self._probing = False
                self._holds = True

    def _outgoing(self, now: float, live: bool) -> list[Any]:
        self._sent_now = self._now()
        duration = self._upcoming_break() * 1e6
        return [
            *self._tallies(),
            self._outcome,
            int(self._asks),
            LONGEST if not duration < LONGEST else round(duration),
        ]

    def _take(self, sent: list[Any], answer: list[int], sent_at: float) -> None:
        _, code, remaining, successes, failures, holds, _ = answer
        self._acknowledge(sent, successes, failures)
        if sent[4] == self._outcome:
            self._outcome = ""  # the fleet has it
        self._asks = False
        if not holds:  # the fleet waits for no probe of this process's: one still out is
            self._probing = False  # late, and its outcome only counts (it decides nothing)
        heard, self._heard = self._heard, code
        cause, self._cause = self._cause, None
        if code == 0:
            self._holds = False
            if self._state is not _CLOSED:
                self._close()
            return
        if code == 2 and self._outcome:  # sent before this process's probe came back: the
            self._holds = False  # fleet waits for its outcome, which the next exchange sends,
            return  # and the state that outcome set here stands (no second probe meanwhile)
        if code == 1 and heard != 1:  # the fleet opened: its schedule moves on here too
            self._break = self._next_break()
            if heard in (-1, 0):
                self._opened_by = cause
        self._state = _OPEN if code == 1 else _HALF_OPEN
        self._until = self._sent_now + remaining / 1e6 if remaining < LONGEST else math.inf
        self._holds = bool(holds) and not self._probing

    def __repr__(self) -> str:
        return self._describe(CircuitBreaker.__repr__(self))


#: The fleet class of each, and the methods an inline store exchanges around.
BREAKERS: dict[type, tuple[type, tuple[str, ...], tuple[str, ...]]] = {
    CircuitBreaker: (FleetCircuitBreaker, ("check",), ("record",)),
    AdaptiveThrottle: (FleetAdaptiveThrottle, ("check",), ("record",)),
}
