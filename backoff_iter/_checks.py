"""Eager argument checks shared by every public function.

Each check either returns the argument converted to the type the caller
computes with, or raises ``TypeError``/``ValueError`` with a message that
names the parameter and the value it got.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from numbers import Real
from typing import TypeVar, cast

T = TypeVar("T")


class _ArgumentError(Exception):
    """What the argument errors share: the parameter's name, as ``.parameter``."""

    parameter: str
    """The name of the parameter given a bad argument, as the function spells it."""

    def __init__(self, parameter: str, message: str) -> None:
        super().__init__(message)
        self.parameter = parameter

    def __reduce__(self) -> tuple[object, ...]:  # picklable, for worker processes
        return self.__class__, (self.parameter, str(self))


class ArgumentValueError(_ArgumentError, ValueError):
    """An argument's value is out of range: the caller's error, naming the
    parameter (``.parameter``) and the value.  A ValueError to catch like any
    other; the command line tells it apart from a bug of ours, and reads
    ``.parameter`` to name the option that was typed."""

    __module__ = "backoff_iter"


class ArgumentTypeError(_ArgumentError, TypeError):
    """An argument is of the wrong type: the caller's error, naming the
    parameter (``.parameter``) and the value."""

    __module__ = "backoff_iter"


FLOAT_MAX = sys.float_info.max


def number(name: str, value: object) -> float:
    """Return *value* as a float.

    Any real number is taken: ``int``, ``float``, ``Fraction``, ``Decimal``,
    numpy's numbers.  Bools (numpy's too) and non-numbers raise TypeError; an
    integer too large for a float raises ValueError, never OverflowError.
    """
    kind = value.__class__
    if kind is float:  # the common case, without an ABC check
        return value  # type: ignore[return-value]
    if kind is not int and not is_real(value):
        raise ArgumentTypeError(name, f"{name} must be a real number, got {value!r}")
    try:
        return float(value)  # type: ignore[arg-type]
    except OverflowError:
        digits = len(str(abs(value)))  # type: ignore[arg-type]
        raise ArgumentValueError(
            name, f"{name} is too large for a float, got an integer of {digits} digits"
        ) from None
    except ValueError:  # Decimal('sNaN')
        raise ArgumentValueError(name, f"{name} must be a number, got {value!r}") from None


def is_real(value: object) -> bool:
    if isinstance(value, bool) or value.__class__.__name__ in ("bool_", "bool"):
        return False  # True is not 1 second; numpy.bool_ is no number either
    if isinstance(value, Real):
        return True
    from decimal import Decimal  # imported on first use: rarely needed

    return isinstance(value, Decimal)


def seconds(name: str, value: object, *, infinite: bool = False) -> float:
    """A duration: a number that is not negative, not NaN, finite unless *infinite*."""
    result = number(name, value)
    if not result >= 0.0:  # also catches NaN
        raise ArgumentValueError(name, f"{name} must be a non-negative number, got {value!r}")
    if not infinite and result == math.inf:
        raise ArgumentValueError(name, f"{name} must be finite, got {value!r}")
    return result + 0.0  # -0.0 becomes 0.0


def positive(name: str, value: object) -> float:
    """A finite number greater than 0 (a rate, a first sleep, a timeout)."""
    result = seconds(name, value)
    if result == 0.0:
        raise ArgumentValueError(name, f"{name} must be greater than 0, got {value!r}")
    return result


def factor(name: str, value: object, *, above_one: bool = False) -> float:
    """A growth factor: finite and >= 1 (or > 1 when *above_one*)."""
    result = number(name, value)
    if above_one:
        ok = 1.0 < result < math.inf
        wanted = "a finite number greater than 1"
    else:
        ok = 1.0 <= result < math.inf
        wanted = "a finite number of at least 1"
    if not ok:
        raise ArgumentValueError(name, f"{name} must be {wanted}, got {value!r}")
    return result


def count(name: str, value: object, *, minimum: int = 0) -> int:
    """A whole number (not a bool) of at least *minimum*."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentTypeError(name, f"{name} must be a whole number, got {value!r}")
    if value < minimum:
        raise ArgumentValueError(name, f"{name} must be at least {minimum}, got {value!r}")
    return value


def delays_factory(name: str, delays: object) -> tuple[Callable[[], Iterable[float]], bool]:
    """What every driver and adapter takes as delays, as (factory, one_shot).

    A zero-argument function returning fresh delays, or a list or tuple (any
    sequence but a string), can serve any number of calls; any other iterable
    serves one (*one_shot*).  Anything else is a TypeError naming *name*.
    """
    kind = delays.__class__
    if kind is list or kind is tuple:
        return delays.__iter__, False  # type: ignore[attr-defined]
    if isinstance(delays, (str, bytes)):  # iterable, but of characters: surely a mistake
        raise ArgumentTypeError(name, f"{name} must give numbers of seconds, got {delays!r}")
    if isinstance(delays, Iterator):  # an iterator that happens to be callable is still one-shot
        return delays.__iter__, True
    if callable(delays):
        return cast(Callable[[], Iterable[float]], delays), False
    if isinstance(delays, Sequence) and not isinstance(delays, (str, bytes)):
        return delays.__iter__, False
    return iterable(name, delays).__iter__, True  # type: ignore[arg-type]


def reusable_delays(name: str, delays: object) -> Callable[[], Iterable[float]]:
    """:func:`delays_factory` for what serves many calls (a decorator, an
    adapter): a one-shot iterator is a TypeError naming *name*."""
    factory, one_shot = delays_factory(name, delays)
    if one_shot:
        raise ArgumentTypeError(
            name,
            f"{name} must be a zero-argument function returning fresh delays"
            " (e.g. lambda: islice(exponential(0.1), 5)) or a list/tuple;"
            f" an iterator is used up after one call, got {delays!r}",
        )
    return factory


def fresh_delays(name: str, factory: Callable[[], Iterable[T]]) -> Iterator[T]:
    """``iter(factory())``, with a TypeError naming *name* when it returns no iterable.

    Raised outside the ``except`` block, so the failure being retried when the
    factory runs stays the error's context."""
    made = factory()
    try:
        return iter(made)
    except TypeError:
        pass
    raise ArgumentTypeError(
        name,
        f"{name} must be a zero-argument function returning an iterable"
        f" of delays, but {factory!r} returned {made!r}",
    )


def iterable(name: str, value: Iterable[T]) -> Iterator[T]:
    """``iter(value)``, with a TypeError that names the parameter."""
    try:
        return iter(value)
    except TypeError:
        raise ArgumentTypeError(name, f"{name} must be an iterable, got {value!r}") from None


def function(name: str, value: object | None) -> None:
    """Reject a non-callable where a callable is expected."""
    if not callable(value):
        raise ArgumentTypeError(name, f"{name} must be callable, got {value!r}")


F = TypeVar("F")


def text(name: str, value: object) -> str:
    """*value* if it is a string; a TypeError naming *name* otherwise."""
    if not isinstance(value, str):
        raise ArgumentTypeError(name, f"{name} must be a string, got {value!r}")
    return value


def optional_function(name: str, value: F) -> F:
    """*value* if it is None or callable; a TypeError naming *name* otherwise."""
    if value is not None and not callable(value):
        raise ArgumentTypeError(name, f"{name} must be callable or None, got {value!r}")
    return value
