"""Feed any schedule of this library into the schedulers people already run.

- :func:`tenacity_wait` - a ``wait=`` for tenacity;
- :func:`backoff_wait_gen` - a ``wait_gen`` for the ``backoff`` package;
- :class:`Urllib3Retry` - a ``urllib3.util.Retry`` for requests and urllib3;
- :class:`RetryTransport` - an httpx transport for ``Client`` and ``AsyncClient``.

Each takes a *factory*: a zero-argument function returning fresh delays,
called once per retried call, so calls never share a schedule.  Each peer is
imported only when its adapter is used; none is a dependency.

A schedule that runs out (or yields an infinite delay) before the peer's own
stop condition ends the retries is an error the adapters report clearly:
bound the peer (``stop=``, ``max_tries=``, ``total=``) within the delays, or
use an infinite strategy.  The urllib3 and httpx adapters instead take it as
"no next attempt", like this library's drivers.
"""

from __future__ import annotations

import math
import threading
import weakref
from collections.abc import Callable, Generator, Iterable, Iterator
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from . import _checks, _sleeping

if TYPE_CHECKING:
    from ._httpx import RetryTransport
    from ._urllib3 import Urllib3Retry

__all__ = ["RetryTransport", "Urllib3Retry", "backoff_wait_gen", "tenacity_wait"]

Factory = Callable[[], Iterable[float]]


def _factory(name: str, factory: object) -> Factory:
    """Reject what is not a zero-argument function of fresh delays, naming *name*."""
    if not callable(factory) or isinstance(factory, Iterator):
        raise _checks.ArgumentTypeError(
            name,
            f"{name} must be a zero-argument function returning fresh delays"
            f" (e.g. lambda: islice(full_jitter(0.1, 10), 5)), got {factory!r}",
        )
    return cast(Factory, factory)


class Schedule:
    """One call's delays, drawn as they are asked for and kept, so the n-th
    retry always gets the n-th delay however often a peer asks."""

    __slots__ = ("_delays", "_lock")

    def __init__(self, name: str, factory: Factory) -> None:
        from more_itertools import seekable  # with the peer: no cost to `import backoff_iter`

        delays: Iterator[float] = _checks.fresh_delays(name, factory)
        # Checked as they are drawn; seekable keeps what was drawn, to be read again.
        self._delays = seekable(map(partial(_sleeping.seconds, name=name), delays))
        self._lock = threading.Lock()

    def delay(self, retry: int) -> float | None:
        """The delay before retry number *retry* (from 1); None if the
        schedule has none (it ran out, or the delay is infinite)."""
        with self._lock:
            self._delays.seek(retry - 1)
            value = next(self._delays, None)
        return None if value is None or value == math.inf else value

    def required(self, retry: int) -> float:
        """:meth:`delay`, where running out is an error (the peer decides the stop)."""
        value = self.delay(retry)
        if value is None:
            raise RuntimeError(
                f"the delays had no finite delay for retry {retry}: stop the retries"
                " before the delays run out, or use an infinite strategy"
            )
        return value


def tenacity_wait(factory: Factory) -> Any:
    """A tenacity ``wait=`` drawing the n-th retry's sleep from a fresh schedule per call.

    Works with ``Retrying``, ``AsyncRetrying`` and ``@tenacity.retry``, and
    composes with tenacity's own ``stop=``, ``retry=`` and ``wait_a + wait_b``.
    Each call (tenacity's retry state) gets its own schedule, so concurrent
    calls and threads never share one.

    >>> import tenacity
    >>> from itertools import islice
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
    """
    return _tenacity_class()(_factory("factory", factory))


_TENACITY_WAIT: Any = None


def _tenacity_class() -> Any:
    """The wait class, a subclass of tenacity's wait_base, made on first use."""
    global _TENACITY_WAIT
    if _TENACITY_WAIT is None:
        from tenacity.wait import wait_base

        class wait_schedule(wait_base):
            """A tenacity wait drawing from a fresh schedule of backoff_iter per call."""

            def __init__(self, factory: Factory) -> None:
                self.factory = factory
                # One schedule per call, forgotten with the call's retry state.
                self.schedules: weakref.WeakKeyDictionary[Any, Schedule] = (
                    weakref.WeakKeyDictionary()
                )
                self.lock = threading.Lock()

            def __call__(self, retry_state: Any) -> float:
                with self.lock:
                    schedule = self.schedules.get(retry_state)
                    if schedule is None:
                        schedule = self.schedules[retry_state] = Schedule("factory", self.factory)
                return schedule.required(retry_state.attempt_number)

            def __repr__(self) -> str:
                return f"tenacity_wait({self.factory!r})"

        _TENACITY_WAIT = wait_schedule
    return _TENACITY_WAIT


def backoff_wait_gen(factory: Factory) -> Callable[..., Generator[float | None, Any, None]]:
    """A ``wait_gen`` for ``backoff.on_exception`` / ``backoff.on_predicate``.

    Pass ``jitter=None`` (the schedule has its own jitter, if any).  Each
    call gets a fresh schedule, primed the way backoff expects.

    >>> import backoff
    >>> waits = []
    >>> @backoff.on_exception(backoff_wait_gen(lambda: [0.001, 0.002, 0.004]), OSError,
    ...                       max_tries=4, jitter=None,
    ...                       on_backoff=lambda details: waits.append(details["wait"]))
    ... def flaky(replies=iter([OSError(), OSError(), "ok"])):
    ...     reply = next(replies)
    ...     if isinstance(reply, Exception):
    ...         raise reply
    ...     return reply
    >>> flaky(), waits
    ('ok', [0.001, 0.002])
    """
    factory = _factory("factory", factory)

    def wait_gen(**ignored: Any) -> Generator[float | None, Any, None]:
        schedule = Schedule("factory", factory)
        yield None  # backoff primes the generator with send(None)
        for retry in range(1, 1 << 62):
            yield schedule.required(retry)

    return wait_gen


def __getattr__(name: str) -> Any:
    """Urllib3Retry and RetryTransport, each imported with its peer on first use."""
    if name == "Urllib3Retry":
        from ._urllib3 import Urllib3Retry

        return Urllib3Retry
    if name == "RetryTransport":
        from ._httpx import RetryTransport

        return RetryTransport
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
