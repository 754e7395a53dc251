"""Fleet budgets: counts shared through a real Redis, decisions that never wait on it."""

from __future__ import annotations

import ast
import asyncio
import contextlib
import gc
import logging
import math
import os
import subprocess
import sys
import threading
import time
from itertools import count
from pathlib import Path

import pytest
from checks import rejects
from fleet_workers import BUDGETS, Fleet, make_budget, wait_for_first_exchange
from hypothesis import example, given
from hypothesis import strategies as st
from redis_server import RedisServer, free_port, require_binary

import backoff_iter.fleet
from backoff_iter import CircuitBreaker, RetryBudget, RetryQuota, TokenBucket, aretrying
from backoff_iter.fleet import RedisStore, Store, _SharedState
from backoff_iter.fleet._budgets import FleetTokenBucket
from backoff_iter.fleet._ledger import KEPT
from backoff_iter.fleet._member import Member, Timing
from backoff_iter.fleet._shared import Ledger

ROOT = Path(__file__).resolve().parent.parent
names = (f"test-{i}" for i in count())  # every test its own keys


@pytest.fixture(scope="module")
def server():
    """One redis-server for the module's tests."""
    server = RedisServer(require_binary())
    yield server
    server.stop()


@pytest.fixture
def own_server():
    """A redis-server for one test, which may pause or kill it."""
    server = RedisServer(require_binary())
    yield server
    server.stop()


@pytest.fixture(scope="module")
def client(server):
    return server.client()


class Clock:
    def __init__(self, now=0.0):
        self.now = now

    def __call__(self):
        return self.now


# -- Importing -------------------------------------------------------------


def test_importing_the_package_or_its_budgets_never_imports_redis_or_the_fleet():
    """import backoff_iter (and backoff_iter.budgets) loads neither redis nor backoff_iter.fleet."""
    code = (
        "import sys; import backoff_iter, backoff_iter.budgets; "
        "print(sorted(m for m in ('redis', 'backoff_iter.fleet') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def test_a_store_without_redis_py_says_what_to_install():
    """With redis-py missing, RedisStore raises an ImportError naming the extra to install."""
    code = (
        "import sys; sys.modules['redis'] = None\n"
        "from backoff_iter.fleet import RedisStore\n"
        "try:\n    RedisStore(object(), 'x')\n"
        "except ImportError as error:\n    print(error)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert "pip install redis (in backoff_iter's 'redis' extra)" in result.stdout


# -- Arguments ---------------------------------------------------------------


def test_bad_store_arguments_name_the_parameter(client):
    """Not a redis.Redis, a bad name or interval, a store that is no store: rejected at once."""
    import redis.asyncio

    async def async_client():  # made in a running loop: 3.9's asyncio.Lock() wants one
        return redis.asyncio.Redis()

    for bad in (object(), "localhost:6379", asyncio.run(async_client())):
        rejects(lambda bad=bad: RedisStore(bad, "x"), TypeError, "client", "redis.Redis")
    rejects(lambda: RedisStore(client, ""), ValueError, "name")
    rejects(lambda: RedisStore(client, 7), TypeError, "name")
    for bad in ("}", "}payments"):  # {name}, its keys' hash tag, would be empty
        rejects(lambda bad=bad: RedisStore(client, bad), ValueError, "name", repr(bad), "}")
    for bad in (0, 0.0001, 61, math.nan, math.inf):
        rejects(
            lambda bad=bad: RedisStore(client, "x", sync_interval=bad), ValueError, "sync_interval"
        )
    rejects(lambda: RedisStore(client, "x", sync_interval="0.1"), TypeError, "sync_interval")
    rejects(lambda: TokenBucket(store=object()), TypeError, "store", "RedisStore")
    rejects(lambda: RetryBudget(store=client), TypeError, "store")
    rejects(lambda: _SharedState(-1), ValueError, "sync_interval")
    rejects(lambda: _SharedState(clock=1.0), TypeError, "clock")
    big = _SharedState()
    rejects(
        lambda: RetryBudget(min_per_second=1e12, window=60, store=big), ValueError, "min_per_second"
    )


@pytest.mark.parametrize("name", ["a}b", "{x", "x{", "{}", "pay ments:v2", "\u00e9t\u00e9"])
def test_a_parts_keys_share_one_hash_slot_whatever_its_name(client, name):
    """Odd characters in a name (braces too, after its first character): the five keys Redis holds hash to one slot of a Redis Cluster, so one script serves them."""
    from redis.crc import key_slot

    with RedisStore(client, name, sync_interval=0.01) as store:
        bucket = TokenBucket(store=store)
        bucket.record_failure(True)
        wait_for_first_exchange(bucket)
        keys = client.keys(f"backoff_iter:{{{name}}}:token_bucket:*")
        assert len(keys) >= 3, keys  # counts, members, ledger (demand, gone when used)
        assert len({key_slot(key) for key in keys}) == 1, keys


def test_a_store_serves_one_budget(client):
    """A second budget on one store, or any on a closed one, is refused naming store."""
    with RedisStore(client, next(names)) as store:
        budget = TokenBucket(store=store)
        rejects(lambda: RetryBudget(store=store), ValueError, "store", "one RedisStore")
        assert budget.try_retry(None) is not None
    rejects(lambda: TokenBucket(store=store), ValueError, "store", "closed")


def test_one_shared_state_holds_one_kind_of_budget():
    """A _SharedState takes many members of one budget, never two kinds or parameters."""
    fleet = _SharedState()
    TokenBucket(max_tokens=5, store=fleet)
    TokenBucket(max_tokens=5, store=fleet)
    rejects(lambda: TokenBucket(max_tokens=6, store=fleet), ValueError, "store")
    rejects(lambda: RetryQuota(store=fleet), ValueError, "store")


def test_a_subclass_cannot_take_a_store():
    """store= makes the fleet classes of the three budgets, not of a subclass of them."""

    class Mine(TokenBucket):
        pass

    rejects(lambda: Mine(store=_SharedState()), TypeError, "store", "Mine")


# -- One member is exactly the in-process budget -------------------------


def make(kind, clock, store=None):
    if kind == "token_bucket":
        return TokenBucket(max_tokens=4, token_ratio=0.5, store=store)
    if kind == "retry_quota":
        return RetryQuota(capacity=30, retry_cost=5, timeout_cost=10, success_refund=1, store=store)
    return RetryBudget(ratio=0.5, min_per_second=2, window=1.5, clock=clock, store=store)


@given(
    kind=st.sampled_from(["token_bucket", "retry_quota", "retry_budget"]),
    interval=st.sampled_from([0, 0.125, 0.5, 3.0]),
    events=st.lists(
        st.tuples(
            st.sampled_from(
                [
                    "call fails",
                    "retry fails",
                    "clean success",
                    "recovered",
                    "retry",
                    "timeout retry",
                ]
            ),
            st.sampled_from([0.0, 0.125, 0.25]),
        ),
        max_size=80,
    ),
)
# Failures beyond an empty bucket are not owed: it refills from 0 as one bucket does.
@example(
    kind="token_bucket", interval=0, events=[("call fails", 0.0)] * 6 + [("clean success", 0.0)]
)
# With a lag, a failure beyond empty is owed until its exchange: a later success of the
# same exchange pays it back (0 tokens, where one bucket has 0.5).
@example(
    kind="token_bucket",
    interval=0.5,
    events=[("call fails", 0.0)] * 2 + [("call fails", 0.25)] * 3 + [("clean success", 0.25)],
)
# Successes beyond a full bucket or quota gain nothing, nor undo half of a later failure.
@example(
    kind="token_bucket",
    interval=0.125,
    events=[("clean success", 0.0), ("clean success", 0.0), ("call fails", 0.125)],
)
@example(
    kind="retry_quota",
    interval=0.125,
    events=[("call fails", 0.0), ("clean success", 0.0), ("retry", 0.0), ("call fails", 0.125)],
)
# Below half, a bucket's own successes fill what it lacks of half before a retry.
@example(
    kind="token_bucket",
    interval=0.125,
    events=[("call fails", 0.0)] * 2
    + [("call fails", 0.125), ("clean success", 0.0), ("retry", 0.0)],
)
def test_one_member_decides_exactly_as_the_in_process_budget(kind, interval, events):
    """A fleet of one (a _SharedState, any sync interval) answers every event as the same
    budget with store=None - but a TokenBucket with a lag, whose failure beyond empty is
    owed until its exchange: it never holds more tokens than one bucket, nor allows a
    retry one bucket refuses."""
    if kind == "retry_budget":
        interval = 0  # counts land in the window when they happen: no lag at all
    owing = kind == "token_bucket" and interval > 0
    clock = Clock(1000.0)
    alone = make(kind, clock)
    member = make(kind, clock, _SharedState(interval, clock=clock))
    spent = 0.0
    for event, step in events:
        clock.now += step
        for budget in (alone, member):
            if event == "call fails":
                budget.record_failure(True)
            elif event == "retry fails":
                budget.record_failure(False)
            elif event == "clean success":
                budget.record_success(True)
            elif event == "recovered":
                budget.record_success(False, spent)
        if event.endswith("retry"):
            outcome = TimeoutError() if event == "timeout retry" else None
            answer = alone.try_retry(outcome)
            if owing:
                assert answer or not member.try_retry(outcome)
            else:
                assert member.try_retry(outcome) == answer
            spent = float(answer)
        if owing:
            assert member.tokens <= alone.tokens
        elif kind == "token_bucket":
            assert member.tokens == alone.tokens
        elif kind == "retry_quota":
            assert member.available == alone.available


@pytest.mark.parametrize("kind", ["token_bucket", "retry_quota"])
def test_a_member_takes_in_a_long_run_of_successes_as_it_goes_and_as_the_in_process_one(kind):
    """A member's successes are noted without the lock, as the in-process budget's, and past
    _MOST_NOTED taken in by a success itself: its list stays short, and its counts are the
    in-process budget's after every one of them."""
    from backoff_iter.budgets import _MOST_NOTED

    clock = Clock(1000.0)
    if kind == "token_bucket":
        pair = [
            TokenBucket(max_tokens=1000, token_ratio=0.001, store=store)
            for store in (None, _SharedState(60.0, clock=clock))
        ]
    else:
        pair = [
            RetryQuota(capacity=1000, retry_cost=1, success_refund=0.001, store=store)
            for store in (None, _SharedState(60.0, clock=clock))
        ]
    alone, member = pair
    for budget in pair:  # drained: the bucket by failures, the quota by retries
        for _ in range(1000):
            if kind == "token_bucket":
                budget.record_failure(False)
            else:
                assert budget.try_retry(None)
    longest = 0
    for _ in range(2 * _MOST_NOTED + 700):
        for budget in pair:
            budget.record_success(True)
        longest = max(longest, len(member._successes))
    assert _MOST_NOTED // 2 < longest <= _MOST_NOTED
    if kind == "token_bucket":
        assert member.tokens == alone.tokens == 2.748
    else:
        assert member.available == alone.available == 2.748


@pytest.mark.parametrize("kind", ["token_bucket", "retry_quota"])
def test_a_members_failures_and_decisions_take_in_the_successes_noted_before_them(kind):
    """Successes noted, then a decision or a failure with nothing read between: each takes the
    successes in once, as the in-process budget's does (the test above reads the budget after
    every event, which takes them in first)."""
    clock = Clock(1000.0)
    alone, member = make(kind, clock), make(kind, clock, _SharedState(60.0, clock=clock))
    answers = {id(alone): [], id(member): []}
    # Successes about as many as a round's failures and retries take: mid-way, not full.
    pattern = (3, 5, 4, 2, 6, 4, 3, 5, 4, 1, 7, 4, 0, 0, 0)
    for successes in pattern:
        for budget in (alone, member):
            for _ in range(
                successes
            ):  # as other threads' calls, between a failure and its decision
                budget.record_success(True)
            answers[id(budget)].append(float(budget.try_retry(None)))
            budget.record_failure(False)
            for _ in range(successes // 2):
                budget.record_success(True)
            budget.record_failure(False)
            answers[id(budget)].append(float(budget.try_retry(None)))
            # Read once the round's failure took in what was noted: nothing left to take in.
            level = budget.tokens if kind == "token_bucket" else budget.available
            answers[id(budget)].append(level)
    assert answers[id(member)] == answers[id(alone)]
    assert 0.0 in answers[id(alone)] and answers[id(alone)].count(0.0) < len(answers[id(alone)])


def test_a_member_quota_charges_a_throttled_retry_the_throttle_cost():
    """A fleet member's quota (on a _SharedState, whose members exchange inline) takes
    throttle_cost (5) for a retry after a throttle and retry_cost (14) for any other, as the
    in-process quota does - and takes its arguments by keyword as that quota does."""
    clock = Clock(1000.0)
    alone, member = RetryQuota(), RetryQuota(store=_SharedState(0, clock=clock))
    for quota in (alone, member):
        assert quota.try_retry(ConnectionError(), throttled=True) == 5.0
        assert quota.try_retry(ConnectionError()) == 14.0
        quota.record_success(first_attempt=False, spent=5.0)
    assert member.available == alone.available == 486.0


# -- Many members in one process ----------------------------------------------


@pytest.mark.parametrize("kind", ["token_bucket", "retry_quota"])
def test_a_large_fleet_on_a_small_budget_still_retries(kind):
    """1,000 clients of one 100-token bucket (or 200-unit quota): shares of less than one retry, yet a client that fails retries."""
    clock = Clock(1000.0)
    fleet = _SharedState(0.1, clock=clock)
    clients = [make_budget(kind, fleet, clock) for _ in range(1000)]
    for _ in range(2):  # all heard from twice (the first alone took all), none failing
        clock.now += 0.2
        for client in clients:
            client.record_success(True)
    clock.now += 0.2
    assert outage_call(clients[7]) >= 1  # its share alone (0.05 of a retry) would pay none


def test_a_member_lent_room_it_no_longer_uses_hands_it_back_one_interval_later():
    """A _SharedState member lent all the room for its failure, then not used: one interval later (its thread would have exchanged), the room is back for the others."""
    clock = Clock(1000.0)
    fleet = _SharedState(0.1, clock=clock)
    a, b = (TokenBucket(max_tokens=10, token_ratio=1, store=fleet) for _ in "ab")
    a.record_failure(True)  # alone: lent all the room, which it wanted
    b.record_success(True)  # b joins: a holds it all
    clock.now += 1.0  # a is not used again
    assert outage_call(b, retries=5) == 3  # 2 of b's half of the room, then 1 on credit


@pytest.mark.parametrize("kind", ["token_bucket", "retry_quota"])
def test_an_estimate_never_reads_above_full_after_an_answer(kind):
    """A's successes while its exchange travels, B's refilling the fleet meanwhile: A's estimate stops at full."""
    clock = Clock(1000.0)
    store = Manual(clock)
    a, b = (make(kind, clock, store) for _ in "ab")
    joined(store, a, b)
    for budget in (a, b):  # the fleet runs dry
        for _ in range(6):
            budget.record_failure(True)
            budget.try_retry(TimeoutError())
    joined(store, a, b, a, b)
    sent = store.send(a)
    for budget in (a, b):
        for _ in range(40):
            budget.record_success(True)
    estimate = (lambda: a.tokens) if kind == "token_bucket" else (lambda: a.available)
    full = {"token_bucket": 4.0, "retry_quota": 30.0}[kind]
    assert estimate() == full  # a's own successes, as far as it knows
    joined(store, b)  # b alone fills the fleet too
    a._merge(sent[0], store.land(a, sent), sent[1])
    assert estimate() == full  # not twice full


def test_an_inline_member_idle_far_past_its_silence_still_exchanges_when_it_decides():
    """A bucket on a shared state, idle for 100 s (silence: 6 s): its next decision exchanges as ever - inline, a member is never left silent."""
    clock = Clock()
    store = _SharedState(0.1, clock=clock)
    bucket = TokenBucket(store=store)
    bucket.try_retry(None)
    answers = bucket._answers
    clock.now += 100.0
    assert bucket.try_retry(None) and bucket._answers == answers + 1


@pytest.mark.parametrize(("back", "tokens"), [(1.0, 2.0), (6.5, 10.0)])
def test_a_member_silent_within_the_keys_lifetime_rebuilds_lost_counts_from_what_it_heard(
    back, tokens
):
    """A bucket drained to 2 of 10 tokens falls silent (its thread stops exchanging: silence and ttl 6 s); the keys are deleted.  Back 1 s after its last exchange, it is the first to exchange: the counts are rebuilt at 2, not refilled (they were deleted, not expired).  Back 6.5 s after, they may have expired with the fleet idle: it is new, and finds a full bucket."""
    clock = Clock()
    store = _SharedState(0.1, clock=clock)
    bucket = TokenBucket(max_tokens=10, store=store)
    for _ in range(8):
        bucket.record_failure(True)
    for clock.now in (0.1, 6.0):  # its thread's exchanges: the failures sent, then idle
        store._exchange(bucket, clock.now)
    assert bucket.tokens == 2.0
    assert bucket._snapshot(6.1, False) is None  # silent: its thread exchanges no more
    store._ledger = Ledger()  # the keys deleted
    clock.now = 6.0 + back
    assert bucket.try_retry(ConnectionError()) is (tokens > 5)
    assert bucket.tokens == tokens


def test_a_member_cut_off_far_past_the_keys_lifetime_still_rebuilds_lost_counts_from_what_it_heard():
    """A busy bucket (2 of 10 tokens heard) whose exchanges fail for 30 s (ttl 6 s): not silent, so the keys it finds gone when Redis answers are rebuilt from what it heard, minus its failures since, not refilled."""
    clock = Clock(1000.0)
    store = Manual(clock)
    bucket = TokenBucket(max_tokens=10, store=store)
    joined(store, bucket)
    for _ in range(8):
        bucket.record_failure(True)
    joined(store, bucket)
    for _ in range(30):  # a failure a second, its thread's exchanges lost
        clock.now += 1.0
        bucket.record_failure(True)
        store.send(bucket)
    store.model = Ledger()  # a failover to a replica without the keys
    sent = store.send(bucket)
    assert sent[0][4] == 2_000  # heard: the level it rebuilds from
    bucket._merge(sent[0], store.land(bucket, sent), sent[1])
    assert bucket.tokens == 0.0


def test_a_shared_state_reads_its_clock_through_the_one_clock_guard():
    """NaN first, then backwards, inf, then absurdly late: _sliding.steady's rule - no time passes but forward, finite, within 2**1000 - and from 0.0 at the first good reading, 5 s (no time passed since the NaN)."""
    readings = iter([math.nan, 5.0, 4.0, math.inf, 8.0, 1e300, 6.0])
    fleet = _SharedState(0, clock=lambda: next(readings))
    assert [fleet._time() for _ in range(7)] == [0.0, 0.0, 0.0, 0.0, 3.0, 1e300, 1e300]


def test_a_fleet_class_given_directly_is_itself():
    """The classes store= makes can be called directly with a store, and say where they count."""
    bucket = FleetTokenBucket(max_tokens=2, store=_SharedState())
    assert isinstance(bucket, FleetTokenBucket) and isinstance(bucket, TokenBucket)
    assert repr(bucket) == (
        "TokenBucket(max_tokens=2.0, token_ratio=0.1) with 2.0 tokens shared through"
        " _SharedState(sync_interval=0.1)"
    )
    again = type(bucket)(max_tokens=2, store=_SharedState())
    assert type(again) is type(bucket)
    window = RetryBudget(window=2, store=_SharedState())
    assert repr(window).startswith("RetryBudget(ratio=0.2, min_per_second=10.0, window=2.0) shared")


def test_timing_follows_the_sync_interval():
    """stale, horizon, silence and ttl as the module docstring states them."""
    fast, slow = Timing(0.01, 0.0), Timing(1.0, 10.0)
    assert (fast.stale, fast.horizon, fast.silence, fast.ttl) == (0.25, 1.0, 1.0, 1.0)
    assert (slow.stale, slow.horizon, slow.silence, slow.ttl) == (3.0, 12.0, 60.0, 60.0)
    assert Timing(0.1, 30.0).ttl == 90.0
    assert fast.arguments == (10_000, 250_000, 1_000_000, 1_000)


# -- Bounds, with many members ---------------------------------------------


class Manual(Store):
    """A store whose exchanges the test makes by hand: the counts leave, the
    script runs, the answer arrives (or is lost), each when the test says."""

    def __init__(self, clock, interval=0.1):
        self.model = Ledger()
        self.clock = clock
        self.interval = interval
        self.members = count()

    def _attach(self, member, window):
        member._timing = Timing(self.interval, window)
        member._stale = member._timing.stale
        member._active_at = self.clock()
        member._member = f"m{next(self.members)}"

    def send(self, member):
        return member._snapshot(self.clock(), True), self.clock()

    def lapse(self, member):
        """What the store's thread does between exchanges: is its last answer too old?"""
        member._lapse(self.clock())

    def land(self, member, sent):
        at = round(self.clock() * 1e6)
        arguments = (*member._timing.arguments, 0, *sent[0], *member._parameters)
        return list(self.model.budget(member._member, at, *arguments))


def outage_call(budget, retries=3):
    """One call in a total outage: its failures, and the retries the budget allows."""
    budget.record_failure(True)
    granted = 0
    for _ in range(retries):
        if not budget.try_retry(ConnectionError()):
            break
        granted += 1
        budget.record_failure(False)
    return granted


def joined(store, *budgets):
    """Each budget's first exchange, sent, run and answered."""
    for budget in budgets:
        sent = store.send(budget)
        budget._merge(sent[0], store.land(budget, sent), sent[1])


def test_a_process_that_heard_once_goes_on_with_its_last_lease_while_an_exchange_hangs():
    """Its lease lapsed and an exchange under way (begun just now): a process that heard from the fleet is alone and spends its last lease; one that never heard waits."""
    clock = Clock(1000.0)
    store = Manual(clock)
    heard, never = (TokenBucket(max_tokens=10, token_ratio=1, store=store) for _ in "ab")
    joined(store, heard)  # alone in the fleet: its lease is the whole room
    clock.now += heard._stale + 0.01
    for bucket in (heard, never):
        store.send(bucket)  # under way, and never answered
        bucket.record_failure(True)
    assert [heard.try_retry(None), never.try_retry(None)] == [True, False]


def shared_bucket(failures):
    """Two members a and b of a bucket of 4 (token_ratio 0.5), each heard from
    the fleet once; then *failures* of a's, not yet sent: (store, a, b)."""
    clock = Clock(1000.0)
    store = Manual(clock)
    a, b = (make("token_bucket", clock, store) for _ in "ab")
    joined(store, a, b)
    for _ in range(failures):
        a.record_failure(True)
    return store, a, b


def test_a_failure_beyond_empty_as_a_shared_member_last_heard_is_sent_whole():
    """a heard the bucket empty; b's successes refilled two tokens since; a's next
    failure takes one of them, as in one bucket (4, 0, 2, 1): a shared member's view
    lags, so it sends its failure whole and the script stops the level at empty."""
    store, a, b = shared_bucket(4)
    joined(store, a)  # the fleet's bucket is empty, and a heard so
    for _ in range(4):
        b.record_success(True)
    joined(store, b)  # 2 tokens, unknown to a
    a.record_failure(True)
    joined(store, a)
    assert a.tokens == 1.0


def test_below_half_a_shared_members_own_successes_fill_its_share_of_the_lack_first():
    """Two members of a bucket of 4 at 1 token, a token short of half: each owes half
    of it, so a's first success (0.5) pays its share and lends nothing, its second
    lends a retry - not the first, as if the fleet lacked nothing."""
    store, a, b = shared_bucket(3)
    joined(store, a, b)
    assert (a.tokens, a._n) == (1.0, 2)
    a.record_success(True)
    assert not a.try_retry(None)
    a.record_success(True)
    assert a.try_retry(None)


def test_a_forked_child_is_not_the_fleets_only_member_until_it_hears():
    """A parent alone in its fleet counts what one bucket counts (a success on a full
    bucket: nothing sent); its child, renewed after fork, has not heard it is alone:
    it sends its success whole (the script keeps the level at full)."""
    clock = Clock(1000.0)
    store = Manual(clock)
    parent = make("token_bucket", clock, store)
    joined(store, parent)
    parent.record_success(True)
    assert store.send(parent)[0][1] == 0
    parent._renew("child")
    parent.record_success(True)
    assert store.send(parent)[0][1] == 500


def four_reserves(clock, store):
    """Four members of one RetryBudget that only a reserve of 4 a second pays."""
    return [
        RetryBudget(ratio=0, min_per_second=4, window=10, clock=clock, store=store)
        for _ in range(4)
    ]


def test_a_process_that_heard_once_is_alone_as_soon_as_its_answer_lapses_mid_exchange():
    """Its answer lapsed while an exchange begun just before is under way (not stale itself): a process that heard from the fleet is alone at once, and spends within its 1/n slice."""
    clock = Clock(1000.0)
    store = Manual(clock)
    budgets = four_reserves(clock, store)
    joined(store, *budgets)
    wanting = budgets[0]
    for _ in range(40):
        wanting.record_failure(True)
    joined(store, wanting)  # it alone wants room, 40 retries: all lent to it
    clock.now += wanting._stale - 0.01
    store.send(wanting)  # begun while its answer holds, then never answered
    clock.now += 0.02  # its answer lapsed; the exchange is 0.02 s old
    store.lapse(wanting)
    assert wanting._alone
    assert sum(wanting.try_retry(None) for _ in range(40)) == 10


@pytest.mark.parametrize("kind", ["budget", "breaker"])
def test_a_part_is_alone_once_its_answer_lapses_while_its_exchange_hangs(client, kind, caplog):
    """An exchange that hangs (Redis paused, packets dropped; a client the store cannot
    copy keeps its own timeout, or none) blocks the store's thread, which alone saw the
    answer lapse: the part went alone when the call gave up (5 x sync_interval), or
    never, though an answer holds for stale seconds.  A watcher sees to it on time,
    and the answer that comes at last is merged."""
    with RedisStore(client, f"hang-{kind}", sync_interval=0.05) as store:
        part = TokenBucket(store=store) if kind == "budget" else CircuitBreaker(store=store)
        wait_for_first_exchange(part)
        worker = store._worker
        script, hung, release = worker._script, threading.Event(), threading.Event()

        def hanging(*arguments, **options):
            hung.set()
            release.wait(30.0)
            return script(*arguments, **options)

        worker._script = hanging
        caplog.set_level(logging.INFO, logger="backoff_iter.fleet")
        try:
            assert hung.wait(5.0)
            answers = part._answers
            RedisServer.wait_until(lambda: part._alone, "the part alone", timeout=5.0)
            assert part._answers == answers and not release.is_set()  # the exchange still hangs
            RedisServer.wait_until(lambda: caplog.records, "the warning", timeout=5.0)
        finally:
            worker._script = script
            release.set()
        RedisServer.wait_until(lambda: not part._alone, "the answer merged")
        RedisServer.wait_until(lambda: len(caplog.records) == 2, "the answer said", timeout=5.0)
    warned, back = caplog.records
    assert (warned.levelno, back.levelno) == (logging.WARNING, logging.INFO)
    assert "did not answer within" in warned.getMessage()
    assert "answers again" in back.getMessage()


def test_no_lease_is_kept_for_a_process_whose_answer_is_stale():
    """keep, what a process may still spend while its answer travels, is 0 once its last answer is older than stale."""
    clock = Clock(1000.0)
    store = Manual(clock)
    bucket = TokenBucket(max_tokens=10, token_ratio=1, store=store)
    joined(store, bucket)
    (_, _, keep, *_), _ = store.send(bucket)
    assert keep == 10_000  # fresh: its whole lease may still be spent
    clock.now += bucket._stale + 0.001
    (_, _, keep, *_), _ = store.send(bucket)
    assert keep == 0


def test_alone_a_retry_budget_spends_at_most_its_slice_of_the_reserve():
    """One of 4 members alone (its exchanges failing) spends at most 1/4 of the reserve, however large its last lease."""
    clock = Clock(1000.0)
    store = Manual(clock)
    budgets = four_reserves(clock, store)
    joined(store, *budgets)  # the first alone took all the room; the others nothing
    wanting = budgets[0]
    for _ in range(40):
        wanting.record_failure(True)
    joined(store, wanting)  # it alone wants room, 40 retries: all lent to it
    assert wanting._lease == 40_000 and wanting._n == 4
    store.send(wanting)  # then Redis goes away
    clock.now += 2 * wanting._stale
    store.lapse(wanting)  # its thread finds it alone
    assert sum(wanting.try_retry(None) for _ in range(40)) == 10


def test_a_bucket_waiting_for_an_answer_never_spends_its_own_successes():
    """Its answer lapsed, none under way: a bucket that heard it was empty does not retry on its own successes, which cannot lift it above half."""
    clock = Clock(1000.0)
    store = Manual(clock)
    bucket = TokenBucket(max_tokens=10, token_ratio=1, store=store)
    for _ in range(10):
        bucket.record_failure(True)
    joined(store, bucket)  # the fleet's bucket: empty
    clock.now += bucket._stale + 0.01
    store.lapse(bucket)  # no exchange under way: it waits for an answer
    for _ in range(4):
        bucket.record_success(True)  # 4 tokens, as far as it knows
    assert bucket._trying is None and bucket.tokens == 4.0
    assert not bucket.try_retry(None)


@pytest.mark.parametrize("lapsed", [False, True])
def test_own_refunds_pay_only_up_to_a_members_share_of_the_headroom(lapsed):
    """4 members of a quota at half: one member's own refunds, up to full as it knows, pay for retries only within its quarter of the headroom (too little for one retry), its answer fresh or lapsed."""
    clock = Clock(1000.0)
    store = Manual(clock)
    quotas = [
        RetryQuota(capacity=20, retry_cost=5, timeout_cost=5, success_refund=1, store=store)
        for _ in range(4)
    ]
    joined(store, *quotas)
    assert quotas[0].try_retry(None) and quotas[0].try_retry(None)  # the first holds it all
    joined(store, *quotas)  # the fleet's quota: 10 of 20
    member = quotas[1]
    member._lease = 0  # only its own counts, below
    for _ in range(10):
        member.record_success(True)  # 10 refunds: full, as far as it knows
    assert (
        member.available == 20.0 and member._head == 5_000
    )  # a quarter of 10 of headroom, in halves
    if lapsed:
        store.send(member)
        clock.now += 2 * member._stale
        store.lapse(member)
    assert member.try_retry(None) == 0.0


def test_a_quota_members_refunds_pay_for_its_next_decision_without_an_exchange():
    """2 members of a quota at half: a member with no lease pays for a retry
    (cost 5) from its own refunds (1 each) as soon as its decision comes, the
    refunds counted without the lock and taken in by the decision itself."""
    clock = Clock(1000.0)
    store = Manual(clock)
    quotas = [
        RetryQuota(capacity=20, retry_cost=5, success_refund=1, store=store) for _ in range(2)
    ]
    joined(store, *quotas)
    assert quotas[0].try_retry(None) and quotas[0].try_retry(None)
    joined(store, *quotas)  # the fleet's quota: 10 of 20
    member = quotas[1]
    member._lease = 0
    assert member._head == 10_000  # half the headroom, in halves: one retry's worth
    for _ in range(4):
        member.record_success(True)
    assert member.try_retry(None) == 0.0  # 4 refunds: short of one retry
    member.record_success(True)
    assert member.try_retry(None) == 5.0
    assert member.try_retry(None) == 0.0


def test_a_quota_too_small_to_lend_pays_quiet_members_on_credit_and_the_fleet_owes_the_excess():
    """Ten members of a quota with room for 1 retry (shares of a tenth of
    one): none is lent a retry's worth, but 2 in every 10 quiet answers carry
    one retry on credit.  A member that failed is lent the retry's worth at
    its next exchange; the three retries spend beyond the quota, and the
    fleet owes the excess until refunds pay it back: no lease or credit, and
    no retry from a member's own refunds, meanwhile."""
    clock = Clock(1000.0)
    store = Manual(clock)
    quotas = [
        RetryQuota(capacity=5, retry_cost=5, success_refund=1, store=store) for _ in range(10)
    ]
    joined(store, *quotas)  # the first, alone, holds the room while the others join
    joined(store, *quotas)  # and while its next exchange travels (keep)
    assert not any(quota._credit for quota in quotas)
    joined(store, *quotas)
    credited = [quota for quota in quotas if quota._credit]
    assert len(credited) == 2 and not any(quota._lease for quota in quotas)
    failing = next(quota for quota in quotas if not quota._credit)
    failing.record_failure(True)
    assert failing.try_retry(None) == 0.0  # nothing lent, no credit
    joined(store, failing)  # it wants room: a retry's worth, the room being free
    assert failing.try_retry(None) == 5.0
    for quota in credited:
        quota.record_failure(True)
        assert quota.try_retry(None) == 5.0
        quota.record_failure(False)
        assert quota.try_retry(None) == 0.0  # one credit an answer
    joined(store, *quotas, *quotas)  # all spent, then all heard
    assert store.model.counts["level"] == -10_000  # 15 spent of 5: 10 owed
    assert all(quota.available == 0.0 and not quota._credit for quota in quotas)
    payer = quotas[0]
    for _ in range(10):
        payer.record_success(True)
    payer.record_failure(True)
    assert payer.try_retry(None) == 0.0  # its refunds pay the debt, not a retry
    assert payer.available == 0.0
    joined(store, payer)
    assert store.model.counts["level"] == 0 and payer.available == 0.0
    payer.record_success(True)
    joined(store, payer)
    assert payer.available == 1.0


def test_the_last_retry_of_a_quota_whose_timeouts_cost_more_is_spent():
    """Two members of a quota paying 3 retries (15 of 5; a timeout would cost
    10), both failing once between exchanges: all 3 are paid.  A lease is
    lent down to one retry's worth (5), not only to a timeout's (10), the
    one a lease must hold to pay for any retry."""
    clock = Clock(1000.0)
    store = Manual(clock)
    quotas = [
        RetryQuota(capacity=15, retry_cost=5, timeout_cost=10, success_refund=1, store=store)
        for _ in "ab"
    ]
    joined(store, *quotas)
    paid = 0
    for _ in range(6):
        for quota in quotas:
            quota.record_failure(True)
            paid += quota.try_retry(ConnectionError()) > 0.0
        clock.now += 0.05
        joined(store, *quotas)
    assert (paid, store.model.counts["level"]) == (3, 0)


def test_own_refunds_a_member_may_spend_while_its_exchange_travels_are_held_for_it():
    """Two members of a quota with 1 left (11 of 5): a's exchange sends 4
    refunds, less than a retry, and one more arrives while it travels: a
    pays a retry with its 5 refunds, and b, heard after, is lent none of
    them - what a member may still spend is held for it however small (its
    own refunds may add up while its answer travels).  The fleet spends no
    room twice: the level stays at 1, nothing owed."""
    clock = Clock(1000.0)
    store = Manual(clock)
    a, b = (RetryQuota(capacity=11, retry_cost=5, success_refund=1, store=store) for _ in "ab")
    joined(store, a, b, a, b)
    paid = 0
    for _ in range(4):  # 2 retries spend 10 of 11
        for quota in (a, b):
            quota.record_failure(True)
            paid += quota.try_retry(None) > 0.0
        clock.now += 0.05
        joined(store, a, b)
    clock.now += 0.2
    joined(store, a, b, a, b)
    assert (paid, store.model.counts["level"]) == (2, 1_000)
    for _ in range(4):
        a.record_success(True)
    sent = store.send(a)  # under way with 4 refunds: 8,000 halves a may spend
    a.record_success(True)
    a.record_failure(True)
    assert a.try_retry(None) == 5.0  # its own 5 refunds
    a._merge(sent[0], store.land(a, sent), sent[1])
    joined(store, b)
    b.record_failure(True)
    assert b.try_retry(None) == 0.0
    joined(store, a, b, a, b)
    assert store.model.counts["level"] == 1_000


@pytest.mark.parametrize("capacity, left", [(25, 5_000), (30, 10_000)])
def test_a_member_gives_up_what_is_left_of_a_lease_when_it_pays_for_no_retry(capacity, left):
    """Two members of a quota (costs 5, timeouts 10): a, quiet, is lent half
    its room and spends 2 retries of it.  5,000 halves left pay for no retry:
    a gives them up as its next exchange leaves, and nothing is held for
    them; failing, it is lent the room anew, the crumb with it.  10,000 pay
    for one: a keeps them, and they are held for it.  Kept, crumbs added up
    to a retry's worth that no process of the fleet tests could spend, for
    30 s (5,000 + 2,500 + 2,500 halves)."""
    clock = Clock(1000.0)
    store = Manual(clock)
    a, b = (
        RetryQuota(capacity=capacity, retry_cost=5, timeout_cost=10, success_refund=1, store=store)
        for _ in "ab"
    )
    joined(store, a, b)
    clock.now += 0.2
    joined(store, a, b)
    lent = capacity * 1_000
    assert (a._lease, a._n) == (lent, 2)
    for _ in range(2):
        a.record_failure(True)
        assert a.try_retry(ConnectionError()) == 5.0
    assert a._room() == left
    sent = store.send(a)
    kept = left if left >= 10_000 else 0
    assert (sent[0][2], a._lease) == (kept, lent if kept else 0)
    a._merge(sent[0], store.land(a, sent), sent[1])
    assert a._lease == store.model.ledger["l:m0"] == 2 * capacity * 1_000 - 20_000  # the room


def lent_halves(clock, store, **costs):
    """Two members of a quota of 30, each lent half its room: 30,000 halves."""
    a, b = (RetryQuota(capacity=30, store=store, **costs) for _ in "ab")
    joined(store, a, b)
    clock.now += 0.2
    joined(store, a, b, a, b)
    assert (a._lease, b._lease) == (30_000, 30_000)
    return a, b


def throttled_once(clock, store):
    """Two members of a quota of 30 (retries 14, throttled ones 5), each lent
    30,000 halves and paying a throttled retry of them: 20,000 left with each."""
    a, b = lent_halves(clock, store)
    for quota in (a, b):
        quota.record_failure(True)
        assert quota.try_retry(None, throttled=True) == 5.0
    return a, b


def test_pieces_that_pay_only_a_throttled_retry_come_back_and_pay_another():
    """Two members of a quota (retries 14, throttled ones 5) lent 30 each pay
    a throttled retry apiece: the 20 left, 10 with each, pay for one more
    retry.  Their failures now are not throttles: once the throttles are
    not lately any more (0.3 s), each gives its piece up as its next
    exchange leaves, and neither is lent a piece that pays for none of the
    retries it asked for lately, so the two pieces add up and one member is
    lent the retry.  Kept, they paid for none, however long the failures
    lasted."""
    clock = Clock(1000.0)
    store = Manual(clock)
    a, b = throttled_once(clock, store)
    paid, given_up = 0, 0
    for _ in range(12):
        for quota in (a, b):
            quota.record_failure(True)
            paid += quota.try_retry(ConnectionError()) > 0.0
        clock.now += 0.05
        for quota in (a, b):
            piece = quota._lease and 0 < quota._room() < 28_000
            sent = store.send(quota)
            if piece and sent[0][5] == 28_000:  # it asked for retries of 14 only, lately
                assert (sent[0][2], quota._lease) == (0, 0)  # given up as the exchange leaves
                given_up += 1
            quota._merge(sent[0], store.land(quota, sent), sent[1])
    assert (given_up, paid, store.model.counts["level"]) == (2, 1, 6_000)
    # The 6 left pay for a throttled retry, which a asks for in vain once: the
    # exchange before asked for a retry of 14.  Its next is lent them.
    a.record_failure(True)
    assert a.try_retry(None, throttled=True) == 0.0
    joined(store, a)
    assert (a._lease, a.try_retry(None, throttled=True)) == (12_000, 5.0)


def test_a_member_whose_failures_alternate_keeps_what_pays_for_the_cheaper_retry():
    """As above, 10 with each member after a throttled retry apiece; their
    failures then alternate, a plain one (14) and a throttle (5), each
    member exchanging before every retry.  What a member needs is the
    cheapest retry it asked for lately (within 0.3 s here): the 10 it holds
    pay for two throttles, so it keeps them and all four are paid, the
    quota spent to 0.  (Needing only what its latest retry cost, each gave
    its piece up before every throttle, and two went unpaid.)"""
    clock = Clock(1000.0)
    store = Manual(clock)
    a, b = throttled_once(clock, store)
    for quota in (a, b):
        quota.record_failure(True)
        assert quota.try_retry(ConnectionError()) == 0.0  # and a retry of 14, refused
        sent = store.send(quota)
        assert (sent[0][2], sent[0][5]) == (20_000, 10_000)  # kept: it pays the cheapest asked
        quota._merge(sent[0], store.land(quota, sent), sent[1])
    paid = {"plain": 0, "throttled": 0}
    for turn in range(20):
        kind = "throttled" if turn % 2 else "plain"
        for quota in (a, b):
            quota.record_failure(True)
            clock.now += 0.05
            joined(store, quota)
            outcome = None if turn % 2 else ConnectionError()
            paid[kind] += quota.try_retry(outcome, throttled=bool(turn % 2)) > 0.0
    assert paid == {"plain": 0, "throttled": 4}
    assert store.model.counts["level"] == 0


def test_a_member_keeps_a_piece_that_pays_for_just_what_it_needs():
    """A member of a quota whose retries cost 5 and timeouts 10 pays a
    timeout of its 30,000 halves and is refused the next with 10,000 left:
    it needs 20,000.  Refunds that bring it there keep its lease; one refund
    short, it gives the piece up (a timeout is all it asked for lately)."""
    for refunds, kept in ((5, True), (4, False)):
        clock = Clock(1000.0)
        store = Manual(clock)
        a, _ = lent_halves(clock, store, retry_cost=5, timeout_cost=10)
        for paid in (10.0, 0.0):
            a.record_failure(True)
            assert a.try_retry(TimeoutError()) == paid
        for _ in range(refunds):
            a.record_success(True)  # 2,000 halves each
        sent = store.send(a)
        assert sent[0][5] == 20_000
        assert (sent[0][2], a._lease) == ((20_000, 30_000) if kept else (0, 0))


@pytest.mark.parametrize(
    "asked",
    [
        [(TimeoutError(), 10.0), (TimeoutError(), 0.0), (OSError(), 5.0)],
        [(OSError(), 5.0), (TimeoutError(), 10.0), (TimeoutError(), 0.0)],
    ],
)
def test_the_need_is_the_cheapest_retry_asked_for_in_whatever_order(asked):
    """A member of a quota whose retries cost 5 and timeouts 10 asks for two
    timeouts (one paid, one refused) and a retry of 5, last or first: it
    needs 10,000 halves, not the 20,000 of a timeout."""
    clock = Clock(1000.0)
    store = Manual(clock)
    a, _ = lent_halves(clock, store, retry_cost=5, timeout_cost=10)
    for outcome, paid in asked:
        a.record_failure(True)
        assert a.try_retry(outcome) == paid
    assert store.send(a)[0][5] == 10_000


def test_a_bucket_whose_failures_took_its_room_below_zero_keeps_its_lease_in_flight():
    """Two members of a 10-token bucket, a lent 5,000 halves: 3 failures take
    its room to -1,000; its exchange leaves holding nothing (keep 0), but a
    keeps its lease, so a success while it travels lifts its room above 0
    and pays a retry, as before the rule that gives up crumbs of a quota."""
    clock = Clock(1000.0)
    store = Manual(clock)
    a, b = (TokenBucket(max_tokens=10, token_ratio=1, store=store) for _ in "ab")
    joined(store, a, b, a, b)
    for _ in range(3):
        a.record_failure(True)
    assert (a._lease, a._room()) == (5_000, -1_000)
    sent = store.send(a)
    assert (sent[0][2], a._lease) == (0, 5_000)
    a.record_success(True)
    assert a.try_retry(None)


def test_a_retry_on_credit_empties_the_quota_as_heard_and_takes_it_no_lower():
    """A member given a retry on credit while the quota, as it last heard, holds
    less than a retry's cost (4 of 9, the cost 5) spends it all: it reads 0,
    not 4 - 5, until the fleet's answer says what the fleet owes."""
    clock = Clock(1000.0)
    store = Manual(clock)
    a, b = (RetryQuota(capacity=9, retry_cost=5, success_refund=1, store=store) for _ in "ab")
    joined(store, a, b)
    a.record_failure(True)
    assert a.try_retry(None) == 5.0
    for _ in range(4):
        clock.now += 0.2  # past its failure's interval: a wants no room
        joined(store, a, b)
    assert b._credit and b.available == 4.0  # 4 left: less than a retry
    b.record_failure(True)
    assert b.try_retry(None) == 5.0  # on credit
    assert b.available == 0.0
    joined(store, a, b, a, b)
    assert store.model.counts["level"] == -1_000  # the fleet owes the one beyond


def test_while_the_fleet_owes_a_members_own_refunds_pay_the_debt_not_its_retries():
    """Two members of a quota with one retry left (shares of half a retry),
    both given a retry on credit: they spend two, and the fleet owes one; a
    member's 5 refunds, enough for a retry of its share of the headroom
    otherwise, pay the debt first."""
    clock = Clock(1000.0)
    store = Manual(clock)
    a, b = (RetryQuota(capacity=10, retry_cost=5, success_refund=1, store=store) for _ in "ab")
    joined(store, a, b)
    a.record_failure(True)
    assert a.try_retry(None) == 5.0  # 5 of 10 left
    for _ in range(3):
        clock.now += 0.2  # past its failure's interval: a wants no room
        joined(store, a, b)
    assert (a._credit, b._credit, a._lease, b._lease) == (True, True, 0, 0)
    for quota in (a, b):
        quota.record_failure(True)
        assert quota.try_retry(None) == 5.0  # on credit
    joined(store, a, b, a, b)
    assert store.model.counts["level"] == -5_000
    for _ in range(5):
        a.record_success(True)
    a.record_failure(True)
    assert a.try_retry(None) == 0.0
    clock.now += 0.2
    joined(store, a, b, a, b)
    assert store.model.counts["level"] == 0


def test_an_outage_striking_a_hundred_quiet_processes_at_once_pays_what_the_docs_say():
    """100 processes of a quota paying 35 retries (500 of 14), all quiet, all
    failing at once: the retries on credit (about twice the 35 nobody holds)
    and the room lent as the failures are heard pay at most 3 x 35; all of
    it beyond the quota is owed, and no retry follows until it is paid."""
    clock = Clock(1000.0)
    store = Manual(clock)
    quotas = [RetryQuota(store=store) for _ in range(100)]
    for _ in range(3):
        clock.now += 0.2
        joined(store, *quotas)
    assert 60 <= sum(quota._credit for quota in quotas) <= 72
    paid = 0
    for _ in range(4):
        for quota in quotas:
            quota.record_failure(True)
            paid += quota.try_retry(None) > 0.0
        joined(store, *quotas)
    assert 35 < paid <= 3 * 35
    assert store.model.counts["level"] == 500_000 - paid * 14_000  # owed, to the last retry
    assert all(quota.available == 0.0 for quota in quotas)


def test_a_forked_child_has_no_credit_of_its_parents():
    """A child process (a member renewed after fork) starts with no retry on
    credit: its parent's answer gave it to the parent only."""
    clock = Clock(1000.0)
    store = Manual(clock)
    quotas = [
        RetryQuota(capacity=10, retry_cost=5, success_refund=1, store=store) for _ in range(10)
    ]
    for _ in range(3):
        joined(store, *quotas)
    child = next(quota for quota in quotas if quota._credit)
    child._renew("child")
    child.record_failure(True)
    assert child.try_retry(None) == 0.0


def test_a_forked_child_needs_none_of_the_retries_its_parent_asked_for():
    """What a member of a quota asked for lately is its own: a child renewed
    after fork tells no need until it asks for a retry itself."""
    clock = Clock(1000.0)
    store = Manual(clock)
    a, b = (RetryQuota(capacity=30, store=store) for _ in "ab")
    joined(store, a, b)
    a.record_failure(True)
    a.try_retry(ConnectionError())
    joined(store, a)  # told, and kept as asked for lately
    a.record_failure(True)
    a.try_retry(ConnectionError())  # asked for since
    assert (len(a._lately), a._asking) == (1, 28_000)
    a._renew("child")
    assert store.send(a)[0][5] == 0


@pytest.mark.parametrize("kind", ["token_bucket", "retry_quota", "retry_budget"])
def test_a_forked_child_sends_none_of_its_parents_noted_successes(kind):
    """After a fork a member counts from nothing (_renew): the successes (a budget's calls)
    its parent noted and had not taken in are the parent's to send, not the child's."""
    clock = Clock(1000.0)
    member = make(kind, clock, _SharedState(3600, clock=clock))
    for step in (0.0, 5.0):  # a budget's first call in a slot deposits, the others are noted
        clock.now += step
        for _ in range(3):
            member.record_success(True)
    member._renew("child")
    member._fold()
    assert member._cum == 0


@pytest.mark.parametrize("lapsed", [False, True])
def test_own_successes_add_no_room_beyond_a_members_share_of_the_headroom(lapsed):
    """3 members of a bucket one thousandth below full: its share of the headroom rounds to nothing, so a member's own success adds no room."""
    clock = Clock(1000.0)
    store = Manual(clock)
    buckets = [TokenBucket(max_tokens=1, token_ratio=0.001, store=store) for _ in range(3)]
    joined(store, *buckets)
    buckets[0].record_failure(True)
    for _ in range(999):
        buckets[0].record_success(True)
    joined(store, *buckets, *buckets)  # the fleet's bucket: 0.999 of 1
    member = buckets[1]
    assert (member._value, member._head, member._lease) == (999, 0, 0)
    member.record_success(True)  # full, as far as it knows
    if lapsed:
        store.send(member)
        clock.now += 2 * member._stale
        store.lapse(member)
    else:
        assert member.try_retry(None)  # its one retry on credit this exchange
    assert not member.try_retry(None)


def test_a_bucket_member_with_no_lease_takes_one_retry_on_credit_each_exchange_while_above_half():
    """b holds all the room; a, with none, may still take one retry per exchange while the bucket it heard of is above half - the lag the docs allow - and none once it is at half."""
    clock = Clock(1000.0)
    store = Manual(clock)
    a, b = (TokenBucket(max_tokens=10, token_ratio=1, store=store) for _ in "ab")
    joined(store, b, a)  # b alone took the room; a has none
    assert a._lease == 0
    a.record_failure(True)
    assert [a.try_retry(None), a.try_retry(None)] == [True, False]
    joined(store, a)  # its next exchange: credit again (9 tokens: above half)
    assert a.try_retry(None)
    for _ in range(5):
        b.record_failure(True)
    joined(store, b, a)  # the fleet: 4 of 10 tokens, as a now knows
    assert not a.try_retry(None)


def test_a_bucket_member_takes_no_retry_on_credit_at_exactly_half():
    """The bucket as a member last heard it exactly at half, no lease, nothing of its own: no retry on credit."""
    clock = Clock(1000.0)
    store = Manual(clock)
    a, b = (TokenBucket(max_tokens=10, token_ratio=1, store=store) for _ in "ab")
    joined(store, b, a)
    for _ in range(5):
        b.record_failure(True)
    joined(store, b, a)  # the fleet: 5 of 10 tokens, as a now knows
    assert (a.tokens, a._lease) == (5.0, 0)
    assert not a.try_retry(None)


def test_alone_a_retry_budget_spends_no_deposit_older_than_its_window():
    """Exchanges failing for long: deposits made before the window no longer pay for retries."""
    clock = Clock(1000.0)
    store = Manual(clock)
    budget = RetryBudget(ratio=1.0, min_per_second=0, window=1.5, clock=clock, store=store)
    joined(store, budget)
    store.send(budget)  # never answered: Redis went away
    for _ in range(5):
        budget.record_failure(True)
    clock.now += 10
    store.lapse(budget)
    assert not budget.try_retry(None)
    budget.record_failure(True)
    assert [budget.try_retry(None), budget.try_retry(None)] == [True, False]


def test_what_a_process_spends_while_its_exchange_is_in_flight_is_not_lent_to_another():
    """A spends its 10 retries while its exchange travels; the script lends B nothing of them."""
    clock = Clock(1000.0)
    store = Manual(clock)
    a, b = (
        RetryBudget(ratio=0, min_per_second=1, window=10, clock=clock, store=store) for _ in "ab"
    )
    joined(store, a, b)  # a holds all 10, b nothing
    sent = store.send(a)
    answer = store.land(a, sent)  # a's share is 5 now, but it may still spend 10
    joined(store, b)
    spent = sum(a.try_retry(None) for _ in range(12)) + sum(b.try_retry(None) for _ in range(12))
    a._merge(sent[0], answer, sent[1])
    spent += sum(a.try_retry(None) for _ in range(12))
    assert spent == 10


def test_a_token_bucket_never_reads_below_empty_after_an_answer():
    """A's failures while its exchange travels, B's draining the fleet meanwhile: A's estimate stops at 0 tokens."""
    clock = Clock(1000.0)
    store = Manual(clock)
    a, b = (TokenBucket(max_tokens=4, token_ratio=1, store=store) for _ in "ab")
    joined(store, a, b)
    sent = store.send(a)
    for _ in range(3):
        a.record_failure(True)
        b.record_failure(True)
    joined(store, b)  # the fleet's bucket: 4 - 3 = 1 token
    a._merge(sent[0], store.land(a, sent), sent[1])
    assert a.tokens == 0.0  # 1 token, less a's 3 failures since, is empty, not -2


def test_a_quota_never_reads_below_empty_after_an_answer():
    """A, alone while its first exchange hangs, spends a whole quota that B had spent: once answered, A reads 0, not less."""
    clock = Clock(1000.0)
    store = Manual(clock)
    a, b = (make("retry_quota", clock, store) for _ in "ab")
    joined(store, b)
    while b.try_retry(TimeoutError()):
        pass
    joined(store, b)  # the fleet's quota: empty
    sent = store.send(a)
    clock.now += 1  # a never heard back: alone, with a whole quota of its own (keys still there)
    store.lapse(a)
    taken = 0.0
    while spent := a.try_retry(TimeoutError()):
        taken += spent
    assert taken == 30.0
    a._merge(sent[0], store.land(a, sent), sent[1])
    assert a.available == 0.0


def test_counts_a_window_old_are_not_sent_after_an_outage():
    """A RetryBudget that could not exchange for longer than its window sends only its last window's counts."""
    clock = Clock(1000.0)
    store = Manual(clock)
    budget = RetryBudget(ratio=1.0, min_per_second=0, window=1.5, clock=clock, store=store)
    joined(store, budget)
    budget.record_failure(True)  # deposits 1 at 1000 s: never sent
    clock.now = 1002.0
    budget.record_failure(True)  # and 1 at 1002 s
    (acked, cumulative, *_), _ = store.send(budget)
    assert cumulative - acked == 1_000


def test_a_retry_budget_back_after_a_lost_answer_and_a_window_owes_nothing_it_never_spent():
    """Its 5 calls applied in Redis, their answer lost, then 2 s without Redis (window 1.5 s): the next exchange takes nothing back from the fleet's window, which holds no debt (it held -5 retries)."""
    clock = Clock(1000.0)
    store = Manual(clock)
    budget = RetryBudget(ratio=1.0, min_per_second=0, window=1.5, clock=clock, store=store)
    joined(store, budget)
    for _ in range(5):
        budget.record_success(True)
    store.land(budget, store.send(budget))  # applied; the answer is lost
    clock.now += 2.0
    budget.record_success(True)
    sent = store.send(budget)
    assert sent[0][:2] == [5_000, 6_000]  # from where its window began; its count whole
    assert store.land(budget, sent)[1] == 1_000


class CountingLock:
    """A lock that counts how often it was taken."""

    def __init__(self):
        self.lock, self.taken = threading.Lock(), 0

    def __enter__(self):
        self.taken += 1
        return self.lock.__enter__()

    def __exit__(self, *exc):
        return self.lock.__exit__(*exc)


def test_a_retry_budgets_calls_within_a_slot_take_no_lock_and_all_reach_the_fleet():
    """As in-process, a call in the newest slot of the window is only counted: 100 successes
    and 50 failing first attempts take the lock once (the slot's first call); the next
    exchange sends every deposit, a retry is paid from them (no lease, no reserve), and the
    exchange after sends them less the retry, each deposit taken in once."""
    clock = Clock(1000.0)
    store = Manual(clock)
    budget = RetryBudget(ratio=0.5, min_per_second=0, window=10, clock=clock, store=store)
    joined(store, budget)  # no reserve: nothing to lend
    budget._lock = lock = CountingLock()
    for _ in range(100):
        budget.record_success(True)
    for _ in range(50):
        budget.record_failure(True)
    assert lock.taken == 1
    (acked, cumulative, *_), _ = store.send(budget)
    assert cumulative - acked == 150 * 500  # 0.5 of a retry a call, in thousandths
    assert budget.try_retry(ConnectionError())  # 75 retries' worth deposited: one spent
    (acked, cumulative, *_), _ = store.send(budget)
    assert cumulative - acked == 150 * 500 - 1000
    assert budget._balance == 150 * 500 - 1000  # the window has them too


@given(
    plan=st.lists(
        st.tuples(
            st.integers(0, 3),
            st.sampled_from(["call", "call", "call", "send", "land", "answer", "lose"]),
            st.sampled_from([0.0, 0.01, 0.05, 0.2]),
        ),
        max_size=150,
    )
)
def test_a_retry_budget_fleet_never_passes_ratio_times_calls_plus_reserve_however_exchanges_interleave(
    plan,
):
    """4 members that joined, then exchanges sent, run by the script and answered (or lost) in any order: fleet retries <= ratio x calls + reserve."""
    clock = Clock(1000.0)
    store = Manual(clock)
    budgets = [
        RetryBudget(ratio=0.5, min_per_second=1, window=10, clock=clock, store=store)
        for _ in range(4)
    ]
    joined(store, *budgets)  # before its first answer, a process would be alone
    in_flight = [None] * 4
    landed = [None] * 4
    calls = retries = 0
    for member, action, step in plan:
        clock.now += step
        budget = budgets[member]
        if action == "call":
            calls += 1
            retries += outage_call(budget)
        elif action == "send" and in_flight[member] is None:
            in_flight[member] = store.send(budget)
        elif action == "land" and in_flight[member] is not None and landed[member] is None:
            landed[member] = store.land(budget, in_flight[member])
        elif action in ("answer", "lose") and landed[member] is not None:
            if action == "answer":  # else it never arrives, as when Redis times out
                budget._merge(in_flight[member][0], landed[member], in_flight[member][1])
            in_flight[member] = landed[member] = None
    assert clock.now - 1000.0 < 10  # all within one window
    assert retries <= 0.5 * calls + 10, (retries, calls)


@pytest.mark.long_run
@given(
    members=st.integers(1, 12),
    interval=st.sampled_from([0, 0.01, 0.1, 0.5]),
    order=st.lists(
        st.tuples(st.integers(0, 11), st.sampled_from([0.0, 0.001, 0.02])), max_size=300
    ),
)
def test_in_a_total_outage_fleets_stay_within_one_shared_budget(members, interval, order):
    """n members, any order and lag: a RetryBudget within ratio x calls + reserve, a RetryQuota within capacity, a TokenBucket within one bucket's retries plus one per member."""
    clock = Clock(1000.0)
    for kind in ("retry_budget", "retry_quota", "token_bucket"):
        fleet = _SharedState(interval, clock=clock)
        budgets = [make_budget(kind, fleet, clock) for _ in range(members)]
        single = make_budget(kind, None, clock)
        calls = retries = alone = 0
        clock.now = 1000.0
        for member, step in order:
            clock.now += step
            calls += 1
            retries += outage_call(budgets[member % members])
            alone += outage_call(single)
        arguments = BUDGETS[kind]
        if kind == "retry_budget":
            assert (
                retries
                <= arguments["ratio"] * calls + arguments["min_per_second"] * arguments["window"]
            )
        elif kind == "retry_quota":
            assert retries * arguments["retry_cost"] <= arguments["capacity"]
        else:
            assert retries <= alone + members, (retries, alone)


# -- A fleet of processes on a real Redis ----------------------------------

PROCESSES, THREADS, SECONDS = 4, 3, 0.6


@pytest.fixture(scope="module")
def fleet(server):
    """4 spawned processes, started once for the module's fleet tests."""
    processes = Fleet(PROCESSES, server.port)
    yield processes
    processes.close()


def test_four_processes_share_one_retry_budget_in_a_total_outage(fleet):
    """4 processes x 3 threads of failing calls: retries within ratio x calls + one reserve; per-process budgets allow four reserves."""
    results = fleet.run("retry_budget", next(names), 0.05, THREADS, SECONDS)
    calls, retries = sum(c for c, _ in results), sum(r for _, r in results)
    arguments = BUDGETS["retry_budget"]
    reserve = arguments["min_per_second"] * arguments["window"]
    shared = arguments["ratio"] * calls + reserve
    per_process = sum(min(3 * c, arguments["ratio"] * c + reserve) for c, _ in results)
    print(
        f"{calls} calls: {retries} retries; one shared budget allows {shared:.0f}, per-process budgets {per_process:.0f}"
    )
    assert arguments["ratio"] * calls + reserve / 2 <= retries <= shared, (retries, shared)
    assert per_process - shared >= 2.9 * reserve  # what sharing saves: three reserves


def test_four_processes_share_one_token_bucket_in_a_total_outage(fleet):
    """The same with a TokenBucket: within one in-process bucket's retries (fed the same calls)
    plus two per process.  Each answer a process hears while the bucket is above half gives it
    one retry on credit: the answer before the outage, and the answer to an exchange that was
    in flight as it struck (its store's thread sends one at a time; the next one carries its
    own failures, which take the bucket below half).  Mostly only the first is spent: 40 or 41
    retries against one bucket's 37 in runs on 2026-11-29, and 42 in one."""
    results = fleet.run("token_bucket", next(names), 0.05, THREADS, SECONDS)
    calls, retries = sum(c for c, _ in results), sum(r for _, r in results)
    single = make_budget("token_bucket", None)
    alone = sum(outage_call(single) for _ in range(calls))
    per_process = 0
    for process_calls, _ in results:
        bucket = make_budget("token_bucket", None)
        per_process += sum(outage_call(bucket) for _ in range(process_calls))
    print(
        f"{calls} calls: {retries} retries; one bucket allows {alone}, per-process buckets {per_process}"
    )
    assert 0 < retries <= alone + 2 * PROCESSES
    assert per_process == PROCESSES * alone


def test_four_processes_share_one_retry_quota_in_a_total_outage(fleet, client):
    """The same with a RetryQuota: its capacity pays for capacity / retry_cost retries, fleet-wide.
    The processes call until the fleet's level cannot lease one more retry, and half a second
    beyond, to spend what they hold: not for a fixed time, which a loaded machine can make too
    short (39 of 40, once, with 0.6 s and three busy loops beside the run)."""
    name = next(names)
    arguments = BUDGETS["retry_quota"]

    def spend():
        key = f"backoff_iter:{{{name}}}:retry_quota:counts"
        wait_for_level(client, key, arguments["retry_cost"] * 1000, "the quota to be leased")
        time.sleep(0.5)
        fleet.halt.set()

    results = fleet.run("retry_quota", name, 0.05, THREADS, 60.0, during=spend)
    retries = sum(r for _, r in results)
    assert retries == arguments["capacity"] / arguments["retry_cost"]


def wait_for_level(client, key, below, what):
    """A bounded poll until the fleet's level in *key* is below *below*; past
    30 s, the error shows the fleet's keys."""
    prefix = key.rpartition(":")[0]

    def state():
        return {part: dump(client, f"{prefix}:{part}") for part in ("counts", "members", "ledger")}

    RedisServer.wait_until(
        lambda: int(client.hget(key, "level") or 10**18) < below, what, timeout=30, state=state
    )


def dump(client, key):
    """What *key* holds, whatever its type, for an error message."""
    kind = client.type(key)
    if kind == b"hash":
        return client.hgetall(key)
    if kind == b"zset":
        return client.zrange(key, 0, -1, withscores=True)
    return (kind, client.pttl(key))


def test_a_stall_longer_than_the_keys_lifetime_refills_nothing(fleet, server, client):
    """4 processes spend a shared quota (40 retries), then Redis stops for twice its keys' lifetime while they go on calling: its keys expired, but rebuilt from what the processes heard - no second quota."""
    name = next(names)
    key = f"backoff_iter:{{{name}}}:retry_quota:counts"
    lifetime = Timing(0.01, 0.0).ttl  # 1 s: the keys expire when no exchange renews them

    def stall():
        members = key.replace(":counts", ":members")
        RedisServer.wait_until(lambda: client.zcard(members) == PROCESSES, "the fleet", timeout=60)
        wait_for_level(client, key, 15_000, "the quota to be spent")
        seconds, micros = client.time()
        spent = seconds * 1_000_000 + micros
        horizon = Timing(0.01, 0.0).arguments[2]
        RedisServer.wait_until(  # every process heard it: each exchanged since
            lambda: (
                sum(s > spent + horizon for _, s in client.zrange(members, 0, -1, withscores=True))
                == PROCESSES
            ),
            "the processes to hear it",
        )
        server.pause()
        time.sleep(2 * lifetime)  # what the scenario is: Redis stopped that long
        server.resume()
        RedisServer.wait_until(lambda: client.exists(key), "the counts rebuilt")
        fleet.halt.set()

    results = fleet.run("retry_quota", name, 0.01, THREADS, 60.0, during=stall)
    retries = sum(r for _, r in results)
    arguments = BUDGETS["retry_quota"]
    assert retries <= arguments["capacity"] / arguments["retry_cost"] + PROCESSES, retries
    assert int(client.hget(key, "level")) < 15_000  # rebuilt low, not full


def test_counts_deleted_while_processes_call_are_rebuilt_not_refilled(fleet, client):
    """4 processes drain a shared 100-token bucket; once each has heard it below half, its keys are deleted: rebuilt from what they heard, the retries stay within one bucket's (fed the same calls) plus two per process (the retries on credit, as above)."""
    name = next(names)
    prefix = f"backoff_iter:{{{name}}}:token_bucket"
    members = f"{prefix}:members"
    horizon = Timing(0.02, 0.0).arguments[2]

    def all_exchanged_since(at):
        scores = client.zrange(members, 0, -1, withscores=True)
        return sum(score > at + horizon for _, score in scores) == PROCESSES

    def server_now():
        seconds, micros = client.time()
        return seconds * 1_000_000 + micros

    def delete():
        wait_for_level(client, f"{prefix}:counts", 50_000, "the bucket to fall to half")
        low = server_now()
        RedisServer.wait_until(lambda: all_exchanged_since(low), "every process to hear it")
        client.delete(
            *(f"{prefix}:{part}" for part in ("counts", "members", "ledger", "demand", "gone"))
        )
        deleted = server_now()
        RedisServer.wait_until(lambda: all_exchanged_since(deleted), "every process to rebuild")
        time.sleep(0.2)  # what the scenario is: calls going on in the rebuilt bucket
        fleet.halt.set()

    results = fleet.run("token_bucket", name, 0.02, THREADS, 60.0, during=delete)
    calls, retries = sum(c for c, _ in results), sum(r for _, r in results)
    single = make_budget("token_bucket", None)
    alone = sum(outage_call(single) for _ in range(calls))
    assert retries <= alone + 2 * PROCESSES, (retries, alone)


def test_poison_in_a_future_slot_leaves_a_fleet_within_its_bound(fleet, client):
    """1e17 written into a RetryBudget's slot two seconds ahead (and into its current one)
    mid-run: dropped, and the fleet's retries stay within ratio x calls + reserve.

    The current slot held the fleet's withdrawals, lost with it: the member whose exchange
    drops it counts the window's room spent (before, it put back what it had heard of, and
    what the others withdrew since was spent again: 1.54 x the bound in a loaded CI run)."""
    name = next(names)
    key = f"backoff_iter:{{{name}}}:retry_budget:counts"

    def poison():
        RedisServer.wait_until(lambda: client.hlen(key) >= 2, "the first counts", timeout=30)
        seconds, _ = client.time()  # slots of 1 s, by the server's clock
        client.hset(key, mapping={str(seconds + 2): "1e17", str(seconds): "100000000000000000"})

    results = fleet.run("retry_budget", name, 0.02, THREADS, SECONDS, during=poison)
    calls, retries = sum(c for c, _ in results), sum(r for _, r in results)
    arguments = BUDGETS["retry_budget"]
    bound = arguments["ratio"] * calls + arguments["min_per_second"] * arguments["window"]
    print(f"{calls} calls: {retries} retries; the fleet's budget allows {bound:.0f}")
    assert retries <= bound, (retries, bound)
    slots = {k: v for k, v in client.hgetall(key).items() if k != b"born"}
    assert all(abs(float(value)) < 1e12 for value in slots.values()), slots  # the poison is gone


def test_a_key_overwritten_with_a_string_is_replaced_within_five_seconds(fleet, client):
    """SET of a budget's counts to a string, with no expiry, mid-run: the next exchange replaces it with a hash that expires, and the processes' exchanges succeed again."""
    name = next(names)
    prefix = f"backoff_iter:{{{name}}}:retry_budget"
    replaced = {}

    def overwrite():
        RedisServer.wait_until(
            lambda: client.exists(f"{prefix}:counts"), "the first counts", timeout=30
        )
        client.set(f"{prefix}:counts", "not a hash")
        RedisServer.wait_until(
            lambda: client.type(f"{prefix}:counts") == b"hash", "the counts back", timeout=5
        )
        replaced["ttl"] = client.pttl(f"{prefix}:counts")
        acks = client.hgetall(f"{prefix}:ledger")
        RedisServer.wait_until(lambda: client.hgetall(f"{prefix}:ledger") != acks, "exchanges")

    fleet.run("retry_budget", name, 0.02, THREADS, SECONDS, during=overwrite)
    assert replaced["ttl"] > 0


# -- Redis slow, paused, gone ------------------------------------------------


class Counted:
    """A budget that counts the calls to the one it wraps that returned (the drivers take any Budget)."""

    def __init__(self, budget):
        self.budget, self.done = budget, 0

    def counted(self, method, *arguments):
        answer = method(*arguments)
        self.done += 1
        return answer

    def record_success(self, first_attempt, spent=0.0):
        return self.counted(self.budget.record_success, first_attempt, spent)

    def record_failure(self, first_attempt):
        return self.counted(self.budget.record_failure, first_attempt)

    def try_retry(self, outcome):
        return self.counted(self.budget.try_retry, outcome)


class Watched:
    """A store's script, watched: the threads that call it, the calls begun and ended."""

    def __init__(self, script):
        self.script, self.threads, self.begun, self.ended = script, set(), 0, 0

    def __call__(self, *arguments, **options):
        self.threads.add(threading.get_ident())
        self.begun += 1
        try:
            return self.script(*arguments, **options)
        finally:
            self.ended += 1


def test_redis_paused_killed_and_back_never_holds_a_decision(own_server, caplog):
    """SIGSTOP, then SIGKILL, then a new redis-server on the port: while the store's one call to Redis hangs on the stopped server, budget calls and an aretrying caller's event loop go on; only the store's thread ever calls Redis; one warning for the outage, one for the counts the new server lost; the counts reach Redis again."""
    caplog.set_level(logging.INFO, logger="backoff_iter.fleet")
    client = own_server.client(socket_timeout=None)  # a client that would wait forever
    name = next(names)
    key = f"backoff_iter:{{{name}}}:token_bucket:counts"
    store = RedisStore(client, name, sync_interval=0.02)  # its own connection: 0.5 s timeout
    budget = Counted(TokenBucket(max_tokens=1000, token_ratio=1, store=store))
    watched = store._worker._script = Watched(store._worker._script)
    wait_for_first_exchange(budget.budget)
    ticks = [0]
    done = threading.Event()

    def calls():  # a thread of calls beside the event loop
        while not done.is_set():
            budget.record_failure(True)
            budget.try_retry(None)
            budget.record_success(False)
            time.sleep(0.001)

    async def ticker():
        while not done.is_set():
            await asyncio.sleep(0.002)
            ticks[0] += 1

    async def caller():  # aretrying with the store's budget, all along
        while not done.is_set():
            with contextlib.suppress(ConnectionError):
                async for attempt in aretrying([0.001] * 2, budget=budget, sleep=asyncio.sleep):
                    async with attempt:
                        raise ConnectionError
            await asyncio.sleep(0.001)  # a refused retry ends the call without awaiting

    async def off_loop(function, *arguments):  # the test's own blocking calls
        return await asyncio.get_running_loop().run_in_executor(None, function, *arguments)

    async def until(condition, what):
        deadline = time.monotonic() + 10
        while not await off_loop(condition):
            assert time.monotonic() < deadline, f"waited 10 s for {what}"
            await asyncio.sleep(0.005)

    def logged(level):
        return [r for r in caplog.records if r.name == "backoff_iter.fleet" and r.levelno == level]

    def level():
        return int(client.hget(key, "level") or -1)

    progress = {}

    async def main():
        tasks = [asyncio.ensure_future(ticker()), asyncio.ensure_future(caller())]
        await until(lambda: client.exists(key), "the first counts")
        own_server.pause()
        stuck = watched.begun + 1  # the next call begins on a stopped server, and hangs
        await until(lambda: watched.begun >= stuck and watched.ended < stuck, "a call to hang")
        before = (budget.done, ticks[0])
        await until(lambda: watched.ended >= stuck, "the hung call to time out")
        progress["while stuck"] = (budget.done - before[0], ticks[0] - before[1])
        await until(lambda: logged(logging.WARNING), "the warning")
        await off_loop(own_server.kill)
        await asyncio.sleep(0.2)  # calls go on with Redis gone
        await off_loop(own_server.start)  # the same port, empty
        await until(lambda: logged(logging.INFO), "the store to reconnect")
        await until(lambda: level() >= 0, "the counts made meanwhile")
        first = level()
        await until(lambda: level() != first, "counts to go on")
        done.set()
        await asyncio.gather(*tasks)

    worker = threading.Thread(target=calls)
    worker.start()
    try:
        asyncio.run(main())
    finally:
        done.set()
        worker.join()
        store.close()
    decisions, loop_ticks = progress["while stuck"]
    assert decisions >= 10 and loop_ticks >= 5, progress  # no decision waited on the hung socket
    assert watched.threads == {store._worker._thread.ident}  # nothing else called Redis
    warnings = [r.getMessage() for r in logged(logging.WARNING)]
    assert len(warnings) == 2, warnings
    assert "did not answer" in warnings[0] and "rebuilt" in warnings[1]


def test_a_store_that_cannot_reach_redis_does_not_try_to_leave_when_closed(caplog):
    """close() while exchanges fail: no last exchange is begun (it would wait on a Redis that is not there)."""
    import redis

    caplog.set_level(logging.WARNING, logger="backoff_iter.fleet")
    nobody = redis.Redis(host="127.0.0.1", port=free_port())
    store = RedisStore(nobody, next(names), sync_interval=60)  # one exchange, then a long wait
    bucket = TokenBucket(store=store)  # kept: the thread serves it while it lives
    watched = store._worker._script = Watched(store._worker._script)
    RedisServer.wait_until(lambda: caplog.records and store._worker._failing, "the warning")
    begun = watched.begun
    store.close()  # wakes the thread, which ends its loop while failing: no exchange to leave
    assert not store._worker._thread.is_alive()
    assert watched.begun == begun and bucket.tokens == 10.0


def test_a_flushed_script_is_loaded_again_without_a_warning(client, caplog):
    """SCRIPT FLUSH (a restarted or failed-over Redis): the next exchange reloads it (NOSCRIPT) and counts go on."""
    caplog.set_level(logging.WARNING, logger="backoff_iter.fleet")
    with RedisStore(client, next(names), sync_interval=0.01) as store:
        budget = RetryQuota(store=store)
        wait_for_first_exchange(budget)
        client.script_flush()
        budget.try_retry(OSError())
        RedisServer.wait_until(
            lambda: budget.available == 486.0 and budget._cum == budget._acked, "the exchange"
        )
        assert budget._value == 486_000
    assert not caplog.records


def test_the_fleet_window_follows_the_redis_server_clock(client):
    """A RetryBudget's slot in Redis is numbered by the server's TIME, whatever the process's clock says."""
    name = next(names)
    with RedisStore(client, name, sync_interval=0.01) as store:
        budget = RetryBudget(window=1.5, clock=Clock(5.0), store=store)
        budget.record_failure(True)
        key = f"backoff_iter:{{{name}}}:retry_budget:counts"
        RedisServer.wait_until(lambda: len(client.hgetall(key)) == 2, "the deposit")
        seconds, micros = client.time()
        [slot] = (int(field) for field in client.hgetall(key) if field != b"born")
        assert abs(slot - (seconds * 1_000_000 + micros) // 750_000) <= 1


# -- Keys, threads and lifecycle ---------------------------------------------


def test_the_guides_fleet_example_runs_as_written(server):
    """The fleet example of docs/budgets.rst, its host pointed at the test's redis-server, imports all it uses and makes a budget that hears from Redis."""
    guide = ROOT / "docs" / "budgets.rst"
    block = guide.read_text().split(".. code-block:: python", 1)[1].split("\n\n:class:", 1)[0]
    source = "\n".join(line[4:] for line in block.splitlines())
    source = source.replace('host="redis.internal"', f"host='127.0.0.1', port={server.port}")
    code = compile(source, str(guide), "exec")
    namespace: dict = {}
    exec(code, namespace)
    try:
        wait_for_first_exchange(namespace["budget"])
        # every name it reads, in functions called later too, is defined
        read = {
            node.id
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
        }
        assert read <= set(namespace), read - set(namespace)
    finally:
        namespace["store"].close()


def test_the_fleet_module_says_what_each_part_shares_and_does_without_redis():
    """The fleet module's docstring, which the parts' docstrings point to, covers the parts, the lag, Redis away, keys expiring and ending."""
    text = " ".join(backoff_iter.fleet.__doc__.split())
    for name in ("TokenBucket", "RetryBudget", "RetryQuota", "CircuitBreaker", "AdaptiveThrottle"):
        assert f"~backoff_iter.{name}`" in text
    for heading in (
        "What the fleet shares",
        "What the lag costs",
        "Redis slow, paused, restarted or gone",
        "Keys expire",
        "Ending",
    ):
        assert heading in text
    timing = Timing(0.1, 30.0)
    assert "max(3 x sync_interval, 0.25)" in text and timing.stale == max(3 * 0.1, 0.25)
    assert "4 x stale" in text and timing.horizon == 4 * timing.stale
    assert "stays for 50 horizons" in text and KEPT == 50
    assert "max(60 x sync_interval, 4 x stale)" in text and timing.silence == max(
        6.0, timing.horizon
    )


def test_an_idle_fleet_leaves_no_keys_behind(client):
    """A token bucket and a 1-second RetryBudget used, then idle (stores still open): Redis expires all their keys."""
    name = next(names)
    pattern = f"backoff_iter:{{{name}-*"
    bucket_store = RedisStore(client, f"{name}-a", sync_interval=0.01)
    window_store = RedisStore(client, f"{name}-b", sync_interval=0.01)
    bucket = TokenBucket(store=bucket_store)
    window = RetryBudget(window=1, store=window_store)
    for budget in (bucket, window):
        budget.record_failure(True)
        budget.try_retry(None)
    RedisServer.wait_until(lambda: len(client.keys(pattern)) == 6, "the six keys")
    RedisServer.wait_until(lambda: not client.keys(pattern), "the keys to expire", timeout=15)
    assert bucket_store._worker._thread.is_alive() and window_store._worker._thread.is_alive()
    bucket_store.close()
    window_store.close()


def test_close_sends_the_last_counts_leaves_the_fleet_and_ends_the_thread(client):
    """After close(): the last failure reached Redis, the member left, the thread ended."""
    name = next(names)
    store = RedisStore(client, name, sync_interval=30)  # no exchange but the first and the last
    bucket = TokenBucket(store=store)
    wait_for_first_exchange(bucket)
    bucket.record_failure(True)
    store.close()
    prefix = f"backoff_iter:{{{name}}}:token_bucket"
    assert int(client.hget(f"{prefix}:counts", "level")) == 9_000
    assert client.zcard(f"{prefix}:members") == 0
    assert not store._worker._thread.is_alive()
    assert store._worker._thread.daemon


def test_a_store_and_its_budget_collected_end_the_thread(client):
    """Dropping the last reference to the budget and store ends the daemon thread: nothing keeps it alive."""
    store = RedisStore(client, next(names), sync_interval=0.01)
    RetryBudget(store=store)  # the budget is garbage at once
    thread = store._worker._thread
    del store
    gc.collect()
    RedisServer.wait_until(lambda: not thread.is_alive(), "the thread to end")


def test_a_store_and_its_budget_dropped_without_close_lose_the_last_counts_as_the_guide_says(
    client,
):
    """Dropped, not closed: the thread ends, but the last failure never reaches Redis and the member stays until its horizon - what docs/budgets.rst says (it said dropping sent the last counts)."""
    name = next(names)
    store = RedisStore(client, name, sync_interval=30)  # no exchange but the first
    bucket = TokenBucket(store=store)
    wait_for_first_exchange(bucket)
    bucket.record_failure(True)
    thread = store._worker._thread
    del store, bucket
    gc.collect()
    RedisServer.wait_until(lambda: not thread.is_alive(), "the thread to end")
    prefix = f"backoff_iter:{{{name}}}:token_bucket"
    assert int(client.hget(f"{prefix}:counts", "level")) == 10_000
    assert client.zcard(f"{prefix}:members") == 1
    guide = " ".join((ROOT / "docs" / "budgets.rst").read_text().split())
    assert "without it stops the thread when they are collected, but loses the counts" in guide
    fleet_doc = " ".join(backoff_iter.fleet.__doc__.split())
    assert "the counts of the last interval are lost" in fleet_doc


def test_the_stores_connection_has_a_timeout_of_its_own(client, server):
    """A client with no socket timeout, or a longer one: the store's own connection waits at most max(0.5, 5 x sync_interval)."""
    patient = server.client(socket_timeout=None, socket_connect_timeout=None)
    with RedisStore(patient, next(names), sync_interval=0.2) as store:
        TokenBucket(store=store)
        settings = store._worker._client.connection_pool.connection_kwargs
        assert (settings["socket_timeout"], settings["socket_connect_timeout"]) == (1.0, 1.0)
        assert store._worker._client is not patient
    with RedisStore(server.client(socket_timeout=0.3), next(names)) as store:
        TokenBucket(store=store)
        assert store._worker._client.connection_pool.connection_kwargs["socket_timeout"] == 0.3
    slow = server.client(socket_timeout=30.0, socket_connect_timeout=30.0)
    with RedisStore(slow, next(names), sync_interval=0.01) as store:  # longer: cut to 0.5 s
        TokenBucket(store=store)
        settings = store._worker._client.connection_pool.connection_kwargs
        assert (settings["socket_timeout"], settings["socket_connect_timeout"]) == (0.5, 0.5)


def test_a_process_that_cannot_reach_redis_spends_its_deposits_then_a_whole_budget_alone(caplog):
    """Nothing listening: first only its own deposits, then (exchanges failing for max(3 x sync_interval, 0.25 s)) a budget of its own; one warning."""
    import redis

    caplog.set_level(logging.WARNING, logger="backoff_iter.fleet")
    nobody = redis.Redis(host="127.0.0.1", port=free_port())
    with RedisStore(nobody, next(names), sync_interval=2) as store:  # 6 s before it is alone
        budget = RetryBudget(ratio=1.0, min_per_second=2, window=5, store=store)
        assert not budget.try_retry(None)
        budget.record_failure(True)
        assert [budget.try_retry(None), budget.try_retry(None)] == [True, False]
        RedisServer.wait_until(lambda: caplog.records, "the warning")
        budget._trying -= 6  # as if 6 s went by, Redis still away
        store._worker.signal.set()  # its thread, at its next attempt, finds it alone
        RedisServer.wait_until(lambda: budget._alone, "the thread to find it alone")
        assert [budget.try_retry(None) for _ in range(11)] == [True] * 10 + [False]
    assert len(caplog.records) == 1
    assert "Redis did not answer" in caplog.records[0].getMessage()


def test_a_token_bucket_that_cannot_reach_redis_waits_then_is_a_whole_bucket_alone():
    """Nothing listening: a TokenBucket's own counts never lift it above half, so no retry; then alone, a full bucket."""
    import redis

    nobody = redis.Redis(host="127.0.0.1", port=free_port())
    with RedisStore(nobody, next(names), sync_interval=2) as store:
        bucket = TokenBucket(max_tokens=10, token_ratio=1, store=store)
        bucket.record_failure(True)
        assert not bucket.try_retry(None)  # 9 tokens, as far as it knows: not its to spend
        bucket._trying -= 6  # as if 6 s went by, Redis still away
        store._worker.signal.set()
        RedisServer.wait_until(lambda: bucket._alone, "the thread to find it alone")
        answers = []
        for _ in range(5):
            bucket.record_failure(False)
            answers.append(bucket.try_retry(None))
        assert answers == [True, True, True, False, False]  # 8, 7, 6 > 5; 5 is not
        store.close()
        assert not bucket.try_retry(None)  # alone already: closing refills nothing


def test_a_token_bucket_whose_store_closed_before_it_heard_is_a_whole_bucket_alone():
    """Closed before Redis ever answered: the bucket is a whole one of its own at once, as without a store (it refused every retry for good: its own counts never lift it above half, and no thread would find it alone)."""
    import redis

    nobody = redis.Redis(host="127.0.0.1", port=free_port())
    store = RedisStore(nobody, next(names), sync_interval=60)  # no second exchange
    bucket = TokenBucket(max_tokens=10, token_ratio=1, store=store)
    store.close()
    answers = []
    for _ in range(5):
        bucket.record_failure(False)
        answers.append(bucket.try_retry(None))
    assert answers == [True, True, True, True, False]  # 9, 8, 7, 6 > 5; 5 is not


def test_a_pool_the_store_cannot_copy_is_used_as_it_is(server):
    """A client on a pool of its own kind (Sentinel's, say): the store talks through the client itself."""
    import redis

    class Pool(redis.ConnectionPool):
        pass

    client = redis.Redis(connection_pool=Pool(host="127.0.0.1", port=server.port))
    with RedisStore(client, next(names), sync_interval=0.01) as store:
        budget = TokenBucket(store=store)
        wait_for_first_exchange(budget)
        assert store._worker._client is client
    assert client.ping()  # closing the store left the user's client alone


def test_closing_a_store_that_served_no_budget_does_nothing(client):
    """close() before any budget: nothing to stop, and a budget can no longer join."""
    store = RedisStore(client, next(names))
    store.close()
    rejects(lambda: RetryBudget(store=store), ValueError, "store", "closed")


def test_a_budget_collected_while_its_store_lives_ends_the_thread(client):
    """The threads hold their budget weakly: once the budget is gone they stop, the
    store still open - the watcher too (it waited for an exchange for good)."""
    with RedisStore(client, next(names), sync_interval=0.01) as store:
        RetryQuota(store=store)  # garbage at once
        gc.collect()
        worker = store._worker
        RedisServer.wait_until(lambda: not worker._thread.is_alive(), "the thread to end")
        RedisServer.wait_until(lambda: not worker._watcher.is_alive(), "the watcher to end")


def test_a_bug_in_an_exchange_is_logged_and_exchanges_go_on(client, caplog, monkeypatch):
    """An exception in the store's own code is logged (with its traceback) and the next exchange is made."""
    caplog.set_level(logging.ERROR, logger="backoff_iter.fleet")
    snapshot, calls = Member._snapshot, []

    def flaky(member, now, always):
        calls.append(now)
        if len(calls) == 2:
            raise RuntimeError("a bug")
        return snapshot(member, now, always)

    monkeypatch.setattr(Member, "_snapshot", flaky)
    with RedisStore(client, next(names), sync_interval=0.01) as store:
        budget = TokenBucket(store=store)
        RedisServer.wait_until(lambda: len(calls) >= 4, "exchanges after the bug")
        assert budget._ok_at > calls[2] - 1  # answered after it
    assert [r.exc_info[0] for r in caplog.records] == [RuntimeError]


def test_repr_says_where_a_budget_is_shared(client):
    """A store budget's repr is the budget's, then the store's."""
    with RedisStore(client, "where", sync_interval=0.5) as store:
        budget = RetryQuota(capacity=20, store=store)
        port = client.connection_pool.connection_kwargs["port"]
        assert repr(budget) == (
            "RetryQuota(capacity=20.0, retry_cost=14.0, throttle_cost=5.0, success_refund=1.0,"
            " timeout_cost=None)"
            f" with 20.0 available shared through RedisStore(<redis.Redis 127.0.0.1:{port}/0>,"
            " 'where', sync_interval=0.5)"
        )


def test_repr_of_a_store_whose_pool_names_no_host_says_the_host_redis_py_uses():
    """A pool made with port= alone (redis-py then talks to localhost) gave
    'redis.Redis None:6390/0'."""
    import redis

    for pool in (redis.ConnectionPool(port=6390), redis.BlockingConnectionPool(port=6390)):
        store = RedisStore(redis.Redis(connection_pool=pool), "where")
        assert (
            repr(store) == "RedisStore(<redis.Redis localhost:6390/0>, 'where', sync_interval=0.1)"
        )


FORK = """
import os, sys, time, redis
from fleet_workers import wait_for_first_exchange
from backoff_iter import TokenBucket
from backoff_iter.fleet import RedisStore
client = redis.Redis(host="127.0.0.1", port=int(sys.argv[1]))
store = RedisStore(client, sys.argv[2], sync_interval=0.01)
bucket = TokenBucket(store=store)
wait_for_first_exchange(bucket)
parent = bucket._member
if os.fork() == 0:  # the child: a member of its own, with a thread of its own
    bucket.record_failure(True)
    deadline = time.monotonic() + 10
    while bucket._acked != -1000 and time.monotonic() < deadline:
        time.sleep(0.01)
    print(bucket._member != parent, bucket._acked, bucket._n, flush=True)
    sys.exit(0)
os.wait()
print(bucket._member == parent, store._worker._thread.is_alive(), flush=True)
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork here")
def test_a_forked_child_is_a_new_member_with_its_own_thread(server):
    """After fork, the child counts as a member of its own (a new id, a running thread); the parent goes on."""
    result = subprocess.run(
        [sys.executable, "-c", FORK, str(server.port), next(names)],
        capture_output=True,
        text=True,
        cwd=ROOT / "tests",  # fleet_workers, beside this file
        timeout=60,
    )
    assert result.stdout.split() == ["True", "-1000", "2", "True", "True"], result.stderr


@pytest.mark.parametrize("fleet", [False, True], ids=["alone", "fleet of one"])
def test_a_retry_quota_takes_back_a_retry_that_never_ran(fleet):
    """give_back(taken): the cost of a retry a breaker (or the deadline) stopped goes
    back, never above the capacity; nothing for nothing taken; a fleet's member as the
    in-process quota."""
    clock = Clock(1000.0)
    store = _SharedState(0.5, clock=clock) if fleet else None
    quota = RetryQuota(capacity=100, store=store)
    taken = quota.try_retry(ConnectionError())
    assert taken == 14.0 and quota.available == 86.0
    quota.give_back(taken)
    assert quota.available == 100.0
    quota.give_back(0.0)
    quota.give_back(math.nan)
    quota.give_back(50.0)  # at full: nothing more
    paid = 0
    while quota.try_retry(None):  # a full quota, and no more: 100 // 14 retries
        paid += 1
    assert paid == 7 and quota.available == 2.0
    quota.give_back(14.0)  # below the capacity: the cost alone, no success's refund beside it
    assert quota.available == 16.0
