"""Retry-driver overhead: per successful call and per retry, against a bare
call, a hand-written try/except loop and every peer, in one process.

Sleeping is a no-op throughout: ``time.sleep`` is replaced while measuring,
so peers that sleep through it (tenacity, backoff, stamina, google-api-core)
and ours (given ``sleep=``) all pay only for their own logic.
"""

from __future__ import annotations

import math
import time
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from itertools import islice
from typing import Any, Callable

from timing import ainterleaved, arepeated, interleaved, repeated

import backoff_iter

RETRIES = 10  # failures before success, for the per-retry figure


class _NeverEmpty(backoff_iter.TokenBucket):
    """A TokenBucket that the benchmark's failures never drain, so every retry is
    allowed and the figures measure the budget's bookkeeping on each path."""

    def try_retry(self, outcome: object) -> bool:
        return True


class Flaky:
    """Fails `failures` times with OSError, then returns 1; then starts over."""

    __name__ = "flaky"  # backoff logs its target's name

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.left = failures

    def __call__(self) -> int:
        if self.left:
            self.left -= 1
            raise OSError("flaky")
        self.left = self.failures
        return 1


def _no_sleep(seconds: float) -> None:
    pass


@contextmanager
def _sleep_is_free() -> Iterator[None]:
    real = time.sleep
    time.sleep = _no_sleep
    try:
        yield
    finally:
        time.sleep = real


def _hand_written(operation: Callable[[], int]) -> Callable[[], int]:
    def call() -> int:
        for attempt in range(RETRIES + 1):
            try:
                return operation()
            except OSError:
                if attempt == RETRIES:
                    raise
                _no_sleep(0.0)
        raise AssertionError

    return call


def _delays_of(library: Any) -> Callable[[], Iterator[float]]:
    """The README pattern's delays, from *library*'s own strategy: built per
    call, only after a failure."""

    def delays() -> Iterator[float]:
        return islice(library.constant(0.0), RETRIES)

    return delays


_factory = _delays_of(backoff_iter)


def forms(library: Any, operation: Callable[[], int]) -> dict[str, Callable[[], int]]:
    """*operation* run by each sync form of *library* (``backoff_iter``, or an
    earlier copy of it: benchmarks/before_after.py), the README pattern's
    delays made per call from the library's own strategy."""
    delays = _delays_of(library)
    policy = library.retrying(delays, on=OSError, sleep=_no_sleep)

    def loop() -> int:
        for attempt in library.retrying(delays, on=OSError, sleep=_no_sleep):
            with attempt:
                return operation()
        raise AssertionError

    def reused_policy() -> int:
        for attempt in policy:
            with attempt:
                return operation()
        raise AssertionError

    return {
        "@retry": library.retry(delays, on=OSError, sleep=_no_sleep)(operation),
        "retrying() loop": loop,
        "module-level policy": reused_policy,
    }


def contenders(operation: Callable[[], int]) -> dict[str, Callable[[], int]]:
    """Each way of calling *operation* with up to RETRIES retries on OSError."""
    ours = forms(backoff_iter, operation)
    calls: dict[str, Callable[[], int]] = {
        "bare call (no retry)": operation,
        "hand-written try/except loop": _hand_written(operation),
        "backoff_iter @retry": ours["@retry"],
        "backoff_iter @retry, TokenBucket": backoff_iter.retry(
            _factory, on=OSError, sleep=_no_sleep, budget=_NeverEmpty()
        )(operation),
        "backoff_iter retrying() loop": ours["retrying() loop"],
        "backoff_iter module-level policy": ours["module-level policy"],
    }
    try:
        import backoff
    except ImportError:
        pass
    else:
        calls["backoff"] = backoff.on_exception(
            backoff.constant, OSError, max_tries=RETRIES + 1, interval=0, jitter=None
        )(operation)
    try:
        import tenacity
    except ImportError:
        pass
    else:
        calls["tenacity"] = tenacity.retry(
            retry=tenacity.retry_if_exception_type(OSError),
            stop=tenacity.stop_after_attempt(RETRIES + 1),
            wait=tenacity.wait_none(),
            reraise=True,
        )(operation)
    try:
        import stamina
    except ImportError:
        pass
    else:
        # stamina logs every scheduled retry by default; measure its retry
        # logic, not the logging, as the other peers are measured.
        stamina.instrumentation.set_on_retry_hooks([])
        calls["stamina"] = stamina.retry(
            on=OSError,
            attempts=RETRIES + 1,
            timeout=None,
            wait_initial=0,
            wait_max=0,
            wait_jitter=0,
        )(operation)
    try:
        from google.api_core import retry as google_retry
    except ImportError:
        pass
    else:
        calls["google-api-core Retry"] = google_retry.Retry(
            predicate=google_retry.if_exception_type(OSError),
            initial=0.001,
            maximum=0.001,
            multiplier=1,
            timeout=None,
        )(operation)
    return calls


def overhead(calls: int, repeats: int) -> list[tuple[str, float, float]]:
    """(name, ns per successful call, ns per retry) for every contender, the
    contenders timed in turn in each of *repeats* rounds (a noisy neighbour
    slows them alike; the best round of each is kept)."""
    with _sleep_is_free():
        succeed = contenders(Flaky(0))
        retried = contenders(Flaky(RETRIES))
        n = max(1, calls // RETRIES)
        success = interleaved(
            {name: repeated(call, calls) for name, call in succeed.items()}, calls, repeats
        )
        with_retries = interleaved(
            {name: repeated(retried[name], n) for name in succeed if not name.startswith("bare")},
            n,
            repeats,
        )
    return _rows(success, with_retries)


def _rows(
    success: dict[str, float], with_retries: dict[str, float]
) -> list[tuple[str, float, float]]:
    """(name, ns per successful call, ns per retry), in the contenders' order;
    NaN per retry for a bare call, which never retries."""
    return [
        (name, ns, (with_retries[name] - ns) / RETRIES if name in with_retries else math.nan)
        for name, ns in success.items()
    ]


def async_forms(
    library: Any, operation: Callable[[], Coroutine[Any, Any, int]]
) -> dict[str, Callable[[], Coroutine[Any, Any, int]]]:
    """:func:`forms` for the async forms."""
    delays = _delays_of(library)

    async def loop() -> int:
        async for attempt in library.aretrying(delays, on=OSError, sleep=_no_sleep):
            async with attempt:
                return await operation()
        raise AssertionError

    return {
        "async @retry": library.retry(delays, on=OSError, sleep=_no_sleep)(operation),
        "aretrying() loop": loop,
    }


async def _async_contenders(
    operation: Callable[[], Coroutine[Any, Any, int]],
) -> dict[str, Callable[[], Coroutine[Any, Any, int]]]:
    ours = async_forms(backoff_iter, operation)

    async def hand_written() -> int:
        for attempt in range(RETRIES + 1):
            try:
                return await operation()
            except OSError:
                if attempt == RETRIES:
                    raise
                _no_sleep(0.0)
        raise AssertionError

    return {
        "bare await (no retry)": operation,
        "hand-written async try/except loop": hand_written,
        "backoff_iter async @retry": ours["async @retry"],
        "backoff_iter aretrying() loop": ours["aretrying() loop"],
    }


def async_overhead(calls: int, repeats: int) -> list[tuple[str, float, float]]:
    """(name, ns per successful call, ns per retry) for the async forms, in one event loop."""
    import asyncio

    def flaky_async(failures: int) -> Callable[[], Coroutine[Any, Any, int]]:
        flaky = Flaky(failures)

        async def operation() -> int:
            return flaky()

        return operation

    async def measure() -> list[tuple[str, float, float]]:
        succeed = await _async_contenders(flaky_async(0))
        retried = await _async_contenders(flaky_async(RETRIES))
        n = max(1, calls // RETRIES)
        success = await ainterleaved(
            {name: arepeated(call, calls) for name, call in succeed.items()}, calls, repeats
        )
        with_retries = await ainterleaved(
            {name: arepeated(retried[name], n) for name in succeed if not name.startswith("bare")},
            n,
            repeats,
        )
        return _rows(success, with_retries)

    return asyncio.run(measure())


__all__: list[Any] = ["async_overhead", "overhead"]
