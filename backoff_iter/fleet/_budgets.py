"""The three budgets, counting for a fleet: a :class:`~backoff_iter.TokenBucket`,
:class:`~backoff_iter.RetryBudget` or :class:`~backoff_iter.RetryQuota`
given ``store=`` is one of these classes (the store says which).

A process's counts are one cumulative integer (``_cum``), of which the
fleet acknowledged ``_acked``; the script adds ``cumulative - acked`` once,
whatever answers were lost on the way.  A decision spends the lease, then
``_own``: what the process counted since its last acknowledged exchange;
what it spends while its next exchange is in flight is charged to the next
lease.  Of a TokenBucket's and a RetryQuota's counts, what would take the
level beyond full or below empty as the process last heard it is sent all
the same - the fleet's level may have moved meanwhile, and the script keeps
it within bounds - but is not in ``_own``: no decision spends it.
"""

from __future__ import annotations

import math
import time
from collections import deque
from typing import TYPE_CHECKING, Any

from backoff_iter import _checks
from backoff_iter.budgets import _MOST_NOTED, RetryBudget, RetryQuota, TokenBucket

from ._budget_script import CREDIT, OWED
from ._ledger import LIMIT
from ._member import Member, state

if TYPE_CHECKING:
    from backoff_iter._sliding import Clock

    from ._store import Store

#: A quota's member asked for no retry since its last exchange (more than any
#: retry costs: a retry asked for is the cheapest so far with one comparison).
_NOTHING_ASKED = 1 << 62

#: The most one slot of a fleet RetryBudget's window may hold either way, in
#: calls' deposits or retries: 10**8 of them (a count beyond is poison).
_MOST_PER_SLOT = 10**8


class BudgetMember(Member):
    """A budget's half of an exchange: one cumulative count, and a lease of
    the room.  ``_full`` is a whole budget's room, ``_slice`` a 1/n slice of
    it, ``_head`` this process's share of what the fleet may still gain."""

    if not TYPE_CHECKING:
        __slots__ = ()

    SCRIPT = "budget"

    _acked: int
    _cum: int
    _own: int  # of cum - acked, what decisions may spend (within full and empty as last heard)
    _own_sent: int  # of _own: in the exchange under way
    _lease: int
    _spendable: int  # a quota's _room(), kept up to date for its decisions
    _asking: int  # a quota's: the cheapest retry asked for since the last exchange
    _lately: deque[tuple[float, int]]  # ... at each exchange within stale: (when, cheapest)
    _head: int
    _slice: int
    _full: int
    _n: int
    _sole: bool  # the last answer said this process is the fleet: its view of the level is exact
    _value: int
    _known_until: float  # _value may rebuild lost counts until then (see _recent)
    _wants: int  # failures since the last exchange
    _wanted: int  # failures before the last exchange that had some
    _wanted_at: float  # that exchange
    _demanded: bool  # the last answer lent room this process wanted
    _asked: bool  # the store's thread was woken since the last exchange
    _credit: bool  # a retry on credit until the next answer (see each kind's _heard)
    _owed: bool  # a quota's: the fleet spent beyond it, and its refunds pay that back first
    _each: int  # a bucket's or a quota's: what one success gains, in thousandths

    if TYPE_CHECKING:  # a bucket's and a quota's own
        _successes: list[None]

        def _gain(self, units: int) -> None: ...

    def _start(self, store: Store, parameters: tuple[Any, ...], value: int, window: float) -> None:
        self._acked = self._cum = self._own = self._own_sent = self._spendable = 0
        self._lease = self._head = 0  # its own counts only, until it hears (or is alone)
        self._slice = self._full
        self._n = 1
        self._sole = False  # (nothing heard yet: its value is an assumption)
        self._value = value
        self._known_until = -math.inf  # nothing heard yet
        self._asked = self._demanded = self._credit = self._owed = False
        self._wants = self._wanted = 0
        self._asking = _NOTHING_ASKED
        self._lately = deque()
        self._wanted_at = -math.inf
        self._join(store, parameters, window)

    def _idle(self) -> bool:
        return self._cum == self._acked and not self._wants

    def _add_successes(self) -> None:
        """A bucket's or a quota's: take in the successes noted without the
        lock since the last time, each gaining ``_each`` (lock held)."""
        successes = self._successes
        added = len(successes)
        del successes[:added]
        if added:
            self._gain(added * self._each)

    def _gain_within(self, units: int, full: int) -> None:
        """A bucket's or a quota's: count *units* gained (a success's, a
        refund's), what would take the level beyond *full* as last heard not
        as its own.  The fleet's only member (so the last answer said) does
        not send that either: the fleet would net it with a later failure of
        the same exchange (which took half a token, not one).  Shared, it is
        sent whole (another process may have taken tokens since), and the
        script keeps the level within its bounds.  A stale answer (a process
        joined since) only sends too little: the fleet reads less, never more."""
        room = full - self._value - self._own
        gained = units if units <= room else max(0, room)
        self._own += gained
        self._cum += gained if self._sole else units

    def _renew(self, member: str) -> None:
        super()._renew(member)
        self._known_until = -math.inf  # a new member: what its parent heard is the parent's
        self._sole = False
        self._acked = self._cum = self._lease = self._own = self._own_sent = 0
        self._wants = 0
        self._asking = _NOTHING_ASKED
        self._lately = deque()
        self._credit = False
        self._forget_noted()

    def _forget_noted(self) -> None:
        """A bucket's or a quota's: the successes its parent noted and had not taken
        in are the parent's to send (lock held, or no other thread)."""
        self._successes.clear()

    def _wait(self) -> None:
        self._lease = self._head = 0
        self._credit = False

    def _go_alone(self, heard: bool) -> None:
        self._credit = False
        if not heard:  # a whole budget of its own, as without a store
            self._lease = self._slice = self._full

    def _room(self) -> int:
        """What a decision may spend now, in lease units (lock held): a
        bucket's or a quota's lease and its own deposits, up to its share of
        the room up to full (its own successes or refunds lift no more).  The
        decisions spell it out or keep it (``_spendable``), not to pay for a
        call; a comparison, not a call of min()."""
        own, head = 2 * self._own, self._head
        return self._lease + (own if own < head else head)

    def _settle(self, now: float) -> None:
        """Adjust the counts after an answer, or before sending them (lock held)."""

    def _silent(self) -> None:
        # Until the keys' lifetime (ttl) after its last answer, counts gone
        # were deleted, evicted or lost in a restart, not expired: the level it
        # heard is the fleet's, never full.  Later they may have expired with
        # the whole fleet idle, and this process comes back as new.
        self._known_until = min(self._known_until, self._ok_at + self._timing.ttl)

    def _recent(self, now: float) -> bool:
        """Whether the fleet's value as last heard may rebuild lost counts:
        heard since the process began, and silent, if at all, for less than
        the keys' lifetime after its last answer."""
        return now < self._known_until

    def _base(self, now: float) -> int:
        """Where the count the script adds begins, unless Redis holds what it
        last applied of this process's: what the fleet acknowledged."""
        return self._acked

    def _needed(self, now: float) -> int:
        """A quota's: the cheapest retry this process asked for within the
        last ``stale`` seconds (0 if none), by what it asked between its
        exchanges.  The cheapest: failures of both kinds now and then keep
        what pays for the cheaper, as a process whose failures are throttles
        (5) and others (14) may use it; not the latest, which took it from
        such a process before each throttle."""
        lately = self._lately
        if self._asking != _NOTHING_ASKED:
            lately.append((now, self._asking))
            self._asking = _NOTHING_ASKED
        while lately and now - lately[0][0] > self._timing.stale:
            lately.popleft()
        return min([cost for _, cost in lately]) if lately else 0

    def _outgoing(self, now: float, live: bool) -> list[Any]:
        self._settle(now)
        room = self._room()
        need = self._needed(now)
        if 0 < room < need and self._lease and self._n > 1:
            # A crumb of a lease, the remains of one spent: it pays for none of
            # the retries this process asked for lately (nor does the script
            # lend one so small: it is sent the need, and lends none that pays
            # for no retry at all).  Given up, it adds up with the others' in
            # the fleet's free room, where kept by each of several processes it
            # would keep the last retries from all of them: a retry of 14 where
            # each holds what pays for one of 5, its failures not being
            # throttles.  Only this process's own refunds are held for it
            # (keep), spendable while this exchange is under way.  (Room of 0
            # or less is not held anyway; a bucket's own successes may lift it
            # while it travels.)
            self._lease = 0
            self._settle(now)
            room = self._room()
        keep = max(0, room) if live else 0
        if self._wants:  # room wanted until the next exchange: retries of failures may follow
            self._wanted = min(self._wants, 1_000_000)
            self._wants = 0
            self._wanted_at = now
        wants = self._wanted if now - self._wanted_at <= self._timing.interval else 0
        self._asked = False
        self._own_sent = self._own
        heard = self._value if self._recent(now) else ""
        return [self._base(now), self._cum, keep, wants, heard, need]

    def _take(self, sent: list[Any], answer: list[int], sent_at: float) -> None:
        _, value, n, lease = answer
        self._acked = sent[1]
        self._own -= self._own_sent
        self._own_sent = 0
        self._value = value
        self._n = n if n > 0 else 1
        self._sole = n == 1
        self._lease = lease
        self._slice = self._full // self._n
        self._known_until = math.inf
        self._demanded = sent[3] > 0
        self._heard(answer[0])
        self._settle(sent_at)

    def _heard(self, mask: int) -> None:
        """Take in what the answer's bits say beyond its numbers (lock held):
        a window's say nothing it uses."""

    def _holding(self) -> bool:
        return self._demanded and self._lease > 0

    def _refused(self) -> None:
        """A retry refused: wake the store's thread (once an exchange) to ask for room."""
        self._asked = True
        if self._signal is not None:
            self._signal.set()


_SLOTS = (*state(Member, BudgetMember), "__weakref__")


class FleetTokenBucket(BudgetMember, TokenBucket):
    """A TokenBucket whose tokens the fleet shares.  Counted in thousandths;
    leases and headroom in halves of them, so that the threshold, half the
    bucket, is a whole number."""

    __slots__ = _SLOTS
    KIND = "token_bucket"

    def __init__(
        self, max_tokens: float = 10.0, token_ratio: float = 0.1, *, store: Store | None = None
    ) -> None:
        TokenBucket.__init__(self, max_tokens, token_ratio)
        self._full = self._max  # a full bucket's room above half, in halves
        self._each = self._ratio
        # A retry needs the room above half to stay positive after its failure's
        # token; any room at all pays for one.
        parameters = ("level", 2001, self._max, self._max, 0, 1)
        self._start(store, parameters, self._max, 0.0)  # type: ignore[arg-type]

    _fold = BudgetMember._add_successes

    def _heard(self, mask: int) -> None:
        """Each answer gives one retry on credit, spent only while the bucket as
        last heard is above half (see try_retry).  Below half, the lease is
        this process's share of what the bucket lacks of half, owed: its own
        successes fill that first, as they would one bucket (the only member
        owes all of it)."""
        self._credit = True
        if not self._lease:
            self._lease = min(0, (2 * self._value - self._max) // self._n)

    def _gain(self, units: int) -> None:
        self._gain_within(units, self._max)

    def _settle(self, now: float) -> None:
        # As last heard, the bucket stays within [0, max_tokens].
        self._own = max(-self._value, min(self._max - self._value, self._own))
        self._head = 2 * (self._max - self._value) // self._n

    @property
    def tokens(self) -> float:
        """The tokens in the fleet's bucket, as this process last heard, with
        its own counts since."""
        with self._lock:
            self._add_successes()
            return (self._value + self._own) / 1000

    def record_failure(self, first_attempt: bool) -> None:
        """A failed attempt takes one token."""
        with self._lock:
            if self._successes:  # taking them in calls _gain() all the same
                self._add_successes()
            self._wants += 1
            left = self._value + self._own  # not below empty, as last heard
            self._own -= 1000 if left >= 1000 else left  # left >= 0: _settle keeps it so
            # Sent whole, even beyond empty as last heard: another process may
            # have refilled the bucket since (the script stops the level at
            # empty).  Within one exchange a later success may pay it back, so
            # the fleet may read less than one bucket, never more.
            self._cum -= 1000

    def try_retry(self, outcome: Any) -> bool:
        """True while this process's lease of the room above half is not spent."""
        with self._lock:
            # A failure's path calls no function under the lock but to take in
            # successes, and the store's own.
            if self._successes:
                self._add_successes()
            own = 2 * self._own
            head = self._head  # its share of the room up to full: its own successes lift no more
            if self._lease + (own if own < head else head) > 0:  # _room()
                return True
            # One retry an answer on credit, while the bucket as it last heard is above half.
            if self._credit and 2 * self._value + own > self._max:
                self._credit = False
                return True
            if not self._asked:
                self._refused()
            return False

    def __repr__(self) -> str:
        return self._describe(TokenBucket.__repr__(self))


class FleetRetryQuota(BudgetMember, RetryQuota):
    """A RetryQuota the fleet shares; leases and headroom in halves of
    thousandths.  Its arithmetic is the in-process quota's, in two places:
    what a retry costs (the first line of :meth:`try_retry`, and the unit a
    lease must cover, in ``__init__``) and what comes back
    (:meth:`_gain`)."""

    __slots__ = _SLOTS
    KIND = "retry_quota"

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
        RetryQuota.__init__(
            self, capacity, retry_cost, throttle_cost, success_refund, timeout_cost=timeout_cost
        )
        self._full = 2 * self._capacity
        self._each = self._refund
        # A lease that pays for any one retry, and the least that pays for one.
        costs = (
            self._retry,
            self._throttle,
            self._retry if self._timeout is None else self._timeout,
        )
        unit, least = 2 * max(costs), 2 * min(costs)
        # What is spent beyond empty (on credit) is owed: the level goes below 0.
        parameters = ("level", unit, self._capacity, 0, 1, least)
        self._start(store, parameters, self._capacity, 0.0)  # type: ignore[arg-type]

    def _gain(self, units: int) -> None:
        self._gain_within(units, self._capacity)
        self._spendable = self._room()

    def _wait(self) -> None:
        super()._wait()
        self._spendable = self._room()

    def _heard(self, mask: int) -> None:
        """The script gives a quiet member one retry on credit, in turn, when
        its share of the room pays for no retry: about twice as many at a
        time as the room neither lent nor waited for pays for.  What the
        fleet spends beyond its quota is owed (it reads 0), and refunds pay
        that back first: this process's own refunds pay for no retry
        meanwhile."""
        self._credit = bool(mask & CREDIT)
        self._owed = bool(mask & OWED)

    def _go_alone(self, heard: bool) -> None:
        super()._go_alone(heard)
        self._spendable = self._room()

    def _renew(self, member: str) -> None:
        super()._renew(member)
        self._spendable = self._room()

    _fold = BudgetMember._add_successes

    def _settle(self, now: float) -> None:
        self._own = max(-self._value, min(self._capacity - self._value, self._own))
        self._head = 0 if self._owed else 2 * (self._capacity - self._value) // self._n
        self._spendable = self._room()

    @property
    def available(self) -> float:
        """What the fleet's quota can still pay for, as this process last
        heard, with its own counts since (0 while the fleet owes)."""
        with self._lock:
            self._add_successes()
            return 0.0 if self._owed else (self._value + self._own) / 1000

    def record_success(self, first_attempt: bool, spent: float = 0.0) -> None:
        """Give back *success_refund* for a call that succeeded at once, and *spent*."""
        if first_attempt:
            successes = self._successes
            successes.append(None)
            if len(successes) > _MOST_NOTED:
                with self._lock:
                    self._add_successes()
        if spent > 0.0:
            with self._lock:
                self._add_successes()
                self._gain(self._units(spent))

    def record_failure(self, first_attempt: bool) -> None:
        """A failure costs nothing until it is retried (the fleet hears of it)."""
        self._wants += 1

    def give_back(self, taken: float) -> None:
        """A retry paid *taken* for never ran: *taken* goes back, as a refund does."""
        if taken > 0.0:
            with self._lock:
                self._gain(self._units(taken))

    def try_retry(self, outcome: Any, throttled: bool = False) -> float:
        """Take a retry's cost from this process's lease (or, given one, its
        retry on credit) and return it, or return 0.0."""
        # In thousandths; a retry's cost without a call in the common case.
        if throttled or self._timeout is not None:
            cost = self._cost(outcome, throttled)
        else:
            cost = self._retry
        with self._lock:
            if self._successes:  # as the bucket's try_retry
                self._add_successes()
            halves = 2 * cost
            if halves < self._asking:  # the cheapest asked for since the last exchange
                self._asking = halves
            if self._spendable < halves:
                # A quiet process of a fleet too large to lend it a retry's worth
                # may have one on credit, in turn (see _heard).
                if not self._credit:
                    if not self._asked:
                        self._refused()
                    return 0.0
                self._credit = False
            self._cum -= cost
            left = self._value + self._own  # not below empty, as last heard
            self._own -= cost if left >= cost else left  # left >= 0: _settle keeps it so
            self._spendable = self._room()
        return cost / 1000

    def __repr__(self) -> str:
        return self._describe(RetryQuota.__repr__(self))


class FleetRetryBudget(BudgetMember, RetryBudget):
    """A RetryBudget whose window and reserve the fleet shares.  Its own slots
    (RetryBudget's) keep this process's counts of the last window, for when
    it is alone."""

    __slots__ = _SLOTS
    KIND = "retry_budget"

    def __init__(
        self,
        ratio: float = 0.2,
        min_per_second: float = 10.0,
        window: float = 10.0,
        *,
        clock: Clock = time.monotonic,
        store: Store | None = None,
    ) -> None:
        RetryBudget.__init__(self, ratio, min_per_second, window, clock=clock)
        if self._reserve > 10**15:
            raise _checks.ArgumentValueError(
                "min_per_second",
                f"min_per_second x window must be at most 1e12 in a fleet, got {_checks.shown(min_per_second)}",
            )
        self._full = self._reserve
        width = round(self._width * 1e6)
        most = min(max(self._deposit, self._UNIT) * _MOST_PER_SLOT, LIMIT // 64)
        parameters = ("window", self._UNIT, width, len(self._slots), self._reserve, most)
        self._start(store, parameters, 0, self.window)  # type: ignore[arg-type]

    def _recent(self, now: float) -> bool:
        return (
            now < self._known_until and now - self._ok_at < self.window
        )  # what it owed is still in the window

    def _forget_noted(self) -> None:
        """The calls its parent noted or deposited, and had not sent, are the parent's."""
        self._calls.clear()
        self._deposited = 0

    def _settle(self, now: float) -> None:
        if now - self._ok_at >= self.window:  # unsent counts older than a window are dropped
            self._advance()
            self._own = self._balance

    def _base(self, now: float) -> int:
        # A window without an answer: its counts before its window began are
        # not sent (nor are, says the script, those Redis applied a window ago
        # or more: a lost answer's).  _cum stays whole: what Redis applied
        # since, if anything, is what the script counts from.
        if now - self._ok_at >= self.window:
            return self._cum - self._balance
        return self._acked

    def record_failure(self, first_attempt: bool) -> None:
        """A call whose first attempt failed deposits; every failure tells the fleet."""
        self._wants += 1
        if first_attempt:
            self._record_call()

    # A call deposits as in the in-process budget (counted without the lock
    # within the newest slot of the window); what the calls deposited is also
    # this process's, to send and to spend, taken in each time the window is
    # read or moved - before an exchange and every decision.

    def _advance(self, now: float | None = None) -> int:
        index = RetryBudget._advance(self, now)
        deposited = self._deposited
        if deposited:
            self._deposited = 0
            self._cum += deposited
            self._own += deposited
        return index

    def _fold(self) -> None:
        self._advance()

    def _room(self) -> int:
        room = self._lease + self._own
        if self._alone:  # and within a 1/n slice, with this process's counts of the window
            return min(room, self._slice + self._balance)
        return room

    def try_retry(self, outcome: Any) -> bool:
        """Withdraw one retry if this process's lease and its own deposits allow it."""
        now = self._clock()  # read before the lock is taken
        with self._lock:
            # The in-process budget's _advance, without this class's: the calls'
            # deposits are taken into _cum and _own at the next exchange, and
            # until then counted here from where they are.  Within the newest
            # slot, inline as the in-process try_retry has it: no call under the lock.
            slots = self._slots
            if now < self._ends:
                index = self._slot % len(slots)  # type: ignore[operator]
                calls = self._calls
                if calls:
                    added = len(calls)
                    del calls[:added]
                    deposit = added * self._deposit
                    slots[index] += deposit
                    self._balance += deposit
                    self._deposited += deposit
            else:
                index = RetryBudget._advance(self, now)
            room = self._lease + self._own + self._deposited  # _room()
            if self._alone:
                room = min(room, self._slice + self._balance)
            if room < self._UNIT:
                if not self._asked:
                    self._refused()
                return False
            slots[index] -= self._UNIT
            self._balance -= self._UNIT
            self._cum -= self._UNIT
            self._own -= self._UNIT
        return True

    def __repr__(self) -> str:
        return self._describe(RetryBudget.__repr__(self))


#: The fleet class of each budget, and the methods an inline store exchanges
#: around: (the class, decisions it exchanges before, events it exchanges after).
BUDGETS: dict[type, tuple[type, tuple[str, ...], tuple[str, ...]]] = {
    TokenBucket: (FleetTokenBucket, ("try_retry",), ("record_success", "record_failure")),
    RetryBudget: (
        FleetRetryBudget,
        ("try_retry",),
        ("record_success", "record_failure", "try_retry"),
    ),
    RetryQuota: (
        FleetRetryQuota,
        ("try_retry",),
        ("record_success", "record_failure", "try_retry"),
    ),
}
