"""The parts' short ways on their hot paths decide as the plain ways: each budget against
a copy of itself that always takes its lock, over the same seeded sequences of events."""

from __future__ import annotations

import collections
import math

from hypothesis import example, given
from hypothesis import strategies as st

from backoff_iter import CircuitBreaker, RetryBudget, RetryQuota, TokenBucket
from backoff_iter._sliding import NOT_YET, Readings, SlidingCounts, _reading, first_past, steady


class PlainBucket(TokenBucket):
    """TokenBucket as it was written before its short ways: every step through _add_successes."""

    __slots__ = ()

    def _add_successes(self):
        added = len(self._successes)
        self._successes.clear()
        if added:
            self._milli = min(self._max, self._milli + added * self._ratio)

    @property
    def tokens(self):
        with self._lock:
            self._add_successes()
            return self._milli / 1000

    def record_failure(self, first_attempt):
        with self._lock:
            self._add_successes()
            self._milli = max(0, self._milli - 1000)

    def try_retry(self, outcome):
        with self._lock:
            self._add_successes()
            return self._milli > self._threshold


class PlainQuota(RetryQuota):
    """RetryQuota through _cost and _add_refunds, under its lock."""

    __slots__ = ()

    def _add_refunds(self):
        added = len(self._successes)
        self._successes.clear()
        if added:
            self._milli = min(self._capacity, self._milli + added * self._refund)

    @property
    def available(self):
        with self._lock:
            self._add_refunds()
            return self._milli / 1000

    def record_success(self, first_attempt, spent=0.0):
        if first_attempt:
            self._successes.append(None)
        if spent > 0.0:
            with self._lock:
                self._add_refunds()
                self._milli = min(self._capacity, self._milli + self._units(spent))

    def try_retry(self, outcome, throttled=False):
        cost = self._cost(outcome, throttled)
        with self._lock:
            self._add_refunds()
            if self._milli < cost:
                return 0.0
            self._milli -= cost
        return cost / 1000


class PlainBudget(RetryBudget):
    """RetryBudget with every call deposited under its lock, the clock read there."""

    __slots__ = ()

    def record_success(self, first_attempt, spent=0.0):
        if first_attempt:
            self._deposit_now()

    def record_failure(self, first_attempt):
        if first_attempt:
            self._deposit_now()

    def _deposit_now(self):
        with self._lock:
            index = self._advance()
            self._slots[index] += self._deposit
            self._balance += self._deposit

    def try_retry(self, outcome):
        with self._lock:
            index = self._advance()
            if self._reserve + self._balance < self._UNIT:
                return False
            self._slots[index] -= self._UNIT
            self._balance -= self._UNIT
            return True


def replay(budget, events, now):
    """What *budget* answers to *events*, the clock being now[0]."""
    answers = []
    for event, value in events:
        if event == "tick":
            now[0] = value if value != value or math.isinf(value) else now[0] + value
        elif event == "success":
            budget.record_success(value, 0.0 if value else 5.0)
        elif event == "failure":
            budget.record_failure(value)
        else:
            answers.append(budget.try_retry(value))
    return answers


# Clock steps: nothing, a little, exactly a slot (1 s, or a third of 2.5 s), back, NaN, inf.
STEPS = st.sampled_from([0.0, 0.25, 1.0, 2.5 / 3, 2 * 2.5 / 3, 7.0, -0.5, math.nan, math.inf])
EVENTS = st.lists(
    st.one_of(
        st.tuples(st.just("tick"), STEPS),
        st.tuples(st.sampled_from(["success", "failure"]), st.booleans()),
        st.tuples(st.just("retry"), st.sampled_from([None, TimeoutError(), OSError()])),
    ),
    max_size=120,
)


@given(EVENTS, st.sampled_from([1.0, 2.5, 10.0]), st.sampled_from([0.0, 0.5, 3.0]))
def test_a_retry_budget_counting_calls_without_its_lock_decides_as_with_it(
    events, window, min_per_second
):
    """Calls noted without the lock within the newest slot: the same answers, slot
    boundaries, clocks going back, NaN and inf included."""
    answers = []
    for kind in (RetryBudget, PlainBudget):
        now = [1000.0]
        budget = kind(
            ratio=0.5, min_per_second=min_per_second, window=window, clock=lambda now=now: now[0]
        )
        answers.append(replay(budget, events, now))
    assert answers[0] == answers[1]


@given(EVENTS)
def test_a_token_bucket_adding_successes_inline_decides_as_before(events):
    """record_failure and try_retry with the successes added inline: the same answers and tokens."""
    found = []
    for kind in (TokenBucket, PlainBucket):
        bucket = kind(max_tokens=5, token_ratio=0.5)
        found.append((replay(bucket, events, [0.0]), bucket.tokens))
    assert found[0] == found[1]


@given(EVENTS, st.sampled_from([None, 3]))
def test_a_retry_quota_adding_refunds_inline_decides_as_before(events, timeout_cost):
    """try_retry and record_success with the cost and the refunds inline: the same answers."""
    found = []
    for kind in (RetryQuota, PlainQuota):
        quota = kind(capacity=40, retry_cost=14, success_refund=1, timeout_cost=timeout_cost)
        found.append((replay(quota, events, [0.0]), quota.available))
    assert found[0] == found[1]


def test_the_end_of_a_slot_is_the_first_reading_past_it():
    """first_past finds the least float in the next slot, where float division rounds the
    guess a float late (slots of 2.5 / 3 s, slot 16) or early (3.3 / 4 s, slot 2)."""
    for width in (2.5 / 3, 3.3 / 4, 1.0):
        slot_of = lambda x, width=width: math.floor(x / width)
        for slot in (*range(64), 10**6, 10**15):
            end = first_past(slot_of, slot, (slot + 1) * width)
            assert slot_of(end) > slot
            assert slot_of(math.nextafter(end, -math.inf)) <= slot
    assert first_past(lambda x: math.floor(x), 0, math.inf) == -math.inf  # beyond floats


def test_a_call_on_the_first_reading_of_a_slot_is_counted_in_that_slot():
    """A call at exactly 1.0 s (slots of 1 s) counts in slot 1: at 10.0 s, when slot 0 has
    left the window, it still pays for one retry."""
    now = [0.5]
    budget = RetryBudget(ratio=1.0, min_per_second=0, window=10, clock=lambda: now[0])
    budget.record_success(True)  # slot 0
    now[0] = 1.0
    budget.record_success(True)  # slot 1, by the short way
    now[0] = 10.0
    assert [budget.try_retry(None), budget.try_retry(None)] == [True, False]


def test_a_call_finds_the_end_of_its_slot_so_the_next_take_the_short_way():
    """Slots of 2.5 / 3 s: a call at 1.0 (slot 1) sets the end of its slot to the first
    reading of slot 2 - not -inf, which would send every call of the slot to the lock."""
    budget = RetryBudget(window=2.5, clock=lambda: 1.0)
    budget.record_failure(True)
    width = 2.5 / 3
    end = budget._ends
    assert math.floor(end / width) == 2 and math.floor(math.nextafter(end, -math.inf) / width) == 1


class Counting:
    """A clock that counts its readings."""

    def __init__(self):
        self.now, self.readings = 5.0, 0

    def __call__(self):
        self.readings += 1
        return self.now


def test_a_retry_budget_reads_its_clock_once_per_call_and_per_decision():
    """A deposit reads the clock once, the short way or not, and so does try_retry, within
    the newest slot or moving the window."""
    clock = Counting()
    budget = RetryBudget(clock=clock)
    budget.record_success(True)  # the first: under the lock
    budget.record_success(True)  # the short way
    clock.now = 6.0
    budget.record_failure(True)  # a new slot: under the lock
    budget.try_retry(None)
    assert clock.readings == 4
    clock.now = 7.0
    budget.try_retry(None)  # a new slot: the window moves
    assert clock.readings == 5


class PlainCounts(SlidingCounts):
    """SlidingCounts moving its window on every reading, as before its short way."""

    __slots__ = ()

    def add_first(self, now):
        self._advance(now)
        self.first += 1

    def add_second(self, now):
        self._advance(now)
        self.second += 1

    def totals(self, now):
        self._advance(now)
        return self.first - self._first_left, self.second - self._second_left


@given(
    span=st.sampled_from([30.0, 120.0, 2.5, 0.3, 7.0]),
    buckets=st.sampled_from([10, 120, 3]),
    steps=st.lists(
        st.tuples(
            st.sampled_from(["first", "second", "totals"]),
            st.sampled_from([0.0, 0.001, 0.1, 0.25, 1.0, 2.9999999999999996, 3.0, 40.0, 1e9]),
        ),
        max_size=60,
    ),
    start=st.sampled_from([1000.0, -30.0, -120.0, -0.3, -1e-300, 0.0]),
)
def test_sliding_counts_reading_within_the_newest_bucket_count_as_moving_the_window(
    span, buckets, steps, start
):
    """Readings below the newest bucket's end skip moving the window: the same totals as a
    copy that moves it every time, over the same readings (bucket edges included, and
    windows starting below 0, whose edges may fall where floats are dense)."""
    counts, plain = SlidingCounts(span, buckets), PlainCounts(span, buckets)
    now = start
    for what, step in steps:
        now += step
        for part in (counts, plain):
            if what == "first":
                part.add_first(now)
            elif what == "second":
                part.add_second(now)
        assert counts.totals(now) == plain.totals(now)


class EventCounts:
    """SlidingCounts as plainly as it can be said: every event kept with the number of
    the bucket it fell in, the window the last *buckets* bucket numbers."""

    def __init__(self, span, buckets):
        self.span, self.size = span, buckets
        self.events, self.origin, self.passed = [], None, 0
        self.first = self.second = 0

    def _move(self, now):
        if self.origin is None:
            self.origin = now
            return
        position = (now - self.origin) * self.size / self.span
        if position >= self.passed + self.size:  # everything left: afresh from now
            self.clear()
            self.origin = now
        else:
            self.passed = max(self.passed, int(position))

    def add(self, kind, now):
        self._move(now)
        self.events.append((self.passed, kind))  # a time behind counts in the newest bucket
        if kind == "first":
            self.first += 1
        else:
            self.second += 1

    def totals(self, now):
        self._move(now)
        kinds = [kind for bucket, kind in self.events if bucket > self.passed - self.size]
        return kinds.count("first"), kinds.count("second")

    def clear(self):
        self.events, self.origin, self.passed = [], None, 0

    def restart(self):
        self.first = self.second = 0


@given(
    span=st.sampled_from([30.0, 120.0, 2.5, 0.3, 7.0]),
    buckets=st.sampled_from([10, 120, 3, 1]),
    steps=st.lists(
        st.tuples(
            st.sampled_from(["first", "second", "totals", "clear", "restart", "both"]),
            st.sampled_from([0.0, 0.001, 0.1, 0.25, 1.0, 2.9999999999999996, 3.0, 40.0, -0.5]),
        ),
        max_size=80,
    ),
    start=st.sampled_from([1000.0, -30.0, 0.0]),
)
@example(span=3.0, buckets=3, steps=[("first", 0.0), ("second", 1.0), ("first", 1.0),
                                    ("totals", 1.0), ("totals", 0.5)], start=0.0)  # fmt: skip
def test_sliding_counts_count_what_a_list_of_every_event_counts(span, buckets, steps, start):
    """The window's counts and the counts in all, as a list of every event with its bucket
    gives them: through buckets entered and left, clears, restarts and readings a moment
    behind the newest bucket (as two threads racing give), which count in it."""
    counts, events = SlidingCounts(span, buckets), EventCounts(span, buckets)
    now = newest = start
    for what, step in steps:
        now += step  # a step back: a reading behind the newest, counted in its bucket
        newest = max(newest, now)
        if what in ("first", "second"):
            getattr(counts, f"add_{what}")(now)
            events.add(what, now)
        elif what == "both":  # a throttle's check: the accepts waiting, then a request
            told = counts.count_first(now, collections.deque([now, now]))
            events.add("second", now)
            events.add("second", now)
            assert told == events.totals(now)  # the accepts counted, the request not yet
            events.add("first", now)
        elif what == "clear":
            counts.clear()
            events.clear()
        elif what == "restart":
            counts.restart()
            events.restart()
        assert counts.totals(now) == events.totals(now)
        assert (counts.first, counts.second) == (events.first, events.second)


def test_a_reading_on_a_bucket_edge_moves_the_window():
    """3 buckets of 1 s from 0.5: counts at 0.5 and at exactly 1.5 (the next bucket's first
    reading) are in two buckets; at exactly 3.5 the first has left the window."""
    for add in ("add_first", "add_second"):
        counts = SlidingCounts(3.0, 3)
        counts.add_first(0.5)
        getattr(counts, add)(1.5)
        both = (2, 0) if add == "add_first" else (1, 1)
        assert counts.totals(3.4999999) == both
        assert counts.totals(3.5) == (both[0] - 1, both[1])


def test_an_accept_waiting_at_a_bucket_edge_is_counted_in_the_bucket_it_begins():
    """3 buckets of 1 s from 0.5: an accept told at exactly 1.5, taken in by a check at 1.5,
    is the new bucket's, as add_second's would be: it is still counted at 3.5, when the
    bucket of 0.5 has left the window."""
    counts = SlidingCounts(3.0, 3)
    counts.add_first(0.5)
    assert counts.count_first(1.5, collections.deque([1.5])) == (1, 1)
    assert counts.totals(3.5) == (1, 1)


def test_a_reading_finds_the_end_of_its_bucket_so_the_next_take_the_short_way():
    """3 buckets of 1 s from 0.5: after a count at 0.5 the newest bucket ends at 1.5, after
    one at 2.0 at 2.5 - found, not -inf, which would move the window at every reading."""
    counts = SlidingCounts(3.0, 3)
    counts.add_first(0.5)
    assert counts._ends == 1.5
    counts.add_second(2.0)
    assert counts._ends == 2.5


def test_a_cleared_window_starts_again_at_its_next_reading():
    """After clear() (a breaker closing), a count at 0.6 leaves a window of 3 s at 3.6."""
    counts = SlidingCounts(3.0, 3)
    counts.add_first(0.5)
    counts.clear()
    counts.add_first(0.6)
    assert counts.totals(3.5) == (1, 0)
    assert counts.totals(3.6) == (0, 0)


def test_a_window_whose_bucket_edge_falls_on_zero_moves_at_once():
    """A breaker's 30 s window from -30.0: its first bucket ends at 0.0, where floats are
    too dense to walk to; the edge is not searched for (the window moves at each reading)
    and a reading at -0.1 returns at once, its count exact."""
    now = [-30.0]
    breaker = CircuitBreaker(minimum_throughput=2, failure_ratio=0.5, clock=lambda: now[0])
    breaker.record(True)
    now[0] = -0.1
    breaker.record(False)
    assert breaker._counts.totals(-0.1) == (1, 1)
    assert breaker.state == "open"
    assert first_past(lambda x: int((x + 30.0) * 10 / 30.0), 9, 0.0) == -math.inf


@example(readings=[-1e308, 5.0])  # a first float reading below -2**1000: no good one
@example(readings=[math.nan, 2.0**1000, 1.5 * 2.0**1000])  # 2**1000 is a good first one
@given(
    readings=st.lists(
        st.one_of(
            st.floats(allow_nan=True, allow_infinity=True),
            st.integers(-(10**400), 10**400),
            st.sampled_from([2.0**1000, -(2.0**1000), math.nextafter(2.0**1000, math.inf)]),
            st.decimals(allow_nan=True, allow_infinity=True),
            st.fractions(),
        ),
        max_size=30,
    )
)
def test_readings_answer_as_the_one_clock_guard_does(readings):
    """Readings' short way (a reading ahead of the last, within range) gives what
    steady() gives, for any clock: NaN, infinities, huge ints, Decimals and Fractions,
    backwards, 2**1000 edges - of the readings less the first good one, when a bad one
    came first (from 0.0)."""
    values = iter(readings)
    clock = Readings(lambda: next(values))
    last = NOT_YET
    late = bool(readings) and steady(readings[0], NOT_YET) == NOT_YET  # a bad first reading
    first = None  # then, the first good one
    for value in readings:
        if late:
            last = max(last, 0.0)
            if first is None and steady(value, NOT_YET) > NOT_YET:
                first = steady(value, NOT_YET)
            as_float = value if type(value) is float else _reading(value)
            value = math.nan if first is None else as_float - first
        last = steady(value, last)
        now = clock()
        assert now == (last if last > NOT_YET else 0.0) and type(now) is float
        assert clock.last == last
