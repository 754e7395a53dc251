"""TokenBucket is gRPC's A6 rule to the token; RetryBudget keeps retries to a ratio of calls."""

from __future__ import annotations

import asyncio
import contextlib
import math
import threading

import pytest
from checks import in_threads, rejects
from hypothesis import given
from hypothesis import strategies as st

from backoff_iter import RetryBudget, RetryQuota, TokenBucket, aretrying, retry, retrying
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


@pytest.mark.long_run
@given(
    ratio=st.sampled_from([0.0, 0.1, 0.2, 1.0, 2.5]),
    reserve=st.sampled_from([0.0, 0.5, 2.0]),
    window=st.sampled_from([1, 1.5, 2, 2.5, 3.7, 10, 12]),
    events=st.lists(
        st.tuples(st.sampled_from(["call", "retry", "tick"]), st.floats(0.0, 3.0)), max_size=200
    ),
)
def test_retries_in_the_window_up_to_each_retry_are_at_most_ratio_times_calls_plus_reserve(
    ratio, reserve, window, events
):
    """Under a fake clock: at every retry, the ceil(window) slots of window/ceil(window) s ending there hold at most ratio x calls + min_per_second x window retries."""
    clock = Clock()
    budget = RetryBudget(ratio=ratio, min_per_second=reserve, window=window, clock=clock)
    slots = math.ceil(window)
    width = window / slots
    log = []  # (slot, kind)
    for kind, step in events:
        if kind == "tick":
            clock.now += step
        elif kind == "call":
            budget.record_failure(True)
            log.append((math.floor(clock.now / width), "call"))
        elif budget.try_retry(None):
            log.append((math.floor(clock.now / width), "retry"))
    for end in {slot for slot, kind in log if kind == "retry"}:
        inside = [kind for slot, kind in log if end - slots < slot <= end]
        assert inside.count("retry") <= ratio * inside.count("call") + reserve * window + 1e-9


@pytest.mark.parametrize("window", [1.0, 1.5, 2.5, 10.0])
def test_the_reserve_allows_min_per_second_on_average_for_any_window(window):
    """Retrying every 10 ms for 60 s with no calls: about min_per_second a second, never reserve per second."""
    clock = Clock()
    budget = RetryBudget(ratio=0.0, min_per_second=10, window=window, clock=clock)
    retried = 0
    for _ in range(6000):
        clock.now += 0.01
        retried += budget.try_retry(None)
    # 10/s over 60 s, plus one reserve in the first window; window=1.5 once allowed 15/s (900).
    assert 600 <= retried <= 600 + 10 * window


def retries_per_call_of_one_call_a_second(budget, clock, delays, calls=60):
    """Each second one call to a dependency that is down, retried over *delays*
    (within the second) through *budget*: the retries each call made."""
    made = []

    def sleep(seconds):
        clock.now += seconds

    for second in range(calls):
        clock.now = 1000.0 + second
        attempts = []
        with pytest.raises(ConnectionError):
            retry(delays, budget=budget, sleep=sleep)(always_failing(attempts))()
        made.append(len(attempts) - 1)
    return made


def test_a_reserve_of_ten_a_second_pays_about_ten_retries_for_each_of_one_call_a_second():
    """docs/budgets.rst: with min_per_second=10 a process making one call a second retries every call about ten times in an outage (9 of 9, 10.2 on average of 20), the reserve being per second, not per window."""
    clock = Clock()
    budget = RetryBudget(min_per_second=10, clock=clock)
    assert retries_per_call_of_one_call_a_second(budget, clock, [0.09] * 9) == [9] * 60
    budget = RetryBudget(min_per_second=10, clock=clock)
    made = retries_per_call_of_one_call_a_second(budget, clock, [0.045] * 20)
    assert sum(made[10:]) / len(made[10:]) == pytest.approx(10.2, abs=0.05)


def test_the_reserve_goes_in_one_burst_and_comes_back_a_window_later():
    """Finagle's reserve: all min_per_second x window retries at once, then none until they leave the window."""
    clock = Clock()
    budget = RetryBudget(ratio=0.0, min_per_second=2, window=2.5, clock=clock)  # 3 slots of 5/6 s
    assert sum(budget.try_retry(None) for _ in range(10)) == 5
    width = 2.5 / 3
    clock.now = (math.floor(clock.now / width) + 2) * width + 0.001  # two slots later: still inside
    assert not budget.try_retry(None)
    clock.now += width  # the burst's slot has left the window
    assert sum(budget.try_retry(None) for _ in range(10)) == 5


class Readings:
    """A clock that returns the given readings, then repeats the last one."""

    def __init__(self, *readings):
        self.readings = list(readings)

    def __call__(self):
        return self.readings.pop(0) if len(self.readings) > 1 else self.readings[0]


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan, 3.0, 10**400], ids=str)
def test_a_clock_going_backwards_or_returning_inf_or_nan_counts_as_no_time_passing(bad):
    """A bad reading never raises, and neither forgets the window's deposits nor moves it on."""
    # 10.0: a call deposits 1 retry; the bad reading; 10.5: still the same window.
    clock = Readings(10.0, bad, 10.5)
    budget = RetryBudget(ratio=1.0, min_per_second=0, window=5, clock=clock)
    budget.record_success(True)
    assert budget.try_retry(None)  # at the bad reading: the deposit is still there
    assert not budget.try_retry(None)  # and was spent once


def test_a_clock_that_went_backwards_and_came_back_kept_the_window():
    """10 s, then 3 s (no time passed), then 10.5 s: the same window, the deposits still there."""
    clock = Readings(10.0, 10.0, 3.0, 10.5, 10.5)
    budget = RetryBudget(ratio=1.0, min_per_second=0, window=5, clock=clock)
    budget.record_success(True)
    budget.record_success(True)
    assert [budget.try_retry(None), budget.try_retry(None), budget.try_retry(None)] == [
        True,
        True,
        False,
    ]


@pytest.mark.parametrize("window", [1.0, 1.5, 60.0])
def test_readings_at_the_edge_of_the_float_range_never_raise(window):
    """1.7e308 seconds, divided into slots shorter than a second, overflows: no time passes."""
    clock = Readings(1.79e308)
    budget = RetryBudget(ratio=1.0, min_per_second=0, window=window, clock=clock)
    budget.record_success(True)
    assert budget.try_retry(None)
    assert not budget.try_retry(None)


def test_a_bad_clock_never_raises_out_of_a_driver():
    """A RetryBudget whose clock returns NaN, inf and earlier times under @retry: the call just fails."""
    clock = Readings(5.0, math.nan, math.inf, 1.0, -math.inf, 2.0)
    budget = RetryBudget(ratio=1.0, min_per_second=1, window=2, clock=clock)
    counter = []
    with no_sleep(), pytest.raises(ConnectionError):
        retry([0.0] * 8, budget=budget)(always_failing(counter))()
    assert 1 < len(counter) <= 4  # 1 call + its deposit + 2 of reserve


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


def test_a_negative_clock_then_inf_keeps_the_window():
    """A clock at -100 s (no rule says a clock starts above 0), then inf: no time passed, the
    deposit made at -100 s still pays for a retry."""
    clock = Readings(-100.0, math.inf)
    budget = RetryBudget(ratio=1.0, min_per_second=0, window=5, clock=clock)
    budget.record_failure(True)
    assert budget.try_retry(None)
    assert not budget.try_retry(None)


def test_only_a_call_that_succeeded_at_once_deposits():
    """A success after retries is no new call: it deposits nothing, so pays for no retry."""
    budget = RetryBudget(ratio=1.0, min_per_second=0, window=5, clock=Clock())
    budget.record_success(False)
    assert not budget.try_retry(None)
    budget.record_success(True)
    assert budget.try_retry(None)


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


def test_try_retry_counts_the_successes_not_yet_added():
    """A bucket at 4 of 10 tokens, then 21 successes: try_retry sees 6.1 tokens at once (issue 16, defect 5)."""
    bucket = TokenBucket(max_tokens=10, token_ratio=0.1)
    for _ in range(6):
        bucket.record_failure(True)
    for _ in range(21):
        bucket.record_success(True)
    assert bucket.try_retry(None)


@pytest.mark.parametrize("read_first", [False, True])
def test_reading_tokens_does_not_change_the_next_answer(read_first):
    """The same events give the same answer whether or not .tokens was read in between."""
    bucket = TokenBucket(max_tokens=10, token_ratio=0.1)
    for _ in range(6):
        bucket.record_failure(True)
    for _ in range(11):
        bucket.record_success(True)
    bucket.record_failure(False)  # 4 + 1.1 - 1 = 4.1, then 20 successes: 6.1
    for _ in range(20):
        bucket.record_success(True)
    if read_first:
        assert bucket.tokens == pytest.approx(6.1)
    assert bucket.try_retry(None)


@pytest.mark.parametrize(
    "max_tokens, token_ratio, milli",
    [
        (10, 0.1, (10_000, 100)),
        (0.001, 0.001, (1, 1)),
        (1000, 2.5, (1_000_000, 2500)),
        (10, 999.999, (10_000, 999_999)),
        (10, 1000, (10_000, 1_000_000)),
        (10, 1e300, (10_000, 1_000_000)),
    ],
)
def test_sizes_in_whole_thousandths_are_kept_exactly(max_tokens, token_ratio, milli):
    """Whole thousandths are taken as they are; a ratio of 1000 tokens or more fills any bucket."""
    bucket = TokenBucket(max_tokens=max_tokens, token_ratio=token_ratio)
    assert (bucket._max, bucket._ratio) == milli


def test_a_ratio_that_fills_the_bucket_fills_it_with_one_success():
    """token_ratio=1e300 neither overflows nor drifts: one success refills a drained bucket."""
    bucket = TokenBucket(max_tokens=10, token_ratio=1e300)
    for _ in range(10):
        bucket.record_failure(True)
    bucket.record_success(True)
    assert bucket.tokens == 10.0


@pytest.mark.parametrize("token_ratio", [1000.0005, 2500.0005])
def test_a_ratio_of_1000_or_more_need_not_be_whole_thousandths(token_ratio):
    """token_ratio=1000.0005 or 2500.0005 fills any bucket with one success: no thousandths
    to count, no error."""
    bucket = TokenBucket(max_tokens=10, token_ratio=token_ratio)
    for _ in range(10):
        bucket.record_failure(True)
    bucket.record_success(True)
    assert bucket.tokens == 10.0


def test_a_failure_leaves_what_the_bucket_holds_above_one_token():
    """2.001 tokens less two failures leave 0.001: only a failure beyond empty is clamped to 0."""
    bucket = TokenBucket(max_tokens=2.001, token_ratio=0.1)
    bucket.record_failure(True)
    bucket.record_failure(False)
    assert bucket.tokens == 0.001
    bucket.record_failure(False)
    assert bucket.tokens == 0.0


def test_the_defaults_are_the_documented_ones():
    """TokenBucket(): 10 tokens, a success adds 0.1; RetryBudget(): a reserve of 10 a second
    over 10 s, 100 retries with no call; both read back as given."""
    bucket = TokenBucket()
    assert (bucket.max_tokens, bucket.token_ratio, bucket.tokens) == (10.0, 0.1, 10.0)
    bucket.record_failure(True)
    bucket.record_success(True)
    assert bucket.tokens == 9.1
    budget = RetryBudget(clock=lambda: 0.0)
    assert (budget.ratio, budget.min_per_second, budget.window) == (0.2, 10.0, 10.0)
    assert sum(budget.try_retry(None) for _ in range(101)) == 100


def test_the_options_read_back_as_floats_and_repr_shows_them():
    """Each budget's attributes are its arguments as floats (None for a timeout_cost not
    given), and repr shows them."""
    bucket = TokenBucket(max_tokens=4, token_ratio=0.5)
    assert (bucket.max_tokens, bucket.token_ratio) == (4.0, 0.5)
    assert repr(bucket) == "TokenBucket(max_tokens=4.0, token_ratio=0.5) with 4.0 tokens"
    budget = RetryBudget(ratio=0.5, min_per_second=0, window=2.5)
    assert (budget.ratio, budget.min_per_second, budget.window) == (0.5, 0.0, 2.5)
    assert repr(budget) == "RetryBudget(ratio=0.5, min_per_second=0.0, window=2.5)"
    assert RetryQuota().timeout_cost is None
    quota = RetryQuota(retry_cost=5, throttle_cost=5, timeout_cost=10)
    assert quota.timeout_cost == 10.0
    assert repr(quota) == (
        "RetryQuota(capacity=500.0, retry_cost=5.0, throttle_cost=5.0, success_refund=1.0,"
        " timeout_cost=10.0) with 500.0 available"
    )


def test_the_smallest_sizes_are_taken():
    """A thousandth is the least capacity and cost, 0 the least refund, 1000 the most ratio."""
    quota = RetryQuota(
        capacity=0.001, retry_cost=0.001, throttle_cost=0.001, timeout_cost=0.001, success_refund=0
    )
    assert quota.try_retry(TimeoutError()) == 0.001 and quota.try_retry(None) == 0.0
    quota.record_success(True)  # a refund of 0
    assert quota.available == 0.0
    assert RetryBudget(ratio=1000).ratio == 1000


def test_a_budget_starts_with_nothing_deposited():
    """ratio=0.999, no reserve: one call's deposit is short of a retry by a thousandth."""
    budget = RetryBudget(ratio=0.999, min_per_second=0, clock=lambda: 0.0)
    budget.record_failure(True)
    assert not budget.try_retry(None)
    budget.record_failure(True)
    assert budget.try_retry(None)


def test_retry_quota_takes_botocores_costs_a_retry_14_a_throttle_5():
    """botocore 1.44's standard mode: a retry costs 14, a throttling retry 5, a timeout no more than any retry."""
    quota = RetryQuota()
    assert quota.try_retry(ConnectionError()) == 14.0
    assert quota.try_retry("a retried result") == 14.0
    assert quota.try_retry(TimeoutError()) == 14.0
    assert quota.try_retry(ConnectionError(), throttled=True) == 5.0
    assert quota.available == 500 - 14 * 3 - 5


def test_retry_quota_with_a_timeout_cost_charges_every_librarys_timeouts():
    """botocore before 1.44 (retry 5, timeout 10): socket, asyncio, httpx, requests, urllib3, botocore timeouts cost 10."""
    import socket

    import botocore.exceptions
    import httpx
    import requests
    import urllib3.exceptions

    quota = RetryQuota(retry_cost=5, throttle_cost=5, timeout_cost=10)
    timeouts = [
        TimeoutError(),
        socket.timeout(),
        asyncio.TimeoutError(),
        httpx.ReadTimeout("slow"),
        requests.ReadTimeout(),
        requests.ConnectTimeout(),
        urllib3.exceptions.ReadTimeoutError(None, "/", "slow"),
        botocore.exceptions.ReadTimeoutError(endpoint_url="http://127.0.0.1"),
        botocore.exceptions.ConnectTimeoutError(endpoint_url="http://127.0.0.1"),
    ]
    assert [quota.try_retry(error) for error in timeouts] == [10.0] * len(timeouts)
    assert quota.try_retry(ConnectionError()) == 5.0
    assert quota.try_retry(TimeoutError(), throttled=True) == 5.0  # a throttle first, as botocore


def test_retry_quota_refuses_what_it_cannot_pay_and_takes_nothing():
    """At 3 left: a retry (14) is refused and takes nothing; at 8, a throttle (5) still goes."""
    quota = RetryQuota(capacity=17)
    assert quota.try_retry(OSError()) == 14.0
    assert quota.try_retry(OSError()) == 0.0
    assert quota.available == 3.0
    assert quota.try_retry(OSError(), throttled=True) == 0.0
    quota.record_success(False, 5.0)
    assert quota.try_retry(OSError(), throttled=True) == 5.0
    assert quota.available == 3.0


def test_retry_quota_pays_with_exactly_enough_left():
    """19 pays a retry (14) and then a throttle (5), leaving 0."""
    quota = RetryQuota(capacity=19)
    assert (quota.try_retry(OSError()), quota.try_retry(OSError(), throttled=True)) == (14.0, 5.0)
    assert quota.available == 0.0


def test_retry_quota_pays_with_refunds_not_yet_added():
    """Drained, then 14 clean calls: the next retry is paid from their refunds at once."""
    quota = RetryQuota(capacity=14)
    quota.try_retry(OSError())
    for _ in range(14):
        quota.record_success(True)
    assert quota.try_retry(OSError()) == 14.0


def test_retry_quota_gives_back_what_a_recovered_calls_last_retry_took_and_a_refund_per_clean_call():
    """A call that recovered after a retry and a throttle gives back 5, its last retry's; a clean call 1."""
    quota = RetryQuota(capacity=100)
    quota.try_retry(OSError())
    last = quota.try_retry(OSError(), throttled=True)
    assert quota.available == 81.0
    quota.record_success(False, last)
    assert quota.available == 86.0
    for _ in range(3):
        quota.record_success(True)
    assert quota.available == 89.0
    quota.record_success(False)  # a recovered call whose driver reported nothing spent
    quota.record_failure(True)  # a failure costs nothing by itself, and gives nothing back
    assert quota.available == 89.0


def test_retry_quota_gives_back_a_spent_below_one_unit():
    """A retry costing 0.5 that the call recovered from: its 0.5 comes back."""
    quota = RetryQuota(capacity=10, retry_cost=0.5)
    taken = quota.try_retry(OSError())
    assert (taken, quota.available) == (0.5, 9.5)
    quota.record_success(False, taken)
    assert quota.available == 10.0


def test_retry_quota_give_back_returns_what_was_taken_and_no_refund():
    """give_back(14) after two retries of 14 from 30: 16, not a clean call's refund beside it."""
    quota = RetryQuota(capacity=30)
    taken = [quota.try_retry(OSError()), quota.try_retry(OSError())]
    assert taken == [14.0, 14.0] and quota.available == 2.0
    quota.give_back(taken[1])
    assert quota.available == 16.0


def test_a_hedged_call_whose_first_attempt_won_gets_its_hedges_back():
    """record_success(True, spent): the clean call's refund and what its unneeded hedges took."""
    quota = RetryQuota(capacity=500)
    taken = quota.try_retry(None, throttled=True)  # a hedge sent
    quota.record_success(True, taken)  # ... and not needed: the first attempt won
    assert quota.available == 500.0


@pytest.mark.parametrize("spent", [1e6, math.inf, 1e308, 10**30, 10**400])
def test_retry_quota_never_goes_above_capacity(spent):
    """Refunds stop at capacity, however much a call claims it spent (an int beyond
    floats too: no OverflowError), and so does what is given back."""
    quota = RetryQuota(capacity=50)
    quota.try_retry(OSError())
    for _ in range(14):
        quota.record_success(True)
    assert quota.available == 50.0
    quota.try_retry(OSError())
    quota.record_success(False, spent)
    assert quota.available == 50.0
    quota.try_retry(OSError())
    quota.give_back(spent)
    assert quota.available == 50.0


@pytest.mark.parametrize("spent", [math.nan, -5.0, 0.0, -math.inf])
def test_retry_quota_ignores_a_spent_that_is_no_amount(spent):
    """NaN, negative or zero spent gives nothing back and raises nothing."""
    quota = RetryQuota(capacity=50)
    quota.try_retry(OSError())
    quota.record_success(False, spent)
    assert quota.available == 36.0


def test_retry_quota_under_a_driver_gives_back_what_the_last_retry_took():
    """Under @retry: a call that recovered after two retries, the second a throttle, gets 5 back; a clean call 1."""
    quota = RetryQuota(capacity=60)
    assert quota.try_retry(None) and quota.try_retry(None)  # 32 of 60 left: room for refunds
    reported = []
    record_success = quota.record_success

    class Spy(RetryQuota):  # what the driver tells the quota
        def record_success(self, first_attempt, spent=0.0):
            reported.append((first_attempt, spent))
            record_success(first_attempt, spent)

    spy = Spy(capacity=60)
    spy.try_retry = quota.try_retry
    outcomes = iter([OSError("a"), OSError("throttled"), "ok", "ok"])

    def flaky():
        outcome = next(outcomes)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    call = retry([0.0] * 3, budget=spy, throttled=lambda e: "throttled" in str(e))(flaky)
    with no_sleep():
        assert call() == "ok"
        assert quota.available == 32.0 - 14 - 5 + 5  # its last retry, a throttle's 5, back
        assert call() == "ok"
    assert reported == [(False, 5.0), (True, 0.0)]
    assert quota.available == 19.0  # a clean call: success_refund


def test_a_budget_of_the_old_protocol_is_refused_when_the_policy_is_made():
    """record_success(first_attempt) without spent: a clear TypeError naming budget, at once."""

    class Old:
        def record_success(self, first_attempt):
            pass

        def record_failure(self, first_attempt):
            pass

        def try_retry(self, outcome):
            return True

    rejects(lambda: retry([0.0], budget=Old()), TypeError, "budget", "spent")


def test_a_budget_whose_own_record_success_takes_no_spent_is_refused_whatever_its_class_passed():
    """A record_success(first_attempt) set on an instance is refused when the
    policy is made, even after another instance of its class passed: the
    check read once per class skipped it, and its call raised TypeError."""

    class Bucket(TokenBucket):
        pass

    retrying(budget=Bucket())  # the class's record_success takes spent
    old = Bucket()
    old.record_success = lambda first_attempt: None
    rejects(lambda: retrying(budget=old), TypeError, "budget", "spent")
    rejects(lambda: retry([0.0], budget=old), TypeError, "budget", "spent")

    class Old(TokenBucket):  # the old protocol, but for an instance given its own
        def record_success(self, first_attempt):
            pass

    new = Old()
    new.record_success = lambda first_attempt, spent=0.0: None
    retrying(budget=new)  # its own takes spent: says nothing of its class's
    rejects(lambda: retrying(budget=Old()), TypeError, "budget", "spent")


def test_retry_quota_is_exact_under_many_threads():
    """8 threads x 2000 retries and refunds on one quota: the final amount is exact."""
    quota = RetryQuota(capacity=1_000_000, retry_cost=3, success_refund=2, timeout_cost=7)
    taken = [0.0] * 8

    def run(index):
        for i in range(2000):
            taken[index] += quota.try_retry(TimeoutError() if i % 3 == 0 else OSError())
            if i % 2 == 0:
                quota.record_success(True)

    in_threads(run, numbered=True)
    timeouts = len(range(0, 2000, 3))
    expected_cost = 8 * (timeouts * 7 + (2000 - timeouts) * 3)
    assert sum(taken) == expected_cost
    assert quota.available == 1_000_000 - expected_cost + 8 * 1000 * 2


def test_every_budget_takes_spent_and_answers_what_a_retry_took():
    """The grown protocol: record_success(first_attempt, spent); try_retry's truthy answer is a number."""
    for budget in (TokenBucket(), RetryBudget(clock=Clock()), RetryQuota()):
        budget.record_failure(True)
        took = budget.try_retry(None)
        assert took and float(took) > 0
        budget.record_success(False, float(took))
        budget.record_success(True)


@pytest.mark.parametrize(
    "make, name",
    [
        (lambda: TokenBucket(max_tokens=0), "max_tokens"),
        (lambda: TokenBucket(max_tokens="10"), "max_tokens"),
        (lambda: RetryBudget(ratio="0.2"), "ratio"),
        (lambda: RetryBudget(min_per_second="10"), "min_per_second"),
        (lambda: RetryBudget(window="10"), "window"),
        (lambda: RetryQuota(capacity=1e12 + 0.5), "capacity"),
        (lambda: TokenBucket(max_tokens=1001), "max_tokens"),
        (lambda: TokenBucket(max_tokens=math.nan), "max_tokens"),
        (lambda: TokenBucket(token_ratio=0), "token_ratio"),
        (lambda: TokenBucket(token_ratio="0.1"), "token_ratio"),
        (lambda: TokenBucket(token_ratio=1e-9), "token_ratio"),
        (lambda: TokenBucket(token_ratio=0.0015), "token_ratio"),
        (lambda: TokenBucket(token_ratio=math.inf), "token_ratio"),
        (lambda: TokenBucket(max_tokens=0.0004), "max_tokens"),
        (lambda: TokenBucket(max_tokens=10.0005), "max_tokens"),
        (lambda: RetryBudget(ratio=-0.1), "ratio"),
        (lambda: RetryBudget(ratio=1001), "ratio"),
        (lambda: RetryBudget(min_per_second=-1), "min_per_second"),
        (lambda: RetryBudget(window=0.5), "window"),
        (lambda: RetryBudget(window=61), "window"),
        (lambda: RetryBudget(clock=5), "clock"),
        (lambda: RetryBudget(min_per_second=math.inf), "min_per_second"),
        (lambda: RetryQuota(capacity=0), "capacity"),
        (lambda: RetryQuota(capacity=-1), "capacity"),
        (lambda: RetryQuota(capacity=math.inf), "capacity"),
        (lambda: RetryQuota(capacity=1e13), "capacity"),
        (lambda: RetryQuota(capacity=0.0001), "capacity"),
        (lambda: RetryQuota(capacity="500"), "capacity"),
        (lambda: RetryQuota(retry_cost=0), "retry_cost"),
        (lambda: RetryQuota(retry_cost=math.nan), "retry_cost"),
        (lambda: RetryQuota(retry_cost=501), "retry_cost"),
        (lambda: RetryQuota(timeout_cost=-10), "timeout_cost"),
        (lambda: RetryQuota(timeout_cost=True), "timeout_cost"),
        (lambda: RetryQuota(throttle_cost=0), "throttle_cost"),
        (lambda: RetryQuota(throttle_cost=600), "throttle_cost"),
        (lambda: RetryQuota(success_refund=-1), "success_refund"),
        (lambda: RetryQuota(success_refund=0.0005), "success_refund"),
        (lambda: RetryQuota(capacity=20, success_refund=21), "success_refund"),
        (lambda: retry([1.0], budget=object()), "budget"),
        (lambda: retrying([1.0], budget="bucket"), "budget"),
    ],
)
def test_bad_arguments_name_the_parameter(make, name):
    """Out-of-range budget arguments and non-budgets are rejected at once."""
    rejects(make, (TypeError, ValueError), name)


@pytest.mark.parametrize("ratio", [0.0005, 0.0015, 0.2004])
def test_a_retry_budgets_ratio_between_thousandths_is_refused_not_rounded(ratio):
    """RetryBudget counts a call's deposit in thousandths of a retry: a ratio they cannot
    hold is an error naming it (0.0005 deposited nothing, 0.0015 as much as 0.002)."""
    rejects(lambda: RetryBudget(ratio=ratio), ValueError, "ratio", repr(ratio), "thousandths")
    assert RetryBudget(ratio=0.001)._deposit == 1 and RetryBudget(ratio=0.0)._deposit == 0


@pytest.mark.parametrize(
    "make, name, value",
    [
        (lambda: RetryQuota(capacity=1_000_000.0004), "capacity", "1000000.0004"),
        (lambda: RetryQuota(capacity=1e9, retry_cost=5_000_000.0004), "retry_cost", "5000000.0004"),
        (lambda: TokenBucket(token_ratio=0.2000000001), "token_ratio", "0.2000000001"),
    ],
)
def test_a_size_between_thousandths_is_refused_not_rounded_however_large(make, name, value):
    """Between two thousandths by a millionth of a unit, or by 0.4 of a thousandth in a
    million (a tolerance of 1e-9 x the size took any quota of 500,000 or more rounded):
    an error naming the parameter and the value."""
    rejects(make, ValueError, name, value, "thousandths")


def test_sizes_off_whole_thousandths_by_float_rounding_alone_are_taken():
    """Whole thousandths however reached - 0.1 * 3, a thousand 0.001s, ten thousand 0.1s
    (1.6e-13 off) - or the largest sizes are counted as the whole thousandths they are."""
    bucket = TokenBucket(max_tokens=0.1 * 3, token_ratio=sum([0.001] * 1000))
    assert (bucket._max, bucket._ratio) == (300, 1000)
    assert RetryQuota(capacity=sum([0.1] * 10_000))._capacity == 1_000_000
    quota = RetryQuota(capacity=1e12, retry_cost=999_999_999_999.999, success_refund=123_456.789)
    assert (quota._capacity, quota._retry, quota._refund) == (10**15, 10**15 - 1, 123_456_789)


def test_a_reserve_too_large_to_count_is_an_argument_error():
    """RetryBudget(min_per_second=1e307): an ArgumentValueError naming it, never an OverflowError."""
    rejects(lambda: RetryBudget(min_per_second=1e307), ValueError, "min_per_second", "1e+09")
    assert RetryBudget(min_per_second=1e9, window=60).min_per_second == 1e9


class CountingSlots(list):
    """RetryBudget's slots, counting each one read: the work a window's advance does."""

    reads = 0

    def __getitem__(self, index):
        CountingSlots.reads += 1
        if CountingSlots.reads > 1000:
            raise AssertionError("the advance reads far more slots than the window has")
        return super().__getitem__(index)


def test_a_clock_jumping_1e18_seconds_ahead_clears_the_window_in_one_pass():
    """Read at 0 s, then at 1e18 s: the advance forgets the 10 slots once (10 reads), instead
    of stepping through 1e18 slots, and the budget starts afresh with its reserve."""
    now = [0.0]
    budget = RetryBudget(ratio=1.0, min_per_second=0.0, window=10, clock=lambda: now[0])
    budget.record_success(True)  # one call deposited: one retry allowed
    budget._slots = CountingSlots(budget._slots)
    CountingSlots.reads = 0
    now[0] = 1e18
    assert budget.try_retry(None) is False  # the deposit left the window long ago
    assert CountingSlots.reads == 10


# -- Successes noted without the lock -----------------------------------------


def drained(kind, clock):
    """A budget of *kind* with nothing left to retry on, whose successes (calls) each add a thousandth of a retry."""
    if kind == "token_bucket":
        bucket = TokenBucket(max_tokens=1000, token_ratio=0.001)
        for _ in range(1000):
            bucket.record_failure(False)
        return bucket
    if kind == "retry_quota":
        quota = RetryQuota(capacity=1000, retry_cost=1, success_refund=0.001)
        while quota.try_retry(None):
            pass
        return quota
    return RetryBudget(ratio=0.001, min_per_second=0, window=10, clock=clock)


@pytest.mark.parametrize("kind", ["token_bucket", "retry_quota", "retry_budget"])
def test_a_long_run_of_successes_is_taken_in_as_it_goes_and_every_one_counts(kind):
    """A success (a retry budget's call) is noted without the lock and taken in under it
    by the next failure or decision; past _MOST_NOTED noted, by a success itself: the
    list stays short, and each one adds its thousandth of a retry."""
    from backoff_iter.budgets import _MOST_NOTED

    budget = drained(kind, lambda: 5.0)
    noted = budget._calls if kind == "retry_budget" else budget._successes
    longest = 0
    for _ in range(3 * _MOST_NOTED + 1500):  # 4,572: 4 retries' worth and some
        budget.record_success(True)
        longest = max(longest, len(noted))
    assert _MOST_NOTED // 2 < longest <= _MOST_NOTED
    if kind == "token_bucket":  # far below half: no retry, so read the tokens
        assert budget.tokens == 4.572
        return
    if kind == "retry_quota":
        assert budget.available == 4.572
    assert [bool(budget.try_retry(None)) for _ in range(5)] == [True] * 4 + [False]


def test_successes_taken_in_fill_a_bucket_or_a_quota_up_to_full_not_beyond():
    """Successes taken in by a decision fill the bucket up to full, not beyond: a failure
    after them counts from full; refunds taken in by a read fill the quota so."""
    bucket = TokenBucket(max_tokens=4, token_ratio=0.5)
    bucket.record_failure(True)
    bucket.record_failure(False)  # 2 tokens
    for _ in range(10):  # 5 tokens' worth
        bucket.record_success(True)
    assert bucket.try_retry(None)
    bucket.record_failure(False)
    assert bucket.tokens == 3.0
    quota = RetryQuota(capacity=30, retry_cost=5)
    assert quota.try_retry(None) == 5.0  # 25 left
    for _ in range(10):  # 10 refunds' worth
        quota.record_success(True)
    assert quota.available == 30.0


def test_calls_noted_in_a_slot_are_deposited_there_when_a_retry_moves_the_window():
    """Calls noted without the lock in the newest slot (the first deposits, the next two
    are noted) count when a retry moves the window: three calls, three retries at ratio 1
    (the noted two were left out, one retry allowed)."""
    now = [0.0]
    budget = RetryBudget(ratio=1.0, min_per_second=0, window=10, clock=lambda: now[0])
    budget.record_failure(True)
    now[0] = 0.5
    budget.record_failure(True)
    budget.record_failure(True)
    now[0] = 1.5  # a slot later: the retry moves the window
    assert [budget.try_retry(None) for _ in range(4)] == [True, True, True, False]


@pytest.mark.parametrize("retry_in_slot_0", [False, True])
def test_calls_noted_in_a_slot_leave_the_window_with_it(retry_in_slot_0):
    """Three calls in slot 0 (the first deposits, two are noted), taken in by a retry within
    slot 0 or by the call that moves the window to slot 1: a window later all three leave
    with slot 0, and what is left is slot 1's alone (a call and its retry: nothing)."""
    now = [0.0]
    budget = RetryBudget(ratio=1.0, min_per_second=0, window=10, clock=lambda: now[0])
    for _ in range(3):
        budget.record_failure(True)
    if retry_in_slot_0:
        assert budget.try_retry(None)
    now[0] = 1.5
    budget.record_failure(True)
    assert budget.try_retry(None)
    now[0] = 10.5  # slot 0 has left the window; slot 1 has not
    assert not budget.try_retry(None)
    budget.record_failure(True)
    assert [budget.try_retry(None), budget.try_retry(None)] == [True, False]


def test_more_calls_in_a_slot_than_are_noted_leave_the_window_all_together():
    """1,100 calls in one slot (past the 1,024 noted without the lock, one takes them in):
    when the slot leaves the window, all 1,100 leave with it."""
    now = [0.5]
    budget = RetryBudget(ratio=1.0, min_per_second=0, window=2, clock=lambda: now[0])
    for _ in range(1100):
        budget.record_success(True)
    now[0] = 2.5
    assert not budget.try_retry(None)


def test_a_retry_at_a_slots_very_end_is_charged_to_the_next_slot():
    """A retry at the first reading past the newest slot (1.0 for one-second slots) is the
    next slot's: when the deposit's slot leaves the window its withdrawal stays, and a new
    call's deposit only pays it back (charged to the old slot, it left with it)."""
    now = [0.0]
    budget = RetryBudget(ratio=1.0, min_per_second=0, window=10, clock=lambda: now[0])
    budget.record_failure(True)  # slot 0: one call
    now[0] = 1.0
    assert budget.try_retry(None)  # slot 1: its retry
    now[0] = 10.5  # slot 0 has left the window; slot 1 has not
    budget.record_failure(True)
    assert not budget.try_retry(None)
