"""Plan a geometric schedule (first sleep *a*, factor *r*) from what you want.

After *n* sleeps the time slept is ``T_n = a (r**n - 1) / (r - 1)``, the next
sleep is ``a r**n = a + (r - 1) T_n``, and reaching a time *T* takes
``n = log_r(1 + (r - 1) T / a)`` sleeps.  So the sleep is always the same
fraction ``r - 1`` of the time already waited (plus *a*): to retry "about
every 10% of the time waited so far", take ``r = 1 + 0.1``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from . import _checks

__all__ = [
    "Plan",
    "elapsed_after",
    "factor_for_ratio",
    "next_sleep",
    "plan",
    "retries_by",
    "retry_count_ratio",
]


def elapsed_after(base: float, factor: float, sleeps: int) -> float:
    """Time slept after *sleeps* sleeps: ``a (r**n - 1) / (r - 1)`` (``a n`` for r = 1).

    >>> elapsed_after(1, 2, 4)  # 1 + 2 + 4 + 8
    15.0
    >>> round(elapsed_after(1, 1.1, 49), 3)
    1057.19
    """
    a = _checks.positive("base", base)
    r = _checks.factor("factor", factor)
    n = _checks.count("sleeps", sleeps)
    as_float = _checks.number("sleeps", n)  # a count beyond floats is an error, not OverflowError
    if r == 1.0:
        return a * as_float
    exponent = as_float * math.log(r)
    try:
        if exponent < 1.0:  # r**n - 1 would cancel; expm1 keeps the digits
            return a * math.expm1(exponent) / (r - 1.0)
        # a / (r - 1) first: a * r**n may pass the largest float when the sum does not
        return a / (r - 1.0) * (r**n - 1.0)
    except OverflowError:
        return math.inf


def next_sleep(base: float, factor: float, elapsed: float) -> float:
    """The sleep that follows once *elapsed* seconds were slept: ``a + (r - 1) T``.

    >>> next_sleep(1, 2, 15)  # after 1 + 2 + 4 + 8 comes 16
    16.0
    """
    a = _checks.positive("base", base)
    r = _checks.factor("factor", factor)
    t = _checks.seconds("elapsed", elapsed, infinite=True)
    return a + (r - 1.0) * t


def retries_by(base: float, factor: float, elapsed: float) -> float:
    """How many sleeps it takes to have slept *elapsed*: ``log_r(1 + (r - 1) T / a)``.

    A real number; its floor is the count of whole sleeps that fit.

    >>> retries_by(1, 2, 15)
    4.0
    >>> round(retries_by(1, 1.1, 1057.19), 3)
    49.0
    """
    a = _checks.positive("base", base)
    r = _checks.factor("factor", factor)
    t = _checks.seconds("elapsed", elapsed, infinite=True)
    if r == 1.0:
        return t / a
    x = (r - 1.0) * (t / a)
    if x == math.inf and t < math.inf:  # beyond floats, where log1p(x) is log(x)
        return (math.log(r - 1.0) + math.log(t) - math.log(a)) / math.log(r)
    return math.log1p(x) / math.log(r)


def factor_for_ratio(ratio: float) -> float:
    """The factor whose every sleep is *ratio* times the time already slept: ``r = 1 + q``.

    >>> factor_for_ratio(0.1)
    1.1
    """
    return 1.0 + _checks.seconds("ratio", ratio)


def retry_count_ratio(factor: float, new_factor: float) -> float:
    """How many times more retries *new_factor* makes than *factor* over a long time.

    Over the same (long) elapsed time the counts compare as ``log r / log r_new``.

    >>> round(retry_count_ratio(2, 1.1), 2)
    7.27
    """
    r = _checks.factor("factor", factor, above_one=True)
    r_new = _checks.factor("new_factor", new_factor, above_one=True)
    return math.log(r) / math.log(r_new)


class Plan(NamedTuple):
    """Where a geometric schedule stands at a given elapsed time."""

    retries: int  #: whole sleeps that fit within the elapsed time
    exact: float  #: the real-valued retries_by()
    elapsed: float  #: time slept by those retries (at most the elapsed time asked)
    sleep_before: float | None  #: the last sleep that fits, None if none does
    sleep_after: float  #: the next sleep, the first that would not fit


def plan(base: float, factor: float, elapsed: float) -> Plan:
    """The retry count at *elapsed*, and the sleeps just before and after it.

    >>> plan(1, 2, 20)
    Plan(retries=4, exact=4.392317422778761, elapsed=15.0, sleep_before=8.0, sleep_after=16.0)
    """
    exact = retries_by(base, factor, elapsed)
    if math.isinf(exact):
        raise _checks.ArgumentValueError("elapsed", f"elapsed must be finite, got {elapsed!r}")
    a, t = float(base), float(elapsed)
    if float(factor) == 1.0:  # linear: n whole sleeps of a fit in T, in closed form
        count = math.floor(t / a)
        before = None if count == 0 else a
        return Plan(count, exact, a * count, before, a)
    count = math.floor(exact)
    # The logarithms may be an ulp off at a whole number: settle it exactly.
    while elapsed_after(base, factor, count + 1) <= elapsed:
        count += 1
    while count > 0 and elapsed_after(base, factor, count) > elapsed:
        count -= 1
    slept = elapsed_after(base, factor, count)
    before = None if count == 0 else _sleep_number(base, factor, count - 1)
    return Plan(count, exact, slept, before, _sleep_number(base, factor, count))


def _sleep_number(base: float, factor: float, attempt: int) -> float:
    """``base * factor**attempt`` (attempt from 0), inf instead of OverflowError."""
    try:
        return float(base) * float(factor) ** attempt
    except OverflowError:
        return math.inf
