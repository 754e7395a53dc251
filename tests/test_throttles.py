"""AdaptiveThrottle rejects with the SRE book's probability, over a sliding window, in any thread."""

from __future__ import annotations

import contextlib
import math
import pickle
import random
import threading
from random import Random

import pytest
from checks import rejects

from backoff_iter import AdaptiveThrottle, ThrottledError, retrying


class Clock:
    def __init__(self, now=0.0):
        self.now = now

    def __call__(self):
        return self.now


def checked(throttle):
    """throttle.check(): True if the request may go, False if it was rejected."""
    try:
        throttle.check()
    except ThrottledError:
        return False
    return True


def sre_probability(requests, accepts, k):
    """The SRE book's client request rejection probability, as written there."""
    return max(0.0, (requests - k * accepts) / (requests + 1))


def throttle_with(requests, accepts, k, rng):
    """A fresh throttle whose window holds *requests* requests, *accepts* of them accepted."""
    throttle = AdaptiveThrottle(k=k, rng=rng, clock=Clock())
    for _ in range(accepts):  # never rejected: requests stay within k x accepts
        throttle.check()
        throttle.record(accepted=True)
    for _ in range(requests - accepts):
        if checked(throttle):  # a rejected request is counted all the same
            throttle.record(accepted=False)
    return throttle


@pytest.mark.long_run
@pytest.mark.parametrize(
    "requests, accepts, k",
    [(3, 1, 2.0), (5, 1, 2.0), (10, 3, 1.5), (7, 0, 2.0), (6, 2, 1.0), (4, 2, 2.0), (30, 4, 3.0)],
)
def test_the_rejection_rate_over_many_seeded_tries_matches_the_formula(requests, accepts, k):
    """4000 throttles in a known state each decide one request: the share rejected is the formula's, within 0.02.

    Small counts on purpose: there a formula without the + 1, or with k on the
    requests instead of the accepts, is off by far more than 0.02."""
    rng = Random(requests * 1000 + accepts)
    expected = sre_probability(requests, accepts, k)
    rejected = 0
    for _ in range(4000):
        throttle = throttle_with(requests, accepts, k, rng)
        assert throttle.probability == expected
        try:
            throttle.check()
        except ThrottledError as error:
            rejection = error
        else:
            continue
        assert rejection.probability == expected
        rejected += 1
    assert abs(rejected / 4000 - expected) <= 0.02, (rejected / 4000, expected)


def test_over_a_long_outage_the_rejections_follow_the_probability_at_each_request():
    """A backend accepting 1 in 5 for 20000 requests: the rejections number the sum of the probabilities, within 2%."""
    clock = Clock()
    throttle = AdaptiveThrottle(k=2.0, window=120.0, clock=clock, rng=Random(7))
    backend = Random(8)
    expected = rejected = 0.0
    for i in range(20000):
        clock.now = i * 0.05  # 20 requests a second: the window slides over the run
        expected += throttle.probability
        if checked(throttle):
            throttle.record(accepted=backend.random() < 0.2)
        else:
            rejected += 1
    assert expected > 5000
    assert abs(rejected - expected) <= 0.02 * expected, (rejected, expected)


def test_a_rejected_request_counts_as_a_request():
    """However many of n checks were rejected, the next probability is n / (n + 1) with no accepts."""
    throttle = AdaptiveThrottle(rng=Random(3), clock=Clock())
    outcomes = []
    for n in range(1, 200):
        outcomes.append("sent" if checked(throttle) else "rejected")
        assert throttle.probability == n / (n + 1)
    assert outcomes.count("rejected") > 150


def test_only_accepted_responses_count_as_accepts():
    """record(True) adds an accept, record(False) nothing: 10 requests, 3 accepted, k = 2 gives 4 / 11."""
    throttle = AdaptiveThrottle(k=2.0, rng=Random(1), clock=Clock())
    for _ in range(3):
        throttle.check()
        throttle.record(accepted=True)
    for _ in range(7):
        if checked(throttle):
            throttle.record(accepted=False)
    assert throttle.probability == (10 - 2.0 * 3) / 11


def test_no_draw_is_made_while_nothing_would_be_rejected():
    """At probability 0 the rng is not asked: a healthy client costs no random numbers."""

    class Counting(Random):
        draws = 0

        def random(self):
            Counting.draws += 1
            return super().random()

    throttle = AdaptiveThrottle(rng=Counting(1), clock=Clock())
    for _ in range(100):
        throttle.check()
        throttle.record(accepted=True)
    assert Counting.draws == 0


def test_requests_leave_the_window_after_window_seconds():
    """Counted in 1 s buckets of a 120 s window: 10 requests at t = 0 and 0.5 count until t = 120, not at 120."""
    clock = Clock(0.0)
    throttle = AdaptiveThrottle(window=120.0, rng=Random(1), clock=clock)
    for now in (0.0, 0.5) * 5:
        clock.now = now
        checked(throttle)
    clock.now = 119.999
    assert throttle.probability == 10 / 11
    clock.now = 120.0
    assert throttle.probability == 0.0


def test_a_window_of_a_few_seconds_slides_bucket_by_bucket():
    """window=12: 120 buckets of 0.1 s; requests at 0.3, 0.6 ... 2.9 s leave exactly 12 s later, one by one.

    Times a tenth apart, where t / 0.1 falls a hair short of the bucket's
    number (0.3 / 0.1 is 2.9999999999999996): the bucket is found exactly."""
    times = [0.3, 0.6, 0.7, 1.2, 1.4, 1.9, 2.3, 2.9]
    clock = Clock(0.0)
    throttle = AdaptiveThrottle(window=12.0, rng=Random(1), clock=clock)
    assert throttle.probability == 0.0  # the window's buckets start at t = 0
    for now in times:
        clock.now = now
        checked(throttle)
    for gone, now in enumerate(times):
        left = len(times) - gone
        clock.now = now + 12.0 - 0.001
        assert throttle.probability == left / (left + 1), now
        clock.now = now + 12.0
        assert throttle.probability == (left - 1) / left, now


def test_accepts_leave_the_window_too():
    """10 accepted at t = 0 and 3 requests at t = 60: at t = 120 only the 3 count, with no accepts: 3 / 4."""
    clock = Clock(0.0)
    throttle = AdaptiveThrottle(k=2.0, window=120.0, rng=Random(1), clock=clock)
    for _ in range(10):
        throttle.check()
        throttle.record(accepted=True)
    clock.now = 60.0
    for _ in range(3):
        throttle.check()  # (13 - 20) / 14 < 0: never rejected
    assert throttle.probability == 0.0
    clock.now = 120.0
    assert throttle.probability == 3 / 4


def test_an_accept_counts_from_when_it_was_told_not_from_when_it_is_counted():
    """record() leaves its accept for the next check (or a read) to count, at the time it was
    told: an accept of t = 0 counted by a check at t = 100 leaves the window at t = 120."""
    clock = Clock(0.0)
    throttle = AdaptiveThrottle(k=2.0, window=120.0, rng=Random(1), clock=clock)
    for _ in range(3):
        checked(throttle)
    throttle.record(accepted=True)
    clock.now = 100.0
    checked(throttle)  # counts the accept of t = 0, and a request at t = 100
    clock.now = 120.0
    assert throttle.probability == 1 / 2  # that request alone: counted at 100, the accept was 0


def test_a_read_counts_the_accepts_waiting_and_they_wait_in_fixed_memory():
    """probability counts what waits: 3 requests and an accept, (3 - 2) / 4; a thousand accepts
    told with no check between wait at most _WAITING at a time, and all count."""
    throttle = AdaptiveThrottle(k=2.0, rng=Random(1), clock=Clock())
    for _ in range(3):
        checked(throttle)
    throttle.record(accepted=True)
    assert throttle.probability == (3 - 2) / 4
    for told in range(1000):
        throttle.record(accepted=True)
        assert len(throttle._accepts) <= AdaptiveThrottle._WAITING, told
    assert throttle.probability == 0.0
    for _ in range(2 * 1001 - 3):  # never rejected: 2 x 1001 accepts allow as many requests
        assert checked(throttle)
    assert throttle.probability == 0.0
    checked(throttle)
    assert throttle.probability == 1 / (2 * 1001 + 2)  # one request more than they allow


def test_after_an_idle_window_the_buckets_start_afresh_at_the_next_reading():
    """Idle from t = 0 to 120.5, read then: requests at 121.2 and 121.4 share the bucket beginning at 120.5, and leave at 240.5."""
    clock = Clock(0.0)
    throttle = AdaptiveThrottle(window=120.0, rng=Random(1), clock=clock)
    throttle.check()
    clock.now = 120.5
    assert throttle.probability == 0.0
    for now in (121.2, 121.4):
        clock.now = now
        checked(throttle)
    clock.now = 240.4
    assert throttle.probability == 2 / 3
    clock.now = 240.5
    assert throttle.probability == 0.0


def test_the_memory_is_fixed_whatever_the_traffic():
    """A million seconds of requests: the window still holds 120 buckets and only its own requests."""
    clock = Clock()
    throttle = AdaptiveThrottle(window=120.0, rng=Random(1), clock=clock)
    for i in range(20000):
        clock.now = i * 50.0 + (i % 7)
        checked(throttle)
        throttle.record(accepted=i % 3 == 0)
    assert len(throttle._counts._firsts) == len(throttle._counts._seconds) == 120
    clock.now += 1000.0
    assert throttle.probability == 0.0


def test_a_clock_going_backwards_or_nan_or_inf_counts_as_no_time_passed():
    """Readings earlier than the last, NaN or infinite: the same counts as a frozen clock."""
    steady, odd = Clock(500.0), Clock(500.0)
    frozen = AdaptiveThrottle(window=1.0, rng=Random(1), clock=steady)
    weird = AdaptiveThrottle(window=1.0, rng=Random(1), clock=odd)
    for value in (10.0, math.nan, math.inf, -math.inf, 2.0**1001, 499.0, 500.0):
        odd.now = value
        for throttle in (frozen, weird):
            checked(throttle)
            throttle.record(accepted=True)
            throttle.record(accepted=False)
        assert weird.probability == frozen.probability
    odd.now = steady.now = 501.0  # a real second later the window has moved on for both
    assert weird.probability == frozen.probability == 0.0


def test_many_threads_count_every_request_and_accept(switching_often):
    """8 threads x 1000 checks, then 8 x 500 accepts: the probability is exactly (8000 - 4000) / 8001 with k = 1."""
    throttle = AdaptiveThrottle(k=1.0, rng=Random(5), clock=Clock())

    def check():
        for _ in range(1000):
            checked(throttle)

    def accept():
        for _ in range(500):
            throttle.record(accepted=True)

    for target in (check, accept):
        threads = [threading.Thread(target=target) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert throttle.probability == (8000 - 1.0 * 4000) / 8001


def test_without_rng_it_draws_from_the_random_module():
    """rng=None uses the module-level random: seeding it makes the run repeat."""
    state = random.getstate()
    try:
        runs = []
        for _ in range(2):
            random.seed(11)
            throttle = AdaptiveThrottle(clock=Clock())
            outcomes = []
            for _ in range(60):
                outcomes.append(checked(throttle))
            runs.append(outcomes)
    finally:
        random.setstate(state)
    assert runs[0] == runs[1] and 0 < sum(runs[0]) < 60


def test_throttled_error_is_its_own_exception_with_the_probability():
    """Not an argument error nor an OSError; it says why, carries .probability and pickles."""
    error = ThrottledError(0.25)
    assert isinstance(error, Exception)
    assert not isinstance(error, (ValueError, TypeError, OSError))
    assert str(error) == (
        "adaptive throttling rejected the request locally (rejection probability 0.250)"
    )
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is ThrottledError and again.probability == 0.25 and str(again) == str(error)
    assert repr(AdaptiveThrottle()) == "AdaptiveThrottle(k=2.0, window=120.0)"


@pytest.mark.parametrize(
    "make, error, name",
    [
        (lambda: AdaptiveThrottle(k=0.5), ValueError, "k"),
        (lambda: AdaptiveThrottle(k=math.inf), ValueError, "k"),
        (lambda: AdaptiveThrottle(k=math.nan), ValueError, "k"),
        (lambda: AdaptiveThrottle(k="2"), TypeError, "k"),
        (lambda: AdaptiveThrottle(window=0), ValueError, "window"),
        (lambda: AdaptiveThrottle(window=-1.0), ValueError, "window"),
        (lambda: AdaptiveThrottle(window=math.inf), ValueError, "window"),
        (lambda: AdaptiveThrottle(window=True), TypeError, "window"),
        (lambda: AdaptiveThrottle(clock=3), TypeError, "clock"),
        (lambda: AdaptiveThrottle(rng=42), TypeError, "rng"),
    ],
)
def test_bad_arguments_name_the_parameter(make, error, name):
    """Out-of-range or mistyped arguments are rejected when the throttle is made."""
    rejects(make, error, name)


def test_a_rejection_carries_the_latest_refusal_of_the_backend_as_its_cause():
    """check() after record(False, failure) raises ThrottledError from a traceback-free copy of it."""
    throttle = AdaptiveThrottle(k=1.0, rng=Random(3))
    try:
        raise ConnectionRefusedError("overloaded")
    except ConnectionRefusedError as error:
        failure = error
        for _ in range(50):
            with contextlib.suppress(ThrottledError):
                throttle.check()
            throttle.record(False, failure)
    with pytest.raises(ThrottledError) as raised:
        for _ in range(100):
            throttle.check()
    cause = raised.value.__cause__
    assert isinstance(cause, ConnectionRefusedError) and cause.args == ("overloaded",)
    assert cause is not failure and cause.__traceback__ is None


class _ProtocolThrottle:
    """A throttle of the protocol, not the library's: record(accepted) only."""

    def __init__(self) -> None:
        self.told: list[bool] = []

    def check(self) -> None:
        pass

    def record(self, accepted: bool) -> None:
        self.told.append(accepted)


def test_a_throttle_given_to_a_driver_hears_each_outcome_as_its_protocol_takes_it():
    """A throttle of the protocol hears record(accepted); the library's hears the
    failure too, which its rejections then carry as their cause."""
    mine = _ProtocolThrottle()
    failures = [ConnectionRefusedError("overloaded")]
    for attempt in retrying([0.0], on=OSError, throttle=mine, sleep=lambda s: None):
        with attempt:
            if failures:
                raise failures.pop()
    assert mine.told == [False, True]
    throttle = AdaptiveThrottle(k=1.0, rng=Random(3))
    with pytest.raises(ThrottledError) as raised:
        for _ in range(200):
            with contextlib.suppress(ConnectionRefusedError):
                for attempt in retrying([], on=OSError, throttle=throttle):
                    with attempt:
                        raise ConnectionRefusedError("overloaded")
    cause = raised.value.__cause__
    assert isinstance(cause, ConnectionRefusedError) and cause.args == ("overloaded",)


class Guarded:
    """The throttle's sliding counts, each use checked to come with the throttle's lock held."""

    def __init__(self, throttle):
        self.throttle, self.counts, self.unguarded = throttle, throttle._counts, []

    def __getattr__(self, name):
        method = getattr(self.counts, name)

        def guarded(*args):
            if self.throttle._lock.acquire(blocking=False):  # free: this thread does not hold it
                self.throttle._lock.release()
                self.unguarded.append(name)
            return method(*args)

        return guarded


def test_every_use_of_the_counts_holds_the_lock():
    """check(), record() and probability read and add to the sliding counts only with the lock
    held: no other thread can count between a check's reading and its adding (the counts lose
    nothing, and a check's probability is that of the requests before it)."""
    throttle = AdaptiveThrottle(k=1.0, rng=Random(5), clock=Clock())
    guarded = throttle._counts = Guarded(throttle)
    for _ in range(20):
        checked(throttle)
    throttle.record(accepted=True)
    throttle.record(accepted=False, failure=ConnectionError())
    assert 0.0 < throttle.probability < 1.0
    for _ in range(AdaptiveThrottle._WAITING + 1):  # more accepts than may wait: counted at once
        throttle.record(accepted=True)
    assert throttle.probability == 0.0
    assert guarded.unguarded == []


def test_a_draw_equal_to_the_probability_lets_the_request_go():
    """Rejected with probability p means rejected when the draw is below p: a draw of exactly
    0.5 against p = 1 / 2 (one request, no accept) admits the request."""

    class Half:
        def random(self):
            return 0.5

    throttle = AdaptiveThrottle(k=1.0, rng=Half(), clock=Clock())
    assert checked(throttle)  # no request before: p = 0, no draw
    assert throttle.probability == 0.5
    assert checked(throttle)


def test_a_run_of_accepts_with_no_check_between_takes_the_lock_once_in_65():
    """An accept takes no lock but the 65th in a row with no check between, which counts those
    waiting (as the class's docstring says): 130 accepts take it twice."""
    throttle = AdaptiveThrottle(rng=Random(1), clock=Clock())
    taken = []

    class Counting:
        def __enter__(self):
            taken.append(1)

        def __exit__(self, *exc):
            return None

    throttle._lock = Counting()
    for _ in range(130):
        throttle.record(accepted=True)
    assert len(taken) == 2 and not throttle._accepts
