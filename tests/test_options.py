"""The options are defined once: RetryOptions names and types them (every driver's
signature takes them from there), Policy holds their defaults and checks, and the
two agree - so a new option is one field, one default and check, one use."""

from __future__ import annotations

import ast
import inspect
import weakref
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from backoff_iter import (
    AdaptiveThrottle,
    CircuitBreaker,
    CubicRateLimiter,
    DecoratorOptions,
    HedgeOptions,
    RetryOptions,
    TokenBucket,
    aretrying,
    hedge,
    hedged,
    retry,
    retrying,
)
from backoff_iter._options import _PLANS, _PLANS_KEPT, SETTERS, CallPlan, Policy
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


# -- the plan: what the options mean, worked out once for policies alike -----------------------


def _shape(plan: CallPlan) -> list[object]:
    """What a plan says, comparable across policies: its flags, and each stage as
    the method, its part's class, what the part wraps and whether every failure counts."""

    def stage(method: Any) -> tuple[object, ...]:
        part = method.__self__
        wrapped = [
            getattr(part, name)
            for name in ("budget", "breaker", "throttle", "limiter")
            if hasattr(part, name)
        ]
        return (
            method.__name__,
            type(part),
            [id(o) for o in wrapped],
            getattr(part, "every_failure", None),
        )

    said: list[object] = []
    for name in CallPlan.__slots__:
        value = getattr(plan, name)
        if name == "abefores":
            value = [(stage(method), awaited) for method, awaited in value]
        elif name in ("befores", "afters", "allows"):
            value = [stage(method) for method in value]
        elif name == "checks":
            value = [id(check) for check in value]
        said.append((name, value))
    return said


def test_policies_alike_share_one_plan_and_any_difference_gets_its_own():
    """A plan is reused only where it is the plan worked out afresh: over every
    combination of the options a plan depends on, each policy's plan says what
    _work_out() finds for it (a key missing one of them would hand one
    combination another's plan); and alike policies share one."""
    bucket, throttle = TokenBucket(), AdaptiveThrottle()
    hook = lambda *args: None
    flags = {
        "throttled": lambda outcome: True,
        "on_result": lambda result: False,
        "observe": hook,
        "before_sleep": hook,
        "give_up": hook,
        "retry_after": lambda outcome: None,
        "deadline": 5.0,
        "attempt_timeout": 1.0,
    }
    names = list(flags)
    for parts in ({}, {"budget": bucket}, {"throttle": throttle}):
        for mask in range(2 ** len(names)):
            given = {name: flags[name] for i, name in enumerate(names) if mask >> i & 1}
            policy = Policy(**parts, **given)
            assert _shape(policy.plan) == _shape(policy._work_out()), (parts, given)
            assert Policy(**parts, **given).plan is policy.plan, (parts, given)


_OPTION_PARTS = (
    ("budget", TokenBucket),
    ("breaker", CircuitBreaker),
    ("throttle", AdaptiveThrottle),
    ("rate_limiter", CubicRateLimiter),
)


def test_a_plan_is_kept_for_the_very_objects_and_seconds_it_was_made_for():
    """Equal is not the same: another bucket, breaker, throttle or limiter gets
    a plan of its own (each call must consult its own); attempt timeouts of
    the same seconds share one."""
    one, other = TokenBucket(), TokenBucket()
    assert Policy(budget=one).plan is not Policy(budget=other).plan
    assert Policy(budget=one).plan.afters[0].__self__.budget is one  # type: ignore[attr-defined]
    assert Policy(budget=other).plan.afters[0].__self__.budget is other  # type: ignore[attr-defined]
    for name, make in _OPTION_PARTS:
        shared = make()
        assert Policy(**{name: shared}).plan is Policy(**{name: shared}).plan, name
        assert Policy(**{name: make()}).plan is not Policy(**{name: make()}).plan, name
    assert Policy(attempt_timeout=2).plan is Policy(attempt_timeout=2.0).plan
    assert Policy(attempt_timeout=2).plan is not Policy(attempt_timeout=3).plan


def test_a_plan_holds_the_objects_its_key_names_by_id():
    """What keeps the ids of a kept plan's key from passing to new objects: its
    stages are methods of the parts wrapping each object given."""
    for name, make in _OPTION_PARTS:
        given = make()
        plan = Policy(**{name: given}).plan
        stages = (*plan.befores, *plan.afters, *plan.allows)
        wrapped = [getattr(stage.__self__, name.split("_")[-1]) for stage in stages]
        assert wrapped and all(held is given for held in wrapped), name


class _Refusing(Part):
    def before_attempt(self, call: Any) -> float:
        raise RuntimeError("refused")


def test_parts_of_your_own_and_schedules_of_timeouts_are_read_afresh_and_not_kept():
    """A policy with a part of the user's (parts=, or a Part given to an
    option) or a schedule of attempt timeouts gets a plan of its own: the
    part's methods as they are now, the schedule's iterator its own (a set
    is iterated once per policy), and nothing of theirs is kept after."""
    mine = _Refusing()
    assert Policy(parts=[mine]).plan is not Policy(parts=[mine]).plan
    assert Policy(budget=mine).plan is not Policy(budget=mine).plan  # type: ignore[arg-type]
    dropped = weakref.ref(mine)
    del mine
    assert dropped() is None
    once = {2.0}  # iterable, not a sequence: each policy iterates it once
    for _ in range(2):
        seen = []
        for attempt in retrying([0.0, 0.0], on=OSError, attempt_timeout=once, sleep=lambda s: None):
            with attempt:
                seen.append(attempt.timeout)
        assert seen == [2.0]


class _DuckBreaker:
    """A breaker of the protocol, not the library's: its record() patched in a test."""

    def check(self) -> None:
        pass

    def record(self, success: bool) -> None:
        pass


def test_a_method_patched_after_a_plan_was_made_is_the_one_called():
    """The library's wrappers look their object's methods up at each call: a
    policy made after a patch calls the patched one, though its plan is shared."""
    breaker = _DuckBreaker()
    for attempt in retrying([0.0], on=OSError, breaker=breaker):
        with attempt:
            pass
    with mock.patch.object(breaker, "record") as record:
        for attempt in retrying([0.0], on=OSError, breaker=breaker):
            with attempt:
                pass
    record.assert_called_once_with(True)


def test_the_plans_kept_are_bounded():
    """A program making a breaker for every call fills the plans no further than _PLANS_KEPT."""
    for _ in range(_PLANS_KEPT * 3):
        Policy(breaker=CircuitBreaker())
        assert len(_PLANS) <= _PLANS_KEPT


def test_every_option_a_plan_reads_is_in_its_key():
    """_derive shares a plan only among policies alike in all _work_out reads:
    each attribute _work_out reads of the policy is read by _derive too (the
    timeout's part by its seconds, the user's parts by own_parts, which
    sends such a policy to _work_out itself).  An option added to a plan but
    not to its key fails here."""
    tree = ast.parse(SOURCE.read_text())
    policy = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Policy")
    reads = {
        function.name: {
            node.attr
            for node in ast.walk(function)
            if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
        }
        for function in policy.body
        if isinstance(function, ast.FunctionDef) and function.name in ("_derive", "_work_out")
    }
    stand_ins = {"timeout_part": "attempt_timeout", "parts": "own_parts"}
    keyed = {stand_ins.get(name, name) for name in reads["_work_out"]}
    assert keyed and keyed <= reads["_derive"], keyed - reads["_derive"]
