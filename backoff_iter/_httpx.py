"""``RetryTransport``: retries for httpx, sync and async, on this library's
driver core (imported from :mod:`backoff_iter.interop`)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Collection, Iterable
from typing import TYPE_CHECKING, Any

import httpx

from . import _checks, _timeouts
from ._core import begin
from ._filters import RETRYABLE_STATUSES
from ._options import Policy, reusable
from .hints import longest_retry_after

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ._options import RetryOptions

__all__ = ["IDEMPOTENT_METHODS", "RetryTransport"]

#: The methods retried by default: those RFC 9110 calls idempotent.
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"})


def _time_limit(request: httpx.Request, seconds: float | None) -> None:
    """Give the attempt's timeout to httpx: for connecting, writing, reading and
    the pool.  One longer than any wait (``inf``) is httpx's None, no limit: a
    socket's timeout cannot hold it."""
    if seconds is not None:
        limit = seconds if seconds <= _checks.LONGEST else None
        request.extensions["timeout"] = dict.fromkeys(("connect", "read", "write", "pool"), limit)


def _server_hint(outcome: Any) -> float | None:
    """The response's ``Retry-After``, in seconds; None for an exception."""
    if isinstance(outcome, httpx.Response):
        return longest_retry_after(outcome.headers.get_list("Retry-After"))
    return None


def _read_raw(response: httpx.Response, raw: bytes) -> tuple[httpx.Response, httpx.Response]:
    """A response retried for its status, its body *raw* read as it came (its
    connection let go), as two: the one the client gets should it be the
    last, unread (the client reads it as any other, decoding it then, and
    times it: ``elapsed``), and the one the hooks and callbacks are handed,
    read (``.text``, ``.json()``) - unless its body does not decode (gzip
    that is not), which is the reader's to find, never a reason to stop
    retrying."""

    def anew() -> httpx.Response:
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=httpx.ByteStream(raw),
            extensions=response.extensions,
        )

    kept, seen = anew(), anew()
    with contextlib.suppress(httpx.DecodingError):
        seen.read()
    return kept, seen


def _whole(given: Any) -> Any:
    """*given* iterated once into a tuple, if it is an iterable other than a
    string: a one-shot one (a generator) is kept, not used up by its check.

    >>> _whole(code for code in [503]), _whole("GET")
    ((503,), 'GET')
    """
    if isinstance(given, Iterable) and not isinstance(given, (str, bytes)):
        return tuple(given)
    return given


class _Cut:
    """An async attempt's timeout, kept by the transport: cut at it, the
    attempt fails with httpx's ``TimeoutException`` - what a sync client's
    attempt fails with, what ``on=``, the hooks and the caller see - not
    the builtin ``TimeoutError`` an attempt's own scope ends with."""

    def __init__(self, seconds: float | None, request: httpx.Request) -> None:
        self._request = request
        self._scope = None if seconds is None else _timeouts.scope(seconds)

    async def __aenter__(self) -> None:
        if self._scope is not None:
            await self._scope.__aenter__()

    async def __aexit__(self, exc_type: Any, exc: BaseException | None, traceback: Any) -> bool:
        if self._scope is None:  # no attempt_timeout
            return False
        expired = await self._scope.__aexit__(exc_type, exc, traceback)
        if expired is None:
            return False
        if isinstance(expired, TimeoutError):  # (its message says how long)
            raise httpx.TimeoutException(str(expired), request=self._request) from expired
        raise expired  # (under trio: the failures its scope left beside the cancellations)


class RetryTransport(httpx.BaseTransport, httpx.AsyncBaseTransport):
    """An httpx transport that retries, for ``Client`` and ``AsyncClient`` alike.

    ``httpx.Client(transport=RetryTransport(delays=lambda: full_jitter(0.1, 5)))``.
    A response whose status is in *statuses*, or an exception matching *on*,
    is retried after the next delay of a fresh schedule from *delays* (a
    zero-argument function returning fresh delays, or a list or tuple;
    omitted, the drivers' default schedule), raised to the server's
    ``Retry-After`` and clamped to *retry_after_max*.  Only *methods* are
    retried (the idempotent ones by default), and only a request whose body
    can be sent again (no body, or bytes: a generator's body is sent once);
    any other is one attempt all the same, of a call with no delays: the
    parts are asked and told, the hooks hear of it, *attempt_timeout*
    bounds it, and its response comes back unread.
    When nothing is left to try - the delays, *deadline* or *budget* say so
    - the last response is returned (it never raises for a status) or the
    last exception raised.  Every response it discards is closed, one
    retried for its status read first (its connection goes back to the pool):
    its bytes as they came, never decoded (the last comes back as the client
    gives any response, to be read and decoded by its reader).

    *options* are those of every driver
    (:class:`~backoff_iter.RetryOptions`): it runs on the same driver core.
    *on* defaults, as everywhere, to :func:`~backoff_iter.is_transient`,
    which holds httpx's ``TransportError`` and ``TimeoutError``; *on_result*
    retries a response beyond *statuses* (it is handed each response as the
    transport gets it, its body unread - a stream may be endless: it may
    look at the status and headers, or, with a sync ``Client``, call
    ``response.read()``); *retry_after* replaces the ``Retry-After`` header
    as the server's hint. *attempt_timeout* (seconds, or an iterable or
    factory of them) becomes httpx's timeout of each attempt - connecting,
    writing, reading and waiting for the pool - shortened to the deadline;
    with ``AsyncClient`` the attempt is also cancelled at it, and fails with
    httpx's ``TimeoutException``, as httpx's own timeouts do. Without
    *transport* it wraps ``httpx.HTTPTransport()`` for sync clients and
    ``httpx.AsyncHTTPTransport()`` for async ones: give ``verify=``,
    ``limits=``, ``proxy=`` and the like to the transport it wraps, not to
    the client (a client's ``proxy=`` mounts a transport past this one).
    """

    def __init__(
        self,
        transport: httpx.BaseTransport | httpx.AsyncBaseTransport | None = None,
        *,
        delays: Callable[[], Iterable[float]] | Iterable[float] | None = None,
        statuses: Collection[int] = RETRYABLE_STATUSES,
        methods: Collection[str] = IDEMPOTENT_METHODS,
        **options: Unpack[RetryOptions],
    ) -> None:
        if transport is not None and not isinstance(
            transport, (httpx.BaseTransport, httpx.AsyncBaseTransport)
        ):
            # (the drivers take their delays first: a newcomer gives them here)
            meant = (
                ": the delays go by name, as in RetryTransport(delays=[0.5, 1.0])"
                if callable(transport)
                or (isinstance(transport, Iterable) and not isinstance(transport, (str, bytes)))
                else ""
            )
            raise _checks.ArgumentTypeError(
                "transport",
                f"transport must be an httpx transport or None, got"
                f" {_checks.shown(transport)}{meant}",
            )
        if delays is not None:
            delays = _checks.reusable_delays("delays", delays)
        statuses, methods = _whole(statuses), _whole(methods)
        if (
            isinstance(statuses, (str, bytes))
            or not isinstance(statuses, Iterable)
            or not all(isinstance(code, int) and not isinstance(code, bool) for code in statuses)
        ):
            raise _checks.ArgumentTypeError(
                "statuses",
                f"statuses must be a collection of HTTP status codes, got {_checks.shown(statuses)}",
            )
        if (
            isinstance(methods, (str, bytes))
            or not isinstance(methods, Iterable)
            or not all(isinstance(m, str) for m in methods)
        ):
            raise _checks.ArgumentTypeError(
                "methods",
                f"methods must be a collection of HTTP method names, got {_checks.shown(methods)}",
            )
        self.statuses: frozenset[int] = frozenset(statuses)
        """The statuses retried."""
        self.methods: frozenset[str] = frozenset(method.upper() for method in methods)
        """The methods retried."""
        self._on_result = _checks.optional_callback(
            "on_result", options.pop("on_result", None), ("response",)
        )
        options.setdefault("retry_after", _server_hint)
        given: dict[str, Any] = reusable(options)  # two policies
        given["on_result"] = self._retried
        self._policy = Policy(delays, **given)  # checks every option
        # A request not retried is one attempt all the same: the parts are asked and
        # told, the hooks hear of it, attempt_timeout bounds it; no delay follows.
        self._once = Policy((), **given)
        self._transport = transport
        self._sync: httpx.BaseTransport | None = None
        self._async: httpx.AsyncBaseTransport | None = None
        self._making = threading.Lock()  # one sync transport, whatever threads ask at once

    def _retried(self, response: httpx.Response) -> bool:
        """A response to retry: its status, or the user's ``on_result``."""
        if response.status_code in self.statuses:
            return True
        return self._on_result is not None and bool(self._on_result(response))

    def _policy_for(self, request: httpx.Request) -> tuple[Policy, Collection[int]]:
        """The policy of *request*'s call, and the statuses whose response is read
        before the next attempt: none for a request not retried (a method not in
        *methods*, or a body that cannot be sent again), whose response comes back
        unread."""
        if request.method in self.methods and isinstance(request.stream, httpx.ByteStream):
            return self._policy, self.statuses
        return self._once, ()

    def _sync_transport(self) -> httpx.BaseTransport:
        if self._sync is None:
            with self._making:  # threads sending a new client's first requests make one
                if self._sync is None:
                    transport = self._transport or httpx.HTTPTransport()
                    if not isinstance(transport, httpx.BaseTransport):
                        raise TypeError(f"{transport!r} serves only async clients")
                    self._sync = transport
        return self._sync

    def _async_transport(self) -> httpx.AsyncBaseTransport:
        if self._async is None:  # (an event loop's tasks: none comes in while it is made)
            transport = self._transport or httpx.AsyncHTTPTransport()
            if not isinstance(transport, httpx.AsyncBaseTransport):
                raise TypeError(f"{transport!r} serves only sync clients")
            self._async = transport
        return self._async

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Send *request*, retrying as configured; the last response comes back."""
        transport = self._sync_transport()
        policy, statuses = self._policy_for(request)
        response: httpx.Response | None = None
        try:
            for attempt in begin(policy, shown=False):
                if response is not None:
                    response.close()  # read already: it goes back to the pool
                with attempt:
                    _time_limit(request, attempt.timeout)
                    response = seen = transport.handle_request(request)
                    # (read whole, but for one read as it was made: a MockTransport's)
                    if response.status_code in statuses and not response.is_stream_consumed:
                        response, seen = _read_raw(response, b"".join(response.iter_raw()))
                    attempt.set_result(seen)
        except BaseException:
            # Ended between attempts (the sleep interrupted, a part refusing the
            # next): the response retried is let go, or its connection stays taken.
            if response is not None:
                response.close()
            raise
        assert response is not None  # the loop ends with a response, or raises
        return response

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """:meth:`handle_request` for ``httpx.AsyncClient``."""
        transport = self._async_transport()
        policy, statuses = self._policy_for(request)
        response: httpx.Response | None = None
        try:
            async for attempt in begin(policy, in_async=True, shown=False):
                if response is not None:
                    await response.aclose()
                # The transport keeps the attempt's timeout itself (_Cut), not the attempt.
                seconds, attempt.timeout = attempt.timeout, None
                async with attempt, _Cut(seconds, request):
                    _time_limit(request, seconds)
                    response = seen = await transport.handle_async_request(request)
                    if response.status_code in statuses and not response.is_stream_consumed:
                        raw = b"".join([part async for part in response.aiter_raw()])
                        response, seen = _read_raw(response, raw)
                    attempt.set_result(seen)
        except BaseException:  # the task cancelled while it waited, say
            if response is not None:
                await response.aclose()
            raise
        assert response is not None
        return response

    def close(self) -> None:
        """Close the wrapped sync transport."""
        if self._sync is not None:
            self._sync.close()

    async def aclose(self) -> None:
        """Close the wrapped async transport."""
        if self._async is not None:
            await self._async.aclose()
