"""hedged() and @hedge: when hedges start, which outcome wins, and that nothing is left running."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib.util
import itertools
import logging
import math
import subprocess
import sys
from pathlib import Path

import pytest
from checks import rejects
from hypothesis import assume, given
from hypothesis import strategies as st

from backoff_iter import (
    RETRY_AFTER_MAX,
    ArgumentTypeError,
    ArgumentValueError,
    TokenBucket,
    constant,
    hedge,
    hedged,
)

GUARD = 10.0  # seconds: only a broken hedging ever waits this long
# A hedge is started no sooner than its delay; but Script notes the time a few
# microseconds after hedged() read it, and a busy machine may pause us there.
SLACK = 0.005


def run(coroutine):
    """Run *coroutine* in a fresh loop, in one task, cancelled (not hanging) if it outlives GUARD."""

    async def guarded():
        timer = asyncio.get_running_loop().call_later(GUARD, asyncio.current_task().cancel)
        try:
            return await coroutine
        finally:
            timer.cancel()

    return asyncio.run(guarded())


def others():
    """The tasks of the running loop other than the current one: what we left behind."""
    return asyncio.all_tasks() - {asyncio.current_task()}


async def forever():
    """An attempt that never answers (until it is cancelled)."""
    await asyncio.get_running_loop().create_future()


def slow_to_stop(gates):
    """An attempt that never answers, and once cancelled takes its time to stop:
    until the test sets the gate it adds to *gates*."""

    async def attempt():
        try:
            await forever()
        finally:
            gate = asyncio.get_running_loop().create_future()
            gates.append(gate)
            await asyncio.shield(gate)

    return attempt


class Script:
    """A call whose attempts each do what the test says, in order, and a record
    of what happened to them: when each started, which were cancelled."""

    def __init__(self, *plans):
        self.plans = plans
        self.started = []  # loop time at which hedged() started each attempt
        self.cancelled = []  # numbers of the attempts cancelled
        self.names = []  # the name of each attempt's task

    def __call__(self):
        # Noted when hedged() calls it, not when its task first runs: a busy
        # machine may run a task late, but hedged() decided when to start it.
        self.started.append(asyncio.get_running_loop().time())
        return self._attempt(len(self.started))

    async def _attempt(self, number):
        self.names.append(asyncio.current_task().get_name())
        try:
            return await self.plans[number - 1]()
        except asyncio.CancelledError:
            self.cancelled.append(number)
            raise


def answer(value, after=0.0):
    async def plan():
        await asyncio.sleep(after)
        return value

    return plan


def fail(error, after=0.0):
    async def plan():
        await asyncio.sleep(after)
        raise error

    return plan


class Failures:
    """An ``on=`` predicate matching every failure and keeping those hedged() has seen,
    so that an attempt can wait until the call has dealt with the others' failures."""

    def __init__(self):
        self.seen = []

    def __call__(self, exc):
        self.seen.append(exc)
        return True

    def after(self, count, plan):
        """*plan*, started once *count* failures have been seen."""

        async def waiting():
            while len(self.seen) < count:
                await asyncio.sleep(0)
            return await plan()

        return waiting


class Recorder:
    """A budget of the extended protocol (``record_success(first_attempt, spent)``),
    allowing *room* hedges and recording every call made to it."""

    def __init__(self, room=math.inf):
        self.room = room
        self.calls = []

    def record_success(self, first_attempt, spent=0.0):
        self.calls.append(("success", first_attempt, spent))

    def record_failure(self, first_attempt):
        self.calls.append(("failure", first_attempt))

    def try_retry(self, outcome):
        self.calls.append(("try", outcome))
        if self.room < 1:
            return 0.0
        self.room -= 1
        return 1.5  # what a hedge takes: the sum comes back in record_success


# --- Tail latency -----------------------------------------------------------


def test_a_hundred_concurrent_calls_finish_at_the_fast_latency_though_every_twentieth_is_slow():
    """In simulated time: every twentieth call's first attempt takes 10 s, the others 5 ms.
    With a hedge after 200 ms, each slow call ends at 205 ms (its hedge's 5 ms after 200 ms)
    with its slow attempt cancelled, and no fast call is hedged: it ends at 5 ms."""
    cancelled = []

    async def timed(index, loop):
        attempts = []

        async def replica():
            attempts.append(1)
            if index % 20 == 19 and len(attempts) == 1:
                try:
                    await asyncio.sleep(10)
                except asyncio.CancelledError:
                    cancelled.append(index)
                    raise
            await asyncio.sleep(0.005)
            return "ok"

        start = loop.time()
        result = await hedged(replica, [0.2])
        return result, len(attempts), loop.time() - start

    async def main():
        loop = asyncio.get_running_loop()
        outcomes = await asyncio.gather(*(timed(index, loop) for index in range(100)))
        assert not others()
        return outcomes

    outcomes = SIMULATE(main())
    assert [result for result, _, _ in outcomes] == ["ok"] * 100
    assert sorted(cancelled) == [19, 39, 59, 79, 99]  # all at once: their order is the loop's
    cancelled.sort()
    slow = [outcomes[index] for index in cancelled]
    fast = [outcome for index, outcome in enumerate(outcomes) if index not in cancelled]
    assert [(attempts, round(latency, 9)) for _, attempts, latency in slow] == [(2, 0.205)] * 5
    assert [(attempts, round(latency, 9)) for _, attempts, latency in fast] == [(1, 0.005)] * 95


def test_a_hedge_waits_for_its_delay():
    """The second attempt starts its delay after the first, not before; and not at all
    when the first answers within the delay."""
    script = Script(forever, answer("second"))
    assert run(hedged(script, [0.05])) == "second"
    assert script.started[1] - script.started[0] >= 0.05 - SLACK
    quick = Script(answer("first", after=0.01), answer("second"))
    assert run(hedged(quick, [3600])) == "first"
    assert len(quick.started) == 1


def test_each_hedge_waits_its_own_delay_after_the_previous_attempt_started():
    """Delays [0.05, 0.05]: attempt 3 starts 50 ms after attempt 2, so 100 ms after attempt 1."""
    script = Script(forever, forever, answer("third"))
    assert run(hedged(script, [0.05, 0.05])) == "third"
    first, second, third = script.started
    assert second - first >= 0.05 - SLACK
    assert third - first >= 0.1 - SLACK
    assert script.cancelled == [1, 2]


# --- Failures -----------------------------------------------------------------


def test_a_fatal_failure_cancels_the_other_attempts_and_propagates_as_itself():
    """A failure that on= does not match cancels every outstanding attempt (they see it) and is raised."""
    fatal = ValueError("bad request")
    script = Script(forever, forever, fail(fatal, after=0.01))

    async def main():
        with pytest.raises(ValueError) as raised:
            await hedged(script, [0, 0], on=ConnectionError)
        assert not others()
        return raised.value

    assert run(main()) is fatal
    assert script.cancelled == [1, 2]


def test_a_matched_failure_sends_the_next_hedge_at_once():
    """A failure on= matches starts the next attempt at once, not after the hour-long delay."""
    script = Script(fail(ConnectionError("replica down")), answer("second"))
    assert run(hedged(script, [3600], on=ConnectionError)) == "second"
    assert len(script.started) == 2
    assert script.started[1] - script.started[0] < 60  # far from the hour of its delay


def test_the_hedge_after_one_sent_at_once_waits_its_own_delay_again():
    """After a failure brought a hedge forward, the following hedge waits its delay after that one."""
    script = Script(fail(ConnectionError()), forever, answer("third"))
    assert run(hedged(script, [3600, 0.05, 0], on=ConnectionError)) == "third"
    assert script.started[2] - script.started[1] >= 0.05 - SLACK
    assert script.cancelled == [2]


def test_the_first_result_wins_even_when_a_failure_finished_first():
    """A matched failure never ends the call while an attempt may still answer: the later answer wins."""
    on = Failures()
    script = Script(on.after(1, answer("slow but right")), fail(ConnectionError()))
    assert run(hedged(script, [0], on=on)) == "slow but right"
    assert len(on.seen) == 1


def test_when_every_attempt_fails_the_last_failure_propagates_as_itself():
    """Three matched failures: the last one hedged() sees (attempt 1's) is raised, the same object."""
    on = Failures()
    errors = [ConnectionError(n) for n in range(3)]
    script = Script(on.after(2, fail(errors[0])), fail(errors[1]), fail(errors[2]))

    async def main():
        with pytest.raises(ConnectionError) as raised:
            await hedged(script, [0, 0], on=on)
        assert not others()
        return raised.value

    assert run(main()) is errors[0]
    assert on.seen[-1] is errors[0] and len(script.started) == 3


@pytest.mark.parametrize("n", [0, 1, 2, 4])
def test_n_delays_allow_at_most_n_plus_one_attempts(n):
    """Every attempt failing at once: exactly n + 1 attempts, and the last one's failure is raised."""
    errors = [ConnectionError(k) for k in range(n + 2)]
    script = Script(*(fail(error) for error in errors))
    with pytest.raises(ConnectionError) as raised:
        run(hedged(script, [0.01] * n))
    assert len(script.started) == n + 1
    assert raised.value is errors[n]


@pytest.mark.parametrize("endless", [math.inf, 10**400, 1e300], ids=["inf", "10**400", "1e300"])
def test_an_infinite_delay_sends_no_further_hedge(endless):
    """Delays [0, inf, 0]: two attempts, then no more, even after both failed."""
    script = Script(*(fail(ConnectionError(k)) for k in range(4)))
    with pytest.raises(ConnectionError):
        run(hedged(script, [0, endless, 0]))
    assert len(script.started) == 2


def test_a_strategy_gives_the_delays_and_its_end_limits_the_hedges():
    """A factory of a finite strategy: each call draws fresh delays, and two delays mean three attempts."""
    from itertools import islice

    made = []

    def delays():
        made.append(1)
        return islice(constant(0.001), 2)

    script = Script(*(fail(ConnectionError(k)) for k in range(6)))
    for _ in range(2):
        with pytest.raises(ConnectionError):
            run(hedged(script, delays))
    assert len(script.started) == 6 and len(made) == 2


class Halt(BaseException):
    """No Exception: never a failure to hedge on."""


def test_a_predicate_never_sees_what_is_no_exception():
    """on=predicate is asked about Exceptions only: a BaseException ends the call at once."""
    asked = []
    halt = Halt()
    script = Script(forever, fail(halt, after=0.01))

    async def main():
        with pytest.raises(Halt) as raised:
            await hedged(script, [0], on=lambda exc: asked.append(exc) or True)
        assert not others()
        return raised.value

    assert run(main()) is halt
    assert asked == [] and script.cancelled == [1]


def test_an_attempt_cancelled_by_someone_else_propagates_as_cancellation():
    """An attempt's own CancelledError is no failure to hedge on: it ends the call, the others cancelled."""

    async def main():
        victim = []

        async def cancelled_from_outside():
            victim.append(asyncio.current_task())
            return await forever()

        async def cancel_it():
            await asyncio.sleep(0.01)
            victim[0].cancel()
            return await forever()

        script = Script(cancelled_from_outside, cancel_it)
        with pytest.raises(asyncio.CancelledError):
            await hedged(script, [0])
        assert script.cancelled == [1, 2]
        assert not others()

    run(main())


def test_the_hooks_hear_no_hedge_for_the_first_attempt():
    """A call whose first attempt answers: the hooks hear its success, and no "hedge" (the
    first attempt is no hedge)."""
    events = []
    assert run(hedged(Script(answer("first")), [3600], observe=events.append)) == "first"
    assert [(event.kind, event.number) for event in events] == [("success", 1)]


def test_the_last_failure_with_nothing_left_is_a_give_up_not_a_retry():
    """No hedge left and no attempt running: the hooks hear the failure as the give-up only,
    not also as a retry that will never come."""
    events = []
    with pytest.raises(ConnectionError):
        run(hedged(Script(fail(ConnectionError("down"))), [], observe=events.append))
    assert [(event.kind, event.number) for event in events] == [("give_up", 1)]


def test_attempts_failing_in_the_same_loop_turn_are_each_heard_with_nothing_left():
    """The last two attempts fail in the same turn of the loop, no hedge left: the hooks hear the
    earlier one as a retry (the call went on to the later one) and the later one as the give-up
    (the earlier failure was heard of nowhere: no event, no log line)."""
    events = []

    async def main():
        both_run = asyncio.Event()  # set by attempt 2: attempt 1 then fails beside it

        async def first():
            await both_run.wait()
            raise ConnectionError("one")

        async def second():
            both_run.set()
            await asyncio.sleep(0)
            raise ConnectionError("two")

        with pytest.raises(ConnectionError, match="two"):
            await hedged(Script(first, second), [0], observe=events.append)

    run(main())
    heard = [(event.kind, event.number, str(event.outcome)) for event in events]
    assert heard == [("hedge", 2, "None"), ("retry", 1, "one"), ("give_up", 2, "two")]


@pytest.mark.parametrize("rejected", [False, True], ids=["failures", "rejected results"])
def test_a_give_up_names_the_attempt_whose_failure_it_carries(rejected):
    """The hedge fails first, the first attempt last: the give-up carries attempt 1's
    failure (or rejected result), which the call raises (returns), and says attempt 1 -
    it said attempt 2 (the latest begun): the log read "attempt 2 failed (...: one)"."""
    events = []

    def failure(text):
        if rejected:
            return text
        raise ConnectionError(text)

    async def main():
        second_failed = asyncio.Event()

        async def first():
            await second_failed.wait()
            for _ in range(3):  # a few turns of the loop after the hedge's failure
                await asyncio.sleep(0)
            return failure("one")

        async def second():
            second_failed.set()
            return failure("two")

        options = {"on_result": lambda result: True} if rejected else {}
        if rejected:
            assert (
                await hedged(Script(first, second), [0], observe=events.append, **options) == "one"
            )
        else:
            with pytest.raises(ConnectionError, match="one"):
                await hedged(Script(first, second), [0], observe=events.append)

    run(main())
    heard = [(event.kind, event.number, str(event.outcome)) for event in events]
    assert heard == [("hedge", 2, "None"), ("retry", 2, "two"), ("give_up", 1, "one")]


def test_a_hint_too_long_to_sleep_sends_no_more_hedges():
    """With no maximum, a hint of inf is too long to wait: no further hedge, the failure
    stands at once (rather than a hedge due at the end of time)."""
    script = Script(fail(ConnectionError("go away")), answer("never"))
    with pytest.raises(ConnectionError, match="go away"):
        run(hedged(script, [3600], retry_after=lambda _: math.inf, retry_after_max=math.inf))
    assert len(script.started) == 1


def test_the_hooks_hear_an_attempt_cancelled_by_someone_else_as_the_calls_error():
    """An attempt's own cancellation ends the call as an error the hooks hear, once the
    attempt still running is cancelled and told them as such."""

    async def main():
        victim = []

        async def cancelled_from_outside():
            victim.append(asyncio.current_task())
            return await forever()

        async def cancel_it():
            await asyncio.sleep(0)  # attempt 1 has started
            victim[0].cancel()
            return await forever()

        events = []
        with pytest.raises(asyncio.CancelledError):
            await hedged(Script(cancelled_from_outside, cancel_it), [0], observe=events.append)
        return [(event.kind, event.number) for event in events]

    assert run(main()) == [("hedge", 2), ("cancelled", 2), ("error", 1)]


# --- Results ----------------------------------------------------------------


def test_a_rejected_result_sends_the_next_hedge_at_once_and_the_accepted_one_wins():
    """on_result rejects "busy": the next attempt goes at once and its "ok" is returned."""
    script = Script(answer("busy"), answer("ok"))
    assert run(hedged(script, [3600], on_result=lambda result: result == "busy")) == "ok"
    assert len(script.started) == 2


def test_when_every_result_is_rejected_the_last_one_is_returned():
    """As the retry drivers do: the last rejected result stands when nothing is left to try."""
    script = Script(answer("busy 1"), answer("busy 2"))
    assert run(hedged(script, [0], on_result=lambda result: result.startswith("busy"))) == "busy 2"


def test_a_failure_after_a_rejected_result_is_what_propagates():
    """The latest outcome stands: a rejected result, then a matched failure, raises the failure."""
    error = ConnectionError("last")
    script = Script(answer("busy"), fail(error, after=0.01))
    with pytest.raises(ConnectionError) as raised:
        run(hedged(script, [0], on_result=lambda result: result == "busy"))
    assert raised.value is error


# --- Budgets ------------------------------------------------------------------


def drained():
    """A TokenBucket at its threshold: failures took half its tokens."""
    bucket = TokenBucket(max_tokens=10, token_ratio=0.1)
    for _ in range(5):
        bucket.record_failure(True)
    assert not bucket.try_retry(None)
    return bucket


def test_a_drained_token_bucket_sends_no_hedge():
    """With the bucket at half, the hedge due at once is not sent; the first attempt still answers."""
    script = Script(answer("first", after=0.02), answer("second"))
    assert run(hedged(script, [0], budget=drained())) == "first"
    assert len(script.started) == 1


def test_a_drained_token_bucket_stops_the_hedges_a_failure_would_send():
    """A matched failure with no budget left ends the call with that failure: no hedge waits for tokens."""
    error = ConnectionError("down")
    script = Script(fail(error), answer("never"))
    with pytest.raises(ConnectionError) as raised:
        run(hedged(script, [0.01], budget=drained()))
    assert raised.value is error and len(script.started) == 1


def test_a_token_bucket_with_room_sends_hedges_and_counts_their_failures():
    """A full bucket allows both hedges; each failed attempt, hedges included, takes a token (A6)."""
    bucket = TokenBucket(max_tokens=10, token_ratio=0.1)
    script = Script(*(fail(ConnectionError(k)) for k in range(3)))
    with pytest.raises(ConnectionError):
        run(hedged(script, [0, 0], budget=bucket))
    assert len(script.started) == 3
    assert bucket.tokens == 7.0


def test_the_budget_is_asked_for_each_hedge_and_told_each_outcome_as_gRPC_A6_does():
    """try_retry before each hedge (with the failure that brought it forward, or None), a failure per
    matched failure, and one success for the winner, giving back what the winner and the hedges it
    made unneeded took (not what a failed hedge took)."""
    first, second = ConnectionError("down"), ConnectionError("still down")
    budget = Recorder()
    script = Script(fail(first), fail(second), forever, answer("fourth"))
    assert run(hedged(script, [3600, 3600, 0.01], budget=budget)) == "fourth"
    assert budget.calls == [
        ("failure", True),
        ("try", first),
        ("failure", False),  # a hedge's failure counts as a failure too
        ("try", second),
        ("try", None),  # attempt 4: attempt 3's delay passed
        ("success", False, 3.0),  # attempt 4's 1.5, and cancelled attempt 3's
    ]
    assert script.cancelled == [3]


def test_hedges_not_needed_give_back_what_they_took_from_a_retry_quota():
    """Three calls whose first attempt wins after a hedge was sent: the quota ends where it began."""
    from backoff_iter import RetryQuota

    quota = RetryQuota()
    for _ in range(3):
        script = Script(answer("slow", after=0.05), forever)
        assert run(hedged(script, [0.01], budget=quota)) == "slow"
    assert quota.available == 500.0


def test_a_hedge_whose_call_raised_as_it_was_made_gives_back_what_it_took():
    """Attempt 1 fails, and the call raises TypeError as hedge 2 is made: that hedge
    never ran, so a RetryQuota gets back the 5 it took for it (it was kept: 495)."""
    from backoff_iter import RetryQuota

    quota = RetryQuota()
    script = Script(fail(ConnectionError("reset")))

    def call():
        if script.started:
            raise TypeError("made with the wrong arguments")
        return script()

    with pytest.raises(TypeError, match="wrong arguments"):
        run(hedged(call, [60], on=ConnectionError, budget=quota))
    assert quota.available == 500.0


@pytest.mark.parametrize("breaks", ["delay", "hook"])
def test_a_hedge_that_never_starts_because_its_delay_or_hook_broke_gives_back_what_it_took(
    breaks,
):
    """Attempt 1 fails; as hedge 2 is sent the schedule's next delay is -1, or
    the "hedge" hook raises: that hedge never ran, and the RetryQuota gets back
    what it took for it (it was kept: 486 left)."""
    from backoff_iter import RetryQuota

    quota = RetryQuota()
    script = Script(fail(ConnectionError("reset")), forever)

    def delays():
        yield 60
        if breaks == "delay":
            yield -1

    def hook(event):
        if breaks == "hook" and event.kind == "hedge":
            raise LookupError("the hook's")

    error = (ValueError, "delays") if breaks == "delay" else (LookupError, "the hook's")
    with pytest.raises(error[0], match=error[1]):
        run(hedged(script, delays(), on=ConnectionError, budget=quota, observe=hook))
    assert quota.available == 500.0


def test_what_a_winning_hedge_gives_back_is_its_cost_plus_the_sum_of_the_unneeded_ones():
    """Hedges costing 0.1, 0.2 and 0.3, the first of them winning, the other two cancelled:
    record_success is told 0.1 + (0.2 + 0.3), the winner's plus the sum of those it made
    unneeded, to the last bit as before each part heard its own share (it was told
    (0.1 + 0.2) + 0.3, 0.6000000000000001)."""
    budget = Recorder()
    costs = iter([0.1, 0.2, 0.3])
    budget.try_retry = lambda outcome: next(costs)
    script = Script(forever, answer("second", after=0.05), forever, forever)
    assert run(hedged(script, [0, 0, 0], budget=budget)) == "second"
    assert sorted(script.cancelled) == [1, 3, 4]
    assert budget.calls[-1] == ("success", False, 0.1 + (0.2 + 0.3))


def test_a_first_attempt_that_wins_is_recorded_as_such_without_spending():
    """No hedge sent: one success for the first attempt, nothing asked of try_retry."""
    budget = Recorder()
    assert run(hedged(Script(answer("ok")), [3600], budget=budget)) == "ok"
    assert budget.calls == [("success", True, 0.0)]


def test_a_fatal_failure_and_cancelled_attempts_are_not_recorded():
    """A6 counts only non-fatal failures; attempts cancelled by the call count as nothing."""
    budget = Recorder()
    script = Script(forever, fail(ValueError("fatal"), after=0.01))
    with pytest.raises(ValueError):
        run(hedged(script, [0], on=ConnectionError, budget=budget))
    assert budget.calls == [("try", None)]


def test_a_budget_refusal_ends_the_hedges_but_not_the_attempts_already_sent():
    """Room for one hedge: attempt 2 is sent, attempt 3 is refused, and attempt 2's answer wins."""
    budget = Recorder(room=1)
    script = Script(forever, answer("second", after=0.05), answer("third"))
    assert run(hedged(script, [0, 0], budget=budget)) == "second"
    assert len(script.started) == 2
    assert budget.calls == [("try", None), ("try", None), ("success", False, 1.5)]


# --- Server hints -------------------------------------------------------------


def test_a_server_hint_pushes_the_next_hedge_back():
    """A failure whose hint says 50 ms: the next attempt starts no sooner, though it was due at once."""
    script = Script(fail(ConnectionError("slow down")), answer("second"))
    hints = []

    def retry_after(outcome):
        hints.append(outcome)
        return 0.05

    assert run(hedged(script, [3600], retry_after=retry_after)) == "second"
    assert script.started[1] - script.started[0] >= 0.05 - SLACK
    assert [str(outcome) for outcome in hints] == ["slow down"]


def test_a_hint_holds_even_when_a_later_failure_has_none():
    """Attempt 1 fails with a hint of 80 ms, attempt 2 then without one: attempt 3 still waits for the hint."""
    script = Script(fail(ConnectionError()), fail(ConnectionError(), after=0.01), answer("third"))
    asked = iter([0.08, None])
    assert run(hedged(script, [0, 3600], retry_after=lambda _: next(asked))) == "third"
    assert script.started[2] - script.started[0] >= 0.08 - SLACK


def test_a_shorter_hint_after_a_longer_one_does_not_bring_the_next_hedge_forward():
    """In simulated time: attempt 2 goes at 0.5 s; attempt 1 fails at 1 s asking for 10 s,
    attempt 2 at 2 s asking for 1 s: attempt 3 waits for the longer hint, to 11 s."""
    started = []
    hints = iter([10.0, 1.0])

    async def attempt():
        number = len(started) + 1
        started.append(asyncio.get_running_loop().time())
        if number == 1:
            await asyncio.sleep(1.0)
        elif number == 2:
            await asyncio.sleep(1.5)
        else:
            return "third"
        raise ConnectionError(number)

    async def call():
        start = asyncio.get_running_loop().time()
        result = await hedged(attempt, [0.5, 3600], retry_after=lambda _: next(hints))
        return result, [round(when - start, 9) for when in started]

    assert SIMULATE(call()) == ("third", [0.0, 0.5, 11.0])


def test_a_hint_hook_failing_on_a_rejected_result_raises_its_own_error():
    """on_result rejects the answer and the retry_after hook then raises: its ValueError
    propagates as itself, with no context (a result is no exception to chain)."""

    async def answer_zero():
        return 0

    def retry_after(outcome):
        raise ValueError("no hint for a result")

    with pytest.raises(ValueError, match="no hint for a result") as raised:
        run(hedged(answer_zero, [3600], on_result=lambda r: True, retry_after=retry_after))
    assert raised.value.__context__ is None


def test_a_huge_hint_is_clamped_to_six_hours(monkeypatch):
    """A hint of inf (or 10**400) waits RETRY_AFTER_MAX, as the drivers clamp it, and never overflows."""
    waits = []

    class Stop(Exception):
        pass

    real_sleep = asyncio.sleep

    async def recorded(seconds, *args):
        if seconds > 1:  # the wait for the hinted hedge: note it and end the call
            waits.append(seconds)
            raise Stop
        return await real_sleep(seconds, *args)

    monkeypatch.setattr(asyncio, "sleep", recorded)
    for hint in (math.inf, 10**400):
        script = Script(fail(ConnectionError()), answer("never"))
        with pytest.raises(Stop):
            run(hedged(script, [3600], retry_after=lambda _, hint=hint: hint))
        assert len(script.started) == 1
    assert all(RETRY_AFTER_MAX - 1 <= wait <= RETRY_AFTER_MAX for wait in waits), waits
    assert len(waits) == 2


def test_a_bad_hint_is_the_callers_bug_and_cancels_the_attempts():
    """A negative hint raises ArgumentValueError naming retry_after; the other attempt is cancelled."""
    script = Script(forever, fail(ConnectionError(), after=0.01))

    async def main():
        with pytest.raises(ArgumentValueError, match="retry_after") as raised:
            await hedged(script, [0, 3600], retry_after=lambda _: -1)
        assert not others()
        return raised.value

    assert isinstance(run(main()).__context__, ConnectionError)  # the failure it was asked about
    assert script.cancelled == [1]


# --- Nothing left running -----------------------------------------------------


def scenarios():
    """(name, script, options, what the call ends with): every way a hedged call ends."""
    error = ConnectionError("down")
    return {
        "success": (Script(forever, answer("ok", after=0.01)), {}, "ok"),
        "fatal": (Script(forever, fail(ValueError(), after=0.01)), {"on": OSError}, ValueError),
        "all failed": (Script(fail(error), fail(error, after=0.01)), {}, ConnectionError),
        "rejected": (Script(forever, answer(0, after=0.01)), {"on_result": lambda r: r > 1}, 0),
        "refused": (Script(answer("ok", after=0.01)), {"budget": drained()}, "ok"),
    }


@pytest.mark.parametrize("scenario", list(scenarios()))
def test_no_task_of_ours_is_left_when_the_call_ends(scenario):
    """Success, fatal failure, every attempt failed, a result returned unaccepted, a refused hedge:
    when hedged() is done, asyncio.all_tasks() holds nothing of it."""
    script, options, expected = scenarios()[scenario]

    async def main():
        if isinstance(expected, type):
            with pytest.raises(expected):
                await hedged(script, [0], **options)
        else:
            assert await hedged(script, [0], **options) == expected
        assert not others()

    run(main())


def test_cancelling_the_caller_cancels_every_attempt_and_waits_for_them():
    """Cancelled while two attempts run: both see the cancellation and have finished when the
    caller's CancelledError arrives; no task is left."""
    finished = []

    async def cleans_up():
        try:
            await forever()
        finally:
            await asyncio.sleep(0.01)  # its cleanup takes a while: hedged waits for it
            finished.append(1)

    async def main():
        script = Script(cleans_up, cleans_up)
        caller = asyncio.ensure_future(hedged(script, [0]))
        while len(script.started) < 2:
            await asyncio.sleep(0)
        caller.cancel()
        with pytest.raises(asyncio.CancelledError):
            await caller
        assert script.cancelled == [1, 2]
        assert finished == [1, 1]
        assert not others()

    run(main())


def test_a_hedged_call_cancelled_by_its_caller_tells_the_hooks_how_it_ended():
    """Cancelled while two attempts run: the hooks hear attempt 1 cancelled and the call end
    as an error of attempt 2, as the retry drivers tell a cancelled call (they heard the hedge,
    then nothing: a span opened for the call stayed open) - each attempt's end once, so the
    metrics count two attempts, not three."""

    async def main():
        events = []
        script = Script(forever, forever)
        caller = asyncio.ensure_future(hedged(script, [0], observe=events.append))
        while len(script.started) < 2:
            await asyncio.sleep(0)
        caller.cancel()
        with pytest.raises(asyncio.CancelledError):
            await caller
        assert not others()
        return [(event.kind, event.number, type(event.outcome)) for event in events]

    assert run(main()) == [
        ("hedge", 2, type(None)),
        ("cancelled", 1, type(None)),
        ("error", 2, asyncio.CancelledError),
    ]


def test_a_hedged_call_cancelled_while_it_waits_for_an_older_attempt_ends_that_one():
    """Attempt 2 failed with no hedge left, the call waits for attempt 1: cancelled then, the
    call's end is an error of attempt 1, the one running - not a second end of attempt 2."""

    async def main():
        events = []
        script = Script(forever, fail(OSError("down")))
        caller = asyncio.ensure_future(hedged(script, [0], observe=events.append))
        while not any(event.kind == "retry" for event in events):
            await asyncio.sleep(0)
        caller.cancel()
        with pytest.raises(asyncio.CancelledError):
            await caller
        assert not others()
        return [(event.kind, event.number, event.reason) for event in events]

    assert run(main()) == [("hedge", 2, None), ("retry", 2, None), ("error", 1, None)]


def test_a_hedged_call_cancelled_while_a_hint_holds_its_next_hedge_back_tells_one_that_never_ran():
    """Attempt 1 failed, the server's hint holds hedge 2 back, nothing runs: cancelled then,
    the call's end is an error of attempt 2 with reason "interrupted" (no attempt to count)."""

    async def main():
        events = []
        script = Script(fail(OSError("busy")), forever)
        caller = asyncio.ensure_future(
            hedged(script, [0], retry_after=lambda outcome: 60, observe=events.append)
        )
        while not any(event.kind == "retry" for event in events):
            await asyncio.sleep(0)
        caller.cancel()
        with pytest.raises(asyncio.CancelledError):
            await caller
        assert len(script.started) == 1 and not others()
        return [(event.kind, event.number, event.reason) for event in events]

    assert run(main()) == [("retry", 1, None), ("error", 2, "interrupted")]


def test_a_caller_cancelled_again_during_the_cleanup_still_waits_for_every_attempt():
    """A second cancellation while the attempts wind down is raised only once they have finished."""
    release = []

    async def main():
        script = Script(slow_to_stop(release))
        caller = asyncio.ensure_future(hedged(script, []))
        await asyncio.sleep(0.01)
        caller.cancel()
        await asyncio.sleep(0.01)
        caller.cancel()  # again, while hedged waits for the attempt to stop
        await asyncio.sleep(0.01)
        assert not caller.done()
        release[0].set_result(None)
        with pytest.raises(asyncio.CancelledError):
            await caller
        assert not others()

    run(main())


def test_cancelling_the_caller_while_a_hint_holds_the_next_hedge_back():
    """Nothing running, a hedge waiting on a server hint: cancellation ends the call at once."""

    async def main():
        script = Script(fail(ConnectionError()), answer("never"))
        caller = asyncio.ensure_future(hedged(script, [3600], retry_after=lambda _: 3600))
        await asyncio.sleep(0.01)
        caller.cancel()
        with pytest.raises(asyncio.CancelledError):
            await caller
        assert len(script.started) == 1
        assert not others()

    run(main())


def test_a_loser_failing_as_it_is_cancelled_leaves_no_unretrieved_error(caplog):
    """A loser whose cleanup raises: its error is seen, so asyncio logs no "exception was never retrieved"."""

    async def breaks_when_cancelled():
        try:
            await forever()
        finally:
            raise RuntimeError("cleanup failed")

    async def main():
        script = Script(breaks_when_cancelled, answer("ok", after=0.01))
        assert await hedged(script, [0]) == "ok"
        assert not others()
        gc.collect()

    with caplog.at_level(logging.ERROR, logger="asyncio"):
        run(main())
        gc.collect()
    assert "never retrieved" not in caplog.text


class Endless:
    """A call for an endless schedule of zero delays: each attempt awaits *plan*; more than
    RUNAWAY attempts started means hedged() starts them without ever letting one run."""

    RUNAWAY = 50

    def __init__(self, plan):
        self.plan = plan
        self.started = 0
        self.cancelled = 0

    def __call__(self):
        self.started += 1
        if self.started > self.RUNAWAY:
            raise RuntimeError("runaway: hedges started with no pass of the event loop")
        return self._attempt(self.started)

    async def _attempt(self, number):
        try:
            return await self.plan(number)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise


def test_an_endless_schedule_of_zero_delays_lets_the_first_quick_answer_win():
    """repeat(0.0): each hedge waits for a pass of the event loop, so attempt 1, which answers
    after one, wins; hedges are not started for ever with none of them ever run."""

    async def quick(number):
        await asyncio.sleep(0)
        return number

    call = Endless(quick)

    async def main():
        answer = await hedged(call, itertools.repeat(0.0))
        assert not others()
        return answer

    assert run(main()) == 1
    assert call.started <= 3 and call.cancelled == call.started - 1


def test_a_caller_cancels_an_endless_schedule_of_zero_delays():
    """repeat(0.0) with attempts that never answer: the caller gets control back, its
    cancellation ends the call, and every attempt started is cancelled."""
    call = Endless(lambda number: forever())

    async def main():
        caller = asyncio.ensure_future(hedged(call, itertools.repeat(0.0)))
        for _ in range(5):
            await asyncio.sleep(0)
        caller.cancel()
        with pytest.raises(asyncio.CancelledError):
            await caller
        assert not others()

    run(main())
    assert 2 <= call.started < Endless.RUNAWAY and call.cancelled == call.started


def test_a_caller_that_cancels_at_every_pass_of_the_loop_still_ends_the_call():
    """anyio's cancel scopes on asyncio cancel the task at every pass of the loop until it
    leaves them: hedged() still ends at once, every attempt stopped - each cancellation
    cut its wait for the stopped attempts before it could see them done, so it waited
    for as long as the cancellations came (for ever, under anyio's move_on_after)."""

    async def main():
        script = Script(forever, forever)
        caller = asyncio.ensure_future(hedged(script, [0]))
        while len(script.started) < 2:
            await asyncio.sleep(0)
        for _ in range(100):  # anyio's scope: again and again, for as long as it runs
            caller.cancel()
            await asyncio.sleep(0)
            if caller.done():
                break
        assert caller.cancelled()
        assert sorted(script.cancelled) == [1, 2] and not others()

    run(main())


def test_a_caller_cancelled_while_the_losers_stop_is_cancelled_not_answered():
    """The winner is in, a loser takes its time to stop, the caller is cancelled meanwhile:
    hedged() waits for the loser, then raises CancelledError instead of returning."""
    gates = []

    async def main():
        script = Script(slow_to_stop(gates), answer("ok"))
        caller = asyncio.ensure_future(hedged(script, [0]))
        while not gates:  # the answer is in, attempt 1 is stopping
            await asyncio.sleep(0)
        caller.cancel()
        await asyncio.sleep(0.01)
        assert not caller.done()
        gates[0].set_result(None)
        with pytest.raises(asyncio.CancelledError):
            await caller
        assert not others()

    run(main())


@pytest.mark.parametrize("second", [answer("ok"), fail(ValueError("fatal"))], ids=["won", "fatal"])
def test_a_caller_cancelled_while_the_losers_stop_tells_the_hooks_of_the_one_stopping(second):
    """Attempt 2 ended the call (its answer, or a failure ``on`` does not match), attempt 1
    takes its time to stop, the caller is cancelled meanwhile: the call's end is an error
    of attempt 1, the one still under way - not of an attempt 3 that never was (with one
    delay there is none), "interrupted", as if nothing had been running."""
    gates = []

    async def main():
        events = []
        script = Script(slow_to_stop(gates), second)
        caller = asyncio.ensure_future(hedged(script, [0], observe=events.append))
        while not gates:  # attempt 2 has ended the call, attempt 1 is stopping
            await asyncio.sleep(0)
        caller.cancel()
        await asyncio.sleep(0.01)
        gates[0].set_result(None)
        with pytest.raises(asyncio.CancelledError):
            await caller
        assert not others()
        return [(event.kind, event.number, event.reason) for event in events]

    heard = run(main())
    assert heard == [("hedge", 2, None), ("error", 1, None)]


def side_by_side():
    """Plans for attempts 1 and 2 that answer 1 and 2 in the same turn of the loop: attempt 1
    waits for attempt 2 to run, which answers a step later."""
    both_run = asyncio.Event()

    async def first():
        await both_run.wait()
        return 1

    async def second():
        both_run.set()
        await asyncio.sleep(0)
        return 2

    return first, second


def test_attempts_that_answer_in_the_same_loop_turn_go_to_the_earliest():
    """Attempts 1 and 2 answer in the same turn: attempt 1's answer wins, every time."""

    async def main():
        results = []
        for _ in range(20):
            script = Script(*side_by_side())
            results.append(await hedged(script, [0]))
        return results

    assert run(main()) == [1] * 20


def test_a_hedge_that_answered_beside_the_winner_gives_back_what_it_took():
    """Attempt 2, a hedge, answers in the same turn as attempt 1, which wins: that hedge was
    not needed, as one cancelled was not, and what it took comes back with the success."""

    async def main():
        budget = Recorder()
        assert await hedged(Script(*side_by_side()), [0], budget=budget) == 1
        return budget.calls

    assert run(main()) == [("try", None), ("success", True, 1.5)]


# --- The decorator and the call -------------------------------------------------


def test_hedge_calls_the_function_with_the_callers_arguments_on_every_attempt():
    """@hedge: each attempt gets the same arguments; the wrapper keeps the function's name."""
    seen = []

    @hedge([0], on=ConnectionError)
    async def lookup(key, *, replica_count=2):
        seen.append((key, replica_count))
        if len(seen) == 1:
            raise ConnectionError
        return key.upper()

    assert run(lookup("k", replica_count=3)) == "K"
    assert seen == [("k", 3), ("k", 3)]
    assert lookup.__name__ == "lookup"


def test_hedge_hooks_given_as_a_generator_are_heard_by_every_function_it_decorates():
    """observe= takes an iterable: a generator is read once, as the decorator is
    made; its check of the options used it up, and no hook heard a thing."""
    events = []
    decorator = hedge([0], on=ConnectionError, observe=(hook for hook in [events.append]))

    async def lookup():
        if not events:
            raise ConnectionError
        return "found"

    for function in (decorator(lookup), decorator(lookup)):
        assert run(function()) == "found"
    assert [event.kind for event in events][-1] == "success"
    assert [event.kind for event in events].count("success") == 2


def test_hedge_draws_fresh_delays_from_its_factory_for_every_call():
    """A factory is called once per call, so a decorated function hedges every time."""
    made = []

    def delays():
        made.append(1)
        return iter([0])

    calls = []

    @hedge(delays)
    async def flaky():
        calls.append(1)
        if len(calls) % 2:
            raise ConnectionError
        return "ok"

    assert run(flaky()) == "ok" and run(flaky()) == "ok"
    assert len(calls) == 4 and len(made) == 2


def test_attempt_tasks_are_named_after_the_call():
    """name= names each attempt's task; @hedge defaults to the function's qualified name."""
    script = Script(fail(ConnectionError()), answer("ok"))
    run(hedged(script, [0], name="inventory.get"))
    assert script.names == ["inventory.get attempt 1", "inventory.get attempt 2"]
    names = []

    class Client:
        @hedge([])
        async def fetch(self):
            names.append(asyncio.current_task().get_name())

    run(Client().fetch())
    assert names == ["test_attempt_tasks_are_named_after_the_call.<locals>.Client.fetch attempt 1"]


def test_a_call_that_gives_the_same_future_each_time_makes_attempts_of_their_own():
    """call() returns one future every time (not a coroutine): each attempt still runs
    in a task of its own, named as any attempt's - the hedge was taken for attempt 1,
    whose end the hooks never heard, and the tasks were unnamed ("Task-5")."""
    events, names = [], []

    async def main():
        shared = asyncio.get_running_loop().create_future()

        async def answer_after_the_hedge():
            await asyncio.sleep(0.05)
            names.extend(
                sorted(task.get_name() for task in others() if "attempt" in task.get_name())
            )
            shared.set_result("answer")

        answering = asyncio.create_task(answer_after_the_hedge())
        result = await hedged(lambda: shared, [0.01], name="lookup", observe=events.append)
        await answering
        return result

    assert run(main()) == "answer"
    assert names == ["lookup attempt 1", "lookup attempt 2"]
    assert [(event.kind, event.number) for event in events] == [("hedge", 2), ("success", 1)]


def test_hedge_takes_an_object_with_an_async_call_method():
    """An instance whose __call__ is async is an async function for @hedge."""

    class Replica:
        async def __call__(self, key):
            return key * 2

    assert run(hedge([0.1])(Replica())("ab")) == "abab"


def test_a_one_shot_iterator_serves_a_hedged_call():
    """hedged() uses its delays once, so any iterable does, a strategy included."""
    script = Script(fail(ConnectionError()), fail(ConnectionError()), answer("third"))
    assert run(hedged(script, constant(0.001))) == "third"


def test_a_bad_delay_drawn_during_the_call_cancels_the_attempts_already_sent():
    """A factory whose second delay is negative: attempt 1 is cancelled and the error names delays."""
    script = Script(forever, forever)

    async def main():
        with pytest.raises(ArgumentValueError, match="delays"):
            await hedged(script, lambda: iter([0.01, -1]))
        assert not others()

    run(main())
    assert script.cancelled == [1]


def test_a_bad_first_delay_from_a_factory_fails_before_any_attempt():
    """The first delay is drawn and checked before attempt 1 starts."""
    script = Script(answer("never"))
    with pytest.raises(ArgumentTypeError, match="delays"):
        run(hedged(script, lambda: ["soon"]))
    assert script.started == []


def test_a_call_may_return_any_awaitable():
    """Not only coroutines: an object with __await__ is awaited in a task too, and its answer wins."""

    class Reply:
        def __await__(self):
            return asyncio.sleep(0.01, result="awaited").__await__()

    assert run(hedged(Reply, [0])) == "awaited"


def test_a_call_that_returns_no_awaitable_is_refused():
    """call() must return an awaitable: a plain value is an ArgumentTypeError naming call."""
    with pytest.raises(ArgumentTypeError, match="call"):
        run(hedged(lambda: 42, []))


@pytest.mark.parametrize("library", ["asyncio", "trio"])
def test_an_attempt_whose_call_never_gave_an_awaitable_is_told_as_never_run(library):
    """@hedge called with the wrong arguments: attempt 1 never ran (the function raised
    TypeError as it was called), and the hooks hear the call end as an error of attempt
    1, "interrupted" - under asyncio they heard of an attempt 2, under trio of an
    attempt 1 that ran (its cancel scope was noted before the call was made)."""
    import trio
    import trio.testing

    events = []

    @hedge([1.0], observe=events.append)
    async def lookup(key):
        return key

    with pytest.raises(TypeError, match="key"):
        if library == "trio":
            trio.run(lookup, clock=trio.testing.MockClock(autojump_threshold=0))
        else:
            run(lookup())
    assert [(event.kind, event.number, event.reason) for event in events] == [
        ("error", 1, "interrupted")
    ]


def test_hedge_refuses_a_one_shot_iterator_and_sync_functions_at_decoration():
    """Decoration checks what it can: delays that would serve one call, a function that is not async."""
    rejects(lambda: hedge(iter([0.1])), ArgumentTypeError, "delays", "iterator")
    rejects(lambda: hedge(constant(0.1)), ArgumentTypeError, "delays", "iterator")
    rejects(lambda: hedge([0.1])(lambda: 1), ArgumentTypeError, "function", "async")
    rejects(lambda: hedge([0.1])(None), ArgumentTypeError, "function")


async def coroutine_function():
    return 1


async def needs_a_url(url):
    return url


BAD = [
    ({"call": None}, ArgumentTypeError, "call"),
    ({"call": needs_a_url}, ArgumentTypeError, "call", "no arguments", "needs_a_url(url)"),
    ({"delays": 5}, ArgumentTypeError, "delays", "iterable"),
    ({"delays": [-1]}, ArgumentValueError, "delays", "-1"),
    ({"delays": [0.1, -(10**400)]}, ArgumentValueError, "delays"),
    ({"delays": [math.nan]}, ArgumentValueError, "delays", "nan"),
    ({"delays": [True]}, ArgumentTypeError, "delays", "True"),
    ({"delays": ("1",)}, ArgumentTypeError, "delays", "'1'"),
    ({"on": "ConnectionError"}, ArgumentTypeError, "on"),
    ({"on": (ConnectionError, 3)}, ArgumentTypeError, "on"),
    ({"on_result": 5}, ArgumentTypeError, "on_result"),
    ({"budget": object()}, ArgumentTypeError, "budget", "try_retry"),
    ({"retry_after": 5}, ArgumentTypeError, "retry_after"),
    ({"name": 5}, ArgumentTypeError, "name", "string"),
]


@pytest.mark.parametrize("row", BAD, ids=[f"{i}-{row[2]}" for i, row in enumerate(BAD)])
def test_bad_arguments_are_rejected_at_once(row):
    """hedged() checks every argument when called, before anything is awaited; @hedge when made."""
    bad, error, parameter, *words = row
    arguments = {"call": coroutine_function, "delays": [0.1], **bad}
    call, delays = arguments.pop("call"), arguments.pop("delays")
    rejects(lambda: hedged(call, delays, **arguments), error, parameter, *words)
    if parameter != "call":
        rejects(lambda: hedge(delays, **arguments), error, parameter, *words)


# --- In simulated time: every timing decision, exactly ----------------------------

BENCHMARK = Path(__file__).resolve().parent.parent / "benchmarks" / "hedging.py"


def benchmark():
    """benchmarks/hedging.py as a module: its simulated-time event loop and its model."""
    spec = importlib.util.spec_from_file_location("hedging_benchmark", BENCHMARK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def expected(plans, delays):
    """What hedged() must do, worked out by hand: attempt k + 1 starts *delays[k]* after
    attempt k (never after an infinite delay), or at once when an attempt fails after
    attempt k started; the call ends with the earliest success, else with the last
    failure.  Returns (the attempt that decides the outcome, when, attempts started,
    whether two times compared on the way were too close to call)."""
    starts = [0.0]
    compared = []  # pairs of times whose order decided something

    while True:
        ends = [(start + plans[k][0], k) for k, start in enumerate(starts)]
        success = min(((end, k) for end, k in ends if plans[k][1]), default=(math.inf, None))
        compared += [(a, b) for (a, _), (b, _) in zip(ends, ends[1:])]
        if len(starts) > len(delays):
            break
        timer = starts[-1] + delays[len(starts) - 1]
        if timer == math.inf:  # no further hedge, not even after a failure
            break
        failures = [end for end, k in ends if not plans[k][1]]
        compared += [(end, starts[-1]) for end in failures]
        following = min([timer, *(end for end in failures if end > starts[-1])])
        compared.append((following, success[0]))
        if following >= success[0]:
            break
        starts.append(following)
    close = any(abs(a - b) < 1e-6 for a, b in compared if math.inf not in (a, b))
    if success[1] is not None:
        return success[1], success[0], len(starts), close
    end, k = max(ends)
    return k, end, len(starts), close


@given(
    plans=st.lists(st.tuples(st.floats(0.001, 2.0), st.booleans()), min_size=4, max_size=4),
    delays=st.lists(st.one_of(st.floats(0.0, 1.0), st.just(math.inf)), max_size=3),
)
def test_in_simulated_time_every_call_ends_when_and_how_the_rules_say(plans, delays):
    """On an event loop whose clock jumps from timer to timer, hedged() starts each attempt and
    ends each call (winner, time, attempts) exactly as the rules worked out by hand say."""
    k, end, attempts, close = expected(plans, delays)
    assume(not close)  # a tie is decided by the order of callbacks, not by the rules
    started = []

    async def attempt():
        number = len(started)
        started.append(asyncio.get_running_loop().time())
        latency, ok = plans[number]
        await asyncio.sleep(latency)
        if not ok:
            raise ConnectionError(number)
        return number

    async def call():
        loop = asyncio.get_running_loop()
        start = loop.time()
        try:
            outcome = await hedged(attempt, delays, on=ConnectionError)
        except ConnectionError as error:
            outcome = error.args[0]
        assert not others()
        return outcome, loop.time() - start

    outcome, took = SIMULATE(call())
    assert (outcome, len(started)) == (k, attempts)
    assert took == pytest.approx(end, abs=1e-9)


SIMULATE = benchmark().simulate


@pytest.mark.long_run
def test_the_benchmark_prints_both_rows_and_draws_its_picture(tmp_path):
    """benchmarks/hedging.py --quick: a row without hedging and one with, the hedge cutting p99.9
    more than tenfold for at most 10% more attempts, and the picture written."""
    result = subprocess.run(
        [sys.executable, str(BENCHMARK), "--quick", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    rows = {
        line.split("  ")[0]: line.split()[-4:]
        for line in result.stdout.splitlines()
        if line.startswith(("no hedging", "one hedge after"))
    }
    assert len(rows) == 2, result.stdout
    plain, hedge = rows.pop("no hedging"), rows.popitem()[1]
    number = lambda cell: float(cell.replace(",", "").rstrip("%"))
    assert number(hedge[2]) * 10 < number(plain[2])  # p99.9
    assert number(plain[3]) == 0.0 and 0.0 < number(hedge[3]) <= 10.0  # extra attempts, %
    assert (tmp_path / "hedging.png").stat().st_size > 10_000


# -- no garbage for the cyclic collector (issue 23: 14) -------------------------------------------


@pytest.mark.parametrize("library", ["asyncio", "trio"])
def test_a_failing_hedged_call_leaves_nothing_for_the_cyclic_collector(library):
    """Calls whose every attempt fails, and one that wins after failures: gc.collect() finds nothing.

    Counted inside one run of the event loop: trio.run and asyncio.run leave
    cycles of their own when they end."""
    import trio
    import trio.testing

    async def down(replies):
        if next(replies) == "fail":
            raise ConnectionError("down")  # no local keeps it: no cycle of the test's own
        return "ok"

    async def call(*replies):
        left = iter(replies)
        with contextlib.suppress(ConnectionError):
            await hedged(lambda: down(left), [0.0])

    async def garbage():
        await call("fail", "fail")  # warm up: the event loop's and the modules' own objects
        gc.collect()
        gc.disable()
        try:
            for _ in range(20):
                await call("fail", "fail")
            await call("fail", "ok")
            return gc.collect()
        finally:
            gc.enable()

    if library == "trio":
        found = trio.run(garbage, clock=trio.testing.MockClock(autojump_threshold=0))
    else:
        found = asyncio.run(garbage())
    assert found == 0


@pytest.mark.parametrize(
    "option", [{"deadline": 1.0}, {"attempt_timeout": 1.0}, {"breaker": None}, {"sleep": None}]
)
def test_a_retry_drivers_option_hedging_cannot_use_is_refused_not_ignored(option):
    """deadline=, attempt_timeout=, breaker=, sleep= ...: options of the retry drivers that
    hedging has no use for are refused naming the option (a deadline was accepted and
    ignored: the call ran unbounded), by hedge at decoration and by hedged."""
    (name,) = option
    rejects(lambda: hedge([0.1], **option), TypeError, name, f"{name}=", "retry_after_beyond")
    with pytest.raises(TypeError, match=f"hedging takes no {name}= option"):
        run(hedged(Script(answer("first")), [0.1], **option))


def test_retry_after_beyond_bounds_how_far_a_hint_holds_the_next_hedge_back():
    """A hint of 10 s with retry_after_beyond=0.02: the next hedge goes 20 ms after the
    failure, not 10 s (the option was accepted and not used)."""
    script = Script(fail(ConnectionError("slow down")), answer("second"))
    hedging = hedged(script, [3600], retry_after=lambda outcome: 10.0, retry_after_beyond=0.02)
    assert run(hedging) == "second"
    assert 0.02 - SLACK <= script.started[1] - script.started[0] < 1.0


def test_retry_after_max_clamps_how_long_a_hint_holds_the_next_hedge_back():
    """docs/timeouts-and-hedging.rst: a hint is clamped to the call's retry_after_max, not
    only to RETRY_AFTER_MAX: a hint of 10 s with retry_after_max=0.02 waits 20 ms."""
    script = Script(fail(ConnectionError("slow down")), answer("second"))
    hedging = hedged(script, [3600], retry_after=lambda outcome: 10.0, retry_after_max=0.02)
    assert run(hedging) == "second"
    assert 0.02 - SLACK <= script.started[1] - script.started[0] < 1.0


def test_the_events_elapsed_counts_from_the_start_of_the_call():
    """The hedge sent after 30 ms says elapsed >= 30 ms (it said 0.0: the clock started at
    the first event), and the winner's success after it says more."""
    events = []
    script = Script(answer("first", after=0.06), answer("second"))
    assert run(hedged(script, [0.03], observe=events.append)) == "second"
    hedge_event, *_, success = events
    assert hedge_event.kind == "hedge" and hedge_event.elapsed >= 0.03 - SLACK
    assert success.kind == "success" and success.elapsed >= hedge_event.elapsed
    # Its delay, as RetryEvent.delay says: the time since attempt 1 started (docs said None).
    assert 0.03 - SLACK <= hedge_event.delay <= hedge_event.elapsed


def test_a_hint_too_long_to_wait_is_the_give_ups_reason():
    """A hint beyond any wait stops the hedges: the give-up says "retry_after", as the
    retry drivers say it (it said "exhausted")."""
    events = []
    script = Script(fail(ConnectionError("down")), answer("never"))
    hedging = hedged(
        script, [0.01], retry_after=lambda o: 10**400, retry_after_max=math.inf,
        observe=events.append,
    )  # fmt: skip
    with pytest.raises(ConnectionError):
        run(hedging)
    assert [(event.kind, event.reason) for event in events][-1] == ("give_up", "retry_after")


def test_a_budget_that_stops_the_hedges_is_the_give_ups_reason():
    """No hedge left because the budget refused: the give-up says "budget", not "exhausted"."""
    events = []
    script = Script(fail(ConnectionError("down")), answer("never"))
    with pytest.raises(ConnectionError):
        run(hedged(script, [0.01], budget=drained(), observe=events.append))
    assert [(event.kind, event.reason) for event in events][-1] == ("give_up", "budget")


def test_hedgings_own_error_cancels_the_attempts_running_and_is_told_as_the_calls_end():
    """An on_result predicate that raises ends the call with its error: the
    attempts still running are cancelled, and the hooks hear attempt 1's
    cancellation and the call's end, an "error" of the newest attempt running,
    as for an interrupted call (they heard nothing: a span stayed open)."""
    events = []

    def judge(result):
        raise KeyError(result)

    script = Script(forever, answer("ok", after=0.01), forever)

    async def main():
        with pytest.raises(KeyError) as raised:
            await hedged(script, [0, 0], on_result=judge, observe=events.append)
        assert not others()
        return raised.value

    error = run(main())
    assert sorted(script.cancelled) == [1, 3]
    assert [(e.kind, e.number) for e in events] == [
        ("hedge", 2),
        ("hedge", 3),
        ("cancelled", 1),
        ("error", 3),
    ]
    assert events[-1].outcome is error


def test_a_hook_that_broke_the_call_and_breaks_again_as_it_hears_its_end_leaves_the_first_error():
    """A hook raises as it hears hedge 2, and again as it hears the call end: the first error
    stands (the second is the hook's trouble hearing an end it caused)."""
    errors = iter([LookupError("first"), LookupError("second")])

    def hook(event):
        raise next(errors)

    async def main():
        with pytest.raises(LookupError, match="first"):
            await hedged(Script(forever, forever), [0], observe=hook)
        assert not others()

    run(main())
    assert next(errors, None) is None  # the second was raised: the hook heard the end


class BrokenBudget(Recorder):
    """A budget of the extended protocol whose record of *kind* raises once it is recorded."""

    def __init__(self, kind):
        super().__init__()
        self.kind = kind

    def record_success(self, first_attempt, spent=0.0):
        super().record_success(first_attempt, spent)
        if self.kind == "success":
            raise RuntimeError("budget broke")

    def record_failure(self, first_attempt):
        super().record_failure(first_attempt)
        if self.kind == "failure":
            raise RuntimeError("budget broke")


@pytest.mark.parametrize(
    ("kind", "plans", "delays"),
    [
        ("success", (answer("ok"),), [3600]),
        # (attempt 2 sent at once, still running as attempt 1 fails: it is cancelled)
        ("failure", (fail(ConnectionError("down"), after=0.01), forever), [0]),
    ],
    ids=["on a success", "on a failure"],
)
def test_a_budget_that_raises_as_it_hears_ends_the_call_as_an_error_of_that_attempt(
    kind, plans, delays
):
    """The budget raises as it hears how attempt 1 went (an error, which it does not
    hear of, is told to no budget): the call ends with its error, nothing left
    running, and the hooks hear an "error" of attempt 1 - not of an attempt 2 that
    never ran, "interrupted"."""
    script = Script(*plans)

    async def main():
        events = []
        with pytest.raises(RuntimeError, match="budget broke"):
            await hedged(script, delays, budget=BrokenBudget(kind), observe=events.append)
        assert not others()
        return [(event.kind, event.number, event.reason) for event in events]

    heard = run(main())
    if kind == "success":
        assert heard == [("error", 1, None)]
    else:
        assert heard == [("hedge", 2, None), ("cancelled", 2, None), ("error", 1, None)]
        assert script.cancelled == [2]


@pytest.mark.parametrize(
    ("breaks", "heard"),
    [
        # (the success was told: the call's end, nothing more)
        ("success", [("hedge", 2), ("cancelled", 1), ("success", 2)]),
        ("cancelled", [("hedge", 2), ("cancelled", 1), ("error", 2)]),
    ],
)
def test_a_hook_that_breaks_once_the_winner_is_in_ends_the_call_told_as_the_winners_end(
    breaks, heard
):
    """Attempt 2 answered, attempt 1 was cancelled, a hook raises as it hears the loser
    cancelled or the success: the call ends with the hook's error and the winner's end
    is told once, as the drivers tell it - the hooks heard, besides, an error of an
    attempt 3 that never was (with one delay there is none), "interrupted"."""
    events = []

    def hook(event):
        events.append(event)
        if event.kind == breaks:
            raise LookupError("the hook's")

    script = Script(forever, answer("ok"))

    async def main():
        with pytest.raises(LookupError, match="the hook's"):
            await hedged(script, [0], observe=hook)
        assert not others()

    run(main())
    assert [(event.kind, event.number) for event in events] == heard


def test_an_interruption_as_the_budget_hears_the_winner_is_told_as_the_winners_end():
    """The budget raises a BaseException (Ctrl-C arriving) as it records the winner's
    success: the call ends with it, told as an error of the winner - not of an attempt
    3 that never was, "interrupted", as a budget's Exception already is."""
    events = []

    class Interrupted(Recorder):
        def record_success(self, first_attempt, spent=0.0):
            raise Halt("Ctrl-C")

    script = Script(forever, answer("ok"))

    async def main():
        with pytest.raises(Halt, match="Ctrl-C"):
            await hedged(script, [0], budget=Interrupted(), observe=events.append)
        assert not others()

    run(main())
    assert [(event.kind, event.number) for event in events] == [
        ("hedge", 2),
        ("cancelled", 1),
        ("error", 2),
    ]


async def _fails():
    raise ConnectionError("down")


async def _fatal():
    raise ValueError("bad")


async def _answers():
    return 1


@pytest.mark.parametrize("error", [LookupError, Halt])
@pytest.mark.parametrize(
    "attempt, breaks, heard",
    [
        (_fails, "give_up", [("give_up", 1, "exhausted")]),
        (_fatal, "error", [("error", 1, None)]),
    ],
    ids=["give_up", "error"],
)
def test_a_hook_breaking_as_it_hears_the_end_is_told_no_second_end(attempt, breaks, heard, error):
    """A hook raises as it hears the call's end (a give-up, an error not retried), an
    Exception or not: its error ends the call, and no further end is told - an "error" of
    an attempt 2 that never ran ("interrupted") followed, as for a call cut short."""
    events = []

    def hook(event):
        events.append((event.kind, event.number, event.reason))
        if event.kind == breaks:
            raise error("hook broke")

    with pytest.raises(error):
        run(hedged(attempt, [], observe=hook))
    assert events == heard


def test_a_hook_breaking_as_it_hears_a_loser_cancelled_by_a_fatal_failure_tells_its_end():
    """Attempt 2 fails with what on= does not match while attempt 1 runs; a hook raises as it
    hears attempt 1 cancelled: the call ends with the hook's error, told once as attempt 2's
    end - it was told as an attempt 3 that never ran, and attempt 2's end never."""
    events = []

    def hook(event):
        events.append((event.kind, event.number))
        if event.kind == "cancelled":
            raise LookupError("hook broke")

    script = Script(forever, fail(ValueError("fatal"), after=0.01))
    with pytest.raises(LookupError):
        run(hedged(script, [0], on=ConnectionError, observe=hook))
    assert events == [("hedge", 2), ("cancelled", 1), ("error", 2)]


@pytest.mark.parametrize(
    "attempt, options",
    [(_answers, {"on_result": lambda result: 1 / 0}), (_fails, {"on": lambda exc: 1 / 0})],
    ids=["on_result", "on"],
)
def test_a_predicate_breaking_on_the_only_attempt_is_told_as_its_end(attempt, options):
    """on_result or on raises as it judges the one attempt, none other under way: the call
    ends with its error, told as an "error" of attempt 1, which ran - as @retry tells it
    (an "interrupted" attempt 2, which never existed, was told)."""
    events = []
    with pytest.raises(ZeroDivisionError):
        run(hedged(attempt, [], observe=events.append, **options))
    assert [(e.kind, e.number, e.reason, type(e.outcome)) for e in events] == [
        ("error", 1, None, ZeroDivisionError)
    ]


def test_a_hook_breaking_as_it_hears_a_broken_budgets_end_is_told_no_second_end():
    """The budget raises as it hears attempt 1 fail, and a hook raises as it hears that
    error end the call: the hook's error ends it, as at any end it breaks, and the call's
    end is told once (a second end, of an attempt 2 "interrupted", followed)."""
    events = []

    def hook(event):
        events.append((event.kind, event.number, event.reason))
        if event.kind == "error":
            raise LookupError("hook broke")

    with pytest.raises(LookupError, match="hook broke"):
        run(hedged(_fails, [], budget=BrokenBudget("failure"), observe=hook))
    assert events == [("error", 1, None)]


def cancelled_twice_as_the_attempts_stop(hook):
    """A hedged call of two attempts, each taking a moment to stop, whose caller is
    cancelled and cancelled again as they stop (anyio's scopes on asyncio cancel at every
    pass): the caller gets its CancelledError, no attempt is left; *hook* hears the events."""

    async def slow_to_stop():
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            await asyncio.sleep(0.01)  # (stopping takes a moment: the caller is cancelled again)
            raise

    async def main():
        caller = asyncio.ensure_future(hedged(slow_to_stop, [0], observe=hook))
        await asyncio.sleep(0.005)
        caller.cancel()
        await asyncio.sleep(0)
        caller.cancel()
        with pytest.raises(asyncio.CancelledError):
            await caller
        assert not others()

    run(main())


def test_a_caller_cancelled_again_while_the_attempts_stop_still_hears_each_end():
    """The caller is cancelled, and again while the attempts stop: the hooks hear attempt 1
    cancelled and the call end as an error of attempt 2, each once - attempt 1's end was
    never told."""
    events = []
    cancelled_twice_as_the_attempts_stop(events.append)
    assert [(event.kind, event.number) for event in events] == [
        ("hedge", 2),
        ("cancelled", 1),
        ("error", 2),
    ]


def test_a_hook_breaking_as_a_caller_cancelled_again_hears_the_losers_leaves_the_cancellation():
    """The caller is cancelled twice while the attempts stop, and a hook raises as it hears
    a loser cancelled: the caller still gets its CancelledError (the hook's error took its
    place), and the call's end is told."""
    events = []

    def hook(event):
        events.append((event.kind, event.number))
        if event.kind == "cancelled":
            raise LookupError("hook broke")

    cancelled_twice_as_the_attempts_stop(hook)
    assert events == [("hedge", 2), ("cancelled", 1), ("error", 2)]
