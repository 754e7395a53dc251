"""CubicRateLimiter is botocore's adaptive retry mode to the last float, and waits without blocking."""

from __future__ import annotations

import asyncio
import math
import threading
import time
from random import Random

import pytest
from botocore.awsrequest import AWSResponse
from botocore.exceptions import CapacityNotAvailableError
from botocore.retries import adaptive, bucket, standard, throttling
from checks import fresh_python, rejects
from hypothesis import given
from hypothesis import strategies as st

from backoff_iter import CubicRateLimiter
from backoff_iter.testing import no_sleep


class Clock:
    """A clock for both sides: ours calls it, botocore calls current_time()."""

    def __init__(self, now=0.0):
        self.now = now

    def __call__(self):
        return self.now

    def current_time(self):
        return self.now

    def sleep(self, seconds):
        raise AssertionError("botocore's bucket must never sleep in these tests")


def botocore_limiter(clock):
    """botocore's ClientRateLimiter, assembled as register_retry_handler does, on *clock*."""
    return adaptive.ClientRateLimiter(
        rate_adjustor=throttling.CubicCalculator(
            starting_max_rate=0, start_time=clock.current_time()
        ),
        rate_clocker=adaptive.RateClocker(clock),
        token_bucket=bucket.TokenBucket(max_rate=1, clock=clock),
        throttling_detector=standard.ThrottlingErrorDetector(
            retry_event_adapter=standard.RetryEventAdapter()
        ),
        clock=clock,
    )


def needs_retry_event(throttled):
    """The keyword arguments of botocore's needs-retry event for one response."""
    if throttled:
        status, parsed = 400, {"Error": {"Code": "Throttling", "Message": "Rate exceeded"}}
    else:
        status, parsed = 200, {"ResponseMetadata": {"HTTPStatusCode": 200}}
    return {
        "response": (AWSResponse("https://example.com", status, {}, None), parsed),
        "attempts": 1,
        "operation": None,
        "caught_exception": None,
        "request_dict": {"context": {}},
    }


EVENTS = {flag: needs_retry_event(flag) for flag in (False, True)}


def botocore_try_acquire(theirs):
    """What botocore's before-send hook does, without ever blocking: take a token if on."""
    if not theirs._enabled:
        return True
    try:
        return theirs._token_bucket.acquire(amount=1, block=False)
    except CapacityNotAvailableError:
        return False


def run_both(start, steps):
    """Feed (seconds later, kind) steps to ours and botocore's; compare after every step."""
    clock = Clock(start)
    ours, theirs = CubicRateLimiter(clock=clock), botocore_limiter(clock)
    assert ours.rate == theirs._token_bucket.max_rate
    for gap, kind in steps:
        clock.now += gap
        if kind == "send":
            assert ours.try_acquire() == botocore_try_acquire(theirs)
        else:
            throttled = kind == "throttle"
            assert theirs._throttling_detector.is_throttling_error(**EVENTS[throttled]) == throttled
            theirs.on_receiving_response(**EVENTS[throttled])
            ours.record(throttled)
        assert ours.rate == theirs._token_bucket.max_rate, (clock.now, kind)
        assert ours.enabled == theirs._enabled
        if kind != "send" or ours.enabled:  # both buckets were just brought up to now
            assert ours.tokens == theirs._token_bucket.available_capacity
    return ours


def random_steps(rng, count):
    """A client's life: bursts and lulls, a throttle now and then, sends between responses."""
    throttle_share = rng.choice([0.0, 0.01, 0.05, 0.2, 0.6])
    responses_per_second = rng.choice([0.3, 2.0, 10.0, 50.0, 400.0])
    steps = []
    for _ in range(count):
        roll = rng.random()
        if roll < 0.02:
            gap = rng.uniform(2.0, 40.0)  # a lull: the cubic grows up to its 2x cap
        elif roll < 0.1:
            gap = 0.0
        else:
            gap = rng.expovariate(responses_per_second)
        if rng.random() < 0.3:
            kind = "send"
        else:
            kind = "throttle" if rng.random() < throttle_share else "success"
        steps.append((gap, kind))
    return steps


@pytest.mark.long_run
def test_rate_enabled_and_tokens_equal_botocores_after_every_step_of_many_seeded_lives():
    """300 seeded sequences of responses, throttles and sends: rate (==), enabled and tokens match botocore's."""
    throttled = 0
    for seed in range(300):
        rng = Random(seed)
        start = rng.choice([0.0, 0.25, 1000.5, rng.uniform(0, 1e6), 1.7e9 + rng.random()])
        ours = run_both(start, random_steps(rng, 250))
        throttled += ours.enabled
    assert 200 < throttled < 300  # most lives met a throttle, some never did


@given(
    start=st.floats(0, 1e9),
    steps=st.lists(
        st.tuples(
            st.one_of(st.just(0.0), st.floats(0, 0.6), st.floats(0, 100)),
            st.sampled_from(["success", "throttle", "send"]),
        ),
        max_size=120,
    ),
)
def test_any_sequence_of_responses_gives_botocores_rate(start, steps):
    """Hypothesis's sequences too: the same rate, enabled and tokens as botocore after every step."""
    run_both(start, steps)


def test_responses_where_floats_are_two_seconds_apart_count_as_botocore_counts_them():
    """At 2**53 s a half second's end rounds to its start: past it, a response still in the
    bucket measured last counts there, as botocore's floor says (the throttle's rate tells)."""
    steps = [(0.0, "success")] * 3 + [(2.0, "throttle"), (0.0, "success"), (2.0, "throttle")]
    assert run_both(2.0**53, steps).rate > 0.5  # above the floor: the responses were counted


def test_a_throttle_turns_it_on_at_beta_times_the_measured_rate():
    """20 responses a second for 2 s, then a throttle: on, at 0.7 x the smoothed measured rate."""
    clock = Clock()
    limiter = CubicRateLimiter(clock=clock)
    for i in range(1, 41):
        clock.now = i / 20
        limiter.record(False)
    assert not limiter.enabled
    assert limiter.rate == 0.4 * 2.0**3  # the cubic from W_max = 0, 2 s after the start
    limiter.record(True)
    # Buckets of 0.5 s close at t = 0.5, 1.0, 1.5 and 2.0, each of 10 responses
    # (20 a second); each moves the measured rate 0.8 of the way to it.
    measured = 0.0
    for _ in range(4):
        measured = 10 / 0.5 * 0.8 + measured * (1 - 0.8)
    assert limiter.enabled
    assert limiter.rate == 0.7 * measured


def test_while_off_acquiring_is_free_and_takes_no_token():
    """Before any throttle: try_acquire is True, acquire sleeps nothing, the bucket is untouched."""
    clock = Clock()
    limiter = CubicRateLimiter(clock=clock)
    slept = []
    for _ in range(50):
        assert limiter.try_acquire()
        assert limiter.acquire(sleep=slept.append) == 0.0
    assert slept == []
    assert limiter.tokens == 0.0  # botocore's bucket starts empty and nobody took from it
    assert asyncio.run(limiter.aacquire(sleep=slept.append)) == 0.0


def on_and_empty():
    """A limiter just throttled (so on, tokens below 1), on a frozen clock."""
    clock = Clock()
    limiter = CubicRateLimiter(clock=clock)
    for i in range(1, 101):  # 50 responses a second for 2 s
        clock.now = i / 50
        limiter.record(False)
    limiter.record(True)
    while limiter.try_acquire():
        pass
    assert limiter.enabled and 0.0 <= limiter.tokens < 1.0
    return limiter, clock


def test_try_acquire_fails_fast_when_the_bucket_is_empty():
    """Empty: try_acquire returns False at once, as often as asked, and takes nothing."""
    limiter, clock = on_and_empty()
    tokens = limiter.tokens
    assert [limiter.try_acquire() for _ in range(5)] == [False] * 5
    assert limiter.tokens == tokens
    clock.now += (1 - tokens) / limiter.rate  # the time one token takes
    assert limiter.try_acquire()


def test_acquire_sleeps_exactly_until_the_token_is_there():
    """With an injected sleep that moves the clock: one sleep of (1 - tokens) / rate, then the next caller waits 1 / rate."""
    limiter, clock = on_and_empty()
    slept = []

    def sleep(seconds):
        slept.append(seconds)
        clock.now += seconds

    tokens, rate = limiter.tokens, limiter.rate
    assert limiter.acquire(sleep=sleep) == (1 - tokens) / rate
    assert slept == [(1 - tokens) / rate]
    assert limiter.tokens == pytest.approx(0.0, abs=1e-9)  # the token it waited for is spent
    assert limiter.acquire(sleep=sleep) == pytest.approx(1 / rate, rel=1e-9)
    assert len(slept) == 2


def test_acquire_takes_a_token_that_is_there_at_once_without_sleeping():
    """With 1.5 tokens (or the bucket full), acquire and aacquire return 0.0 without a sleep
    and take one token each: no wait is drawn from a token already there."""
    limiter, clock = on_and_empty()
    clock.now += (1.5 - limiter.tokens) / limiter.rate
    assert limiter.tokens == pytest.approx(1.5)
    slept = []
    assert limiter.acquire(sleep=slept.append) == 0.0
    assert limiter.tokens == pytest.approx(0.5)
    clock.now += 100.0  # the bucket full: max(1, rate) tokens
    assert limiter.tokens == limiter.rate > 2
    assert asyncio.run(limiter.aacquire(sleep=slept.append)) == 0.0
    assert limiter.tokens == pytest.approx(limiter.rate - 1)
    assert slept == []


def test_acquire_looks_time_sleep_up_at_each_call_and_obeys_no_sleep(monkeypatch):
    """The default sleep is time.sleep as it is when called; under no_sleep the wait is recorded."""
    limiter, _ = on_and_empty()
    wait = (1 - limiter.tokens) / limiter.rate
    slept = []
    monkeypatch.setattr(time, "sleep", slept.append)
    assert limiter.acquire() == wait
    assert slept == [wait]
    with no_sleep() as recorded:
        limiter.acquire()
    assert len(recorded) == 1 and recorded[0] > 0
    assert len(slept) == 1


def test_waiting_callers_queue_up_each_waiting_one_more_token():
    """On a frozen clock, the n-th caller waits for n tokens: (n - tokens) / rate."""
    limiter, _ = on_and_empty()
    tokens, rate = limiter.tokens, limiter.rate
    waits = [limiter.acquire(sleep=lambda s: None) for _ in range(4)]
    expected, left = [], tokens
    for _ in range(4):
        expected.append((1 - left) / rate)
        left -= 1
    assert waits == expected


def test_many_threads_get_exactly_the_tokens_there_are_and_wait_in_turn(switching_often):
    """16 threads, frozen clock: exactly floor(tokens) try_acquires succeed; 160 acquires wait exactly the queue's times."""
    clock = Clock()
    limiter = CubicRateLimiter(clock=clock)
    for i in range(1, 401):  # 200 responses a second for 2 s, then a throttle
        clock.now = i / 200
        limiter.record(False)
    limiter.record(True)
    clock.now += 100.0  # the bucket fills up to max(1, rate)
    tokens, rate = limiter.tokens, limiter.rate
    assert tokens == rate > 20
    got, waits = [], []

    def grab():
        got.extend(limiter.try_acquire() for _ in range(10))

    def queue():
        for _ in range(10):
            waits.append(limiter.acquire(sleep=lambda s: None))

    for target in (grab, queue):
        threads = [threading.Thread(target=target) for _ in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert got.count(True) == math.floor(tokens)
    left = tokens
    for _ in range(math.floor(tokens)):
        left -= 1
    expected = []
    for _ in range(160):
        expected.append((1 - left) / rate)
        left -= 1
    assert sorted(waits) == expected


class Interrupted(Exception):
    """The sleep of an acquire cut short: its token goes back."""


def interrupted(seconds):
    raise Interrupted


def test_threads_reserving_giving_back_trying_and_recording_at_once_lose_no_token(
    switching_often,
):
    """8 threads on a frozen clock, 2 of each: acquire, acquire cut short (its token back),
    try_acquire and record(False).  Every token taken is gone and every one given back is
    there again: the bucket ends at its start less the acquires and the try_acquires granted."""
    limiter, _ = on_and_empty()
    limiter.record(False)  # the rate, the same at every record on this frozen clock
    start = limiter.tokens
    granted = []

    def acquire():
        for _ in range(2000):
            limiter.acquire(sleep=lambda s: None)

    def cut_short():
        for _ in range(2000):
            with pytest.raises(Interrupted):
                limiter.acquire(sleep=interrupted)

    def attempt():
        granted.extend(limiter.try_acquire() for _ in range(2000))

    def record():
        for _ in range(2000):
            limiter.record(False)

    threads = [
        threading.Thread(target=target) for target in (acquire, cut_short, attempt, record) * 2
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert limiter.tokens == pytest.approx(start - 2 * 2000 - granted.count(True), abs=1e-6)


def test_every_change_of_the_bucket_is_made_holding_the_lock(monkeypatch):
    """Each step that computes the bucket's next state (min() in limiters.py: the refill, a
    token given back, the new rate) runs with the limiter's lock held: no other thread can
    slip a reservation between its read and its write.  Checked at every such step of a
    record, an acquire, an acquire cut short, a try_acquire and a read of tokens."""
    from backoff_iter import limiters

    limiter, _ = on_and_empty()
    lock = limiter._lock  # its one lock, as made: a step holding another is unguarded too
    unguarded = []

    def guarded_min(*args):
        if lock.acquire(blocking=False):  # free: nobody (not this thread) holds it
            lock.release()
            unguarded.append(args)
        return min(*args)

    monkeypatch.setattr(limiters, "min", guarded_min, raising=False)
    limiter.record(False)
    limiter.record(True)
    limiter.acquire(sleep=lambda s: None)
    with pytest.raises(Interrupted):
        limiter.acquire(sleep=interrupted)
    limiter.try_acquire()
    assert limiter.tokens < 1
    assert unguarded == []


def test_aacquire_waits_without_blocking_the_event_loop(monkeypatch):
    """On an asyncio loop in simulated time (its clock jumps to the next timer), aacquire
    waits with asyncio.sleep, never time.sleep: the wait takes exactly its seconds of the
    loop's time, and a ticker task on the same loop ticks every 2 ms throughout it."""
    limiter, _ = on_and_empty()
    while (1 - limiter.tokens) / limiter.rate < 0.05:  # queue up: the next wait is >= 50 ms
        limiter.acquire(sleep=lambda s: None)

    def no_blocking_sleep(seconds):
        raise AssertionError("time.sleep would block the loop")

    monkeypatch.setattr(time, "sleep", no_blocking_sleep)
    ticks = []

    async def ticker():
        loop = asyncio.get_running_loop()
        while True:
            ticks.append(loop.time())
            await asyncio.sleep(0.002)

    async def main():
        loop = asyncio.get_running_loop()
        task = asyncio.ensure_future(ticker())
        await asyncio.sleep(0)
        before = len(ticks)
        started = loop.time()
        waited = await limiter.aacquire()
        took = loop.time() - started
        during = len(ticks) - before
        task.cancel()
        return waited, took, during

    waited, took, during = simulated(main())
    assert waited >= 0.05
    assert took == pytest.approx(waited, abs=1e-9)
    assert during >= math.floor(waited / 0.002) - 1  # a blocked loop would not tick at all


def simulated(coroutine):
    """Run *coroutine* on benchmarks/hedging.py's asyncio loop in simulated time."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "benchmarks" / "hedging.py"
    spec = importlib.util.spec_from_file_location("hedging_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.simulate(coroutine)


@pytest.mark.parametrize("given", ["trio.sleep", None])
def test_aacquire_with_trio_sleep_runs_on_trio_without_blocking(given):
    """Under trio's virtual clock: aacquire(sleep=trio.sleep), or with no sleep given (the
    running loop's), waits its time while a ticker ticks every 5 ms."""
    import trio
    from trio.testing import MockClock

    ticks = []
    result = {}

    async def main():
        limiter = CubicRateLimiter(clock=trio.current_time)
        start = trio.current_time()
        for i in range(1, 101):  # 50 responses a second for 2 s of trio's time
            await trio.sleep_until(start + i / 50)
            limiter.record(False)
        limiter.record(True)
        while limiter.try_acquire():
            pass
        for _ in range(3):  # three callers ahead: the next waits more than 3 tokens' time
            limiter.acquire(sleep=lambda s: None)
        expected = (1 - limiter.tokens) / limiter.rate

        async def ticker():
            while True:
                ticks.append(trio.current_time())
                await trio.sleep(0.005)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ticker)
            await trio.sleep(0)
            began = trio.current_time()
            sleep = trio.sleep if given else None
            result["waited"] = await limiter.aacquire(sleep=sleep)
            result["took"] = trio.current_time() - began
            result["expected"] = expected
            result["ticks"] = [t for t in ticks if began <= t <= began + result["took"]]
            nursery.cancel_scope.cancel()

    trio.run(main, clock=MockClock(autojump_threshold=0))
    assert result["waited"] == result["expected"] > 0.05
    assert result["took"] == pytest.approx(result["expected"], abs=1e-6)
    assert len(result["ticks"]) >= result["expected"] / 0.005 - 1


def test_a_cancelled_wait_gives_its_token_back():
    """A task cancelled while it waits in aacquire: the bucket holds what it held before."""
    limiter, _ = on_and_empty()
    before = limiter.tokens

    async def main():
        task = asyncio.ensure_future(limiter.aacquire())
        await asyncio.sleep(0)  # it reserved its token and is waiting
        assert limiter.tokens == before - 1
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert limiter.tokens == before


def test_a_sync_sleep_that_fails_gives_the_token_back_too():
    """acquire with an async sleep is refused (TypeError), and the token is not lost."""
    limiter, _ = on_and_empty()
    before = limiter.tokens
    with pytest.raises(TypeError, match="plain function"):
        limiter.acquire(sleep=asyncio.sleep)
    assert limiter.tokens == before


def test_the_lock_is_free_while_a_task_waits():
    """While aacquire waits, another thread can record and try_acquire at once: no lock is held across the await."""
    limiter, _ = on_and_empty()
    done = []

    def other_thread():
        limiter.record(False)
        limiter.try_acquire()
        done.append(True)

    async def main():
        gate = asyncio.Event()

        async def sleep(seconds):
            thread = threading.Thread(target=other_thread)
            thread.start()
            thread.join(timeout=5.0)
            gate.set()

        await limiter.aacquire(sleep=sleep)
        assert gate.is_set()

    asyncio.run(main())
    assert done == [True]


def test_a_clock_going_backwards_or_nan_or_inf_counts_as_no_time_passed():
    """Readings earlier than the last, NaN or infinite leave the state where a frozen clock leaves it."""
    steady, odd = Clock(10.0), Clock(10.0)
    frozen, weird = CubicRateLimiter(clock=steady), CubicRateLimiter(clock=odd)
    for value in (5.0, math.nan, math.inf, -math.inf, 2.0**1001, 10.0):
        odd.now = value
        for limiter in (frozen, weird):
            limiter.record(False)
            limiter.record(True)
            limiter.try_acquire()
        assert weird.rate == frozen.rate and weird.tokens == frozen.tokens


def test_an_astronomical_clock_never_raises_overflow():
    """2**400 s after a throttle the cubic overflows floats: taken as +inf, so the rate is the 2x cap, and nothing raises."""
    clock = Clock()
    limiter = CubicRateLimiter(clock=clock)
    for i in range(1, 41):
        clock.now = i / 20
        limiter.record(False)
    limiter.record(True)
    clock.now = 2.0**400
    limiter.record(False)  # closes a bucket of 2**400 s: measured ~ 0.2 x 20
    limiter.record(False)  # same bucket: measured unchanged, the cubic overflows
    assert 1.0 < limiter.rate < 10.0


def test_repr_says_whether_it_is_on_and_the_rate():
    """repr names the class, on or off, and the rate."""
    clock = Clock()
    limiter = CubicRateLimiter(clock=clock)
    assert repr(limiter) == "CubicRateLimiter() off, at 1.0 requests/s"
    limiter.record(True)
    assert repr(limiter) == "CubicRateLimiter() on, at 0.5 requests/s"


@pytest.mark.parametrize(
    "make, name",
    [
        (lambda: CubicRateLimiter(clock=5), "clock"),
        (lambda: CubicRateLimiter(clock=None), "clock"),
    ],
)
def test_bad_arguments_name_the_parameter(make, name):
    """A clock that is not callable is rejected at once."""
    rejects(make, TypeError, name)


def test_a_sleep_that_is_no_function_is_refused_naming_it_while_the_limiter_is_off():
    """acquire(sleep="x") was taken while the limiter was off and, once a throttle
    turned it on, was a bare TypeError ("'str' object is not callable"); an async
    sleep, an error saying to use aretrying."""
    limiter = CubicRateLimiter()
    rejects(lambda: limiter.acquire(sleep="x"), TypeError, "sleep", "'x'")
    rejects(lambda: asyncio.run(limiter.aacquire(sleep=5)), TypeError, "sleep", "5")
    # an async one, which the sync acquire never awaits; one that takes no seconds
    rejects(lambda: limiter.acquire(sleep=asyncio.sleep), TypeError, "sleep", "never awaited")
    rejects(lambda: limiter.acquire(sleep=lambda: None), TypeError, "sleep", "1 argument")
    limiter.record(True)
    rejects(lambda: limiter.acquire(sleep="x"), TypeError, "sleep", "'x'")
    slept = []
    limiter.acquire(sleep=slept.append)
    assert slept and limiter.tokens < 1


def test_importing_the_package_loads_neither_asyncio_nor_botocore_nor_trio():
    """The limiter, throttle and breaker import asyncio only when a task waits, and never botocore."""
    code = (
        "import sys; before = set(sys.modules); import backoff_iter; "
        "new = set(sys.modules) - before; "
        "print(sorted(m for m in new if m.split('.')[0] in ('asyncio', 'botocore', 'trio')))"
    )
    assert fresh_python(code) == "[]"
