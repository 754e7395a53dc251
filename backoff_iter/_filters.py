"""What a driver retries: the ``on=`` filter, and the default, :func:`is_transient`.

A filter is an exception class, a tuple of them, or a predicate.  Whatever
it says, a ``BaseException`` that is no ``Exception`` (``KeyboardInterrupt``,
``SystemExit``, cancellation) is never retried.
"""

from __future__ import annotations

import _thread
import sys
from collections.abc import Callable
from typing import Any, Union, cast

from . import _checks

__all__ = ["ExceptionFilter", "is_timeout", "is_transient"]

#: What ``on=`` takes: an exception class, a tuple of them, or a predicate
#: ``callable(exc) -> bool``, which is asked of an ``Exception`` only
#: (:func:`matches`): a predicate typed for ``Exception`` is one.
ExceptionFilter = Union[
    type[BaseException],
    tuple[type[BaseException], ...],
    Callable[[Exception], object],
]
#: What a policy keeps of ``on``: the exception classes to match, or the predicate.
Filter = Union[tuple[type[BaseException], ...], Callable[[BaseException], object]]


class _Classes:
    """Exception classes: builtin ones, and those of libraries named by module,
    looked up only once that module is imported (an exception of it cannot
    exist before) - so asking imports nothing, and costs one length check of
    ``sys.modules`` while nothing new was imported."""

    __slots__ = ("_builtin", "_foreign", "_classes", "_modules")

    def __init__(
        self, builtin: tuple[type[BaseException], ...], foreign: dict[str, tuple[str, ...]]
    ) -> None:
        self._builtin = builtin
        self._foreign = foreign
        self._classes = builtin
        self._modules = -1  # how many modules were loaded when _classes was made

    def __call__(self) -> tuple[type[BaseException], ...]:
        if len(sys.modules) == self._modules:  # nothing imported since: the same classes
            return self._classes
        self._modules = len(sys.modules)
        classes = list(self._builtin)
        for name, attributes in self._foreign.items():
            module = sys.modules.get(name)
            for attribute in attributes if module is not None else ():
                value = getattr(module, attribute, None)
                if isinstance(value, type) and issubclass(value, BaseException):
                    classes.append(value)
        self._classes = tuple(dict.fromkeys(classes))
        return self._classes


# The transient failures of the libraries a service may have loaded.
_transient_classes = _Classes(
    (OSError, TimeoutError),
    {
        "asyncio": ("TimeoutError",),  # a class of its own before Python 3.11
        "concurrent.futures": ("TimeoutError",),  # likewise
        "httpx": ("TransportError", "HTTPStatusError"),  # the latter: some statuses
        "requests": ("ConnectionError", "Timeout"),  # OSErrors already; named for clarity
        "urllib3.exceptions": ("ProtocolError", "NewConnectionError", "TimeoutError"),
        "botocore.exceptions": ("ConnectionError", "HTTPClientError"),
    },
)

# The OSErrors (and transport errors) among those that fail the same way
# again: a file missing or refused, a certificate that does not verify, and
# requests' errors of the request itself - every requests error is an OSError,
# a 404's raise_for_status() included (see _retryable_status).
_permanent_classes = _Classes(
    (FileNotFoundError, FileExistsError, PermissionError, IsADirectoryError, NotADirectoryError),
    {
        "io": ("UnsupportedOperation",),  # an OSError and a ValueError: the caller's
        "ssl": ("SSLCertVerificationError",),
        "httpx": ("UnsupportedProtocol", "LocalProtocolError", "HTTPStatusError"),
        "urllib.error": ("HTTPError",),  # urlopen's answer of a 4xx or 5xx: by its status
        "requests.exceptions": (
            "HTTPError",
            "InvalidURL",
            "MissingSchema",
            "InvalidSchema",
            "InvalidHeader",
            "InvalidJSONError",
            "TooManyRedirects",
            "URLRequired",
            "StreamConsumedError",
            "UnrewindableBodyError",
            "RetryError",
        ),
    },
)

#: The statuses of an answer that another attempt may well not get (the HTTP
#: integrations' default): a requests ``HTTPError``, an httpx
#: ``HTTPStatusError`` or a urllib ``HTTPError`` of one is transient.
RETRYABLE_STATUSES = frozenset({429, 502, 503, 504})


def _retryable_status(exc: BaseException) -> bool:
    """Whether *exc* is an HTTP status error - of requests or httpx
    (``raise_for_status()``, the answer's ``status_code``), or urllib's
    ``HTTPError`` (its ``code``) - whose answer was one of
    :data:`RETRYABLE_STATUSES`.  A status that is no int, or that raises
    when read, compared or hashed, is none of them."""
    try:
        if isinstance(exc, _urllib_status_errors()):
            # (its own code: on 3.9 an HTTPError made with no body raises
            # KeyError for any attribute it lacks, "response" among them)
            status = exc.code  # type: ignore[attr-defined]
        else:
            status = getattr(getattr(exc, "response", None), "status_code", None)
        return issubclass(type(status), int) and status in RETRYABLE_STATUSES
    except Exception:  # a property, or an int subclass, of the user's that raises
        return False


_urllib_status_errors = _Classes((), {"urllib.error": ("HTTPError",)})

# How far is_transient looks down an exception's causes for a certificate that
# does not verify: requests' SSLError holds it four links down (its first
# argument, urllib3's MaxRetryError, whose reason is urllib3's SSLError, whose
# first argument is the ssl module's error); a longer chain is cut, and an
# exception met twice (a cycle) is looked at once.
_CAUSES_LOOKED_AT = 12


def _certificate_refused(exc: BaseException) -> bool:
    """Whether a certificate that does not verify is what *exc* wraps: in its
    ``__cause__`` (httpx's ``ConnectError``), its ``__context__`` unless it
    was raised ``from`` something (or ``from None``), its ``reason``
    (urllib's ``URLError``, urllib3's ``MaxRetryError``) or its first
    arguments (requests' and urllib3's ``SSLError``); looked at breadth
    first, no more than :data:`_CAUSES_LOOKED_AT` exceptions in all, each of
    these asked on its own: one that raises when asked is passed over.

    An error raised while one was handled - a certificate refused, then a
    mirror tried that reset the connection - holds it as its context all the
    same, and is taken as refused: raise it ``from`` its own cause, or
    ``from None``, to say otherwise."""
    refused = _certificate_classes()
    if not refused:  # the ssl module was never loaded: no TLS, no certificate
        return False
    queue, seen = [exc], {id(exc)}
    for current in queue:  # grows as it is read, to the bound below
        if issubclass(type(current), refused):
            return True
        for read in _LINKS:
            try:
                links = read(current)
            except Exception:  # an exception of the user's that raises when asked
                continue
            for link in links:
                # (issubclass of its type: isinstance would ask the object its
                # __class__, which a proxy may answer by raising)
                if (
                    len(seen) < _CAUSES_LOOKED_AT
                    and issubclass(type(link), BaseException)
                    and id(link) not in seen
                ):
                    seen.add(id(link))
                    queue.append(link)
    return False


# What an exception may wrap, each read on its own (see _certificate_refused).
_LINKS: tuple[Callable[[BaseException], tuple[Any, ...]], ...] = (
    lambda exc: (exc.__cause__, None if exc.__suppress_context__ else exc.__context__),
    lambda exc: (getattr(exc, "reason", None),),
    lambda exc: exc.args[:4],
)


_certificate_classes = _Classes((), {"ssl": ("SSLCertVerificationError",)})


# The timeouts: every library's read and connect timeouts.
_timeout_classes = _Classes(
    (TimeoutError,),  # socket.timeout and asyncio.TimeoutError are this on 3.11+
    {
        "socket": ("timeout",),  # an OSError of its own on 3.9
        "asyncio": ("TimeoutError",),
        "concurrent.futures": ("TimeoutError",),
        "httpx": ("TimeoutException",),
        "requests": ("Timeout",),  # ReadTimeout and ConnectTimeout
        "urllib3.exceptions": ("TimeoutError",),  # ReadTimeoutError, ConnectTimeoutError
        "botocore.exceptions": ("ReadTimeoutError", "ConnectTimeoutError"),
    },
)


def is_timeout(exc: object) -> bool:
    """Is *exc* a timeout: the builtin ``TimeoutError`` (``socket.timeout``,
    ``asyncio.TimeoutError``), or the read and connect timeouts of httpx,
    requests, urllib3 and botocore - asked without importing any of them.

    >>> is_timeout(TimeoutError()), is_timeout(ConnectionResetError()), is_timeout("a result")
    (True, False, False)
    """
    return isinstance(exc, _timeout_classes())


def is_transient(exc: BaseException) -> bool:
    """Is *exc* a failure that another attempt may well not meet: the default ``on=``.

    Transient: ``OSError`` (connection refused or reset, a socket timeout,
    an unreachable host...), ``TimeoutError`` and ``asyncio.TimeoutError``,
    and the transport errors of the HTTP clients, when they are installed:
    ``httpx.TransportError``; requests' ``ConnectionError`` and ``Timeout``;
    urllib3's ``ProtocolError``, ``NewConnectionError`` and its timeouts
    (``ReadTimeoutError``, ``ConnectTimeoutError``); botocore's
    ``ConnectionError`` and ``HTTPClientError``.  An exception group
    (from a ``TaskGroup``) is transient when every exception in it is.

    Not transient: a programming error (``KeyError``, ``TypeError``,
    ``AttributeError``, ``AssertionError``, ``ValueError``...) fails at once,
    as retrying it would only fail again, slower; so do the ``OSError`` errors
    that are no failure of a connection - a file missing, existing or
    refused (``FileNotFoundError``, ``PermissionError``...), a certificate
    that does not verify (``ssl.SSLCertVerificationError``, and the
    errors that wrap one: urllib's ``URLError``, requests' ``SSLError``,
    httpx's ``ConnectError``, and any error raised while one was handled,
    unless raised ``from`` another cause or ``from None``) - httpx's
    ``UnsupportedProtocol`` and ``LocalProtocolError``, and requests' errors
    of the request itself
    (``InvalidURL``, ``MissingSchema``, ``TooManyRedirects``,
    ``JSONDecodeError``...), every one an ``OSError``.  The status errors -
    of ``raise_for_status()``, requests' ``HTTPError`` and httpx's
    ``HTTPStatusError``, and urllib's ``HTTPError`` - are transient only for
    an answer of 429, 502, 503 or 504, never for a 404.  Pass
    ``on=Exception`` to retry everything, or ``on=(OSError, MyError)`` to
    name your own.

    >>> is_transient(ConnectionResetError()), is_transient(TimeoutError())
    (True, True)
    >>> is_transient(KeyError("id")), is_transient(FileNotFoundError("app.toml"))
    (False, False)
    """
    if isinstance(exc, _transient_classes()):
        if isinstance(exc, _permanent_classes()):
            return _retryable_status(exc)
        return not _certificate_refused(exc)
    group = getattr(exc, "exceptions", None)
    if isinstance(group, tuple) and group and _is_group(exc):
        return all(is_transient(member) for member in group)
    return False


def _is_group(exc: BaseException) -> bool:
    """Is *exc* an exception group: the builtin's (3.11+), or before 3.11 the
    ``exceptiongroup`` backport's, which trio's nurseries raise (asked
    without importing it: loaded, it is the one in use)."""
    if sys.version_info >= (3, 11):
        return isinstance(exc, BaseExceptionGroup)  # noqa: F821 - 3.11+, checked above
    backport = sys.modules.get("exceptiongroup")
    return backport is not None and isinstance(exc, backport.BaseExceptionGroup)


# Filters already checked, by the `on` they came from, with whether every class
# is an Exception.  Bounded: a program that makes exception classes on the fly
# must not grow it forever.
_FILTERS: dict[object, tuple[Filter, bool]] = {}
_FILTERS_MAX = 256
# Held to make room and add: two threads evicting at once picked the same oldest
# (a KeyError), or one iterated as the other changed it (a RuntimeError).
_FILTERS_LOCK = _thread.allocate_lock()


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
    elif isinstance(on, tuple) and not on and name != "on":  # (on=(): see nothing_retried)
        raise _checks.ArgumentValueError(
            name, f"{name} got (), which matches no failure: give the exception classes"
        )
    elif isinstance(on, tuple) and all(
        isinstance(c, type) and issubclass(c, BaseException) for c in on
    ):
        classes = on
    elif callable(on) and not isinstance(on, (type, tuple)):
        predicate = cast("Callable[[BaseException], object]", on)
        return _checks.callback(name, predicate, ("exception",)), False
    else:
        raise _checks.ArgumentTypeError(
            name,
            f"{name} must be an exception class, a tuple of them, or a predicate"
            f" callable(exc) -> bool, got {_checks.shown(on)}",
        )
    checked = classes, all(issubclass(c, Exception) for c in classes)
    if not classes:  # (), not kept: refused as a kind of per_failure, on= checks it itself
        return checked
    with _FILTERS_LOCK:
        if len(_FILTERS) >= _FILTERS_MAX:
            del _FILTERS[next(iter(_FILTERS))]  # the oldest
        _FILTERS[on] = checked
    return checked


def nothing_retried() -> _checks.ArgumentValueError:
    """The error for ``on=()`` with no ``on_result``: a call that retries
    nothing (classes from a configuration, found empty), taken silently."""
    return _checks.ArgumentValueError(
        "on",
        "on got (), which matches no failure, and no on_result is given: the call would"
        " retry nothing. Give the exception classes to retry, or leave on out for the"
        " transient failures (is_transient)",
    )


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
