"""The options are defined once: RetryOptions names and types them (every driver's
signature takes them from there), Policy holds their defaults and checks, and the
two agree - so a new option is one field, one default and check, one use."""

from __future__ import annotations

import ast
import inspect
import weakref
from pathlib import Path
from typing import Any

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


def test_a_plan_is_kept_for_the_very_objects_and_seconds_it_was_made_for():
    """Equal is not the same: another bucket, breaker or part gets a plan of its
    own (each call must consult its own); attempt timeouts of the same seconds
    share one, a schedule of them is known by itself."""
    one, other = TokenBucket(), TokenBucket()
    assert Policy(budget=one).plan is not Policy(budget=other).plan
    assert Policy(budget=one).plan.afters[0].__self__.budget is one  # type: ignore[attr-defined]
    assert Policy(budget=other).plan.afters[0].__self__.budget is other  # type: ignore[attr-defined]
    for name, make in (
        ("budget", TokenBucket),
        ("breaker", CircuitBreaker),
        ("throttle", AdaptiveThrottle),
        ("rate_limiter", CubicRateLimiter),
    ):
        shared = make()
        assert Policy(**{name: shared}).plan is Policy(**{name: shared}).plan, name
        assert Policy(**{name: make()}).plan is not Policy(**{name: make()}).plan, name
    assert Policy(attempt_timeout=2).plan is Policy(attempt_timeout=2.0).plan
    assert Policy(attempt_timeout=2).plan is not Policy(attempt_timeout=3).plan
    timeouts = [1.0, 2.0]
    assert Policy(attempt_timeout=timeouts).plan is Policy(attempt_timeout=timeouts).plan
    assert Policy(attempt_timeout=timeouts).plan is not Policy(attempt_timeout=[1.0, 2.0]).plan


class _Inert(Part):
    """A part that overrides nothing: no plan holds on to it."""


class _Refusing(Part):
    def before_attempt(self, call: Any) -> float:
        raise RuntimeError("refused")


def test_a_part_dropped_never_lends_its_id_to_a_new_one_while_its_plan_is_kept():
    """The plans are known by their parts' ids; while a plan is kept, so are the
    objects its key names (even a part that overrides nothing, which no stage
    holds), so a new part never comes to have one of their ids and find a plan
    not its own.  Made, used and dropped, then a refusing part made where
    CPython would put it: the refusing part is asked, every time."""
    for _ in range(200):
        inert = _Inert()
        assert Policy(parts=[inert]).plan.befores == ()
        dropped = weakref.ref(inert)
        del inert
        assert dropped() is not None  # kept with its plan: its id is not free
        assert len(Policy(parts=[_Refusing()]).plan.befores) == 1


def test_the_plans_kept_are_bounded():
    """A program making a breaker for every call fills the plans no further than _PLANS_KEPT."""
    for _ in range(_PLANS_KEPT * 3):
        Policy(breaker=CircuitBreaker())
        assert len(_PLANS) <= _PLANS_KEPT
