"""instrument.prometheus() and instrument.opentelemetry(), against prometheus-client's
CollectorRegistry and opentelemetry-sdk's in-memory reader and exporter; never sleeping."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import threading
import time
from bisect import bisect_left
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import islice
from random import Random

import httpx
import pytest
import test_drivers
from checks import fresh_python, in_threads, rejects
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from prometheus_client import CollectorRegistry, Counter
from test_drivers import FakeTime

from backoff_iter import TokenBucket, aretrying, constant, full_jitter, instrument, retry, retrying
from backoff_iter.interop import RetryTransport


def labels(**values):
    """A series' labels (attributes) in one comparable form for both backends."""
    return tuple(sorted(values.items()))


class Prometheus:
    """A prometheus() hook counting into a registry of its own, and its series read back."""

    name = "prometheus"

    def __init__(self):
        self.registry = CollectorRegistry()
        self.hook = instrument.prometheus(self.registry)

    def series(self, metric):
        """{labels: value} of a counter ("attempts", "retries", "give_ups"), or
        {labels: (sum, count)} of "sleep"."""
        found = {}
        suffixes = ("_sum", "_count") if metric == "sleep" else ("_total",)
        stem = "backoff_iter_sleep_seconds" if metric == "sleep" else f"backoff_iter_{metric}"
        for family in self.registry.collect():
            for sample in family.samples:
                for i, suffix in enumerate(suffixes):
                    if sample.name == stem + suffix:
                        found.setdefault(labels(**sample.labels), [None] * len(suffixes))[i] = (
                            sample.value
                        )
        return {key: tuple(v) if metric == "sleep" else v[0] for key, v in found.items()}


class OpenTelemetry:
    """An opentelemetry() hook with its own meter and tracer providers, read back in memory."""

    name = "opentelemetry"

    def __init__(self):
        self.reader = InMemoryMetricReader()
        self.meters = MeterProvider(metric_readers=[self.reader])
        self.exporter = InMemorySpanExporter()
        self.tracers = TracerProvider()
        self.tracers.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.hook = instrument.opentelemetry(self.meters, self.tracers)

    def metric(self, metric):
        data = self.reader.get_metrics_data()
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for found in scope.metrics:
                    if found.name == f"backoff_iter.{metric}":
                        return found
        return None

    def series(self, metric):
        """As Prometheus.series, from the data points of the metric ``backoff_iter.<metric>``."""
        found = self.metric(metric)
        if found is None:
            return {}
        return {
            labels(**p.attributes): (p.sum, p.count) if metric == "sleep" else p.value
            for p in found.data.data_points
        }

    def spans(self):
        return self.exporter.get_finished_spans()


BACKENDS = [Prometheus, OpenTelemetry]
each_backend = pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.name)


class Operation(test_drivers.Operation):
    """test_drivers' scripted operation, which also notes when each attempt ended."""

    def __init__(self, outcomes, time=None, duration=0.0):
        super().__init__(outcomes, time, duration)
        self.ends = []  # time.time_ns() as each attempt ended

    def __call__(self):
        try:
            return super().__call__()
        finally:
            self.ends.append(time.time_ns())


def run_loop(operation, **options):
    result = None
    for attempt in retrying(**options):
        with attempt:
            result = attempt.set_result(operation())
    return result


def run_async_loop(operation, **options):
    async def main():
        result = None
        async for attempt in aretrying(**options):
            async with attempt:
                result = attempt.set_result(operation())
        return result

    return asyncio.run(main())


def run_decorator(operation, **options):
    return retry(**options)(operation)()


def run_async_decorator(operation, **options):
    async def call():
        return operation()

    return asyncio.run(retry(**options)(call)())


each_driver = pytest.mark.parametrize(
    "run",
    [run_loop, run_async_loop, run_decorator, run_async_decorator],
    ids=["retrying", "aretrying", "retry", "async retry"],
)


def outcome_of(run, backend, outcomes, delays, time=None, **options):
    """Run one call named "fetch" through *run*, observed by *backend* (or by
    ``observe=`` if given); its result or exception."""
    time = time or FakeTime()
    options.setdefault("observe", backend.hook)
    try:
        return run(
            Operation(outcomes, time, 1.0),
            delays=delays,
            name="fetch",
            sleep=time.sleep,
            clock=time.clock,
            **options,
        )
    except Exception as error:
        return error


def sequential_sum(values):
    """The values added one by one from 0.0, as a counter adds them (sum() may compensate)."""
    total = 0.0
    for value in values:
        total += value
    return total


# -- what is counted -----------------------------------------------------------------------------


@each_backend
@each_driver
def test_three_failures_then_a_success_count_three_retries_and_four_attempts(backend, run):
    """Three retries, four attempts, no give-up; the sleep histogram sums exactly the delays slept."""
    backend = backend()
    delays = list(islice(full_jitter(0.1, cap=5.0, rng=Random(18)), 5))
    time = FakeTime()
    assert outcome_of(run, backend, [OSError(), OSError(), TimeoutError()], delays, time) == "ok"
    assert time.slept == delays[:3]
    assert backend.series("attempts") == {labels(name="fetch"): 4}
    assert backend.series("retries") == {
        labels(name="fetch", error_type="OSError"): 2,
        labels(name="fetch", error_type="TimeoutError"): 1,
    }
    assert backend.series("give_ups") == {}
    assert backend.series("sleep") == {labels(name="fetch"): (sequential_sum(time.slept), 3)}


@each_backend
@pytest.mark.parametrize("reason", ["exhausted", "deadline", "budget"])
@each_driver
def test_each_give_up_is_counted_once_with_its_reason(backend, reason, run):
    """Delays run out, the deadline or a drained TokenBucket: one give-up labelled with that reason."""
    backend = backend()
    options, retries = {}, 1
    delays = [0.5]
    if reason == "deadline":  # 3 s shortened to the 1 s left, then no room: one retry
        delays, options["deadline"] = (lambda: constant(3.0)), 2.0
    elif reason == "budget":
        bucket = options["budget"] = TokenBucket(max_tokens=4)
        for _ in range(2):
            bucket.record_failure(True)  # at half: the next failure leaves no retry
        delays, retries = [0.5] * 5, 0
    error = outcome_of(run, backend, [ConnectionError()] * 9, delays, **options)
    assert isinstance(error, ConnectionError)
    assert backend.series("give_ups") == {labels(name="fetch", reason=reason): 1}
    assert backend.series("attempts") == {labels(name="fetch"): retries + 1}
    expected = {labels(name="fetch", error_type="ConnectionError"): retries} if retries else {}
    assert backend.series("retries") == expected


@each_backend
def test_one_name_keeps_each_reason_apart(backend):
    """Calls of one name giving up for each reason, twice over: three series of two."""
    backend = backend()
    bucket = TokenBucket(max_tokens=2)
    bucket.record_failure(True)  # at half: no retry
    for _ in range(2):
        for options in ({}, {"deadline": 0.5}, {"budget": bucket}):
            error = outcome_of(run_decorator, backend, [OSError()] * 3, [1.0], **options)
            assert isinstance(error, OSError)
    assert backend.series("give_ups") == {
        labels(name="fetch", reason=reason): 2 for reason in ("exhausted", "deadline", "budget")
    }


@each_backend
@each_driver
def test_a_retried_result_counts_as_error_type_result(backend, run):
    """A result on_result retries is error_type "result"; the last one given up on as well."""
    backend = backend()
    result = outcome_of(
        run, backend, [None, None, None], [0.25, 0.25], on_result=lambda r: r is None
    )
    assert result is None
    assert backend.series("retries") == {labels(name="fetch", error_type="result"): 2}
    assert backend.series("give_ups") == {labels(name="fetch", reason="exhausted"): 1}
    assert backend.series("sleep") == {labels(name="fetch"): (0.5, 2)}


@each_backend
def test_a_failure_not_retried_is_an_attempt_and_nothing_else(backend):
    """An error outside on= counts one attempt, no retry, no give-up, no sleep."""
    backend = backend()
    error = outcome_of(run_decorator, backend, [KeyError("k")], [0.5], on=OSError)
    assert isinstance(error, KeyError)
    assert backend.series("attempts") == {labels(name="fetch"): 1}
    assert backend.series("retries") == backend.series("give_ups") == {}
    assert backend.series("sleep") == {}


@each_backend
def test_sleeps_land_in_buckets_from_ten_milliseconds_to_five_minutes(backend):
    """Each delay is in the first bucket at least as large: 0.01 in le=0.01, 400 s only in +Inf."""
    backend = backend()
    delays = [0.0, 0.01, 0.3, 7.0, 300.0, 400.0]
    outcome_of(run_decorator, backend, [OSError()] * len(delays), delays)
    if isinstance(backend, Prometheus):
        counts = {}
        for family in backend.registry.collect():
            for sample in family.samples:
                if sample.name == "backoff_iter_sleep_seconds_bucket":
                    counts[float(sample.labels["le"])] = sample.value
        bounds = [*instrument.SLEEP_BUCKETS, float("inf")]
        cumulative = [sum(d <= bound for d in delays) for bound in bounds]
        assert [counts[bound] for bound in bounds] == cumulative
    else:
        [point] = backend.metric("sleep").data.data_points
        assert tuple(point.explicit_bounds) == instrument.SLEEP_BUCKETS
        per_bucket = [0] * (len(instrument.SLEEP_BUCKETS) + 1)
        for delay in delays:
            per_bucket[bisect_left(instrument.SLEEP_BUCKETS, delay)] += 1
        assert list(point.bucket_counts) == per_bucket
    assert instrument.SLEEP_BUCKETS[0] == 0.01 and instrument.SLEEP_BUCKETS[-1] == 300.0


@each_backend
def test_threads_count_exactly_with_no_cross_talk_between_names(backend, switching_often):
    """8 threads x 50 calls over 8 shared policies: every name's counts are its own calls' sums."""
    backend = backend()
    names = [f"service{i}" for i in range(8)]
    policies = {
        name: retry([0.25, 0.5], name=name, observe=backend.hook, sleep=lambda s: None)
        for name in names
    }

    def script(thread, call):
        """(name, failures, error class) of one call: 3 failures give up, 0-2 succeed."""
        number = thread * 50 + call
        error = OSError if number % 2 else TimeoutError
        return names[(thread + call) % 8], number % 4 + (thread % 2), error

    barrier = threading.Barrier(8)

    def work(thread):
        barrier.wait()
        for call in range(50):
            name, failures, error = script(thread, call)
            with contextlib.suppress(OSError, TimeoutError):
                policies[name](Operation([error()] * failures))()

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    attempts, retries, give_ups, sleep = {}, {}, {}, {}
    for thread in range(8):
        for call in range(50):
            name, failures, error = script(thread, call)
            tried = min(failures, 2)  # two delays: at most two retries
            key = labels(name=name)
            attempts[key] = attempts.get(key, 0) + tried + 1
            if tried:
                key = labels(name=name, error_type=error.__name__)
                retries[key] = retries.get(key, 0) + tried
                total, count = sleep.get(labels(name=name), (0.0, 0))
                sleep[labels(name=name)] = (total + [0, 0.25, 0.75][tried], count + tried)
            if failures > 2:
                key = labels(name=name, reason="exhausted")
                give_ups[key] = give_ups.get(key, 0) + 1
    assert backend.series("attempts") == attempts
    assert backend.series("retries") == retries
    assert backend.series("give_ups") == give_ups
    assert backend.series("sleep") == sleep  # quarter seconds: exact in any order
    if isinstance(backend, OpenTelemetry):
        spans = backend.spans()
        assert len(spans) == 400
        for name in names:
            mine = [span for span in spans if span.name == name]
            assert len(mine) == attempts[labels(name=name)] - sum(
                count for key, count in retries.items() if dict(key)["name"] == name
            )  # one span per call: attempts - retries = calls
            assert sum(len(span.events) for span in mine) == sum(
                count for key, count in retries.items() if dict(key)["name"] == name
            ) + sum(
                count for key, count in give_ups.items() if dict(key)["name"] == name
            )  # a "retry" per retry, an "exception" per give-up


@each_backend
def test_interleaved_async_tasks_count_and_trace_each_call_apart(backend):
    """8 names x 50 tasks retrying at once in one loop: exact counts, one span per call."""
    backend = backend()
    names = [f"task{i}" for i in range(8)]

    async def nap(seconds):
        await asyncio.sleep(0)  # lets the other tasks run between attempts, sleeps nothing

    policies = {
        name: retry([0.25] * 3, name=name, observe=backend.hook, sleep=nap) for name in names
    }

    async def one(number):
        flaky = Operation([ConnectionError()] * (number % 3))

        async def attempt():
            await asyncio.sleep(0)
            return flaky()

        return await policies[names[number % 8]](attempt)()

    async def main():
        return await asyncio.gather(*(one(number) for number in range(400)))

    assert asyncio.run(main()) == ["ok"] * 400
    retried = {name: sum(n % 3 for n in range(400) if n % 8 == i) for i, name in enumerate(names)}
    assert backend.series("attempts") == {labels(name=n): 50 + retried[n] for n in names}
    assert backend.series("retries") == {
        labels(name=n, error_type="ConnectionError"): retried[n] for n in names
    }
    assert backend.series("sleep") == {
        labels(name=n): (0.25 * retried[n], retried[n]) for n in names
    }
    if isinstance(backend, OpenTelemetry):
        spans = backend.spans()
        assert len(spans) == 400
        assert sorted(len(span.events) for span in spans) == sorted(n % 3 for n in range(400))


@each_backend
def test_enable_instruments_a_policy_made_before_it_until_disable(backend):
    """A decorator made before enable() is counted while enabled, and no longer after disable()."""
    backend = backend()
    flaky = retry([0.0], name="early", sleep=lambda s: None)(Operation([OSError()]))
    flaky()  # not yet counted
    instrument.enable(backend.hook)
    also = []
    instrument.enable(also.append)  # a second enable() adds, it does not replace
    try:
        flaky()
        flaky.__wrapped__.outcomes.append(OSError())
        flaky()
    finally:
        instrument.disable()
    assert [event.kind for event in also] == ["success", "retry", "success"]
    flaky.__wrapped__.outcomes.append(OSError())
    flaky()
    assert backend.series("attempts") == {labels(name="early"): 3}
    assert backend.series("retries") == {labels(name="early", error_type="OSError"): 1}


@each_backend
def test_each_attempt_of_a_hedged_call_is_counted_once(backend):
    """A hedged call whose first attempt fails at once and whose hedge answers: two attempts
    counted, each when it ended - the "hedge" event that started the second is no third."""
    from backoff_iter import hedged

    backend = backend()
    started = []

    async def fetch():
        started.append(len(started) + 1)
        if len(started) == 1:
            raise ConnectionError("replica down")
        return "answer"

    calling = hedged(fetch, [3600], on=ConnectionError, name="fetch", observe=backend.hook)
    assert asyncio.run(asyncio.wait_for(calling, 10)) == "answer"
    assert started == [1, 2]
    assert backend.series("attempts") == {labels(name="fetch"): 2.0}


def test_a_hedged_call_won_by_its_first_attempt_has_the_attempts_made_on_its_span():
    """Attempt 1 answers after hedge 2 has started: the span's retry.attempts is 2, the
    attempts made and counted (it was the winner's number, 1); a call that ends while the
    hedge is out, never hedged itself, has its own count."""
    from backoff_iter import hedged

    backend = OpenTelemetry()
    started = []

    async def main():
        hedge_out = asyncio.Event()  # (made in the loop: Python 3.9 binds it to one)

        async def fetch():
            started.append(len(started) + 1)
            if len(started) == 1:
                await hedge_out.wait()  # answers once the hedge is out
                return "first"
            hedge_out.set()
            plain = retry([0.0], name="plain", observe=backend.hook, sleep=lambda s: None)
            plain(Operation([OSError()]))()  # a call of two attempts, ended meanwhile
            await asyncio.Event().wait()  # never answers: cancelled when attempt 1 wins

        return await hedged(fetch, [0.0], name="fetch", observe=backend.hook)

    assert asyncio.run(asyncio.wait_for(main(), 10)) == "first"
    plain, hedged_span = backend.spans()
    assert [e.name for e in hedged_span.events] == ["hedge", "cancelled"]
    assert hedged_span.attributes["retry.attempts"] == 2
    assert backend.series("attempts") == {labels(name="fetch"): 2, labels(name="plain"): 2}
    assert plain.attributes["retry.attempts"] == 2


def test_two_prometheus_hooks_on_one_registry_share_its_collectors():
    """prometheus(registry) twice: no "Duplicated timeseries", both hooks count into one series."""
    registry = CollectorRegistry()
    first, second = instrument.prometheus(registry), instrument.prometheus(registry)
    retry([0.0], name="a", observe=first)(Operation([]))()
    retry([0.0], name="a", observe=second)(Operation([]))()
    assert registry.get_sample_value("backoff_iter_attempts_total", {"name": "a"}) == 2.0
    other = CollectorRegistry()
    retry([0.0], name="a", observe=instrument.prometheus(other))(Operation([]))()
    assert other.get_sample_value("backoff_iter_attempts_total", {"name": "a"}) == 1.0
    assert registry.get_sample_value("backoff_iter_attempts_total", {"name": "a"}) == 2.0


def test_a_hook_enabled_twice_counts_once():
    """Start-up code run twice (an app factory per test): prometheus(registry) is the
    registry's one hook, and enable() takes a hook it has once (every attempt counted
    twice); enabled() lists it once."""
    registry = CollectorRegistry()
    assert instrument.prometheus(registry) is instrument.prometheus(registry)
    seen = []
    try:
        for _ in range(2):
            instrument.enable(instrument.prometheus(registry), seen.append, seen.append)
        retry([0.0], name="twice")(Operation([]))()
        hooks = instrument.enabled()
    finally:
        instrument.reset()
    assert registry.get_sample_value("backoff_iter_attempts_total", {"name": "twice"}) == 1.0
    assert [event.kind for event in seen] == ["success"]
    assert hooks.count(seen.append) == hooks.count(instrument.prometheus(registry)) == 1


class FailuresOnly(list):
    """A hook of retries and give-ups only (its ``events``)."""

    events = frozenset({"retry", "give_up"})

    def __call__(self, event):
        self.append(event.kind)


def test_a_hook_both_enabled_and_given_to_observe_hears_each_event_once(no_process_hooks):
    """The same hook given to enable() and to a policy's observe= (a library enables
    prometheus(), the app passes it too): each event once, in every form, and for a
    hook enabled for failures only; another hook enabled beside them still hears them."""
    seen, failures, other = [], FailuresOnly(), []
    instrument.enable(seen.append, failures, other.append)
    error = ConnectionError("down")
    options = {"on": ConnectionError, "sleep": lambda s: None, "observe": [seen.append, failures]}
    retry([0.0], **options)(Operation([]))()  # the bare first try
    retry([0.0], **options)(Operation([error]))()
    run_loop(Operation([error]), delays=[0.0], **options)
    with pytest.raises(ConnectionError):
        retry([0.0], **options)(Operation([error, error]))()
    kinds = ["success", "retry", "success", "retry", "success", "retry", "give_up"]
    assert [event.kind for event in seen] == kinds
    assert failures == kinds  # given to observe=, it hears them all (see events)
    assert [event.kind for event in other] == kinds
    late, decorated = FailuresOnly(), retry([0.0], **options)(Operation([error, "ok", error]))
    decorated()
    instrument.enable(late)  # between two calls of one policy
    decorated()
    assert late == ["retry"]


def test_hooks_disabled_or_set_aside_may_be_enabled_again():
    """What enable() knows as enabled follows disable(), reset() and a logger of yours
    setting the default one aside: each hook may be enabled again, once, and so may
    the default logger once given back."""
    import logging

    seen = []
    try:
        instrument.reset()
        (default,) = instrument.enabled()  # the default logger, hearing failures only
        instrument.enable(seen.append)
        instrument.disable()
        instrument.enable(seen.append, seen.append)
        assert instrument.enabled() == (seen.append,)
        instrument.reset()
        (default,) = instrument.enabled()
        instrument.enable(seen.append, default)
        assert instrument.enabled() == (seen.append, default)
        instrument.enable(instrument.log_retries(logging.getLogger("mine")))  # it steps aside
        assert default not in instrument.enabled()
        instrument.enable(default, default)  # ... and comes back, once, when given back
        assert instrument.enabled().count(default) == 1
        instrument.disable()
        instrument.enable(seen.append, seen.insert)  # two methods of one object: two hooks
        assert instrument.enabled() == (seen.append, seen.insert)
    finally:
        instrument.reset()


def test_enable_takes_unhashable_hooks_and_tells_equal_ones_apart():
    """Hooks compared by identity (a method read twice is one hook): an unhashable one
    (a dataclass with __call__) is enabled, as before, and two that compare equal but
    count apart are both kept."""
    import dataclasses

    @dataclasses.dataclass
    class Counts:
        kinds: list

        def __call__(self, event):
            self.kinds.append(event.kind)

    first, second = Counts([]), Counts([])
    assert first == second
    mine, yours = [], []  # the same method of two objects: two hooks
    try:
        instrument.enable(first, second, mine.append, yours.append)
        retry([0.0], name="apart")(Operation([]))()
    finally:
        instrument.reset()
    assert first.kinds == second.kinds == ["success"]
    assert len(mine) == len(yours) == 1


def test_prometheus_without_a_registry_counts_into_the_default_one():
    """registry=None is prometheus_client's REGISTRY, which start_http_server serves."""
    from prometheus_client import REGISTRY

    before = REGISTRY.get_sample_value("backoff_iter_attempts_total", {"name": "default"}) or 0.0
    retry([0.0], name="default", observe=instrument.prometheus())(Operation([]))()
    retry([0.0], name="default", observe=instrument.prometheus())(Operation([]))()
    assert REGISTRY.get_sample_value("backoff_iter_attempts_total", {"name": "default"}) == (
        before + 2.0
    )


def test_a_registry_holding_one_of_the_names_gets_none_of_the_collectors():
    """A foreign backoff_iter_give_ups in the registry: ValueError, and nothing half-registered."""
    registry = CollectorRegistry()
    Counter("backoff_iter_give_ups", "someone else's", registry=registry)
    with pytest.raises(ValueError, match="Duplicated"):
        instrument.prometheus(registry)
    Counter("backoff_iter_attempts", "free again", registry=registry)  # would fail if left


def test_an_httpx_transport_reports_a_retried_response_as_a_result():
    """RetryTransport against a local server answering 503 twice: error_type "result", one span."""
    statuses = [503, 503, 200]

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(statuses.pop(0))
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    prometheus, otel = Prometheus(), OpenTelemetry()
    try:
        transport = RetryTransport(
            delays=[0.25, 0.5, 1.0],
            name="stock-api",
            observe=[prometheus.hook, otel.hook],
            sleep=lambda s: None,
        )
        with httpx.Client(transport=transport) as client:
            assert client.get(f"http://127.0.0.1:{server.server_address[1]}/").status_code == 200
    finally:
        server.shutdown()
        server.server_close()
    for backend in (prometheus, otel):
        assert backend.series("attempts") == {labels(name="stock-api"): 3}
        assert backend.series("retries") == {labels(name="stock-api", error_type="result"): 2}
        assert backend.series("sleep") == {labels(name="stock-api"): (0.75, 2)}
    [span] = otel.spans()
    assert span.name == "stock-api" and [e.name for e in span.events] == ["retry", "retry"]


# -- what an event costs ------------------------------------------------------------------------


def a_give_up_and_a_success(backend, name="fetch"):
    """Two calls of *name*: retried on OSError and TimeoutError, given up (exhausted); then
    a success at once."""
    for outcomes in ([OSError(), TimeoutError(), OSError()], []):
        call = retry([0.0, 0.0], name=name, observe=backend.hook, sleep=lambda s: None)
        with contextlib.suppress(OSError):
            call(Operation(outcomes))()


def test_prometheus_asks_for_each_series_once_then_counts_into_it_bound(monkeypatch):
    """labels() (a lock taken, a key built) is asked for a series only the first time it is
    counted into: the same calls again ask for none, and count the same again."""
    import prometheus_client

    backend = Prometheus()
    asked = []
    labels_of = prometheus_client.metrics.MetricWrapperBase.labels

    def asking(self, *values, **named):
        asked.append((self._name, values))
        return labels_of(self, *values, **named)

    monkeypatch.setattr(prometheus_client.metrics.MetricWrapperBase, "labels", asking)
    a_give_up_and_a_success(backend)
    assert set(asked) == {
        ("backoff_iter_attempts", ("fetch",)),
        ("backoff_iter_retries", ("fetch", "OSError")),
        ("backoff_iter_retries", ("fetch", "TimeoutError")),
        ("backoff_iter_sleep_seconds", ("fetch",)),
        ("backoff_iter_give_ups", ("fetch", "exhausted")),
    }
    asked.clear()
    a_give_up_and_a_success(backend)
    assert asked == []
    assert backend.series("attempts") == {labels(name="fetch"): 8}
    assert backend.series("retries") == {
        labels(name="fetch", error_type="OSError"): 2,
        labels(name="fetch", error_type="TimeoutError"): 2,
    }
    assert backend.series("give_ups") == {labels(name="fetch", reason="exhausted"): 2}
    assert backend.series("sleep") == {labels(name="fetch"): (0.0, 4)}


class Recording:
    """An OpenTelemetry instrument that notes the attributes of each measurement it passes on."""

    def __init__(self, instrument):
        self.instrument = instrument
        self.given = []

    def add(self, amount, attributes=None):
        self.given.append(attributes)
        self.instrument.add(amount, attributes)

    def record(self, amount, attributes=None):
        self.given.append(attributes)
        self.instrument.record(amount, attributes)


def recording(backend):
    """*backend*'s hook with each of its four instruments Recording."""
    hook = backend.hook
    for metric in ("attempts", "retries", "give_ups", "sleep"):
        setattr(hook, metric, Recording(getattr(hook, metric)))
    return hook


def test_opentelemetry_makes_each_series_attributes_once(monkeypatch):
    """The attributes of a name's series are made once and handed over again, not built per
    event; names beyond the most kept (1024; 2 here) are counted alike, their attributes made
    afresh: names made per call (a URL in each) do not grow the hook without end."""
    from backoff_iter.instrument import _opentelemetry

    monkeypatch.setattr(_opentelemetry, "_NAMES_MAX", 2)
    backend = OpenTelemetry()
    hook = recording(backend)
    for name in ("one", "two", "three", "one", "two", "three"):
        a_give_up_and_a_success(backend, name)
    names = ("one", "two", "three")
    assert backend.series("attempts") == {labels(name=name): 8 for name in names}
    assert backend.series("give_ups") == {
        labels(name=name, reason="exhausted"): 2 for name in names
    }
    for name in names:
        for metric in ("attempts", "retries", "give_ups", "sleep"):
            given = [a for a in getattr(hook, metric).given if a["name"] == name]
            assert len(given) == {"attempts": 8, "retries": 4, "give_ups": 2, "sleep": 4}[metric]
            distinct = {id(attributes) for attributes in given}
            made = {"retries": 2}.get(metric, 1)  # one per error type
            assert len(distinct) == (made if name != "three" else len(given))


# -- spans ---------------------------------------------------------------------------------------


def traced(outcomes, delays, **options):
    """Run one @retry call named "fetch" whose attempts each take 2 s of its clock; the
    OpenTelemetry backend, the operation, and the wall time in ns after the call."""
    backend = OpenTelemetry()
    time_ = FakeTime()
    operation = Operation(outcomes, time_, 2.0)
    decorated = retry(
        delays, name="fetch", observe=backend.hook, sleep=time_.sleep, clock=time_.clock, **options
    )(operation)
    with contextlib.suppress(Exception):
        decorated()
    return backend, operation, time.time_ns()


def test_a_call_is_one_span_from_its_first_attempt_with_an_event_per_retry():
    """One span "fetch": begun 2 s (the first attempt) before the first event, a "retry"
    event per retry with its attempt, delay and exception type, ended after the last attempt."""
    backend, operation, after = traced([OSError(), TimeoutError()], [0.5, 1.5, 3.0])
    [span] = backend.spans()
    assert span.name == "fetch"
    assert [(e.name, dict(e.attributes)) for e in span.events] == [
        ("retry", {"retry.attempt": 1, "retry.delay": 0.5, "exception.type": "OSError"}),
        ("retry", {"retry.attempt": 2, "retry.delay": 1.5, "exception.type": "TimeoutError"}),
    ]
    # Backdated by the first event's elapsed time (2 s): between the first attempt's end
    # and the end of the call, less 2 s.
    first_end = operation.ends[0]
    assert first_end - 2_000_000_000 <= span.start_time <= after - 2_000_000_000
    assert span.start_time < first_end
    assert operation.ends[-1] <= span.end_time <= after
    assert span.status.status_code == StatusCode.UNSET
    assert span.attributes["retry.attempts"] == 3


def test_a_span_that_gives_up_ends_in_error_with_the_reason():
    """Exhausted: status ERROR "gave up (exhausted): OSError", and the exception recorded."""
    backend, _, _ = traced([OSError("down")] * 3, [0.5])
    [span] = backend.spans()
    assert span.status.status_code == StatusCode.ERROR
    assert span.status.description == "gave up (exhausted): OSError"
    assert [e.name for e in span.events] == ["retry", "exception"]
    assert span.events[-1].attributes["exception.type"] == "OSError"
    backend, _, _ = traced([OSError("down")] * 3, lambda: constant(5.0), deadline=1.0)
    [span] = backend.spans()
    assert span.status.description == "gave up (deadline): OSError"


def test_a_call_that_never_retries_is_one_span_too():
    """A success at once, and an error not retried (status ERROR, its type), are one span each."""
    backend, operation, after = traced([], [0.5])
    [span] = backend.spans()
    assert span.events == () and span.status.status_code == StatusCode.UNSET
    assert operation.ends[0] - 2_000_000_000 <= span.start_time <= after - 2_000_000_000
    backend, _, _ = traced([KeyError("k")], [0.5], on=OSError)
    [span] = backend.spans()
    assert span.status.status_code == StatusCode.ERROR
    assert span.status.description == "KeyError"


def test_a_clock_that_leaps_beyond_nanoseconds_backdates_the_span_to_the_epoch():
    """A policy's clock leaping 1e300 s (a steady reading: up to 2**1000 is taken) put the
    span's start inf ns back: the hook's OverflowError ended the call in place of its own
    error.  Now the span begins at the epoch, as any start before it does."""
    backend = OpenTelemetry()
    readings = iter([0.0] + [1e300] * 9)
    with pytest.raises(OSError):
        retry(
            [0.0],
            on=OSError,
            name="leap",
            observe=backend.hook,
            clock=lambda: next(readings),
            sleep=lambda s: None,
        )(Operation([OSError()] * 2))()
    [span] = backend.spans()
    assert span.start_time == 0 and span.status.description == "gave up (exhausted): OSError"


def test_the_span_is_a_child_of_the_span_current_at_the_call():
    """The call's span has the caller's current span as parent, in the same trace."""
    backend = OpenTelemetry()
    tracer = backend.tracers.get_tracer("test")
    with tracer.start_as_current_span("request") as parent:
        retry([0.0], name="fetch", observe=backend.hook, sleep=lambda s: None)(
            Operation([OSError()])
        )()
    fetch, request = backend.spans()
    assert (fetch.name, request.name) == ("fetch", "request")
    assert fetch.parent.span_id == parent.get_span_context().span_id
    assert fetch.context.trace_id == request.context.trace_id


def test_an_urllib3_request_that_recovers_leaves_no_span_open():
    """Urllib3Retry tells no success: a request that retried and recovered left its span
    open (until 4096 other calls pushed it out as abandoned); now it opens none, its
    retries still counted, and a request that gives up is one span, ended in ERROR."""
    import requests
    from test_interop import BUSY, Script, session

    from backoff_iter.testing import no_sleep

    class Open(SpanProcessor):
        """The spans begun and not (yet) ended."""

        def __init__(self):
            self.spans = set()

        def on_start(self, span, parent_context=None):
            self.spans.add(span.context.span_id)

        def on_end(self, span):
            self.spans.discard(span.context.span_id)

    backend, still_open = OpenTelemetry(), Open()
    backend.tracers.add_span_processor(still_open)
    with Script([BUSY, BUSY]) as script, no_sleep():
        response = session(
            delays=[0.25, 0.5], total=3, status_forcelist=[503], name="api", observe=backend.hook
        ).get(script.url)
    assert response.status_code == 200
    assert backend.series("retries") == {labels(name="api", error_type="result"): 2}
    assert still_open.spans == set() and backend.spans() == ()
    with Script([BUSY] * 3) as script, no_sleep(), pytest.raises(requests.exceptions.RetryError):
        session(delays=[0.1] * 3, total=1, status_forcelist=[503], observe=backend.hook).get(
            script.url
        )
    [span] = backend.spans()
    assert still_open.spans == set()
    assert (span.name, span.status.description) == ("call", "gave up (exhausted): result")


def test_calls_left_open_are_ended_oldest_first_beyond_a_bound():
    """Loops left by break after a retry never end; beyond 4096 open, the oldest end as abandoned."""
    backend = OpenTelemetry()
    extra = 10
    for number in range(4096 + extra):
        for attempt in retrying(
            [0.0], name=f"left{number}", observe=backend.hook, sleep=lambda s: None
        ):
            with attempt:
                raise OSError
            break
    spans = backend.spans()
    assert [span.name for span in spans] == [f"left{n}" for n in range(extra)]
    assert all(span.attributes["retry.abandoned"] is True for span in spans)
    # A call that retries and ends makes room for itself (left10 goes), then ends its own span.
    retry([0.0], name="done", observe=backend.hook, sleep=lambda s: None)(Operation([OSError()]))()
    spans = backend.spans()
    assert [span.name for span in spans[extra:]] == [f"left{extra}", "done"]
    assert "retry.abandoned" not in spans[-1].attributes


@pytest.mark.long_run
def test_calls_that_ended_take_no_room_from_a_call_left_open():
    """A loop left open after a retry, then 4,100 calls that retry and end: the open one is
    not pushed out as abandoned (an ended call's span is no longer among the open ones)."""
    backend = OpenTelemetry()
    for attempt in retrying([0.0], name="left", observe=backend.hook, sleep=lambda s: None):
        with attempt:
            raise OSError
        break
    done = retry([0.0], name="done", observe=backend.hook, sleep=lambda s: None)
    for _ in range(4100):
        done(Operation([OSError()]))()
    spans = backend.spans()
    assert len(spans) == 4100
    assert {span.name for span in spans} == {"done"}
    assert not any("retry.abandoned" in span.attributes for span in spans)


@pytest.mark.long_run
def test_threads_leaving_calls_open_end_exactly_those_beyond_the_bound(
    switching_often, monkeypatch
):
    """8 threads leave 600 calls each open, beyond a bound of 16: all but 16 end, each once."""
    from backoff_iter.instrument import _opentelemetry

    monkeypatch.setattr(_opentelemetry, "_OPEN_SPANS_MAX", 16)  # every call past it ends one
    backend = OpenTelemetry()
    barrier = threading.Barrier(8)
    errors = []

    def work(thread):
        barrier.wait()
        try:
            for _ in range(600):
                policy = retrying(
                    [0.0], name=f"t{thread}", observe=backend.hook, sleep=lambda s: None
                )
                for attempt in policy:
                    with attempt:
                        raise OSError
                    break
        except Exception as error:  # a hook that raised
            errors.append(error)

    in_threads(work, numbered=True)
    assert errors == []
    spans = backend.spans()
    assert len(spans) == 8 * 600 - 16
    assert len({span.context.span_id for span in spans}) == len(spans)
    assert all(span.attributes["retry.abandoned"] is True for span in spans)


def test_the_meter_and_tracer_carry_the_version_of_the_code_that_runs(monkeypatch):
    """The instrumentation scope's version is backoff_iter.__version__ (_version.py, as
    the command line says it): from a source folder never installed it was "unknown", and
    the installed distribution's when another version was on the path."""
    import importlib.metadata

    import backoff_iter

    def not_installed(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", not_installed)
    backend = OpenTelemetry()
    retry([0.0], name="fetch", observe=backend.hook, sleep=lambda s: None)(Operation([OSError()]))()
    [span] = backend.spans()
    assert span.instrumentation_scope.version == backoff_iter.__version__
    assert backend.metric("attempts") is not None
    # (the SDK may add a scope of its own: its reader's collection times, in 1.41)
    scopes = backend.reader.get_metrics_data().resource_metrics[0].scope_metrics
    [scope] = [scope for scope in scopes if scope.scope.name == "backoff_iter"]
    assert scope.scope.version == backoff_iter.__version__


def test_the_global_providers_serve_when_none_are_given(monkeypatch):
    """opentelemetry() with no provider asks the global ones, at the time it is called."""
    asked = []
    local = OpenTelemetry()
    monkeypatch.setattr(
        "opentelemetry.metrics.get_meter_provider", lambda: asked.append("m") or local.meters
    )
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: asked.append("t") or local.tracers)
    hook = instrument.opentelemetry()
    assert asked == ["m", "t"]
    retry([0.0], name="global", observe=hook)(Operation([]))()
    assert local.series("attempts") == {labels(name="global"): 1}
    assert [span.name for span in local.spans()] == ["global"]


# -- optional, and cheap to import ---------------------------------------------------------------


def test_importing_backoff_iter_imports_neither_library():
    """`import backoff_iter` (and its instrument module) leaves both out of sys.modules."""
    code = (
        "import sys, backoff_iter, backoff_iter.instrument; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in"
        " ('prometheus_client', 'opentelemetry')))"
    )
    assert fresh_python(code) == "[]"


@pytest.mark.parametrize(
    ("make", "module", "package", "extra"),
    [
        (instrument.prometheus, "prometheus_client", "prometheus-client", "prometheus"),
        (instrument.opentelemetry, "opentelemetry", "opentelemetry-api", "otel"),
    ],
)
def test_without_the_library_the_error_says_what_to_install(
    monkeypatch, make, module, package, extra
):
    """The library missing: ModuleNotFoundError naming the package to install and its extra."""
    monkeypatch.setitem(sys.modules, module, None)
    expected = rf"pip install {package} \(in backoff_iter's '{extra}' extra\)"
    with pytest.raises(ModuleNotFoundError, match=expected):
        make()


def test_a_module_missing_that_is_not_the_library_is_its_own_error():
    """The library installed but a module it needs missing (a broken install): that
    ImportError as it is, not the hint to install the library."""
    from backoff_iter._extras import missing

    error = ModuleNotFoundError("No module named 'wrapt'", name="wrapt")
    with pytest.raises(ModuleNotFoundError) as raised:
        try:
            raise error
        except ImportError as caught:
            missing("opentelemetry()", "opentelemetry-api", "otel", caught, "opentelemetry")
    assert raised.value is error


def test_bad_providers_and_registries_are_rejected_by_name():
    """Something that is not a registry or a provider: TypeError naming the parameter; so is
    the class where an instance was meant (it raised prometheus-client's TypeError of a
    missing argument, and an AttributeError of the SDK's, naming nothing)."""
    rejects(lambda: instrument.prometheus(3), TypeError, "registry", "3")
    rejects(lambda: instrument.opentelemetry("meters"), TypeError, "meter_provider", "'meters'")
    rejects(lambda: instrument.opentelemetry(tracer_provider=5), TypeError, "tracer_provider", "5")
    rejects(lambda: instrument.prometheus(CollectorRegistry), TypeError, "registry", "class")
    rejects(lambda: instrument.opentelemetry(MeterProvider), TypeError, "meter_provider", "class")
    rejects(
        lambda: instrument.opentelemetry(tracer_provider=TracerProvider),
        TypeError,
        "tracer_provider",
        "class",
    )


@pytest.mark.long_run
def test_the_cost_benchmark_measures_every_contender_and_hook():
    """benchmarks/instrument.py: a row per contender and per hook, each a finite time (none asserted)."""
    from pathlib import Path

    benchmarks = str(Path(__file__).resolve().parent.parent / "benchmarks")
    sys.path.insert(0, benchmarks)
    try:
        import instrument as bench
    finally:
        sys.path.remove(benchmarks)
    before = instrument.enabled()
    costs = {name: (success, retry) for name, success, retry in bench.costs(20, 1)}
    assert list(costs) == [
        bench.BARE,
        bench.NO_HOOK,
        bench.NO_OP,
        bench.ENABLED,
        "@retry, prometheus hook",
        "@retry, opentelemetry hook",
    ]
    assert all(success > 0 for success, _ in costs.values())
    assert all(retry == retry for name, (_, retry) in costs.items() if name != bench.BARE)
    assert [name for name, _, _ in bench.hook_costs(20, 1)] == [
        "no-op hook",
        "prometheus hook",
        "opentelemetry hook",
    ]
    assert instrument.enabled() == before  # the enabled row gave its hook back


class SlowToAsk:
    """A hook whose ``events`` takes a few hundred bytecodes to read: enable()'s window is wide."""

    def __init__(self, events):
        self._events = events

    def __call__(self, event):
        pass

    @property
    def events(self):
        for _ in range(100):  # every turn of the loop is a chance to switch threads
            pass
        return self._events


def test_threads_enabling_hooks_at_once_lose_none(no_process_hooks, switching_often):
    """8 threads enable 200 batches of 4 hooks each at once (half for failures only): all are kept."""
    batches = [
        [[SlowToAsk({"retry"} if i % 2 else None) for i in range(4)] for _ in range(200)]
        for _ in range(8)
    ]
    barrier = threading.Barrier(8)

    def work(thread):
        barrier.wait()
        for batch in batches[thread]:
            instrument.enable(*batch)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    kept = instrument.enabled()
    assert len(kept) == 8 * 200 * 4
    assert set(kept) == {hook for thread in batches for batch in thread for hook in batch}


@pytest.mark.parametrize("meanwhile", ["reset", "enable_my_logger"])
def test_a_reset_in_one_thread_beside_another_leaves_one_logger(
    meanwhile, no_process_hooks, monkeypatch
):
    """A thread resets while another resets too, or enables a RetryLogger of its own:
    one logger is left, as if one had gone first (the reset's log was enabled beside the
    other, and each retry logged twice, for good)."""
    import logging

    from backoff_iter.instrument.logs import RetryLogger

    making = threading.Event()  # the thread's reset is making its logger
    done = threading.Event()  # ... and the main thread has done its part meanwhile
    make = RetryLogger.__init__

    def slow_to_make(self, *args, **kwargs):
        if threading.current_thread() is not threading.main_thread():
            making.set()
            done.wait(5.0)
        make(self, *args, **kwargs)

    monkeypatch.setattr(RetryLogger, "__init__", slow_to_make)
    worker = threading.Thread(target=instrument.reset)
    worker.start()
    try:
        assert making.wait(5.0)
        if meanwhile == "reset":
            instrument.reset()
        else:
            instrument.enable(instrument.log_retries(logging.getLogger("mine")))
    finally:
        done.set()
        worker.join()
    loggers = [hook for hook in instrument.enabled() if isinstance(hook, RetryLogger)]
    assert len(loggers) == 1
    assert instrument.enabled() == tuple(loggers)


@pytest.mark.parametrize("observe", ["", b"", "hook"])
def test_a_string_is_no_list_of_hooks(observe):
    """observe="" (or any str or bytes) is refused when the policy is made, naming observe:
    iterated, an empty string would silently be no hook at all."""
    rejects(lambda: retrying([0.0], observe=observe), TypeError, "observe", "a list of hooks")


@pytest.mark.parametrize(
    "factory, written",
    [
        (lambda: instrument.log_retries, "log_retries"),
        (lambda: instrument.prometheus, "instrument.prometheus"),
        (lambda: instrument.opentelemetry, "instrument.opentelemetry"),
    ],
)
def test_a_hook_factory_given_uncalled_is_refused_when_the_policy_is_made(factory, written):
    """observe=log_retries (or instrument.prometheus, instrument.opentelemetry) without
    its call is refused at once, saying the call was meant: taken as a hook it was
    called with the first event and failed every call that retried, and enabled, every
    retrying call of the process."""
    meant = f"{written}() was probably meant"
    rejects(lambda: retrying([0.0], observe=factory()), TypeError, "observe", written, meant)
    rejects(lambda: retry([0.0], observe=[print, factory()]), TypeError, "observe", meant)
    rejects(lambda: RetryTransport(observe=factory()), TypeError, "observe", meant)
    before = instrument.enabled()
    rejects(lambda: instrument.enable(factory()), TypeError, "new", meant)
    assert instrument.enabled() == before  # nothing enabled


def test_a_hook_class_given_for_its_instance_is_refused_when_the_policy_is_made():
    """observe=RetryLogger (the class, its instances the hooks) was taken: at the
    first event the class was called with it, as its logger, and every retried call
    ended with that error; enabled, every retrying call of the process.  A class
    whose own call is the hook's work (made with the event) is still taken."""
    from backoff_iter.instrument import RetryLogger

    class Counting(RetryLogger):
        pass

    meant = "RetryLogger(...) was probably meant"
    rejects(lambda: retrying([0.0], observe=RetryLogger), TypeError, "observe", meant)
    rejects(lambda: retry([0.0], observe=[print, Counting]), TypeError, "observe", "Counting")
    before = instrument.enabled()
    rejects(lambda: instrument.enable(RetryLogger), TypeError, "new", meant)
    assert instrument.enabled() == before  # nothing enabled
    made = []

    class Record:
        def __init__(self, event):
            made.append(event.kind)

    retry([0.0], on=OSError, sleep=lambda s: None, observe=Record)(lambda: None)()
    assert made == ["success"]


def test_opentelemetry_records_a_give_up_whose_message_raises_by_its_type():
    """The SDK's record_exception reads str(failure): for one whose __str__ raises, the
    hook records an "exception" event of its type, and the call ends with its own
    failure (the SDK's AttributeError ended it)."""
    from test_logs_and_testing import Unprintable

    backend = OpenTelemetry()

    @retry([0.0], on=ConnectionError, sleep=lambda s: None, observe=backend.hook, name="fetch")
    def fetch():
        raise Unprintable()

    with pytest.raises(Unprintable):
        fetch()
    (span,) = backend.spans()
    assert [(e.name, dict(e.attributes)) for e in span.events][-1] == (
        "exception",
        {"exception.type": "Unprintable"},
    )
    assert span.status.description == "gave up (exhausted): Unprintable"


# -- an attempt that never ran ---------------------------------------------------------------------


@each_backend
@each_driver
def test_an_attempt_a_part_refused_is_no_attempt(backend, run):
    """A part (an open breaker) refuses attempt 2 after a retry: it never ran, yet the
    backends counted it as an attempt, so attempts_total kept rising while a circuit was
    open; the error event now says so (reason "refused") and counts none."""
    from test_logs_and_testing import RefusingAfterTheFirst

    backend = backend()
    seen = []
    error = outcome_of(
        run,
        backend,
        [ConnectionError("reset")],
        [0.5, 0.5],
        on=ConnectionError,
        parts=[RefusingAfterTheFirst()],
        observe=[backend.hook, seen.append],
    )
    assert isinstance(error, PermissionError)
    assert [(e.kind, e.number, e.reason) for e in seen] == [
        ("retry", 1, None),
        ("error", 2, "refused"),
    ]
    assert backend.series("attempts") == {labels(name="fetch"): 1}
    assert backend.series("retries") == {labels(name="fetch", error_type="ConnectionError"): 1}
    if backend.name == "opentelemetry":
        (span,) = backend.spans()
        assert span.attributes["retry.attempts"] == 1
        assert span.status.status_code == StatusCode.ERROR


@each_backend
@pytest.mark.parametrize("run", [run_decorator, run_loop], ids=["retry", "retrying"])
def test_a_first_attempt_refused_counts_no_attempt(backend, run):
    """A breaker open from the start refuses the first attempt (the decorator's bare
    first try, or the loop's): no attempt is counted, and its span says none was made."""
    from test_logs_and_testing import RefusingAfterTheFirst

    class Open(RefusingAfterTheFirst):
        def before_attempt(self, call):
            raise PermissionError("the circuit is open")

    backend = backend()
    seen = []
    error = outcome_of(run, backend, [], [0.5], parts=[Open()], observe=[backend.hook, seen.append])
    assert isinstance(error, PermissionError)
    assert [(e.kind, e.number, e.reason) for e in seen] == [("error", 1, "refused")]
    assert backend.series("attempts") == {}
    if backend.name == "opentelemetry":
        (span,) = backend.spans()
        assert span.attributes["retry.attempts"] == 0


@each_backend
@pytest.mark.parametrize("where", ["before_sleep", "sleep"])
@pytest.mark.parametrize("form", ["sync", "async"])
def test_a_retry_cut_short_counts_the_attempt_that_ran_once(backend, where, form):
    """A before_sleep hook raising ends the call before its retry is told: the error
    event is of attempt 1, which failed; a sleep raising ends it after: attempt 2 never
    ran ("interrupted").  Either way one attempt is counted - it was attempt 2, never
    run, that the error event named and counted."""
    backend = backend()
    seen = []

    def broken(*args):
        raise RuntimeError("broke")

    async def asleep(seconds):
        pass

    options = {"before_sleep": broken, "sleep": (lambda s: None) if form == "sync" else asleep}
    if where == "sleep":
        options = {"sleep": broken}
    options.update(name="fetch", on=ConnectionError, observe=[backend.hook, seen.append])

    async def aloop():
        async for attempt in aretrying([0.5], **options):
            async with attempt:
                raise ConnectionError("reset")

    with pytest.raises(RuntimeError):
        if form == "async":
            asyncio.run(aloop())
        for attempt in retrying([0.5], **options):
            with attempt:
                raise ConnectionError("reset")
    expected = {
        "before_sleep": [("error", 1, None)],
        "sleep": [("retry", 1, None), ("error", 2, "interrupted")],
    }[where]
    assert [(e.kind, e.number, e.reason) for e in seen] == expected
    assert backend.series("attempts") == {labels(name="fetch"): 1}


class Unbound:
    """A result like an unbound werkzeug LocalProxy: its __class__ raises (isinstance asks it)."""

    @property
    def __class__(self):
        raise RuntimeError("working outside of request context")

    def __repr__(self):
        return "<LocalProxy unbound>"


class Nameless(type):
    """A metaclass whose classes' __name__ raises."""

    @property
    def __name__(cls):
        raise RuntimeError("no name")


class NamelessError(ConnectionError, metaclass=Nameless):
    """An error whose class' name cannot be read through the class, nor its message."""

    def __str__(self):
        raise ValueError("no message")


@pytest.mark.parametrize("hook", ["prometheus", "opentelemetry", "log"])
def test_a_result_or_error_whose_type_cannot_be_asked_does_not_crash_a_hook(caplog, hook):
    """A retried result whose __class__ raises (an unbound LocalProxy), and an error whose
    class' __name__ (and __str__) raises: error_type() ran outside the guard against a failing __str__,
    so the hook's RuntimeError ended the call.  The result is a "result"; the error is
    named by its type's own name."""
    caplog.set_level(logging.DEBUG, logger="backoff_iter")
    backend = {"prometheus": Prometheus, "opentelemetry": OpenTelemetry}.get(hook)
    observe = instrument.log_retries() if backend is None else (backend := backend()).hook
    replies = iter([Unbound(), NamelessError("reset"), Unbound()])

    @retry(
        [0.0, 0.0],
        on=ConnectionError,
        on_result=lambda result: result is not None,
        name="fetch",
        observe=observe,
        sleep=lambda s: None,
    )
    def fetch():
        reply = next(replies)
        if type(reply) is NamelessError:
            raise reply
        return reply

    assert fetch().__repr__() == "<LocalProxy unbound>"  # given up: the last result stands
    if backend is None:
        assert [r.getMessage() for r in caplog.records] == [
            "fetch: attempt 1 failed (result: <LocalProxy unbound>); retrying in 0.00 s",
            "fetch: attempt 2 failed (NamelessError: <unprintable NamelessError: its message"
            " raised ValueError>); retrying in 0.00 s",
            "fetch: attempt 3 failed (result: <LocalProxy unbound>); giving up (exhausted)",
        ]
    else:
        assert backend.series("retries") == {
            labels(name="fetch", error_type="result"): 1,
            labels(name="fetch", error_type="NamelessError"): 1,
        }
        assert backend.series("give_ups") == {labels(name="fetch", reason="exhausted"): 1}


def test_a_hedged_attempt_that_fails_with_no_hedge_left_is_no_retry(caplog):
    """Hedge 2 is out and none is left when attempt 1 fails: nothing is sent for it (the
    call waits for attempt 2), yet its event said a retry in 0.0 s - the log "retrying in
    0.00 s", a retry and a sleep of 0 counted.  Its delay is now None: the log says it
    waits, the backends count the attempt and no retry, no sleep."""
    from backoff_iter import hedged

    caplog.set_level(logging.DEBUG, logger="backoff_iter")
    prometheus, otel, seen = Prometheus(), OpenTelemetry(), []

    async def main():
        hedge_out, first_failed = asyncio.Event(), asyncio.Event()
        started = []

        async def fetch():
            started.append(len(started) + 1)
            if len(started) == 1:
                await hedge_out.wait()
                first_failed.set()
                raise ConnectionError("one")
            hedge_out.set()
            await first_failed.wait()  # fails after attempt 1 (in its pass or the next)
            raise ConnectionError("two")

        observe = [prometheus.hook, otel.hook, seen.append]
        return await hedged(fetch, [0.0], on=ConnectionError, name="fetch", observe=observe)

    with pytest.raises(ConnectionError):
        asyncio.run(asyncio.wait_for(main(), 10))
    assert [(e.kind, e.number, e.delay) for e in seen] == [
        ("hedge", 2, seen[0].delay),
        ("retry", 1, None),
        ("give_up", 2, None),
    ]
    assert [r.getMessage() for r in caplog.records] == [
        "fetch: attempt 1 failed (ConnectionError: one); waiting for an attempt still running",
        "fetch: attempt 2 failed (ConnectionError: two); giving up (exhausted)",
    ]
    for backend in (prometheus, otel):
        assert backend.series("attempts") == {labels(name="fetch"): 2}
        assert backend.series("retries") == backend.series("sleep") == {}
    (span,) = otel.spans()
    assert [(e.name, dict(e.attributes)) for e in span.events][:2] == [
        ("hedge", {"retry.attempt": 2}),
        ("retry", {"retry.attempt": 1, "exception.type": "ConnectionError"}),
    ]


@each_backend
@pytest.mark.parametrize("retried", [False, True])
def test_a_stream_its_consumer_closes_early_counts_its_attempts_and_ends_its_span(backend, retried):
    """A stream read until the consumer had enough (a ``break``): every attempt that ran is
    counted, and the call is one finished span with no error - the span a retry opened was
    left open, and the attempt that delivered was never counted."""
    backend = backend()
    made = []

    @retry([0.0], on=OSError, observe=backend.hook, sleep=lambda s: None, name="lines")
    def lines():
        made.append(1)
        if retried and len(made) == 1:
            raise OSError("refused")
        yield from range(10)

    for line in lines():
        if line == 3:
            break
    assert backend.series("attempts") == {labels(name="lines"): 1 + retried}
    if isinstance(backend, OpenTelemetry):
        [span] = backend.spans()
        assert span.name == "lines" and span.attributes["retry.attempts"] == 1 + retried
        assert span.status.status_code == StatusCode.UNSET
        assert [event.name for event in span.events] == ["retry"] * retried
        assert backend.hook._open == {}


def closed_after_its_first_item(stream, hook):
    """With *hook* enabled for the process: the decorated *stream*'s first item read, then
    the stream closed."""
    instrument.enable(hook)
    try:
        items = stream()
        assert next(items) == 0
        items.close()
    finally:
        instrument.reset()


def test_a_closed_stream_is_no_line_of_the_retry_log(caplog):
    """The default log hears retries and give-ups: a stream closed after a retry adds no
    line to the retry's (it is no failure), while a process-wide hook of every event hears
    it closed."""
    caplog.set_level(logging.DEBUG, logger="backoff_iter")
    heard, made = [], []

    @retry([0.0], on=OSError, sleep=lambda s: None, name="lines")
    def lines():
        made.append(1)
        if len(made) == 1:
            raise OSError("refused")
        yield from range(10)

    closed_after_its_first_item(lines, heard.append)
    assert [event.kind for event in heard] == ["retry", "closed"]
    assert [record.getMessage() for record in caplog.records] == [
        "lines: attempt 1 failed (OSError: refused); retrying in 0.00 s"
    ]


def test_a_hook_enabled_for_closed_streams_alone_hears_them():
    """A process-wide hook whose events are {"closed"} hears a stream closed early (it was
    taken for one of retries and give-ups only, which no stream's close reaches)."""

    class Closed:
        events = frozenset({"closed"})

        def __init__(self):
            self.heard = []

        def __call__(self, event):
            self.heard.append(event.kind)

    hook = Closed()

    @retry([0.0], on=OSError, sleep=lambda s: None)
    def lines():
        yield from range(10)

    closed_after_its_first_item(lines, hook)
    assert hook.heard == ["closed"]
