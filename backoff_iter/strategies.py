"""Backoff strategies: each checks its arguments and returns an infinite
iterator of delays in seconds.

Take as many delays as you want with :func:`itertools.islice`,
:func:`itertools.takewhile` or :func:`backoff_iter.within`.  Each delay
costs the same whatever its index, and nothing overflows: with ``cap=inf``
a value that outgrows a float becomes ``inf``.  Every strategy but
decorrelated stops computing once its values reach ``cap`` and repeats the
cap (full and equal jitter: jitter under it) from then on; decorrelated
draws each delay from the previous one, so it may fall below the cap again.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Iterator
from functools import cache, lru_cache, partial
from itertools import chain, count, islice, repeat, takewhile
from operator import mul
from typing import Any, Callable

from . import _checks, _jitter

__all__ = [
    "constant",
    "decorrelated",
    "equal_jitter",
    "exponential",
    "fibonacci",
    "full_jitter",
    "linear",
    "smooth_jitter",
]

_INF = math.inf


# -- the arguments -------------------------------------------------------------

_PLAIN = frozenset({float, int})  # numbers checked without a call (bool is not one)


def _growth(
    base: object, cap: object, factor: object, *, above_one: bool = False
) -> tuple[float, float, float]:
    """(base, cap, factor) checked: the common case of plain numbers in range at
    once (strategies are made per call), anything else by the full checks.
    -0.0 is 0.0, as the checks make it."""
    if (
        base.__class__ in _PLAIN
        and cap.__class__ in _PLAIN
        and factor.__class__ in _PLAIN
        and 0.0 <= base < _INF  # type: ignore[operator]
        and cap >= 0.0  # type: ignore[operator]  # NaN fails this
        and (1.0 < factor < _INF if above_one else 1.0 <= factor < _INF)  # type: ignore[operator]
    ):
        try:
            return float(base) + 0.0, float(cap) + 0.0, float(factor)  # type: ignore[arg-type]
        except OverflowError:  # an int beyond floats: let the checks name it
            pass
    return (
        _checks.seconds("base", base),
        _checks.seconds("cap", cap, infinite=True),
        _checks.factor("factor", factor, above_one=above_one),
    )


def _base_and_cap(base: object, cap: object) -> tuple[float, float]:
    """(base, cap) checked: two floats in range at once, anything else by the
    full checks (a cap of -0.0 too: they make it 0.0)."""
    if type(base) is float and type(cap) is float and 0.0 <= base < _INF and cap > 0.0:
        return base + 0.0, cap  # -0.0 is 0.0
    return _checks.seconds("base", base), _checks.seconds("cap", cap, infinite=True)


# -- deterministic building blocks (no argument checks) ---------------------


def _power_fits(factor: float, exponent: int) -> bool:
    try:
        _ = factor**exponent
    except OverflowError:
        return False
    return True


@lru_cache(maxsize=64)
def _finite_powers(factor: float) -> int:
    """How many of ``factor**0, factor**1, ...`` a float holds (factor > 1)."""
    top = int(math.log(_checks.FLOAT_MAX) / math.log(factor))
    while _power_fits(factor, top + 1):
        top += 1
    while not _power_fits(factor, top):
        top -= 1
    return top + 1


def _beyond_powers(base: float, factor: float, attempt: int, cap: float) -> Iterator[float]:
    """``base * factor**attempt`` from *attempt* on while below *cap*, where
    ``factor**attempt`` is no float: each value is the product rounded once.

    The product is kept as an integer of 144 bits times a power of two (base
    and factor are such numbers exactly), multiplied by *factor* per value
    and rounded back to 144 bits: over the longest run a float reaches
    (10**18 values, factor 1 + 2**-52) that loses less than 1e-24 of it, far
    below a float's last place, and ``ldexp`` puts the power of two back
    exactly (each value is at least base times the largest float: never
    subnormal).  Integers, not decimals: about 0.5 us a value, two or three
    times one below the powers, where a decimal's conversion to a float took
    3 us.  Only a base below 1 and a cap beyond 1e308 / factor or so reach
    these values."""
    numerator, denominator = factor.as_integer_ratio()
    shift = denominator.bit_length() - 1  # factor is numerator / 2**shift
    mantissa, exponent = _power_bits(numerator, shift, attempt)
    numerator_of_base, denominator_of_base = base.as_integer_ratio()
    mantissa, exponent = _rounded_bits(
        mantissa * numerator_of_base, exponent - (denominator_of_base.bit_length() - 1)
    )
    ldexp = math.ldexp
    while True:
        try:
            value = ldexp(float(mantissa), exponent)  # the integer rounded once to a float
        except OverflowError:  # beyond floats: so is every later value
            return
        if not value < cap:
            return
        yield value
        # (numerator**attempt > 2**1024 had more bits than kept, and a factor above 1
        # in lowest terms has a numerator of at least 2: extra is at least 1)
        mantissa *= numerator
        extra = mantissa.bit_length() - _BITS  # (_rounded_bits inline: a call per value)
        mantissa = (mantissa + (1 << (extra - 1))) >> extra
        exponent += extra - shift


#: The bits :func:`_beyond_powers` keeps of its product.
_BITS = 144


def _rounded_bits(mantissa: int, exponent: int) -> tuple[int, int]:
    """``mantissa * 2**exponent`` with the mantissa rounded to :data:`_BITS` bits
    (one more when rounding carries), if it has more."""
    extra = mantissa.bit_length() - _BITS
    if extra <= 0:
        return mantissa, exponent
    return (mantissa + (1 << (extra - 1))) >> extra, exponent + extra


def _power_bits(numerator: int, shift: int, power: int) -> tuple[int, int]:
    """``(numerator / 2**shift) ** power`` as ``mantissa * 2**exponent``, squared
    and multiplied (each product rounded to :data:`_BITS` bits), in as many
    steps as *power* has bits - not a 53-bit number multiplied *power* times."""
    mantissa, exponent = 1, 0
    square, square_exponent = numerator, -shift
    while power:
        if power & 1:
            mantissa, exponent = _rounded_bits(mantissa * square, exponent + square_exponent)
        power >>= 1
        if power:
            square, square_exponent = _rounded_bits(square * square, square_exponent * 2)
    return mantissa, exponent


def _count_below(base: float, factor: float, cap: float, powers: int) -> int:
    """How many attempts n < *powers* have ``base * factor**n < cap`` (0 < base < cap, factor > 1)."""
    target = min(cap, _checks.FLOAT_MAX)
    guess = math.ceil((math.log(target) - math.log(base)) / math.log(factor))
    n = max(0, min(powers, guess))
    # The logarithms are within an ulp or two: settle the boundary exactly.
    while n > 0 and not base * factor ** (n - 1) < cap:
        n -= 1
    while n < powers and base * factor**n < cap:
        n += 1
    return n


# Schedules with at most this many values below the cap keep them in a tuple.
_FEW = 256


@lru_cache(maxsize=256)
def _plan(base: float, factor: float, cap: float) -> tuple[int, int, tuple[float, ...] | None]:
    """(finite powers, values below the cap, those values if few) for one schedule.

    Programs use a handful of schedules, each made again for every retried
    call: caching the plan makes a new schedule cost two small objects.
    """
    powers = _finite_powers(factor)
    below = _count_below(base, factor, cap, powers)
    few = tuple(base * factor**n for n in range(below)) if below <= _FEW else None
    return powers, below, few


def _below_cap(base: float, factor: float, cap: float) -> Iterable[float]:
    """``base * factor**attempt`` for attempt = 0, 1, ... while it stays below *cap*.

    Empty if base reaches the cap at once; infinite if the values never do.
    """
    if not base < cap:
        return ()
    if base == 0.0 or factor == 1.0:
        return repeat(base)
    powers, below, few = _plan(base, factor, cap)
    # Each value is computed from its attempt number, as the formula says, for
    # as long as factor**attempt fits in a float.
    exact = (
        few if few is not None else map(mul, repeat(base), map(pow, repeat(factor), range(below)))
    )
    if below < powers:
        return exact
    # Below the cap still where factor**attempt is no float (a base below 1, a cap
    # near or beyond 1e308): pow would raise OverflowError.
    return chain(exact, _beyond_powers(base, factor, powers, cap))


def _schedule(
    base: object, cap: object, factor: object
) -> tuple[float, float, float, Iterable[float]]:
    """(base, cap, factor) checked, and the values below the cap (:func:`_below_cap`).

    For plain numbers with few values below the cap, all four come from a
    cache: a program makes a handful of schedules, each again per retried call.
    """
    if base.__class__ in _PLAIN and cap.__class__ in _PLAIN and factor.__class__ in _PLAIN:
        planned = _planned(base, cap, factor)
        if planned[3] is not None:
            return planned  # type: ignore[return-value]
    base, cap, factor = _growth(base, cap, factor)
    return base, cap, factor, _below_cap(base, factor, cap)


@lru_cache(maxsize=256)
def _planned(
    base: float, cap: float, factor: float
) -> tuple[float, float, float, tuple[float, ...] | None]:
    """:func:`_schedule` of plain numbers, its values below the cap only if few
    (a tuple; None when an iterator must be made per schedule).  1 and 1.0 are
    one key, as their checked values are (-0.0 and 0.0 too: both are 0.0)."""
    base, cap, factor = _growth(base, cap, factor)
    below = _below_cap(base, factor, cap)
    return base, cap, factor, below if isinstance(below, tuple) else None


# -- deterministic strategies -----------------------------------------------


def constant(delay: float = 1.0) -> Iterator[float]:
    """The same delay forever.

    >>> from itertools import islice
    >>> list(islice(constant(0.5), 3))
    [0.5, 0.5, 0.5]
    """
    return repeat(_checks.seconds("delay", delay))


def linear(base: float = 1.0, step: float | None = None, *, cap: float = _INF) -> Iterator[float]:
    """Delays growing by *step*: ``min(cap, base + step * attempt)``.

    *step* defaults to *base*.  Each value is computed from its attempt
    number, so no rounding error accumulates.  Stop it with ``islice``:

    >>> from itertools import islice
    >>> list(islice(linear(1), 4))
    [1.0, 2.0, 3.0, 4.0]
    >>> list(islice(linear(0.5, 0.25, cap=1), 4))
    [0.5, 0.75, 1.0, 1.0]
    """
    if step is None:
        base, cap = _base_and_cap(base, cap)
        step = base
    else:  # checked in the order given
        base = _checks.seconds("base", base)
        step = _checks.seconds("step", step)
        cap = _checks.seconds("cap", cap, infinite=True)
    if step == 0.0 or base >= cap:
        return repeat(min(base, cap))
    return _linear(base, step, cap)


def _linear(base: float, step: float, cap: float) -> Iterator[float]:
    """``base + step * attempt`` while below *cap*, then the cap: each from
    its attempt number, so no rounding error adds up (an overflow is inf)."""
    attempt, delay = 0, base
    while delay < cap:
        yield delay
        attempt += 1
        delay = base + step * attempt
    while True:
        yield cap


def exponential(base: float = 1.0, factor: float = 2.0, *, cap: float = _INF) -> Iterator[float]:
    """Delays multiplied by *factor* each time: ``min(cap, base * factor**attempt)``.

    The first delay is *base*.  Without a cap the values grow to ``inf`` and
    stay there; they never raise ``OverflowError``.

    >>> from itertools import islice
    >>> list(islice(exponential(0.1, cap=1), 6))
    [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    >>> list(islice(exponential(1, 10), 3))
    [1.0, 10.0, 100.0]
    """
    base, cap, factor, below = _schedule(base, cap, factor)
    return chain(below, repeat(cap))


def _fibonacci_floats() -> tuple[tuple[float, ...], tuple[int, int]]:
    """F(1), F(2), ... as floats, each the integer rounded once (a sum of rounded
    floats drifts past 2**53), while one fits; and the two integers after them."""
    numbers: list[float] = []
    previous, number = 0, 1
    while True:
        try:
            numbers.append(float(number))
        except OverflowError:
            return tuple(numbers), (previous, number)
        previous, number = number, previous + number


# 1, 1, 2, 3, 5, ... as floats, every one a float holds (1,476 items), so no giant
# integers per value; and F(1476), F(1477), for a tiny base that goes on past them.
_FIBONACCI, _FIBONACCI_BEYOND = _fibonacci_floats()


def fibonacci(base: float = 1.0, *, cap: float = _INF) -> Iterator[float]:
    """Delays following the Fibonacci numbers: base·1, base·1, base·2, base·3, base·5, ...

    >>> from itertools import islice
    >>> list(islice(fibonacci(0.5, cap=3), 7))
    [0.5, 0.5, 1.0, 1.5, 2.5, 3.0, 3.0]
    """
    base, cap = _base_and_cap(base, cap)
    if base == 0.0 or base >= cap:
        return repeat(min(base, cap))
    few = _fibonacci_below(base, cap)
    if few is not None:
        return chain(few, repeat(cap))
    return _fibonacci(base, cap)


@lru_cache(maxsize=256)
def _fibonacci_below(base: float, cap: float) -> tuple[float, ...] | None:
    """The values of :func:`_fibonacci` below *cap*, if few; made once per
    schedule, which a program makes again per retried call."""
    below = tuple(takewhile(cap.__gt__, islice(_fibonacci(base, cap), _FEW + 1)))
    return below if len(below) <= _FEW else None


def _fibonacci(base: float, cap: float) -> Iterator[float]:
    """``base * F(n)`` while below *cap*, then the cap.  Past the last F(n) a
    float holds (only a base below 1.38 gets there below the cap) each value is
    still base times the integer F(n) rounded once, by powers of two."""
    for number in _FIBONACCI:
        delay = base * number
        if not delay < cap:
            break
        yield delay
    else:
        yield from _fibonacci_beyond(base, cap)
    while True:
        yield cap


def _fibonacci_beyond(base: float, cap: float) -> Iterator[float]:
    """``base * F(n)`` for the integers F(n) beyond floats, while below *cap*:
    ``F(n) / 2**shift`` is F(n) rounded to 53 bits, its product with base (at
    least 2**-1021, no subnormal) rounded as a float without a largest exponent
    would round it, and ``ldexp`` puts the power of two back exactly."""
    previous, number = _FIBONACCI_BEYOND
    while True:
        shift = number.bit_length() - 53
        try:
            delay = math.ldexp(base * (number / (1 << shift)), shift)
        except OverflowError:
            return
        if not delay < cap:
            return
        yield delay
        previous, number = number, previous + number


# -- jittered strategies ----------------------------------------------------


def full_jitter(
    base: float = 1.0, cap: float = _INF, *, factor: float = 2.0, rng: Any = None
) -> Iterator[float]:
    """AWS "full jitter": ``uniform(0, min(cap, base * factor**attempt))``.

    Spreads retries over the whole window; the best choice when many clients
    contend.  Pass a seeded :class:`random.Random` as *rng* for repeatable
    values:

    >>> from itertools import islice
    >>> from random import Random
    >>> delays = list(islice(full_jitter(1, cap=8, rng=Random(3)), 5))
    >>> [round(d, 3) for d in delays]
    [0.238, 1.088, 1.48, 4.831, 5.006]
    >>> all(0 <= d <= min(8, 2**i) for i, d in enumerate(delays))
    True
    """
    base, cap, factor, below = _schedule(base, cap, factor)
    if cap < _INF:
        return _jitter.full_then(below, cap, _jitter.random_source(rng))
    # Values below an infinite cap are finite; inf * 0.0 at the cap would be NaN.
    draws = _jitter.draws(rng)
    return chain(_jitter.full_finite(below, draws), _jitter.full_of_infinity(draws))


def equal_jitter(
    base: float = 1.0, cap: float = _INF, *, factor: float = 2.0, rng: Any = None
) -> Iterator[float]:
    """AWS "equal jitter": ``t/2 + uniform(0, t/2)`` with ``t = min(cap, base * factor**attempt)``.

    Always waits at least half the exponential delay:

    >>> from itertools import islice
    >>> from random import Random
    >>> delays = list(islice(equal_jitter(1, cap=8, rng=Random(3)), 5))
    >>> [round(d, 3) for d in delays]
    [0.619, 1.544, 2.74, 6.416, 6.503]
    >>> all(min(8, 2**i) / 2 <= d <= min(8, 2**i) for i, d in enumerate(delays))
    True
    """
    base, cap, factor, below = _schedule(base, cap, factor)
    if cap < _INF:
        return _jitter.equal_then(below, cap, _jitter.random_source(rng))
    draws = _jitter.draws(rng)
    return chain(_jitter.equal(below, draws.__next__), _jitter.equal_of_infinity(draws))


def decorrelated(
    base: float = 1.0, cap: float = _INF, *, factor: float = 3.0, rng: Any = None
) -> Iterator[float]:
    """AWS "decorrelated jitter": ``sleep = min(cap, uniform(base, sleep * factor))``.

    *sleep* starts at *base*, so the first delay lies in ``[base, factor·base]``
    (``[base, 3·base]`` by default).
    Each delay depends on the previous one, not on the attempt number.

    >>> from itertools import islice
    >>> from random import Random
    >>> delays = list(islice(decorrelated(1, cap=30, rng=Random(3)), 5))
    >>> [round(d, 3) for d in delays]
    [1.476, 2.866, 3.81, 7.3, 14.077]
    >>> all(1 <= d <= 30 for d in delays)
    True
    """
    base, cap, factor = _growth(base, cap, factor, above_one=True)
    return _decorrelated(base, cap, factor, _jitter.random_source(rng))


def _decorrelated(
    base: float, cap: float, factor: float, draw: Callable[[], float]
) -> Iterator[float]:
    # Below half the largest float / factor, sleep * factor is a float; from there on
    # (a cap near the largest float, or none) the values go on by halves.
    fits = _HALF_MAX / factor
    bound = cap if cap < fits else fits
    sleep = base
    while True:
        # uniform(a, b) is a + (b - a) * random(); `x if x < cap else cap` is min(cap, x)
        sleep = base + (sleep * factor - base) * draw()
        if not sleep < bound:
            if bound < cap:
                yield from _decorrelated_halved(base, cap, factor, sleep, draw)
                return
            sleep = cap
        yield sleep


_HALF_MAX = _checks.FLOAT_MAX * 0.5


def _decorrelated_halved(
    base: float, cap: float, factor: float, sleep: float, draw: Callable[[], float]
) -> Iterator[float]:
    """:func:`_decorrelated` on from a *sleep* near the largest float.  Where
    ``sleep * factor`` outgrows a float the value need not: the formula on halves,
    ``base + 2 ((sleep/2 * factor - base/2) * u)``, rounds each operation as it
    would round without a largest exponent (inf only for a value beyond floats)."""
    while True:
        if not sleep < cap:  # min(cap, x), also for a NaN x (inf * 0.0 when cap is inf)
            sleep = cap
        yield sleep
        grown = sleep * factor
        if grown < _INF:
            sleep = base + (grown - base) * draw()
        else:
            sleep = base + 2.0 * ((sleep * 0.5 * factor - base * 0.5) * draw())


# Polly's constants: 4 smooths the first delay, 1.4 puts the medians of the
# retry times near base, 2·base, 4·base, ...
_SMOOTH_P = 4.0
_SMOOTH_SCALE = 1.4
# 2.0 ** t overflows a float from here on.
_SMOOTH_LAST_T = 1024.0


def smooth_jitter(base: float = 1.0, cap: float = _INF, *, rng: Any = None) -> Iterator[float]:
    """Polly's "decorrelated jitter V2": jittered exponential growth, smooth spread.

    For try ``i = 0, 1, 2, ...`` it draws ``t = i + uniform(0, 1)``, takes
    ``g(t) = 2**t * tanh(sqrt(4*t))`` (``g = 0`` before the first try) and
    yields ``min(cap, (g(t_i) - g(t_(i-1))) * base / 1.4)``.  The median of
    the first delay is about 0.9·base (``g(0.5) / 1.4``); the medians of the
    retry *times* run near base, 2·base, 4·base, ...  Unlike AWS's
    decorrelated jitter the delays spread smoothly on their way up, with no
    run of draws near the cap before they reach it.  Values stay finite (at
    most the largest float) and are never NaN: once a value reaches the cap,
    the cap repeats.

    >>> from itertools import islice
    >>> from random import Random
    >>> delays = list(islice(smooth_jitter(1, cap=30, rng=Random(3)), 6))
    >>> [round(d, 3) for d in delays]
    [0.633, 1.422, 1.622, 4.999, 8.952, 6.286]
    """
    base, cap = _base_and_cap(base, cap)
    # random_source(None) and min() inline: calls a short schedule pays for when it is made
    draw = random.random if rng is None else _jitter.random_source(rng)
    if base == 0.0:
        return repeat(0.0)
    return _smooth(base, cap if cap < _checks.FLOAT_MAX else _checks.FLOAT_MAX, draw)


def _smooth(base: float, cap: float, draw: Callable[[], float]) -> Iterator[float]:
    tanh, sqrt = math.tanh, math.sqrt
    p, scale, last_t = _SMOOTH_P, _SMOOTH_SCALE, _SMOOTH_LAST_T  # locals: read per value
    previous = 0.0
    for attempt in count():
        t = attempt + draw()
        if t < last_t:
            current = 2.0**t * tanh(sqrt(p * t))
            delay = (current - previous) * base / scale
            if delay < cap:
                yield delay
                previous = current
                continue
            if delay < _INF:  # (the cap is finite: at most the largest float)
                break
        # 2**t, or the product by base on the way to the delay, outgrows a float
        yield from _smooth_scaled(base, previous, t, attempt, cap, draw)
        return
    while True:  # as quick as repeat() here: no delegation to resume per value
        yield cap


def _smooth_scaled(
    base: float, previous: float, t: float, attempt: int, cap: float, draw: Callable[[], float]
) -> Iterator[float]:
    """The same formula where a float cannot hold ``g(t)`` (past t = 1024: only a tiny
    base gets there below the cap) or ``(g(t) - g(t')) * base`` (a base near the
    largest float): each g(t) is kept as ``2**whole`` times a float, and base as its
    mantissa times a power of two, so every operation rounds as the formula's float
    operations would round without a largest exponent (a subnormal base loses no digits),
    and ``ldexp`` puts the powers of two back exactly."""
    mantissa, exponent = math.frexp(base)
    shift = 0  # previous is g(t') / 2**shift
    while True:
        whole = math.floor(t)
        current = math.tanh(math.sqrt(_SMOOTH_P * t)) * 2.0 ** (t - whole)  # g(t) / 2**whole
        difference = current - math.ldexp(previous, shift - whole)
        try:
            delay = math.ldexp(difference * mantissa / _SMOOTH_SCALE, whole + exponent)
        except OverflowError:
            break
        if not delay < cap:
            break
        yield delay
        previous, shift = current, whole
        attempt += 1
        t = attempt + draw()
    yield from repeat(cap)


# -- by name: one registry for the command line and the simulators -------------

#: Every strategy of this library, by name.  Adding a strategy here is all the
#: command line and the simulators need: their options come from its signature.
STRATEGIES: dict[str, Callable[..., Iterator[float]]] = {
    "constant": constant,
    "linear": linear,
    "exponential": exponential,
    "fibonacci": fibonacci,
    "full_jitter": full_jitter,
    "equal_jitter": equal_jitter,
    "decorrelated": decorrelated,
    "smooth_jitter": smooth_jitter,
}


@cache
def parameters(name: str) -> tuple[str, ...]:
    """The options strategy *name* takes, ``base`` standing for constant's ``delay``.

    >>> parameters("exponential"), parameters("constant")
    (('base', 'factor', 'cap'), ('base',))
    """
    import inspect  # on first use only: slow to import

    function = STRATEGIES[_known(name)]
    names = tuple(inspect.signature(function).parameters)
    return tuple("base" if n == "delay" else n for n in names)


def make(name: str, **options: Any) -> Iterator[float]:
    """Strategy *name* with the *options* it takes; the others are ignored.

    ``base`` is constant's ``delay`` (which it takes by that name too).
    Unknown names raise ``ValueError``.

    >>> from itertools import islice
    >>> list(islice(make("exponential", base=1, cap=3, rng=None), 4))
    [1.0, 2.0, 3.0, 3.0]
    >>> list(islice(make("constant", base=0.5, cap=3), 2)), list(islice(make("constant", delay=5), 2))
    ([0.5, 0.5], [5.0, 5.0])
    """
    return maker(name, **options)()


def maker(name: str, **options: Any) -> Callable[[], Iterator[float]]:
    """A zero-argument function making strategy *name* with those *options*:
    the options are sorted out once, for a simulator that makes thousands."""
    taken = parameters(_known(name))
    kwargs = {key: value for key, value in options.items() if key in taken}
    if name == "constant":  # its delay, as the others' base or by its own name
        if "base" in kwargs:
            kwargs["delay"] = kwargs.pop("base")
        elif "delay" in options:
            kwargs["delay"] = options["delay"]
    return partial(STRATEGIES[name], **kwargs)


def _known(name: str) -> str:
    if not isinstance(name, str):  # (a list is no key: unhashable)
        raise _checks.ArgumentTypeError(
            "strategy",
            f"strategy must be a name, one of {', '.join(STRATEGIES)}, got {_checks.shown(name)}",
        )
    if name not in STRATEGIES:
        raise _checks.ArgumentValueError(
            "strategy",
            f"strategy must be one of {', '.join(STRATEGIES)}, got {_checks.shown(name)}",
        )
    return name
