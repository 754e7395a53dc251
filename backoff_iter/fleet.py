"""Budgets shared by a fleet of processes, through Redis.

A budget given ``store=RedisStore(client, name)`` counts for every process
that uses the same Redis and *name*: one token bucket, one window and one
reserve, one quota, for the whole fleet.  ``store=None`` (the default) is
the in-process budget, unchanged.

>>> import redis  # doctest: +SKIP
>>> from backoff_iter import RetryBudget, retry
>>> from backoff_iter.fleet import RedisStore
>>> store = RedisStore(redis.Redis(), "payments-api")  # doctest: +SKIP
>>> budget = RetryBudget(ratio=0.1, store=store)  # doctest: +SKIP

**No decision waits on the network.**  Each process counts locally and a
daemon thread per store exchanges those counts with Redis every
*sync_interval* seconds: one Lua script per exchange (EVALSHA, reloaded on
NOSCRIPT) adds them to the fleet's counts atomically, using the Redis
server's clock for the fleet's window, so no count is lost or counted twice
however many processes exchange at once.

**Leases bound what the lag can cost.**  At each exchange the script lends
the process a *lease*: its share, ``room / n``, of what the fleet may still
spend (``n`` the processes heard from in the last few intervals), as far
as other processes' leases leave it free.  A share too small to pay for one
retry is of no use (but to a process alone): a process that had failures
lately gets one retry's worth instead, the others nothing.  Until its next
answer the process spends only its lease and what it deposited itself (its
own calls, for a ``RetryBudget``; its own successes and refunds, for a
``TokenBucket`` and a ``RetryQuota``); what it spends while an exchange is
in flight is charged to the next lease, and the script holds that much for
it meanwhile.  Leases are held in Redis, so no room is lent twice.  What is
left:

- ``RetryBudget`` and ``RetryQuota``: no over-admission from the lag.  A
  process's counts join the fleet's window when it exchanges, up to one
  interval after they happened, so deposits (and withdrawals alike) stay in
  the window up to one interval longer: at most ``ratio`` x a process's
  calls in one interval.
- ``TokenBucket``: failures take tokens whether or not anyone retries, and
  other processes learn of them at the next exchange.  A process may grant
  retries that a single bucket, knowing every failure at once, would
  refuse: at most its lease, ``(tokens - max_tokens / 2) / n`` tokens'
  worth (or one retry's worth), per process per sync interval, and none
  once the fleet's bucket is at half or below.
- Held room is not spent by others: with many processes and a small
  budget, a fleet retries less than one budget would.

**Redis slow, paused or gone.**  Decisions never wait on it.  A lease is
used for ``max(3 x sync_interval, 0.25 s)`` after the exchange that
granted it.  Once exchanges have failed (or hung) that long, the process
goes on alone, spending its last lease with its own counts since - with
its share of the headroom, at most a ``1/n`` slice of a full budget, and
for a ``RetryBudget`` never more than ``1/n`` of the reserve plus its own
deposits of the last window.  A process that never heard from the fleet
spends only its own deposits for that long, then is a whole budget alone,
as without a store.  One warning goes to the ``backoff_iter.fleet`` logger
per outage (and one info line when Redis answers again); no exception
reaches a driver; the counts made meanwhile are merged (those older than a
window are dropped from a ``RetryBudget``).

**Keys expire.**  A process with no calls for ``silence = max(60 x
sync_interval, 4 x max(3 x sync_interval, 0.25 s))`` seconds stops
exchanging; once no process has exchanged for ``max(3 x window, silence)``
seconds, Redis drops the budget's three keys
(``backoff_iter:{name}:<kind>:counts``, ``:members``, ``:ledger``).

**One budget per store.**  A ``RedisStore`` serves one budget; make one
per budget (and give each a name).  Every process must give a budget the
same parameters.  After ``os.fork()`` the child is a new member with a
thread of its own.

Simulations use ``_SharedState`` in place of a ``RedisStore``: the
script's arithmetic in Python, exchanged inline when a budget is used.
"""

from __future__ import annotations

import contextlib
import heapq
import logging
import math
import os
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from itertools import count
from typing import TYPE_CHECKING, Any

from . import _checks
from .budgets import RetryBudget, RetryQuota, TokenBucket

if TYPE_CHECKING:
    import redis

__all__ = ["RedisStore", "Store"]

_log = logging.getLogger("backoff_iter.fleet")
_INF = float("inf")
_LATEST = 1e12  # seconds: a store clock reading beyond this is no reading

# One exchange, atomically: a member's counts in, the fleet's state and the
# member's lease out.  _SharedState.exchange is the same arithmetic in Python.
_SCRIPT = """
-- KEYS: 1 the budget's counts (a hash), 2 its members by expiry (a sorted set),
--       3 the members' acknowledged counts and leases (a hash)
-- ARGV: 1 member, 2 acked, 3 cumulative, 4 now in microseconds ('' for the
--       server's TIME), 5 sync interval (us), 6 member horizon (us), 7 ttl (ms),
--       8 leave (1 or 0), 9 keep: what the member may still spend of its lease
--       while this exchange is in flight, 10 want (1 or 0): it had failures
--       lately, 11 kind: 'level' or 'window', 12 unit: the
--       least lease that pays for one retry, then for 'level': 13 cap, 14 the
--       room's zero, doubled; for 'window': 13 slot width in us, 14 slots,
--       15 reserve
if redis.replicate_commands then pcall(redis.replicate_commands) end
local counts, members, ledger = KEYS[1], KEYS[2], KEYS[3]
local member = ARGV[1]
local acked, cumulative = tonumber(ARGV[2]), tonumber(ARGV[3])
local now = tonumber(ARGV[4])
if not now then
  local clock = redis.call('TIME')
  now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
end
local interval, horizon, ttl = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local keep = tonumber(ARGV[9])
local function int(x) return string.format('%.0f', x) end

-- Members not seen within their horizon have gone: their leases come back.
local leased = tonumber(redis.call('HGET', ledger, 'leased') or '0')
local gone = redis.call('ZRANGEBYSCORE', members, '-inf', '(' .. int(now))
for _, id in ipairs(gone) do
  leased = leased - tonumber(redis.call('HGET', ledger, 'l:' .. id) or '0')
  redis.call('HDEL', ledger, 'a:' .. id, 'l:' .. id)
end
redis.call('ZREMRANGEBYSCORE', members, '-inf', '(' .. int(now))

-- The member's counts since the exchange it last heard back from, applied once.
local stored = redis.call('HGET', ledger, 'a:' .. member)
local delta = cumulative - (stored and tonumber(stored) or acked)
leased = leased - tonumber(redis.call('HGET', ledger, 'l:' .. member) or '0')
redis.call('HDEL', ledger, 'l:' .. member)
if ARGV[8] == '1' then
  redis.call('ZREM', members, member)
  redis.call('HDEL', ledger, 'a:' .. member)
else
  redis.call('ZADD', members, int(now + horizon), member)
  redis.call('HSET', ledger, 'a:' .. member, int(cumulative))
end
local n = math.max(1, redis.call('ZCARD', members))

local value, room
if ARGV[11] == 'level' then
  local cap, zero = tonumber(ARGV[13]), tonumber(ARGV[14])
  value = tonumber(redis.call('HGET', counts, 'level') or ARGV[13]) + delta
  value = math.max(0, math.min(cap, value))
  redis.call('HSET', counts, 'level', int(value))
  room = 2 * value - zero
else
  local width, slots, reserve = tonumber(ARGV[13]), tonumber(ARGV[14]), tonumber(ARGV[15])
  local slot = math.floor(now / width)
  local leaving = math.floor((now + interval) / width) - slots
  if delta ~= 0 then redis.call('HINCRBY', counts, int(slot), int(delta)) end
  value, room = 0, reserve
  local fields = redis.call('HGETALL', counts)
  for i = 1, #fields, 2 do
    local index, amount = tonumber(fields[i]), tonumber(fields[i + 1])
    if index <= slot - slots then
      redis.call('HDEL', counts, fields[i])
    else
      value = value + amount
      -- deposits about to leave the window are not lent out
      if index > leaving or amount < 0 then room = room + amount end
    end
  end
end

-- The member's share of the room, as far as other members' leases leave it
-- free.  A share too small for one retry is of no use (but to a member
-- alone): a member that had failures lately gets one retry's worth instead,
-- the others nothing.  Held for it until its next exchange, with what it may
-- still spend while this one is in flight.
local free = math.max(0, room - leased)
local lease, unit = math.floor(room / n), tonumber(ARGV[12])
if lease >= unit or (lease > 0 and n == 1) then
  lease = math.min(lease, free)
elseif lease > 0 then
  lease = ARGV[10] == '1' and math.min(unit, free) or 0
end
local held = math.max(lease, math.min(keep, free))
if ARGV[8] ~= '1' and held > 0 then
  redis.call('HSET', ledger, 'l:' .. member, int(held))
  leased = leased + held
end
redis.call('HSET', ledger, 'leased', int(leased))
for _, key in ipairs(KEYS) do redis.call('PEXPIRE', key, ttl) end
return {value, n, lease}
"""


class _Timing:
    """The intervals a fleet budget keeps, all derived from sync_interval."""

    __slots__ = ("interval", "stale", "horizon", "silence", "ttl", "arguments")

    def __init__(self, interval: float, window: float) -> None:
        self.interval = interval
        # A lease is used for this long after the exchange that granted it;
        # exchanges failing for this long mean Redis is away.
        self.stale = max(3.0 * interval, 0.25)
        # The script forgets a member not heard from for this long (and takes
        # its lease back): well after the member itself stopped using it.
        self.horizon = 4.0 * self.stale
        # A process with no calls for this long stops exchanging (it keeps
        # its lease fresh until then); the keys outlive the last exchange by
        # this, or three windows.
        self.silence = max(60.0 * interval, self.horizon)
        self.ttl = max(3.0 * window, self.silence)
        # ARGV 5-7 of the script.
        self.arguments = (
            round(interval * 1e6),
            round(self.horizon * 1e6),
            math.ceil(self.ttl * 1000),
        )


class Store:
    """Where a fleet budget keeps what its processes share: a
    :class:`RedisStore` (or, in simulations, the in-process ``_SharedState``)."""

    __slots__ = ("__weakref__",)

    def _attach(self, view: _View, kind: str, parameters: tuple[Any, ...], window: float) -> None:
        raise NotImplementedError


_LIVE, _ALONE, _WAITING = 0, 1, 2  # what a decision may spend: see _View._mode


class _View:
    """The local half of a fleet budget: its own counts, its lease, and the
    merging of an exchange's answer.  The transport (a RedisStore's thread,
    or _SharedState inline) calls _snapshot, then _merge with the answer.

    A process's counts are one cumulative integer (``_cum``), of which the
    fleet acknowledged ``_acked``; the script adds ``cumulative - acked``
    once, whatever answers were lost on the way.  A decision spends the
    lease, then what the process counted since its last acknowledged
    exchange; what it spends while its next exchange is in flight is
    charged to the next lease.
    """

    if not TYPE_CHECKING:  # the budget classes hold these in their __slots__
        __slots__ = ()
    _lock: Any
    _store: Store
    _signal: threading.Event | None  # wakes the store's thread
    _inline: _SharedState | None  # exchanges inline, in simulations
    _member: str
    _acked: int
    _cum: int
    _lease: int
    _head: int
    _slice: int
    _full: int
    _n: int
    _value: int
    _ok_at: float
    _trying: float | None
    _active: bool
    _wants: bool  # failures since the last exchange
    _wanted_at: float  # the last exchange after failures
    _active_at: float
    _due: float
    _timing: _Timing
    _stale: float  # _timing.stale, read on every decision
    _now: Callable[[], float]

    def _join(self, store: Store, kind: str, parameters: tuple[Any, ...], value: int) -> None:
        """Start as a process that has not heard from the fleet yet."""
        self._store = store
        self._acked = self._cum = 0
        self._lease = self._full  # alone, with a whole budget, until it hears
        self._head = 0
        self._slice = self._full
        self._active = self._wants = False
        self._n = 1
        self._value = value
        self._ok_at = self._due = self._wanted_at = -_INF
        self._trying = None
        self._signal = self._inline = None
        store._attach(self, kind, parameters, getattr(self, "window", 0.0))

    def _fold(self) -> None:
        """Take in what was counted without the lock (lock held)."""

    def _settle(self, now: float) -> None:
        """Adjust the counts after an answer, or before sending them (lock held)."""

    def _room(self, mode: int) -> int:
        """What a decision in *mode* may spend, in lease units (lock held)."""
        raise NotImplementedError

    def _mode(self, now: float) -> int:
        """What a decision may spend now (lock held).

        _LIVE: the lease, for ``stale`` seconds after the exchange that
        granted it.  _ALONE: once exchanges have been failing or hanging
        since the lease lapsed (or, for a process that never heard from the
        fleet, for ``stale`` seconds), the last lease goes on being spent
        with the process's own counts: with its share of the headroom it
        is at most a 1/n slice of a full budget (a whole one before any
        answer).  _WAITING: only what the process counted itself, until its
        first answer, or when its lease lapsed with no exchange under way
        (the store's thread is woken to make one at once)."""
        if now - self._ok_at < self._stale:
            return _LIVE
        trying = self._trying
        if trying is None:
            if self._signal is not None:
                self._signal.set()
            return _WAITING
        if self._ok_at == -_INF and now - trying < self._stale:
            return _WAITING
        return _ALONE

    def _snapshot(self, now: float, always: bool) -> tuple[str, int, int, int, int] | None:
        """The counts to send, and what the process may still spend of its
        lease meanwhile; or None when the process has had no calls for long
        enough to let the fleet forget it (unless *always*)."""
        with self._lock:
            self._fold()
            if self._active:
                self._active = False
                self._active_at = now
            elif (
                not always
                and self._cum == self._acked
                and now - self._active_at >= self._timing.silence
            ):
                return None
            self._settle(now)
            if self._trying is None:
                self._trying = now
            keep = self._room(_LIVE) if now - self._ok_at < self._stale else 0
            if self._wants:  # a retry's worth of use for a while
                self._wants = False
                self._wanted_at = now
            wants = int(now - self._wanted_at < self._timing.stale)
            return self._member, self._acked, self._cum, max(0, keep), wants

    def _merge(
        self, sent: tuple[str, int, int, int, int], answer: Sequence[int], sent_at: float
    ) -> None:
        """The fleet's answer to the counts *sent* at *sent_at*."""
        value, n, lease = answer
        with self._lock:
            self._acked = sent[2]
            self._value = value
            self._n = n if n > 0 else 1
            self._lease = lease
            self._ok_at = sent_at
            self._trying = None
            self._slice = self._full // self._n
            self._settle(sent_at)

    def _tick(self) -> None:
        """Exchange inline if one is due (simulations: _SharedState; callers check)."""
        store: _SharedState = self._inline  # type: ignore[assignment]
        now = store._time()
        if now >= self._due:
            self._due = now + self._timing.interval
            sent = self._snapshot(now, True)
            self._merge(sent, store._exchange_for(self, sent, now), now)  # type: ignore[arg-type]

    def _restart(self, member: str) -> None:
        """A new process (after fork): nothing counted, nothing heard."""
        self._lock = threading.Lock()
        self._member = member
        self._acked = self._cum = self._lease = 0
        self._trying = None
        self._ok_at = -_INF
        self._wants = False

    def _describe(self, base: str) -> str:
        return f"{base} shared through {self._store!r}"


_VIEW_SLOTS = (
    "_store",
    "_signal",
    "_inline",
    "_member",
    "_acked",
    "_cum",
    "_lease",
    "_head",
    "_slice",
    "_full",
    "_n",
    "_value",
    "_ok_at",
    "_trying",
    "_active",
    "_wants",
    "_wanted_at",
    "_active_at",
    "_due",
    "_timing",
    "_stale",
    "_now",
    "__weakref__",
)


class _FleetTokenBucket(_View, TokenBucket):
    """A TokenBucket whose tokens the fleet shares.  Counted in thousandths;
    leases and headroom in halves of them, so that the threshold, half the
    bucket, is a whole number."""

    __slots__ = _VIEW_SLOTS

    def __init__(
        self, max_tokens: float = 10.0, token_ratio: float = 0.1, *, store: Store | None = None
    ) -> None:
        TokenBucket.__init__(self, max_tokens, token_ratio)
        self._full = self._max  # a full bucket's room above half, in halves
        # A retry needs the room above half to stay positive after its failure's token.
        parameters = ("level", 2001, self._max, self._max)
        self._join(store, "token_bucket", parameters, self._max)  # type: ignore[arg-type]

    def _add_successes(self) -> None:
        seen = self._successes()  # this call counts one more: not a success
        added = seen - self._counted
        self._counted = seen + 1
        if added:
            self._active = True
            room = self._max - self._value - (self._cum - self._acked)  # to a full bucket
            if room > 0:
                self._cum += min(added * self._ratio, room)

    _fold = _add_successes

    def _settle(self, now: float) -> None:
        own = self._cum - self._acked  # the bucket stays within [0, max_tokens]
        if own < -self._value:
            self._cum = self._acked - self._value
        elif own > self._max - self._value:
            self._cum = self._acked + self._max - self._value
        self._head = 2 * (self._max - self._value) // self._n

    @property
    def tokens(self) -> float:
        """The tokens in the fleet's bucket, as this process last heard, with
        its own counts since."""
        with self._lock:
            self._add_successes()
            return (self._value + self._cum - self._acked) / 1000

    def record_success(self, first_attempt: bool, spent: float = 0.0) -> None:
        """A successful attempt adds ``token_ratio`` tokens."""
        self._successes()
        if self._inline is not None:
            self._tick()

    def record_failure(self, first_attempt: bool) -> None:
        """A failed attempt takes one token."""
        with self._lock:
            self._add_successes()
            self._active = self._wants = True
            self._cum -= min(1000, self._value + self._cum - self._acked)
        if self._inline is not None:
            self._tick()

    def _room(self, mode: int) -> int:
        own = 2 * (self._cum - self._acked)
        if mode == _WAITING:
            return min(own, 0)  # own counts alone never lift a bucket above half
        return self._lease + min(own, self._head)

    def try_retry(self, outcome: Any) -> bool:
        """True while this process's lease of the room above half is not spent."""
        if self._inline is not None:
            self._tick()
        with self._lock:
            self._add_successes()
            self._active = self._wants = True
            return self._room(self._mode(self._now())) > 0

    def __repr__(self) -> str:
        return self._describe(TokenBucket.__repr__(self))


class _FleetRetryQuota(_View, RetryQuota):
    """A RetryQuota the fleet shares; leases and headroom in halves of thousandths."""

    __slots__ = _VIEW_SLOTS

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
        costliest = max(self._retry, self._throttle, self._timeout or 0)
        parameters = ("level", 2 * costliest, self._capacity, 0)
        self._join(store, "retry_quota", parameters, self._capacity)  # type: ignore[arg-type]

    def _add_refunds(self) -> None:
        seen = self._successes()  # this call counts one more: not a success
        added = seen - self._counted
        self._counted = seen + 1
        if added:
            self._active = True
            self._give_back(added * self._refund)

    _fold = _add_refunds

    def _give_back(self, units: int) -> None:
        room = self._capacity - self._value - (self._cum - self._acked)  # to a full quota
        if room > 0:
            self._cum += min(units, room)

    def _settle(self, now: float) -> None:
        own = self._cum - self._acked
        if own < -self._value:
            self._cum = self._acked - self._value
        elif own > self._capacity - self._value:
            self._cum = self._acked + self._capacity - self._value
        self._head = 2 * (self._capacity - self._value) // self._n

    @property
    def available(self) -> float:
        """What the fleet's quota can still pay for, as this process last
        heard, with its own counts since."""
        with self._lock:
            self._add_refunds()
            return (self._value + self._cum - self._acked) / 1000

    def record_success(self, first_attempt: bool, spent: float = 0.0) -> None:
        """Give back *success_refund* for a call that succeeded at once, and *spent*."""
        if first_attempt:
            self._successes()
        if spent > 0.0:
            with self._lock:
                self._add_refunds()
                self._active = True
                self._give_back(self._units(spent))
        if self._inline is not None:
            self._tick()

    def _room(self, mode: int) -> int:
        own = 2 * (self._cum - self._acked)
        if mode == _WAITING:
            return min(own, 0)
        return self._lease + min(own, self._head)

    def record_failure(self, first_attempt: bool) -> None:
        """A failure costs nothing until it is retried (the fleet hears of it)."""
        self._active = self._wants = True
        if self._inline is not None:
            self._tick()

    def try_retry(self, outcome: Any, throttled: bool = False) -> float:
        """Take a retry's cost from this process's lease and return it, or return 0.0."""
        cost = self._cost(outcome, throttled)
        if self._inline is not None:
            self._tick()
        with self._lock:
            self._add_refunds()
            self._active = self._wants = True
            if self._room(self._mode(self._now())) < 2 * cost:
                return 0.0
            self._cum -= min(cost, self._value + self._cum - self._acked)
        if self._inline is not None:
            self._tick()  # the retry's cost counted when it was taken
        return cost / 1000

    def __repr__(self) -> str:
        return self._describe(RetryQuota.__repr__(self))


class _FleetRetryBudget(_View, RetryBudget):
    """A RetryBudget whose window and reserve the fleet shares.  Its own slots
    (RetryBudget's) keep this process's counts of the last window, for when
    it is alone."""

    __slots__ = _VIEW_SLOTS

    def __init__(
        self,
        ratio: float = 0.2,
        min_per_second: float = 10.0,
        window: float = 10.0,
        *,
        clock: Callable[[], float] = time.monotonic,
        store: Store | None = None,
    ) -> None:
        RetryBudget.__init__(self, ratio, min_per_second, window, clock=clock)
        if self._reserve > 10**15:
            raise _checks.ArgumentValueError(
                "min_per_second",
                f"min_per_second x window must be at most 1e12 in a fleet, got {min_per_second!r}",
            )
        self._full = self._reserve
        width = round(self._width * 1e6)
        parameters = ("window", self._UNIT, width, len(self._slots), self._reserve)
        self._join(store, "retry_budget", parameters, 0)  # type: ignore[arg-type]

    def _settle(self, now: float) -> None:
        if now - self._ok_at >= self.window:  # unsent counts older than a window are dropped
            self._advance()
            self._cum = self._acked + self._balance

    def record_failure(self, first_attempt: bool) -> None:
        """A call whose first attempt failed deposits; every failure tells the fleet."""
        self._wants = True
        if first_attempt:
            self._record_call()
        elif self._inline is not None:
            self._tick()

    def _record_call(self) -> None:
        with self._lock:
            index = self._advance()
            self._slots[index] += self._deposit
            self._balance += self._deposit
            self._cum += self._deposit
            self._active = True
        if self._inline is not None:
            self._tick()

    def _room(self, mode: int) -> int:
        if mode == _LIVE:
            return self._lease + self._cum - self._acked
        if mode == _ALONE:  # and within a 1/n slice, with this process's counts of the window
            return min(self._lease + self._cum - self._acked, self._slice + self._balance)
        return self._cum - self._acked

    def try_retry(self, outcome: Any) -> bool:
        """Withdraw one retry if this process's lease and its own deposits allow it."""
        if self._inline is not None:
            self._tick()
        with self._lock:
            index = self._advance()
            self._active = self._wants = True
            if self._room(self._mode(self._now())) < self._UNIT:
                return False
            self._slots[index] -= self._UNIT
            self._balance -= self._UNIT
            self._cum -= self._UNIT
        if self._inline is not None:
            self._tick()  # the retry counted in the window when it was taken
        return True

    def __repr__(self) -> str:
        return self._describe(RetryBudget.__repr__(self))


_FLEET_CLASSES: dict[type, type] = {
    TokenBucket: _FleetTokenBucket,
    RetryBudget: _FleetRetryBudget,
    RetryQuota: _FleetRetryQuota,
}


def _budget_class(cls: type[Any], store: object) -> type[Any]:
    """The class that makes a *cls* counting through *store*."""
    if not isinstance(store, Store):
        raise _checks.ArgumentTypeError(
            "store", f"store must be a backoff_iter.fleet.RedisStore, got {store!r}"
        )
    if cls in _FLEET_CLASSES.values():
        return cls
    fleet_class = _FLEET_CLASSES.get(cls)
    if fleet_class is None:
        raise _checks.ArgumentTypeError(
            "store",
            f"store= works with TokenBucket, RetryBudget and RetryQuota, not {cls.__name__}",
        )
    return fleet_class


def _redis() -> Any:
    """The redis module, or an error that says how to install it."""
    try:
        import redis
    except ImportError:
        raise ModuleNotFoundError(
            "RedisStore needs redis-py: pip install 'backoff_iter[redis]'", name="redis"
        ) from None
    return redis


class RedisStore(Store):
    """One Redis, one *name*: where a budget keeps what a fleet shares.

    *client* is a redis-py ``redis.Redis``.  The store's thread talks to the
    same server through a connection of its own, made from the client's
    settings with a socket timeout of ``max(0.5, 5 x sync_interval)``
    seconds and no retries of its own (a client whose pool it cannot copy,
    such as a Sentinel one, is used as it is: decisions never wait on it
    anyway).  *sync_interval* (0.001 to 60 seconds) is how often a busy
    process exchanges its counts.  A store serves one budget; ``close()``
    it, or use it as a context manager, to stop its thread and leave the
    fleet (the thread is a daemon, and also stops when the store and its
    budget are garbage collected).  Thread-safe.

    See :mod:`backoff_iter.fleet` for what the fleet shares and what the
    lag between exchanges can cost.
    """

    __slots__ = ("client", "name", "sync_interval", "_worker", "_closed", "_finalizer")

    client: redis.Redis
    """The redis-py client, as given."""
    name: str
    """The fleet's name for the budget."""
    sync_interval: float
    """Seconds between a busy process's exchanges."""

    def __init__(self, client: redis.Redis, name: str, *, sync_interval: float = 0.1) -> None:
        module = _redis()
        if not isinstance(client, module.Redis):
            raise _checks.ArgumentTypeError(
                "client", f"client must be a redis.Redis (redis-py's sync client), got {client!r}"
            )
        if not isinstance(name, str):
            raise _checks.ArgumentTypeError("name", f"name must be a string, got {name!r}")
        if not name:
            raise _checks.ArgumentValueError("name", "name must not be empty")
        sync_interval = _checks.number("sync_interval", sync_interval)
        if not 0.001 <= sync_interval <= 60.0:
            raise _checks.ArgumentValueError(
                "sync_interval",
                f"sync_interval must be in [0.001, 60] seconds, got {sync_interval!r}",
            )
        self.client = client
        self.name = name
        self.sync_interval = sync_interval
        self._worker: _Worker | None = None
        self._closed = False
        self._finalizer: weakref.finalize[Any, Any] | None = None

    def _attach(self, view: _View, kind: str, parameters: tuple[Any, ...], window: float) -> None:
        if self._closed:
            raise _checks.ArgumentValueError("store", f"store is closed: {self!r}")
        if self._worker is not None and self._worker.serving():
            raise _checks.ArgumentValueError(
                "store",
                f"store {self!r} already serves a budget; make one RedisStore (and name) per budget",
            )
        timing = _Timing(self.sync_interval, window)
        view._timing = timing
        view._stale = timing.stale
        view._now = time.monotonic
        view._active_at = time.monotonic()  # exchanging from the start, idle or not
        view._member = _new_member()
        keys = [
            f"backoff_iter:{{{self.name}}}:{kind}:{part}"
            for part in ("counts", "members", "ledger")
        ]
        client, own = _own_client(self.client, max(0.5, 5.0 * self.sync_interval))
        worker = _Worker(view, client, own, keys, timing, parameters, self.name)
        view._signal = worker.signal
        self._worker = worker
        self._finalizer = weakref.finalize(self, worker.stop, False)
        worker.start()

    def close(self) -> None:
        """Send this process's last counts, leave the fleet and stop the thread."""
        self._closed = True
        if self._finalizer is not None:
            self._finalizer.detach()
        if self._worker is not None:
            self._worker.stop(True)

    def __enter__(self) -> RedisStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        settings = self.client.connection_pool.connection_kwargs
        where = settings.get("path") or f"{settings.get('host')}:{settings.get('port')}"
        return (
            f"RedisStore(<redis.Redis {where}/{settings.get('db', 0)}>, {self.name!r},"
            f" sync_interval={self.sync_interval!r})"
        )


def _new_member() -> str:
    return f"{os.getpid()}-{os.urandom(6).hex()}"


def _own_client(client: Any, timeout: float) -> tuple[Any, bool]:
    """A client on its own pool, with *timeout* and no retries; the client
    itself when its pool cannot be copied.  True when the client is new."""
    module = _redis()
    pool = client.connection_pool
    if type(pool) not in (module.ConnectionPool, module.BlockingConnectionPool):
        return client, False
    try:
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        settings = {
            key: value
            for key, value in pool.connection_kwargs.items()
            if not key.startswith(("maint_notifications", "orig_"))  # redis-py 7+ pool internals
        }
        current = settings.get("socket_timeout")
        settings["socket_timeout"] = timeout if current is None else min(current, timeout)
        current = settings.get("socket_connect_timeout")
        settings["socket_connect_timeout"] = timeout if current is None else min(current, timeout)
        settings["retry"] = Retry(NoBackoff(), 0)
        own = module.ConnectionPool(connection_class=pool.connection_class, **settings)
        return module.Redis(connection_pool=own), True
    except Exception:  # pragma: no cover - a redis-py that builds pools otherwise
        return client, False


_workers: weakref.WeakSet[_Worker] = weakref.WeakSet()


class _Worker:
    """A store's thread: every sync interval, one exchange for its budget.
    Holds its budget weakly: the thread ends when the budget is collected."""

    def __init__(
        self,
        view: _View,
        client: Any,
        own: bool,
        keys: list[str],
        timing: _Timing,
        parameters: tuple[Any, ...],
        name: str,
    ) -> None:
        self._view = weakref.ref(view)
        self._client = client
        self._own = own
        self._keys = keys
        self._timing = timing
        self._parameters = [str(p) for p in parameters]
        self._name = name
        self._script = client.register_script(_SCRIPT)  # loaded at its first use
        self.signal = threading.Event()
        self._stopping = False
        self._leave = False
        self._failing = False
        self._thread: threading.Thread | None = None
        _workers.add(self)

    def serving(self) -> bool:
        return self._view() is not None and not self._stopping

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._run, name=f"backoff_iter.fleet {self._name}", daemon=True
        )
        self._thread.start()

    def stop(self, leave: bool) -> None:
        """Stop the thread; with *leave*, after a last exchange that leaves the fleet."""
        self._leave = leave
        self._stopping = True
        self.signal.set()
        thread = self._thread
        if leave and thread is not None and thread is not threading.current_thread():
            thread.join(self._timing.stale + 1.0)
        if self._own:
            with contextlib.suppress(Exception):  # closing a broken connection
                self._client.connection_pool.disconnect()

    def _run(self) -> None:
        while not self._stopping:
            try:
                if not self._exchange(False):
                    return  # the budget is gone
            except Exception:  # a bug of ours: say so, and go on
                _log.exception("fleet budget %r: an exchange failed", self._name)
            self.signal.wait(self._timing.interval)
            self.signal.clear()
        if self._leave and not self._failing:
            self._exchange(True)

    def _exchange(self, leave: bool) -> bool:
        """One exchange; False when the budget is gone."""
        view = self._view()
        if view is None:
            return False
        sent_at = time.monotonic()
        sent = view._snapshot(sent_at, leave)
        del view  # not kept alive while Redis takes its time
        if sent is None:
            return True  # idle
        member, acked, cumulative, keep, wants = sent
        arguments = [
            member,
            acked,
            cumulative,
            "",  # the server's TIME
            *self._timing.arguments,
            int(leave),
            keep,
            wants,
            *self._parameters,
        ]
        try:
            answer = self._script(keys=self._keys, args=arguments, client=self._client)
            value, n, lease = (int(number) for number in answer)
        except Exception as error:  # Redis away, slow or odd: never the budget's callers' problem
            if not self._failing:
                self._failing = True
                _log.warning(
                    "fleet budget %r: Redis did not answer (%s: %s); deciding from"
                    " this process's own counts until it does",
                    self._name,
                    type(error).__name__,
                    error,
                )
            return True
        view = self._view()
        if view is not None:
            view._merge(sent, (value, n, lease), sent_at)
        if self._failing:
            self._failing = False
            _log.info("fleet budget %r: Redis answers again; counts merged", self._name)
        return True

    def _after_fork(self) -> None:
        """In a forked child: a new member with nothing counted, a new thread."""
        view = self._view()
        if view is None or self._stopping:
            return
        view._restart(_new_member())
        self.signal = view._signal = threading.Event()
        self._failing = False
        self.start()


def _after_fork_in_child() -> None:
    for worker in list(_workers):
        worker._after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class _SharedState(Store):
    """The exchange script's arithmetic in Python, exchanged inline: a whole
    fleet in one process, for simulations and tests.

    Give each simulated client its own budget, all with ``store=`` the same
    ``_SharedState``: each budget is one member with its own local view,
    exactly as a process with a :class:`RedisStore`.  Its exchanges happen
    inline, when the budget is used and ``sync_interval`` seconds of *clock*
    have passed since its last one (simulated time, if *clock* reads it),
    before a decision and after an event is counted; ``sync_interval=0``
    exchanges at every event: a fleet budget with no lag at all.  So the lag is the
    same as a fleet's, without threads: a client that is used again after a
    quiet spell exchanges first.  Every budget on one ``_SharedState`` must
    be of one kind, with the same parameters.  Not thread-safe beyond one
    lock around each exchange.

    >>> clock = [0.0]
    >>> fleet = _SharedState(sync_interval=1.0, clock=lambda: clock[0])
    >>> a, b = (TokenBucket(max_tokens=4, token_ratio=0.5, store=fleet) for _ in "ab")
    >>> a.record_failure(True), b.record_failure(True)
    (None, None)
    >>> a.try_retry(None), b.try_retry(None)  # each holds a lease of half the room
    (True, False)
    >>> clock[0] = 1.0; a.try_retry(None), round(a.tokens, 3)  # both failures known now
    (False, 2.0)
    """

    __slots__ = (
        "sync_interval",
        "_clock",
        "_last",
        "_kind",
        "_members",
        "_lock",
        "_counts",
        "_expiry",
        "_heap",
        "_acks",
        "_leases",
        "_leased",
        "_touched",
    )

    def __init__(
        self, sync_interval: float = 0.1, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        sync_interval = _checks.number("sync_interval", sync_interval)
        if not 0.0 <= sync_interval <= 3600.0:
            raise _checks.ArgumentValueError(
                "sync_interval",
                f"sync_interval must be in [0, 3600] seconds, got {sync_interval!r}",
            )
        _checks.function("clock", clock)
        self.sync_interval = sync_interval
        self._clock = clock
        self._last: float | None = None
        self._kind: tuple[Any, ...] | None = None
        self._members = count(1)
        self._lock = threading.Lock()
        self._counts: dict[Any, int] = {}  # KEYS[1]
        self._expiry: dict[str, int] = {}  # KEYS[2], with _heap for the oldest
        self._heap: list[tuple[int, str]] = []
        self._acks: dict[str, int] = {}  # KEYS[3]: 'a:' fields
        self._leases: dict[str, int] = {}  # 'l:' fields
        self._leased = 0  # 'leased'
        self._touched: int | None = None  # when the keys' ttl was last set

    def _time(self) -> float:
        """The clock, never going backwards, inf or NaN (the last good reading)."""
        now = self._clock()
        last = self._last
        if last is None:
            last = 0.0
        if now >= last and now < _LATEST:  # NaN is neither
            self._last = last = float(now)
        elif self._last is None:
            self._last = last
        return last

    def _attach(self, view: _View, kind: str, parameters: tuple[Any, ...], window: float) -> None:
        if self._kind is None:
            self._kind = (kind, parameters, window)
        elif self._kind != (kind, parameters, window):
            raise _checks.ArgumentValueError(
                "store",
                f"store {self!r} holds a {self._kind[0]} with parameters {self._kind[1]};"
                f" it cannot also hold a {kind} with {parameters}",
            )
        view._timing = _Timing(self.sync_interval, window)
        view._stale = view._timing.stale
        view._now = self._time
        view._active_at = self._time()
        view._member = str(next(self._members))
        view._inline = self

    def _exchange_for(
        self, view: _View, sent: tuple[str, int, int, int, int], now: float
    ) -> tuple[int, int, int]:
        member, acked, cumulative, _, wants = sent
        with self._lock:
            return self.exchange(
                member,
                acked,
                cumulative,
                round(now * 1e6),
                *view._timing.arguments,
                0,
                0,  # keep: inline, nothing is spent while the exchange is made
                wants,
                *self._kind[1],  # type: ignore[index]
            )

    def exchange(
        self,
        member: str,
        acked: int,
        cumulative: int,
        now: int,
        interval: int,
        horizon: int,
        ttl: int,
        leave: int,
        keep: int,
        want: int,
        kind: str,
        unit: int,
        *parameters: int,
    ) -> tuple[int, int, int]:
        """What the script answers to the same ARGV (times as integers): (value, n, lease)."""
        if self._touched is not None and now >= self._touched + ttl * 1000:
            self._forget()  # the keys expired
        self._touched = now
        acks, leases, expiry, heap = self._acks, self._leases, self._expiry, self._heap
        while heap and heap[0][0] < now:
            at, gone = heapq.heappop(heap)
            if expiry.get(gone) == at:
                del expiry[gone]
                acks.pop(gone, None)
                self._leased -= leases.pop(gone, 0)
        stored = acks.get(member)
        delta = cumulative - (acked if stored is None else stored)
        self._leased -= leases.pop(member, 0)
        if leave:
            expiry.pop(member, None)
            acks.pop(member, None)
        else:
            expiry[member] = now + horizon
            heapq.heappush(heap, (now + horizon, member))
            acks[member] = cumulative
        n = max(1, len(expiry))
        counts = self._counts
        if kind == "level":
            cap, zero = parameters
            value = max(0, min(cap, counts.get("level", cap) + delta))
            counts["level"] = value
            room = 2 * value - zero
        else:
            width, slots, reserve = parameters
            slot = math.floor(now / width)
            leaving = math.floor((now + interval) / width) - slots
            if delta:
                counts[slot] = counts.get(slot, 0) + delta
            value, room = 0, reserve
            for index in list(counts):
                amount = counts[index]
                if index <= slot - slots:
                    del counts[index]
                else:
                    value += amount
                    if index > leaving or amount < 0:
                        room += amount
        free = max(0, room - self._leased)
        lease = math.floor(room / n)
        if lease >= unit or (lease > 0 and n == 1):
            lease = min(lease, free)
        elif lease > 0:
            lease = min(unit, free) if want else 0
        held = max(lease, min(keep, free))
        if not leave and held > 0:
            leases[member] = held
            self._leased += held
        return value, n, lease

    def _forget(self) -> None:
        self._counts.clear()
        self._expiry.clear()
        self._heap.clear()
        self._acks.clear()
        self._leases.clear()
        self._leased = 0

    def __repr__(self) -> str:
        return f"_SharedState(sync_interval={self.sync_interval!r})"
