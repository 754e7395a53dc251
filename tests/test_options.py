"""The options are defined once: RetryOptions names and types them (every driver's
signature takes them from there), Policy holds their defaults and checks, and the
two agree - so a new option is one field, one default and check, one use."""

from __future__ import annotations

import ast
import functools
import inspect
import time
import weakref
from pathlib import Path
from types import FunctionType, MethodType
from typing import Any
from unittest import mock

import pytest
from checks import rejects
from hypothesis import given, settings
from hypothesis import strategies as st

from backoff_iter import (
    AdaptiveThrottle,
    BrokenCircuitError,
    CircuitBreaker,
    CubicRateLimiter,
    DecoratorOptions,
    HedgeOptions,
    RetryBudget,
    RetryOptions,
    RetryQuota,
    TokenBucket,
    aretrying,
    hedge,
    hedged,
    retry,
    retrying,
)
from backoff_iter._options import SETTERS, CallPlan, Policy
from backoff_iter.interop import RetryTransport
from backoff_iter.parts import Part

SOURCE = Path(inspect.getfile(Policy))


def test_every_option_has_one_check_and_one_default():
    """The keys of RetryOptions are exactly the options Policy checks, each with a class default."""
    assert set(RetryOptions.__annotations__) == set(SETTERS)
    assert all(name in vars(Policy) for name in SETTERS)


def test_hedging_and_the_decorator_take_the_same_options_and_a_few_more():
    """HedgeOptions is a part of RetryOptions; DecoratorOptions adds delays=, timeout_arg and resume."""
    assert set(HedgeOptions.__annotations__) < set(RetryOptions.__annotations__)
    decorator_only = {"delays", "timeout_arg", "resume"}
    assert set(DecoratorOptions.__annotations__) == {*RetryOptions.__annotations__, *decorator_only}
    assert not RetryOptions.__required_keys__ and not DecoratorOptions.__required_keys__


def field_docs(class_name):
    """{field: docstring} of a TypedDict class of _options.py, read as Sphinx reads them."""
    tree = ast.parse(SOURCE.read_text())
    [node] = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name]
    docs = {}
    for field, following in zip(node.body, node.body[1:]):
        if isinstance(field, ast.AnnAssign) and isinstance(following, ast.Expr):
            docs[field.target.id] = following.value.value
    return docs


def test_every_option_has_its_line_of_docs():
    """Each field of the options' TypedDicts has a docstring: the one place an option is described."""
    documented = {**field_docs("HedgeOptions"), **field_docs("RetryOptions")}
    documented.update(field_docs("DecoratorOptions"))
    assert set(documented) == set(DecoratorOptions.__annotations__)
    assert all(len(text.split()) >= 5 for text in documented.values())


@pytest.mark.parametrize(
    ("driver", "options"),
    [
        (retrying, "RetryOptions"),
        (aretrying, "RetryOptions"),
        (RetryTransport, "RetryOptions"),
        (retry, "DecoratorOptions"),
        (hedged, "HedgeOptions"),
        (hedge, "HedgeOptions"),
    ],
    ids=lambda value: getattr(value, "__name__", value),
)
def test_every_driver_signature_takes_the_options_from_their_one_definition(driver, options):
    """Each driver's **options is annotated Unpack[<the TypedDict>]: type checkers see every option."""
    if driver is retry:  # its overloads are what type checkers read
        assert overload_annotations(SOURCE.parent / "drivers.py", "retry") == {
            None,
            f"Unpack[{options}]",
        }
        return
    target = driver.__init__ if isinstance(driver, type) else driver
    if driver in (retrying, aretrying):
        target = Policy.__init__
    parameter = inspect.signature(target).parameters["options"]
    assert parameter.kind is inspect.Parameter.VAR_KEYWORD
    assert parameter.annotation == f"Unpack[{options}]"


def overload_annotations(path, name):
    """The annotations of **options in each @overload of *name* in *path* (None: it has none)."""
    found = set()
    for node in ast.parse(path.read_text()).body:
        decorators = [getattr(d, "id", None) for d in getattr(node, "decorator_list", [])]
        if isinstance(node, ast.FunctionDef) and node.name == name and "overload" in decorators:
            kwarg = node.args.kwarg
            found.add(None if kwarg is None else ast.unparse(kwarg.annotation))
    return found


def test_an_option_no_driver_knows_is_refused_naming_it():
    """retrying(retries=3): an argument error naming the unknown keyword."""
    for driver in (retrying, aretrying, retry, RetryTransport):
        with pytest.raises(TypeError, match="unexpected keyword argument 'retries'"):
            driver(retries=3)


def test_an_option_mistyped_is_refused_saying_which_was_meant():
    """retry(on_reslt=...): the nearest option is named; @retry's own error names
    no internal class (it said Policy())."""
    rejects(lambda: retry([0.1], on_reslt=bool), TypeError, "on_reslt", "did you mean 'on_result'")
    rejects(lambda: retrying(delay=[1.0]), TypeError, "delay", "retrying()", "'delays'")
    with pytest.raises(TypeError) as raised:
        retry(xyzzy=1)
    assert "Policy" not in str(raised.value) and "did you mean" not in str(raised.value)


@pytest.mark.parametrize(
    "option, meant",
    [
        ("attempts", "islice"),  # stamina
        ("max_tries", "islice"),  # backoff
        ("tries", "islice"),
        ("max_attempts", "islice"),
        ("max_retries", "islice"),
        ("stop", "islice"),  # tenacity
        ("stop_after_attempt", "islice"),  # tenacity's stop, as a keyword
        ("timeout", "deadline="),  # stamina, google-api-core: the whole call's
        ("max_time", "deadline="),  # backoff
        ("stop_after_delay", "deadline="),
        ("wait", "delays"),  # tenacity
        ("retry", "on="),  # tenacity
        ("predicate", "on="),  # google-api-core
    ],
)
def test_another_librarys_option_is_refused_saying_what_does_it_here(option, meant):
    """retry(attempts=3), as stamina has it: the error said "did you mean
    'attempt_timeout'?", a per-attempt timeout - nothing like a count of
    attempts; now it says how this library bounds the tries (or what the
    option is called here), and suggests no look-alike."""
    for driver in (retrying, aretrying, retry, RetryTransport):
        with pytest.raises(TypeError) as raised:
            driver(**{option: 3})
        message = str(raised.value)
        assert f"unexpected keyword argument {option!r}" in message, message
        assert meant in message and "did you mean" not in message, message


def test_a_count_given_for_the_delays_says_how_to_bound_a_schedule():
    """retry(5) or retrying(5), "retry five times": the error says how to ask
    for at most 5 more attempts (it said "delays must be an iterable, got 5")."""
    for driver in (retrying, aretrying, retry):
        rejects(
            lambda d=driver: d(5),
            TypeError,
            "delays",
            "n more attempts",
            "islice(full_jitter(0.1, cap=5), 5)",
        )
    for bad in (True, 0, -1):  # no count of attempts: no hint
        with pytest.raises(TypeError, match="delays") as raised:
            retrying(bad)
        assert "more attempts" not in str(raised.value)


@pytest.mark.parametrize(
    "option, part",
    [("budget", TokenBucket), ("breaker", CircuitBreaker), ("throttle", AdaptiveThrottle)],
)
def test_a_part_given_as_its_class_is_refused_when_the_policy_is_made(option, part):
    """budget=TokenBucket (no call): its methods are there, unbound, so the
    protocol's check passed and the first failure raised TypeError from deep
    inside; now refused at once, saying what was meant."""
    for driver in (retrying, aretrying, retry):
        rejects(lambda d=driver: d([0.1], **{option: part}), TypeError, option, f"{part.__name__}(")


#: Each function an option takes, with the arguments it is called with.
_CALLBACKS = {
    "on": ("exception",),
    "on_result": ("result",),
    "retry_after": ("outcome",),
    "sleep": ("seconds",),
    "before_sleep": ("attempt", "outcome", "delay"),
    "give_up": ("attempt", "outcome"),
    "throttled": ("outcome",),
    "clock": (),
    "observe": ("event",),
}


#: Plain functions of 0 to 4 required positional arguments ...
_TAKING: list[Any] = [
    lambda: None,
    lambda a: None,
    lambda a, b: None,
    lambda a, b, c: None,
    lambda a, b, c, d: None,
]
#: ... and of 0 to 3, and one more with a default.
_TAKING_MORE: list[Any] = [
    lambda more=None: None,
    lambda a, more=None: None,
    lambda a, b, more=None: None,
    lambda a, b, c, more=None: None,
]


#: ... and of 0 to 3 with a keyword argument required besides.
_TAKING_KEY: list[Any] = [
    lambda *, key: None,
    lambda a, *, key: None,
    lambda a, b, *, key: None,
    lambda a, b, c, *, key: None,
]


def _taking(count: int) -> Any:
    """A plain function of *count* required positional arguments."""
    return _TAKING[count]


@pytest.mark.parametrize("option, arguments", list(_CALLBACKS.items()))
def test_a_function_that_cannot_take_its_arguments_is_refused_when_the_policy_is_made(
    option, arguments
):
    """A hook of the wrong arity failed at its first call - a give-up hook in the
    middle of an outage, a process hook at every call; now each driver refuses
    it at once, naming the option and the arguments it is called with."""
    for wrong in (len(arguments) - 1, len(arguments) + 1):
        if wrong < 0:
            continue
        for driver in (retrying, aretrying, retry):
            rejects(
                lambda d=driver, w=wrong: d([0.1], **{option: _taking(w)}),
                TypeError,
                option,
                f"must take {len(arguments) or 'no'} argument",
                *arguments,
            )
        rejects(lambda w=wrong: Policy(**{option: [_taking(w)]}), TypeError, option)
    rejects(lambda: Policy(**{option: _TAKING_KEY[len(arguments)]}), TypeError, option, "key")
    for right in (
        _taking(len(arguments)),
        _TAKING_MORE[len(arguments)],
        lambda *told: 0,
        _Hooks().method(len(arguments)),
        mock.Mock(),  # any other callable: taken at its word
    ):
        Policy(**{option: right})


async def _answer(*told: object) -> bool:
    """An async function: what it returns is a coroutine, true."""
    return False


class _AsyncHooks:
    async def hook(self, *told: object) -> bool:
        return False


@pytest.mark.parametrize(
    "option", ["on", "on_result", "retry_after", "throttled", "give_up", "clock", "observe"]
)
def test_an_async_function_given_where_it_is_never_awaited_is_refused(option):
    """An async predicate's coroutine, never awaited, was its answer, a true
    one (every result retried, every failure a throttle), an async give_up or
    hook never ran, an async retry_after or clock failed at its first call:
    refused by each driver as the policy is made; an async sleep or
    before_sleep, awaited by the async loops, is taken (a sync retrying() loop
    refuses it as it is made, @retry over a plain function as it decorates)."""
    for driver in (retrying, aretrying, retry):
        for function in (_answer, _AsyncHooks().hook):
            rejects(
                lambda d=driver, f=function: d([0.1], **{option: f}),
                TypeError,
                option,
                "async function",
                "never awaited",
            )
    for driver in (aretrying, retry):
        driver([0.1], sleep=_answer, before_sleep=_AsyncHooks().hook)


def test_the_other_functions_never_awaited_are_refused_async():
    """A part's clock, attempts()'s sleep and the httpx transport's on_result
    are refused async; resume= may be an async generator function."""
    from backoff_iter import CubicRateLimiter, RetryBudget, attempts

    for part in (RetryBudget, CircuitBreaker, AdaptiveThrottle, CubicRateLimiter):
        rejects(lambda p=part: p(clock=_answer), TypeError, "clock", "never awaited")
    rejects(lambda: attempts([0.1], sleep=_answer), TypeError, "sleep", "never awaited")

    async def stream() -> Any:
        yield 1

    async def resumed(state: object) -> Any:
        yield 2

    retry(resume=resumed)(stream)
    pytest.importorskip("httpx")
    rejects(lambda: RetryTransport(on_result=_answer), TypeError, "on_result", "never awaited")


@pytest.mark.parametrize(
    "option", ["on_result", "retry_after", "sleep", "before_sleep", "give_up", "throttled"]
)
def test_a_function_option_given_neither_a_function_nor_none_is_told_it_may_be_none(option):
    """An option that takes a function or None says both when given neither."""
    for driver in (retrying, aretrying, retry):
        rejects(lambda d=driver: d([0.1], **{option: 5}), TypeError, option, "callable or None")


def test_the_other_optional_functions_given_neither_are_told_they_may_be_none():
    """resume= and the httpx transport's on_result=, as the drivers' options."""
    rejects(lambda: retry(resume=5), TypeError, "resume", "callable or None")
    pytest.importorskip("httpx")
    rejects(lambda: RetryTransport(on_result=5), TypeError, "on_result", "callable or None")


class _Hooks:
    def none(self) -> None:
        pass

    def one(self, first: object) -> None:
        pass

    def two(self, first: object, second: object) -> None:
        pass

    def three(self, first: object, second: object, third: object) -> None:
        pass

    def method(self, count: int) -> Any:
        """A method bound to this object, of *count* arguments besides its self."""
        return getattr(self, ("none", "one", "two", "three")[count])


def test_the_other_functions_given_are_refused_when_they_cannot_take_their_arguments():
    """resume(state), a part's clock(), attempts()'s sleep(seconds), the httpx
    transport's on_result(response): refused as they are given."""
    from backoff_iter import CubicRateLimiter, RetryBudget, attempts
    from backoff_iter.throttles import AdaptiveThrottle as Throttle

    def stream() -> Any:
        yield 1

    rejects(lambda: retry(resume=lambda: ())(stream), TypeError, "resume", "1 argument (state)")
    for part in (TokenBucket, RetryBudget, RetryQuota, CircuitBreaker, Throttle, CubicRateLimiter):
        if "clock" in inspect.signature(part).parameters:
            rejects(lambda p=part: p(clock=lambda now: 0.0), TypeError, "clock", "no arguments")
    rejects(lambda: attempts([0.1], sleep=lambda: None), TypeError, "sleep", "(seconds)")
    pytest.importorskip("httpx")
    rejects(lambda: RetryTransport(on_result=lambda: True), TypeError, "on_result", "response")


def test_the_librarys_own_parts_are_taken_at_sight_as_their_classes_promise():
    """check_part takes the library's own budgets, breaker and throttle by
    their class, without reading their methods: that is sound only while
    each is slotted (an instance cannot shadow a method), has every method
    of its option's protocol, and (a budget) a record_success taking
    ``spent``.  Anything else - a subclass, a mock that claims the class - is
    checked method by method."""
    from backoff_iter.parts import _OWN, _PROTOCOLS

    assert set(_OWN) == set(_PROTOCOLS)
    for name, kinds in _OWN.items():
        for kind in kinds:
            made = kind()
            assert not hasattr(made, "__dict__"), kind
            assert all(callable(getattr(kind, method)) for method in _PROTOCOLS[name]), kind
            if name == "budget":
                inspect.signature(made.record_success).bind(True, 0.0)  # type: ignore[attr-defined]
            Policy(**{name: made})
    lying = mock.NonCallableMock(spec=TokenBucket, try_retry=None)
    assert lying.__class__ is TokenBucket
    rejects(lambda: Policy(budget=lying), TypeError, "budget", "try_retry()")


# -- the plan: what the options mean for a call ------------------------------------------------


class _Refusing(Part):
    def before_attempt(self, call: Any) -> float:
        raise RuntimeError("refused")


class _DuckBreaker:
    """A breaker of the protocol, not the library's (and one a weak reference can name)."""

    def check(self) -> None:
        pass

    def record(self, success: bool) -> None:
        pass


def _loop(on_failure: BaseException | None = None, **options: Any) -> None:
    for attempt in retrying([0.0], on=OSError, sleep=lambda seconds: None, **options):
        with attempt:
            if on_failure is not None:
                raise on_failure


def test_each_policy_given_the_users_parts_works_out_its_own_plan_and_keeps_nothing_after():
    """A plan of the user's parts belongs to its policy: two policies of the
    same objects have their own, and once the policies are gone, so are the
    parts they were given (a fleet part's thread stops when its part is
    collected)."""
    breaker, mine = _DuckBreaker(), _Refusing()
    assert Policy(breaker=breaker).plan is not Policy(breaker=breaker).plan
    assert Policy(parts=[mine]).plan is not Policy(parts=[mine]).plan
    _loop(breaker=breaker)
    with pytest.raises(RuntimeError, match="refused"):
        _loop(parts=[mine])
    dropped = [weakref.ref(breaker), weakref.ref(mine)]
    del breaker, mine
    assert [ref() for ref in dropped] == [None, None]


def test_a_policy_finds_the_plan_an_earlier_one_given_the_same_parts_and_flags_worked_out():
    """A fresh retrying() loop makes a policy at each call: given no part, or
    only the library's own, it finds the plan of the policy before it given
    the same options in the same order (a call site's) - whatever the values
    of those that set flags, or the options read as given - and works out its
    own for another part or another flag."""
    bucket, breaker, throttle = TokenBucket(), CircuitBreaker(), AdaptiveThrottle()
    plan = Policy(on=OSError, budget=bucket, deadline=1.0).plan
    assert Policy(budget=bucket, sleep=print, deadline=5.0).plan is plan
    assert Policy(budget=bucket).plan is not plan  # no deadline: no time to read
    assert Policy(budget=TokenBucket(), deadline=1.0).plan is not plan  # another bucket
    assert Policy(deadline=2.0).plan is Policy(deadline=3.0).plan is not Policy(on_result=id).plan
    assert Policy(observe=[]).plan is Policy(observe=()).plan  # nothing to tell
    assert Policy(observe=_no_op).plan is not Policy(observe=[]).plan
    both = Policy(breaker=breaker, throttle=throttle).plan
    assert Policy(breaker=breaker, throttle=throttle, on=OSError).plan is both
    assert Policy(breaker=CircuitBreaker(), throttle=throttle).plan is not both
    assert Policy(breaker=breaker, throttle=AdaptiveThrottle()).plan is not both
    assert Policy(deadline=None).plan is not Policy(deadline=1.0).plan
    # A throttle hears every failure as a throttle unless `throttled` picks them.
    every = Policy(throttle=throttle).plan
    picked = Policy(throttle=throttle, throttled=lambda outcome: False).plan
    assert Policy(throttle=throttle).plan is every is not picked
    assert [after.__self__.every_failure for after in (*every.afters, *picked.afters)] == [
        True,
        False,
    ]
    # The user's part, a subclass, an attempt timeout: each policy its own plan.
    assert Policy(budget=_OneArgumentQuota()).plan is not Policy(budget=_OneArgumentQuota()).plan
    mine = _OneArgumentQuota()
    assert Policy(budget=mine).plan is not Policy(budget=mine).plan
    assert (
        Policy(budget=bucket, attempt_timeout=1.0).plan
        is not Policy(budget=bucket, attempt_timeout=1.0).plan
    )


def test_the_plans_kept_are_bounded():
    """Each order of the options given keeps a plan of its own: few at a call
    site, but a program making policies of every order keeps a bounded number."""
    from itertools import permutations

    from backoff_iter import _options, parts

    bucket = TokenBucket()
    _options._PLANS_OF_NO_PART.clear()  # (what the tests before left there)
    names = ["deadline", "on_result", "retry_after", "before_sleep", "give_up"]
    for order in permutations(names):  # 120 orders, each a key of its own
        Policy(**dict.fromkeys(order))  # type: ignore[arg-type]
        Policy(budget=bucket, **dict.fromkeys(order))  # type: ignore[arg-type]
        assert len(_options._PLANS_OF_NO_PART) <= _options._MOST_KEPT
        assert len(bucket._plans) <= parts._MOST_KEPT  # type: ignore[attr-defined]
    assert len(_options._PLANS_OF_NO_PART) > 1 and len(bucket._plans) > 1  # type: ignore[attr-defined]


def test_a_plan_is_kept_on_the_first_of_its_parts_and_nothing_on_the_others():
    """The parts after the first hold no dict of plans: only the first keeps
    them, and a part first met second keeps them once it comes first."""
    bucket, breaker = TokenBucket(), CircuitBreaker()
    plan = Policy(budget=bucket, breaker=breaker).plan
    assert Policy(budget=bucket, breaker=breaker).plan is plan
    assert list(bucket._plans.values()) == [plan]  # type: ignore[attr-defined]
    assert not hasattr(breaker, "_plans")  # (an empty slot)
    alone = Policy(breaker=breaker).plan
    assert list(breaker._plans.values()) == [alone]  # type: ignore[attr-defined]


def _no_op(event: object) -> None:
    pass


def test_a_plan_kept_on_a_library_part_lets_it_be_collected():
    """A plan kept on the library's own part holds the part in a cycle: once
    its policies are gone, the garbage collector collects it."""
    import gc

    def library_parts() -> int:
        return sum(type(each) in (TokenBucket, CircuitBreaker) for each in gc.get_objects())

    gc.collect()
    before = library_parts()
    bucket, breaker = TokenBucket(), CircuitBreaker()
    _loop(budget=bucket, breaker=breaker)
    _loop(budget=bucket, breaker=breaker)
    assert library_parts() == before + 2
    del bucket, breaker
    gc.collect()
    assert library_parts() == before


def test_a_method_patched_on_a_library_class_after_a_first_policy_is_the_one_a_later_policy_calls():
    """A plan kept on the library's own part depends on the methods its class
    has that the policy binds ahead: a later policy calls one patched on the
    class (as a test double is), and the one unpatched after."""
    breaker, quota = CircuitBreaker(), RetryQuota()
    _loop(breaker=breaker)
    with mock.patch.object(CircuitBreaker, "record", autospec=True) as record:
        _loop(breaker=breaker)
    record.assert_called_once()
    assert record.call_args.args[:2] == (breaker, True)
    _loop(breaker=breaker)
    assert breaker.state == "closed"
    # A quota's give_back, bound ahead: a later policy gives back through the patched one.
    give_back = _given_back_through(
        quota, mock.patch.object(RetryQuota, "give_back", autospec=True)
    )
    give_back.assert_called_once_with(quota, quota.retry_cost)


def _given_back_through(budget: Any, patched: Any) -> Any:
    """Two loops given *budget* and a breaker that refuses each one's retry
    (the first try fails and opens it; the second loop's probe, half-open,
    fails too): the first loop makes the plan, the second runs within
    *patched* (a patch of how the budget gives back), whose mock is returned."""
    now = [0.0]
    refusing = CircuitBreaker(0.5, 1, break_duration=1.0, clock=lambda: now[0])
    with pytest.raises(BrokenCircuitError):  # the first try fails, the retry is refused
        _loop(budget=budget, breaker=refusing, on_failure=OSError())
    now[0] = 5.0  # half-open: the probe goes, fails, and its retry is refused
    with patched as given_back, pytest.raises(BrokenCircuitError):
        _loop(budget=budget, breaker=refusing, on_failure=OSError())
    return given_back


def test_a_method_patched_onto_a_library_class_with_create_is_read_while_it_is_there():
    """A double patched onto the library's class with create=True (a budget's
    optional give_back, which a TokenBucket has not) is called by a policy
    made while it is there, and a policy made once it is gone works as before
    it (a plan kept on the part read the class's methods as they were)."""
    from backoff_iter import parts

    with mock.patch.dict(parts._AHEAD, clear=True):  # (the class first met below)
        with mock.patch.object(TokenBucket, "give_back", create=True):
            assert Policy(budget=TokenBucket(), deadline=1.0).plan.allow_drops
        assert not Policy(budget=TokenBucket(), deadline=1.0).plan.allow_drops
    # Patched in after a first policy: a later one, given the same part, gives back.
    patched = mock.patch.object(TokenBucket, "give_back", create=True)
    _given_back_through(TokenBucket(), patched).assert_called_once()


@pytest.mark.parametrize("timeouts", [0, 0.0, [], (), range(0)], ids=repr)
def test_an_attempt_timeout_of_zero_or_of_no_values_keeps_its_plan_to_itself(timeouts):
    """attempt_timeout=0, or an empty iterable of timeouts (inf: none at all),
    is a timeout part as any other: a loop given it has its attempts' timeout,
    and a loop given no attempt_timeout made after it has none (its attempts
    timed out at once after a loop given 0, where they were found one plan)."""
    seen: list[float | None] = []
    for options in ({"attempt_timeout": timeouts}, {}, {"attempt_timeout": timeouts}):
        for attempt in retrying([0.0], on=OSError, deadline=60.0, sleep=_no_sleep, **options):
            with attempt:
                seen.append(attempt.timeout)
    expected = 0.0 if timeouts == 0 else pytest.approx(60.0, abs=1.0)  # (the deadline's)
    assert seen == [expected, None, expected]


def _no_sleep(seconds: float) -> None:
    pass


class _Heard(Part):
    def after_attempt(self, outcome: Any, kind: str, number: int, spent: float) -> None:
        pass


#: The library's own parts that _plans() gives: two of each kind for some,
#: a breaker and a throttle to be given to each other's option too.
_BUCKET, _BREAKER, _THROTTLE = TokenBucket(), CircuitBreaker(), AdaptiveThrottle()
_LIMITER = CubicRateLimiter()

#: For each option, values that change what a plan is, or do not.
_VALUES: dict[str, list[Any]] = {
    "on": [OSError, lambda exception: True],
    "on_result": [None, _no_op],
    "retry_after": [None, _no_op],
    "retry_after_max": [1.0],
    "retry_after_beyond": [None, 2.0],
    "budget": [None, _BUCKET, TokenBucket(), RetryBudget(), RetryQuota(), _Heard()],
    "name": ["fetch"],
    "observe": [None, [], (), _no_op, [_no_op]],
    "deadline": [None, 0.0, 1.0, float("inf")],
    "clock": [time.monotonic, lambda: 0.0],
    "sleep": [None, _no_sleep],
    "before_sleep": [None, lambda attempt, outcome, delay: None],
    "give_up": [None, lambda attempt, outcome: None],
    "attempt_timeout": [None, 0, 1.0, [], [1.0], range(0)],
    "rate_limiter": [None, _LIMITER, CubicRateLimiter(), _Heard()],
    "throttle": [None, _THROTTLE, _BREAKER, AdaptiveThrottle(), _Heard()],
    "breaker": [None, _BREAKER, _THROTTLE, CircuitBreaker(), _Heard()],
    "throttled": [None, _no_op],
    "parts": [None, [], [_Heard()], _Heard()],
}


def _shape(value: Any) -> Any:
    """What a field of a plan is, comparable between plans made apart: each
    wrapper the library made of a part as its class and fields, the part
    itself as it is (each plan wraps its parts anew)."""
    if isinstance(value, (tuple, list)):
        return tuple(_shape(each) for each in value)
    if isinstance(value, MethodType):
        return value.__func__, _shape(value.__self__)
    if isinstance(value, functools.partial):
        return _shape(value.func), _shape(value.args)
    if type(value).__module__ == "backoff_iter.parts":  # a wrapper, or attempt_timeout's part
        return type(value), tuple(_shape(getattr(value, name)) for name in type(value).__slots__)
    if isinstance(value, FunctionType) and value.__closure__:  # (a record of one argument)
        return value.__code__, tuple(_shape(cell.cell_contents) for cell in value.__closure__)
    return value


@settings(max_examples=100)
@given(
    st.lists(
        st.dictionaries(st.sampled_from(sorted(_VALUES)), st.integers(0, 5)).map(
            lambda drawn: {name: _VALUES[name][i % len(_VALUES[name])] for name, i in drawn.items()}
        ),
        min_size=1,
        max_size=5,
    )
)
def test_a_plan_found_again_is_the_one_the_policy_would_work_out(made):
    """Whatever policies were made before it, with whatever options, a policy's
    plan (found again or worked out) is, field by field, the one its own
    options work out."""
    for options in made:
        policy = Policy(**options)
        assert {field: _shape(getattr(policy.plan, field)) for field in CallPlan.__slots__} == {
            field: _shape(getattr(policy._work_out(), field)) for field in CallPlan.__slots__
        }, options


def test_a_schedule_of_timeouts_is_iterated_afresh_by_each_policy():
    """A set of attempt timeouts (iterable, not a sequence) is iterated once by
    each policy made from it: every loop's first attempt has its timeout."""
    once = {2.0}
    for _ in range(2):
        seen = []
        for attempt in retrying([0.0, 0.0], on=OSError, attempt_timeout=once, sleep=lambda s: None):
            with attempt:
                seen.append(attempt.timeout)
        assert seen == [2.0]


def test_a_method_patched_after_a_first_policy_is_the_one_a_later_policy_calls():
    """A policy wraps its breaker's methods as they are when it is made: one
    made after a patch calls the patched one."""
    breaker = _DuckBreaker()
    _loop(breaker=breaker)
    with mock.patch.object(breaker, "record") as record:
        _loop(breaker=breaker)
    record.assert_called_once_with(True)


class _OneArgumentBreaker(CircuitBreaker):
    """A subclass overriding record() with the Breaker protocol's signature."""

    def record(self, success: bool) -> None:  # type: ignore[override]
        self.told = success
        super().record(success)


class _OneArgumentThrottle(AdaptiveThrottle):
    def record(self, accepted: bool) -> None:  # type: ignore[override]
        self.told = accepted
        super().record(accepted)


class _OneArgumentQuota(RetryQuota):
    def try_retry(self, outcome: Any) -> float:  # type: ignore[override]
        self.asked = outcome
        return super().try_retry(outcome)


class _FullBreaker(CircuitBreaker):
    """A subclass overriding record() with the library's own signature, or more."""

    def record(self, *told: Any) -> None:  # type: ignore[override]
        self.told.append(told)
        super().record(*told)


class _WideDuck(_DuckBreaker):
    """A breaker of the protocol, not the library's, whose record() takes more."""

    def record(self, success: bool, *more: object) -> None:
        self.more = more


def test_a_subclass_with_the_protocols_signature_is_called_as_the_protocol_says():
    """The library's breaker, throttle and quota are told the outcome too; a
    subclass that overrides the method with the protocol's shorter signature
    is called with what it takes (no TypeError), one with the full signature
    still hears the outcome."""
    breaker, throttle, quota = _OneArgumentBreaker(), _OneArgumentThrottle(), _OneArgumentQuota()
    failure = ConnectionError("reset")
    failures = [failure]
    for attempt in retrying([0.0], on=OSError, breaker=breaker, budget=quota, sleep=lambda s: None):
        with attempt:
            if failures:
                raise failures.pop()
    for attempt in retrying([0.0], on=OSError, throttle=throttle):  # (a failure might be throttled)
        with attempt:
            pass
    assert (breaker.told, throttle.told, quota.asked) == (True, True, failure)
    full = _FullBreaker()
    full.told = []
    failures = [failure]
    for attempt in retrying([0.0], on=OSError, breaker=full, sleep=lambda s: None):
        with attempt:
            if failures:
                raise failures.pop()
    assert [told[0] for told in full.told] == [False, True]
    assert full.told[0][1] is failure  # the failure comes with it
    duck = _WideDuck()
    for attempt in retrying([0.0], on=OSError, breaker=duck):
        with attempt:
            pass
    assert duck.more == ()  # not the library's: told as the protocol says
