"""A budget's exchange: the Lua script, and beside it its Python model.

A budget's room is lent to its members as leases held in the ledger, so no
room is lent twice; see :mod:`backoff_iter.fleet` for what that promises.
"""

from __future__ import annotations

from ._ledger import (
    FRESH,
    GONE,
    LEFT,
    LIMIT,
    LONGEST_HORIZON,
    PRELUDE,
    REBUILT,
    REPAIRED,
    LedgerBase,
    lua_bits,
    whole,
)

# The branches a budget's exchange takes, beyond the prelude's.
ALONE = 32  # a lone member: all the room, however small
SHARE = 64  # a member wanting room: its share of it among the wanting
UNIT = 128  # a member wanting room whose share is too small: one retry's worth
STANDBY = 256  # a member wanting nothing: a share of what the wanting leave
HELD = 512  # what the member may still spend while its answer travels is held
OLD = 1024  # a slot of the window that has left it was dropped
LEAVING = 2048  # deposits about to leave the window were not lent
TRIMMED = 4096  # the level was kept within [0, cap] ([-2 cap, cap] if it owes)
NEED = 8192  # a member wanting room: one retry's worth for each of its failures
LOWERED = 16384  # counts rebuilt lately, or a slot dropped: lowered to what this member heard
#   (a window's slot lost: its room counted spent)
CREDIT = 32768  # a quiet member of a level that owes: one retry on credit, in turn
OWED = 65536  # the level is below 0: spent beyond it, owed until refunds pay it back
CRUMB = 131072  # shared, less than the cheapest retry costs: not lent

BITS = {
    "REPAIRED": REPAIRED,
    "REBUILT": REBUILT,
    "FRESH": FRESH,
    "GONE": GONE,
    "LEFT": LEFT,
    "ALONE": ALONE,
    "SHARE": SHARE,
    "UNIT": UNIT,
    "STANDBY": STANDBY,
    "HELD": HELD,
    "OLD": OLD,
    "LEAVING": LEAVING,
    "TRIMMED": TRIMMED,
    "NEED": NEED,
    "LOWERED": LOWERED,
    "CREDIT": CREDIT,
    "OWED": OWED,
    "CRUMB": CRUMB,
}

# A budget's exchange.  ARGV, after the prelude's 1-7: 8 acked, 9 cumulative, 10 keep: what the member may
# still spend of its lease while this exchange is in flight, 11 want: its
# failures since its last exchange (0: it wants no room), 12 heard: the fleet's value
# it last heard ('' if none), 13 need: the cheapest retry the member asked
# for lately, in the lease's units (a quota's; 0 if none), 14 kind: 'level'
# or 'window', 15 unit: the least lease that pays for any one retry; then
# for 'level': 16 cap, 17 the room's zero, doubled, 18 owes: 1 if what is
# spent beyond empty is owed (a quota's level goes down to -2 cap, and
# answers 0 meanwhile), 0 if the level stops at 0 (a bucket's), 19 least:
# what the cheapest retry costs (shared, no lease is lent that is less than
# least or need); for 'window': 16 slot width in us, 17 slots, 18 reserve,
# 19 the most a slot may hold either way.
# Answer: {mask, value, n, lease}.
BUDGET = (
    lua_bits(BITS)
    + PRELUDE
    + """
-- A window's: when Redis last applied this member's counts (t:).  A window
-- ago or more, what it applied then has left the window, and so has all the
-- member counted before its own window began: its count since is taken from
-- acked, which such a member sends as its count where its window began.
if ARGV[14] == 'window' then
  local stored = redis.call('HGET', ledger, 't:' .. member)
  local at = whole(stored, -LIMIT, LIMIT)
  if stored and not at then flag(REPAIRED) end
  if at and at + tonumber(ARGV[16]) * tonumber(ARGV[17]) <= now then
    redis.call('HDEL', ledger, 'a:' .. member)
  end
  if leave then
    redis.call('HDEL', ledger, 't:' .. member)
  else
    redis.call('HSET', ledger, 't:' .. member, int(now))
  end
end
local delta = since('a', tonumber(ARGV[8]), tonumber(ARGV[9]))
local keep, kind, unit = tonumber(ARGV[10]), ARGV[14], tonumber(ARGV[15])
local need = tonumber(ARGV[13]) or 0
local want = leave and 0 or tonumber(ARGV[11])
local value, room, widest  -- widest: the most room the part's parameters allow
local owes, least = false, 1
-- Counts gone (expired or deleted) are rebuilt from what the member heard,
-- never from full; for a horizon after (the rebuilder's: within any), each
-- member's view can only lower them.
local function rebuilding()
  return (whole(redis.call('HGET', counts, 'rebuilt'), 0, now + furthest) or 0) > now
end
if kind == 'level' then
  local cap, zero = tonumber(ARGV[16]), tonumber(ARGV[17])
  owes, least = ARGV[18] == '1', tonumber(ARGV[19]) or 1
  widest = 2 * cap + math.abs(zero)
  local floor = owes and -2 * cap or 0
  local stored = redis.call('HGET', counts, 'level')
  local level, heard = whole(stored, floor, cap), whole(ARGV[12], 0, cap)
  if not level then
    if stored then flag(REPAIRED) end
    if heard then
      level = heard
      redis.call('HSET', counts, 'rebuilt', int(now + horizon))
      flag(REBUILT)
    else
      level = cap
      flag(FRESH)
    end
  elseif heard and heard < level and rebuilding() then
    level = heard
    flag(LOWERED)
  end
  value = level + delta
  if value < floor or value > cap then
    value = math.max(floor, math.min(cap, value))
    flag(TRIMMED)
  end
  redis.call('HSET', counts, 'level', int(value))
  if value < 0 then
    value = 0
    flag(OWED)
  end
  room = 2 * value - zero
else
  local width, slots, reserve = tonumber(ARGV[16]), tonumber(ARGV[17]), tonumber(ARGV[18])
  local most = tonumber(ARGV[19])
  widest = reserve + most * (slots + 2 + math.floor(interval / width))
  local heard = whole(ARGV[12], -most * slots, most * slots)
  local slot = math.floor(now / width)
  -- the newest slot a server's clock may have written, and the slots that
  -- leave the window within one interval
  local ahead = math.floor((now + interval) / width)
  local leaving = ahead - slots
  if not redis.call('HGET', counts, 'born') then
    if heard then
      -- what the members owed comes back, never credit
      if heard < 0 then redis.call('HSET', counts, int(slot), int(heard)) end
      redis.call('HSET', counts, 'rebuilt', int(now + horizon))
      flag(REBUILT)
    else
      flag(FRESH)
    end
    redis.call('HSET', counts, 'born', int(now))
  end
  local stored = redis.call('HGET', counts, int(slot))
  local current = whole(stored, -most, most)
  -- a slot dropped (unreadable, or ahead of the clock) may have held debt:
  -- the member's view stands in for it, as for counts rebuilt; and a slot of
  -- the window whose count is lost (unreadable) may have held what the other
  -- members spent since this one last heard: the fleet counts its room spent
  local dropped = stored and not current
  local lost = dropped
  if dropped then flag(REPAIRED) end
  if current or delta ~= 0 then
    redis.call('HSET', counts, int(slot), int((current or 0) + delta))
  end
  value, room = 0, reserve
  local kept = 0  -- what the newest slot of the window holds, read
  local fields = redis.call('HGETALL', counts)
  for i = 1, #fields, 2 do
    local index, amount = whole(fields[i], -LIMIT, LIMIT), whole(fields[i + 1], -most, most)
    if fields[i] == 'born' or fields[i] == 'rebuilt' then
      -- when the counts began, and until when they are rebuilt: any value will do
    elseif not index or not amount or index > ahead then
      redis.call('HDEL', counts, fields[i])
      dropped = true
      if index and index <= ahead and index > slot - slots then lost = true end
      flag(REPAIRED)
    elseif index <= slot - slots then
      redis.call('HDEL', counts, fields[i])
      flag(OLD)
    else
      value = value + amount
      if index == ahead then kept = amount end
      if index > leaving or amount < 0 then room = room + amount else flag(LEAVING) end
    end
  end
  -- spent to nothing: taken from the newest slot, which never leaves within
  -- an interval (the next exchange counts it in the room), kept readable
  local spent = lost and math.min(room, most + kept) or 0
  if spent > 0 then
    redis.call('HSET', counts, int(ahead), int(kept - spent))
    room, value = room - spent, value - spent
    flag(LOWERED)
  end
  if heard and heard < value and (dropped or rebuilding()) then
    redis.call('HINCRBY', counts, int(slot), int(heard - value))
    room, value = room + heard - value, heard
    flag(LOWERED)
  end
end

-- Lent by demand: a member that wants room (its failures since its last
-- exchange: want) gets one retry's worth for each, within its share of the
-- room among the members wanting it now, and at least one retry's worth;
-- one that wants none gets a share of what one retry's worth for each
-- wanting member leaves, if that pays for a retry, else nothing (it hands
-- its lease back), or, for a level that owes (a quota), a retry on credit
-- in turn.  Alone, a member gets all the room.  Never more than
-- other members' leases leave free; held for the member until its next
-- exchange, with what it may still spend while this one is in flight.
redis.call('ZREMRANGEBYSCORE', demand, '-inf', '(' .. int(now))
if want > 0 then
  redis.call('ZADD', demand, int(now + stale), member)
else
  redis.call('ZREM', demand, member)
end
local wanting = redis.call('ZCARD', demand)
-- Each lease was lent from what was free then: together they never pass the
-- widest room.  A sum beyond it was written by no exchange (it would lend
-- nothing to anyone, for good): counted again from the members' own.
if leased > widest then
  local counted = leases()
  if counted ~= leased then
    leased = counted
    flag(REPAIRED)
  end
end
local free = math.max(0, room - leased)
local lease = 0
if room > 0 and not leave then
  if n == 1 then
    lease = math.min(room, free)
    flag(ALONE)
  elseif want > 0 then
    local share = math.floor(room / wanting)
    if share >= want * unit then
      lease = math.min(want * unit, free)
      flag(NEED)
    elseif share >= unit then
      lease = math.min(share, free)
      flag(SHARE)
    else
      lease = math.min(unit, free)
      flag(UNIT)
    end
  else
    local share = math.floor((room - wanting * unit) / n)
    if share >= unit then
      lease = math.min(share, free)
      flag(STANDBY)
    elseif owes then
      -- shares too small to lend: a retry on credit instead, in turn, to
      -- about twice as many quiet members as the room neither lent nor
      -- waited for pays for - few fail before their next exchange (a turn
      -- unreadable starts again from 0: it only says whose turn it is)
      local credits = math.floor(2 * (room - math.max(leased, wanting * unit)) / unit)
      if credits > 0 then
        local quiet = math.max(1, n - wanting)
        local turn = (whole(redis.call('HGET', ledger, 'turn'), 0, quiet) or 0) + credits
        if turn >= quiet then
          turn = turn - quiet
          flag(CREDIT)
        end
        redis.call('HSET', ledger, 'turn', int(math.min(turn, quiet)))
      end
    end
  end
end
-- Shared, a lease that pays for no retry is not lent, nor one that pays for
-- none of the retries the member asked for lately (nor does a member keep
-- one: see the budgets' _outgoing): crumbs held by several members would keep
-- the last retries' worth from all of them, where crumbs not lent add up.
if n > 1 and lease > 0 and (lease < least or lease < need) then
  lease = 0
  flag(CRUMB)
end
local held = lease
if keep > lease then
  held = math.max(lease, math.min(keep, free))
  flag(HELD)
end
if not leave and held > 0 then
  redis.call('HSET', ledger, 'l:' .. member, int(held))
  leased = leased + held
end
redis.call('HSET', ledger, 'leased', int(leased))
finish()
return {mask, value, n, lease}
"""
)


class BudgetLedger(LedgerBase):
    """The budget script's arithmetic, on the model's keys."""

    __slots__ = ()

    def budget(
        self,
        member: str,
        now: int,
        interval: int,
        stale: int,
        horizon: int,
        ttl: int,
        leave: int,
        acked: int,
        cumulative: int,
        keep: int,
        want: int,
        heard: int | str,
        need: int,
        kind: str,
        unit: int,
        *parameters: int,
    ) -> tuple[int, int, int, int]:
        """What the budget script answers to the same ARGV: (mask, value, n, lease)."""
        leased, n = self._start(member, now, horizon, ttl, leave)
        if kind == "window":  # when Redis last applied its counts (see the script)
            self._applied(member, now, parameters[0] * parameters[1], leave)
        delta = self._since("a", member, acked, cumulative, leave)
        counts = self.counts
        owes = False
        if kind == "level":
            cap, zero, owing, least = parameters
            owes = owing == 1
            floor = -2 * cap if owes else 0
            stored = counts.get("level")
            level, known = whole(stored, floor, cap), whole(heard, 0, cap)
            if level is None:
                if stored is not None:
                    self._mask |= REPAIRED
                if known is None:
                    level = cap
                    self._mask |= FRESH
                else:
                    level = known
                    counts["rebuilt"] = now + horizon
                    self._mask |= REBUILT
            elif known is not None and known < level and self._rebuilding(now, horizon):
                level = known
                self._mask |= LOWERED
            value = level + delta
            if not floor <= value <= cap:
                value = max(floor, min(cap, value))
                self._mask |= TRIMMED
            counts["level"] = value
            if value < 0:
                value = 0
                self._mask |= OWED
            room = 2 * value - zero
            widest = 2 * cap + abs(zero)
        else:
            least = 1
            value, room = self._slots_window(now, interval, horizon, delta, heard, *parameters)
            width, slots, reserve, most = parameters
            widest = reserve + most * (slots + 2 + interval // width)
        if leased > widest:  # a sum no exchange wrote: counted again (see the script)
            counted = self._leases()
            if counted != leased:
                leased = counted
                self._mask |= REPAIRED
        lease = self._lend(
            member, now, stale, room, n, leased, keep, want, unit, max(least, need), leave, owes
        )
        return self._mask, value, n, lease

    def _applied(self, member: str, now: int, span: int, leave: int) -> None:
        """A window's member last applied a window ago or more: its a: is dropped."""
        ledger = self.ledger
        stored = ledger.get("t:" + member)
        at = whole(stored, -LIMIT, LIMIT)
        if stored is not None and at is None:
            self._mask |= REPAIRED
        if at is not None and at + span <= now:
            ledger.pop("a:" + member, None)
        if leave:
            ledger.pop("t:" + member, None)
        else:
            ledger["t:" + member] = now

    def _on_credit(self, room: int, n: int, leased: int, wanting: int, unit: int) -> None:
        """A quiet member of a level that owes, its share too small to lend: a
        retry on credit, in turn (see the script)."""
        credits = 2 * (room - max(leased, wanting * unit)) // unit
        if credits > 0:
            quiet = max(1, n - wanting)
            turn = (whole(self.ledger.get("turn"), 0, quiet) or 0) + credits
            if turn >= quiet:
                turn -= quiet
                self._mask |= CREDIT
            self.ledger["turn"] = min(turn, quiet)

    def _rebuilding(self, now: int, horizon: int) -> bool:
        furthest = max(horizon, LONGEST_HORIZON)  # the rebuilder's horizon is within any
        return (whole(self.counts.get("rebuilt"), 0, now + furthest) or 0) > now

    def _slots_window(
        self,
        now: int,
        interval: int,
        horizon: int,
        delta: int,
        heard: int | str,
        width: int,
        slots: int,
        reserve: int,
        most: int,
    ) -> tuple[int, int]:
        """A RetryBudget's window: (value, room)."""
        counts = self.counts
        slot = now // width
        ahead = (now + interval) // width
        leaving = ahead - slots
        known = whole(heard, -most * slots, most * slots)
        if "born" not in counts:
            if known is None:
                self._mask |= FRESH
            else:
                if known < 0:
                    counts[slot] = known
                counts["rebuilt"] = now + horizon
                self._mask |= REBUILT
            counts["born"] = now
        stored = counts.get(slot)
        current = whole(stored, -most, most)
        dropped = lost = stored is not None and current is None
        if dropped:
            self._mask |= REPAIRED
        if current is not None or delta:
            counts[slot] = (current or 0) + delta
        value, room, kept = 0, reserve, 0
        for field in list(counts):
            if field == "born" or field == "rebuilt":
                continue
            index, amount = whole(field, -LIMIT, LIMIT), whole(counts[field], -most, most)
            if index is None or amount is None or index > ahead:
                del counts[field]
                dropped = True
                if index is not None and slot - slots < index <= ahead:
                    lost = True
                self._mask |= REPAIRED
            elif index <= slot - slots:
                del counts[field]
                self._mask |= OLD
            else:
                value += amount
                if index == ahead:
                    kept = amount
                if index > leaving or amount < 0:
                    room += amount
                else:
                    self._mask |= LEAVING
        spent = min(room, most + kept) if lost else 0
        if spent > 0:  # spent to nothing, from the newest slot, kept readable (see the script)
            counts[ahead] = kept - spent
            room, value = room - spent, value - spent
            self._mask |= LOWERED
        if known is not None and known < value and (dropped or self._rebuilding(now, horizon)):
            counts[slot] = counts.get(slot, 0) + known - value
            room, value = room + known - value, known
            self._mask |= LOWERED
        return value, room

    def _lend(
        self,
        member: str,
        now: int,
        stale: int,
        room: int,
        n: int,
        leased: int,
        keep: int,
        want: int,
        unit: int,
        least: int,
        leave: int,
        owes: bool,
    ) -> int:
        """The member's lease, held for it with what it may still spend (see the script)."""
        demand = self.demand
        demand.below(now)
        if leave:
            want = 0
        if want > 0:
            demand.add(member, now + stale)
        else:
            demand.remove(member)
        wanting = len(demand)
        free = max(0, room - leased)
        lease = 0
        if room > 0 and not leave:
            if n == 1:
                lease = min(room, free)
                self._mask |= ALONE
            elif want > 0:
                share = room // wanting
                if share >= want * unit:
                    lease = min(want * unit, free)
                    self._mask |= NEED
                elif share >= unit:
                    lease = min(share, free)
                    self._mask |= SHARE
                else:
                    lease = min(unit, free)
                    self._mask |= UNIT
            else:
                share = (room - wanting * unit) // n
                if share >= unit:
                    lease = min(share, free)
                    self._mask |= STANDBY
                elif owes:
                    self._on_credit(room, n, leased, wanting, unit)
        if n > 1 and 0 < lease < least:
            lease = 0
            self._mask |= CRUMB
        held = lease
        if keep > lease:
            held = max(lease, min(keep, free))
            self._mask |= HELD
        if not leave and held > 0:
            self.ledger["l:" + member] = held
            leased += held
        self.ledger["leased"] = leased
        return lease
