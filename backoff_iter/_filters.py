"""What a driver retries: the ``on=`` filter, and the default, :func:`is_transient`.

A filter is an exception class, a tuple of them, or a predicate.  Whatever
it says, a ``BaseException`` that is no ``Exception`` (``KeyboardInterrupt``,
``SystemExit``, cancellation) is never retried.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Union, cast

from . import _checks

__all__ = ["ExceptionFilter", "is_transient"]

#: What ``on=`` takes: an exception class, a tuple of them, or a predicate
#: ``callable(exc) -> bool``.
ExceptionFilter = Union[
    type[BaseException],
    tuple[type[BaseException], ...],
    Callable[[BaseException], object],
]
#: What a policy keeps of ``on``: the exception classes to match, or the predicate.
Filter = Union[tuple[type[BaseException], ...], Callable[[BaseException], object]]

# The transient failures of the libraries a service may have loaded: each
# module's classes, looked up only once that module is imported (an
# exception of it cannot exist before), so `import backoff_iter` imports none.
_FOREIGN = {
    "asyncio": ("TimeoutError",),  # a class of its own before Python 3.11
    "concurrent.futures": ("TimeoutError",),  # likewise
    "httpx": ("TransportError",),
    "requests": ("ConnectionError", "Timeout"),  # OSErrors already; named for clarity
    "urllib3.exceptions": ("ProtocolError", "NewConnectionError", "TimeoutError"),
}
_TRANSIENT: tuple[type[BaseException], ...] = (OSError, TimeoutError)
_seen: frozenset[str] = frozenset()  # the modules of _FOREIGN whose classes are in _TRANSIENT
_modules = -1  # how many modules were loaded when _TRANSIENT was made


def _transient_classes() -> tuple[type[BaseException], ...]:
    """The transient classes: the builtin ones, and those of the libraries loaded now."""
    global _TRANSIENT, _seen, _modules
    if len(sys.modules) == _modules:  # nothing imported since: the same classes
        return _TRANSIENT
    _modules = len(sys.modules)
    loaded = frozenset(name for name in _FOREIGN if name in sys.modules)
    if loaded != _seen:
        classes: list[type[BaseException]] = [OSError, TimeoutError]
        for name in sorted(loaded):
            module = sys.modules[name]
            for attribute in _FOREIGN[name]:
                value = getattr(module, attribute, None)
                if isinstance(value, type) and issubclass(value, BaseException):
                    classes.append(value)
        _TRANSIENT, _seen = tuple(dict.fromkeys(classes)), loaded
    return _TRANSIENT


def is_transient(exc: BaseException) -> bool:
    """Is *exc* a failure that another attempt may well not meet: the default ``on=``.

    Transient: ``OSError`` (connection refused or reset, a socket timeout,
    an unreachable host...), ``TimeoutError`` and ``asyncio.TimeoutError``,
    and the transport errors of the HTTP clients, when they are installed:
    ``httpx.TransportError``; requests' ``ConnectionError`` and ``Timeout``;
    urllib3's ``ProtocolError``, ``NewConnectionError`` and its timeouts
    (``ReadTimeoutError``, ``ConnectTimeoutError``).  An exception group
    (from a ``TaskGroup``) is transient when every exception in it is.

    Not transient: a programming error (``KeyError``, ``TypeError``,
    ``AttributeError``, ``AssertionError``, ``ValueError``...) fails at once,
    as retrying it would only fail again, slower.  Pass ``on=Exception`` to
    retry everything, or ``on=(OSError, MyError)`` to name your own.

    >>> is_transient(ConnectionResetError()), is_transient(TimeoutError())
    (True, True)
    >>> is_transient(KeyError("id")), is_transient(ValueError())
    (False, False)
    """
    if isinstance(exc, _transient_classes()):
        return True
    group = getattr(exc, "exceptions", None)
    if (
        isinstance(group, tuple)
        and group
        and sys.version_info >= (3, 11)
        and isinstance(exc, BaseExceptionGroup)  # noqa: F821 - 3.11+, checked above
    ):
        return all(is_transient(member) for member in group)
    return False


# Filters already checked, by the `on` they came from, with whether every class
# is an Exception.  Bounded: a program that makes exception classes on the fly
# must not grow it forever.
_FILTERS: dict[object, tuple[Filter, bool]] = {}
_FILTERS_MAX = 256


def exception_filter(name: str, on: object) -> tuple[Filter, bool]:
    """*on* as classes (matched with one isinstance) or a predicate, and whether
    it is classes that are all Exceptions; an argument error naming *name* for
    anything else."""
    try:
        return _FILTERS[on]
    except (KeyError, TypeError):  # new, or unhashable
        pass
    if isinstance(on, type) and issubclass(on, BaseException):
        classes: tuple[type[BaseException], ...] = (on,)
    elif isinstance(on, tuple) and all(
        isinstance(c, type) and issubclass(c, BaseException) for c in on
    ):
        classes = on
    elif callable(on) and not isinstance(on, (type, tuple)):
        return cast(Callable[[BaseException], object], on), False
    else:
        raise _checks.ArgumentTypeError(
            name,
            f"{name} must be an exception class, a tuple of them, or a predicate"
            f" callable(exc) -> bool, got {on!r}",
        )
    if len(_FILTERS) >= _FILTERS_MAX:
        del _FILTERS[next(iter(_FILTERS))]  # the oldest
    checked = _FILTERS[on] = classes, all(issubclass(c, Exception) for c in classes)
    return checked


def matches(on: Filter, only_exceptions: bool, exc: BaseException) -> bool:
    """Is *exc* a failure that ``on`` retries?  Never a BaseException that is
    no Exception (KeyboardInterrupt, cancellation), whatever a predicate says."""
    if only_exceptions:  # classes that are all Exceptions: one isinstance
        return isinstance(exc, on)  # type: ignore[arg-type]
    return isinstance(exc, Exception) and bool(
        isinstance(exc, on) if on.__class__ is tuple else on(exc)  # type: ignore[operator]
    )


def is_exception_class(value: object) -> bool:
    """An exception class, or a non-empty tuple of them: what ``on=`` takes."""
    if isinstance(value, type):
        return issubclass(value, BaseException)
    return (
        isinstance(value, tuple)
        and bool(value)
        and all(isinstance(c, type) and issubclass(c, BaseException) for c in value)
    )
