"""The drivers' shortcuts against their general path: the same script, the same story.

``@retry``'s bare first try, the success its wrappers tell the hooks
themselves, the quiet success of the loops and of ``Call``, the check of a
breaker or a throttle asked before any call is made: each must do exactly
what the general path does.  A part of the user's that overrides every
stage (and a hook that hears every event) turns each shortcut off, so the
same script run with and without it, through every form, must give the same
result, hook events, part calls, sleeps and parts' state.
"""

from __future__ import annotations

import asyncio
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_drivers import FakeTime  # a clock that moves only when slept on

from backoff_iter import (
    AdaptiveThrottle,
    CircuitBreaker,
    CubicRateLimiter,
    RetryBudget,
    RetryQuota,
    TokenBucket,
    aretrying,
    instrument,
    per_failure,
    retry,
    retrying,
)
from backoff_iter.parts import BreakerPart, Part

FORMS = ("@retry", "async @retry", "retrying", "aretrying")


def key(outcome):
    """What an outcome is, comparable across runs (each run makes its own objects)."""
    if isinstance(outcome, BaseException):
        return (type(outcome).__name__, str(outcome))
    return outcome


class Halt(BaseException):
    """An interruption (no Exception): no part hears of the attempt it ends."""


#: The scripted outcomes: retried errors (a plain one, one the hint applies to,
#: one the `throttled` predicate names), one never retried, an interruption, a
#: result on_result rejects, and a success.
OUTCOMES = {
    "err": lambda tag: OSError(f"err {tag}"),
    "conn": lambda tag: ConnectionError(f"conn {tag}"),
    "slow": lambda tag: TimeoutError(f"slow {tag}"),
    "fatal": lambda tag: ValueError(f"fatal {tag}"),
    "halt": lambda tag: Halt(f"halt {tag}"),
    "bad": lambda tag: f"bad {tag}",
    "ok": lambda tag: f"ok {tag}",
}


class Recorder(Part):
    """A part of the user's that hears each attempt and is asked for each retry
    (no before_attempt: the first try may still run bare)."""

    def __init__(self, log, refusals, trip):
        self.log, self.refusals, self.trip = log, refusals, trip

    def after_attempt(self, outcome, kind, number, spent):
        self.log.append(("after", key(outcome), kind, number, spent))
        self.trip("after_attempt")

    def allow_retry(self, outcome, kind):
        self.log.append(("allow", key(outcome), kind))
        asked = sum(1 for entry in self.log if entry[0] == "allow")
        return 0.0 if asked in self.refusals else 2.0

    def attempt_dropped(self, taken):
        self.log.append(("dropped", taken))


class Everything(Part):
    """A part that overrides every stage and does nothing: with it, no shortcut is taken."""

    def before_attempt(self, call):
        return 0.0

    def after_attempt(self, outcome, kind, number, spent):
        pass

    def allow_retry(self, outcome, kind):
        return 1.0


def nobody(event):
    """A hook that hears every event and ignores it: no success is quiet."""


class Trip:
    """Makes one callback of the user's raise, at its *at*-th call: an error,
    or (*halts*) an interruption."""

    def __init__(self, where, at, halts):
        self.where, self.at, self.calls, self.halts = where, at, 0, halts

    def __call__(self, where):
        if where == self.where:
            self.calls += 1
            if self.calls == self.at:
                raise (Halt if self.halts else RuntimeError)(f"{where} broke")


def variant(name, kind, time, log, trip):
    """The library's breaker or throttle (*kind*) as option *name* makes it:
    itself, a subclass with no change, one whose record() has the library's
    signature or the protocol's, one whose record() is set on the instance
    (of either signature), or an object of the protocol wrapping one; with
    the one it wraps.  Each record() but the library's own logs what it is
    told, under the kind's name, and may raise (the trip's ``"record"``)."""
    what = "breaker" if kind is CircuitBreaker else "throttle"

    def logged(record):
        def told(success, *failure):
            log.append((what, name, success, *map(key, failure)))
            trip("record")
            record(success, *failure)

        return told

    class Sub(kind):
        pass

    class Full(kind):
        def record(self, success, failure=None):
            logged(super().record)(success, failure)

    class Short(kind):
        def record(self, success):
            logged(super().record)(success)

    classes = {"own": kind, "sub": Sub, "full sub": Full, "short sub": Short, "duck": kind}
    made_as = classes.get(name, Sub)
    if kind is CircuitBreaker:
        made = made_as(
            failure_ratio=0.5, minimum_throughput=2, break_duration=3.0, clock=time.clock
        )
    else:
        made = made_as(k=1.1, window=60.0, clock=time.clock, rng=random.Random(7))
    if name == "patched full":
        record = made.record
        made.record = lambda success, failure=None: logged(record)(success, failure)
    elif name == "patched short":
        record = made.record
        made.record = lambda success: logged(record)(success)
    elif name == "duck":

        class Duck:
            def check(self):
                log.append((what, "check"))
                made.check()

            def record(self, success):
                logged(made.record)(success)

        return Duck(), made
    return made, made


class SubBucket(TokenBucket):
    """The library's token bucket, subclassed without a change: not its exact class."""


def make_parts(spec, time, log, trip):
    """The options of *spec* that hold state, made afresh for one run, and how to read their state."""
    options, states = {}, []
    budget = spec["budget"]
    if budget == "bucket":
        options["budget"] = bucket = TokenBucket(max_tokens=3, token_ratio=0.5)
        states.append(lambda: bucket.tokens)
    elif budget == "sub bucket":
        options["budget"] = sub = SubBucket(max_tokens=3, token_ratio=0.5)
        states.append(lambda: sub.tokens)
    elif budget == "quota":
        options["budget"] = quota = RetryQuota(capacity=40, retry_cost=14, throttle_cost=5)
        states.append(lambda: quota.available)
    elif budget == "retry budget":
        options["budget"] = window = RetryBudget(ratio=0.5, min_per_second=0.1, clock=time.clock)
        states.append(lambda: (window._balance, window._deposited, len(window._calls)))
    breaker = spec["breaker"]
    if breaker:
        name = "own" if breaker == "part" else spec["variant"]
        given, made = variant(name, CircuitBreaker, time, log, trip)
        if breaker == "part":  # the library's part itself, given among parts=
            options["parts"] = [BreakerPart(made)]
        else:
            options["breaker"] = given
        states.append(lambda: (made.state, made._counts.first, made._counts.second, made._until))
        if breaker == "two":  # and a second one, of a longer break, among parts=
            second = CircuitBreaker(
                failure_ratio=0.5, minimum_throughput=2, break_duration=7.0, clock=time.clock
            )
            options["parts"] = [BreakerPart(second)]
            states.append(lambda: (second.state, second._until))
    if spec["throttle"]:
        options["throttle"], gate = variant(spec["variant"], AdaptiveThrottle, time, log, trip)
        states.append(lambda: (gate.probability, key(gate._rejected_by)))
    if spec["limiter"]:
        options["rate_limiter"] = limiter = CubicRateLimiter(clock=time.clock)
        states.append(lambda: (limiter.enabled, limiter.rate, limiter.tokens))
    if spec["recorder"] is not None:
        options["parts"] = [*options.get("parts", []), Recorder(log, spec["recorder"], trip)]
    return options, lambda: [state() for state in states]


def make_options(spec, time, log, sync):
    """Every option of *spec* for one run: the parts made afresh, the hooks logging."""
    trip = Trip(*spec["trip"]) if spec["trip"] else lambda where: None
    options, state = make_parts(spec, time, log, trip)
    options.update(on=OSError, name="f", clock=time.clock)

    def sleep(seconds):
        trip("sleep")
        time.sleep(seconds)

    async def asleep(seconds):
        sleep(seconds)

    options["sleep"] = sleep if sync else asleep
    if spec["schedule"] == "per failure":
        rng = random.Random(3)
        options["delays"] = lambda: per_failure(
            {ConnectionError: [0.25, 0.5, 1.0]},
            throttle=[2.0, 4.0],
            default=spec["delays"],
            jitter="full",
            rng=rng,
        )
    else:
        options["delays"] = spec["delays"]
    if spec["on_result"]:

        def on_result(result):
            trip("on_result")
            return result.startswith("bad")

        options["on_result"] = on_result
    if spec["observe"]:

        def observe(event):
            log.append(("event", event.kind, event.number, key(event.outcome), event.delay))
            log.append((event.slept, event.elapsed, event.reason))
            trip(f"observe {event.kind}")

        options["observe"] = observe
    if spec["before_sleep"]:

        def before_sleep(attempt, outcome, delay):
            log.append(("before_sleep", attempt.number, attempt.delay, attempt.elapsed))
            log.append((attempt.timeout, key(outcome), delay))
            trip("before_sleep")

        options["before_sleep"] = before_sleep
    if spec["give_up"]:

        def give_up(attempt, outcome):
            log.append(("give_up", attempt.number, attempt.delay, attempt.elapsed, key(outcome)))
            trip("give_up")

        options["give_up"] = give_up
    if spec["retry_after"]:

        def retry_after(outcome):
            trip("retry_after")
            return 1.5 if isinstance(outcome, ConnectionError) else None

        options["retry_after"] = retry_after
    if spec["throttled"]:

        def throttled(outcome):
            trip("throttled")
            return isinstance(outcome, TimeoutError)

        options["throttled"] = throttled
    if spec["deadline"] is not None:
        options["deadline"] = spec["deadline"]
    if spec["attempt_timeout"]:
        options["attempt_timeout"] = 2.5
    return options, state


def operation(script, time, log, duration, number):
    """Call *number*'s function: each attempt takes *duration* seconds and gives
    the script's next outcome (``ok`` once it runs out)."""
    outcomes = iter(script)

    def attempt(timeout=None):
        tag = f"{number}.{len(log)}"
        log.append(("attempt", timeout))
        time.now += duration
        made = OUTCOMES[next(outcomes, "ok")](tag)
        if isinstance(made, BaseException):
            raise made
        return made

    return attempt


def sync_call(form, options, attempt, timed):
    """One call of *attempt* through the sync *form*: what it returns."""
    if form == "@retry":
        decorator_options = dict(options)
        if timed:
            decorator_options["timeout_arg"] = "timeout"
        return retry(**decorator_options)(attempt)()
    delays = options.pop("delays")
    result = None
    for each in retrying(delays, **options):
        with each:
            result = each.set_result(attempt(each.timeout) if timed else attempt())
    return result


async def async_call(form, options, attempt, timed):
    """One call of *attempt* through the async *form*: what it returns."""
    if form == "async @retry":
        decorator_options = dict(options)
        if timed:
            decorator_options["timeout_arg"] = "timeout"

        async def function(**kwargs):
            return attempt(**kwargs)

        return await retry(**decorator_options)(function)()
    delays = options.pop("delays")
    result = None
    async for each in aretrying(delays, **options):
        async with each:
            result = each.set_result(attempt(each.timeout) if timed else attempt())
    return result


def run(form, spec, forced):
    """The story of *spec*'s calls through *form*: each call's return or
    error, then what the hooks, the parts and the sleeps saw, and the parts'
    state after each call.  *forced*: with a part and a hook that turn every
    shortcut off."""
    time, log = FakeTime(), []
    sync = form in ("@retry", "retrying")
    options, state = make_options(spec, time, log, sync)
    if forced:
        options["parts"] = [*options.get("parts", []), Everything()]
        if forced == "hooks":
            options["observe"] = [options["observe"], nobody] if "observe" in options else nobody
    story = []

    async def calls():
        for number, script in enumerate(spec["calls"]):
            attempt = operation(script, time, log, spec["duration"], number)
            given = dict(options)
            try:
                if sync:
                    returned = sync_call(form, given, attempt, spec["attempt_timeout"])
                else:
                    returned = await async_call(form, given, attempt, spec["attempt_timeout"])
                story.append(("returned", key(returned)))
            except BaseException as error:  # (an interruption of the script's, too)
                story.append(("raised", key(error), key(error.__cause__)))
            story.append(("state", state()))
            time.now += spec["pause"]

    if spec["process"]:  # a hook of the whole process, hearing every event or only failures

        def heard(event):
            log.append(("process", event.kind, event.number, key(event.outcome), event.delay))
            log.append((event.slept, event.reason))
            if spec["process"] == "every":  # (one of failures only counts from the end of a
                log.append(event.elapsed)  # bare first try: RetryEvent.elapsed says so)

        if spec["process"] == "failures":
            heard.events = {"retry", "give_up"}
        instrument.enable(heard)
    try:
        asyncio.run(calls())
    finally:
        instrument.disable()
    return story, log, time.slept


#: How the breaker and the throttle are made (see variant).
VARIANTS = ["own", "sub", "full sub", "short sub", "patched full", "patched short", "duck"]


def specs(variant):
    """A few calls of one policy, each a script of outcomes, and a mix of
    options: its breaker and its throttle, if any, made as *variant* says
    ("no parts": none, nor a budget, a rate limiter or a part of the user's)."""
    outcome = st.sampled_from(list(OUTCOMES))
    parts = variant != "no parts"
    return st.fixed_dictionaries(
        {
            "variant": st.just(variant),
            "calls": st.lists(st.lists(outcome, max_size=4), min_size=1, max_size=3),
            "delays": st.lists(st.sampled_from([4.0, 0.0, 0.5, 1.0]), min_size=1, max_size=3),
            "schedule": st.sampled_from(["list", "list", "per failure"]),
            "duration": st.sampled_from([0.75, 0.0]),
            "pause": st.sampled_from([0.0, 5.0]),
            "on_result": st.booleans(),
            "observe": st.booleans(),
            "before_sleep": st.booleans(),
            "give_up": st.booleans(),
            "retry_after": st.booleans(),
            "throttled": st.booleans(),
            "deadline": st.sampled_from([2.0, None, 6.0]),
            "attempt_timeout": st.sampled_from([False, False, False, True]),
            "budget": st.sampled_from(
                [None, "bucket", "sub bucket", "quota", "retry budget"] if parts else [None]
            ),
            "breaker": st.sampled_from(
                ["variant", "variant", "part", "two", None] if parts else [None]
            ),
            "throttle": st.booleans() if parts else st.just(False),
            "limiter": st.booleans() if parts else st.just(False),
            "recorder": st.none() | st.frozensets(st.integers(1, 4), max_size=2)
            if parts
            else st.none(),
            "process": st.sampled_from([None, "every", "failures"]),
        }
    )


def trips(spec):
    """None, or one of *spec*'s callbacks of the user's to raise at its 1st, 2nd
    or 3rd call, and whether it raises an interruption (see Trip)."""
    where = ["sleep"]
    if spec["observe"]:
        where += [f"observe {kind}" for kind in ("retry", "give_up", "success", "error")]
    for callback in ("on_result", "before_sleep", "give_up", "retry_after", "throttled"):
        if spec[callback]:
            where.append(callback)
    if spec["recorder"] is not None:
        where.append("after_attempt")
    if spec["variant"] not in ("own", "sub") and (spec["breaker"] or spec["throttle"]):
        where.append("record")
    return st.none() | st.tuples(st.sampled_from(where), st.integers(1, 3), st.booleans())


def tells_the_same_story(spec):
    """Each form of *spec*, its shortcuts on and turned off, tells the story of
    the loop with every shortcut off."""
    instrument.disable()  # no process-wide hook: the logger of retries reads the clock its own way
    try:
        reference = run("retrying", spec, "hooks")
        for form in FORMS:
            for forced in (None, "part", "hooks"):
                assert run(form, spec, forced) == reference, (form, forced)
    finally:
        instrument.reset()


@pytest.mark.parametrize("variant", VARIANTS)
@settings(max_examples=25)
@given(data=st.data())
def test_every_shortcut_tells_the_story_the_general_path_tells(variant, data):
    """Each form, its shortcuts on and turned off (a part overriding every
    stage, and a hook hearing every event, besides): the same returns and
    errors, hook events, part calls, sleeps and parts' state - and each form
    the same as the others; its breaker and throttle made as *variant* says."""
    spec = data.draw(specs(variant), "spec")
    spec["trip"] = data.draw(trips(spec), "trip")
    tells_the_same_story(spec)


@settings(max_examples=200)
@given(data=st.data())
def test_every_shortcut_of_a_policy_of_no_part_tells_the_story_the_general_path_tells(data):
    """The same, for policies of hooks and callbacks alone (no budget, breaker,
    throttle, rate limiter nor part of the user's), whose calls take the most
    shortcuts: a success nobody is told of, a retry that is just the next delay."""
    spec = data.draw(specs("no parts"), "spec")
    spec["trip"] = data.draw(trips(spec), "trip")
    tells_the_same_story(spec)


class Never:
    """An rng whose draw no throttle's probability exceeds: it never refuses."""

    def random(self):
        return 1.0 - 1e-12


def _record_set_on(kind, signature, log):
    """A subclass of *kind* (the library's breaker or throttle) whose record()
    is a function of *signature* that logs what it is given: set on the
    instance, or a staticmethod of the class."""

    def full(success, failure=None):
        log.append((success, failure))

    def short(success):
        log.append((success,))

    # (a throttle told nothing of its own would refuse: its draws here never do)
    arguments = {"rng": Never()} if kind is AdaptiveThrottle else {}
    if signature == "static full":

        class Static(kind):
            record = staticmethod(full)

        return Static(**arguments)

    class Sub(kind):
        pass

    made = Sub(**arguments)
    made.record = full if signature == "full" else short
    return made


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("option", ["breaker", "throttle"])
@pytest.mark.parametrize("signature", ["short", "full", "static full"])
def test_a_record_set_on_the_instance_is_called_as_its_own_signature_says(
    form, option, signature, no_process_hooks
):
    """A breaker's or a throttle's record() set on the instance (of a subclass;
    or a staticmethod) is called as its own signature says, by @retry's bare first
    try as by the loop: a one-argument one with the success alone (the loop
    gave it two, a TypeError), a two-argument one with the result too (the
    bare first try gave it none) - the class's signature was read, not its."""
    log = []
    kind = CircuitBreaker if option == "breaker" else AdaptiveThrottle
    options = {option: _record_set_on(kind, signature, log), "on": OSError}
    time, script = FakeTime(), iter([OSError("down"), "ok", "ok"])

    def attempt(timeout=None):
        outcome = next(script)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    options["sleep"] = time.sleep if form in ("@retry", "retrying") else time.asleep

    async def calls():
        for _ in range(2):  # a success at once, then one after a retry
            given = {**options, "delays": [0.0]}
            if form in ("@retry", "retrying"):
                assert sync_call(form, given, attempt, False) == "ok"
            else:
                assert await async_call(form, given, attempt, False) == "ok"

    asyncio.run(calls())
    if signature == "short":
        assert log == [(False,), (True,), (True,)]
    else:
        assert log[1:] == [(True, "ok"), (True, "ok")]
        assert log[0][0] is False and key(log[0][1]) == ("OSError", "down")


@pytest.mark.parametrize("form", FORMS)
def test_a_quotas_try_retry_set_on_the_instance_is_called_as_its_own_signature_says(
    form, no_process_hooks
):
    """A RetryQuota (of a subclass) whose try_retry() set on the instance takes
    the outcome alone is asked with it alone: the class's signature, which
    takes whether it was a throttle too, was read (a TypeError at the retry)."""

    class Quota(RetryQuota):
        pass

    asked, quota = [], Quota()
    quota.try_retry = lambda outcome: asked.append(key(outcome)) or 1.0
    script = iter([OSError("down"), "ok"])

    def attempt(timeout=None):
        outcome = next(script)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    sync = form in ("@retry", "retrying")
    options = {"budget": quota, "on": OSError, "delays": [0.0]}
    options["sleep"] = FakeTime().sleep if sync else FakeTime().asleep
    if sync:
        assert sync_call(form, options, attempt, False) == "ok"
    else:
        assert asyncio.run(async_call(form, options, attempt, False)) == "ok"
    assert asked == [("OSError", "down")]


# -- streams: the per-item loops, resumable or not, sync or async ----------------------------


def stream_story(script, form, resume, forced, take):
    """What a stream decorated with @retry tells: the items the consumer took
    (closing it after *take*, if given) or its error, then what the hooks and
    the parts heard, and the sleeps.  Each attempt of *script* fails before
    its first item (``None``) or yields that many items and ends."""
    time, log = FakeTime(), []
    attempts = iter(script)
    bucket = TokenBucket(max_tokens=3)
    breaker = CircuitBreaker(failure_ratio=0.5, minimum_throughput=2, clock=time.clock)
    options = {
        "delays": [0.5, 1.0, 2.0],
        "on": OSError,
        "name": "s",
        "clock": time.clock,
        "sleep": time.sleep if form == "sync" else time.asleep,
        "budget": bucket,
        "breaker": breaker,
        "parts": [Recorder(log, {3}, lambda where: None)] + ([Everything()] if forced else []),
        "observe": lambda event: log.append((*event[:3], key(event.outcome), *event[4:8])),
    }
    if resume:  # never asked: no attempt fails after its first item
        options["resume"] = lambda state: log.append("resumed") or iter(())

    def items():
        count = next(attempts, 2)
        if count is None:
            raise OSError("before the first item")
        return range(count)

    taken = []
    if form == "sync":

        @retry(**options)
        def source():
            yield from items()

        stream = source()
        try:
            for item in stream:
                taken.append(item)
                if len(taken) == take:
                    stream.close()
        except OSError as error:
            taken.append(key(error))
    else:

        @retry(**options)
        async def asource():
            for item in items():
                yield item

        async def consume():
            stream = asource()
            try:
                async for item in stream:
                    taken.append(item)
                    if len(taken) == take:
                        await stream.aclose()
            except OSError as error:
                taken.append(key(error))

        asyncio.run(consume())
    return taken, log, time.slept, bucket.tokens, breaker.state


@pytest.mark.parametrize("take", [None, 1])
@pytest.mark.parametrize(
    "script", [[], [None], [None, None], [None] * 4, [0], [None, 0], [3], [None, 3]]
)
def test_a_stream_tells_the_same_story_resumable_or_not_sync_or_async(
    script, take, no_process_hooks
):
    """A stream none of whose attempts fails after its first item: its items,
    hook events, part calls, sleeps and parts' state are the same whether it
    may be resumed (each item counted) or not (the source's items passed
    straight on), sync or async, its shortcuts on or turned off."""
    reference = stream_story(script, "sync", False, True, take)
    for form in ("sync", "async"):
        for resume in (False, True):
            for forced in (False, True):
                assert stream_story(script, form, resume, forced, take) == reference
