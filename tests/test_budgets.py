"""TokenBucket is gRPC's A6 rule to the token; RetryBudget keeps retries to a ratio of calls."""

from __future__ import annotations

import asyncio
import contextlib
import math
import threading

import pytest
from checks import rejects
from hypothesis import given
from hypothesis import strategies as st

from backoff_iter import RetryBudget, TokenBucket, aretrying, retry, retrying
from backoff_iter.testing import no_sleep


def always_failing(counter):
    def call():
        counter.append(1)
        raise ConnectionError("down")

    return call


def attempts_of_one_failing_call(budget, retries=20):
    counter = []
    with no_sleep(), pytest.raises(ConnectionError):
        retry([0.0] * retries, budget=budget)(always_failing(counter))()
    return len(counter)


def test_a6_first_failing_call_gets_5_attempts_later_ones_1():
    """A 10 / 0.1 bucket: the first always-failing call makes 5 attempts, later calls 1 (4 tokens left)."""
    bucket = TokenBucket(max_tokens=10, token_ratio=0.1)
    assert attempts_of_one_failing_call(bucket) == 5
    assert bucket.tokens == 5.0
    assert attempts_of_one_failing_call(bucket) == 1
    assert bucket.tokens == 4.0


@pytest.mark.parametrize("successes, retried", [(20, False), (21, True)])
def test_a6_twenty_successes_are_not_enough_twenty_one_are(successes, retried):
    """From 4 tokens: 4 + 20 x 0.1 = 6, a failure leaves 5, not above 5; 21 successes leave 5.1."""
    bucket = TokenBucket(max_tokens=10, token_ratio=0.1)
    attempts_of_one_failing_call(bucket)
    attempts_of_one_failing_call(bucket)
    ok = retry([0.0], budget=bucket)(lambda: "ok")
    for _ in range(successes):
        ok()
    assert attempts_of_one_failing_call(bucket, retries=1) == (2 if retried else 1)


def test_a6_counts_in_thousandths_so_no_float_drift():
    """A thousand successes of 0.1 add exactly 100 tokens' worth (float sums would drift)."""
    bucket = TokenBucket(max_tokens=1000, token_ratio=0.1)
    for _ in range(600):
        bucket.record_failure(False)
    for _ in range(1000):
        bucket.record_success(False)
    assert bucket.tokens == 500.0
    assert not bucket.try_retry(None)  # exactly half is not more than half
    total = 0.0
    for _ in range(1000):
        total += 0.1
    assert total != 100.0  # what a float count would have got


def test_a6_tokens_stay_between_0_and_max():
    """Failures stop at 0 tokens, successes at max_tokens."""
    bucket = TokenBucket(max_tokens=3, token_ratio=2)
    for _ in range(10):
        bucket.record_failure(True)
    assert bucket.tokens == 0.0
    for _ in range(10):
        bucket.record_success(True)
    assert bucket.tokens == 3.0


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@given(
    ratio=st.sampled_from([0.0, 0.1, 0.2, 1.0, 2.5]),
    reserve=st.sampled_from([0.0, 0.5, 2.0]),
    window=st.integers(min_value=1, max_value=12),
    events=st.lists(
        st.tuples(st.sampled_from(["call", "retry", "tick"]), st.floats(0.0, 3.0)), max_size=200
    ),
)
def test_retries_in_the_window_up_to_each_retry_are_at_most_ratio_times_calls_plus_reserve(
    ratio, reserve, window, events
):
    """Under a fake clock: at every retry, the window of whole seconds ending there holds at most ratio x calls + reserve retries."""
    clock = Clock()
    budget = RetryBudget(ratio=ratio, min_per_second=reserve, window=window, clock=clock)
    log = []  # (second, kind)
    for kind, step in events:
        if kind == "tick":
            clock.now += step
        elif kind == "call":
            budget.record_failure(True)
            log.append((int(clock.now), "call"))
        elif budget.try_retry(None):
            log.append((int(clock.now), "retry"))
    for end in {second for second, kind in log if kind == "retry"}:
        inside = [kind for second, kind in log if end - window < second <= end]
        assert inside.count("retry") <= ratio * inside.count("call") + reserve * window + 1e-9


def test_a_total_outage_costs_at_most_one_plus_ratio_times_the_load():
    """100 always-failing calls with ratio 0.2 and no reserve make at most 120 attempts."""
    budget = RetryBudget(ratio=0.2, min_per_second=0, window=10, clock=Clock())
    counter = []
    call = retry([0.0] * 3, budget=budget)(always_failing(counter))
    with no_sleep():
        for _ in range(100):
            with pytest.raises(ConnectionError):
                call()
    assert 100 < len(counter) <= 120


def test_the_reserve_lets_a_quiet_client_retry():
    """With no calls in the window, min_per_second x window retries are still allowed."""
    budget = RetryBudget(ratio=0.0, min_per_second=0.5, window=10, clock=Clock())
    assert [budget.try_retry(None) for _ in range(6)] == [True] * 5 + [False]


def test_calls_leave_the_window_as_time_passes():
    """Deposits older than the window no longer pay for retries."""
    clock = Clock()
    budget = RetryBudget(ratio=1.0, min_per_second=0, window=2, clock=clock)
    budget.record_success(True)
    clock.now += 2.0
    assert not budget.try_retry(None)
    budget.record_success(True)
    clock.now += 1.0
    assert budget.try_retry(None)


def test_many_threads_sharing_a_bucket_never_pass_it():
    """8 threads of failing calls against one TokenBucket: retries stop at half the tokens."""
    bucket = TokenBucket(max_tokens=100, token_ratio=0.1)
    counter = []
    call = retry([0.0] * 50, budget=bucket)(always_failing(counter))

    def run():
        for _ in range(20):
            with contextlib.suppress(ConnectionError):
                call()

    with no_sleep():
        threads = [threading.Thread(target=run) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    # 160 calls; at most the 49 retries that keep the bucket above 50 tokens (a
    # thread's failure landing between another's failure and its check can only
    # refuse a retry, never grant one more).
    assert 160 < len(counter) <= 160 + 49
    assert bucket.tokens == 0.0


def test_many_tasks_sharing_a_retry_budget_never_pass_it():
    """50 asyncio tasks, all failing: retries <= ratio x calls + reserve."""
    budget = RetryBudget(ratio=0.2, min_per_second=1.0, window=10, clock=Clock())
    counter = []

    async def call():
        async for attempt in aretrying([0.0] * 5, budget=budget, sleep=asyncio.sleep):
            async with attempt:
                counter.append(1)
                await asyncio.sleep(0)
                raise ConnectionError

    async def main():
        results = await asyncio.gather(*(call() for _ in range(50)), return_exceptions=True)
        assert all(isinstance(r, ConnectionError) for r in results)

    asyncio.run(main())
    assert 50 < len(counter) <= 50 + 0.2 * 50 + 1.0 * 10


def test_a_refused_retry_reraises_the_failure_itself():
    """The budget saying no is exactly like the delays running out."""
    bucket = TokenBucket(max_tokens=1, token_ratio=0.1)
    error = ConnectionError("the one")
    with pytest.raises(ConnectionError) as raised:
        for attempt in retrying([0.0, 0.0], budget=bucket, sleep=lambda s: None):
            with attempt:
                raise error
    assert raised.value is error


@pytest.mark.parametrize(
    "make, name",
    [
        (lambda: TokenBucket(max_tokens=0), "max_tokens"),
        (lambda: TokenBucket(max_tokens=1001), "max_tokens"),
        (lambda: TokenBucket(max_tokens=math.nan), "max_tokens"),
        (lambda: TokenBucket(token_ratio=0), "token_ratio"),
        (lambda: TokenBucket(token_ratio="0.1"), "token_ratio"),
        (lambda: RetryBudget(ratio=-0.1), "ratio"),
        (lambda: RetryBudget(ratio=1001), "ratio"),
        (lambda: RetryBudget(min_per_second=-1), "min_per_second"),
        (lambda: RetryBudget(window=0.5), "window"),
        (lambda: RetryBudget(window=61), "window"),
        (lambda: RetryBudget(clock=5), "clock"),
        (lambda: retry([1.0], budget=object()), "budget"),
        (lambda: retrying([1.0], budget="bucket"), "budget"),
    ],
)
def test_bad_arguments_name_the_parameter(make, name):
    """Out-of-range budget arguments and non-budgets are rejected at once."""
    rejects(make, (TypeError, ValueError), name)
