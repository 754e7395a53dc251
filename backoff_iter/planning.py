"""Plan a geometric schedule (first sleep *a*, factor *r*) from what you want.

After *n* sleeps the time slept is ``T_n = a (r**n - 1) / (r - 1)``, the next
sleep is ``a r**n = a + (r - 1) T_n``, and reaching a time *T* takes
``n = log_r(1 + (r - 1) T / a)`` sleeps.  So the sleep is always the same
fraction ``r - 1`` of the time already waited (plus *a*): to retry "about
every 10% of the time waited so far", take ``r = 1 + 0.1``.

Every function takes any finite input: results beyond the largest float are
``inf``, never ``OverflowError``, and each is within a few roundings of the
exact value (``r**n`` is taken in pieces that fit, scaled by powers of two,
so a sum that fits is found even when ``r**n`` alone does not).  While
``r**n`` has at most 4096 binary digits (78 sleeps of factor 1.1, 2048 of
factor 2) ``T_n`` and ``a r**n`` are worked out in whole numbers and rounded
once: a sum that is a float is that float, and a sleep that ends right at
the time planned for counts.  Functions of numbers only, so safe from any thread.
"""

from __future__ import annotations

import math
from fractions import Fraction
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

_LOG_MAX = math.log(_checks.FLOAT_MAX)  # 709.78...
_LOG_2 = math.log(2.0)
# r**n is a product of pieces r**c and r**(c + 1) with c log r at most this (c >= 1),
# so that (c + 1) log r, at most twice as much, stays below log(FLOAT_MAX).
_CHUNK = 350.0
# Beyond this many sleeps (r > 1) the sum outgrows any float: even r = 1 + 2**-52
# gives n log r > 4096, and a / (r - 1) is at least 2**-1074.
_MANY = 2**64
# While r**n has at most this many bits, T_n is taken exactly, in whole numbers (a few
# microseconds).  Every sum that is exactly a float lies there: its odd part, below 2**53,
# is at least about top**(n - 1) for r = top / bottom in lowest terms.
_EXACT_BITS = 4096


def elapsed_after(base: float, factor: float, sleeps: int) -> float:
    """Time slept after *sleeps* sleeps: ``a (r**n - 1) / (r - 1)`` (``a n`` for r = 1).

    ``inf`` when the sum outgrows a float, though ``r**n`` alone may not fit
    where the sum does:

    >>> elapsed_after(1, 2, 4)  # 1 + 2 + 4 + 8
    15.0
    >>> round(elapsed_after(1, 1.1, 49), 3)
    1057.19
    >>> elapsed_after(1e-300, 2, 1100)  # 2**1100 is no float; the sum is
    1.3582985290493859e+31
    >>> elapsed_after(1, 2, 1100)
    inf
    """
    a = _checks.positive("base", base)
    r = _checks.factor("factor", factor)
    n = _checks.count("sleeps", sleeps)
    return _elapsed(a, r, n)


def next_sleep(base: float, factor: float, elapsed: float) -> float:
    """The sleep that follows once *elapsed* seconds were slept: ``a + (r - 1) T``.

    >>> next_sleep(1, 2, 15)  # after 1 + 2 + 4 + 8 comes 16
    16.0
    """
    a = _checks.positive("base", base)
    r = _checks.factor("factor", factor)
    t = _checks.seconds("elapsed", elapsed, infinite=True)
    if r == 1.0:  # a constant sleep: 0 * inf would make it NaN
        return a
    return a + (r - 1.0) * t  # float products saturate at inf


def retries_by(base: float, factor: float, elapsed: float) -> float:
    """How many sleeps it takes to have slept *elapsed*: ``log_r(1 + (r - 1) T / a)``.

    A real number, within a few roundings of the exact one: its floor is the
    count of whole sleeps that fit, except on a boundary, where it may fall
    just short of a whole number (``retries_by(1, 3, 1)``, one sleep of 1
    second, may be 0.9999999999999998); :func:`plan` counts whole sleeps
    exactly.  ``inf`` when *elapsed* is, or when that count outgrows a float
    (factor 1, ``T / a`` beyond 1e308).

    >>> retries_by(1, 2, 15)
    4.0
    >>> round(retries_by(1, 1.1, 1057.19), 3)
    49.0
    >>> round(retries_by(1e-300, 1.001, 1e300), 3)  # (r - 1) T / a is no float
    1375330.508
    """
    a = _checks.positive("base", base)
    r = _checks.factor("factor", factor)
    t = _checks.seconds("elapsed", elapsed, infinite=True)
    if r == 1.0:
        return t / a
    if t == math.inf:
        return math.inf
    if t == 0.0:
        return 0.0
    # x = (r - 1) T / a as mantissa * 2**exponent: no overflow or underflow on the way.
    (m_step, e_step), (m_t, e_t), (m_a, e_a) = math.frexp(r - 1.0), math.frexp(t), math.frexp(a)
    mantissa, exponent = m_step * m_t / m_a, e_step + e_t - e_a
    if exponent > 1000:  # beyond floats, where log1p(x) is log(x)
        return (math.log(mantissa) + exponent * _LOG_2) / math.log(r)
    if exponent < -1000:  # log1p(x) is x: one rounding, even among subnormals
        return math.ldexp(mantissa / math.log(r), exponent)
    return math.log1p(math.ldexp(mantissa, exponent)) / math.log(r)


def factor_for_ratio(ratio: float) -> float:
    """The factor whose every sleep is *ratio* times the time already slept, plus the first: ``r = 1 + q``.

    With it the sleep after ``T`` seconds of sleeping is ``a + q T``, so
    ``--ratio 0.1`` of the command line means "wait about another tenth".
    The factor is a float: it keeps a ratio below 1 to within 2**-53, so a
    ratio of 2**-53 or less is factor 1, the constant sleep:

    >>> factor_for_ratio(0.1)
    1.1
    >>> next_sleep(1, factor_for_ratio(0.25), 100)  # 1 + 0.25 * 100
    26.0
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
    """Where a geometric schedule stands at a given elapsed time: what :func:`plan` returns."""

    retries: int  #: whole sleeps that fit within the elapsed time
    exact: float  #: the real-valued retries_by() (inf if beyond floats)
    elapsed: float  #: time slept by those retries (at most the elapsed time asked)
    sleep_before: float | None  #: the last sleep that fits, None if none does
    sleep_after: float  #: the next sleep, the first that would not fit (inf beyond floats)


def plan(base: float, factor: float, elapsed: float) -> Plan:
    """The retry count at *elapsed*, and the sleeps just before and after it.

    *retries* is the largest *n* whose ``T_n`` is at most *elapsed*: found
    from the logarithm, then settled on ``T_n`` itself by bisection, so any
    finite input takes a bounded time.  Factor 1 is counted exactly, in
    integers (there may be more sleeps than a float can count), and so is
    any count whose ``r**n`` has at most 4096 binary digits: a sleep that
    ends right at *elapsed* counts.

    >>> plan(1, 2, 20)
    Plan(retries=4, exact=4.392317422778761, elapsed=15.0, sleep_before=8.0, sleep_after=16.0)
    >>> at = plan(1, 1.25, 3.8125)  # 1 + 1.25 + 1.5625: three sleeps, to the last bit
    >>> at.retries, at.elapsed, at.sleep_after
    (3, 3.8125, 1.953125)
    >>> plan(1e-300, 1.001, 1e300).retries
    1375330
    """
    a = _checks.positive("base", base)
    r = _checks.factor("factor", factor)
    t = _checks.seconds("elapsed", elapsed)
    exact = retries_by(a, r, t)
    if r == 1.0:  # linear: floor(T / a) sleeps of a
        count = math.floor(Fraction(t) / Fraction(a))
        return Plan(count, exact, float(Fraction(a) * count), None if count == 0 else a, a)
    count = _settle(a, r, t, math.floor(exact))
    before = None if count == 0 else _sleep(a, r, count - 1)
    return Plan(count, exact, _elapsed(a, r, count), before, _sleep(a, r, count))


def _settle(a: float, r: float, t: float, guess: int) -> int:
    """The largest n with ``T_n <= t``, near *guess* (the logarithms are a few
    roundings off): bracket it, widening by doubling, then bisect."""
    width = 2
    low, high = max(0, guess - width), guess + width + 1
    step = width
    while low > 0 and not _fits(a, r, t, low):  # T_0 = 0 always fits
        step *= 2
        low = max(0, guess - step)
    step = width
    while _fits(a, r, t, high):  # T_n passes any float by n = 2**64
        step *= 2
        high = guess + step
    while high - low > 1:  # T_low <= t < T_high
        middle = (low + high) // 2
        if _fits(a, r, t, middle):
            low = middle
        else:
            high = middle
    return low


def _fits(a: float, r: float, t: float, n: int) -> bool:
    """Whether ``T_n <= t`` (r > 1): exactly while r**n is small enough to take whole,
    else on the float T_n."""
    exact = _exact(a, r, n)
    if exact is None:
        return _elapsed(a, r, n) <= t
    numerator, denominator = exact
    t_numerator, t_denominator = t.as_integer_ratio()
    return numerator * t_denominator <= t_numerator * denominator


# -- the arithmetic: checked floats in, a float (or inf) out ---------------------------------


def _elapsed(a: float, r: float, n: int) -> float:
    """``a (r**n - 1) / (r - 1)``, ``a n`` for r = 1, inf beyond floats."""
    if r == 1.0:
        return _scaled(Fraction(a) * n)
    exact = _exact(a, r, n)
    if exact is not None:
        return _quotient(*exact)
    if n >= _MANY:
        return math.inf
    y = n * math.log(r)
    if y <= 1.0:  # r**n - 1 would cancel: expm1 keeps the digits; r - 1 >= 2**-52, so the
        return a * (math.expm1(y) / (r - 1.0))  # quotient is at most ~n; a * it saturates
    # log T_n = log a + log(r**n - 1) - log(r - 1), the middle term at least y - 0.46
    if math.log(a) + y - 0.46 - math.log(r - 1.0) > _LOG_MAX + 1.0:
        return math.inf
    mantissa, exponent = _power(r, n, y)
    if exponent < 60:  # r**n is a float here, and r**n - 1 loses nothing
        mantissa, exponent = math.frexp(math.ldexp(mantissa, exponent) - 1.0)
    # else the 1 lies below the last place of r**n
    m_a, e_a = math.frexp(a)
    m_step, e_step = math.frexp(r - 1.0)
    return _ldexp(m_a * mantissa / m_step, e_a + exponent - e_step)


def _exact(a: float, r: float, n: int) -> tuple[int, int] | None:
    """T_n (r > 1) as a numerator and a denominator, whole numbers, while r**n has
    at most _EXACT_BITS bits; else None."""
    top, bottom = r.as_integer_ratio()
    if n * top.bit_length() > _EXACT_BITS:
        return None
    a_top, a_bottom = a.as_integer_ratio()
    # a (r**n - 1) / (r - 1) = a (top**n - bottom**n) bottom / (bottom**n (top - bottom))
    return a_top * (top**n - bottom**n) * bottom, a_bottom * bottom**n * (top - bottom)


def _sleep(a: float, r: float, n: int) -> float:
    """Sleep number *n* (from 0, below 2**64): ``a r**n``, inf beyond floats (rounded
    once while r**n has at most _EXACT_BITS bits)."""
    if r == 1.0 or n == 0:
        return a
    top, bottom = r.as_integer_ratio()
    if n * top.bit_length() <= _EXACT_BITS:  # in whole numbers, as _exact
        a_top, a_bottom = a.as_integer_ratio()
        return _quotient(a_top * top**n, a_bottom * bottom**n)
    y = n * math.log(r)
    if math.log(a) + y > _LOG_MAX + 1.0:
        return math.inf
    mantissa, exponent = _power(r, n, y)
    m_a, e_a = math.frexp(a)
    return _ldexp(m_a * mantissa, e_a + exponent)


def _power(r: float, n: int, y: float) -> tuple[float, int]:
    """``r**n`` as (mantissa, exponent) for 0 < n < 2**64, ``y = n log r`` below ~2200.

    It is the product of a few powers ``r**c`` with ``c log r`` at most 700,
    each a float from ``pow`` of an exact whole float (and a small correction
    when *c* has more digits than a float), so it is a few roundings off."""
    pieces = min(n, math.ceil(y / _CHUNK))
    chunk, longer = divmod(n, pieces)  # `longer` pieces of chunk + 1, the others of chunk
    mantissa, exponent = 1.0, 0
    for size, times in ((chunk, pieces - longer), (chunk + 1, longer)):
        if not times:  # (with n pieces of 1, r**2 need not fit)
            continue
        m_power, e_power = math.frexp(_pow(r, size))
        for _ in range(times):
            mantissa, shift = math.frexp(mantissa * m_power)
            exponent += shift + e_power
    return mantissa, exponent


def _pow(r: float, n: int) -> float:
    """``r**n`` for ``n log r`` within a float's range; *n* may exceed 2**53."""
    whole = float(n)  # exact below 2**53; beyond, a whole float near n
    return math.pow(r, whole) * math.pow(r, n - int(whole))


def _ldexp(mantissa: float, exponent: int) -> float:
    try:
        return math.ldexp(mantissa, exponent)
    except OverflowError:
        return math.inf


def _quotient(numerator: int, denominator: int) -> float:
    """``numerator / denominator`` (whole numbers, the denominator positive), rounded
    once; inf beyond floats."""
    try:
        return numerator / denominator  # int / int is correctly rounded
    except OverflowError:
        return math.inf


def _scaled(value: Fraction) -> float:
    """A positive rational as the nearest float, inf beyond floats."""
    try:
        return float(value)
    except OverflowError:
        return math.inf
