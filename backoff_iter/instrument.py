"""See retries in production: the event every driver reports, and hooks that count it.

Every driver tells its hooks one :class:`RetryEvent` per attempt: a
``"retry"`` (the attempt failed and the driver is about to sleep), a
``"give_up"`` (it failed and nothing is left to try: the delays ran out,
the deadline or the budget said no), or the end of the call: ``"success"``,
or ``"error"`` (an exception the policy does not retry).  So a call that
fails three times and then succeeds reports three retries and one success:
four attempts.

Give hooks to one policy with ``observe=`` (one hook or a list), or to
every driver of the process with :func:`enable`:

>>> from backoff_iter import retry
>>> seen = []
>>> @retry([0.5, 1.0], name="fetch", observe=seen.append, sleep=lambda s: None)
... def fetch(replies=iter([ConnectionError("reset"), "ok"])):
...     reply = next(replies)
...     if isinstance(reply, Exception):
...         raise reply
...     return reply
>>> fetch()
'ok'
>>> [(e.kind, e.name, e.number, e.delay) for e in seen]
[('retry', 'fetch', 1, 0.5), ('success', 'fetch', 2, None)]

A hook is a plain function of the event, called in the retried call's
thread or task; keep it fast and let it not raise (its error would end the
call).  With no hook at all, the drivers make no event: the success path
costs nothing more.

Two hooks are ready-made: :func:`prometheus` counts attempts, retries,
give-ups and sleeps into prometheus-client, and :func:`opentelemetry`
records the same as OpenTelemetry metrics, with a span per call.  Their
libraries are imported only when these are called (``pip install
'backoff_iter[prometheus]'``, ``'backoff_iter[otel]'``).
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, NamedTuple, Union, cast

from . import _checks

if TYPE_CHECKING:
    from opentelemetry.metrics import Counter, Histogram, MeterProvider
    from opentelemetry.trace import Span, Status, StatusCode, Tracer, TracerProvider
    from prometheus_client import CollectorRegistry

__all__ = [
    "SLEEP_BUCKETS",
    "Hook",
    "RetryEvent",
    "disable",
    "enable",
    "opentelemetry",
    "prometheus",
]


class RetryEvent(NamedTuple):
    """What a driver tells its hooks after each attempt; a frozen record."""

    kind: str
    """``"retry"``, ``"give_up"``, ``"success"`` or ``"error"``."""
    name: str
    """The policy's ``name``: for ``@retry`` the function's qualified name, else ``"call"``."""
    number: int
    """The attempt's number, from 1."""
    outcome: Any
    """The attempt's exception, or its result (retried or not)."""
    delay: float | None
    """For a retry, the sleep about to begin; None otherwise."""
    slept: float
    """Seconds the call has slept so far, before this delay."""
    elapsed: float
    """Seconds from the start of the call's first attempt, per the policy's clock."""
    reason: str | None
    """For a give-up, why: ``"exhausted"`` (the delays ran out), ``"deadline"`` or ``"budget"``."""
    call_id: int
    """The same for every event of one call, and different between calls of the process."""


#: A hook: a function of one :class:`RetryEvent`.
Hook = Callable[[RetryEvent], object]

#: The hooks of every driver of the process (see :func:`enable`).  The drivers
#: read this very list at each call, so it changes in place.
enabled: list[Hook] = []


def hooks(observe: Hook | Iterable[Hook] | None) -> tuple[Hook, ...]:
    """``observe=`` as a tuple of hooks, each checked to be callable."""
    if observe is None:
        return ()
    if callable(observe):
        return (observe,)
    if isinstance(observe, (str, bytes)) or not isinstance(observe, Iterable):
        raise _checks.ArgumentTypeError(
            "observe", f"observe must be a hook, a list of hooks or None, got {observe!r}"
        )
    checked = tuple(observe)
    for hook in checked:
        _checks.function("observe", hook)
    return checked


def enable(*new: Hook) -> None:
    """Give *new* hooks to every driver of the process, beside their own ``observe=``.

    Like stamina's ``set_on_retry_hooks``: one line at start-up instruments
    every retry, including those of libraries you do not control.  Calls
    already under way keep the hooks they started with.

    >>> from backoff_iter import retrying
    >>> seen = []
    >>> enable(seen.append)
    >>> for attempt in retrying([0.0], sleep=lambda s: None):
    ...     with attempt:
    ...         pass
    >>> disable()
    >>> [event.kind for event in seen]
    ['success']
    """
    checked = hooks(list(new))
    enabled.extend(checked)


def disable() -> None:
    """Remove every hook :func:`enable` gave."""
    enabled.clear()


Observe = Union[Hook, Iterable[Hook], None]


# -- ready-made hooks: Prometheus and OpenTelemetry ------------------------------------------------

#: The sleep histograms' bucket bounds, in seconds: 1-2.5-5 per decade from
#: 10 ms to 10 s, then 30 s, 1, 2 and 5 minutes.  The default schedule's
#: 0.1-5 s, the usual caps (AWS SDKs' 20 s, Google clients' 60 s, gRPC's
#: reconnect 120 s) and a server's ``Retry-After`` of minutes each fall in a
#: bucket of their own; longer waits land in +Inf, and one bucket holds all
#: below 10 ms (full jitter's near-zero draws).  Prometheus' default buckets
#: stop at 10 s; OpenTelemetry's default ones are meant for milliseconds.
SLEEP_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)


def _error_type(outcome: Any) -> str:
    """The ``error_type`` of an outcome: its exception's class name, or "result"."""
    return type(outcome).__name__ if isinstance(outcome, BaseException) else "result"


def _missing(what: str, package: str, extra: str, error: ImportError) -> ImportError:
    return ModuleNotFoundError(
        f"backoff_iter.instrument.{what}() needs {package}: pip install 'backoff_iter[{extra}]'"
        f" ({error})"
    )


# The collectors registered in each registry, so that a second hook for the same
# registry counts into them rather than failing with "Duplicated timeseries".
_REGISTERED: weakref.WeakKeyDictionary[Any, tuple[Any, Any, Any, Any]] = weakref.WeakKeyDictionary()
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
      (``reason`` is ``"exhausted"``, ``"deadline"`` or ``"budget"``);
    - ``backoff_iter_sleep_seconds{name}``: a histogram of each retry's
      delay (buckets :data:`SLEEP_BUCKETS`, 10 ms to 5 minutes).

    ``name`` is the driver's ``name=``.  The collectors are registered once
    per registry: hooks made again for it count into the same ones.  The
    hook is thread-safe; give it to one policy (``observe=``) or to all
    (:func:`enable`).  Needs ``pip install 'backoff_iter[prometheus]'``.

    >>> from prometheus_client import CollectorRegistry
    >>> from backoff_iter import retry
    >>> registry = CollectorRegistry()
    >>> @retry([0.5, 1.0], name="fetch", observe=prometheus(registry), sleep=lambda s: None)
    ... def fetch(replies=iter([TimeoutError(), "ok"])):
    ...     reply = next(replies)
    ...     if isinstance(reply, Exception):
    ...         raise reply
    ...     return reply
    >>> fetch()
    'ok'
    >>> registry.get_sample_value(
    ...     "backoff_iter_retries_total", {"name": "fetch", "error_type": "TimeoutError"})
    1.0
    >>> registry.get_sample_value("backoff_iter_attempts_total", {"name": "fetch"})
    2.0
    """
    try:
        import prometheus_client
    except ImportError as error:
        raise _missing("prometheus", "prometheus-client", "prometheus", error) from error
    if registry is None:
        registry = prometheus_client.REGISTRY
    elif not callable(getattr(registry, "register", None)):
        raise _checks.ArgumentTypeError(
            "registry",
            f"registry must be a prometheus_client CollectorRegistry or None, got {registry!r}",
        )
    with _REGISTERING:
        collectors = _REGISTERED.get(registry)
        if collectors is None:
            collectors = _REGISTERED[registry] = _register(prometheus_client, registry)
    return _Prometheus(*collectors)


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
            "Calls that gave up retrying, by reason: exhausted, deadline or budget.",
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
        child = self._attempts.get(name)
        if child is None:
            child = self._attempts[name] = self.attempts.labels(name)
        child.inc()
        kind = event.kind
        if kind == "retry":
            key = (name, _error_type(event.outcome))
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


#: The most calls whose span is open at once; beyond it the oldest is ended
#: and dropped (a loop left by ``break`` after a retry never reports an end).
_OPEN_SPANS_MAX = 4096


def opentelemetry(
    meter_provider: MeterProvider | None = None, tracer_provider: TracerProvider | None = None
) -> Hook:
    """A hook that records every driver's retries as OpenTelemetry metrics and one span per call.

    Metrics, from a meter ``backoff_iter`` of *meter_provider* (the global
    one if None):

    - counters ``backoff_iter.attempts`` (every attempt),
      ``backoff_iter.retries`` (attribute ``error_type``: the exception's
      class name, or ``"result"``) and ``backoff_iter.give_ups`` (attribute
      ``reason``: ``"exhausted"``, ``"deadline"`` or ``"budget"``);
    - the histogram ``backoff_iter.sleep`` of each retry's delay, unit
      ``s`` (bucket bounds :data:`SLEEP_BUCKETS` advised);

    each with the attribute ``name``, the driver's ``name=``.  Traces, from
    *tracer_provider* (the global one if None): one span per call, named
    after ``name``, from the start of its first attempt to the end of its
    last, with an event ``"retry"`` per retry carrying ``retry.attempt``,
    ``retry.delay`` and ``exception.type``, and the attribute
    ``retry.attempts`` at the end.  A call that gives up or fails on an
    error the policy does not retry records the exception and ends with
    status ERROR (``"gave up (exhausted): TimeoutError"``).  The span's
    parent is the span current when the first attempt ends.

    The span is started once the first attempt has ended, backdated to its
    start: the attempts' own spans are its siblings, not its children.  At
    most 4096 calls have a span open at once; beyond that the oldest (a
    loop left by ``break`` after a retry never ends) is ended with the
    attribute ``retry.abandoned``.  The hook is thread-safe.  Needs ``pip
    install 'backoff_iter[otel]'`` (opentelemetry-api; an SDK exports).

    >>> from opentelemetry.sdk.trace import TracerProvider
    >>> from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    >>> from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    ...     InMemorySpanExporter)
    >>> from backoff_iter import retry
    >>> exporter = InMemorySpanExporter()
    >>> tracer_provider = TracerProvider()
    >>> tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    >>> hook = opentelemetry(tracer_provider=tracer_provider)
    >>> @retry([0.5, 1.0], name="fetch", observe=hook, sleep=lambda s: None)
    ... def fetch(replies=iter([TimeoutError(), "ok"])):
    ...     reply = next(replies)
    ...     if isinstance(reply, Exception):
    ...         raise reply
    ...     return reply
    >>> fetch()
    'ok'
    >>> [span] = exporter.get_finished_spans()
    >>> span.name, [(e.name, dict(e.attributes)) for e in span.events]
    ('fetch', [('retry', {'retry.attempt': 1, 'retry.delay': 0.5, 'exception.type': 'TimeoutError'})])
    """
    try:
        from opentelemetry import metrics, trace
    except ImportError as error:
        raise _missing("opentelemetry", "opentelemetry-api", "otel", error) from error
    from . import __version__

    if meter_provider is None:
        meter_provider = metrics.get_meter_provider()
    elif not callable(getattr(meter_provider, "get_meter", None)):
        raise _checks.ArgumentTypeError(
            "meter_provider",
            f"meter_provider must be an opentelemetry MeterProvider or None, got {meter_provider!r}",
        )
    if tracer_provider is None:
        tracer_provider = trace.get_tracer_provider()
    elif not callable(getattr(tracer_provider, "get_tracer", None)):
        raise _checks.ArgumentTypeError(
            "tracer_provider",
            "tracer_provider must be an opentelemetry TracerProvider or None,"
            f" got {tracer_provider!r}",
        )
    meter = meter_provider.get_meter("backoff_iter", __version__)
    description = "Delays slept before retries."
    try:
        sleep = meter.create_histogram(
            "backoff_iter.sleep",
            unit="s",
            description=description,
            explicit_bucket_boundaries_advisory=SLEEP_BUCKETS,
        )
    except TypeError:  # an older opentelemetry-api takes no advice
        sleep = meter.create_histogram("backoff_iter.sleep", unit="s", description=description)
    return _OpenTelemetry(
        meter.create_counter(
            "backoff_iter.attempts", unit="{attempt}", description="Attempts of retried calls."
        ),
        meter.create_counter(
            "backoff_iter.retries",
            unit="{retry}",
            description="Failed attempts that were retried, by error type (or 'result').",
        ),
        meter.create_counter(
            "backoff_iter.give_ups",
            unit="{call}",
            description="Calls that gave up retrying, by reason: exhausted, deadline or budget.",
        ),
        sleep,
        tracer_provider.get_tracer("backoff_iter", __version__),
        trace.Status,
        trace.StatusCode.ERROR,
    )


class _OpenTelemetry:
    """The hook :func:`opentelemetry` returns: metrics for each event, a span per call."""

    __slots__ = (
        "attempts",
        "retries",
        "give_ups",
        "sleep",
        "tracer",
        "status",
        "error",
        "_open",
        "_lock",
    )

    def __init__(
        self,
        attempts: Counter,
        retries: Counter,
        give_ups: Counter,
        sleep: Histogram,
        tracer: Tracer,
        status: type[Status],
        error: StatusCode,
    ) -> None:
        self.attempts = attempts
        self.retries = retries
        self.give_ups = give_ups
        self.sleep = sleep
        self.tracer = tracer
        self.status = status
        self.error = error
        # The open span of each call that has retried and not ended, oldest first.
        self._open: dict[int, Span] = {}
        self._lock = threading.Lock()

    def __call__(self, event: RetryEvent) -> None:
        name = event.name
        kind = event.kind
        by_name = {"name": name}
        self.attempts.add(1, by_name)
        if kind == "retry":
            delay = cast(float, event.delay)  # a retry's is a number
            error_type = _error_type(event.outcome)
            self.retries.add(1, {"name": name, "error_type": error_type})
            self.sleep.record(delay, by_name)
            retrying, oldest = self._opened(event)
            retrying.add_event(
                "retry",
                {"retry.attempt": event.number, "retry.delay": delay, "exception.type": error_type},
            )
            if oldest is not None:
                oldest.set_attribute("retry.abandoned", True)
                oldest.end()
            return
        with self._lock:
            opened = self._open.pop(event.call_id, None)
        # The call's first event may be its last: then its span starts and ends now.
        span = self._start(event) if opened is None else opened
        span.set_attribute("retry.attempts", event.number)
        outcome = event.outcome
        if kind == "give_up":
            error_type = _error_type(outcome)
            self.give_ups.add(1, {"name": name, "reason": str(event.reason)})
            if isinstance(outcome, BaseException):
                span.record_exception(outcome)
            span.set_status(self.status(self.error, f"gave up ({event.reason}): {error_type}"))
        elif kind == "error":
            span.record_exception(outcome)
            span.set_status(self.status(self.error, _error_type(outcome)))
        span.end()

    def _start(self, event: RetryEvent) -> Span:
        """A span for *event*'s call, begun when its first attempt began."""
        start = time.time_ns() - int(event.elapsed * 1e9)
        return self.tracer.start_span(event.name, start_time=max(start, 0))

    def _opened(self, event: RetryEvent) -> tuple[Span, Span | None]:
        """The open span of *event*'s call (started now if it has none), and the
        oldest open span if it had to make room."""
        with self._lock:
            span = self._open.get(event.call_id)
        if span is not None:
            return span, None
        span = self._start(event)
        oldest = None
        with self._lock:
            if len(self._open) >= _OPEN_SPANS_MAX:
                oldest = self._open.pop(next(iter(self._open)))
            self._open[event.call_id] = span
        return span, oldest

    def __repr__(self) -> str:
        return f"<backoff_iter.instrument.opentelemetry hook at {id(self):#x}>"
