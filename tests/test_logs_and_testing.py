"""log_retries records each retry and the give-up; no_sleep switches sleeping off everywhere."""

from __future__ import annotations

import asyncio
import logging
import threading

import pytest

from backoff_iter import aretrying, attempts, log_retries, retry, retrying
from backoff_iter.testing import no_sleep


def failing(times, then="ok"):
    left = [times]

    def operation():
        if left[0]:
            left[0] -= 1
            raise ConnectionError("reset by peer")
        return then

    return operation


def test_log_retries_writes_a_line_per_retry_and_one_on_giving_up(caplog):
    """Two retries then giving up: two WARNING lines and one ERROR line, with the fields in extra."""
    caplog.set_level(logging.DEBUG, logger="svc")
    hook = log_retries(logging.getLogger("svc"))
    with no_sleep(), pytest.raises(ConnectionError):
        retry([0.25, 0.5], name="fetch", observe=hook)(failing(5))()
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("WARNING", "fetch: attempt 1 failed (ConnectionError: reset by peer); retrying in 0.25 s"),
        ("WARNING", "fetch: attempt 2 failed (ConnectionError: reset by peer); retrying in 0.50 s"),
        (
            "ERROR",
            "fetch: attempt 3 failed (ConnectionError: reset by peer); giving up (exhausted)",
        ),
    ]
    last = caplog.records[-1]
    assert (
        last.retry_name,
        last.retry_attempt,
        last.retry_delay,
        last.retry_error,
        last.retry_reason,
    ) == ("fetch", 3, None, "ConnectionError", "exhausted")
    assert caplog.records[0].retry_delay == 0.25


def test_a_quiet_logger_makes_no_message_for_the_retries_it_drops(caplog):
    """Retries at WARNING to a logger at ERROR: nothing is logged, and the
    failure is never turned into text (a quiet log costs no message); the
    give-up, at ERROR, still is."""
    caplog.set_level(logging.ERROR, logger="quiet")
    texts = []

    class Failure(ConnectionError):
        def __str__(self):
            texts.append(self.args)
            return "reset"

    def failing_call():
        raise Failure(len(texts))

    hook = log_retries(logging.getLogger("quiet"))
    with no_sleep(), pytest.raises(Failure):
        retry([0.25, 0.5], name="fetch", observe=hook)(failing_call)()
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("ERROR", "fetch: attempt 3 failed (Failure: reset); giving up (exhausted)")
    ]
    assert len(texts) == 1  # the give-up's message only


def test_log_retries_names_a_retried_result(caplog):
    """A result retried by on_result is logged as such."""
    caplog.set_level(logging.WARNING, logger="backoff_iter")
    with no_sleep():
        for attempt in retrying([1.0], on_result=lambda r: r == 503, observe=log_retries()):
            with attempt:
                attempt.set_result(503)
    assert [r.getMessage() for r in caplog.records] == [
        "call: attempt 1 failed (result: 503); retrying in 1.00 s",
        "call: attempt 2 failed (result: 503); giving up (exhausted)",
    ]
    assert {r.name for r in caplog.records} == {"backoff_iter"}  # the default logger


def test_log_retries_leaves_successes_and_foreign_errors_unlogged(caplog):
    """A retry then a success logs one line; an error the policy does not retry logs none."""
    caplog.set_level(logging.DEBUG, logger="svc")
    hook = log_retries(logging.getLogger("svc"))
    with no_sleep():
        assert retry([0.25], name="fetch", observe=hook)(failing(1))() == "ok"
        with pytest.raises(KeyError):
            retry([0.25], name="fetch", on=OSError, observe=hook)(Raises(KeyError("k")))()
    assert [r.getMessage() for r in caplog.records] == [
        "fetch: attempt 1 failed (ConnectionError: reset by peer); retrying in 0.25 s",
    ]


class Raises:
    """A function that raises *error* every time."""

    def __init__(self, error):
        self.error = error

    def __call__(self):
        raise self.error


def test_log_retries_checks_its_arguments():
    """A non-logger or a bad level is reported at once."""
    with pytest.raises(TypeError, match="logger"):
        log_retries("svc")
    with pytest.raises(TypeError, match="level"):
        log_retries(level="WARNING")


def test_no_sleep_records_instead_of_sleeping_for_every_form(monkeypatch):
    """attempts, retrying, @retry and their async forms record the delays; nothing sleeps."""
    monkeypatch.setattr("time.sleep", lambda s: pytest.fail("slept"))

    async def asleep(seconds):
        pytest.fail("slept")

    monkeypatch.setattr("asyncio.sleep", asleep)

    calls = []

    async def failing_once():
        calls.append(1)
        if len(calls) == 1:
            raise OSError

    async def async_forms():
        async for attempt in aretrying([3.0]):
            async with attempt:
                if attempt.number == 1:
                    raise OSError
        await retry([4.0])(failing_once)()

    with no_sleep() as slept:
        list(attempts([1.0]))
        for attempt in retrying([2.0], sleep=lambda s: pytest.fail("slept")):
            with attempt:
                if attempt.number == 1:
                    raise OSError
        asyncio.run(async_forms())
        retry([5.0])(failing(1))()
    assert slept == [1.0, 2.0, 3.0, 4.0, 5.0]


def test_no_sleep_reaches_other_threads_and_nests():
    """A thread's retries are recorded too; the innermost open block records."""
    with no_sleep() as outer:
        with no_sleep() as inner:
            thread = threading.Thread(target=retry([0.5])(failing(1)))
            thread.start()
            thread.join()
        retry([0.75])(failing(1))()
    assert inner == [0.5] and outer == [0.75]


def test_without_no_sleep_the_real_sleep_runs(monkeypatch):
    """Once the block is closed, sleeping is back."""
    slept = []
    monkeypatch.setattr("time.sleep", slept.append)
    with no_sleep():
        pass
    retry([0.5])(failing(1))()
    assert slept == [0.5]
