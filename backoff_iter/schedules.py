"""A schedule per kind of failure: :func:`~backoff_iter.per_failure`.

The delay after a failure comes from the schedule of its kind - a throttle
(the driver's ``throttled=`` says which failures are), an exception class
you name, or any other failure - and the schedules move in step: the n-th
retry sleeps the n-th delay of its failure's schedule, whatever the kinds of
the failures before it.  Each schedule is an ordinary iterable of delays.
That is how the AWS SDKs back off (tenacity #374, "retry-dependent wait"):

>>> from random import Random
>>> from backoff_iter import exponential, retry
>>> aws_standard = per_failure(
...     throttle=lambda: exponential(1.0, cap=20),  # after a throttle: 1 s, 2 s, 4 s ...
...     default=lambda: exponential(0.05, cap=20),  # after anything else: 50 ms, 100 ms ...
...     jitter="full",  # then uniform(0, d): one draw per retry
...     rng=Random(7),
... )
>>> slept = []
>>> @retry(aws_standard, on=ConnectionError, sleep=slept.append,
...        throttled=lambda error: "SlowDown" in str(error))
... def put(replies=iter(["reset", "SlowDown", "reset", "ok"])):
...     reply = next(replies)
...     if reply != "ok":
...         raise ConnectionError(reply)
...     return reply
>>> put(), [round(seconds, 4) for seconds in slept]
('ok', [0.0162, 0.3017, 0.1302])

The second retry sleeps the second delay of the throttle's schedule (below
2 s), the third the third of the default one (below 0.2 s).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar, Union

from . import _checks, _jitter
from ._filters import exception_filter
from .adaptors import _seconds

__all__ = ["PerFailure", "per_failure"]

#: A kind of failure :func:`per_failure` tells apart: an exception class, a
#: tuple of them, or a predicate of the outcome.
Kind = Union[type[BaseException], tuple[type[BaseException], ...], Callable[[Any], object]]
#: The kinds of one mapping: a dict's keys are typed as what they are (a dict
#: of one class is no ``Mapping[Kind, ...]``: a mapping's keys are invariant).
K = TypeVar("K", bound=Kind)
#: One kind's schedule: a zero-argument function returning fresh delays, or a
#: list, tuple or other sequence (a ``range``) of them.
Schedule = Union[Callable[[], Iterable[float]], Sequence[float]]

#: What ``next_for`` gives when the chosen schedule has run out.
END: Any = object()
_END = END
_THROTTLE = "throttle"  # the kind the core names a throttle (parts.THROTTLE)


class PerFailure:
    """Schedules per kind of failure, made by :func:`per_failure`: give it as
    a driver's delays.  Reusable: each call draws from fresh schedules."""

    __slots__ = ("_kinds", "_throttle", "_default", "_jitter", "_rng")

    def __init__(
        self,
        kinds: tuple[tuple[Any, bool, Callable[[], Iterable[float]]], ...],
        throttle: Callable[[], Iterable[float]] | None,
        default: Callable[[], Iterable[float]],
        jitter: str | float | None,
        rng: Any,
    ) -> None:
        self._kinds = kinds
        self._throttle = throttle
        self._default = default
        self._jitter = jitter
        self._rng = rng

    def __call__(self) -> _InStep:
        """One call's schedules, fresh."""
        return _InStep(self)

    def __iter__(self) -> _InStep:
        """One call's schedules, fresh (a factory of delays returning this object works too)."""
        return _InStep(self)


class _InStep:
    """One call's schedules, drawn in step; an iterator of the default kind's
    delays too, for schedulers that ask for delays by number."""

    __slots__ = ("_rules", "_throttle", "_default", "_kernel", "_draw")

    def __init__(self, schedules: PerFailure) -> None:
        self._rules = [
            (on, only, _checks.fresh_delays("kinds", factory))
            for on, only, factory in schedules._kinds
        ]
        self._throttle = (
            None
            if schedules._throttle is None
            else _checks.fresh_delays("throttle", schedules._throttle)
        )
        self._default = _checks.fresh_delays("default", schedules._default)
        self._kernel = schedules._jitter
        self._draw = None if self._kernel is None else _jitter.random_source(schedules._rng)

    def __iter__(self) -> _InStep:
        return self

    def __next__(self) -> float:
        delay = self.next_for(_END, "")  # no outcome: the default kind's
        if delay is _END:
            raise StopIteration
        return delay.draw() if delay.__class__ is Deferred else delay

    def next_for(self, outcome: Any, kind: str) -> Any:
        """The next delay after *outcome* (a failure of *kind*, as the core
        tells it): the next of its schedule's; every schedule moves on by one.
        The end of its schedule ends the retries."""
        chosen: Any = _END
        found = False
        if self._throttle is not None:
            delay = next(self._throttle, _END)
            if kind == _THROTTLE:
                chosen, found = delay, True
        for on, _, delays in self._rules:
            delay = next(delays, _END)
            # (a retried failure: a predicate is asked of a rejected result too, None included)
            if not found and outcome is not _END and _is_kind(on, outcome):
                chosen, found = delay, True
        delay = next(self._default, _END)
        if not found:
            chosen = delay
        if chosen is _END or self._kernel is None:
            return chosen
        # Read as the jittered adaptor reads it: one too long to sleep is spread all the same
        return Deferred(_seconds(chosen), self._kernel, self._draw)  # type: ignore[arg-type]


def _is_kind(on: Any, outcome: Any) -> bool:
    """Is *outcome* of the kind *on*: an instance of its classes, or one its predicate names?"""
    return isinstance(outcome, on) if on.__class__ is tuple else bool(on(outcome))


class Deferred:
    """A delay whose jitter is drawn only once the retry is allowed: the core
    asks the parts (a quota) first, as the AWS SDKs draw after the quota paid."""

    __slots__ = ("ceiling", "kernel", "_draw", "_drawn")

    ceiling: float
    kernel: str | float

    def __init__(self, ceiling: float, kernel: str | float, draw: Callable[[], float]) -> None:
        self.ceiling = ceiling
        self.kernel = kernel
        self._draw = draw
        self._drawn: float | None = None

    def draw(self) -> float:
        """The delay: the ceiling with the jitter (the jittered adaptor's
        formulas), drawn once - asked again, the same delay."""
        drawn = self._drawn
        if drawn is None:
            if self.kernel == "full":
                drawn = next(_jitter.full((self.ceiling,), self._draw))
            elif self.kernel == "equal":
                drawn = next(_jitter.equal((self.ceiling,), self._draw))
            else:
                drawn = next(_jitter.spread((self.ceiling,), float(self.kernel), self._draw))
            self._drawn = drawn
        return drawn

    def __float__(self) -> float:
        return self.draw()


def per_failure(
    kinds: Mapping[K, Schedule] | None = None,
    /,
    *,
    throttle: Schedule | None = None,
    default: Schedule,
    jitter: str | float | None = None,
    rng: Any = None,
) -> PerFailure:
    """A schedule for each kind of failure: the delay after a failure comes
    from the schedule of its kind, and the schedules move in step.

    - *kinds*: a mapping from an exception class (a tuple of them, or a
      predicate of the outcome: the exception, or a result ``on_result``
      retried) to the schedule after such a failure; the first that
      matches, in the mapping's order, chooses.
    - *throttle*: the schedule after a throttle - a failure the driver's
      ``throttled=`` predicate names - asked before *kinds*.
    - *default*: the schedule after any other failure.
    - *jitter*: None, or ``"full"``, ``"equal"`` or a fraction, as in
      :func:`~backoff_iter.jittered`: applied to the chosen delay, one draw
      of *rng* per retry (the module-level ``random`` when None), so that
      deterministic schedules per kind, jittered once, make the AWS SDKs'
      backoff draw for draw.

    Each schedule is a zero-argument function returning fresh delays, or a
    list, tuple or other sequence (a ``range``): every call of the driver
    starts them afresh.  In step:
    at each retry every schedule gives its next delay, and the one of the
    failure's kind is slept; when that one has run out, the retries end (as
    when a plain schedule runs out), though the others may have more.

    Give it to the driver as it is: iterated by anything else - ``islice``,
    :func:`~backoff_iter.within`, another scheduler - it is a plain iterator
    of its *default* delays, since only a driver knows each failure's kind.
    Bound each kind's schedule instead (``lambda: islice(exponential(1), 4)``),
    or the call with ``deadline=``.

    >>> from itertools import islice
    >>> list(islice(per_failure({TimeoutError: [5.0, 5.0]}, default=[0.1, 0.2, 0.4]), 5))
    [0.1, 0.2, 0.4]

    >>> schedules = per_failure({TimeoutError: [5.0, 5.0]}, default=[0.1, 0.2, 0.4])
    >>> in_step = schedules()
    >>> in_step.next_for(ConnectionError(), "failure"), in_step.next_for(TimeoutError(), "failure")
    (0.1, 5.0)
    """
    if kinds is not None and not isinstance(kinds, Mapping):
        raise _checks.ArgumentTypeError(
            "kinds",
            "kinds must be a mapping (a dict) from exception classes to schedules,"
            f" got {_checks.shown(kinds)}",
        )
    checked: list[tuple[Any, bool, Callable[[], Iterable[float]]]] = []
    for on, schedule in (kinds or {}).items():
        filtered, only = exception_filter("kinds", on)
        checked.append((filtered, only, _checks.reusable_delays("kinds", schedule)))
    if jitter is not None and jitter not in ("full", "equal"):
        fraction = math.nan if isinstance(jitter, str) else _checks.number("jitter", jitter)
        if not 0.0 < fraction <= 1.0:
            raise _checks.ArgumentValueError(
                "jitter",
                f"jitter must be 'full', 'equal' or a fraction in (0, 1], got {_checks.shown(jitter)}",
            )
        jitter = fraction
    if rng is not None:
        _jitter.random_source(rng)  # checked now
    return PerFailure(
        tuple(checked),
        None if throttle is None else _checks.reusable_delays("throttle", throttle),
        _checks.reusable_delays("default", default),
        jitter,
        rng,
    )
