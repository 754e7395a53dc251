"""The Prometheus hook: :func:`prometheus` (prometheus-client, imported when called)."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from backoff_iter import _checks
from backoff_iter._extras import missing

from . import SLEEP_BUCKETS, Hook, RetryEvent
from . import error_type as type_of

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

__all__ = ["prometheus"]


# The hook of each registry, its collectors registered once: asked again for the
# same registry, prometheus() returns it (a second registration fails with
# "Duplicated timeseries", and a second hook enabled would count twice).
_REGISTERED: weakref.WeakKeyDictionary[Any, Hook] = weakref.WeakKeyDictionary()
_REGISTERING = threading.Lock()


def prometheus(registry: CollectorRegistry | None = None) -> Hook:
    """A hook that counts every driver's attempts, retries, give-ups and sleeps for Prometheus.

    It counts into four collectors of *registry* (prometheus-client's
    default ``REGISTRY``, which ``start_http_server`` serves, if None):

    - ``backoff_iter_attempts_total{name}``: every attempt that ran (not
      one a breaker or a throttle refused);
    - ``backoff_iter_retries_total{name, error_type}``: the attempts that
      are retried; ``error_type`` is the exception's class name, or
      ``"result"`` for a result ``on_result`` retried;
    - ``backoff_iter_give_ups_total{name, reason}``: the calls that gave up
      (``reason`` is ``"exhausted"``, ``"deadline"``, ``"budget"``,
      ``"retry_after"`` or ``"committed"``, as
      :attr:`~backoff_iter.instrument.RetryEvent.reason` says);
    - ``backoff_iter_sleep_seconds{name}``: a histogram of each retry's
      delay (buckets :data:`SLEEP_BUCKETS`, 10 ms to 5 minutes).

    ``name`` is the driver's ``name=``.  The collectors are registered once
    per registry, and the hook is made once: asked again for the same
    registry, it returns the same hook (which :func:`enable` takes once,
    however often start-up code runs).  The hook is thread-safe; give it to
    one policy (``observe=``) or to all (:func:`enable`).  Needs ``pip install prometheus-client`` (the extra ``prometheus``).

    >>> from prometheus_client import CollectorRegistry
    >>> from backoff_iter import retrying
    >>> registry = CollectorRegistry()
    >>> hook = prometheus(registry)
    >>> timeouts = [TimeoutError("slow")]
    >>> for attempt in retrying([0.5], name="search", observe=hook, sleep=lambda s: None):
    ...     with attempt:
    ...         if timeouts:
    ...             raise timeouts.pop()
    >>> registry.get_sample_value(
    ...     "backoff_iter_retries_total", {"name": "search", "error_type": "TimeoutError"})
    1.0
    >>> registry.get_sample_value("backoff_iter_attempts_total", {"name": "search"})
    2.0
    """
    try:
        import prometheus_client
    except ImportError as error:
        what = "backoff_iter.instrument.prometheus()"
        missing(what, "prometheus-client", "prometheus", error, "prometheus_client")
    if registry is None:
        registry = prometheus_client.REGISTRY
    elif isinstance(registry, type) or not callable(getattr(registry, "register", None)):
        raise _checks.ArgumentTypeError(
            "registry",
            f"registry must be a prometheus_client CollectorRegistry or None, got {_checks.shown(registry)}",
        )
    with _REGISTERING:
        hook = _REGISTERED.get(registry)
        if hook is None:
            hook = _REGISTERED[registry] = _counter(*_register(prometheus_client, registry))
    return hook


def _register(client: Any, registry: CollectorRegistry) -> tuple[Any, Any, Any, Any]:
    """Make the four collectors and register them all in *registry*, or none."""
    collectors = (
        client.Counter(
            "backoff_iter_attempts", "Attempts of retried calls.", ["name"], registry=None
        ),
        client.Counter(
            "backoff_iter_retries",
            "Failed attempts that were retried, by error type (or 'result').",
            ["name", "error_type"],
            registry=None,
        ),
        client.Counter(
            "backoff_iter_give_ups",
            "Calls that gave up retrying, by reason: exhausted, deadline, budget, retry_after or committed.",
            ["name", "reason"],
            registry=None,
        ),
        client.Histogram(
            "backoff_iter_sleep_seconds",
            "Delays slept before retries, in seconds.",
            ["name"],
            registry=None,
            buckets=SLEEP_BUCKETS,
        ),
    )
    done = []
    try:
        for collector in collectors:
            registry.register(collector)
            done.append(collector)
    except BaseException:
        for collector in done:
            registry.unregister(collector)
        raise
    return collectors


def _counter(attempts: Any, retries: Any, give_ups: Any, sleep: Any) -> Hook:
    """The hook :func:`prometheus` returns: counts each event into the collectors.

    Each name's labelled children are looked up once (``labels()`` takes a
    lock and builds a key), and their ``inc`` and ``observe`` kept bound: an
    event costs a look-up by name (and by error type or reason) before the
    children's own work.  A function, not an object with ``__call__``: it is
    called for every attempt, and calling a function costs less."""
    # name: (count an attempt, {error type: (count a retry, observe its delay)},
    # {reason: count a give-up}); a series is made when it is first counted
    # into (a name that never retried exports no sleep histogram).  Two
    # threads may both bind a name: labels() hands both the same children.
    named: dict[
        str,
        tuple[
            Callable[[], object],
            dict[str, tuple[Callable[[], object], Callable[[float | None], object]]],
            dict[str, Callable[[], object]],
        ],
    ] = {}

    def prometheus_hook(event: RetryEvent) -> None:
        kind = event.kind
        if kind == "hedge":  # an attempt starting: counted when it ends
            return
        if kind == "error" and event.reason is not None:  # an attempt that never ran
            return
        name = event.name
        series = named.get(name)
        if series is None:
            series = named[name] = (attempts.labels(name).inc, {}, {})
        count_attempt, retried, gave_up = series
        count_attempt()
        if kind == "retry":
            if event.delay is None:  # a hedged call's, with no hedge left: nothing retried
                return
            error_type = type_of(event.outcome)
            children = retried.get(error_type)
            if children is None:
                children = retried[error_type] = (
                    retries.labels(name, error_type).inc,
                    sleep.labels(name).observe,
                )
            count_retry, observe_sleep = children
            count_retry()
            observe_sleep(event.delay)
        elif kind == "give_up":
            reason = str(event.reason)
            count = gave_up.get(reason)
            if count is None:
                count = gave_up[reason] = give_ups.labels(name, reason).inc
            count()

    return prometheus_hook
