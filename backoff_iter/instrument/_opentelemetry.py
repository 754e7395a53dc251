"""The OpenTelemetry hook: :func:`opentelemetry` (opentelemetry-api, imported when called)."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from backoff_iter import _checks
from backoff_iter._extras import missing
from backoff_iter._version import __version__

from . import SLEEP_BUCKETS, Hook, RetryEvent
from . import error_type as type_of

if TYPE_CHECKING:
    from opentelemetry.metrics import Counter, Histogram, MeterProvider
    from opentelemetry.trace import Span, Status, StatusCode, Tracer, TracerProvider

__all__ = ["opentelemetry"]


#: The most calls whose span is open at once; beyond it the oldest is ended
#: and dropped (a loop left by ``break`` after a retry never reports an end).
_OPEN_SPANS_MAX = 4096

#: The most names whose metric attributes are kept made; beyond it they are
#: made afresh (names made per call, a URL in each, would grow them without end).
_NAMES_MAX = 1024


def opentelemetry(
    meter_provider: MeterProvider | None = None, tracer_provider: TracerProvider | None = None
) -> Hook:
    """A hook that records every driver's retries as OpenTelemetry metrics and one span per call.

    Metrics, from a meter ``backoff_iter`` of *meter_provider* (the global
    one if None):

    - counters ``backoff_iter.attempts`` (every attempt that ran: not
      one a breaker or a throttle refused),
      ``backoff_iter.retries`` (attribute ``error_type``: the exception's
      class name, or ``"result"``) and ``backoff_iter.give_ups`` (attribute
      ``reason``: ``"exhausted"``, ``"deadline"``, ``"budget"``,
      ``"retry_after"`` or ``"committed"``, as
      :attr:`~backoff_iter.instrument.RetryEvent.reason` says);
    - the histogram ``backoff_iter.sleep`` of each retry's delay, unit
      ``s`` (bucket bounds :data:`SLEEP_BUCKETS` advised);

    each with the attribute ``name``, the driver's ``name=``.  Traces, from
    *tracer_provider* (the global one if None): one span per call, named
    after ``name``, from the start of its first attempt to the end of its
    last, with an event ``"retry"`` per retry carrying ``retry.attempt``,
    ``retry.delay`` and ``exception.type``, and the attribute
    ``retry.attempts`` (the attempts made, not one refused) at the end.  A
    call that gives up or fails on an
    error the policy does not retry records the exception and ends with
    status ERROR (``"gave up (exhausted): TimeoutError"``).  The span's
    parent is the span current when the first attempt ends.

    The span is started once the first attempt has ended, backdated to its
    start: the attempts' own spans are its siblings, not its children.  At
    most 4096 calls have a span open at once; beyond that the oldest (a
    loop left by ``break`` after a retry never ends) is ended with the
    attribute ``retry.abandoned``.  :class:`~backoff_iter.interop.Urllib3Retry`
    tells no success (urllib3 says nothing of it): its requests are counted,
    but only one that gives up has a span, begun at its first failure, with
    no retry events.  The hook is thread-safe.  Needs ``pip
    install opentelemetry-api`` (the extra ``otel``; an SDK exports).

    >>> from opentelemetry.sdk.trace import TracerProvider
    >>> from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    >>> from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    ...     InMemorySpanExporter)
    >>> from backoff_iter import retry
    >>> exporter = InMemorySpanExporter()
    >>> tracer_provider = TracerProvider()
    >>> tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    >>> hook = opentelemetry(tracer_provider=tracer_provider)
    >>> calls = []
    >>> @retry([0.5, 1.0], name="fetch", observe=hook, sleep=lambda s: None)
    ... def fetch():
    ...     calls.append(1)
    ...     if len(calls) == 1:
    ...         raise TimeoutError("slow")
    ...     return len(calls)
    >>> fetch()
    2
    >>> [span] = exporter.get_finished_spans()
    >>> span.name, [(e.name, dict(e.attributes)) for e in span.events]
    ('fetch', [('retry', {'retry.attempt': 1, 'retry.delay': 0.5, 'exception.type': 'TimeoutError'})])
    """
    try:
        from opentelemetry import metrics, trace
    except ImportError as error:
        what = "backoff_iter.instrument.opentelemetry()"
        missing(what, "opentelemetry-api", "otel", error, "opentelemetry")
    if meter_provider is None:
        meter_provider = metrics.get_meter_provider()
    elif isinstance(meter_provider, type) or not callable(
        getattr(meter_provider, "get_meter", None)
    ):
        raise _checks.ArgumentTypeError(
            "meter_provider",
            f"meter_provider must be an opentelemetry MeterProvider or None, got {_checks.shown(meter_provider)}",
        )
    if tracer_provider is None:
        tracer_provider = trace.get_tracer_provider()
    elif isinstance(tracer_provider, type) or not callable(
        getattr(tracer_provider, "get_tracer", None)
    ):
        raise _checks.ArgumentTypeError(
            "tracer_provider",
            "tracer_provider must be an opentelemetry TracerProvider or None,"
            f" got {_checks.shown(tracer_provider)}",
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
            description="Calls that gave up retrying, by reason: exhausted, deadline, budget, retry_after or committed.",
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
        "_named",
        "_open",
        "_started",
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
        # The metric attributes of each name, made once: an event builds no dict
        # but its span event's (the SDK copies what it keeps).
        self._named: dict[str, _Attributes] = {}
        # The open span of each call that has retried and not ended, oldest first.
        self._open: dict[int, Span] = {}
        # The latest attempt each hedged call has started: its last event may be an earlier one's.
        self._started: dict[int, int] = {}
        self._lock = threading.Lock()

    def __call__(self, event: RetryEvent) -> None:
        name = event.name
        kind = event.kind
        named = self._named.get(name)
        if named is None:  # (two threads may both make them: alike, and either serves)
            named = _Attributes(name)
            if len(self._named) < _NAMES_MAX:
                self._named[name] = named
        by_name = named.by_name
        if kind == "hedge" or kind == "cancelled":  # a hedged call goes on: an event on its span
            span, oldest = self._opened(event)
            span.add_event(kind, {"retry.attempt": event.number})
            if kind == "hedge":
                self._started[event.call_id] = event.number
            if oldest is not None:
                oldest.set_attribute("retry.abandoned", True)
                oldest.end()
            if kind == "cancelled":
                self.attempts.add(1, by_name)
            return
        ran = kind != "error" or event.reason is None  # not one a part refused
        if ran:
            self.attempts.add(1, by_name)
        if kind == "retry":
            delay = event.delay  # None: a hedged call's, with no hedge left - nothing retried
            error_type = type_of(event.outcome)
            if delay is not None:
                retried = named.retried.get(error_type)
                if retried is None:
                    retried = named.retried[error_type] = {"name": name, "error_type": error_type}
                self.retries.add(1, retried)
                self.sleep.record(delay, by_name)
            if event.call_id < 0:  # an Urllib3Retry request, which tells no success: no span
                return  # kept open for it (it stayed open until 4096 others pushed it out)
            retrying, oldest = self._opened(event)
            said: dict[str, str | int | float] = {"retry.attempt": event.number}
            if delay is not None:
                said["retry.delay"] = delay
            said["exception.type"] = error_type
            retrying.add_event("retry", said)
            if oldest is not None:
                oldest.set_attribute("retry.abandoned", True)
                oldest.end()
            return
        number = event.number if ran else event.number - 1
        with self._lock:
            opened = self._open.pop(event.call_id, None)
            if self._started:  # a hedged call: the winner may be an attempt before the last
                number = max(number, self._started.pop(event.call_id, 0))
        # The call's first event may be its last: then its span starts and ends now.
        span = self._start(event) if opened is None else opened
        span.set_attribute("retry.attempts", number)
        outcome = event.outcome
        if kind == "give_up":
            error_type = type_of(outcome)
            reason = str(event.reason)
            gave_up = named.gave_up.get(reason)
            if gave_up is None:
                gave_up = named.gave_up[reason] = {"name": name, "reason": reason}
            self.give_ups.add(1, gave_up)
            if issubclass(type(outcome), BaseException):  # (a result's __class__ may raise)
                _record_exception(span, outcome)
            span.set_status(self.status(self.error, f"gave up ({event.reason}): {error_type}"))
        elif kind == "error":
            _record_exception(span, outcome)
            span.set_status(self.status(self.error, type_of(outcome)))
        span.end()

    def _start(self, event: RetryEvent) -> Span:
        """A span for *event*'s call, begun when its first attempt began."""
        now, back = time.time_ns(), event.elapsed * 1e9
        # (a clock that leapt 1e300 s is inf ns back, which int() refuses: the epoch then)
        return self.tracer.start_span(event.name, start_time=now - int(back) if back < now else 0)

    def _opened(self, event: RetryEvent) -> tuple[Span, Span | None]:
        """The open span of *event*'s call (started now if it has none), and the
        oldest open span if it had to make room."""
        span = self._open.get(event.call_id)  # (one dict read: no lock needed)
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


class _Attributes:
    """The metric attributes of one name: ``by_name``, and those of each
    error type (``retried``) and reason (``gave_up``) seen; never changed."""

    __slots__ = ("by_name", "retried", "gave_up")

    def __init__(self, name: str) -> None:
        self.by_name = {"name": name}
        self.retried: dict[str, dict[str, str]] = {}
        self.gave_up: dict[str, dict[str, str]] = {}


def _record_exception(span: Span, failure: BaseException) -> None:
    """``span.record_exception(failure)``; for a failure whose ``__str__``
    raises (which the SDK reads), its type alone, as an ``"exception"``
    event: the hook never ends the call with an error of its own."""
    try:
        span.record_exception(failure)
    except Exception:
        span.add_event("exception", {"exception.type": type_of(failure)})
