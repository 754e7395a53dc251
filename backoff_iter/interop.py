"""Feed any schedule of this library into the schedulers people already run.

- :func:`tenacity_wait` - a ``wait=`` for tenacity, and :func:`tenacity_schedule`
  - a ``wait=`` with the ``stop=`` that ends when the schedule does;
- :func:`backoff_wait_gen` - a ``wait_gen`` for the ``backoff`` package;
- :class:`Urllib3Retry` - a ``urllib3.util.Retry`` for requests and urllib3;
- :class:`RetryTransport` - an httpx transport for ``Client`` and ``AsyncClient``.

Each takes *delays*: a zero-argument function returning fresh delays, or a
list or tuple, and draws a fresh schedule for each retried call, so calls
never share one.  Each peer is imported only when its adapter is used; none
is a dependency.

When the schedule runs out (or yields an infinite delay) the retries end
with the call's last error or result, as when the peer's own limit does:
backoff, urllib3 and httpx see it directly, tenacity through the stop of
:func:`tenacity_schedule`.  A bare :func:`tenacity_wait` cannot stop
tenacity: running out before tenacity's own ``stop=`` is a ``RuntimeError``.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Generator, Iterable
from typing import TYPE_CHECKING, Any, cast

from . import _checks
from ._extras import missing
from ._schedule import Latest

if TYPE_CHECKING:
    from tenacity import RetryCallState
    from tenacity.stop import stop_base
    from tenacity.wait import wait_base

    # The adapters as type checkers see them (at run time: __getattr__, on first use).
    from ._botocore import botocore_retries as botocore_retries
    from ._httpx import RetryTransport as RetryTransport
    from ._urllib3 import Urllib3Retry as Urllib3Retry


__all__ = [  # and the adapters of the peers installed: see _installed
    "backoff_wait_gen",
    "tenacity_schedule",
    "tenacity_wait",
]

Delays = Callable[[], Iterable[float]]


def tenacity_wait(delays: Delays | Iterable[float]) -> wait_base:
    """A tenacity ``wait=`` drawing the n-th retry's sleep from a fresh schedule per call.

    Works with ``Retrying``, ``AsyncRetrying`` and ``@tenacity.retry``, and
    composes with tenacity's own ``stop=``, ``retry=`` and ``wait_a + wait_b``.
    Each call (tenacity's retry state) gets its own schedule, so concurrent
    calls and threads never share one.

    >>> import tenacity
    >>> from backoff_iter import exponential
    >>> slept = []
    >>> @tenacity.retry(wait=tenacity_wait(lambda: exponential(0.5)),
    ...                 stop=tenacity.stop_after_attempt(4), sleep=slept.append)
    ... def flaky(replies=iter([OSError(), OSError(), "ok"])):
    ...     reply = next(replies)
    ...     if isinstance(reply, Exception):
    ...         raise reply
    ...     return reply
    >>> flaky(), slept
    ('ok', [0.5, 1.0])

    If the schedule may end before tenacity's own stop does, use
    :func:`tenacity_schedule`: a bare wait that runs out before the stop
    raises ``RuntimeError`` (one that runs out as the stop comes is fine).
    """
    wait_class, _ = _tenacity_classes()
    return wait_class(_Schedules(_checks.reusable_delays("delays", delays)))


def tenacity_schedule(delays: Delays | Iterable[float]) -> tuple[wait_base, stop_base]:
    """A tenacity ``wait=`` and the ``stop=`` that ends when its schedule does.

    With ``reraise=True`` the call then ends with its own last error, as when
    a driver of this library runs out of delays:

    >>> import tenacity
    >>> from itertools import islice
    >>> from backoff_iter import exponential
    >>> wait, stop = tenacity_schedule(lambda: islice(exponential(0.5), 2))
    >>> slept = []
    >>> @tenacity.retry(wait=wait, stop=stop, reraise=True, sleep=slept.append)
    ... def down():
    ...     raise ConnectionError("refused")
    >>> down()
    Traceback (most recent call last):
    ...
    ConnectionError: refused
    >>> slept
    [0.5, 1.0]

    Combine the stop with tenacity's own: ``stop=stop | tenacity.stop_after_delay(30)``.
    The wait needs its stop: left out (or in ``stop & other``, which may go
    on) it is a bare :func:`tenacity_wait`, whose running out is a
    ``RuntimeError`` - never retries without a delay.
    """
    wait_class, stop_class = _tenacity_classes()
    schedules = _Schedules(_checks.reusable_delays("delays", delays))
    return wait_class(schedules), stop_class(schedules)


class _Schedules:
    """One schedule per tenacity call (its retry state), forgotten with it."""

    __slots__ = ("factory", "_schedules", "_lock")

    def __init__(self, factory: Delays) -> None:
        self.factory = factory
        self._schedules: weakref.WeakKeyDictionary[Any, Latest] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def of(self, retry_state: Any) -> Latest:
        with self._lock:
            schedule = self._schedules.get(retry_state)
            if schedule is None:
                schedule = self._schedules[retry_state] = Latest("delays", self.factory)
        return schedule

    def __deepcopy__(self, memo: object) -> _Schedules:
        """The same schedules: they keep nothing but each call's own, so a
        ``copy.deepcopy`` of a tenacity ``Retrying`` (with its wait and
        stop, still linked) needs no copy of them - nor of their lock."""
        return self


_TENACITY: tuple[Any, Any] | None = None


def _stops_now(retry_state: Any) -> bool:
    """Whether tenacity's own ``stop=`` surely ends the call at this attempt."""
    stop = getattr(getattr(retry_state, "retry_object", None), "stop", None)
    return _surely_stops(stop, retry_state)


def _surely_stops(stop: Any, retry_state: Any) -> bool:
    """Whether *stop* surely ends the call at this attempt: a
    ``stop_after_attempt`` reached, or the stop of :func:`tenacity_schedule`
    whose delays ran out, alone or anywhere in ``a | b`` and ``a & b``
    (``a | b | c`` is ``(a | b) | c``).  These are the stops asked ahead,
    as they read nothing but the attempt's number; any other (a clock's,
    an async one, the user's) is never called from here, and taken as no
    stop."""
    from tenacity.stop import stop_after_attempt, stop_all, stop_any

    if isinstance(stop, stop_after_attempt):
        return bool(retry_state.attempt_number >= stop.max_attempt_number)
    if isinstance(stop, stop_any):
        return any(_surely_stops(one, retry_state) for one in stop.stops)
    if isinstance(stop, stop_all):
        return all(_surely_stops(one, retry_state) for one in stop.stops)
    stop_schedule: Any = _tenacity_classes()[1]  # tenacity_schedule's
    return isinstance(stop, stop_schedule) and bool(stop(retry_state))


def _last_error(retry_state: Any) -> BaseException | None:
    """The error the call's last attempt raised; None if it returned."""
    outcome = getattr(retry_state, "outcome", None)
    return None if outcome is None else outcome.exception()


def _tenacity_classes() -> tuple[
    Callable[[_Schedules], wait_base], Callable[[_Schedules], stop_base]
]:
    """The wait and stop classes, subclasses of tenacity's, made on first use -
    once: threads at once each making their own, the stops of all but the last
    kept would be strangers to every wait (:func:`_surely_stops`)."""
    global _TENACITY
    if _TENACITY is None:
        with _MAKING:
            if _TENACITY is None:
                _TENACITY = _made_tenacity_classes()
    return _TENACITY


_MAKING = threading.Lock()  # held while the tenacity classes are made


def _made_tenacity_classes() -> tuple[
    Callable[[_Schedules], wait_base], Callable[[_Schedules], stop_base]
]:
    """New wait and stop classes, subclasses of tenacity's."""
    from tenacity.stop import stop_base
    from tenacity.wait import wait_base

    class wait_schedule(wait_base):
        """A tenacity wait drawing from a fresh schedule of backoff_iter per call."""

        def __init__(self, schedules: _Schedules) -> None:
            self.schedules = schedules

        def __call__(self, retry_state: RetryCallState) -> float:
            retry = retry_state.attempt_number
            delay = self.schedules.of(retry_state).delay(retry)
            if delay is None:
                # tenacity asks the wait first, then the stop: one that surely stops
                # here (tenacity_schedule's, or a stop_after_attempt) needs no delay
                if _stops_now(retry_state):
                    return 0.0
                raise RuntimeError(
                    f"the delays had no finite delay for retry {retry}: stop"
                    " tenacity with the stop of tenacity_schedule(), or"
                    " before the delays run out, or use an infinite strategy"
                ) from _last_error(retry_state)
            return delay

        def __repr__(self) -> str:
            return f"tenacity_wait({self.schedules.factory!r})"

    class stop_schedule(stop_base):
        """A tenacity stop: true when the call's schedule has no next delay."""

        def __init__(self, schedules: _Schedules) -> None:
            self.schedules = schedules

        def __call__(self, retry_state: RetryCallState) -> bool:
            schedule = self.schedules.of(retry_state)
            return schedule.delay(retry_state.attempt_number) is None

        def __repr__(self) -> str:
            return f"<stop when {self.schedules.factory!r} runs out>"

    return wait_schedule, stop_schedule


def backoff_wait_gen(
    delays: Delays | Iterable[float],
) -> Callable[..., Generator[float, Any, None]]:
    """A ``wait_gen`` for ``backoff.on_exception`` / ``backoff.on_predicate``.

    Pass ``jitter=None`` (the schedule has its own jitter, if any).  Each
    call gets a fresh schedule, primed the way backoff expects.  When the
    schedule runs out, backoff gives up as at its own ``max_tries``: the
    last error is raised (even under ``raise_on_giveup=False``, backoff's
    doing), or the last value returned.  backoff hands the
    ``wait_gen`` every keyword its decorator does not know; this one takes
    none, so such a keyword (``max_trys=3``, misspelt) is a ``TypeError``
    naming it when the decorated function is called, before any attempt.

    >>> import backoff
    >>> waits = []
    >>> @backoff.on_exception(backoff_wait_gen([0.001, 0.002]), OSError, jitter=None,
    ...                       on_backoff=lambda details: waits.append(details["wait"]))
    ... def flaky(replies=iter([OSError(), OSError(), "ok"])):
    ...     reply = next(replies)
    ...     if isinstance(reply, Exception):
    ...         raise reply
    ...     return reply
    >>> flaky(), waits
    ('ok', [0.001, 0.002])
    """
    factory = _checks.reusable_delays("delays", delays)

    def wait_gen(**options: Any) -> Generator[float, Any, None]:
        _refuse_options(options)
        # backoff's own type of a wait_gen (its typed on_exception refuses any
        # other): the priming None is taken by its send(None), never a delay.
        return cast("Generator[float, Any, None]", delays_of_a_call())

    def delays_of_a_call() -> Generator[float | None, Any, None]:
        schedule = Latest("delays", factory)
        yield None  # backoff primes the generator with send(None)
        retry = 1
        while True:
            delay = schedule.delay(retry)
            if delay is None:
                return  # backoff takes StopIteration as "give up"
            yield delay
            retry += 1

    return wait_gen


def _refuse_options(options: dict[str, Any]) -> None:
    """backoff hands its decorator's keywords it does not know to the
    ``wait_gen``; ours has none, so one is a misspelt option of backoff's
    (``max_trys=3``: no limit at all) or one of its own generators'
    (``max_value=30``: not the cap meant), refused naming it."""
    for name, value in options.items():
        raise _checks.ArgumentTypeError(
            name,
            f"backoff_wait_gen takes no options, but backoff handed it {name}={_checks.short(value)}:"
            " a misspelt option of backoff's decorator? Shape the delays instead"
            " (capped(), islice(), within())",
        )


# The adapters made on first use, by the peer each needs (the docs extra installs them all).
_PEERS = {
    "Urllib3Retry": "urllib3",
    "RetryTransport": "httpx",
    "botocore_retries": "botocore",
}


def _installed(peer: str) -> bool:
    """Whether *peer* can be imported, asked without importing it (None in
    ``sys.modules``, as a test or an embedder hides a module, is absent).

    >>> _installed("json"), _installed("no_such_peer_here")
    (True, False)
    """
    import sys
    from importlib.util import find_spec

    if peer in sys.modules:  # imported already (find_spec would ask its __spec__), or hidden
        return sys.modules[peer] is not None
    return find_spec(peer) is not None


# `from backoff_iter.interop import *` takes the adapters whose peer is installed
# (each name of __all__ is fetched: one of a missing peer would fail the import).
__all__ += [name for name, peer in _PEERS.items() if _installed(peer)]


def __getattr__(name: str) -> Any:
    """Urllib3Retry, RetryTransport and botocore_retries, each imported with its peer on first use."""
    peer = _PEERS.get(name)
    if peer is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    try:  # each adapter lives in the module named after its peer: _urllib3, _httpx
        return getattr(import_module(f"._{peer}", __package__), name)
    except ModuleNotFoundError as error:
        missing(
            f"backoff_iter.interop.{name}", peer, "aws" if peer == "botocore" else "http", error
        )
