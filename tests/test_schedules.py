"""per_failure: the delay after a failure comes from its kind's schedule, the
schedules moving in step; jittered once per retry, it is the AWS SDKs' backoff."""

from __future__ import annotations

import random
from random import Random

import pytest
from checks import Draws, rejects
from test_botocore import RETRY_BEHAVIOR_2_1
from test_drivers import RUNNERS, FakeTime, Operation, each_driver

from backoff_iter import exponential, per_failure, retrying
from backoff_iter.interop import tenacity_wait
from backoff_iter.parts import Part


class Throttle(Exception):
    """A failure the tests' throttled= predicate names."""


def is_throttle(outcome):
    return isinstance(outcome, Throttle)


@each_driver
def test_the_nth_retry_sleeps_the_nth_delay_of_its_failures_schedule(run):
    """throttle, other, timeout, other: each retry takes its kind's delay at its own position."""
    schedules = per_failure(
        {TimeoutError: [10.0, 20.0, 30.0, 40.0]},
        throttle=[1.0, 2.0, 3.0, 4.0],
        default=[0.1, 0.2, 0.3, 0.4],
    )
    time = FakeTime()
    failures = [Throttle(), OSError(), TimeoutError(), OSError()]
    run(schedules, Operation(failures), time, on=Exception, throttled=is_throttle)
    assert time.slept == [1.0, 0.2, 30.0, 0.4]


def test_a_schedule_may_be_any_sequence_and_the_kinds_a_dict_made_beforehand():
    """A range is a reusable schedule as a list is (its type says Sequence), and
    a dict built before the call serves as the kinds."""
    kinds = {TimeoutError: range(10, 40, 10)}
    schedules = per_failure(kinds, throttle=range(1, 5), default=(0.1, 0.2, 0.3))
    for _ in range(2):  # reusable: each call starts afresh
        time = FakeTime()
        failures = [Throttle(), TimeoutError(), OSError()]
        RUNNERS[0](schedules, Operation(failures), time, on=Exception, throttled=is_throttle)
        assert time.slept == [1, 20, 0.3]


def test_the_first_kind_that_matches_chooses_and_a_throttle_comes_first():
    """Kinds are asked in the mapping's order, after the throttle schedule; predicates name kinds too."""
    schedules = per_failure(
        {
            ConnectionResetError: [1.0] * 3,
            OSError: [2.0] * 3,
            lambda e: "late" in str(e): [3.0] * 3,
        },
        throttle=[9.0] * 3,
        default=[0.5] * 3,
    )
    in_step = schedules()
    assert in_step.next_for(ConnectionResetError(), "failure") == 1.0
    assert in_step.next_for(OSError(), "failure") == 2.0
    assert in_step.next_for(ConnectionResetError(), "throttle") == 9.0
    in_step = schedules()
    assert in_step.next_for(KeyError("late"), "failure") == 3.0
    assert in_step.next_for(KeyError("x"), "failure") == 0.5


@each_driver
def test_a_predicate_kind_is_asked_of_a_retried_result_none_included(run):
    """A predicate of the outcome names results on_result retried as well (it was never
    asked: every result took the default schedule); a class never names a result, and
    delays asked by number are the default kind's."""
    asked = []

    def empty(outcome):
        asked.append(outcome)
        return outcome is None or outcome == ""

    schedules = per_failure({OSError: [7.0] * 4, empty: [5.0] * 4}, default=[0.1] * 4)
    time = FakeTime()
    outcomes = [None, "busy", OSError(), "", "ok"]
    result = run(schedules, Operation(outcomes), time, on=OSError, on_result=lambda r: r != "ok")
    assert result == "ok"
    assert time.slept == [5.0, 0.1, 7.0, 5.0]
    assert asked == [None, "busy", ""]
    assert list(schedules) == [0.1] * 4  # asked by number: the default's, no predicate asked
    assert asked == [None, "busy", ""]


def test_when_the_chosen_schedule_runs_out_the_retries_end():
    """The default schedule has one delay: the second ordinary failure stands, though throttles had more."""
    schedules = per_failure(throttle=[1.0] * 5, default=[0.1])
    time, operation = FakeTime(), Operation([OSError(), Throttle(), OSError()])
    with pytest.raises(OSError):
        RUNNERS[0](schedules, operation, time, on=Exception, throttled=is_throttle)
    assert time.slept == [0.1, 1.0] and operation.calls == 3


def test_each_call_draws_from_fresh_schedules():
    """A module-level policy: every call starts every kind's schedule afresh."""
    policy = retrying(
        per_failure(default=lambda: exponential(1.0)), on=OSError, sleep=lambda s: None
    )
    slept = []
    for _ in range(2):
        for attempt in retrying(
            per_failure(default=lambda: exponential(1.0)), on=OSError, sleep=slept.append
        ):
            with attempt:
                if attempt.number < 3:
                    raise OSError
    assert slept == [1.0, 2.0, 1.0, 2.0] and policy.factory() is not policy.factory()


def aws_delays(kinds, attempts, base=0.05):
    """botocore's ExponentialBackoff.delay_amount for failures of *kinds* (True: a throttle)."""
    from botocore.retries.standard import ExponentialBackoff

    class Detector:
        def __init__(self):
            self.throttle = False

        def is_throttling_error_from_context(self, context):
            return self.throttle

    class Context:
        def __init__(self, number):
            self.attempt_number, self.http_response = number, None

    detector = Detector()
    if not RETRY_BEHAVIOR_2_1:  # before 1.44: base 1 s for every failure, no detector
        backoff = ExponentialBackoff(random=random.random)
    else:
        backoff = ExponentialBackoff(throttling_detector=detector, random=random.random)
    if base == 0.025:
        backoff._service_name = "dynamodb"
    delays = []
    for number, throttle in zip(range(1, attempts + 1), kinds):
        detector.throttle = throttle
        delays.append(backoff.delay_amount(Context(number)))
    return delays


@pytest.mark.parametrize("seed", range(200))
def test_per_failure_with_full_jitter_is_botocores_backoff_draw_for_draw(seed):
    """Seeded failure kinds over 12 retries: the same delays as botocore's ExponentialBackoff, bit for bit."""
    kinds = [Random(seed).random() < 0.3 for _ in range(12)]
    # botocore 1.44 (retry behavior 2.1): 0.05 s, DynamoDB 0.025 s; before: 1 s.
    for base in (0.05, 0.025) if RETRY_BEHAVIOR_2_1 else (1.0,):
        random.seed(seed)
        expected = aws_delays(kinds, 12, base)
        random.seed(seed)
        in_step = per_failure(
            throttle=lambda: exponential(1.0, cap=20),
            default=lambda base=base: exponential(base, cap=20),
            jitter="full",
        )()
        got = [
            in_step.next_for(None, "throttle" if throttle else "failure").draw()
            for throttle in kinds
        ]
        assert got == expected


@pytest.mark.parametrize("jitter", ["full", "equal", 0.25])
def test_a_jittered_delay_is_drawn_once_however_often_it_is_read(jitter):
    """A delay of per_failure(jitter=...) read twice (its draw, then as a float): the same
    number, and one draw of the random source - not a second delay."""
    draws = []
    source = Random(7)

    class Counted:
        def random(self):
            draws.append(1)
            return source.random()

    in_step = per_failure(default=lambda: exponential(1.0), jitter=jitter, rng=Counted())()
    delay = in_step.next_for(ConnectionError(), "failure")
    first = delay.draw()
    assert float(delay) == delay.draw() == first and len(draws) == 1
    assert 0.0 <= first <= 1.0


def test_a_scheduler_asking_by_number_gets_the_default_schedule():
    """tenacity's wait over per_failure: the default kind's delays, in order."""
    wait = tenacity_wait(per_failure(default=[0.25, 0.5]))

    class State:
        attempt_number = 1
        outcome = None

    state = State()
    assert wait(state) == 0.25
    state.attempt_number = 2
    assert wait(state) == 0.5


def test_bad_arguments_are_named():
    """A key that is no kind, a schedule that is one-shot, a jitter of another kind: each named."""
    rejects(lambda: per_failure({"x": [1.0]}, default=[1.0]), TypeError, "kinds")
    retrying([1.0], on=(), on_result=bool)  # on=() beside on_result: taken, not kept for kinds
    rejects(lambda: per_failure({(): [1.0]}, default=[1.0]), ValueError, "kinds", "matches no")
    rejects(lambda: per_failure(default=iter([1.0])), TypeError, "default", "iterator")
    rejects(lambda: per_failure(throttle="1", default=[1.0]), TypeError, "throttle")
    rejects(lambda: per_failure(default=[1.0], jitter="half"), ValueError, "jitter")
    rejects(lambda: per_failure(default=[1.0], jitter=2.0), ValueError, "jitter")
    rejects(lambda: per_failure(default=[1.0], rng=3), TypeError, "rng")
    for pairs in ([(TimeoutError, [5.0])], "TimeoutError", (TimeoutError,)):  # no mapping
        rejects(lambda p=pairs: per_failure(p, default=[1.0]), TypeError, "kinds", "mapping")


def test_a_schedule_function_returning_no_iterable_is_named_by_its_parameter():
    """A kind's, the throttle's or the default's function that returns no iterable: the
    error names kinds, throttle or default, as the parameter given (a kind's said delays)."""
    for name, schedules in (
        ("kinds", per_failure({TimeoutError: lambda: 5}, default=[1.0])),
        ("throttle", per_failure(throttle=lambda: 5, default=[1.0])),
        ("default", per_failure(default=lambda: 5)),
    ):
        rejects(lambda s=schedules: next(iter(s)), TypeError, name, "returned 5")


def test_the_jitter_is_drawn_only_once_the_budget_allowed_the_retry():
    """A quota that cannot pay refuses before the draw: no random number is spent, as botocore's order."""
    from backoff_iter import RetryQuota

    class Counting(Random):
        drawn = 0

        def random(self):
            self.drawn += 1
            return super().random()

    rng = Counting(1)
    quota = RetryQuota(capacity=20)
    schedules = per_failure(default=lambda: exponential(0.05, cap=20), jitter="full", rng=rng)
    with pytest.raises(OSError):
        RUNNERS[0](schedules, Operation([OSError()] * 3), FakeTime(), budget=quota)
    assert rng.drawn == 1  # the first retry paid 14 and drew; the second was refused, undrawn


@each_driver
def test_a_quota_pays_nothing_for_a_jittered_retry_the_deadline_or_an_endless_delay_forbids(run):
    """per_failure with jitter asks the budget before the draw, but not when no retry can
    follow whatever the draw: an attempt that ran past the deadline, or an infinite delay
    (10**400). The quota keeps its 100 (it paid 14 for a retry that never came)."""
    from backoff_iter import RetryQuota

    for delays, deadline, reason in (([0.1], 1.0, "deadline"), ([10**400], None, "exhausted")):
        time, quota, events = FakeTime(), RetryQuota(capacity=100), []
        schedules = per_failure(default=delays, jitter="full", rng=Random(1))
        with pytest.raises(OSError, match="slow"):
            run(
                schedules,
                Operation([OSError("slow")], time, duration=5.0),
                time,
                budget=quota,
                deadline=deadline,
                on=OSError,
                observe=events.append,
            )
        assert (quota.available, time.slept) == (100.0, [])
        assert [(event.kind, event.reason) for event in events] == [("give_up", reason)]


@each_driver
def test_a_quota_gets_back_what_it_paid_for_a_jittered_draw_too_long_to_sleep(run):
    """jitter=1.0 draws up to twice its delay: a delay of 0.9 * LONGEST (paid for, then
    drawn) may come out too long to sleep, which ends the call as an infinite delay does -
    the quota gets its 14 back (it kept them: 86 left for a retry that never came)."""
    from backoff_iter import RetryQuota
    from backoff_iter._checks import LONGEST

    time, quota, events = FakeTime(), RetryQuota(capacity=100), []
    schedules = per_failure(default=[LONGEST * 0.9], jitter=1.0, rng=Draws(0.9))
    with pytest.raises(OSError, match="slow"):
        run(schedules, Operation([OSError("slow")]), time, budget=quota, observe=events.append)
    assert (quota.available, time.slept) == (100.0, [])
    assert [(event.kind, event.reason) for event in events] == [("give_up", "exhausted")]


@each_driver
def test_a_quota_keeps_what_it_paid_for_a_retry_that_ran_before_an_infinite_delay(run):
    """A retry that ran stays paid for when the delay after it ends the call: 86 left of 100,
    whether the schedule is plain or per_failure's (the 14 must not come back as for a
    retry that never came)."""
    from backoff_iter import RetryQuota

    for schedules in ([1.0, 10**400], per_failure(default=[1.0, 10**400], jitter=1.0)):
        time, quota = FakeTime(), RetryQuota(capacity=100)
        with pytest.raises(OSError, match="slow"):
            run(schedules, Operation([OSError("slow")] * 2), time, budget=quota, on=OSError)
        assert (quota.available, len(time.slept)) == (86.0, 1)


@each_driver
def test_the_jitter_spreads_a_delay_too_long_to_sleep_as_the_jittered_adaptor_does(run):
    """jitter="full" of 1e10 s (beyond LONGEST, 4.6e9 s on Linux) is uniform(0, 1e10), as
    jittered([1e10]) is: a draw of 0.25 sleeps 2.5e9 s (the delay was made inf before the
    draw, and the call gave up at once); a draw too long to sleep ends the call."""
    from backoff_iter import jittered

    assert list(jittered([1e10], rng=Draws(0.25))) == [2.5e9]
    assert list(per_failure(default=[1e10], jitter="full", rng=Draws(0.25))) == [2.5e9]
    time = FakeTime()
    schedules = per_failure(default=[1e10, 1e10], jitter="full", rng=Draws(0.25, 0.5))
    with pytest.raises(OSError, match="slow"):
        run(schedules, Operation([OSError("slow")] * 2), time, deadline=1e11, on=OSError)
    assert time.slept == [2.5e9]


@each_driver
def test_with_attempt_timeouts_a_jittered_draw_that_leaves_no_time_asks_no_budget(run):
    """per_failure(jitter="full") with deadline=1 and attempt_timeout: the draw comes first
    there, and a draw (of up to 5 s) that would leave the next attempt no time ends the call
    with the quota untouched (asked first, it paid 14 for a retry that never came); a draw
    that fits is paid for and slept."""
    from backoff_iter import RetryQuota

    for ceiling, retried in ((5.0, False), (0.01, True)):
        time, quota, events = FakeTime(), RetryQuota(capacity=100), []
        schedules = per_failure(default=[ceiling], jitter="full", rng=Random(3))
        options = {"budget": quota, "deadline": 1.0, "attempt_timeout": 10.0, "on": OSError}
        operation = Operation([OSError("slow")], time, duration=0.5)
        if retried:
            assert run(schedules, operation, time, observe=events.append, **options) == "ok"
            assert quota.available == 100.0 and len(time.slept) == 1  # paid 14, back on success
            assert [event.kind for event in events] == ["retry", "success"]
        else:
            with pytest.raises(OSError, match="slow"):
                run(schedules, operation, time, observe=events.append, **options)
            assert (quota.available, time.slept) == (100.0, [])
            assert [(event.kind, event.reason) for event in events] == [("give_up", "deadline")]


# -- what mutmut's pass over the core found no test pinning (review-mutcore) --------


class Ledger(Part):
    """A part that takes 2.0 per retry (0: refuses), recording what it is asked and given back."""

    def __init__(self, take=2.0):
        self.take, self.asked, self.dropped = take, [], []

    def allow_retry(self, outcome, kind):
        self.asked.append((outcome, kind))
        return self.take

    def attempt_dropped(self, taken):
        self.dropped.append(taken)


class Counted:
    """A random source that counts its draws."""

    def __init__(self):
        self.source, self.draws = Random(7), 0

    def random(self):
        self.draws += 1
        return self.source.random()


def _jittered(rng):
    return per_failure(default=lambda: exponential(1.0), jitter="full", rng=rng)


def _timed(time, ends):
    """An operation failing each call, call n ending *ends[n - 1]* seconds into the call."""
    calls = []

    def operation():
        calls.append(1)
        time.now = 100.0 + ends[len(calls) - 1]
        raise ConnectionError(len(calls))

    return operation


@each_driver
def test_a_jittered_retry_with_no_time_left_asks_no_part_and_gives_nothing_back(run):
    """per_failure's jitter under a deadline: the second failure ends exactly at it, so
    the call gives up ("deadline") without asking the part, and the retry that ran is
    never given back."""
    time, part, events = FakeTime(), Ledger(), []
    with pytest.raises(ConnectionError):
        run(_jittered(Random(1)), _timed(time, [0.0, 10.0]), time, on=ConnectionError,
            deadline=10.0, parts=[part], observe=events.append)  # fmt: skip
    assert [outcome.args for outcome, kind in part.asked] == [(1,)]
    assert part.dropped == []
    assert [(e.kind, e.reason) for e in events][-1] == ("give_up", "deadline")


@each_driver
def test_a_jittered_draw_leaving_the_next_attempt_no_time_asks_no_part(run):
    """With attempt_timeout, the jitter is drawn before the parts are asked: a draw past
    what is left of the deadline gives up ("deadline") with the part never asked, and
    the retry that ran is never given back."""
    time, part, events = FakeTime(), Ledger(), []
    with pytest.raises(ConnectionError):
        run(_jittered(Random(1)), _timed(time, [0.0, 9.9999]), time, on=ConnectionError,
            deadline=10.0, attempt_timeout=5.0, parts=[part], observe=events.append)  # fmt: skip
    assert [outcome.args for outcome, kind in part.asked] == [(1,)]
    assert part.dropped == []
    assert [(e.kind, e.reason) for e in events][-1] == ("give_up", "deadline")


@each_driver
def test_a_part_refusing_a_jittered_retry_is_asked_of_its_kind_and_no_jitter_is_drawn(run):
    """The parts are asked before the jitter is drawn (the AWS SDKs' order): a part
    refusing a throttle is asked with it and its kind, the call gives up ("budget"),
    and the random source is never read - even under a deadline."""
    time, part, events, rng = FakeTime(), Ledger(take=0), [], Counted()
    with pytest.raises(Throttle) as raised:
        run(_jittered(rng), Operation([Throttle()]), time, on=Throttle, throttled=is_throttle,
            deadline=1000.0, parts=[part], observe=events.append)  # fmt: skip
    assert part.asked == [(raised.value, "throttle")]
    assert rng.draws == 0 and time.slept == []
    assert [(e.kind, e.reason) for e in events][-1] == ("give_up", "budget")


@each_driver
def test_a_failures_schedule_running_out_is_a_give_up_of_reason_exhausted(run):
    """per_failure's one delay spent, the second failure stands: a give-up "exhausted"."""
    time, events = FakeTime(), []
    with pytest.raises(ConnectionError):
        run(per_failure(default=[0.5]), Operation([ConnectionError()] * 2), time,
            on=ConnectionError, observe=events.append)  # fmt: skip
    assert [(e.kind, e.reason) for e in events] == [("retry", None), ("give_up", "exhausted")]
    assert time.slept == [0.5]
