"""What seeing retries costs: ``@retry`` with no hook, a no-op hook, and the
Prometheus and OpenTelemetry hooks, per successful call and per retry, in one
process; and each hook's own cost on events made in advance.

Sleeping is a no-op (``sleep=``).  The contenders are timed in turn within
each repeat, so that a noisy neighbour slows them all alike, and the best of
the repeats counts.  The OpenTelemetry hook runs on the SDK: a MeterProvider
with an in-memory reader (never collected while timing) and a TracerProvider
with no span processor (spans are made, ended and dropped: an exporter's own
cost is not ours).
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable
from itertools import islice
from typing import Any

from drivers import RETRIES, Flaky

import backoff_iter
from backoff_iter import instrument
from backoff_iter.instrument import RetryEvent

BARE = "bare call (no retry)"
NO_HOOK = "@retry, no hook"
NO_OP = "@retry, no-op hook (observe=)"
ENABLED = "@retry, no-op hook (enable())"


def _no_sleep(seconds: float) -> None:
    pass


def _no_op(event: RetryEvent) -> None:
    pass


def _factory() -> Any:
    return islice(backoff_iter.constant(0.0), RETRIES)


def hooks() -> dict[str, Callable[[RetryEvent], object]]:
    """The hooks measured, by name; a library that is not installed is left out."""
    made: dict[str, Callable[[RetryEvent], object]] = {"no-op hook": _no_op}
    try:
        from prometheus_client import CollectorRegistry
    except ImportError:
        pass
    else:
        made["prometheus hook"] = instrument.prometheus(CollectorRegistry())
    try:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider
    except ImportError:
        pass
    else:
        meters = MeterProvider(metric_readers=[InMemoryMetricReader()])
        made["opentelemetry hook"] = instrument.opentelemetry(meters, TracerProvider())
    return made


def _best_of(runs: dict[str, Callable[[], object]], units: int, repeats: int) -> dict[str, float]:
    """ns per unit of each run, the best of *repeats* rounds that time every run in turn."""
    best = dict.fromkeys(runs, float("inf"))
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeats):
            for name, run in runs.items():
                start = time.perf_counter_ns()
                run()
                best[name] = min(best[name], time.perf_counter_ns() - start)
            gc.collect()  # the spans and events of this round, freed between rounds
    finally:
        if enabled:
            gc.enable()
    return {name: ns / units for name, ns in best.items()}


def _calls(name: str, call: Callable[[], object], n: int) -> Callable[[], object]:
    """*n* calls of *call*; for the ENABLED row, with the no-op hook given to every driver."""

    def run() -> None:
        for _ in range(n):
            call()

    def run_enabled() -> None:
        before = instrument.enabled()
        instrument.enable(_no_op)
        try:
            run()
        finally:
            instrument.disable()
            instrument.enable(*before)

    return run_enabled if name == ENABLED else run


def costs(calls: int, repeats: int) -> list[tuple[str, float, float]]:
    """(contender, ns per successful call, ns per retry) for the bare call and
    @retry without and with each hook (per retry: the extra time of a call
    that fails RETRIES times first, divided by RETRIES)."""
    made = hooks()

    def contenders(operation: Flaky) -> dict[str, Callable[[], object]]:
        decorate = lambda **options: backoff_iter.retry(
            _factory, on=OSError, sleep=_no_sleep, **options
        )(operation)
        found: dict[str, Callable[[], object]] = {
            BARE: operation,
            NO_HOOK: decorate(),
            NO_OP: decorate(observe=_no_op),
        }
        found[ENABLED] = decorate()  # timed with the no-op hook enabled: see _calls
        for name, hook in made.items():
            if name != "no-op hook":
                found[f"@retry, {name}"] = decorate(observe=hook)
        return found

    succeed = _best_of(
        {name: _calls(name, call, calls) for name, call in contenders(Flaky(0)).items()},
        calls,
        repeats,
    )
    n = max(1, calls // RETRIES)
    flaky = contenders(Flaky(RETRIES))
    del flaky[BARE]  # it has no retry
    retried = _best_of({name: _calls(name, call, n) for name, call in flaky.items()}, n, repeats)
    retried[BARE] = succeed[BARE] * (RETRIES + 1)  # no retry: nan below
    return [
        (name, success, math.nan if name == BARE else (retried[name] - success) / RETRIES)
        for name, success in succeed.items()
    ]


def hook_costs(calls: int, repeats: int) -> list[tuple[str, float, float]]:
    """(hook, ns per success event, ns per retry event) of each hook alone, on events
    made in advance: a call of one success, and one of RETRIES retries then a success."""
    error = OSError("flaky")
    retries = [
        RetryEvent("retry", "flaky", n, error, 0.0, 0.0, 0.001 * n, None, 1)
        for n in range(1, RETRIES + 1)
    ]
    retried = [*retries, RetryEvent("success", "flaky", RETRIES + 1, 1, None, 0.0, 0.02, None, 1)]
    success = [RetryEvent("success", "flaky", 1, 1, None, 0.0, 0.001, None, 2)]

    def run(
        hook: Callable[[RetryEvent], object], events: list[RetryEvent], n: int
    ) -> Callable[[], None]:
        def go() -> None:
            for _ in range(n):
                for event in events:
                    hook(event)

        return go

    made = hooks()
    n = max(1, calls // RETRIES)
    once = _best_of(
        {name: run(hook, success, calls) for name, hook in made.items()}, calls, repeats
    )
    whole = _best_of({name: run(hook, retried, n) for name, hook in made.items()}, n, repeats)
    return [(name, once[name], (whole[name] - once[name]) / RETRIES) for name in made]


__all__ = ["BARE", "ENABLED", "NO_HOOK", "NO_OP", "costs", "hook_costs", "hooks"]
