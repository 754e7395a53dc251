"""A throttle's and a breaker's exchanges: the Lua scripts, and beside them
their Python model.

Both count two things over a sliding window of the server's clock: a
throttle its requests and accepts, a breaker its successes and failures
(fields ``f<slot>`` and ``s<slot>`` of the counts).  A breaker's state -
closed, open until a time, or half open with one member's probe out - is
the fleet's, in the ledger.
"""

from __future__ import annotations

from ._ledger import GONE, LEFT, LIMIT, PRELUDE, REPAIRED, LedgerBase, lua_bits, whole

# The branches of these exchanges, beyond the prelude's.
OLD = 32  # a slot of the window that has left it was dropped
OPENED = 64  # a failure brought the fleet's ratio to the threshold: the circuit opened
PROBE = 128  # the break is over: this member sends the one probe
CLOSED = 256  # the probe succeeded: the circuit closed, the counts forgotten
REOPENED = 512  # the probe failed: open for another break
LATE = 1024  # the outcome of a probe the fleet no longer waited for
BROKEN = 2048  # a state that could not be right was dropped: closed

BITS = {
    "REPAIRED": REPAIRED,
    "GONE": GONE,
    "LEFT": LEFT,
    "OLD": OLD,
    "OPENED": OPENED,
    "PROBE": PROBE,
    "CLOSED": CLOSED,
    "REOPENED": REOPENED,
    "LATE": LATE,
    "BROKEN": BROKEN,
}

#: The longest break a breaker's fleet state holds, in microseconds (142
#: years: for good); the times it holds stay exact.
LONGEST = 2**52

#: A breaker's states, as its answer numbers them.
STATES = {"closed": 0, "open": 1, "half": 2}

# Counts of the window, checked: (the first's total, the second's).
_WINDOW = """
local function window(first, second, width, slots, most)
  local slot = math.floor(now / width)
  local ahead = math.floor((now + interval) / width)
  for tag, delta in pairs({f = first, s = second}) do
    local stored = redis.call('HGET', counts, tag .. int(slot))
    local current = whole(stored, 0, most)
    if stored and not current then flag(REPAIRED) end
    if current or delta > 0 then
      redis.call('HSET', counts, tag .. int(slot), int((current or 0) + delta))
    end
  end
  local totals = {f = 0, s = 0}
  local fields = redis.call('HGETALL', counts)
  for i = 1, #fields, 2 do
    local tag = string.sub(fields[i], 1, 1)
    local index = whole(string.sub(fields[i], 2), -LIMIT, LIMIT)
    local amount = whole(fields[i + 1], 0, most)
    if (tag ~= 'f' and tag ~= 's') or not index or not amount or index > ahead then
      redis.call('HDEL', counts, fields[i])
      flag(REPAIRED)
    elseif index <= slot - slots then
      redis.call('HDEL', counts, fields[i])
      flag(OLD)
    else
      totals[tag] = totals[tag] + amount
    end
  end
  return totals.f, totals.s
end
local first = math.max(0, since('a', tonumber(ARGV[8]), tonumber(ARGV[9])))
local second = math.max(0, since('b', tonumber(ARGV[10]), tonumber(ARGV[11])))
"""

# A throttle's exchange.  ARGV, after the prelude's 1-7: 8 acked requests,
# 9 requests (cumulative), 10 acked accepts, 11 accepts, 12 slot width in
# us, 13 slots, 14 the most a slot may count.  Answer: {mask, requests,
# accepts, n}: the fleet's over the window.
THROTTLE = (
    lua_bits(BITS)
    + PRELUDE
    + _WINDOW
    + """
local requests, accepts = window(first, second, tonumber(ARGV[12]), tonumber(ARGV[13]), tonumber(ARGV[14]))
finish()
return {mask, requests, accepts, n}
"""
)

# A breaker's exchange.  ARGV, after the prelude's 1-7: 8 acked successes,
# 9 successes (cumulative), 10 acked failures, 11 failures, 12 the outcome
# of the probe this member sent ('1' a success, '0' a failure, '' none),
# 13 asks (1 or 0): it wants to send the probe, 14 the break this member
# would serve if the circuit opened now (us), 15 the failure ratio, 16 the
# minimum throughput, 17 slot width in us, 18 slots, 19 the most a slot may
# count.  Answer: {mask, state (0 closed, 1 open, 2 half open), us until
# the break ends (or the probe lapses), successes, failures, 1 if this
# member holds the probe, n}.
BREAKER = (
    lua_bits(BITS)
    + PRELUDE
    + _WINDOW
    + """
local outcome, asks, duration = ARGV[12], ARGV[13] == '1', tonumber(ARGV[14])
local ratio, minimum = tonumber(ARGV[15]), tonumber(ARGV[16])
local successes, failures = window(first, second, tonumber(ARGV[17]), tonumber(ARGV[18]), tonumber(ARGV[19]))
local state = redis.call('HGET', ledger, 'state')
local ends = whole(redis.call('HGET', ledger, 'until'), 0, now + 4503599627370496)
local probe = redis.call('HGET', ledger, 'probe')
if state ~= 'closed' and state ~= 'open' and state ~= 'half' then
  if state then flag(BROKEN) end
  state = 'closed'
elseif (state ~= 'closed' and not ends) or (state == 'half' and not probe) then
  flag(BROKEN)
  state = 'closed'
end
if state == 'closed' then ends = 0 end
-- The probe's outcome, from the member that sent it, decides.
if outcome ~= '' then
  if state == 'half' and probe == member then
    if outcome == '1' then
      state, ends = 'closed', 0
      successes, failures = 0, 0
      redis.call('DEL', counts)
      flag(CLOSED)
    else
      state, ends = 'open', now + duration
      flag(REOPENED)
    end
  else
    flag(LATE)
  end
end
-- A closed circuit opens when a failure brings the fleet's ratio to the threshold.
local calls = successes + failures
if state == 'closed' and second > 0 and calls >= minimum and failures / calls >= ratio then
  state, ends = 'open', now + duration
  flag(OPENED)
end
-- Once the break is over (or a probe lapsed), one probe: the first member to ask sends it.
if state ~= 'closed' and now >= ends and asks and not leave then
  state, ends, probe = 'half', now + duration, member
  flag(PROBE)
end
redis.call('HSET', ledger, 'state', state, 'until', int(ends))
if state == 'half' then
  redis.call('HSET', ledger, 'probe', probe)
else
  redis.call('HDEL', ledger, 'probe')
end
local codes = {closed = 0, open = 1, half = 2}
local holds = (state == 'half' and probe == member) and 1 or 0
-- An open or half-open state outlives its break (or probe) by a horizon,
-- however long: a process starting meanwhile hears of it, and of its probe.
if state ~= 'closed' then ttl = math.max(ttl, math.ceil((ends - now + horizon) / 1000)) end
finish()
return {mask, codes[state], math.max(0, ends - now), successes, failures, holds, n}
"""
)


class CountLedger(LedgerBase):
    """The throttle's and the breaker's arithmetic, on the model's keys."""

    __slots__ = ()

    def _pair_window(
        self, now: int, interval: int, first: int, second: int, width: int, slots: int, most: int
    ) -> tuple[int, int]:
        counts = self.counts
        slot = now // width
        ahead = (now + interval) // width
        for tag, delta in (("f", first), ("s", second)):
            field = f"{tag}{slot}"
            stored = counts.get(field)
            current = whole(stored, 0, most)
            if stored is not None and current is None:
                self._mask |= REPAIRED
            if current is not None or delta > 0:
                counts[field] = (current or 0) + delta
        totals = {"f": 0, "s": 0}
        for field in list(counts):
            tag = field[:1]
            index = whole(field[1:], -LIMIT, LIMIT)
            amount = whole(counts[field], 0, most)
            if tag not in totals or index is None or amount is None or index > ahead:
                del counts[field]
                self._mask |= REPAIRED
            elif index <= slot - slots:
                del counts[field]
                self._mask |= OLD
            else:
                totals[tag] += amount
        return totals["f"], totals["s"]

    def _pair(
        self, member: str, leave: int, acked_first: int, first: int, acked_second: int, second: int
    ) -> tuple[int, int]:
        return (
            max(0, self._since("a", member, acked_first, first, leave)),
            max(0, self._since("b", member, acked_second, second, leave)),
        )

    def throttle(
        self,
        member: str,
        now: int,
        interval: int,
        stale: int,
        horizon: int,
        ttl: int,
        leave: int,
        acked_requests: int,
        requests: int,
        acked_accepts: int,
        accepts: int,
        width: int,
        slots: int,
        most: int,
    ) -> tuple[int, int, int, int]:
        """What the throttle script answers to the same ARGV: (mask, requests, accepts, n)."""
        _, n = self._start(member, now, horizon, ttl, leave)
        first, second = self._pair(member, leave, acked_requests, requests, acked_accepts, accepts)
        requests, accepts = self._pair_window(now, interval, first, second, width, slots, most)
        return self._mask, requests, accepts, n

    def breaker(
        self,
        member: str,
        now: int,
        interval: int,
        stale: int,
        horizon: int,
        ttl: int,
        leave: int,
        acked_successes: int,
        successes: int,
        acked_failures: int,
        failures: int,
        outcome: str,
        asks: int,
        duration: int,
        ratio: float,
        minimum: int,
        width: int,
        slots: int,
        most: int,
    ) -> tuple[int, int, int, int, int, int, int]:
        """What the breaker script answers to the same ARGV: (mask, state,
        us until the break ends, successes, failures, holds the probe, n)."""
        _, n = self._start(member, now, horizon, ttl, leave)
        first, second = self._pair(
            member, leave, acked_successes, successes, acked_failures, failures
        )
        successes, failures = self._pair_window(now, interval, first, second, width, slots, most)
        ledger = self.ledger
        state = ledger.get("state")
        ends = whole(ledger.get("until"), 0, now + LONGEST)
        probe = ledger.get("probe")
        if state not in STATES:
            if state is not None:
                self._mask |= BROKEN
            state = "closed"
        elif (state != "closed" and ends is None) or (state == "half" and probe is None):
            self._mask |= BROKEN
            state = "closed"
        if state == "closed":
            ends = 0
        assert ends is not None
        if outcome != "":
            if state == "half" and probe == member:
                if outcome == "1":
                    state, ends = "closed", 0
                    successes = failures = 0
                    self.counts = {}
                    self._mask |= CLOSED
                else:
                    state, ends = "open", now + duration
                    self._mask |= REOPENED
            else:
                self._mask |= LATE
        calls = successes + failures
        if state == "closed" and second > 0 and calls >= minimum and failures / calls >= ratio:
            state, ends = "open", now + duration
            self._mask |= OPENED
        if state != "closed" and now >= ends and asks and not leave:
            state, ends, probe = "half", now + duration, member
            self._mask |= PROBE
        ledger["state"], ledger["until"] = state, ends
        if state == "half":
            ledger["probe"] = probe
        else:
            ledger.pop("probe", None)
        holds = int(state == "half" and probe == member)
        if state != "closed":  # the state outlives its break by a horizon (see the script)
            self._expires = max(self._expires or 0, now + -(-(ends - now + horizon) // 1000) * 1000)
        return self._mask, STATES[state], max(0, ends - now), successes, failures, holds, n
