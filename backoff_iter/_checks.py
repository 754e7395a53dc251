"""Eager argument checks shared by every public function.

Each check either returns the argument converted to the type the caller
computes with, or raises ``TypeError``/``ValueError`` with a message that
names the parameter and the value it got.
"""

from __future__ import annotations

import _thread
import math
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from numbers import Real
from types import FrameType, FunctionType, MethodType
from typing import Any, TypeVar, cast

T = TypeVar("T")


class _ArgumentError(Exception):
    """What the argument errors share: the parameter's name, as ``.parameter``."""

    parameter: str
    """The name of the parameter given a bad argument, as the function spells it."""

    def __init__(self, parameter: str, message: str) -> None:
        super().__init__(message)
        self.parameter = parameter

    def __reduce__(self) -> tuple[object, ...]:  # picklable, for worker processes
        return self.__class__, (self.parameter, str(self)), self.__dict__


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

#: The longest wait a loop sleeps, in seconds; a longer one ends the loop.
#: Half of what the platform's timed waits accept (about 146 years on Linux,
#: 24 days on Windows): ``time.sleep`` fails on its own limit, not ours.
LONGEST = _thread.TIMEOUT_MAX / 2


def number(name: str, value: object, *, endless: bool = False) -> float:
    """Return *value* as a float.

    Any real number is taken: ``int``, ``float``, ``Fraction``, ``Decimal``,
    numpy's numbers.  Bools (numpy's too) and non-numbers raise TypeError; an
    integer or fraction too large for a float raises ValueError (*endless*:
    is ``inf``, or ``-inf``), never OverflowError.
    """
    kind = value.__class__
    if kind is float:  # the common case, without an ABC check
        return value  # type: ignore[return-value]
    if kind is not int and not is_real(value):
        raise ArgumentTypeError(name, f"{name} must be a real number, got {shown(value)}")
    try:
        return float(value)  # type: ignore[arg-type]
    except OverflowError:  # (counted, not echoed: str() refuses an int beyond 4300 digits)
        if endless:  # an int or a fraction, beyond floats either way
            return math.inf if value > 0 else -math.inf  # type: ignore[operator]
        got = f"an integer of {digits(value)} digits" if isinstance(value, int) else short(value)
        raise ArgumentValueError(name, f"{name} is too large for a float, got {got}") from None
    except ValueError:  # Decimal('sNaN')
        raise ArgumentValueError(name, f"{name} must be a number, got {short(value)}") from None
    except Exception as error:  # a number of the caller's whose own __float__ broke
        raise unconvertible(name, value, error, "be a real number") from error


def is_boolean(value: object) -> bool:
    """A bool, Python's or numpy's (``numpy.bool_``: no subclass of ``bool``)."""
    return isinstance(value, bool) or value.__class__.__name__ in ("bool_", "bool")


def is_real(value: object) -> bool:
    if is_boolean(value):
        return False  # True is not 1 second; numpy.bool_ is no number either
    if isinstance(value, Real):
        return True
    from decimal import Decimal  # imported on first use: rarely needed

    return isinstance(value, Decimal)


def seconds(name: str, value: object, *, infinite: bool = False) -> float:
    """A duration: a number that is not negative, not NaN, finite unless
    *infinite* (then a number beyond floats, ``10**400``, is ``inf`` too)."""
    if type(value) is float and value >= 0.0 and (value < math.inf or infinite):
        return value + 0.0  # the common case, at once (-0.0 is 0.0)
    result = number(name, value, endless=infinite)
    if not result >= 0.0:  # also catches NaN
        raise ArgumentValueError(name, f"{name} must be a non-negative number, got {short(value)}")
    if not infinite and result == math.inf:
        raise ArgumentValueError(name, f"{name} must be finite, got {short(value)}")
    return result + 0.0  # -0.0 becomes 0.0


def wait(name: str, value: object) -> float:
    """A wait from outside - a delay of the user's iterable, a server's hint -
    as a float: ``inf`` when it is too long to sleep (beyond :data:`LONGEST`,
    an integer beyond floats included).  A non-number is an
    ``ArgumentTypeError``, a negative or NaN one an ``ArgumentValueError``,
    each naming *name*; never an ``OverflowError``."""
    if isinstance(value, float):
        if value.__class__ is not float:
            # A float subclass (numpy's float64) as the float it holds: numpy's + 0.0
            # is numpy's again, and a subclass's own comparisons may say anything.
            value = float.__float__(value)
        if 0.0 <= value <= LONGEST:
            return value + 0.0  # (-0.0 as 0.0)
    if (not isinstance(value, (int, float)) or isinstance(value, bool)) and not is_real(value):
        raise ArgumentTypeError(name, f"{name} must give numbers of seconds, got {shown(value)}")
    try:
        result = float(value)  # type: ignore[arg-type]
    except OverflowError:  # an int beyond floats: far too long to sleep, or negative
        result = math.inf if value > 0 else -math.inf  # type: ignore[operator]
    except ValueError:  # Decimal('sNaN')
        result = math.nan
    except Exception as error:  # a number of the user's whose own __float__ broke
        raise unconvertible(name, value, error, "give numbers of seconds") from error
    if not result >= 0.0:
        raise ArgumentValueError(
            name, f"{name} must give non-negative numbers of seconds, got {short(value)}"
        )
    return sleepable(result + 0.0)  # (-0.0 as 0.0)


def sleepable(seconds: float) -> float:
    """*seconds*, or ``inf`` when longer than any sleep (:data:`LONGEST`): no
    next attempt, as a loop reads such a wait."""
    return seconds if seconds <= LONGEST else math.inf


def unconvertible(name: str, value: object, error: Exception, wanted: str) -> ArgumentTypeError:
    """The error naming *name* for a *value* that says it is a real number but
    whose ``float()`` raised *error*: the caller's bad argument, not our crash.

    >>> class Broken(float):
    ...     def __float__(self):
    ...         raise LookupError("no value")
    >>> number("base", Broken(1.0))
    Traceback (most recent call last):
    ...
    backoff_iter.ArgumentTypeError: base must be a real number, got 1.0, whose float() raised LookupError: no value
    """
    return ArgumentTypeError(
        name,
        f"{name} must {wanted}, got {short(value)}, whose float() raised"
        f" {error.__class__.__name__}: {error}",
    )


def short(value: object, most: int = 60) -> str:
    """:func:`shown`, cut in the middle when longer than *most* characters
    (a 5,000-digit number is not echoed whole in an error)."""
    text = shown(value)
    if len(text) <= most:
        return text
    half = (most - 5) // 2
    return f"{text[:half]}...{text[-half:]} ({len(text)} characters)"


def shown(value: object) -> str:
    """``repr(value)``, or for an int of more digits than ``str()`` converts
    (3.11+: 4300 by default), which has none, a description of it."""
    try:
        return repr(value)
    except ValueError:
        if isinstance(value, int):
            return f"an integer of {digits(value)} digits"
        return f"a {type(value).__name__} too long to show"


def digits(value: int) -> int:
    """The decimal digits of the integer *value*, counted without ``str()``
    (which refuses an int of more than ``sys.get_int_max_str_digits()``)."""
    value = abs(value)
    count = max(1, int(value.bit_length() * 0.30102999566398120))  # log10(2): within one
    while value >= 10**count:
        count += 1
    while count > 1 and value < 10 ** (count - 1):
        count -= 1
    return count


def positive(name: str, value: object) -> float:
    """A finite number greater than 0 (a rate, a first sleep, a timeout)."""
    result = seconds(name, value)
    if result == 0.0:
        raise ArgumentValueError(name, f"{name} must be greater than 0, got {short(value)}")
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
        raise ArgumentValueError(name, f"{name} must be {wanted}, got {short(value)}")
    return result


def count(name: str, value: object, *, minimum: int = 0, most: int | None = None) -> int:
    """A whole number (not a bool) of at least *minimum* (and at most *most*):
    an ``int``, or what stands for one (``__index__``: a numpy integer).

    >>> class Whole:  # as a numpy integer is
    ...     def __index__(self):
    ...         return 4
    >>> count("sleeps", 3), count("sleeps", Whole())
    (3, 4)
    """
    if isinstance(value, bool) or not isinstance(value, int):
        whole = None if is_boolean(value) else _index(value)  # (numpy's: an index before 2.0)
        if whole is None:
            raise ArgumentTypeError(name, f"{name} must be a whole number, got {shown(value)}")
        value = whole
    if value < minimum:
        raise ArgumentValueError(name, f"{name} must be at least {minimum}, got {short(value)}")
    if most is not None and value > most:
        raise ArgumentValueError(name, f"{name} must be at most {most}, got {short(value)}")
    return value


def _index(value: object) -> int | None:
    """The int *value* stands for (``operator.index``), or None."""
    import operator

    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        return None


def seed(name: str, value: object) -> int | None:
    """A simulator's seed: None, or a whole number (not a bool), whose
    digits name the run's streams - so one of more digits than ``str()``
    converts (3.11+: 4300 by default) is an ``ArgumentValueError``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentTypeError(name, f"{name} must be a whole number or None, got {shown(value)}")
    try:
        str(value)
    except ValueError:  # the limit of str(): the interpreter's error names nothing
        raise ArgumentValueError(
            name,
            f"{name} must have no more digits than str() converts, got {shown(value)}",
        ) from None
    return value


#: The code flags of an ``async def`` (a coroutine function or an async generator one).
_ASYNC = 0x80 | 0x200  # inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR, without inspect


def delays_factory(name: str, delays: object) -> tuple[Callable[[], Iterable[float]], bool]:
    """What every driver and adapter takes as delays, as (factory, one_shot).

    A zero-argument function returning fresh delays, or a list or tuple (any
    sequence but a string), can serve any number of calls; any other iterable
    serves one (*one_shot*).  Anything else is a TypeError naming *name*.
    """
    if isinstance(delays, FunctionType):  # the common case (a lambda, a def), at once
        function = delays  # (no typing.cast: a call of its own, on every policy made)
        code = function.__code__
        if code.co_flags & _ASYNC:
            raise ArgumentTypeError(
                name,
                f"{name} must be a plain function returning delays, got the async"
                f" function {function.__qualname__}: delays are drawn, never awaited",
            )
        if (code.co_argcount or code.co_kwonlyargcount) and not takes(function, 0):
            raise ArgumentTypeError(
                name,
                f"{name} must be a function of no arguments returning fresh delays, got"
                f" {function.__qualname__}, which needs arguments (to retry a function,"
                " decorate it: @retry(on=...) above its def)",
            )
        return function, False
    kind = delays.__class__
    if kind is tuple and delays and isinstance(delays[0], type):  # type: ignore[index]
        exception_classes(name, delays)
    if isinstance(delays, (list, tuple)):  # given whole: checked now
        listed(name, delays)
        return delays.__iter__, False
    if isinstance(delays, (str, bytes)):  # iterable, but of characters: surely a mistake
        raise ArgumentTypeError(name, f"{name} must give numbers of seconds, got {shown(delays)}")
    if isinstance(delays, type):
        exception_classes(name, delays)
    if isinstance(delays, int) and not isinstance(delays, bool) and delays > 0:  # "5 times"
        raise ArgumentTypeError(
            name,
            f"{name} must be an iterable of seconds (or a function returning one), got"
            f" {shown(delays)}: n delays give n more attempts, so bound a schedule, as in"
            f" lambda: islice(full_jitter(0.1, cap=5), {shown(delays)})",
        )
    if isinstance(delays, Iterator):  # an iterator that happens to be callable is still one-shot
        return delays.__iter__, True
    if callable(delays):
        return cast("Callable[[], Iterable[float]]", delays), False
    if isinstance(delays, Sequence) and not isinstance(delays, (str, bytes)):
        return delays.__iter__, False
    return iterable(name, delays).__iter__, True  # type: ignore[arg-type]


def listed(name: str, delays: Iterable[Any]) -> None:
    """Check each delay of a list or tuple as a loop will take it (:func:`wait`),
    at once: what is given whole is refused when the policy is made, not at a
    later failure.

    >>> listed("delays", [0.5, 2, float("inf")])
    >>> listed("delays", [0.5, -1])
    Traceback (most recent call last):
    ...
    backoff_iter.ArgumentValueError: delays must give non-negative numbers of seconds, got -1
    """
    for value in delays:
        kind = value.__class__
        if (kind is float or kind is int) and value >= 0:  # a plain number at once
            continue
        if isinstance(value, type):  # an exception class: on= was meant
            exception_classes(name, value)
        wait(name, value)


def exception_classes(name: str, value: object) -> None:
    """Refuse an exception class, or a tuple of them, given as delays: ``on=`` was meant."""
    classes = value if isinstance(value, tuple) else (value,)
    if all(isinstance(c, type) and issubclass(c, BaseException) for c in classes):
        names = ", ".join(getattr(c, "__name__", "?") for c in classes)
        meant = names if len(classes) == 1 else f"({names})"
        raise ArgumentTypeError(
            name,
            f"{name} must be delays (a list of seconds, or a function returning"
            f" them), got the exception {'class' if len(classes) == 1 else 'classes'}"
            f" {meant}: on={meant} was probably meant, as in @retry(on={meant})",
        )


def reusable_delays(name: str, delays: object) -> Callable[[], Iterable[float]]:
    """:func:`delays_factory` for what serves many calls (a decorator, an
    adapter): a one-shot iterator is a TypeError naming *name*."""
    factory, one_shot = delays_factory(name, delays)
    if one_shot:
        raise ArgumentTypeError(
            name,
            f"{name} must be a zero-argument function returning fresh delays"
            " (e.g. lambda: islice(exponential(0.1), 5)) or a list/tuple;"
            f" an iterator is used up after one call, got {shown(delays)}",
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
        f" of delays, but {factory!r} returned {shown(made)}",
    )


def iterable(name: str, value: Iterable[T]) -> Iterator[T]:
    """``iter(value)``, with a TypeError that names the parameter; a string is
    refused (its characters are no numbers)."""
    if isinstance(value, (str, bytes)):
        raise ArgumentTypeError(name, f"{name} must give numbers of seconds, got {shown(value)}")
    try:
        return iter(value)
    except TypeError:
        raise ArgumentTypeError(name, f"{name} must be an iterable, got {shown(value)}") from None


def several(name: str, value: Any, one: Callable[[Any], bool], what: str) -> tuple[Any, ...]:
    """*value* as a tuple: one item (it passes *one*), or an iterable of items
    (not a string), each passing *one*; an ``ArgumentTypeError`` naming *name*
    and saying it wants *what* otherwise.  None is no item at all."""
    if value is None:
        return ()
    if one(value):
        return (value,)
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise ArgumentTypeError(name, f"{name} must be {what}, got {shown(value)}")
    items = tuple(value)
    for item in items:
        if not one(item):
            raise ArgumentTypeError(name, f"{name} must be {what}, got {shown(item)} among them")
    return items


def is_async(func: object) -> bool:
    """An async function, a partial of one, or an object whose __call__ is one."""
    import inspect  # on first use: it is slow to import

    method = getattr(type(func), "__call__", None)  # noqa: B004 - the method itself is asked
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(method)


def unawaited(value: object) -> bool:
    """Whether *value* is awaitable, which a sync caller cannot wait for: a
    coroutine is closed first (never awaited, it would warn as it goes); a
    Future or any other awaitable is left alone.

    >>> async def fetch():
    ...     return 1
    >>> coroutine = fetch()
    >>> unawaited(coroutine), coroutine.cr_frame is None, unawaited(1)
    (True, True, False)
    """
    if not hasattr(value, "__await__"):
        return False
    close = getattr(value, "close", None)
    if callable(close):
        close()
    return True


def function(name: str, value: object | None) -> None:
    """Reject a non-callable where a callable is expected."""
    if not callable(value):
        raise ArgumentTypeError(name, f"{name} must be callable, got {shown(value)}")


F = TypeVar("F")


def text(name: str, value: object) -> str:
    """*value* if it is a string; a TypeError naming *name* otherwise."""
    if not isinstance(value, str):
        raise ArgumentTypeError(name, f"{name} must be a string, got {shown(value)}")
    return value


def optional_function(name: str, value: F) -> F:
    """*value* if it is None or callable; a TypeError naming *name* otherwise."""
    if value is not None and not callable(value):
        raise ArgumentTypeError(name, f"{name} must be callable or None, got {shown(value)}")
    return value


def callback(name: str, value: F, arguments: tuple[str, ...], awaited: bool = False) -> F:
    """*value* if it is callable with the positional *arguments* (their names,
    for the error) as far as :func:`takes` can tell, and, unless what it
    returns is *awaited* (a sleep, ``before_sleep`` in the async drivers), no
    async function (its coroutine, never awaited, would be taken for its
    answer: a true one); a TypeError naming *name* otherwise - when the policy
    is made, not when the hook is first called (a give-up hook, in the middle
    of an outage).

    >>> callback("give_up", lambda attempt, outcome: None, ("attempt", "outcome")).__name__
    '<lambda>'
    >>> callback("give_up", lambda attempt: None, ("attempt", "outcome"))
    Traceback (most recent call last):
    ...
    backoff_iter.ArgumentTypeError: give_up must take 2 arguments (attempt, outcome), got <lambda>(attempt)
    >>> async def check(result):
    ...     return result == 503
    >>> callback("on_result", check, ("result",))
    Traceback (most recent call last):
    ...
    backoff_iter.ArgumentTypeError: on_result must be a plain function, got the async function check: it is called, never awaited
    """
    function(name, value)
    if not takes(value, len(arguments), awaited):
        named = getattr(value, "__qualname__", shown(value))
        if takes(value, len(arguments)):  # it takes them, but answers with a coroutine
            raise ArgumentTypeError(
                name,
                f"{name} must be a plain function, got the async function {named}:"
                " it is called, never awaited",
            )
        import inspect  # only for this error

        wanted = f"{len(arguments)} argument{'' if len(arguments) == 1 else 's'}"
        if arguments:
            wanted += f" ({', '.join(arguments)})"
        else:
            wanted = "no arguments"
        parameters = inspect.signature(cast("Callable[..., object]", value))
        raise ArgumentTypeError(name, f"{name} must take {wanted}, got {named}{parameters}")
    return value


def optional_callback(name: str, value: F, arguments: tuple[str, ...], awaited: bool = False) -> F:
    """:func:`callback`, or None (which a value neither callable nor None is
    told it may be).

    >>> optional_callback("on_result", 5, ("result",))
    Traceback (most recent call last):
    ...
    backoff_iter.ArgumentTypeError: on_result must be callable or None, got 5
    """
    if value is None:
        return value
    return callback(name, optional_function(name, value), arguments, awaited)


_VARARGS = 0x04  # inspect.CO_VARARGS, without importing inspect


def takes(function: object, count: int, awaited: bool = True) -> bool:
    """Whether *function* can be called with *count* positional arguments -
    and, unless what it returns is *awaited*, is no async function - as far
    as its code says: a plain Python function, or one bound to an object, is
    read (without inspect: a policy may be made per call); any other callable
    (a builtin, a class, a partial, an object with ``__call__``) is taken at
    its word.

    >>> takes(lambda attempt, outcome, delay=0.0: None, 2), takes(lambda: None, 1)
    (True, False)
    >>> takes(lambda *told: None, 3), takes(lambda *, key: None, 0), takes(print, 5)
    (True, False, True)
    >>> async def sleep(seconds):
    ...     pass
    >>> takes(sleep, 1), takes(sleep, 1, awaited=False)
    (True, False)
    """
    if type(function) is FunctionType:  # the common case at once: as many as given
        code = function.__code__
        if (
            code.co_argcount == count
            and not code.co_kwonlyargcount
            and (awaited or not code.co_flags & _ASYNC)
        ):
            return True
    bound = 0
    if isinstance(function, MethodType):
        function = function.__func__
        bound = 1  # (its self is given)
    if not isinstance(function, FunctionType):
        return True
    code = function.__code__
    if not awaited and code.co_flags & _ASYNC:
        return False
    most = code.co_argcount - bound
    if most < count and not code.co_flags & _VARARGS:
        return False
    if most - len(function.__defaults__ or ()) > count:
        return False
    return code.co_kwonlyargcount <= len(function.__kwdefaults__ or ())


def outside_the_library() -> int:
    """The *stacklevel* of a warning given by the caller of the caller: the
    first frame outside this package - the user's loop, the call or the await
    of a decorated function; the event loop's or the thread's own frame for a
    task or a thread started on one - so that the warning names the user's
    line; 2 if every frame is the library's."""
    frame: FrameType | None = sys._getframe(1)  # the frame that warns: level 1
    level = 1
    while frame is not None:
        module = frame.f_globals.get("__name__")
        if not isinstance(module, str) or (
            module != __package__ and not module.startswith(f"{__package__}.")
        ):
            return level
        frame, level = frame.f_back, level + 1
    return 2


def contexts(error: BaseException, most: int) -> Iterator[BaseException]:
    """The first *most* links of *error*'s context chain: the exception
    being handled when it was raised (``__context__``), then that one's...
    Bounded: a chain may go round (an exception raised again while handled).

    >>> try:
    ...     try:
    ...         raise KeyError("id")
    ...     except KeyError:
    ...         raise OSError("reset")
    ... except OSError as error:
    ...     [type(link).__name__ for link in contexts(error, 8)]
    ['KeyError']
    """
    link = error.__context__
    for _ in range(most):
        if link is None:
            return
        yield link
        link = link.__context__
