"""A circuit breaker and a client-side throttle shared by a fleet: the fleet's
ratio, state and probe, with members in simulated time and real processes
on a real redis-server; alone when Redis is away; no decision on the network."""

from __future__ import annotations

import contextlib
import logging
import math
import sys
import threading
import time
from itertools import count
from random import Random

import pytest
from fleet_workers import Fleet, wait_for_first_exchange
from redis_server import RedisServer, free_port, require_binary

from backoff_iter import (
    AdaptiveThrottle,
    ArgumentValueError,
    BrokenCircuitError,
    CircuitBreaker,
    ThrottledError,
)
from backoff_iter.fleet import RedisStore, _SharedState
from backoff_iter.fleet._breakers import FleetAdaptiveThrottle, FleetCircuitBreaker

names = (f"breakers-{i}" for i in count())


class Clock:
    def __init__(self, now=0.0):
        self.now = now

    def __call__(self):
        return self.now


def fleet_of(kind, members, clock, interval=0.1, **options):
    store = _SharedState(interval, clock=clock)
    return [kind(clock=clock, store=store, **options) for _ in range(members)], store


def refuses(breaker):
    try:
        breaker.check()
    except BrokenCircuitError:
        return True
    return False


BREAKER = {"failure_ratio": 0.5, "minimum_throughput": 20, "break_duration": 5}


# -- In simulated time ----------------------------------------------------------------


def test_store_makes_the_fleet_classes_and_says_where_they_count():
    """CircuitBreaker(store=) and AdaptiveThrottle(store=) are fleet parts, their reprs name the store."""
    clock = Clock()
    store = _SharedState(clock=clock)
    breaker = CircuitBreaker(clock=clock, store=store)
    assert isinstance(breaker, FleetCircuitBreaker) and isinstance(breaker, CircuitBreaker)
    assert repr(breaker).endswith("closed shared through _SharedState(sync_interval=0.1)")
    throttle = AdaptiveThrottle(clock=clock, store=_SharedState(clock=clock))
    assert isinstance(throttle, FleetAdaptiveThrottle) and repr(throttle).startswith(
        "AdaptiveThrottle(k=2.0, window=120.0) shared"
    )


def test_the_fleet_opens_when_its_ratio_crosses_and_every_member_refuses():
    """Ten members: nine succeed, one fails every call; at ratio 0.5 the circuit stays closed until failures are half the fleet's calls, then every member refuses."""
    clock = Clock()
    breakers, store = fleet_of(CircuitBreaker, 10, clock, **BREAKER)
    for _ in range(5):  # 45 successes, 5 failures: a tenth
        for index, breaker in enumerate(breakers):
            breaker.check()
            breaker.record(index != 0, ConnectionError("down"))
        clock.now += 0.2
    assert {b.state for b in breakers} == {"closed"}
    sick = breakers[0]
    for _ in range(40):  # the sick one alone, until its failures are half the calls
        sick.check()
        sick.record(False, ConnectionError("down"))
        clock.now += 0.01
    clock.now += 0.2
    assert all(refuses(b) for b in breakers)
    assert store._ledger.ledger["state"] == "open"


def opened(breakers, clock):
    """The first of *breakers* fails 20 times, a fifth of a second apart from the rest: its exchanges open the fleet's circuit."""
    for _ in range(20):
        breakers[0].check()
        breakers[0].record(False, ConnectionError("down"))
    for _ in range(2):
        clock.now += 0.2
        checked = [refuses(b) for b in breakers]
    assert all(checked)


def asking_for_the_probe(members=2):
    """Two members (or *members*) of an opened fleet, the break over, the first asking for
    the probe an exchange ago: the fleet's probe is its next call's.  (The members, the
    clock, their store.)"""
    clock = Clock()
    breakers, store = fleet_of(CircuitBreaker, members, clock, **BREAKER)
    opened(breakers, clock)
    clock.now += 5.0  # the break is over
    assert refuses(breakers[0])  # it asks for the probe
    clock.now += 0.11
    return breakers, clock, store


def sent_in_rounds(breakers, clock, rounds):
    """Each round, a tenth of a second apart: which breakers let a call go (each succeeds)."""
    sent = []
    for _ in range(rounds):
        clock.now += 0.11
        went = [index for index, b in enumerate(breakers) if not refuses(b)]
        for index in went:
            breakers[index].record(True)
        sent.append(went)
    return sent


def test_one_member_at_a_time_sends_the_probe_after_the_break():
    """After the break every member asks; the first to ask sends the one probe while the others refuse; its success closes the circuit for all."""
    clock = Clock()
    breakers, store = fleet_of(CircuitBreaker, 3, clock, **BREAKER)
    opened(breakers, clock)
    clock.now += 5.0  # the break is over
    assert sent_in_rounds(breakers, clock, 4) == [[], [0], [0, 1, 2], [0, 1, 2]]
    assert store._ledger.ledger["state"] == "closed"


def test_a_fleet_probe_a_part_refused_after_the_breaker_goes_with_the_next_call():
    """The member's breaker lets the fleet's probe go, a part asked after it refuses the
    attempt: the probe was never sent, so the member's next call sends it (it was refused
    as a probe still out), and no other member sends one."""
    from backoff_iter import retry
    from backoff_iter.parts import Part

    class Refuses(Part):
        def before_attempt(self, call):
            raise PermissionError("not now")

    breakers, clock, _ = asking_for_the_probe()
    with pytest.raises(PermissionError):
        retry([], on=ConnectionError, breaker=breakers[0], parts=[Refuses()])(lambda: "ok")()
    assert not refuses(breakers[0])  # the member's next call sends it, at once
    clock.now += 0.11  # an exchange: the fleet's probe is out, and still this member's
    assert refuses(breakers[1])


def test_a_call_let_go_while_closed_and_dropped_later_frees_no_probe_of_another_thread():
    """A member's call let go while the fleet was closed waits in a later part; meanwhile the
    fleet opens, the break ends and another thread's call takes the member's probe; then the
    part refuses the waiting call: the probe out is not its to free, and the member's next
    call is refused, not sent as a second probe."""
    from backoff_iter import retry
    from backoff_iter.parts import Part

    clock = Clock()
    breakers, _ = fleet_of(CircuitBreaker, 2, clock, **BREAKER)

    class Slow(Part):  # a rate limiter's wait, a part of the user's
        def before_attempt(self, call):
            opened(breakers, clock)
            clock.now += 5.0  # the break is over
            assert refuses(breakers[0])  # it asks for the probe
            clock.now += 0.11
            went = []
            thread = threading.Thread(target=lambda: went.append(not refuses(breakers[0])))
            thread.start()
            thread.join()
            assert went == [True]  # the probe of a call in another thread: out
            raise PermissionError("not now")

    with pytest.raises(PermissionError):
        retry([], on=ConnectionError, breaker=breakers[0], parts=[Slow()])(lambda: "ok")()
    assert refuses(breakers[0]) and refuses(breakers[1])


def test_a_member_joining_long_after_the_keys_ttl_but_within_the_break_finds_it_open():
    """A break of 300 s (keys live 90 s after the last exchange): a member joining 200 s on, none having exchanged since, refuses; after the break one member sends the one probe."""
    clock = Clock()
    breakers, store = fleet_of(CircuitBreaker, 2, clock, **{**BREAKER, "break_duration": 300})
    opened(breakers, clock)
    clock.now += 200.0
    late = CircuitBreaker(clock=clock, store=store, **{**BREAKER, "break_duration": 300})
    assert refuses(late) and late.state == "open"
    clock.now += 100.0  # the break is over
    assert sent_in_rounds([*breakers, late], clock, 2) == [[], [0]]


def test_a_breaker_asking_for_the_probe_keeps_exchanging_however_long_it_was_idle():
    """A member idle for 50 s after the fleet opened (its silence: 6 s; the keys live 90 s) asks for the probe: its thread still exchanges, not going on alone with a probe of its own."""
    clock = Clock()
    breakers, _ = fleet_of(CircuitBreaker, 2, clock, **BREAKER)
    opened(breakers, clock)
    clock.now += 50.0
    assert refuses(breakers[1]) and breakers[1]._asks
    assert breakers[1]._snapshot(clock.now, False) is not None


def test_a_failed_probe_opens_the_fleet_again_for_the_next_break():
    """The probe fails: every member refuses for the next break duration of the schedule (10 s after 5 s, not 20 s: the schedule moves on once an opening, however many answers say open)."""
    clock = Clock()
    breakers, _ = fleet_of(
        CircuitBreaker,
        2,
        clock,
        failure_ratio=0.5,
        minimum_throughput=20,
        break_duration=[5, 10, 20],
    )
    opened(breakers, clock)
    clock.now += 5.0
    assert sent_in_rounds(breakers, clock, 1) == [[]]  # both ask
    clock.now += 0.11
    assert not refuses(breakers[0])  # the first to ask holds the probe
    breakers[0].record(False, ConnectionError("still down"))
    for elapsed in (0.2, 9.5):
        clock.now += elapsed
        assert all(refuses(b) for b in breakers)
    clock.now += 0.5  # the second break, 10 s, is over
    assert sent_in_rounds(breakers, clock, 2)[1] == [0]


@pytest.mark.parametrize(
    "schedule, again",
    [
        (lambda: [5, 10, 20], 5.0),
        (lambda: lambda: iter([5, 10, 20]), 5.0),
        (lambda: iter([5, 10, 20]), 10.0),  # a one-shot iterator goes on where it was
    ],
    ids=["list", "function", "iterator"],
)
def test_the_fleets_break_schedule_restarts_when_the_circuit_closes(schedule, again):
    """Opened again after its probe closed it, the fleet serves the schedule's first break
    again, as one breaker does: 5 s, not the 10 s each member had taken ahead of the old
    schedule to send with its exchanges (a one-shot iterator's next, 10 s, as one breaker)."""
    clock = Clock()
    store = _SharedState(0.1, clock=clock)
    breakers = [
        CircuitBreaker(
            failure_ratio=0.5,
            minimum_throughput=20,
            break_duration=schedule(),  # each member its own
            clock=clock,
            store=store,
        )
        for _ in range(2)
    ]
    opened(breakers, clock)
    clock.now += 5.0
    assert sent_in_rounds(breakers, clock, 3)[-1] == [0, 1]  # the probe closed it for all
    opened(breakers, clock)
    clock.now += again - 0.3
    assert all(refuses(b) for b in breakers)
    clock.now += 0.2  # the break it opened for again is over
    assert sent_in_rounds(breakers, clock, 3)[-1] == [0, 1]


def test_the_throttles_requests_and_accepts_are_the_fleets():
    """Two members: one whose requests the backend refuses, one whose it accepts; each throttles by the fleet's counts, so the refused one is barely throttled (alone it would be)."""
    clock = Clock()
    store = _SharedState(0.1, clock=clock)
    sick, well = (AdaptiveThrottle(clock=clock, rng=Random(seed), store=store) for seed in (1, 2))
    alone = AdaptiveThrottle(clock=clock, rng=Random(1))
    rejected = {"fleet": 0, "alone": 0}
    members = ((sick, False, "fleet"), (well, True, None), (alone, False, "alone"))
    for _ in range(300):
        for throttle, accepted, key in members:
            try:
                throttle.check()
            except ThrottledError:
                if key:
                    rejected[key] += 1
                continue
            throttle.record(accepted)
        clock.now += 0.05
    assert abs(sick.probability - well.probability) < 0.05 and sick.probability < 0.1
    assert rejected["fleet"] < 30 < 200 < rejected["alone"]


class Rejects:
    """A throttle's rng that draws 0.0: any probability above 0 rejects, and says what it was."""

    def random(self):
        return 0.0


def rejecting_members():
    """Two throttles of one fleet (exchanging every 0.1 s) that reject at any probability, and their clock."""
    clock = Clock()
    store = _SharedState(0.1, clock=clock)
    return clock, [AdaptiveThrottle(clock=clock, rng=Rejects(), store=store) for _ in range(2)]


def requests(throttle, count):
    """*count* checks of *throttle*, refused or not: each counts as a request."""
    for _ in range(count):
        with contextlib.suppress(ThrottledError):
            throttle.check()


def test_an_accept_reaches_the_fleet_with_the_exchange_after_it():
    """A member's accept is sent by the exchange that follows it (in-process it may wait for the
    next check): 3 requests and an accept of one member make the other's check (3 - 2) / 4."""

    clock, (member, other) = rejecting_members()
    requests(member, 3)
    clock.now = 0.2
    member.record(True)  # the interval passed: exchanged at once
    with pytest.raises(ThrottledError) as refused:
        other.check()
    assert refused.value.probability == (3 - 2 * 1) / (3 + 1)


def test_a_throttle_in_the_fleet_keeps_its_own_window_for_when_it_is_alone():
    """Hearing the fleet, a throttle still counts its requests in its own window, bucket by
    bucket: alone at t = 121, the 5 requests of t = 0 have left it, the one of t = 60 not."""
    clock = Clock()
    throttle = AdaptiveThrottle(clock=clock, rng=Random(1), store=_SharedState(0.1, clock=clock))
    for now in (0.0,) * 5 + (60.0,):
        clock.now = now
        with contextlib.suppress(ThrottledError):
            throttle.check()
        assert not throttle._alone
    clock.now = 121.0
    throttle._alone = True  # as if its store had gone away
    assert throttle.probability == 1 / 2


def test_the_accepts_a_throttle_counts_for_the_fleet_count_in_its_own_window_too():
    """Hearing the fleet, a throttle's check counts the accepts waiting in its own window
    as well: alone after 4 requests, each accepted, it rejects nothing (4 - 2 x 4 < 0)."""
    clock = Clock()
    throttle = AdaptiveThrottle(clock=clock, rng=Random(1), store=_SharedState(0.1, clock=clock))
    for _ in range(4):
        throttle.check()
        assert not throttle._alone
        throttle.record(True)
    throttle._alone = True  # as if its store had gone away
    assert throttle.probability == 0.0


def test_an_accept_a_throttle_counts_for_the_fleet_counts_in_its_own_window_when_told():
    """Hearing the fleet, an accept told at t = 60 and counted at the next check counts in
    its own window from t = 60, not from the window's last move (t = 0): alone at t = 121,
    the request of t = 0 has left the window, the accept not: nothing is rejected.  (One
    exchange, at t = 0: the accept waits for the check, not for an exchange.)"""
    clock = Clock()
    throttle = AdaptiveThrottle(clock=clock, rng=Random(1), store=_SharedState(100, clock=clock))
    throttle.check()
    clock.now = 60.0
    throttle.record(True)
    clock.now = 61.0
    throttle.check()
    assert not throttle._alone
    clock.now = 121.0
    throttle._alone = True  # as if its store had gone away
    assert throttle.probability == 0.0  # 1 request, 1 accept; 1 - 2 x 1 < 0


def test_a_throttle_alone_checks_by_its_own_window_not_the_fleets_last_heard():
    """Alone (its store silent), a throttle's check judges by its own window: the 10
    refused requests of another member, heard before, reject none of its own."""

    clock, (well, sick) = rejecting_members()
    requests(sick, 10)
    for _ in range(2):
        well.check()
        well.record(True)
    clock.now = 0.2
    sick.record(False)  # the interval passed: each exchanges at once
    well.record(True)
    assert well.probability == (12 - 2 * 3) / (12 + 1)  # the fleet's: both members' counts
    well._alone = True  # as if its store had gone away
    well.check()  # its own: 3 requests, 3 accepts
    assert well.probability == 0.0


def test_a_forked_throttle_sends_none_of_its_parents_waiting_accepts():
    """After a fork a member counts from nothing (_renew): the accepts its parent told and had
    not counted yet are the parent's to send, not the child's."""
    clock = Clock()
    throttle = AdaptiveThrottle(clock=clock, store=_SharedState(3600, clock=clock))
    for _ in range(3):
        throttle.record(True)
    throttle._renew("child")
    throttle._fold()
    assert throttle._tallies() == [0, 0, 0, 0]


def test_a_throttle_throttles_by_the_fleets_counts_as_heard_and_a_forked_one_too():
    """After an exchange, a member's totals are the fleet's as heard plus its own since: 3
    requests and an accept, heard back, give (3 - 2 x 1) / (3 + 1); one more request gives
    (4 - 2) / 5.  A child forked then (_renew) counts from nothing but throttles by the same
    fleet totals as its parent heard them, its parent's acknowledged counts among them."""
    clock = Clock()
    throttle = AdaptiveThrottle(clock=clock, rng=Random(1), store=_SharedState(0.1, clock=clock))
    for _ in range(3):
        with contextlib.suppress(ThrottledError):
            throttle.check()
    clock.now = 0.2
    throttle.record(True)  # the interval passed: exchanged at once, all of it heard back
    assert throttle._tallies() == [3, 3, 1, 1]  # acknowledged as sent
    assert throttle.probability == (3 - 2 * 1) / (3 + 1)
    with contextlib.suppress(ThrottledError):
        throttle.check()
    assert throttle.probability == (4 - 2 * 1) / (4 + 1)
    throttle._renew("child")
    assert throttle._tallies() == [0, 0, 0, 0]
    assert throttle.probability == (3 - 2 * 1) / (3 + 1)  # the fleet's, as last heard


def test_the_fleet_breakers_counts_count_a_first_event_for_the_fleet_whichever_way():
    """Counts, what a fleet part sends: count_first counts for the fleet as add_first does,
    and the second events waiting (a throttle's accepts) before it, as add_second does."""
    from collections import deque

    from backoff_iter.fleet._breakers import Counts

    counts = Counts(10.0, 10)
    counts.add_first(0.0)
    waiting = deque([0.2, 0.4])
    assert counts.count_first(0.5, waiting) == (1, 2) and not waiting
    assert (counts.first, counts.second) == (2, 2)


def test_what_a_member_counts_alone_reaches_the_fleet_when_it_hears_again():
    """Alone (no answer), a member's breaker is the in-process one, which counts in its
    window only; the member counts for the fleet too: once it hears again, the failures
    it saw alone open the fleet's circuit, and the other member refuses."""
    clock = Clock()
    (alone, other), store = fleet_of(CircuitBreaker, 2, clock, **BREAKER)
    for _ in range(2):  # both heard from the fleet
        clock.now += 0.2
        for breaker in (alone, other):
            breaker.check()
            breaker.record(True)
    assert not alone._alone and not refuses(other)
    alone._wait()  # no answer: alone until the next one
    for _ in range(20):  # failing: the fleet's 5th to 24th calls
        alone.record(False, ConnectionError("down"))
    for _ in range(2):  # its exchange sends them (it hears again), the other's hears the fleet
        clock.now += 0.2
        refused = [refuses(breaker) for breaker in (alone, other)]
    assert refused == [True, True]
    assert store._ledger.ledger["state"] == "open"


def test_the_successes_a_member_counts_alone_reach_the_fleet_too():
    """As above, with 30 successes before the 20 failures: 20 of the fleet's 54 calls fail,
    below the ratio, and the circuit stays closed for both."""
    clock = Clock()
    (alone, other), store = fleet_of(CircuitBreaker, 2, clock, **BREAKER)
    for _ in range(2):
        clock.now += 0.2
        for breaker in (alone, other):
            breaker.check()
            breaker.record(True)
    alone._wait()
    for success in [True] * 30 + [False] * 20:
        alone.record(success, ConnectionError("down"))
    for _ in range(2):
        clock.now += 0.2
        refused = [refuses(breaker) for breaker in (alone, other)]
    assert refused == [False, False]
    assert store._ledger.ledger["state"] == "closed"


def member_that_failed_15_times():
    """(clock, a fleet's one CircuitBreaker member that heard from the fleet, then
    counted 15 failures: below the minimum throughput of 20, the fleet stays closed)."""
    clock = Clock()
    (member,), _ = fleet_of(CircuitBreaker, 1, clock, **BREAKER)
    clock.now += 0.2
    member.check()  # heard from the fleet
    for _ in range(15):
        member.record(False, ConnectionError("down"))
    return clock, member


def test_a_members_own_window_moves_with_its_calls_for_when_it_is_alone():
    """A member counts its calls in its own window too: failures that left it (a sampling
    duration ago) do not count once the member is alone."""
    clock, member = member_that_failed_15_times()
    clock.now += 0.2
    assert not refuses(member)
    clock.now += 31.0  # the 15 left the 30-second window
    member.check()
    member._wait()  # alone: the in-process breaker on its own window
    for _ in range(10):  # 10 calls in the window: below the minimum, closed
        member.record(False, ConnectionError("down"))
    assert member.state == "closed"


def test_a_members_calls_count_in_its_own_window_for_when_it_is_alone():
    """As above, alone within the same window: the 15 failures it counted as a member
    and 10 more reach the minimum throughput, and the circuit opens."""
    clock, member = member_that_failed_15_times()
    clock.now += 0.2
    assert not refuses(member)
    member._wait()  # alone, within the same 30-second window
    for _ in range(10):
        member.record(False, ConnectionError("down"))
    assert member.state == "open"


def test_a_forked_member_counts_for_the_fleet_from_nothing_but_keeps_its_own_window():
    """After a fork (_renew) a member sends the fleet nothing of its parent's, but its own
    window still holds the calls made before: alone, 15 failures from before and 5 more
    reach the minimum throughput of 20, and the circuit opens."""
    _, member = member_that_failed_15_times()
    member._renew("child")
    assert member._tallies() == [0, 0, 0, 0]
    member._wait()  # alone, within the same 30-second window
    for _ in range(4):
        member.record(False, ConnectionError("down"))
    assert member.state == "closed"  # 19 in the window
    member.record(False, ConnectionError("down"))
    assert member.state == "open"
    assert member._tallies() == [0, 0, 0, 5]  # its own since the fork, for the fleet


@pytest.mark.parametrize("probe", [True, False])
def test_a_half_open_probe_alone_is_not_counted_for_the_fleet(probe):
    """Alone, the breaker is the in-process one: its half-open probe's outcome closes or opens
    it and counts nowhere, neither in its window nor in what it sends the fleet."""
    clock = Clock()
    breaker = CircuitBreaker(
        failure_ratio=0.5,
        minimum_throughput=2,
        break_duration=5,
        clock=clock,
        store=_SharedState(0.1, clock=clock),
    )
    breaker._due = math.inf  # no exchange: alone throughout, as with its store down
    breaker.record(False, ConnectionError())
    breaker.record(False, ConnectionError())
    assert breaker.state == "open"
    clock.now = 6.0
    breaker.check()
    assert breaker.state == "half_open"
    sent = breaker._counts.first, breaker._counts.second
    breaker.record(probe, None if probe else ConnectionError())
    assert breaker.state == ("closed" if probe else "open")
    assert (breaker._counts.first, breaker._counts.second) == sent


def test_a_poisoned_breaker_state_is_dropped_and_the_circuit_works_on():
    """A state no exchange could have written (a word, or open with no end) counts as closed; the circuit opens again on the fleet's failures."""
    clock = Clock()
    breakers, store = fleet_of(CircuitBreaker, 2, clock, **BREAKER)
    store._ledger.ledger.update(state="open", until="never")
    clock.now += 0.2
    assert not refuses(breakers[0])
    opened(breakers[::-1], clock)


def test_a_breaker_without_redis_is_a_breaker_of_its_own():
    """Nothing listening: once exchanges have failed for a while, the breaker opens on its own failures, as in-process."""
    import redis

    nobody = redis.Redis(host="127.0.0.1", port=free_port())
    with RedisStore(nobody, next(names), sync_interval=2) as store:
        breaker = CircuitBreaker(**BREAKER, store=store)
        breaker._trying -= 7  # as if 7 s went by, Redis still away
        for _ in range(20):
            breaker.check()
            breaker.record(False, ConnectionError("down"))
        assert breaker.state == "open" and refuses(breaker)


def test_a_throttle_without_redis_throttles_by_its_own_counts():
    """Nothing listening: the throttle counts its own requests and accepts, as in-process."""
    import redis

    nobody = redis.Redis(host="127.0.0.1", port=free_port())
    with RedisStore(nobody, next(names), sync_interval=2) as store:
        throttle = AdaptiveThrottle(rng=Random(3), store=store)
        throttle._trying -= 7
        for _ in range(50):
            try:
                throttle.check()
            except ThrottledError:
                continue
            throttle.record(False)
        assert throttle.probability > 0.9


# -- On a real redis-server ---------------------------------------------------------


@pytest.fixture(scope="module")
def server():
    """One redis-server for the module's tests."""
    server = RedisServer(require_binary())
    yield server
    server.stop()


@pytest.fixture(scope="module")
def fleet(server):
    """4 spawned processes, started once for the module."""
    processes = Fleet(4, server.port)
    yield processes
    processes.close()


def test_a_fleet_breaker_whose_minimum_throughput_no_count_reaches_exchanges_and_stays_closed(
    server,
):
    """minimum_throughput=10**5000 (the in-process breaker takes it) was a bare
    ValueError from str() as the store's thread was made; it goes to the script as
    the largest count its numbers hold, and the breaker never opens."""
    with RedisStore(server.client(), next(names), sync_interval=0.01) as store:
        breaker = CircuitBreaker(failure_ratio=0.5, minimum_throughput=10**5000, store=store)
        wait_for_first_exchange(breaker)
        for _ in range(50):
            breaker.check()
            breaker.record(False)
        answers = breaker._answers
        RedisServer.wait_until(lambda: breaker._answers > answers + 1, "two more exchanges")
        breaker.check()  # still closed


@pytest.mark.parametrize("kind", ["breaker", "throttle"])
def test_no_decision_waits_while_redis_hangs(server, kind, caplog):
    """Redis stopped: while the store's one call hangs on it, checks and records go on; only the store's thread calls Redis; one warning."""
    caplog.set_level(logging.WARNING, logger="backoff_iter.fleet")
    store = RedisStore(server.client(socket_timeout=None), next(names), sync_interval=0.02)
    part = (
        CircuitBreaker(**BREAKER, store=store)
        if kind == "breaker"
        else AdaptiveThrottle(rng=Random(4), store=store)
    )
    wait_for_first_exchange(part)
    script, threads, calls = store._worker._script, set(), [0, 0]

    def watched(*arguments, **options):
        threads.add(threading.get_ident())
        calls[0] += 1
        try:
            return script(*arguments, **options)
        finally:
            calls[1] += 1

    store._worker._script = watched
    done, decided = threading.Event(), [0]

    def decide():
        while not done.is_set():
            try:
                part.check()
                part.record(decided[0] % 3 != 0)
            except (BrokenCircuitError, ThrottledError):
                pass
            decided[0] += 1
            time.sleep(0.0005)

    worker = threading.Thread(target=decide)
    worker.start()
    try:
        server.pause()
        stuck = calls[0] + 1
        RedisServer.wait_until(lambda: calls[0] >= stuck and calls[1] < stuck, "a call to hang")
        before = decided[0]
        RedisServer.wait_until(lambda: calls[1] >= stuck, "the hung call to time out")
        during = decided[0] - before
    finally:
        server.resume()
        done.set()
        worker.join()
        store.close()
    assert during >= 10, during
    assert threads == {store._worker._thread.ident}
    assert len([r for r in caplog.records if "did not answer" in r.getMessage()]) == 1


def test_a_breaker_shared_by_four_processes_opens_in_all_within_two_exchanges(fleet, server):
    """4 processes, 10 successes each; then one fails 40 times: the fleet's ratio crosses there.  Its first exchange sent after that opens the circuit, every exchange any process sends once it has heard so comes back open, and no process lets a call go once it has heard: two exchanges of lag at most."""
    name = next(names)
    jobs = [(name, 0.05, role, 1, 400) for role in ("cross", "watch", "watch", "watch")]
    results = fleet.each("breaker_job", jobs)
    crossed = results[0]["crossed"]
    after = [answer for answer in results[0]["answers"][0] if answer[0] >= crossed]
    assert (
        after[0][2] == 1
    )  # open: the crossing process's first exchange after it opened the circuit
    heard = after[0][1]  # when it heard (the circuit was open in Redis before)
    latencies = []
    for result in results:
        later = [state for sent, _, state in result["answers"][0] if sent > heard]
        assert later and all(later), later  # each process's next exchanges all said open
        assert result["late"] == [0] and result["refused"][0] is not None
        latencies.append(result["refused"][0] - crossed)
    print(f"refused {', '.join(f'{s:.3f}' for s in latencies)} s after the fleet's ratio crossed")


def test_one_sick_process_among_ten_healthy_does_not_open_the_fleets_circuit(fleet, server):
    """One process failing every call, ten healthy members (in the other three processes) succeeding: at failure_ratio=0.5 the fleet's circuit stays closed for all; alone, the sick one's would open."""
    name = next(names)
    jobs = [(name, 0.02, "sick", 1, 150), (name, 0.02, "healthy", 4, 150)]
    jobs += [(name, 0.02, "healthy", 3, 150)] * 2
    results = fleet.each("breaker_job", jobs)
    assert all(r is None for result in results for r in result["refused"])
    assert {s for result in results for s in result["states"]} == {"closed"}
    alone = CircuitBreaker(failure_ratio=0.5, minimum_throughput=40, break_duration=60)
    for _ in range(150):
        if not refuses(alone):
            alone.record(False)
    assert alone.state == "open"
    assert server.client().hget(f"backoff_iter:{{{name}}}:breaker:ledger", "state") == b"closed"


def test_a_member_whose_probe_is_out_sends_no_second_one():
    """An exchange while this member's probe is out (the fleet still says the probe is its): no second call goes as a probe, here or elsewhere."""
    breakers, clock, _ = asking_for_the_probe()
    assert not refuses(breakers[0])  # the probe is its to send: out now
    clock.now += 0.11  # an exchange while the probe is out
    assert refuses(breakers[0]) and refuses(breakers[1])
    breakers[0].record(True)
    assert not refuses(breakers[0])


def test_a_probe_failing_while_an_exchange_travels_sends_no_second_probe():
    """The member's probe fails while an exchange sent before it travels (the store's thread):
    the answer, the fleet still waiting for the probe, hands it the probe again - but its
    outcome, sent next, stands: the member stays open, no second call goes to the dependency."""
    breakers, clock, store = asking_for_the_probe()
    assert not refuses(breakers[0])  # the probe goes
    ledger = type(store._ledger)
    script = ledger.breaker

    def travelling(self, *arguments):  # the probe fails while the exchange travels
        ledger.breaker = script
        breakers[0].record(False, ConnectionError("still down"))
        return script(self, *arguments)

    ledger.breaker = travelling
    try:
        clock.now += 0.11
        assert refuses(breakers[0]) and breakers[0].state == "open"
    finally:
        ledger.breaker = script
    clock.now += 0.11  # the outcome reaches the fleet: open for all
    assert all(refuses(b) for b in breakers) and store._ledger.ledger["state"] == "open"


@pytest.mark.parametrize("closed", [True, False], ids=["closed", "open again"])
def test_a_lapsed_probe_coming_back_late_only_counts(closed):
    """A member's probe outlives its lapse; another member's probe closes the fleet's circuit
    (or fails: open again), and the first hears it; then its late probe fails (or succeeds):
    it counts and decides nothing - the member stays closed (or open) as the fleet is."""
    breakers, clock, _ = asking_for_the_probe()
    assert not refuses(breakers[0])  # its probe goes, and is slow
    clock.now += 5.0  # it lapses
    assert refuses(breakers[1])  # the other member asks for the next probe
    clock.now += 0.11
    assert not refuses(breakers[1])  # and sends it
    breakers[1].record(closed, ConnectionError("down"))
    clock.now += 0.11
    assert refuses(breakers[1]) is not closed  # its outcome reaches the fleet
    clock.now += 0.11
    assert refuses(breakers[0]) is not closed  # the first member hears it
    breakers[0].record(not closed, ConnectionError("late"))  # its lapsed probe comes back
    state = "closed" if closed else "open"
    assert breakers[0].state == state and refuses(breakers[0]) is not closed


def test_a_fleet_probe_that_never_reports_lets_another_go_once_it_lapses():
    """The only member's probe goes and never reports (its caller cancelled): refused while it
    is out, then - a break duration on, when the fleet lets it lapse - the member sends the
    fleet's next probe, whose success closes the circuit; not half open for good."""
    breakers, clock, store = asking_for_the_probe(members=1)
    assert not refuses(breakers[0])  # the probe goes, never to report
    clock.now += 4.8
    assert refuses(breakers[0])  # still out
    clock.now += 0.2  # it lapsed
    assert sent_in_rounds(breakers, clock, 3) == [[], [0], [0]]
    assert store._ledger.ledger["state"] == "closed"


def test_idle_members_of_an_open_fleet_keep_exchanging_so_a_long_break_sends_one_probe(server):
    """Two processes idle through a break longer than their silence and the keys' ttl (1 s each): their keys stay, a process joining mid-break refuses, and after the break the fleet sends one probe."""
    name = next(names)
    options = {"failure_ratio": 0.5, "minimum_throughput": 2, "sampling_duration": 0.1}
    stores = []

    def joined():
        stores.append(RedisStore(server.client(), name, sync_interval=0.01))
        part = CircuitBreaker(**options, break_duration=2.5, store=stores[-1])
        wait_for_first_exchange(part)
        return part

    try:
        a, b = joined(), joined()
        for _ in range(3):
            if not refuses(a):
                a.record(False, ConnectionError("down"))
        RedisServer.wait_until(lambda: b.state == "open", "the fleet to open")
        opened = time.monotonic()
        assert stores[0]._worker._timing.silence == stores[0]._worker._timing.ttl == 1.0
        RedisServer.wait_until(lambda: time.monotonic() - opened > 1.6, "silence and ttl")
        assert server.client().hget(f"backoff_iter:{{{name}}}:breaker:ledger", "state") == b"open"
        c = joined()  # a process starting mid-break
        assert refuses(c) and c.state == "open"
        probes = []

        def ask():
            for part in (a, b, c):
                if not refuses(part):
                    probes.append(part)
            return bool(probes)

        RedisServer.wait_until(ask, "the probe")
        assert len(probes) == 1 and all(refuses(part) for part in (a, b, c) if part not in probes)
    finally:
        for store in stores:
            store.close()


@pytest.mark.parametrize(
    ("kind", "parameter"), [("breaker", "sampling_duration"), ("throttle", "window")]
)
def test_a_window_of_up_to_1e9_seconds_is_shared_and_a_longer_one_refused(server, kind, parameter):
    """sampling_duration / window of 1e9 s: exchanges answer; of 1e9 s and a bit (sys.maxsize: every exchange failed), the argument error naming it."""
    make = CircuitBreaker if kind == "breaker" else AdaptiveThrottle
    store = RedisStore(server.client(), next(names), sync_interval=0.01)
    try:
        wait_for_first_exchange(make(**{parameter: 1e9}, store=store))
    finally:
        store.close()
    for value in (1e9 + 1000, sys.maxsize):
        with pytest.raises(ArgumentValueError, match=parameter) as refused:
            make(**{parameter: value}, store=RedisStore(server.client(), next(names)))
        assert refused.value.parameter == parameter and repr(value) in str(refused.value)


def test_a_breaker_whose_store_was_closed_while_the_fleet_was_open_probes_and_closes_alone(server):
    """close() while the fleet's circuit is open: the breaker goes on alone, as when Redis is gone - after the break its next call is the probe and a success closes it (it refused every call for good, waiting for an answer no thread would bring)."""
    clock = Clock(100.0)
    store = RedisStore(server.client(), next(names), sync_interval=0.01)
    breaker = CircuitBreaker(**BREAKER, clock=clock, store=store)
    wait_for_first_exchange(breaker)
    for _ in range(20):
        breaker.check()
        breaker.record(False, ConnectionError("down"))
    RedisServer.wait_until(
        lambda: not breaker._alone and breaker.state == "open", "the fleet to open"
    )
    store.close()
    assert refuses(breaker)  # the break is not over
    clock.now += 6  # it is: the next call probes
    breaker.check()
    assert breaker.state == "half_open"
    breaker.record(True)
    assert breaker.state == "closed" and not refuses(breaker)
