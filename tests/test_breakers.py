"""CircuitBreaker is Polly v8's: opens at the ratio once the throughput is reached, one probe half open."""

from __future__ import annotations

import math
import pickle
import threading
from decimal import Decimal
from fractions import Fraction

import pytest
from checks import in_threads, rejects

from backoff_iter import BrokenCircuitError, CircuitBreaker, exponential


class Clock:
    def __init__(self, now=0.0):
        self.now = now

    def __call__(self):
        return self.now


def calls(breaker, outcomes):
    """Run one call per outcome (True: success) through check() and record()."""
    for success in outcomes:
        breaker.check()
        breaker.record(success)


def refused(breaker):
    """check() refuses: the BrokenCircuitError it raised."""
    with pytest.raises(BrokenCircuitError) as raised:
        breaker.check()
    return raised.value


def opened(clock=None, **options):
    """A breaker just opened: two failures in two calls, with a ratio of 0.5."""
    clock = clock or Clock()
    breaker = CircuitBreaker(failure_ratio=0.5, minimum_throughput=2, clock=clock, **options)
    calls(breaker, [False, False])
    assert breaker.state == "open"
    return breaker, clock


def test_it_opens_on_the_failure_that_reaches_both_the_throughput_and_the_ratio():
    """Polly's defaults: 90 successes and 9 failures stay closed; the 100th call, a failure, opens it (10 / 100 = 0.1)."""
    breaker = CircuitBreaker(clock=Clock())
    calls(breaker, [True] * 90 + [False] * 9)
    assert breaker.state == "closed"
    calls(breaker, [False])
    assert breaker.state == "open"


def test_below_the_minimum_throughput_even_all_failures_leave_it_closed():
    """99 failures of 99 calls: closed; the 100th failure opens it."""
    breaker = CircuitBreaker(clock=Clock())
    calls(breaker, [False] * 99)
    assert breaker.state == "closed"
    calls(breaker, [False])
    assert breaker.state == "open"


def test_below_the_failure_ratio_it_stays_closed():
    """91 successes and 9 failures (0.09), then 10 / 101 (0.099): closed; 11 / 102 (0.108): open."""
    breaker = CircuitBreaker(clock=Clock())
    calls(breaker, [True] * 91 + [False] * 9)
    assert breaker.state == "closed"
    calls(breaker, [False])
    assert breaker.state == "closed"
    calls(breaker, [False])
    assert breaker.state == "open"


def test_only_a_failure_can_open_it():
    """As in Polly, the ratio is checked on failures: a success completing the throughput does not open it."""
    breaker = CircuitBreaker(failure_ratio=0.5, minimum_throughput=4, clock=Clock())
    calls(breaker, [False, False, False, True])  # 4 calls, 0.75 failed: still closed
    assert breaker.state == "closed"
    calls(breaker, [False])
    assert breaker.state == "open"


def test_while_open_every_call_is_refused_until_the_break_ends():
    """Open for 5 s: checks raise BrokenCircuitError with the seconds left, and the state stays open."""
    breaker, clock = opened()
    for now, left in [(0.0, 5.0), (1.5, 3.5), (4.75, 0.25)]:
        clock.now = now
        assert refused(breaker).retry_after == left
        assert breaker.state == "open"


def test_after_the_break_one_probe_goes_and_the_others_are_refused():
    """At the break's end the first check is the probe (half open); the next ones are refused."""
    breaker, clock = opened()
    clock.now = 5.0
    breaker.check()
    assert breaker.state == "half_open"
    clock.now = 6.0
    error = refused(breaker)
    assert error.retry_after == 4.0
    assert (
        str(error)
        == "the circuit is half open, its probe still out: calls are refused for another 4 s"
    )


def test_of_many_threads_checking_as_the_break_ends_exactly_one_gets_through(switching_often):
    """32 threads check at once when the break is over: one probe, 31 refusals."""
    breaker, clock = opened()
    clock.now = 5.0
    admitted, barrier = [], threading.Barrier(32)

    def check():
        barrier.wait()
        try:
            breaker.check()
        except BrokenCircuitError:
            admitted.append(False)
        else:
            admitted.append(True)

    threads = [threading.Thread(target=check) for _ in range(32)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(admitted) == [False] * 31 + [True]


def test_a_successful_probe_closes_the_circuit_and_forgets_the_counts():
    """The probe succeeds: closed, and the failures that opened it no longer count."""
    breaker, clock = opened()
    clock.now = 5.0
    calls(breaker, [True])
    assert breaker.state == "closed"
    calls(breaker, [False])  # one failure in one call: below the throughput of 2
    assert breaker.state == "closed"
    calls(breaker, [False])
    assert breaker.state == "open"


def test_a_failed_probe_opens_it_again_for_the_next_break_duration_of_the_schedule():
    """break_duration=[1, 2, 4]: each failed probe opens it for the next, and the last repeats."""
    breaker, clock = opened(break_duration=[1, 2, 4])
    assert refused(breaker).retry_after == 1.0
    for duration in (2.0, 4.0, 4.0, 4.0):
        clock.now += refused(breaker).retry_after
        breaker.check()  # the probe
        breaker.record(False)
        assert breaker.state == "open"
        assert refused(breaker).retry_after == duration


def test_exponential_break_durations_come_from_the_librarys_own_strategies():
    """break_duration=lambda: exponential(5, cap=60): breaks of 5, 10, 20, 40, 60, 60 s."""
    breaker, clock = opened(break_duration=lambda: exponential(5, cap=60))
    seen = [refused(breaker).retry_after]
    for _ in range(5):
        clock.now += seen[-1]
        calls(breaker, [False])  # the probe fails
        seen.append(refused(breaker).retry_after)
    assert seen == [5.0, 10.0, 20.0, 40.0, 60.0, 60.0]


@pytest.mark.parametrize(
    "schedule, after_close",
    [
        (lambda: exponential(1), 1.0),  # a function: called again
        ([1, 2, 4], 1.0),  # a list: iterated afresh
        ((1, 2, 4), 1.0),
        (iter([1, 2, 4, 8]), 4.0),  # a one-shot iterator: goes on where it was
    ],
)
def test_the_schedule_restarts_when_the_circuit_closes(schedule, after_close):
    """Open 1 s, probe fails, open 2 s, probe succeeds: closed; the next opening is for the schedule's first duration again."""
    breaker, clock = opened(break_duration=schedule)
    clock.now += 1.0
    calls(breaker, [False])
    clock.now += refused(breaker).retry_after
    calls(breaker, [True])
    assert breaker.state == "closed"
    calls(breaker, [False, False])
    assert refused(breaker).retry_after == after_close


def test_a_probe_that_never_reports_lets_another_go_after_a_break_duration():
    """The probe's caller was cancelled: a break duration after it went, the next check is a new probe, again and again."""
    breaker, clock = opened(break_duration=[5, 7])
    clock.now = 5.0
    breaker.check()  # the probe; its outcome never comes
    for now in (10.0, 15.0):
        clock.now = now - 0.001
        assert refused(breaker).retry_after == pytest.approx(0.001)
        clock.now = now
        breaker.check()  # another probe, whose outcome never comes either
        assert breaker.state == "half_open"
    breaker.record(False)
    assert refused(breaker).retry_after == 7.0  # the next duration of the schedule


def test_a_call_let_go_while_closed_and_dropped_later_frees_no_other_threads_probe():
    """A call the closed breaker let go waits in a later part; meanwhile, in other threads, the
    circuit opens and the break ends, and a call goes as the probe; then the part refuses the
    waiting call: the probe out is not its to free, so the next check is still refused."""
    from backoff_iter import retry
    from backoff_iter.parts import Part

    breaker, clock = opened()
    breaker.record(True)  # (a success while open changes nothing)
    clock.now = 5.0
    breaker.check()
    breaker.record(True)  # closed again

    def elsewhere(work):
        thread = threading.Thread(target=work)
        thread.start()
        thread.join()

    class Slow(Part):  # a rate limiter's wait, a part of the user's
        def before_attempt(self, call):
            elsewhere(lambda: calls(breaker, [False, False]))  # opened again
            clock.now = 10.0
            elsewhere(breaker.check)  # the probe of a call in another thread: out
            raise PermissionError("not now")

    with pytest.raises(PermissionError):
        retry([], on=ConnectionError, breaker=breaker, parts=[Slow()])(lambda: "ok")()
    assert refused(breaker).retry_after == 5.0  # the probe out still holds the others back


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_task_let_go_while_closed_and_dropped_later_frees_no_other_tasks_probe(backend):
    """The same in one event loop: a task let go while closed awaits a later part while another
    task opens the circuit and sends the probe; the part refuses it: the probe stays out - and
    a probe whose own task's part refuses it is freed for the next call."""
    import anyio

    from backoff_iter import retry
    from backoff_iter.parts import Part

    clock = Clock()
    breaker = CircuitBreaker(failure_ratio=0.5, minimum_throughput=2, clock=clock)
    seen = []

    async def main():
        arrived, gate = anyio.Event(), anyio.Event()

        class Waits(Part):
            async def abefore_attempt(self, call):
                arrived.set()
                await gate.wait()
                raise PermissionError("not now")

        fetch = retry([], on=ConnectionError, breaker=breaker, parts=[Waits()])(_answer)

        async def waiting():
            with pytest.raises(PermissionError):
                await fetch()
            seen.append(refused(breaker).retry_after)

        async with anyio.create_task_group() as group:
            group.start_soon(waiting)
            await arrived.wait()  # let go while closed, it waits at the gate (trio runs
            # the tasks ready in an order of its own: one checkpoint may not be enough)
            calls(breaker, [False, False])
            clock.now = 5.0
            breaker.check()  # this task's probe: out
            gate.set()
        with pytest.raises(BrokenCircuitError):
            await fetch()  # refused by the breaker: the probe is still out
        clock.now = 10.0
        with pytest.raises(PermissionError):
            await fetch()  # the probe lapsed: this call's own probe, refused by the part

    anyio.run(main, backend=backend)
    assert seen == [5.0]
    breaker.check()  # the probe the part refused was freed: this call goes as the next
    assert breaker.state == "half_open"


async def _answer():
    return "ok"


def test_the_first_outcome_recorded_while_half_open_decides():
    """As in Polly, any success recorded while half open closes it (a call let go before it opened, say)."""
    breaker, clock = opened()
    clock.now = 5.0
    breaker.check()
    breaker.record(True)
    assert breaker.state == "closed"


def test_outcomes_recorded_while_open_change_nothing():
    """Late successes and failures of calls let go before it opened neither close it nor extend the break."""
    breaker, clock = opened()
    clock.now = 1.0
    for success in (True, False, True, False):
        breaker.record(success)
    assert breaker.state == "open"
    assert refused(breaker).retry_after == 4.0


def test_failures_older_than_the_sampling_duration_no_longer_count():
    """30 s in 10 buckets of 3 s: 99 failures at t = 0 count at 29.999 (the 100th opens) but not at 30."""
    for now, state in [(29.999, "open"), (30.0, "closed")]:
        clock = Clock(0.0)
        breaker = CircuitBreaker(clock=clock)
        calls(breaker, [False] * 99)
        clock.now = now
        calls(breaker, [False])
        assert breaker.state == state


def test_failures_leave_the_sampling_duration_bucket_by_bucket():
    """50 failures at t = 0 and 49 at t = 29.999: the 100th at t = 30 finds only 49 + 1 (the first bucket left): closed."""
    clock = Clock(0.0)
    breaker = CircuitBreaker(clock=clock)
    calls(breaker, [False] * 50)
    clock.now = 29.999
    calls(breaker, [False] * 49)
    clock.now = 30.0
    calls(breaker, [False])
    assert breaker.state == "closed"
    calls(breaker, [False] * 50)  # 100 failures within the window again
    assert breaker.state == "open"


@pytest.mark.parametrize("now, state", [(32.999, "open"), (33.0, "closed")])
def test_the_sampling_duration_is_counted_in_buckets_of_a_tenth(now, state):
    """30 s in buckets of 3 s: failures at t = 5 count until the bucket [3, 6) leaves, at t = 33."""
    clock = Clock(0.0)
    breaker = CircuitBreaker(clock=clock)
    calls(breaker, [True])  # the window's buckets start at t = 0; this success leaves at 30
    clock.now = 5.0
    calls(breaker, [False] * 50)
    clock.now = now
    calls(breaker, [False] * 50)  # the 100th call counted, if the 50 at t = 5 still count
    assert breaker.state == state


def test_a_zero_break_lets_every_check_through_as_a_probe():
    """break_duration=0: half open at once, and no probe holds the others back."""
    breaker, _ = opened(break_duration=0)
    breaker.check()
    breaker.check()
    assert breaker.state == "half_open"


def test_bad_values_in_the_schedule_are_skipped_and_never_crash_a_call():
    """A negative, NaN or non-number duration later in the schedule: the last duration repeats."""
    breaker, clock = opened(break_duration=[3, -1, math.nan, "soon", None, 6])
    durations = [refused(breaker).retry_after]
    for _ in range(5):
        clock.now += durations[-1]
        calls(breaker, [False])
        durations.append(refused(breaker).retry_after)
    assert durations == [3.0, 3.0, 3.0, 3.0, 3.0, 6.0]


def test_a_schedule_that_raises_has_run_out_and_never_crashes_a_call():
    """A generator breaking after two durations, then a function that raises when the
    circuit closes: record() raises nothing, and the last duration served repeats."""
    made = []

    def breaking():
        yield 2
        yield 3
        raise RuntimeError("the schedule broke")

    def schedule():
        made.append(len(made))
        if len(made) > 1:
            raise RuntimeError("the second schedule cannot be made")
        return breaking()

    breaker, clock = opened(break_duration=schedule)
    durations = [refused(breaker).retry_after]
    for _ in range(3):
        clock.now += durations[-1]
        calls(breaker, [False])  # the probe fails: the next break
        durations.append(refused(breaker).retry_after)
    assert durations == [2.0, 3.0, 3.0, 3.0]
    clock.now += 3.0
    calls(breaker, [True])  # closed: the function is called again and raises
    assert breaker.state == "closed" and made == [0, 1]
    calls(breaker, [False, False])
    assert refused(breaker).retry_after == 3.0


@pytest.mark.parametrize("endless", [math.inf, 1e300, 10**400])
def test_an_endless_break_keeps_the_circuit_open_for_good(endless):
    """inf, or longer than the platform can sleep, later in the schedule: open for good, retry_after inf, and it says so."""
    breaker, clock = opened(break_duration=[1, endless])
    clock.now = 1.0
    calls(breaker, [False])
    clock.now = 1e200
    error = refused(breaker)
    assert error.retry_after == math.inf
    assert str(error) == "the circuit is open: calls are refused for good"


@pytest.mark.parametrize(
    "endless",
    [math.inf, 1e300, [1e300], 10**400, [10**400], Fraction(10**400, 3)],
    ids=["inf", "1e300", "[1e300]", "10**400", "[10**400]", "Fraction(10**400, 3)"],
)
def test_an_endless_first_break_is_open_for_good_too(endless):
    """The same when the first break is that long, given as a number or first in a schedule,
    an integer or a fraction beyond floats included (it was refused as too large)."""
    breaker, clock = opened(break_duration=endless)
    clock.now = 1e200
    error = refused(breaker)
    assert error.retry_after == math.inf
    assert str(error) == "the circuit is open: calls are refused for good"


def test_real_numbers_of_any_kind_are_durations():
    """Fractions, Decimals and ints are seconds, as delays are."""
    for duration in (Fraction(5, 2), Decimal("2.5"), 2.5):
        breaker, _ = opened(break_duration=duration)
        assert refused(breaker).retry_after == 2.5
    breaker, _ = opened(break_duration=[Fraction(1, 4)])
    assert refused(breaker).retry_after == 0.25


def test_a_factory_that_stops_returning_an_iterable_keeps_the_last_duration():
    """A schedule function returning None after the first time: the last duration goes on, nothing raises."""
    made = []

    def schedule():
        made.append(1)
        return [2, 3] if len(made) == 1 else None

    breaker, clock = opened(break_duration=schedule)
    clock.now += 2.0
    calls(breaker, [False])
    clock.now += 3.0
    calls(breaker, [True])  # closes: the function is called again, and returns None
    calls(breaker, [False, False])
    assert refused(breaker).retry_after == 3.0


def test_a_success_leaves_the_window_as_a_failure_does():
    """A success at t = 0 has left the 30 s window by t = 35: a failure then is alone, a ratio
    of 1, and opens the circuit."""
    clock = Clock(0.0)
    breaker = CircuitBreaker(failure_ratio=0.6, minimum_throughput=1, clock=clock)
    calls(breaker, [True])
    clock.now = 35.0
    calls(breaker, [False])
    assert breaker.state == "open"


def test_every_success_counts_against_the_failures():
    """A thousand successes, then failures: a ratio of 0.5 opens at the thousandth, not before."""
    breaker = CircuitBreaker(failure_ratio=0.5, minimum_throughput=1, clock=Clock())
    calls(breaker, [True] * 1000)
    calls(breaker, [False] * 999)
    assert breaker.state == "closed"
    calls(breaker, [False])
    assert breaker.state == "open"


def test_many_threads_count_every_success(switching_often):
    """8 threads x 1000 successes, then failures at a ratio of 0.5: open at the 8000th."""
    breaker = CircuitBreaker(failure_ratio=0.5, minimum_throughput=1, clock=Clock())

    def succeed():
        for _ in range(1000):
            breaker.record(True)

    in_threads(succeed)
    for _ in range(7999):
        breaker.record(False)
    assert breaker.state == "closed"
    breaker.record(False)
    assert breaker.state == "open"


def test_many_threads_count_every_failure(switching_often):
    """8 threads x 1000 failures: a throughput of 8000 is reached exactly, 8001 never."""
    for minimum, state in [(8000, "open"), (8001, "closed")]:
        breaker = CircuitBreaker(
            failure_ratio=1.0, minimum_throughput=minimum, clock=Clock(), break_duration=60
        )

        def fail(breaker=breaker):
            for _ in range(1000):
                breaker.record(False)

        in_threads(fail)
        assert breaker.state == state


def test_a_clock_going_backwards_or_nan_or_inf_counts_as_no_time_passed():
    """Open at t = 100 for 5 s: readings of NaN, inf, 2**1001 or 0 neither end the break nor move retry_after."""
    clock = Clock(100.0)
    breaker, _ = opened(clock=clock)
    for value in (math.nan, math.inf, 2.0**1001, 0.0, -math.inf):
        clock.now = value
        assert refused(breaker).retry_after == 5.0
    clock.now = 105.0
    breaker.check()
    assert breaker.state == "half_open"


def test_broken_circuit_error_is_its_own_exception_with_retry_after():
    """Not an argument error nor an OSError; it says when calls may go again, carries .retry_after and pickles."""
    breaker, clock = opened()
    clock.now = 0.5
    error = refused(breaker)
    assert isinstance(error, Exception)
    assert not isinstance(error, (ValueError, TypeError, OSError))
    assert str(error) == "the circuit is open: calls are refused for another 4.5 s"
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is BrokenCircuitError
    assert again.retry_after == 4.5 and str(again) == str(error)


def test_broken_circuit_error_made_by_hand_says_open_and_a_half_open_one_pickles_as_such():
    """BrokenCircuitError(4.5) is an open circuit's refusal; a refusal while the probe is out
    says so, and says it again once unpickled (as a worker process re-raises it)."""
    assert (
        str(BrokenCircuitError(4.5)) == "the circuit is open: calls are refused for another 4.5 s"
    )
    breaker, clock = opened()
    clock.now = 5.0
    breaker.check()  # the probe goes
    error = refused(breaker)
    assert str(error) == (
        "the circuit is half open, its probe still out: calls are refused for another 5 s"
    )
    again = pickle.loads(pickle.dumps(error))
    assert str(again) == str(error) and again.retry_after == 5.0


def test_repr_shows_the_options_and_the_state():
    """repr names the options as given and the state now."""
    breaker, _ = opened()
    assert repr(breaker) == (
        "CircuitBreaker(failure_ratio=0.5, minimum_throughput=2, sampling_duration=30.0,"
        " break_duration=5.0) open"
    )


class NoIterator:
    """An iterable by its look (it has __iter__) whose __iter__ returns no iterator."""

    def __iter__(self):
        return 5


async def _durations_async():
    return [5.0]


@pytest.mark.parametrize(
    "make, error, name",
    [
        (lambda: CircuitBreaker(failure_ratio=0), ValueError, "failure_ratio"),
        (lambda: CircuitBreaker(failure_ratio=1.01), ValueError, "failure_ratio"),
        (lambda: CircuitBreaker(failure_ratio=math.nan), ValueError, "failure_ratio"),
        (lambda: CircuitBreaker(failure_ratio="0.1"), TypeError, "failure_ratio"),
        (lambda: CircuitBreaker(minimum_throughput=0), ValueError, "minimum_throughput"),
        (lambda: CircuitBreaker(minimum_throughput=2.5), TypeError, "minimum_throughput"),
        (lambda: CircuitBreaker(minimum_throughput=True), TypeError, "minimum_throughput"),
        (lambda: CircuitBreaker(sampling_duration=0), ValueError, "sampling_duration"),
        (lambda: CircuitBreaker(sampling_duration=math.inf), ValueError, "sampling_duration"),
        (lambda: CircuitBreaker(break_duration=-1), ValueError, "break_duration"),
        (lambda: CircuitBreaker(break_duration=math.nan), ValueError, "break_duration"),
        (lambda: CircuitBreaker(break_duration=True), TypeError, "break_duration"),
        (lambda: CircuitBreaker(break_duration="5"), TypeError, "break_duration"),
        (lambda: CircuitBreaker(break_duration=None), TypeError, "break_duration"),
        (lambda: CircuitBreaker(break_duration=[]), ValueError, "break_duration"),
        (lambda: CircuitBreaker(break_duration=[-1, 5]), ValueError, "break_duration"),
        (lambda: CircuitBreaker(break_duration=["5"]), TypeError, "break_duration"),
        (lambda: CircuitBreaker(break_duration=lambda: 5), TypeError, "break_duration"),
        (lambda: CircuitBreaker(break_duration=lambda: iter(())), ValueError, "break_duration"),
        (lambda: CircuitBreaker(break_duration=NoIterator()), TypeError, "break_duration"),
        # a function that needs an argument, or an async one, named (a bare TypeError
        # from the call, or a coroutine never awaited)
        (lambda: CircuitBreaker(break_duration=lambda n: [5]), TypeError, "break_duration"),
        (lambda: CircuitBreaker(break_duration=_durations_async), TypeError, "break_duration"),
        (lambda: CircuitBreaker(clock=1), TypeError, "clock"),
    ],
)
def test_bad_arguments_name_the_parameter(make, error, name):
    """Out-of-range or mistyped arguments, an empty schedule or a bad first duration fail when the breaker is made."""
    rejects(make, error, name)


def test_an_async_break_duration_is_refused_before_it_is_called():
    """An async function as break_duration was called, and its coroutine, refused as
    no iterable, was never awaited: a RuntimeWarning besides the error."""
    import gc
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rejects(
            lambda: CircuitBreaker(break_duration=_durations_async),
            TypeError,
            "break_duration",
            "async",
        )
        gc.collect()
    assert [str(w.message) for w in caught] == []


def test_refusals_and_argument_errors_keep_their_notes_and_attributes_through_pickling():
    """The errors' own __reduce__ (for worker processes) dropped what a handler added
    (add_note, an attribute), which a plain ValueError keeps."""
    from backoff_iter import ArgumentValueError, ThrottledError

    for error in (
        BrokenCircuitError(3.0, half_open=True),
        ThrottledError(0.25),
        ArgumentValueError("base", "base must be positive, got -1"),
    ):
        error.extra = 1
        if hasattr(error, "add_note"):  # Python 3.11+
            error.add_note("while fetching")
        copy = pickle.loads(pickle.dumps(error))
        assert (type(copy), str(copy), copy.extra) == (type(error), str(error), 1)
        assert getattr(copy, "__notes__", None) == getattr(error, "__notes__", None)
        assert vars(copy) == vars(error)


# -- a refusal keeps the failure that led to it ----------------------------------------------


def test_a_refusal_carries_the_failure_that_opened_the_circuit_as_its_cause():
    """check() after record(False, failure) raises BrokenCircuitError from a traceback-free copy of it."""
    breaker = CircuitBreaker(failure_ratio=0.5, minimum_throughput=2, clock=Clock())
    breaker.check()
    breaker.record(True)
    try:
        raise ConnectionResetError(104, "reset by peer")
    except ConnectionResetError as error:
        failure = error
        breaker.check()
        breaker.record(False, failure)
    cause = refused(breaker).__cause__
    assert isinstance(cause, ConnectionResetError) and cause.args == (104, "reset by peer")
    assert cause is not failure and cause.__traceback__ is None


def test_a_failed_probe_makes_its_own_failure_the_cause_of_the_refusals_after_it():
    """Opened by one failure, reopened by the probe's: the next refusal's cause is the probe's failure."""
    breaker, clock = opened()  # opened with no failure told: no cause
    assert refused(breaker).__cause__ is None
    clock.now = 5.0
    breaker.check()  # the probe
    breaker.record(False, TimeoutError("the probe timed out"))
    cause = refused(breaker).__cause__
    assert isinstance(cause, TimeoutError) and cause.args == ("the probe timed out",)


def test_a_call_refused_after_its_own_failure_has_that_failure_as_cause():
    """A call whose retry the breaker refuses: its error's __cause__ is the call's own last failure."""
    from backoff_iter import retry

    breaker = CircuitBreaker(
        failure_ratio=0.5, minimum_throughput=1, break_duration=60, clock=Clock()
    )
    failures = [OSError("first"), OSError("second")]

    @retry([0.0], breaker=breaker, sleep=lambda s: None)
    def fetch():
        raise failures.pop(0)

    with pytest.raises(BrokenCircuitError) as raised:
        fetch()
    assert raised.value.__cause__.args == ("first",) and raised.value.__cause__.__traceback__
    with pytest.raises(BrokenCircuitError) as before_any_attempt:
        fetch()
    cause = before_any_attempt.value.__cause__
    assert isinstance(cause, OSError) and cause.args == ("first",) and cause.__traceback__ is None
    assert len(failures) == 1  # the second call never ran an attempt


def test_a_failure_that_cannot_be_copied_leaves_the_refusal_without_a_cause():
    """An exception whose class cannot be rebuilt from its args: no cause, no crash."""

    class Stubborn(Exception):
        def __init__(self, code, detail):
            super().__init__(f"{code}: {detail}")

    breaker = CircuitBreaker(failure_ratio=0.5, minimum_throughput=1, clock=Clock())
    breaker.check()
    breaker.record(False, Stubborn(1, "x"))
    assert breaker.state == "open" and refused(breaker).__cause__ is None


def test_a_result_that_opened_the_circuit_leaves_the_refusal_without_a_cause():
    """record(False, result) with a retried result, not an exception: refused with no cause."""
    breaker = CircuitBreaker(failure_ratio=0.5, minimum_throughput=1, clock=Clock())
    breaker.check()
    breaker.record(False, {"status": 503})
    assert breaker.state == "open" and refused(breaker).__cause__ is None


def test_a_clock_with_no_good_reading_yet_counts_from_zero():
    """A clock that reads NaN from the start: time stands at 0, so a 5 s break stays 5 s away."""
    breaker = CircuitBreaker(
        failure_ratio=0.5, minimum_throughput=1, break_duration=5, clock=lambda: math.nan
    )
    breaker.check()
    breaker.record(False)
    assert refused(breaker).retry_after == 5.0
    assert breaker.state == "open"


@pytest.mark.parametrize(
    "bad", [math.nan, math.inf, -math.inf, 10**400], ids=["nan", "inf", "-inf", "10**400"]
)
@pytest.mark.parametrize("good", [1000.0, -1000.0, Decimal(1000)], ids=str)
def test_a_clock_whose_first_reading_is_bad_serves_the_whole_break(bad, good):
    """Opened at a bad first reading (time 0.0): the clock's first good reading is no time
    passed either, so the 5 s break ends 5 s after it, neither at once nor 1005 s on."""
    clock = Clock(bad)
    breaker = CircuitBreaker(failure_ratio=0.5, minimum_throughput=1, break_duration=5, clock=clock)
    breaker.record(False)
    assert refused(breaker).retry_after == 5.0  # bad still
    clock.now = good
    assert refused(breaker).retry_after == 5.0
    clock.now = good + 4
    assert refused(breaker).retry_after == 1.0
    clock.now = good + 5
    breaker.check()
    assert breaker.state == "half_open"


def test_a_clock_whose_first_reading_is_bad_keeps_the_window_it_began():
    """A failure counted at a NaN first reading still counts at the first good one, 1000,
    and at a reading beyond floats after it (no time passed, no OverflowError): the third
    failure opens the circuit (minimum throughput 3)."""
    clock = Clock(math.nan)
    breaker = CircuitBreaker(failure_ratio=0.5, minimum_throughput=3, clock=clock)
    breaker.record(False)
    clock.now = 1000.0
    breaker.record(False)
    clock.now = 10**400
    breaker.record(False)
    assert breaker.state == "open"


def test_every_use_of_the_counts_and_state_holds_the_lock():
    """record() and an open breaker's check() read and change the counts only with the lock
    held: two threads recording at once cannot both open the circuit, or lose a count."""
    clock = Clock()
    breaker = CircuitBreaker(failure_ratio=0.5, minimum_throughput=2, clock=clock)
    counts, unguarded = breaker._counts, []

    def note_if_unguarded(name):
        if breaker._lock.acquire(blocking=False):  # free: this thread does not hold it
            breaker._lock.release()
            unguarded.append(name)

    class Guarded:  # record() reads the counts' lists inline, and calls their methods
        def __getattr__(self, name):
            note_if_unguarded(name)
            value = getattr(counts, name)
            if not callable(value):
                return value

            def guarded(*args):
                note_if_unguarded(name)
                return value(*args)

            return guarded

    breaker._counts = Guarded()
    breaker.record(True)
    breaker.record(False, ConnectionError())
    assert breaker.state == "open"
    breaker.record(False)
    clock.now += 1000.0
    breaker.check()  # half open: the probe goes
    breaker.record(True)  # closed again, the counts cleared
    assert breaker.state == "closed"
    assert unguarded == []
