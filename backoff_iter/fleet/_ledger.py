"""What a fleet keeps in Redis, and the exchanges that update it: the Lua
scripts Redis runs, each beside the one Python model of its arithmetic.

Each fleet part has five keys, all in one hash slot (``{name}``, so a
Redis Cluster runs its script on one node): its counts (a hash), its
members by expiry (a sorted set), its ledger (a hash: what each member last
sent, the leases held, a breaker's state), its demand (a sorted set: the
members of a budget that want room now) and its gone (a sorted set: the
members forgotten lately, by when what they last sent is dropped).  An exchange is one call of a
script: a member's counts in, the fleet's state out, atomically.  This
module is what every script begins with (``PRELUDE``) and its model
(``LedgerBase``); ``_budget_script`` and ``_count_script`` hold the rest,
and ``_shared.Ledger`` the whole model, which the in-process store runs in
simulations and the tests run beside Redis on the same sequences.

Every value read from Redis is checked before it counts: a number must be a
whole, finite one within what the part's parameters allow (a slot of a
window not ahead of the server's clock by more than an interval), or it is
dropped and rebuilt (a budget's window dropping a slot is lowered to what the
member last heard, so debt dropped with it comes back); a key of the wrong
type is deleted.  The script says
so in its answer's first number, a mask of the branches it took (bit 1:
something was repaired, bit 2: the counts were rebuilt from the member's
view), which the store logs once.
"""

from __future__ import annotations

import heapq
import math
from typing import Any

# The branches every exchange may take, as bits of its answer's first number
# (each script numbers its own from 32 on).
REPAIRED = 1  # a value or key that could not be right was dropped
REBUILT = 2  # the counts were gone: rebuilt from what the member last heard
FRESH = 4  # the counts were gone and the member had heard nothing: a new part
GONE = 8  # a member not heard from within its horizon was forgotten
LEFT = 16  # the member left the fleet
COMMON_BITS = REPAIRED | GONE | LEFT

#: The largest whole number a count may reach: exact in a Lua number (a double).
LIMIT = 2**53

#: How long the ledger keeps what a forgotten member last sent (its a:, b:
#: and t: fields), in horizons, or the keys' ttl if longer (three windows;
#: *silence* is always shorter): the script's ``kept``.  A member back
#: within it, whose last answer was lost, is not counted twice; one back
#: later is new.  Fifty horizons are a minute at the default sync interval
#: (0.1 s), longer than a process cut off alone from Redis plausibly stays
#: away (a network partition, a paused VM or container, a Redis failover:
#: 15 to 30 s to detect), and the ttl outlasts any count still in a window.
#: The ledger then holds about three fields per member live or forgotten
#: within it, however many came and went before.
KEPT = 50

#: The longest horizon a member may have, in microseconds: a
#: ``RedisStore``'s at its longest ``sync_interval`` (60 s; 4 x 3 x 60 s).
#: Members of one fleet may exchange at different sync intervals (a rolling
#: deploy that changes it): an expiry (or a forgotten member's bound) is
#: impossible only beyond what the slowest of them could have written, not
#: beyond this member's own, or a fast member would forget a slow one at each
#: exchange (and lend its lease again).
LONGEST_HORIZON = 720_000_000

# The Lua every script begins with: the keys' types checked, the clock, the
# members' expiry, and what a member counted since its last exchange.  ARGV:
# 1 member, 2 now in microseconds ('' for the server's TIME), 3 sync interval,
# 4 stale, 5 horizon (us), 6 ttl (ms), 7 leave (1 or 0); the rest is the
# script's own.  KEYS: counts, members, ledger, demand, gone.
PRELUDE = (
    """
if redis.replicate_commands then pcall(redis.replicate_commands) end  -- TIME, then writes (Redis < 5)
local mask = 0
local function flag(bit_) mask = bit.bor(mask, bit_) end
local function int(x) return string.format('%.0f', x) end
local LIMIT = 9007199254740992
-- a whole number within [low, high], or nil (and nil for false, '' and words)
local function whole(value, low, high)
  local x = tonumber(value)
  if x and x == x and x >= low and x <= high and x == math.floor(x) then return x end
  return nil
end
local types = {'hash', 'zset', 'hash', 'zset', 'zset'}
for i, key in ipairs(KEYS) do
  local found = redis.call('TYPE', key)['ok']
  if found ~= 'none' and found ~= types[i] then
    redis.call('DEL', key)
    flag(REPAIRED)
  end
end
local now = tonumber(ARGV[2])
if not now then
  local clock = redis.call('TIME')
  now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
end
local counts, members, ledger, demand, gone = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local member = ARGV[1]
local interval, stale, horizon = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local ttl, leave = tonumber(ARGV[6]), ARGV[7] == '1'

-- The leases held: a number, or (gone or wrong) the sum of each member's.
local function leases()
  local sum = 0
  local fields = redis.call('HGETALL', ledger)
  for i = 1, #fields, 2 do
    if string.sub(fields[i], 1, 2) == 'l:' then
      sum = sum + (whole(fields[i + 1], 0, LIMIT) or 0)
    end
  end
  return sum
end
local leased = redis.call('HGET', ledger, 'leased')
if not whole(leased, 0, LIMIT) then
  if leased then flag(REPAIRED) end
  leased = leases()
else
  leased = tonumber(leased)
end
-- What member id holds, taken back (a value that cannot be a lease counts as none).
local function release(id)
  local held = redis.call('HGET', ledger, 'l:' .. id)
  if held then
    local amount = whole(held, 0, leased)
    if not amount then flag(REPAIRED) end
    leased = leased - (amount or 0)
  end
end
-- Members not heard from within their horizon have gone, and members whose
-- expiry lies beyond any horizon never were: their leases come back.  What
-- each last sent (a:, b:, t:) stays for kept (50 horizons, or the ttl if
-- longer: see KEPT) in case it comes back: a member back after an outage
-- may have lost the answer to counts applied here.  Later it is new.
local kept = math.max("""
    + str(KEPT)
    + """ * horizon, ttl * 1000)
-- Beyond any member's horizon, and beyond what any member keeps (see LONGEST_HORIZON).
local furthest = math.max(horizon, """
    + str(LONGEST_HORIZON)
    + """)
local furthest_kept = math.max("""
    + str(KEPT)
    + """ * furthest, ttl * 1000)
local function forget(ids, bit_)
  for _, id in ipairs(ids) do
    release(id)
    redis.call('HDEL', ledger, 'l:' .. id)
    redis.call('ZREM', demand, id)
    redis.call('ZADD', gone, int(now + kept), id)
    flag(bit_)
  end
end
forget(redis.call('ZRANGEBYSCORE', members, '-inf', '(' .. int(now)), GONE)
forget(redis.call('ZRANGEBYSCORE', members, '(' .. int(now + furthest), '+inf'), REPAIRED)
redis.call('ZREMRANGEBYSCORE', members, '-inf', '(' .. int(now))
redis.call('ZREMRANGEBYSCORE', members, '(' .. int(now + furthest), '+inf')
-- A budget's members wanting room are scored until their stale: beyond any
-- horizon, none ever was (a stray client's) and would count as wanting for good.
if redis.call('ZREMRANGEBYSCORE', demand, '(' .. int(now + furthest), '+inf') > 0 then
  flag(REPAIRED)
end
-- Members forgotten kept ago (or beyond kept ahead: never) are dropped for
-- good, each once: no exchange reads those dropped before.
local function drop(ids)
  for _, id in ipairs(ids) do
    redis.call('HDEL', ledger, 'a:' .. id, 'b:' .. id, 't:' .. id)
  end
end
drop(redis.call('ZRANGEBYSCORE', gone, '-inf', '(' .. int(now)))
local never = redis.call('ZRANGEBYSCORE', gone, '(' .. int(now + furthest_kept), '+inf')
if #never > 0 then flag(REPAIRED) end
drop(never)
redis.call('ZREMRANGEBYSCORE', gone, '-inf', '(' .. int(now))
redis.call('ZREMRANGEBYSCORE', gone, '(' .. int(now + furthest_kept), '+inf')
redis.call('ZREM', gone, member)
-- No member left, a lease still held is a member's the fleet lost track of
-- (the members key deleted or evicted, the member gone): they all come back.
if redis.call('ZCARD', members) == 0 then
  local fields = redis.call('HGETALL', ledger)
  for i = 1, #fields, 2 do
    if string.sub(fields[i], 1, 2) == 'l:' then
      redis.call('HDEL', ledger, fields[i])
      flag(GONE)
    end
  end
  leased = 0
end
release(member)
redis.call('HDEL', ledger, 'l:' .. member)
if leave then
  redis.call('ZREM', members, member)
  flag(LEFT)
else
  redis.call('ZADD', members, int(now + horizon), member)
end
local n = math.max(1, redis.call('ZCARD', members))
-- What the member counted since the exchange it last heard back from, applied
-- once: field is 'a' (or 'b' for a second count), acked what it heard back.
local function since(field, acked, cumulative)
  local stored = redis.call('HGET', ledger, field .. ':' .. member)
  local last = whole(stored, -LIMIT, LIMIT)
  if stored and not last then flag(REPAIRED) end
  if leave then
    redis.call('HDEL', ledger, field .. ':' .. member)
  else
    redis.call('HSET', ledger, field .. ':' .. member, int(cumulative))
  end
  return cumulative - (last or acked)
end
local function finish()
  for _, key in ipairs(KEYS) do
    if redis.call('EXISTS', key) == 1 then redis.call('PEXPIRE', key, int(ttl)) end
  end
end
"""
)


def lua_number(value: Any) -> float | None:
    """What Lua's ``tonumber`` reads in *value* (a Redis string, or an int of
    ours); None where it reads nothing (``false``, ``''``, words)."""
    if type(value) is int:
        return value
    if not isinstance(value, (str, bytes)):
        return None
    text = value.decode() if isinstance(value, bytes) else value
    if "_" in text:
        return None
    try:
        return float(text)
    except ValueError:
        pass
    if text.strip().lstrip("+-")[:2].lower() != "0x":
        return None
    try:
        return float.fromhex(text)  # Lua's strtod reads hexadecimal too, after 0x
    except ValueError:
        return None


def whole(value: Any, low: float, high: float) -> int | None:
    """*value* as a whole number within [low, high], or None (the script's ``whole``)."""
    if type(value) is int:
        return value if low <= value <= high else None
    x = lua_number(value)
    if x is None or not low <= x <= high or x != math.floor(x):  # NaN fails the bounds
        return None
    return int(x)


class Scores:
    """A Redis sorted set, for the model: member -> score, with the members
    below or above a score found in O(log n) each."""

    __slots__ = ("score", "_low", "_high")

    def __init__(self) -> None:
        self.score: dict[str, int] = {}
        self._low: list[tuple[int, str]] = []  # (score, member), stale entries skipped
        self._high: list[tuple[int, str]] = []  # (-score, member)

    def add(self, member: str, score: int) -> None:
        if self.score.get(member) == score:
            return
        self.score[member] = score
        heapq.heappush(self._low, (score, member))
        heapq.heappush(self._high, (-score, member))
        if len(self._high) > 2 * len(self.score) + 64:  # compacted: its stale entries go
            self._high = [(-s, m) for m, s in self.score.items()]
            heapq.heapify(self._high)

    def remove(self, member: str) -> None:
        self.score.pop(member, None)

    def below(self, limit: int) -> list[str]:
        """Remove and return the members scored below *limit*, in order (ZRANGEBYSCORE)."""
        gone, low, score = [], self._low, self.score
        while low and low[0][0] < limit:
            at, member = heapq.heappop(low)
            if score.get(member) == at:
                del score[member]
                gone.append(member)
        return gone

    def above(self, limit: int) -> list[str]:
        """Remove and return the members scored above *limit*, in order."""
        gone, high, score = [], self._high, self.score
        while high and -high[0][0] > limit:
            at, member = heapq.heappop(high)
            if score.get(member) == -at:
                del score[member]
                gone.append(member)
        return sorted(gone, key=lambda m: (-1, m))  # all above: order does not change a sum

    def __len__(self) -> int:
        return len(self.score)


class LedgerBase:
    """A fleet part's five keys as Python values, and the prelude's arithmetic.

    ``counts`` and ``ledger`` are dicts (Redis hashes), ``members``,
    ``demand`` and ``gone`` are :class:`Scores` (sorted sets); a key that expired is
    emptied (``ttl`` milliseconds after the last exchange, as Redis does, or
    later where the exchange said so: ``_expires``).
    A test may set any of them to what a stray client could write to Redis
    (a string in place of a hash, a word in place of a number): the model
    checks what it reads as the script does.  Not thread-safe: its store
    holds a lock around each exchange.
    """

    __slots__ = ("counts", "members", "ledger", "demand", "gone", "_expires", "_mask")

    def __init__(self) -> None:
        self.counts: Any = {}
        self.members: Any = Scores()
        self.ledger: Any = {}
        self.demand: Any = Scores()
        self.gone: Any = Scores()
        self._expires: int | None = None  # when the keys expire, as their ttl was last set
        self._mask = 0

    def _start(self, member: str, now: int, horizon: int, ttl: int, leave: int) -> tuple[int, int]:
        """The prelude: (leased, n)."""
        self._begin(now, ttl)
        return self._membership(member, now, horizon, ttl, leave, self._leased())

    # -- the prelude ---------------------------------------------------------------

    def _begin(self, now: int, ttl: int) -> None:
        """The keys as Redis would have them at *now*: expired after *ttl*, of the right types."""
        self._mask = 0
        if self._expires is not None and now >= self._expires:
            self.counts, self.members, self.ledger = {}, Scores(), {}
            self.demand, self.gone = Scores(), Scores()
        self._expires = now + ttl * 1000
        for name, kind in (("counts", dict), ("members", Scores), ("ledger", dict)):
            if type(getattr(self, name)) is not kind:
                setattr(self, name, kind())
                self._mask |= REPAIRED
        for name in ("demand", "gone"):
            if type(getattr(self, name)) is not Scores:
                setattr(self, name, Scores())
                self._mask |= REPAIRED

    def _leased(self) -> int:
        ledger = self.ledger
        stored = ledger.get("leased")
        leased = whole(stored, 0, LIMIT)
        if leased is not None:
            return leased
        if stored is not None:
            self._mask |= REPAIRED
        return self._leases()

    def _leases(self) -> int:
        """The sum of each member's lease (one that cannot be a lease counts as none)."""
        return sum(whole(v, 0, LIMIT) or 0 for k, v in self.ledger.items() if k[:2] == "l:")

    def _release(self, member: str, leased: int) -> int:
        held = self.ledger.get("l:" + member)
        if held is None:
            return leased
        amount = whole(held, 0, leased)
        if amount is None:
            self._mask |= REPAIRED
            return leased
        return leased - amount

    def _forget(self, ids: list[str], bit: int, leased: int, until: int) -> int:
        ledger, demand, gone = self.ledger, self.demand, self.gone
        for member in ids:
            leased = self._release(member, leased)
            ledger.pop("l:" + member, None)  # a:, b: and t: stay until *until* (see the script)
            demand.remove(member)
            gone.add(member, until)
            self._mask |= bit
        return leased

    def _drop(self, ids: list[str]) -> None:
        ledger = self.ledger
        for member in ids:
            for field in ("a:", "b:", "t:"):
                ledger.pop(field + member, None)

    def _membership(
        self, member: str, now: int, horizon: int, ttl: int, leave: int, leased: int
    ) -> tuple[int, int]:
        """Members gone or impossible forgotten, and what those forgotten
        *kept* ago sent dropped; the member's lease taken back, its expiry
        renewed (or it left): (leased, n)."""
        members, gone = self.members, self.gone
        kept = max(KEPT * horizon, ttl * 1000)
        furthest = max(horizon, LONGEST_HORIZON)  # any member's (see LONGEST_HORIZON)
        leased = self._forget(members.below(now), GONE, leased, now + kept)
        leased = self._forget(members.above(now + furthest), REPAIRED, leased, now + kept)
        if self.demand.above(now + furthest):  # wanting room beyond any horizon: never was
            self._mask |= REPAIRED
        self._drop(gone.below(now))
        never = gone.above(now + max(KEPT * furthest, ttl * 1000))
        if never:
            self._mask |= REPAIRED
        self._drop(never)
        gone.remove(member)
        if not len(members):  # leases of members lost track of come back (see the script)
            ledger = self.ledger
            for field in [k for k in ledger if k[:2] == "l:"]:
                del ledger[field]
                self._mask |= GONE
            leased = 0
        leased = self._release(member, leased)
        self.ledger.pop("l:" + member, None)
        if leave:
            members.remove(member)
            self._mask |= LEFT
        else:
            members.add(member, now + horizon)
        return leased, max(1, len(members))

    def _since(self, field: str, member: str, acked: int, cumulative: int, leave: int) -> int:
        key = field + ":" + member
        stored = self.ledger.get(key)
        last = whole(stored, -LIMIT, LIMIT)
        if stored is not None and last is None:
            self._mask |= REPAIRED
        if leave:
            self.ledger.pop(key, None)
        else:
            self.ledger[key] = cumulative
        return cumulative - (acked if last is None else last)


def lua_bits(bits: dict[str, int]) -> str:
    """The Lua that names a script's branch bits as the Python does."""
    return "".join(f"local {name} = {bit}\n" for name, bit in bits.items())
