"""``Urllib3Retry``: urllib3's ``Retry`` with its backoff drawn from a schedule
of this library (imported from :mod:`backoff_iter.interop`)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, cast

from urllib3.exceptions import MaxRetryError, ResponseError
from urllib3.util.retry import Retry

from . import _checks, _sleeping, instrument
from ._options import SETTERS, SyncPolicy
from ._schedule import Schedule
from .hints import RETRY_AFTER_MAX, clamped, longest_retry_after, raised

if TYPE_CHECKING:  # urllib3 2's name; 1.26 (which botocore keeps on Python 3.9) lacks it
    from urllib3.response import BaseHTTPResponse

__all__ = ["Urllib3Retry"]

#: urllib3's own backoff, at its defaults: the delays replace it.
_URLLIB3_BACKOFF = {
    "backoff_factor": 0,
    "backoff_max": getattr(Retry, "DEFAULT_BACKOFF_MAX", 120),
    "backoff_jitter": 0.0,
}


class Urllib3Retry(Retry):
    """A ``urllib3.util.Retry`` whose sleeps come from *delays*.

    ``Urllib3Retry(delays=lambda: full_jitter(0.1, 10), total=5,
    status_forcelist=[429, 503])``; *delays* is a zero-argument function
    returning fresh delays, or a list or tuple (omitted: the drivers'
    default schedule), given by name; every other argument is urllib3's
    (the first, *total*, too: a schedule there is refused), but its own
    backoff (``backoff_factor``, ``backoff_max``, ``backoff_jitter``), which
    the delays replace: given, it is an error naming it, as is a retry
    driver's option it does not take (``on=``: urllib3 decides what is retried).  Use it as
    ``requests.adapters.HTTPAdapter(max_retries=...)`` or as urllib3's
    ``retries=``.  Each request draws from its own schedule (it survives
    the copy urllib3 makes with ``.new()`` at every retry): the n-th retry
    sleeps the n-th delay, raised to the server's ``Retry-After`` (read by
    :func:`~backoff_iter.hints.longest_retry_after`, clamped to *retry_after_max*).
    Redirects are not retries: they take no delay.  When the schedule runs
    out, or yields ``inf``, the retries are exhausted, as when ``total`` is.
    *sleep* defaults to ``time.sleep``, and
    :func:`backoff_iter.testing.no_sleep` switches it off.  urllib3 sends
    the body again at each retry: a file rewound, but a generator's body is
    used up and the retry goes out empty - give such a request bytes, or
    leave its method out of *allowed_methods*.

    *name* and *observe* are the drivers': the hooks (and those of
    :func:`backoff_iter.instrument.enable`) hear a ``"retry"`` event before
    each sleep and a ``"give_up"`` (reason ``"exhausted"``) when urllib3
    runs out of retries.  urllib3 tells a ``Retry`` nothing of a request's
    success, nor when it began: there is no ``"success"`` event, and an
    event's ``elapsed`` counts from the request's first failure.
    """

    def __init__(
        self,
        total: bool | int | None = 10,
        *,
        delays: Callable[[], Iterable[float]] | Iterable[float] | None = None,
        sleep: Callable[[float], Any] | None = None,
        retry_after_max: float = RETRY_AFTER_MAX,
        name: str = "call",
        observe: instrument.Observe = None,
        **kwargs: Any,
    ) -> None:
        if callable(total) or isinstance(total, Iterable):  # the drivers take delays first
            raise _checks.ArgumentTypeError(
                "total",
                f"total is urllib3's count of retries (an int, False or None), got"
                f" {_checks.shown(total)}: the delays go by name, as in"
                " Urllib3Retry(delays=[0.5, 1.0], total=5)",
            )
        if delays is not None:
            delays = _checks.reusable_delays("delays", delays)
        for parameter, default in _URLLIB3_BACKOFF.items():
            if parameter in kwargs and kwargs[parameter] != default:  # (.new() passes defaults)
                raise _checks.ArgumentValueError(
                    parameter,
                    f"{parameter}={kwargs[parameter]!r} is urllib3's own backoff, which"
                    " Urllib3Retry does not use: give its sleeps as delays=",
                )
        for option in kwargs:
            if option in SETTERS:  # the drivers' (none is urllib3's), not taken here
                raise _checks.ArgumentTypeError(
                    option,
                    f"Urllib3Retry() got the retry drivers' option {option}=, which it"
                    " does not take: urllib3 decides what is retried (its total,"
                    " connect, read, status, status_forcelist, allowed_methods), and of"
                    " the drivers' options Urllib3Retry takes delays=, sleep=,"
                    " retry_after_max=, name= and observe=",
                )
        # The drivers' options, checked and defaulted where the drivers' are.
        policy = SyncPolicy(
            delays, sleep=sleep, retry_after_max=retry_after_max, name=name, observe=observe
        )
        self.delays: Callable[[], Iterable[float]] = policy.factory
        """The factory of each request's delays."""
        self.sleep_function: Callable[[float], Any] | None = policy.sleep
        """What sleeps between attempts (None: ``time.sleep``)."""
        self.name: str = policy.name
        """What the events call the request's retries."""
        self.observe: tuple[instrument.Hook, ...] = policy.observe
        """This policy's own hooks."""
        super().__init__(total, **kwargs)
        # Applied here (get_retry_after), not by urllib3: 1.26 has no such option, and
        # 2 annotates it as int, where any number of seconds works.
        self.retry_after_max: int = cast(int, policy.retry_after_max)
        self._schedule: Schedule | None = None  # a request's, once it retried
        self._request: _Request | None = None  # ... and what its events tell
        self._outcome: Any = None  # the failure this link retries

    def new(self, **kw: Any) -> Urllib3Retry:
        """The next link of a request's chain; the first retry starts a fresh schedule."""
        kw.setdefault("delays", self.delays)
        kw.setdefault("sleep", self.sleep_function)
        kw.setdefault("retry_after_max", self.retry_after_max)
        kw.setdefault("name", self.name)
        kw.setdefault("observe", self.observe)
        retry = super().new(**kw)
        if retry.history:  # a request under way: one schedule for all its retries
            retry._schedule = self._schedule or Schedule("delays", self.delays)
            retry._request = self._request or _Request()
        return retry

    def increment(
        self,
        method: str | None = None,
        url: str | None = None,
        response: BaseHTTPResponse | None = None,
        error: Exception | None = None,
        _pool: Any = None,
        _stacktrace: Any = None,
    ) -> Urllib3Retry:
        """urllib3's increment; a give-up (``MaxRetryError``) is told to the hooks."""
        outcome = error if error is not None else response
        try:
            retry = super().increment(method, url, response, error, _pool, _stacktrace)
        except MaxRetryError:
            request = self._request or _Request()
            self._tell(request, "give_up", outcome, self._retries() + 1, None, "exhausted")
            raise
        # A redirect is followed at once: its hint asks for no sleep.
        redirect = any(step.redirect_location is not None for step in retry.history[-1:])
        if not redirect and retry._hint(response) == math.inf:  # too long to sleep: no retry
            request = retry._request or _Request()
            self._tell(request, "give_up", outcome, self._retries() + 1, None, "retry_after")
            reason = error or ResponseError("the server's Retry-After is too long to wait")
            raise MaxRetryError(_pool, url, reason) from reason
        retry._outcome = outcome
        return retry

    def _tell(
        self,
        request: _Request,
        kind: str,
        outcome: Any,
        number: int,
        delay: float | None,
        reason: str | None,
    ) -> None:
        """Give every hook the event of one retry or give-up of this request,
        unless none of them wants it (as the drivers ask: the default log
        while its logger drops the level makes no event)."""
        every, failures = instrument.every, instrument.failures
        if self.observe and (every or failures):  # a hook of its own heard once
            every, failures = instrument.beside(self.observe, every, failures)
        hooks = instrument.hearing(self.observe + every + failures, kind)
        if hooks:
            event = instrument.event(
                kind,
                self.name,
                number,
                outcome,
                delay,
                request.slept,
                time.monotonic() - request.since,
                reason,
                request.call_id,
            )
            for hook in hooks:
                hook(event)

    def _retries(self) -> int:
        """Retries so far in this request (redirects are not retries)."""
        return sum(1 for entry in self.history if entry.redirect_location is None)

    def _delay(self) -> float | None:
        retries = self._retries()
        if retries == 0 or self._schedule is None:
            return 0.0
        return self._schedule.delay(retries)

    def is_exhausted(self) -> bool:
        """Out of retries: urllib3's counts, or the schedule has no next delay."""
        return super().is_exhausted() or self._delay() is None

    def get_backoff_time(self) -> float:
        """The delay of this retry, from the schedule."""
        return self._delay() or 0.0

    def get_retry_after(self, response: BaseHTTPResponse) -> float | None:
        """The server's ``Retry-After``, never an exception, at most ``retry_after_max``."""
        seconds = longest_retry_after(response.headers.getlist("Retry-After"))
        return None if seconds is None else clamped(seconds, self.retry_after_max, "retry_after")

    def _hint(self, response: BaseHTTPResponse | None) -> float | None:
        """The server's hint for *response*, if this Retry honours it."""
        if self.respect_retry_after_header and response is not None:
            return self.get_retry_after(response)
        return None

    def sleep_for_retry(self, response: BaseHTTPResponse) -> bool:
        """What urllib3's pool calls after following a redirect (with
        ``time.sleep`` of the response's ``Retry-After``): a redirect is no
        retry, and takes no sleep."""
        return False

    def sleep(self, response: BaseHTTPResponse | None = None) -> None:
        """Sleep the schedule's delay, raised to the server's hint."""
        delay = raised(self.get_backoff_time(), self._hint(response), None)
        request = self._request
        if request is not None:
            self._tell(request, "retry", self._outcome, self._retries(), delay, None)
            request.slept += delay
        if delay > 0:
            _sleeping.sleep(self.sleep_function, delay)


class _Request:
    """One request's retries, for its events: an id, and the time slept and passed."""

    __slots__ = ("call_id", "slept", "since")

    def __init__(self) -> None:
        self.call_id = -instrument.new_call_id()  # negative: never the id of a driver's call
        self.slept = 0.0
        self.since = time.monotonic()
