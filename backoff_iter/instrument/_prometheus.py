"""The Prometheus hook: :func:`prometheus` (prometheus-client, imported when called)."""

from __future__ import annotations

import threading
import weakref
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
_REGISTERED: weakref.WeakKeyDictionary[Any, _Prometheus] = weakref.WeakKeyDictionary()
_REGISTERING = threading.Lock()


def prometheus(registry: CollectorRegistry | None = None) -> Hook:
    """A hook that counts every driver's attempts, retries, give-ups and sleeps for Prometheus.

    It counts into four collectors of *registry* (prometheus-client's
    default ``REGISTRY``, which ``start_http_server`` serves, if None):

    - ``backoff_iter_attempts_total{name}``: every attempt;
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
            hook = _REGISTERED[registry] = _Prometheus(*_register(prometheus_client, registry))
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


class _Prometheus:
    """The hook :func:`prometheus` returns: counts each event into the collectors."""

    __slots__ = (
        "attempts",
        "retries",
        "give_ups",
        "sleep",
        "_attempts",
        "_retries",
        "_give_ups",
        "_sleeps",
    )

    def __init__(self, attempts: Any, retries: Any, give_ups: Any, sleep: Any) -> None:
        self.attempts = attempts
        self.retries = retries
        self.give_ups = give_ups
        self.sleep = sleep
        # The labelled children, each looked up once (labels() takes a lock and
        # builds a key): by name, the attempts' and the sleep's; by (name, error
        # type) the retries', by (name, reason) the give-ups'.  Two threads may
        # both look one up: labels() hands both the same child.
        self._attempts: dict[str, Any] = {}
        self._retries: dict[tuple[str, str], Any] = {}
        self._give_ups: dict[tuple[str, str], Any] = {}
        self._sleeps: dict[str, Any] = {}

    def __call__(self, event: RetryEvent) -> None:
        name = event.name
        kind = event.kind
        if kind == "hedge":  # an attempt starting: counted when it ends
            return
        child = self._attempts.get(name)
        if child is None:
            child = self._attempts[name] = self.attempts.labels(name)
        child.inc()
        if kind == "retry":
            key = (name, type_of(event.outcome))
            child = self._retries.get(key)
            if child is None:
                child = self._retries[key] = self.retries.labels(*key)
            child.inc()
            child = self._sleeps.get(name)
            if child is None:
                child = self._sleeps[name] = self.sleep.labels(name)
            child.observe(event.delay)
        elif kind == "give_up":
            key = (name, str(event.reason))
            child = self._give_ups.get(key)
            if child is None:
                child = self._give_ups[key] = self.give_ups.labels(*key)
            child.inc()

    def __repr__(self) -> str:
        return f"<backoff_iter.instrument.prometheus hook at {id(self):#x}>"
