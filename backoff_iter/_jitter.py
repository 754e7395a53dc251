"""Jitter: the random sources and the kernels that spread a delay, in one room.

Used by the jittered strategies and by :func:`backoff_iter.jittered`.  Every
kernel is the issue's formula, ``uniform(a, b)`` being ``a + (b - a) *
random()`` as :meth:`random.Random.uniform` computes it, so the values are
those of the formulas bit for bit.  None ever yields NaN: an infinite delay
stays infinite (``uniform(0, inf)`` with a draw of exactly 0 is 0).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Iterator
from itertools import repeat, starmap
from operator import add, mul
from typing import Any, cast

from . import _checks

_INF = math.inf


def random_source(rng: Any) -> Callable[[], float]:
    """A zero-argument function drawing uniformly from [0, 1).

    ``None`` means the module-level :func:`random.random`.  Any object with a
    ``random()`` method (such as a :class:`random.Random` - an instance: the
    class itself is refused) is used through it; an object that only has
    ``uniform(a, b)`` is used as ``uniform(0, 1)``.  Both give the same floats
    as ``rng.uniform(a, b)`` does.
    """
    if rng is None:
        return random.random
    draw = getattr(rng, "random", None)
    if callable(draw) and not (isinstance(rng, type) and _unbound(rng, "random")):
        return draw  # type: ignore[no-any-return]
    uniform = getattr(rng, "uniform", None)
    if callable(uniform) and not (isinstance(rng, type) and _unbound(rng, "uniform")):
        return lambda: float(cast("Callable[[float, float], float]", uniform)(0.0, 1.0))
    instead = " (a class: give an instance, random.Random(seed))" if isinstance(rng, type) else ""
    raise _checks.ArgumentTypeError(
        "rng",
        "rng must be None or have a random() or uniform(a, b) method,"
        f" got {_checks.shown(rng)}{instead}",
    )


def _unbound(rng: type, name: str) -> bool:
    """Is the method *name* of the class *rng* one of its instances' (``rng=random.Random``,
    meant as ``random.Random(seed)``: its first draw was a TypeError naming no ``rng``)?"""
    for klass in rng.__mro__:
        if name in vars(klass):
            return not isinstance(vars(klass)[name], (staticmethod, classmethod))
    return False


# What each draw is called with: shared by every stream of draws (an endless
# repeat never changes, and holds nothing).
_NO_ARGUMENTS = repeat(())


def draws(rng: Any) -> Iterator[float]:
    """An endless stream of uniform draws from [0, 1), all in C.

    (``more_itertools.repeatfunc`` says the same, but importing more-itertools
    would double the time ``import backoff_iter`` takes.)"""
    return starmap(random.random if rng is None else random_source(rng), _NO_ARGUMENTS)


def full_finite(delays: Iterable[float], draws: Iterator[float]) -> Iterator[float]:
    """``uniform(0, d)`` for finite delays: exactly ``d * random()``, at C speed."""
    return map(mul, delays, draws)


def full(delays: Iterable[float], draw: Callable[[], float]) -> Iterator[float]:
    """``uniform(0, d)`` for any delay, ``inf`` included."""
    for delay in delays:
        value = delay * draw()
        yield value if value == value else 0.0  # inf * 0.0 is NaN: the draw was 0


def full_then(delays: Iterable[float], cap: float, draw: Callable[[], float]) -> Iterator[float]:
    """``uniform(0, d)`` for finite delays, then for a finite *cap* forever:
    one generator, the cheapest to make (a schedule is made per call)."""
    for delay in delays:
        yield delay * draw()
    while True:
        yield cap * draw()


def full_of_infinity(draws: Iterator[float]) -> Iterator[float]:
    """``uniform(0, inf)`` forever: inf, or 0.0 for a draw of exactly 0."""
    return map(_infinity_or_zero, draws)


def _infinity_or_zero(draw: float) -> float:
    return _INF if draw > 0.0 else 0.0


def equal(delays: Iterable[float], draw: Callable[[], float]) -> Iterator[float]:
    """``d/2 + uniform(0, d/2)``, which is ``h + h * random()`` with ``h = d * 0.5``."""
    for delay in delays:
        half = delay * 0.5
        if half == _INF:
            draw()  # the draw is made, as for any delay
            yield _INF
        else:
            yield half + half * draw()


def equal_then(delays: Iterable[float], cap: float, draw: Callable[[], float]) -> Iterator[float]:
    """:func:`equal` of finite delays, then of a finite *cap* forever: one
    generator, as :func:`full_then`."""
    for delay in delays:
        half = delay * 0.5
        yield half + half * draw()
    half = cap * 0.5
    while True:
        yield half + half * draw()


def equal_of_infinity(draws: Iterator[float]) -> Iterator[float]:
    """:func:`equal` of ``inf`` forever, a draw each time: ``inf + u`` is ``inf``, never NaN."""
    return map(add, repeat(_INF), draws)


def spread(delays: Iterable[float], fraction: float, draw: Callable[[], float]) -> Iterator[float]:
    """``uniform(d·(1-f), d·(1+f))``: plus or minus the fraction *f*."""
    for delay in delays:
        low = delay * (1.0 - fraction)
        high = delay * (1.0 + fraction)
        if high == _INF:
            if delay < _INF:  # d·(1+f) outgrows a float, the value need not: the formula on
                half = delay * 0.5  # halves rounds as without a largest exponent
                low = half * (1.0 - fraction)
                yield 2.0 * (low + (half * (1.0 + fraction) - low) * draw())  # inf beyond floats
            elif draw() > 0.0:  # inf - low, or inf times a draw of 0, would be NaN
                yield _INF
            else:  # the low end; an infinite delay's at f = 1 is NaN: uniform(0, inf)'s 0.0
                yield low if low == low else 0.0
            continue
        yield low + (high - low) * draw()
